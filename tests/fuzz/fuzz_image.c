/* One decoder's entry point on untrusted bytes, through imgpipe's own I/O layer with a run's
 * limits: built once per format (FUZZ_FORMAT_PNG, _TIFF or _JPEG). The bytes are handed over as
 * a file in memory, as the readers take them from io_read; then the streamed reader of the format
 * (io_stream.h) reads them a band at a time, and where the whole reader took the file without a
 * warning, the streamed one must give the same shape and pixels. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include "fuzz_common.h"
#include "base/image.h"
#include "io/io_internal.h"
#include "io/io_stream_internal.h"
#include <string.h>
#include "io/meta.h"

/* An anonymous in-memory file holding the bytes: TIFF reads it with pread on its descriptor. */
static int memory_file(const uint8_t *data, size_t size)
{
    int fd = memfd_create("fuzz", 0);
    if (fd < 0) return -1;
    size_t done = 0;
    while (done < size) {
        ssize_t n = write(fd, data + done, size - done);
        if (n <= 0) {
            close(fd);
            return -1;
        }
        done += (size_t)n;
    }
    return lseek(fd, 0, SEEK_SET) == 0 ? fd : (close(fd), -1);
}

static int decode(int fd, const io_options *opt, ip_image *img, char *err, size_t errlen)
{
#if defined(FUZZ_FORMAT_TIFF)
    return io_read_tiff(fd, opt, img, err, errlen);
#else
    FILE *f = fdopen(dup(fd), "rb");
    if (!f) return IP_EIO;
#if defined(FUZZ_FORMAT_PNG)
    int rc = io_read_png(f, opt, img, err, errlen);
#else
    int rc = io_read_jpeg(f, opt, img, err, errlen);
#endif
    fclose(f);
    return rc;
#endif
}

/* The metadata pass io_read makes before decoding (it shares the descriptor's offset). */
static void read_metadata(int fd)
{
    io_meta m;
    meta_init(&m);
#if defined(FUZZ_FORMAT_TIFF)
    meta_read_tiff(fd, 0, &m);
#else
    FILE *f = fdopen(dup(fd), "rb");
    if (f) {
#if defined(FUZZ_FORMAT_PNG)
        meta_read_png(f, &m);
#else
        meta_read_jpeg(f, &m);
#endif
        fclose(f);
    }
#endif
    meta_clear(&m);
    lseek(fd, 0, SEEK_SET);
}

static int stream_open(int fd, const io_options *opt, uint64_t band_bytes, void **codec, ip_shape *shape,
                       const io_stream_read_ops **ops, char *err, size_t errlen)
{
#if defined(FUZZ_FORMAT_TIFF)
    return io_tiff_stream_open(fd, opt, band_bytes, codec, shape, ops, err, errlen);
#elif defined(FUZZ_FORMAT_PNG)
    return io_png_stream_open(fd, opt, band_bytes, codec, shape, ops, err, errlen);
#else
    return io_jpeg_stream_open(fd, opt, band_bytes, codec, shape, ops, err, errlen);
#endif
}

/* Reads every band (of one row: the most calls); compares the rows with whole (when not NULL)
 * and aborts on a difference. */
static void read_streamed(int fd, const io_options *opt, const ip_image *whole)
{
    void *codec;
    const io_stream_read_ops *ops;
    ip_shape shape = { 0 };
    char err[1024];
    lseek(fd, 0, SEEK_SET);
    int rc = stream_open(fd, opt, 1, &codec, &shape, &ops, err, sizeof err);
    if (rc != IP_OK) return;
    size_t row = img_row_bytes(&shape);
    int same_shape = whole && whole->shape.width == shape.width && whole->shape.height == shape.height &&
                     whole->shape.channels == shape.channels && whole->shape.dtype == shape.dtype;
    ip_image rows;
    int y0;
    while (ops->next(codec, &rows, &y0, err, sizeof err) == IP_OK && rows.shape.height > 0) {
        if (whole && !same_shape) abort();
        if (!whole) continue;
        for (int y = 0; y < rows.shape.height; y++)
            if (memcmp((const char *)whole->data + (size_t)(y0 + y) * whole->stride, (const char *)rows.data + (size_t)y * rows.stride, row))
                abort();
    }
    ops->close(codec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memory_file(data, size);
    if (fd < 0) return 0;
    read_metadata(fd);
    io_options opt = fuzz_io_options();
    io_warnings warned = { 0 };
    opt.warnings = &warned;
    ip_image img = { 0 };
    char err[1024];
    int decoded = decode(fd, &opt, &img, err, sizeof err) == IP_OK;
    if (decoded) {
        /* Touch every row: a decoder that reported success must have filled a whole image. */
        size_t row = img_row_bytes(&img.shape);
        volatile unsigned char sink = 0;
        for (int32_t y = 0; y < img.shape.height; y++) sink ^= ((unsigned char *)img.data)[(size_t)y * (size_t)img.stride + row - 1];
        (void)sink;
    }
    int whole_warned = warned.count;
    warned.count = 0;
    read_streamed(fd, &opt, decoded && !whole_warned ? &img : NULL);
    if (decoded) img_free(&img);
    close(fd);
    return 0;
}
