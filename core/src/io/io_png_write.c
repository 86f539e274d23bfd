/* PNG written whole: every band filtered and deflated on its own thread (io_png_deflate.h), then
 * the bands joined into the file in order. */
#include "io/io_png_deflate.h"
#include "io/io_png_internal.h"
#include "io/io_internal.h"
#include <stdlib.h>
#include <string.h>

typedef struct {
    const ip_image *img;
    pngx_plan plan;
} encoder;

/* Row y as PNG stores it (16-bit samples big-endian); into buf when it must be converted. */
static const uint8_t *png_row(const encoder *e, size_t y, uint8_t *buf)
{
    const uint8_t *row = (const uint8_t *)e->img->data + y * (size_t)e->img->stride;
    if (!e->plan.swap16) return row;
    for (size_t i = 0; i + 1 < e->plan.row_bytes; i += 2) buf[i] = row[i + 1], buf[i + 1] = row[i];
    return buf;
}

/* Filters rows [y0, y1) into out, each row after its filter byte. */
static int filter_rows(const encoder *e, size_t y0, size_t y1, uint8_t *out)
{
    size_t n = e->plan.row_bytes;
    uint8_t *scratch = calloc(4, n + 1);
    if (!scratch) return IP_ENOMEM;
    uint8_t *zeros = scratch, *try = scratch + (n + 1), *cur_buf = try + (n + 1), *prev_buf = cur_buf + (n + 1);
    const uint8_t *prev = y0 > 0 ? png_row(e, y0 - 1, prev_buf) : zeros;
    for (size_t y = y0; y < y1; y++) {
        const uint8_t *cur = png_row(e, y, cur_buf);
        pngx_filter_row(cur, prev, n, e->plan.bpp, e->plan.allowed, out + (y - y0) * (n + 1), try);
        if (e->plan.swap16) {
            uint8_t *t = prev_buf;
            prev_buf = cur_buf, cur_buf = t;
        }
        prev = e->plan.swap16 ? prev_buf : cur;
    }
    free(scratch);
    return IP_OK;
}

static int encode_band(const encoder *e, size_t band, pngx_band *out)
{
    size_t n = e->plan.row_bytes + 1, h = (size_t)e->img->shape.height;
    size_t y0 = band * e->plan.band_rows, y1 = y0 + e->plan.band_rows < h ? y0 + e->plan.band_rows : h;
    /* The rows whose filtered bytes end the previous band, for the dictionary. */
    size_t dict_rows = (PNGX_DICT_BYTES + n - 1) / n, yd = y0 > dict_rows ? y0 - dict_rows : 0;
    uint8_t *filtered = malloc((y1 - yd) * n);
    if (!filtered) return IP_ENOMEM;
    int rc = filter_rows(e, yd, y1, filtered);
    size_t before = (y0 - yd) * n, dict_len = before < PNGX_DICT_BYTES ? before : PNGX_DICT_BYTES;
    const uint8_t *data = filtered + before;
    if (!rc) rc = pngx_deflate_band(&e->plan, data - dict_len, dict_len, data, (y1 - y0) * n, band + 1 == e->plan.n_bands, out);
    free(filtered);
    return rc;
}

static int write_file(FILE *f, const encoder *e, const pngx_band *bands, const struct io_meta *meta)
{
    pngx_idat *w;
    int rc = pngx_begin(f, &e->img->shape, meta, e->plan.level, &w);
    for (size_t b = 0; !rc && b < e->plan.n_bands; b++) pngx_idat_band(w, &bands[b]);
    if (!rc) pngx_end(w);
    pngx_idat_free(w);
    return rc;
}

static int encode(FILE *f, const encoder *e, const struct io_meta *meta, int threads, char *err, size_t errlen)
{
    size_t n_bands = e->plan.n_bands;
    pngx_band *bands = calloc(n_bands, sizeof *bands);
    if (!bands) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    long count = (long)n_bands;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (long b = 0; b < count; b++) bands[b].rc = encode_band(e, (size_t)b, &bands[b]);
    int rc = IP_OK;
    for (size_t b = 0; b < n_bands && !rc; b++) rc = bands[b].rc;
    if (!rc) rc = write_file(f, e, bands, meta);
    if (rc) snprintf(err, errlen, rc == IP_ENOMEM ? "out of memory" : "cannot write PNG: compression failed");
    for (size_t b = 0; b < n_bands; b++) free(bands[b].data);
    free(bands);
    return rc;
}

int io_write_png(int fd, const ip_image *img, const io_options *opt, char *err, size_t errlen)
{
    FILE *f = io_fdopen_write(fd, err, errlen);
    if (!f) return IP_EIO;
    encoder e = { img, { 0 } };
    pngx_plan_make(&e.plan, &img->shape, opt->png_level);
    int threads = io_thread_count(opt);
    if ((size_t)threads > e.plan.n_bands) threads = (int)e.plan.n_bands;
    int rc = encode(f, &e, opt->meta, threads, err, errlen);
    if (rc) {
        fclose(f);
        return rc;
    }
    return io_fclose_checked(f, err, errlen);
}
