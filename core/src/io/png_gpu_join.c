#define _POSIX_C_SOURCE 200809L
#include "io/png_gpu_join.h"
#include "io/deflate_walk.h"
#include "io/io_internal.h"
#include <limits.h>
#include <stdio.h>

static int join_band(pngx_band *b, int last)
{
    size_t len = deflate_join_piece(b->data, b->len, last);
    if (!len) return IP_EFORMAT;
    b->len = len;
    return IP_OK;
}

int png_gpu_join_bands(pngx_band *bands, size_t n, int threads, size_t *bad)
{
    if (n > (size_t)LONG_MAX) return IP_ENOMEM;
    long count = (long)n;
    if (threads < 1) threads = 1;
#pragma omp parallel for schedule(dynamic, 4) num_threads(threads)
    for (long k = 0; k < count; k++) bands[k].rc = join_band(&bands[k], k + 1 == count);
    for (size_t k = 0; k < n; k++) {
        if (!bands[k].rc) continue;
        if (bad) *bad = k;
        return bands[k].rc;
    }
    return IP_OK;
}

int png_gpu_join_walked(pngx_band *bands, size_t n, const deflate_walk_result *walks, size_t *bad)
{
    for (size_t k = 0; k < n; k++) {
        const deflate_walk_result *w = &walks[k];
        if (!deflate_walk_fits(w, bands[k].len)) {
            if (bad) *bad = k;
            return IP_EFORMAT;
        }
        bands[k].len = deflate_join_walked(bands[k].data, w, k + 1 == n);
    }
    return IP_OK;
}

static int write_png(FILE *f, const ip_shape *s, const io_options *opt, const pngx_band *bands, size_t n)
{
    pngx_idat *w;
    int rc = pngx_begin(f, s, opt->meta, opt->png_level, &w);
    for (size_t k = 0; !rc && k < n; k++) pngx_idat_band(w, &bands[k]);
    if (!rc) pngx_end(w);
    pngx_idat_free(w);
    return rc;
}

typedef struct {
    const ip_shape *s;
    const io_options *opt;
    const pngx_band *bands;
    size_t n;
} png_file;

/* Fills the temporary behind fd (which it owns) with the file. */
static int fill(int fd, void *ctx, char *err, size_t errlen)
{
    const png_file *p = ctx;
    FILE *f = io_fdopen_write(fd, err, errlen);
    if (!f) return IP_EIO;
    int rc = write_png(f, p->s, p->opt, p->bands, p->n);
    if (rc) {
        snprintf(err, errlen, "out of memory");
        fclose(f);
        return rc;
    }
    return io_fclose_checked(f, err, errlen);
}

int png_gpu_write_bands(const char *path, const ip_shape *s, const io_options *opt, pngx_band *bands, size_t n,
                        const deflate_walk_result *walks, char *err, size_t errlen)
{
    size_t bad = 0;
    int rc = walks ? png_gpu_join_walked(bands, n, walks, &bad)
                   : png_gpu_join_bands(bands, n, io_thread_count(opt), &bad);
    if (rc) {
        snprintf(err, errlen, rc == IP_ENOMEM ? "out of memory"
                              : "cannot write PNG: the GPU's deflate gave band %zu as no valid deflate stream", bad);
        /* the device's output is wrong, not the file: a GPU failure the caller may redo on the CPU */
        return rc == IP_ENOMEM ? IP_ENOMEM : IP_ECUDA;
    }
    png_file file = { s, opt, bands, n };
    return io_write_atomically(path, opt, fill, &file, err, errlen);
}
