// ui/app.js - uniap's web UI: sign in, new plan with live progress, the plan
// view, compare, allocations of a cluster among jobs, and the lists of jobs
// and documents.  A hash router (#/new, #/allocate, #/jobs, #/jobs/7,
// #/compare, #/documents) renders one view at a
// time into <main>; each view talks to the service through api.js only, so
// the UI is also the reference client of the public API.
//
// State that outlives a view: the API key (sessionStorage, api.js), the
// plans picked for comparison (sessionStorage 'uniap.compare'), the theme
// (localStorage 'uniap.theme': not a secret).
//
// Never: put the key in a URL; insert HTML; use inline styles (CSP).

import { api, followJob, download, getKey, setKey, ApiError, uiJson } from './api.js';
import { h, clear, secs, num, pct, gib, stageClass } from './dom.js';
import { deviceGrid, stageLegend, layerStrip, timeline, stageTable, memoryBars, heatmap, FORWARD_SHARE } from './draw.js';
import { reportPools, jobPool, poolGrid, curvePlot, jobLegend } from './alloc.js';

const main = document.getElementById('main');
let who = null;          // GET /v1/whoami's answer once signed in
let viewAbort = null;    // aborts the current view's streams and polls
let catalog = null;      // GET /v1/catalog, fetched once

// ---------------------------------------------------------------- shell

function toast(msg) {
  const t = document.getElementById('toast');
  t.textContent = msg;
  t.classList.add('show');
  clearTimeout(toast.t);
  toast.t = setTimeout(() => t.classList.remove('show'), 4000);
}

function errorBox(e) {
  return h('div', { class: 'error', role: 'alert' }, e instanceof ApiError ? `${e.message} (HTTP ${e.status})` : String(e.message || e));
}

function setTheme(t) {
  document.documentElement.dataset.theme = t;
  const b = document.getElementById('theme');
  b.setAttribute('aria-pressed', t === 'dark' ? 'true' : 'false');
  b.textContent = t === 'dark' ? 'Light' : 'Dark';
  b.setAttribute('aria-label', t === 'dark' ? 'Use the light theme' : 'Use the dark theme');
}

function initTheme() {
  const saved = localStorage.getItem('uniap.theme');
  setTheme(saved || (matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light'));
  document.getElementById('theme').addEventListener('click', () => {
    const t = document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark';
    localStorage.setItem('uniap.theme', t);
    setTheme(t);
  });
}

function view(title, ...kids) {
  clear(main);
  document.title = `${title} · uniap`;
  main.append(h('h1', {}, title), ...kids);
  return main;
}

// A region that scrolls sideways when its content is wider than the screen;
// focusable, so the keyboard can scroll it too.
function scroller(child, label) {
  const name = label || child.getAttribute('aria-label') || (child.querySelector('caption') || {}).textContent || 'Table';
  return h('div', { class: 'scroll', tabindex: 0, role: 'region', 'aria-label': `${name}, scrolls sideways` }, child);
}

// A column header; '#Text' is read by screen readers but not shown.
function colHead(x) {
  return h('th', { scope: 'col' }, x.startsWith('#') ? h('span', { class: 'sr' }, x.slice(1)) : x);
}

function section(title, ...kids) {
  const id = `s-${title.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`;
  return h('section', { class: 'card', 'aria-labelledby': id }, h('h2', { id }, title), ...kids);
}

// ---------------------------------------------------------------- sign in

async function signedIn() {
  try {
    who = await api('GET', '/v1/whoami');
  } catch (e) {
    if (e.status === 401 || e.status === 403) { who = null; return false; }
    throw e;
  }
  document.getElementById('whoami').textContent = `tenant ${who.tenant}`;
  document.getElementById('signout').hidden = !getKey();
  document.querySelector('.top nav').hidden = false;
  return true;
}

function signInView(message) {
  document.querySelector('.top nav').hidden = true;
  const key = h('input', { id: 'key', name: 'key', type: 'password', autocomplete: 'current-password', required: true, spellcheck: 'false', 'aria-describedby': 'key-help' });
  const err = h('div', { id: 'signin-error', 'aria-live': 'assertive' }, message ? errorBox(new Error(message)) : null);
  const form = h('form', { id: 'signin', class: 'card narrow', novalidate: true },
    h('label', { for: 'key' }, 'API key'), key,
    h('p', { id: 'key-help', class: 'help' }, 'Kept in this tab only (session storage) and sent only in the Authorization header. An operator makes keys with ', h('code', {}, 'uniapd tenant add'), '.'),
    h('button', { type: 'submit', id: 'signin-submit' }, 'Sign in'), err);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clear(err);
    if (!key.value.trim()) { err.append(errorBox(new Error('Enter an API key.'))); key.focus(); return; }
    setKey(key.value.trim());
    try {
      if (await signedIn()) { key.value = ''; route(); return; }
      setKey('');
      err.append(errorBox(new Error('The service did not accept this key.')));
    } catch (e) { setKey(''); err.append(errorBox(e)); }
    key.focus();
  });
  view('Sign in', form);
  key.focus();
}

// ---------------------------------------------------------------- new plan

async function getCatalog() {
  if (!catalog) catalog = await api('GET', '/v1/catalog');
  return catalog;
}

async function listAll(path) {
  const items = [];
  let cursor = null;
  for (let i = 0; i < 20; i++) {
    const page = await api('GET', `${path}?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    items.push(...page.items);
    if (!page.next_cursor) break;
    cursor = page.next_cursor;
  }
  return items;
}

function docOptions(select, cat, stored, pick) {
  clear(select);
  select.append(h('optgroup', { label: 'Catalog' }, cat.map((c) => h('option', { value: `cat:${c.name}` }, `${c.name} — ${c.description}`))));
  if (stored.length)
    select.append(h('optgroup', { label: 'Stored' }, stored.map((d) => h('option', { value: `id:${d.id}` }, `#${d.id} ${d.name || ''}`))));
  if (pick) select.value = pick;
}

// File → {kind: cluster|model|galvatron-cluster|galvatron-model|nccl, ...}
async function classify(file) {
  const text = await file.text();
  const name = file.name.toLowerCase();
  if (!name.endsWith('.json')) return { kind: 'nccl', name: file.name, text };
  let doc;
  try { doc = JSON.parse(text); } catch (e) { throw new Error(`${file.name}: not JSON (${e.message})`); }
  if (/allreduce_bandwidth/.test(name)) return { kind: 'galvatron-cluster', part: 'allreduce', doc, name: file.name };
  if (/p2p_bandwidth/.test(name)) return { kind: 'galvatron-cluster', part: 'p2p', doc, name: file.name };
  if (/overlap_coefficient/.test(name)) return { kind: 'galvatron-cluster', part: 'overlap', doc, name: file.name };
  if (/sp_time/.test(name)) return { kind: 'galvatron-cluster', part: 'sp_time', doc, name: file.name };
  if (/computation_profiling/.test(name)) return { kind: 'galvatron-model', part: 'computation', doc, name: file.name };
  if (/memory_profiling/.test(name)) return { kind: 'galvatron-model', part: 'memory', doc, name: file.name };
  if (doc && doc.device && doc.hierarchy) return { kind: 'cluster', doc, name: file.name };
  if (doc && (doc.layer_types || doc.layers)) return { kind: 'model', doc, name: file.name };
  if (doc && (doc.num_hidden_layers || doc.n_layer || doc.num_layers || doc.hidden_size || doc.d_model)) return { kind: 'galvatron-model', part: 'config', doc, name: file.name };
  throw new Error(`${file.name}: neither a uniap cluster or model, a Galvatron profile nor nccl-tests output`);
}

function dropZone(onFiles) {
  const input = h('input', { type: 'file', id: 'upload', multiple: true, accept: '.json,.txt,.log,.out', class: 'sr' });
  const zone = h('div', { class: 'drop', id: 'drop' },
    h('p', {}, 'Drop documents here: uniap cluster or model JSON, Galvatron profiles (hardware files, or a model config with its computation and memory profiles), nccl-tests output. Or '),
    h('label', { for: 'upload', class: 'button ghost' }, 'choose files'), input);
  input.addEventListener('change', () => { if (input.files.length) onFiles([...input.files]); input.value = ''; });
  zone.addEventListener('dragover', (ev) => { ev.preventDefault(); zone.classList.add('over'); });
  zone.addEventListener('dragleave', () => zone.classList.remove('over'));
  zone.addEventListener('drop', (ev) => {
    ev.preventDefault();
    zone.classList.remove('over');
    if (ev.dataTransfer && ev.dataTransfer.files.length) onFiles([...ev.dataTransfer.files]);
  });
  return zone;
}

// Stores dropped files as documents; returns [{kind: 'cluster'|'model', id}].
async function uploadFiles(files, base, ask) {
  const parts = await Promise.all(files.map(classify));
  const out = [];
  for (const p of parts.filter((x) => x.kind === 'cluster' || x.kind === 'model')) {
    const r = await api('POST', `/v1/${p.kind}s`, { body: p.doc });
    out.push({ kind: p.kind, id: r.id, name: r.name || p.name });
  }
  const gc = parts.filter((x) => x.kind === 'galvatron-cluster');
  if (gc.length) {
    const body = { name: 'galvatron-hardware' };
    for (const p of gc) body[p.part] = p.doc;
    const shape = await ask('Galvatron hardware profiles: how many nodes, and GPUs per node?');
    if (!shape) throw new Error('upload canceled');
    body.nodes = shape.nodes;
    body.gpus_per_node = shape.gpus;
    const r = await api('POST', '/v1/clusters?format=galvatron', { body });
    out.push({ kind: 'cluster', id: r.id, name: r.name });
  }
  const gm = parts.filter((x) => x.kind === 'galvatron-model');
  if (gm.length) {
    const body = {};
    for (const p of gm) body[p.part] = p.doc;
    const cfg = gm.find((p) => p.part === 'config');
    body.name = cfg ? cfg.name.replace(/\.json$/i, '') : 'galvatron-model';
    const r = await api('POST', '/v1/models?format=galvatron', { body });
    out.push({ kind: 'model', id: r.id, name: r.name });
  }
  const nc = parts.filter((x) => x.kind === 'nccl');
  if (nc.length) {
    if (!base) throw new Error('nccl-tests output needs a base cluster: pick one first');
    const r = await api('POST', '/v1/clusters?format=nccl-tests', { body: { base, outputs: nc.map((p) => p.text), name: 'nccl-tests' } });
    out.push({ kind: 'cluster', id: r.id, name: r.name });
  }
  return out;
}

// A small in-page dialog asking for a Galvatron cluster's shape.
function askShape(question) {
  return new Promise((resolve) => {
    const nodes = h('input', { id: 'ask-nodes', type: 'number', min: 1, value: 1, required: true });
    const gpus = h('input', { id: 'ask-gpus', type: 'number', min: 1, value: 8, required: true });
    const dlg = h('dialog', { class: 'card', 'aria-labelledby': 'ask-title' },
      h('form', { method: 'dialog' }, h('h2', { id: 'ask-title' }, question),
        h('label', { for: 'ask-nodes' }, 'Nodes'), nodes, h('label', { for: 'ask-gpus' }, 'GPUs per node'), gpus,
        h('div', { class: 'row' }, h('button', { value: 'ok' }, 'Import'), h('button', { value: 'cancel', class: 'ghost' }, 'Cancel'))));
    document.body.append(dlg);
    dlg.addEventListener('close', () => {
      dlg.remove();
      resolve(dlg.returnValue === 'ok' ? { nodes: Number(nodes.value), gpus: Number(gpus.value) } : null);
    });
    dlg.showModal();
  });
}

function docRef(value, nodes) {
  if (value.startsWith('id:')) return Number(value.slice(3));
  const name = value.slice(4);
  return name.endsWith('-xN') ? name.replace(/-xN$/, `-x${nodes}`) : name;
}

async function newPlanView() {
  const [cat, clusters, models] = await Promise.all([getCatalog(), listAll('/v1/clusters'), listAll('/v1/models')]);
  const cluster = h('select', { id: 'cluster', name: 'cluster' });
  const model = h('select', { id: 'model', name: 'model' });
  docOptions(cluster, cat.clusters, clusters, 'cat:envb');
  docOptions(model, cat.models, models, 'cat:bert-huge');
  const nodes = h('input', { id: 'nodes', type: 'number', min: 2, max: 128, value: 4 });
  const nodesRow = h('div', { class: 'field', id: 'nodes-field' }, h('label', { for: 'nodes' }, 'Nodes (N)'), nodes);
  const syncNodes = () => { nodesRow.hidden = !cluster.value.endsWith('-xN'); };
  cluster.addEventListener('change', syncNodes);
  syncNodes();
  const batch = h('input', { id: 'batch', type: 'number', min: 1, value: 32, required: true });
  const schedule = h('select', { id: 'schedule', 'aria-describedby': 'schedule-help' }, ['gpipe', '1f1b', 'interleaved'].map((x) => h('option', { value: x }, x)));
  const space = h('select', { id: 'space', 'aria-describedby': 'space-help' }, [['unified', 'unified (UniAP)'], ['inter', 'inter-layer only'], ['intra', 'intra-layer only'], ['uniform', 'uniform (Megatron-style)']].map(([v, t]) => h('option', { value: v }, t)));
  const targets = ['megatron', 'deepspeed', 'galvatron'].map((t) => h('label', { class: 'check' }, h('input', { type: 'checkbox', name: 'target', value: t }), ` ${t}`));
  // the strategy dictionary's optional dimensions (POST /v1/plans; docs/cost-model.md): each adds
  // variants the optimizer may choose, none is forced on a layer
  const OPTION_HELP = [
    ['recompute', 'full recomputation', 'keep only each layer’s input and run its forward again in the backward: far less activation memory, about a third more compute'],
    ['selective_recompute', 'selective recomputation', 'recompute only the attention core (Megatron-LM’s selective granularity): most of the memory saved for a few per cent of time'],
    ['zero', 'ZeRO-1/2 (distributed optimizer)', 'shard the optimizer states (ZeRO-1) and gradients (ZeRO-2) over the data-parallel ranks'],
    ['sequence_parallel', 'sequence parallelism', 'shard the activations tensor parallelism replicates (norms, dropout) over the tensor-parallel ranks'],
    ['fp8', 'FP8 training', 'FP8 GEMMs on devices that have FP8 figures (H100, H200, B200): faster, with FP8 weight copies'],
    ['uneven_microbatches', 'uneven micro-batches', 'micro-batch counts that leave the last micro-batch smaller (64 in 11)']];
  const opts = OPTION_HELP.map(([v, t, help]) =>
    h('label', { class: 'check', title: help }, h('input', { type: 'checkbox', name: 'option', value: v, id: `opt-${v}`, 'aria-describedby': `opt-${v}-help` }), ` ${t}`,
      h('span', { class: 'sr', id: `opt-${v}-help` }, help)));
  const optionsHelp = h('ul', { class: 'help option-help', id: 'options-help' },
    OPTION_HELP.map(([, t, help]) => h('li', {}, h('strong', {}, t), `: ${help}.`)));
  const vstages = h('input', { id: 'virtual-stages', type: 'number', min: 2, max: 64, placeholder: 'search 2–4' });
  const vsRow = h('div', { class: 'field', id: 'virtual-stages-field' }, h('label', { for: 'virtual-stages' }, 'Model chunks per rank'), vstages);
  // what a plan's TPI is (docs/optimizer.md, "The makespan objective")
  const objective = h('select', { id: 'objective', 'aria-describedby': 'objective-help' },
    [['formula', 'the formula (fast)'], ['makespan', 'the 1F1B iteration as run (exact, slower)']].map(([v, t]) => h('option', { value: v }, t)));
  const objectiveRow = h('div', { class: 'field', id: 'objective-field' }, h('label', { for: 'objective' }, 'Objective'), objective,
    h('p', { class: 'help', id: 'objective-help' }, 'The formula is fast; the makespan prices Megatron-LM’s order as it runs (1F1B’s blocking exchanges, interleaved’s overlapped transfers), solved exactly on the MILP.'));
  const syncSchedule = () => { vsRow.hidden = schedule.value !== 'interleaved'; };
  schedule.addEventListener('change', syncSchedule);
  syncSchedule();
  const cp = h('input', { id: 'context-parallel', type: 'number', min: 1, max: 1024, placeholder: '1', 'aria-describedby': 'context-parallel-help' });
  const cpComm = h('select', { id: 'cp-comm' }, [['p2p', 'ring (p2p)'], ['a2a', 'Ulysses (all-to-all)']].map(([v, t]) => h('option', { value: v }, t)));
  const cpCommRow = h('div', { class: 'field', id: 'cp-comm-field' }, h('label', { for: 'cp-comm' }, 'Context-parallel exchange'), cpComm);
  const syncCp = () => { cpCommRow.hidden = !(Number(cp.value) > 1); };
  cp.addEventListener('input', syncCp);
  syncCp();
  const deadline = h('input', { id: 'deadline', type: 'number', min: 0.001, step: 'any', placeholder: 'none', 'aria-describedby': 'deadline-help' });
  const limit = h('input', { id: 'time-limit', type: 'number', min: 0.1, step: 'any', value: 60, 'aria-describedby': 'time-limit-help' });
  const every = h('input', { id: 'every-candidate', type: 'checkbox', 'aria-describedby': 'every-candidate-help' });
  const margin = h('input', { id: 'margin', type: 'number', min: 0, max: 0.5, step: 'any', placeholder: 'the cluster’s', 'aria-describedby': 'margin-help' });
  const status = h('div', { id: 'upload-status', 'aria-live': 'polite' });
  const err = h('div', { id: 'plan-error', 'aria-live': 'assertive' });
  const drop = dropZone(async (files) => {
    clear(status).append('Uploading…');
    try {
      const base = cluster.value ? docRef(cluster.value, nodes.value) : null;
      const got = await uploadFiles(files, base, askShape);
      const [cl, md] = await Promise.all([listAll('/v1/clusters'), listAll('/v1/models')]);
      const lastC = got.filter((g) => g.kind === 'cluster').pop(), lastM = got.filter((g) => g.kind === 'model').pop();
      docOptions(cluster, cat.clusters, cl, lastC ? `id:${lastC.id}` : cluster.value);
      docOptions(model, cat.models, md, lastM ? `id:${lastM.id}` : model.value);
      syncNodes();
      clear(status).append(`Stored ${got.map((g) => `${g.kind} #${g.id}`).join(', ')}.`);
    } catch (e) { clear(status).append(errorBox(e)); }
  });
  const submit = h('button', { type: 'submit', id: 'submit-plan' }, 'Plan');
  const form = h('form', { id: 'new-plan', class: 'card grid-form' },
    h('div', { class: 'field wide' }, h('label', { for: 'cluster' }, 'Cluster'), cluster), nodesRow,
    h('div', { class: 'field wide' }, h('label', { for: 'model' }, 'Model'), model),
    h('div', { class: 'field wide' }, drop, status),
    h('div', { class: 'field' }, h('label', { for: 'batch' }, 'Global batch'), batch),
    h('div', { class: 'field' }, h('label', { for: 'schedule' }, 'Schedule'), schedule,
      h('p', { class: 'help', id: 'schedule-help' }, 'gpipe: all forwards, then all backwards; 1f1b: Megatron-LM’s order, fewer micro-batches in flight; interleaved: 1F1B over model chunks, a smaller bubble.')),
    h('div', { class: 'field' }, h('label', { for: 'space' }, 'Space'), space,
      h('p', { class: 'help', id: 'space-help' }, 'unified: each layer its own layout (UniAP); inter or intra: pipeline or layouts only; uniform: one layout for all (Megatron-style).')),
    h('fieldset', { class: 'field', 'aria-describedby': 'targets-help' }, h('legend', {}, 'Runtime targets'), targets,
      h('p', { class: 'help', id: 'targets-help' }, 'Only plans each ticked runtime runs, each priced against the best plan of any layout (planned beside it).')),
    h('fieldset', { class: 'field wide', id: 'options' }, h('legend', {}, 'Also consider'), opts, optionsHelp), vsRow, objectiveRow,
    h('div', { class: 'field' }, h('label', { for: 'context-parallel' }, 'Context parallelism'), cp,
      h('p', { class: 'help', id: 'context-parallel-help' }, 'Split every sequence over this many ranks (long context).')), cpCommRow,
    h('div', { class: 'field' }, h('label', { for: 'time-limit' }, 'Time limit per candidate (s)'), limit,
      h('p', { class: 'help', id: 'time-limit-help' }, 'Each candidate’s exact solve; past it, its best plan and bound.')),
    h('div', { class: 'field' }, h('label', { for: 'deadline' }, 'Deadline for the whole plan (s)'), deadline,
      h('p', { class: 'help', id: 'deadline-help' }, 'Then the best plan so far, with its gap.')),
    h('div', { class: 'field' }, h('label', { class: 'check', for: 'every-candidate' }, every, ' Solve every candidate'),
      h('p', { class: 'help', id: 'every-candidate-help' }, 'Each pipeline degree and micro-batch count to its own optimum, none pruned by another’s plan: the candidates’ map then compares them all. Slower; the plan is the same.')),
    h('div', { class: 'field' }, h('label', { for: 'margin' }, 'Memory margin (0–0.5)'), margin,
      h('p', { class: 'help', id: 'margin-help' }, 'Fraction of device memory no plan may use.')),
    h('div', { class: 'field wide row' }, submit), err);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clear(err);
    const body = {
      cluster: docRef(cluster.value, nodes.value), model: docRef(model.value, nodes.value),
      batch: Number(batch.value), schedule: schedule.value, space: space.value, time_limit_s: Number(limit.value),
    };
    const t = targets.map((l) => l.querySelector('input')).filter((i) => i.checked).map((i) => i.value);
    // one target is planned beside the unconstrained optimum, so that it comes with its price
    if (t.length) body.targets = t.length === 1 ? [t[0], 'any'] : t;
    if (margin.value !== '') body.memory_margin = Number(margin.value);
    opts.map((l) => l.querySelector('input')).filter((i) => i.checked).forEach((i) => { body[i.value] = true; });
    if (schedule.value === 'interleaved' && vstages.value !== '') body.virtual_stages = Number(vstages.value);
    if (Number(cp.value) > 1) { body.context_parallel = Number(cp.value); body.cp_comm = cpComm.value; }
    if (deadline.value !== '') body.deadline_s = Number(deadline.value);
    if (every.checked) body.every_candidate = true;
    if (objective.value === 'makespan') body.objective = 'makespan';
    submit.disabled = true;
    try {
      const r = await api('POST', '/v1/plans', { body });
      location.hash = `#/jobs/${r.id}`;
    } catch (e) {
      err.append(errorBox(e));
      submit.disabled = false;
    }
  });
  view('New plan', form);
}

// ---------------------------------------------------------------- a job

function progressPanel(job, onCancel, onStop) {
  const f = (id, label, value) => h('div', { class: 'stat' }, h('dt', {}, label), h('dd', { id }, value));
  const bar = h('progress', { id: 'progress-bar', max: 1, value: 0, 'aria-label': 'Candidates done' });
  const panel = h('section', { class: 'card progress', id: 'progress', 'aria-labelledby': 'progress-title', 'data-events': 0 },
    h('h2', { id: 'progress-title' }, 'Progress'),
    h('dl', { class: 'stats' },
      f('progress-state', 'State', job.state), f('progress-done', job.kind === 'allocation' ? 'Curve points' : 'Candidates', '–'),
      f('progress-best', 'Best TPI so far', '–'), f('progress-bound', 'Bound', '–'), f('progress-elapsed', 'Elapsed', '–'),
      f('progress-events', 'Events', '0')),
    bar,
    h('div', { class: 'row' },
      h('button', { type: 'button', id: 'cancel', class: 'danger', onclick: onCancel }, 'Cancel'),
      h('button', { type: 'button', id: 'stop', class: 'ghost', onclick: onStop,
        title: job.kind === 'allocation' ? 'Plan no more curve points and allocate on those planned' : 'End the search now and keep the best plan so far' },
      job.kind === 'allocation' ? 'Stop and allocate' : 'Stop and keep the best')));
  return panel;
}

// Shows the job's state and progress d (an event's data or the job itself).
function updateProgress(panel, d) {
  const p = d.progress || {};
  panel.querySelector('#progress-state').textContent = d.state;
  panel.querySelector('#progress-done').textContent = `${p.candidates_done ?? 0} / ${p.candidates_total ?? 0}`;
  panel.querySelector('#progress-best').textContent = secs(p.best_tpi_s);
  panel.querySelector('#progress-bound').textContent = secs(p.bound_s);
  panel.querySelector('#progress-elapsed').textContent = secs(d.elapsed_s);
  const bar = panel.querySelector('#progress-bar');
  bar.value = p.candidates_total ? p.candidates_done / p.candidates_total : 0;
}

function clusterDevice(job) {
  const ref = job.request && job.request.cluster;
  if (ref === undefined || ref === 'inline') return Promise.resolve(null);
  const path = typeof ref === 'number' || /^[0-9]+$/.test(String(ref)) ? `/v1/clusters/${ref}` : `/v1/catalog/${encodeURIComponent(ref)}`;
  return api('GET', path).then((d) => (d && d.document ? d.document : d)).catch(() => null);
}

async function jobView(id) {
  const signal = viewAbort.signal;
  let job = await api('GET', `/v1/jobs/${id}`);
  const head = h('p', { class: 'sub' }, `${job.kind} job, created ${job.created_at}`, ' · ',
    h('button', { type: 'button', class: 'ghost', id: 'add-compare', onclick: () => { setCompared(job.id, true); toast(`Job ${job.id} added to Compare`); } }, 'Add to compare'));
  const body = h('div', { id: 'job-body' });
  view(`Job ${id}`, head, body);
  if (job.state === 'queued' || job.state === 'running') {
    const panel = progressPanel(job, async () => {
      try { await api('POST', `/v1/jobs/${id}/cancel`); toast('Cancel sent'); } catch (e) { toast(e.message); }
    }, async () => {
      try { await api('POST', `/v1/jobs/${id}/stop`); toast('Stop sent: the best plan so far is kept'); } catch (e) { toast(e.message); }
    });
    body.append(panel);
    updateProgress(panel, { state: job.state, progress: job.progress, elapsed_s: 0 });
    const onEvent = (name, d) => {
      const n = Number(panel.dataset.events) + 1;
      panel.dataset.events = n;
      panel.dataset.names = `${panel.dataset.names || ''} ${name}`.trim();
      panel.querySelector('#progress-events').textContent = `${n}`;
      updateProgress(panel, d);
    };
    try {
      await followJob(id, onEvent, signal);
    } catch (e) { body.append(errorBox(e)); }
    if (signal.aborted) return;
    job = await api('GET', `/v1/jobs/${id}`);
    panel.querySelector('#progress-state').textContent = job.state;
    panel.querySelectorAll('button').forEach((b) => { b.disabled = true; });
    panel.classList.add('finished');
  }
  if (job.state !== 'succeeded') {
    const said = { failed: 'The job failed.', canceled: 'The job was canceled.' }[job.state] || `The job is ${job.state}.`;
    body.append(h('div', { class: 'card' }, h('p', { id: 'job-state' }, said), job.error ? errorBox(new Error(job.error)) : null));
    return;
  }
  if (job.kind === 'calibration') {
    // a cluster fitted to measured runs (docs/calibration.md): its report as the service gave it
    body.append(section('Calibration', h('pre', { class: 'export', tabindex: 0 }, JSON.stringify(job.result, null, 2))));
    return;
  }
  if (job.kind === 'allocation') {
    renderAllocation(body, job);
    return;
  }
  const device = await clusterDevice(job);
  renderResult(body, job, device);
}

// The dictionary options a plan request asked for, as words ('' for none).
function requestOptions(req) {
  if (!req) return '';
  const said = [['recompute', 'recomputation'], ['selective_recompute', 'selective recomputation'], ['zero', 'ZeRO'],
    ['sequence_parallel', 'sequence parallelism'], ['fp8', 'FP8'], ['uneven_microbatches', 'uneven micro-batches']]
    .filter(([k]) => req[k] === true).map(([, t]) => t);
  if (req.context_parallel > 1) said.push(`context parallelism ${req.context_parallel} (${req.cp_comm || 'p2p'})`);
  return said.join(', ');
}

// The fidelity sets measured on clusters of the kind of `name` (ui/fidelity.json: the
// ratchet's baseline, docs/fidelity.md): the same name less its node count.
let fidelity = null;
const clusterFamily = (n) => String(n).replace(/-x([0-9]+|N)$/, '').replace(/-[0-9]+$/, '');
async function fidelitySets(name) {
  if (fidelity === null) fidelity = (await uiJson('fidelity.json')) || { sets: [] };
  if (typeof name !== 'string' || name === 'inline') return [];
  return fidelity.sets.filter((x) => clusterFamily(x.cluster) === clusterFamily(name));
}

// How far estimates on this kind of cluster were from measured runs: a badge, and the sets behind it.
function estimateBadge(sets, name) {
  const doc = 'docs/fidelity.md in the repository (make bench-fidelity)';
  if (!sets.length) {
    return h('details', { class: 'estimate', id: 'estimate' },
      h('summary', { class: 'badge unknown' }, 'Estimate: no measured runs of this kind'),
      h('p', { class: 'help' }, `No published run on ${typeof name === 'string' ? clusterFamily(name) : 'this cluster'} clusters is in the fidelity sets: `,
        'the TPI is the cost model’s, and elsewhere the model has been optimistic by 1 to 60 % (', doc, ').'));
  }
  const errs = sets.map((x) => x.error_pct);
  const lo = Math.min(...errs), hi = Math.max(...errs);
  const range = lo === hi ? `${lo.toFixed(1)} %` : `${lo.toFixed(1)}–${hi.toFixed(1)} %`;
  return h('details', { class: 'estimate', id: 'estimate' },
    h('summary', { class: `badge ${hi <= 10 ? 'good' : hi <= 30 ? 'fair' : 'poor'}` }, `Estimate: ${range} from measured runs`),
    h('p', { class: 'help' }, `Mean error of the iteration time the model predicted for published runs on ${clusterFamily(name)} clusters, per set (`, doc, '):'),
    h('ul', { class: 'help' }, sets.map((x) => h('li', {}, `${x.error_pct.toFixed(1)} %: ${x.about}`))));
}

function summary(plan, res, extra, options, price) {
  const f = (label, value, id) => h('div', { class: 'stat' }, h('dt', {}, label), h('dd', id ? { id } : {}, value));
  return h('dl', { class: 'stats summary' },
    f('TPI', secs(plan.tpi_s), 'tpi'), f('Throughput', `${num(plan.throughput_samples_per_s)} samples/s`),
    f('Optimality', (res.optimal ?? res.status === 'optimal') ? 'proven optimal in the model' : 'not proven', 'optimality'),
    price !== undefined ? f('Price', price, 'price') : null,
    f('Gap', res.gap === undefined || res.gap === null ? '–' : pct(res.gap)),
    f('Bound', secs(res.bound_s)),
    f('Pipeline', `${plan.pp} stage${plan.pp === 1 ? '' : 's'}${plan.virtual_stages ? ` × ${plan.virtual_stages} chunks` : ''}, ${plan.microbatches} micro-batch${plan.microbatches === 1 ? '' : 'es'} of ${plan.microbatch_size}`),
    f('Schedule', plan.schedule),
    plan.objective === 'makespan' ? f('Objective', `the iteration as run (its formula: ${secs(plan.formula_tpi_s)})`, 'objective-used') : null,
    f('Solve', secs(res.solve_s)), extra ? f('Space', extra) : null,
    options ? f('Options', options, 'options-used') : null);
}

function exportsPanel(job, target) {
  const q = (fmt) => `/v1/jobs/${job.id}/plan?format=${fmt}${target ? `&target=${target}` : ''}`;
  const out = h('pre', { id: 'export-text', class: 'export', tabindex: 0, 'aria-label': 'Exported text' });
  const err = h('div', { id: 'export-error', 'aria-live': 'polite' });
  const copy = h('button', { type: 'button', id: 'export-megatron' }, 'Copy Megatron-LM arguments');
  copy.addEventListener('click', async () => {
    clear(err);
    try {
      const r = await api('GET', q('megatron'), { text: true });
      out.textContent = r.text;
      await navigator.clipboard.writeText(r.text);
      out.dataset.copied = '1';
      toast('Megatron-LM arguments copied');
    } catch (e) { err.append(errorBox(e)); }
  });
  const dl = (fmt, label, file) => {
    const b = h('button', { type: 'button', id: `export-${fmt}`, class: 'ghost' }, label);
    b.addEventListener('click', async () => {
      clear(err);
      try {
        const n = await download(q(fmt), file);
        toast(`${file} downloaded (${n} bytes)`);
      } catch (e) { err.append(errorBox(e)); }
    });
    return b;
  };
  const note = target && target !== 'any'
    ? `This is the plan for ${target}: it exports to ${target}’s configuration (the other runtimes may refuse it, naming the layer).`
    : 'A runtime takes one layout for every layer; a unified plan that mixes layouts exports only to the plan formats. Plan with runtime targets for plans that export.';
  return section('Exports', h('div', { class: 'row' }, copy, dl('deepspeed', 'Download DeepSpeed JSON', `uniap-job-${job.id}-deepspeed.json`),
    dl('galvatron', 'Download Galvatron JSON', `uniap-job-${job.id}-galvatron.json`), dl('json', 'Download the plan', `uniap-job-${job.id}-plan.json`),
    dl('chrome-trace', 'Download the trace (Perfetto)', `uniap-job-${job.id}-trace.json`)),
  h('p', { class: 'help', id: 'export-note' }, note, ' The trace opens in ui.perfetto.dev or chrome://tracing: one iteration, a track per rank and link.'), err, out);
}

function targetsPanel(res, onPick) {
  const rows = res.targets.map((t) => h('tr', { 'data-target': t.target },
    h('th', { scope: 'row' }, t.target), h('td', {}, t.runtime || ''), h('td', {}, t.status),
    h('td', {}, secs(t.tpi_s)), h('td', {}, t.pp ? `${t.pp} × ${t.microbatches}` : '–'),
    h('td', {}, Number.isFinite(t.price) ? `+${pct(t.price)}` : '–'),
    h('td', {}, t.plan ? h('button', { type: 'button', class: 'ghost', onclick: () => onPick(t) }, 'Show') : (t.error || ''))));
  return section('Runtime targets', scroller(h('table', { class: 'data', 'aria-label': 'Plans per runtime target' },
    h('thead', {}, h('tr', {}, ['Target', 'Runtime', 'Status', 'TPI', 'pp × c', 'Price', '#Plan'].map(colHead))),
    h('tbody', {}, rows))));
}

// Each pipeline rank's memory against the limit: a warning for the ranks at 95 % of it or more.
function memoryWarning(plan) {
  const used = [];
  plan.stages.forEach((st, i) => {
    const r = i % plan.pp;
    used[r] = st.rank_memory_bytes !== undefined ? st.rank_memory_bytes : (used[r] || 0) + st.memory_bytes;
  });
  const full = used.map((u, r) => [r, u / plan.memory_limit_bytes]).filter(([, f]) => f >= 0.95);
  if (!full.length || !plan.memory_limit_bytes) return null;
  return h('p', { class: 'warning', id: 'memory-warning', role: 'status' },
    `Rank${full.length > 1 ? 's' : ''} ${full.map(([r, f]) => `${r} (${pct(f)})`).join(', ')} at 95 % of the memory limit or more. `,
    'The limit already keeps the reserved memory, the allocator’s fragmentation and the safety margin aside, ',
    'but the model’s memory estimates are not exact: such a plan may run out of memory. A larger memory margin, ',
    'recomputation or ZeRO leave more room.');
}

// Where each rank's memory goes (POST /v1/evaluate on the plan): parameters, gradients, optimizer
// states, activations, buffers, the allocator's loss, reserved, the safety margin and what is free.
function memoryBreakdown(job, plan) {
  const box = h('div', { id: 'memory-breakdown', class: 'loading' }, 'Pricing the memory breakdown…');
  const req = job.request || {};
  if (req.cluster === 'inline' || req.model === 'inline' || req.cluster === undefined) {
    clear(box).append(h('p', { class: 'help' }, 'The job’s documents were sent inline: the breakdown needs them stored or from the catalog.'));
    return box;
  }
  api('POST', '/v1/evaluate', { body: { cluster: req.cluster, model: req.model, batch: req.batch, plan } }).then((rep) => {
    box.classList.remove('loading');
    const ranks = [];
    (rep.stages || []).forEach((st, i) => { if (st.memory && ranks[i % plan.pp] === undefined) ranks[i % plan.pp] = st.memory; });
    const cols = [['Parameters', (m) => m.weight_bytes], ['Gradients', (m) => m.gradient_bytes], ['Optimizer states', (m) => m.optimizer_state_bytes],
      ['Activations', (m) => m.activation_bytes], ['Buffers (FSDP)', (m) => m.fsdp_accumulation_bytes + m.fsdp_transient_bytes],
      ['Fragmentation', (m) => m.fragmentation_bytes], ['Reserved', (m) => m.reserved_bytes], ['Margin', (m) => m.margin_bytes],
      ['Free', (m) => m.free_bytes]];
    clear(box).append(scroller(h('table', { class: 'data', id: 'memory-table', 'aria-label': 'Memory per device of each pipeline rank' },
      h('caption', {}, `Per device of each pipeline rank, of ${gib(ranks.length && ranks[0] ? ranks[0].device_memory_bytes : 0)}`),
      h('thead', {}, h('tr', {}, ['Rank', ...cols.map(([t]) => t), 'Of the limit'].map(colHead))),
      h('tbody', {}, ranks.map((m, r) => h('tr', { 'data-rank': r, class: m.allocated_bytes >= 0.95 * m.memory_limit_bytes ? 'near-limit' : '' },
        h('th', { scope: 'row' }, `${r}`), ...cols.map(([, f]) => h('td', {}, gib(f(m)))),
        h('td', {}, pct(m.allocated_bytes / m.memory_limit_bytes))))))));
  }).catch((e) => { box.classList.remove('loading'); clear(box).append(errorBox(e)); });
  return box;
}

// Nothing fits: why, what would help, and the same request again with every way to save memory.
function nothingFits(job, res2) {
  const req = job.request || {};
  const asked = requestOptions(req);
  const replan = h('button', { type: 'button', id: 'replan-memory' }, 'Plan again with recomputation, ZeRO and sequence parallelism');
  const err = h('div', { 'aria-live': 'polite' });
  if (req.cluster === 'inline' || req.model === 'inline') replan.disabled = true;
  replan.addEventListener('click', async () => {
    clear(err);
    replan.disabled = true;
    try {
      const r = await api('POST', '/v1/plans', { body: Object.assign({}, req, { recompute: true, zero: true, sequence_parallel: true }) });
      location.hash = `#/jobs/${r.id}`;
    } catch (e) { err.append(errorBox(e)); replan.disabled = false; }
  });
  const counts = {};
  (res2.candidates || []).forEach((c) => { counts[c.status] = (counts[c.status] || 0) + 1; });
  return h('div', { class: 'card' },
    h('p', { id: 'no-plan' }, 'Nothing fits: no candidate has a plan within memory',
      res2.candidates ? ` (${Object.entries(counts).map(([k, n]) => `${n} ${k}`).join(', ')}).` : '.'),
    h('ul', { class: 'help', id: 'no-plan-hints' },
      h('li', {}, 'Recomputation keeps only each layer’s input; ZeRO shards the optimizer states and gradients; sequence parallelism shards what tensor parallelism replicates',
        asked ? ` (this job already considered: ${asked}).` : '.'),
      h('li', {}, 'More devices (a larger cluster, or more nodes of it) spread the model states further.'),
      h('li', {}, 'A smaller global batch, or more micro-batches, keeps fewer activations in flight.')),
    h('div', { class: 'row' }, replan), err,
    req.cluster === 'inline' || req.model === 'inline' ? h('p', { class: 'help' }, 'This job’s documents were sent inline: plan again from the form.') : null);
}

function renderResult(body, job, device) {
  const res = job.result;
  const wrap = h('div', { id: 'plan-view', 'data-job': job.id });
  body.append(wrap);
  const show = (plan, res2, target) => {
    clear(wrap);
    if (!plan) {
      wrap.append(nothingFits(job, res2));
      if (res2.candidates) wrap.append(section('Candidates', heatmap(res2.candidates, null)));
      return;
    }
    wrap.dataset.stages = plan.stages.length;
    wrap.dataset.layers = plan.layers.length;
    wrap.dataset.target = target || '';
    const tl = timeline(plan);
    const d = device && device.device;
    const margin = job.request && job.request.memory_margin !== undefined ? job.request.memory_margin : d ? d.memory_margin || 0 : 0;
    const entry = res.targets ? res.targets.find((t) => t.target === target) : null;
    const priced = Number.isFinite(res2.price) ? res2.price : entry && Number.isFinite(entry.price) ? entry.price : null;
    const price = !target || target === 'any' ? undefined
      : priced !== null ? `+${pct(priced)} against any layout`
        : res.targets ? '–' : 'not priced (planned alone: plan with runtime targets to price it)';
    const badge = h('div', { class: 'estimate-wrap' });
    fidelitySets(job.request && job.request.cluster).then((sets) => badge.append(estimateBadge(sets, job.request && job.request.cluster)));
    wrap.append(
      section(target ? `Plan for ${target}` : 'Plan', summary(plan, res2, res.space, requestOptions(job.request), price), badge),
      section('Devices', stageLegend(plan), scroller(deviceGrid(plan, device && device.devices_per_node))),
      section('Layers', layerStrip(plan)),
      section('Timeline', h('p', { class: 'help' },
        `One iteration under ${plan.schedule}: forward (light) and backward (dark) blocks per pipeline rank, transfers between them, idle time hatched. `,
        `Forward is drawn as ${Math.round(FORWARD_SHARE * 100)} % of each stage's time (backward ≈ 2 × forward); the drawn iteration lasts ${secs(tl.sim.length)} against the plan's ${secs(plan.tpi_s)}.`,
        tl.sim.known ? '' : ' This plan predates transfer times: transfers are not drawn.',
        tl.sim.complete ? '' : ' The layout stopped before every unit was placed (a unit waits on one never run): the drawing is partial.'),
      scroller(tl.svg), scroller(stageTable(plan, tl.sim))),
      section('Memory', memoryWarning(plan), h('p', { class: 'help' }, `Per device of each pipeline rank, against the plan's limit ${gib(plan.memory_limit_bytes)}`,
        d ? ` of ${gib(d.memory_bytes)} (${d.name || 'device'}); hatched: the safety margin, ${pct(margin)}.` : '.'), scroller(memoryBars(plan, d, margin)),
      memoryBreakdown(job, plan)),
      res2.candidates ? section('Candidates', heatmap(res2.candidates, plan))
        : section('Candidates', h('p', { class: 'help' }, `The service reports the candidates of the first target (${res.target}) only.`)),
      exportsPanel(job, target));
  };
  // a job of one runtime target (without "any" beside it) is that target's plan, unpriced
  show(res.plan, res, res.target && (res.targets || res.target !== 'any') ? res.target : null);
  if (res.targets) body.insertBefore(targetsPanel(res, (t) => { show(t.plan, Object.assign({}, t, { candidates: null }), t.target); wrap.scrollIntoView(); }), wrap);
}


// ---------------------------------------------------------------- allocations

const OBJECTIVE_WORDS = {
  throughput: 'the weighted sum of each job’s throughput over its best',
  fair: 'the least throughput relative to an equal share',
  deadline: 'the latest finish',
  missed: 'the jobs past their deadline',
};

// An allocation job's report (docs/allocation.md): what it optimised, each pool's nodes by job,
// each job's row with its curve per pool and its plan on demand.
function renderAllocation(body, job) {
  const rep = job.result, pools = reportPools(rep);
  const f = (label, value, id) => h('div', { class: 'stat' }, h('dt', {}, label), h('dd', id ? { id } : {}, value));
  const value = rep.objective === 'deadline' ? secs(rep.value) : rep.objective === 'missed' ? `${rep.value} missed` : num(rep.value);
  const wrap = h('div', { id: 'allocation-view', 'data-job': job.id, 'data-jobs': rep.jobs.length, 'data-pools': pools.length });
  body.append(wrap);
  wrap.append(section('Allocation', h('dl', { class: 'stats summary' },
    f('Objective', `${rep.objective}: ${OBJECTIVE_WORDS[rep.objective] || ''}`, 'alloc-objective'), f('Value', value, 'alloc-value'),
    f('Throughput value', num(rep.throughput_value)),
    rep.price_of_fairness !== undefined ? f('Price of fairness', pct(rep.price_of_fairness)) : null,
    f('Devices used', `${rep.devices_used} of ${rep.devices}`, 'alloc-used'), f('Planner runs', `${rep.planner_runs}`),
    rep.moves !== undefined ? f('Moves', `${rep.moves}`) : null),
  rep.stopped ? h('p', { class: 'help', id: 'alloc-stopped' }, `The planning was stopped: ${rep.unplanned_points} curve points were not planned and count as having no plan.`) : null,
  h('p', { class: 'help' }, 'Throughputs are the planner’s estimates on each allocation size; docs/fidelity.md says how far such estimates have been from measured runs.')));
  const nodes = section('Nodes', jobLegend(rep));
  pools.forEach((p, pi) => nodes.append(h('figure', { class: 'pool-figure' },
    h('figcaption', {}, `${p.name}: ${p.nodes} node${p.nodes === 1 ? '' : 's'} × ${p.perNode}, ${p.used} of ${p.devices} devices given`),
    scroller(poolGrid(rep, pools, pi), `${p.name}'s nodes`))));
  wrap.append(nodes);
  const plan = h('div', { id: 'alloc-plan' });
  const showPlan = (j) => {
    clear(plan);
    if (!j.plan) { plan.append(h('p', { class: 'help' }, `No plan for ${j.name} in the report.`)); return; }
    const tl = timeline(j.plan);
    const p = j.plan;
    // the planner's optimum at this size (each curve point is a full plan run); its search
    // statistics are not in the report, so none are shown
    plan.append(section(`Plan of ${j.name} on ${j.devices} devices${j.pool ? ` of ${j.pool}` : ''}`,
      h('dl', { class: 'stats summary' }, f('TPI', secs(p.tpi_s)), f('Throughput', `${num(p.throughput_samples_per_s)} samples/s`),
        f('Pipeline', `${p.pp} stage${p.pp === 1 ? '' : 's'}${p.virtual_stages ? ` × ${p.virtual_stages} chunks` : ''}, ${p.microbatches} micro-batch${p.microbatches === 1 ? '' : 'es'} of ${p.microbatch_size}`),
        f('Schedule', p.schedule)),
      stageLegend(p), layerStrip(p), scroller(tl.svg)));
    plan.dataset.job = j.name;
    plan.scrollIntoView();
  };
  const rows = rep.jobs.map((j, k) => {
    const pi = jobPool(rep, pools, j);
    return h('tr', { 'data-job': j.name, 'data-devices': j.devices, 'data-pool': j.pool || (pi >= 0 ? pools[pi].name : '') },
      h('th', { scope: 'row' }, h('span', { class: `swatch ${stageClass(k)}`, 'aria-hidden': 'true' }), j.name),
      h('td', {}, j.devices ? `${j.devices}${rep.pools && j.pool ? ` of ${j.pool}` : ''}` : 'nothing'),
      h('td', {}, (j.nodes || []).join(', ') || '–'),
      h('td', {}, j.devices ? `${num(j.throughput_samples_per_s)} samples/s` : '–'), h('td', {}, pct(j.normalized_throughput)),
      h('td', {}, j.finish_s !== undefined ? secs(j.finish_s) : '–'),
      h('td', {}, j.meets_deadline === undefined ? '–' : j.meets_deadline ? 'met' : 'missed'),
      h('td', {}, j.moved === undefined ? '–' : j.moved ? 'moves' : 'stays'),
      h('td', { class: 'curves' }, pools.map((p, qi) => h('figure', { class: 'curve-figure' }, curvePlot(rep, pools, k, qi),
        pools.length > 1 ? h('figcaption', {}, p.name) : null))),
      h('td', {}, j.plan ? h('button', { type: 'button', class: 'ghost', 'data-plan': j.name, onclick: () => showPlan(j) }, 'Show plan') : '–'));
  });
  wrap.append(section('Jobs', scroller(h('table', { class: 'data', id: 'alloc-table', 'aria-label': 'Jobs of the allocation' },
    h('thead', {}, h('tr', {}, ['Job', 'Devices', 'Nodes', 'Throughput', 'Of its best', 'Finish', 'Deadline', 'Re-plan', 'Throughput by size', '#Plan'].map(colHead))),
    h('tbody', {}, rows)))), plan);
}


const ALLOCATION_EXAMPLE = {
  clusters: ['enva', 'dgx-a100'],
  objective: 'throughput',
  jobs: [
    { name: 'bert-huge', model: 'bert-huge', batch: 32, weight: 2 },
    { name: 'vit-huge', model: 'vit-huge', batch: 128, min_devices: 2 },
    { name: 't5-large', model: 't5-large', batch: 16, schedule: '1f1b' },
  ],
};

// A new allocation: the request body as JSON (POST /v1/allocations, docs/allocation.md).
function newAllocationView() {
  const text = h('textarea', { id: 'alloc-body', rows: 16, spellcheck: 'false', 'aria-describedby': 'alloc-help' });
  text.value = JSON.stringify(ALLOCATION_EXAMPLE, null, 2);
  const status = h('div', { id: 'alloc-status', 'aria-live': 'polite' });
  const form = h('form', { class: 'card', id: 'alloc-form' },
    h('label', { for: 'alloc-body' }, 'Request'), text,
    h('p', { id: 'alloc-help', class: 'help' }, 'clusters (pools: stored ids, catalog names or documents) or cluster, jobs (name, model, batch, and weight, min_devices, max_devices, samples, deadline_s, schedule, recompute, zero, sequence_parallel, selective_recompute, fp8), objective (throughput, fair, deadline or missed), restart_cost, drain, current and curves. Each job runs inside one pool; its throughput at every size is the planner’s optimum.'),
    h('div', { class: 'row' }, h('button', { type: 'submit', id: 'alloc-submit' }, 'Allocate')), status);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clear(status);
    let req;
    try { req = JSON.parse(text.value); } catch (e) { status.append(errorBox(new Error(`The request is not JSON: ${e.message}`))); return; }
    try {
      const r = await api('POST', '/v1/allocations', { body: req });
      location.hash = `#/jobs/${r.id}`;
    } catch (e) { status.append(errorBox(e)); }
  });
  view('New allocation', h('p', { class: 'sub' }, 'Share a cluster, or pools of several device types, among training jobs, exactly.'), form);
}

// ---------------------------------------------------------------- compare

function compareIds() {
  try { return JSON.parse(sessionStorage.getItem('uniap.compare') || '[]'); } catch (e) { return []; }
}

// Picks job id for Compare (on) or drops it; the last 8 picked are kept.
function setCompared(id, on) {
  const ids = compareIds().filter((x) => x !== id);
  if (on) ids.push(id);
  sessionStorage.setItem('uniap.compare', JSON.stringify(ids.slice(-8)));
}

async function compareView() {
  const ids = compareIds();
  const input = h('input', { id: 'compare-ids', value: ids.join(', '), 'aria-describedby': 'compare-help' });
  const form = h('form', { class: 'card row', id: 'compare-form' }, h('label', { for: 'compare-ids' }, 'Jobs'), input,
    h('button', { type: 'submit' }, 'Compare'),
    h('p', { id: 'compare-help', class: 'help' }, 'Job ids, separated by commas; or tick jobs in the Jobs list.'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const list = input.value.split(/[^0-9]+/).filter(Boolean).map(Number);
    sessionStorage.setItem('uniap.compare', JSON.stringify(list));
    route();
  });
  const out = h('div', { id: 'compare' });
  view('Compare', form, out);
  if (!ids.length) { out.append(h('p', {}, 'Nothing to compare yet.')); return; }
  const rows = [];
  for (const id of ids) {
    try {
      const j = await api('GET', `/v1/jobs/${id}`);
      const r = j.result;
      if (j.state !== 'succeeded' || !r) { rows.push({ id, label: `job ${id}`, note: j.state }); continue; }
      if (j.kind === 'calibration' || j.kind === 'allocation') { rows.push({ id, label: `job ${id}`, note: `a ${j.kind}, not a plan` }); continue; }
      const req = j.request || {};
      const base = `${req.cluster} · ${req.model} · B ${req.batch} · ${r.space || 'unified'}`;
      const work = `${req.model} at batch ${req.batch}`;
      if (r.targets) {
        for (const t of r.targets) rows.push({ id, work, label: `${base} · ${t.target}`, plan: t.plan, tpi: t.plan ? t.tpi_s : null, optimal: t.status === 'optimal', note: t.status });
      } else {
        rows.push({ id, work, label: base, plan: r.plan, tpi: r.plan ? r.plan.tpi_s : null, optimal: r.optimal, note: r.plan ? '' : 'nothing fits' });
      }
    } catch (e) { rows.push({ id, label: `job ${id}`, note: e.message }); }
  }
  // a TPI ratio compares the same work only: say so, loudly, when models or batches differ
  const works = [...new Set(rows.filter((r) => r.work).map((r) => r.work))];
  if (works.length > 1) {
    out.append(h('p', { class: 'warning', id: 'compare-differ', role: 'alert' },
      `These plans do different work (${works.join('; ')}): their TPI ratio mixes models or batches. `,
      'Compare samples per second per device, or pick jobs of one model and batch.'));
  }
  const best = Math.min(...rows.filter((r) => Number.isFinite(r.tpi)).map((r) => r.tpi));
  const maxT = Math.max(...rows.filter((r) => Number.isFinite(r.tpi)).map((r) => r.tpi));
  out.append(scroller(h('table', { class: 'data', id: 'compare-table', 'aria-label': 'Plans compared' },
    h('caption', {}, 'TPI ratio: each plan’s TPI over the fastest’s'),
    h('thead', {}, h('tr', {}, ['Job', 'Plan', 'TPI', 'Ratio', 'Samples/s per device', 'pp × c', 'Schedule', 'Optimal', '#TPI against the slowest'].map(colHead))),
    h('tbody', {}, rows.map((r) => {
      const ratio = Number.isFinite(r.tpi) ? r.tpi / best : null;
      return h('tr', { 'data-job': r.id, 'data-ratio': ratio === null ? '' : ratio },
        h('th', { scope: 'row' }, h('a', { href: `#/jobs/${r.id}` }, `${r.id}`)), h('td', {}, r.label), h('td', {}, secs(r.tpi)),
        h('td', { class: 'ratio' }, ratio === null ? '–' : `${ratio.toFixed(3)} ×${works.length > 1 && r.work !== rows.find((x) => x.tpi === best).work ? ' (other work)' : ''}`),
        h('td', {}, r.plan ? num(r.plan.throughput_samples_per_s / devicesOf(r.plan)) : '–'),
        h('td', {}, r.plan ? `${r.plan.pp} × ${r.plan.microbatches}` : '–'), h('td', {}, r.plan ? r.plan.schedule : ''),
        h('td', {}, r.plan ? (r.optimal ? 'yes' : 'no') : r.note || ''),
        h('td', { class: 'spark' }, r.plan ? compareBar(r.tpi / maxT) : ''));
    })))));
  const side = h('div', { class: 'side-by-side' });
  for (const r of rows.filter((x) => x.plan))
    side.append(h('figure', { class: 'card' }, h('figcaption', {}, `Job ${r.id}: ${r.label} — ${secs(r.tpi)}`), stageLegend(r.plan),
      scroller(timeline(r.plan, maxT).svg, `Timeline of job ${r.id}: ${r.label}`)));
  out.append(h('h2', { class: 'spaced' }, 'Timelines, on one time scale'), side);
}

// The devices a plan runs on: the union of its stages' devices.
function devicesOf(plan) {
  const all = new Set();
  plan.stages.forEach((st) => (st.devices || []).forEach((d) => all.add(d)));
  return all.size || 1;
}

function compareBar(f) {
  const m = h('meter', { min: 0, max: 1, value: f, 'aria-label': 'TPI relative to the slowest' });
  return m;
}

// ---------------------------------------------------------------- lists

async function jobsView(params) {
  const state = params.get('state') || '';
  const cursor = params.get('cursor') || '';
  const prev = params.get('prev') || '';
  const sel = h('select', { id: 'state-filter' }, ['', 'queued', 'running', 'succeeded', 'failed', 'canceled'].map((x) => h('option', { value: x }, x || 'all')));
  sel.value = state;
  sel.addEventListener('change', () => { location.hash = `#/jobs${sel.value ? `?state=${sel.value}` : ''}`; });
  const limit = Math.min(100, Math.max(1, Number(params.get('limit')) || 20));
  const q = new URLSearchParams({ limit: String(limit) });
  if (state) q.set('state', state);
  if (cursor) q.set('cursor', cursor);
  const page = await api('GET', `/v1/jobs?${q}`);
  const picked = new Set(compareIds());
  const rows = page.items.map((j) => {
    const box = h('input', { type: 'checkbox', 'aria-label': `Compare job ${j.id}`, checked: picked.has(j.id) || undefined });
    box.addEventListener('change', () => setCompared(j.id, box.checked));
    const p = j.progress || {};
    return h('tr', { 'data-job': j.id, 'data-state': j.state },
      h('td', {}, box), h('th', { scope: 'row' }, h('a', { href: `#/jobs/${j.id}` }, `${j.id}`)),
      h('td', {}, j.kind || 'plan'), h('td', {}, h('span', { class: `state ${j.state}` }, j.state)),
      h('td', {}, `${p.candidates_done ?? 0} / ${p.candidates_total ?? 0}`), h('td', {}, secs(p.best_tpi_s)), h('td', {}, j.created_at));
  });
  const nav = h('nav', { class: 'row pager', 'aria-label': 'Pages' });
  const link = (c, pv) => {
    const u = new URLSearchParams();
    if (state) u.set('state', state);
    if (limit !== 20) u.set('limit', limit);
    if (c) u.set('cursor', c);
    if (pv) u.set('prev', pv);
    return `#/jobs${u.toString() ? `?${u}` : ''}`;
  };
  if (cursor) {
    const stack = prev ? prev.split(',') : [];
    const back = stack.pop() || '';
    nav.append(h('a', { href: link(back === '-' ? '' : back, stack.join(',')), class: 'button ghost', id: 'prev-page' }, 'Previous'));
  }
  if (page.next_cursor) nav.append(h('a', { href: link(page.next_cursor, [prev, cursor || '-'].filter(Boolean).join(',')), class: 'button ghost', id: 'next-page' }, 'Next'));
  view('Jobs', h('div', { class: 'row' }, h('label', { for: 'state-filter' }, 'State'), sel, h('a', { href: '#/compare', class: 'button ghost' }, 'Compare ticked')),
    scroller(h('table', { class: 'data', id: 'jobs-table', 'aria-label': 'Jobs' },
      h('thead', {}, h('tr', {}, ['#Compare', 'Job', 'Kind', 'State', 'Candidates', 'Best TPI', 'Created'].map(colHead))),
      h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: 7 }, 'No jobs.'))))), nav);
}

async function documentsView() {
  const [cat, clusters, models] = await Promise.all([getCatalog(), listAll('/v1/clusters'), listAll('/v1/models')]);
  const holders = { cluster: h('div', {}), model: h('div', {}) };
  const table = (kind, items) => scroller(h('table', { class: 'data', id: `${kind}s-table`, 'aria-label': `Stored ${kind}s` },
    h('thead', {}, h('tr', {}, ['Id', 'Name', 'Created', '#Actions'].map(colHead))),
    h('tbody', {}, items.length ? items.map((d) => h('tr', { 'data-id': d.id },
      h('th', { scope: 'row' }, `${d.id}`), h('td', {}, d.name || ''), h('td', {}, d.created_at || ''),
      h('td', {}, h('button', { type: 'button', class: 'ghost danger', 'aria-label': `Delete ${kind} ${d.id}`, onclick: async () => {
        if (!confirm(`Delete ${kind} #${d.id}? Jobs that used it keep their copy.`)) return;
        try { await api('DELETE', `/v1/${kind}s/${d.id}`); await refresh(); } catch (e) { toast(e.message); }
      } }, 'Delete')))) : h('tr', {}, h('td', { colspan: 4 }, `No stored ${kind}s.`)))));
  // the lists again, in place: the upload's status and the focus stay where they are
  const refresh = async (lists) => {
    const [cl, md] = lists || await Promise.all([listAll('/v1/clusters'), listAll('/v1/models')]);
    clear(holders.cluster).append(table('cluster', cl));
    clear(holders.model).append(table('model', md));
  };
  await refresh([clusters, models]);
  const status = h('div', { id: 'documents-status', 'aria-live': 'polite' });
  const base = h('select', { id: 'nccl-base', 'aria-label': 'Base cluster for nccl-tests output' }, cat.clusters.filter((c) => !c.name.endsWith('-xN')).map((c) => h('option', { value: c.name }, c.name)));
  view('Documents',
    section('Upload', dropZone(async (files) => {
      clear(status).append('Uploading…');
      try {
        const got = await uploadFiles(files, base.value, askShape);
        await refresh();
        clear(status).append(`Stored ${got.map((g) => `${g.kind} #${g.id}`).join(', ')}.`);
      } catch (e) { clear(status).append(errorBox(e)); }
    }), h('div', { class: 'row' }, h('label', { for: 'nccl-base' }, 'Base cluster for nccl-tests output'), base), status),
    section('Clusters', holders.cluster), section('Models', holders.model),
    section('Catalog', h('ul', { class: 'catalog' }, [...cat.clusters, ...cat.models].map((c) => h('li', {}, h('strong', {}, c.name), ` — ${c.description}`)))));
}

// ---------------------------------------------------------------- router

// Renders the view of the address; focus moves to <main> on navigations (not on the first load).
async function route(ev) {
  if (viewAbort) viewAbort.abort();
  viewAbort = new AbortController();
  let hash = location.hash.replace(/^#/, '') || '/new';
  if (!hash.startsWith('/')) hash = '/new'; // not a route (an old in-page anchor)
  const [path, query] = hash.split('?');
  const params = new URLSearchParams(query || '');
  document.querySelectorAll('[data-nav]').forEach((a) => {
    if (path.startsWith(`/${a.dataset.nav}`)) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  });
  try {
    if (!who && !(await signedIn())) { signInView(getKey() ? 'The key was not accepted.' : ''); return; }
    let m;
    if (path === '/new') await newPlanView();
    else if (path === '/allocate') newAllocationView();
    else if (path === '/jobs') await jobsView(params);
    else if ((m = path.match(/^\/jobs\/([0-9]+)$/))) await jobView(Number(m[1]));
    else if (path === '/compare') await compareView();
    else if (path === '/documents') await documentsView();
    else view('Not found', h('p', {}, 'No such page. '), h('a', { href: '#/new' }, 'New plan'));
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) { who = null; setKey(''); signInView('The key is no longer accepted.'); return; }
    view('Something went wrong', errorBox(e));
  }
  if (ev && ev.type === 'hashchange' && !main.contains(document.activeElement)) main.focus({ preventScroll: true });
}

document.getElementById('signout').addEventListener('click', () => {
  setKey('');
  who = null;
  document.getElementById('whoami').textContent = '';
  document.getElementById('signout').hidden = true;
  route();
});
// the skip link moves focus without touching the address (the hash is the router's)
document.querySelector('.skip').addEventListener('click', (ev) => {
  ev.preventDefault();
  main.focus();
});
window.addEventListener('hashchange', route);
initTheme();
route();
