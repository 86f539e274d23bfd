#define _POSIX_C_SOURCE 200809L
#include "io_internal.h"
#include "color_cmyk.h"
#include "color_cmyk_image.h"
#include "image.h"
#include "io_jpeg_bands.h"
#include "io_limits.h"
#include "meta_jpeg.h"
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>
#include <jerror.h>

/* libjpeg's error manager, extended with a jump target and our message buffer. */
typedef struct {
    struct jpeg_error_mgr pub;
    struct jpeg_progress_mgr progress;
    jmp_buf jmp;
    int rc;                    /* what the jump returns: IP_EFORMAT, or IP_ELIMIT from the scan limit */
    /* The reader's limits, where its warnings go and whether they are refused; NULL for the writer. */
    const io_options *opt;
    const char *prefix;
    char *err;
    size_t errlen;
} jpeg_error_ctx;

/* Errors that mean a valid file this library cannot decode, rather than a damaged one. */
static int is_unsupported_feature(int code)
{
    return code == JERR_BAD_PRECISION || code == JERR_NOT_COMPILED || code == JERR_CONVERSION_NOTIMPL ||
           code == JERR_NOTIMPL;
}

static void fail_with_message(j_common_ptr cinfo)
{
    jpeg_error_ctx *ctx = (jpeg_error_ctx *)cinfo->err;
    char msg[JMSG_LENGTH_MAX];
    cinfo->err->format_message(cinfo, msg);
    int unsupported = cinfo->is_decompressor && is_unsupported_feature(cinfo->err->msg_code);
    snprintf(ctx->err, ctx->errlen, "%s%s", unsupported ? "unsupported JPEG: " : ctx->prefix, msg);
    ctx->rc = IP_EFORMAT;
    longjmp(ctx->jmp, 1);
}

/* Warnings about header fields libjpeg does not know; the others are damaged data, which libjpeg
 * goes past by filling what it could not decode with gray. */
static int is_header_oddity(int code)
{
    return code == JWRN_ADOBE_XFORM || code == JWRN_JFIF_MAJOR;
}

/* A warning is libjpeg going on past damage: decoded with a warning, or refused under
 * --fail-on warning. */
static void on_jpeg_message(j_common_ptr cinfo, int level)
{
    if (level >= 0) return;
    cinfo->err->num_warnings++;
    jpeg_error_ctx *ctx = (jpeg_error_ctx *)cinfo->err;
    if (!ctx->opt) return;
    char msg[JMSG_LENGTH_MAX], what[JMSG_LENGTH_MAX + 40];
    cinfo->err->format_message(cinfo, msg);
    snprintf(what, sizeof what, "%s%s", is_header_oddity(cinfo->err->msg_code) ? "JPEG: " : ctx->prefix, msg);
    if (io_warn(ctx->opt, 1, what, ctx->err, ctx->errlen) != IP_OK) {
        ctx->rc = IP_EFORMAT;
        longjmp(ctx->jmp, 1);
    }
}

static void on_jpeg_output(j_common_ptr cinfo)
{
    (void)cinfo;
}

/* Progressive files with thousands of scans decode very slowly; real ones have about ten. */
static void on_jpeg_progress(j_common_ptr cinfo)
{
    jpeg_error_ctx *ctx = (jpeg_error_ctx *)cinfo->err;
    if (!cinfo->is_decompressor || !ctx->opt) return;
    if (io_limit_jpeg_scans(ctx->opt, ((j_decompress_ptr)cinfo)->input_scan_number, ctx->err, ctx->errlen)) {
        ctx->rc = IP_ELIMIT;
        longjmp(ctx->jmp, 1);
    }
}

static void init_error_ctx(jpeg_error_ctx *ctx, const io_options *opt, const char *prefix, char *err,
                           size_t errlen)
{
    ctx->opt = opt;
    jpeg_std_error(&ctx->pub);
    ctx->pub.error_exit = fail_with_message;
    ctx->pub.emit_message = on_jpeg_message;
    ctx->pub.output_message = on_jpeg_output;
    ctx->progress.progress_monitor = on_jpeg_progress;
    ctx->prefix = prefix;
    ctx->err = err;
    ctx->errlen = errlen;
}

typedef struct {
    jpeg_error_ctx e;
    struct jpeg_decompress_struct cinfo;
    FILE *f;
    const io_options *opt;
    ip_image *img;
    JOCTET *icc;               /* CMYK: the embedded profile (libjpeg's malloc), freed after a jump too */
    unsigned int icc_len;
    unsigned char *inks;       /* CMYK with a profile: every row's inks, converted at the end */
} jpeg_reader;

static int choose_output_colour(jpeg_reader *r)
{
    switch (r->cinfo.jpeg_color_space) {
    case JCS_GRAYSCALE:
        r->cinfo.out_color_space = JCS_GRAYSCALE;
        return IP_OK;
    case JCS_YCbCr:
    case JCS_RGB:
        r->cinfo.out_color_space = JCS_RGB;
        return IP_OK;
    case JCS_CMYK:
    case JCS_YCCK:   /* libjpeg turns YCCK into CMYK; we turn CMYK into RGB */
        r->cinfo.out_color_space = JCS_CMYK;
        return IP_OK;
    default:
        snprintf(r->e.err, r->e.errlen, "unsupported JPEG: colour space with %d components",
                 r->cinfo.num_components);
        return IP_EFORMAT;
    }
}

/* CMYK rows through a row of libjpeg's own memory (freed with the decompressor, even after a
 * jump out). CMYK JPEG is taken as Adobe (Photoshop) writes it, 0 meaning full ink, with or
 * without its APP14 marker, as Pillow and ImageMagick take it. */
static void read_cmyk_rows(jpeg_reader *r)
{
    JDIMENSION width = r->cinfo.output_width;
    if (r->inks) {
        while (r->cinfo.output_scanline < r->cinfo.output_height) {
            JSAMPROW row = r->inks + (size_t)r->cinfo.output_scanline * width * 4;
            jpeg_read_scanlines(&r->cinfo, &row, 1);
        }
        return;
    }
    JSAMPARRAY cmyk = (*r->cinfo.mem->alloc_sarray)((j_common_ptr)&r->cinfo, JPOOL_IMAGE, width * 4, 1);
    while (r->cinfo.output_scanline < r->cinfo.output_height) {
        unsigned char *dst = (unsigned char *)r->img->data + (size_t)r->cinfo.output_scanline * (size_t)r->img->stride;
        jpeg_read_scanlines(&r->cinfo, cmyk, 1);
        color_cmyk_to_rgb_row(cmyk[0], 4, 1, -1, dst, IP_U8, width);
    }
}

/* CMYK with an embedded profile: the inks are kept whole, to go through it at the end. */
static int prepare_profile(jpeg_reader *r)
{
    if (!jpeg_read_icc_profile(&r->cinfo, &r->icc, &r->icc_len) || !r->icc) return IP_OK;
    size_t w = r->cinfo.output_width, h = r->cinfo.output_height;
    r->inks = w <= SIZE_MAX / 4 / h ? malloc(w * h * 4) : NULL;
    if (r->inks) return IP_OK;
    snprintf(r->e.err, r->e.errlen, "out of memory");
    return IP_ENOMEM;
}

/* A profile left unused is a warning about colour, not damage: --fail-on warning does not refuse it. */
static int inks_to_rgb(jpeg_reader *r)
{
    char why[256];
    int rc = color_cmyk_image_to_rgb(r->icc, r->icc_len, r->inks, (ptrdiff_t)r->cinfo.output_width * 4, 4, 1, -1,
                                     r->img, io_thread_count(r->opt), why, sizeof why);
    if (rc) snprintf(r->e.err, r->e.errlen, "out of memory");
    else if (why[0]) io_warnings_add(r->opt->warnings, 1, why);
    return rc;
}

static int jpeg_decode(jpeg_reader *r)
{
    if (setjmp(r->e.jmp)) return r->e.rc;
    jpeg_create_decompress(&r->cinfo);
    r->cinfo.progress = &r->e.progress;
    jpeg_stdio_src(&r->cinfo, r->f);
    jpeg_save_markers(&r->cinfo, JPEG_APP0 + 2, 0xFFFF);   /* ICC profile pieces */
    jpeg_read_header(&r->cinfo, TRUE);
    int rc = choose_output_colour(r);
    if (rc) return rc;
    jpeg_calc_output_dimensions(&r->cinfo);
    int cmyk = r->cinfo.out_color_space == JCS_CMYK;
    ip_shape shape = { (int32_t)r->cinfo.output_width, (int32_t)r->cinfo.output_height,
                       cmyk ? 3 : r->cinfo.output_components, IP_U8 };
    rc = io_shape_known(r->opt, &shape, io_file_bytes(fileno(r->f)), r->e.err, r->e.errlen);
    if (rc) return rc;
    /* A file of several scans (progressive ones) has them all read here, so the scan limit acts
     * before the image exists. */
    jpeg_start_decompress(&r->cinfo);
    rc = io_image_alloc(r->opt, r->img, &shape, r->e.err, r->e.errlen);
    if (!rc && cmyk) rc = prepare_profile(r);
    if (rc) return rc;
    if (cmyk) read_cmyk_rows(r);
    while (r->cinfo.output_scanline < r->cinfo.output_height) {
        JSAMPROW row = (JSAMPROW)r->img->data + (size_t)r->cinfo.output_scanline * (size_t)r->img->stride;
        jpeg_read_scanlines(&r->cinfo, &row, 1);
    }
    jpeg_finish_decompress(&r->cinfo);
    return r->inks ? inks_to_rgb(r) : IP_OK;
}

int io_read_jpeg(FILE *f, const io_options *opt, ip_image *out, char *err, size_t errlen)
{
    jpeg_reader *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    init_error_ctx(&r->e, opt, "truncated or corrupt JPEG: ", err, errlen);
    r->cinfo.err = &r->e.pub;
    r->f = f;
    r->opt = opt;
    r->img = out;
    int rc = jpeg_decode(r);
    jpeg_destroy_decompress(&r->cinfo);
    free(r->icc);
    free(r->inks);
    free(r);
    if (rc) io_image_free(opt, out);
    return rc;
}

typedef struct {
    jpeg_error_ctx e;
    struct jpeg_compress_struct cinfo;
    FILE *f;
    const ip_image *img;
    const io_options *opt;
    meta_jpeg_output meta;
} jpeg_writer;

/* The settings of every file and band, after jpeg_set_defaults: quality, chroma, density. */
static void configure(void *user, struct jpeg_compress_struct *c)
{
    const jpeg_writer *w = user;
    jpeg_set_quality(c, w->opt->jpeg_quality, TRUE);
    /* At high quality keep full-resolution chroma, as ImageMagick does. */
    if (c->input_components == 3 && w->opt->jpeg_quality >= 90)
        for (int i = 0; i < c->num_components; i++) c->comp_info[i].h_samp_factor = c->comp_info[i].v_samp_factor = 1;
    if (!w->meta.has_density) return;
    c->density_unit = (UINT8)w->meta.density_unit;
    c->X_density = (UINT16)w->meta.x_density;
    c->Y_density = (UINT16)w->meta.y_density;
}

/* The metadata's APP segments, right after the header. */
static void write_segments(void *user, struct jpeg_compress_struct *c)
{
    const jpeg_writer *w = user;
    for (int i = 0; i < w->meta.n; i++)
        jpeg_write_marker(c, w->meta.segments[i].marker, w->meta.segments[i].data, (unsigned)w->meta.segments[i].len);
}

static int jpeg_encode(jpeg_writer *w)
{
    if (setjmp(w->e.jmp)) return IP_EIO;
    const ip_shape *s = &w->img->shape;
    jpeg_create_compress(&w->cinfo);
    jpeg_stdio_dest(&w->cinfo, w->f);
    w->cinfo.image_width = (JDIMENSION)s->width;
    w->cinfo.image_height = (JDIMENSION)s->height;
    w->cinfo.input_components = s->channels;
    w->cinfo.in_color_space = s->channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&w->cinfo);
    configure(w, &w->cinfo);
    jpeg_start_compress(&w->cinfo, TRUE);
    write_segments(w, &w->cinfo);
    while (w->cinfo.next_scanline < w->cinfo.image_height) {
        JSAMPROW row = (JSAMPROW)w->img->data + (size_t)w->cinfo.next_scanline * (size_t)w->img->stride;
        jpeg_write_scanlines(&w->cinfo, &row, 1);
    }
    jpeg_finish_compress(&w->cinfo);
    return IP_OK;
}

int io_write_jpeg(int fd, const ip_image *img, const io_options *opt, char *err, size_t errlen)
{
    FILE *f = io_fdopen_write(fd, err, errlen);
    if (!f) return IP_EIO;
    jpeg_writer *w = calloc(1, sizeof *w);
    if (!w) {
        fclose(f);
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    init_error_ctx(&w->e, NULL, "cannot write JPEG: ", err, errlen);
    w->cinfo.err = &w->e.pub;
    w->f = f;
    w->img = img;
    w->opt = opt;
    /* Large images: bands on all threads (io_jpeg_bands.h), the same file whatever their count. */
    jpeg_band_hooks hooks = { configure, write_segments, w };
    size_t band_rows;
    int rc = meta_jpeg_prepare(opt->meta, &img->shape, &w->meta);
    if (rc) snprintf(err, errlen, "out of memory");
    else if (jpeg_bands_plan(&img->shape, &hooks, &band_rows) > 1)
        rc = jpeg_bands_write(f, img, &hooks, io_thread_count(opt), err, errlen);
    else
        rc = jpeg_encode(w);
    jpeg_destroy_compress(&w->cinfo);
    meta_jpeg_output_free(&w->meta);
    free(w);
    if (rc) {
        fclose(f);
        return rc;
    }
    return io_fclose_checked(f, err, errlen);
}
