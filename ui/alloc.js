// ui/alloc.js - an allocation's pictures (docs/allocation.md, schema/
// allocation.schema.json): each pool's nodes with their devices coloured by
// the job that runs there, and each job's throughput curve over its pool's
// allocation sizes as a small plot, its own size marked.
//
// Everything is drawn from the report's own numbers: sizes, pools (or the
// one cluster), each job's pool, devices, first_device, nodes and curve.
//
// Never: compute a cost the service did not send.

import { h, s, num, stageClass } from './dom.js';

// The most device cells a pool's grid draws; past it one cell per node.
const POOL_CELLS = 4096;

// A report's pools: [{name, first, count, perNode, nodes, drained}] (one pool: its cluster).
export function reportPools(rep) {
  if (rep.pools) {
    return rep.pools.map((p) => ({
      name: p.name, first: p.first_size, count: p.sizes_count, perNode: p.cluster.devices_per_node,
      nodes: p.cluster.nodes, drained: p.drained_nodes || [], devices: p.devices, used: p.devices_used,
    }));
  }
  const c = rep.cluster || {};
  return [{
    name: c.name || 'cluster', first: 0, count: rep.sizes.length, perNode: c.devices_per_node, nodes: c.nodes,
    drained: rep.drained_nodes || [], devices: rep.devices, used: rep.devices_used,
  }];
}

// The pool a job of the report runs in (its index), or -1 when it gets nothing.
export function jobPool(rep, pools, job) {
  if (!job.devices) return -1;
  if (!rep.pools) return 0;
  return pools.findIndex((p) => p.name === job.pool);
}

// Pool pi's devices, each owned by a job index (-1: free), from the jobs' nodes and first devices.
function owners(rep, pools, pi) {
  const p = pools[pi], own = new Int32Array(p.nodes * p.perNode).fill(-1);
  rep.jobs.forEach((j, k) => {
    if (jobPool(rep, pools, j) !== pi) return;
    if (j.devices >= p.perNode) {
      for (const n of j.nodes || []) for (let d = 0; d < p.perNode; d++) own[n * p.perNode + d] = k;
    } else {
      for (let d = j.first_device; d < j.first_device + j.devices; d++) own[d] = k;
    }
  });
  return own;
}

// Pool pi's nodes: one row per node, one cell per device coloured by its job (a node per cell
// past POOL_CELLS devices: the job with most of its devices), drained nodes crossed out.
export function poolGrid(rep, pools, pi) {
  const p = pools[pi], own = owners(rep, pools, pi), drained = new Set(p.drained);
  const perCell = p.nodes * p.perNode > POOL_CELLS ? p.perNode : 1;
  const cols = perCell === 1 ? p.perNode : Math.min(64, p.nodes), cells = (p.nodes * p.perNode) / perCell;
  const rows = Math.ceil(cells / cols), cell = cells > 1024 ? 8 : cells > 128 ? 14 : 22, gap = 3;
  const svg = s('svg', {
    class: 'devices pool', viewBox: `0 0 ${cols * (cell + gap)} ${rows * (cell + gap)}`, width: cols * (cell + gap),
    height: rows * (cell + gap), role: 'img', 'data-pool': p.name,
    'aria-label': `${p.name}: ${p.nodes} node${p.nodes === 1 ? '' : 's'} of ${p.perNode} devices, ${p.used} of ${p.devices} in service given to jobs${perCell > 1 ? '; each cell is one node' : ''}`,
  });
  for (let c = 0; c < cells; c++) {
    const node = perCell === 1 ? Math.floor(c / p.perNode) : c;
    let k = own[c * perCell];
    if (perCell > 1) {
      const count = new Map();
      for (let d = 0; d < p.perNode; d++) { const o = own[c * perCell + d]; if (o >= 0) count.set(o, (count.get(o) || 0) + 1); }
      k = -1;
      count.forEach((n, o) => { if (k < 0 || n > count.get(k)) k = o; });
    }
    const x = (c % cols) * (cell + gap), y = Math.floor(c / cols) * (cell + gap);
    const what = drained.has(node) ? 'drained' : k >= 0 ? rep.jobs[k].name : 'free';
    const r = s('rect', {
      x, y, width: cell, height: cell, rx: cell > 8 ? 3 : 0, 'data-job': k >= 0 ? rep.jobs[k].name : '',
      class: drained.has(node) ? 'device drained' : k >= 0 ? `device ${stageClass(k)}` : 'device unused',
    });
    r.append(s('title', { text: perCell === 1 ? `node ${node}, device ${c}: ${what}` : `node ${node}: ${what}` }));
    svg.append(r);
  }
  return svg;
}

// Job k's throughput over pool pi's sizes: a small line plot (gaps where no plan fits), its
// own size marked when it runs in this pool.
export function curvePlot(rep, pools, k, pi) {
  const p = pools[pi], j = rep.jobs[k], W = 150, H = 44, pad = 4;
  const pts = [];
  for (let i = 0; i < p.count; i++) pts.push({ size: rep.sizes[p.first + i], thr: j.curve[p.first + i] });
  const top = Math.max(0, ...pts.map((q) => q.thr || 0));
  const x = (i) => pad + (p.count > 1 ? (i / (p.count - 1)) * (W - 2 * pad) : (W - 2 * pad) / 2);
  const y = (t) => H - pad - (top > 0 ? (t / top) * (H - 2 * pad) : 0);
  const svg = s('svg', {
    class: 'curve', viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'img', 'data-pool': p.name,
    'aria-label': `${j.name} on ${p.name}: ${pts.map((q) => `${q.size} devices ${q.thr ? `${num(q.thr)} samples/s` : 'no plan'}`).join(', ')}`,
  });
  svg.append(s('line', { x1: pad, y1: H - pad, x2: W - pad, y2: H - pad, class: 'axis' }));
  let run = [];
  const flush = () => { if (run.length > 1) svg.append(s('polyline', { points: run.join(' '), class: `curve-line ${stageClass(k)}` })); run = []; };
  pts.forEach((q, i) => { if (q.thr) run.push(`${x(i).toFixed(1)},${y(q.thr).toFixed(1)}`); else flush(); });
  flush();
  pts.forEach((q, i) => {
    if (!q.thr) return;
    const mine = jobPool(rep, pools, j) === pi && q.size === j.devices;
    const dot = s('circle', { cx: x(i), cy: y(q.thr), r: mine ? 4 : 1.8, class: mine ? `chosen ${stageClass(k)}` : `point ${stageClass(k)}` });
    dot.append(s('title', { text: `${q.size} devices: ${num(q.thr)} samples/s${mine ? ' (its allocation)' : ''}` }));
    svg.append(dot);
  });
  return svg;
}

// The jobs' legend: a swatch per job, with its pool and devices.
export function jobLegend(rep) {
  return h('ul', { class: 'legend', 'aria-label': 'Jobs' }, rep.jobs.map((j, k) =>
    h('li', { 'data-job': j.name },
      h('span', { class: `swatch ${stageClass(k)}`, 'aria-hidden': 'true' }),
      `${j.name}: ${j.devices ? `${j.devices} device${j.devices === 1 ? '' : 's'}${j.pool ? ` of ${j.pool}` : ''}` : 'nothing'}`)));
}
