// tests/cli/browser-page.js - the page of tests/cli/browser.sh and its
// server (node, no packages): GET / is a page whose script uses uniapd
// (?api=URL, another origin) as a browser UI would: a JSON POST (a CORS
// preflight first), the exposed Location, EventSource until the final
// event, the plan link with its exposed ETag.  The page POSTs what it saw
// to /result; the server prints it as one line, "result {...}".  Prints
// "listening PORT" first.  Listens on 127.0.0.1 only.
'use strict';
const http = require('http');

const page = `<!doctype html>
<meta charset="utf-8">
<title>uniap browser client</title>
<pre id="out">running</pre>
<script>
const api = new URLSearchParams(location.search).get('api');
const seen = { error: null, status: 0, location: null, events: [], plan_status: 0, plan_etag: null };
function report() {
  document.getElementById('out').textContent = JSON.stringify(seen);
  fetch('/result', { method: 'POST', body: JSON.stringify(seen) });
}
async function run() {
  const r = await fetch(api + '/v1/plans', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ cluster: 'dgx-a100', model: 't5-large', batch: 64 }),
  });
  seen.status = r.status;
  seen.location = r.headers.get('Location');
  await r.json();
  const es = new EventSource(api + seen.location + '/events');
  const take = (type) => (e) => {
    seen.events.push({ type, id: e.lastEventId, data: JSON.parse(e.data) });
    if (type !== 'done')
      return;
    es.close();
    const plan = JSON.parse(e.data).links.plan;
    fetch(api + plan).then((p) => {
      seen.plan_status = p.status;
      seen.plan_etag = p.headers.get('ETag');
      report();
    }, (err) => { seen.error = 'plan: ' + err; report(); });
  };
  for (const type of ['state', 'progress', 'done'])
    es.addEventListener(type, take(type));
  es.onerror = () => {
    if (es.readyState === EventSource.CLOSED) {
      seen.error = 'eventsource: closed by an error';
      report();
    }
  };
}
run().catch((err) => { seen.error = String(err); report(); });
</script>
`;

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && (req.url === '/' || req.url.startsWith('/?'))) {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end(page);
    return;
  }
  if (req.method === 'POST' && req.url === '/result') {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => {
      if (body.length < 1 << 20)
        body += chunk;
    });
    req.on('end', () => {
      process.stdout.write('result ' + body.replace(/\n/g, ' ') + '\n');
      res.writeHead(204);
      res.end();
    });
    return;
  }
  res.writeHead(404);
  res.end();
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write('listening ' + server.address().port + '\n');
});
