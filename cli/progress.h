/*
 * progress.h - `uniap plan`'s live progress line on a terminal (progress.c).
 *
 * Ownership: the caller owns the struct (on its stack is fine) and the FILE;
 * cli_progress_stop must be called before either goes away when start
 * returned 1.  cli_progress_update is a uop_progress_fn (ctx = the struct).
 */
#ifndef UNIAP_CLI_PROGRESS_H
#define UNIAP_CLI_PROGRESS_H

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>

#include "uop.h"

struct cli_progress {
	FILE *f;              /* borrowed: stderr */
	double start_s;       /* monotonic clock at start */
	int running;          /* the ticker thread exists */
	int drawn;            /* a line was drawn (read after the join) */
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop;             /* guarded by mu */
	size_t done, total;   /* guarded by mu */
	double best_tpi_s;    /* guarded by mu; INFINITY: none yet */
	double bound_s;       /* guarded by mu; the run's proven bound, 0: none yet */
};

/* Starts the ticker when f is a terminal: 1 started, 0 not (nothing is drawn;
 * update and stop are then no-ops). */
int cli_progress_start(struct cli_progress *p, FILE *f);
void cli_progress_update(void *ctx, const struct uop_progress *pr);
/* Joins the ticker and erases the line it drew. */
void cli_progress_stop(struct cli_progress *p);

/* The line for those values, into buf (cap bytes); bound_s 0: none yet. */
void cli_progress_format(char *buf, size_t cap, size_t done, size_t total, double best_tpi_s,
                         double bound_s, double elapsed_s);

#endif
