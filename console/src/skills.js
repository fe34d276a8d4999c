// The skill library: upload by drag and drop (warnings and errors by code and entry), search,
// and per skill its files (SKILL.md as sanitized Markdown), enable/disable, replace, delete,
// versions and rollback.
import { api, ApiError, describe, enc, session } from './api.js';
import { announce, append, clear, field, h } from './dom.js';
import { markdown, withoutFrontMatter } from './markdown.js';

/** The API path of a skill collection: the namespace's, or `public`. */
function base(namespace) {
  return namespace === 'public' ? '/public/skills' : `/namespaces/${enc(namespace)}/skills`;
}

function problemList(title, problems) {
  if (!problems.length) return null;
  return h('div', { class: 'problems' }, h('h3', {}, title), h('ul', {}, problems.map((p) =>
    h('li', { class: 'problem', 'data-code': p.code },
      h('code', {}, p.code), p.entry ? [' in ', h('code', { class: 'entry' }, p.entry)] : null, ` — ${p.message}`))));
}

/** The error of a refused upload as problems: code, entry and message. */
function uploadProblems(exc) {
  if (!(exc instanceof ApiError)) return [{ code: 'error', message: describe(exc) }];
  const details = exc.details || {};
  const nested = Array.isArray(details.errors) ? details.errors : [];
  const own = { code: exc.code, message: exc.message, entry: typeof details.entry === 'string' ? details.entry : null };
  return [own, ...nested.map((e) => ({ code: e.code || exc.code, message: e.message || e.msg || '', entry: e.entry || (Array.isArray(e.loc) ? e.loc.join('.') : null) }))];
}

/** A drop zone plus file picker; `upload(file)` returns the stored CRD or throws. */
function dropZone(label, upload, report, onStored) {
  const input = h('input', { type: 'file', accept: '.zip,application/zip', class: 'visually-hidden' });
  const zone = h('div', { class: 'drop', tabindex: 0, role: 'button', 'aria-label': `${label}: drop a ZIP here or press Enter to choose one` },
    h('span', {}, `${label}: drop a skill ZIP here, or choose one`), input);
  const send = async (file) => {
    if (!file) return;
    append(clear(report), h('p', { class: 'muted' }, `Uploading ${file.name}…`));
    try {
      const crd = await upload(file);
      const warnings = (crd.status?.warnings || []).map((w) => ({ code: w.code, message: w.message, entry: w.entry }));
      append(clear(report), h('p', { class: 'ok' }, 'Stored ', h('a', { href: `#/skills/${enc(crd.metadata.namespace || 'public')}/${enc(crd.metadata.name)}` }, crd.metadata.name),
        ` (version ${crd.metadata.resourceVersion ?? '?'})`), problemList('Warnings', warnings));
      if (onStored) await onStored(crd);
    } catch (exc) {
      append(clear(report), problemList('Refused', uploadProblems(exc)));
    }
  };
  zone.addEventListener('click', () => input.click());
  zone.addEventListener('keydown', (event) => { if (event.key === 'Enter' || event.key === ' ') { event.preventDefault(); input.click(); } });
  zone.addEventListener('dragover', (event) => { event.preventDefault(); zone.classList.add('over'); });
  zone.addEventListener('dragleave', () => zone.classList.remove('over'));
  zone.addEventListener('drop', (event) => { event.preventDefault(); zone.classList.remove('over'); send(event.dataTransfer.files[0]); });
  input.addEventListener('change', () => send(input.files[0]));
  return zone;
}

export async function skillsView(main, me) {
  const namespace = session.namespace();
  const report = h('div', { class: 'report', 'aria-live': 'polite' });
  const publicBox = h('input', { type: 'checkbox' });
  const upload = (file) => {
    const target = me.role === 'admin' && publicBox.checked ? 'public' : namespace;
    return api(base(target), { method: 'POST', body: file, headers: { 'Content-Type': 'application/zip' } });
  };
  const query = h('input', { type: 'search', name: 'q', maxlength: 200 });
  const list = h('ul', { class: 'skills', 'aria-label': 'Skills' });
  const search = h('form', { class: 'search', role: 'search' }, field('Search skills', query), h('button', { type: 'submit' }, 'Search'));
  search.addEventListener('submit', (event) => { event.preventDefault(); fill(); });
  const fill = async () => {
    const q = query.value.trim();
    const params = new URLSearchParams({ include_public: 'true', limit: '200' });
    if (q) params.set('q', q);
    try {
      const page = await api(`${base(namespace)}?${params}`);
      clear(list);
      for (const skill of page.items) {
        const ns = skill.status?.public ? 'public' : (skill.metadata.namespace || namespace);
        list.append(h('li', {},
          h('a', { href: `#/skills/${enc(ns)}/${enc(skill.metadata.name)}` }, skill.metadata.name),
          skill.status?.public ? h('span', { class: 'tag' }, 'public') : null,
          skill.status?.enabled === false ? h('span', { class: 'tag' }, 'disabled') : null,
          h('p', { class: 'muted' }, skill.spec.description)));
      }
      if (!page.items.length) list.append(h('li', { class: 'muted' }, 'No skills.'));
    } catch (exc) {
      announce(describe(exc), 'error');
    }
  };
  append(clear(main), h('h1', {}, `Skills in ${namespace}`),
    dropZone('Upload', upload, report),
    me.role === 'admin' ? h('label', { class: 'choice' }, publicBox, ' Upload as a public skill (admin)') : null,
    report, search, list);
  await fill();
}

export async function skillView(main, namespace, name, me) {
  const path = `${base(namespace)}/${enc(name)}`;
  const crd = await api(path);
  const report = h('div', { class: 'report', 'aria-live': 'polite' });
  const status = crd.status || {};
  const editable = namespace !== 'public' || me.role === 'admin';
  const toggle = h('button', { type: 'button' }, status.enabled === false ? 'Enable' : 'Disable');
  toggle.addEventListener('click', async () => {
    try {
      await api(path, { method: 'PATCH', json: { enabled: status.enabled === false } });
      await skillView(main, namespace, name, me);
    } catch (exc) { announce(describe(exc), 'error'); }
  });
  const remove = h('button', { type: 'button', class: 'danger' }, 'Delete');
  remove.addEventListener('click', async () => {
    if (!confirm(`Delete the skill ${name}?`)) return;
    try {
      await api(path, { method: 'DELETE' });
      location.hash = '#/skills';
    } catch (exc) {
      const ghosts = Array.isArray(exc.details?.ghosts) ? exc.details.ghosts : [];
      append(clear(report), h('div', { class: 'problems' }, h('p', {}, h('code', {}, exc.code || 'error'), ` — ${exc.message}`),
        ghosts.length ? h('ul', { 'aria-label': 'Ghosts using the skill' }, ghosts.map((g) => h('li', {}, h('a', { href: `#/ghosts/${g.split('/').map(enc).join('/')}` }, g)))) : null));
    }
  });
  const files = h('ul', { class: 'files', 'aria-label': 'Files' });
  const viewer = h('div', { class: 'viewer' });
  const showFile = async (filePath) => {
    try {
      const text = await api(`${path}/files/${filePath.split('/').map(enc).join('/')}`, { text: true });
      append(clear(viewer), h('h3', {}, filePath), filePath.endsWith('.md')
        ? h('div', { class: 'markdown' }, markdown(filePath === 'SKILL.md' ? withoutFrontMatter(text) : text))
        : h('pre', {}, text));
    } catch (exc) { append(clear(viewer), h('p', { class: 'error' }, describe(exc))); }
  };
  for (const file of crd.spec.files || []) {
    const open = h('button', { type: 'button', class: 'link' }, file.path);
    open.addEventListener('click', () => showFile(file.path));
    files.append(h('li', {}, open, h('small', {}, ` ${file.size ?? '?'} B`)));
  }
  const versions = h('ol', { class: 'versions', 'aria-label': 'Versions' });
  try {
    const page = await api(`${path}/versions`);
    for (const version of page.items) {
      const rollback = h('button', { type: 'button', class: 'secondary', disabled: !editable }, `Roll back to ${version.version}`);
      rollback.addEventListener('click', async () => {
        try {
          await api(`${path}/rollback`, { method: 'POST', json: { version: version.version } });
          announce(`Rolled back to version ${version.version}`);
          await skillView(main, namespace, name, me);
        } catch (exc) { announce(describe(exc), 'error'); }
      });
      versions.append(h('li', {}, `v${version.version} · ${version.created_at} · ${String(version.sha256).slice(0, 12)} `, rollback));
    }
  } catch (exc) { versions.append(h('li', { class: 'error' }, describe(exc))); }
  const replace = (file) => api(path, { method: 'PUT', body: file, headers: { 'Content-Type': 'application/zip' } });
  append(clear(main), 
    h('p', {}, h('a', { href: '#/skills' }, '← Skills')),
    h('h1', {}, name, status.public ? h('span', { class: 'tag' }, 'public') : null, status.enabled === false ? h('span', { class: 'tag' }, 'disabled') : null),
    h('p', {}, crd.spec.description),
    problemList('Warnings', (status.warnings || []).map((w) => ({ code: w.code, message: w.message }))),
    editable ? h('div', { class: 'actions' }, toggle, remove) : null,
    report,
    editable ? dropZone('Replace', replace, report, async () => {
      announce(`Replaced ${name}`);
      await skillView(main, namespace, name, me);
    }) : null,
    h('div', { class: 'split' }, h('section', { 'aria-label': 'Files' }, h('h2', {}, 'Files'), files), viewer),
    h('h2', {}, 'Versions'), versions);
  await showFile('SKILL.md');
}
