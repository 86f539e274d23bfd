/* PNG streamed out: rows gather into a group of the whole-image writer's bands (io_png_deflate.h:
 * the same cut, the same dictionary, the same chunks, so the same bytes); a full group is filtered
 * and deflated on all threads and written in order. The group buffer holds each row after a slot
 * for its filter byte and is filtered in place; the 32 KiB of filtered data before the group (the
 * first band's dictionary) sit just before it. */
#define _POSIX_C_SOURCE 200809L
#include "io/io_png_deflate.h"
#include "io/io_png_internal.h"
#include "io/io_internal.h"
#include "io/io_stream_internal.h"
#include "base/image.h"
#include <stdlib.h>
#include <string.h>

/* Besides its group: a compressor's state (zlib's window and tables; libdeflate's hash tables),
 * and the IDAT chunk being gathered (at most 1 MiB). */
#define COMPRESSOR_BYTES ((uint64_t)512 << 10)
#define IDAT_BYTES ((uint64_t)1 << 20)

typedef struct {
    FILE *f;
    ip_shape shape;
    pngx_plan plan;
    size_t slot;               /* row_bytes + 1 */
    size_t group_bands, group_rows, rows_in_group;
    size_t next_band;
    uint64_t filtered_total;   /* filtered bytes deflated so far */
    size_t tail_len;           /* of them, those kept before the group */
    uint8_t *buf;              /* PNGX_DICT_BYTES, then group_rows slots */
    uint8_t *prev_rows;        /* (group_bands + 1) unfiltered rows: before each band of the group */
    int has_prev;
    int threads;
    pngx_band *done;
    pngx_idat *idat;
} png_stream_writer;

static size_t group_bands_for(const pngx_plan *p, const io_options *opt)
{
    uint64_t band = (uint64_t)p->band_rows * (p->row_bytes + 1), hold = opt->stream_hold_bytes;
    uint64_t g = (uint64_t)io_thread_count(opt);
    /* a band held twice: its rows, and its deflated data until it is written */
    if (hold && hold / (2 * band) < g) g = hold / (2 * band);
    if (g < 1) g = 1;
    if (g > p->n_bands) g = p->n_bands;
    return (size_t)g;
}

uint64_t io_png_stream_write_bytes(const ip_shape *shape, const io_options *opt)
{
    pngx_plan p;
    pngx_plan_make(&p, shape, opt->png_level);
    uint64_t g = group_bands_for(&p, opt), rows = g * p.band_rows;
    if (rows > (uint64_t)shape->height) rows = (uint64_t)shape->height;
    uint64_t threads = (uint64_t)io_thread_count(opt) < g ? (uint64_t)io_thread_count(opt) : g;
    uint64_t group = rows * (p.row_bytes + 1), idat = group < IDAT_BYTES ? group + 64 : IDAT_BYTES;
    return group * 2 + PNGX_DICT_BYTES + (g + 1) * p.row_bytes + threads * COMPRESSOR_BYTES + idat;
}

static void writer_free(png_stream_writer *w)
{
    for (size_t i = 0; w->done && i < w->group_bands; i++) free(w->done[i].data);
    free(w->done);
    free(w->buf);
    free(w->prev_rows);
    pngx_idat_free(w->idat);
    free(w);
}

static uint8_t *slot_of(const png_stream_writer *w, size_t row) { return w->buf + PNGX_DICT_BYTES + row * w->slot; }

/* Filters band i of the group in place, from its last row up, so that every row's unfiltered
 * neighbour above is still there; the row above the band's first is prev_rows[i]. */
static int filter_band(png_stream_writer *w, size_t i, size_t rows)
{
    size_t n = w->plan.row_bytes, first = i * w->plan.band_rows;
    uint8_t *scratch = malloc(2 * w->slot);
    if (!scratch) return IP_ENOMEM;
    for (size_t y = first + rows; y-- > first;) {
        const uint8_t *prev = y > first ? slot_of(w, y - 1) + 1 : w->prev_rows + i * n;
        pngx_filter_row(slot_of(w, y) + 1, prev, n, w->plan.bpp, w->plan.allowed, scratch, scratch + w->slot);
        memcpy(slot_of(w, y), scratch, w->slot);
    }
    free(scratch);
    return IP_OK;
}

static int deflate_group_band(png_stream_writer *w, size_t i, size_t rows)
{
    uint8_t *data = slot_of(w, i * w->plan.band_rows);
    uint64_t before = w->filtered_total + (uint64_t)i * w->plan.band_rows * w->slot;
    size_t dict_len = before < PNGX_DICT_BYTES ? (size_t)before : PNGX_DICT_BYTES;
    int last = w->next_band + i + 1 == w->plan.n_bands;
    return pngx_deflate_band(&w->plan, data - dict_len, dict_len, data, rows * w->slot, last, &w->done[i]);
}

static size_t band_height(const png_stream_writer *w, size_t i)
{
    size_t first = i * w->plan.band_rows;
    return w->rows_in_group - first < w->plan.band_rows ? w->rows_in_group - first : w->plan.band_rows;
}

/* Filters and deflates the gathered rows, writes them, and keeps the group's last unfiltered row
 * and the end of its filtered data for the next group. */
static int flush_group(png_stream_writer *w, char *err, size_t errlen)
{
    size_t n = w->plan.row_bytes, bands = (w->rows_in_group + w->plan.band_rows - 1) / w->plan.band_rows;
    if (!w->has_prev) memset(w->prev_rows, 0, n);
    for (size_t i = 0; i < bands; i++)
        memcpy(w->prev_rows + (i + 1) * n, slot_of(w, i * w->plan.band_rows + band_height(w, i) - 1) + 1, n);
    int threads = (size_t)w->threads < bands ? w->threads : (int)bands, failed = IP_OK;
    long count = (long)bands;
#pragma omp parallel num_threads(threads)
    {
#pragma omp for schedule(dynamic, 1)
        for (long i = 0; i < count; i++)
            if (filter_band(w, (size_t)i, band_height(w, (size_t)i)) != IP_OK) {
#pragma omp atomic write
                failed = IP_ENOMEM;
            }
        /* the implicit barrier: every band's dictionary is filtered before any is deflated */
#pragma omp for schedule(dynamic, 1)
        for (long i = 0; i < count; i++) {
            int failed_so_far;
#pragma omp atomic read
            failed_so_far = failed;
            int rc = failed_so_far ? IP_OK : deflate_group_band(w, (size_t)i, band_height(w, (size_t)i));
            if (rc != IP_OK) {
#pragma omp atomic write
                failed = rc;
            }
        }
    }
    for (size_t i = 0; i < bands; i++) {
        if (!failed) pngx_idat_band(w->idat, &w->done[i]);
        free(w->done[i].data);
        w->done[i] = (pngx_band){ 0 };
    }
    if (failed) {
        snprintf(err, errlen, "cannot write PNG: %s", failed == IP_ENOMEM ? "out of memory" : "compression failed");
        return failed;
    }
    size_t group_bytes = w->rows_in_group * w->slot;
    size_t keep = w->tail_len + group_bytes < PNGX_DICT_BYTES ? w->tail_len + group_bytes : PNGX_DICT_BYTES;
    memmove(w->buf + PNGX_DICT_BYTES - keep, w->buf + PNGX_DICT_BYTES + group_bytes - keep, keep);
    w->tail_len = keep;
    memcpy(w->prev_rows, w->prev_rows + bands * n, n);
    w->has_prev = 1;
    w->filtered_total += group_bytes;
    w->next_band += bands;
    w->rows_in_group = 0;
    return IP_OK;
}

static void copy_row(const png_stream_writer *w, uint8_t *dst, const uint8_t *src)
{
    if (!w->plan.swap16) {
        memcpy(dst, src, w->plan.row_bytes);
        return;
    }
    for (size_t i = 0; i + 1 < w->plan.row_bytes; i += 2) dst[i] = src[i + 1], dst[i + 1] = src[i];
}

static int writer_write(void *codec, const ip_image *rows, char *err, size_t errlen)
{
    png_stream_writer *w = codec;
    for (int y = 0; y < rows->shape.height; y++) {
        copy_row(w, slot_of(w, w->rows_in_group) + 1, (const uint8_t *)rows->data + (ptrdiff_t)y * rows->stride);
        if (++w->rows_in_group == w->group_rows) {
            int rc = flush_group(w, err, errlen);
            if (rc != IP_OK) return rc;
        }
    }
    return IP_OK;
}

static int writer_finish(void *codec, char *err, size_t errlen)
{
    png_stream_writer *w = codec;
    int rc = w->rows_in_group ? flush_group(w, err, errlen) : IP_OK;
    if (rc == IP_OK && w->next_band != w->plan.n_bands) {
        snprintf(err, errlen, "cannot write PNG: %zu of %zu bands were written", w->next_band, w->plan.n_bands);
        rc = IP_EINVAL;
    }
    if (rc == IP_OK) pngx_end(w->idat);
    FILE *f = w->f;
    writer_free(w);
    if (rc != IP_OK) {
        fclose(f);
        return rc;
    }
    return io_fclose_checked(f, err, errlen);
}

static void writer_abort(void *codec)
{
    png_stream_writer *w = codec;
    fclose(w->f);
    writer_free(w);
}

static const io_stream_write_ops write_ops = { writer_write, writer_finish, writer_abort };

int io_png_stream_create(int fd, const ip_shape *shape, const io_options *opt, void **codec,
                         const io_stream_write_ops **ops, char *err, size_t errlen)
{
    FILE *f = io_fdopen_write(fd, err, errlen);
    if (!f) return IP_EIO;
    png_stream_writer *w = calloc(1, sizeof *w);
    if (!w) {
        fclose(f);
        snprintf(err, errlen, "cannot write PNG: out of memory");
        return IP_ENOMEM;
    }
    w->f = f;
    w->shape = *shape;
    pngx_plan_make(&w->plan, shape, opt->png_level);
    w->slot = w->plan.row_bytes + 1;
    w->threads = io_thread_count(opt);
    w->group_bands = group_bands_for(&w->plan, opt);
    w->group_rows = w->group_bands * w->plan.band_rows;
    if (w->group_rows > (size_t)shape->height) w->group_rows = (size_t)shape->height;
    w->buf = malloc(PNGX_DICT_BYTES + w->group_rows * w->slot);
    w->prev_rows = malloc((w->group_bands + 1) * w->plan.row_bytes);
    w->done = calloc(w->group_bands, sizeof *w->done);
    int rc = w->buf && w->prev_rows && w->done ? pngx_begin(f, shape, opt->meta, opt->png_level, &w->idat) : IP_ENOMEM;
    if (rc != IP_OK) {
        snprintf(err, errlen, "cannot write PNG: out of memory");
        writer_abort(w);
        return rc;
    }
    *codec = w;
    *ops = &write_ops;
    return IP_OK;
}
