// Conversations and chat over Socket.IO: streaming text, compact tool calls and skill loads,
// usage per turn, stop, and reconnects that pick the running turn up again.
import { api, describe, enc, session } from './api.js';
import { announce, append, clear, field, h } from './dom.js';
import { handleSkillRequest } from './frontend_skills.js';
import { markdown } from './markdown.js';
import { call, chatSocket, onReconnect } from './socket.js';

const MAX_RESULT_CHARS = 2000;
let active = null; // the conversation view on screen: {id, transcript, turn, ...}

export async function chatView(main, conversationId) {
  const socket = chatSocket();
  bindSocket(socket);
  const list = h('ul', { class: 'conversations', 'aria-label': 'Conversations' });
  const aside = h('aside', { class: 'sidebar', 'aria-label': 'Conversations' },
    h('h2', {}, 'Conversations'), await newConversationForm(), list);
  const panel = h('section', { class: 'chat', 'aria-label': 'Chat' });
  append(clear(main), h('div', { class: 'split' }, aside, panel));
  await fillConversations(list, conversationId);
  if (conversationId) await openConversation(panel, conversationId);
  else panel.append(h('p', { class: 'muted' }, 'Choose a conversation or start one from a Ghost.'));
}

async function newConversationForm() {
  const select = h('select', { name: 'ghost', required: true });
  const ghosts = [];
  try {
    const own = await api(`/namespaces/${enc(session.namespace())}/ghosts`);
    ghosts.push(...own.items.map((g) => `${session.namespace()}/${g.metadata.name}`));
    const shared = await api('/public/ghosts');
    ghosts.push(...shared.items.map((g) => `public/${g.metadata.name}`));
  } catch (exc) {
    announce(describe(exc), 'error');
  }
  for (const ref of ghosts) select.append(h('option', { value: ref }, ref));
  const form = h('form', { class: 'new-conversation' },
    field('Ghost', select), h('button', { type: 'submit', disabled: ghosts.length === 0 }, 'New conversation'));
  if (ghosts.length === 0) form.append(h('p', { class: 'muted' }, h('a', { href: '#/ghosts' }, 'Create a Ghost'), ' first.'));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      const created = await api('/conversations', { method: 'POST', json: { ghost: select.value } });
      location.hash = `#/chat/${enc(created.id)}`;
    } catch (exc) {
      announce(describe(exc), 'error');
    }
  });
  return form;
}

async function fillConversations(list, current) {
  let page;
  try {
    page = await api('/conversations?limit=100');
  } catch (exc) {
    announce(describe(exc), 'error');
    return;
  }
  for (const conversation of page.items) {
    const link = h('a', { href: `#/chat/${enc(conversation.id)}`, 'aria-current': conversation.id === current ? 'page' : false },
      conversation.title || 'Untitled', h('small', {}, ` ${conversation.ghost}`));
    const remove = h('button', { type: 'button', class: 'icon secondary', 'aria-label': `Delete conversation ${conversation.title}` }, '✕');
    remove.addEventListener('click', async () => {
      if (!confirm(`Delete the conversation “${conversation.title}”?`)) return;
      try {
        await api(`/conversations/${enc(conversation.id)}`, { method: 'DELETE' });
        if (conversation.id === current) location.hash = '#/chat'; else link.closest('li').remove();
      } catch (exc) {
        announce(describe(exc), 'error');
      }
    });
    list.append(h('li', {}, link, remove));
  }
  if (page.items.length === 0) list.append(h('li', { class: 'muted' }, 'No conversations yet.'));
}

async function openConversation(panel, id) {
  let conversation;
  try {
    conversation = await api(`/conversations/${enc(id)}`);
  } catch (exc) {
    panel.append(h('p', { class: 'error' }, describe(exc)));
    return;
  }
  if (!panel.isConnected) return; // the person navigated away meanwhile
  if (active && active.id !== id) call('conversation:leave', { conversation_id: active.id });
  const transcript = h('ol', { class: 'transcript', 'aria-label': 'Messages', 'aria-live': 'polite' });
  const input = h('textarea', { name: 'message', rows: 3, required: true, maxlength: 100000 });
  const send = h('button', { type: 'submit' }, 'Send');
  const stop = h('button', { type: 'button', class: 'secondary', disabled: true }, 'Stop');
  const composer = h('form', { class: 'composer' }, field('Message', input, 'Ctrl+Enter sends'), h('div', { class: 'actions' }, send, stop));
  panel.append(titleBar(conversation), transcript, composer);
  active = { id, transcript, send, stop, turn: null };
  await call('conversation:join', { conversation_id: id });
  await loadHistory(active);
  transcript.dataset.ready = 'true'; // in the room: this view hears the conversation's events
  input.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) composer.requestSubmit();
  });
  composer.addEventListener('submit', async (event) => {
    event.preventDefault();
    const content = input.value.trim();
    if (!content) return;
    const view = active;
    view.transcript.append(userMessage(content));
    beginTurn(view);
    const ack = await call('chat:send', { conversation_id: id, content });
    if (!ack.ok) {
      endTurn(view);
      view.transcript.append(h('li', { class: 'message error' }, `Not sent: ${ack.error.code}: ${ack.error.message}`));
      return;
    }
    input.value = '';
  });
  stop.addEventListener('click', async () => {
    const ack = await call('chat:cancel', { conversation_id: id });
    if (!ack.ok) announce(`Stop refused: ${ack.error.code}`, 'error');
  });
}

/** The conversation's title, with a rename form behind a button. */
function titleBar(conversation) {
  const heading = h('h2', {}, conversation.title || 'Untitled', h('small', {}, ` with ${conversation.ghost}`));
  const title = h('input', { name: 'title', value: conversation.title, maxlength: 80, required: true });
  const error = h('small', { class: 'field-error', 'aria-live': 'polite' });
  const form = h('form', { class: 'rename', hidden: true }, field('Title', title), error,
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Save title'),
      h('button', { type: 'button', class: 'secondary', onclick: () => { form.hidden = true; rename.focus(); } }, 'Cancel')));
  const rename = h('button', { type: 'button', class: 'secondary' }, 'Rename');
  rename.addEventListener('click', () => { form.hidden = false; title.focus(); });
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      const saved = await api(`/conversations/${enc(conversation.id)}`, { method: 'PATCH', json: { title: title.value } });
      await chatView(document.querySelector('#main .view') || document.getElementById('main'), saved.id);
    } catch (exc) {
      error.textContent = describe(exc);
    }
  });
  return h('div', { class: 'title-bar' }, heading, rename, form);
}

/** The stored messages; a user message without an answer means a turn is running. */
async function loadHistory(view) {
  const page = await api(`/conversations/${enc(view.id)}/messages?limit=500`);
  if (view !== active) return;
  const turn = view.turn;
  clear(view.transcript);
  const answered = new Set(page.items.filter((m) => m.reply_to !== null).map((m) => m.reply_to));
  for (const message of page.items) {
    view.transcript.append(message.role === 'user' ? userMessage(message.content) : storedAnswer(message));
  }
  const last = page.items[page.items.length - 1];
  if (last && last.role === 'user' && !answered.has(last.id)) {
    if (turn) view.transcript.append(turn.element); // keep what streamed so far
    else beginTurn(view);
  } else if (turn) {
    endTurn(view);
  }
}

function userMessage(content) {
  return h('li', { class: 'message user' }, h('span', { class: 'who' }, 'You'), h('div', { class: 'text' }, content));
}

function storedAnswer(message) {
  const items = h('div', { class: 'items' });
  for (const skill of message.tool_calls.filter((c) => c.name === 'load_skill')) {
    items.append(skillItem(String(skill.args?.skill_name ?? '')));
  }
  for (const callRecord of message.tool_calls) items.append(toolItem(callRecord, true));
  const body = h('div', { class: 'text markdown' }, markdown(message.content));
  const li = h('li', { class: `message assistant status-${message.status}` }, h('span', { class: 'who' }, 'Assistant'), items, body);
  if (message.error) li.append(h('p', { class: 'error' }, `${message.error.code}: ${message.error.message}`));
  append(li, usageLine(message.usage));
  return li;
}

function usageLine(usage) {
  if (!usage || (!usage.prompt_tokens && !usage.completion_tokens)) return null;
  return h('p', { class: 'usage' }, `Tokens: ${usage.prompt_tokens ?? 0} in, ${usage.completion_tokens ?? 0} out`);
}

function skillItem(name) {
  return h('div', { class: 'item skill-loaded' }, h('span', { class: 'badge' }, 'skill'), ' Loaded ', h('strong', {}, name));
}

function toolItem(record, ended) {
  const result = typeof record.result === 'string' ? record.result.slice(0, MAX_RESULT_CHARS) : '';
  const state = ended ? (record.error ? 'failed' : 'done') : 'running';
  const details = h('details', { class: `item tool ${state}`, 'data-tool-id': record.id || '' },
    h('summary', {}, h('span', { class: 'badge' }, 'tool'), ` ${record.name} `, h('span', { class: 'state' }, state)),
    h('pre', {}, JSON.stringify(record.args ?? {}, null, 2)));
  if (ended) details.append(h('pre', { class: 'result' }, result));
  return details;
}

function beginTurn(view) {
  const text = h('div', { class: 'text streaming' });
  const items = h('div', { class: 'items' });
  const element = h('li', { class: 'message assistant running', 'aria-busy': 'true' }, h('span', { class: 'who' }, 'Assistant'), items, text);
  view.transcript.append(element);
  view.turn = { element, text, items, usage: { prompt_tokens: 0, completion_tokens: 0 } };
  view.send.disabled = true;
  view.stop.disabled = false;
}

function endTurn(view) {
  view.turn = null;
  view.send.disabled = false;
  view.stop.disabled = true;
}

function turnOf(data) {
  if (!active || !data || data.conversation_id !== active.id) return null;
  if (!active.turn) beginTurn(active); // another tab (or a reconnect) started it
  return active.turn;
}

let bound = null;
function bindSocket(socket) {
  if (bound === socket) return;
  bound = socket;
  socket.on('chat:chunk', (data) => {
    const turn = turnOf(data);
    if (turn && typeof data.delta === 'string') turn.text.append(data.delta);
  });
  socket.on('chat:tool', (data) => {
    const turn = turnOf(data);
    if (!turn) return;
    const item = toolItem(data, data.phase === 'end');
    const previous = [...turn.items.querySelectorAll('details.tool')].find((d) => d.dataset.toolId === String(data.id));
    if (previous) previous.replaceWith(item); else turn.items.append(item);
  });
  socket.on('chat:skill_loaded', (data) => {
    const turn = turnOf(data);
    if (turn) turn.items.append(skillItem(String(data.name)));
  });
  socket.on('chat:notice', (data) => {
    const turn = turnOf(data);
    if (turn) turn.items.append(h('div', { class: 'item notice' }, h('span', { class: 'badge' }, 'notice'), ` ${data.code}: ${data.message}`));
  });
  socket.on('chat:usage', (data) => {
    const turn = turnOf(data);
    if (!turn) return;
    turn.usage.prompt_tokens += Number(data.prompt_tokens) || 0;
    turn.usage.completion_tokens += Number(data.completion_tokens) || 0;
  });
  socket.on('chat:done', (data) => finish(data, data.message));
  socket.on('chat:error', (data) => finish(data, data.reply, data));
  socket.on('skill:request', (request) => {
    const place = (element) => {
      const turn = active && active.turn;
      if (turn) turn.items.append(element);
      else document.getElementById('main').append(element);
      element.scrollIntoView?.({ block: 'nearest' });
    };
    handleSkillRequest(request, place);
  });
  if (!reconnectBound) onReconnect(resume);
  reconnectBound = true;
}

let reconnectBound = false;
/** After a reconnect: back into the room, then the stored messages fill in what was missed. */
async function resume() {
  if (!active) return;
  const view = active;
  await call('conversation:join', { conversation_id: view.id });
  try {
    await loadHistory(view); // events sent while away are in the stored messages
  } catch (exc) {
    announce(describe(exc), 'error');
  }
}

function finish(data, message, error) {
  const turn = turnOf(data);
  if (!turn) return;
  const view = active;
  const stored = message ? storedAnswer(message) : h('li', { class: 'message assistant status-error' });
  const extras = [...turn.items.querySelectorAll('figure.diagram, form.skill-form')];
  stored.querySelector('.items')?.append(...extras);
  if (error && !message?.error) stored.append(h('p', { class: 'error' }, `${error.code}: ${error.message}`));
  turn.element.replaceWith(stored);
  endTurn(view);
}
