#define _POSIX_C_SOURCE 200809L
#include "io/io_jpeg_internal.h"
#include "io/io_internal.h"
#include "io/io_limits.h"
#include "io/color_cmyk.h"
#include <jerror.h>

/* Errors that mean a valid file this library cannot decode, rather than a damaged one. */
static int is_unsupported_feature(int code)
{
    return code == JERR_BAD_PRECISION || code == JERR_NOT_COMPILED || code == JERR_CONVERSION_NOTIMPL ||
           code == JERR_NOTIMPL || code == JERR_ARITH_NOTIMPL;
}

/* The coding process a start-of-frame marker libjpeg-turbo refuses declares (ITU T.81, B.1.1.3). */
static const char *refused_process(int marker)
{
    switch (marker) {
    case 0xC3: return "lossless JPEG";
    case 0xC5: case 0xC6: case 0xC7: return "hierarchical JPEG";
    case 0xCB: return "lossless arithmetic-coded JPEG";
    case 0xCD: case 0xCE: case 0xCF: return "hierarchical arithmetic-coded JPEG";
    default: return "JPEG of a reserved coding process";
    }
}

/* A frame of a process libjpeg-turbo does not decode is a file of another kind, not damage: the
 * message says which, where libjpeg's says "Unsupported JPEG process: SOF type 0xc3". */
static void fail_with_message(j_common_ptr cinfo)
{
    jpegx_error_ctx *ctx = (jpegx_error_ctx *)cinfo->err;
    int code = cinfo->err->msg_code;
    if (cinfo->is_decompressor && code == JERR_SOF_UNSUPPORTED) {
        int marker = cinfo->err->msg_parm.i[0];
        snprintf(ctx->err, ctx->errlen, "%s (SOF%d) is not supported", refused_process(marker), marker - 0xC0);
    } else {
        char msg[JMSG_LENGTH_MAX];
        cinfo->err->format_message(cinfo, msg);
        int unsupported = cinfo->is_decompressor && is_unsupported_feature(code);
        snprintf(ctx->err, ctx->errlen, "%s%s", unsupported ? "unsupported JPEG: " : ctx->prefix, msg);
    }
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
    jpegx_error_ctx *ctx = (jpegx_error_ctx *)cinfo->err;
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
    jpegx_error_ctx *ctx = (jpegx_error_ctx *)cinfo->err;
    if (!cinfo->is_decompressor || !ctx->opt) return;
    if (io_limit_jpeg_scans(ctx->opt, ((j_decompress_ptr)cinfo)->input_scan_number, ctx->err, ctx->errlen)) {
        ctx->rc = IP_ELIMIT;
        longjmp(ctx->jmp, 1);
    }
}

void jpegx_init_error_ctx(jpegx_error_ctx *ctx, const io_options *opt, const char *prefix, char *err, size_t errlen)
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

int jpegx_choose_output_colour(struct jpeg_decompress_struct *c, char *err, size_t errlen)
{
    switch (c->jpeg_color_space) {
    case JCS_GRAYSCALE:
        c->out_color_space = JCS_GRAYSCALE;
        return IP_OK;
    case JCS_YCbCr:
    case JCS_RGB:
        c->out_color_space = JCS_RGB;
        return IP_OK;
    case JCS_CMYK:
    case JCS_YCCK:   /* libjpeg turns YCCK into CMYK; we turn CMYK into RGB */
        c->out_color_space = JCS_CMYK;
        return IP_OK;
    default:
        snprintf(err, errlen, "unsupported JPEG: colour space with %d components",
                 c->num_components);
        return IP_EFORMAT;
    }
}

void jpegx_configure(void *user, struct jpeg_compress_struct *c)
{
    const jpegx_settings *w = user;
    jpeg_set_quality(c, w->opt->jpeg_quality, TRUE);
    /* At high quality keep full-resolution chroma, as ImageMagick does. */
    if (c->input_components == 3 && w->opt->jpeg_quality >= 90)
        for (int i = 0; i < c->num_components; i++) c->comp_info[i].h_samp_factor = c->comp_info[i].v_samp_factor = 1;
    if (!w->meta.has_density) return;
    c->density_unit = (UINT8)w->meta.density_unit;
    c->X_density = (UINT16)w->meta.x_density;
    c->Y_density = (UINT16)w->meta.y_density;
}

void jpegx_write_segments(void *user, struct jpeg_compress_struct *c)
{
    const jpegx_settings *w = user;
    for (int i = 0; i < w->meta.n; i++)
        jpeg_write_marker(c, w->meta.segments[i].marker, w->meta.segments[i].data, (unsigned)w->meta.segments[i].len);
}

int jpegx_read_start(jpegx_error_ctx *e, struct jpeg_decompress_struct *c, FILE *f, const io_options *opt,
                     ip_shape *shape, int *cmyk)
{
    c->progress = &e->progress;
    jpeg_stdio_src(c, f);
    jpeg_save_markers(c, JPEG_APP0 + 2, 0xFFFF);   /* ICC profile pieces: CMYK goes through them */
    jpeg_read_header(c, TRUE);
    int rc = jpegx_choose_output_colour(c, e->err, e->errlen);
    if (rc) return rc;
    jpeg_calc_output_dimensions(c);
    *cmyk = c->out_color_space == JCS_CMYK;
    *shape = (ip_shape){ (int32_t)c->output_width, (int32_t)c->output_height, *cmyk ? 3 : c->output_components, IP_U8 };
    return io_shape_known(opt, shape, io_file_bytes(fileno(f)), e->err, e->errlen);
}

void jpegx_cmyk_row(const unsigned char *cmyk, unsigned char *rgb, unsigned width)
{
    color_cmyk_to_rgb_row(cmyk, 4, 1, -1, rgb, IP_U8, width);
}

void jpegx_compress_start(struct jpeg_compress_struct *c, FILE *f, const ip_shape *shape, jpegx_settings *s)
{
    jpeg_stdio_dest(c, f);
    c->image_width = (JDIMENSION)shape->width;
    c->image_height = (JDIMENSION)shape->height;
    c->input_components = shape->channels;
    c->in_color_space = shape->channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(c);
    jpegx_configure(s, c);
    jpeg_start_compress(c, TRUE);
    jpegx_write_segments(s, c);
}
