/* PNG streamed in: libpng reads a row at a time from the file (zlib inflating as it goes) with
 * the same transforms as the whole-image libpng decoder, so palette, tRNS and low-depth gray
 * expand exactly as there. Interlaced files are declined: their rows come in seven passes. */
#define _POSIX_C_SOURCE 200809L
#include "io_png_libpng.h"
#include "io_internal.h"
#include "io_limits.h"
#include "io_stream_internal.h"
#include "image.h"
#include <stdlib.h>

/* State lives outside the functions that call setjmp, so nothing is clobbered by longjmp. */
typedef struct {
    pngx_error_ctx e;
    io_options opt;      /* the caller's: limits, fail_on, and where the warnings go */
    FILE *f;
    png_structp png;
    png_infop info;
    ip_image band;
    uint32_t height, next_row, band_rows;
    int failed;
} png_stream_reader;

static void reader_close(void *codec)
{
    png_stream_reader *r = codec;
    if (!r) return;
    png_destroy_read_struct(&r->png, &r->info, NULL);
    if (r->f) fclose(r->f);
    free(r->band.data);
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
    if (!rc) rc = pngx_enough_data(r->png, r->info, io_file_bytes(fd), r->e.err, r->e.errlen);
    if (rc) return rc;
    pngx_request_plain_samples(r->png, r->info);
    if (png_get_channels(r->png, r->info) != shape->channels || png_get_rowbytes(r->png, r->info) != img_row_bytes(shape)) {
        snprintf(r->e.err, r->e.errlen, "unsupported PNG: unexpected decoded row size");
        return IP_EFORMAT;
    }
    return IP_OK;
}

/* Rows [next_row, next_row + n) into the band; after the last row, the chunks to IEND. */
static int read_rows(png_stream_reader *r, uint32_t n)
{
    if (setjmp(r->e.jmp)) return IP_EFORMAT;
    for (uint32_t y = 0; y < n; y++) png_read_row(r->png, (png_bytep)r->band.data + (size_t)y * r->band.stride, NULL);
    if (r->next_row + n == r->height) png_read_end(r->png, NULL);   /* a file cut before IEND is truncated */
    return IP_OK;
}

static int reader_next(void *codec, ip_image *rows, int *y0, char *err, size_t errlen)
{
    png_stream_reader *r = codec;
    *rows = r->band;
    *y0 = (int)r->next_row;
    rows->shape.height = 0;
    if (r->failed) {
        snprintf(err, errlen, "truncated or corrupt PNG: read after an error");
        return IP_EFORMAT;
    }
    if (r->next_row >= r->height) return IP_OK;
    uint32_t n = r->height - r->next_row < r->band_rows ? r->height - r->next_row : r->band_rows;
    r->e.err = err;
    r->e.errlen = errlen;
    int rc = read_rows(r, n);
    if (rc) {
        r->failed = 1;
        return rc;
    }
    rows->shape.height = (int32_t)n;
    r->next_row += n;
    return IP_OK;
}

static int reader_block_rows(const void *codec) { return (int)((const png_stream_reader *)codec)->band_rows; }

/* The band, libpng's rows (the row and the previous one, and one for its transforms) and zlib's
 * inflate state (its 32 KiB window and tables). */
static uint64_t reader_held_bytes(const void *codec)
{
    const png_stream_reader *r = codec;
    return (uint64_t)(r->band_rows + 3) * r->band.stride + ((uint64_t)64 << 10);
}

static const io_stream_read_ops read_ops = { reader_next, reader_block_rows, reader_held_bytes, reader_close };

int io_png_stream_open(int fd, const io_options *opt, uint64_t band_bytes, void **codec, ip_shape *shape,
                       const io_stream_read_ops **ops, char *err, size_t errlen)
{
    png_stream_reader *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    r->opt = *opt;
    r->e = (pngx_error_ctx){ .err = err, .errlen = errlen, .opt = &r->opt };
    if (!(r->f = io_stream_read_file(fd, err, errlen))) {
        free(r);
        return IP_EIO;
    }
    r->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &r->e, pngx_on_error, pngx_on_warning);
    if (r->png) r->info = png_create_info_struct(r->png);
    int rc = r->png && r->info ? read_header(r, fd, shape) : IP_ENOMEM;
    if (rc == IP_ENOMEM) snprintf(err, errlen, "out of memory");
    if (rc == IP_OK) {
        r->height = (uint32_t)shape->height;
        rc = io_stream_band_alloc(shape, band_bytes, &r->band, &r->band_rows, err, errlen);
    }
    if (rc != IP_OK) {
        reader_close(r);
        return rc;
    }
    *codec = r;
    *ops = &read_ops;
    return IP_OK;
}
