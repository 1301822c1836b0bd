/*
 * schedsim.c - the list schedule of schedsim.h.  Each rank's units are listed in
 * its schedule's order first (sched_orders); then the ranks are swept in turn,
 * each placing units until one waits on an input not yet produced, until every
 * unit is placed.  An order that could never finish (which the orders here do
 * not produce) ends the sweep and is reported as UNIAP_E_INTERNAL, not looped on.
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
 * GPipe as its runtimes execute it (cost.h: transfers block): each stage runs
 * receive, compute, send per micro-batch, every forward then every backward,
 * and a transfer is a rendezvous that starts when both its stages reach it
 * and holds both for its time.  Stages are swept in turn, each running until
 * it waits on its partner; the two phases flow one way each, so it ends.
 */
static uniap_code sched_gpipe_blocking(const struct sched_input *in, struct sched *out, struct uniap_err *err)
{
	const double a = SCHED_FORWARD_SHARE;
	const int S = in->stages;
	const long c = in->microbatches;
	/* a stage's program: per phase and micro-batch, receive?, compute, send? (op 0..2) */
	long *m_at = calloc((size_t)S, sizeof(*m_at));
	int *op_at = calloc((size_t)S, sizeof(*op_at)), *phase = calloc((size_t)S, sizeof(*phase));
	double *clock = calloc((size_t)S, sizeof(*clock));
	size_t done_n = 0, total = (size_t)S * (size_t)c * 2;
	int i, moved = 1;
	uniap_code rc = UNIAP_OK;

	if (!m_at || !op_at || !phase || !clock) {
		rc = err_set(err, UNIAP_E_NOMEM, "schedule: out of memory");
		goto out;
	}
	while (done_n < total && moved) {
		moved = 0;
		for (i = 0; i < S; i++) {
			for (;;) {
				int back = phase[i], op = op_at[i];
				/* forward: receive from i - 1, send to i + 1; backward the other way */
				int from = back ? i + 1 : i - 1, to = back ? i - 1 : i + 1;
				long m = m_at[i];

				if (back > 1)
					break;
				if (op == 0 && from >= 0 && from < S) {
					/* the receive: the partner must stand at its send of m in this phase */
					int j = from;
					double dur, t0;
					int bnd = back ? i : i - 1; /* boundary between i and i -/+ 1 */

					if (!(phase[j] == back && m_at[j] == m && op_at[j] == 2))
						break;
					dur = (back ? 1 - a : a) * (in->transfer_s ? in->transfer_s[bnd] : 0);
					t0 = clock[i] > clock[j] ? clock[i] : clock[j];
					clock[i] = clock[j] = t0 + dur;
					if (dur > 0)
						out->blocks[out->n_blocks++] = (struct sched_block){
							back ? SCHED_TRANSFER_BACKWARD : SCHED_TRANSFER_FORWARD, bnd, bnd, m, t0, dur };
					/* the sender's send is done: its next micro-batch */
					op_at[j] = 0;
					if (++m_at[j] == c) {
						m_at[j] = 0;
						phase[j]++;
					}
					op_at[i] = 1;
					moved = 1;
					continue;
				}
				if (op == 0) {
					op_at[i] = 1;
					continue;
				}
				if (op == 1) {
					double dur = (back ? 1 - a : a) * in->time_s[i];

					out->blocks[out->n_blocks++] = (struct sched_block){
						back ? SCHED_BACKWARD : SCHED_FORWARD, i, i, m, clock[i], dur };
					out->busy_s[i] += dur;
					clock[i] += dur;
					done_n++;
					moved = 1;
					if (to >= 0 && to < S) {
						op_at[i] = 2; /* waits at its send for the receiver */
						break;
					}
					op_at[i] = 0;
					if (++m_at[i] == c) {
						m_at[i] = 0;
						phase[i]++;
					}
					continue;
				}
				break; /* op 2: the receiver moves it on */
			}
		}
	}
	if (done_n < total)
		rc = err_set(err, UNIAP_E_INTERNAL, "schedule: %zu units could never start", total - done_n);
	for (i = 0; rc == UNIAP_OK && i < S; i++)
		if (clock[i] > out->length_s)
			out->length_s = clock[i];
out:
	free(m_at);
	free(op_at);
	free(phase);
	free(clock);
	return rc;
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
	if (in->schedule == COST_GPIPE && S == P) {
		rc = sched_gpipe_blocking(in, out, err); /* needs none of the list schedule's tables */
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
