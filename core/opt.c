/*
 * opt.c - the optimizer's front: picks the exact path for a candidate
 * (dp.c and dp_dag.c for chains and narrow DAGs, milp.c otherwise), builds
 * the MILP's warm start and bounds its run.  What the paths share is in
 * opt_base.c, the worker processes' byte format in opt_pack.c.
 *
 * Never: include CBC (only milp.c does), I/O, globals, asserts on input.
 */
#include "opt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dp.h"
#include "milp.h"

/* A topological order of the layers into order; 1 ok, 0 on a cycle or out of memory. */
static int opt_topo_order(const struct cost_candidate *c, size_t *order)
{
	size_t n = c->n_layers, e, head = 0, tail = 0;
	size_t *indeg = calloc(n ? n : 1, sizeof(size_t)), *cnt = NULL, *adj = NULL;
	int ok = 0;

	if (!indeg || opt_successors(c, &cnt, &adj) != 0)
		goto out;
	for (e = 0; e < c->n_edges; e++)
		indeg[c->edges[e].to]++;
	/* Kahn with the smallest index first, so index order wins when it is topological */
	for (e = 0; e < n; e++)
		if (indeg[e] == 0)
			order[tail++] = e;
	while (head < tail) {
		size_t u = order[head++], j, w;

		/* keep the queue sorted: insert newly freed layers in index order */
		for (j = cnt[u]; j < cnt[u + 1]; j++) {
			size_t v = adj[j];

			if (--indeg[v] == 0) {
				w = tail++;
				while (w > head && order[w - 1] > v) {
					order[w] = order[w - 1];
					w--;
				}
				order[w] = v;
			}
		}
	}
	ok = tail == n;
out:
	free(indeg);
	free(cnt);
	free(adj);
	return ok;
}

/*
 * Brings an assignment within every device's memory, greedily: while a
 * device is over the limit, the layer on it and the strategy that save its
 * memory at the least time per byte (the layer's own memory on its stage)
 * are switched, and the devices measured again (opt_device_memory).  Stops
 * when every device fits (1), or when no switch saves memory or after 4n
 * switches (0; the assignment is left as it stands).  -1 out of memory.
 */
static int opt_repair_memory(const struct cost_candidate *c, int *stage, size_t *strategy)
{
	size_t n = c->n_layers, K = cost_k(c), u, k, step;
	double *mem = malloc((size_t)c->pp * sizeof(double));
	int d, rc = 0;

	if (!mem)
		return -1;
	for (step = 0; step < 4 * n; step++) {
		int over = 0;
		double best = INFINITY, best_save = 0;
		size_t bu = n, bk = 0;

		if (opt_device_memory(c, stage, strategy, mem) != 0) {
			rc = -1;
			break;
		}
		for (d = 0; d < c->pp; d++)
			over += !(mem[d] <= c->memory_limit_bytes);
		if (!over) {
			rc = 1;
			break;
		}
		for (u = 0; u < n; u++) {
			int i = stage[u];
			double cur;

			if (mem[i % c->pp] <= c->memory_limit_bytes)
				continue;
			cur = c->memory_fixed_bytes[u * K + strategy[u]] +
			      (double)c->inflight[i] * c->memory_per_microbatch_bytes[u * K + strategy[u]];
			for (k = 0; k < K; k++) {
				double save = cur - (c->memory_fixed_bytes[u * K + k] +
				                     (double)c->inflight[i] * c->memory_per_microbatch_bytes[u * K + k]),
				       cost = c->time_s[u * K + k] - c->time_s[u * K + strategy[u]], ratio;

				if (!(save > 0))
					continue;
				ratio = cost / save;
				if (ratio < best || (ratio == best && save > best_save)) {
					best = ratio;
					best_save = save;
					bu = u;
					bk = k;
				}
			}
		}
		if (bu == n)
			break;
		strategy[bu] = bk;
	}
	free(mem);
	return rc;
}

/*
 * A quick valid plan for the MILP's warm start: a topological order cut into
 * pp blocks of about equal least time, the fastest strategy per layer, then
 * the layers of an over-memory stage moved to their smallest strategy, then a
 * few passes of one-layer improvements (strategy change, move across a block
 * boundary) judged by opt_tpi.  Returns 1 with *tpi finite when it found one.
 */
static int opt_heuristic(const struct cost_candidate *c, int *stage, size_t *strategy, double *tpi)
{
	size_t n = c->n_layers, K = cost_k(c), u, k, r, pass;
	size_t *order = calloc(n, sizeof(size_t));
	double *best_t = calloc(n, sizeof(double)), total = 0, acc = 0;
	/* interleaved: S stages, v per device, each kept within 1/v of the limit */
	int pp = cost_stages(c), i, found = 0;
	double stage_limit = c->memory_limit_bytes / cost_virtual(c);

	*tpi = INFINITY;
	if (!order || !best_t || (size_t)pp > n || !opt_topo_order(c, order))
		goto out;
	for (u = 0; u < n; u++) {
		size_t bk = 0;

		for (k = 1; k < K; k++)
			if (c->time_s[u * K + k] < c->time_s[u * K + bk])
				bk = k;
		strategy[u] = bk;
		best_t[u] = c->time_s[u * K + bk];
		total += best_t[u];
	}
	/* block r of the order goes to stage i: cut when the running time passes i+1 shares */
	i = 0;
	for (r = 0; r < n; r++) {
		size_t left = n - r;

		if (i < pp - 1 && r > 0 &&
		    ((size_t)(pp - 1 - i) >= left || acc >= total * (double)(i + 1) / pp))
			i++;
		stage[order[r]] = i;
		acc += best_t[order[r]];
	}
	/* an over-memory stage: switch its layers to their smallest strategy, largest saving first */
	for (i = 0; i < pp; i++) {
		for (pass = 0; pass < n; pass++) {
			double mem = 0, gain = 0;
			size_t bu = n, bkk = 0;

			for (u = 0; u < n; u++)
				if (stage[u] == i)
					mem += c->memory_fixed_bytes[u * K + strategy[u]] +
					       (double)c->inflight[i] * c->memory_per_microbatch_bytes[u * K + strategy[u]];
			if (mem <= stage_limit)
				break;
			for (u = 0; u < n; u++) {
				double cur;

				if (stage[u] != i)
					continue;
				cur = c->memory_fixed_bytes[u * K + strategy[u]] +
				      (double)c->inflight[i] * c->memory_per_microbatch_bytes[u * K + strategy[u]];
				for (k = 0; k < K; k++) {
					double m = c->memory_fixed_bytes[u * K + k] +
					           (double)c->inflight[i] * c->memory_per_microbatch_bytes[u * K + k];

					if (cur - m > gain) {
						gain = cur - m;
						bu = u;
						bkk = k;
					}
				}
			}
			if (bu == n)
				break;
			strategy[bu] = bkk;
		}
	}
	*tpi = opt_tpi(c, stage, strategy);
	/* the rule above judges a stage by its share of the limit; the devices' own memory
	 * (interleaved chunks, their peaks) can still be over: switch what saves the most per second */
	if (!isfinite(*tpi) && (double)n * n * K < 5e8 && opt_repair_memory(c, stage, strategy) == 1)
		*tpi = opt_tpi(c, stage, strategy);
	/* one-layer improvements while they pay and the work stays small */
	if ((double)n * K * (double)(n + c->n_edges) * 4 < 2e7) {
		for (pass = 0; pass < 4; pass++) {
			int improved = 0;

			for (u = 0; u < n; u++) {
				size_t old_k = strategy[u];
				int old_i = stage[u], di;

				for (di = -1; di <= 1; di++) {
					int ni = old_i + di;

					if (ni < 0 || ni >= pp)
						continue;
					for (k = 0; k < K; k++) {
						double t;

						stage[u] = ni;
						strategy[u] = k;
						t = opt_tpi(c, stage, strategy);
						if (t < *tpi) {
							*tpi = t;
							old_k = k;
							old_i = ni;
							improved = 1;
						}
					}
				}
				stage[u] = old_i;
				strategy[u] = old_k;
			}
			if (!improved)
				break;
		}
	}
	found = isfinite(*tpi);
out:
	free(order);
	free(best_t);
	return found;
}

/* ------------------------------------------------------------ dispatch */

/* Copies src into a note buffer of OPT_NOTE_MAX bytes, truncating. */
/* The heuristic plan, then dp-dag (dag = 1) or the MILP bounded by it. */
static uniap_code opt_run_bounded(const struct cost_candidate *c, const struct opt_options *o,
                                  int dag, struct opt_result *out, struct uniap_err *err)
{
	size_t n = c->n_layers;
	int *st = calloc(n, sizeof(int));
	size_t *sk = calloc(n, sizeof(size_t));
	double h_tpi = INFINITY;
	int have = 0;
	uniap_code rc;

	if (!st || !sk) {
		rc = err_set(err, UNIAP_E_NOMEM, "opt: out of memory");
		goto out;
	}
	have = opt_heuristic(c, st, sk, &h_tpi);
	if (dag)
		rc = dp_dag_solve(c, o, have ? st : NULL, have ? sk : NULL, out, err);
	else
		rc = milp_solve(c, o, have ? st : NULL, have ? sk : NULL, out, err);
out:
	free(st);
	free(sk);
	return rc;
}

/* A fallback path gets what is left of the time limit (a DP that gave up used some), never
 * less than 50 ms, so that the whole solve keeps to the limit its caller enforces. */
static void opt_time_left(struct opt_options *o, double t0)
{
	if (o->time_limit_s > 0 && isfinite(o->time_limit_s))
		o->time_limit_s = fmax(0.05, o->time_limit_s - (opt_clock_s() - t0));
}

uniap_code opt_solve(const struct cost_candidate *c, const struct opt_options *opts,
                     struct opt_result *out, struct uniap_err *err)
{
	struct opt_options o;
	double t0 = opt_clock_s();
	uniap_code rc;
	int chain;

	opt_result_init(out);
	if (opts)
		o = *opts;
	else
		opt_options_init(&o);
	if (isnan(o.cutoff_tpi))
		o.cutoff_tpi = INFINITY;
	if (!o.dp_label_cap)
		o.dp_label_cap = OPT_DP_LABEL_CAP_DEFAULT;
	if (o.path < OPT_PATH_AUTO || o.path >= OPT_PATH_COUNT) {
		rc = err_set(err, UNIAP_E_ARG, "opt.path: unknown path %d", (int)o.path);
		goto out;
	}
	rc = opt_candidate_check(c, err);
	if (rc != UNIAP_OK)
		goto out;
	if ((size_t)cost_stages(c) > c->n_layers) {
		out->status = OPT_INFEASIBLE;
		out->bound_s = INFINITY;
		snprintf(out->note, sizeof(out->note), "%d stages exceed the %zu layers", cost_stages(c),
		         c->n_layers);
		goto out;
	}
	/* the DPs add contiguous stage times into one maximum; interleaved device loads are
	 * sums over stages that are not contiguous, so only the MILP is exact for them */
	chain = opt_is_chain(c) && cost_virtual(c) == 1;
	if (cost_virtual(c) > 1 &&
	    (o.path == OPT_PATH_DP_CHAIN || o.path == OPT_PATH_DP_STAGES || o.path == OPT_PATH_DP_SWEEP)) {
		rc = err_set(err, UNIAP_E_ARG, "opt.path: the dynamic programs do not take interleaved "
		             "candidates (%d virtual stages)", c->virtual_stages);
		goto out;
	}
	switch (o.path) {
	case OPT_PATH_DP_CHAIN:
		rc = dp_chain_solve(c, &o, out, err);
		break;
	case OPT_PATH_DP_STAGES:
		rc = dp_stages_solve(c, &o, out, err);
		break;
	case OPT_PATH_DP_SWEEP:
		rc = dp_sweep_solve(c, &o, out, err);
		break;
	case OPT_PATH_MILP:
		rc = opt_run_bounded(c, &o, 0, out, err);
		break;
	case OPT_PATH_DP_DAG:
		rc = opt_run_bounded(c, &o, 1, out, err);
		break;
	default:
		if (!chain && cost_virtual(c) > 1) {
			rc = opt_run_bounded(c, &o, 0, out, err);
			break;
		}
		if (!chain) {
			/* dp-dag when the graph is narrow enough, else the MILP (the note says why) */
			rc = opt_run_bounded(c, &o, 1, out, err);
			if (rc == UNIAP_E_LIMIT || rc == UNIAP_E_ARG) {
				char why[OPT_NOTE_MAX];

				opt_note_copy(why, err ? err->msg : "dp-dag");
				opt_result_release(out);
				err_clear(err);
				opt_time_left(&o, t0);
				rc = opt_run_bounded(c, &o, 0, out, err);
				if (rc == UNIAP_OK) {
					/* why the MILP answered, then what the MILP itself noted */
					char both[2 * OPT_NOTE_MAX + 4];

					snprintf(both, sizeof(both), "%s%s%s", why, out->note[0] ? "; " : "", out->note);
					opt_note_copy(out->note, both);
				}
			}
			break;
		}
		/*
		 * dp-stages while its block table is small (L^2 K^2 <= OPT_DP_SWEEP_ABOVE entries),
		 * else dp-sweep, whose table shares rows between identical layers and keeps strategy
		 * classes at the boundaries (docs/optimizer.md, "dp-sweep", has the measurements);
		 * each falls back to the other on a cap, then dp-chain, then the MILP.
		 */
		{
			double kk = (double)cost_k(c), nn = (double)c->n_layers;
			int sweep_first = nn * nn * kk * kk > OPT_DP_SWEEP_ABOVE;

			rc = sweep_first ? dp_sweep_solve(c, &o, out, err) : dp_stages_solve(c, &o, out, err);
			if (rc == UNIAP_E_LIMIT) {
				opt_result_release(out);
				err_clear(err);
				opt_time_left(&o, t0);
				rc = sweep_first ? dp_stages_solve(c, &o, out, err) : dp_sweep_solve(c, &o, out, err);
			}
		}
		if (rc == UNIAP_E_LIMIT) {
			opt_result_release(out);
			err_clear(err);
			opt_time_left(&o, t0);
			rc = dp_chain_solve(c, &o, out, err);
		}
		if (rc == UNIAP_E_LIMIT) {
			char why[OPT_NOTE_MAX];

			opt_note_copy(why, err ? err->msg : "dp label cap");
			opt_result_release(out);
			err_clear(err);
			opt_time_left(&o, t0);
			rc = opt_run_bounded(c, &o, 0, out, err);
			if (rc == UNIAP_OK) {
				out->method = OPT_METHOD_MILP_AFTER_CAP;
				opt_note_copy(out->note, why);
			}
		}
		break;
	}
	if (rc == UNIAP_E_TIMEOUT) {
		/* a DP ran out of time: nothing proven, no plan */
		opt_result_release(out);
		out->status = OPT_UNKNOWN;
		opt_note_copy(out->note, err ? err->msg : "time limit");
		err_clear(err);
		rc = UNIAP_OK;
	}
	if (rc != UNIAP_OK)
		goto out;
	/* the reported TPI is always the audit formula on the reported plan */
	if (out->stage && out->strategy) {
		out->tpi_s = opt_tpi(c, out->stage, out->strategy);
		if (!isfinite(out->tpi_s)) {
			rc = err_set(err, UNIAP_E_INTERNAL, "opt: %s returned an invalid plan", out->method);
			goto out;
		}
		if (out->status == OPT_OPTIMAL && out->gap == 0)
			out->bound_s = out->tpi_s;
		out->bound_s = fmin(out->bound_s, out->tpi_s);
		out->gap = out->tpi_s > 0 ? (out->tpi_s - out->bound_s) / out->tpi_s : 0;
	} else {
		out->tpi_s = INFINITY;
		out->gap = INFINITY;
	}
out:
	if (rc != UNIAP_OK) {
		const char *m = out->method;

		opt_result_release(out);
		out->method = m;
		out->status = OPT_ERROR;
	}
	out->solve_s = opt_clock_s() - t0;
	return rc;
}
