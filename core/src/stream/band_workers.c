#define _POSIX_C_SOURCE 200809L
#include "stream/band_workers.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "base/image.h"
#include "base/mono_clock.h"

/* A chunk in flight: its window of input rows (packed, host) and its output rows. A slot goes
 * free -> filled (by the dealer) -> taken (by a worker) -> done -> emitted, and free again. */
typedef struct {
    band_window win;
    unsigned char *in, *out;
    size_t in_cap, out_cap;
    int chunk;                /* the chunk it holds (-1: none yet) */
    int done;                 /* its worker is through with it: rc and err say how */
    int rc;
    char err[512];
} job;

typedef struct {
    pthread_t tid;
    int started;
    band_segment *seg;
    int chunks;
    double busy_ms;
    char err[512];            /* why its segment could not be made */
} worker;

/* One slot more than workers: the dealer fills the next chunk while one is emitted and every
 * worker runs one. Before, a worker kept its output until the emitter took it, so the decoding
 * waited on the encoding (two H200s ran the 10-gigapixel image slower than one). */
#define EXTRA_SLOTS 1

typedef struct {
    const plan *p;
    const band_seg *seg;
    const band_workers_options *o;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    worker w[BAND_MAX_WORKERS];
    job jobs[BAND_MAX_WORKERS + EXTRA_SLOTS];
    int n_jobs;
    size_t in_row, out_row;
    int height, halo;
    const band_sink *sink;
    int posted;               /* chunks filled so far, each in slot chunk mod n_jobs */
    int taken;                /* chunks a worker took: they are taken in order */
    int dealt;                /* every chunk is posted (posted is the total) */
    int emitted;              /* chunks whose rows went to the sink, in order */
    int quit;
    int failed;               /* a worker, the source or the sink failed: rc and err say how */
    int rc;
    char err[512];
    band_workers_waits waits;  /* each written by one thread: the dealer's and the emitter's */
} crew;

typedef struct {
    crew *c;
    int index;
    job *j;                   /* the chunk it runs */
} worker_arg;

/* Room for bytes; what a buffer held is not kept (its chunk was emitted). */
static int grow(unsigned char **buf, size_t *cap, size_t bytes)
{
    if (bytes <= *cap && *buf) return IP_OK;
    free(*buf);
    *cap = 0;
    if (!(*buf = img_big_malloc(bytes ? bytes : 1))) return IP_ENOMEM;
    *cap = bytes;
    return IP_OK;
}

static int chunk_rows_out(void *user, const ip_image *rows, int y0, char *err, size_t errlen)
{
    worker_arg *a = user;
    job *j = a->j;
    if (y0 < j->win.own_lo || y0 + rows->shape.height > j->win.own_hi) {
        snprintf(err, errlen, "band workers: rows %d.. fall outside the chunk %d..%d", y0, j->win.own_lo, j->win.own_hi);
        return IP_EINVAL;
    }
    for (int y = 0; y < rows->shape.height; y++)
        memcpy(j->out + (size_t)(y0 - j->win.own_lo + y) * a->c->out_row,
               (const char *)rows->data + (ptrdiff_t)y * rows->stride, a->c->out_row);
    return IP_OK;
}

/* The window's rows through the worker's segment, band_rows at a time. */
static int run_job(crew *c, worker_arg *a, worker *w, job *j)
{
    int rc = band_segment_start(w->seg, &j->win, j->err, sizeof j->err);
    band_sink sink = { chunk_rows_out, a };
    ip_shape shape = c->p->steps[c->seg->first].in;
    int step = c->o->cfg.band_rows > 0 ? c->o->cfg.band_rows : 1;
    for (int y = j->win.in_lo; rc == IP_OK && y < j->win.in_hi; y += step) {
        ip_image rows = { j->in + (size_t)(y - j->win.in_lo) * c->in_row, (ptrdiff_t)c->in_row, shape, 0 };
        rows.shape.height = j->win.in_hi - y < step ? j->win.in_hi - y : step;
        rc = band_segment_push(w->seg, &rows, y, &sink, j->err, sizeof j->err);
    }
    return rc;
}

/* A worker takes the filled chunks in order, whichever worker is free: a slower GPU takes fewer. */
static void *worker_main(void *arg)
{
    worker_arg *a = arg;
    crew *c = a->c;
    worker *w = &c->w[a->index];
    band_config cfg = c->o->cfg;
    cfg.gpu_index = c->o->gpu_ids[a->index];
    int made = band_segment_create(&w->seg, c->p, c->seg, &cfg, w->err, sizeof w->err);
    pthread_mutex_lock(&c->mu);
    for (;;) {
        while (!c->quit && !c->failed && c->taken == c->posted) pthread_cond_wait(&c->cv, &c->mu);
        if (c->quit || c->failed) break;
        job *j = &c->jobs[c->taken++ % c->n_jobs];
        pthread_mutex_unlock(&c->mu);
        double t0 = now_ms();
        a->j = j;
        int rc = made;
        if (rc != IP_OK) memcpy(j->err, w->err, sizeof j->err);
        else rc = run_job(c, a, w, j);
        double spent = now_ms() - t0;
        pthread_mutex_lock(&c->mu);
        w->busy_ms += spent;
        w->chunks++;
        j->rc = rc;
        j->done = 1;
        pthread_cond_broadcast(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

static void post(crew *c, job *j, int chunk)
{
    pthread_mutex_lock(&c->mu);
    j->chunk = chunk;
    j->done = 0;
    c->posted = chunk + 1;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* The first failure stops the dealing and the emitting; later ones are dropped. */
static void fail(crew *c, int rc, const char *err)
{
    pthread_mutex_lock(&c->mu);
    if (!c->failed) {
        c->failed = 1;
        c->rc = rc;
        snprintf(c->err, sizeof c->err, "%s", err);
    }
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* Where the source stands: its current block and how many of its rows are taken. */
typedef struct {
    band_next_fn next;
    void *user;
    ip_image blk;
    int blk_y0, used, read_to;
} feed;

/* Source rows [f->read_to, hi) into dst (packed rows of row bytes, dst's first row being read_to). */
static int read_rows(feed *f, unsigned char *dst, size_t row, int hi, int height, char *err, size_t errlen)
{
    while (f->read_to < hi) {
        if (f->used == f->blk.shape.height) {
            int rc = f->next(f->user, &f->blk, &f->blk_y0, err, errlen);
            if (rc != IP_OK) return rc;
            f->used = 0;
            if (f->blk.shape.height == 0 || f->blk_y0 != f->read_to) {
                snprintf(err, errlen, "the image ended after %d of %d rows", f->read_to, height);
                return IP_EFORMAT;
            }
        }
        int n = f->blk.shape.height - f->used < hi - f->read_to ? f->blk.shape.height - f->used : hi - f->read_to;
        for (int y = 0; y < n; y++, dst += row)
            memcpy(dst, (const char *)f->blk.data + (ptrdiff_t)(f->used + y) * f->blk.stride, row);
        f->used += n;
        f->read_to += n;
    }
    return IP_OK;
}

/* Chunk [lo, hi)'s window into j: the rows the window before (prev, another slot) already holds
 * are copied from it, the rest read from the source. */
static int fill(crew *c, job *j, const job *prev, feed *f, int lo, int hi, char *err, size_t errlen)
{
    band_window win = band_window_of(lo, hi, c->halo, c->height);
    size_t rows = (size_t)(win.in_hi - win.in_lo), out_rows = (size_t)(hi - lo);
    if ((c->in_row && rows > SIZE_MAX / c->in_row) || (c->out_row && out_rows > SIZE_MAX / c->out_row)) {
        snprintf(err, errlen, "a chunk of %zu rows is too large to address", rows);
        return IP_ELIMIT;
    }
    int shared = prev && prev->win.in_hi > win.in_lo ? prev->win.in_hi - win.in_lo : 0;
    if (grow(&j->in, &j->in_cap, rows * c->in_row) != IP_OK || grow(&j->out, &j->out_cap, out_rows * c->out_row) != IP_OK) {
        snprintf(err, errlen, "out of memory for a chunk of %zu rows", rows);
        return IP_ENOMEM;
    }
    if (shared)
        memcpy(j->in, prev->in + (size_t)(win.in_lo - prev->win.in_lo) * c->in_row, (size_t)shared * c->in_row);
    j->win = win;
    return read_rows(f, j->in + (size_t)shared * c->in_row, c->in_row, win.in_hi, c->height, err, errlen);
}

/* The emitter's thread: chunk k's rows to the sink once its worker is done with it, k in order,
 * so encoding goes on while the dealer reads and fills the next chunks. */
static void *emitter_main(void *arg)
{
    crew *c = arg;
    for (int k = 0;; k++) {
        job *j = &c->jobs[k % c->n_jobs];
        double t0 = now_ms();
        pthread_mutex_lock(&c->mu);
        while (!c->failed && !(c->dealt && k >= c->posted) && !(j->chunk == k && j->done))
            pthread_cond_wait(&c->cv, &c->mu);
        c->waits.emit_wait_ms += now_ms() - t0;
        int stop = c->failed || (c->dealt && k >= c->posted), rc = j->rc;
        pthread_mutex_unlock(&c->mu);
        if (stop) break;
        char err[512] = "";
        if (rc != IP_OK) {
            fail(c, rc, j->err);
            break;
        }
        ip_image rows = { j->out, (ptrdiff_t)c->out_row, c->p->steps[c->seg->last - 1].out, 0 };
        rows.shape.height = j->win.own_hi - j->win.own_lo;
        rc = c->sink->rows(c->sink->user, &rows, j->win.own_lo, err, sizeof err);
        if (rc != IP_OK) {
            fail(c, rc, err);
            break;
        }
        pthread_mutex_lock(&c->mu);
        c->emitted = k + 1;
        pthread_cond_broadcast(&c->cv);
        pthread_mutex_unlock(&c->mu);
    }
    return NULL;
}

/* Deals the chunks in order; chunk i fills slot i mod n_jobs once the chunk before in that slot
 * is emitted, so the slots are the reorder queue. */
static void deal(crew *c, feed *f)
{
    int chunk = c->o->chunk_rows > 0 ? c->o->chunk_rows : 1, i = 0;
    const job *prev = NULL;
    char err[512] = "";
    for (int lo = 0; lo < c->height; lo += chunk, i++) {
        job *j = &c->jobs[i % c->n_jobs];
        double t0 = now_ms();
        pthread_mutex_lock(&c->mu);
        while (!c->failed && c->emitted < i - c->n_jobs + 1) pthread_cond_wait(&c->cv, &c->mu);
        c->waits.fill_wait_ms += now_ms() - t0;
        int failed = c->failed;
        pthread_mutex_unlock(&c->mu);
        if (failed) break;
        int hi = c->height - lo < chunk ? c->height : lo + chunk;
        int rc = fill(c, j, prev, f, lo, hi, err, sizeof err);
        if (rc != IP_OK) {
            fail(c, rc, err);
            break;
        }
        post(c, j, i);
        prev = j;
    }
    pthread_mutex_lock(&c->mu);
    c->dealt = 1;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static int start_workers(crew *c, worker_arg *args, char *err, size_t errlen)
{
    for (int i = 0; i < c->o->n_workers; i++) {
        args[i] = (worker_arg){ c, i, NULL };
        if (pthread_create(&c->w[i].tid, NULL, worker_main, &args[i]) != 0) {
            snprintf(err, errlen, "cannot start a band worker thread");
            return IP_ENOMEM;
        }
        c->w[i].started = 1;
    }
    return IP_OK;
}

/* Reductions: every worker's totals into the first's, which finishes them. */
static int merge_and_finish(crew *c, char *err, size_t errlen)
{
    for (int i = 0; i < c->o->n_workers; i++)
        if (!c->w[i].seg) {
            snprintf(err, errlen, "%s", c->w[i].err);
            return IP_EINVAL;
        }
    for (int i = 1; i < c->o->n_workers; i++) band_segment_merge(c->w[0].seg, c->w[i].seg);
    return band_segment_finish(c->w[0].seg, err, errlen);
}

/* The threads end; their segments stay, for the reductions to be merged. */
static void stop_workers(crew *c, band_times *times, size_t *device_peak, band_worker_stat *stats)
{
    pthread_mutex_lock(&c->mu);
    c->quit = 1;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    for (int i = 0; i < c->o->n_workers; i++) {
        worker *w = &c->w[i];
        if (w->started) pthread_join(w->tid, NULL);
        if (stats) stats[i] = (band_worker_stat){ c->o->gpu_ids[i], w->chunks, w->busy_ms };
        if (!w->seg) continue;
        const band_times *t = band_segment_times(w->seg);
        for (int k = 0; k < c->seg->last - c->seg->first; k++) times->stage_ms[k] += t->stage_ms[k];
        *device_peak += band_segment_device_peak(w->seg);
    }
}

static void free_workers(crew *c)
{
    for (int i = 0; i < c->o->n_workers; i++) band_segment_destroy(c->w[i].seg);
    for (int i = 0; i < c->n_jobs; i++) {
        free(c->jobs[i].in);
        free(c->jobs[i].out);
    }
}

int band_workers_run(const plan *p, const band_seg *seg, const band_workers_options *o, band_next_fn next,
                     void *next_user, const band_sink *sink, band_times *times, size_t *device_peak,
                     band_worker_stat *stats, band_workers_waits *waits, char *err, size_t errlen)
{
    memset(times, 0, sizeof *times);
    *device_peak = 0;
    if (o->n_workers < 1 || o->n_workers > BAND_MAX_WORKERS) {
        snprintf(err, errlen, "band workers: 1 to %d workers, not %d", BAND_MAX_WORKERS, o->n_workers);
        return IP_EINVAL;
    }
    crew *c = calloc(1, sizeof *c);
    worker_arg args[BAND_MAX_WORKERS];
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    c->p = p;
    c->seg = seg;
    c->o = o;
    c->in_row = img_row_bytes(&p->steps[seg->first].in);
    c->out_row = img_row_bytes(&p->steps[seg->last - 1].out);
    c->height = p->steps[seg->first].in.height;
    c->halo = seg->halo_sum;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    c->sink = sink;
    c->n_jobs = o->n_workers + EXTRA_SLOTS;
    for (int i = 0; i < c->n_jobs; i++) c->jobs[i].chunk = -1;
    feed f = { next, next_user, { 0 }, 0, 0, 0 };
    pthread_t emitter;
    int rc = start_workers(c, args, err, errlen);
    if (rc == IP_OK && pthread_create(&emitter, NULL, emitter_main, c) != 0) {
        snprintf(err, errlen, "cannot start the band emitter thread");
        rc = IP_ENOMEM;
    }
    if (rc == IP_OK) {
        deal(c, &f);
        pthread_join(emitter, NULL);
        if (c->failed) {
            snprintf(err, errlen, "%s", c->err);
            rc = c->rc;
        }
    }
    stop_workers(c, times, device_peak, stats);
    if (waits) *waits = c->waits;
    if (rc == IP_OK) rc = merge_and_finish(c, err, errlen);
    free_workers(c);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
    return rc;
}

size_t band_workers_bytes(const plan *p, const band_seg *seg, int n_workers, int chunk_rows)
{
    size_t in_row = img_row_bytes(&p->steps[seg->first].in), out_row = img_row_bytes(&p->steps[seg->last - 1].out);
    size_t window = (size_t)chunk_rows + 2 * (size_t)seg->halo_sum;
    return (size_t)(n_workers + EXTRA_SLOTS) * (window * in_row + (size_t)chunk_rows * out_row);
}
