/*
 * schedsim.c - the layouts of schedsim.h.  GPipe and 1F1B: each rank's program
 * (sched_block, found by index, never stored) runs under sched_blocking, ranks
 * swept in turn, each until a call waits on its partner.  Interleaved: each
 * rank's units are listed in its schedule's order first (sched_order); then
 * the ranks are swept in turn, each placing units until one waits on an input
 * not yet produced.  A program or order that could never finish (which the
 * ones here do not produce) ends the sweep and is reported as
 * UNIAP_E_INTERNAL, not looped on.
 *
 * Never: I/O, globals.
 */
#include "schedsim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct sched_unit {
	int back;   /* 0 forward, 1 backward */
	int stage;
	long micro;
};

/* The units of rank d in schedule order into u (c x v x 2 entries). */
static size_t sched_order(const struct sched_input *in, int d, struct sched_unit *u)
{
	const int P = in->ranks, v = in->stages / in->ranks;
	const long c = in->microbatches;
	size_t n = 0;
	long k, m;

	if (in->schedule == COST_INTERLEAVED && v > 1) {
		/* Megatron-LM's forward_backward_pipelining_with_interleaving: unit k's chunk is
		 * (k mod P v) / P (reversed for backwards), its micro-batch (k / P v) P + k mod P */
		const long total = c * v;
		long warm = (long)(P - d - 1) * 2 + (long)(v - 1) * P;
#define UNIT(kk, b)                                                                                 \
	do {                                                                                        \
		long g_ = (kk) % ((long)P * v), ch_ = g_ / P;                                        \
		u[n].back = (b);                                                                    \
		u[n].stage = (int)(((b) ? v - 1 - ch_ : ch_) * P + d);                               \
		u[n].micro = (kk) / ((long)P * v) * P + (kk) % P;                                    \
		n++;                                                                                \
	} while (0)
		if (warm > total)
			warm = total;
		for (k = 0; k < warm; k++)
			UNIT(k, 0);
		for (k = 0; k < total - warm; k++) {
			UNIT(warm + k, 0);
			UNIT(k, 1);
		}
		for (k = total - warm; k < total; k++)
			UNIT(k, 1);
#undef UNIT
	} else if (in->schedule == COST_1F1B || in->schedule == COST_INTERLEAVED) {
		long warm = P - d - 1 < c ? P - d - 1 : c;

		for (m = 0; m < warm; m++)
			u[n++] = (struct sched_unit){ 0, d, m };
		for (m = 0; m < c - warm; m++) {
			u[n++] = (struct sched_unit){ 0, d, warm + m };
			u[n++] = (struct sched_unit){ 1, d, m };
		}
		for (m = c - warm; m < c; m++)
			u[n++] = (struct sched_unit){ 1, d, m };
	} else {
		for (m = 0; m < c; m++)
			u[n++] = (struct sched_unit){ 0, d, m };
		for (m = 0; m < c; m++)
			u[n++] = (struct sched_unit){ 1, d, m };
	}
	return n;
}

void sched_release(struct sched *s)
{
	free(s->blocks);
	free(s->busy_s);
	memset(s, 0, sizeof(*s));
}

static int sched_input_ok(const struct sched_input *in, struct uniap_err *err)
{
	int i;

	if (in->ranks < 1 || in->stages < in->ranks || in->stages % in->ranks != 0 || in->microbatches < 1) {
		err_set(err, UNIAP_E_ARG, "schedule: %d stages on %d ranks with %ld micro-batches", in->stages, in->ranks,
		        in->microbatches);
		return 0;
	}
	for (i = 0; i < in->stages; i++)
		if (!(in->time_s[i] >= 0) || !isfinite(in->time_s[i])) {
			err_set(err, UNIAP_E_ARG, "stages[%d].time_s: must be finite and >= 0", i);
			return 0;
		}
	for (i = 0; i + 1 < in->stages; i++)
		if (in->transfer_s && (!(in->transfer_s[i] >= 0) || !isfinite(in->transfer_s[i]))) {
			err_set(err, UNIAP_E_ARG, "stages[%d].transfer_s: must be finite and >= 0", i);
			return 0;
		}
	return 1;
}

/*
 * GPipe and 1F1B as their runtimes run them (cost.h: transfers block): each
 * rank executes a program of compute steps and communication calls.  A call
 * posts its transfers together and waits for all of them (Megatron-LM's
 * _communicate: one batch_isend_irecv whose requests are waited on;
 * Galvatron's GPipe, the same per transfer); a transfer starts once both of its
 * ranks have posted it and lasts its share of o_j, the transfers of one call
 * side by side (a link is full duplex).
 *
 * Programs, rank i of S with c micro-batches: GPipe, per micro-batch receive,
 * compute and send, every forward and then every backward.  1F1B, Megatron-LM
 * core_v0.15.3 forward_backward_pipelining_without_interleaving: w = min(S - i
 * - 1, c) warm-up forwards (recv_forward, forward, send_forward), recv_forward
 * of the next; c - w times a forward, send_forward_recv_backward, a backward
 * and send_backward_recv_forward (send_backward after the last); then the w
 * cool-down backwards (recv_backward, backward, send_backward).  The first
 * rank's receives of forwards and the last rank's sends of them are no calls
 * at all (and the same for backwards, the other way).
 */
struct sched_xfer {
	int back;   /* 0: forward, stage j to j + 1; 1: backward, j + 1 to j */
	int j;      /* the boundary */
	long m;     /* the micro-batch */
	int recv;   /* this rank's side: 0 sends, 1 receives */
};

struct sched_step {
	int call;                /* 0: compute; 1: a communication call */
	int back;                /* compute: 0 forward, 1 backward */
	long m;                  /* compute: the micro-batch */
	int n;                   /* call: its transfers, 1 or 2 */
	struct sched_xfer x[2];
};

/*
 * Rank i's programs are laid out in blocks of a few steps (a micro-batch's
 * receive, compute and send; a steady-state pair), so a step is found by its
 * index without storing the program (S x c can reach SCHED_MAX_UNITS).
 * sched_prog_block fills block b of section sec into st and returns its length:
 * GPipe's sections 0 (forwards) and 1 (backwards) of c blocks; 1F1B's
 * 0 (w warm-up forwards), 1 (the receive before the steady state: one block,
 * empty on the first rank or with no steady state), 2 (c - w steady pairs) and
 * 3 (w cool-down backwards).
 */
static int sched_prog_block(enum cost_schedule kind, int S, long c, int i, int sec, long b, struct sched_step *st)
{
	const long w = S - i - 1 < c ? S - i - 1 : c;
	int n = 0;
#define XF(bk, jj, mm, r) ((struct sched_xfer){ (bk), (jj), (mm), (r) })
#define NOX XF(0, 0, 0, 0)
#define RF(mm) XF(0, i - 1, mm, 1)
#define SF(mm) XF(0, i, mm, 0)
#define RB(mm) XF(1, i, mm, 1)
#define SB(mm) XF(1, i - 1, mm, 0)
#define CALL(cond, x1)                                                              \
	do {                                                                        \
		if (cond)                                                           \
			st[n++] = (struct sched_step){ 1, 0, 0, 1, { x1, NOX } };   \
	} while (0)
#define COMPUTE(bk, mm) (st[n++] = (struct sched_step){ 0, (bk), (mm), 0, { NOX, NOX } })
	const int has_prev = i > 0, has_next = i < S - 1;

	if (kind == COST_GPIPE || sec == 0 || sec == 3) {
		int back = kind == COST_GPIPE ? sec : sec == 3;
		long m = sec == 3 ? c - w + b : b;

		if (!back) {
			CALL(has_prev, RF(m));
			COMPUTE(0, m);
			CALL(has_next, SF(m));
		} else {
			CALL(has_next, RB(m));
			COMPUTE(1, m);
			CALL(has_prev, SB(m));
		}
	} else if (sec == 1) {
		CALL(has_prev && c - w > 0, RF(w));
	} else {
		COMPUTE(0, w + b);
		CALL(has_next, SF(w + b));
		if (has_next)
			st[n - 1].x[st[n - 1].n++] = RB(b);
		COMPUTE(1, b);
		CALL(has_prev, SB(b));
		if (has_prev && b < c - w - 1)
			st[n - 1].x[st[n - 1].n++] = RF(w + b + 1);
	}
	return n;
#undef XF
#undef NOX
#undef RF
#undef SF
#undef RB
#undef SB
#undef CALL
#undef COMPUTE
}

/* A rank's cursor over its program: the section, the block, the step in it. */
struct sched_cursor {
	int sec, k, n;         /* n: the current block's steps, -1 before it is filled */
	long b;
	struct sched_step st[4];
};

/* The cursor's current step, or NULL when the program has ended. */
static const struct sched_step *sched_cursor_step(enum cost_schedule kind, int S, long c, int i,
                                                  struct sched_cursor *u)
{
	const int sections = kind == COST_GPIPE ? 2 : 4;
	const long w = S - i - 1 < c ? S - i - 1 : c;

	while (u->sec < sections) {
		long blocks = kind == COST_GPIPE ? c : u->sec == 0 || u->sec == 3 ? w : u->sec == 1 ? 1 : c - w;

		if (u->b >= blocks) {
			u->sec++;
			u->b = 0;
			u->n = -1;
			continue;
		}
		if (u->n < 0) {
			u->n = sched_prog_block(kind, S, c, i, u->sec, u->b, u->st);
			u->k = 0;
		}
		if (u->k < u->n)
			return &u->st[u->k];
		u->b++;
		u->n = -1;
	}
	return NULL;
}

/* Runs the programs; ranks are swept in turn, each until a call waits on its
 * partner.  The programs above always finish, so a sweep that moves nothing is
 * UNIAP_E_INTERNAL, not looped on. */
static uniap_code sched_blocking(const struct sched_input *in, struct sched *out, struct uniap_err *err)
{
	const double a = SCHED_FORWARD_SHARE;
	const int S = in->stages;
	const long c = in->microbatches;
	const size_t nx = (size_t)(S > 1 ? S - 1 : 1) * (size_t)c * 2;
	struct sched_cursor *cur = calloc((size_t)S, sizeof(*cur));
	double *clock = calloc((size_t)S, sizeof(*clock));
	double *posted = malloc(nx * 2 * sizeof(*posted)); /* [transfer][side]: when posted, NaN before */
	size_t t;
	int i, moved = 1, left = S;
	uniap_code rc = UNIAP_OK;

	if (!cur || !clock || !posted) {
		rc = err_set(err, UNIAP_E_NOMEM, "schedule: out of memory");
		goto out;
	}
	for (t = 0; t < nx * 2; t++)
		posted[t] = NAN;
	for (i = 0; i < S; i++)
		cur[i].n = -1;
#define XID(x) (((size_t)(x).back * (size_t)(S - 1) + (size_t)(x).j) * (size_t)c + (size_t)(x).m)
	while (left > 0 && moved) {
		moved = 0;
		for (i = 0; i < S; i++) {
			const struct sched_step *s;

			while ((s = sched_cursor_step(in->schedule, S, c, i, &cur[i])) != NULL) {
				double end;
				int k, ready = 1;

				if (!s->call) {
					double dur = (s->back ? 1 - a : a) * in->time_s[i];

					out->blocks[out->n_blocks++] = (struct sched_block){
						s->back ? SCHED_BACKWARD : SCHED_FORWARD, i, i, s->m, clock[i], dur };
					out->busy_s[i] += dur;
					clock[i] += dur;
				} else {
					for (k = 0; k < s->n; k++) {
						posted[XID(s->x[k]) * 2 + (size_t)s->x[k].recv] = clock[i];
						if (isnan(posted[XID(s->x[k]) * 2 + (size_t)!s->x[k].recv]))
							ready = 0;
					}
					if (!ready)
						break; /* its partner has not reached the call: it waits, posted */
					end = clock[i];
					for (k = 0; k < s->n; k++) {
						const struct sched_xfer *x = &s->x[k];
						double t0 = fmax(posted[XID(*x) * 2], posted[XID(*x) * 2 + 1]);
						double dur = (x->back ? 1 - a : a) * (in->transfer_s ? in->transfer_s[x->j] : 0);

						end = fmax(end, t0 + dur);
						if (x->recv && dur > 0) /* drawn once, by its receiver */
							out->blocks[out->n_blocks++] = (struct sched_block){
								x->back ? SCHED_TRANSFER_BACKWARD : SCHED_TRANSFER_FORWARD,
								x->j, x->j, x->m, t0, dur };
					}
					clock[i] = end;
				}
				cur[i].k++;
				moved = 1;
				if (!sched_cursor_step(in->schedule, S, c, i, &cur[i]))
					left--;
			}
		}
	}
#undef XID
	if (left > 0)
		rc = err_set(err, UNIAP_E_INTERNAL, "schedule: %d ranks could never finish", left);
	for (i = 0; rc == UNIAP_OK && i < S; i++)
		if (clock[i] > out->length_s)
			out->length_s = clock[i];
out:
	free(cur);
	free(clock);
	free(posted);
	return rc;
}

/* Appends an arc to g (arcs has room: sched_graph_build sizes it). */
static void sched_arc_add(struct sched_graph *g, int from, int to, int term, int index, double share)
{
	g->arcs[g->n_arcs++] = (struct sched_arc){ from, to, term, index, share };
}

/*
 * The interleaved list schedule's sweep (sched_simulate) without times: a
 * unit's node is at least its rank's previous unit and each input it waits
 * for (the forward's arrival; the backward's own forward and the gradient's
 * arrival) plus its share of p_i; a send's node is at least its unit and the
 * link's previous send in that direction plus its share of o_j.  A link's
 * sends in one direction all come from one rank, in that rank's order, so
 * the order is fixed and the longest path is the layout's length.
 */
static uniap_code sched_graph_list(int P, int S, long c, struct sched_graph *g, struct uniap_err *err)
{
	const double a = SCHED_FORWARD_SHARE;
	const int v = S / P;
	struct sched_input in = { P, S, c, COST_INTERLEAVED, NULL, NULL };
	struct sched_unit **ord = NULL;
	size_t *len = NULL, *at = NULL, left = 0, units = (size_t)S * (size_t)c;
	int *fend = NULL, *arr_f = NULL, *arr_b = NULL, *link_f = NULL, *link_b = NULL, d, stuck = 0;
	uniap_code rc = UNIAP_OK;
	size_t i;

	ord = calloc((size_t)P, sizeof(*ord));
	len = calloc((size_t)P, sizeof(*len));
	at = calloc((size_t)P, sizeof(*at));
	link_f = malloc((size_t)P * sizeof(*link_f));
	link_b = malloc((size_t)P * sizeof(*link_b));
	fend = malloc(units * sizeof(*fend));
	arr_f = malloc(units * sizeof(*arr_f));
	arr_b = malloc(units * sizeof(*arr_b));
	g->last = malloc((size_t)P * sizeof(*g->last));
	/* a unit's node has at most 3 arcs, a send's 2; units and sends at most 2 S c each */
	g->arcs = malloc(units * 2 * 5 * sizeof(*g->arcs));
	if (!ord || !len || !at || !link_f || !link_b || !fend || !arr_f || !arr_b || !g->last || !g->arcs) {
		rc = err_set(err, UNIAP_E_NOMEM, "schedule: out of memory");
		goto out;
	}
	g->stages = P;
	for (i = 0; i < units; i++)
		fend[i] = arr_f[i] = arr_b[i] = -2;
	for (d = 0; d < P; d++) {
		link_f[d] = link_b[d] = -1;
		g->last[d] = -1;
		if (!(ord[d] = malloc((size_t)c * (size_t)v * 2 * sizeof(**ord)))) {
			rc = err_set(err, UNIAP_E_NOMEM, "schedule: out of memory");
			goto out;
		}
		len[d] = sched_order(&in, d, ord[d]);
		left += len[d];
	}
#define IDX(st, m) ((size_t)(st) * (size_t)c + (size_t)(m))
	while (left > 0 && !stuck) {
		stuck = 1;
		for (d = 0; d < P; d++) {
			while (at[d] < len[d]) {
				const struct sched_unit *u = &ord[d][at[d]];
				double share = u->back ? 1 - a : a;
				int node;

				if (!u->back ? u->stage > 0 && arr_f[IDX(u->stage, u->micro)] == -2
				             : fend[IDX(u->stage, u->micro)] == -2 ||
				                       (u->stage < S - 1 && arr_b[IDX(u->stage, u->micro)] == -2))
					break;
				node = g->n_nodes++;
				sched_arc_add(g, g->last[d], node, 1, u->stage, share);
				if (!u->back && u->stage > 0)
					sched_arc_add(g, arr_f[IDX(u->stage, u->micro)], node, 1, u->stage, share);
				if (u->back) {
					sched_arc_add(g, fend[IDX(u->stage, u->micro)], node, 1, u->stage, share);
					if (u->stage < S - 1)
						sched_arc_add(g, arr_b[IDX(u->stage, u->micro)], node, 1, u->stage, share);
				}
				g->last[d] = node;
				if ((!u->back && u->stage < S - 1) || (u->back && u->stage > 0)) {
					int j = u->back ? u->stage - 1 : u->stage, *lk = u->back ? &link_b[j % P] : &link_f[j % P];
					int tn = g->n_nodes++;

					sched_arc_add(g, node, tn, 2, j, share);
					if (*lk != -1)
						sched_arc_add(g, *lk, tn, 2, j, share);
					*lk = tn;
					if (u->back)
						arr_b[IDX(j, u->micro)] = tn;
					else
						arr_f[IDX(j + 1, u->micro)] = tn;
				}
				if (!u->back)
					fend[IDX(u->stage, u->micro)] = node;
				at[d]++;
				left--;
				stuck = 0;
			}
		}
	}
#undef IDX
	if (left > 0)
		rc = err_set(err, UNIAP_E_INTERNAL, "schedule: %zu units could never start", left);
out:
	if (ord)
		for (d = 0; d < P; d++)
			free(ord[d]);
	free(ord);
	free(len);
	free(at);
	free(link_f);
	free(link_b);
	free(fend);
	free(arr_f);
	free(arr_b);
	if (rc != UNIAP_OK)
		sched_graph_release(g);
	return rc;
}

/*
 * sched_blocking's sweep without times: a step becomes a node once it can
 * run, so nodes come numbered in an order of their precedences.  A compute
 * step's arc is the rank's previous node plus its share of p_i; a call's are,
 * per transfer, both posters' previous nodes plus the transfer's share of
 * o_j (every call posts a transfer, so the rank's own clock is among them).
 */
uniap_code sched_graph_build(int ranks, int stages, long c, enum cost_schedule kind, struct sched_graph *g,
                             struct uniap_err *err)
{
	const double a = SCHED_FORWARD_SHARE;
	const int S = stages;
	size_t nx, t, steps = 0;
	struct sched_cursor *cur = NULL;
	int *prev = NULL, *posted = NULL; /* posted: [transfer][side] the poster's previous node, -2 before */
	int i, moved = 1, left = S;
	uniap_code rc = UNIAP_OK;

	memset(g, 0, sizeof(*g));
	if (ranks < 1 || S < 1 || c < 1 || S % ranks != 0 || (kind != COST_INTERLEAVED && S != ranks) ||
	    (kind != COST_GPIPE && kind != COST_1F1B && kind != COST_INTERLEAVED))
		return err_set(err, UNIAP_E_ARG, "schedule graph: ranks, stages (a multiple of ranks, equal but "
		               "interleaved) and micro-batches >= 1");
	if ((double)S * (double)c > (double)SCHED_MAX_UNITS)
		return err_set(err, UNIAP_E_LIMIT, "schedule: %d stages x %ld micro-batches is more than %ld units to lay out",
		               S, c, (long)SCHED_MAX_UNITS);
	if (kind == COST_INTERLEAVED)
		return sched_graph_list(ranks, S, c, g, err);
	nx = (size_t)(S > 1 ? S - 1 : 1) * (size_t)c * 2;
	/* a rank runs at most 6 steps per micro-batch (a receive, a compute and a send each
	 * way) and one more; each step has at most 1 + 2 x 2 arcs */
	steps = (size_t)S * ((size_t)c * 6 + 2);
	cur = calloc((size_t)S, sizeof(*cur));
	prev = malloc((size_t)S * sizeof(*prev));
	posted = malloc(nx * 2 * sizeof(*posted));
	g->last = malloc((size_t)S * sizeof(*g->last));
	g->arcs = malloc(steps * 5 * sizeof(*g->arcs));
	if (!cur || !prev || !posted || !g->last || !g->arcs) {
		rc = err_set(err, UNIAP_E_NOMEM, "schedule: out of memory");
		goto out;
	}
	g->stages = S;
	for (t = 0; t < nx * 2; t++)
		posted[t] = -2;
	for (i = 0; i < S; i++) {
		cur[i].n = -1;
		prev[i] = -1;
		if (!sched_cursor_step(kind, S, c, i, &cur[i]))
			left--;
	}
#define XID(x) (((size_t)(x).back * (size_t)(S - 1) + (size_t)(x).j) * (size_t)c + (size_t)(x).m)
	while (left > 0 && moved) {
		moved = 0;
		for (i = 0; i < S; i++) {
			const struct sched_step *s;

			while ((s = sched_cursor_step(kind, S, c, i, &cur[i])) != NULL) {
				int node = g->n_nodes, k, ready = 1;

				if ((size_t)node >= steps) {
					rc = err_set(err, UNIAP_E_INTERNAL, "schedule graph: more steps than counted");
					goto out;
				}
				if (!s->call) {
					sched_arc_add(g, prev[i], node, 1, i, s->back ? 1 - a : a);
				} else {
					for (k = 0; k < s->n; k++) {
						posted[XID(s->x[k]) * 2 + (size_t)s->x[k].recv] = prev[i];
						if (posted[XID(s->x[k]) * 2 + (size_t)!s->x[k].recv] == -2)
							ready = 0;
					}
					if (!ready)
						break;
					for (k = 0; k < s->n; k++) {
						const struct sched_xfer *x = &s->x[k];
						int other = posted[XID(*x) * 2 + (size_t)!x->recv];
						double share = x->back ? 1 - a : a;

						sched_arc_add(g, prev[i], node, 2, x->j, share);
						if (other != prev[i])
							sched_arc_add(g, other, node, 2, x->j, share);
					}
				}
				g->n_nodes++;
				prev[i] = node;
				cur[i].k++;
				moved = 1;
				if (!sched_cursor_step(kind, S, c, i, &cur[i]))
					left--;
			}
		}
	}
#undef XID
	if (left > 0)
		rc = err_set(err, UNIAP_E_INTERNAL, "schedule: %d ranks could never finish", left);
	for (i = 0; i < S; i++)
		g->last[i] = prev[i];
out:
	free(cur);
	free(prev);
	free(posted);
	if (rc != UNIAP_OK)
		sched_graph_release(g);
	return rc;
}

void sched_graph_release(struct sched_graph *g)
{
	free(g->last);
	free(g->arcs);
	memset(g, 0, sizeof(*g));
}

double sched_graph_length(const struct sched_graph *g, const double *p, const double *o, double *t)
{
	size_t r;
	double len = 0;
	int i;

	for (i = 0; i < g->n_nodes; i++)
		t[i] = 0;
	for (r = 0; r < g->n_arcs; r++) {
		const struct sched_arc *x = &g->arcs[r];
		double d = x->term == 1 ? x->share * p[x->index] : x->term == 2 ? x->share * o[x->index] : 0;
		double v = (x->from >= 0 ? t[x->from] : 0) + d;

		if (v > t[x->to])
			t[x->to] = v;
	}
	for (i = 0; i < g->stages; i++)
		if (g->last[i] >= 0 && t[g->last[i]] > len)
			len = t[g->last[i]];
	return len;
}

uniap_code sched_simulate(const struct sched_input *in, struct sched *out, struct uniap_err *err)
{
	const double a = SCHED_FORWARD_SHARE;
	const int P = in->ranks, S = in->stages, v = S > 0 && P > 0 ? S / P : 1;
	const long c = in->microbatches;
	struct sched_unit **ord = NULL;
	size_t *len = NULL, *at = NULL, cap, left = 0;
	double *free_at = NULL, *fend = NULL, *arr_f = NULL, *arr_b = NULL, *link_f = NULL, *link_b = NULL;
	uniap_code rc = UNIAP_OK;
	int d, stuck = 0;
	size_t i;

	memset(out, 0, sizeof(*out));
	if (!sched_input_ok(in, err))
		return UNIAP_E_ARG;
	if ((double)S * (double)c > (double)SCHED_MAX_UNITS)
		return err_set(err, UNIAP_E_LIMIT, "schedule: %d stages x %ld micro-batches is more than %ld units to lay out",
		               S, c, (long)SCHED_MAX_UNITS);
	cap = (size_t)S * (size_t)c * 4; /* every unit, every transfer */
	out->blocks = malloc(cap * sizeof(*out->blocks));
	out->busy_s = calloc((size_t)P, sizeof(*out->busy_s));
	if (!out->blocks || !out->busy_s) {
		rc = err_set(err, UNIAP_E_NOMEM, "schedule: out of memory");
		goto out;
	}
	if ((in->schedule == COST_GPIPE || in->schedule == COST_1F1B) && S == P) {
		rc = sched_blocking(in, out, err); /* needs none of the list schedule's tables */
		goto out;
	}
	ord = calloc((size_t)P, sizeof(*ord));
	len = calloc((size_t)P, sizeof(*len));
	at = calloc((size_t)P, sizeof(*at));
	free_at = calloc((size_t)P, sizeof(*free_at));
	link_f = calloc((size_t)P, sizeof(*link_f));
	link_b = calloc((size_t)P, sizeof(*link_b));
	fend = malloc((size_t)S * (size_t)c * sizeof(*fend));
	arr_f = malloc((size_t)S * (size_t)c * sizeof(*arr_f));
	arr_b = malloc((size_t)S * (size_t)c * sizeof(*arr_b));
	if (!ord || !len || !at || !free_at || !link_f || !link_b || !fend || !arr_f || !arr_b) {
		rc = err_set(err, UNIAP_E_NOMEM, "schedule: out of memory");
		goto out;
	}
	for (i = 0; i < (size_t)S * (size_t)c; i++)
		fend[i] = arr_f[i] = arr_b[i] = NAN;
	for (d = 0; d < P; d++) {
		if (!(ord[d] = malloc((size_t)c * (size_t)v * 2 * sizeof(**ord)))) {
			rc = err_set(err, UNIAP_E_NOMEM, "schedule: out of memory");
			goto out;
		}
		len[d] = sched_order(in, d, ord[d]);
		left += len[d];
	}
#define IDX(st, m) ((size_t)(st) * (size_t)c + (size_t)(m))
	while (left > 0 && !stuck) {
		stuck = 1;
		for (d = 0; d < P; d++) {
			while (at[d] < len[d]) {
				const struct sched_unit *u = &ord[d][at[d]];
				double ready, dur, start;
				struct sched_block *b;

				if (!u->back) {
					if (u->stage > 0 && isnan(arr_f[IDX(u->stage, u->micro)]))
						break;
					ready = u->stage > 0 ? arr_f[IDX(u->stage, u->micro)] : 0;
				} else {
					if (isnan(fend[IDX(u->stage, u->micro)]) ||
					    (u->stage < S - 1 && isnan(arr_b[IDX(u->stage, u->micro)])))
						break;
					ready = fend[IDX(u->stage, u->micro)];
					if (u->stage < S - 1 && arr_b[IDX(u->stage, u->micro)] > ready)
						ready = arr_b[IDX(u->stage, u->micro)];
				}
				dur = (u->back ? 1 - a : a) * in->time_s[u->stage];
				start = free_at[d] > ready ? free_at[d] : ready;
				free_at[d] = start + dur;
				out->busy_s[d] += dur;
				b = &out->blocks[out->n_blocks++];
				*b = (struct sched_block){ u->back ? SCHED_BACKWARD : SCHED_FORWARD, u->stage, d, u->micro,
				                           start, dur };
				/* the send: boundary j = stage (forward) or stage - 1 (backward), on link j mod P */
				if ((!u->back && u->stage < S - 1) || (u->back && u->stage > 0)) {
					int j = u->back ? u->stage - 1 : u->stage, link = j % P;
					double o = in->transfer_s ? in->transfer_s[j] : 0;
					double td = (u->back ? 1 - a : a) * o, *lf = u->back ? &link_b[link] : &link_f[link];
					double ts = *lf > start + dur ? *lf : start + dur;

					*lf = ts + td;
					if (u->back)
						arr_b[IDX(j, u->micro)] = ts + td;
					else
						arr_f[IDX(j + 1, u->micro)] = ts + td;
					if (td > 0)
						out->blocks[out->n_blocks++] =
							(struct sched_block){ u->back ? SCHED_TRANSFER_BACKWARD : SCHED_TRANSFER_FORWARD,
							                      j, link, u->micro, ts, td };
				}
				if (!u->back)
					fend[IDX(u->stage, u->micro)] = start + dur;
				at[d]++;
				left--;
				stuck = 0;
			}
		}
	}
#undef IDX
	if (left > 0) {
		rc = err_set(err, UNIAP_E_INTERNAL, "schedule: %zu units could never start", left);
		goto out;
	}
	for (i = 0; i < out->n_blocks; i++)
		if (out->blocks[i].start_s + out->blocks[i].dur_s > out->length_s)
			out->length_s = out->blocks[i].start_s + out->blocks[i].dur_s;
out:
	if (ord)
		for (d = 0; d < P; d++)
			free(ord[d]);
	free(ord);
	free(len);
	free(at);
	free(free_at);
	free(link_f);
	free(link_b);
	free(fend);
	free(arr_f);
	free(arr_b);
	if (rc != UNIAP_OK)
		sched_release(out);
	return rc;
}
