/* One image's rows dealt to several band executors at once (threads on the CPU, or one per GPU
 * of --gpus, a GPU listed twice getting two): the rows are cut into chunks, each filled in order
 * with the context rows its segment needs (the sum of its halos above and below, clamped at the
 * image) and taken by the next free worker. Rows are decoded once: a context row shared by two
 * chunks is copied from the window before. Outputs reach the sink in order (a finished chunk waits
 * for the ones before; one chunk more than workers is held, so filling goes on while a chunk is
 * emitted), and the reductions' partial results are merged before they finish. */
#ifndef IMGPIPE_BAND_WORKERS_H
#define IMGPIPE_BAND_WORKERS_H
#include "stream/band.h"

#define BAND_MAX_WORKERS 16

typedef struct {
    band_config cfg;          /* each worker's; cfg.band_rows: the rows pushed at a time */
    int n_workers;
    int gpu_ids[BAND_MAX_WORKERS];   /* BAND_ON_GPU: worker i's device */
    int chunk_rows;           /* output rows per chunk (>= 1) */
} band_workers_options;

/* What one worker did: its device (BAND_ON_GPU), the chunks it ran and the wall time it spent
 * running them (uploads, kernels and downloads included: the time its GPU was taken). */
typedef struct {
    int gpu;
    int chunks;
    double busy_ms;
} band_worker_stat;

/* Where the chunks stood still: filling waited for a free slot (the emitting, so the encoder, was
 * behind), emitting waited for the next chunk (the workers, or the reading that feeds them). */
typedef struct {
    double fill_wait_ms, emit_wait_ms;
} band_workers_waits;

typedef int (*band_next_fn)(void *user, ip_image *rows, int *y0, char *err, size_t errlen);

/* Pulls every row of the segment's input from next (rows in order, a height of 0 at the end) and
 * sends every output row to sink, in order. times: the steps' times summed over the workers;
 * device_peak: the workers' peak device bytes, summed; stats (o->n_workers entries, or NULL): each
 * worker's share; waits (or NULL): where the chunks stood still. */
int band_workers_run(const plan *p, const band_seg *seg, const band_workers_options *o, band_next_fn next,
                     void *next_user, const band_sink *sink, band_times *times, size_t *device_peak,
                     band_worker_stat *stats, band_workers_waits *waits, char *err, size_t errlen);

/* Host bytes the chunks in flight hold (windows of input, chunks of output), besides the segments. */
size_t band_workers_bytes(const plan *p, const band_seg *seg, int n_workers, int chunk_rows);
#endif
