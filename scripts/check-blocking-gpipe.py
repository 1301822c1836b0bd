#!/usr/bin/env python3
"""scripts/check-blocking-gpipe.py [TRIALS] - the closed form of a GPipe iteration whose
transfers block (docs/fidelity.md, "The largest term still missing"; docs/optimizer.md, "What is
left"), against a simulation.

Each stage i runs, per micro-batch, receive (a rendezvous with stage i - 1 that holds both for
o_(i-1)), compute, send (holding it and stage i + 1 for o_i): Galvatron's gpipe_forward and
Megatron-LM's _communicate wait on every p2p.  The forward phase runs every micro-batch through
the stages; the backward phase the same in reverse order, each stage free once its forward phase
is over; a share a of every time is forward, 1 - a backward.  The claim:

    iteration = sum(p) + sum(o) + (c - 1) * max_i(o_(i-1) + p_i + o_i)

whatever a.  Prints the largest relative difference over TRIALS random (p, o, c, a); exit 1 when
it exceeds 1e-12.  Not part of make test: it checks a formula the optimizer does not use yet.
"""
import random
import sys


def phase(p, o, c, free0):
    """A blocking line over the stages in order; free0[i] when stage i is free. (last end, frees)"""
    S = len(p)
    end_f = [[0.0] * c for _ in range(S)]
    end_t = [[0.0] * c for _ in range(S)]
    for m in range(c):
        for i in range(S):
            free = free0[i] if m == 0 else (end_t[i][m - 1] if i < S - 1 else end_f[i][m - 1])
            if i > 0:
                start = max(end_f[i - 1][m], free)  # the sender is waiting since its compute ended
                end_t[i - 1][m] = start + o[i - 1]
                ready = end_t[i - 1][m]
            else:
                ready = free
            end_f[i][m] = ready + p[i]
    return end_f[S - 1][c - 1], [end_t[i][c - 1] if i < S - 1 else end_f[i][c - 1] for i in range(S)]


def gpipe(p, o, c, a):
    S = len(p)
    _, free = phase([a * x for x in p], [a * x for x in o], c, [0.0] * S)
    end, _ = phase([(1 - a) * x for x in p][::-1], [(1 - a) * x for x in o][::-1], c, free[::-1])
    return end


def closed_form(p, o, c):
    S = len(p)
    cycle = [(o[i - 1] if i > 0 else 0) + p[i] + (o[i] if i < S - 1 else 0) for i in range(S)]
    return sum(p) + sum(o) + (c - 1) * max(cycle)


def main():
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    rng = random.Random(20261129)
    worst = 0.0
    for _ in range(trials):
        S, c = rng.randint(1, 6), rng.randint(1, 8)
        a = rng.choice([1 / 3, 0.5, rng.random()])
        p = [rng.random() for _ in range(S)]
        o = [rng.random() * rng.choice([0.1, 1, 3]) for _ in range(S - 1)]
        x, y = gpipe(p, o, c, a), closed_form(p, o, c)
        worst = max(worst, abs(x - y) / y)
    print('blocking GPipe: %d trials, largest relative difference %.3g' % (trials, worst))
    return 0 if worst <= 1e-12 else 1


if __name__ == '__main__':
    sys.exit(main())
