// Frontend skills: a `skill:request` asks this page to render Mermaid or show a form; the answer
// goes back with `skill:response` (see skills/mermaid-diagram and skills/interactive-form).
import { announce, field, h, sanitizedSvg, uid } from './dom.js';
import { call } from './socket.js';

let mermaidReady = null;

/** Mermaid's browser bundle, loaded on first use (3.5 MB) from this origin. */
function loadMermaid() {
  if (!mermaidReady) {
    mermaidReady = new Promise((resolve, reject) => {
      const script = h('script', { src: '/console/vendor/mermaid.min.js' });
      script.addEventListener('load', () => {
        window.mermaid.initialize({
          startOnLoad: false,
          securityLevel: 'strict',
          htmlLabels: false, // SVG text, not foreignObject HTML: survives sanitizing
          flowchart: { htmlLabels: false },
          // A diagram's own `%%{init}%%` may not switch these back (HTML labels, custom CSS).
          // Mermaid's own list first: `secure` replaces it.
          secure: ['secure', 'securityLevel', 'startOnLoad', 'maxTextSize', 'suppressErrorRendering', 'maxEdges',
            'htmlLabels', 'flowchart', 'themeCSS', 'themeVariables', 'fontFamily'],
        });
        resolve(window.mermaid);
      });
      script.addEventListener('error', () => { mermaidReady = null; reject(new Error('mermaid could not be loaded')); });
      document.head.append(script);
    });
  }
  return mermaidReady;
}

export async function renderMermaid(code) {
  const mermaid = await loadMermaid();
  const id = uid('mermaid');
  try {
    const { svg } = await mermaid.render(id, code);
    return svg;
  } finally {
    document.getElementById(id)?.remove();
    document.getElementById(`d${id}`)?.remove(); // what a failed render leaves in <body>
  }
}

async function answer(requestId, success, result, error) {
  const ack = await call('skill:response', { request_id: requestId, success, result, error });
  if (!ack.ok) announce(`The answer was not taken: ${ack.outcome || ack.error?.code}`, 'error');
  return ack;
}

/** Handle one request; `place` receives the element shown in the conversation. */
export async function handleSkillRequest(request, place) {
  const { request_id: requestId, skill_name: skill, action, data } = request || {};
  if (typeof requestId !== 'string') return;
  if (action === 'render' && data && typeof data.code === 'string') {
    await mermaidRequest(requestId, skill, data.code, place);
  } else if (action === 'form' && data && Array.isArray(data.questions)) {
    formRequest(requestId, skill, data, place);
  } else {
    place(h('div', { class: 'item notice' }, `Skill ${skill} asked for “${action}”, which this page cannot do.`));
    await answer(requestId, false, null, `this browser does not support action ${String(action)}`);
  }
}

async function mermaidRequest(requestId, skill, code, place) {
  const box = h('figure', { class: 'diagram', 'data-request': requestId, 'aria-busy': 'true' },
    h('figcaption', {}, `Diagram (${skill})`));
  place(box);
  let svg;
  try {
    svg = await renderMermaid(code);
  } catch (exc) {
    const message = String(exc && exc.message || exc).slice(0, 2000);
    box.append(h('pre', { class: 'render-error' }, `The diagram did not render: ${message}`));
    box.removeAttribute('aria-busy');
    const ack = await answer(requestId, false, null, message);
    box.dataset.outcome = ack.outcome || 'error';
    return;
  }
  box.append(h('div', { class: 'svg', role: 'img', 'aria-label': 'Mermaid diagram' }, sanitizedSvg(svg)));
  box.removeAttribute('aria-busy');
  const ack = await answer(requestId, true, 'rendered', null);
  box.dataset.outcome = ack.outcome || 'error';
}

function formRequest(requestId, skill, data, place) {
  const form = h('form', { class: 'skill-form', 'data-request': requestId, novalidate: true });
  const title = typeof data.title === 'string' && data.title ? data.title : 'The assistant asks';
  const headingId = uid('form');
  form.setAttribute('aria-labelledby', headingId);
  // The heading is the skill's to choose; this line is the page's: who is asking, and what
  // never to type into a form.
  form.append(h('h3', { id: headingId }, title),
    h('p', { class: 'asked-by' }, 'Asked by the skill ', h('code', {}, String(skill)),
      '. Never enter your API token or a password here.'));
  const readers = [];
  for (const question of data.questions.slice(0, 10)) {
    if (!question || typeof question.id !== 'string') continue;
    const label = String(question.label ?? question.id) + (question.required !== false ? ' *' : '');
    const choices = Array.isArray(question.choices) ? question.choices.map(String) : [];
    const error = h('small', { class: 'field-error', 'aria-live': 'polite' });
    if (question.type === 'choice' || question.type === 'multi_choice') {
      const multi = question.type === 'multi_choice';
      const name = uid('q');
      const inputs = choices.map((choice) => h('input', { type: multi ? 'checkbox' : 'radio', name, value: choice }));
      form.append(h('fieldset', {}, h('legend', {}, label),
        inputs.map((input, i) => h('label', { class: 'choice' }, input, ` ${choices[i]}`)), error));
      readers.push({ question, error, focus: inputs[0], read: () => {
        const picked = inputs.filter((i) => i.checked).map((i) => i.value);
        return multi ? picked : (picked[0] ?? null);
      } });
    } else {
      const input = h('input', { type: 'text', maxlength: 4000, autocomplete: 'off' });
      form.append(field(label, input), error);
      readers.push({ question, error, focus: input, read: () => input.value.trim() || null });
    }
  }
  const submit = h('button', { type: 'submit' }, 'Send answers');
  const dismiss = h('button', { type: 'button', class: 'secondary' }, 'Dismiss');
  form.append(h('div', { class: 'actions' }, submit, dismiss));
  const finish = async (result, text) => {
    for (const el of form.querySelectorAll('input, button')) el.disabled = true;
    const ack = await answer(requestId, true, result, null);
    form.dataset.outcome = ack.outcome || 'error';
    form.append(h('p', { class: 'muted' }, ack.ok ? text : `Not taken: ${ack.outcome || ack.error?.code}`));
  };
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const answers = {};
    let firstInvalid = null;
    for (const reader of readers) {
      const value = reader.read();
      const empty = value === null || (Array.isArray(value) && value.length === 0);
      reader.error.textContent = empty && reader.question.required !== false ? 'This answer is required.' : '';
      if (reader.error.textContent && !firstInvalid) firstInvalid = reader.focus;
      answers[reader.question.id] = empty ? null : value;
    }
    if (firstInvalid) { firstInvalid.focus(); return; }
    await finish({ answers }, 'Answers sent.');
  });
  dismiss.addEventListener('click', () => finish({ cancelled: true }, 'Form dismissed.'));
  place(form);
  readers[0]?.focus.focus();
}
