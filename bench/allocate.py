#!/usr/bin/env python3
"""bench/allocate.py UNIAP [--seed S] [--jobs N] [--cluster NAME] - a seeded
workload of training jobs arriving at and leaving one cluster, replayed under
five allocation policies (docs/allocation.md, "The benchmark"):

  uniap-throughput  `uniap allocate` (exact, the throughput objective, re-planned
                    with --current at every event, so moves cost their restart)
  uniap-fair        the same with --objective fair
  equal             every running job the largest allowed size within an equal
                    share of the cluster
  fcfs              each job's requested size, first come first served (a job
                    waits until its request fits)
  greedy            every job its smallest size with a plan, then one size up at
                    a time for the job with the largest gain in normalised
                    throughput per added device

The workload (all drawn from --seed): N jobs, each of one of KINDS (model, batch)
uniformly, weight 2 with probability 0.2 else 1, samples to go = batch x an
iteration count uniform in [1000, 8000], arrivals a Poisson process of mean
inter-arrival 300 s, a requested size for fcfs uniform in {8, 16, 32, 64}.
Every job's throughput at every allowed size is uniap's planner optimum,
computed once per kind (the curve cache: one `uniap allocate` run over the
kinds), so every policy sees the same curves.  The event simulation: at each
arrival or completion every policy re-allocates; a job whose size changes (or
that starts) makes no progress for RESTART_S seconds, then runs at its curve's
throughput until the next event.  Prints per policy: average job completion
time (finish - arrival), makespan (the last finish) and the average normalised
throughput (sum over running jobs of throughput / the job's best, averaged
over the makespan).  Figures, not assertions; reproducible from the seed.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

KINDS = [("bert-huge", 64), ("vit-huge", 256), ("t5-large", 64), ("gpt-1.7b", 128)]
RESTART_S = 60.0


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("bench/allocate.py: %s: exit %d: %s" % (" ".join(cmd), p.returncode, p.stderr.strip()[-400:]))
    return json.loads(p.stdout)


def workload(seed, n):
    r = random.Random(seed)
    t = 0.0
    jobs = []
    for i in range(n):
        model, batch = KINDS[r.randrange(len(KINDS))]
        jobs.append({"name": "j%02d" % i, "kind": (model, batch), "model": model, "batch": batch,
                     "weight": 2 if r.random() < 0.2 else 1, "samples": batch * r.randint(1000, 8000),
                     "arrival": t, "request": r.choice([8, 16, 32, 64])})
        t += r.expovariate(1 / 300.0)
    return jobs


class Sim:
    def __init__(self, jobs, sizes, curves, devices):
        self.jobs = {j["name"]: dict(j, left=float(j["samples"]), size=0, idle_until=0.0, finish=None) for j in jobs}
        self.sizes, self.curves, self.devices = sizes, curves, devices
        self.norm_area = 0.0

    def thr(self, j, size):
        if size not in self.sizes:
            return 0.0
        return self.curves[j["kind"]][self.sizes.index(size)]

    def best(self, j):
        return max(self.curves[j["kind"]])

    def active(self, now):
        return [j for j in self.jobs.values() if j["arrival"] <= now and j["finish"] is None]

    def simulate(self, policy):
        now = 0.0
        while True:
            act = self.active(now)
            if not act and all(j["finish"] is not None or j["arrival"] > now for j in self.jobs.values()):
                pending = [j["arrival"] for j in self.jobs.values() if j["finish"] is None and j["arrival"] > now]
                if not pending:
                    break
                now = min(pending)
                continue
            new = policy(now, act)
            for j in act:
                s = new.get(j["name"], 0)
                if s != j["size"]:
                    j["size"] = s
                    j["idle_until"] = now + RESTART_S
            # the next event: an arrival, or a running job's finish
            nxt = [j["arrival"] for j in self.jobs.values() if j["arrival"] > now]
            t_next = min(nxt) if nxt else float("inf")
            for j in act:
                v = self.thr(j, j["size"])
                if v > 0:
                    t_next = min(t_next, max(now, j["idle_until"]) + j["left"] / v)
            if t_next == float("inf"):
                sys.exit("bench/allocate.py: a policy left every job without devices")
            for j in act:
                v = self.thr(j, j["size"])
                run_s = max(0.0, t_next - max(now, j["idle_until"]))
                if v > 0 and run_s > 0:
                    j["left"] -= v * run_s
                    self.norm_area += run_s * v / self.best(j)
                if j["left"] <= 1e-6 * j["samples"]:
                    j["left"] = 0.0
                    j["finish"] = t_next
            now = t_next
        fin = [j["finish"] for j in self.jobs.values()]
        jct = sum(j["finish"] - j["arrival"] for j in self.jobs.values()) / len(self.jobs)
        makespan = max(fin)
        return jct, makespan, self.norm_area / makespan


def allowed(sim, j, limit):
    """The sizes with a plan for job j up to limit, ascending."""
    return [s for s in sim.sizes if s <= limit and sim.thr(j, s) > 0]


def policy_equal(sim):
    def pol(now, act):
        share = sim.devices // max(1, len(act))
        out = {}
        for j in act:
            ok = allowed(sim, j, share)
            out[j["name"]] = ok[-1] if ok else 0
        return out
    return pol


def policy_fcfs(sim):
    def pol(now, act):
        out, free = {}, sim.devices
        for j in sorted(act, key=lambda x: x["arrival"]):
            want = j["size"] if j["size"] else j["request"]
            if sim.thr(j, want) <= 0:
                # the request is no size with a plan here: the next one up, else the largest below
                ok = [s for s in sim.sizes if s >= want and sim.thr(j, s) > 0] or \
                    [s for s in reversed(sim.sizes) if s < want and sim.thr(j, s) > 0]
                want = ok[0] if ok else 0
            if want and want <= free:
                out[j["name"]] = want
                free -= want
            else:
                out[j["name"]] = 0
        return out
    return pol


def policy_greedy(sim):
    def pol(now, act):
        out, free = {}, sim.devices
        for j in sorted(act, key=lambda x: x["arrival"]):
            ok = allowed(sim, j, free)
            out[j["name"]] = ok[0] if ok else 0
            free -= out[j["name"]]
        while True:
            best, pick = 0.0, None
            for j in act:
                cur = out[j["name"]]
                up = [s for s in allowed(sim, j, cur + free) if s > cur]
                for s in up:
                    gain = j["weight"] * (sim.thr(j, s) - sim.thr(j, cur)) / sim.best(j) / (s - cur)
                    if gain > best + 1e-15:
                        best, pick = gain, (j, s)
            if not pick:
                return out
            free -= pick[1] - out[pick[0]["name"]]
            out[pick[0]["name"]] = pick[1]
    return pol


def policy_uniap(sim, uniap, cluster, cache, objective, tmp):
    state = {"prev": None}

    def pol(now, act):
        doc = {"jobs": [{"name": j["name"], "model": j["model"], "batch": j["batch"], "weight": j["weight"],
                         "samples": max(j["left"], 1.0)} for j in act]}
        path = os.path.join(tmp, "active.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        cmd = [uniap, "allocate", "--cluster", cluster, "--jobs", path, "--curves", cache, "--no-plans", "--quiet",
               "--objective", objective]
        if state["prev"]:
            cmd += ["--current", state["prev"]]
        rep = run(cmd)
        if rep["planner_runs"] != 0:
            sys.exit("bench/allocate.py: the curve cache missed (%d planner runs)" % rep["planner_runs"])
        prev = os.path.join(tmp, "prev-%s.json" % objective)
        with open(prev, "w") as f:
            json.dump(rep, f)
        state["prev"] = prev
        return {x["name"]: x["devices"] for x in rep["jobs"]}
    return pol


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("uniap")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=50)
    ap.add_argument("--cluster", default="dgx-a100-x64")
    ap.add_argument("--threads", default=str(os.cpu_count() or 1))
    a = ap.parse_args()
    jobs = workload(a.seed, a.jobs)
    with tempfile.TemporaryDirectory() as tmp:
        kinds = {"jobs": [{"name": "%s-b%d" % k, "model": k[0], "batch": k[1]} for k in KINDS]}
        kpath = os.path.join(tmp, "kinds.json")
        with open(kpath, "w") as f:
            json.dump(kinds, f)
        cache = os.path.join(tmp, "curves.json")
        rep = run([a.uniap, "allocate", "--cluster", a.cluster, "--jobs", kpath, "--threads", a.threads,
                   "--time-limit", "2", "--quiet"])
        with open(cache, "w") as f:
            json.dump(rep, f)
        sizes = rep["sizes"]
        curves = {(x["spec"]["model"], x["spec"]["batch"]): [c or 0.0 for c in x["curve"]] for x in rep["jobs"]}
        devices = rep["devices"]
        print("workload: %d jobs of %d kinds on %s (%d devices, %d sizes), seed %d; curves: %d planner runs"
              % (a.jobs, len(KINDS), a.cluster, devices, len(sizes), a.seed, rep["planner_runs"]))
        print()
        print("| policy | average JCT s | makespan s | average normalised throughput |")
        print("|---|---|---|---|")
        pols = [("uniap-throughput", lambda s: policy_uniap(s, a.uniap, a.cluster, cache, "throughput", tmp)),
                ("uniap-fair", lambda s: policy_uniap(s, a.uniap, a.cluster, cache, "fair", tmp)),
                ("equal", policy_equal), ("fcfs", policy_fcfs), ("greedy", policy_greedy)]
        for name, make in pols:
            sim = Sim(jobs, sizes, curves, devices)
            jct, makespan, norm = sim.simulate(make(sim))
            print("| %s | %.0f | %.0f | %.2f |" % (name, jct, makespan, norm))


if __name__ == "__main__":
    main()
