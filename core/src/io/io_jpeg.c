#define _POSIX_C_SOURCE 200809L
#include "io/io_internal.h"
#include "io/color_cmyk_image.h"
#include "base/image.h"
#include "io/io_jpeg_bands.h"
#include "io/io_jpeg_internal.h"
#include "io/io_limits.h"
#include "io/meta_jpeg.h"
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>
#include <jerror.h>

typedef struct {
    jpegx_error_ctx e;
    struct jpeg_decompress_struct cinfo;
    FILE *f;
    const io_options *opt;
    ip_image *img;
    JOCTET *icc;               /* CMYK: the embedded profile (libjpeg's malloc), freed after a jump too */
    unsigned int icc_len;
    unsigned char *inks;       /* CMYK with a profile: every row's inks, converted at the end */
} jpeg_reader;

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
        jpegx_cmyk_row(cmyk[0], dst, width);
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
    ip_shape shape;
    int cmyk;
    int rc = jpegx_read_start(&r->e, &r->cinfo, r->f, r->opt, &shape, &cmyk);
    if (rc) return rc;
    /* the scan limit acts before the image exists */
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
    jpegx_init_error_ctx(&r->e, opt, "truncated or corrupt JPEG: ", err, errlen);
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
    jpegx_error_ctx e;
    struct jpeg_compress_struct cinfo;
    FILE *f;
    const ip_image *img;
    jpegx_settings s;
} jpeg_writer;

static int jpeg_encode(jpeg_writer *w)
{
    if (setjmp(w->e.jmp)) return IP_EIO;
    jpeg_create_compress(&w->cinfo);
    jpegx_compress_start(&w->cinfo, w->f, &w->img->shape, &w->s);
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
    jpegx_init_error_ctx(&w->e, NULL, "cannot write JPEG: ", err, errlen);
    w->cinfo.err = &w->e.pub;
    w->f = f;
    w->img = img;
    w->s.opt = opt;
    /* Large images: bands on all threads (io_jpeg_bands.h), the same file whatever their count. */
    jpeg_band_hooks hooks = { jpegx_configure, jpegx_write_segments, &w->s };
    size_t band_rows;
    int rc = meta_jpeg_prepare(opt->meta, &img->shape, &w->s.meta);
    if (rc) snprintf(err, errlen, "out of memory");
    else if (jpeg_bands_plan(&img->shape, &hooks, &band_rows) > 1)
        rc = jpeg_bands_write(f, img, &hooks, io_thread_count(opt), err, errlen);
    else
        rc = jpeg_encode(w);
    jpeg_destroy_compress(&w->cinfo);
    meta_jpeg_output_free(&w->s.meta);
    free(w);
    if (rc) {
        fclose(f);
        return rc;
    }
    return io_fclose_checked(f, err, errlen);
}
