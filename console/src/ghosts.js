// The Ghost editor: YAML (or JSON, which is YAML) applied through POST /apply; the API's
// validation codes are shown next to the field.
import { api, ApiError, describe, enc, session } from './api.js';
import { announce, append, clear, field, h } from './dom.js';

const TEMPLATE = (namespace) => `apiVersion: skillhive.io/v1
kind: Ghost
metadata:
  name: helper
  namespace: ${namespace}
spec:
  systemPrompt: You are helpful.
  model:
    name: offline
  skills: []
`;

function crdText(crd) {
  const { apiVersion, kind, metadata, spec } = crd;
  const meta = { name: metadata.name, namespace: metadata.namespace };
  if (metadata.labels && Object.keys(metadata.labels).length) meta.labels = metadata.labels;
  return JSON.stringify({ apiVersion, kind, metadata: meta, spec }, null, 2);
}

function errorLines(exc) {
  if (!(exc instanceof ApiError)) return [h('li', {}, describe(exc))];
  const lines = [h('li', { 'data-code': exc.code }, h('code', {}, exc.code), ` — ${exc.message}`)];
  const details = exc.details || {};
  for (const e of Array.isArray(details.errors) ? details.errors : []) {
    const where = Array.isArray(e.loc) ? e.loc.join('.') : (e.field || e.path || '');
    lines.push(h('li', { 'data-code': e.type || e.code || exc.code }, where ? [h('code', {}, where), ': '] : null, e.msg || e.message || ''));
  }
  if (details.line) lines.push(h('li', {}, `line ${details.line}`));
  if (details.field) lines.push(h('li', {}, 'field ', h('code', {}, String(details.field))));
  return lines;
}

export async function ghostsView(main, namespace, name) {
  const ns = session.namespace();
  const list = h('ul', { class: 'ghosts', 'aria-label': 'Ghosts' });
  try {
    const page = await api(`/namespaces/${enc(ns)}/ghosts`);
    for (const ghost of page.items) {
      const link = h('a', { href: `#/ghosts/${enc(ns)}/${enc(ghost.metadata.name)}`, 'aria-current': ghost.metadata.name === name ? 'page' : false }, ghost.metadata.name);
      const warnings = ghost.status?.warnings || [];
      list.append(h('li', {}, link, warnings.length ? h('small', { class: 'warn' }, ` ${warnings.map((w) => w.code).join(', ')}`) : null));
    }
    if (!page.items.length) list.append(h('li', { class: 'muted' }, 'No Ghosts yet.'));
  } catch (exc) { announce(describe(exc), 'error'); }
  let text = TEMPLATE(ns);
  if (namespace && name) {
    const path = namespace === 'public' ? `/public/ghosts/${enc(name)}` : `/namespaces/${enc(namespace)}/ghosts/${enc(name)}`;
    text = crdText(await api(path));
  }
  const editor = h('textarea', { name: 'document', rows: 18, spellcheck: 'false', class: 'code' });
  editor.value = text;
  const errors = h('ul', { class: 'field-errors', id: 'ghost-errors', 'aria-live': 'polite' });
  editor.setAttribute('aria-describedby', 'ghost-errors');
  const result = h('div', { class: 'report', 'aria-live': 'polite' });
  const apply = async (dryRun) => {
    clear(errors);
    clear(result);
    editor.removeAttribute('aria-invalid');
    try {
      const answer = await api(`/apply${dryRun ? '?dryRun=true' : ''}`, { method: 'POST', body: editor.value, headers: { 'Content-Type': 'application/yaml' } });
      for (const item of answer.items) {
        append(result, h('p', { class: 'ok' }, `ghost/${item.namespace}/${item.name} ${dryRun ? `would be ${item.action}` : item.action}`),
          item.warnings.length ? h('ul', {}, item.warnings.map((w) => h('li', { 'data-code': w.code }, h('code', {}, w.code), ` — ${w.message}`))) : null);
      }
      if (!dryRun && answer.items.length === 1) {
        const item = answer.items[0];
        const target = `#/ghosts/${enc(item.namespace)}/${enc(item.name)}`;
        if (location.hash !== target) location.hash = target;
      }
    } catch (exc) {
      editor.setAttribute('aria-invalid', 'true');
      errors.append(...errorLines(exc));
    }
  };
  const form = h('form', { class: 'ghost-editor' }, field('Ghost (YAML or JSON)', editor), errors,
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Apply'), h('button', { type: 'button', class: 'secondary', onclick: () => apply(true) }, 'Check only')), result);
  form.addEventListener('submit', (event) => { event.preventDefault(); apply(false); });
  append(clear(main), h('div', { class: 'split' },
    h('aside', { class: 'sidebar' }, h('h2', {}, `Ghosts in ${ns}`), list, h('p', {}, h('a', { href: '#/ghosts' }, '+ New Ghost'))),
    h('section', {}, h('h1', {}, name ? `Ghost ${name}` : 'New Ghost'), form)));
}
