#!/bin/sh
# tests/cli/helm.sh - deploy/helm/uniapd rendered (tests/cli/helm/render.py:
# Helm is neither a Debian 12 package nor on npm, so its templates are
# rendered by a strict subset of Go templates that refuses any construct it
# does not implement) in its three shapes, and each rendering checked:
#   - sqlite (the default): one replica, Recreate, the PersistentVolumeClaim
#     mounted at the --db folder, UNIAPD_DB the --db file, no Secret or PDB;
#   - postgres with postgres.url: replicas >= 2, RollingUpdate, UNIAPD_DB from
#     the chart's Secret (key url, a postgres:// URL), no --db, a PDB, no PVC;
#   - postgres with postgres.existingSecret: no Secret, UNIAPD_DB from it;
#   - postgres with neither: refused with the message saying what is needed;
#   - every shape: every uniapd option exists (uniapd --help), the image is
#     repository:tag from a registry host, startup/liveness/readiness probes
#     on /healthz, /healthz, /readyz at the container's port, resources set,
#     the Service and (serviceMonitor.enabled) the ServiceMonitor select the
#     pods' labels and name the http port, the output is YAML that yamllint's
#     default rules accept (when yamllint is installed), and Chart.yaml names
#     the chart's folder with a SemVer version (what helm lint checks first).
# Needs python3 with PyYAML.  Prints "helm: N passed, N failed".
set -u
. "$(dirname "$0")/lib.inc"
UNIAPD=${UNIAPD:-build/uniapd}
CHART=deploy/helm/uniapd
if ! python3 -c 'import yaml' 2>/dev/null; then
	echo "helm: skipped: python3 with PyYAML is not installed (Debian package python3-yaml)"
	echo "helm: 0 passed, 0 failed, 1 skipped"
	exit 0
fi
R="python3 tests/cli/helm/render.py $CHART"
check render-sqlite 0 "" -- $R
cp "$tmp/out" "$tmp/sqlite.yaml"
check render-postgres 0 "" -- $R --set store=postgres --set postgres.url=postgres://uniap:pw@db:5432/uniap \
	--set serviceMonitor.enabled=true --set replicas=3
cp "$tmp/out" "$tmp/pg.yaml"
check render-existing 0 "" -- $R --set store=postgres --set postgres.existingSecret=uniap-db
cp "$tmp/out" "$tmp/existing.yaml"
check render-needs-url 1 "postgres.url or postgres.existingSecret is needed" -- $R --set store=postgres
check render-notes 0 "uniapd tenant add" -- $R
if command -v yamllint >/dev/null 2>&1; then
	for f in sqlite pg existing; do
		check "yamllint-$f" 0 "" -- yamllint -s -d '{extends: default, rules: {document-start: disable}}' "$tmp/$f.yaml"
	done
fi
help=$("$UNIAPD" --help 2>&1)
UNIAPD_HELP=$help python3 - "$tmp" "$CHART" >"$tmp/checks" 2>&1 <<'PY'
import os, re, sys, yaml
tmp, chart = sys.argv[1], sys.argv[2]
passed = failed = 0
def check(name, cond, detail=''):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print('FAIL %s%s' % (name, ': ' + str(detail) if detail else ''))
help_text = os.environ['UNIAPD_HELP']
meta = yaml.safe_load(open(os.path.join(chart, 'Chart.yaml')))
check('Chart.yaml: apiVersion v2', meta.get('apiVersion') == 'v2')
check('Chart.yaml: name is the folder', meta.get('name') == os.path.basename(chart), meta.get('name'))
check('Chart.yaml: SemVer version', re.match(r'^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$', str(meta.get('version'))), meta.get('version'))
values = yaml.safe_load(open(os.path.join(chart, 'values.yaml')))

def load(name):
    return {d['kind']: d for d in yaml.safe_load_all(open(os.path.join(tmp, name + '.yaml'))) if d}

def common(shape, docs):
    dep = docs.get('Deployment') or {}
    pod = (dep.get('spec') or {}).get('template') or {}
    labels = (pod.get('metadata') or {}).get('labels') or {}
    sel = ((dep.get('spec') or {}).get('selector') or {}).get('matchLabels') or {}
    check('%s: the selector matches the pod labels' % shape, sel and all(labels.get(k) == v for k, v in sel.items()), sel)
    ctr = ((pod.get('spec') or {}).get('containers') or [{}])[0]
    args = [str(a) for a in ctr.get('args') or []]
    opts = [a for a in args if a.startswith('--')]
    for o in opts:
        check('%s: uniapd takes %s' % (shape, o), re.search(r'(^|\s)%s\b' % re.escape(o), help_text), o)
    img = ctr.get('image', '')
    check('%s: the image is repository:tag' % shape, img == '%s:%s' % (values['image']['repository'], values['image']['tag']), img)
    host = img.split('/')[0] if '/' in img else ''
    check('%s: the image names a registry host' % shape, host == 'localhost' or '.' in host or ':' in host, img)
    listen = args[args.index('--listen') + 1] if '--listen' in args else ''
    port = int(listen.rsplit(':', 1)[1]) if ':' in listen else None
    cports = {p.get('name'): p.get('containerPort') for p in ctr.get('ports') or []}
    check('%s: the container port is the --listen port' % shape, cports.get('http') == port, (cports, listen))
    for probe, path in (('startupProbe', '/healthz'), ('livenessProbe', '/healthz'), ('readinessProbe', '/readyz')):
        g = ((ctr.get(probe) or {}).get('httpGet')) or {}
        check('%s: %s GETs %s on http' % (shape, probe, path), g.get('path') == path and g.get('port') == 'http', g)
    res = ctr.get('resources') or {}
    check('%s: resources set' % shape, all((res.get(p) or {}).get(r) for p in ('requests', 'limits') for r in ('cpu', 'memory')), res)
    svc = docs.get('Service') or {}
    ssel = (svc.get('spec') or {}).get('selector') or {}
    check('%s: the Service selects the pods' % shape, ssel and all(labels.get(k) == v for k, v in ssel.items()), ssel)
    check('%s: the Service targets http' % shape, [p.get('targetPort') for p in (svc.get('spec') or {}).get('ports') or []] == ['http'])
    env = {e.get('name'): e for e in ctr.get('env') or []}
    return dep, pod, ctr, args, env, svc

docs = load('sqlite')
dep, pod, ctr, args, env, svc = common('sqlite', docs)
check('sqlite: one replica', dep['spec'].get('replicas') == 1)
check('sqlite: Recreate', (dep['spec'].get('strategy') or {}).get('type') == 'Recreate')
db = args[args.index('--db') + 1] if '--db' in args else None
check('sqlite: --db is absolute', isinstance(db, str) and db.startswith('/'), db)
check('sqlite: UNIAPD_DB is the --db file', (env.get('UNIAPD_DB') or {}).get('value') == db)
mounts = {m['mountPath']: m['name'] for m in ctr.get('volumeMounts') or []}
vols = {v['name']: v for v in pod['spec'].get('volumes') or []}
data = vols.get(mounts.get(os.path.dirname(db or '')), {})
pvc = docs.get('PersistentVolumeClaim') or {}
check('sqlite: the --db folder is the PVC', (data.get('persistentVolumeClaim') or {}).get('claimName') == pvc.get('metadata', {}).get('name'), data)
check('sqlite: no Secret, PDB or ServiceMonitor', not ({'Secret', 'PodDisruptionBudget', 'ServiceMonitor'} & set(docs)), sorted(docs))

docs = load('pg')
dep, pod, ctr, args, env, svc = common('postgres', docs)
check('postgres: replicas as set', dep['spec'].get('replicas') == 3, dep['spec'].get('replicas'))
st = dep['spec'].get('strategy') or {}
check('postgres: a rolling update that keeps every pod until its successor is ready',
      st.get('type') == 'RollingUpdate' and (st.get('rollingUpdate') or {}).get('maxUnavailable') == 0, st)
check('postgres: no --db (UNIAPD_DB from the Secret)', '--db' not in args)
ref = ((env.get('UNIAPD_DB') or {}).get('valueFrom') or {}).get('secretKeyRef') or {}
sec = docs.get('Secret') or {}
check('postgres: UNIAPD_DB from the chart\'s Secret, key url', ref.get('name') == sec.get('metadata', {}).get('name') and ref.get('key') == 'url', ref)
check('postgres: the Secret holds a postgres:// URL', str((sec.get('stringData') or {}).get('url', '')).startswith('postgres://'))
check('postgres: no PVC', 'PersistentVolumeClaim' not in docs)
labels = pod['metadata']['labels']
pdb = docs.get('PodDisruptionBudget') or {}
psel = ((pdb.get('spec') or {}).get('selector') or {}).get('matchLabels') or {}
check('postgres: the PDB selects the pods', psel and all(labels.get(k) == v for k, v in psel.items()), psel)
sm = docs.get('ServiceMonitor') or {}
msel = ((sm.get('spec') or {}).get('selector') or {}).get('matchLabels') or {}
slabels = svc['metadata'].get('labels') or {}
check('postgres: the ServiceMonitor selects the Service', msel and all(slabels.get(k) == v for k, v in msel.items()), msel)
check('postgres: the ServiceMonitor scrapes /metrics on http',
      [(e.get('port'), e.get('path')) for e in (sm.get('spec') or {}).get('endpoints') or []] == [('http', '/metrics')])
docs = load('existing')
dep, pod, ctr, args, env, svc = common('existing', docs)
ref = ((env.get('UNIAPD_DB') or {}).get('valueFrom') or {}).get('secretKeyRef') or {}
check('existing: UNIAPD_DB from the existing Secret', ref == {'name': 'uniap-db', 'key': 'url'}, ref)
check('existing: no Secret of the chart', 'Secret' not in docs)
print('helm-checks: %d passed, %d failed' % (passed, failed))
sys.exit(1 if failed else 0)
PY
# the checks' own counts join this script's (a crash counts as one failure)
grep '^FAIL' "$tmp/checks"
p=$(sed -n 's/^helm-checks: \([0-9]*\) passed, \([0-9]*\) failed$/\1/p' "$tmp/checks")
f=$(sed -n 's/^helm-checks: \([0-9]*\) passed, \([0-9]*\) failed$/\2/p' "$tmp/checks")
if [ -z "$p" ]; then
	echo "FAIL checks: $(tail -n 5 "$tmp/checks")"
	f=1 p=0
fi
pass=$((pass + p))
fail=$((fail + f))
summary helm
