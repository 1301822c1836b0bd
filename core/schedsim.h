/*
 * schedsim.h - one training iteration of a pipeline plan laid out in time, as
 * its runtime runs it.  The same layout as the web UI's timeline (ui/draw.js,
 * simulate; docs/ui.md, "The timeline"), for exports that draw the plan (the
 * chrome-trace format).
 *
 * GPipe and 1F1B run with transfers that block (cost.h): each rank executes its
 * runtime's program of compute steps and communication calls, a call posting
 * its transfers together and waiting for all of them, a transfer starting once
 * both of its ranks have posted it.  GPipe: per micro-batch receive, compute
 * and send, every forward then every backward; its length is the audit TPI
 * Σp + Σo + (c - 1) max_i (o_(i-1) + p_i + o_i) exactly (cost.h).  1F1B:
 * Megatron-LM's forward_backward_pipelining_without_interleaving (warm-up of
 * pp - d - 1 forwards, one forward and one backward in turn with the combined
 * send_forward_recv_backward and send_backward_recv_forward, the cool-down);
 * its length is at most the TPI (tests/unit/test_schedsim.c; the optimizer
 * minimises that bound: docs/optimizer.md, "What is left").  Interleaved runs
 * with overlapped transfers in its runtime (overlap_p2p_comm), so it is a list
 * schedule in forward_backward_pipelining_with_interleaving's order over v
 * chunks (stage i on rank i mod pp): a unit starts when its rank is free and
 * its input has arrived, each boundary's link carrying one transfer at a time
 * per direction beside compute.  A stage's time p_i and a boundary's transfer
 * o_j split between forward and backward as SCHED_FORWARD_SHARE : 1 -
 * SCHED_FORWARD_SHARE (the cost model's rule that a backward costs about twice
 * a forward).
 *
 * Thread safety: reentrant.  Never: I/O, globals, solving anything.
 */
#ifndef UNIAP_SCHEDSIM_H
#define UNIAP_SCHEDSIM_H

#include <stddef.h>

#include "cost.h"
#include "err.h"

#define SCHED_FORWARD_SHARE (1.0 / 3.0)
/* Most stage x micro-batch units a simulation takes (its tables hold three doubles each). */
#define SCHED_MAX_UNITS (1L << 22)

enum sched_kind { SCHED_FORWARD, SCHED_BACKWARD, SCHED_TRANSFER_FORWARD, SCHED_TRANSFER_BACKWARD };

struct sched_block {
	enum sched_kind kind;
	int stage;       /* the stage computed, or the boundary j (stage j to j + 1) a transfer crosses */
	int rank;        /* the pipeline rank computing, or the link (rank j mod pp to the next) */
	long micro;      /* the micro-batch */
	double start_s, dur_s;
};

struct sched_input {
	int ranks;                 /* pipeline ranks (pp / v of the plan's stages) */
	int stages;                /* S = ranks x v */
	long microbatches;         /* c */
	enum cost_schedule schedule;
	const double *time_s;      /* [stages]: p_i, borrowed */
	const double *transfer_s;  /* [stages - 1]: o_j, borrowed; NULL when S == 1 */
};

struct sched {
	struct sched_block *blocks; /* owned, n_blocks, in the order they were placed */
	size_t n_blocks;
	double length_s;            /* the last block's end */
	double *busy_s;             /* owned, [ranks]: each rank's compute time */
};

/*
 * Lays in's iteration out into out (release with sched_release).  UNIAP_E_ARG
 * for a malformed input (ranks or stages < 1, stages not a multiple of ranks,
 * a negative or non-finite time), UNIAP_E_LIMIT past SCHED_MAX_UNITS,
 * UNIAP_E_NOMEM.
 */
uniap_code sched_simulate(const struct sched_input *in, struct sched *out, struct uniap_err *err);
void sched_release(struct sched *s);

#endif
