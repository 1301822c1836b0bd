// ui/draw.js - the plan's pictures: devices by stage, the layer strip, one
// iteration's timeline, memory against the limit, the candidates' heat map.
//
// Everything is drawn from the plan document's own numbers (schema/plan.
// schema.json): stages[i].time_s (p_i, one micro-batch's forward and
// backward), stages[i].transfer_s (o_i, the boundary after stage i),
// memory_bytes, memory_limit_bytes, and the candidates of the result.  The
// only assumption is the forward share of p_i and o_i, FORWARD_SHARE
// (backward ≈ 2 × forward, docs/cost-model.md), which under GPipe moves
// blocks inside an iteration but not its length: the drawn iteration is the
// plan's TPI exactly (transfers that block both stages: the audit formula).
// Under 1F1B the share moves the length too, which stays at most the TPI.
//
// Never: compute a cost the service did not send.

import { h, s, secs, gib, pct, stageClass } from './dom.js';

export const FORWARD_SHARE = 1 / 3;

// Pipeline rank of stage i (interleaved: stage i runs on rank i mod pp).
function rank(plan, i) { return i % plan.pp; }

// ---------------------------------------------------------------- devices

// The device grid: one cell per device, coloured by the stage (pipeline
// rank) it serves; rows are nodes when the cluster's devices_per_node is known.
// A device's context- and expert-parallel groups under a stage's strategy st (rank r in the stage):
// cp and ep are the inner ranks of the dp group (strides from the placement, inner first); under
// etp 1 the ep groups are runs of consecutive ranks of the tp x dp block (core/strategy.h).
function parallelGroups(st, r) {
  if (!st || !(st.cp > 1 || st.ep > 1)) return '';
  let stride = 1, dpStride = 1;
  for (const dim of st.placement || []) {
    if (dim === 'dp') dpStride = stride;
    stride *= st[dim] || 1;
  }
  const dpCoord = Math.floor(r / dpStride) % (st.dp || 1);
  const bits = [];
  if (st.cp > 1) bits.push(`CP rank ${dpCoord % st.cp} of ${st.cp}`);
  if (st.ep > 1) bits.push(`EP rank ${(st.etp === 1 && st.tp > 1 ? r : dpCoord) % st.ep} of ${st.ep}`);
  return bits.length ? `, ${bits.join(', ')}` : '';
}

// The most cells the device grid draws (one per device up to here).
const GRID_CELLS = 65536;

export function deviceGrid(plan, perNode) {
  const owner = new Map();
  plan.stages.forEach((st, i) => { if (i < plan.pp) st.devices.forEach((d) => owner.set(d, i)); });
  // the first layer of each stage whose strategy has context or expert parallelism
  const parallel = new Map();
  (plan.layers || []).forEach((l) => {
    const st = l.strategy;
    if (st && (st.cp > 1 || st.ep > 1) && !parallel.has(rank(plan, l.stage))) parallel.set(rank(plan, l.stage), st);
  });
  // the device count by a loop (a spread of a million keys would overflow the call stack)
  let n = 0;
  owner.forEach((_, d) => { if (d + 1 > n) n = d + 1; });
  // past GRID_CELLS devices each cell stands for `per` consecutive devices (the stage of its
  // first): a cluster of up to 1,048,576 devices is drawn with at most GRID_CELLS cells
  const per = Math.max(1, Math.ceil(n / GRID_CELLS));
  const cells = Math.ceil(n / per);
  let cols = per === 1 && perNode && perNode > 0 && perNode <= 64 ? perNode : Math.ceil(Math.sqrt(cells * 2));
  if (cells > 512 && cols < 32) cols = Math.ceil(Math.sqrt(cells * 2));
  const rows = Math.ceil(cells / cols);
  const cell = cells > 4096 ? 4 : cells > 512 ? 8 : cells > 64 ? 16 : 28;
  const gap = cell >= 16 ? 3 : 1;
  const w = cols * (cell + gap), ht = rows * (cell + gap);
  const svg = s('svg', {
    class: 'devices', viewBox: `0 0 ${w} ${ht}`, width: w, height: ht, role: 'img',
    'aria-label': `${n} devices in ${plan.pp} pipeline stages${perNode ? `, ${perNode} per node` : ''}${per > 1 ? `; each cell is ${per} consecutive devices` : ''}`,
  });
  // each device's index in its stage, once (indexOf per device would be quadratic)
  const local = new Map();
  if (cells <= 4096) plan.stages.forEach((st, i) => { if (i < plan.pp) st.devices.forEach((d, j) => local.set(d, j)); });
  for (let c = 0; c < cells; c++) {
    const d = c * per;
    const st = owner.has(d) ? owner.get(d) : -1;
    const r = s('rect', {
      x: (c % cols) * (cell + gap), y: Math.floor(c / cols) * (cell + gap), width: cell, height: cell, rx: cell > 8 ? 3 : 0,
      class: st >= 0 ? `device ${stageClass(st)}` : 'device unused', 'data-device': d, 'data-stage': st,
    });
    if (cells <= 4096) r.append(s('title', { text: st >= 0 ? `device ${d}: stage ${st}${parallelGroups(parallel.get(st), local.get(d))}` : `device ${d}: unused` }));
    svg.append(r);
  }
  return svg;
}

export function stageLegend(plan) {
  const byRank = [];
  plan.stages.forEach((st, i) => {
    const r = rank(plan, i);
    byRank[r] = byRank[r] || { devices: st.devices.length, layers: 0, time: 0 };
    byRank[r].layers += st.layers.length;
    byRank[r].time += st.time_s;
  });
  return h('ul', { class: 'legend', 'aria-label': 'Stages' }, byRank.map((x, r) =>
    h('li', { 'data-stage': r },
      h('span', { class: `swatch ${stageClass(r)}`, 'aria-hidden': 'true' }),
      `stage ${r}: ${x.devices} device${x.devices === 1 ? '' : 's'}, ${x.layers} layer${x.layers === 1 ? '' : 's'}, ${secs(x.time)}`)));
}

// ---------------------------------------------------------------- layers

function strategyShort(st) {
  const parts = [];
  if (st.tp > 1) parts.push(`tp${st.tp}`);
  if (st.dp > 1) parts.push(`dp${st.dp}`);
  if (st.fsdp > 1) parts.push(`fs${st.fsdp}`);
  if (st.cp > 1) parts.push(`cp${st.cp}`);
  if (st.ep > 1) parts.push(`ep${st.ep}`);
  return parts.length ? parts.join('·') : '1';
}

export function strategyText(st) {
  const bits = [`TP ${st.tp}`, `DP ${st.dp}`, `FSDP ${st.fsdp}`, st.recompute ? 'recompute' : 'no recompute'];
  if (st.zero) bits.push(`ZeRO-${st.zero}`);
  if (st.sp) bits.push('sequence parallel');
  if (st.selective) bits.push('selective recompute');
  // context parallelism: the inner cp of the dp group splits each sequence (ring attention)
  if (st.cp > 1) bits.push(`context parallel ${st.cp} (inside DP)`);
  // expert parallelism: a MoE layer's experts over the inner ep of the dp group (or of tp x dp)
  if (st.ep > 1) bits.push(`expert parallel ${st.ep}${st.etp === 1 && st.tp > 1 ? ', experts whole (ETP 1)' : ''}`);
  if (st.placement && st.placement.length) bits.push(`placement ${st.placement.join(' > ')}`);
  return bits.join(', ');
}

// One focusable cell per layer; hovering or focusing one fills the details line.
export function layerStrip(plan) {
  const details = h('p', { class: 'layer-details', 'aria-live': 'polite', id: 'layer-details' },
    'Hover over or focus a layer for its strategy.');
  const strip = h('ol', { class: 'layers', 'aria-label': `${plan.layers.length} layers` });
  plan.layers.forEach((l, u) => {
    const st = l.strategy;
    const text = `Layer ${u} ${l.name}: stage ${l.stage}, ${st.name} (${strategyText(st)})`;
    const show = () => { details.textContent = text; };
    const li = h('li', {
      class: `layer ${stageClass(rank(plan, l.stage))}${st.recompute ? ' recompute' : ''}`,
      tabindex: 0, 'data-layer': u, 'data-stage': l.stage, 'data-strategy': st.name,
      'aria-label': text, onmouseenter: show, onfocus: show,
    }, h('span', { class: 'lname' }, l.name), h('span', { class: 'lstrat' }, strategyShort(st)),
    st.recompute ? h('span', { class: 'lrc', 'aria-hidden': 'true' }, 'R') : null);
    strip.append(li);
  });
  return h('div', { class: 'layer-strip' }, strip, details);
}

// ---------------------------------------------------------------- timeline

// Each device's order of forward (F) and backward (B) units, as [kind, stage, micro-batch].
function orders(plan) {
  const P = plan.pp, S = plan.stages.length, v = S / P, c = plan.microbatches;
  const out = [];
  for (let d = 0; d < P; d++) {
    const ops = [];
    if (plan.schedule === 'interleaved' && v > 1) {
      // Megatron-LM's forward_backward_pipelining_with_interleaving
      const unit = (k, back) => {
        const g = k % (P * v), chunk = Math.floor(g / P);
        return [back ? 'B' : 'F', (back ? v - 1 - chunk : chunk) * P + d, Math.floor(k / (P * v)) * P + (k % P)];
      };
      const total = c * v, warm = Math.min((P - d - 1) * 2 + (v - 1) * P, total);
      for (let k = 0; k < warm; k++) ops.push(unit(k, false));
      for (let k = 0; k < total - warm; k++) { ops.push(unit(warm + k, false)); ops.push(unit(k, true)); }
      for (let k = total - warm; k < total; k++) ops.push(unit(k, true));
    } else if (plan.schedule === '1f1b') {
      const warm = Math.min(P - d - 1, c);
      for (let m = 0; m < warm; m++) ops.push(['F', d, m]);
      for (let m = 0; m < c - warm; m++) { ops.push(['F', d, warm + m]); ops.push(['B', d, m]); }
      for (let m = c - warm; m < c; m++) ops.push(['B', d, m]);
    } else {
      for (let m = 0; m < c; m++) ops.push(['F', d, m]);
      for (let m = 0; m < c; m++) ops.push(['B', d, m]);
    }
    out.push(ops);
  }
  return out;
}

// Rank i's program (core/schedsim.c): compute steps ['P', back, m] and
// communication calls ['C', [[back, j, m, recv], ...]] (a transfer of boundary
// j, forward: stage j to j + 1, backward the other way; recv: this rank's
// side). GPipe: per micro-batch receive, compute and send, every forward then
// every backward. 1F1B: Megatron-LM's forward_backward_pipelining_without_
// interleaving: w = min(S - i - 1, c) warm-up forwards, the next receive, c - w
// forward, send_forward_recv_backward, backward, send_backward_recv_forward
// (send_backward after the last), then the w cool-down backwards.
function program(schedule, S, c, i) {
  const st = [], prev = i > 0, next = i < S - 1;
  const RF = (m) => [0, i - 1, m, 1], SF = (m) => [0, i, m, 0], RB = (m) => [1, i, m, 1], SB = (m) => [1, i - 1, m, 0];
  const call = (...xs) => { const t = xs.filter((x) => x); if (t.length) st.push(['C', t]); };
  const fwd = (m) => { call(prev && RF(m)); st.push(['P', 0, m]); call(next && SF(m)); };
  const bwd = (m) => { call(next && RB(m)); st.push(['P', 1, m]); call(prev && SB(m)); };
  if (schedule !== '1f1b') {
    for (let m = 0; m < c; m++) fwd(m);
    for (let m = 0; m < c; m++) bwd(m);
    return st;
  }
  const w = Math.min(S - i - 1, c);
  for (let m = 0; m < w; m++) fwd(m);
  if (c - w > 0) call(prev && RF(w));
  for (let k = 0; k < c - w; k++) {
    st.push(['P', 0, w + k]);
    call(next && SF(w + k), next && RB(k));
    st.push(['P', 1, k]);
    call(prev && SB(k), prev && k < c - w - 1 && RF(w + k + 1));
  }
  for (let k = c - w; k < c; k++) bwd(k);
  return st;
}

// GPipe and 1F1B as their runtimes run them (core/schedsim.c): a call posts its
// transfers together and waits for all of them; a transfer starts once both of
// its ranks have posted it, the transfers of one call side by side. Under GPipe
// the length is the TPI exactly; under 1F1B at most the TPI.
function simulateBlocking(plan, p, o, known) {
  const S = plan.stages.length, c = plan.microbatches, a = FORWARD_SHARE;
  const progs = [], at = new Array(S).fill(0), clock = new Array(S).fill(0), busy = new Array(S).fill(0);
  const posted = new Map(), blocks = [];
  for (let i = 0; i < S; i++) progs.push(program(plan.schedule, S, c, i));
  let left = progs.reduce((n, x) => n + x.length, 0), moved = true;
  while (left > 0 && moved) {
    moved = false;
    for (let i = 0; i < S; i++) {
      while (at[i] < progs[i].length) {
        const step = progs[i][at[i]];
        if (step[0] === 'P') {
          const dur = (step[1] ? 1 - a : a) * p[i];
          blocks.push({ kind: step[1] ? 'backward' : 'forward', stage: i, device: i, micro: step[2], start: clock[i], dur });
          busy[i] += dur;
          clock[i] += dur;
        } else {
          let ready = true;
          for (const [back, j, m, recv] of step[1]) {
            const k = `${back}:${j}:${m}`;
            if (!posted.has(k)) posted.set(k, [undefined, undefined]);
            const sides = posted.get(k);
            sides[recv] = clock[i];
            if (sides[1 - recv] === undefined) ready = false;
          }
          if (!ready) break;
          let end = clock[i];
          for (const [back, j, m, recv] of step[1]) {
            const sides = posted.get(`${back}:${j}:${m}`), t0 = Math.max(sides[0], sides[1]);
            const dur = (back ? 1 - a : a) * o[j];
            end = Math.max(end, t0 + dur);
            if (recv && dur > 0) blocks.push({ kind: 'transfer', dir: back ? 'B' : 'F', stage: j, link: j, micro: m, start: t0, dur });
          }
          clock[i] = end;
        }
        at[i]++;
        left--;
        moved = true;
      }
    }
  }
  return { blocks, length: Math.max(0, ...clock), busy, known, complete: left === 0, c, P: S, S };
}

// Lays one iteration out: GPipe and 1F1B with blocking transfers (above);
// interleaving, whose runtime overlaps its transfers, as a list schedule, units
// starting as soon as their device is free and their input has arrived, a
// boundary's link carrying one transfer at a time per direction (boundary j
// on link j mod pp), overlapping compute.
// Returns the blocks and length.
export function simulate(plan) {
  const P = plan.pp, S = plan.stages.length, c = plan.microbatches;
  const p = plan.stages.map((st) => st.time_s);
  const known = plan.stages.slice(0, -1).every((st) => Number.isFinite(st.transfer_s));
  const o = plan.stages.slice(0, -1).map((st) => (Number.isFinite(st.transfer_s) ? st.transfer_s : 0));
  const a = FORWARD_SHARE;
  if (plan.schedule !== 'interleaved' && S === P) return simulateBlocking(plan, p, o, known);
  const ord = orders(plan), at = new Array(P).fill(0), free = new Array(P).fill(0);
  const lfree = { F: new Map(), B: new Map() };
  const fEnd = new Map(), arrive = new Map(), blocks = [];
  const key = (k, st, m) => `${k}${st}:${m}`;
  const send = (dir, j, m, ready) => { // boundary j (between stages j and j + 1)
    const dur = (dir === 'F' ? a : 1 - a) * o[j];
    const link = j % P, start = Math.max(lfree[dir].get(link) || 0, ready);
    lfree[dir].set(link, start + dur);
    arrive.set(key(dir, dir === 'F' ? j + 1 : j, m), start + dur);
    if (dur > 0) blocks.push({ kind: 'transfer', dir, stage: j, link, micro: m, start, dur });
  };
  let left = ord.reduce((n, x) => n + x.length, 0), stuck = false;
  while (left > 0 && !stuck) {
    stuck = true;
    for (let d = 0; d < P; d++) {
      while (at[d] < ord[d].length) {
        const [k, st, m] = ord[d][at[d]];
        let ready;
        if (k === 'F') {
          if (st > 0 && !arrive.has(key('F', st, m))) break;
          ready = st > 0 ? arrive.get(key('F', st, m)) : 0;
        } else {
          if (!fEnd.has(key('F', st, m)) || (st < S - 1 && !arrive.has(key('B', st, m)))) break;
          ready = Math.max(fEnd.get(key('F', st, m)), st < S - 1 ? arrive.get(key('B', st, m)) : 0);
        }
        const dur = (k === 'F' ? a : 1 - a) * p[st];
        const start = Math.max(free[d], ready);
        free[d] = start + dur;
        blocks.push({ kind: k === 'F' ? 'forward' : 'backward', stage: st, device: d, micro: m, start, dur });
        if (k === 'F') {
          fEnd.set(key('F', st, m), start + dur);
          if (st < S - 1) send('F', st, m, start + dur);
        } else if (st > 0) {
          send('B', st - 1, m, start + dur);
        }
        at[d]++;
        left--;
        stuck = false;
      }
    }
  }
  let length = 0;
  for (const b of blocks) length = Math.max(length, b.start + b.dur);
  const busy = new Array(P).fill(0);
  for (const b of blocks) if (b.kind !== 'transfer') busy[b.device] += b.dur;
  return { blocks, length, busy, known, complete: left === 0, c, P, S };
}

function ticks(T, n) {
  const raw = T / n, mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((f) => f * mag).find((x) => x >= raw) || raw;
  const out = [];
  for (let t = 0; t <= T * 1.0001; t += step) out.push(t);
  return out;
}

// span: the time the width stands for (default: this iteration), so that
// plans side by side share one scale.
export function timeline(plan, span) {
  const sim = simulate(plan);
  const { P } = sim;
  const T = Math.max(sim.length, span || 0);
  const W = 1000, left = 70, lane = 22, link = 9, gap = 4, top = 8;
  const laneY = (d) => top + d * (lane + link + gap * 2);
  const height = laneY(P) + 24;
  const x = (t) => left + (T > 0 ? (t / T) * (W - left - 10) : 0);
  const svg = s('svg', {
    class: 'timeline', viewBox: `0 0 ${W} ${height}`, preserveAspectRatio: 'none', role: 'img',
    'aria-label': `One iteration of ${sim.c} micro-batches over ${P} pipeline ranks: ${secs(sim.length)} drawn, the plan's TPI ${secs(plan.tpi_s)}`,
    'data-length': sim.length, 'data-tpi': plan.tpi_s,
  });
  const hatch = `hatch-${++timeline.n}`;
  svg.append(s('defs', {}, s('pattern', { id: hatch, width: 6, height: 6, patternUnits: 'userSpaceOnUse', patternTransform: 'rotate(45)' },
    s('line', { x1: 0, y1: 0, x2: 0, y2: 6, class: 'hatch-line' }))));
  for (let d = 0; d < P; d++) {
    svg.append(s('text', { x: 4, y: laneY(d) + lane * 0.7, class: 'lane-label' }, `rank ${d}`));
    svg.append(s('rect', { x: left, y: laneY(d), width: W - left - 10, height: lane, class: 'bubble', fill: `url(#${hatch})` },
      s('title', { text: `rank ${d}: idle (bubble) ${pct(1 - sim.busy[d] / sim.length)} of the iteration` })));
    if (d < P - 1 || (plan.schedule === 'interleaved' && plan.stages.length > P))
      svg.append(s('rect', { x: left, y: laneY(d) + lane + gap, width: W - left - 10, height: link, class: 'link-lane' }));
  }
  for (const b of sim.blocks) {
    const isT = b.kind === 'transfer';
    const y = isT ? laneY(b.link) + lane + gap : laneY(b.device);
    const r = s('rect', {
      x: x(b.start), y, width: Math.max(0.5, x(b.start + b.dur) - x(b.start)), height: isT ? link : lane,
      class: isT ? `block transfer ${b.dir === 'F' ? 'fwd' : 'bwd'}` : `block ${b.kind} ${stageClass(b.kind === 'transfer' ? 0 : b.stage % P)}`,
      'data-kind': b.kind, 'data-stage': b.stage, 'data-micro': b.micro, 'data-start': b.start, 'data-dur': b.dur,
    });
    if (sim.blocks.length <= 6000)
      r.append(s('title', {
        text: isT ? `${b.dir === 'F' ? 'activations' : 'gradients'} of micro-batch ${b.micro}, stage ${b.stage} → ${b.dir === 'F' ? b.stage + 1 : b.stage}: ${secs(b.dur)}`
          : `${b.kind} of micro-batch ${b.micro} on stage ${b.stage}: ${secs(b.start)} + ${secs(b.dur)}`,
      }));
    svg.append(r);
  }
  for (const t of ticks(T, 8)) {
    svg.append(s('line', { x1: x(t), x2: x(t), y1: laneY(P) - gap, y2: laneY(P) + 2, class: 'tick' }));
    svg.append(s('text', { x: x(t), y: laneY(P) + 16, class: 'tick-label' }, secs(t)));
  }
  return { svg, sim };
}
timeline.n = 0;

// The timeline's numbers as a table (what a screen reader reads instead).
export function stageTable(plan, sim) {
  const a = FORWARD_SHARE;
  const body = plan.stages.map((st, i) => h('tr', { 'data-stage': i },
    h('th', { scope: 'row' }, `${i}`),
    h('td', {}, `${st.layers.length}`),
    h('td', {}, secs(st.time_s)),
    h('td', {}, secs(a * st.time_s)),
    h('td', {}, secs((1 - a) * st.time_s)),
    h('td', {}, i < plan.stages.length - 1 ? secs(st.transfer_s) : '–'),
    h('td', {}, i < plan.pp ? pct(1 - sim.busy[i] / sim.length) : '')));
  return h('table', { class: 'data stage-table' },
    h('caption', {}, 'Per stage, one micro-batch'),
    h('thead', {}, h('tr', {}, ['Stage', 'Layers', 'Time', 'Forward', 'Backward', 'Transfer after', 'Bubble'].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, body));
}

// ---------------------------------------------------------------- memory

// Per pipeline rank: its memory, the plan's limit and, with the cluster's
// device memory, the safety margin (the fraction no plan may use).  An
// interleaved plan's stages carry their rank's memory at its peak
// (rank_memory_bytes): its chunks peak at different moments, so the sum of
// their memory_bytes would overstate it.
export function memoryBars(plan, device, margin) {
  const used = [];
  plan.stages.forEach((st, i) => {
    const r = rank(plan, i);
    used[r] = st.rank_memory_bytes !== undefined ? st.rank_memory_bytes : (used[r] || 0) + st.memory_bytes;
  });
  const limit = plan.memory_limit_bytes;
  const cap = device && device.memory_bytes ? device.memory_bytes : Math.max(...used, limit || 0) * 1.1;
  const W = 1000, left = 70, right = 170, bar = 18, gap = 8;
  const x = (b) => left + (b / cap) * (W - left - right);
  const ht = used.length * (bar + gap) + 24;
  const svg = s('svg', { class: 'memory', viewBox: `0 0 ${W} ${ht}`, role: 'img',
    'aria-label': `Memory per device of each stage against the limit ${gib(limit)}` });
  if (margin > 0 && device && device.memory_bytes) {
    const m0 = x(cap * (1 - margin));
    svg.append(s('rect', { x: m0, y: 0, width: x(cap) - m0, height: used.length * (bar + gap), class: 'margin-zone' },
      s('title', { text: `safety margin: ${pct(margin)} of ${gib(cap)}` })));
  }
  used.forEach((u, r) => {
    const y = r * (bar + gap);
    const over = limit && u > limit;
    svg.append(s('text', { x: 4, y: y + bar * 0.75, class: 'lane-label' }, `rank ${r}`));
    svg.append(s('rect', { x: left, y, width: x(cap) - left, height: bar, class: 'mem-track' }));
    svg.append(s('rect', { x: left, y, width: Math.max(1, x(u) - left), height: bar, class: `mem-used ${stageClass(r)}${over ? ' over' : ''}`, 'data-stage': r, 'data-bytes': u },
      s('title', { text: `rank ${r}: ${gib(u)} of the limit ${gib(limit)} (${pct(u / limit)})` })));
    svg.append(s('text', { x: W - right + 8, y: y + bar * 0.75, class: 'mem-label' }, `${gib(u)} · ${pct(u / limit)}`));
  });
  if (limit) {
    svg.append(s('line', { x1: x(limit), x2: x(limit), y1: -2, y2: used.length * (bar + gap), class: 'limit-line' },
      s('title', { text: `limit ${gib(limit)}` })));
    svg.append(s('text', { x: x(limit), y: ht - 6, class: 'tick-label' }, `limit ${gib(limit)}`));
  }
  return svg;
}

// ---------------------------------------------------------------- candidates

// The candidates as a pp × micro-batch table; each cell says its status and
// its TPI over the best; the plan shown (may be null) is outlined.
export function heatmap(candidates, plan) {
  const best = Math.min(...candidates.filter((c) => Number.isFinite(c.tpi_s)).map((c) => c.tpi_s));
  const pps = [...new Set(candidates.map((c) => c.pp))].sort((a, b) => a - b);
  const cs = [...new Set(candidates.map((c) => c.microbatches))].sort((a, b) => a - b);
  const cell = new Map();
  for (const c of candidates) {
    const k = `${c.pp}:${c.microbatches}`;
    const prev = cell.get(k);
    if (!prev || (Number.isFinite(c.tpi_s) && !(prev.tpi_s <= c.tpi_s))) cell.set(k, c);
  }
  const bucket = (r) => (r <= 1.0000001 ? 0 : r < 1.1 ? 1 : r < 1.25 ? 2 : r < 1.5 ? 3 : r < 2 ? 4 : 5);
  const table = h('table', { class: 'heatmap', 'aria-label': 'Candidates: pipeline degree by micro-batches' },
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'pp \\ c'), cs.map((c) => h('th', { scope: 'col' }, `${c}`)))),
    h('tbody', {}, pps.map((pp) => h('tr', {}, h('th', { scope: 'row' }, `${pp}`), cs.map((c) => {
      const x = cell.get(`${pp}:${c}`);
      if (!x) return h('td', { class: 'none' }, '');
      const chosen = plan && plan.pp === pp && plan.microbatches === c;
      const has = Number.isFinite(x.tpi_s);
      const ratio = has ? x.tpi_s / best : null;
      const cls = has ? `tpi b${bucket(ratio)}` : x.status;
      const what = `pp ${pp}, ${c} micro-batches${x.virtual_stages ? `, ${x.virtual_stages} chunks` : ''}: ${x.status}` +
        `${has ? `, ${secs(x.tpi_s)} (${ratio.toFixed(3)} × best)` : ''}${Number.isFinite(x.bound) ? `, bound ${secs(x.bound)}` : ''}` +
        `${x.method ? `, ${x.method}` : ''}${x.note ? ` — ${x.note}` : ''}`;
      return h('td', { class: `cand ${cls}${chosen ? ' chosen' : ''}`, 'data-pp': pp, 'data-c': c, 'data-status': x.status, title: what },
        h('span', { 'aria-hidden': 'true' }, has ? ratio.toFixed(2) : x.status === 'infeasible' ? '×' : x.status === 'pruned' ? '–' : '?'),
        h('span', { class: 'sr' }, what));
    })))));
  const legend = h('p', { class: 'heat-legend' },
    h('span', { class: 'cand tpi b0' }, '1.00'), ' best · ', h('span', { class: 'cand tpi b2' }, '1.2'), ' TPI over the best · ',
    h('span', { class: 'cand infeasible' }, '×'), ' nothing fits · ', h('span', { class: 'cand pruned' }, '–'),
    ' pruned by its bound · outlined: the plan shown');
  return h('div', { class: 'heat-wrap' }, table, legend);
}
