'use strict';
// tests/ui/e2e.js - the web UI end to end in a real headless Chromium (Debian's
// chromium package, driven over the DevTools protocol by puppeteer-core),
// against a running, keyed uniapd.  tests/cli/ui-e2e.sh starts uniapd and runs
// this; it never starts a server, never downloads a browser, and never puts the
// API key anywhere but the UI's own sign-in (it is not in any URL it opens).
//
// Environment (CommonJS, Node 18 or newer):
//   UI_BASE      uniapd's base URL, e.g. http://127.0.0.1:8080 (required)
//   UI_KEY       a tenant's API key; empty under --no-auth (then only the no-auth steps run)
//   UI_OUT       where the screenshots and axe reports go (default build/test-artifacts/ui
//                of this repository)
//   CHROMIUM     the browser (default /usr/bin/chromium)
//   UI_MODULES   the node_modules folder `make ui-test-deps` filled
//                (default build/ui-test/node_modules of this repository)
//   UI_SLOW      a factor on every timeout (tests/cli/ui-e2e.sh: 4 under sanitizers)
// Prints "ok NAME" or "FAIL NAME: why" per step, then "ui-e2e: N passed, N failed";
// exits 1 when a step failed, 2 when it could not start at all.
//
// The helpers, for the steps at the end of this file:
//   step(name, async (page) => {...}, { allow: [RegExp...] })  runs one step on
//       the page; a throw, or a console error, page error, CSP violation or a
//       request whose URL holds the key while it ran, fails it, but for console
//       errors that match an `allow` pattern (an answer the step expects, such as
//       the 401 of GET /v1/whoami before signing in); a screenshot
//       UI_OUT/NN-name.png follows either way
//   axe(page, label)  runs axe-core on the page as it is; throws (so fails the
//       step) on any violation of impact serious or critical, and writes the full
//       result to UI_OUT/axe-label.json
//   must(cond, message)  throws message unless cond
// axe-core goes in with page.evaluate(its source): DevTools evaluations are not
// subject to the page's CSP (script-src 'self'), whereas page.addScriptTag
// inserts an inline <script> that the CSP blocks (and reports as a violation).
// The page is never given setBypassCSP: a violation must be seen.

const fs = require('fs');
const os = require('os');
const path = require('path');
const { createRequire } = require('module');

const root = path.resolve(__dirname, '..', '..');
const BASE = (process.env.UI_BASE || '').replace(/\/+$/, '');
const KEY = process.env.UI_KEY || '';
// UI_OUT and UI_MODULES as given (relative: to the working directory), or
// their defaults in this repository
const OUT = process.env.UI_OUT ? path.resolve(process.env.UI_OUT) : path.join(root, 'build/test-artifacts/ui');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const MODULES = process.env.UI_MODULES ? path.resolve(process.env.UI_MODULES)
  : path.join(root, 'build/ui-test/node_modules');
const SLOW = Math.max(1, Number(process.env.UI_SLOW) || 1);
const TIMEOUT_MS = 15000 * SLOW;

// the packages from MODULES only (the lock file's versions), never a global install
const load = createRequire(path.join(MODULES, '..', 'e2e.js'));
let puppeteer;
let axePath;
try {
  puppeteer = load('puppeteer-core');
  axePath = load.resolve('axe-core/axe.min.js');
} catch (e) {
  console.log(`FAIL setup: puppeteer-core or axe-core not in ${MODULES} (make ui-test-deps): ${e.message}`);
  console.log('ui-e2e: 0 passed, 1 failed');
  process.exit(2);
}
if (!BASE) {
  console.log('FAIL setup: UI_BASE is not set (uniapd\'s base URL)');
  console.log('ui-e2e: 0 passed, 1 failed');
  process.exit(2);
}

let passed = 0;
let failed = 0;
let nstep = 0;
// what the browser reported since the last step ended: console errors, page
// errors, CSP violations, requests with the key in their URL
let problems = [];
// every URL the page requested, for the closing key check
const urls = [];

function must(cond, message) {
  if (!cond) throw new Error(message);
}

// a file name from a step's name: lowercase, [a-z0-9-], at most 40 characters
function slug(s) {
  return s.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 40) || 'step';
}

// the key in a URL, as typed or percent-encoded
function hasKey(url) {
  return KEY !== '' && (url.includes(KEY) || url.includes(encodeURIComponent(KEY)));
}

// watch PAGE: records what fails the step that is running
async function watch(page) {
  page.on('console', (m) => {
    if (m.type() === 'error') {
      const at = m.location() && m.location().url ? ` (${m.location().url})` : '';
      problems.push(`console error: ${m.text()}${at}`);
    }
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('request', (r) => {
    urls.push(r.url());
    if (hasKey(r.url())) problems.push(`the key is in a request URL: ${r.method()} ${r.url().split(KEY).join('<KEY>')}`);
  });
  // Chromium also logs each violation as a console error; the event says which directive
  await page.exposeFunction('__uiE2eCsp', (s) => problems.push(`CSP violation: ${s}`));
  await page.evaluateOnNewDocument(() => {
    document.addEventListener('securitypolicyviolation', (e) => {
      window.__uiE2eCsp(`${e.violatedDirective} blocked ${e.blockedURI || '(inline)'} at ` +
        `${e.sourceFile || '?'}:${e.lineNumber}`);
    });
  });
}

let page;

// step NAME FN [OPTS]: runs FN(page), counts it, prints ok/FAIL, takes a
// screenshot; OPTS.allow: patterns of console errors the step expects
async function step(name, fn, opts = {}) {
  nstep += 1;
  const shot = path.join(OUT, `${String(nstep).padStart(2, '0')}-${slug(name)}.png`);
  let why = '';
  try {
    await fn(page);
  } catch (e) {
    why = (e && e.message) || String(e);
  }
  // let late console messages and violations of this step arrive
  await new Promise((r) => setTimeout(r, 100));
  const allow = opts.allow || [];
  const seen = problems.filter((m) => !(m.startsWith('console error: ') && allow.some((re) => re.test(m))));
  problems = [];
  if (seen.length) why = [why, ...seen].filter(Boolean).join('; ');
  try {
    await page.screenshot({ path: shot, fullPage: true });
  } catch (e) {
    why = [why, `screenshot ${shot}: ${e.message}`].filter(Boolean).join('; ');
  }
  if (why) {
    failed += 1;
    console.log(`FAIL ${name}: ${why.split(KEY || '\0').join('<KEY>')}`);
  } else {
    passed += 1;
    console.log(`ok ${name}`);
  }
}

// axe PAGE LABEL: axe-core on the page; throws on a serious or critical violation
async function axe(p, label) {
  const loaded = await p.evaluate(() => typeof window.axe === 'object');
  if (!loaded) await p.evaluate(fs.readFileSync(axePath, 'utf8'));
  const result = await p.evaluate(() => window.axe.run(document, {
    resultTypes: ['violations'],
    runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] },
  }));
  fs.writeFileSync(path.join(OUT, `axe-${slug(label)}.json`), JSON.stringify(result.violations, null, 2));
  const describe = (v) => `${v.id} (${v.impact}): ${v.help}; ${v.nodes.length} node(s): ` +
    v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ');
  const bad = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  for (const v of result.violations) {
    if (!bad.includes(v)) console.log(`note: axe ${label}: ${describe(v)}`);
  }
  if (bad.length) throw new Error(`axe ${label}: ${bad.map(describe).join(' | ')}`);
  return result.violations;
}

async function main() {
  fs.mkdirSync(OUT, { recursive: true });
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'ui-e2e-profile-'));
  let browser;
  try {
    try {
      browser = await puppeteer.launch({
        executablePath: CHROMIUM,
        headless: true, // puppeteer-core 24: --headless=new
        userDataDir: profile,
        args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-proxy-server',
          '--disable-component-update', '--disable-background-networking'],
        timeout: 30000 * SLOW,
        protocolTimeout: 60000 * SLOW,
      });
    } catch (e) {
      console.log(`FAIL launch: ${CHROMIUM}: ${e.message.split('\n')[0]}`);
      failed += 1;
      return;
    }
    page = await browser.newPage();
    page.setDefaultTimeout(TIMEOUT_MS);
    page.setDefaultNavigationTimeout(TIMEOUT_MS);
    await watch(page);
    await steps();
    // the closing check over everything the page requested
    await step('keys: no request URL holds the key', async () => {
      must(urls.length > 0, 'the page made no request');
      const leaked = urls.filter(hasKey);
      must(leaked.length === 0, `${leaked.length} of ${urls.length} request URLs hold the key`);
    });
  } finally {
    if (browser) await browser.close().catch(() => {});
    fs.rmSync(profile, { recursive: true, force: true });
    console.log(`screenshots: ${OUT}`);
  }
}

// ---------------------------------------------------------------- the steps
//
// Sign in (a wrong key refused, the right one kept in session storage only);
// submit a catalog plan with runtime targets while two other jobs hold the
// only job thread (tests/cli/ui-e2e.sh: --jobs 1 --spare-jobs 0 --no-cache), so
// its events are seen from "queued" to "done" and the page must not move while
// they stream; the plan view with the plan's number of stages, layers and
// devices; a timeline whose blocks are the plan's stage and transfer times and
// whose length is the TPI under GPipe; the Megatron-LM arguments copied to the
// clipboard; each target's plan; the compare view with TPI ratios; the jobs
// list's filter; documents dropped on the page; the keyboard; phone width and
// the dark theme; sign out.  axe-core on every view.

const whoami401 = /status of 401 .*\/v1\/whoami\)$/;
const ms = (t) => t * SLOW;

async function api(method, p, body) {
  const r = await fetch(BASE + p, {
    method, headers: Object.assign({ Authorization: `Bearer ${KEY}` }, body ? { 'Content-Type': 'application/json' } : {}),
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await r.text();
  if (!r.ok) throw new Error(`${method} ${p}: ${r.status} ${text.slice(0, 200)}`);
  return text ? JSON.parse(text) : null;
}

// The timeline of the plan shown: forward + backward of each (stage, micro-batch)
// is the stage's time_s, the two transfers of each boundary its transfer_s; under
// GPipe the drawn iteration is the plan's TPI, under 1F1B at most the TPI.
async function checkTimeline(page, plan) {
  const tl = await page.evaluate(() => {
    const svg = document.querySelector('#plan-view svg.timeline');
    return {
      length: Number(svg.dataset.length),
      blocks: [...svg.querySelectorAll('rect.block')].map((r) => ({ kind: r.dataset.kind, stage: Number(r.dataset.stage), micro: Number(r.dataset.micro), dur: Number(r.dataset.dur) })),
    };
  });
  const c = plan.microbatches, S = plan.stages.length;
  const compute = tl.blocks.filter((b) => b.kind !== 'transfer');
  must(compute.length === 2 * c * S, `${compute.length} compute blocks, expected 2 x ${c} x ${S}`);
  const at = new Map(compute.map((b) => [`${b.kind}:${b.stage}:${b.micro}`, b]));
  for (let i = 0; i < S; i++) {
    for (let m = 0; m < c; m++) {
      const f = at.get(`forward:${i}:${m}`), b = at.get(`backward:${i}:${m}`);
      must(f && b, `stage ${i} micro-batch ${m} lacks a block`);
      const rel = Math.abs(f.dur + b.dur - plan.stages[i].time_s) / plan.stages[i].time_s;
      must(rel < 1e-9, `stage ${i} micro-batch ${m}: forward + backward ${f.dur + b.dur} s, the plan says ${plan.stages[i].time_s} s`);
    }
    if (i < S - 1) {
      const t = tl.blocks.filter((x) => x.kind === 'transfer' && x.stage === i && x.micro === 0);
      const sum = t.reduce((n, x) => n + x.dur, 0);
      must(t.length === 2 && Math.abs(sum - plan.stages[i].transfer_s) <= 1e-9 * plan.stages[i].transfer_s,
        `boundary ${i}: transfers ${sum} s, the plan says ${plan.stages[i].transfer_s} s`);
    }
  }
  if (plan.schedule === 'gpipe')
    must(Math.abs(tl.length - plan.tpi_s) <= 1e-9 * plan.tpi_s, `drawn iteration ${tl.length} s, the plan's TPI ${plan.tpi_s} s`);
  // 1F1B with Megatron-LM's blocking exchanges: never longer than the TPI (docs/ui.md)
  if (plan.schedule === '1f1b')
    must(tl.length <= plan.tpi_s * (1 + 1e-9), `drawn 1F1B iteration ${tl.length} s over the plan's TPI ${plan.tpi_s} s`);
}


async function steps() {
  await page.setViewport({ width: 1280, height: 800 });
  if (!KEY) {
    // uniapd --no-auth: no sign-in, no key, the anonymous tenant
    await step('under --no-auth the page goes straight in', async () => {
      await page.goto(`${BASE}/ui/`, { waitUntil: 'networkidle0' });
      await page.waitForSelector('#new-plan');
      const who = await page.$eval('#whoami', (e) => e.textContent);
      must(/tenant default/.test(who), `whoami says "${who}"`);
      must(await page.$eval('#signout', (e) => e.hidden), 'sign out is offered without a key');
      must(!(await page.$('#signin')), 'the sign-in form is shown');
      await axe(page, 'new plan, no auth');
    });
    return;
  }
  await page.browser().defaultBrowserContext().overridePermissions(BASE, ['clipboard-read', 'clipboard-write', 'clipboard-sanitized-write']);
  await page.evaluateOnNewDocument(() => {
    // layout shifts, summed as Cumulative Layout Shift does (input-driven ones excluded)
    window.__shift = 0;
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) if (!e.hadRecentInput) window.__shift += e.value;
    }).observe({ type: 'layout-shift', buffered: true });
  });

  // -------------------------------------------------------------- sign in
  await step('open /ui/: the sign-in form', async () => {
    const res = await page.goto(`${BASE}/ui/`, { waitUntil: 'networkidle0' });
    must(res && res.ok(), `GET /ui/ answered ${res ? res.status() : 'nothing'}${res && res.status() === 404 ? ': this uniapd does not serve the UI' : ''}`);
    must(res.headers()['content-security-policy'], 'GET /ui/ has no Content-Security-Policy header');
    await page.waitForSelector('#signin #key');
    await axe(page, 'sign in');
  }, { allow: [whoami401] }); // not signed in yet: the page asks whoami without a key
  await step('a wrong key is refused', async () => {
    await page.type('#key', 'not-a-key-0123456789');
    await page.click('#signin-submit');
    await page.waitForSelector('#signin-error .error');
    const stored = await page.evaluate(() => sessionStorage.getItem('uniap.key'));
    must(stored === null, 'a refused key was kept');
  }, { allow: [whoami401] }); // the refused key's 401 is the point
  await step('sign in with the key', async () => {
    await page.click('#key', { clickCount: 3 });
    await page.type('#key', KEY);
    await page.click('#signin-submit');
    await page.waitForSelector('#new-plan');
    const who = await page.$eval('#whoami', (e) => e.textContent);
    must(/tenant/.test(who), `whoami says "${who}"`);
    const where = await page.evaluate(() => ({ session: sessionStorage.getItem('uniap.key') !== null, local: JSON.stringify(localStorage), cookie: document.cookie }));
    must(where.session && !where.local.includes('key') && where.cookie === '', 'the key is kept in session storage only');
    await axe(page, 'new plan');
  });

  // -------------------------------------------------------------- new plan, progress
  let jobId = 0;
  await step('submit a catalog plan and see its progress stream', async () => {
    // the one job thread is busy with another job, so this one is seen queued, running and done
    // (uniapd runs with --jobs 1 --spare-jobs 0 --no-cache; each of these takes about a second)
    for (const batch of [512, 256])
      await api('POST', '/v1/plans', { cluster: 'envd-64', model: 'gpt-18b', batch, schedule: '1f1b' });
    await page.select('#cluster', 'cat:envb');
    await page.select('#model', 'cat:bert-huge');
    await page.$eval('#batch', (e) => { e.value = ''; });
    await page.type('#batch', '32');
    await page.select('#schedule', 'gpipe');
    await page.select('#objective', 'makespan');
    await page.click('input[name="target"][value="megatron"]');
    await page.click('input[name="target"][value="galvatron"]');
    await page.click('#opt-zero');
    await page.click('#opt-sequence_parallel');
    await page.click('#every-candidate');
    await page.click('#submit-plan');
    await page.waitForSelector('#progress');
    const shift0 = await page.evaluate(() => window.__shift);
    jobId = Number(await page.evaluate(() => location.hash.split('/').pop()));
    must(jobId > 0, 'no job id in the address');
    await page.waitForSelector('#progress.finished', { timeout: ms(60000) });
    const p = await page.$eval('#progress', (e) => ({
      events: Number(e.dataset.events), names: e.dataset.names || '', done: e.querySelector('#progress-done').textContent,
      state: e.querySelector('#progress-state').textContent, best: e.querySelector('#progress-best').textContent,
    }));
    const shift = await page.evaluate(() => window.__shift) - shift0;
    must(shift < 0.001, `the page moved while progress streamed: layout shift ${shift}`);
    must(p.events >= 2, `only ${p.events} event(s) arrived (${p.names})`);
    must(/ done$/.test(p.names) && p.names.split(' ').length >= 2, `events: "${p.names}"`);
    must(p.state === 'succeeded', `state ${p.state}`);
    const m = p.done.match(/^(\d+) \/ (\d+)$/);
    must(m && Number(m[2]) > 0 && m[1] === m[2], `candidates "${p.done}"`);
    must(/s$/.test(p.best), `best TPI "${p.best}"`);
    // "Solve every candidate" went with the request (what it does: tests/unit/test_uop.c)
    const j = await api('GET', `/v1/jobs/${jobId}`);
    must(j.request && j.request.every_candidate === true, `request ${JSON.stringify(j.request).slice(0, 200)}`);
    // so did the objective (under GPipe the makespan is the formula: tests/unit/test_opt.c)
    must(j.request.objective === 'makespan', `request ${JSON.stringify(j.request).slice(0, 200)}`);
  });

  // -------------------------------------------------------------- plan view
  let job = null;
  await step('the plan view shows the plan', async () => {
    await page.waitForSelector('#plan-view[data-stages]');
    job = await api('GET', `/v1/jobs/${jobId}`);
    const plan = job.result.plan;
    const v = await page.evaluate(() => ({
      stages: Number(document.querySelector('#plan-view').dataset.stages),
      layers: document.querySelectorAll('#plan-view .layer').length,
      legend: document.querySelectorAll('#plan-view .legend li').length,
      devices: document.querySelectorAll('#plan-view .device:not(.unused)').length,
      tpi: document.querySelector('#tpi').textContent,
      heat: document.querySelectorAll('#plan-view td.cand').length,
      chosen: [...document.querySelectorAll('#plan-view td.cand.chosen')].map((e) => `${e.dataset.pp}x${e.dataset.c}`),
      mem: document.querySelectorAll('#plan-view .mem-used').length,
      targets: document.querySelectorAll('tr[data-target]').length,
    }));
    must(job.request.zero === true && job.request.sequence_parallel === true && job.request.recompute === undefined,
      `the form's options reached the request: ${JSON.stringify(job.request)}`);
    const used = await page.$eval('#options-used', (e) => e.textContent);
    must(used === 'ZeRO, sequence parallelism', `options shown: "${used}"`);
    must(v.stages === plan.stages.length, `${v.stages} stages drawn, the plan has ${plan.stages.length}`);
    must(v.layers === plan.layers.length, `${v.layers} layers drawn, the plan has ${plan.layers.length}`);
    must(v.legend === plan.pp, `${v.legend} legend entries for pp ${plan.pp}`);
    const devs = plan.stages.slice(0, plan.pp).reduce((n, st) => n + st.devices.length, 0);
    must(v.devices === devs, `${v.devices} device cells, the plan uses ${devs}`);
    must(v.mem === plan.pp, `${v.mem} memory bars for pp ${plan.pp}`);
    const cells = new Set(job.result.candidates.map((c) => `${c.pp}x${c.microbatches}`)).size;
    must(cells > 0 && v.heat === cells, `${v.heat} heat-map cells for ${cells} (pp, micro-batches) candidates`);
    must(v.chosen.length === 1 && v.chosen[0] === `${plan.pp}x${plan.microbatches}`, `outlined candidate ${v.chosen}`);
    must(v.targets === job.result.targets.length, `${v.targets} target rows for ${job.result.targets.length} targets`);
    // how far such estimates were from measured runs (ui/fidelity.json: the ratchet's sets on envb)
    const badge = await page.$eval('#estimate summary', (e) => e.textContent);
    must(/^Estimate: [0-9.]+(–[0-9.]+)? % from measured runs$/.test(badge), `the estimate badge says "${badge}"`);
    // where each rank's memory goes (POST /v1/evaluate on the plan): one row per rank, parts that add up
    await page.waitForSelector('#memory-table tbody tr', { timeout: ms(30000) });
    const rows = await page.$$eval('#memory-table tbody tr', (trs) => trs.length);
    must(rows === plan.pp, `${rows} memory rows for pp ${plan.pp}`);
    const head = await page.$$eval('#memory-table thead th', (ths) => ths.map((t) => t.textContent).join());
    must(/Parameters,Gradients,Optimizer states,Activations/.test(head), `memory columns ${head}`);
    // SVG labels drawn at 12 px or more (the pictures scroll rather than shrink)
    const label = await page.$eval('#plan-view svg.timeline .lane-label', (t) => t.getBoundingClientRect().height);
    must(label >= 11, `timeline labels are ${label} px tall`);
    must(await page.$('#export-chrome-trace'), 'no trace download');
    const layer = await page.$('#plan-view .layer[data-layer="1"]');
    await layer.focus();
    const details = await page.$eval('#layer-details', (e) => e.textContent);
    must(details.includes(plan.layers[1].name) && details.includes(plan.layers[1].strategy.name), `layer details "${details}"`);
    await axe(page, 'plan view');
  });

  await step('the timeline is the plan\'s own numbers', async () => {
    await checkTimeline(page, job.result.plan);
  });

  await step('copy the Megatron-LM arguments', async () => {
    await page.click('#export-megatron');
    await page.waitForSelector('#export-text[data-copied="1"]');
    const shown = await page.$eval('#export-text', (e) => e.textContent);
    const clip = await page.evaluate(() => navigator.clipboard.readText());
    const r = await fetch(`${BASE}/v1/jobs/${jobId}/plan?format=megatron`, { headers: { Authorization: `Bearer ${KEY}` } });
    const want = await r.text();
    must(r.ok && /--pipeline-model-parallel-size/.test(want), `the export: ${r.status} ${want.slice(0, 120)}`);
    must(clip === want && shown === want, 'the clipboard does not hold the export');
  });

  await step('each target\'s plan; under GPipe the drawn iteration is the TPI', async () => {
    for (const name of ['galvatron', 'any']) {
      const t = job.result.targets.find((x) => x.target === name && x.plan);
      must(t, `no ${name} plan`);
      await page.click(`tr[data-target="${name}"] button`);
      await page.waitForSelector(`#plan-view[data-target="${name}"]`);
      const n = await page.$eval('#plan-view', (e) => Number(e.dataset.stages));
      must(n === t.plan.stages.length, `${n} stages for the ${name} plan of ${t.plan.stages.length}`);
      const said = await page.$eval('#optimality', (e) => e.textContent);
      must(said === (t.status === 'optimal' ? 'proven optimal in the model' : 'not proven'), `the ${name} plan is ${t.status}; the page says "${said}"`);
      if (name !== 'any') {
        const price = await page.$eval('#price', (e) => e.textContent);
        must(price === `+${(t.price * 100).toFixed(1)} % against any layout`, `the ${name} plan's price "${price}", the service's ${t.price}`);
      }
      await checkTimeline(page, t.plan);
    }
    must(job.result.targets.some((x) => x.plan && x.plan.schedule === 'gpipe' && x.plan.pp > 1), 'no GPipe plan with pp > 1 to hold to its TPI');
  });

  await step('one runtime target: its plan, priced when planned beside any', async () => {
    // through the API alone: the target's plan, said unpriced; its export note names it
    const alone = await api('POST', '/v1/plans', { cluster: 'envb', model: 'bert-huge', batch: 32, targets: ['megatron'] });
    await page.goto(`${BASE}/ui/#/jobs/${alone.id}`, { waitUntil: 'networkidle0' });
    await page.waitForSelector(`#plan-view[data-job="${alone.id}"][data-target="megatron"]`, { timeout: ms(60000) });
    const price = await page.$eval('#price', (e) => e.textContent);
    must(/^not priced/.test(price), `a lone target's price: "${price}"`);
    const note = await page.$eval('#export-note', (e) => e.textContent);
    must(/plan for megatron: it exports to megatron/.test(note), `the export note: "${note}"`);
    // through the form: one target ticked is planned beside any, so its page has a price
    await page.click('a[data-nav="new"]');
    await page.waitForSelector('#new-plan');
    await page.select('#cluster', 'cat:envb');
    await page.select('#model', 'cat:bert-huge');
    await page.click('input[name="target"][value="deepspeed"]');
    await page.click('#submit-plan');
    await page.waitForFunction(() => /#\/jobs\/[0-9]+$/.test(location.hash));
    const id = Number(await page.evaluate(() => location.hash.split('/').pop()));
    const j = await api('GET', `/v1/jobs/${id}`);
    must(JSON.stringify(j.request.targets) === '["deepspeed","any"]', `the form sent targets ${JSON.stringify(j.request.targets)}`);
    await page.waitForSelector(`#plan-view[data-job="${id}"][data-target="deepspeed"]`, { timeout: ms(60000) });
    const p2 = await page.$eval('#price', (e) => e.textContent);
    must(/^\+[0-9.]+ % against any layout$/.test(p2), `the deepspeed plan's price: "${p2}"`);
  });

  let full = 0;
  await step('a plan at its memory limit says so', async () => {
    // Llama-13B at batch 32 on one DGX A100 without recomputation: 99.6 % of the limit
    const j = await api('POST', '/v1/plans', { cluster: 'dgx-a100', model: 'llama-13b', batch: 32, schedule: '1f1b' });
    full = j.id;
    await page.goto(`${BASE}/ui/#/jobs/${j.id}`, { waitUntil: 'networkidle0' });
    await page.waitForSelector(`#plan-view[data-job="${j.id}"][data-stages]`, { timeout: ms(60000) });
    const warn = await page.$eval('#memory-warning', (e) => e.textContent);
    must(/Rank 0 \(99\.[0-9] %\) at 95 % of the memory limit or more/.test(warn), `the warning: "${warn}"`);
    await page.waitForSelector('#memory-table tr.near-limit', { timeout: ms(30000) });
    // a 1F1B plan: its timeline is Megatron-LM's schedule, never longer than the TPI
    const done = await api('GET', `/v1/jobs/${j.id}`);
    must(done.result.plan.schedule === '1f1b', `the plan's schedule is ${done.result.plan.schedule}`);
    await checkTimeline(page, done.result.plan);
    await axe(page, 'plan at its memory limit');
  });

  await step('nothing fits: why, and a re-plan with every way to save memory', async () => {
    const j = await api('POST', '/v1/plans', { cluster: 'dgx-a100', model: 'llama-70b', batch: 16, schedule: '1f1b' });
    await page.goto(`${BASE}/ui/#/jobs/${j.id}`, { waitUntil: 'networkidle0' });
    await page.waitForSelector(`#plan-view[data-job="${j.id}"] #no-plan`, { timeout: ms(60000) });
    const said = await page.$eval('#no-plan', (e) => e.textContent);
    must(/Nothing fits.*infeasible/.test(said), `the page says "${said}"`);
    must((await page.$$eval('#no-plan-hints li', (x) => x.length)) === 3, 'not three hints');
    await axe(page, 'nothing fits');
    await page.click('#replan-memory');
    await page.waitForFunction((old) => location.hash !== `#/jobs/${old}` && /#\/jobs\/[0-9]+$/.test(location.hash), {}, j.id);
    const id = Number(await page.evaluate(() => location.hash.split('/').pop()));
    const again = await api('GET', `/v1/jobs/${id}`);
    const r = again.request;
    must(r.recompute === true && r.zero === true && r.sequence_parallel === true && r.model === 'llama-70b' && r.batch === 16,
      `the re-plan's request: ${JSON.stringify(r)}`);
    await page.waitForSelector('#no-plan, #plan-view[data-stages]', { timeout: ms(60000) });
  });

  // -------------------------------------------------------------- compare, lists
  let second = 0;
  await step('compare two plans', async () => {
    // clicked in the page, looked up at the click: a view that re-rendered meanwhile (a route
    // run for the hash it came with) would leave puppeteer's handle on a detached node
    await page.goto(`${BASE}/ui/#/jobs/${jobId}`, { waitUntil: 'networkidle0' });
    await page.waitForSelector(`#plan-view[data-job="${jobId}"][data-stages]`, { timeout: ms(60000) });
    await page.$eval('#add-compare', (b) => b.click());
    const other = await api('POST', '/v1/plans', { cluster: 'envb', model: 'bert-huge', batch: 32, space: 'uniform' });
    second = other.id;
    await page.goto(`${BASE}/ui/#/jobs/${second}`, { waitUntil: 'networkidle0' });
    await page.waitForSelector('#plan-view[data-stages]', { timeout: ms(60000) });
    await page.$eval('#add-compare', (b) => b.click());
    await page.click('a[data-nav="compare"]');
    await page.waitForSelector('#compare-table tbody tr');
    const rows = await page.$$eval('#compare-table tbody tr', (trs) => trs.map((t) => ({ job: Number(t.dataset.job), ratio: t.dataset.ratio })));
    const jobs = new Set(rows.map((r) => r.job));
    must(jobs.has(jobId) && jobs.has(second), `compare rows: ${JSON.stringify(rows)}`);
    const ratios = rows.filter((r) => r.ratio !== '').map((r) => Number(r.ratio));
    must(ratios.length >= 2 && Math.min(...ratios) === 1 && ratios.every((x) => x >= 1), `ratios ${ratios}`);
    const sj = await api('GET', `/v1/jobs/${second}`);
    const row = rows.find((r) => r.job === second);
    const tpis = rows.filter((r) => r.ratio !== '').map((r) => Number(r.ratio));
    must(sj.result.plan && row.ratio !== '', 'the uniform plan has no ratio');
    // the ratio is the TPI over the fastest row's: the uniform plan's, recomputed from the service's numbers
    const fastest = Math.min(...job.result.targets.filter((t) => t.plan).map((t) => t.tpi_s), sj.result.plan.tpi_s);
    must(Math.abs(Number(row.ratio) - sj.result.plan.tpi_s / fastest) < 1e-9 && tpis.length >= 2, `uniform ratio ${row.ratio}, expected ${sj.result.plan.tpi_s / fastest}`);
    must(await page.$$eval('#compare svg.timeline', (x) => x.length) >= 2, 'no timelines side by side');
    must(!(await page.$('#compare-differ')), 'plans of one model and batch said to differ');
    await axe(page, 'compare');
    // a plan of another model and batch: said loudly
    const ids = await page.evaluate(() => JSON.parse(sessionStorage.getItem('uniap.compare') || '[]'));
    await page.evaluate((list) => sessionStorage.setItem('uniap.compare', JSON.stringify(list)), [...ids, full]);
    await page.reload({ waitUntil: 'networkidle0' });
    await page.waitForSelector('#compare-table tbody tr');
    const differ = await page.$eval('#compare-differ', (e) => e.textContent);
    must(/different work/.test(differ) && /llama-13b at batch 32/.test(differ), `the warning: "${differ}"`);
    await page.evaluate((list) => sessionStorage.setItem('uniap.compare', JSON.stringify(list)), ids);
  });

  await step('allocate two pools: nodes by job, curves, a plan', async () => {
    await page.click('a[data-nav="allocate"]');
    await page.waitForSelector('#alloc-body');
    const body = JSON.parse(await page.$eval('#alloc-body', (t) => t.value));
    must(body.clusters && body.clusters.length === 2 && body.jobs.length === 3, `the example request: ${JSON.stringify(body)}`);
    await page.click('#alloc-submit');
    await page.waitForSelector('#allocation-view[data-jobs]', { timeout: ms(120000) });
    const id = Number(await page.$eval('#allocation-view', (e) => e.dataset.job));
    const rep = (await api('GET', `/v1/jobs/${id}`)).result;
    must(rep && rep.pools.length === 2, `the report: ${JSON.stringify(rep).slice(0, 200)}`);
    // every device cell of a job is the job's, as many as its devices in its pool
    const cells = await page.$$eval('svg.pool rect[data-job]', (rs) => rs.map((r) => r.dataset.job).filter(Boolean));
    for (const j of rep.jobs) {
      const n = cells.filter((x) => x === j.name).length;
      must(n === j.devices, `${j.name}: ${n} cells drawn, ${j.devices} devices given`);
    }
    must(await page.$$eval('svg.pool', (x) => x.length) === 2, 'not one grid per pool');
    must(await page.$$eval('#alloc-table svg.curve', (x) => x.length) === rep.jobs.length * 2, 'not one curve per job and pool');
    // the marked point of a job that runs is its own size in its own pool
    const chosen = await page.$$eval('#alloc-table svg.curve', (svgs) => svgs.filter((g) => g.querySelector('circle.chosen')).map((g) => g.dataset.pool));
    must(chosen.length === rep.jobs.filter((j) => j.devices > 0).length, `marked sizes: ${chosen}`);
    const first = rep.jobs.find((j) => j.plan);
    await page.$eval(`button[data-plan="${first.name}"]`, (b) => b.click());
    await page.waitForSelector(`#alloc-plan[data-job="${first.name}"] svg.timeline`);
    await axe(page, 'allocation');
  });

  await step('the jobs list filters and pages', async () => {
    await page.click('a[data-nav="jobs"]');
    await page.waitForSelector('#jobs-table tbody tr[data-job]');
    await page.select('#state-filter', 'succeeded');
    await page.waitForFunction(() => location.hash.includes('state=succeeded') && document.querySelector('#jobs-table tbody tr[data-job]'));
    const states = await page.$$eval('#jobs-table tbody tr[data-job]', (trs) => trs.map((t) => t.dataset.state));
    must(states.length >= 3 && states.every((x) => x === 'succeeded'), `states ${states}`);
    await axe(page, 'jobs');
  });

  await step('the jobs list pages forward and back', async () => {
    const all = (await api('GET', '/v1/jobs?limit=100')).items.map((j) => j.id);
    must(all.length >= 4, `only ${all.length} jobs`);
    await page.goto(`${BASE}/ui/#/jobs?limit=2`, { waitUntil: 'networkidle0' });
    await page.reload({ waitUntil: 'networkidle0' }); // the hash alone changed: render it afresh
    const seen = [], pages = [];
    const ids = () => page.$$eval('#jobs-table tbody tr[data-job]', (trs) => trs.map((t) => Number(t.dataset.job)));
    for (let i = 0; i < all.length; i++) {
      const got = await ids();
      must(got.length === 2 || (got.length === 1 && all.length % 2 === 1), `page ${i + 1} has ${got.length} rows`);
      seen.push(...got);
      pages.push(got.join());
      if (!(await page.$('#next-page'))) break;
      const before = got.join();
      await page.click('#next-page');
      await page.waitForFunction((b) => [...document.querySelectorAll('#jobs-table tbody tr[data-job]')].map((t) => t.dataset.job).join() !== b, {}, before);
    }
    must(seen.join() === all.join(), `pages listed ${seen.join()}, the service has ${all.join()}`);
    const last = (await ids()).join();
    await page.click('#prev-page');
    await page.waitForFunction((b) => [...document.querySelectorAll('#jobs-table tbody tr[data-job]')].map((t) => t.dataset.job).join() !== b, {}, last);
    const back = await ids();
    must(pages.length >= 2 && back.join() === pages[pages.length - 2], `Previous shows ${back.join()}, not ${pages[pages.length - 2]}`);
  });

  await step('cancel a queued plan from its page', async () => {
    await api('POST', '/v1/plans', { cluster: 'envd-64', model: 'gpt-18b', batch: 512, schedule: '1f1b' });
    const j = await api('POST', '/v1/plans', { cluster: 'envb', model: 'bert-huge', batch: 64 });
    await page.goto(`${BASE}/ui/#/jobs/${j.id}`, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector('#cancel:not([disabled])');
    await page.click('#cancel');
    await page.waitForSelector('#job-state', { timeout: ms(30000) });
    const said = await page.$eval('#job-state', (e) => e.textContent);
    const state = (await api('GET', `/v1/jobs/${j.id}`)).state;
    must(state === 'canceled' && /canceled/.test(said), `the job is ${state}; the page says "${said}"`);
  });

  await step('the documents list', async () => {
    await page.click('a[data-nav="documents"]');
    await page.waitForSelector('#clusters-table');
    const n = await page.$$eval('.catalog li', (x) => x.length);
    must(n > 10, `${n} catalog entries`);
    await axe(page, 'documents');
  });

  await step('documents dropped on the page are stored', async () => {
    const read = (f) => ({ name: path.basename(f), text: fs.readFileSync(path.join(root, f), 'utf8') });
    // one drop: a uniap cluster and a Galvatron model (config, computation and memory profiles)
    const drop = async (files) => {
      await page.evaluate((list) => {
        const dt = new DataTransfer();
        for (const f of list) dt.items.add(new File([f.text], f.name, { type: f.name.endsWith('.json') ? 'application/json' : 'text/plain' }));
        document.querySelector('#drop').dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
      }, files);
    };
    const before = { c: (await api('GET', '/v1/clusters')).items.length, m: (await api('GET', '/v1/models')).items.length };
    const status = async (re) => {
      await page.waitForFunction((src) => new RegExp(src).test(document.querySelector('#documents-status').textContent), { timeout: ms(15000) }, re.source);
      return page.$eval('#documents-status', (e) => e.textContent);
    };
    await drop([read('tests/data/divisor-cap/cluster.json'), ...['gpt-medium.json', 'computation_profiling_bf16_hidden1024_head16_seqlen1024.json',
      'memory_profiling_bf16_hidden1024_head16_seqlen1024.json'].map((f) => read(`examples/galvatron/models/gpt/${f}`))]);
    let said = await status(/Stored|rror/);
    must(/Stored cluster #\d+, model #\d+/.test(said), `after the first drop: "${said}"`);
    // Galvatron hardware files: the page asks for the cluster's shape
    await page.waitForSelector('#clusters-table');
    await drop(['allreduce_bandwidth_1nodes_8gpus_per_node.json', 'p2p_bandwidth_1nodes_8gpus_per_node.json', 'overlap_coefficient.json']
      .map((f) => read(`examples/galvatron/hardware/${f}`)));
    await page.waitForSelector('dialog[open] #ask-nodes');
    await page.click('dialog[open] button[value="ok"]');
    said = await status(/Stored|rror/);
    must(/Stored cluster #\d+/.test(said), `after the Galvatron hardware drop: "${said}"`);
    // nccl-tests output over the base cluster picked on the page (8 ranks: an 8-device base)
    await page.waitForSelector('#nccl-base');
    await page.select('#nccl-base', 'dgx-h100');
    await drop([read('examples/nccl-tests/all_reduce_perf.txt')]);
    said = await status(/Stored|rror/);
    must(/Stored cluster #\d+/.test(said), `after the nccl-tests drop: "${said}"`);
    const after = { c: (await api('GET', '/v1/clusters')).items.length, m: (await api('GET', '/v1/models')).items.length };
    must(after.c === before.c + 3 && after.m === before.m + 1, `stored ${after.c - before.c} clusters and ${after.m - before.m} models, expected 3 and 1`);
    await page.waitForFunction((n) => document.querySelectorAll('#clusters-table tbody tr[data-id]').length === n, { timeout: ms(5000) }, after.c);
  });

  await step('keyboard: skip link and focus order', async () => {
    await page.goto(`${BASE}/ui/#/jobs/${jobId}`, { waitUntil: 'networkidle0' });
    await page.reload({ waitUntil: 'networkidle0' }); // a fresh load: focus starts at the top
    await page.waitForSelector('#plan-view[data-stages]');
    await page.keyboard.press('Tab');
    const first = await page.evaluate(() => document.activeElement.className);
    must(first === 'skip', `the first Tab lands on "${first}"`);
    await page.keyboard.press('Enter');
    let seen = 0;
    for (let i = 0; i < 40 && !seen; i++) {
      await page.keyboard.press('Tab');
      seen = await page.evaluate(() => (document.activeElement.classList.contains('layer') ? 1 : 0));
    }
    must(seen, 'Tab never reached a layer cell');
  });

  await step('phone width and dark theme', async () => {
    await page.setViewport({ width: 390, height: 844 });
    await page.click('#theme');
    const theme = await page.evaluate(() => document.documentElement.dataset.theme);
    must(theme === 'dark', `theme ${theme}`);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    must(overflow <= 1, `the page scrolls sideways by ${overflow} px at 390 px`);
    // every table and picture wider than the screen sits in a box that scrolls sideways, so none is clipped
    const clipped = await page.evaluate(() => [...document.querySelectorAll('#plan-view table, #plan-view svg')].filter((t) => {
      const r = t.getBoundingClientRect();
      if (r.right <= document.documentElement.clientWidth + 1) return false;
      for (let e = t.parentElement; e; e = e.parentElement) if (['auto', 'scroll'].includes(getComputedStyle(e).overflowX)) return false;
      return true;
    }).map((t) => t.className.baseVal ?? t.className));
    must(clipped.length === 0, `clipped at 390 px: ${clipped}`);
    await page.waitForSelector('#memory-table');
    const stage = await page.$eval('table.stage-table', (t) => {
      const box = t.closest('.scroll');
      return box && box.scrollWidth >= t.offsetWidth ? 'ok' : 'clipped';
    });
    must(stage === 'ok', 'the stage table cannot be scrolled into view');
    await axe(page, 'plan view, dark, phone');
    await page.setViewport({ width: 1280, height: 800 });
  });

  await step('sign out forgets the key', async () => {
    await page.click('#signout');
    await page.waitForSelector('#signin #key');
    const stored = await page.evaluate(() => sessionStorage.getItem('uniap.key'));
    must(stored === null, 'the key is still stored');
  }, { allow: [whoami401] });

}

main().catch((e) => {
  failed += 1;
  console.log(`FAIL e2e.js: ${(e && e.stack) || e}`);
}).then(() => {
  console.log(`ui-e2e: ${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
});
