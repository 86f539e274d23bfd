/* JPEG streamed out, the same bytes as the whole-image writer: an image that writer cuts into
 * bands (io_jpeg_bands.h) gathers here a group of bands at a time, encoded on all threads and
 * joined in order; a smaller one goes through one libjpeg compressor a row at a time. */
#define _POSIX_C_SOURCE 200809L
#include "io/io_jpeg_internal.h"
#include "io/io_jpeg_bands.h"
#include "io/io_internal.h"
#include "io/io_stream_internal.h"
#include "base/image.h"
#include <stdlib.h>
#include <string.h>

#define COMPRESSOR_BYTES ((uint64_t)512 << 10)

/* State lives outside the functions that call setjmp, so nothing is clobbered by longjmp. */
typedef struct {
    jpegx_error_ctx e;
    struct jpeg_compress_struct cinfo;   /* one stream: the image is not cut into bands */
    int created;
    FILE *f;
    io_options opt;                      /* the caller's, for the settings */
    jpegx_settings s;
    jpeg_band_hooks hooks;
    jpeg_bands_layout l;
    int banded, threads;
    ip_image group;                      /* group_bands bands of rows */
    size_t group_bands, group_rows, rows_in_group, next_band;
    jpeg_band_out *done;
} jpeg_stream_writer;

/* A band held three times at most: its rows, and its encoded file in a buffer twice its size. */
static size_t group_bands_for(const jpeg_bands_layout *l, const ip_shape *s, const io_options *opt)
{
    uint64_t band = (uint64_t)l->band_rows * img_row_bytes(s), g = (uint64_t)io_thread_count(opt);
    if (opt->stream_hold_bytes && opt->stream_hold_bytes / (3 * band) < g) g = opt->stream_hold_bytes / (3 * band);
    if (g < 1) g = 1;
    return g > l->n ? l->n : (size_t)g;
}

static int banded_layout(const ip_shape *shape, const io_options *opt, jpeg_bands_layout *l)
{
    jpegx_settings s = { opt, { 0 } };
    jpeg_band_hooks hooks = { jpegx_configure, NULL, &s };
    return jpeg_bands_layout_make(shape, &hooks, l) == 0;
}

uint64_t io_jpeg_stream_write_bytes(const ip_shape *shape, const io_options *opt)
{
    jpeg_bands_layout l;
    /* one compressor: a few MCU rows (up to 16 image rows) of its components, and its tables */
    if (!banded_layout(shape, opt, &l)) return 2 * 16 * (uint64_t)img_row_bytes(shape) + COMPRESSOR_BYTES;
    uint64_t g = group_bands_for(&l, shape, opt);
    return g * 3 * (uint64_t)l.band_rows * img_row_bytes(shape) + g * COMPRESSOR_BYTES;
}

static void writer_free(jpeg_stream_writer *w)
{
    if (w->created) jpeg_destroy_compress(&w->cinfo);
    for (size_t i = 0; w->done && i < w->group_bands; i++) free(w->done[i].data);
    free(w->done);
    free(w->group.data);
    meta_jpeg_output_free(&w->s.meta);
    free(w);
}

static int start_stream(jpeg_stream_writer *w, const ip_shape *s)
{
    if (setjmp(w->e.jmp)) return IP_EIO;
    jpeg_create_compress(&w->cinfo);
    w->created = 1;
    jpegx_compress_start(&w->cinfo, w->f, s, &w->s);
    return IP_OK;
}

static int stream_rows(jpeg_stream_writer *w, const ip_image *rows)
{
    if (setjmp(w->e.jmp)) return IP_EIO;
    for (int y = 0; y < rows->shape.height; y++) {
        JSAMPROW row = (JSAMPROW)rows->data + (ptrdiff_t)y * rows->stride;
        jpeg_write_scanlines(&w->cinfo, &row, 1);
    }
    return IP_OK;
}

static int stream_finish(jpeg_stream_writer *w)
{
    if (setjmp(w->e.jmp)) return IP_EIO;
    jpeg_finish_compress(&w->cinfo);
    return IP_OK;
}

static size_t band_height(const jpeg_stream_writer *w, size_t i)
{
    size_t first = i * w->l.band_rows;
    return w->rows_in_group - first < w->l.band_rows ? w->rows_in_group - first : w->l.band_rows;
}

/* Encodes the gathered bands on all threads and writes them in order. */
static int flush_group(jpeg_stream_writer *w, char *err, size_t errlen)
{
    size_t bands = (w->rows_in_group + w->l.band_rows - 1) / w->l.band_rows;
    long count = (long)bands;
    int threads = (size_t)w->threads < bands ? w->threads : (int)bands;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (long i = 0; i < count; i++)
        jpeg_bands_encode(&w->group, &w->hooks, (size_t)i * w->l.band_rows, band_height(w, (size_t)i),
                          w->next_band == 0 && i == 0, &w->done[i]);
    int rc = IP_OK;
    for (size_t i = 0; i < bands; i++) {
        if (!rc && w->done[i].rc) {
            snprintf(err, errlen, "cannot write JPEG: %s", w->done[i].message);
            rc = w->done[i].rc;
        }
        if (!rc && jpeg_bands_put(w->f, &w->done[i], w->next_band + i, &w->l)) {
            snprintf(err, errlen, "cannot write JPEG: the file could not be written");
            rc = IP_EIO;
        }
        free(w->done[i].data);
        w->done[i] = (jpeg_band_out){ 0 };
    }
    w->next_band += bands;
    w->rows_in_group = 0;
    return rc;
}

static int writer_write(void *codec, const ip_image *rows, char *err, size_t errlen)
{
    jpeg_stream_writer *w = codec;
    if (!w->banded) {
        w->e.err = err;
        w->e.errlen = errlen;
        return stream_rows(w, rows);
    }
    size_t row_bytes = (size_t)w->group.stride;
    for (int y = 0; y < rows->shape.height; y++) {
        memcpy((uint8_t *)w->group.data + w->rows_in_group * row_bytes,
               (const uint8_t *)rows->data + (ptrdiff_t)y * rows->stride, row_bytes);
        if (++w->rows_in_group == w->group_rows) {
            int rc = flush_group(w, err, errlen);
            if (rc != IP_OK) return rc;
        }
    }
    return IP_OK;
}

static int writer_finish(void *codec, char *err, size_t errlen)
{
    jpeg_stream_writer *w = codec;
    w->e.err = err;
    w->e.errlen = errlen;
    int rc = !w->banded ? stream_finish(w) : w->rows_in_group ? flush_group(w, err, errlen) : IP_OK;
    if (rc == IP_OK && w->banded && w->next_band != w->l.n) {
        snprintf(err, errlen, "cannot write JPEG: %zu of %zu bands were written", w->next_band, w->l.n);
        rc = IP_EINVAL;
    }
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
    jpeg_stream_writer *w = codec;
    FILE *f = w->f;
    writer_free(w);
    fclose(f);
}

static const io_stream_write_ops write_ops = { writer_write, writer_finish, writer_abort };

static int setup(jpeg_stream_writer *w, const ip_shape *shape, const io_options *opt, char *err, size_t errlen)
{
    if (meta_jpeg_prepare(opt->meta, shape, &w->s.meta)) {
        snprintf(err, errlen, "cannot write JPEG: out of memory");
        return IP_ENOMEM;
    }
    w->hooks = (jpeg_band_hooks){ jpegx_configure, jpegx_write_segments, &w->s };
    w->banded = jpeg_bands_layout_make(shape, &w->hooks, &w->l) == 0;
    if (!w->banded) return start_stream(w, shape);
    w->group_bands = group_bands_for(&w->l, shape, opt);
    w->group_rows = w->group_bands * w->l.band_rows;
    if (w->group_rows > (size_t)shape->height) w->group_rows = (size_t)shape->height;
    ip_shape group = *shape;
    group.height = (int32_t)w->group_rows;
    w->done = calloc(w->group_bands, sizeof *w->done);
    if (!w->done) {
        snprintf(err, errlen, "cannot write JPEG: out of memory");
        return IP_ENOMEM;
    }
    return img_alloc(&w->group, &group, UINT64_MAX, err, errlen);
}

int io_jpeg_stream_create(int fd, const ip_shape *shape, const io_options *opt, void **codec,
                          const io_stream_write_ops **ops, char *err, size_t errlen)
{
    FILE *f = io_fdopen_write(fd, err, errlen);
    if (!f) return IP_EIO;
    jpeg_stream_writer *w = calloc(1, sizeof *w);
    if (!w) {
        fclose(f);
        snprintf(err, errlen, "cannot write JPEG: out of memory");
        return IP_ENOMEM;
    }
    w->f = f;
    w->opt = *opt;
    w->s.opt = &w->opt;
    w->threads = io_thread_count(opt);
    jpegx_init_error_ctx(&w->e, NULL, "cannot write JPEG: ", err, errlen);
    w->cinfo.err = &w->e.pub;
    int rc = setup(w, shape, opt, err, errlen);
    if (rc != IP_OK) {
        writer_abort(w);
        return rc;
    }
    *codec = w;
    *ops = &write_ops;
    return IP_OK;
}
