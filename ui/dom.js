// ui/dom.js - building DOM and SVG nodes, and formatting numbers.
//
// Nodes are made with createElement and text with textContent only, so no
// string from the service is ever parsed as HTML; styles are classes (the
// Content-Security-Policy forbids inline ones).
//
// Never: set innerHTML, a style attribute or an on* attribute.

const SVG = 'http://www.w3.org/2000/svg';

function fill(el, attrs, kids) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') el.textContent = String(v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const kid of kids.flat(Infinity)) {
    if (kid === undefined || kid === null || kid === false) continue;
    el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return el;
}

// h('p', {class: 'x', onclick: fn}, 'text', child...)
export function h(tag, attrs, ...kids) {
  return fill(document.createElement(tag), attrs, kids);
}

export function s(tag, attrs, ...kids) {
  return fill(document.createElementNS(SVG, tag), attrs, kids);
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

// Seconds with 4 significant digits and a unit that suits them.
export function secs(x) {
  if (x === null || x === undefined || !Number.isFinite(x)) return '–';
  if (x === 0) return '0 s';
  const a = Math.abs(x);
  if (a < 1e-3) return `${(x * 1e6).toPrecision(4)} µs`;
  if (a < 1) return `${(x * 1e3).toPrecision(4)} ms`;
  return `${x.toPrecision(4)} s`;
}

export function gib(bytes) {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return '–';
  return `${(bytes / 2 ** 30).toFixed(2)} GiB`;
}

export function num(x, digits = 4) {
  if (x === null || x === undefined || !Number.isFinite(x)) return '–';
  return Number(x.toPrecision(digits)).toLocaleString('en-US');
}

export function pct(x) {
  if (x === null || x === undefined || !Number.isFinite(x)) return '–';
  return `${(x * 100).toFixed(x < 0.001 ? 3 : 1)} %`;
}

// Stage i's colour class: 12 hues, repeating (stage-0 .. stage-11).
export function stageClass(i) {
  return `stage-${i % 12}`;
}
