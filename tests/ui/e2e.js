'use strict';
// tests/ui/e2e.js - the web UI end to end in a real headless Chromium (Debian's
// chromium package, driven over the DevTools protocol by puppeteer-core),
// against a running, keyed uniapd.  tests/cli/ui-e2e.sh starts uniapd and runs
// this; it never starts a server, never downloads a browser, and never puts the
// API key anywhere but the UI's own sign-in (it is not in any URL it opens).
//
// Environment (CommonJS, Node 18 or newer):
//   UI_BASE      uniapd's base URL, e.g. http://127.0.0.1:8080 (required)
//   UI_KEY       a tenant's API key; empty under --no-auth
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
    await page.setViewport({ width: 1280, height: 900 });
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
async function steps() {
  await step('open /ui/', async (p) => {
    const res = await p.goto(`${BASE}/ui/`, { waitUntil: 'networkidle0' });
    must(res, `GET ${BASE}/ui/: no response`);
    must(res.status() !== 404, `GET ${BASE}/ui/ answered 404: this uniapd does not serve the UI`);
    must(res.ok(), `GET ${BASE}/ui/ answered ${res.status()}`);
    must(res.headers()['content-security-policy'], 'GET /ui/ has no Content-Security-Policy header');
  }, { allow: [/status of 401 .*\/v1\/whoami\)$/] }); // not signed in yet: the sign-in view
  await step('axe: first view', (p) => axe(p, 'first view'));
}

main().catch((e) => {
  failed += 1;
  console.log(`FAIL e2e.js: ${(e && e.stack) || e}`);
}).then(() => {
  console.log(`ui-e2e: ${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
});
