/*
 * progress.c - live progress of `uniap plan` on a terminal: one line on
 * stderr, redrawn in place, with the candidates done of total, the best TPI
 * so far and the time elapsed.
 *
 * The optimizer reports progress only when a candidate finishes, which can be
 * tens of seconds apart on large problems (or before the first report, while
 * the candidates' matrices are built); so a ticker thread redraws the line on
 * its own clock from the last values the callback stored.
 *
 * Thread safety: cli_progress_update may be called from any thread (it is a
 * uop_progress_fn); start and stop from the thread that owns the struct.
 * Lock order: only p->mu, never held while writing.
 * Never writes anything unless started on a terminal; never writes to stdout.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "progress.h"

#define PROGRESS_TICK_NS 200000000L  /* redraw every 0.2 s */
#define PROGRESS_FIRST_S 0.3         /* quick runs show nothing */

static double progress_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Formats the line (without the carriage return) into buf. */
void cli_progress_format(char *buf, size_t cap, size_t done, size_t total, double best_tpi_s,
                         double bound_s, double elapsed_s)
{
	char best[96];

	if (isfinite(best_tpi_s) && bound_s > 0)
		snprintf(best, sizeof(best), "best %.6g s, bound %.6g s (gap %.1f %%)", best_tpi_s, bound_s,
		         100.0 * (best_tpi_s - bound_s) / best_tpi_s);
	else if (isfinite(best_tpi_s))
		snprintf(best, sizeof(best), "best %.6g s", best_tpi_s);
	else if (bound_s > 0 && isfinite(bound_s))
		snprintf(best, sizeof(best), "no plan yet, bound %.6g s", bound_s);
	else
		snprintf(best, sizeof(best), "no plan yet");
	if (total == 0)
		snprintf(buf, cap, "uniap plan: preparing candidates, %.1f s elapsed", elapsed_s);
	else
		snprintf(buf, cap, "uniap plan: %zu/%zu candidates, %s, %.1f s elapsed", done, total,
		         best, elapsed_s);
}

static void *progress_main(void *arg)
{
	struct cli_progress *p = arg;
	char line[256];
	int stop;

	for (;;) {
		struct timespec until;
		size_t done, total;
		double best, bound, elapsed;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += PROGRESS_TICK_NS;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&p->mu);
		if (!p->stop)
			pthread_cond_timedwait(&p->cv, &p->mu, &until);
		stop = p->stop;
		done = p->done;
		total = p->total;
		best = p->best_tpi_s;
		bound = p->bound_s;
		pthread_mutex_unlock(&p->mu);
		if (stop)
			break;
		elapsed = progress_now_s() - p->start_s;
		if (elapsed < PROGRESS_FIRST_S)
			continue;
		cli_progress_format(line, sizeof(line), done, total, best, bound, elapsed);
		/* \r and "erase to end of line": the line is redrawn in place */
		fprintf(p->f, "\r%s\033[K", line);
		fflush(p->f);
		p->drawn = 1;
	}
	return NULL;
}

int cli_progress_start(struct cli_progress *p, FILE *f)
{
	memset(p, 0, sizeof(*p));
	p->f = f;
	p->best_tpi_s = INFINITY;
	p->start_s = progress_now_s();
	if (!isatty(fileno(f)))
		return 0;
	if (pthread_mutex_init(&p->mu, NULL) != 0)
		return 0;
	if (pthread_cond_init(&p->cv, NULL) != 0) {
		pthread_mutex_destroy(&p->mu);
		return 0;
	}
	if (pthread_create(&p->thread, NULL, progress_main, p) != 0) {
		pthread_cond_destroy(&p->cv);
		pthread_mutex_destroy(&p->mu);
		return 0;
	}
	p->running = 1;
	return 1;
}

void cli_progress_update(void *ctx, const struct uop_progress *pr)
{
	struct cli_progress *p = ctx;

	if (!p->running)
		return;
	pthread_mutex_lock(&p->mu);
	p->done = pr->done;
	p->total = pr->total;
	p->best_tpi_s = pr->best_tpi_s;
	p->bound_s = pr->bound_s;
	pthread_mutex_unlock(&p->mu);
}

void cli_progress_stop(struct cli_progress *p)
{
	if (!p->running)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->thread, NULL);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	p->running = 0;
	if (p->drawn) {
		/* leave the terminal as it was: erase the progress line */
		fputs("\r\033[K", p->f);
		fflush(p->f);
	}
}
