#!/usr/bin/env python3
"""bench/galvatron/model.py - Galvatron v2.4.0's own cost model and search on Galvatron's profiles.

What it does: prices a plan (a Galvatron config, e.g. `uniap export --format galvatron`) with
Galvatron's cost model, or runs Galvatron's own parallelism search, on the measured A100 profiles
of the fixtures, so that bench/galvatron/compare.py can set uniap's estimates beside Galvatron's.

What it needs:
  GALVATRON_SRC  a checkout of PKU-DAIR/Hetu-Galvatron at commit
                 498bcadeb6ff80cd246bdc4321124da0f4b2d89b (tag v2.4.0); no default.
  python3-numpy; g++ and pybind11-dev to compile Galvatron's DP core (csrc/dp_core.cpp) on first
  use into GALVATRON_BUILD (default build/galvatron/dp-core).
  The fixtures: FIX (default ../shared/fixtures/galvatron-v2.4.0, else
  /work/shared/fixtures/galvatron-v2.4.0).
Nothing of Galvatron is copied into this repository: its search-engine modules
(galvatron/core/search_engine/{cost_model,dynamic_programming,search_engine}.py and
galvatron/utils/{config,strategy}_utils.py) are loaded by file path from GALVATRON_SRC.
Run from the repository root; scratch files go under build/galvatron/tmp and are removed.

torch, tqdm and scipy are stubbed: the search engine's modules do not call torch; scipy's
curve_fit is only used for linear fits (sp_time files, 'batch' profile mode) and is replaced by
the least-squares line, which is what curve_fit converges to for a linear model.

  eval:   model.py eval --model gpt-6.7b --cluster 1x8 --config galvatron_config.json
          prints JSON: Galvatron's time per iteration (s) and per-stage memory (MB) with its terms.
  search: model.py search --model gpt-6.7b --cluster 1x8 --bsz 16 [--memory-gb 80] [--max-tp-deg 0]
          runs GalvatronSearchEngine.parallelism_optimization() with settle_bsz and prints the
          config it writes plus the eval of that config.

Profile-format adapter (the only change to the inputs; printed under "adapted"): some fixture
files predate v2.4.0's layout. (a) memory entries without the sequence-length level
(GPT, Llama) are wrapped as {seq: entry}; (b) scalar other_memory model_states/activation
(GPT, Llama) become {tp: value/tp} (the same reading as uniap's import: a scalar is TP 1);
(c) computation files with only bare `layertype_0` and raw `layernum[..]_bsz<B>` totals
(GPT-1.5B/2.7B) get the keys v2.4.0's profiler writes from those totals
(core/profiler/model_profiler.py:344-368): layertype_0_bsz<B>_seq<S> and
layertype_other_bsz<B>_seq<S>.
"""
import argparse, atexit, importlib, importlib.util, json, math, os, shutil, subprocess, sys, sysconfig, tempfile, types
from types import SimpleNamespace

import numpy as np

SRC = os.environ.get("GALVATRON_SRC", "")
BUILD = os.path.abspath(os.environ.get("GALVATRON_BUILD", "build/galvatron/dp-core"))
TMP = os.path.abspath("build/galvatron/tmp")


def _fixtures():
    f = os.environ.get("FIX", "../shared/fixtures/galvatron-v2.4.0")
    if not os.path.isdir(f):
        f = "/work/shared/fixtures/galvatron-v2.4.0"
    if not os.path.isdir(os.path.join(f, "hardware")):
        sys.exit(f"model.py: no Galvatron fixtures at {f} (set FIX)")
    return os.path.abspath(f)


FIX = _fixtures()


# ----------------------------------------------------------------------------- loading
def _stub_modules():
    tq = types.ModuleType("tqdm")
    tq.trange = range
    tq.tqdm = lambda x, *a, **k: x
    sys.modules.setdefault("tqdm", tq)
    sc = types.ModuleType("scipy")
    opt = types.ModuleType("scipy.optimize")

    def curve_fit(f, x, y, *a, **k):  # linear models only (m*x + c)
        x = np.asarray(x, float); y = np.asarray(y, float)
        A = np.vstack([x, np.ones_like(x)]).T
        popt = np.linalg.lstsq(A, y, rcond=None)[0]
        return popt, np.zeros((2, 2))
    opt.curve_fit = curve_fit
    sc.optimize = opt
    sys.modules.setdefault("scipy", sc)
    sys.modules.setdefault("scipy.optimize", opt)
    sys.modules.setdefault("torch", types.ModuleType("torch"))  # never called by the search engine


def _package(name, path):
    m = types.ModuleType(name)
    m.__path__ = [path]
    sys.modules[name] = m
    return m


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec)
    sys.modules[name] = m
    spec.loader.exec_module(m)
    return m


def _dp_core():
    sys.path.insert(0, BUILD)
    try:
        import galvatron_dp_core  # noqa: F401
        return
    except ImportError:
        pass
    os.makedirs(BUILD, exist_ok=True)
    inc = sysconfig.get_paths()["include"]
    out = os.path.join(BUILD, "galvatron_dp_core" + sysconfig.get_config_var("EXT_SUFFIX"))
    subprocess.check_call(["g++", "-O3", "-shared", "-std=c++14", "-fPIC", "-I" + inc,
                           os.path.join(SRC, "csrc", "dp_core.cpp"), "-o", out])
    importlib.invalidate_caches()
    import galvatron_dp_core  # noqa: F401


def load_galvatron():
    if not SRC:
        sys.exit("model.py: set GALVATRON_SRC to a checkout of PKU-DAIR/Hetu-Galvatron at commit "
                 "498bcadeb6ff80cd246bdc4321124da0f4b2d89b (v2.4.0)")
    _stub_modules()
    g = os.path.join(SRC, "galvatron")
    if not os.path.isfile(os.path.join(g, "core", "search_engine", "cost_model.py")):
        sys.exit(f"GALVATRON_SRC={SRC}: no galvatron/core/search_engine/cost_model.py")
    _package("galvatron", g)
    gu = _package("galvatron.utils", os.path.join(g, "utils"))
    su = _load("galvatron.utils.strategy_utils", os.path.join(g, "utils", "strategy_utils.py"))
    cu = _load("galvatron.utils.config_utils", os.path.join(g, "utils", "config_utils.py"))
    for mod in (cu, su):  # galvatron/utils/__init__.py: from .config_utils import *, strategy funcs
        for k, v in vars(mod).items():
            if not k.startswith("_"):
                setattr(gu, k, v)
    _package("galvatron.core", os.path.join(g, "core"))
    _package("galvatron.core.search_engine", os.path.join(g, "core", "search_engine"))
    _dp_core()
    se = importlib.import_module("galvatron.core.search_engine.search_engine")
    cm = importlib.import_module("galvatron.core.search_engine.cost_model")
    dpm = importlib.import_module("galvatron.core.search_engine.dynamic_programming")
    return se, cm, dpm, su


# ----------------------------------------------------------------------------- models
# (folder, config file, profile-name suffix, Galvatron model family, needs _sp memory entries)
MODELS = {
    "bert-large": ("bert_hf", "bert-large-uncased.json", "hidden1024_head16", "bert", True, 512),
    "gpt-1.5b": ("gpt_hf", "gpt-1.5b.json", "hidden1600_head32_seqlen1024", "gpt", False, None),
    "gpt-2.7b": ("gpt_hf", "gpt-2.7b.json", "hidden2560_head32_seqlen2048", "gpt", False, None),
    "gpt-6.7b": ("gpt_hf", "gpt-6.7b.json", "hidden4096_head32_seqlen2048", "gpt", False, None),
    "llama-7b": ("llama_hf", "llama-7b.json", "hidden4096_head32_seqlen2048", "llama", False, None),
    "vit-huge": ("vit_hf", "vit-huge-patch16-224.json", "hidden1280_head16", "vit", False, None),
    "vit-xhuge": ("vit_hf", "vit-xhuge-patch16-224.json", "hidden2560_head32", "vit", False, None),
    "swin-huge": ("swin", "swin-huge-patch4-window7-224.json", "swin-huge", "swin", False, None),
    "t5-3B": ("T5", "t5-3B.json", "t5-3B", "t5", True, 512),
}


def layer_configs(family, c, seq):
    """galvatron/models/<family>/meta_configs/config_utils.py: model_layer_configs(config)."""
    if family == "bert":
        return [dict(hidden_size=c["hidden_size"], seq_len=seq or c["max_position_embeddings"], layer_num=c["num_hidden_layers"])]
    if family == "gpt":
        return [dict(hidden_size=c["n_embd"], seq_len=seq or c["n_positions"], layer_num=c["n_layer"])]
    if family == "llama":
        return [dict(hidden_size=c["dim"], seq_len=seq or c.get("n_positions", 2048), layer_num=c["n_layers"])]
    if family == "vit":
        return [dict(hidden_size=c["hidden_size"], seq_len=(c["image_size"] // c["patch_size"]) ** 2 + 1, layer_num=c["num_hidden_layers"])]
    if family == "swin":
        return [dict(hidden_size=c["embed_dim"] * 2 ** i, seq_len=(c["image_size"] // c["patch_size"] // 2 ** i) ** 2,
                     layer_num=c["depths"][i]) for i in range(len(c["depths"]))]
    if family == "t5":
        s = seq or c.get("n_positions", 512)
        return [dict(hidden_size=c["d_model"], seq_len=s, layer_num=c["num_layers"]),
                dict(hidden_size=c["d_model"], seq_len=s, layer_num=c.get("num_decoder_layers", c["num_layers"]))]
    raise ValueError(family)


def adapt_profiles(model, tmpdir, seqlens):
    """Copy the model's profile pair into tmpdir in v2.4.0's layout (see the module docstring)."""
    folder, _, suffix, _, _, _ = MODELS[model]
    notes = []
    comp = json.load(open(os.path.join(FIX, "models", folder, f"computation_profiling_bf16_{suffix}.json")))
    mem = json.load(open(os.path.join(FIX, "models", folder, f"memory_profiling_bf16_{suffix}.json")))
    seq_key = str(seqlens[0]) if len(seqlens) == 1 else "[%s]" % ",".join(map(str, seqlens))
    # (c) bare layertype_0 + raw totals -> v2.4.0 profiler keys
    if not any(k.startswith("layertype_0_") for k in comp):
        raw = sorted((k for k in comp if k.startswith("layernum[")), key=lambda k: int(k.split("[")[1].split("]")[0]))
        lo, hi = raw[0], raw[-1]
        b = int(lo.split("_bsz")[1]); nlo = int(lo.split("[")[1].split("]")[0]); nhi = int(hi.split("[")[1].split("]")[0])
        t = (comp[hi] - comp[lo]) / b / (nhi - nlo)
        other = max((comp[lo] - nlo * t * b) / b, 0)
        comp[f"layertype_0_bsz{b}_seq{seqlens[0]}"] = t
        comp[f"layertype_other_bsz{b}_seq{seq_key}"] = other
        notes.append(f"computation: layertype_0_bsz{b}_seq{seqlens[0]}={t:.4f} ms, layertype_other={other:.4f} ms from {lo}, {hi}")
    for k in list(mem):
        if not (k.startswith("layertype_") or k.startswith("other_memory")):
            continue
        v = mem[k]
        if isinstance(v, dict) and ("parameter_size" in v or "model_states" in v):  # (a) no seq level
            if k.startswith("layertype_"):
                mem[k] = {str(seqlens[int(k.split("_")[1])]): v}
            else:
                mem[k] = {seq_key: v}
            notes.append(f"memory {k}: wrapped under seq {list(mem[k])[0]}")
        if k.startswith("other_memory"):
            for s, e in mem[k].items():
                for part in ("model_states", "activation"):
                    if not isinstance(e[part], dict):  # (b) scalar = TP 1
                        x = e[part]
                        e[part] = {str(tp): x / tp for tp in (1, 2, 4, 8, 16)}
                        notes.append(f"memory {k}.{part}: scalar {x} MB -> value/tp")
    json.dump(comp, open(os.path.join(tmpdir, f"computation_profiling_bf16_{suffix}.json"), "w"))
    json.dump(mem, open(os.path.join(tmpdir, f"memory_profiling_bf16_{suffix}.json"), "w"))
    return suffix, notes


def make_args(model, nodes, gpn, bsz, mem_gb, pipeline_type, dp_type, tmpdir, seq):
    folder, cfgfile, suffix, family, need_sp, _ = MODELS[model]
    cfg = json.load(open(os.path.join(FIX, "models", folder, cfgfile)))
    lcs = layer_configs(family, cfg, seq)
    hw = os.path.join(FIX, "hardware")
    sp_time = f"sp_time_{nodes}nodes_{gpn}gpus_per_node.json"
    sp_dir = hw if os.path.exists(os.path.join(hw, sp_time)) else None
    if sp_dir is None:  # only 1x8 has one; used only for sp_space tp+sp (not searched: default sp_space 'tp')
        sp_dir = tmpdir
        src = json.load(open(os.path.join(hw, "sp_time_1nodes_8gpus_per_node.json")))
        json.dump(src, open(os.path.join(tmpdir, sp_time), "w"))
    # galvatron/core/search_engine/arguments.py defaults
    a = SimpleNamespace(set_model_config_manually=0, set_layernum_manually=0, set_seqlen_manually=0,
                        num_nodes=nodes, num_gpus_per_node=gpn, memory_constraint=mem_gb, min_bsz=8, max_bsz=10240,
                        recommend_min_bsz=0, settle_bsz=bsz, settle_chunk=-1, bsz_scale=8, search_space="full",
                        sp_space="tp", disable_dp=0, disable_tp=0, disable_vtp=0, disable_pp=0, disable_sdp=0,
                        disable_ckpt=0, disable_tp_consec=0, max_tp_deg=8, max_pp_deg=8, default_dp_type=dp_type,
                        mixed_precision="bf16", pipeline_type=pipeline_type, use_pipeline_costmodel=1, costmodel_coe=1.0,
                        sequence_parallel=need_sp, global_memory_buffer=True, async_grad_reduce=True,
                        memory_profiling_path=tmpdir, time_profiling_path=tmpdir,
                        allreduce_bandwidth_config_path=hw, p2p_bandwidth_config_path=hw, overlap_coe_path=hw,
                        sp_time_path=sp_dir, output_config_path=tmpdir + "/", fine_grained_mode=1,
                        time_profile_mode="static", memory_profile_mode="static", parallel_search=False, worker=0,
                        log_dir=os.path.join(tmpdir, "logs"), hidden_size=lcs[0]["hidden_size"])
    return a, lcs


def build_engine(se, model, nodes, gpn, bsz, mem_gb, pipeline_type, dp_type, seq=None, quiet=True):
    os.makedirs(TMP, exist_ok=True)
    tmpdir = tempfile.mkdtemp(prefix="galv-", dir=TMP)
    atexit.register(shutil.rmtree, tmpdir, True)
    args, lcs = make_args(model, nodes, gpn, bsz, mem_gb, pipeline_type, dp_type, tmpdir, seq)
    suffix, notes = adapt_profiles(model, tmpdir, [l["seq_len"] for l in lcs])
    eng = se.GalvatronSearchEngine(args)
    eng.set_search_engine_info(tmpdir, lcs, suffix)
    _quiet(quiet, eng.initialize_search_engine)
    return eng, args, tmpdir, notes


def _quiet(quiet, f, *a, **k):
    if not quiet:
        return f(*a, **k)
    import contextlib, io
    with contextlib.redirect_stdout(io.StringIO()):
        return f(*a, **k)


# ----------------------------------------------------------------------------- evaluation
def config_strategies(cfg, gpu_num):
    """Galvatron config -> per-layer strategy lists [pp, tp, dp, {tp, fsdp, cpt}] (search_engine's format)."""
    pp = cfg["pp_deg"]
    tps = list(map(int, str(cfg["tp_sizes_enc"]).split(",")))
    cons = list(map(int, str(cfg["tp_consecutive_flags"]).split(",")))
    fs = list(map(int, str(cfg["dp_types_enc"]).split(",")))
    cpt = list(map(int, str(cfg.get("checkpoint", ",".join("0" * len(tps)))).split(",")))
    out = []
    for tp, c, f, k in zip(tps, cons, fs, cpt):
        dp = gpu_num // pp // tp
        info = {}
        if tp > 1 and dp > 1:
            info["tp"] = c
        if dp > 1:
            info["fsdp"] = f
        if tp > 1:
            info["sp"] = 0  # sp_space 'tp' (generate_dp_tp_pp_sdp)
        if k:
            info["cpt"] = 1
        out.append([pp, tp, dp, info])
    return out


def evaluate(se, cm, dpm, eng, args, cfg, min_tp=None):
    """Galvatron's estimate of one plan, computed the way DpOnModel._build_dp_and_run_multi_layer_type
    (dynamic_programming.py:212-513) and pipeline_costmodel (cost_model.py:694-766) do for the
    strategies the DP would return."""
    gpu = args.num_nodes * args.num_gpus_per_node
    bsz = int(cfg["global_bsz"]); chunk = int(cfg["chunks"]); pp = int(cfg["pp_deg"])
    strategies = config_strategies(cfg, gpu)
    vtp = int(cfg.get("vtp", 1)); embed_sdp = int(cfg.get("embed_sdp", 0)); vsp = int(cfg.get("vsp", 0))
    min_tp_arg = min_tp
    if min_tp is None:
        min_tp = min([s[1] for s in strategies] + [vtp])
    common = set.intersection(*[set(d["model_states"]) for d in (eng.other_memory_pp_off, eng.other_memory_pp_on["first_stage"],
                                                                  eng.other_memory_pp_on["last_stage"])])
    max_tp = min(args.max_tp_deg, gpu // pp, max(common))  # the search with --max_tp_deg this large (v2.4.0 crashes above)
    notes = []
    if vtp not in common or vtp > max_tp:
        nv = max(t for t in common if t <= max_tp)
        notes.append(f"vtp {vtp} has no other_memory entry in Galvatron's profile; evaluated with vtp {nv}")
        vtp = nv
    if min_tp_arg is None:
        min_tp = min(min_tp, vtp)
    division = list(map(int, str(cfg["pp_division"]).split(",")))
    mbsz = (bsz // (gpu // pp // min_tp) + chunk - 1) // chunk  # search_engine.py:408
    dp_size = gpu // pp
    chunks = [p.optimal_chunk_func(bsz * min_tp // dp_size, [pp, min_tp, dp_size], mbsz, min_tp)
              for p in eng.parallel_args_list]  # dynamic_programming.py:224
    first = [pp, min_tp, gpu // pp // min_tp, ({"tp": 1, "fsdp": 0} if min_tp > 1 and gpu // pp // min_tp > 1 else ({"fsdp": 0} if gpu // pp // min_tp > 1 else {}))]
    if min_tp > 1:
        first[-1]["sp"] = 0
    layer_type = []
    for i, n in enumerate(eng.layernum_list):
        layer_type += [i] * n
    assert len(layer_type) == len(strategies), f"config has {len(strategies)} layers, model {len(layer_type)}"
    # memory (MB), per layer and per stage
    def mem(strategy, i, stage_idx):
        return cm.MemoryCostModel(strategy, bsz, mbsz=mbsz, min_tp=min_tp, max_tp=max_tp, stage_idx=stage_idx, vsp=vsp,
                                  embed_sdp=embed_sdp, model_args=eng.model_args_list[i], train_args=eng.train_args_list[i],
                                  parallel_args=eng.parallel_args_list[i], profile_model_args=eng.profile_model_args_list[i]).get_memory_cost()
    other_full = mem(first, 0, 0)["other"]
    if vtp not in other_full:
        raise SystemExit(f"vtp {vtp} not in Galvatron's other-memory keys {list(other_full)} for min_tp {min_tp}")
    other_mem = [int(np.ceil(x)) for x in other_full[vtp]]
    # the same "other" memory with the activation entries zeroed: its model-states part
    import copy
    pm0 = copy.deepcopy(eng.profile_model_args_list[0])
    for d in (pm0.other_memory_pp_off, pm0.other_memory_pp_on["first_stage"], pm0.other_memory_pp_on["last_stage"]):
        d["activation"] = {k: 0 for k in d["activation"]}
    other_ms = cm.MemoryCostModel(first, bsz, mbsz=mbsz, min_tp=min_tp, max_tp=max_tp, stage_idx=0, vsp=vsp, embed_sdp=embed_sdp,
                                  model_args=eng.model_args_list[0], train_args=eng.train_args_list[0],
                                  parallel_args=eng.parallel_args_list[0], profile_model_args=pm0).get_memory_cost()["other"][vtp]
    if args.sequence_parallel and args.global_memory_buffer:
        gm = mbsz / min_tp * max_tp * args.hidden_size * max(eng.seqlen_list) * 4 / 1024 / 1024 / 2  # dynamic_programming.py:447-452
    else:
        gm = 0
    stages = []
    start = 0
    dpo = dpm.DpOnModel(strategies, cm.MemoryCostModel, cm.TimeCostModel, model_args_list=eng.model_args_list,
                        train_args_list=eng.train_args_list, parallel_args_list=eng.parallel_args_list,
                        profile_model_args_list=eng.profile_model_args_list,
                        profile_hardware_args_list=eng.profile_hardware_args_list, max_mem=eng.memory_constraint,
                        layer_num=eng.layernum_list, sequence_len=eng.seqlen_list, multi_layer_type=True,
                        pp_stage_dict={pp: division}, comm_coe_dict=eng.allreduce_comm_coe, gpu_num=gpu,
                        model_microbatch_after_dp=1, pipeline_type=args.pipeline_type, config=args)
    for st in range(pp):
        idx = st if args.pipeline_type == "pipedream_flush" else 0
        ms = act = 0.0; enc = 0
        for l in range(start, start + division[st]):
            r = mem(strategies[l], layer_type[l], idx)
            ms += r["model_states"]; act += r["activation"]; enc += int(np.ceil(r["enc_total"]))
        total = enc + other_mem[st] + int(gm)
        stages.append(dict(layers=division[st], model_states_mb=ms, activation_mb=act, layers_total_mb=enc,
                           other_mb=other_mem[st], other_model_states_mb=float(other_ms[st]) - 1024,
                           other_activation_mb=float(other_full[vtp][st] - other_ms[st]), sp_buffer_mb=int(gm), pytorch_context_mb=1024,
                           mem_cache_mb=dpo.mem_cache, total_mb=total + dpo.mem_cache,
                           limit_mb=eng.memory_constraint, fits=total <= dpo.max_mem))
        start += division[st]
    # time
    oth = cm.OtherTimeCostModel(mbsz, pp, gpu, vsp, embed_sdp, min_tp, max_tp, eng.seqlen_list,
                                model_args=eng.model_args_list[0], train_args=eng.train_args_list[0],
                                parallel_args=eng.parallel_args_list[0], profile_model_args=eng.profile_model_args_list[0],
                                profile_hardware_args=eng.profile_hardware_args_list[0]).gen_result()
    stage_costs, tpi = cm.pipeline_costmodel(cm.TimeCostModel, eng.layernum_list, eng.model_args_list, eng.train_args_list,
                                             eng.parallel_args_list, eng.profile_model_args_list, eng.profile_hardware_args_list,
                                             strategies, division, chunks, bsz, min_tp, oth[1][vtp], return_stage_cost=True)
    # the pipeline's parts (cost_model.py:743-763): per-stage compute without communication
    # (+ embed/head), the schedule bound from it, and the tail the async gradient reduction adds
    c_max = int(max(chunks)); comp = []
    start = 0
    for st in range(pp):
        x = 0.0
        for l in range(start, start + division[st]):
            i = layer_type[l]
            x += cm.TimeCostModel(strategies[l], bsz / chunks[i], no_comm=True, model_args=eng.model_args_list[i],
                                  train_args=eng.train_args_list[i], parallel_args=eng.parallel_args_list[i],
                                  profile_model_args=eng.profile_model_args_list[i],
                                  profile_hardware_args=eng.profile_hardware_args_list[i]).gen_result()
        comp.append(x + float(oth[1][vtp][st]))
        start += division[st]
    base = sum(comp) + comp[-1] * (c_max - 1)
    base = max(base, max(min(pp - 1, c_max - 1) * comp[0] / 3, sum(comp[1:]) / 3) +
               max(min(pp - 1, c_max - 1) * comp[0] * 2 / 3, sum(comp[1:]) * 2 / 3) + comp[0] * max(0, c_max + 1 - pp))
    # per-layer terms of one layer per type/strategy (ms), for the decomposition
    terms = {}
    for i in sorted(set(layer_type)):
        for s in {su_key(x): x for x, t in zip(strategies, layer_type) if t == i}.values():
            t = cm.TimeCostModel(s, bsz / chunks[i], model_args=eng.model_args_list[i], train_args=eng.train_args_list[i],
                                 parallel_args=eng.parallel_args_list[i], profile_model_args=eng.profile_model_args_list[i],
                                 profile_hardware_args=eng.profile_hardware_args_list[i])
            L = t.layer_num
            terms[f"type{i}:{su_key(s)}"] = dict(fct_ms=t.fct / L, bct_ms=t.bct / L, dp_msg_MB=t.dp_message_size / L,
                                                dc_ms_per_MB=t.dc, tp_ms=getattr(t, "tp_communication_time", 0) / L,
                                                per_layer_s=t.gen_result(), micro_bsz_per_dp=t.bsz)
    return dict(tpi_s=float(tpi), throughput=bsz / float(tpi), stage_costs_s=[float(x) for x in stage_costs],
                stage_compute_s=comp, schedule_s=float(base), reduce_tail_s=float(tpi) - float(base),
                other_time_s=[float(x) for x in oth[0][vtp]], other_time_nocomm_s=[float(x) for x in oth[1][vtp]],
                chunks=[int(c) for c in chunks], mbsz=mbsz, min_tp=min_tp, vtp=vtp,
                stages=stages, peak_mb=max(s["total_mb"] for s in stages), layer_terms=terms, eval_notes=notes)


def su_key(s):
    return "%d-%d-%d-%s" % (s[0], s[1], s[2], ",".join(f"{k}{v}" for k, v in sorted(s[3].items())))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["eval", "search"])
    ap.add_argument("--model", required=True, choices=sorted(MODELS))
    ap.add_argument("--cluster", required=True, help="NxG: 1x4, 1x8, 2x8")
    ap.add_argument("--config", help="eval: a Galvatron config JSON")
    ap.add_argument("--bsz", type=int, help="search: global batch (settle_bsz)")
    ap.add_argument("--memory-gb", type=int, default=80)
    ap.add_argument("--pipeline-type", default=None, choices=["gpipe", "pipedream_flush"])
    ap.add_argument("--min-tp", type=int)
    ap.add_argument("--max-tp-deg", type=int, default=8,
                    help="search: Galvatron's --max_tp_deg; 0 = the largest TP size that all three other_memory "
                         "entries profile (v2.4.0 raises KeyError otherwise: dynamic_programming.py:491-492)")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    nodes, gpn = map(int, a.cluster.split("x"))
    se, cm, dpm, su = load_galvatron()
    if a.mode == "eval":
        cfg = json.load(open(a.config))
        pt = a.pipeline_type or cfg.get("pipeline_type", "gpipe")
        eng, args, tmp, notes = build_engine(se, a.model, nodes, gpn, int(cfg["global_bsz"]), a.memory_gb, pt,
                                             cfg.get("default_dp_type", "ddp"), seq=MODELS[a.model][5], quiet=not a.verbose)
        r = evaluate(se, cm, dpm, eng, args, cfg, a.min_tp)
        r["adapted"] = notes
        print(json.dumps(r, indent=1))
    else:
        eng, args, tmp, notes = build_engine(se, a.model, nodes, gpn, a.bsz, a.memory_gb, a.pipeline_type or "gpipe", "ddp",
                                             seq=MODELS[a.model][5], quiet=not a.verbose)
        if a.max_tp_deg == 0:
            keys = [set(d["model_states"]) for d in (eng.other_memory_pp_off, eng.other_memory_pp_on["first_stage"],
                                                     eng.other_memory_pp_on["last_stage"])]
            a.max_tp_deg = min(8, max(set.intersection(*keys)))
        if a.max_tp_deg != 8:
            args.max_tp_deg = a.max_tp_deg
            _quiet(True, eng.generate_strategies)
            res_note = f"max_tp_deg {a.max_tp_deg}"
            notes.append(res_note)
        thr = _quiet(not a.verbose, eng.parallelism_optimization)
        outs = [f for f in os.listdir(tmp) if f.startswith("galvatron_config_")]
        res = dict(throughput=thr, adapted=notes)
        if outs:
            cfg = json.load(open(os.path.join(tmp, outs[0])))
            res["config"] = cfg
            res["eval"] = evaluate(se, cm, dpm, eng, args, cfg)
        print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
