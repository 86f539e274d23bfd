/* TIFF writing: strips compressed by all threads (io_tiff_strips.h), then written in strip order
 * through the real file's handle. */
#define _POSIX_C_SOURCE 200809L
#include "io/io_internal.h"
#include "io/io_tiff_handle.h"
#include "io/io_tiff_strip_cpu.h"
#include "base/image.h"
#include "io/meta_tiff.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Strip height depends on the row size only, never on the thread count: the file is the same
 * with any --threads. 256 KiB strips compress within 0.5% of 1 MiB ones and give a 200 MB
 * image 800 strips to share out. */
#define STRIP_TARGET_BYTES ((size_t)256 << 10)
/* Classic TIFF offsets are 32-bit; leave room for deflate's worst case and the directory. */
#define BIGTIFF_THRESHOLD ((uint64_t)3584 << 20)

uint16_t tiff_scheme(io_tiff_compression c)
{
    return c == IO_TIFF_LZW ? COMPRESSION_LZW : c == IO_TIFF_ZSTD ? COMPRESSION_ZSTD
         : c == IO_TIFF_NONE ? COMPRESSION_NONE : COMPRESSION_ADOBE_DEFLATE;
}

int tiff_set_image_tags(TIFF *tif, const ip_shape *s, uint32_t rows_per_strip, io_tiff_compression c)
{
    int is_float = s->dtype == IP_F32;
    int has_alpha = s->channels == 2 || s->channels == 4;
    uint16_t alpha[1] = { EXTRASAMPLE_UNASSALPHA };
    return TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, (uint32_t)s->width) &&
           TIFFSetField(tif, TIFFTAG_IMAGELENGTH, (uint32_t)s->height) &&
           TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, s->channels) &&
           TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, (int)ip_dtype_size(s->dtype) * 8) &&
           TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, is_float ? SAMPLEFORMAT_IEEEFP : SAMPLEFORMAT_UINT) &&
           TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, s->channels >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK) &&
           TIFFSetField(tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG) &&
           TIFFSetField(tif, TIFFTAG_COMPRESSION, tiff_scheme(c)) &&
           (c == IO_TIFF_NONE ||
            TIFFSetField(tif, TIFFTAG_PREDICTOR, is_float ? PREDICTOR_FLOATINGPOINT : PREDICTOR_HORIZONTAL)) &&
           TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, rows_per_strip) &&
           (!has_alpha || TIFFSetField(tif, TIFFTAG_EXTRASAMPLES, 1, alpha));
}

uint32_t tiff_rows_per_strip(const ip_shape *s)
{
    uint32_t rps = (uint32_t)(STRIP_TARGET_BYTES / img_row_bytes(s));
    if (rps == 0) rps = 1;
    return rps > (uint32_t)s->height ? (uint32_t)s->height : rps;
}

int tiff_wants_bigtiff(const ip_shape *s, uint64_t above)
{
    return (uint64_t)img_row_bytes(s) * (uint64_t)s->height > (above ? above : BIGTIFF_THRESHOLD);
}

int tiff_write_raw_strip(void *raw_out, uint32_t index, const unsigned char *data, size_t len, char *err, size_t errlen)
{
    tiff_raw_out *o = raw_out;
    if (TIFFWriteRawStrip(o->out, index, (void *)data, (tmsize_t)len) >= 0) return IP_OK;
    snprintf(err, errlen, "%s", tiff_log_text(o->log, "write error"));
    return IP_EIO;
}

/* Each strip's rows go to a buffer of the compressor (the predictor rewrites its input), copied
 * and compressed on one of its threads, and written in order. */
static int write_strips(tiff_strips *p, const ip_image *img, uint32_t rps, char *err, size_t errlen)
{
    uint32_t height = (uint32_t)img->shape.height;
    int rc = IP_OK;
    for (uint32_t y0 = 0; rc == IP_OK && y0 < height; y0 += rps) {
        unsigned char *buffer = NULL;
        rc = tiff_strips_claim(p, &buffer, err, errlen);
        const unsigned char *src = (const unsigned char *)img->data + (size_t)y0 * (size_t)img->stride;
        uint32_t rows = height - y0 < rps ? height - y0 : rps;
        if (rc == IP_OK) rc = tiff_strips_submit_from(p, src, img->stride, rows, err, errlen);
    }
    return rc == IP_OK ? tiff_strips_finish(p, err, errlen) : rc;
}

int tiff_strips_write_host(const ip_image *img, const tiff_strip_format *f, const io_options *opt,
                           tiff_strip_write_fn write, void *user, char *err, size_t errlen)
{
    tiff_strips *p = NULL;
    tiff_strips_plan plan = tiff_strips_plan_for(f, io_thread_count(opt), 0);
    int rc = tiff_strips_open(&p, tiff_strip_codec_for(opt), f, &plan, write, user, err, errlen);
    if (rc == IP_OK) rc = write_strips(p, img, f->rows_per_strip, err, errlen);
    tiff_strips_close(p);
    return rc;
}

static int write_image(TIFF *tif, tiff_log *log, const ip_image *img, const io_options *opt, char *err, size_t errlen)
{
    const ip_shape *s = &img->shape;
    tiff_strip_format f = { *s, tiff_rows_per_strip(s), opt->tiff_compression, opt->tiff_level, NULL };
    if (!tiff_set_image_tags(tif, s, f.rows_per_strip, opt->tiff_compression) || !meta_tiff_set_tags(tif, opt->meta, s)) {
        snprintf(err, errlen, "cannot write TIFF: %s", tiff_log_text(log, "bad tags"));
        return IP_EIO;
    }
    tiff_raw_out out = { tif, log };
    char why[512];
    int rc = tiff_strips_write_host(img, &f, opt, tiff_write_raw_strip, &out, why, sizeof why);
    if (rc != IP_OK) {
        snprintf(err, errlen, "cannot write TIFF: %s", why);
        return rc;
    }
    if (!TIFFFlush(tif)) {
        snprintf(err, errlen, "cannot write TIFF: %s", tiff_log_text(log, "write error"));
        return IP_EIO;
    }
    return IP_OK;
}

int io_write_tiff(int fd, const ip_image *img, const io_options *opt, char *err, size_t errlen)
{
    tiff_log log = { .have = 0 };
    char why[128];
    const char *mode = tiff_wants_bigtiff(&img->shape, 0) ? "w8" : "w";
    int tfd = dup(fd);
    TIFF *tif = tfd >= 0 ? tiff_open_fd_write(tfd, mode, &log) : NULL;
    if (!tif) {
        snprintf(err, errlen, "cannot write TIFF: %s",
                 tfd < 0 ? io_strerror(errno, why, sizeof why) : tiff_log_text(&log, "out of memory"));
        if (tfd >= 0) close(tfd);
        close(fd);
        return IP_EIO;
    }
    int rc = IP_EINVAL;
    if (!TIFFIsCODECConfigured(tiff_scheme(opt->tiff_compression)))
        snprintf(err, errlen, "cannot write TIFF: this libtiff has no %s compression; choose another "
                 "--tiff-compression", io_tiff_compression_name(opt->tiff_compression));
    else
        rc = write_image(tif, &log, img, opt, err, errlen);
    TIFFClose(tif);
    if (!rc) rc = meta_tiff_finish(fd, opt->meta, err, errlen);
    if (close(fd) != 0 && !rc) {
        snprintf(err, errlen, "cannot write TIFF: %s", io_strerror(errno, why, sizeof why));
        rc = IP_EIO;
    }
    return rc;
}
