/*
 * plan_doc.c - the plan document as a struct (struct plan_doc in plan.h):
 * only its release lives here; json/jdecode.c fills it.
 *
 * Never: evaluate or check plans here (plan.c does), no I/O.
 */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

void plan_doc_release(struct plan_doc *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; p->layer_names && i < p->n_layers; i++)
		free(p->layer_names[i]);
	for (i = 0; p->strategy_names && i < p->n_layers; i++)
		free(p->strategy_names[i]);
	free(p->layer_names);
	free(p->strategy_names);
	free(p->stage);
	free(p->recompute);
	free(p->zero);
	free(p->sp);
	free(p->selective);
	free(p->ep);
	free(p->etp1);
	memset(p, 0, sizeof(*p));
}
