"""uniap_client - a Python client of uniapd, the uniap planning service.

    from uniap_client import Client
    c = Client("http://127.0.0.1:8080")              # key="..." for a keyed uniapd
    plan = c.plan(cluster="dgx-a100", model="bert-huge", batch=8)
    print(plan["tpi_s"], c.export(c.last_job_id, "megatron"))

Needs only requests (Debian's python3-requests).  Every call is one or a few
HTTP requests of the documented API (GET /v1/openapi.json, docs/http.md,
docs/jobs.md); the JSON it returns is typed by uniap_client.types, generated
from that document.  Errors of the service (RFC 9457 problems) raise
UniapError with the status, the problem's type and its detail, which names the
field at fault.

Waiting on a job follows its Server-Sent Events (GET /v1/jobs/{id}/events)
and falls back to long-polls (GET /v1/jobs/{id}?wait=S) when a stream cannot
be had (a proxy that buffers, a 406, the service's stream limit); either way
no request lasts longer than about a minute and the whole wait is bounded by
the caller's timeout.

Thread safety: a Client holds a requests.Session; use one Client per thread.
"""
import json
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, Union, cast

import requests

from . import types
from .types import Allocation, EvaluateReport, Job, JobEvent, Plan, PlanResult

__all__ = ['Client', 'UniapError', 'types']
__version__ = '1'

FINAL = ('succeeded', 'failed', 'canceled')
Doc = Union[int, str, Dict[str, Any]]  # a stored id, a catalog name, or a document


class UniapError(Exception):
    """An answer the call cannot use: status (0 when the service could not be
    reached), the problem's type and detail (RFC 9457), and the problem itself."""

    def __init__(self, status: int, detail: str, problem: Optional[Dict[str, Any]] = None):
        self.status = status
        self.problem = problem or {}
        self.type = self.problem.get('type', '')
        self.detail = detail
        super().__init__('%s%s' % ('%d: ' % status if status else '', detail))


class Client:
    """One uniapd at base_url; key is a tenant's API key (None under --no-auth)."""

    def __init__(self, base_url: str = 'http://127.0.0.1:8080', key: Optional[str] = None,
                 timeout: float = 70.0, session: Optional[requests.Session] = None):
        self.base_url = base_url.rstrip('/')
        self.timeout = timeout  # per request; a long-poll asks for at most 60 s
        self.session = session or requests.Session()
        self.session.headers['Accept-Encoding'] = 'gzip'
        self.session.headers['User-Agent'] = 'uniap-client-python/' + __version__
        if key:
            self.session.headers['Authorization'] = 'Bearer ' + key
        self.last_job_id: Optional[int] = None  # the job of the last submit()/plan()/allocate()

    # ------------------------------------------------------------------ transport

    def _request(self, method: str, path: str, want: Tuple[int, ...], **kw: Any) -> requests.Response:
        kw.setdefault('timeout', self.timeout)
        try:
            r = self.session.request(method, self.base_url + path, **kw)
        except requests.RequestException as e:
            raise UniapError(0, '%s %s: %s (is uniapd running at %s?)' % (method, path, e, self.base_url)) from e
        if r.status_code not in want:
            raise _problem(r, method, path)
        return r

    def _json(self, method: str, path: str, want: Tuple[int, ...] = (200,), **kw: Any) -> Any:
        return self._request(method, path, want, **kw).json()

    # ------------------------------------------------------------------ reads

    def whoami(self) -> types.Whoami:
        return cast(types.Whoami, self._json('GET', '/v1/whoami'))

    def catalog(self) -> types.Catalog:
        """The built-in clusters and models (names, descriptions, sources)."""
        return cast(types.Catalog, self._json('GET', '/v1/catalog'))

    def job(self, job_id: int, wait_s: Optional[int] = None) -> Job:
        """The job; with wait_s (1..60) a long-poll that answers when it changes."""
        params = {'wait': str(wait_s)} if wait_s else None
        return cast(Job, self._json('GET', '/v1/jobs/%d' % job_id, params=params,
                                    timeout=self.timeout + (wait_s or 0)))

    # ------------------------------------------------------------------ jobs

    def submit(self, cluster: Doc, model: Doc, batch: int, idempotency_key: Optional[str] = None,
               **options: Any) -> Job:
        """Queues a plan job (POST /v1/plans) and returns it (202: queued).  options are
        the PlanRequest members: schedule, space, time_limit_s, deadline_s, recompute,
        zero, targets, ... (types.PlanRequest; the service names a wrong one)."""
        body: Dict[str, Any] = dict(options, cluster=cluster, model=model, batch=batch)
        headers = {'Idempotency-Key': idempotency_key} if idempotency_key else {}
        job = cast(Job, self._json('POST', '/v1/plans', (202,), json=body, headers=headers))
        self.last_job_id = job['id']
        return job

    def events(self, job_id: int, timeout: float = 3600.0) -> Iterator[Tuple[str, JobEvent]]:
        """The job's events as (event, data) until "done" (GET /v1/jobs/{id}/events),
        resuming with Last-Event-ID when a stream ends early; raises UniapError when
        no stream can be had (the caller may then long-poll: wait() does)."""
        end = time.monotonic() + timeout
        last: Optional[str] = None
        while time.monotonic() < end:
            headers = {'Accept': 'text/event-stream'}
            if last is not None:
                headers['Last-Event-ID'] = last
            r = self._request('GET', '/v1/jobs/%d/events' % job_id, (200, 204), headers=headers,
                              stream=True, timeout=(self.timeout, 60.0))
            if r.status_code == 204:  # resumed at the end: nothing more will come
                return
            with r:
                for ev_id, name, data in _sse(r):
                    if ev_id is not None:
                        last = ev_id
                    yield name, cast(JobEvent, data)
                    if name == 'done':
                        return
        raise UniapError(0, 'job %d: no end within %g s' % (job_id, timeout))

    def wait(self, job_id: int, timeout: float = 3600.0,
             progress: Optional[Callable[[JobEvent], None]] = None, stream: bool = True) -> Job:
        """Waits until the job has finished (succeeded, failed or canceled) and returns
        it.  Follows its events (progress gets each one's data), falling back to
        long-polls when the stream cannot be had; stream=False long-polls only."""
        end = time.monotonic() + timeout
        if stream:
            try:
                for _, data in self.events(job_id, timeout):
                    if progress:
                        progress(data)
                    if data.get('state') in FINAL:
                        break
            except UniapError as e:
                if e.status in (401, 403, 404):
                    raise  # not a transport matter: the long-poll would say the same
            except requests.RequestException:
                pass  # a stream cut mid-way: the long-poll takes over
        while True:
            left = end - time.monotonic()
            job = self.job(job_id, wait_s=max(1, min(30, int(left))) if left >= 1 else None)
            if job['state'] in FINAL:
                return job
            if progress:
                progress(cast(JobEvent, {'id': job['id'], 'state': job['state'],
                                         'progress': job['progress'], 'links': job['links']}))
            if time.monotonic() >= end:
                raise UniapError(0, 'job %d is still %s after %g s' % (job_id, job['state'], timeout))

    def result(self, job: Job) -> Any:
        """The result of a finished job; UniapError naming the job's error when it failed."""
        if job['state'] != 'succeeded':
            raise UniapError(409, 'job %d %s: %s' % (job['id'], job['state'], job.get('error', '')))
        if 'result' not in job:  # a list entry: read the whole job
            job = self.job(job['id'])
        return job['result']

    def plan(self, cluster: Doc, model: Doc, batch: int, timeout: float = 3600.0,
             progress: Optional[Callable[[JobEvent], None]] = None, **options: Any) -> Plan:
        """Submits a plan job, waits for it and returns its plan (result.plan: the first
        target's when options has targets).  UniapError when it failed or nothing fits
        (the detail says why and what would help)."""
        job = self.submit(cluster, model, batch, **options)
        res = cast(PlanResult, self.result(self.wait(job['id'], timeout, progress)))
        if not res.get('plan'):
            raise UniapError(422, 'job %d: no plan fits the memory (plan_result(%d)["candidates"] says why per '
                                  'candidate; recompute=True, zero=True, more devices or a smaller batch may fit)'
                             % (job['id'], job['id']))
        return cast(Plan, res['plan'])

    def plan_result(self, job_id: int) -> PlanResult:
        """The whole result of a finished plan job: every candidate, each target's plan."""
        return cast(PlanResult, self.result(self.job(job_id)))

    def export(self, job_id: int, fmt: str = 'json', target: Optional[str] = None,
               wait_s: Optional[int] = None) -> Union[str, Dict[str, Any]]:
        """The job's plan in format fmt (json, text, megatron, deepspeed, galvatron,
        chrome-trace): a dict for JSON formats, else text.  target picks one of a
        multi-target job's plans; wait_s waits up to that long for an unfinished job."""
        params = {'format': fmt}
        if target:
            params['target'] = target
        if wait_s:
            params['wait'] = str(wait_s)
        r = self._request('GET', '/v1/jobs/%d/plan' % job_id, (200,), params=params,
                          timeout=self.timeout + (wait_s or 0))
        if r.headers.get('Content-Type', '').startswith('application/json'):
            return cast(Dict[str, Any], r.json())
        return r.text

    def evaluate(self, cluster: Doc, model: Doc, batch: int, plan: Plan) -> EvaluateReport:
        """Prices a given plan at once (POST /v1/evaluate): TPI, per-stage time and memory."""
        body = {'cluster': cluster, 'model': model, 'batch': batch, 'plan': plan}
        return cast(EvaluateReport, self._json('POST', '/v1/evaluate', json=body))

    def allocate(self, cluster: Union[Doc, List[Doc]], jobs: types.AllocationJobs, timeout: float = 3600.0,
                 **options: Any) -> Allocation:
        """Shares a cluster (or, given a list, several pools) among training jobs
        (POST /v1/allocations, docs/allocation.md), waits, and returns the allocation."""
        body: Dict[str, Any] = dict(options, jobs=jobs)
        body['clusters' if isinstance(cluster, list) else 'cluster'] = cluster
        job = cast(Job, self._json('POST', '/v1/allocations', (202,), json=body))
        self.last_job_id = job['id']
        return cast(Allocation, self.result(self.wait(job['id'], timeout)))

    def cancel(self, job_id: int) -> Job:
        """Cancels a queued or running job (POST /v1/jobs/{id}/cancel)."""
        return cast(Job, self._json('POST', '/v1/jobs/%d/cancel' % job_id, (200, 202)))

    def delete(self, job_id: int) -> None:
        """Deletes a finished job and its result."""
        self._request('DELETE', '/v1/jobs/%d' % job_id, (204,))

    # ------------------------------------------------------------------ documents

    def upload(self, kind: str, document: Dict[str, Any]) -> types.DocumentMeta:
        """Stores a cluster or model document (kind "cluster" or "model"); returns its meta (id)."""
        if kind not in ('cluster', 'model'):
            raise ValueError('kind: must be cluster or model')
        return cast(types.DocumentMeta, self._json('POST', '/v1/%ss' % kind, (201,), json=document))


def _problem(r: requests.Response, method: str, path: str) -> UniapError:
    try:
        p = r.json()
    except ValueError:
        p = None
    if isinstance(p, dict) and 'detail' in p:
        return UniapError(r.status_code, str(p['detail']), p)
    return UniapError(r.status_code, '%s %s answered %d: %s' % (method, path, r.status_code, r.text[:300]))


def _sse(r: requests.Response) -> Iterator[Tuple[Optional[str], str, Dict[str, Any]]]:
    """(id, event, data) of each event of a text/event-stream answer (comments skipped)."""
    ev_id: Optional[str] = None
    name = 'message'
    data: List[str] = []
    for raw in r.iter_lines(decode_unicode=True):
        line = raw if raw is not None else ''
        if line == '':
            if data:
                yield ev_id, name, json.loads('\n'.join(data))
            name, data = 'message', []
            continue
        if line.startswith(':'):
            continue
        field, _, value = line.partition(':')
        value = value[1:] if value.startswith(' ') else value
        if field == 'id':
            ev_id = value
        elif field == 'event':
            name = value
        elif field == 'data':
            data.append(value)
