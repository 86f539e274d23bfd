#define _POSIX_C_SOURCE 200809L
#include "io_internal.h"
#include "image.h"
#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

/* libpng reports errors through these; the error function must not return, so it jumps
 * back to the setjmp in png_decode / png_encode. */
typedef struct {
    jmp_buf jmp;
    const char *prefix;
    char *err;
    size_t errlen;
} png_error_ctx;

static void on_png_error(png_structp png, png_const_charp msg)
{
    png_error_ctx *ctx = png_get_error_ptr(png);
    snprintf(ctx->err, ctx->errlen, "%s%s", ctx->prefix, msg);
    longjmp(ctx->jmp, 1);
}

static void on_png_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

/* State lives outside the function that calls setjmp, so nothing is clobbered by longjmp. */
typedef struct {
    png_error_ctx e;
    FILE *f;
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

/* Asks libpng for 8 or 16-bit gray, gray+alpha, RGB or RGBA in host byte order. */
static void request_plain_samples(png_structp png, png_infop info)
{
    png_set_expand(png);   /* palette -> RGB, gray below 8 bits -> 8, tRNS -> alpha */
    if (png_get_bit_depth(png, info) == 16 && io_host_is_little_endian()) png_set_swap(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
}

static int png_decode(png_reader *r)
{
    if (setjmp(r->e.jmp)) return IP_EFORMAT;
    png_init_io(r->png, r->f);
    /* Our own pixel limit governs, not libpng's default of a million a side. */
    png_set_user_limits(r->png, 0x7fffffff, 0x7fffffff);
    png_read_info(r->png, r->info);
    ip_shape shape = decoded_shape(r->png, r->info);
    int rc = io_shape_known(r->opt, &shape, r->e.err, r->e.errlen);
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

int io_read_png(FILE *f, const io_options *opt, ip_image *out, char *err, size_t errlen)
{
    png_reader r = { .e = { .prefix = "truncated or corrupt PNG: ", .err = err, .errlen = errlen },
                     .f = f, .opt = opt, .img = out };
    r.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &r.e, on_png_error, on_png_warning);
    if (r.png) r.info = png_create_info_struct(r.png);
    if (!r.png || !r.info) {
        png_destroy_read_struct(&r.png, NULL, NULL);
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    int rc = png_decode(&r);
    png_destroy_read_struct(&r.png, &r.info, NULL);
    free(r.rows);
    if (rc) io_image_free(opt, out);
    return rc;
}

typedef struct {
    png_error_ctx e;
    FILE *f;
    const ip_image *img;
    const io_options *opt;
    png_structp png;
    png_infop info;
} png_writer;

static int png_color_type(int channels)
{
    static const int types[4] = { PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                                  PNG_COLOR_TYPE_RGB_ALPHA };
    return types[channels - 1];
}

static int png_encode(png_writer *w)
{
    if (setjmp(w->e.jmp)) return IP_EIO;
    const ip_shape *s = &w->img->shape;
    int depth = s->dtype == IP_U16 ? 16 : 8;
    png_init_io(w->png, w->f);
    png_set_compression_level(w->png, w->opt->png_level);
    png_set_IHDR(w->png, w->info, (png_uint_32)s->width, (png_uint_32)s->height, depth,
                 png_color_type(s->channels), PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_write_info(w->png, w->info);
    if (depth == 16 && io_host_is_little_endian()) png_set_swap(w->png);
    /* libpng copies each row before transforming it, so the caller's pixels stay intact. */
    for (int32_t y = 0; y < s->height; y++)
        png_write_row(w->png, (png_const_bytep)w->img->data + (size_t)y * (size_t)w->img->stride);
    png_write_end(w->png, NULL);
    return IP_OK;
}

int io_write_png(int fd, const ip_image *img, const io_options *opt, char *err, size_t errlen)
{
    FILE *f = io_fdopen_write(fd, err, errlen);
    if (!f) return IP_EIO;
    png_writer w = { .e = { .prefix = "cannot write PNG: ", .err = err, .errlen = errlen },
                     .f = f, .img = img, .opt = opt };
    w.png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &w.e, on_png_error, on_png_warning);
    if (w.png) w.info = png_create_info_struct(w.png);
    int rc;
    if (!w.png || !w.info) {
        snprintf(err, errlen, "out of memory");
        rc = IP_ENOMEM;
    } else {
        rc = png_encode(&w);
    }
    png_destroy_write_struct(&w.png, &w.info);
    if (rc) {
        fclose(f);
        return rc;
    }
    return io_fclose_checked(f, err, errlen);
}
