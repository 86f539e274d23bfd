#define _POSIX_C_SOURCE 200809L
#include "io/io_png_internal.h"
#include "io/io_internal.h"
#include "base/image.h"
#include "io/io_png_libpng.h"
#include <stdlib.h>
#include <string.h>

/* libpng decodes what our own decoder leaves to it: palette, tRNS, gray below 8 bits and
 * interlaced files, from the file already in memory. */

typedef struct {
    const unsigned char *data;
    size_t size, at;
} memory_source;

static void read_memory(png_structp png, png_bytep out, size_t n)
{
    memory_source *src = png_get_io_ptr(png);
    if (src->size - src->at < n) png_error(png, "file ends early");
    memcpy(out, src->data + src->at, n);
    src->at += n;
}

/* State lives outside the function that calls setjmp, so nothing is clobbered by longjmp. */
typedef struct {
    pngx_error_ctx e;
    memory_source src;
    const io_options *opt;
    png_structp png;
    png_infop info;
    png_bytep *rows;
    ip_image *img;
} png_reader;

static int decode(png_reader *r)
{
    if (setjmp(r->e.jmp)) return IP_EFORMAT;
    png_set_read_fn(r->png, &r->src, read_memory);
    /* Our own pixel limit governs, not libpng's default of a million a side. */
    png_set_user_limits(r->png, 0x7fffffff, 0x7fffffff);
    png_read_info(r->png, r->info);
    ip_shape shape = pngx_decoded_shape(r->png, r->info);
    int rc = io_shape_known(r->opt, &shape, r->src.size, r->e.err, r->e.errlen);
    if (!rc)
        rc = pngx_enough_data(png_get_image_width(r->png, r->info), png_get_image_height(r->png, r->info),
                              png_get_channels(r->png, r->info), png_get_bit_depth(r->png, r->info), r->src.size,
                              r->e.err, r->e.errlen);
    if (rc) return rc;
    pngx_request_plain_samples(r->png, r->info);
    rc = io_image_alloc(r->opt, r->img, &shape, r->e.err, r->e.errlen);
    if (rc) return rc;
    if (png_get_channels(r->png, r->info) != shape.channels ||
        png_get_rowbytes(r->png, r->info) != (size_t)r->img->stride) {
        snprintf(r->e.err, r->e.errlen, "unsupported PNG: unexpected decoded row size");
        return IP_EFORMAT;
    }
    size_t height = (size_t)shape.height;
    r->rows = malloc(height * sizeof *r->rows);
    if (!r->rows) {
        snprintf(r->e.err, r->e.errlen, "out of memory");
        return IP_ENOMEM;
    }
    for (size_t y = 0; y < height; y++) r->rows[y] = (png_bytep)r->img->data + (size_t)y * r->img->stride;
    png_read_image(r->png, r->rows);
    png_read_end(r->png, NULL);   /* a file cut before IEND is truncated, not fine */
    return IP_OK;
}

int pngx_decode_libpng(const unsigned char *data, size_t size, const io_options *opt, ip_image *out,
                       char *err, size_t errlen)
{
    png_reader r = { .e = { .err = err, .errlen = errlen, .opt = opt }, .src = { data, size, 0 }, .opt = opt, .img = out };
    r.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &r.e, pngx_on_error, pngx_on_warning);
    if (r.png) r.info = png_create_info_struct(r.png);
    if (!r.png || !r.info) {
        png_destroy_read_struct(&r.png, NULL, NULL);
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    int rc = decode(&r);
    png_destroy_read_struct(&r.png, &r.info, NULL);
    free(r.rows);
    if (rc) io_image_free(opt, out);
    return rc;
}
