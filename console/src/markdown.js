// Markdown from skills and models, rendered by marked and sanitized by DOMPurify.
import { marked } from '/console/vendor/marked.esm.js';
import { sanitizedHtml } from './dom.js';

export function markdown(text) {
  return sanitizedHtml(marked.parse(String(text), { async: false, gfm: true }));
}

/** SKILL.md without its YAML front matter (shown apart). */
export function withoutFrontMatter(text) {
  const match = /^---\r?\n[\s\S]*?\r?\n---\r?\n?/.exec(text);
  return match ? text.slice(match[0].length) : text;
}
