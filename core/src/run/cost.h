/* --device auto: an estimate of a plan's time on the CPU and on the GPU, start-up and transfers
 * included, from per-stage costs measured once (each stage's cost_of hint; start-up, transfers
 * and decoding in cost.c). */
#ifndef IMGPIPE_COST_H
#define IMGPIPE_COST_H
#include "io/io.h"
#include "plan/plan.h"

typedef struct {
    double cpu_ms;        /* every stage on the CPU cores */
    double gpu_ms;        /* start-up not hidden by decoding, upload, stages, download */
    double startup_ms;    /* the part of gpu_ms that is GPU start-up */
    double gpu_stages_ms; /* the part of gpu_ms that is the card running the stages */
    double gpu_codec_ms;  /* the part of gpu_ms that is the card encoding the output (PNG, TIFF) */
} cost_estimate;

typedef struct {
    io_format in_format, out_format;
    int cpu_threads;       /* threads the CPU path would use */
    int gpu_jpeg;          /* on the GPU, JPEG is decoded and encoded by nvJPEG */
    int png_gpu;           /* PNG output is filtered and deflated on the card (png_gpu.h) */
    double tiff_card_share; /* the share of a deflate TIFF output's strips the card compresses (tiff_gpu.h) */
    int tiff_level;         /* its deflate level (--tiff-level; 0: the default) */
} cost_setting;

/* The step's cost per input byte: its stage's hint for its state and input shape, or a light window
 * stage's when the stage gives none. */
ip_cost cost_of_step(const plan_step *st);
/* p must be planned (plan_shapes) for the input shape. */
void cost_estimate_plan(const plan *p, const ip_shape *in, const cost_setting *set, cost_estimate *out);
#endif
