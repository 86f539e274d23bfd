/* --device auto for a folder: the GPU path pays a cost once per run (start-up, each worker's
 * pinned buffers and stream) and a little CPU time per image (staging, waits), and saves the
 * stages' CPU time; for light pipelines the CPU path finishes first (bench/RESULTS.md). */
#ifndef IMGPIPE_FOLDER_DEVICE_H
#define IMGPIPE_FOLDER_DEVICE_H
#include "batch/batch.h"
#include "plan/plan.h"
#include "run/cost.h"

typedef struct {
    int n_images;
    double cpu_s, gpu_s;     /* the wall time in which the paths differ: the stages on the CPU's
                                workers (and the encoding of what the card would encode); the GPU
                                path's start-up, staging and waits (or the card) */
    int card_encodes;        /* the card would encode the output (PNG, or a TIFF's share) */
} folder_estimate;

/* auto: whether the GPU need not even start. The estimate is rough, and the mixed arrangement
 * hides the GPU's start-up behind CPU images, so the GPU is ruled out only when the estimate
 * puts it past twice the CPU's time, or the stages' whole CPU time is under a second (the run
 * would end before the GPU had started and been measured); else auto measures. */
int folder_gpu_ruled_out(const folder_estimate *est);

/* The arithmetic of folder_estimate_run: n images of shape in, each costing *one (planned with
 * gpu_jpeg when nvJPEG would decode the JPEGs: then the CPU path's decoding and encoding are in
 * its cpu_ms, and the GPU path pays the read-ahead's start and its engine, one file at a time). */
void folder_estimate_images(const cost_estimate *one, const ip_shape *in, int n, int workers, io_format out_fmt,
                            int gpu_jpeg, folder_estimate *est);

/* Lists o's input and plans p (a copy) on the first image's shape, read from its header; cores:
 * the cores the workers share. IP_OK with *est filled, or an error when the folder cannot be
 * listed or no image in it can be read (the run then reports it as it would). */
int folder_estimate_run(const batch_options *o, const plan *p, int cores, folder_estimate *est, char *err,
                        size_t errlen);
#endif
