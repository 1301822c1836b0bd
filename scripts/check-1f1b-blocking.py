#!/usr/bin/env python3
"""scripts/check-1f1b-blocking.py [TRIALS] - how far Megatron-LM's 1F1B iteration, with its
blocking point-to-point exchanges, is from the objective the optimizer minimises for 1F1B,
sum(p) + sum(o) + (c - 1) * max_i(o_(i-1) + p_i + o_i) (GPipe's exact makespan with transfers
that block: scripts/check-blocking-gpipe.py).  Not part of make test: it measures an open item
(docs/optimizer.md, "What is left"), it asserts nothing.

The schedule is forward_backward_pipelining_without_interleaving (Megatron-LM core_v0.15.3,
megatron/core/pipeline_parallel/schedules.py): rank i runs min(pp - i - 1, c) warm-up forwards
(recv_forward, forward, send_forward), receives the next input, then in turn a forward,
send_forward_recv_backward, a backward and send_backward_recv_forward (send_backward on the
last), then the cool-down backwards (recv_backward, backward, send_backward).  Each
communication call posts its transfers together and waits on all of them (_communicate,
wait_on_reqs); a transfer starts once both of its ranks have posted it and lasts its share of
o_j (forward a, backward 1 - a), transfers of one call in parallel (the links are full duplex).
Prints the smallest and largest simulated / objective - 1 over TRIALS random (p, o, c).
"""
import random
import sys


def program(S, c, i):
    """Rank i's steps: ('P', 'F'|'B', m) compute, ('C', [transfers]) one communication call."""
    w = min(S - i - 1, c)
    steps = []

    def comm(*ts):
        ts = [t for t in ts if t is not None]
        if ts:
            steps.append(('C', ts))

    def rf(m):
        return ('F', i - 1, m) if i > 0 else None

    def sf(m):
        return ('F', i, m) if i < S - 1 else None

    def rb(m):
        return ('B', i, m) if i < S - 1 else None

    def sb(m):
        return ('B', i - 1, m) if i > 0 else None

    for m in range(w):
        comm(rf(m))
        steps.append(('P', 'F', m))
        comm(sf(m))
    rem = c - w
    if rem > 0:
        comm(rf(w))
    for k in range(rem):
        steps.append(('P', 'F', w + k))
        comm(sf(w + k), rb(k))
        steps.append(('P', 'B', k))
        if k == rem - 1:
            comm(sb(k))
        else:
            comm(sb(k), rf(w + k + 1))
    for k in range(rem, c):
        comm(rb(k))
        steps.append(('P', 'B', k))
        comm(sb(k))
    return steps


def simulate(p, o, c, a):
    S = len(p)
    progs = [program(S, c, i) for i in range(S)]
    pc, t, posted = [0] * S, [0.0] * S, {}
    while not all(pc[i] == len(progs[i]) for i in range(S)):
        moved = False
        for i in range(S):
            while pc[i] < len(progs[i]):
                kind, arg = progs[i][pc[i]][0], progs[i][pc[i]][1:]
                if kind == 'P':
                    t[i] += (a if arg[0] == 'F' else 1 - a) * p[i]
                else:
                    for tr in arg[0]:
                        posted.setdefault(tr, {})[i] = t[i]
                    if any(len(posted[tr]) < 2 for tr in arg[0]):
                        break
                    t[i] = max([t[i]] + [max(posted[tr].values()) +
                                         (a if tr[0] == 'F' else 1 - a) * o[tr[1]] for tr in arg[0]])
                pc[i] += 1
                moved = True
        if not moved:
            raise RuntimeError('deadlock')
    return max(t)


def objective(p, o, c):
    S = len(p)
    cycle = [(o[i - 1] if i > 0 else 0) + p[i] + (o[i] if i < S - 1 else 0) for i in range(S)]
    return sum(p) + sum(o) + (c - 1) * max(cycle)


def main():
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    rng = random.Random(20261129)
    lo, hi = 0.0, 0.0
    for _ in range(trials):
        S = rng.randint(1, 6)
        c = rng.randint(S, 12)
        p = [rng.random() for _ in range(S)]
        o = [rng.random() * rng.choice([0, 0.1, 1, 3]) for _ in range(S - 1)]
        r = simulate(p, o, c, 1 / 3) / objective(p, o, c) - 1
        lo, hi = min(lo, r), max(hi, r)
    print('1F1B with blocking exchanges / objective - 1 over %d trials: %+.1f %% .. %+.1f %%'
          % (trials, 100 * lo, 100 * hi))


if __name__ == '__main__':
    main()
