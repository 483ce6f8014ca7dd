// One place that binds htm to Preact, so pages import their toolkit from here.
import { h, render, Fragment } from '/console/vendor/preact.js';
import { useState, useEffect, useRef, useCallback, useMemo } from '/console/vendor/hooks.js';
import htm from '/console/vendor/htm.js';

/**
 * Characters that draw nothing or reorder what is drawn: controls, zero-width marks, bidi
 * overrides and isolates, the byte order mark. Ids and names come from untrusted callers, and
 * one RTL override is enough to make `gpj.exe` read as `exe.jpg` to an officer.
 * The marker's own brackets (U+27E8, U+27E9) are marked too: otherwise a caller could type
 * `⟨U+202E⟩` as text, which reads as a marker wherever styling is lost (a title, a screen
 * reader, the purge confirmation), and two different ids would be shown alike. With them
 * marked, every `⟨` on screen begins a real marker and the shown text maps back to one id.
 */
const HIDDEN_CLASS = '[\\u0000-\\u001F\\u007F-\\u009F\\u200B-\\u200F\\u202A-\\u202E\\u2066-\\u2069\\uFEFF\\u27E8\\u27E9]';
const HIDDEN = new RegExp(HIDDEN_CLASS, 'g');
const ONE_HIDDEN = new RegExp(`(${HIDDEN_CLASS})`);
const marker = (c) => `⟨U+${c.codePointAt(0).toString(16).toUpperCase().padStart(4, '0')}⟩`;

/** Text as the console shows it, for where only a string fits (an attribute, an option, a comparison). */
export const visible = (text) => String(text).replace(HIDDEN, marker);

/**
 * The distinct characters of `text` that the console draws as markers, in order of appearance:
 * raw, for a template to mark (marking them here would have it mark the markers' brackets).
 */
export const markedIn = (text) => [...new Set(String(text).match(HIDDEN) ?? [])];

/** Hebrew, Arabic, Syriac, Thaana, N'Ko and their presentation forms: letters written right to left. */
const RIGHT_TO_LEFT = /[\u0590-\u08FF\uFB1D-\uFDFF\uFE70-\uFEFC]/;

/**
 * Text as nodes: each hidden character a styled marker that cannot pass for the text beside it,
 * and right-to-left text isolated (`<bdi>`), so that its letters and digits cannot reorder the
 * words around it ("reported by", a heading's "Subject").
 */
function marked(text) {
  const nodes = ONE_HIDDEN.test(text) ? text.split(ONE_HIDDEN).map((part, i) => (i % 2 ? h('span', { class: 'hidden-char' }, marker(part)) : part)) : text;
  return RIGHT_TO_LEFT.test(text) ? h('bdi', null, nodes) : nodes;
}

const markChildren = (child) => (typeof child === 'string' ? marked(child) : Array.isArray(child) ? child.map(markChildren) : child);
const markText = (child) => (typeof child === 'string' ? visible(child) : Array.isArray(child) ? child.map(markText) : child);
// What a reader or a tooltip shows as text; `value` and `href` are data, kept as they are.
const SHOWN_PROPS = ['title', 'aria-label', 'placeholder', 'alt'];
// Elements whose content is text only: a marker there is text too.
const TEXT_ONLY = new Set(['option', 'textarea', 'title']);

/**
 * Every template goes through here, so no page can forget it: text children and the text
 * props an officer reads have their hidden characters marked. Preact sets text with
 * textContent and props with setAttribute, never as markup, so nothing here is parsed as HTML.
 */
function shown(type, props, ...children) {
  // On elements only: a component's props reach an element of its own, and marking twice would
  // mark the first markers' brackets.
  if (props && typeof type === 'string') {
    for (const name of SHOWN_PROPS) if (typeof props[name] === 'string') props = { ...props, [name]: visible(props[name]) };
  }
  return h(type, props, ...children.map(TEXT_ONLY.has(type) ? markText : markChildren));
}

export const html = htm.bind(shown);

/**
 * Text whose line breaks are its own (a revealed note, an address): drawn as breaks, not
 * marked; `html` marks what is left in each line.
 */
export const lines = (text) => text.split(/\r?\n/).flatMap((line, i) => (i ? [h('br', null), line] : [line]));
export { h, render, Fragment, useState, useEffect, useRef, useCallback, useMemo };
