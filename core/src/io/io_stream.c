/* Streaming codecs: format dispatch, and the output's temporary file renamed into place only
 * when every row is written. */
#define _POSIX_C_SOURCE 200809L
#include "io/io_stream.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "base/image.h"
#include "io/io_internal.h"
#include "io/io_stream_internal.h"

struct io_stream_reader {
    int fd;
    void *codec;
    const io_stream_read_ops *ops;
};

struct io_stream_writer {
    char *path, *tmp;
    void *codec;
    const io_stream_write_ops *ops;
    int rows_written, height;
    io_options told;   /* only temp_slot: cleared when the temporary is gone */
};

int io_stream_reads(io_format fmt) { return fmt == IO_FMT_TIFF || fmt == IO_FMT_PNG || fmt == IO_FMT_JPEG; }
int io_stream_writes(io_format fmt) { return fmt == IO_FMT_TIFF || fmt == IO_FMT_PNG || fmt == IO_FMT_JPEG; }

uint64_t io_stream_write_bytes(const char *path, const ip_shape *shape, const io_options *opt)
{
    switch (io_format_from_ext(path)) {
    case IO_FMT_TIFF: return io_tiff_stream_write_bytes(shape, opt);
    case IO_FMT_PNG: return io_png_stream_write_bytes(shape, opt);
    case IO_FMT_JPEG: return io_jpeg_stream_write_bytes(shape, opt);
    default: return 0;
    }
}

uint32_t io_stream_band_rows(const ip_shape *shape, uint64_t band_bytes)
{
    const uint64_t most = (uint64_t)16 << 20;
    uint64_t target = band_bytes && band_bytes < most ? band_bytes : most;
    uint64_t rows = target / img_row_bytes(shape);
    return rows < 1 ? 1 : rows > (uint64_t)shape->height ? (uint32_t)shape->height : (uint32_t)rows;
}

int io_stream_rows_init(io_stream_rows *s, const ip_shape *shape, uint64_t band_bytes, char *err, size_t errlen)
{
    ip_shape band = *shape;
    *s = (io_stream_rows){ .height = (uint32_t)shape->height, .band_rows = io_stream_band_rows(shape, band_bytes) };
    band.height = (int32_t)s->band_rows;
    return img_alloc(&s->band, &band, UINT64_MAX, err, errlen);
}

int io_stream_rows_next(io_stream_rows *s, int (*read)(void *codec, uint32_t n, char *err, size_t errlen), void *codec,
                        const char *what, ip_image *rows, int *y0, char *err, size_t errlen)
{
    *rows = s->band;
    *y0 = (int)s->next_row;
    rows->shape.height = 0;
    if (s->failed) {
        snprintf(err, errlen, "truncated or corrupt %s: read after an error", what);
        return IP_EFORMAT;
    }
    if (s->next_row >= s->height) return IP_OK;
    uint32_t n = s->height - s->next_row < s->band_rows ? s->height - s->next_row : s->band_rows;
    int rc = read(codec, n, err, errlen);
    if (rc) {
        s->failed = 1;
        return rc;
    }
    rows->shape.height = (int32_t)n;
    s->next_row += n;
    return IP_OK;
}

FILE *io_stream_read_file(int fd, char *err, size_t errlen)
{
    char why[128];
    int own = dup(fd);
    FILE *f = own >= 0 ? fdopen(own, "rb") : NULL;
    if (!f) {
        snprintf(err, errlen, "cannot read: %s", io_strerror(errno, why, sizeof why));
        if (own >= 0) close(own);
    }
    return f;
}

static int open_codec(io_format fmt, int fd, const io_options *opt, uint64_t band_bytes, void **codec, ip_shape *shape,
                      const io_stream_read_ops **ops, char *err, size_t errlen)
{
    if (fmt == IO_FMT_PNG) return io_png_stream_open(fd, opt, band_bytes, codec, shape, ops, err, errlen);
    if (fmt == IO_FMT_JPEG) return io_jpeg_stream_open(fd, opt, band_bytes, codec, shape, ops, err, errlen);
    return io_tiff_stream_open(fd, opt, band_bytes, codec, shape, ops, err, errlen);
}

static int create_codec(io_format fmt, int fd, const ip_shape *shape, const io_options *opt, void **codec,
                        const io_stream_write_ops **ops, char *err, size_t errlen)
{
    if (fmt == IO_FMT_PNG) return io_png_stream_create(fd, shape, opt, codec, ops, err, errlen);
    if (fmt == IO_FMT_JPEG) return io_jpeg_stream_create(fd, shape, opt, codec, ops, err, errlen);
    return io_tiff_stream_create(fd, shape, opt, codec, ops, err, errlen);
}

int io_stream_open_input(io_input *in, const io_options *opt, uint64_t band_bytes, io_stream_reader **out,
                         ip_shape *shape, char *err, size_t errlen)
{
    *out = NULL;
    io_format fmt = in->format;
    if (!io_stream_reads(fmt)) {
        snprintf(err, errlen, "%s files are not read in bands", fmt == IO_FMT_UNKNOWN ? "these" : io_format_name(fmt));
        return IP_EUNSUPPORTED;
    }
    /* only a TIFF has pages past the first: the whole-image reader says so */
    if (fmt != IO_FMT_TIFF && opt->page != 0) {
        snprintf(err, errlen, "a %s file has one page", io_format_name(fmt));
        return IP_EUNSUPPORTED;
    }
    io_stream_reader *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    char why[128];
    /* the input's own descriptor, from its start (the readers read from where it stands) */
    r->fd = dup(fileno(in->file));
    if (r->fd < 0 || lseek(r->fd, 0, SEEK_SET) != 0) {
        snprintf(err, errlen, "cannot read: %s", io_strerror(errno, why, sizeof why));
        if (r->fd >= 0) close(r->fd);
        free(r);
        return IP_EIO;
    }
    int rc = open_codec(fmt, r->fd, opt, band_bytes, &r->codec, shape, &r->ops, err, errlen);
    if (rc != IP_OK) {
        close(r->fd);
        free(r);
        return rc;
    }
    *out = r;
    return IP_OK;
}

int io_stream_open(const char *path, const io_options *opt, uint64_t band_bytes, io_stream_reader **out,
                   ip_shape *shape, char *err, size_t errlen)
{
    *out = NULL;
    io_input in;
    if (io_input_open(path, &in, err, errlen) != IP_OK) {   /* the whole-image reader says why */
        snprintf(err, errlen, "these files are not read in bands");
        return IP_EUNSUPPORTED;
    }
    int rc = io_stream_open_input(&in, opt, band_bytes, out, shape, err, errlen);
    io_input_close(&in);
    return rc;
}

int io_stream_next(io_stream_reader *r, ip_image *rows, int *y0, char *err, size_t errlen)
{
    return r->ops->next(r->codec, rows, y0, err, errlen);
}

int io_stream_next_into(io_stream_reader *r, ip_image *dst, int *y0, char *err, size_t errlen)
{
    if (r->ops->next_into) return r->ops->next_into(r->codec, dst, y0, err, errlen);
    snprintf(err, errlen, "only a TIFF's bands are decoded into the caller's rows");
    return IP_EUNSUPPORTED;
}

int io_stream_reads_into(const io_stream_reader *r) { return r->ops->next_into != NULL; }

int io_stream_block_rows(const io_stream_reader *r) { return r->ops->block_rows(r->codec); }

uint64_t io_stream_held_bytes(const io_stream_reader *r) { return r->ops->held_bytes(r->codec); }

int io_stream_set_band_decoder(io_stream_reader *r, const tiff_band_decoder *d, char *why, size_t whylen)
{
    if (r->ops->set_band_decoder) return r->ops->set_band_decoder(r->codec, d, why, whylen);
    snprintf(why, whylen, "only a TIFF's bands are decoded beside libtiff");
    return IP_EUNSUPPORTED;
}

void io_stream_band_decode_stat(const io_stream_reader *r, tiff_band_decode_stat *st)
{
    memset(st, 0, sizeof *st);
    if (r->ops->band_decode_stat) r->ops->band_decode_stat(r->codec, st);
}

void io_stream_close(io_stream_reader *r)
{
    if (!r) return;
    r->ops->close(r->codec);
    close(r->fd);
    free(r);
}

static void writer_free(io_stream_writer *w)
{
    if (w->tmp) io_temp_done(&w->told, w->tmp);
    free(w->path);
    free(w->tmp);
    free(w);
}

int io_stream_create(const char *path, const ip_shape *shape, const io_options *opt, io_stream_writer **out,
                     char *err, size_t errlen)
{
    *out = NULL;
    io_format fmt = io_format_from_ext(path);
    int rc = io_check_writable(fmt, shape, err, errlen);
    if (rc != IP_OK) return rc;
    if (!io_stream_writes(fmt)) {
        snprintf(err, errlen, "%s files are not written in bands", io_format_name(fmt));
        return IP_EUNSUPPORTED;
    }
    io_stream_writer *w = calloc(1, sizeof *w);
    size_t len = strlen(path) + 1;
    if (w) w->path = malloc(len);
    if (!w || !w->path) {
        free(w);
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    memcpy(w->path, path, len);
    w->height = shape->height;
    if (opt) {
        w->told.temp_slot = opt->temp_slot;
    }
    int fd;
    rc = io_temp_open(path, &w->told, &w->tmp, &fd, err, errlen);
    if (rc == IP_OK) {
        rc = create_codec(fmt, fd, shape, opt, &w->codec, &w->ops, err, errlen);   /* owns fd */
        if (rc != IP_OK) unlink(w->tmp);
    }
    if (rc != IP_OK) {
        writer_free(w);
        return rc;
    }
    *out = w;
    return IP_OK;
}

int io_stream_write(io_stream_writer *w, const ip_image *rows, int y0, char *err, size_t errlen)
{
    if (y0 != w->rows_written || rows->shape.height > w->height - y0) {
        snprintf(err, errlen, "rows %d.. written out of order", y0);
        return IP_EINVAL;
    }
    int rc = w->ops->write(w->codec, rows, err, errlen);
    if (rc == IP_OK) w->rows_written += rows->shape.height;
    return rc;
}

int io_stream_finish(io_stream_writer *w, char *err, size_t errlen)
{
    int rc = IP_OK;
    char why[128];
    if (w->rows_written != w->height) {
        snprintf(err, errlen, "only %d of %d rows were written", w->rows_written, w->height);
        w->ops->abort(w->codec);
        rc = IP_EINVAL;
    } else {
        rc = w->ops->finish(w->codec, err, errlen);
    }
    if (rc == IP_OK && rename(w->tmp, w->path) != 0) {
        snprintf(err, errlen, "cannot move the finished file into place: %s", io_strerror(errno, why, sizeof why));
        rc = IP_EIO;
    }
    if (rc != IP_OK) unlink(w->tmp);
    writer_free(w);
    return rc;
}

void io_stream_abort(io_stream_writer *w)
{
    if (!w) return;
    w->ops->abort(w->codec);
    unlink(w->tmp);
    writer_free(w);
}
