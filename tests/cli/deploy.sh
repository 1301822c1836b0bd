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
# tenant.  The replicas on PostgreSQL: deploy/compose-replicas.yaml (a
# PostgreSQL 13+ service with a pg_isready health check and its data on a
# named volume, at least two uniapd services whose database - UNIAPD_DB or
# --db - is a postgres:// URL naming that service, its port, user and
# database, depends_on it healthy, probed on /readyz, on distinct published
# ports) and deploy/k8s-replicas/ (the kustomization lists exactly the
# folder's manifests and no StatefulSet, replicas >= 2 with a rolling update,
# UNIAPD_DB from a secretKeyRef to a Secret of the kustomization holding a
# postgres:// URL and no --db in args, no PersistentVolumeClaim, readiness
# /readyz and liveness /healthz, --workers plus --spare-jobs within the CPU
# limit, the Service and the PodDisruptionBudget select the pods, and
# trial/postgres.yaml says it is for trials, is not selected by uniapd's
# Service and gives a URL that names its Service).  Skipped, with a line
# saying why, without python3 or PyYAML.
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
compose_restart = svc.get('restart')
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
# a name without a registry host is Docker Hub's library/ namespace: someone else's image
def own_registry(image):
    host = (image or '').split('/')[0] if '/' in (image or '') else ''
    return host == 'localhost' or '.' in host or ':' in host
check('compose: the image names a registry host, not Docker Hub\'s library', own_registry(compose_image), compose_image)
sp = ctr.get('startupProbe') or {}
check('k8s: the startup probe allows a minute or more', sp.get('periodSeconds', 10) * sp.get('failureThreshold', 3) >= 60, sp)
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
for probe, want in (('startupProbe', '/healthz'), ('livenessProbe', '/healthz'), ('readinessProbe', '/readyz')):
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

# ---- replicas on PostgreSQL: shared helpers
PG_URL = re.compile(r'postgres(?:ql)?://([^:@/]+)(?::([^@/]*))?@([^:/?]+)(?::(\d+))?/([^?/]+)(?:\?.*)?')
def pg_image_ok(image):
    """the official image (or a mirror of it) at PostgreSQL 13 or later"""
    m = re.fullmatch(r'(?:[\w.:-]+/)*postgres:(\d+)[\w.-]*', str(image))
    return bool(m) and int(m.group(1)) >= 13

def env_dict(env):
    if isinstance(env, list):
        env = dict(str(e).split('=', 1) for e in env)
    return env or {}

def url_matches_postgres(where, url, host, port, pgenv):
    """the URL names the PostgreSQL service and its POSTGRES_* user, database and password"""
    m = PG_URL.fullmatch(str(url))
    check(where + ': a postgres:// URL', m, url)
    if not m:
        return
    user = pgenv.get('POSTGRES_USER', 'postgres')
    check(where + ': the URL names the postgres host', m.group(3) == host, (m.group(3), host))
    check(where + ': the URL names the postgres port', int(m.group(4) or 5432) == port, (m.group(4), port))
    check(where + ': the URL\'s user is POSTGRES_USER', m.group(1) == user, (m.group(1), user))
    check(where + ': the URL\'s database is POSTGRES_DB', m.group(5) == pgenv.get('POSTGRES_DB', user), m.group(5))
    if 'POSTGRES_PASSWORD' in pgenv:
        check(where + ': the URL\'s password is POSTGRES_PASSWORD', m.group(2) == pgenv['POSTGRES_PASSWORD'], m.group(2))

SPARE = re.search(r'^\s*--spare-jobs N.*?\(default (\d+)\)', help_text, re.M | re.S)
check('help: --spare-jobs has a default', SPARE)
SPARE = int(SPARE.group(1)) if SPARE else 0

def k8s_probes(where, ctr, port, probes):
    cports = {p.get('name'): p.get('containerPort') for p in ctr.get('ports') or []}
    for probe, want in probes:
        g = ((ctr.get(probe) or {}).get('httpGet')) or {}
        check('%s: %s GETs %s' % (where, probe, want), g.get('path') == want, g)
        p = g.get('port')
        check('%s: %s on the --listen port' % (where, probe), (cports.get(p) if isinstance(p, str) else p) == port, p)
    return cports

# ---- compose: replicas on PostgreSQL
path = 'deploy/compose-replicas.yaml'
c = yaml.safe_load(open(path))
services = c.get('services') or {}
pg = services.get('postgres') or {}
check('compose-replicas: service postgres', pg)
check('compose-replicas: postgres image is PostgreSQL 13 or later', pg_image_ok(pg.get('image')), pg.get('image'))
pghc = pg.get('healthcheck') or {}
check('compose-replicas: postgres health check runs pg_isready', 'pg_isready' in ' '.join(map(str, pghc.get('test') or [])), pghc)
check('compose-replicas: postgres health check interval and retries', pghc.get('interval') and pghc.get('retries'), pghc)
pgenv = env_dict(pg.get('environment'))
check('compose-replicas: postgres password from a variable, not the file', '${' in str(pgenv.get('POSTGRES_PASSWORD', '')), pgenv.get('POSTGRES_PASSWORD'))
pgmounts = [str(v).split(':') for v in pg.get('volumes') or []]
pgvol = [m[0] for m in pgmounts if len(m) >= 2 and m[1] == pgenv.get('PGDATA', '/var/lib/postgresql/data')]
check('compose-replicas: postgres data on a declared named volume', pgvol and pgvol[0] in (c.get('volumes') or {}), pgmounts)
replicas = sorted(n for n, s in services.items() if (s or {}).get('image') == compose_image)
check('compose-replicas: at least 2 uniapd services (image %s)' % compose_image, len(replicas) >= 2, replicas)
hostports = []
for name in replicas:
    svc, where = services[name], 'compose-replicas: ' + name
    build = svc.get('build') or {}
    ctx = os.path.normpath(os.path.join('deploy', build.get('context', '.')))
    check(where + ': build context holds the Dockerfile', os.path.isfile(os.path.join(ctx, build.get('dockerfile', 'Dockerfile'))), ctx)
    opts = options(svc.get('command') or [], where + ': command')
    port = listen_port(opts, where)
    env = env_dict(svc.get('environment'))
    db = opts.get('--db', env.get('UNIAPD_DB'))
    check(where + ': UNIAPD_DB is the database it runs on', env.get('UNIAPD_DB') == db, env.get('UNIAPD_DB'))
    url_matches_postgres(where, db, 'postgres', 5432, pgenv)
    dep = svc.get('depends_on')
    check(where + ': depends_on postgres service_healthy', isinstance(dep, dict) and (dep.get('postgres') or {}).get('condition') == 'service_healthy', dep)
    hc = svc.get('healthcheck') or {}
    test = ' '.join(map(str, hc.get('test') or []))
    check(where + ': health check GETs /readyz on the --listen port', 'http://127.0.0.1:%s/readyz' % port in test, test)
    check(where + ': health check interval and retries', hc.get('interval') and hc.get('retries'), hc)
    pub = [str(p).rsplit(':', 2)[-2:] for p in svc.get('ports') or []]
    check(where + ': the --listen port is published', any(len(p) == 2 and p[1] == str(port) for p in pub), svc.get('ports'))
    hostports += [p[0] for p in pub if len(p) == 2]
    grace = seconds(svc.get('stop_grace_period'))
    check(where + ': stop_grace_period outlasts uniapd\'s stop', grace is not None and grace > STOP_S, svc.get('stop_grace_period'))
    check(where + ': stop_signal SIGTERM', svc.get('stop_signal', 'SIGTERM') == 'SIGTERM')
    check(where + ': restart policy as deploy/compose.yaml\'s', svc.get('restart') == compose_restart, svc.get('restart'))
check('compose-replicas: distinct published ports', len(hostports) == len(set(hostports)) and len(hostports) >= len(replicas), hostports)
if replicas:
    first_tenant_hint(path, 'exec %s uniapd tenant add' % replicas[0])

# ---- kubernetes: replicas on PostgreSQL
rdir = 'deploy/k8s-replicas'
rkust = yaml.safe_load(open(rdir + '/kustomization.yaml')) or {}
rlisted = [os.path.normpath(os.path.join(rdir, r)) for r in rkust.get('resources') or []]
check('k8s-replicas: every file the kustomization lists exists', rlisted and all(os.path.isfile(f) for f in rlisted), rlisted)
rfiles = sorted(f for f in glob.glob(rdir + '/*.yaml') if not f.endswith('/kustomization.yaml'))
check('k8s-replicas: the kustomization lists every manifest', sorted(rlisted) == rfiles, (sorted(rlisted), rfiles))
rdocs = {}
for f in rlisted:
    if os.path.isfile(f):
        for d in yaml.safe_load_all(open(f)):
            if d:
                rdocs.setdefault(d.get('kind'), []).append((f, d))
for kind in ('Deployment', 'Service', 'PodDisruptionBudget'):
    check('k8s-replicas: one ' + kind, len(rdocs.get(kind, [])) == 1, [f for f, _ in rdocs.get(kind, [])])
check('k8s-replicas: no PostgreSQL in the kustomization (managed or operator-run)', not rdocs.get('StatefulSet'), [f for f, _ in rdocs.get('StatefulSet', [])])
dpath, dep = rdocs['Deployment'][0] if rdocs.get('Deployment') else ('', {})
spec = dep.get('spec') or {}
check('k8s-replicas: replicas >= 2', isinstance(spec.get('replicas'), int) and spec['replicas'] >= 2, spec.get('replicas'))
check('k8s-replicas: a rolling update, not Recreate', (spec.get('strategy') or {}).get('type', 'RollingUpdate') == 'RollingUpdate', spec.get('strategy'))
tmpl = spec.get('template') or {}
rlabels = (tmpl.get('metadata') or {}).get('labels') or {}
def selects(sel, labels):
    return bool(sel) and all(labels.get(k) == v for k, v in sel.items())
rsel = ((spec.get('selector') or {}).get('matchLabels')) or {}
check('k8s-replicas: the selector matches the pod labels', selects(rsel, rlabels), rsel)
pod = tmpl.get('spec') or {}
ctrs = pod.get('containers') or []
check('k8s-replicas: one container', len(ctrs) == 1)
ctr = ctrs[0] if ctrs else {}
check('k8s-replicas: the image is the one compose builds', ctr.get('image') == compose_image, ctr.get('image'))
check('k8s-replicas: no command override (the image runs uniapd)', 'command' not in ctr)
kopts = options(ctr.get('args') or [], 'k8s-replicas: args')
kport = listen_port(kopts, 'k8s-replicas')
check('k8s-replicas: no --db in args (the URL comes from UNIAPD_DB)', '--db' not in kopts, kopts.get('--db'))
kenv = {e.get('name'): e for e in ctr.get('env') or []}
ref = (((kenv.get('UNIAPD_DB') or {}).get('valueFrom') or {}).get('secretKeyRef')) or {}
check('k8s-replicas: UNIAPD_DB from a secretKeyRef', ref.get('name') and ref.get('key'), kenv.get('UNIAPD_DB'))
secrets = {(d.get('metadata') or {}).get('name'): d for _, d in rdocs.get('Secret', [])}
sec = secrets.get(ref.get('name')) or {}
check('k8s-replicas: that Secret is in the kustomization', sec, (ref.get('name'), sorted(secrets)))
sval = (sec.get('stringData') or {}).get(ref.get('key'))
check('k8s-replicas: the Secret has that key', sval is not None or ref.get('key') in (sec.get('data') or {}), ref.get('key'))
if sval is not None:
    check('k8s-replicas: the Secret\'s example is a postgres:// URL', PG_URL.fullmatch(str(sval)), sval)
kports = k8s_probes('k8s-replicas', ctr, kport, (('startupProbe', '/healthz'), ('livenessProbe', '/healthz'), ('readinessProbe', '/readyz'))
              + ((('startupProbe', '/healthz'),) if 'startupProbe' in ctr else ()))
check('k8s-replicas: the container port is the --listen port', kport in kports.values(), kports)
res = ctr.get('resources') or {}
try:
    check('k8s-replicas: cpu request <= limit', cpu(res['requests']['cpu']) <= cpu(res['limits']['cpu']))
    check('k8s-replicas: memory request <= limit', mem(res['requests']['memory']) <= mem(res['limits']['memory']))
    solvers = int(kopts.get('--workers', 0)) + int(kopts.get('--spare-jobs', SPARE))
    check('k8s-replicas: --workers + --spare-jobs within the cpu limit', 0 < solvers <= max(1, int(cpu(res['limits']['cpu']))), solvers)
except (KeyError, TypeError, ValueError) as e:
    check('k8s-replicas: resources parse', False, e)
psc = pod.get('securityContext') or {}
check('k8s-replicas: runAsNonRoot', psc.get('runAsNonRoot') is True, psc)
check('k8s-replicas: runAsUser is the Dockerfile uid', psc.get('runAsUser') == uid, (psc.get('runAsUser'), uid))
csc = ctr.get('securityContext') or {}
check('k8s-replicas: no privilege escalation', csc.get('allowPrivilegeEscalation') is False, csc)
check('k8s-replicas: grace period outlasts uniapd\'s stop', (pod.get('terminationGracePeriodSeconds') or 30) > STOP_S, pod.get('terminationGracePeriodSeconds'))
vols = {v.get('name'): v for v in pod.get('volumes') or []}
vmounts = ctr.get('volumeMounts') or []
check('k8s-replicas: every mount names a volume', all(m.get('name') in vols for m in vmounts), [m.get('name') for m in vmounts])
check('k8s-replicas: no PersistentVolumeClaim (the replicas share only the database)', not any('persistentVolumeClaim' in v for v in vols.values()), sorted(vols))
s = rdocs['Service'][0][1] if rdocs.get('Service') else {}
sspec = s.get('spec') or {}
rssel = sspec.get('selector') or {}
check('k8s-replicas: the Service selects the pods', selects(rssel, rlabels), rssel)
sports = sspec.get('ports') or []
check('k8s-replicas: the Service port reaches the --listen port', sports and all((kports.get(t) if isinstance(t, str) else t) == kport for t in (p.get('targetPort', p.get('port')) for p in sports)), sports)
pdb = rdocs['PodDisruptionBudget'][0][1] if rdocs.get('PodDisruptionBudget') else {}
pspec = pdb.get('spec') or {}
check('k8s-replicas: the PodDisruptionBudget selects the pods', selects((pspec.get('selector') or {}).get('matchLabels'), rlabels), pspec.get('selector'))
check('k8s-replicas: the PodDisruptionBudget keeps 1 or more, fewer than replicas', isinstance(pspec.get('minAvailable'), int) and 1 <= pspec['minAvailable'] < (spec.get('replicas') or 0), pspec.get('minAvailable'))
first_tenant_hint(dpath, 'kubectl exec deploy/%s -- uniapd tenant add' % (dep.get('metadata') or {}).get('name'))

# ---- kubernetes: the trial PostgreSQL (not in the kustomization)
tpath = rdir + '/trial/postgres.yaml'
ttext = open(tpath).read()
tdocs = {}
for d in yaml.safe_load_all(ttext):
    if d:
        tdocs.setdefault(d.get('kind'), []).append(d)
check('k8s-replicas trial: says it is for trials only', 'for trials only' in ttext.lower())
ss = (tdocs.get('StatefulSet') or [{}])[0]
ssspec = ss.get('spec') or {}
check('k8s-replicas trial: one StatefulSet, one replica', len(tdocs.get('StatefulSet', [])) == 1 and ssspec.get('replicas') == 1, ssspec.get('replicas'))
tsvcs = {(d.get('metadata') or {}).get('name'): d for d in tdocs.get('Service', [])}
tsvc = tsvcs.get(ssspec.get('serviceName')) or {}
check('k8s-replicas trial: serviceName is its Service', tsvc, (ssspec.get('serviceName'), sorted(tsvcs)))
tlabels = ((ssspec.get('template') or {}).get('metadata') or {}).get('labels') or {}
check('k8s-replicas trial: the selector matches the pod labels', selects((ssspec.get('selector') or {}).get('matchLabels'), tlabels), tlabels)
check('k8s-replicas trial: the Service selects the pod', selects((tsvc.get('spec') or {}).get('selector'), tlabels), (tsvc.get('spec') or {}).get('selector'))
check('k8s-replicas trial: uniapd\'s Service does not select it', not selects(rssel, tlabels), tlabels)
tctr = (((ssspec.get('template') or {}).get('spec') or {}).get('containers') or [{}])[0]
check('k8s-replicas trial: PostgreSQL 13 or later', pg_image_ok(tctr.get('image')), tctr.get('image'))
check('k8s-replicas trial: readiness runs pg_isready', 'pg_isready' in ' '.join(map(str, (((tctr.get('readinessProbe') or {}).get('exec') or {}).get('command')) or [])))
tenv = {e.get('name'): e for e in tctr.get('env') or []}
check('k8s-replicas trial: the password from a Secret', ((tenv.get('POSTGRES_PASSWORD') or {}).get('valueFrom') or {}).get('secretKeyRef'), tenv.get('POSTGRES_PASSWORD'))
claims = [(t.get('metadata') or {}).get('name') for t in ssspec.get('volumeClaimTemplates') or []]
pgdata = (tenv.get('PGDATA') or {}).get('value', '/var/lib/postgresql/data')
check('k8s-replicas trial: PGDATA on a claim', any(m.get('name') in claims and pgdata.startswith(m.get('mountPath', '') + '/') for m in tctr.get('volumeMounts') or []), (pgdata, claims))
tport = next((p.get('port') for p in (tsvc.get('spec') or {}).get('ports') or []), None)
turl = re.search(r'postgres://\S+', ttext)
# the password is a Secret's: only the host, port, user and database are compared
tvalues = {k: (e or {}).get('value') for k, e in tenv.items() if (e or {}).get('value') is not None}
url_matches_postgres('k8s-replicas trial: the URL it gives', turl.group(0) if turl else None, (tsvc.get('metadata') or {}).get('name'), tport, tvalues)

print('deploy: %d passed, %d failed' % (passed, failed))
sys.exit(1 if failed else 0)
PY
