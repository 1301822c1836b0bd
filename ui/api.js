// ui/api.js - the UI's client of uniapd's public /v1 API, and nothing else:
// every number the UI shows comes through here.
//
// The API key lives in sessionStorage (one tab's session, gone when it
// closes) and travels only in the Authorization header: never in a URL,
// where it would reach access logs and histories.  Event streams are read
// with fetch() for the same reason (EventSource cannot send the header).
//
// Never: put the key in a URL, a cookie or localStorage; call anything but
// the same origin's /v1 routes (and its own /ui/ files, which need no key).

const KEY = 'uniap.key';

export class ApiError extends Error {
  // problem: the service's application/problem+json answer, when it gave one
  constructor(status, problem, fallback) {
    super((problem && (problem.detail || problem.title)) || fallback || `HTTP ${status}`);
    this.status = status;
    this.problem = problem || null;
  }
}

export function getKey() {
  return sessionStorage.getItem(KEY) || '';
}

export function setKey(key) {
  if (key) sessionStorage.setItem(KEY, key);
  else sessionStorage.removeItem(KEY);
}

function headers(extra) {
  const h = Object.assign({ Accept: 'application/json' }, extra || {});
  const key = getKey();
  if (key) h.Authorization = `Bearer ${key}`;
  return h;
}

async function problemOf(r) {
  const type = r.headers.get('Content-Type') || '';
  if (type.includes('json')) {
    try { return await r.json(); } catch (e) { return null; }
  }
  return null;
}

// One request: the parsed JSON answer (with {text: true}: {text}), an
// ApiError otherwise.  body: an object (sent as JSON) or a string.
export async function api(method, path, opts = {}) {
  const init = { method, headers: headers(opts.headers), cache: 'no-store' };
  if (opts.body !== undefined) {
    init.body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
    init.headers['Content-Type'] = 'application/json';
  }
  if (opts.signal) init.signal = opts.signal;
  const r = await fetch(path, init);
  if (!r.ok) throw new ApiError(r.status, await problemOf(r), r.statusText);
  if (r.status === 204) return null;
  if (opts.text) return { text: await r.text() };
  return r.json();
}

// Follows GET /v1/jobs/{id}/events until the job is done (or signal aborts).
// onEvent(name, data) for each event; reconnects with Last-Event-ID when the
// stream drops before "done" (a 204 means the client has the last event).
export async function followJob(id, onEvent, signal) {
  let last = '';
  let tries = 0;
  for (;;) {
    let r;
    try {
      const h = headers({ Accept: 'text/event-stream' });
      if (last) h['Last-Event-ID'] = last;
      r = await fetch(`/v1/jobs/${encodeURIComponent(id)}/events`, { headers: h, signal, cache: 'no-store' });
    } catch (e) {
      if (signal && signal.aborted) return;
      if (++tries > 20) throw e;
      await sleep(Math.min(5000, 250 * tries), signal);
      continue;
    }
    if (r.status === 204) return;
    if (!r.ok) throw new ApiError(r.status, await problemOf(r), r.statusText);
    tries = 0;
    const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    let done = false;
    try {
      for (;;) {
        const { value, done: end } = await reader.read();
        if (end) break;
        buf += value.replace(/\r\n?/g, '\n');
        let cut;
        while ((cut = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          const ev = parseEvent(block);
          if (!ev) continue;
          if (ev.id) last = ev.id;
          onEvent(ev.event, ev.data);
          if (ev.event === 'done') done = true;
        }
      }
    } catch (e) {
      if (signal && signal.aborted) return;
    }
    if (done || (signal && signal.aborted)) return;
    await sleep(500, signal);
  }
}

function parseEvent(block) {
  let event = 'message', id = '', data = '';
  for (const line of block.split('\n')) {
    if (!line || line[0] === ':') continue;
    const c = line.indexOf(':');
    const field = c < 0 ? line : line.slice(0, c);
    const value = c < 0 ? '' : line.slice(c + 1).replace(/^ /, '');
    if (field === 'event') event = value;
    else if (field === 'id') id = value;
    else if (field === 'data') data += (data ? '\n' : '') + value;
  }
  if (!data) return null;
  try { return { event, id, data: JSON.parse(data) }; } catch (e) { return null; }
}

export function sleep(ms, signal) {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    if (signal) signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
  });
}

// A file of the UI itself (GET /ui/NAME: public, no key), parsed as JSON; null when it cannot be had.
export async function uiJson(name) {
  try {
    const r = await fetch(`/ui/${encodeURIComponent(name)}`, { headers: { Accept: 'application/json' } });
    return r.ok ? await r.json() : null;
  } catch (e) { return null; }
}

// An export as a file the browser saves: fetched with the key, handed over as a blob.
export async function download(path, filename) {
  const r = await fetch(path, { headers: headers({ Accept: '*/*' }), cache: 'no-store' });
  if (!r.ok) throw new ApiError(r.status, await problemOf(r), r.statusText);
  const blob = await r.blob();
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
  return blob.size;
}
