#!/bin/sh
# tests/cli/deploy.sh - deploy/compose.yaml and the Kubernetes manifests of
# deploy/k8s/ parsed (python3 with PyYAML, Debian's python3-yaml) and checked
# for the fields that matter: every uniapd option they pass exists (uniapd
# --help), --listen's port is the one published, probed and served, the
# probes' paths, the volume mounted at the --db folder is the named volume or
# the PersistentVolumeClaim, UNIAPD_DB is the --db file, the image and its
# non-root uid match the Dockerfile, resources are set, one replica with the
# Recreate strategy, labels and selectors agree, the stop grace outlasts
# uniapd's own (10 s + 30 s), and each file tells how to add the first
# tenant.  Skipped, with a line saying why, without python3 or PyYAML.
# Prints "deploy: N passed, N failed".
set -u
UNIAPD=${UNIAPD:-build/uniapd}
if ! command -v python3 >/dev/null 2>&1 || ! python3 -c 'import yaml' >/dev/null 2>&1; then
	echo "deploy: skipped: python3 with PyYAML is not installed (Debian package python3-yaml)"
	echo "deploy: 0 passed, 0 failed, 1 skipped"
	exit 0
fi
help=$("$UNIAPD" --help 2>&1) || { echo "FAIL help: $UNIAPD --help failed"; echo "deploy: 0 passed, 1 failed"; exit 1; }
UNIAPD_HELP=$help python3 - <<'PY'
import glob, os, re, sys
import yaml

passed = failed = 0
def check(name, cond, detail=''):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print('FAIL %s%s' % (name, ': ' + str(detail) if detail else ''))

help_text = os.environ['UNIAPD_HELP']
dockerfile = open('Dockerfile').read()
uid = re.search(r'--uid (\d+)', dockerfile)
uid = int(uid.group(1)) if uid else None
check('dockerfile: uid', uid is not None)
STOP_S = 10 + 30  # uniapd: requests in flight, then --grace for running jobs

def options(args, where):
    """--name VALUE pairs of a uniapd command line; every name must be in uniapd --help."""
    opts, i = {}, 0
    while i < len(args):
        a = str(args[i])
        check(where + ': ' + a + ' is an option', a.startswith('--') and re.search(r'\s' + re.escape(a) + r'\b', help_text), args)
        if i + 1 < len(args) and not str(args[i + 1]).startswith('--'):
            opts[a] = str(args[i + 1]); i += 2
        else:
            opts[a] = True; i += 1
    return opts

def listen_port(opts, where):
    m = re.fullmatch(r'(.+):(\d+)', str(opts.get('--listen', '')))
    check(where + ': --listen HOST:PORT', m, opts.get('--listen'))
    check(where + ': --listen on every interface', m and m.group(1) in ('0.0.0.0', '[::]'), opts.get('--listen'))
    return int(m.group(2)) if m else None

def seconds(v):
    m = re.fullmatch(r'(?:(\d+)m)?(?:(\d+)s)?', str(v))
    return int(m.group(1) or 0) * 60 + int(m.group(2) or 0) if m and v else None

def first_tenant_hint(path, command):
    check(path + ': tells how to add the first tenant', command in open(path).read(), command)

# ---- compose
path = 'deploy/compose.yaml'
c = yaml.safe_load(open(path))
svc = (c.get('services') or {}).get('uniapd') or {}
check('compose: service uniapd', svc)
build = svc.get('build') or {}
ctx = os.path.normpath(os.path.join('deploy', build.get('context', '.')))
check('compose: build context holds the Dockerfile', os.path.isfile(os.path.join(ctx, build.get('dockerfile', 'Dockerfile'))), ctx)
opts = options(svc.get('command') or [], 'compose: command')
port = listen_port(opts, 'compose')
db = opts.get('--db')
check('compose: --db is absolute', isinstance(db, str) and db.startswith('/'), db)
env = svc.get('environment') or {}
if isinstance(env, list):
    env = dict(e.split('=', 1) for e in env)
check('compose: UNIAPD_DB is the --db file', env.get('UNIAPD_DB') == db, env.get('UNIAPD_DB'))
published = [str(p).rsplit(':', 1)[-1] for p in svc.get('ports') or []]
check('compose: the --listen port is published', str(port) in published, svc.get('ports'))
mounts = [str(v).split(':') for v in svc.get('volumes') or []]
dbdir = os.path.dirname(db) if isinstance(db, str) else None
vol = [m[0] for m in mounts if len(m) >= 2 and m[1] == dbdir]
check('compose: a volume is mounted at the --db folder', vol, mounts)
check('compose: that volume is a declared named volume', vol and vol[0] in (c.get('volumes') or {}), vol)
hc = svc.get('healthcheck') or {}
test = ' '.join(hc.get('test') or [])
check('compose: health check GETs /healthz on the --listen port', 'http://127.0.0.1:%s/healthz' % port in test, test)
check('compose: health check interval and retries', hc.get('interval') and hc.get('retries'), hc)
grace = seconds(svc.get('stop_grace_period'))
check('compose: stop_grace_period outlasts uniapd\'s stop', grace is not None and grace > STOP_S, svc.get('stop_grace_period'))
check('compose: stop_signal SIGTERM', svc.get('stop_signal', 'SIGTERM') == 'SIGTERM')
compose_image = svc.get('image')
first_tenant_hint(path, 'exec uniapd uniapd tenant add')

# ---- kubernetes
docs, files = {}, sorted(glob.glob('deploy/k8s/*.yaml'))
for f in files:
    for d in yaml.safe_load_all(open(f)):
        if d:
            docs.setdefault(d.get('kind'), []).append((f, d))
for kind in ('Deployment', 'Service', 'PersistentVolumeClaim', 'Kustomization'):
    check('k8s: one ' + kind, len(docs.get(kind, [])) == 1, [f for f, _ in docs.get(kind, [])])
kust = docs['Kustomization'][0][1] if docs.get('Kustomization') else {}
listed = sorted(os.path.join('deploy/k8s', r) for r in kust.get('resources') or [])
check('k8s: kustomization lists every manifest', listed == sorted(f for f in files if not f.endswith('kustomization.yaml')), listed)
dpath, dep = docs['Deployment'][0] if docs.get('Deployment') else ('', {})
spec = dep.get('spec') or {}
check('k8s: replicas 1 (one SQLite writer)', spec.get('replicas') == 1, spec.get('replicas'))
check('k8s: strategy Recreate', (spec.get('strategy') or {}).get('type') == 'Recreate', spec.get('strategy'))
tmpl = spec.get('template') or {}
labels = (tmpl.get('metadata') or {}).get('labels') or {}
sel = ((spec.get('selector') or {}).get('matchLabels')) or {}
check('k8s: the selector matches the pod labels', sel and all(labels.get(k) == v for k, v in sel.items()), sel)
pod = tmpl.get('spec') or {}
ctrs = pod.get('containers') or []
check('k8s: one container', len(ctrs) == 1)
ctr = ctrs[0] if ctrs else {}
check('k8s: the image is the one compose builds', ctr.get('image') == compose_image, ctr.get('image'))
check('k8s: no command override (the image runs uniapd)', 'command' not in ctr)
kopts = options(ctr.get('args') or [], 'k8s: args')
kport = listen_port(kopts, 'k8s')
kdb = kopts.get('--db')
check('k8s: --db is absolute', isinstance(kdb, str) and kdb.startswith('/'), kdb)
kenv = {e.get('name'): e.get('value') for e in ctr.get('env') or []}
check('k8s: UNIAPD_DB is the --db file', kenv.get('UNIAPD_DB') == kdb, kenv.get('UNIAPD_DB'))
ports = {p.get('name'): p.get('containerPort') for p in ctr.get('ports') or []}
check('k8s: the container port is the --listen port', kport in ports.values(), ports)
def resolve(p):
    return ports.get(p) if isinstance(p, str) else p
for probe, want in (('livenessProbe', '/healthz'), ('readinessProbe', '/readyz')):
    g = ((ctr.get(probe) or {}).get('httpGet')) or {}
    check('k8s: %s GETs %s' % (probe, want), g.get('path') == want, g)
    check('k8s: %s on the --listen port' % probe, resolve(g.get('port')) == kport, g.get('port'))
res = ctr.get('resources') or {}
for part in ('requests', 'limits'):
    for r in ('cpu', 'memory'):
        check('k8s: resources.%s.%s set' % (part, r), (res.get(part) or {}).get(r) is not None, res)
def cpu(v):
    v = str(v)
    return float(v[:-1]) / 1000 if v.endswith('m') else float(v)
def mem(v):
    units = {'Ki': 2**10, 'Mi': 2**20, 'Gi': 2**30, 'Ti': 2**40}
    m = re.fullmatch(r'(\d+)(Ki|Mi|Gi|Ti)?', str(v))
    return int(m.group(1)) * units.get(m.group(2), 1) if m else None
try:
    check('k8s: cpu request <= limit', cpu(res['requests']['cpu']) <= cpu(res['limits']['cpu']))
    check('k8s: memory request <= limit', mem(res['requests']['memory']) <= mem(res['limits']['memory']))
    check('k8s: --workers within the cpu limit', int(kopts.get('--workers', 0)) <= max(1, int(cpu(res['limits']['cpu']))), kopts.get('--workers'))
except (KeyError, TypeError, ValueError) as e:
    check('k8s: resources parse', False, e)
psc = pod.get('securityContext') or {}
check('k8s: runAsNonRoot', psc.get('runAsNonRoot') is True, psc)
check('k8s: runAsUser is the Dockerfile uid', psc.get('runAsUser') == uid, (psc.get('runAsUser'), uid))
check('k8s: fsGroup lets that user write the volume', psc.get('fsGroup') in (uid, psc.get('runAsGroup')), psc)
csc = ctr.get('securityContext') or {}
check('k8s: no privilege escalation', csc.get('allowPrivilegeEscalation') is False, csc)
check('k8s: grace period outlasts uniapd\'s stop', (pod.get('terminationGracePeriodSeconds') or 30) > STOP_S, pod.get('terminationGracePeriodSeconds'))
vols = {v.get('name'): v for v in pod.get('volumes') or []}
vmounts = ctr.get('volumeMounts') or []
check('k8s: every mount names a volume', all(m.get('name') in vols for m in vmounts), [m.get('name') for m in vmounts])
check('k8s: every volume is mounted', set(vols) == {m.get('name') for m in vmounts}, sorted(vols))
kdbdir = os.path.dirname(kdb) if isinstance(kdb, str) else None
dbm = [m for m in vmounts if m.get('mountPath') == kdbdir]
check('k8s: a volume is mounted at the --db folder', len(dbm) == 1, [m.get('mountPath') for m in vmounts])
claim = ((vols.get(dbm[0].get('name')) or {}).get('persistentVolumeClaim') or {}).get('claimName') if dbm else None
pvc = docs['PersistentVolumeClaim'][0][1] if docs.get('PersistentVolumeClaim') else {}
check('k8s: that volume is the PersistentVolumeClaim', claim and claim == (pvc.get('metadata') or {}).get('name'), claim)
check('k8s: the claim asks for storage', (((pvc.get('spec') or {}).get('resources') or {}).get('requests') or {}).get('storage'))
check('k8s: the claim is ReadWriteOnce', (pvc.get('spec') or {}).get('accessModes') == ['ReadWriteOnce'], (pvc.get('spec') or {}).get('accessModes'))
s = docs['Service'][0][1] if docs.get('Service') else {}
sspec = s.get('spec') or {}
ssel = sspec.get('selector') or {}
check('k8s: the Service selects the pod', ssel and all(labels.get(k) == v for k, v in ssel.items()), ssel)
sports = sspec.get('ports') or []
check('k8s: the Service port reaches the --listen port', sports and all(resolve(p.get('targetPort', p.get('port'))) == kport for p in sports), sports)
first_tenant_hint(dpath, 'kubectl exec deploy/%s -- uniapd tenant add' % (dep.get('metadata') or {}).get('name'))

print('deploy: %d passed, %d failed' % (passed, failed))
sys.exit(1 if failed else 0)
PY
