// The console's router: hash routes, each a view function rendering into <main>.
import { api, describe, session } from './api.js';
import { announce, append, clear, field, h } from './dom.js';
import { chatView } from './chat.js';
import { ghostsView } from './ghosts.js';
import { skillsView, skillView } from './skills.js';
import { closeSocket } from './socket.js';

let me = null;

const routes = [
  [/^\/signin$/, signInView],
  [/^\/chat(?:\/([^/]+))?$/, chatView],
  [/^\/skills$/, skillsView],
  [/^\/skills\/([^/]+)\/([^/]+)$/, skillView],
  [/^\/ghosts(?:\/([^/]+)\/([^/]+))?$/, ghostsView],
];

async function route() {
  const main = document.getElementById('main');
  const path = location.hash.replace(/^#/, '') || '/chat';
  if (!session.token() && path !== '/signin') {
    location.hash = '#/signin';
    return;
  }
  if (session.token() && !me) {
    try {
      me = await api('/me');
    } catch (exc) {
      session.clear();
      announce(describe(exc), 'error');
      location.hash = '#/signin';
      return;
    }
  }
  renderNav(path);
  for (const [pattern, view] of routes) {
    const match = pattern.exec(path);
    if (match) {
      // Each navigation renders into its own container: a slower earlier view that finishes
      // late writes into a detached element, never over the current one.
      const container = h('div', { class: 'view' });
      append(clear(main), container);
      try {
        // A malformed escape (`#/chat/%E0`) is an error shown in the view, not a blank page.
        const args = match.slice(1).map((part) => (part === undefined ? undefined : decodeURIComponent(part)));
        await view(container, ...args, me);
      } catch (exc) {
        append(clear(container), h('p', { class: 'error' }, describe(exc)));
      }
      main.focus({ preventScroll: true });
      return;
    }
  }
  append(clear(main), h('p', {}, 'Nothing here. ', h('a', { href: '#/chat' }, 'Go to the chat.')));
}

function renderNav(path) {
  const nav = clear(document.getElementById('nav'));
  if (!me) return;
  const link = (href, text) => h('a', { href, 'aria-current': path.startsWith(href.slice(1)) ? 'page' : false }, text);
  const namespace = h('input', { value: session.namespace(), size: 10, pattern: '[a-z0-9-]+', 'aria-label': 'Namespace' });
  namespace.addEventListener('change', () => {
    if (namespace.checkValidity() && namespace.value) {
      session.setNamespace(namespace.value);
      route();
    }
  });
  const signOut = h('button', { type: 'button', class: 'secondary' }, 'Sign out');
  signOut.addEventListener('click', () => {
    session.clear();
    me = null;
    closeSocket();
    location.hash = '#/signin';
  });
  nav.append(link('#/chat', 'Chat'), link('#/skills', 'Skills'), link('#/ghosts', 'Ghosts'),
    h('label', { class: 'ns' }, 'Namespace ', namespace),
    h('span', { class: 'me' }, `${me.name}${me.role === 'admin' ? ' (admin)' : ''}`), signOut);
}

function signInView(main) {
  const input = h('input', { type: 'password', name: 'token', autocomplete: 'off', required: true });
  const error = h('p', { class: 'error', 'aria-live': 'assertive' });
  const form = h('form', { class: 'signin', 'aria-labelledby': 'signin-title' },
    h('h1', { id: 'signin-title' }, 'Sign in'),
    field('API token', input, 'Kept in this tab only (sessionStorage). Get one with `skillhive admin create-token USER`.'),
    error, h('button', { type: 'submit' }, 'Sign in'));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    session.setToken(input.value.trim());
    try {
      me = await api('/me');
    } catch (exc) {
      session.clear();
      me = null;
      error.textContent = describe(exc);
      input.focus();
      return;
    }
    closeSocket(); // a socket opened with another token
    location.hash = '#/chat';
  });
  append(clear(main), form);
  input.focus();
}

window.addEventListener('hashchange', route);
route();
