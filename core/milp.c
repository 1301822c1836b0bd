/*
 * milp.c - builds the exact MILP of a candidate and solves it with CBC.  The
 * only file of the project that includes CBC's header.
 *
 * Variables (docs/optimizer.md gives the proofs):
 *   x[u][i][k] in {0,1}   layer u on stage i with strategy k; created only
 *                         where i is a possible stage of u (reachability
 *                         counts) and u alone fits stage i's memory
 *   y[e][i][j][k][l] >= 0 edge e = u->v with u on (i, k), v on (j, l), i <= j:
 *                         the joint of the two endpoints' assignments,
 *                         tied to them by transportation rows
 *                           sum_{j,l} y = x[u][i][k],  sum_{i,k} y = x[v][j][l]
 *                         so for binary x it is exactly their product, and a
 *                         backward edge (j < i) has no column: stage order
 *                         holds by construction; k and l are the classes of
 *                         the edge's ends (strategies with equal resharding
 *                         rows, columns), each sum over a class's x
 *   T >= 0                the largest cycle (only when c > 1 and pp > 1)
 * Rows: one assignment per layer, a non-empty stage, memory per stage,
 * T >= o_(i-1) + p_i + o_i (interleaved: T >= P_d per device and T >= O_d
 * per link, transfers overlapped), the transportation rows.  Objective
 *   sum p + sum o + (c-1) T, with p and o substituted (y with i < j pays
 *   cross_stage_s once per communication stage i..j-1 it spans); with pp = 1
 *   it is c * p_0 (appendix C's QIP, linearised the same way).
 * The makespan objective (opt_makespan_objective: 1F1B as run) has no T:
 * columns P_i and O_j equal to the stage and boundary sums above, one time
 * column per node of the schedule's graph (sched_graph_build) with a row
 * t_to >= t_from + share * (P_i or O_j) per arc, and the objective M >= each
 * rank's last node.  For fixed x the least M is the graph's longest path,
 * which is the iteration's length, so the MILP's optimum is the least makespan.
 * Costs are divided by their largest value and memory rows by the limit so
 * that CBC sees numbers near 1.  Plans are read from x and re-evaluated by
 * the caller with opt_tpi; CBC's objective is used only for the bound.
 *
 * Never: more than one solve at a time in a process (CBC is not thread-safe).
 */
#include "milp.h"
#include "schedsim.h"

#include <coin/Cbc_C_Interface.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MILP_INF DBL_MAX
#define MILP_X_EXISTS (-2) /* xcol placeholder before the column is created */
#define MILP_PREPROCESS_MIN_S 5.0 /* shorter limits solve without CBC's preprocessing */
#define MILP_SMALL_COLS 2000

/* A growing column-major matrix. */
struct milp_mat {
	int *start;      /* [ncols + 1] */
	int *index;
	double *value;
	double *obj, *lb, *ub;
	unsigned char *is_int;
	size_t ncols, cap_cols, nnz, cap_nnz;
	int failed;      /* 1: out of memory, 2: over a cap */
};

static int milp_mat_grow_cols(struct milp_mat *m)
{
	size_t nc;
	void *p;

	if (m->ncols + 1 < m->cap_cols)
		return 0;
	if (m->ncols + 1 > MILP_MAX_COLS) {
		m->failed = 2;
		return -1;
	}
	nc = m->cap_cols ? m->cap_cols * 2 : 1024;
#define MILP_GROW(field)                                               \
	do {                                                               \
		p = realloc(m->field, nc * sizeof(*m->field));                 \
		if (!p) {                                                      \
			m->failed = 1;                                             \
			return -1;                                                 \
		}                                                              \
		m->field = p;                                                  \
	} while (0)
	MILP_GROW(start);
	MILP_GROW(obj);
	MILP_GROW(lb);
	MILP_GROW(ub);
	MILP_GROW(is_int);
#undef MILP_GROW
	m->cap_cols = nc;
	return 0;
}

/* Starts a new column; returns its index or -1. */
static int milp_col(struct milp_mat *m, double obj, double lb, double ub, int is_int)
{
	if (m->failed || milp_mat_grow_cols(m) != 0)
		return -1;
	if (m->ncols == 0)
		m->start[0] = 0;
	m->obj[m->ncols] = obj;
	m->lb[m->ncols] = lb;
	m->ub[m->ncols] = ub;
	m->is_int[m->ncols] = (unsigned char)is_int;
	m->ncols++;
	m->start[m->ncols] = (int)m->nnz;
	return (int)m->ncols - 1;
}

/* Adds an entry to the last column. */
static void milp_nz(struct milp_mat *m, int row, double v)
{
	if (m->failed || row < 0)
		return;
	if (m->nnz == m->cap_nnz) {
		size_t nc = m->cap_nnz ? m->cap_nnz * 2 : 4096;
		int *pi;
		double *pv;

		if (m->nnz + 1 > MILP_MAX_NONZEROS) {
			m->failed = 2;
			return;
		}
		pi = realloc(m->index, nc * sizeof(*pi));
		if (!pi) {
			m->failed = 1;
			return;
		}
		m->index = pi;
		pv = realloc(m->value, nc * sizeof(*pv));
		if (!pv) {
			m->failed = 1;
			return;
		}
		m->value = pv;
		m->cap_nnz = nc;
	}
	m->index[m->nnz] = row;
	m->value[m->nnz] = v;
	m->nnz++;
	m->start[m->ncols] = (int)m->nnz;
}

static void milp_mat_release(struct milp_mat *m)
{
	free(m->start);
	free(m->index);
	free(m->value);
	free(m->obj);
	free(m->lb);
	free(m->ub);
	free(m->is_int);
	memset(m, 0, sizeof(*m));
}

/* The model with its index maps. */
struct milp_model {
	struct milp_mat mat;
	double *row_lb, *row_ub;
	size_t nrows;
	int *xcol;       /* [(u * pp + i) * K + k]: column of x, or -1 */
	int *eu_row;     /* [(e * pp + i) * K + k]: transport row of e's tail, or -1 */
	int *ev_row;     /* [(e * pp + j) * K + l]: transport row of e's head, or -1 */
	int t_col;       /* -1 when there is no T */
	double time_scale;
	double cost_lo, cost_hi; /* least and largest nonzero scaled cost kept; 0 when none */
};

/*
 * CBC works to absolute tolerances of about 1e-7 on the scaled model: a model
 * whose kept costs span more than this ratio can have its optimum and its
 * bound decided by the tolerances (measured: bounds 6e-5 above the optimum;
 * docs/optimizer.md, "Certification").  Such a model gets no cutoff (no
 * "pruned" claim), its plan is reported "feasible", and its bound is the one
 * every plan meets without any solver (milp_floor).
 */
#define MILP_CERT_RANGE 1e6

static void milp_model_release(struct milp_model *md)
{
	milp_mat_release(&md->mat);
	free(md->row_lb);
	free(md->row_ub);
	free(md->xcol);
	free(md->eu_row);
	free(md->ev_row);
	memset(md, 0, sizeof(*md));
}

/*
 * Stage range of every layer: layers on stages before u's are not reachable
 * from u and each of those stages holds one, so stage(u) <= n-1-desc(u);
 * likewise stage(u) >= pp - n + anc(u).  Skipped (full range) on big graphs.
 * n_anc and n_desc ([n], zeroed by the caller) get each layer's counts (left 0
 * when skipped).
 */
static int milp_stage_ranges(const struct cost_candidate *c, int *lo, int *hi, size_t *n_anc, size_t *n_desc)
{
	size_t n = c->n_layers, u, w;
	size_t *cnt = NULL, *adj = NULL, *queue = NULL, *anc = NULL;
	unsigned char *seen = NULL;
	int rc = -1;

	for (u = 0; u < n; u++) {
		lo[u] = 0;
		hi[u] = cost_stages(c) - 1;
	}
	if ((double)n * (double)(n + c->n_edges) > 5e7)
		return 0;
	queue = calloc(n, sizeof(size_t));
	anc = calloc(n, sizeof(size_t));
	seen = calloc(n, 1);
	if (!queue || !anc || !seen || opt_successors(c, &cnt, &adj) != 0)
		goto out;
	for (u = 0; u < n; u++) {
		size_t head = 0, tail = 0, desc = 0, j;

		memset(seen, 0, n);
		seen[u] = 1;
		queue[tail++] = u;
		while (head < tail) {
			size_t a = queue[head++];

			for (j = cnt[a]; j < cnt[a + 1]; j++) {
				w = adj[j];
				if (!seen[w]) {
					seen[w] = 1;
					queue[tail++] = w;
					desc++;
					anc[w]++;
				}
			}
		}
		if ((double)n - 1.0 - (double)desc < (double)hi[u])
			hi[u] = (int)(n - 1 - desc);
		n_desc[u] = desc;
	}
	for (u = 0; u < n; u++) {
		long l = (long)cost_stages(c) - (long)n + (long)anc[u];

		if (l > lo[u])
			lo[u] = (int)l;
		n_anc[u] = anc[u];
	}
	rc = 0;
out:
	free(cnt);
	free(adj);
	free(queue);
	free(anc);
	free(seen);
	return rc;
}

static double milp_mem(const struct cost_candidate *c, size_t u, int i, size_t k)
{
	size_t K = cost_k(c);

	return c->memory_fixed_bytes[u * K + k] + (double)c->inflight[i] * c->memory_per_microbatch_bytes[u * K + k];
}

/*
 * The nonzeros of a y column that crosses boundaries i .. j-1 in the T rows,
 * one entry per row as CBC takes them, each the coefficient times the
 * boundaries that row counts.  Without interleaving (links == 0) a boundary
 * holds its sender (stage b) and its receiver (stage b + 1) for its whole
 * transfer, so it counts in both stages' cycle rows (cost.h); interleaved,
 * transfers overlap compute and boundary b counts in the row of its link
 * b mod dev (row_to0 + b mod dev).
 */
static void milp_y_rows(struct milp_mat *m, int row_tp0, int row_to0, int links, int dev, int i, int j,
                        double coef)
{
	int d, b, times;

	for (d = 0; d < dev; d++) {
		times = 0;
		for (b = i; b < j; b++)
			times += links ? b % dev == d : (b % dev == d) + ((b + 1) % dev == d);
		if (times)
			milp_nz(m, (links ? row_to0 : row_tp0) + d, coef * times);
	}
}

/*
 * Classes of an edge's ends: tail strategies k whose rows of R and R'
 * (k * K + l over every l) are equal bit for bit, and head strategies l whose
 * columns are.  cls[k] is the least strategy of k's class.  The edge's costs
 * depend on the classes alone, so its y and transport rows are made per pair
 * of classes (exact: for binary x a class's marginal is a unit vector too, and
 * the LP bound is the same, a class-level y splitting in proportion to the x
 * of its members); a real dictionary's plain, recomputing and ZeRO variants of
 * one data layout share their resharding, which makes K^2 columns per stage
 * pair C^2 (docs/optimizer.md, "The MILP").  head: 0 the tail's rows, 1 the
 * head's columns.
 */
static void milp_edge_classes(const struct cost_edge *ed, size_t K, int head, size_t *cls, uint64_t *hash)
{
	size_t k, r, q, step = head ? K : 1, stride = head ? 1 : K;
	uint64_t h;

	for (k = 0; k < K; k++) {
		const double *m[2] = { ed->same_stage_s, ed->cross_stage_s };

		/* FNV-1a over the row (or column), both matrices */
		h = 1469598103934665603ull;
		for (q = 0; q < 2; q++)
			for (r = 0; r < K; r++) {
				uint64_t bits;
				int b;

				memcpy(&bits, &m[q][k * stride + r * step], sizeof(bits));
				for (b = 0; b < 8; b++) {
					h ^= (bits >> (8 * b)) & 0xff;
					h *= 1099511628211ull;
				}
			}
		hash[k] = h;
		cls[k] = k;
		for (r = 0; r < k; r++) {
			size_t t;

			if (cls[r] != r || hash[r] != h)
				continue;
			for (t = 0; t < K; t++)
				if (memcmp(&ed->same_stage_s[k * stride + t * step], &ed->same_stage_s[r * stride + t * step],
				           sizeof(double)) != 0 ||
				    memcmp(&ed->cross_stage_s[k * stride + t * step], &ed->cross_stage_s[r * stride + t * step],
				           sizeof(double)) != 0)
					break;
			if (t == K) {
				cls[k] = r;
				break;
			}
		}
	}
}

/* mem_rhs: the memory rows' bound as a fraction of the limit (1, or a hair less on a retry). */
/* Tracks the least and largest nonzero scaled cost kept (md->cost_lo, md->cost_hi). */
static void milp_range(struct milp_model *md, double a)
{
	if (!(a > 0))
		return;
	if (md->cost_lo == 0 || a < md->cost_lo)
		md->cost_lo = a;
	if (a > md->cost_hi)
		md->cost_hi = a;
}

/* The span of the kept costs, largest over least nonzero (1 when none). */
static double milp_span(const struct milp_model *md)
{
	return md->cost_lo > 0 ? md->cost_hi / md->cost_lo : 1;
}

int milp_over_cap(const struct cost_candidate *c)
{
	double n = (double)c->n_layers, S = (double)cost_stages(c), K = (double)cost_k(c);

	return n * S * K > (double)MILP_MAX_COLS || ((double)c->n_edges + n) * S * K * 2 > (double)MILP_MAX_COLS;
}

/*
 * ub: the TPI of a known plan (INFINITY: none).  A column whose own share of
 * any plan's TPI exceeds it is not created: no plan using it beats the known
 * one, and the known plan keeps all its columns (each share <= its TPI).  This
 * removes the huge coefficients (a petabyte over a slow link) that would
 * otherwise set CBC's tolerances, and costs are scaled by min(largest, ub).
 */
static uniap_code milp_build(const struct cost_candidate *c, double mem_rhs, double ub,
                             struct milp_model *md, struct uniap_err *err)
{
	size_t n = c->n_layers, K = cost_k(c), E = c->n_edges, u, e, k, l, r;
	/* pp here counts stages (S = pp v under interleaving); dev counts devices, whose
	 * memory rows and load rows sum the stages i with i mod dev = d (cost.h) */
	int pp = cost_stages(c), dev = c->pp, v = cost_virtual(c), i, j, mi;
	/* T rows: one cycle row per stage (T >= o_(i-1) + p_i + o_i), or interleaved one load row
	 * per device and one per link (transfers overlapped: Megatron-LM's overlap_p2p_comm) */
	int n_links = v > 1 ? dev : 0, n_trows = dev + n_links;
	double wsum = 1.0 / v, wmax = (double)c->microbatches - 1.0 / v;
	int *lo = NULL, *hi = NULL, *mem_row = NULL, *mem_n = NULL, *mem_off = NULL;
	/* memory rows: device d has mem_n[d] of them from mem_row[d] on, one per
	 * peak row of d (cost.h; mem_h[mem_off[d] ..], NULL for the stages'
	 * inflight), or one for its stages' inflight; none when even its largest
	 * layers fit */
	const long **mem_h = NULL;
	size_t n_mem = 0;
	int row_assign0, row_nonempty0 = -1, row_tp0 = -1, row_to0 = -1;
	size_t *out_cnt = NULL, *out_adj = NULL, *in_cnt = NULL, *in_adj = NULL;
	/* [e * K + k]: the class of k at e's tail and at its head (milp_edge_classes) */
	size_t *tcls = NULL, *hcls = NULL;
	/* [u]: u's ancestors and descendants (milp_stage_ranges; 0 when not counted) */
	size_t *n_anc = NULL, *n_desc = NULL;
	uint64_t *hash = NULL;
	double *least = NULL; /* [u]: u's least scaled time over its columns */
	double ts = 0, cmul, limit = c->memory_limit_bytes, t_lb = 0, keep, tshare;
	/* the makespan objective (opt_makespan_objective): no T; stage and boundary columns P_i
	 * and O_j defined by rows, one time column per node of the schedule's graph, a row per
	 * arc (sched_graph_build), and the objective the latest rank's end */
	int ms = opt_makespan_objective(c), row_p0 = -1, row_o0 = -1, row_arc0 = -1, row_end0 = -1;
	struct sched_graph g = { 0 };
	size_t *from_cnt = NULL, *from_adj = NULL;
	int use_t = !ms && pp > 1 && wmax > 0; /* interleaved: c - 1/v > 0 even at c = 1 */
	uniap_code rc = UNIAP_OK;
	struct milp_mat *m = &md->mat;

	memset(md, 0, sizeof(*md));
	md->t_col = -1;
	if (ms) {
		size_t a;

		if ((rc = sched_graph_build(dev, pp, c->microbatches, v > 1 ? COST_INTERLEAVED : COST_1F1B, &g, err)) !=
		    UNIAP_OK)
			return rc;
		from_cnt = calloc((size_t)g.n_nodes + 2, sizeof(size_t));
		from_adj = malloc((g.n_arcs ? g.n_arcs : 1) * sizeof(size_t));
		if (!from_cnt || !from_adj) {
			free(from_cnt);
			free(from_adj);
			sched_graph_release(&g);
			return err_set(err, UNIAP_E_NOMEM, "milp: out of memory");
		}
		/* arcs by tail (the start, -1, is slot 0) */
		for (a = 0; a < g.n_arcs; a++)
			from_cnt[(size_t)(g.arcs[a].from + 1) + 1]++;
		for (a = 0; a + 1 < (size_t)g.n_nodes + 2; a++)
			from_cnt[a + 1] += from_cnt[a];
		{
			size_t *fill = calloc((size_t)g.n_nodes + 1, sizeof(size_t));

			if (!fill) {
				free(from_cnt);
				free(from_adj);
				sched_graph_release(&g);
				return err_set(err, UNIAP_E_NOMEM, "milp: out of memory");
			}
			for (a = 0; a < g.n_arcs; a++) {
				size_t f = (size_t)(g.arcs[a].from + 1);

				from_adj[from_cnt[f] + fill[f]++] = a;
			}
			free(fill);
		}
	}
	if (milp_over_cap(c))
		return err_set(err, UNIAP_E_LIMIT, "milp: %zu layers, %zu edges, pp %d, K %zu is over the model cap",
		               n, E, pp, K);
	lo = calloc(n, sizeof(int));
	hi = calloc(n, sizeof(int));
	mem_row = calloc((size_t)dev, sizeof(int));
	mem_n = calloc((size_t)dev, sizeof(int));
	mem_off = calloc((size_t)dev, sizeof(int));
	mem_h = calloc(c->n_peaks + (size_t)dev, sizeof(*mem_h));
	md->xcol = malloc(n * (size_t)pp * K * sizeof(int));
	md->eu_row = malloc((E ? E : 1) * (size_t)pp * K * sizeof(int));
	md->ev_row = malloc((E ? E : 1) * (size_t)pp * K * sizeof(int));
	out_cnt = calloc(n + 1, sizeof(size_t));
	in_cnt = calloc(n + 1, sizeof(size_t));
	out_adj = calloc(E + 1, sizeof(size_t));
	in_adj = calloc(E + 1, sizeof(size_t));
	tcls = malloc((E ? E : 1) * K * sizeof(size_t));
	hcls = malloc((E ? E : 1) * K * sizeof(size_t));
	hash = malloc(K * sizeof(uint64_t));
	least = malloc((n ? n : 1) * sizeof(double));
	n_anc = calloc(n, sizeof(size_t));
	n_desc = calloc(n, sizeof(size_t));
	if (!least || !n_anc || !n_desc || !tcls || !hcls || !hash || !lo || !hi || !mem_row || !mem_n || !mem_off || !mem_h || !md->xcol || !md->eu_row || !md->ev_row || !out_cnt || !in_cnt ||
	    !out_adj || !in_adj || milp_stage_ranges(c, lo, hi, n_anc, n_desc) != 0)
		goto nomem;
	/* edges by tail and by head */
	for (e = 0; e < E; e++) {
		out_cnt[c->edges[e].from + 1]++;
		in_cnt[c->edges[e].to + 1]++;
	}
	for (u = 0; u < n; u++) {
		out_cnt[u + 1] += out_cnt[u];
		in_cnt[u + 1] += in_cnt[u];
	}
	{
		size_t *fo = calloc(n, sizeof(size_t)), *fi = calloc(n, sizeof(size_t));

		if (!fo || !fi) {
			free(fo);
			free(fi);
			goto nomem;
		}
		for (e = 0; e < E; e++) {
			size_t a = c->edges[e].from, b = c->edges[e].to;

			out_adj[out_cnt[a] + fo[a]++] = e;
			in_adj[in_cnt[b] + fi[b]++] = e;
		}
		free(fo);
		free(fi);
	}
	for (e = 0; e < E; e++) {
		milp_edge_classes(&c->edges[e], K, 0, tcls + e * K, hash);
		milp_edge_classes(&c->edges[e], K, 1, hcls + e * K, hash);
	}
	/* time scale: the largest cost */
	for (r = 0; r < n * K; r++)
		ts = fmax(ts, c->time_s[r]);
	for (e = 0; e < E; e++)
		for (r = 0; r < K * K; r++)
			ts = fmax(ts, fmax(c->edges[e].same_stage_s[r], c->edges[e].cross_stage_s[r]));
	if (isfinite(ub) && ub > 0)
		ts = fmin(ts, ub);
	if (!(ts > 0))
		ts = 1;
	md->time_scale = ts;
	cmul = pp == 1 ? (double)c->microbatches : wsum;
	/* a term t of p_i or o_j adds at least (cmul + wmax) t to the TPI (the bottleneck is at
	 * least t), or cmul t alone with pp = 1 (cmul is then c) */
	tshare = pp == 1 ? cmul : cmul + wmax;
	keep = isfinite(ub) && ub > 0 ? ub * (1 + 1e-9) / tshare : INFINITY;
	/* which x exist */
	for (r = 0; r < n * (size_t)pp * K; r++)
		md->xcol[r] = -1;
	for (u = 0; u < n; u++)
		for (i = lo[u]; i <= hi[u]; i++)
			for (k = 0; k < K; k++)
				if (milp_mem(c, u, i, k) <= limit && c->time_s[u * K + k] <= keep)
					md->xcol[(u * (size_t)pp + (size_t)i) * K + k] = MILP_X_EXISTS;
	/* rows */
	row_assign0 = 0;
	md->nrows = n;
	if (pp > 1) {
		row_nonempty0 = (int)md->nrows;
		md->nrows += (size_t)pp;
	}
	for (mi = 0; mi < dev; mi++) {
		double worst = 0;

		mem_row[mi] = -1;
		for (u = 0; u < n; u++) {
			double w = 0;

			for (i = mi; i < pp; i += dev)
				for (k = 0; k < K; k++)
					if (md->xcol[(u * (size_t)pp + (size_t)i) * K + k] == MILP_X_EXISTS)
						w = fmax(w, milp_mem(c, u, i, k));
			worst += w;
		}
		if (limit > 0 && !(worst <= limit)) {
			size_t q;

			mem_row[mi] = (int)md->nrows;
			mem_off[mi] = (int)n_mem;
			for (q = 0; q < c->n_peaks; q++)
				if (c->peaks[q * (size_t)(v + 1)] == mi) {
					mem_h[n_mem + (size_t)mem_n[mi]] = c->peaks + q * (size_t)(v + 1) + 1;
					mem_n[mi]++;
				}
			if (mem_n[mi] == 0)
				mem_h[n_mem + (size_t)mem_n[mi]++] = NULL;
			n_mem += (size_t)mem_n[mi];
			md->nrows += (size_t)mem_n[mi];
		}
	}
	if (use_t) {
		row_tp0 = (int)md->nrows;
		md->nrows += (size_t)dev;
		row_to0 = (int)md->nrows;
		md->nrows += (size_t)n_links;
	}
	if (ms) {
		row_p0 = (int)md->nrows;
		md->nrows += (size_t)pp;
		row_o0 = (int)md->nrows;
		md->nrows += (size_t)pp - 1;
		row_arc0 = (int)md->nrows;
		md->nrows += g.n_arcs;
		row_end0 = (int)md->nrows; /* one per rank: g.stages (the devices, interleaved) */
		md->nrows += (size_t)g.stages;
	}
	/* transport rows: one per (edge, stage, class) of each end with an x; every member
	 * of a class points at its class's row */
	for (e = 0; e < E; e++) {
		size_t a = c->edges[e].from, b = c->edges[e].to;

		for (r = 0; r < (size_t)pp * K; r++)
			md->eu_row[e * (size_t)pp * K + r] = md->ev_row[e * (size_t)pp * K + r] = -1;
		for (i = 0; i < pp; i++) {
			size_t base = (e * (size_t)pp + (size_t)i) * K;

			for (k = 0; k < K; k++) {
				size_t tc = tcls[e * K + k], hc = hcls[e * K + k];

				if (md->xcol[(a * (size_t)pp + (size_t)i) * K + k] == MILP_X_EXISTS) {
					if (md->eu_row[base + tc] < 0)
						md->eu_row[base + tc] = (int)md->nrows++;
					md->eu_row[base + k] = md->eu_row[base + tc];
				}
				if (md->xcol[(b * (size_t)pp + (size_t)i) * K + k] == MILP_X_EXISTS) {
					if (md->ev_row[base + hc] < 0)
						md->ev_row[base + hc] = (int)md->nrows++;
					md->ev_row[base + k] = md->ev_row[base + hc];
				}
			}
		}
	}
	if (md->nrows > MILP_MAX_COLS) {
		rc = err_set(err, UNIAP_E_LIMIT, "milp: %zu rows is over the cap", md->nrows);
		goto out;
	}
	md->row_lb = malloc(md->nrows * sizeof(double));
	md->row_ub = malloc(md->nrows * sizeof(double));
	if (!md->row_lb || !md->row_ub)
		goto nomem;
	for (r = 0; r < md->nrows; r++) {
		md->row_lb[r] = 0;
		md->row_ub[r] = 0; /* assignment and transport rows are equalities */
	}
	for (u = 0; u < n; u++)
		md->row_lb[row_assign0 + (int)u] = md->row_ub[row_assign0 + (int)u] = 1;
	for (i = 0; pp > 1 && i < pp; i++) {
		md->row_lb[row_nonempty0 + i] = 1;
		md->row_ub[row_nonempty0 + i] = MILP_INF;
	}
	for (i = 0; i < dev; i++)
		for (j = 0; mem_row[i] >= 0 && j < mem_n[i]; j++) {
			md->row_lb[mem_row[i] + j] = -MILP_INF;
			md->row_ub[mem_row[i] + j] = mem_rhs;
		}
	if (use_t)
		for (r = 0; r < (size_t)n_trows; r++) {
			md->row_lb[(size_t)row_tp0 + r] = 0;
			md->row_ub[(size_t)row_tp0 + r] = MILP_INF;
		}
	/* makespan: P and O rows are equalities (0 = the default); arc and end rows >= 0 */
	for (r = 0; ms && r < g.n_arcs + (size_t)g.stages; r++) {
		md->row_lb[(size_t)row_arc0 + r] = 0;
		md->row_ub[(size_t)row_arc0 + r] = MILP_INF;
	}
	/* x columns */
	for (u = 0; u < n; u++) {
		double amin = INFINITY;

		for (i = 0; i < pp; i++)
			for (k = 0; k < K; k++) {
				size_t xi = (u * (size_t)pp + (size_t)i) * K + k;
				double a = c->time_s[u * K + k] / ts;
				int col;

				if (md->xcol[xi] != MILP_X_EXISTS)
					continue;
				amin = fmin(amin, a);
				milp_range(md, a);
				col = milp_col(m, ms ? 0 : cmul * a, 0, 1, 1);
				md->xcol[xi] = col;
				milp_nz(m, row_assign0 + (int)u, 1);
				if (pp > 1)
					milp_nz(m, row_nonempty0 + i, 1);
				if (mem_row[i % dev] >= 0) {
					int d = i % dev, q;
					const long **h = mem_h + mem_off[d];

					for (q = 0; q < mem_n[d]; q++)
						milp_nz(m, mem_row[d] + q,
						        (h[q] ? c->memory_fixed_bytes[u * K + k] +
						                (double)h[q][i / dev] * c->memory_per_microbatch_bytes[u * K + k]
						              : milp_mem(c, u, i, k)) / limit);
				}
				if (use_t && a != 0)
					milp_nz(m, row_tp0 + i % dev, -a);
				if (ms && a != 0)
					milp_nz(m, row_p0 + i, -a);
				for (r = out_cnt[u]; r < out_cnt[u + 1]; r++)
					milp_nz(m, md->eu_row[(out_adj[r] * (size_t)pp + (size_t)i) * K + k], -1);
				for (r = in_cnt[u]; r < in_cnt[u + 1]; r++)
					milp_nz(m, md->ev_row[(in_adj[r] * (size_t)pp + (size_t)i) * K + k], -1);
			}
		if (isfinite(amin))
			t_lb = fmax(t_lb, amin);
		least[u] = isfinite(amin) ? amin : 0;
	}
	if (use_t)
		t_lb = fmax(t_lb, opt_packing_bound(least, n, dev));
	/* interleaved, T >= every device's load >= the rank bound (whole layers in
	 * each device's memory: opt_rank_bound), which the relaxation's fractional
	 * layers miss; INFINITY: no plan fits (cost_build's checks come first) */
	if (use_t && cost_virtual(c) > 1) {
		double rb = opt_rank_bound(c, opt_is_chain(c)) / ts;

		if (isfinite(rb))
			t_lb = fmax(t_lb, rb);
	}
	/* y columns */
	for (e = 0; e < E; e++) {
		const struct cost_edge *ed = &c->edges[e];
		/* the stages strictly between u's and v's are non-empty and can hold only layers
		 * that are neither u, v, u's ancestors nor v's descendants (those two sets are
		 * disjoint in an acyclic graph): no plan spans more, so no y does.  A chain's
		 * edges span at most one boundary (docs/optimizer.md, "The MILP").  An edge on a
		 * cycle (whose counts overlap) has both ends on one stage in every plan: 0 */
		long span = 1 + (long)n - 2 - (long)n_anc[ed->from] - (long)n_desc[ed->to];

		if (span < 0)
			span = 0;

		for (i = 0; i < pp; i++)
			for (k = 0; k < K; k++) {
				int ru = md->eu_row[(e * (size_t)pp + (size_t)i) * K + k];

				/* one y per pair of classes: k and l run over the classes' least members */
				if (ru < 0 || tcls[e * K + k] != k)
					continue;
				for (j = i; j < pp && (long)(j - i) <= span; j++)
					for (l = 0; l < K; l++) {
						int rv = md->ev_row[(e * (size_t)pp + (size_t)j) * K + l];
						double cost;

						if (rv < 0 || hcls[e * K + l] != l)
							continue;
						if (i == j)
							cost = ed->same_stage_s[k * K + l];
						else
							cost = ed->cross_stage_s[k * K + l];
						/* crossing j - i stages adds (j - i) cmul t to the sum and t to each o;
						 * the makespan keeps every crossing (a rank's sends and receives of
						 * one call overlap, so a transfer adds less than c times itself) */
						if (i == j ? cost > keep
						           : !ms && cost * (cmul * (double)(j - i) + wmax) / tshare > keep)
							continue;
						cost /= ts;
						milp_range(md, cost);
						milp_col(m, ms ? 0 : cmul * cost * (i == j ? 1 : (double)(j - i)), 0, MILP_INF, 0);
						milp_nz(m, ru, 1);
						milp_nz(m, rv, 1);
						if (use_t && cost != 0) {
							if (i == j)
								milp_nz(m, row_tp0 + i % dev, -cost);
							else
								milp_y_rows(m, row_tp0, row_to0, n_links, dev, i, j, -cost);
						}
						if (ms && cost != 0) {
							int b;

							if (i == j)
								milp_nz(m, row_p0 + i, -cost);
							else
								for (b = i; b < j; b++)
									milp_nz(m, row_o0 + b, -cost);
						}
					}
			}
	}
	if (use_t) {
		md->t_col = milp_col(m, wmax, t_lb, MILP_INF, 0);
		for (r = 0; r < (size_t)n_trows; r++)
			milp_nz(m, row_tp0 + (int)r, 1);
	}
	if (ms) {
		double least_sum = 0;
		size_t a, ah;
		int q;

		/* P_i and O_j, each in its defining row and the arcs that take a share of it */
		for (i = 0; i < pp; i++) {
			milp_col(m, 0, 0, MILP_INF, 0);
			milp_nz(m, row_p0 + i, 1);
			for (a = 0; a < g.n_arcs; a++)
				if (g.arcs[a].term == 1 && g.arcs[a].index == i && g.arcs[a].share != 0)
					milp_nz(m, row_arc0 + (int)a, -g.arcs[a].share);
		}
		for (j = 0; j + 1 < pp; j++) {
			milp_col(m, 0, 0, MILP_INF, 0);
			milp_nz(m, row_o0 + j, 1);
			for (a = 0; a < g.n_arcs; a++)
				if (g.arcs[a].term == 2 && g.arcs[a].index == j && g.arcs[a].share != 0)
					milp_nz(m, row_arc0 + (int)a, -g.arcs[a].share);
		}
		/* a node's time: +1 in the arcs it heads (contiguous), -1 in those it tails, and in
		 * the end row of the rank it ends */
		for (q = 0, ah = 0; q < g.n_nodes; q++) {
			size_t f = (size_t)q + 1;

			milp_col(m, 0, 0, MILP_INF, 0);
			for (a = from_cnt[f]; a < from_cnt[f + 1]; a++)
				milp_nz(m, row_arc0 + (int)from_adj[a], -1);
			for (; ah < g.n_arcs && g.arcs[ah].to == q; ah++)
				milp_nz(m, row_arc0 + (int)ah, 1);
			for (i = 0; i < g.stages; i++)
				if (g.last[i] == q)
					milp_nz(m, row_end0 + i, -1);
		}
		/* the makespan: at least every rank's end; without interleaving at least K times
		 * the least sum (opt_makespan_factor: a weighted average of the stages' c p_i and
		 * what comes before them); interleaved, one micro-batch's path through every stage
		 * and c times the busiest device's compute (the rank bound: whole layers within
		 * each device's memory) */
		double mlb;

		for (u = 0; u < n; u++)
			least_sum += least[u];
		if (v == 1) {
			mlb = opt_makespan_factor(c->microbatches, pp) * least_sum;
		} else {
			double rb = opt_rank_bound(c, opt_is_chain(c)) / ts;

			mlb = fmax(least_sum, (double)c->microbatches * fmax(least_sum / dev, isfinite(rb) ? rb : 0));
		}
		md->t_col = milp_col(m, 1, mlb, MILP_INF, 0);
		for (i = 0; i < g.stages; i++)
			milp_nz(m, row_end0 + i, 1);
	}
	if (m->failed == 2) {
		rc = err_set(err, UNIAP_E_LIMIT, "milp: model over %zu columns or %zu nonzeros",
		             MILP_MAX_COLS, MILP_MAX_NONZEROS);
		goto out;
	}
	if (m->failed)
		goto nomem;
	goto out;
nomem:
	rc = err_set(err, UNIAP_E_NOMEM, "milp: out of memory");
out:
	free(lo);
	free(hi);
	free(mem_row);
	free(mem_n);
	free(mem_off);
	free(mem_h);
	free(out_cnt);
	free(in_cnt);
	free(out_adj);
	free(in_adj);
	free(tcls);
	free(hcls);
	free(n_anc);
	free(n_desc);
	free(least);
	free(hash);
	free(from_cnt);
	free(from_adj);
	sched_graph_release(&g);
	if (rc != UNIAP_OK)
		milp_model_release(md);
	return rc;
}

/* Decodes the plan from a CBC column vector; 0 when every layer has one x at 1. */
static int milp_decode(const struct cost_candidate *c, const struct milp_model *md, const double *sol,
                       int *stage, size_t *strategy)
{
	size_t n = c->n_layers, K = cost_k(c), u, k;
	int pp = cost_stages(c), i;

	for (u = 0; u < n; u++) {
		int found = 0;

		for (i = 0; i < pp; i++)
			for (k = 0; k < K; k++) {
				int col = md->xcol[(u * (size_t)pp + (size_t)i) * K + k];

				if (col >= 0 && sol[col] > 0.5) {
					stage[u] = i;
					strategy[u] = k;
					found++;
				}
			}
		if (found != 1)
			return -1;
	}
	return 0;
}

/* One CBC run.  *sol_out (owned by the caller) receives the decoded plan when CBC has one. */
struct milp_run {
	int has_plan;
	int proven_optimal;
	int proven_infeasible;
	int stopped_on_gap;
	int hit_limit;     /* time limit (or a CBC limit) reached */
	int rejected_plan; /* CBC had a solution that failed decoding or the audit */
	double bound;      /* unscaled */
	long nodes;
	int cbc_status, cbc_secondary;
};

static uniap_code milp_run_once(const struct cost_candidate *c, const struct milp_model *md,
                                const struct opt_options *o, double time_limit_s, double rel_gap,
                                const int *st_stage, const size_t *st_strategy, int *stage,
                                size_t *strategy, struct milp_run *run, struct uniap_err *err)
{
	Cbc_Model *model = NULL;
	const struct milp_mat *m = &md->mat;
	int *start_idx = NULL;
	double *start_val = NULL;
	const double *sol;
	char buf[64];
	size_t col, n_int = 0, u;
	double t0 = opt_clock_s();
	uniap_code rc = UNIAP_OK;

	memset(run, 0, sizeof(*run));
	model = Cbc_newModel();
	if (!model)
		return err_set(err, UNIAP_E_SOLVER, "milp: Cbc_newModel failed");
	Cbc_loadProblem(model, (int)m->ncols, (int)md->nrows, m->start, m->index, m->value, m->lb, m->ub,
	                m->obj, md->row_lb, md->row_ub);
	for (col = 0; col < m->ncols; col++)
		if (m->is_int[col]) {
			Cbc_setInteger(model, (int)col);
			n_int++;
		}
	Cbc_setLogLevel(model, 0);
	Cbc_setParameter(model, "timeMode", "elapsed");
	if (time_limit_s > 0 && isfinite(time_limit_s))
		Cbc_setMaximumSeconds(model, time_limit_s);
	/* measured: a time limit that expires inside CBC 2.10.8's preprocessing can crash it
	 * (NULL dereference in CglPreProcess::postProcess; reproduced with a 0.5 s limit on the
	 * T5 example under ThreadSanitizer's slow-down) or make it report "infeasible" wrongly
	 * (notes/cbc.md); with a short limit preprocessing is off: it changes speed, not answers */
	if (time_limit_s > 0 && time_limit_s < MILP_PREPROCESS_MIN_S)
		Cbc_setParameter(model, "preprocess", "off");
	if (o->threads_inside_cbc > 1) {
		snprintf(buf, sizeof(buf), "%d", o->threads_inside_cbc);
		Cbc_setParameter(model, "threads", buf);
	}
	/* exact unless asked: no absolute gap, no cutoff increment that would skip near-ties */
	Cbc_setAllowableGap(model, 1e-12);
	Cbc_setAllowableFractionGap(model, rel_gap > 0 ? rel_gap : 0);
	Cbc_setParameter(model, "increment", "1e-12");
	/* an uncertified model prunes only what lies a margin above the cutoff */
	if (isfinite(o->cutoff_tpi) && milp_span(md) <= MILP_CERT_RANGE)
		Cbc_setCutoff(model, o->cutoff_tpi / md->time_scale);
	/* measured: on small models CBC's root cuts cost more than the nodes they save (the random
	 * DAGs of tests/unit/test_opt.c solve about 4x faster without them); keep them on big ones */
	if (m->ncols <= MILP_SMALL_COLS)
		Cbc_setParameter(model, "cutsOnOff", "off");
	if (st_stage && st_strategy) {
		/* every integer column, as CBC leaves omitted ones free */
		start_idx = malloc((n_int ? n_int : 1) * sizeof(int));
		start_val = malloc((n_int ? n_int : 1) * sizeof(double));
		if (!start_idx || !start_val) {
			rc = err_set(err, UNIAP_E_NOMEM, "milp: out of memory");
			goto out;
		}
		n_int = 0;
		for (col = 0; col < m->ncols; col++)
			if (m->is_int[col]) {
				start_idx[n_int] = (int)col;
				start_val[n_int++] = 0;
			}
		/* x columns are created first, in (u, i, k) order, so their index is their slot */
		for (u = 0; u < c->n_layers; u++) {
			int xc = md->xcol[(u * (size_t)cost_stages(c) + (size_t)st_stage[u]) * cost_k(c) + st_strategy[u]];

			if (xc >= 0 && (size_t)xc < n_int)
				start_val[xc] = 1;
		}
		Cbc_setMIPStartI(model, (int)n_int, start_idx, start_val);
	}
	Cbc_solve(model);
	run->cbc_status = Cbc_status(model);
	run->cbc_secondary = Cbc_secondaryStatus(model);
	run->proven_optimal = Cbc_isProvenOptimal(model);
	run->proven_infeasible = Cbc_isProvenInfeasible(model);
	run->stopped_on_gap = run->cbc_secondary == 2;
	run->hit_limit = Cbc_isSecondsLimitReached(model) || run->cbc_status == 1 ||
	                 (time_limit_s > 0 && isfinite(time_limit_s) &&
	                  opt_clock_s() - t0 >= 0.95 * time_limit_s);
	run->bound = Cbc_getBestPossibleObjValue(model) * md->time_scale;
	run->nodes = Cbc_getNodeCount(model);
	sol = Cbc_bestSolution(model);
	if (sol) {
		if (milp_decode(c, md, sol, stage, strategy) == 0 && isfinite(opt_tpi(c, stage, strategy)))
			run->has_plan = 1;
		else
			run->rejected_plan = 1;
	}
	if (run->cbc_status == 2 && !run->has_plan)
		rc = err_set(err, UNIAP_E_SOLVER, "milp: cbc abandoned the search (numerical difficulties)");
out:
	free(start_idx);
	free(start_val);
	Cbc_deleteModel(model);
	return rc;
}

/*
 * CBC's best possible value as a bound we can stand behind: TPI >= 0, so a
 * negative or missing bound is 0; a bound above the plan's TPI (beyond
 * rounding), or CBC's "infinite" 1e30+ before its root LP, says nothing.
 */
static double milp_sane_bound(double bound, double tpi)
{
	if (!isfinite(bound) || bound <= 0 || bound >= 1e30)
		return 0;
	if (bound > tpi * (1 + 1e-6))
		return 0;
	return fmin(bound, tpi);
}

/*
 * A lower bound every plan meets, proven without a solver: with S the sum of
 * the layers' least times, the stages' times sum to at least S and the most
 * loaded of pp devices carries at least S / pp, so TPI >= S / v + (c - 1 / v) S / pp.
 */
static double milp_floor(const struct cost_candidate *c)
{
	size_t K = cost_k(c), u, k;
	double S = 0, v = (double)cost_virtual(c);

	for (u = 0; u < c->n_layers; u++) {
		double m = INFINITY;

		for (k = 0; k < K; k++)
			m = fmin(m, c->time_s[u * K + k]);
		S += m;
	}
	if (opt_makespan_objective(c)) /* the stages' c p_i and what precedes them, averaged; or the
	                                   busiest device's c P_d and a micro-batch's round trip */
		return v > 1 ? fmax(S, (double)c->microbatches * S / c->pp)
		             : opt_makespan_factor(c->microbatches, c->pp) * S;
	return S / v + ((double)c->microbatches - 1.0 / v) * S / c->pp;
}

uniap_code milp_solve(const struct cost_candidate *c, const struct opt_options *o, const int *start_stage,
                      const size_t *start_strategy, struct opt_result *out, struct uniap_err *err)
{
	struct milp_model md;
	struct milp_run run;
	size_t n = c->n_layers;
	int *stage = calloc(n, sizeof(int));
	size_t *strategy = calloc(n, sizeof(size_t));
	double t0 = opt_clock_s(), limit = o->time_limit_s, tpi = INFINITY, ub;
	int have_limit = limit > 0 && isfinite(limit), staged;
	uniap_code rc;

	memset(&md, 0, sizeof(md));
	out->method = OPT_METHOD_MILP;
	if (!stage || !strategy) {
		rc = err_set(err, UNIAP_E_NOMEM, "milp: out of memory");
		goto out;
	}
	/* the warm start's TPI bounds every plan worth finding.  Not the cutoff: it
	 * comes from other candidates, so it depends on which finished first (the
	 * thread count), and the columns kept decide the certification below; the
	 * cutoff goes to CBC alone, whose "pruned" is a claim about the cutoff */
	ub = start_stage && start_strategy ? opt_tpi(c, start_stage, start_strategy) : INFINITY;
	rc = milp_build(c, 1.0, ub, &md, err);
	if (rc != UNIAP_OK)
		goto out;
	staged = o->early_stop && o->early_stop_after_s > 0 &&
	         (!have_limit || limit > o->early_stop_after_s);
	rc = milp_run_once(c, &md, o, staged ? o->early_stop_after_s : limit, o->rel_gap, start_stage,
	                   start_strategy, stage, strategy, &run, err);
	if (rc != UNIAP_OK)
		goto out;
	if (staged && run.hit_limit) {
		/*
		 * Appendix E, rule 1: past early_stop_after_s, stop once the gap is under early_stop_gap.
		 * CBC cannot change its gap target during a search, so the first run stops at that time;
		 * unless its gap already qualifies, a second run continues from its plan with that gap as
		 * target.  (Rule 2 needs no code: CBC stops by itself once the bound reaches the cutoff.)
		 */
		double t1 = run.has_plan ? opt_tpi(c, stage, strategy) : INFINITY;
		double gap = run.has_plan && t1 > 0 ? (t1 - milp_sane_bound(run.bound, t1)) / t1 : INFINITY;
		double left = have_limit ? limit - (opt_clock_s() - t0) : INFINITY;

		if (gap < o->early_stop_gap) {
			snprintf(out->note, sizeof(out->note), "early stop: gap %.2f%% after %.0f s", 100 * gap,
			         o->early_stop_after_s);
		} else if (left > 0.1) {
			struct milp_run run2;
			int *st1 = malloc(n * sizeof(int));
			size_t *sk1 = malloc(n * sizeof(size_t));
			int had = run.has_plan;

			if (!st1 || !sk1) {
				free(st1);
				free(sk1);
				rc = err_set(err, UNIAP_E_NOMEM, "milp: out of memory");
				goto out;
			}
			if (had) {
				memcpy(st1, stage, n * sizeof(int));
				memcpy(sk1, strategy, n * sizeof(size_t));
			}
			rc = milp_run_once(c, &md, o, left, fmax(o->rel_gap, o->early_stop_gap), had ? st1 : start_stage,
			                   had ? sk1 : start_strategy, stage, strategy, &run2, err);
			if (rc == UNIAP_OK && !run2.has_plan && had) {
				/* keep the first run's plan */
				memcpy(stage, st1, n * sizeof(int));
				memcpy(strategy, sk1, n * sizeof(size_t));
				run2.has_plan = 1;
				run2.rejected_plan = 0;
			}
			free(st1);
			free(sk1);
			if (rc != UNIAP_OK)
				goto out;
			run2.nodes += run.nodes;
			run2.bound = fmax(milp_sane_bound(run2.bound, INFINITY), milp_sane_bound(run.bound, INFINITY));
			run2.hit_limit = run2.hit_limit || run2.stopped_on_gap;
			run = run2;
			snprintf(out->note, sizeof(out->note), "early stop: second run with a %.1f%% gap target",
			         100 * fmax(o->rel_gap, o->early_stop_gap));
		} else {
			snprintf(out->note, sizeof(out->note), "early stop: no time left after %.0f s",
			         o->early_stop_after_s);
		}
	}
	if (run.rejected_plan && !run.has_plan && (!have_limit || limit - (opt_clock_s() - t0) > 0.1)) {
		/*
		 * CBC's plan broke the memory limit within its feasibility tolerance (1e-7 of the scaled
		 * row), which opt_tpi does not forgive.  Solve once more with the memory rows a hair
		 * tighter; the optimum could lie in the shaved sliver, so the result is not claimed optimal.
		 */
		double bound1 = run.bound;
		long nodes1 = run.nodes;

		milp_model_release(&md);
		rc = milp_build(c, 1.0 - 1e-6, ub, &md, err);
		if (rc != UNIAP_OK)
			goto out;
		rc = milp_run_once(c, &md, o, have_limit ? limit - (opt_clock_s() - t0) : limit, o->rel_gap,
		                   start_stage, start_strategy, stage, strategy, &run, err);
		if (rc != UNIAP_OK)
			goto out;
		run.nodes += nodes1;
		run.bound = bound1;
		run.hit_limit = 1; /* nothing proven about the shaved sliver */
		snprintf(out->note, sizeof(out->note), "memory rows tightened by 1e-6 after a plan over the limit");
	}
	if (!run.has_plan && start_stage && start_strategy) {
		/* CBC stopped without a plan (a limit before it took the warm start): report the start */
		double t_start = opt_tpi(c, start_stage, start_strategy);

		if (isfinite(t_start) && t_start < o->cutoff_tpi) {
			memcpy(stage, start_stage, n * sizeof(int));
			memcpy(strategy, start_strategy, n * sizeof(size_t));
			run.has_plan = 1;
			run.proven_optimal = 0;
			run.stopped_on_gap = 0;
			run.hit_limit = 1;
			if (!out->note[0])
				snprintf(out->note, sizeof(out->note), "cbc returned no plan: the warm start is reported");
		}
	}
	out->nodes = run.nodes;
	if (milp_span(&md) > MILP_CERT_RANGE) {
		/* not certified: nothing CBC proved is claimed */
		run.bound = milp_floor(c);
		run.proven_optimal = 0;
		run.stopped_on_gap = 0;
		run.hit_limit = 1;
		if (!out->note[0])
			snprintf(out->note, sizeof(out->note), "costs span %.0e: cbc's answer is not "
			         "certified, the bound is the solver-free one", milp_span(&md));
	}
	if (run.has_plan) {
		tpi = opt_tpi(c, stage, strategy);
		out->stage = stage;
		out->strategy = strategy;
		out->n_layers = n;
		stage = NULL;
		strategy = NULL;
		out->bound_s = milp_sane_bound(run.bound, tpi);
		if (run.proven_optimal && !run.hit_limit && !run.stopped_on_gap) {
			out->status = OPT_OPTIMAL;
			out->bound_s = tpi;
			out->gap = 0;
		} else {
			out->gap = tpi > 0 ? (tpi - out->bound_s) / tpi : 0;
			out->status = (run.stopped_on_gap && out->gap <= o->rel_gap) || (!run.hit_limit && run.proven_optimal)
			                      ? OPT_OPTIMAL
			                      : OPT_FEASIBLE;
		}
	} else if (run.hit_limit || run.rejected_plan) {
		/* "infeasible" after a limit is not a proof (CBC's preprocessing can say so wrongly) */
		out->status = OPT_UNKNOWN;
		out->bound_s = milp_sane_bound(run.bound, INFINITY);
		if (run.rejected_plan)
			snprintf(out->note, sizeof(out->note), "cbc's plan failed the audit (tolerances)");
		else if (!out->note[0])
			snprintf(out->note, sizeof(out->note), "time limit before any plan");
	} else if (isfinite(o->cutoff_tpi)) {
		out->status = OPT_PRUNED;
		out->bound_s = o->cutoff_tpi;
	} else if (run.proven_infeasible || run.cbc_secondary == 1 || run.cbc_status == 0) {
		out->status = OPT_INFEASIBLE;
		out->bound_s = INFINITY;
	} else {
		out->status = OPT_UNKNOWN;
		snprintf(out->note, sizeof(out->note), "cbc status %d/%d without a plan", run.cbc_status,
		         run.cbc_secondary);
	}
out:
	free(stage);
	free(strategy);
	milp_model_release(&md);
	if (rc != UNIAP_OK) {
		free(out->stage);
		free(out->strategy);
		out->stage = NULL;
		out->strategy = NULL;
	}
	return rc;
}
