#define _POSIX_C_SOURCE 200809L
#include "io_png_internal.h"
#include "io_internal.h"
#include "image.h"
#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

/* libpng decodes what our own decoder leaves to it: palette, tRNS, gray below 8 bits and
 * interlaced files, from the file already in memory. */

/* libpng reports errors through these; the error function must not return, so it jumps
 * back to the setjmp in decode. */
typedef struct {
    jmp_buf jmp;
    char *err;
    size_t errlen;
    const io_options *opt;
} png_error_ctx;

static void on_png_error(png_structp png, png_const_charp msg)
{
    png_error_ctx *ctx = png_get_error_ptr(png);
    snprintf(ctx->err, ctx->errlen, "truncated or corrupt PNG: %s", msg);
    longjmp(ctx->jmp, 1);
}

/* Warnings about the image data or a chunk's integrity. The others are about the content of
 * ancillary chunks (a profile, a text keyword) that do not change the pixels, which our own
 * decoder does not even look at. */
static int is_damage(const char *msg)
{
    return strstr(msg, "CRC error") || strstr(msg, "IDAT") || strstr(msg, "image data") ||
           strstr(msg, "Extra compressed data");
}

/* libpng went on past damage (a bad ancillary CRC, extra image data): decoded with a warning, or
 * refused under --fail-on warning. */
static void on_png_warning(png_structp png, png_const_charp msg)
{
    png_error_ctx *ctx = png_get_error_ptr(png);
    if (!is_damage(msg)) return;
    char what[256];
    snprintf(what, sizeof what, "PNG: %s", msg);
    if (io_warn(ctx->opt, 1, what, ctx->err, ctx->errlen) != IP_OK) longjmp(ctx->jmp, 1);
}

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
    png_error_ctx e;
    memory_source src;
    const io_options *opt;
    png_structp png;
    png_infop info;
    png_bytep *rows;
    ip_image *img;
} png_reader;

/* The decoded shape after request_plain_samples, known from the header alone so that the
 * size is checked before libpng allocates its row buffers. */
static ip_shape decoded_shape(png_structp png, png_infop info)
{
    int type = png_get_color_type(png, info);
    int trns = png_get_valid(png, info, PNG_INFO_tRNS) != 0;
    int channels = type == PNG_COLOR_TYPE_GRAY         ? 1 + trns
                   : type == PNG_COLOR_TYPE_GRAY_ALPHA ? 2
                   : type == PNG_COLOR_TYPE_RGB_ALPHA  ? 4
                                                       : 3 + trns;
    ip_shape s = { (int32_t)png_get_image_width(png, info), (int32_t)png_get_image_height(png, info),
                   channels, png_get_bit_depth(png, info) == 16 ? IP_U16 : IP_U8 };
    return s;
}

/* A palette shorter than the indices can reach is padded as Pillow pads it, entry i gray (i, i, i)
 * (libpng would give black), so every index means what it means to Pillow. */
static void pad_palette(png_structp png, png_infop info)
{
    png_colorp plte = NULL;
    int n = 0, full = 1 << png_get_bit_depth(png, info);
    if (png_get_color_type(png, info) != PNG_COLOR_TYPE_PALETTE || !png_get_PLTE(png, info, &plte, &n) || n >= full)
        return;
    png_color padded[256];
    for (int i = 0; i < full; i++)
        padded[i] = i < n ? plte[i] : (png_color){ (png_byte)i, (png_byte)i, (png_byte)i };
    png_set_PLTE(png, info, padded, full);
}

/* Asks libpng for 8 or 16-bit gray, gray+alpha, RGB or RGBA in host byte order. */
static void request_plain_samples(png_structp png, png_infop info)
{
    pad_palette(png, info);
    png_set_expand(png);   /* palette -> RGB, gray below 8 bits -> 8, tRNS -> alpha */
    if (png_get_bit_depth(png, info) == 16 && io_host_is_little_endian()) png_set_swap(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
}

/* Whether the file is large enough to inflate to the header's image (ignoring filter bytes, which
 * keeps it a lower bound for interlaced files too); checked before the image is allocated. */
static int enough_data(png_reader *r)
{
    uint64_t row_bits = (uint64_t)png_get_image_width(r->png, r->info) * png_get_channels(r->png, r->info) *
                        png_get_bit_depth(r->png, r->info);
    uint64_t row_bytes = (row_bits + 7) / 8, height = png_get_image_height(r->png, r->info);
    if (row_bytes == 0 || r->src.size > UINT64_MAX / PNGX_DEFLATE_MAX_RATIO ||
        height <= (uint64_t)r->src.size * PNGX_DEFLATE_MAX_RATIO / row_bytes)
        return IP_OK;
    snprintf(r->e.err, r->e.errlen, "truncated or corrupt PNG: not enough image data");
    return IP_EFORMAT;
}

static int decode(png_reader *r)
{
    if (setjmp(r->e.jmp)) return IP_EFORMAT;
    png_set_read_fn(r->png, &r->src, read_memory);
    /* Our own pixel limit governs, not libpng's default of a million a side. */
    png_set_user_limits(r->png, 0x7fffffff, 0x7fffffff);
    png_read_info(r->png, r->info);
    ip_shape shape = decoded_shape(r->png, r->info);
    int rc = io_shape_known(r->opt, &shape, r->src.size, r->e.err, r->e.errlen);
    if (!rc) rc = enough_data(r);
    if (rc) return rc;
    request_plain_samples(r->png, r->info);
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
    r.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &r.e, on_png_error, on_png_warning);
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
