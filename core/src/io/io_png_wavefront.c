#define _POSIX_C_SOURCE 200809L
#include "io/io_png_internal.h"
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* Narrower strips cost more in waiting than they save. */
#define STRIP_MIN_BYTES 4096

/* Strip k of row y needs row y of strip k-1 (its left neighbours) and row y-1 of its own strip;
 * rows are otherwise independent, so the strips run as a wavefront, each thread one row behind
 * the one on its left. done[k] counts the rows strip k has finished. */
typedef struct {
    const unsigned char *filtered;
    ip_image *img;
    unsigned bpp;
    int strips;
    atomic_int *done;
    atomic_int bad;
} wavefront;

static size_t strip_start(const wavefront *w, int k)
{
    size_t n = (size_t)w->img->stride, pixels = n / w->bpp;
    return pixels * (size_t)k / (size_t)w->strips * w->bpp;
}

static void wait_for(atomic_int *counter, int at_least)
{
    for (unsigned spins = 0; atomic_load_explicit(counter, memory_order_acquire) < at_least; spins++)
        if (spins > 64) sched_yield();
}

static void run_strip(wavefront *w, int k, const uint8_t *zeros)
{
    size_t n = (size_t)w->img->stride, i0 = strip_start(w, k), i1 = strip_start(w, k + 1);
    int h = w->img->shape.height;
    for (int y = 0; y < h; y++) {
        if (k > 0) wait_for(&w->done[k - 1], y + 1);
        const unsigned char *src = w->filtered + (size_t)y * (n + 1);
        uint8_t *row = (uint8_t *)w->img->data + (size_t)y * n;
        const uint8_t *prev = y ? row - n : zeros;
        if (pngx_unfilter_span(src[0], src + 1, row, prev, i0, i1, w->bpp)) atomic_store(&w->bad, 1);
        atomic_store_explicit(&w->done[k], y + 1, memory_order_release);
    }
}

int pngx_unfilter_wavefront(const unsigned char *filtered, ip_image *img, unsigned bpp, int threads, char *err,
                            size_t errlen)
{
    size_t n = (size_t)img->stride;
    int strips = (int)(n / STRIP_MIN_BYTES);
    if (strips > threads) strips = threads;
    if (strips < 1) strips = 1;
    wavefront w = { filtered, img, bpp, strips, calloc((size_t)strips, sizeof(atomic_int)), 0 };
    uint8_t *zeros = calloc(1, n);
    if (!w.done || !zeros) {
        free(w.done);
        free(zeros);
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    for (int k = 0; k < strips; k++) atomic_init(&w.done[k], 0);
    /* Every strip needs a thread of its own running at once, or a strip would wait forever for
     * one that has not started: the loop hands each thread exactly one strip. */
#pragma omp parallel for num_threads(strips) schedule(static, 1)
    for (int k = 0; k < strips; k++) run_strip(&w, k, zeros);
    free(w.done);
    free(zeros);
    if (!atomic_load(&w.bad)) return IP_OK;
    snprintf(err, errlen, "truncated or corrupt PNG: bad filter type");
    return IP_EFORMAT;
}
