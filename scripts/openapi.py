#!/usr/bin/env python3
# scripts/openapi.py - writes schema/openapi.json, the OpenAPI 3.1 document of
# uniapd, from the route list below and schema/{cluster,model,plan}.schema.json
# (their $defs hoisted into components/schemas with a Cluster/Model/Plan
# prefix, "#/$defs/x" rewritten to "#/components/schemas/<Prefix>X").  Run
# from the repository root after changing a route or a schema:
#     python3 scripts/openapi.py && sh tests/cli/openapi.sh
# Not run by make or CI (no python there); the output is committed, and the
# Makefile compiles it into uniapd (GET /v1/openapi.json never reads the disk).
#
# Written for client generators (tests/cli/openapi-ts.sh runs openapi-typescript
# on the served document and type-checks a client with tsc):
# - a member the client may leave out is never in "required", and its default
#   is told in its description, not with the "default" keyword: generators
#   that cannot tell a request schema from a response one (openapi-typescript's
#   default) turn a member with a default into a required one; parameters keep
#   "default" (no generator makes those required);
# - no bare {"type": "object"}: a map says what its values are
#   (additionalProperties), a free-form object says additionalProperties true.
import json, re
S = {}
def load(fn, prefix):
    d = json.load(open('schema/' + fn))
    defs = d.pop('$defs', {})
    d.pop('$schema', None); d.pop('$id', None)
    txt = json.dumps(d)
    def fix(o):
        if isinstance(o, dict):
            return {k: ('#/components/schemas/' + prefix + o[k].split('/')[-1][0].upper() + o[k].split('/')[-1][1:]
                        if k == '$ref' and isinstance(o[k], str) and o[k].startswith('#/$defs/') else fix(v))
                    for k, v in o.items()}
        if isinstance(o, list):
            return [fix(x) for x in o]
        return o
    S[prefix] = fix(d)
    for k, v in defs.items():
        S[prefix + k[0].upper() + k[1:]] = fix(v)
load('cluster.schema.json', 'Cluster')
load('model.schema.json', 'Model')
load('plan.schema.json', 'Plan')
load('runs.schema.json', 'Runs')
load('jobs.schema.json', 'Jobs')
load('allocation.schema.json', 'Allocation')
# the runs document names other documents by file: here they are components
def ext_refs(o):
    files = {'cluster.schema.json': 'Cluster', 'model.schema.json': 'Model', 'plan.schema.json': 'Plan'}
    # (also the allocation report's)
    if isinstance(o, dict):
        return {k: ('#/components/schemas/' + files[v] if k == '$ref' and v in files else ext_refs(v)) for k, v in o.items()}
    if isinstance(o, list):
        return [ext_refs(x) for x in o]
    return o
for k in [k for k in S if k.startswith('Runs') or k.startswith('Allocation')]:
    S[k] = ext_refs(S[k])
# a job's model: a catalog name, a model document, or (uniapd) the id of a model the tenant stored
S['Jobs']['properties']['jobs']['items']['properties']['model']['oneOf'] = [
    {'type': 'string', 'description': 'A catalog model name.'}, {'$ref': '#/components/schemas/Model'},
    {'type': 'integer', 'minimum': 1, 'description': 'The id of a model the tenant stored (uniapd only).'}]
# the API takes the jobs document's list (uniap allocate --jobs FILE's "jobs"), not the document
S['AllocationJobs'] = S.pop('Jobs')['properties']['jobs']
# the service also takes a model the tenant stored, by id (server/calibration.c)
S['RunsModel']['oneOf'].append({'type': 'integer', 'minimum': 1, 'description': 'The id of a model the tenant stored (uniapd only).'})
R = lambda n: {'$ref': '#/components/schemas/' + n}
S['Problem'] = {'type': 'object', 'description': 'RFC 9457 problem details; every error is answered with one (application/problem+json).',
  'required': ['type', 'title', 'status'],
  'properties': {
    'type': {'type': 'string', 'pattern': '^urn:uniap:problem:[a-z-]+$', 'description': 'urn:uniap:problem: + a slug (malformed, invalid, not-found, method-not-allowed, unauthorized, unsupported-media-type, content-too-large, bad-path, bad-query, bad-argument, limit, infeasible, io, out-of-memory, not-ready, ...).', 'examples': ['urn:uniap:problem:invalid']},
    'title': {'type': 'string', 'description': "The status's reason phrase."},
    'status': {'type': 'integer', 'minimum': 400, 'maximum': 599},
    'detail': {'type': 'string', 'description': 'The message; for core errors it names the field and rule.'},
    'instance': {'type': 'string', 'description': 'The request path.'},
    'pointer': {'type': 'string', 'description': 'RFC 6901 pointer into the request body when the field at fault is known; "" is the whole body.'}}}
S['DocumentMeta'] = {'type': 'object', 'required': ['id', 'kind', 'name', 'bytes', 'created_at'], 'properties': {
    'id': {'type': 'integer', 'minimum': 1}, 'kind': {'type': 'string', 'enum': ['cluster', 'model']},
    'name': {'type': 'string'}, 'bytes': {'type': 'integer', 'minimum': 0}, 'created_at': {'type': 'string'}}}
S['DocumentList'] = {'type': 'object', 'required': ['items', 'next_cursor'], 'properties': {
    'items': {'type': 'array', 'items': R('DocumentMeta')},
    'next_cursor': {'type': ['string', 'null'], 'description': 'Pass as ?cursor= for the next page; null on the last page.'}}}
S['CatalogEntry'] = {'type': 'object', 'properties': {'name': {'type': 'string'}, 'description': {'type': 'string'}, 'source': {'type': 'string'}}}
S['Catalog'] = {'type': 'object', 'required': ['clusters', 'models'], 'properties': {
    'clusters': {'type': 'array', 'items': R('CatalogEntry')}, 'models': {'type': 'array', 'items': R('CatalogEntry')}}}
S['Whoami'] = {'type': 'object', 'required': ['tenant', 'id'], 'properties': {'tenant': {'type': 'string'}, 'id': {'type': 'integer'}}}
S['Status'] = {'type': 'object', 'required': ['status'], 'properties': {'status': {'type': 'string', 'enum': ['ok', 'ready']}}}
ref_or_doc = lambda doc: {'oneOf': [{'type': 'integer', 'minimum': 1, 'description': 'A stored id.'},
    {'type': 'string', 'description': 'A stored id as a digit string, or a catalog name.'}, R(doc)]}
S['EvaluateRequest'] = {'type': 'object', 'required': ['cluster', 'model', 'batch', 'plan'], 'properties': {
    'cluster': ref_or_doc('Cluster'), 'model': ref_or_doc('Model'),
    'batch': {'type': 'integer', 'minimum': 1, 'description': 'The global batch size.'}, 'plan': R('Plan')}}
S['EvaluateReport'] = {'type': 'object', 'description': 'What `uniap evaluate` prints (jenc_evaluate_report); feasible false is a 200 too.',
    'additionalProperties': True, 'properties': {'feasible': {'type': 'boolean'}, 'plan_tpi_s': {'type': 'number'}, 'tpi_matches': {'type': 'boolean'},
    'memory_limit_bytes': {'type': 'number', 'description': 'What one device may allocate (docs/cost-model.md, "Memory").'},
    'stages': {'type': 'array', 'items': R('EvaluateStage')}}}
S['EvaluateStage'] = {'type': 'object', 'additionalProperties': True, 'properties': {
    'time_s': {'type': 'number'}, 'memory_bytes': {'type': 'number', 'description': 'The audit format\'s stage memory (= memory.allocated_bytes; interleaved: the stage\'s own layers at the stage\'s own peak).'},
    'rank_memory_bytes': {'type': 'number', 'description': 'Interleaved only: the memory of the pipeline rank that runs the stage, its chunks together at its fullest moment (= memory.allocated_bytes; docs/cost-model.md, "Interleaved 1F1B").'},
    'inflight_microbatches': {'type': 'integer'}, 'memory': R('StageMemory')}}
_mem = lambda d: {'type': 'number', 'description': d}
S['StageMemory'] = {'type': 'object', 'description': ('Where one device of the stage spends its memory, in bytes (core/cost.h, struct cost_stage_memory): '
    'allocated = model_states + fsdp_accumulation + activation, the stage fits iff allocated <= memory_limit_bytes (iff free >= 0), and '
    'allocated + fragmentation + fsdp_transient + reserved + margin + free = device_memory.'),
    'required': ['model_states_bytes', 'weight_bytes', 'gradient_bytes', 'optimizer_state_bytes',
                 'fsdp_accumulation_bytes', 'activation_bytes', 'allocated_bytes', 'memory_limit_bytes',
                 'fragmentation_bytes', 'fsdp_transient_bytes', 'reserved_bytes', 'margin_bytes', 'free_bytes', 'device_memory_bytes'],
    'properties': {
    'model_states_bytes': _mem('Parameters, gradients and optimizer states of the stage\'s layers.'),
    'weight_bytes': _mem('Of model_states_bytes: the parameters themselves (and FP8 weight copies), as sharded.'),
    'gradient_bytes': _mem('Of model_states_bytes: their gradients, as sharded (ZeRO-2, FSDP).'),
    'optimizer_state_bytes': _mem('Of model_states_bytes: the optimizer\'s states (fp32 master copy, moments), as sharded '
                                  '(ZeRO-1 and up, FSDP). The three sum to model_states_bytes up to rounding.'),
    'fsdp_accumulation_bytes': _mem('Unsharded gradients FSDP layers keep between micro-batches.'),
    'activation_bytes': _mem('In-flight micro-batches times the activations of one.'),
    'allocated_bytes': _mem('The three above.'),
    'memory_limit_bytes': _mem('The limit on allocated_bytes.'),
    'fragmentation_bytes': _mem('The allocator\'s loss: memory_fragmentation times allocated_bytes.'),
    'fsdp_transient_bytes': _mem('Gathered parameters of FSDP layers (the candidate\'s largest).'),
    'reserved_bytes': _mem('The framework\'s bytes: the cluster\'s reserved_bytes.'),
    'margin_bytes': _mem('Safety margin: memory_margin times the device memory.'),
    'free_bytes': _mem('What is left; negative when the stage does not fit.'),
    'device_memory_bytes': _mem('The cluster\'s memory_bytes.')}}
S['PlanRequest'] = {'type': 'object', 'required': ['cluster', 'model', 'batch'], 'additionalProperties': False, 'properties': {
    'cluster': ref_or_doc('Cluster'), 'model': ref_or_doc('Model'),
    'batch': {'type': 'integer', 'minimum': 1, 'maximum': 1000000000, 'description': 'The global batch size.'},
    'schedule': {'type': 'string', 'enum': ['gpipe', '1f1b', 'interleaved'], 'default': 'gpipe', 'description': 'interleaved: 1F1B over virtual_stages model chunks per device (Megatron-LM\'s virtual pipeline stages); its candidates have microbatches a multiple of pp and pp x virtual_stages <= layers.'},
    'virtual_stages': {'type': 'integer', 'minimum': 2, 'maximum': 64, 'description': 'Model chunks per device under the interleaved schedule (only with it); absent: every v from 2 to 4 is a candidate.'},
    'space': {'type': 'string', 'enum': ['unified', 'inter', 'intra', 'uniform'], 'default': 'unified'},
    'time_limit_s': {'type': 'number', 'exclusiveMinimum': 0, 'default': 60, 'description': 'Per candidate; at most the service\'s --max-time-limit.'},
    'deadline_s': {'type': 'number', 'minimum': 0.001, 'maximum': 1000000000, 'description': 'Seconds for the whole job from its start: no candidate starts past it and each solve gets at most the time left (its time_limit_s is cut to it); the job then succeeds with the best plan so far (optimal false, its bound and gap as proven so far), the candidates left with status "deadline". Default: none (each candidate has its time_limit_s, the job the service\'s --job-budget). Not part of the cost cache\'s key.'},
    'gap': {'type': 'number', 'minimum': 0, 'maximum': 1, 'default': 0, 'description': 'Relative MILP gap; 0 proves optimality.'},
    'recompute': {'type': 'boolean', 'default': False},
    'zero': {'type': 'boolean', 'default': False, 'description': 'Offer ZeRO-1 (optimizer states sharded over the data-parallel ranks: Megatron-LM\'s distributed optimizer) and ZeRO-2 (gradients too) for every replicated layer (docs/cost-model.md, "ZeRO"). Part of the cost cache\'s key.'},
    'sequence_parallel': {'type': 'boolean', 'default': False, 'description': 'Offer Megatron-LM\'s sequence parallelism for every layer with tp > 1 (docs/cost-model.md, "Sequence parallelism"). Part of the cost cache\'s key.'},
    'selective_recompute': {'type': 'boolean', 'default': False, 'description': 'Offer selective recomputation (only the attention core recomputed: Megatron-LM\'s --recompute-granularity selective) for every layer (docs/cost-model.md, "Selective recomputation"). Part of the cost cache\'s key.'},
    'uneven_microbatches': {'type': 'boolean', 'default': False, 'description': 'Also plan micro-batch counts that leave the last micro-batch smaller (micro-batches of ceil(batch / c), as Galvatron chunks a batch), where the target allows it (any, galvatron). Part of the cost cache\'s key.'},
    'early_stop': {'type': 'boolean', 'default': False},
    'every_candidate': {'type': 'boolean', 'default': False, 'description': 'Solve each candidate (pp, c) to its own optimum: none is pruned, decided or cut off by another candidate\'s plan or bound (a bound proving that nothing fits still decides one), so every row of result.candidates is that candidate\'s best TPI or why it has none (docs/optimizer.md, "Every candidate"). The plan is the same; the job is slower.'},
    'objective': {'enum': ['formula', 'makespan'], 'description': 'What a plan\'s TPI is: "formula" (the default), the audit formula of docs/cost-model.md, "TPI", or "makespan", the iteration as run, optimized exactly on the MILP (docs/optimizer.md, "The makespan objective"; slower): for 1f1b Megatron-LM\'s order with its blocking exchanges (at most the formula), for interleaved its list schedule with overlapped transfers (which can be longer than the formula); for gpipe the two are equal. The plan then carries "objective": "makespan" and its formula_tpi_s. Part of the cost cache\'s key.'},
    'fp8': {'type': 'boolean', 'description': 'Train in FP8 (docs/cost-model.md, "FP8"): a mixed-precision model, a device with peak_tflops.fp8, targets any or megatron; default false. Part of the cost cache\'s key.'},
    'cp_comm': {'enum': ['p2p', 'a2a'], 'description': 'How context parallelism exchanges keys and values: "p2p" (ring attention) or "a2a" (Ulysses all-to-alls; tp x context_parallel must divide the heads); only with context_parallel > 1; default "p2p". Part of the cost cache\'s key.'},
    'context_parallel': {'type': 'integer', 'minimum': 1, 'maximum': 1048576, 'description': 'Context parallelism (docs/cost-model.md, "Context parallelism"): every strategy splits each sequence over this many ranks of its dp group, ring attention exchanging keys and values; it must divide the cluster\'s devices and every layer type\'s tokens_per_sample; targets any or megatron; default 1 (none). Part of the cost cache\'s key.'},
    'runtime': {'type': 'string', 'enum': ['default', 'megatron-lm', 'pytorch', 'galvatron', 'deepspeed', 'megatron-deepspeed'],
        'description': 'The training runtime the plans are priced for (docs/cost-model.md, "Runtime profile"); default: each target\'s own (any: "default"). Part of the cost cache\'s key.'},
    'memory_margin': {'type': 'number', 'minimum': 0, 'maximum': 0.5, 'description': 'Fraction of each device\'s memory no plan may use, for this request; default: the cluster\'s device.memory_margin (itself 0.02 by default). Part of the cost cache\'s key.'},
    'targets': {'type': 'array', 'minItems': 1, 'maxItems': 4, 'uniqueItems': True,
                'items': {'type': 'string', 'enum': ['any', 'megatron', 'deepspeed', 'galvatron']},
                'description': 'Runtime targets (docs/export.md): each plans only what that runtime executes, so its optimum exports. The result\'s plan is the first target\'s; with several, the unconstrained optimum (any) is planned too and result.targets prices each. Default: ["any"]. Not with space "uniform".'}}}
S['TargetResult'] = {'type': 'object', 'required': ['target', 'runtime', 'status', 'solve_s'], 'properties': {
    'target': {'type': 'string', 'enum': ['any', 'megatron', 'deepspeed', 'galvatron']},
    'runtime': {'type': 'string'}, 'status': {'type': 'string', 'enum': ['optimal', 'feasible', 'infeasible', 'error']},
    'tpi_s': {'type': 'number'}, 'pp': {'type': 'integer'}, 'microbatches': {'type': 'integer'},
    'schedule': {'type': 'string', 'enum': ['gpipe', '1f1b', 'interleaved'], 'description': 'The runtime\'s: Megatron-LM and DeepSpeed run 1f1b (Megatron-LM also interleaved); interleaved asked of a runtime without it plans its 1f1b.'},
    'gap': {'type': 'number'}, 'bound_s': {'type': 'number'},
    'price': {'type': 'number', 'description': 'TPI over the unconstrained optimum\'s, minus 1; absent when either has no plan.'},
    'plan': {'oneOf': [R('Plan'), {'type': 'null', 'description': 'No candidate fits, or the target could not plan the model.'}]},
    'error': {'type': 'string', 'description': 'status "error": why the target could not plan this model (e.g. model.shape).'},
    'solve_s': {'type': 'number'}}}
S['Candidate'] = {'type': 'object', 'properties': {
    'pp': {'type': 'integer'}, 'virtual_stages': {'type': 'integer', 'description': 'Interleaved candidates: model chunks per device.'},
    'microbatches': {'type': 'integer'}, 'status': {'type': 'string'},
    'tpi_s': {'type': ['number', 'null']}, 'solve_s': {'type': 'number'}, 'bound': {'type': ['number', 'null']},
    'method': {'type': 'string'}, 'strategy': {'type': 'string'}, 'note': {'type': 'string'},
    'cached': {'type': 'boolean', 'description': 'Its matrices and proven facts came from the cost cache.'},
    'shared': {'type': 'boolean', 'description': 'uniapd on PostgreSQL: another replica solved it for this job (docs/scale.md, "One job across replicas"); absent otherwise.'}}}
S['PlanResult'] = {'type': 'object', 'required': ['plan', 'candidates', 'space', 'optimal', 'gap', 'bound_s', 'solve_s'], 'properties': {
    'plan': {'oneOf': [R('Plan'), {'type': 'null', 'description': 'No candidate fits the memory.'}]},
    'candidates': {'type': 'array', 'items': R('Candidate')}, 'space': {'type': 'string'},
    'optimal': {'type': 'boolean'}, 'gap': {'type': ['number', 'null']}, 'bound_s': {'type': ['number', 'null']}, 'solve_s': {'type': 'number'},
    'target': {'type': 'string', 'enum': ['any', 'megatron', 'deepspeed', 'galvatron'], 'description': 'When the request named targets: the one plan, candidates and optimal belong to (the first).'},
    'targets': {'type': 'array', 'items': R('TargetResult'), 'description': 'When the request named several targets: one entry per target planned, any included.'}}}
S['Job'] = {'type': 'object', 'required': ['id', 'state', 'created_at', 'started_at', 'finished_at', 'progress', 'links'], 'properties': {
    'id': {'type': 'integer', 'minimum': 1},
    'state': {'type': 'string', 'enum': ['queued', 'running', 'succeeded', 'failed', 'canceled']},
    'created_at': {'type': 'string'}, 'started_at': {'type': ['string', 'null']}, 'finished_at': {'type': ['string', 'null']},
    'progress': {'type': 'object', 'description': 'A plan: candidates solved of all; a calibration: fits done (the fit, then one per leave-one-out fold); an allocation: curve points settled (planned or reused) of all.',
                 'properties': {'candidates_done': {'type': 'integer'}, 'candidates_total': {'type': 'integer'},
                                                  'best_tpi_s': {'type': ['number', 'null']},
                                                  'bound_s': {'type': ['number', 'null'], 'description': 'A proven lower bound on the TPI of any plan of the space being searched (for a job of several targets, the current target\'s), so best_tpi_s - bound_s bounds what is still to gain; null until every candidate has a bound, and on calibrations.'}}},
    'idempotency_key': {'type': 'string'}, 'error': {'type': 'string'},
    'request': {'type': 'object', 'description': 'The options as given; cluster and model as the ids or catalog names given, or "inline".'},
    'result': R('PlanResult'),
    'links': {'type': 'object', 'properties': {'self': {'type': 'string'}, 'plan': {'type': 'string'}}}}}
S['Job']['properties']['kind'] = {'type': 'string', 'enum': ['plan', 'calibration', 'allocation'],
    'description': 'plan: POST /v1/plans; calibration: POST /v1/clusters/{id}/calibrations; allocation: POST /v1/allocations.'}
fit_names = {'type': 'array', 'minItems': 1, 'maxItems': 64, 'items': {'type': 'string', 'minLength': 1},
    'description': 'Parameters to fit (docs/calibration.md: device.compute_efficiency, hierarchy[I].bandwidth or hierarchy.bandwidth, '
                   'overlap_coefficient, device.reserved_bytes, ...); absent: the default selection for the runs.'}
S['CalibrationRequest'] = {'type': 'object', 'additionalProperties': False, 'required': ['runs'], 'properties': {
    'runs': R('Runs'), 'fit': fit_names,
    'leave_one_out': {'type': 'boolean', 'description': 'Also fit without each run and predict it; default false.'},
    'prior_weight': {'type': 'number', 'minimum': 0, 'description': 'The ridge weight lambda; default 0.01.'},
    'name': {'type': 'string', 'minLength': 1, 'maxLength': 128, 'description': "The calibrated cluster's name; default the cluster's."},
    'time_limit_s': {'type': 'number', 'minimum': 0.001, 'description': 'The job fails past it; default 300, at most --max-time-limit.'},
    'allow_bounds': {'type': 'boolean', 'description': 'Keep a fit whose parameters sit on their physical bounds (refused by default: docs/calibration.md); default false.'}}}
S['CalibrationJobRequest'] = {'type': 'object', 'additionalProperties': False,
    'required': ['cluster', 'leave_one_out', 'prior_weight', 'time_limit_s'],
    'description': "A calibration's options, defaults filled in; cluster is the id of the path.",
    'properties': {'cluster': {'type': 'integer', 'minimum': 1},
                   **{k: v for k, v in S['CalibrationRequest']['properties'].items() if k != 'runs'}}}
S['CalibrationReport'] = {'type': 'object', 'additionalProperties': True,
    'description': 'The report of `uniap calibrate` (docs/calibration.md): per run the measured, datasheet, fitted and leave-one-out '
                   'times and errors, the fitted parameters with their priors and bounds, the fit summary.',
    'properties': {'cluster': {'type': ['string', 'null']}, 'fitted': {'type': 'boolean'},
                   'runs': {'type': 'array', 'items': {'type': 'object', 'additionalProperties': True}},
                   'parameters': {'type': 'array', 'items': {'type': 'object', 'additionalProperties': True}}}}
S['CalibrationResult'] = {'type': 'object', 'required': ['cluster', 'report'], 'properties': {
    'cluster': {'type': 'object', 'required': ['id', 'name', 'links'], 'description': 'The calibrated cluster, stored as a new document of the tenant.',
                'properties': {'id': {'type': 'integer', 'minimum': 1}, 'name': {'type': 'string'},
                               'links': {'type': 'object', 'properties': {'self': {'type': 'string'}}}}},
    'report': R('CalibrationReport')}}
S['Job']['properties']['result'] = {'oneOf': [R('PlanResult'), R('CalibrationResult'), R('Allocation')], 'description': 'By kind.'}
cluster_ref = {'oneOf': [{'type': 'integer', 'minimum': 1, 'description': 'The id of a cluster the tenant stored.'},
                         {'type': 'string', 'description': 'A catalog cluster name.'}, R('Cluster')]}
S['AllocationRequest'] = {'type': 'object', 'additionalProperties': False, 'required': ['jobs'],
    'description': 'An allocation of one cluster, or of several pools (one device type each), among training jobs (docs/allocation.md); '
                   'give cluster or clusters, not both.', 'properties': {
    'cluster': cluster_ref,
    'clusters': {'type': 'array', 'minItems': 1, 'maxItems': 8, 'items': cluster_ref,
                 'description': 'Pools, each known by its cluster\'s name (the names must differ); a job runs inside one.'},
    'jobs': R('AllocationJobs'),
    'objective': {'enum': ['throughput', 'fair', 'deadline', 'missed'], 'description': 'Default throughput (docs/allocation.md, "Objectives").'},
    'restart_cost': {'type': 'number', 'minimum': 0, 'maximum': 1e6, 'description': 'With current: the normalised throughput a move costs; default 0.05.'},
    'drain': {'type': 'string', 'minLength': 1, 'maxLength': 4096, 'description': 'Nodes out of service, comma-separated: NODE (one pool) or POOL:NODE.'},
    'no_plans': {'type': 'boolean', 'description': 'Leave out the plans of reused curve points; default false.'},
    'time_limit_s': {'type': 'number', 'minimum': 0.001, 'description': 'Per candidate of each planner run; default 10, at most --max-time-limit.'},
    'current': R('Allocation'), 'curves': R('Allocation')}}
S['AllocationRequest']['properties']['current'] = {'allOf': [R('Allocation')], 'description': 'The allocation in force (an earlier report): re-planning, moves cost restart_cost.'}
S['AllocationRequest']['properties']['curves'] = {'allOf': [R('Allocation')], 'description': 'An earlier report whose curves are reused for every job that plans alike.'}
S['JobList'] = {'type': 'object', 'required': ['items', 'next_cursor'], 'properties': {
    'items': {'type': 'array', 'items': R('Job')},
    'next_cursor': {'type': ['string', 'null'], 'description': 'Pass as ?cursor= for the next page; null on the last page.'}}}

S['JobRequest'] = {'type': 'object', 'additionalProperties': False, 'required': ['cluster', 'model', 'batch'],
    'description': "The plan request's options as given (a member the request left out is absent: its default applied); cluster and model as the stored id or catalog name given, or \"inline\" for a document in the request.",
    'properties': {'cluster': {'oneOf': [{'type': 'integer', 'minimum': 1}, {'type': 'string'}]},
                   'model': {'oneOf': [{'type': 'integer', 'minimum': 1}, {'type': 'string'}]},
                   **{k: v for k, v in S['PlanRequest']['properties'].items() if k not in ('cluster', 'model')}}}
S['Job']['properties']['request'] = {'oneOf': [R('JobRequest'), R('CalibrationJobRequest')], 'description': 'By kind.'}

# Galvatron's profile files (json/galvatron.c states their grammar): maps from the
# keys Galvatron writes to numbers, or to the objects of the memory profile
num_map = lambda desc, pattern: {'type': 'object', 'description': desc, 'minProperties': 1,
                                 'propertyNames': {'pattern': pattern}, 'additionalProperties': {'type': 'number'}}
S['GalvatronAllreduceFile'] = num_map('allreduce_bandwidth_<N>nodes_<G>gpus_per_node.json: bus bandwidth in GB/s by group size, consecutive (1) or strided (0).',
                                      '^allreduce_size_[0-9]+_consec_[01]$')
S['GalvatronP2pFile'] = num_map('p2p_bandwidth_<N>nodes_<G>gpus_per_node.json: stage-to-stage bandwidth in GB/s by pipeline degree.', '^pp_size_[0-9]+$')
S['GalvatronSpTimeFile'] = num_map('sp_time_<N>nodes_<G>gpus_per_node.json: ms by collective, group size and message size (checked, not used).',
                                   '^(allreduce|all2all)_size_[0-9]+_[0-9]+MB_time$')
S['GalvatronOverlapFile'] = {'type': 'object', 'description': 'overlap_coefficient.json.', 'additionalProperties': False, 'required': ['overlap_coe'],
    'properties': {'overlap_coe': {'type': 'number', 'minimum': 1, 'maximum': 10, 'description': "The paper's CCOC (a slowdown factor)."}}}
S['GalvatronConfigFile'] = {'type': 'object', 'additionalProperties': True,
    'description': "The model's hyper-parameter file (a Hugging Face style config); the family is told by its keys (docs/galvatron.md), other keys are ignored.",
    'properties': {k: {'type': 'integer', 'minimum': 1} for k in (
        'num_hidden_layers', 'n_layer', 'n_layers', 'num_layers', 'num_decoder_layers', 'hidden_size', 'n_embd', 'dim', 'd_model',
        'embed_dim', 'num_attention_heads', 'n_head', 'n_heads', 'num_heads', 'max_position_embeddings', 'n_positions', 'image_size', 'patch_size')}}
S['GalvatronComputationFile'] = num_map('computation_profiling_<prec>_<suffix>.json: ms per sample per layer (layertype_<i>[_bsz<B>][_seq<S>]), of the other parts (layertype_other...), or of a whole batch (layernum[..]_bsz<B>...).',
                                        '^(layertype_|layernum\\[)')
mb_by_tp = {'oneOf': [{'type': 'number'}, {'type': 'object', 'additionalProperties': {'type': 'number'}}], 'description': 'MB (2^20 bytes), or MB by TP size.'}
S['GalvatronMemoryEntry'] = {'type': 'object', 'description': 'A layer type: parameters and activation per sample by TP size.', 'properties': {
    'parameter_size': {'type': 'number', 'description': 'MB.'},
    'tp_activation_per_bsz_dict': {'type': 'object', 'additionalProperties': {'type': 'number'}, 'description': 'MB per sample by TP size, and "checkpoint".'}}}
S['GalvatronMemoryOther'] = {'type': 'object', 'description': 'The parts outside the layers on a pipeline stage.', 'properties': {
    'model_states': mb_by_tp, 'activation': mb_by_tp}}
entry = {'anyOf': [R('GalvatronMemoryEntry'), R('GalvatronMemoryOther')]}
S['GalvatronMemoryFile'] = {'type': 'object', 'minProperties': 1,
    'description': 'memory_profiling_<prec>_<suffix>.json: layertype_<i>[_sp] and other_memory_<pp_off|pp_on_first|pp_on_last>[_sp], each one entry or entries by sequence length; raw <pp>_<tp>_<dp>... measurements (checked, not used).',
    'additionalProperties': {'anyOf': [R('GalvatronMemoryEntry'), R('GalvatronMemoryOther'),
                                       {'type': 'object', 'additionalProperties': entry},
                                       {'type': 'object', 'additionalProperties': {'type': 'number'}}]}}

# A TP table's values are numbers (each use narrows their range); said here so
# that generators give it number values instead of none.
S['ModelTpTable']['additionalProperties'] = {'type': 'number'}

def no_defaults(o):
    """Moves each "default" of a schema into its description (see the top)."""
    if isinstance(o, dict):
        if 'default' in o:
            d = json.dumps(o.pop('default'))
            desc = o.get('description', '')
            if 'default' not in desc.lower():
                o['description'] = (desc + ' ' if desc else '') + 'Default: ' + d + '.'
        for v in o.values():
            no_defaults(v)
    elif isinstance(o, list):
        for v in o:
            no_defaults(v)

def prob(desc): return {'description': desc, 'content': {'application/problem+json': {'schema': R('Problem')}}}
resp = {k: prob(v) for k, v in {
  'BadRequest': 'Malformed JSON, a bad path, query or argument (400).',
  'Unauthorized': 'No or unknown bearer key (401, with WWW-Authenticate: Bearer).',
  'Forbidden': 'The bearer key is recognised but its tenant was revoked (403).',
  'NotFound': 'No such resource in the caller\'s tenant (404).',
  'ContentTooLarge': 'Body over the limit, nesting over 64, the tenant\'s max_stored_bytes quota (documents and jobs count) or --max-stored-jobs, or an evaluation past --evaluate-time-limit (413).',
  'UnsupportedMediaType': 'Content-Type is not application/json (415).',
  'Unprocessable': 'The document fails validation; pointer names the field (422).',
  'ServiceUnavailable': 'Out of memory, not ready, or the job queue is full (503; Retry-After when the queue is full).',
  'Conflict': 'The job\'s state does not allow it, or an Idempotency-Key reused for another request (409).',
  'TooManyJobs': 'The tenant already has max_concurrent_jobs queued or running (429, with Retry-After).',
  'TooManyEvaluations': 'The tenant already has its share of evaluations queued or running (429, with Retry-After).',
  'InsufficientStorage': 'The store is full (the disk, or --max-db-bytes): new content is refused until a delete or the disk makes room; deletes still work (507).',
  'InternalError': 'Storage or another internal error (500).'}.items()}
def rr(n): return {'$ref': '#/components/responses/' + n}
def js(schema, desc): return {'description': desc, 'content': {'application/json': {'schema': schema}}}
common = {'401': rr('Unauthorized'), '403': rr('Forbidden'), '500': rr('InternalError'), '503': rr('ServiceUnavailable')}
def op(opid, summary, responses, tags, body=None, params=None, auth=True):
    o = {'operationId': opid, 'summary': summary, 'tags': tags}
    if params: o['parameters'] = params
    if body: o['requestBody'] = {'required': True, 'content': {'application/json': {'schema': body}}}
    r = dict(responses)
    if auth: r.update({k: v for k, v in common.items() if k not in r})
    else: o['security'] = []
    o['responses'] = r
    return o
idp = {'name': 'id', 'in': 'path', 'required': True, 'schema': {'type': 'integer', 'minimum': 1}}
page = [{'name': 'limit', 'in': 'query', 'schema': {'type': 'integer', 'minimum': 1, 'maximum': 100, 'default': 20}},
        {'name': 'cursor', 'in': 'query', 'schema': {'type': 'string', 'pattern': '^[0-9]+$'}, 'description': 'A next_cursor of this list.'}]
P = {}
P['/healthz'] = {'get': op('healthz', 'Liveness', {'200': js(R('Status'), 'The process serves.')}, ['service'], auth=False)}
P['/readyz'] = {'get': op('readyz', 'Readiness', {'200': js(R('Status'), 'Ready.'), '503': rr('ServiceUnavailable')}, ['service'], auth=False)}
P['/metrics'] = {'get': op('metrics', 'Prometheus metrics', {'200': {'description': 'Prometheus text format.', 'content': {'text/plain; version=0.0.4': {'schema': {'type': 'string'}}}}, '503': rr('ServiceUnavailable')}, ['service'], auth=False)}
P['/v1/openapi.json'] = {'get': op('openapi', 'This document', {'200': js({'type': 'object', 'additionalProperties': True}, 'The OpenAPI document (compiled into uniapd).')}, ['service'], auth=False)}
P['/v1/whoami'] = {'get': op('whoami', 'The caller\'s tenant', {'200': js(R('Whoami'), 'The tenant.')}, ['tenant'])}
P['/v1/catalog'] = {'get': op('listCatalog', 'The built-in clusters and models', {'200': js(R('Catalog'), 'The catalog.')}, ['catalog'])}
P['/v1/catalog/{name}'] = {'get': op('getCatalogEntry', 'A built-in profile', {'200': js({'oneOf': [R('Cluster'), R('Model')]}, 'The full profile.'), '404': rr('NotFound')}, ['catalog'],
    params=[{'name': 'name', 'in': 'path', 'required': True, 'schema': {'type': 'string'}}])}
for res, doc, tag in (('clusters', 'Cluster', 'clusters'), ('models', 'Model', 'models')):
    one = doc
    P['/v1/' + res] = {
      'post': op('create' + one, 'Store a ' + one.lower() + ' profile', {
          '201': {'description': 'Stored.', 'headers': {'Location': {'schema': {'type': 'string'}, 'description': '/v1/%s/{id}' % res}}, 'content': {'application/json': {'schema': R('DocumentMeta')}}},
          '400': rr('BadRequest'), '413': rr('ContentTooLarge'), '415': rr('UnsupportedMediaType'), '422': rr('Unprocessable'),
          '507': rr('InsufficientStorage')}, [tag], body=R(doc)),
      'get': op('list' + one + 's', 'List stored ' + res, {'200': js(R('DocumentList'), 'A page.'), '400': rr('BadRequest')}, [tag], params=page)}
    P['/v1/%s/{id}' % res] = {
      'get': op('get' + one, 'A stored ' + one.lower(), {'200': js(R(doc), 'The stored document.'), '404': rr('NotFound')}, [tag], params=[idp]),
      'delete': op('delete' + one, 'Delete a stored ' + one.lower(), {'204': {'description': 'Deleted.'}, '404': rr('NotFound')}, [tag], params=[idp])}
# imports (?format=, server/api_import.c): the body names the input files, the stored document is built from them
S['GalvatronClusterImport'] = {'type': 'object', 'additionalProperties': False, 'required': ['nodes', 'gpus_per_node', 'allreduce'],
    'description': '?format=galvatron: Galvatron hardware files (docs/galvatron.md).', 'properties': {
    'name': {'type': 'string', 'maxLength': 128}, 'nodes': {'type': 'integer', 'minimum': 1, 'maximum': 1048576},
    'gpus_per_node': {'type': 'integer', 'minimum': 1, 'maximum': 1024},
    'memory_bytes': {'type': 'number', 'description': 'Per device; default 80 GiB.'},
    'reserved_bytes': {'type': 'number', 'description': 'Per device; default 2 GiB.'},
    'allreduce': R('GalvatronAllreduceFile'), 'p2p': R('GalvatronP2pFile'), 'overlap': R('GalvatronOverlapFile'), 'sp_time': R('GalvatronSpTimeFile')}}
S['GalvatronModelImport'] = {'type': 'object', 'additionalProperties': False, 'required': ['config', 'computation', 'memory'],
    'description': '?format=galvatron: a Galvatron model config and its profiles (docs/galvatron.md).', 'properties': {
    'name': {'type': 'string', 'maxLength': 128}, 'config': R('GalvatronConfigFile'), 'computation': R('GalvatronComputationFile'), 'memory': R('GalvatronMemoryFile'),
    'precision': {'enum': ['bf16', 'fp16', 'fp32'], 'default': 'bf16'},
    'seq': {'type': 'integer', 'minimum': 1}, 'bsz': {'type': 'integer', 'minimum': 1}, 'sequence_parallel': {'type': 'boolean'}}}
S['NcclTestsImport'] = {'type': 'object', 'additionalProperties': False, 'required': ['base', 'outputs'],
    'description': '?format=nccl-tests: nccl-tests runs overlaid on a base cluster (docs/nccl.md).', 'properties': {
    'name': {'type': 'string', 'maxLength': 128},
    'base': {'oneOf': [{'type': 'integer', 'minimum': 1}, {'type': 'string'}, R('Cluster')], 'description': 'A stored id, a catalog name or a cluster document.'},
    'ranks': {'type': 'integer', 'minimum': 2, 'description': 'Ranks of every run; default: the "# Rank" lines.'},
    'outputs': {'type': 'array', 'minItems': 1, 'maxItems': 64, 'items': {'oneOf': [
        {'type': 'string', 'description': 'The text output of one run.'},
        {'type': 'object', 'additionalProperties': False, 'required': ['text'], 'properties': {
            'kind': {'enum': ['all_reduce', 'all_gather', 'reduce_scatter', 'alltoall', 'sendrecv']}, 'text': {'type': 'string'}}}]}}}}
for res, doc, formats, bodies in (('clusters', 'Cluster', ['galvatron', 'nccl-tests'], ['GalvatronClusterImport', 'NcclTestsImport']),
                                  ('models', 'Model', ['galvatron'], ['GalvatronModelImport'])):
    o = P['/v1/' + res]['post']
    o['parameters'] = [{'name': 'format', 'in': 'query', 'schema': {'enum': formats},
        'description': 'Absent: the body is the document. Otherwise the body is an import request of that format; an unknown format is a 400.'}]
    o['requestBody']['content']['application/json']['schema'] = {'oneOf': [R(doc)] + [R(b) for b in bodies]}
P['/v1/evaluate'] = {'post': op('evaluate', 'Evaluate a plan', {'200': js(R('EvaluateReport'), 'The report.'), '400': rr('BadRequest'), '404': rr('NotFound'),
    '413': rr('ContentTooLarge'), '415': rr('UnsupportedMediaType'), '422': rr('Unprocessable'), '429': rr('TooManyEvaluations')}, ['evaluate'], body=R('EvaluateRequest'))}
jobp = {'name': 'id', 'in': 'path', 'required': True, 'schema': {'type': 'integer', 'minimum': 1}}
P['/v1/plans'] = {'post': op('createPlan', 'Queue a plan job', {
    '202': {'description': 'Queued (or, with a replayed Idempotency-Key, the existing job).', 'headers': {
        'Location': {'schema': {'type': 'string'}, 'description': '/v1/jobs/{id}'},
        'Idempotent-Replayed': {'schema': {'type': 'string', 'enum': ['true']}, 'description': 'Present when the key named an existing job.'}},
        'content': {'application/json': {'schema': R('Job')}}},
    '400': rr('BadRequest'), '404': rr('NotFound'), '409': rr('Conflict'), '413': rr('ContentTooLarge'),
    '415': rr('UnsupportedMediaType'), '422': rr('Unprocessable'), '429': rr('TooManyJobs'), '507': rr('InsufficientStorage')}, ['jobs'], body=R('PlanRequest'),
    params=[{'name': 'Idempotency-Key', 'in': 'header', 'schema': {'type': 'string', 'minLength': 1, 'maxLength': 255},
             'description': 'The same key with the same body returns the same job; with another body, 409.'}])}
P['/v1/clusters/{id}/calibrations'] = {'post': op('createCalibration', 'Queue a calibration of a stored cluster to measured runs', {
    '202': {'description': 'Queued (or, with a replayed Idempotency-Key, the existing job); on success the job\'s result names the calibrated cluster, stored as a new document.',
            'headers': P['/v1/plans']['post']['responses']['202']['headers'], 'content': {'application/json': {'schema': R('Job')}}},
    '400': rr('BadRequest'), '404': rr('NotFound'), '409': rr('Conflict'), '413': rr('ContentTooLarge'),
    '415': rr('UnsupportedMediaType'), '422': rr('Unprocessable'), '429': rr('TooManyJobs'), '507': rr('InsufficientStorage')}, ['jobs'], body=R('CalibrationRequest'),
    params=[jobp, P['/v1/plans']['post']['parameters'][0]])}
P['/v1/allocations'] = {'post': op('createAllocation', 'Queue an allocation of a cluster, or of pools, among training jobs', {
    '202': {'description': 'Queued (or, with a replayed Idempotency-Key, the existing job); on success the job\'s result is the allocation report. '
                           'Progress counts curve points (planned or reused) of all; POST /v1/jobs/{id}/stop allocates on the points planned so far.',
            'headers': P['/v1/plans']['post']['responses']['202']['headers'], 'content': {'application/json': {'schema': R('Job')}}},
    '400': rr('BadRequest'), '404': rr('NotFound'), '409': rr('Conflict'), '413': rr('ContentTooLarge'),
    '415': rr('UnsupportedMediaType'), '422': rr('Unprocessable'), '429': rr('TooManyJobs'), '507': rr('InsufficientStorage')}, ['jobs'], body=R('AllocationRequest'),
    params=[P['/v1/plans']['post']['parameters'][0]])}
S['AllocationView'] = {'type': 'object', 'required': ['id', 'state', 'kind', 'view', 'links'],
    'description': 'An allocation job as the caller may see it: its owner whole (view owner), a tenant one of its jobs names only once it '
                   'succeeded, with the other jobs redacted (view tenant); never its request.',
    'properties': {**{k: S['Job']['properties'][k] for k in ('id', 'state', 'kind', 'created_at', 'started_at', 'finished_at', 'progress', 'error', 'links')},
                   'view': {'enum': ['owner', 'tenant']}, 'result': R('Allocation')}}
P['/v1/allocations/{id}'] = {'get': op('getAllocation', 'An allocation as its owner, or a tenant its jobs name, may see it', {
    '200': js(R('AllocationView'), 'The allocation.'),
    '404': rr('NotFound')}, ['jobs'], params=[jobp])}
P['/v1/jobs'] = {'get': op('listJobs', 'The tenant\'s jobs', {'200': js(R('JobList'), 'A page, oldest first.'), '400': rr('BadRequest')}, ['jobs'],
    params=page + [{'name': 'state', 'in': 'query', 'schema': {'type': 'string', 'enum': ['queued', 'running', 'succeeded', 'failed', 'canceled']}}])}
P['/v1/jobs/{id}'] = {
    'get': op('getJob', 'A job: state, progress, request, result', {'200': js(R('Job'), 'The job.'), '404': rr('NotFound')}, ['jobs'], params=[jobp]),
    'delete': dict(op('deleteJob', 'Delete a finished job (succeeded, failed or canceled), its result with it', {
        '204': {'description': 'Deleted (the tenant\'s quotas get it back).'},
        '200': js(R('Job'), 'Deprecated: the job was queued or running and is now canceled, as POST /v1/jobs/{id}/cancel does '
                  '(with a Deprecation header and a Link to it); this answer goes in a later release.'),
        '202': js(R('Job'), 'Deprecated: the job was running and is still stopping, as POST /v1/jobs/{id}/cancel answers.'),
        '404': rr('NotFound')}, ['jobs'], params=[jobp]),
        description='A queued or running job is still canceled by DELETE for one release (deprecated: use '
                    'POST /v1/jobs/{id}/cancel); a finished one is deleted.')}
P['/v1/jobs/{id}/cancel'] = {'post': op('cancelJob', 'Cancel a queued or running job (its solver workers are stopped)', {
        '200': js(R('Job'), 'Canceled (also when it already was).'), '202': js(R('Job'), 'Still stopping; poll the job.'),
        '404': rr('NotFound'), '409': prob('The job already succeeded or failed: nothing to cancel (DELETE removes it) (409).')},
        ['jobs'], params=[jobp])}
P['/v1/jobs/{id}/stop'] = {'post': op('stopJob', 'End a running plan job now with the best plan so far, or an allocation with the points planned so far', {
        '202': js(R('Job'), 'The job stops within a moment (no candidate starts, the running solves are killed) and then '
                  'succeeds with the best plan found so far, not proven (the candidates left say "stopped" or "canceled"), '
                  'or fails saying none came; an allocation plans no more curve points and allocates on those it has '
                  '(its report says "stopped"); wait on the job.'),
        '404': rr('NotFound'), '409': rr('Conflict')}, ['jobs'], params=[jobp])}
P['/v1/jobs/{id}/plan'] = {'get': op('exportPlan', 'The job\'s plan, exported', {
    '200': {'description': 'The plan in the format asked for.', 'content': {
        'application/json': {'schema': {'type': 'object', 'additionalProperties': True, 'description': 'json: the plan document; galvatron, deepspeed: that tool\'s configuration; chrome-trace: {traceEvents, otherData}.'}},
        'text/plain': {'schema': {'type': 'string'}}}},
    '400': rr('BadRequest'), '404': rr('NotFound'), '409': rr('Conflict'), '422': rr('Unprocessable')}, ['jobs'],
    params=[jobp, {'name': 'format', 'in': 'query', 'schema': {'type': 'string', 'enum': ['json', 'text', 'galvatron', 'megatron', 'deepspeed', 'chrome-trace'], 'default': 'json'},
                   'description': 'docs/export.md: each mapping, and what a target cannot express (422 naming the layer). '
                                  'chrome-trace: one iteration in Chrome\'s trace event format, for Perfetto (ui.perfetto.dev) '
                                  'or chrome://tracing: a track per pipeline rank and per link, forward, backward and recompute '
                                  'named by layer range, the bubbles named.'},
            {'name': 'target', 'in': 'query', 'schema': {'type': 'string', 'enum': ['any', 'megatron', 'deepspeed', 'galvatron']},
             'description': 'Which of the job\'s targets\' plans (result.targets[].plan): default the first (result.plan); 404 when the job did not plan that target.'},
            {'name': 'wait', 'in': 'query', 'schema': {'type': 'integer', 'minimum': 1, 'maximum': 60},
             'description': 'Wait for a job that has not finished: answer once it has, or after this many seconds (then a 409 '
                            'while it still runs), so a client can submit and read the plan with two requests.'}])}
# browser clients (docs/http.md "CORS, ETags, query parameters", docs/jobs.md "Watching a job"):
# an event stream, ?wait=, ETag/If-None-Match on reads, OPTIONS on every path, and
# a 400 for a query parameter a route does not declare, on every operation
S['JobEvent'] = {'type': 'object', 'required': ['id', 'state', 'version', 'progress', 'elapsed_s', 'links'],
    'description': 'The data of one event; the event id is the version.', 'properties': {
    'id': {'type': 'integer', 'minimum': 1}, 'state': S['Job']['properties']['state'],
    'version': {'type': 'integer', 'minimum': 0, 'description': 'Grows with every write of the job.'},
    'progress': S['Job']['properties']['progress'], 'elapsed_s': {'type': 'number', 'minimum': 0},
    'error': {'type': 'string'}, 'links': S['Job']['properties']['links']}}
sse = {'text/event-stream': {'schema': {'type': 'string', 'contentMediaType': 'text/event-stream', 'contentSchema': R('JobEvent'), 'description':
    'Events "state" (first, and on each change of state), "progress", then "done" (succeeded, failed or canceled; '
    'links.plan once succeeded) after which the stream ends; each event\'s data is a JobEvent and its id the job\'s '
    'version; comment lines every 15 s while idle. contentSchema is the schema of each event\'s data.'}}}
P['/v1/jobs/{id}']['get']['parameters'] = [jobp, {'name': 'wait', 'in': 'query', 'schema': {'type': 'integer', 'minimum': 1, 'maximum': 60},
    'description': 'Long-poll: answer when the job changes (from If-None-Match, else from the job when the request came) or after this many '
                   'seconds, whichever comes first; a finished job answers at once.'}]
# the event stream has its own operation (jobEvents, below); GET /v1/jobs/{id} with Accept:
# text/event-stream answers the same stream, said in words only, so that generated clients type
# this operation's 200 as Job and not as Job | string
resp['TooManyStreams'] = prob('The tenant already holds --max-streams-per-tenant long-polls and event streams '
                              '(429, with Retry-After); the other tenants\' are unaffected.')
P['/v1/jobs/{id}']['get']['responses']['200']['description'] = ('The job. (With Accept: text/event-stream the answer is '
    'the job\'s event stream instead, as GET /v1/jobs/{id}/events documents.)')
P['/v1/jobs/{id}']['get']['responses']['429'] = rr('TooManyStreams')
P['/v1/jobs/{id}/plan']['get']['responses']['429'] = rr('TooManyStreams')  # ?wait= counts as a long-poll
P['/v1/jobs/{id}/events'] = {'get': op('jobEvents', 'The job\'s changes as Server-Sent Events, until it finishes', {
    '200': {'description': 'The stream.', 'content': sse}, '204': {'description': 'Last-Event-ID is the finished job\'s last event: nothing more will come.'},
    '404': rr('NotFound'), '406': prob('Accept rules text/event-stream out (406).'), '429': rr('TooManyStreams')}, ['jobs'],
    params=[jobp, {'name': 'Last-Event-ID', 'in': 'header', 'schema': {'type': 'string', 'pattern': '^[0-9]+$'},
                   'description': 'Resume: the current state at once when the job changed since, else the next change.'}])}
# the web UI (server/ui.h, docs/http.md "The web UI"): public pages and files compiled into uniapd,
# each answer with the browser headers below (a 404 too)
ui_headers = lambda: {k: {'schema': {'type': 'string'}, 'description': v} for k, v in {
    'Content-Security-Policy': "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
                               "font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none' "
                               '(so the UI has no inline script, style or event handler).',
    'X-Content-Type-Options': 'nosniff.', 'Referrer-Policy': 'no-referrer.', 'X-Frame-Options': 'DENY.',
    'Cache-Control': 'no-cache: the browser revalidates with the ETag (304 while unchanged).'}.items()}
ui_types = {'text/html': 'html', 'text/javascript': 'js', 'text/css': 'css', 'image/svg+xml': 'svg', 'image/png': 'png',
            'image/x-icon': 'ico', 'application/json': 'json', 'text/plain': 'txt'}
# GET /ui (a 308 to /ui/) and GET /ui/ (index.html) are said in words here and in
# info.description: a redirect has no 2xx answer and a documented path has no
# trailing slash (redocly's recommended rules); tests/cli/openapi.sh checks the words
P['/ui/{asset}'] = {'get': op('uiAsset', 'One file of the web UI (GET /ui/ is index.html; GET /ui redirects there)', {
    '200': {'description': 'The file; its type by extension (' + ', '.join('.%s: %s' % (e, t) for t, e in ui_types.items()) +
            '; text types in UTF-8).', 'headers': ui_headers(),
            'content': {t: {'schema': {'type': 'string'} if t.startswith('text/') or t == 'application/json' else {'type': 'string', 'format': 'binary'}}
                        for t in ui_types}},
    '404': rr('NotFound')}, ['ui'], auth=False,
    params=[{'name': 'asset', 'in': 'path', 'required': True, 'schema': {'type': 'string', 'pattern': '^[a-z0-9.-]+$'},
             'description': 'A file name of ui/ (index.html, app.js, ...); any other is a 404.'}])}
for path in ('/v1/openapi.json', '/v1/catalog', '/v1/catalog/{name}', '/v1/clusters/{id}', '/v1/models/{id}', '/v1/jobs/{id}', '/v1/jobs/{id}/plan',
             '/v1/allocations/{id}', '/ui/{asset}'):
    o = P[path]['get']
    o['parameters'] = o.get('parameters', []) + [{'name': 'If-None-Match', 'in': 'header', 'schema': {'type': 'string'},
        'description': 'An ETag of an earlier answer: 304 while the answer is the same.'}]
    o['responses']['200'].setdefault('headers', {})['ETag'] = {'schema': {'type': 'string'}, 'description': 'A hash of the answer.'}
    o['responses']['304'] = {'description': 'Not modified: If-None-Match holds the current ETag.'}
cors = {'Access-Control-Allow-Origin': 'The Origin, when it is one of --cors-origin.',
        'Access-Control-Allow-Methods': 'The methods of this path.',
        'Access-Control-Allow-Headers': 'Authorization, Content-Type, Idempotency-Key, Last-Event-ID, If-None-Match, '
                                        'X-Request-Id, traceparent, tracestate.',
        'Access-Control-Max-Age': '600.'}
for path, ops in P.items():
    for o in ops.values():
        o['responses'].setdefault('400', rr('BadRequest'))
resp['BadRequest']['description'] = 'Malformed JSON, a bad path or argument, or a query parameter the route does not take, named (400).'
resp['ServiceUnavailable']['description'] = ('Out of memory, not ready, the job queue is full, --max-streams long-polls and '
                                             'event streams are open, or the evaluation threads are full (503; Retry-After when full).')
def name_required(o):
    if isinstance(o, dict):
        if isinstance(o.get('required'), list):
            extra = o.get('additionalProperties')
            props = o.setdefault('properties', {})
            for n in o['required']:
                props.setdefault(n, dict(extra) if isinstance(extra, dict) else {})
        for v in list(o.values()):
            name_required(v)
    elif isinstance(o, list):
        for v in o:
            name_required(v)

no_defaults(S)
name_required(S)
doc = {'openapi': '3.1.0',
  'jsonSchemaDialect': 'https://json-schema.org/draft/2020-12/schema',
  'info': {'title': 'uniapd', 'version': '1',
           'license': {'name': 'All rights reserved (no licence is granted yet)', 'identifier': 'LicenseRef-uniap-all-rights-reserved'},
           'description': 'The uniap planning service: upload cluster and model profiles, queue plan, calibration and allocation jobs, poll them, export their plans.\n\n'
                          'Every path also answers OPTIONS: a CORS preflight from an origin allowed with --cors-origin is a 204 with '
                          + ', '.join('%s (%s)' % (k, v.rstrip('.')) for k, v in cors.items()) +
                          '; from another origin a 403 without CORS headers; a plain OPTIONS a 204 with Allow. '
                          'These are not listed as operations, so that generated clients have no function for them.\n\n'
                          'The web UI: GET /ui is a 308 redirect to /ui/, and GET /ui/ is its page (index.html), with the headers of '
                          'GET /ui/{asset}; neither needs a key.'},
  'servers': [{'url': '/'}],
  'security': [{'bearer': []}],
  'tags': [{'name': n, 'description': d} for n, d in (
      ('service', 'Health, readiness, metrics and this document; no key needed.'),
      ('tenant', 'Who the key belongs to.'),
      ('catalog', 'The built-in clusters and models (docs/catalog.md).'),
      ('clusters', 'The tenant\'s cluster profiles, uploaded or imported (Galvatron, nccl-tests), and their calibrations.'),
      ('models', 'The tenant\'s model profiles, uploaded or imported.'),
      ('evaluate', 'Price a given plan at once, without a job.'),
      ('jobs', 'Plan, calibration and allocation jobs: submit, watch (long-poll, events), cancel, read and export.'),
      ('ui', 'The web UI\'s files, compiled into uniapd.'))],
  'paths': P,
  'components': {'securitySchemes': {'bearer': {'type': 'http', 'scheme': 'bearer', 'description': 'A tenant key from `uniapd tenant add`; not needed under --no-auth.'}},
                 'responses': resp, 'schemas': S}}
json.dump(doc, open('schema/openapi.json', 'w'), indent=2)
open('schema/openapi.json', 'a').write('\n')
# the Python client's types follow the document (clients/python/gen_types.py; python-client.sh checks it)
import subprocess, sys
subprocess.run([sys.executable, 'clients/python/gen_types.py'], check=True)
