/*
 * plan.c - evaluation of an assignment with the audit formula (cost.h).
 *
 * This is the reference the optimizer's answers and `uniap evaluate` are
 * checked against, so it is written for clarity, not speed.
 */
#include "plan.h"
#include "runtime.h"
#include "schedsim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void plan_eval_release(struct plan_eval *e)
{
	if (!e)
		return;
	free(e->stage_time_s);
	free(e->comm_time_s);
	free(e->stage_memory_bytes);
	free(e->device_memory_bytes);
	memset(e, 0, sizeof(*e));
}

/* Order and emptiness: the first violation, written to e->reason. */
static void plan_check_order(const struct cost_candidate *cand, const int *stage,
                             struct plan_eval *e)
{
	size_t ed, u;
	size_t *count = calloc((size_t)cost_stages(cand), sizeof(*count));
	int i;

	e->valid = 1;
	for (ed = 0; ed < cand->n_edges; ed++) {
		size_t a = cand->edges[ed].from, b = cand->edges[ed].to;

		if (stage[a] > stage[b]) {
			e->valid = 0;
			snprintf(e->reason, sizeof(e->reason),
			         "edge %s -> %s goes backwards: stage %d -> stage %d",
			         cand->layer_names[a], cand->layer_names[b], stage[a], stage[b]);
			goto out;
		}
	}
	if (!count) {
		/* cannot count; the order check above is all we can say */
		goto out;
	}
	for (u = 0; u < cand->n_layers; u++)
		count[stage[u]]++;
	for (i = 0; i < cost_stages(cand); i++)
		if (count[i] == 0) {
			e->valid = 0;
			snprintf(e->reason, sizeof(e->reason), "stage %d holds no layer", i);
			goto out;
		}
out:
	free(count);
}

uniap_code plan_evaluate(const struct cost_candidate *cand, const int *stage, const size_t *strategy,
                         struct plan_eval *out, struct uniap_err *err)
{
	size_t K = cost_k(cand), u, ed;
	int i, j, pp = cost_stages(cand), dev = cand->pp, v = cost_virtual(cand);
	double sum = 0, worst = 0, *load = NULL, *act;

	memset(out, 0, sizeof(*out));
	for (u = 0; u < cand->n_layers; u++) {
		if (stage[u] < 0 || stage[u] >= pp)
			return err_set(err, UNIAP_E_INVALID, "layers[%zu].stage: must be in [0, %d), got %d",
			               u, pp, stage[u]);
		if (strategy[u] >= K)
			return err_set(err, UNIAP_E_INVALID,
			               "layers[%zu].strategy: must be in [0, %zu), got %zu", u, K,
			               strategy[u]);
	}
	out->pp = pp;
	out->devices = dev;
	out->virtual_stages = v;
	out->stage_time_s = calloc((size_t)pp, sizeof(double));
	out->stage_memory_bytes = calloc((size_t)pp, sizeof(double));
	out->device_memory_bytes = calloc((size_t)dev, sizeof(double));
	out->comm_time_s = pp > 1 ? calloc((size_t)pp - 1, sizeof(double)) : NULL;
	load = calloc((size_t)dev * 2, sizeof(double));
	if (!out->stage_time_s || !out->stage_memory_bytes || !out->device_memory_bytes || !load ||
	    (pp > 1 && !out->comm_time_s)) {
		free(load);
		plan_eval_release(out);
		return err_set(err, UNIAP_E_NOMEM, "plan evaluation: out of memory");
	}
	plan_check_order(cand, stage, out);

	/* load[] is [2 dev] for the loads below; act[] ([pp]) the activations of one
	 * micro-batch per stage, for the device's peak (cost_device_activation) */
	act = calloc((size_t)pp, sizeof(double));
	if (!act) {
		free(load);
		plan_eval_release(out);
		return err_set(err, UNIAP_E_NOMEM, "plan evaluation: out of memory");
	}
	for (u = 0; u < cand->n_layers; u++) {
		size_t at = u * K + strategy[u];

		out->stage_time_s[stage[u]] += cand->time_s[at];
		out->stage_memory_bytes[stage[u]] += cand->memory_fixed_bytes[at] +
			(double)cand->inflight[stage[u]] * cand->memory_per_microbatch_bytes[at];
		/* with peak rows, the device's fixed sum, term for term as
		 * cost_stage_memory adds it, then its peak activations below */
		if (cand->n_peaks > 0) {
			out->device_memory_bytes[stage[u] % dev] += cand->memory_fixed_bytes[at];
			act[stage[u]] += cand->memory_per_microbatch_bytes[at];
		}
	}
	for (ed = 0; ed < cand->n_edges; ed++) {
		const struct cost_edge *e = &cand->edges[ed];
		size_t at = strategy[e->from] * K + strategy[e->to];
		int a = stage[e->from], b = stage[e->to];

		if (a == b)
			out->stage_time_s[a] += e->same_stage_s[at];
		for (j = a; j < b; j++)
			out->comm_time_s[j] += e->cross_stage_s[at];
	}
	if (v == 1) {
		/* a stage's cycle: receive, compute, send (cost.h: transfers block both ranks) */
		for (i = 0; i < pp; i++)
			sum += out->stage_time_s[i];
		for (j = 0; j + 1 < pp; j++)
			sum += out->comm_time_s[j];
		for (i = 0; i < pp; i++) {
			double cyc = (i > 0 ? out->comm_time_s[i - 1] : 0) + out->stage_time_s[i] +
			             (i + 1 < pp ? out->comm_time_s[i] : 0);

			if (cyc > worst)
				worst = cyc;
		}
		out->tpi_s = out->formula_tpi_s = sum + (double)(cand->microbatches - 1) * worst;
	} else {
		/* interleaved (cost.h): device loads and link loads, transfers overlapped, the bubble
		 * divided by v */
		for (i = 0; i < pp; i++) {
			sum += out->stage_time_s[i];
			load[i % dev] += out->stage_time_s[i];
		}
		for (j = 0; j + 1 < pp; j++) {
			sum += out->comm_time_s[j];
			load[dev + j % dev] += out->comm_time_s[j];
		}
		for (i = 0; i < 2 * dev; i++)
			if (load[i] > worst)
				worst = load[i];
		out->tpi_s = out->formula_tpi_s = sum / v + ((double)cand->microbatches - 1.0 / v) * worst;
	}
	if (cand->makespan && pp > 1 &&
	    ((v == 1 && cand->schedule == COST_1F1B) || (v > 1 && cand->schedule == COST_INTERLEAVED))) {
		/* the makespan objective: the iteration as run (opt_makespan_objective) */
		struct sched_graph g;
		double *t = NULL;
		uniap_code grc = sched_graph_build(dev, pp, cand->microbatches, cand->schedule, &g, err);

		if (grc == UNIAP_OK && !(t = malloc((size_t)(g.n_nodes ? g.n_nodes : 1) * sizeof(*t))))
			grc = err_set(err, UNIAP_E_NOMEM, "plan evaluation: out of memory");
		if (grc != UNIAP_OK) {
			sched_graph_release(&g);
			free(load);
			free(act);
			plan_eval_release(out);
			return grc;
		}
		out->tpi_s = sched_graph_length(&g, out->stage_time_s, out->comm_time_s, t);
		free(t);
		sched_graph_release(&g);
	}
	free(load);

	if (cand->n_peaks > 0)
		for (i = 0; i < dev; i++) {
			double chunk[COST_MAX_VIRTUAL_STAGES];

			for (j = 0; j < v; j++)
				chunk[j] = act[i + dev * j];
			out->device_memory_bytes[i] += cost_device_activation(cand, i, chunk);
		}
	else
		for (i = 0; i < pp; i++)
			out->device_memory_bytes[i % dev] += out->stage_memory_bytes[i];
	free(act);
	out->fits = 1;
	for (i = 0; i < dev; i++)
		if (out->device_memory_bytes[i] > cand->memory_limit_bytes) {
			out->fits = 0;
			if (out->valid) {
				if (v == 1)
					snprintf(out->reason, sizeof(out->reason),
					         "stage %d needs %.0f bytes, over the limit of %.0f bytes", i,
					         out->device_memory_bytes[i], cand->memory_limit_bytes);
				else
					snprintf(out->reason, sizeof(out->reason),
					         "device %d (stages %d, %d, ...) needs %.0f bytes, over the limit of "
					         "%.0f bytes", i, i, i + dev, out->device_memory_bytes[i],
					         cand->memory_limit_bytes);
			}
			break;
		}
	return UNIAP_OK;
}

int plan_doc_recompute(const struct plan_doc *p)
{
	size_t u;

	for (u = 0; u < p->n_layers; u++)
		if (p->recompute && p->recompute[u])
			return 1;
	return 0;
}

/* 1 if a layer of p has flag[u] set (flag may be NULL) or a strategy name containing suffix. */
static int plan_doc_uses(const struct plan_doc *p, const int *flag, const char *suffix)
{
	size_t u;

	for (u = 0; u < p->n_layers; u++)
		if ((flag && flag[u]) || (p->strategy_names && p->strategy_names[u] &&
		                          strstr(p->strategy_names[u], suffix)))
			return 1;
	return 0;
}

int plan_doc_zero(const struct plan_doc *p)
{
	return plan_doc_uses(p, p->zero, "+z");
}

int plan_doc_sp(const struct plan_doc *p)
{
	return plan_doc_uses(p, p->sp, "+sp");
}

int plan_doc_selective(const struct plan_doc *p)
{
	return plan_doc_uses(p, p->selective, "+sel");
}

uniap_code plan_doc_resolve(const struct plan_doc *p, const struct cost_candidate *cand, int *stage,
                            size_t *strategy, struct uniap_err *err)
{
	size_t u;

	if (p->pp != cand->pp)
		return err_set(err, UNIAP_E_INVALID, "plan.pp: must be %d, got %d", cand->pp, p->pp);
	if (p->microbatches != cand->microbatches || p->microbatch_size != cand->microbatch_size)
		return err_set(err, UNIAP_E_INVALID,
		               "plan.microbatch_size: microbatches x microbatch_size must be %ld x %ld, "
		               "got %ld x %ld", cand->microbatches, cand->microbatch_size,
		               p->microbatches, p->microbatch_size);
	if (p->schedule != cand->schedule)
		return err_set(err, UNIAP_E_INVALID, "plan.schedule: must be %s, got %s",
		               cost_schedule_name(cand->schedule), cost_schedule_name(p->schedule));
	if ((p->virtual_stages > 1 ? p->virtual_stages : 1) != cost_virtual(cand))
		return err_set(err, UNIAP_E_INVALID, "plan.virtual_stages: must be %d, got %d", cost_virtual(cand),
		               p->virtual_stages);
	if (p->n_layers != cand->n_layers)
		return err_set(err, UNIAP_E_INVALID,
		               "plan.layers: must list the model's %zu layers, got %zu", cand->n_layers,
		               p->n_layers);
	for (u = 0; u < p->n_layers; u++) {
		long k;

		if (strcmp(p->layer_names[u], cand->layer_names[u]) != 0)
			return err_set(err, UNIAP_E_INVALID,
			               "plan.layers[%zu].name: must be \"%.100s\" (the model's layer %zu), "
			               "got \"%.100s\"", u, cand->layer_names[u], u, p->layer_names[u]);
		if (p->stage[u] < 0 || p->stage[u] >= cost_stages(cand))
			return err_set(err, UNIAP_E_INVALID, "plan.layers[%zu].stage: must be in [0, %d), got %d",
			               u, cost_stages(cand), p->stage[u]);
		k = strategy_find(&cand->strategies, p->strategy_names[u]);
		if (k < 0)
			return err_set(err, UNIAP_E_INVALID,
			               "plan.layers[%zu].strategy.name: no strategy \"%.64s\" for %d devices "
			               "per stage and micro-batches of %ld", u, p->strategy_names[u],
			               cand->strategies.stage_devices, cand->microbatch_size);
		if (p->recompute && (p->recompute[u] != 0) != (cand->strategies.items[k].recompute != 0))
			return err_set(err, UNIAP_E_INVALID,
			               "plan.layers[%zu].strategy.recompute: must be %s for \"%.64s\"", u,
			               cand->strategies.items[k].recompute ? "true" : "false",
			               p->strategy_names[u]);
		if (p->zero && p->zero[u] != cand->strategies.items[k].zero)
			return err_set(err, UNIAP_E_INVALID,
			               "plan.layers[%zu].strategy.zero: must be %d for \"%.64s\"", u,
			               cand->strategies.items[k].zero, p->strategy_names[u]);
		if (p->selective && (p->selective[u] != 0) != (cand->strategies.items[k].selective != 0))
			return err_set(err, UNIAP_E_INVALID,
			               "plan.layers[%zu].strategy.selective: must be %s for \"%.64s\"", u,
			               cand->strategies.items[k].selective ? "true" : "false", p->strategy_names[u]);
		if (p->ep && (p->ep[u] > 1 ? p->ep[u] : 1) != strategy_ep(&cand->strategies.items[k]))
			return err_set(err, UNIAP_E_INVALID,
			               "plan.layers[%zu].strategy.ep: must be %d for \"%.64s\"", u,
			               strategy_ep(&cand->strategies.items[k]), p->strategy_names[u]);
		if (p->etp1 && (p->etp1[u] != 0) != (cand->strategies.items[k].etp1 != 0))
			return err_set(err, UNIAP_E_INVALID,
			               "plan.layers[%zu].strategy.etp: must be %d for \"%.64s\"", u,
			               strategy_etp(&cand->strategies.items[k]), p->strategy_names[u]);
		if (p->sp && (p->sp[u] != 0) != (cand->strategies.items[k].sp != 0))
			return err_set(err, UNIAP_E_INVALID,
			               "plan.layers[%zu].strategy.sp: must be %s for \"%.64s\"", u,
			               cand->strategies.items[k].sp ? "true" : "false", p->strategy_names[u]);
		stage[u] = p->stage[u];
		strategy[u] = (size_t)k;
	}
	return UNIAP_OK;
}

void plan_applied_release(struct plan_applied *a)
{
	if (!a)
		return;
	free(a->stage);
	free(a->strategy);
	plan_eval_release(&a->eval);
	cost_candidate_release(&a->cand);
	memset(a, 0, sizeof(*a));
}

uniap_code plan_doc_apply(const struct cluster_profile *cluster, const struct model_profile *model,
                          long batch, const struct plan_doc *p, struct plan_applied *out,
                          struct uniap_err *err)
{
	return plan_doc_apply_until(cluster, model, batch, p, 0, NULL, out, err);
}

uniap_code plan_doc_apply_until(const struct cluster_profile *cluster, const struct model_profile *model,
                                long batch, const struct plan_doc *p, double deadline_s,
                                const struct cost_budget *budget, struct plan_applied *out, struct uniap_err *err)
{
	struct cost_options o = {
		.deadline_s = deadline_s,
		.budget = budget,
		.pp = p->pp, .microbatches = p->microbatches,
		.schedule = p->schedule, .virtual_stages = p->virtual_stages,
		.recompute = plan_doc_recompute(p), .zero = plan_doc_zero(p),
		.sp = plan_doc_sp(p), .selective = plan_doc_selective(p), .fp8 = p->fp8, .cp = p->cp, .cp_a2a = p->cp_a2a,
		.makespan = p->makespan,
	};
	const struct cost_runtime *rt = runtime_find(p->runtime[0] ? p->runtime : RUNTIME_DEFAULT);
	uniap_code rc;

	memset(out, 0, sizeof(*out));
	if (!rt)
		return err_set(err, UNIAP_E_INVALID, "plan.runtime: unknown runtime \"%s\"", p->runtime);
	o.runtime = *rt;
	if (p->microbatches < 1 || p->microbatch_size < 1 ||
	    p->microbatches > COST_MAX_BATCH / p->microbatch_size)
		return err_set(err, UNIAP_E_INVALID,
		               "plan.microbatch_size: microbatches x microbatch_size must be in [1, %ld], "
		               "got %ld x %ld", COST_MAX_BATCH, p->microbatches, p->microbatch_size);
	o.batch = p->microbatches * p->microbatch_size;
	if (p->batch && batch && p->batch != batch)
		return err_set(err, UNIAP_E_INVALID, "plan.batch: must equal the batch %ld, got %ld", batch, p->batch);
	if (p->batch || batch) {
		long B = p->batch ? p->batch : batch;

		/* micro-batches of ceil(B / c), the last smaller (docs/cost-model.md, "Micro-batches") */
		if (B != o.batch && (p->microbatch_size != (B + p->microbatches - 1) / p->microbatches ||
		                     !cost_chunk_count(B, p->microbatches)))
			return err_set(err, UNIAP_E_INVALID,
			               "plan.microbatch_size: microbatches x microbatch_size must equal the batch %ld, "
			               "or split it with the last micro-batch smaller (microbatch_size ceil(%ld / %ld) "
			               "= %ld); got %ld x %ld", B, B, p->microbatches,
			               (B + p->microbatches - 1) / p->microbatches, p->microbatches, p->microbatch_size);
		o.uneven = B != o.batch;
		o.batch = B;
	}
	/* a named expert-parallel size the model's experts do not allow: say so before the lookup
	 * that would only say the strategy is unknown */
	if (p->ep) {
		int g = model_experts_gcd(model);
		size_t u;

		for (u = 0; u < p->n_layers; u++)
			if (p->ep[u] > 1 && (g <= 0 || g % p->ep[u] != 0))
				return err_set(err, UNIAP_E_INVALID,
				               "plan.layers[%zu].strategy.ep: %d must divide every MoE layer's experts (%s%d)", u,
				               p->ep[u], g > 0 ? "their gcd " : "the model has none: ", g);
	}
	if ((rc = cost_build(cluster, model, &o, &out->cand, err)) != UNIAP_OK) {
		err_prefix(err, "plan");
		return rc;
	}
	out->stage = calloc(out->cand.n_layers ? out->cand.n_layers : 1, sizeof(*out->stage));
	out->strategy = calloc(out->cand.n_layers ? out->cand.n_layers : 1, sizeof(*out->strategy));
	if (!out->stage || !out->strategy)
		return err_set(err, UNIAP_E_NOMEM, "plan: out of memory");
	if ((rc = plan_doc_resolve(p, &out->cand, out->stage, out->strategy, err)) != UNIAP_OK)
		return rc;
	/* a given plan is judged by its own FSDP buffers, not the dictionary's largest */
	out->cand.memory_limit_bytes = cost_plan_memory_limit(cluster, model, &out->cand, out->strategy);
	return plan_evaluate(&out->cand, out->stage, out->strategy, &out->eval, err);
}
