/*
 * opt.c - the optimizer's front: checks a candidate, evaluates assignments
 * with the audit formula, picks the exact path (dp.c for chains, milp.c
 * otherwise), builds the MILP's warm start, and (un)packs candidates and
 * results for worker processes.
 *
 * Never: include CBC (only milp.c does), I/O, globals, asserts on input.
 */
#include "opt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dp.h"
#include "milp.h"

static const char *const opt_status_names[OPT_STATUS_COUNT] = {
	[OPT_OPTIMAL] = "optimal",
	[OPT_FEASIBLE] = "feasible",
	[OPT_INFEASIBLE] = "infeasible",
	[OPT_PRUNED] = "pruned",
	[OPT_UNKNOWN] = "unknown",
	[OPT_ERROR] = "error",
};

const char *opt_status_name(enum opt_status s)
{
	if ((int)s < 0 || s >= OPT_STATUS_COUNT)
		return "unknown-status";
	return opt_status_names[s];
}

double opt_clock_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void opt_options_init(struct opt_options *o)
{
	memset(o, 0, sizeof(*o));
	o->time_limit_s = 60;
	o->rel_gap = 0;
	o->cutoff_tpi = INFINITY;
	o->early_stop = 0;
	o->early_stop_after_s = 15;
	o->early_stop_gap = 0.04;
	o->threads_inside_cbc = 1;
	o->path = OPT_PATH_AUTO;
	o->dp_label_cap = OPT_DP_LABEL_CAP_DEFAULT;
}

void opt_result_init(struct opt_result *r)
{
	memset(r, 0, sizeof(*r));
	r->status = OPT_UNKNOWN;
	r->tpi_s = INFINITY;
	r->bound_s = 0;
	r->gap = INFINITY;
	r->method = OPT_METHOD_NONE;
}

void opt_result_release(struct opt_result *r)
{
	if (!r)
		return;
	free(r->stage);
	free(r->strategy);
	opt_result_init(r);
}

/* ------------------------------------------------------------ evaluation */

double opt_tpi(const struct cost_candidate *c, const int *stage, const size_t *strategy)
{
	size_t K = cost_k(c), u, e;
	int pp = c->pp, S = cost_stages(c), v = cost_virtual(c), i;
	double *p = NULL, *o, *mem, *load, sum = 0, mx = 0, tpi = INFINITY;
	unsigned char *used;

	if (pp < 1 || !stage || !strategy || K == 0)
		return INFINITY;
	/* p[S], o[S], mem[pp], load[2 pp], used[S] */
	p = calloc((size_t)S * 2 + (size_t)pp * 3, sizeof(double));
	used = calloc((size_t)S, 1);
	if (!p || !used)
		goto out;
	o = p + S;
	mem = o + S;
	load = mem + pp;
	for (u = 0; u < c->n_layers; u++) {
		size_t k = strategy[u];

		i = stage[u];
		if (i < 0 || i >= S || k >= K)
			goto out;
		used[i] = 1;
		p[i] += c->time_s[u * K + k];
		mem[i % pp] += c->memory_fixed_bytes[u * K + k] +
		               (double)c->inflight[i] * c->memory_per_microbatch_bytes[u * K + k];
	}
	for (i = 0; i < S; i++)
		if (!used[i])
			goto out;
	for (i = 0; i < pp; i++)
		if (!(mem[i] <= c->memory_limit_bytes))
			goto out;
	for (e = 0; e < c->n_edges; e++) {
		const struct cost_edge *ed = &c->edges[e];
		int a, b, j;
		size_t kl;

		if (ed->from >= c->n_layers || ed->to >= c->n_layers)
			goto out;
		a = stage[ed->from];
		b = stage[ed->to];
		kl = strategy[ed->from] * K + strategy[ed->to];
		if (a > b)
			goto out;
		if (a == b)
			p[a] += ed->same_stage_s[kl];
		else
			for (j = a; j < b; j++)
				o[j] += ed->cross_stage_s[kl];
	}
	if (v == 1) {
		for (i = 0; i < pp; i++) {
			sum += p[i];
			mx = fmax(mx, p[i]);
		}
		for (i = 0; i + 1 < pp; i++) {
			sum += o[i];
			mx = fmax(mx, o[i]);
		}
		tpi = sum + (double)(c->microbatches - 1) * mx;
		goto out;
	}
	/* interleaved: device loads P_d and link loads O_d (cost.h) */
	for (i = 0; i < S; i++) {
		sum += p[i];
		load[i % pp] += p[i];
	}
	for (i = 0; i + 1 < S; i++) {
		sum += o[i];
		load[pp + i % pp] += o[i];
	}
	for (i = 0; i < 2 * pp; i++)
		mx = fmax(mx, load[i]);
	tpi = sum / v + ((double)c->microbatches - 1.0 / v) * mx;
out:
	free(p);
	free(used);
	return tpi;
}

static int opt_bad_cost(double x)
{
	return !isfinite(x) || x < 0;
}

uniap_code opt_candidate_check(const struct cost_candidate *c, struct uniap_err *err)
{
	size_t K, n, u, e, i;

	if (!c)
		return err_set(err, UNIAP_E_INVALID, "candidate: missing");
	K = cost_k(c);
	n = c->n_layers;
	if (c->pp < 1 || c->pp > MODEL_MAX_LAYERS)
		return err_set(err, UNIAP_E_INVALID, "candidate.pp: must be in [1, %d], got %d",
		               MODEL_MAX_LAYERS, c->pp);
	if (c->microbatches < 1)
		return err_set(err, UNIAP_E_INVALID, "candidate.microbatches: must be >= 1, got %ld",
		               c->microbatches);
	if (c->batch < 0 || c->batch > COST_MAX_BATCH)
		return err_set(err, UNIAP_E_INVALID, "candidate.batch: must be in [0, %ld], got %ld", COST_MAX_BATCH,
		               c->batch);
	if (K < 1 || K > STRATEGY_MAX_COUNT)
		return err_set(err, UNIAP_E_INVALID, "candidate.strategies: count must be in [1, %d], got %zu",
		               STRATEGY_MAX_COUNT, K);
	if (n < 1 || n > MODEL_MAX_LAYERS)
		return err_set(err, UNIAP_E_INVALID, "candidate.n_layers: must be in [1, %d], got %zu",
		               MODEL_MAX_LAYERS, n);
	if (c->n_edges > MODEL_MAX_EDGES)
		return err_set(err, UNIAP_E_INVALID, "candidate.n_edges: must be <= %d, got %zu",
		               MODEL_MAX_EDGES, c->n_edges);
	if (!c->inflight || !c->time_s || !c->memory_fixed_bytes || !c->memory_per_microbatch_bytes ||
	    (c->n_edges > 0 && !c->edges))
		return err_set(err, UNIAP_E_INVALID, "candidate: cost arrays missing");
	if (isnan(c->memory_limit_bytes) || c->memory_limit_bytes < 0)
		return err_set(err, UNIAP_E_INVALID, "candidate.memory_limit_bytes: must be >= 0");
	if (c->virtual_stages < 0 || c->virtual_stages > COST_MAX_VIRTUAL_STAGES ||
	    (c->virtual_stages > 1 && (c->schedule != COST_INTERLEAVED || c->pp < 2 ||
	                               (size_t)cost_stages(c) > MODEL_MAX_LAYERS)))
		return err_set(err, UNIAP_E_INVALID, "candidate.virtual_stages: must be 1, or in [2, %d] with the "
		               "interleaved schedule and pp >= 2, got %d", COST_MAX_VIRTUAL_STAGES,
		               c->virtual_stages);
	for (i = 0; i < (size_t)cost_stages(c); i++)
		if (c->inflight[i] < 0)
			return err_set(err, UNIAP_E_INVALID, "candidate.inflight[%zu]: must be >= 0, got %ld",
			               i, c->inflight[i]);
	for (u = 0; u < n * K; u++) {
		if (opt_bad_cost(c->time_s[u]))
			return err_set(err, UNIAP_E_INVALID,
			               "candidate.time_s[%zu][%zu]: must be finite and >= 0", u / K, u % K);
		if (opt_bad_cost(c->memory_fixed_bytes[u]))
			return err_set(err, UNIAP_E_INVALID,
			               "candidate.memory_fixed_bytes[%zu][%zu]: must be finite and >= 0", u / K,
			               u % K);
		if (opt_bad_cost(c->memory_per_microbatch_bytes[u]))
			return err_set(err, UNIAP_E_INVALID,
			               "candidate.memory_per_microbatch_bytes[%zu][%zu]: must be finite and >= 0",
			               u / K, u % K);
	}
	for (e = 0; e < c->n_edges; e++) {
		const struct cost_edge *ed = &c->edges[e];

		if (ed->from >= n || ed->to >= n)
			return err_set(err, UNIAP_E_INVALID, "candidate.edges[%zu]: layer out of range", e);
		if (ed->from == ed->to)
			return err_set(err, UNIAP_E_INVALID, "candidate.edges[%zu]: self-loop on layer %zu", e,
			               ed->from);
		if (!ed->same_stage_s || !ed->cross_stage_s)
			return err_set(err, UNIAP_E_INVALID, "candidate.edges[%zu]: cost matrices missing", e);
		for (i = 0; i < K * K; i++)
			if (opt_bad_cost(ed->same_stage_s[i]) || opt_bad_cost(ed->cross_stage_s[i]))
				return err_set(err, UNIAP_E_INVALID,
				               "candidate.edges[%zu]: costs must be finite and >= 0", e);
	}
	return UNIAP_OK;
}

int opt_is_chain(const struct cost_candidate *c)
{
	unsigned char *seen;
	size_t e;
	int ok = 1;

	if (c->n_layers < 1 || c->n_edges != c->n_layers - 1)
		return 0;
	if (c->n_edges == 0)
		return 1;
	seen = calloc(c->n_edges, 1);
	if (!seen)
		return 0;
	for (e = 0; e < c->n_edges && ok; e++) {
		size_t f = c->edges[e].from;

		if (f + 1 >= c->n_layers || c->edges[e].to != f + 1 || seen[f])
			ok = 0;
		else
			seen[f] = 1;
	}
	free(seen);
	return ok;
}

/* ------------------------------------------------------------ warm start */

int opt_successors(const struct cost_candidate *c, size_t **start, size_t **succ)
{
	size_t n = c->n_layers, e, u;
	size_t *cnt = calloc(n + 1, sizeof(size_t)), *adj = calloc(c->n_edges + 1, sizeof(size_t));
	size_t *fill = calloc(n ? n : 1, sizeof(size_t));

	*start = NULL;
	*succ = NULL;
	if (!cnt || !adj || !fill) {
		free(cnt);
		free(adj);
		free(fill);
		return -1;
	}
	for (e = 0; e < c->n_edges; e++)
		cnt[c->edges[e].from + 1]++;
	for (u = 0; u < n; u++)
		cnt[u + 1] += cnt[u];
	for (e = 0; e < c->n_edges; e++) {
		size_t f = c->edges[e].from;

		adj[cnt[f] + fill[f]++] = c->edges[e].to;
	}
	free(fill);
	*start = cnt;
	*succ = adj;
	return 0;
}

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
static void opt_note_copy(char *dst, const char *src)
{
	size_t n = strnlen(src, OPT_NOTE_MAX - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

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

/* ------------------------------------------------------------ serialization */

/*
 * Format (little-endian): magic "UAPC"/"UAPR", u32 version, fields in a fixed
 * order, then a u32 FNV-1a checksum of everything before it.  Doubles travel
 * as their IEEE-754 bits.  Every count is checked against a cap and against
 * the bytes left before anything is allocated.
 */
#define OPT_PACK_VERSION 4u /* 2: a strategy's ZeRO stage and sequence parallelism; 3: the batch;
                               4: virtual stages */
#define OPT_NAME_PACK_MAX 4096u

struct opt_wbuf {
	unsigned char *p;
	size_t n, cap;
	int failed;
};

static void opt_w_bytes(struct opt_wbuf *w, const void *src, size_t len)
{
	if (w->failed)
		return;
	if (len > OPT_PACK_MAX - w->n) {
		w->failed = 1;
		return;
	}
	if (w->n + len > w->cap) {
		size_t nc = w->cap ? w->cap : 256;
		unsigned char *np;

		while (nc < w->n + len)
			nc *= 2;
		np = realloc(w->p, nc);
		if (!np) {
			w->failed = 1;
			return;
		}
		w->p = np;
		w->cap = nc;
	}
	memcpy(w->p + w->n, src, len);
	w->n += len;
}

static void opt_w_u64(struct opt_wbuf *w, uint64_t v)
{
	unsigned char b[8];
	int i;

	for (i = 0; i < 8; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	opt_w_bytes(w, b, 8);
}

static void opt_w_u32(struct opt_wbuf *w, uint32_t v)
{
	unsigned char b[4];
	int i;

	for (i = 0; i < 4; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	opt_w_bytes(w, b, 4);
}

static void opt_w_i64(struct opt_wbuf *w, int64_t v)
{
	opt_w_u64(w, (uint64_t)v);
}

static void opt_w_f64(struct opt_wbuf *w, double v)
{
	uint64_t b;

	memcpy(&b, &v, sizeof(b));
	opt_w_u64(w, b);
}

static void opt_w_str(struct opt_wbuf *w, const char *s)
{
	size_t len;

	if (!s) {
		opt_w_u32(w, UINT32_MAX);
		return;
	}
	len = strlen(s);
	if (len > OPT_NAME_PACK_MAX) {
		w->failed = 1;
		return;
	}
	opt_w_u32(w, (uint32_t)len);
	opt_w_bytes(w, s, len);
}

static uint32_t opt_fnv1a(const unsigned char *p, size_t n)
{
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= p[i];
		h *= 16777619u;
	}
	return h;
}

static uniap_code opt_w_finish(struct opt_wbuf *w, unsigned char **buf, size_t *len,
                               struct uniap_err *err)
{
	if (!w->failed)
		opt_w_u32(w, opt_fnv1a(w->p, w->n));
	if (w->failed) {
		free(w->p);
		*buf = NULL;
		*len = 0;
		return err_set(err, UNIAP_E_NOMEM, "pack: out of memory or over %zu bytes", OPT_PACK_MAX);
	}
	*buf = w->p;
	*len = w->n;
	return UNIAP_OK;
}

struct opt_rbuf {
	const unsigned char *p;
	size_t n, at;
	int failed;
};

static int opt_r_bytes(struct opt_rbuf *r, void *dst, size_t len)
{
	if (r->failed || len > r->n - r->at) {
		r->failed = 1;
		if (dst && len <= 8)
			memset(dst, 0, len);
		return -1;
	}
	if (dst)
		memcpy(dst, r->p + r->at, len);
	r->at += len;
	return 0;
}

static uint64_t opt_r_u64(struct opt_rbuf *r)
{
	unsigned char b[8];
	uint64_t v = 0;
	int i;

	if (opt_r_bytes(r, b, 8) != 0)
		return 0;
	for (i = 0; i < 8; i++)
		v |= (uint64_t)b[i] << (8 * i);
	return v;
}

static uint32_t opt_r_u32(struct opt_rbuf *r)
{
	unsigned char b[4];
	uint32_t v = 0;
	int i;

	if (opt_r_bytes(r, b, 4) != 0)
		return 0;
	for (i = 0; i < 4; i++)
		v |= (uint32_t)b[i] << (8 * i);
	return v;
}

static int64_t opt_r_i64(struct opt_rbuf *r)
{
	return (int64_t)opt_r_u64(r);
}

static int32_t opt_r_i32(struct opt_rbuf *r)
{
	return (int32_t)opt_r_u32(r);
}

static double opt_r_f64(struct opt_rbuf *r)
{
	uint64_t b = opt_r_u64(r);
	double v;

	memcpy(&v, &b, sizeof(v));
	return v;
}

/* Bytes left. */
static size_t opt_r_left(const struct opt_rbuf *r)
{
	return r->failed ? 0 : r->n - r->at;
}

/* Reads a string into a new allocation (*out, NULL for a packed NULL); 0 on success. */
static int opt_r_str(struct opt_rbuf *r, char **out, size_t max)
{
	uint32_t len = opt_r_u32(r);

	*out = NULL;
	if (r->failed)
		return -1;
	if (len == UINT32_MAX)
		return 0;
	if (len > max || len > opt_r_left(r)) {
		r->failed = 1;
		return -1;
	}
	*out = malloc((size_t)len + 1);
	if (!*out)
		return -2;
	opt_r_bytes(r, *out, len);
	(*out)[len] = '\0';
	if (strlen(*out) != len) { /* an embedded NUL */
		free(*out);
		*out = NULL;
		r->failed = 1;
		return -1;
	}
	return 0;
}

/* Checks magic, version and the trailing checksum; on success r covers the body. */
static int opt_r_open(struct opt_rbuf *r, const unsigned char *buf, size_t len, const char *magic)
{
	uint32_t sum;

	memset(r, 0, sizeof(*r));
	if (!buf || len < 12 || len > OPT_PACK_MAX || memcmp(buf, magic, 4) != 0)
		return -1;
	sum = (uint32_t)buf[len - 4] | (uint32_t)buf[len - 3] << 8 | (uint32_t)buf[len - 2] << 16 |
	      (uint32_t)buf[len - 1] << 24;
	if (sum != opt_fnv1a(buf, len - 4))
		return -1;
	r->p = buf;
	r->n = len - 4;
	r->at = 4;
	if (opt_r_u32(r) != OPT_PACK_VERSION)
		return -1;
	return 0;
}

static void opt_w_strategy(struct opt_wbuf *w, const struct strategy *s)
{
	int d;

	for (d = 0; d < STRATEGY_DIMS; d++) {
		opt_w_u32(w, (uint32_t)s->degree[d]);
		opt_w_u32(w, (uint32_t)s->order[d]);
		opt_w_u32(w, (uint32_t)s->stride[d]);
		opt_w_u32(w, (uint32_t)s->level[d]);
	}
	opt_w_u32(w, (uint32_t)s->n_order);
	opt_w_u32(w, (uint32_t)s->recompute);
	opt_w_u32(w, (uint32_t)s->zero);
	opt_w_u32(w, (uint32_t)s->sp);
	opt_w_str(w, s->name);
}

static int opt_r_strategy(struct opt_rbuf *r, struct strategy *s)
{
	char *name = NULL;
	int d, rc;

	for (d = 0; d < STRATEGY_DIMS; d++) {
		s->degree[d] = opt_r_i32(r);
		s->order[d] = opt_r_i32(r);
		s->stride[d] = opt_r_i32(r);
		s->level[d] = opt_r_i32(r);
	}
	s->n_order = opt_r_i32(r);
	s->recompute = opt_r_i32(r);
	s->zero = opt_r_i32(r);
	s->sp = opt_r_i32(r);
	rc = opt_r_str(r, &name, STRATEGY_NAME_MAX - 1);
	if (rc != 0)
		return rc;
	if (name)
		memcpy(s->name, name, strlen(name) + 1);
	else
		s->name[0] = '\0';
	free(name);
	return (s->n_order < 0 || s->n_order > STRATEGY_DIMS || s->zero < 0 || s->zero > 2 || s->sp < 0 ||
	        s->sp > 1) ? -1 : 0;
}

uniap_code opt_candidate_pack(const struct cost_candidate *c, unsigned char **buf, size_t *len,
                              struct uniap_err *err)
{
	struct opt_wbuf w = {0};
	size_t K, i, e;
	uniap_code rc;

	*buf = NULL;
	*len = 0;
	rc = opt_candidate_check(c, err);
	if (rc != UNIAP_OK)
		return rc;
	K = cost_k(c);
	opt_w_bytes(&w, "UAPC", 4);
	opt_w_u32(&w, OPT_PACK_VERSION);
	opt_w_i64(&w, c->pp);
	opt_w_i64(&w, c->microbatches);
	opt_w_i64(&w, c->microbatch_size);
	opt_w_i64(&w, c->batch);
	opt_w_u32(&w, (uint32_t)c->schedule);
	opt_w_i64(&w, cost_virtual(c));
	opt_w_f64(&w, c->memory_limit_bytes);
	opt_w_u64(&w, c->n_layers);
	opt_w_u64(&w, K);
	opt_w_u64(&w, c->n_edges);
	opt_w_i64(&w, c->strategies.stage_devices);
	opt_w_i64(&w, c->strategies.pp);
	opt_w_u32(&w, c->strategies.items ? 1 : 0);
	opt_w_u32(&w, c->layer_names ? 1 : 0);
	for (i = 0; i < (size_t)cost_stages(c); i++)
		opt_w_i64(&w, c->inflight[i]);
	if (c->strategies.items)
		for (i = 0; i < K; i++)
			opt_w_strategy(&w, &c->strategies.items[i]);
	if (c->layer_names)
		for (i = 0; i < c->n_layers; i++)
			opt_w_str(&w, c->layer_names[i]);
	for (i = 0; i < c->n_layers * K; i++)
		opt_w_f64(&w, c->time_s[i]);
	for (i = 0; i < c->n_layers * K; i++)
		opt_w_f64(&w, c->memory_fixed_bytes[i]);
	for (i = 0; i < c->n_layers * K; i++)
		opt_w_f64(&w, c->memory_per_microbatch_bytes[i]);
	for (e = 0; e < c->n_edges; e++) {
		opt_w_u64(&w, c->edges[e].from);
		opt_w_u64(&w, c->edges[e].to);
		for (i = 0; i < K * K; i++)
			opt_w_f64(&w, c->edges[e].same_stage_s[i]);
		for (i = 0; i < K * K; i++)
			opt_w_f64(&w, c->edges[e].cross_stage_s[i]);
	}
	return opt_w_finish(&w, buf, len, err);
}

static int opt_r_f64s(struct opt_rbuf *r, double **out, size_t n)
{
	size_t i;

	*out = NULL;
	if (n > opt_r_left(r) / 8) {
		r->failed = 1;
		return -1;
	}
	*out = malloc((n ? n : 1) * sizeof(double));
	if (!*out)
		return -2;
	for (i = 0; i < n; i++)
		(*out)[i] = opt_r_f64(r);
	return 0;
}

uniap_code opt_candidate_unpack(const unsigned char *buf, size_t len, struct cost_candidate *c,
                                struct uniap_err *err)
{
	struct opt_rbuf r;
	uint64_t n, K, ne;
	int64_t pp, sd, spp, vs;
	uint32_t has_items, has_names;
	size_t i, e;
	int nomem = 0, x;
	uniap_code rc = UNIAP_OK;

	memset(c, 0, sizeof(*c));
	if (opt_r_open(&r, buf, len, "UAPC") != 0)
		return err_set(err, UNIAP_E_INVALID, "candidate buffer: bad magic, version or checksum");
	pp = opt_r_i64(&r);
	c->microbatches = (long)opt_r_i64(&r);
	c->microbatch_size = (long)opt_r_i64(&r);
	c->batch = (long)opt_r_i64(&r);
	x = (int)opt_r_u32(&r);
	vs = opt_r_i64(&r);
	c->memory_limit_bytes = opt_r_f64(&r);
	n = opt_r_u64(&r);
	K = opt_r_u64(&r);
	ne = opt_r_u64(&r);
	sd = opt_r_i64(&r);
	spp = opt_r_i64(&r);
	has_items = opt_r_u32(&r);
	has_names = opt_r_u32(&r);
	if (r.failed || pp < 1 || pp > MODEL_MAX_LAYERS || n < 1 || n > MODEL_MAX_LAYERS || K < 1 ||
	    K > STRATEGY_MAX_COUNT || ne > MODEL_MAX_EDGES ||
	    (x != COST_GPIPE && x != COST_1F1B && x != COST_INTERLEAVED) || vs < 1 ||
	    vs > COST_MAX_VIRTUAL_STAGES || pp * vs > MODEL_MAX_LAYERS ||
	    has_items > 1 || has_names > 1 || sd < 0 || sd > MODEL_MAX_DEVICES || spp < 0 ||
	    spp > MODEL_MAX_DEVICES) {
		rc = err_set(err, UNIAP_E_INVALID, "candidate buffer: header out of range");
		goto out;
	}
	c->schedule = (enum cost_schedule)x;
	c->pp = (int)pp;
	c->virtual_stages = (int)vs;
	c->strategies.stage_devices = (int)sd;
	c->strategies.pp = (int)spp;
	if ((uint64_t)(pp * vs) > opt_r_left(&r) / 8) {
		rc = err_set(err, UNIAP_E_INVALID, "candidate buffer: truncated");
		goto out;
	}
	c->inflight = calloc((size_t)(pp * vs), sizeof(*c->inflight));
	if (!c->inflight) {
		nomem = 1;
		goto out;
	}
	for (i = 0; i < (size_t)(pp * vs); i++)
		c->inflight[i] = (long)opt_r_i64(&r);
	c->strategies.count = (size_t)K;
	if (has_items) {
		/* each strategy takes at least 60 bytes */
		if (K > opt_r_left(&r) / 60) {
			rc = err_set(err, UNIAP_E_INVALID, "candidate buffer: truncated");
			goto out;
		}
		c->strategies.items = calloc((size_t)K, sizeof(*c->strategies.items));
		if (!c->strategies.items) {
			nomem = 1;
			goto out;
		}
		for (i = 0; i < K && !r.failed; i++) {
			x = opt_r_strategy(&r, &c->strategies.items[i]);
			if (x == -2) {
				nomem = 1;
				goto out;
			}
			if (x != 0)
				r.failed = 1;
		}
	} else {
		/* the optimizer needs only the count: zeroed items keep the layout of cost_build() */
		c->strategies.items = calloc((size_t)K, sizeof(*c->strategies.items));
		if (!c->strategies.items) {
			nomem = 1;
			goto out;
		}
	}
	c->n_layers = (size_t)n;
	if (has_names && !r.failed) {
		if (n > opt_r_left(&r) / 4) {
			r.failed = 1;
		} else {
			c->layer_names = calloc((size_t)n, sizeof(char *));
			if (!c->layer_names) {
				nomem = 1;
				goto out;
			}
			for (i = 0; i < n && !r.failed; i++)
				if (opt_r_str(&r, &c->layer_names[i], OPT_NAME_PACK_MAX) == -2) {
					nomem = 1;
					goto out;
				}
		}
	}
	if (r.failed || n * K > opt_r_left(&r) / 24) {
		rc = err_set(err, UNIAP_E_INVALID, "candidate buffer: truncated or malformed");
		goto out;
	}
	if (opt_r_f64s(&r, &c->time_s, n * K) == -2 ||
	    opt_r_f64s(&r, &c->memory_fixed_bytes, n * K) == -2 ||
	    opt_r_f64s(&r, &c->memory_per_microbatch_bytes, n * K) == -2) {
		nomem = 1;
		goto out;
	}
	if (r.failed || (ne > 0 && ne > opt_r_left(&r) / (16 + 16 * K * K))) {
		rc = err_set(err, UNIAP_E_INVALID, "candidate buffer: truncated or malformed");
		goto out;
	}
	c->n_edges = (size_t)ne;
	if (ne > 0) {
		c->edges = calloc((size_t)ne, sizeof(*c->edges));
		if (!c->edges) {
			nomem = 1;
			goto out;
		}
	}
	for (e = 0; e < ne && !r.failed; e++) {
		c->edges[e].from = (size_t)opt_r_u64(&r);
		c->edges[e].to = (size_t)opt_r_u64(&r);
		if (opt_r_f64s(&r, &c->edges[e].same_stage_s, K * K) == -2 ||
		    opt_r_f64s(&r, &c->edges[e].cross_stage_s, K * K) == -2) {
			nomem = 1;
			goto out;
		}
	}
	if (r.failed || opt_r_left(&r) != 0) {
		rc = err_set(err, UNIAP_E_INVALID, "candidate buffer: truncated or trailing bytes");
		goto out;
	}
	rc = opt_candidate_check(c, err);
	if (rc != UNIAP_OK)
		err_prefix(err, "candidate buffer");
out:
	if (nomem)
		rc = err_set(err, UNIAP_E_NOMEM, "candidate buffer: out of memory");
	if (rc != UNIAP_OK)
		cost_candidate_release(c);
	return rc;
}

static const char *const opt_methods[] = {
	OPT_METHOD_NONE, OPT_METHOD_DP_CHAIN, OPT_METHOD_DP_STAGES, OPT_METHOD_MILP,
	OPT_METHOD_MILP_AFTER_CAP, OPT_METHOD_LOWER_BOUND, OPT_METHOD_DP_DAG, OPT_METHOD_DP_SWEEP,
};
#define OPT_N_METHODS (sizeof(opt_methods) / sizeof(opt_methods[0]))

uniap_code opt_result_pack(const struct opt_result *res, unsigned char **buf, size_t *len,
                           struct uniap_err *err)
{
	struct opt_wbuf w = {0};
	uint32_t m = 0, i;
	size_t u;
	int has_plan = res->stage && res->strategy;

	*buf = NULL;
	*len = 0;
	for (i = 0; i < OPT_N_METHODS; i++)
		if (res->method && strcmp(res->method, opt_methods[i]) == 0)
			m = i;
	if (res->n_layers > MODEL_MAX_LAYERS)
		return err_set(err, UNIAP_E_INVALID, "result.n_layers: must be <= %d", MODEL_MAX_LAYERS);
	opt_w_bytes(&w, "UAPR", 4);
	opt_w_u32(&w, OPT_PACK_VERSION);
	opt_w_u32(&w, (uint32_t)res->status);
	opt_w_f64(&w, res->tpi_s);
	opt_w_f64(&w, res->bound_s);
	opt_w_f64(&w, res->gap);
	opt_w_f64(&w, res->solve_s);
	opt_w_i64(&w, res->nodes);
	opt_w_u32(&w, m);
	opt_w_str(&w, res->note);
	opt_w_u64(&w, res->n_layers);
	opt_w_u32(&w, has_plan ? 1 : 0);
	if (has_plan)
		for (u = 0; u < res->n_layers; u++) {
			opt_w_u32(&w, (uint32_t)res->stage[u]);
			opt_w_u64(&w, res->strategy[u]);
		}
	return opt_w_finish(&w, buf, len, err);
}

uniap_code opt_result_unpack(const unsigned char *buf, size_t len, struct opt_result *out,
                             struct uniap_err *err)
{
	struct opt_rbuf r;
	uint32_t status, m, has_plan;
	uint64_t n;
	char *note = NULL;
	size_t u;
	uniap_code rc = UNIAP_OK;

	opt_result_init(out);
	if (opt_r_open(&r, buf, len, "UAPR") != 0)
		return err_set(err, UNIAP_E_INVALID, "result buffer: bad magic, version or checksum");
	status = opt_r_u32(&r);
	out->tpi_s = opt_r_f64(&r);
	out->bound_s = opt_r_f64(&r);
	out->gap = opt_r_f64(&r);
	out->solve_s = opt_r_f64(&r);
	out->nodes = (long)opt_r_i64(&r);
	m = opt_r_u32(&r);
	if (opt_r_str(&r, &note, OPT_NOTE_MAX - 1) == -2) {
		rc = err_set(err, UNIAP_E_NOMEM, "result buffer: out of memory");
		goto out;
	}
	n = opt_r_u64(&r);
	has_plan = opt_r_u32(&r);
	if (r.failed || status >= OPT_STATUS_COUNT || m >= OPT_N_METHODS || n > MODEL_MAX_LAYERS ||
	    has_plan > 1 || isnan(out->tpi_s) || isnan(out->bound_s) || isnan(out->gap) ||
	    isnan(out->solve_s)) {
		rc = err_set(err, UNIAP_E_INVALID, "result buffer: header out of range");
		goto out;
	}
	out->status = (enum opt_status)status;
	out->method = opt_methods[m];
	if (note)
		opt_note_copy(out->note, note);
	out->n_layers = (size_t)n;
	if (has_plan) {
		if (n == 0 || n > opt_r_left(&r) / 12) {
			rc = err_set(err, UNIAP_E_INVALID, "result buffer: truncated");
			goto out;
		}
		out->stage = calloc((size_t)n, sizeof(*out->stage));
		out->strategy = calloc((size_t)n, sizeof(*out->strategy));
		if (!out->stage || !out->strategy) {
			rc = err_set(err, UNIAP_E_NOMEM, "result buffer: out of memory");
			goto out;
		}
		for (u = 0; u < n; u++) {
			uint32_t s = opt_r_u32(&r);
			uint64_t k = opt_r_u64(&r);

			if (s > MODEL_MAX_LAYERS || k >= STRATEGY_MAX_COUNT) {
				rc = err_set(err, UNIAP_E_INVALID, "result buffer: layer %zu out of range", u);
				goto out;
			}
			out->stage[u] = (int)s;
			out->strategy[u] = (size_t)k;
		}
	}
	if (r.failed || opt_r_left(&r) != 0)
		rc = err_set(err, UNIAP_E_INVALID, "result buffer: truncated or trailing bytes");
out:
	free(note);
	if (rc != UNIAP_OK)
		opt_result_release(out);
	return rc;
}
