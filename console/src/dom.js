// Building the DOM without HTML strings: text always goes in as text nodes, attributes through
// setAttribute. The only HTML parsed is Markdown and SVG, and both pass DOMPurify first.
import DOMPurify from '/console/vendor/purify.es.mjs';

/** h('button', {class: 'x', onclick: fn}, 'text', child) -> HTMLElement */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith('on')) {
      if (typeof value !== 'function') throw new TypeError(`${key} needs a function`);
      el.addEventListener(key.slice(2), value);
    } else if (key === 'class') {
      el.className = value;
    } else if (key === 'value' || key === 'checked') {
      el[key] = value;
    } else {
      el.setAttribute(key, value === true ? '' : String(value));
    }
  }
  append(el, ...children);
  return el;
}

export function append(el, ...children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function clear(el) {
  el.replaceChildren();
  return el;
}

// A link in untrusted content leaves the console in a tab of its own, telling the target
// neither where it came from nor giving it this window (`window.opener`).
DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A' && node.hasAttribute('href') && !node.getAttribute('href').startsWith('#')) {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer nofollow');
  }
});

/** Untrusted HTML (rendered Markdown) as a sanitized fragment: no script, handler or form, and
 * no `class` or `id`, with which it could dress up as the console's own messages and badges. */
export function sanitizedHtml(html) {
  return DOMPurify.sanitize(html, {
    RETURN_DOM_FRAGMENT: true,
    FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select'],
    FORBID_ATTR: ['style', 'class', 'id'],
  });
}

/** Untrusted SVG (Mermaid's output) as a sanitized fragment. */
export function sanitizedSvg(svg) {
  return DOMPurify.sanitize(svg, {
    USE_PROFILES: { svg: true, svgFilters: true },
    RETURN_DOM_FRAGMENT: true,
  });
}

let statusTimer = null;
/** A short message for everyone, screen readers included (the #status live region). */
export function announce(text, kind = 'info') {
  const status = document.getElementById('status');
  status.className = kind;
  status.textContent = text;
  clearTimeout(statusTimer);
  statusTimer = setTimeout(() => { status.textContent = ''; status.className = ''; }, 8000);
}

let ids = 0;
export function uid(prefix = 'id') {
  ids += 1;
  return `${prefix}-${ids}`;
}

/** A labelled form field: [label, control] wired by id. */
export function field(label, control, hint) {
  const id = control.id || uid('f');
  control.id = id;
  const parts = [h('label', { for: id }, label), control];
  if (hint) {
    const hintId = uid('hint');
    control.setAttribute('aria-describedby', hintId);
    parts.push(h('small', { id: hintId, class: 'hint' }, hint));
  }
  return h('div', { class: 'field' }, parts);
}
