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
 * a forward).  sched_graph_build gives the same layouts as a graph of
 * precedences whose longest path is their length, for the makespan objective
 * (opt_tpi, the MILP's makespan rows).
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

/*
 * The precedences of a blocking GPipe or 1F1B iteration, or of an
 * interleaved one's list schedule (sched_graph_build),
 * for an optimizer that minimises its length (milp.c) and for evaluating it
 * without laying blocks out.  A node is one step of one rank's program, its
 * value the rank's clock after the step; an arc says the node is at least
 * its tail's value (0 for tail -1, the iteration's start) plus share x p[index]
 * (term 1), share x o[index] (term 2) or nothing (term 0).  The longest path
 * is the layout's length exactly: sched_blocking sets each clock to the
 * largest of the same terms.  Nodes are numbered in an order in which every
 * arc's tail comes first, and arcs are grouped by head in that order.
 */
struct sched_arc {
	int from, to;   /* node indices; from -1: the start */
	int term;       /* 0 none, 1 a stage's time, 2 a boundary's transfer */
	int index;      /* the stage or the boundary */
	double share;   /* of it */
};

struct sched_graph {
	int n_nodes;
	int *last;              /* owned, [stages]: each rank's last node, -1 when it has none */
	int stages;             /* the ranks (the stages but interleaved) */
	struct sched_arc *arcs; /* owned, n_arcs */
	size_t n_arcs;
};

/*
 * Builds the graph of GPipe or 1F1B on `stages` ranks (ranks == stages), or
 * of interleaved 1F1B's list schedule on `ranks` ranks of stages / ranks
 * chunks each, with c micro-batches, into g (release with
 * sched_graph_release).  UNIAP_E_ARG for another schedule or shape, c < 1,
 * UNIAP_E_LIMIT past SCHED_MAX_UNITS units, UNIAP_E_NOMEM.
 */
uniap_code sched_graph_build(int ranks, int stages, long c, enum cost_schedule kind, struct sched_graph *g,
                             struct uniap_err *err);
void sched_graph_release(struct sched_graph *g);

/* The longest path of g with stage times p[stages] and transfers o[stages - 1]
 * (borrowed); t (caller-owned, [n_nodes]) gets every node's value. */
double sched_graph_length(const struct sched_graph *g, const double *p, const double *o, double *t);

#endif
