#!/usr/bin/env python3
"""bench/galvatron/compare.py - uniap's estimates against Galvatron v2.4.0's own cost model.

What it does: for every plan under OUTDIR, prices it with Galvatron's cost model
(bench/galvatron/model.py) and sets that beside uniap's `evaluate`: table A, uniap's
`plan --target galvatron` plans (bench/galvatron/agreement.sh); table B, Galvatron's own search
picks (bench/galvatron/search.sh), converted to uniap plan documents (runtime "galvatron") and
evaluated by build/uniap. Prints both Markdown tables on stdout; writes OUTDIR/compare.json (every
row with Galvatron's per-term breakdown) and the converted picks OUTDIR/search-*-uniap.json.

What it needs: GALVATRON_SRC, a checkout of PKU-DAIR/Hetu-Galvatron at commit
498bcadeb6ff80cd246bdc4321124da0f4b2d89b (v2.4.0), no default; python3-numpy; g++ and
pybind11-dev for Galvatron's DP core (built into build/galvatron/dp-core); build/uniap; the
fixtures (FIX, default ../shared/fixtures/galvatron-v2.4.0). Nothing of Galvatron is copied into
this repository (model.py loads its modules from GALVATRON_SRC).

usage (from the repository root): /usr/bin/python3 bench/galvatron/compare.py [OUTDIR] > build/galvatron/table.md
  OUTDIR default build/galvatron/out; BATCH default 16.
Columns: TPI in s; memory of each side's busiest stage in GiB (2^30). alloc = what both count as
model states + activations (uniap allocated_bytes; Galvatron layers + other, without its 1 GiB
context and its 0.2 x budget allocator cache); total = uniap allocated + fragmentation + FSDP
transient + reserved against Galvatron's layers + other + context + cache; "exceeds" = whose memory
limit the plan does not fit (uniap: fits_memory; Galvatron: <= 0.8 x 80 GB).
"""
import importlib.util, json, math, os, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("gm", os.path.join(HERE, "model.py"))
gm = importlib.util.module_from_spec(spec); spec.loader.exec_module(gm)
OUT = sys.argv[1] if len(sys.argv) > 1 else "build/galvatron/out"
UNIAP = "build/uniap"
B = int(os.environ.get("BATCH", "16"))
MODELS = ["bert-large", "gpt-1.5b", "gpt-2.7b", "gpt-6.7b", "llama-7b", "vit-huge", "swin-huge", "vit-xhuge"]
CLUSTERS = ["1x4", "1x8", "2x8"]
# how agreement.sh imports each model: the config under the fixtures' models/, and --seq ("-": none)
IMPORTS = {"bert-large": ("bert_hf/bert-large-uncased.json", "512"), "gpt-1.5b": ("gpt_hf/gpt-1.5b.json", "-"),
           "gpt-2.7b": ("gpt_hf/gpt-2.7b.json", "-"), "gpt-6.7b": ("gpt_hf/gpt-6.7b.json", "-"),
           "llama-7b": ("llama_hf/llama-7b.json", "-"), "vit-huge": ("vit_hf/vit-huge-patch16-224.json", "-"),
           "swin-huge": ("swin/swin-huge-patch4-window7-224.json", "-"),
           "vit-xhuge": ("vit_hf/vit-xhuge-patch16-224.json", "-")}
# SETS=DIR: also write the fidelity ratchet's Galvatron set (tests/cli/fidelity.sh): table B's
# plans as DIR/galvatron/<model>-<cluster>.plan.json and DIR/galvatron.tsv with Galvatron's estimates
SETS = os.environ.get("SETS", "")
MiB = 2 ** 20
se, cm, dpm, su = gm.load_galvatron()
_engines = {}


def engine(model, cl, bsz, pt, dpt):
    k = (model, cl, bsz, pt, dpt)
    if k not in _engines:
        n, g = map(int, cl.split("x"))
        _engines[k] = gm.build_engine(se, model, n, g, bsz, 80, pt, dpt, seq=gm.MODELS[model][5])
    return _engines[k]


def galv_eval(model, cl, cfg):
    eng, args, _, _ = engine(model, cl, int(cfg["global_bsz"]), cfg.get("pipeline_type", "gpipe"), cfg.get("default_dp_type", "ddp"))
    return gm.evaluate(se, cm, dpm, eng, args, cfg)


def expand_layers(mdoc):
    names = []
    for l in mdoc["graph"]["layers"]:
        if l.get("repeat"):
            names += [f"{l['name']}.{i}" for i in range(l["repeat"])]
        else:
            names.append(l["name"])
    return names


def strat(D, tp, fsdp, consec):
    d = D // tp
    dims = []
    x = "fsdp" if fsdp and d > 1 else "dp"
    if tp > 1 and d > 1:
        dims = [("tp", tp), (x, d)] if consec else [(x, d), ("tp", tp)]
    elif tp > 1:
        dims = [("tp", tp)]
    elif d > 1:
        dims = [(x, d)]
    name = ".".join(f"{a}{b}" for a, b in dims) or "single"
    return {"name": name, "dp": d if x == "dp" else 1, "tp": tp, "fsdp": d if x == "fsdp" else 1,
            "recompute": False, "placement": [a for a, _ in dims]}


def galv_to_uniap(cfg, mdoc, gpu):
    pp = cfg["pp_deg"]; D = gpu // pp
    tps = list(map(int, cfg["tp_sizes_enc"].split(","))); con = list(map(int, cfg["tp_consecutive_flags"].split(",")))
    fs = list(map(int, cfg["dp_types_enc"].split(","))); ck = list(map(int, cfg["checkpoint"].split(",")))
    div = list(map(int, str(cfg["pp_division"]).split(",")))
    names = expand_layers(mdoc)
    stage_of = []
    for s, n in enumerate(div):
        stage_of += [s] * n
    vt = int(cfg.get("vtp", 1)); es = int(cfg.get("embed_sdp", 0))
    layers = [{"name": names[0], "stage": 0, "strategy": strat(D, vt, es, 1)}]
    for j in range(len(tps)):
        st = strat(D, tps[j], fs[j], con[j]); st["recompute"] = bool(ck[j])
        if ck[j]:
            st["name"] += "+rc"
        layers.append({"name": names[j + 1], "stage": stage_of[j], "strategy": st})
    layers.append({"name": names[-1], "stage": pp - 1, "strategy": strat(D, vt, es, 1)})
    c = int(cfg["chunks"]); b = int(cfg["global_bsz"])
    stages = [{"devices": list(range(s * D, (s + 1) * D)), "layers": [i for i, l in enumerate(layers) if l["stage"] == s],
               "time_s": 0, "memory_bytes": 0}
              for s in range(pp)]
    return {"pp": pp, "microbatches": c, "microbatch_size": -(-b // c), "batch": b,
            "schedule": "1f1b" if cfg.get("pipeline_type") == "pipedream_flush" else "gpipe", "runtime": "galvatron", "tpi_s": 0,
            "throughput_samples_per_s": 0,
            "layers": layers, "stages": stages}


def uniap_eval(cl, model, plan_path):
    r = subprocess.run([UNIAP, "evaluate", "--cluster", f"{OUT}/c{cl}.json", "--model", f"{OUT}/{model}.json",
                        "--batch", str(B), "--plan", plan_path], capture_output=True, text=True)
    if r.returncode not in (0, 3, 4):
        return {"error": r.stderr.strip()[:200]}
    return json.loads(r.stdout)


def summarize(u, g):
    """u: uniap evaluate JSON; g: galvatron eval. Memory of the peak stage of each, GiB."""
    us = max(u["stages"], key=lambda s: s["memory"]["allocated_bytes"])["memory"]
    gs = max(g["stages"], key=lambda s: s["total_mb"])
    u_alloc = us["allocated_bytes"] / 2 ** 30
    u_tot = (us["allocated_bytes"] + us["fragmentation_bytes"] + us["fsdp_transient_bytes"] + us["reserved_bytes"]) / 2 ** 30
    g_alloc = (gs["model_states_mb"] + gs["activation_mb"] + gs["other_model_states_mb"] + gs["other_activation_mb"] + gs["sp_buffer_mb"]) / 1024
    g_tot = gs["total_mb"] / 1024
    return dict(u_tpi=u["tpi_s"], g_tpi=g["tpi_s"], u_alloc=u_alloc, g_alloc=g_alloc, u_tot=u_tot, g_tot=g_tot,
                u_ms=(us["model_states_bytes"] + us["fsdp_accumulation_bytes"]) / 2 ** 30, u_act=us["activation_bytes"] / 2 ** 30,
                g_ms=(gs["model_states_mb"] + gs["other_model_states_mb"]) / 1024, g_act=(gs["activation_mb"] + gs["other_activation_mb"] + gs["sp_buffer_mb"]) / 1024,
                u_fits=u.get("fits_memory"), g_fits=gs["fits"])


def pct(a, b):
    return (a / b - 1) * 100 if b else float("nan")


def plan_desc(cfg):
    tps = cfg["tp_sizes_enc"].split(","); fs = cfg["dp_types_enc"].split(","); ck = cfg["checkpoint"].split(",")
    con = cfg["tp_consecutive_flags"].split(",")
    runs, prev, n = [], None, 0
    for t, f, k, c in zip(tps, fs, ck, con):
        s = f"t{t}" + ("*" if c == "0" and t != "1" else "") + ("f" if f == "1" else "") + ("c" if k == "1" else "")
        if s == prev:
            n += 1
        else:
            if prev:
                runs.append(f"{prev}x{n}")
            prev, n = s, 1
    runs.append(f"{prev}x{n}")
    return f"pp{cfg['pp_deg']} c{cfg['chunks']} v{cfg['vtp']}{'f' if cfg.get('embed_sdp') else ''} " + " ".join(runs)


def exceeds(s):
    over = [n for n, ok in (("uniap", s["u_fits"]), ("Galvatron", s["g_fits"])) if not ok]
    return " + ".join(over) if over else "none"


NOTES = []


def row(model, cl, cfg, u, g):
    s = summarize(u, g)
    mark = ""
    if g.get("eval_notes"):
        NOTES.append(f"{model} {cl}: " + "; ".join(g["eval_notes"]))
        mark = f" [{len(NOTES)}]"
    return (f"| {model} | {cl} | {plan_desc(cfg)}{mark} | {s['u_tpi']:.4f} | {s['g_tpi']:.4f} | {pct(s['u_tpi'], s['g_tpi']):+.1f} % "
            f"| {s['u_alloc']:.2f} | {s['g_alloc']:.2f} | {pct(s['u_alloc'], s['g_alloc']):+.1f} % "
            f"| {s['u_tot']:.1f} | {s['g_tot']:.1f} | {exceeds(s)} |"), s


def fail(model, cl, cfg, why):
    return f"| {model} | {cl} | {plan_desc(cfg)} | {why} |" + " |" * 8


def main():
    hdr = ("| model | cluster | plan | TPI uniap (s) | TPI Galvatron (s) | Δ TPI | alloc uniap (GiB) | alloc Galvatron (GiB) "
           "| Δ alloc | total uniap (GiB) | total Galvatron (GiB) | exceeds limit of |")
    sep = "|" + "---|" * 12
    out = {"uniap": [], "galvatron": []}
    print("### A. uniap's `plan --target galvatron` plans (batch %d, 80 GB)\n" % B); print(hdr); print(sep)
    for m in MODELS:
        for cl in CLUSTERS:
            p = f"{OUT}/plan-{m}-{cl}-b{B}"
            if not os.path.exists(p + ".galv.json"):
                continue
            cfg = json.load(open(p + ".galv.json")); u = json.load(open(p + ".eval.json"))
            try:
                g = galv_eval(m, cl, cfg)
            except (Exception, SystemExit) as e:
                print(fail(m, cl, cfg, f"Galvatron cannot price it: {type(e).__name__} {e}")); continue
            line, s = row(m, cl, cfg, u, g); print(line)
            out["uniap"].append(dict(model=m, cluster=cl, plan=plan_desc(cfg), **s, galv=g))
    print("\n### B. Galvatron v2.4.0's own search picks (batch %d, 80 GB)\n" % B); print(hdr); print(sep)
    for m in MODELS:
        for cl in CLUSTERS:
            f = f"{OUT}/search-{m}-{cl}-b{B}.json"
            if not os.path.exists(f):
                continue
            r = json.load(open(f))
            if "config" not in r:
                print(f"| {m} | {cl} | no valid configuration |" + " |" * 9); continue
            cfg = r["config"]; n, gg = map(int, cl.split("x"))
            mdoc = json.load(open(f"{OUT}/{m}.json"))
            pd = galv_to_uniap(cfg, mdoc, n * gg)
            pp = f"{OUT}/search-{m}-{cl}-b{B}-uniap.json"; json.dump(pd, open(pp, "w"), indent=1)
            u = uniap_eval(cl, m, pp)
            if "error" in u:
                print(fail(m, cl, cfg, f"uniap evaluate failed: {u['error']}")); continue
            g = galv_eval(m, cl, cfg)
            line, s = row(m, cl, cfg, u, g); print(line)
            out["galvatron"].append(dict(model=m, cluster=cl, plan=plan_desc(cfg), **s, galv=g))
    if SETS:
        os.makedirs(f"{SETS}/galvatron", exist_ok=True)
        with open(f"{SETS}/galvatron.tsv", "w") as t:
            t.write("# written by make bench-galvatron (SETS=bench/fidelity/sets): Galvatron v2.4.0's own search picks on its\n"
                    "# measured A100 profiles (batch %d, 80 GB) and Galvatron's cost model's estimates of them, for the fidelity\n"
                    "# ratchet (tests/cli/fidelity.sh).  Columns: model, cluster (the fixtures' hardware set NxG), batch, plan\n"
                    "# (under bench/fidelity/sets/), Galvatron's time per iteration (s), Galvatron's model states + activations\n"
                    "# of the busiest stage (bytes), the model's config under the fixtures' models/, --seq (- none), source\n" % B)
            for r in out["galvatron"]:
                m, cl = r["model"], r["cluster"]
                name = f"galvatron/{m}-{cl}.plan.json"
                pd = json.load(open(f"{OUT}/search-{m}-{cl}-b{B}-uniap.json"))
                json.dump(pd, open(f"{SETS}/{name}", "w"), indent=1)
                cfg, seq = IMPORTS[m]
                t.write("\t".join([m, cl, str(B), name, repr(r["g_tpi"]), "%.0f" % (r["g_alloc"] * 2 ** 30), cfg, seq,
                                    "Galvatron 2.4.0 search (search_engine.py) and cost model (cost_model.py) on "
                                    "the fixtures, bench/galvatron/"]) + "\n")
    if NOTES:
        print()
        for i, t in enumerate(NOTES, 1):
            print(f"[{i}] {t}")
    json.dump(out, open(f"{OUT}/compare.json", "w"), indent=1, default=float)


if __name__ == "__main__":
    main()
