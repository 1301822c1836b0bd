"""uniap_client.types - the API's JSON documents as TypedDicts.

Generated from schema/openapi.json (info.version 1) by clients/python/gen_types.py;
do not edit: run that script after the document changes (tests/cli/python-client.sh
fails while this file is stale).  Forward references are strings, so the
order of the definitions does not matter to type checkers.
"""
# flake8: noqa
from typing import Any, Dict, List, Literal, NoReturn, NotRequired, Required, TypedDict, Union

Cluster_device_peak_tflops = TypedDict('Cluster_device_peak_tflops', {
    'fp32': Required[float],
    'mixed': Required[float],
    'fp8': NotRequired[float],
}, total=False)
Cluster_device_peak_tflops.__doc__ = """Peak dense throughput of one device in TFLOP/s (1 TFLOP/s = 1e12 FLOP/s) by model precision, each > 0 and at most 1e6: "fp32" for fp32 models, "mixed" (fp16/bf16 tensor cores) for mixed-precision ones. Required when the model has layer types giving forward_flops_per_sample."""

Cluster_device = TypedDict('Cluster_device', {
    'name': NotRequired[str],
    'memory_bytes': Required[float],
    'reserved_bytes': NotRequired[float],
    'peak_tflops': NotRequired['Cluster_device_peak_tflops'],
    'compute_efficiency': NotRequired[float],
    'gemm_half_dim': NotRequired[float],
    'memory_bandwidth_gb_per_s': NotRequired[float],
    'kernel_overhead_us': NotRequired[float],
    'memory_fragmentation': NotRequired[float],
    'memory_margin': NotRequired[float],
}, total=False)
Cluster_device.__doc__ = """One accelerator; every device of the cluster is alike."""

Cluster_hierarchy_item = TypedDict('Cluster_hierarchy_item', {
    'name': Required[str],
    'devices': Required[int],
    'bandwidth_gb_per_s': Required['ClusterBandwidth'],
    'latency_us': NotRequired[float],
    'shared_by': NotRequired[int],
    'link_gb_per_s': NotRequired[float],
}, total=False)

Cluster_collectives = TypedDict('Cluster_collectives', {
    'allreduce': NotRequired['ClusterCollectiveTable'],
    'allgather': NotRequired['ClusterCollectiveTable'],
    'reduce_scatter': NotRequired['ClusterCollectiveTable'],
}, total=False)
Cluster_collectives.__doc__ = """Measured collective bandwidths; a group with no matching entry falls back to the hierarchy."""

Cluster_p2p_item = TypedDict('Cluster_p2p_item', {
    'pp': Required[int],
    'bandwidth_gb_per_s': Required['ClusterBandwidth'],
}, total=False)

Cluster = TypedDict('Cluster', {
    'name': NotRequired[str],
    'nodes': Required[int],
    'devices_per_node': Required[int],
    'device': Required['Cluster_device'],
    'hierarchy': Required[List['Cluster_hierarchy_item']],
    'collectives': NotRequired['Cluster_collectives'],
    'p2p': NotRequired[List['Cluster_p2p_item']],
    'overlap_coefficient': NotRequired[float],
    'calibration': NotRequired[Dict[str, Any]],
}, total=False)
Cluster.__doc__ = """The hardware the planner plans for: how many devices, how much memory each has, and how fast collectives and point-to-point transfers run between them. Decoded by json/jdecode.c (jdec_cluster) and checked by cluster_validate() in core/model.c. Rules that a schema cannot state are listed in the descriptions: each hierarchy level's device count divides the next one's, the last level spans every device, a level equals devices_per_node when nodes > 1, reserved_bytes < memory_bytes, and (size, placement) or pp entries are unique. Bandwidths are in GB/s where 1 GB = 1e9 bytes."""

ClusterCollectiveTable_item = TypedDict('ClusterCollectiveTable_item', {
    'size': Required[int],
    'placement': Required[Literal['consecutive', 'strided']],
    'bandwidth_gb_per_s': Required['ClusterBandwidth'],
}, total=False)

Model_layer_types_item_0 = TypedDict('Model_layer_types_item_0', {
    'forward_s_per_sample': Required[Any],
}, total=False)

Model_layer_types_item_1 = TypedDict('Model_layer_types_item_1', {
    'forward_flops_per_sample': Required[Any],
}, total=False)

Model_graph_layers_item = TypedDict('Model_graph_layers_item', {
    'name': Required[str],
    'type': Required[str],
    'repeat': NotRequired[int],
}, total=False)

Model_graph = TypedDict('Model_graph', {
    'layers': Required[List['Model_graph_layers_item']],
    'edges': NotRequired[List[List[Union[str, int]]]],
}, total=False)
Model_graph.__doc__ = """The layers and the data dependencies between them (a DAG)."""

Model_architecture_moe = TypedDict('Model_architecture_moe', {
    'experts': Required[int],
    'top_k': Required[int],
    'expert_ffn_hidden': Required[int],
    'shared_experts': NotRequired[int],
    'shared_expert_ffn_hidden': NotRequired[int],
    'every': NotRequired[int],
    'first_dense': NotRequired[int],
    'router': NotRequired[Literal['softmax_topk', 'sigmoid_topk']],
    'dropless': NotRequired[bool],
    'capacity_factor': NotRequired[float],
    'load_imbalance': NotRequired[float],
}, total=False)
Model_architecture_moe.__doc__ = """Mixture of experts (docs/catalog.md, "Mixture of experts"): the MLP of the MoE blocks is a router over `experts` routed experts (the mlp kind, FFN size expert_ffn_hidden), top_k of them per token, beside optional shared experts that see every token. Forward FLOPs, parameters (total and active), activations and memory-bound bytes follow Megatron-Core's MoE layer (alltoall token dispatcher, grouped GEMM)."""

Model_architecture_mla = TypedDict('Model_architecture_mla', {
    'q_lora_rank': NotRequired[int],
    'kv_lora_rank': Required[int],
    'qk_nope_head_dim': Required[int],
    'qk_rope_head_dim': Required[int],
    'v_head_dim': Required[int],
}, total=False)
Model_architecture_mla.__doc__ = """Multi-head latent attention (DeepSeek-V2/V3; docs/catalog.md, "Multi-head latent attention"): Q through a q_lora_rank latent (absent: a full projection), K and V up-projected from a kv_lora_rank latent; each head's query and key are qk_nope_head_dim + qk_rope_head_dim wide, its value v_head_dim; kv_heads and head_dim do not apply."""

Model_architecture = TypedDict('Model_architecture', {
    'family': Required[Literal['decoder', 'encoder']],
    'layers': Required[int],
    'hidden': Required[int],
    'heads': Required[int],
    'kv_heads': NotRequired[int],
    'ffn_hidden': NotRequired[int],
    'mlp': NotRequired[Literal['gelu', 'swiglu']],
    'seq_len': Required[int],
    'vocab': Required[int],
    'flash_attention': NotRequired[bool],
    'dropout': NotRequired[bool],
    'biases': NotRequired[bool],
    'norm': NotRequired[Literal['layernorm', 'rmsnorm']],
    'positions': NotRequired[Literal['learned', 'rotary']],
    'tied_embeddings': NotRequired[bool],
    'head_dim': NotRequired[int],
    'window': NotRequired[int],
    'window_every': NotRequired[int],
    'moe': NotRequired['Model_architecture_moe'],
    'mla': NotRequired['Model_architecture_mla'],
}, total=False)
Model_architecture.__doc__ = """Instead of layer_types and graph: the hyper-parameters of a Transformer language model, from which the planner generates the layer types (embedding, block, head) and the chain graph with the formulas of docs/catalog.md, exactly as for the catalog's BERT, GPT and Llama entries. The generated profile is what a plan, a memo or `uniap catalog show` sees; documents printed by the planner give layer_types and graph, not this object. Sizes are counts."""

Model_shape = TypedDict('Model_shape', {
    'encoder': NotRequired[bool],
    'layers': Required[int],
    'hidden': Required[int],
    'heads': Required[int],
    'kv_heads': NotRequired[int],
    'ffn_hidden': NotRequired[int],
    'seq_len': Required[int],
    'vocab': Required[int],
    'mlp': NotRequired[Literal['gelu', 'swiglu']],
    'norm': NotRequired[Literal['layernorm', 'rmsnorm']],
    'positions': NotRequired[Literal['learned', 'rotary']],
    'biases': Required[bool],
    'tied_embeddings': Required[bool],
    'flash_attention': NotRequired[bool],
    'head_dim': NotRequired[int],
    'window': NotRequired[int],
    'window_every': NotRequired[int],
    'experts': NotRequired[int],
    'top_k': NotRequired[int],
    'moe_ffn_hidden': NotRequired[int],
    'shared_ffn_hidden': NotRequired[int],
    'moe_every': NotRequired[int],
    'moe_first_dense': NotRequired[int],
    'capacity_factor': NotRequired[float],
    'router_sigmoid': NotRequired[bool],
    'q_lora_rank': NotRequired[int],
    'kv_lora_rank': NotRequired[int],
    'qk_nope_head_dim': NotRequired[int],
    'qk_rope_head_dim': NotRequired[int],
    'v_head_dim': NotRequired[int],
}, total=False)
Model_shape.__doc__ = """What a runtime's launcher needs to build the model (Megatron-LM's --num-layers, --hidden-size, ...; docs/export.md), beside layer_types and graph. Written by the planner for models generated from an architecture (the catalog's BERT, GPT and Llama, documents giving architecture) and by the Galvatron import; never given together with architecture. The megatron target and export need it. Sizes are counts."""

Model = TypedDict('Model', {
    'name': NotRequired[str],
    'precision': Required[Literal['fp32', 'mixed']],
    'optimizer': NotRequired[Literal['adam', 'sgd_momentum', 'sgd']],
    'state_bytes_per_parameter': NotRequired[float],
    'layer_types': NotRequired[List[Union['Model_layer_types_item_0', 'Model_layer_types_item_1']]],
    'graph': NotRequired['Model_graph'],
    'architecture': NotRequired['Model_architecture'],
    'shape': NotRequired['Model_shape'],
}, total=False)
Model.__doc__ = """The model to train: measured costs of each kind of layer, and the graph of layers. Decoded by json/jdecode.c (jdec_model) and checked by model_validate() in core/model.c. Rules that a schema cannot state: layer type names are unique; every layer's type names a layer type; layer names are unique after repeat expansion; edge endpoints exist; no self-loops, duplicate edges or cycles; with more than one layer every layer has an edge. Units: seconds, bytes, counts. A document gives either layer_types and graph, or an architecture object from which both are generated."""

ModelTpTable = TypedDict('ModelTpTable', {
    '1': Required[float],
}, total=False)
ModelTpTable.__doc__ = """Values by tensor-parallel size: keys are decimal TP sizes 1..65536 without sign or leading zeros; "1" is required; at most 32 entries."""

Plan_stages_item = TypedDict('Plan_stages_item', {
    'devices': Required[List[int]],
    'layers': Required[List[int]],
    'time_s': Required[float],
    'transfer_s': NotRequired[float],
    'memory_bytes': Required[float],
    'rank_memory_bytes': NotRequired[float],
}, total=False)

Plan_layers_item_strategy = TypedDict('Plan_layers_item_strategy', {
    'name': Required[str],
    'dp': Required[int],
    'tp': Required[int],
    'fsdp': Required[int],
    'recompute': Required[bool],
    'selective': NotRequired[bool],
    'zero': NotRequired[int],
    'sp': NotRequired[bool],
    'placement': Required[List[Literal['dp', 'tp', 'fsdp']]],
    'cp': NotRequired[int],
    'etp': NotRequired[int],
    'ep': NotRequired[int],
}, total=False)
Plan_layers_item_strategy.__doc__ = """The layer's intra-layer parallel strategy over its stage's devices."""

Plan_layers_item = TypedDict('Plan_layers_item', {
    'name': Required[str],
    'stage': Required[int],
    'strategy': Required['Plan_layers_item_strategy'],
}, total=False)

Plan = TypedDict('Plan', {
    'pp': Required[int],
    'microbatches': Required[int],
    'microbatch_size': Required[int],
    'batch': NotRequired[Any],
    'schedule': Required[Literal['gpipe', '1f1b', 'interleaved']],
    'virtual_stages': NotRequired[int],
    'cp_comm': NotRequired[Literal['p2p', 'a2a']],
    'objective': NotRequired[Literal['formula', 'makespan']],
    'formula_tpi_s': NotRequired[float],
    'context_parallel': NotRequired[int],
    'fp8': NotRequired[bool],
    'runtime': NotRequired[Literal['default', 'megatron-lm', 'pytorch', 'galvatron', 'deepspeed', 'megatron-deepspeed']],
    'tpi_s': Required[float],
    'throughput_samples_per_s': NotRequired[float],
    'memory_limit_bytes': NotRequired[float],
    'stages': Required[List['Plan_stages_item']],
    'layers': Required[List['Plan_layers_item']],
    'optimal': NotRequired[Any],
    'claim_tolerance': NotRequired[Any],
    'gap': NotRequired[Any],
    'candidates': NotRequired[Any],
    'solve_s': NotRequired[Any],
    'space': NotRequired[Any],
    'cluster': NotRequired[Any],
    'model': NotRequired[Any],
    'devices': NotRequired[Any],
    'bound': NotRequired[Any],
    'status': NotRequired[Any],
    'bound_s': NotRequired[Any],
    'target': NotRequired[Any],
    'targets': NotRequired[Any],
}, total=False)
Plan.__doc__ = """A training plan: the pipeline (stages, micro-batches, schedule) and each layer's stage and intra-layer strategy. Printed by `uniap plan`, read by `uniap evaluate --plan`, decoded by json/jdecode.c (jdec_plan). Rules that a schema cannot state: stages has exactly pp entries (pp x virtual_stages when interleaved: stage i runs on the devices of stage i mod pp); every layer index appears in exactly one stage's layers and that stage is the layer's stage; no device is in two stages; a strategy's dp * tp * fsdp equals its stage's device count; placement lists exactly the dimensions of degree > 1; layer names are unique. Units: seconds, bytes, counts."""

Runs = TypedDict('Runs', {
    'description': NotRequired[str],
    'runtime': NotRequired[Literal['default', 'megatron-lm', 'pytorch', 'galvatron', 'deepspeed', 'megatron-deepspeed']],
    'model': NotRequired['RunsModel'],
    'runs': Required[List['RunsRun']],
}, total=False)
Runs.__doc__ = """Training runs measured on a cluster, which `uniap calibrate` fits the cluster profile's hardware parameters to (docs/calibration.md). Decoded by json/runs.c (runs_decode). Each run names what ran (a plan document, uniform degrees or a Megatron-LM argument string) and what was measured. Rules that a schema cannot state: run names are unique; a plan's microbatches * microbatch_size equals batch when both are given; a Megatron-LM --global-batch-size equals batch when both are given; a uniform or Megatron-LM layout's pp * tp * dp * fsdp equals the cluster's device count; peak_memory_bytes has one entry per pipeline stage. Units: seconds, bytes, samples."""

RunsRun_uniform = TypedDict('RunsRun_uniform', {
    'pp': Required[int],
    'tp': Required[int],
    'dp': NotRequired[int],
    'fsdp': NotRequired[int],
    'microbatches': Required[int],
    'recompute': NotRequired[bool],
    'tp_inner': NotRequired[bool],
}, total=False)
RunsRun_uniform.__doc__ = """Uniform degrees: every stage holds pp-th of the layers (Megatron-LM's split, docs/calibration.md) and every layer uses the same strategy."""

RunsRun_measured = TypedDict('RunsRun_measured', {
    'iteration_s': NotRequired[float],
    'samples_per_s': NotRequired[float],
    'peak_memory_bytes': NotRequired[List[float]],
    'oom': NotRequired[bool],
}, total=False)
RunsRun_measured.__doc__ = """What was measured: exactly one of iteration_s and samples_per_s unless oom is true (then neither)."""

RunsRun = TypedDict('RunsRun', {
    'name': Required[str],
    'model': NotRequired['RunsModel'],
    'batch': NotRequired[int],
    'runtime': NotRequired[Literal['default', 'megatron-lm', 'pytorch', 'galvatron', 'deepspeed', 'megatron-deepspeed']],
    'schedule': NotRequired[Literal['gpipe', '1f1b']],
    'plan': NotRequired['Plan'],
    'uniform': NotRequired['RunsRun_uniform'],
    'megatron': NotRequired[str],
    'measured': Required['RunsRun_measured'],
    'source': NotRequired[str],
}, total=False)
RunsRun.__doc__ = """One measured run. Exactly one of plan, uniform and megatron gives its layout."""

Allocation_pools_item = TypedDict('Allocation_pools_item', {
    'name': Required[str],
    'devices': Required[int],
    'devices_used': Required[int],
    'first_size': Required[int],
    'sizes_count': Required[int],
    'drained_nodes': Required[List[int]],
    'cluster': Required['Cluster'],
}, total=False)

Allocation = TypedDict('Allocation', {
    'objective': Required[Literal['throughput', 'fair', 'deadline', 'missed']],
    'value': Required[float],
    'throughput_value': Required[float],
    'price_of_fairness': NotRequired[float],
    'devices': Required[int],
    'devices_used': Required[int],
    'planner_runs': Required[int],
    'cached_points': NotRequired[int],
    'stopped': NotRequired[Literal[True]],
    'unplanned_points': NotRequired[int],
    'sizes': Required[List[int]],
    'drained_nodes': NotRequired[List[int]],
    'cluster': NotRequired['Cluster'],
    'pools': NotRequired[List['Allocation_pools_item']],
    'jobs': Required[List['AllocationJob']],
    'moves': NotRequired[int],
    'ended': NotRequired[List[str]],
}, total=False)
Allocation.__doc__ = """The report of an allocation: `uniap allocate`'s output and the result of an allocation job (POST /v1/allocations), written by json/jobs.c (jobs_report); docs/allocation.md. A report given back as current or curves is read for its sizes, pools or cluster, and each job's name, spec, pool, devices, first_device, curve and plan. Units: samples/s, seconds, devices."""

AllocationJob = TypedDict('AllocationJob', {
    'name': Required[str],
    'tenant': NotRequired[str],
    'redacted': NotRequired[Literal[True]],
    'pool': NotRequired[str],
    'devices': Required[int],
    'first_device': NotRequired[int],
    'nodes': NotRequired[List[int]],
    'throughput_samples_per_s': Required[float],
    'normalized_throughput': Required[float],
    'finish_s': NotRequired[float],
    'meets_deadline': NotRequired[bool],
    'previous_devices': NotRequired[int],
    'previous_pool': NotRequired[str],
    'moved': NotRequired[bool],
    'curve': Required[List[Union[float, None]]],
    'plan': Required[Union['Plan', None]],
    'spec': NotRequired[Dict[str, Any]],
}, total=False)

AllocationJobs_item = TypedDict('AllocationJobs_item', {
    'name': Required[str],
    'model': Required[Union[str, 'Model', int]],
    'batch': Required[int],
    'weight': NotRequired[float],
    'min_devices': NotRequired[int],
    'max_devices': NotRequired[int],
    'samples': NotRequired[float],
    'tenant': NotRequired[str],
    'deadline_s': NotRequired[float],
    'schedule': NotRequired[Literal['gpipe', '1f1b']],
    'recompute': NotRequired[bool],
    'zero': NotRequired[bool],
    'sequence_parallel': NotRequired[bool],
    'selective_recompute': NotRequired[bool],
    'fp8': NotRequired[bool],
}, total=False)

Problem = TypedDict('Problem', {
    'type': Required[str],
    'title': Required[str],
    'status': Required[int],
    'detail': NotRequired[str],
    'instance': NotRequired[str],
    'pointer': NotRequired[str],
}, total=False)
Problem.__doc__ = """RFC 9457 problem details; every error is answered with one (application/problem+json)."""

DocumentMeta = TypedDict('DocumentMeta', {
    'id': Required[int],
    'kind': Required[Literal['cluster', 'model']],
    'name': Required[str],
    'bytes': Required[int],
    'created_at': Required[str],
}, total=False)

DocumentList = TypedDict('DocumentList', {
    'items': Required[List['DocumentMeta']],
    'next_cursor': Required[Union[str, None]],
}, total=False)

CatalogEntry = TypedDict('CatalogEntry', {
    'name': NotRequired[str],
    'description': NotRequired[str],
    'source': NotRequired[str],
}, total=False)

Catalog = TypedDict('Catalog', {
    'clusters': Required[List['CatalogEntry']],
    'models': Required[List['CatalogEntry']],
}, total=False)

Whoami = TypedDict('Whoami', {
    'tenant': Required[str],
    'id': Required[int],
}, total=False)

Status = TypedDict('Status', {
    'status': Required[Literal['ok', 'ready']],
}, total=False)

EvaluateRequest = TypedDict('EvaluateRequest', {
    'cluster': Required[Union[int, str, 'Cluster']],
    'model': Required[Union[int, str, 'Model']],
    'batch': Required[int],
    'plan': Required['Plan'],
}, total=False)

EvaluateReport = TypedDict('EvaluateReport', {
    'feasible': NotRequired[bool],
    'plan_tpi_s': NotRequired[float],
    'tpi_matches': NotRequired[bool],
    'memory_limit_bytes': NotRequired[float],
    'stages': NotRequired[List['EvaluateStage']],
}, total=False)
EvaluateReport.__doc__ = """What `uniap evaluate` prints (jenc_evaluate_report); feasible false is a 200 too."""

EvaluateStage = TypedDict('EvaluateStage', {
    'time_s': NotRequired[float],
    'memory_bytes': NotRequired[float],
    'rank_memory_bytes': NotRequired[float],
    'inflight_microbatches': NotRequired[int],
    'memory': NotRequired['StageMemory'],
}, total=False)

StageMemory = TypedDict('StageMemory', {
    'model_states_bytes': Required[float],
    'weight_bytes': Required[float],
    'gradient_bytes': Required[float],
    'optimizer_state_bytes': Required[float],
    'fsdp_accumulation_bytes': Required[float],
    'activation_bytes': Required[float],
    'allocated_bytes': Required[float],
    'memory_limit_bytes': Required[float],
    'fragmentation_bytes': Required[float],
    'fsdp_transient_bytes': Required[float],
    'reserved_bytes': Required[float],
    'margin_bytes': Required[float],
    'free_bytes': Required[float],
    'device_memory_bytes': Required[float],
}, total=False)
StageMemory.__doc__ = """Where one device of the stage spends its memory, in bytes (core/cost.h, struct cost_stage_memory): allocated = model_states + fsdp_accumulation + activation, the stage fits iff allocated <= memory_limit_bytes (iff free >= 0), and allocated + fragmentation + fsdp_transient + reserved + margin + free = device_memory."""

PlanRequest = TypedDict('PlanRequest', {
    'cluster': Required[Union[int, str, 'Cluster']],
    'model': Required[Union[int, str, 'Model']],
    'batch': Required[int],
    'schedule': NotRequired[Literal['gpipe', '1f1b', 'interleaved']],
    'virtual_stages': NotRequired[int],
    'space': NotRequired[Literal['unified', 'inter', 'intra', 'uniform']],
    'time_limit_s': NotRequired[float],
    'deadline_s': NotRequired[float],
    'gap': NotRequired[float],
    'recompute': NotRequired[bool],
    'zero': NotRequired[bool],
    'sequence_parallel': NotRequired[bool],
    'selective_recompute': NotRequired[bool],
    'uneven_microbatches': NotRequired[bool],
    'early_stop': NotRequired[bool],
    'every_candidate': NotRequired[bool],
    'objective': NotRequired[Literal['formula', 'makespan']],
    'fp8': NotRequired[bool],
    'cp_comm': NotRequired[Literal['p2p', 'a2a']],
    'context_parallel': NotRequired[int],
    'runtime': NotRequired[Literal['default', 'megatron-lm', 'pytorch', 'galvatron', 'deepspeed', 'megatron-deepspeed']],
    'memory_margin': NotRequired[float],
    'targets': NotRequired[List[Literal['any', 'megatron', 'deepspeed', 'galvatron']]],
}, total=False)

TargetResult = TypedDict('TargetResult', {
    'target': Required[Literal['any', 'megatron', 'deepspeed', 'galvatron']],
    'runtime': Required[str],
    'status': Required[Literal['optimal', 'feasible', 'infeasible', 'error']],
    'tpi_s': NotRequired[float],
    'pp': NotRequired[int],
    'microbatches': NotRequired[int],
    'schedule': NotRequired[Literal['gpipe', '1f1b', 'interleaved']],
    'gap': NotRequired[float],
    'bound_s': NotRequired[float],
    'price': NotRequired[float],
    'plan': NotRequired[Union['Plan', None]],
    'error': NotRequired[str],
    'solve_s': Required[float],
}, total=False)

Candidate = TypedDict('Candidate', {
    'pp': NotRequired[int],
    'virtual_stages': NotRequired[int],
    'microbatches': NotRequired[int],
    'status': NotRequired[str],
    'tpi_s': NotRequired[Union[float, None]],
    'solve_s': NotRequired[float],
    'bound': NotRequired[Union[float, None]],
    'method': NotRequired[str],
    'strategy': NotRequired[str],
    'note': NotRequired[str],
    'cached': NotRequired[bool],
    'shared': NotRequired[bool],
}, total=False)

PlanResult = TypedDict('PlanResult', {
    'plan': Required[Union['Plan', None]],
    'candidates': Required[List['Candidate']],
    'space': Required[str],
    'optimal': Required[bool],
    'gap': Required[Union[float, None]],
    'bound_s': Required[Union[float, None]],
    'solve_s': Required[float],
    'target': NotRequired[Literal['any', 'megatron', 'deepspeed', 'galvatron']],
    'targets': NotRequired[List['TargetResult']],
}, total=False)

Job_progress = TypedDict('Job_progress', {
    'candidates_done': NotRequired[int],
    'candidates_total': NotRequired[int],
    'best_tpi_s': NotRequired[Union[float, None]],
    'bound_s': NotRequired[Union[float, None]],
}, total=False)
Job_progress.__doc__ = """A plan: candidates solved of all; a calibration: fits done (the fit, then one per leave-one-out fold); an allocation: curve points settled (planned or reused) of all."""

Job_links = TypedDict('Job_links', {
    'self': NotRequired[str],
    'plan': NotRequired[str],
}, total=False)

Job = TypedDict('Job', {
    'id': Required[int],
    'state': Required[Literal['queued', 'running', 'succeeded', 'failed', 'canceled']],
    'created_at': Required[str],
    'started_at': Required[Union[str, None]],
    'finished_at': Required[Union[str, None]],
    'progress': Required['Job_progress'],
    'idempotency_key': NotRequired[str],
    'error': NotRequired[str],
    'request': NotRequired[Union['JobRequest', 'CalibrationJobRequest']],
    'result': NotRequired[Union['PlanResult', 'CalibrationResult', 'Allocation']],
    'links': Required['Job_links'],
    'kind': NotRequired[Literal['plan', 'calibration', 'allocation']],
}, total=False)

CalibrationRequest = TypedDict('CalibrationRequest', {
    'runs': Required['Runs'],
    'fit': NotRequired[List[str]],
    'leave_one_out': NotRequired[bool],
    'prior_weight': NotRequired[float],
    'name': NotRequired[str],
    'time_limit_s': NotRequired[float],
    'allow_bounds': NotRequired[bool],
}, total=False)

CalibrationJobRequest = TypedDict('CalibrationJobRequest', {
    'cluster': Required[int],
    'fit': NotRequired[List[str]],
    'leave_one_out': Required[bool],
    'prior_weight': Required[float],
    'name': NotRequired[str],
    'time_limit_s': Required[float],
    'allow_bounds': NotRequired[bool],
}, total=False)
CalibrationJobRequest.__doc__ = """A calibration's options, defaults filled in; cluster is the id of the path."""

CalibrationReport = TypedDict('CalibrationReport', {
    'cluster': NotRequired[Union[str, None]],
    'fitted': NotRequired[bool],
    'runs': NotRequired[List[Dict[str, Any]]],
    'parameters': NotRequired[List[Dict[str, Any]]],
}, total=False)
CalibrationReport.__doc__ = """The report of `uniap calibrate` (docs/calibration.md): per run the measured, datasheet, fitted and leave-one-out times and errors, the fitted parameters with their priors and bounds, the fit summary."""

CalibrationResult_cluster_links = TypedDict('CalibrationResult_cluster_links', {
    'self': NotRequired[str],
}, total=False)

CalibrationResult_cluster = TypedDict('CalibrationResult_cluster', {
    'id': Required[int],
    'name': Required[str],
    'links': Required['CalibrationResult_cluster_links'],
}, total=False)
CalibrationResult_cluster.__doc__ = """The calibrated cluster, stored as a new document of the tenant."""

CalibrationResult = TypedDict('CalibrationResult', {
    'cluster': Required['CalibrationResult_cluster'],
    'report': Required['CalibrationReport'],
}, total=False)

AllocationRequest = TypedDict('AllocationRequest', {
    'cluster': NotRequired[Union[int, str, 'Cluster']],
    'clusters': NotRequired[List[Union[int, str, 'Cluster']]],
    'jobs': Required['AllocationJobs'],
    'objective': NotRequired[Literal['throughput', 'fair', 'deadline', 'missed']],
    'restart_cost': NotRequired[float],
    'drain': NotRequired[str],
    'no_plans': NotRequired[bool],
    'time_limit_s': NotRequired[float],
    'current': NotRequired['Allocation'],
    'curves': NotRequired['Allocation'],
}, total=False)
AllocationRequest.__doc__ = """An allocation of one cluster, or of several pools (one device type each), among training jobs (docs/allocation.md); give cluster or clusters, not both."""

JobList = TypedDict('JobList', {
    'items': Required[List['Job']],
    'next_cursor': Required[Union[str, None]],
}, total=False)

JobRequest = TypedDict('JobRequest', {
    'cluster': Required[Union[int, str]],
    'model': Required[Union[int, str]],
    'batch': Required[int],
    'schedule': NotRequired[Literal['gpipe', '1f1b', 'interleaved']],
    'virtual_stages': NotRequired[int],
    'space': NotRequired[Literal['unified', 'inter', 'intra', 'uniform']],
    'time_limit_s': NotRequired[float],
    'deadline_s': NotRequired[float],
    'gap': NotRequired[float],
    'recompute': NotRequired[bool],
    'zero': NotRequired[bool],
    'sequence_parallel': NotRequired[bool],
    'selective_recompute': NotRequired[bool],
    'uneven_microbatches': NotRequired[bool],
    'early_stop': NotRequired[bool],
    'every_candidate': NotRequired[bool],
    'objective': NotRequired[Literal['formula', 'makespan']],
    'fp8': NotRequired[bool],
    'cp_comm': NotRequired[Literal['p2p', 'a2a']],
    'context_parallel': NotRequired[int],
    'runtime': NotRequired[Literal['default', 'megatron-lm', 'pytorch', 'galvatron', 'deepspeed', 'megatron-deepspeed']],
    'memory_margin': NotRequired[float],
    'targets': NotRequired[List[Literal['any', 'megatron', 'deepspeed', 'galvatron']]],
}, total=False)
JobRequest.__doc__ = """The plan request's options as given (a member the request left out is absent: its default applied); cluster and model as the stored id or catalog name given, or "inline" for a document in the request."""

GalvatronOverlapFile = TypedDict('GalvatronOverlapFile', {
    'overlap_coe': Required[float],
}, total=False)
GalvatronOverlapFile.__doc__ = """overlap_coefficient.json."""

GalvatronConfigFile = TypedDict('GalvatronConfigFile', {
    'num_hidden_layers': NotRequired[int],
    'n_layer': NotRequired[int],
    'n_layers': NotRequired[int],
    'num_layers': NotRequired[int],
    'num_decoder_layers': NotRequired[int],
    'hidden_size': NotRequired[int],
    'n_embd': NotRequired[int],
    'dim': NotRequired[int],
    'd_model': NotRequired[int],
    'embed_dim': NotRequired[int],
    'num_attention_heads': NotRequired[int],
    'n_head': NotRequired[int],
    'n_heads': NotRequired[int],
    'num_heads': NotRequired[int],
    'max_position_embeddings': NotRequired[int],
    'n_positions': NotRequired[int],
    'image_size': NotRequired[int],
    'patch_size': NotRequired[int],
}, total=False)
GalvatronConfigFile.__doc__ = """The model's hyper-parameter file (a Hugging Face style config); the family is told by its keys (docs/galvatron.md), other keys are ignored."""

GalvatronMemoryEntry = TypedDict('GalvatronMemoryEntry', {
    'parameter_size': NotRequired[float],
    'tp_activation_per_bsz_dict': NotRequired[Dict[str, float]],
}, total=False)
GalvatronMemoryEntry.__doc__ = """A layer type: parameters and activation per sample by TP size."""

GalvatronMemoryOther = TypedDict('GalvatronMemoryOther', {
    'model_states': NotRequired[Union[float, Dict[str, float]]],
    'activation': NotRequired[Union[float, Dict[str, float]]],
}, total=False)
GalvatronMemoryOther.__doc__ = """The parts outside the layers on a pipeline stage."""

GalvatronClusterImport = TypedDict('GalvatronClusterImport', {
    'name': NotRequired[str],
    'nodes': Required[int],
    'gpus_per_node': Required[int],
    'memory_bytes': NotRequired[float],
    'reserved_bytes': NotRequired[float],
    'allreduce': Required['GalvatronAllreduceFile'],
    'p2p': NotRequired['GalvatronP2pFile'],
    'overlap': NotRequired['GalvatronOverlapFile'],
    'sp_time': NotRequired['GalvatronSpTimeFile'],
}, total=False)
GalvatronClusterImport.__doc__ = """?format=galvatron: Galvatron hardware files (docs/galvatron.md)."""

GalvatronModelImport = TypedDict('GalvatronModelImport', {
    'name': NotRequired[str],
    'config': Required['GalvatronConfigFile'],
    'computation': Required['GalvatronComputationFile'],
    'memory': Required['GalvatronMemoryFile'],
    'precision': NotRequired[Literal['bf16', 'fp16', 'fp32']],
    'seq': NotRequired[int],
    'bsz': NotRequired[int],
    'sequence_parallel': NotRequired[bool],
}, total=False)
GalvatronModelImport.__doc__ = """?format=galvatron: a Galvatron model config and its profiles (docs/galvatron.md)."""

NcclTestsImport_outputs_item_1 = TypedDict('NcclTestsImport_outputs_item_1', {
    'kind': NotRequired[Literal['all_reduce', 'all_gather', 'reduce_scatter', 'alltoall', 'sendrecv']],
    'text': Required[str],
}, total=False)

NcclTestsImport = TypedDict('NcclTestsImport', {
    'name': NotRequired[str],
    'base': Required[Union[int, str, 'Cluster']],
    'ranks': NotRequired[int],
    'outputs': Required[List[Union[str, 'NcclTestsImport_outputs_item_1']]],
}, total=False)
NcclTestsImport.__doc__ = """?format=nccl-tests: nccl-tests runs overlaid on a base cluster (docs/nccl.md)."""

AllocationView_progress = TypedDict('AllocationView_progress', {
    'candidates_done': NotRequired[int],
    'candidates_total': NotRequired[int],
    'best_tpi_s': NotRequired[Union[float, None]],
    'bound_s': NotRequired[Union[float, None]],
}, total=False)
AllocationView_progress.__doc__ = """A plan: candidates solved of all; a calibration: fits done (the fit, then one per leave-one-out fold); an allocation: curve points settled (planned or reused) of all."""

AllocationView_links = TypedDict('AllocationView_links', {
    'self': NotRequired[str],
    'plan': NotRequired[str],
}, total=False)

AllocationView = TypedDict('AllocationView', {
    'id': Required[int],
    'state': Required[Literal['queued', 'running', 'succeeded', 'failed', 'canceled']],
    'kind': Required[Literal['plan', 'calibration', 'allocation']],
    'created_at': NotRequired[str],
    'started_at': NotRequired[Union[str, None]],
    'finished_at': NotRequired[Union[str, None]],
    'progress': NotRequired['AllocationView_progress'],
    'error': NotRequired[str],
    'links': Required['AllocationView_links'],
    'view': Required[Literal['owner', 'tenant']],
    'result': NotRequired['Allocation'],
}, total=False)
AllocationView.__doc__ = """An allocation job as the caller may see it: its owner whole (view owner), a tenant one of its jobs names only once it succeeded, with the other jobs redacted (view tenant); never its request."""

JobEvent_progress = TypedDict('JobEvent_progress', {
    'candidates_done': NotRequired[int],
    'candidates_total': NotRequired[int],
    'best_tpi_s': NotRequired[Union[float, None]],
    'bound_s': NotRequired[Union[float, None]],
}, total=False)
JobEvent_progress.__doc__ = """A plan: candidates solved of all; a calibration: fits done (the fit, then one per leave-one-out fold); an allocation: curve points settled (planned or reused) of all."""

JobEvent_links = TypedDict('JobEvent_links', {
    'self': NotRequired[str],
    'plan': NotRequired[str],
}, total=False)

JobEvent = TypedDict('JobEvent', {
    'id': Required[int],
    'state': Required[Literal['queued', 'running', 'succeeded', 'failed', 'canceled']],
    'version': Required[int],
    'progress': Required['JobEvent_progress'],
    'elapsed_s': Required[float],
    'error': NotRequired[str],
    'links': Required['JobEvent_links'],
}, total=False)
JobEvent.__doc__ = """The data of one event; the event id is the version."""

ClusterBandwidth = float
ClusterCollectiveTable = List['ClusterCollectiveTable_item']
RunsModel = Union[str, 'Model', int]
AllocationJobs = List['AllocationJobs_item']
GalvatronAllreduceFile = Dict[str, float]
GalvatronP2pFile = Dict[str, float]
GalvatronSpTimeFile = Dict[str, float]
GalvatronComputationFile = Dict[str, float]
GalvatronMemoryFile = Dict[str, Union['GalvatronMemoryEntry', 'GalvatronMemoryOther', Dict[str, Union['GalvatronMemoryEntry', 'GalvatronMemoryOther']], Dict[str, float]]]

__all__ = ['Allocation', 'AllocationJob', 'AllocationJobs', 'AllocationJobs_item', 'AllocationRequest', 'AllocationView', 'AllocationView_links', 'AllocationView_progress', 'Allocation_pools_item', 'CalibrationJobRequest', 'CalibrationReport', 'CalibrationRequest', 'CalibrationResult', 'CalibrationResult_cluster', 'CalibrationResult_cluster_links', 'Candidate', 'Catalog', 'CatalogEntry', 'Cluster', 'ClusterBandwidth', 'ClusterCollectiveTable', 'ClusterCollectiveTable_item', 'Cluster_collectives', 'Cluster_device', 'Cluster_device_peak_tflops', 'Cluster_hierarchy_item', 'Cluster_p2p_item', 'DocumentList', 'DocumentMeta', 'EvaluateReport', 'EvaluateRequest', 'EvaluateStage', 'GalvatronAllreduceFile', 'GalvatronClusterImport', 'GalvatronComputationFile', 'GalvatronConfigFile', 'GalvatronMemoryEntry', 'GalvatronMemoryFile', 'GalvatronMemoryOther', 'GalvatronModelImport', 'GalvatronOverlapFile', 'GalvatronP2pFile', 'GalvatronSpTimeFile', 'Job', 'JobEvent', 'JobEvent_links', 'JobEvent_progress', 'JobList', 'JobRequest', 'Job_links', 'Job_progress', 'Model', 'ModelTpTable', 'Model_architecture', 'Model_architecture_mla', 'Model_architecture_moe', 'Model_graph', 'Model_graph_layers_item', 'Model_layer_types_item_0', 'Model_layer_types_item_1', 'Model_shape', 'NcclTestsImport', 'NcclTestsImport_outputs_item_1', 'Plan', 'PlanRequest', 'PlanResult', 'Plan_layers_item', 'Plan_layers_item_strategy', 'Plan_stages_item', 'Problem', 'Runs', 'RunsModel', 'RunsRun', 'RunsRun_measured', 'RunsRun_uniform', 'StageMemory', 'Status', 'TargetResult', 'Whoami']
