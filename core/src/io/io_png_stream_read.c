/* PNG streamed in: libpng reads a row at a time from the file (zlib inflating as it goes) with
 * the same transforms as the whole-image libpng decoder, so palette, tRNS and low-depth gray
 * expand exactly as there. Interlaced files are declined: their rows come in seven passes. */
#define _POSIX_C_SOURCE 200809L
#include "io/io_png_libpng.h"
#include "io/io_internal.h"
#include "io/io_limits.h"
#include "io/io_stream_internal.h"
#include "base/image.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* State lives outside the functions that call setjmp, so nothing is clobbered by longjmp. */
typedef struct {
    pngx_error_ctx e;
    io_options opt;      /* the caller's: limits, fail_on, and where the warnings go */
    FILE *f;
    png_structp png;
    png_infop info;
    io_stream_rows rows;
} png_stream_reader;

static void reader_close(void *codec)
{
    png_stream_reader *r = codec;
    if (!r) return;
    png_destroy_read_struct(&r->png, &r->info, NULL);
    if (r->f) fclose(r->f);
    free(r->rows.band.data);
    free(r);
}

static void read_file(png_structp png, png_bytep out, size_t n)
{
    if (fread(out, 1, n, png_get_io_ptr(png)) != n) png_error(png, "file ends early");
}

static int read_header(png_stream_reader *r, int fd, ip_shape *shape)
{
    if (setjmp(r->e.jmp)) return IP_EFORMAT;
    png_set_read_fn(r->png, r->f, read_file);
    /* Our own pixel limit governs, not libpng's default of a million a side. */
    png_set_user_limits(r->png, 0x7fffffff, 0x7fffffff);
    png_read_info(r->png, r->info);
    if (png_get_interlace_type(r->png, r->info) != PNG_INTERLACE_NONE) {
        snprintf(r->e.err, r->e.errlen, "this PNG is not streamed (interlaced)");
        return IP_EUNSUPPORTED;
    }
    *shape = pngx_decoded_shape(r->png, r->info);
    int rc = io_shape_known(&r->opt, shape, io_file_bytes(fd), r->e.err, r->e.errlen);
    if (!rc)
        rc = pngx_enough_data(png_get_image_width(r->png, r->info), png_get_image_height(r->png, r->info),
                              png_get_channels(r->png, r->info), png_get_bit_depth(r->png, r->info), io_file_bytes(fd),
                              r->e.err, r->e.errlen);
    if (rc) return rc;
    pngx_request_plain_samples(r->png, r->info);
    if (png_get_channels(r->png, r->info) != shape->channels ||
        png_get_rowbytes(r->png, r->info) != img_row_bytes(shape)) {
        snprintf(r->e.err, r->e.errlen, "unsupported PNG: unexpected decoded row size");
        return IP_EFORMAT;
    }
    return IP_OK;
}

/* Rows [next_row, next_row + n) into the band; after the last row, the chunks to IEND. */
static int read_rows(png_stream_reader *r, uint32_t n)
{
    if (setjmp(r->e.jmp)) return IP_EFORMAT;
    for (uint32_t y = 0; y < n; y++)
        png_read_row(r->png, (png_bytep)r->rows.band.data + (size_t)y * r->rows.band.stride, NULL);
    if (r->rows.next_row + n == r->rows.height) png_read_end(r->png, NULL);   /* a file cut before IEND is truncated */
    return IP_OK;
}

static int read_band(void *codec, uint32_t n, char *err, size_t errlen)
{
    png_stream_reader *r = codec;
    r->e.err = err;
    r->e.errlen = errlen;
    return read_rows(r, n);
}

static int reader_next(void *codec, ip_image *rows, int *y0, char *err, size_t errlen)
{
    return io_stream_rows_next(&((png_stream_reader *)codec)->rows, read_band, codec, "PNG", rows, y0, err, errlen);
}

static int reader_block_rows(const void *codec) { return (int)((const png_stream_reader *)codec)->rows.band_rows; }

/* The band, libpng's rows (the row and the previous one, and one for its transforms) and zlib's
 * inflate state (its 32 KiB window and tables). */
static uint64_t reader_held_bytes(const void *codec)
{
    const png_stream_reader *r = codec;
    return (uint64_t)(r->rows.band_rows + 3) * r->rows.band.stride + ((uint64_t)64 << 10);
}

static const io_stream_read_ops read_ops = { reader_next, reader_block_rows, reader_held_bytes, reader_close, NULL, NULL,
                                             NULL };

/* The limits checked on IHDR alone, before libpng reads the chunks up to the image data, as the
 * whole-image reader checks them: the pixel limit and the decoded size against the file's (with
 * the samples a pixel before any tRNS expansion, a lower bound), and whether the file can hold
 * the image data. A first 33 bytes that are no valid IHDR are left to libpng to refuse. */
static int check_ihdr(int fd, const io_options *opt, char *err, size_t errlen)
{
    static const unsigned char signature[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
    static const unsigned channels[7] = { 1, 0, 3, 1, 2, 0, 4 };
    unsigned char h[33];
    if (pread(fd, h, sizeof h, 0) != (ssize_t)sizeof h || memcmp(h, signature, 8) || memcmp(h + 8, "\0\0\0\rIHDR", 8))
        return IP_OK;
    uint32_t crc = (uint32_t)h[29] << 24 | (uint32_t)h[30] << 16 | (uint32_t)h[31] << 8 | h[32];
    if ((uint32_t)crc32(0L, h + 12, 17) != crc) return IP_OK;
    uint32_t width = (uint32_t)h[16] << 24 | (uint32_t)h[17] << 16 | (uint32_t)h[18] << 8 | h[19];
    uint32_t height = (uint32_t)h[20] << 24 | (uint32_t)h[21] << 16 | (uint32_t)h[22] << 8 | h[23];
    unsigned depth = h[24], type = h[25];
    if (width == 0 || height == 0 || width > 0x7fffffffu || height > 0x7fffffffu || type > 6 || !channels[type] ||
        (depth != 1 && depth != 2 && depth != 4 && depth != 8 && depth != 16))
        return IP_OK;
    io_options checks = *opt;
    checks.on_shape = NULL;   /* called once, with the decoded shape, after libpng's header */
    ip_shape lower = { (int32_t)width, (int32_t)height, type == 3 ? 3 : (int)channels[type],
                       depth == 16 ? IP_U16 : IP_U8 };
    uint64_t file_bytes = io_file_bytes(fd);
    int rc = io_shape_known(&checks, &lower, file_bytes, err, errlen);
    return rc ? rc : pngx_enough_data(width, height, channels[type], depth, file_bytes, err, errlen);
}

/* Whether every chunk lies inside the file, up to IEND, read from the chunk headers alone. libpng
 * allocates a chunk's claimed length before reading it (an 898-byte file claiming a 1.6 GB tEXt
 * chunk made it ask for that; found by fuzz_png), and a file damaged after its image data is
 * decoded by the whole reader's salvage: such files are read whole. */
static int chunks_inside(int fd)
{
    uint64_t size = io_file_bytes(fd), at = 8;
    unsigned char h[8];
    while (size >= 12 && at <= size - 12) {
        if (pread(fd, h, sizeof h, (off_t)at) != (ssize_t)sizeof h) return 0;
        uint64_t len = (uint64_t)h[0] << 24 | (uint64_t)h[1] << 16 | (uint64_t)h[2] << 8 | h[3];
        if (len > size - 12 - at) return 0;
        if (memcmp(h + 4, "IEND", 4) == 0) return 1;
        at += 12 + len;
    }
    return 0;
}

int io_png_stream_open(int fd, const io_options *opt, uint64_t band_bytes, void **codec, ip_shape *shape,
                       const io_stream_read_ops **ops, char *err, size_t errlen)
{
    png_stream_reader *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    int rc = check_ihdr(fd, opt, err, errlen);
    if (rc == IP_OK && !chunks_inside(fd)) {
        snprintf(err, errlen, "this PNG is not streamed (a chunk runs past the end of the file, or IEND is missing)");
        rc = IP_EUNSUPPORTED;
    }
    if (rc != IP_OK) {
        free(r);
        return rc;
    }
    r->opt = *opt;
    r->e = (pngx_error_ctx){ .err = err, .errlen = errlen, .opt = &r->opt };
    if (!(r->f = io_stream_read_file(fd, err, errlen))) {
        free(r);
        return IP_EIO;
    }
    r->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &r->e, pngx_on_error, pngx_on_warning);
    if (r->png) r->info = png_create_info_struct(r->png);
    rc = r->png && r->info ? read_header(r, fd, shape) : IP_ENOMEM;
    if (rc == IP_ENOMEM) snprintf(err, errlen, "out of memory");
    if (rc == IP_OK) {
        rc = io_stream_rows_init(&r->rows, shape, band_bytes, err, errlen);
    }
    if (rc != IP_OK) {
        reader_close(r);
        return rc;
    }
    *codec = r;
    *ops = &read_ops;
    return IP_OK;
}
