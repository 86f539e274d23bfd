#define _POSIX_C_SOURCE 200809L
#include "io_internal.h"
#include "image.h"
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <tiffio.h>

#define TILE_SIDE_MAX 65536u
#define BLOCK_BYTES_FLOOR ((uint64_t)64 << 20)   /* tiles may exceed a small image, not by this */
#define STRIP_TARGET_BYTES ((size_t)256 << 10)
/* Classic TIFF offsets are 32-bit; leave room for deflate's worst case and the directory. */
#define BIGTIFF_THRESHOLD ((uint64_t)3584 << 20)

/* Per-handle message capture: libtiff never prints and no global handler is touched. */
typedef struct {
    char text[256];
    int have;
    char warning[256];   /* libtiff sometimes fails an open after warnings only */
} tiff_log;

/* libtiff starts many messages with the handle's name ("TIFF: ..."); our prefix says it. */
static void drop_handle_name(char *text)
{
    static const char name[] = "TIFF: ";
    if (strncmp(text, name, sizeof name - 1) == 0) memmove(text, text + sizeof name - 1, strlen(text) - (sizeof name - 2));
}

static int on_tiff_error(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap)
{
    (void)tif;
    (void)module;
    tiff_log *log = user;
    if (!log->have) {   /* the first message names the cause; later ones are consequences */
        vsnprintf(log->text, sizeof log->text, fmt, ap);
        drop_handle_name(log->text);
        log->have = 1;
    }
    return 1;
}

static int on_tiff_warning(TIFF *tif, void *user, const char *module, const char *fmt, va_list ap)
{
    (void)tif;
    (void)module;
    tiff_log *log = user;
    if (log) {
        vsnprintf(log->warning, sizeof log->warning, fmt, ap);
        drop_handle_name(log->warning);
    }
    return 1;
}

static TIFF *tiff_open_fd(int fd, const char *mode, tiff_log *log)
{
    TIFFOpenOptions *o = TIFFOpenOptionsAlloc();
    if (!o) return NULL;
    TIFFOpenOptionsSetErrorHandlerExtR(o, on_tiff_error, log);
    TIFFOpenOptionsSetWarningHandlerExtR(o, on_tiff_warning, log);
    TIFF *tif = TIFFFdOpenExt(fd, "TIFF", mode, o);
    TIFFOpenOptionsFree(o);
    return tif;
}

static const char *log_text(const tiff_log *log, const char *fallback)
{
    return log->have ? log->text : log->warning[0] ? log->warning : fallback;
}

typedef struct {
    TIFF *tif;
    tiff_log log;
    char *err;
    size_t errlen;
    const io_options *opt;
    uint32_t width, height;
    uint16_t spp, bps, format, planar, photometric, compression, extra_count;
    ip_image raw;              /* samples as stored: u8 for 8 bits and fewer, u16, f32 */
    unsigned char *block;      /* one decoded strip or tile */
} tiff_reader;

static int corrupt(tiff_reader *r, const char *fallback)
{
    snprintf(r->err, r->errlen, "truncated or corrupt TIFF: %s", log_text(&r->log, fallback));
    return IP_EFORMAT;
}

static int unsupported(tiff_reader *r, const char *what)
{
    snprintf(r->err, r->errlen, "unsupported TIFF: %s", what);
    return IP_EFORMAT;
}

static int read_tags(tiff_reader *r)
{
    uint16_t *extra = NULL;
    if (!TIFFGetField(r->tif, TIFFTAG_IMAGEWIDTH, &r->width) ||
        !TIFFGetField(r->tif, TIFFTAG_IMAGELENGTH, &r->height))
        return corrupt(r, "no image size");
    if (!TIFFGetField(r->tif, TIFFTAG_PHOTOMETRIC, &r->photometric))
        return corrupt(r, "no photometric interpretation");
    TIFFGetFieldDefaulted(r->tif, TIFFTAG_SAMPLESPERPIXEL, &r->spp);
    TIFFGetFieldDefaulted(r->tif, TIFFTAG_BITSPERSAMPLE, &r->bps);
    TIFFGetFieldDefaulted(r->tif, TIFFTAG_SAMPLEFORMAT, &r->format);
    TIFFGetFieldDefaulted(r->tif, TIFFTAG_PLANARCONFIG, &r->planar);
    TIFFGetFieldDefaulted(r->tif, TIFFTAG_COMPRESSION, &r->compression);
    TIFFGetFieldDefaulted(r->tif, TIFFTAG_EXTRASAMPLES, &r->extra_count, &extra);
    return IP_OK;
}

static int check_samples(tiff_reader *r)
{
    char what[128];
    if (r->spp < 1 || r->spp > 4) {
        snprintf(what, sizeof what, "%u samples per pixel (supported: 1 to 4)", r->spp);
        return unsupported(r, what);
    }
    if (r->format == SAMPLEFORMAT_IEEEFP) {
        if (r->bps == 32) return IP_OK;
        snprintf(what, sizeof what, "%u-bit float samples (supported: 8, 16, 32-bit float)", r->bps);
        return unsupported(r, what);
    }
    if (r->format != SAMPLEFORMAT_UINT && r->format != SAMPLEFORMAT_VOID)
        return unsupported(r, "signed or complex samples (supported: unsigned 8, 16 bits and 32-bit float)");
    if (r->bps == 1 || r->bps == 2 || r->bps == 4 || r->bps == 8 || r->bps == 16) return IP_OK;
    snprintf(what, sizeof what, "%u bits per sample (supported: 8, 16, 32-bit float)", r->bps);
    return unsupported(r, what);
}

static int check_colour(tiff_reader *r)
{
    char what[128];
    switch (r->photometric) {
    case PHOTOMETRIC_MINISBLACK:
        return IP_OK;
    case PHOTOMETRIC_MINISWHITE:
        return r->format == SAMPLEFORMAT_IEEEFP ? unsupported(r, "min-is-white float samples") : IP_OK;
    case PHOTOMETRIC_RGB:
        if (r->spp >= 3) return IP_OK;
        snprintf(what, sizeof what, "RGB with %u samples per pixel", r->spp);
        return unsupported(r, what);
    case PHOTOMETRIC_PALETTE:
        if (r->spp == 1 && r->bps <= 8) return IP_OK;
        return unsupported(r, "palette image with more than one sample or 16-bit indices");
    case PHOTOMETRIC_YCBCR:
        if (r->compression != COMPRESSION_JPEG || r->bps != 8)
            return unsupported(r, "YCbCr colour without JPEG compression; convert it to RGB first");
        /* libjpeg converts JPEG-compressed YCbCr to RGB for us. */
        if (!TIFFSetField(r->tif, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB)) return corrupt(r, "bad JPEG tables");
        r->photometric = PHOTOMETRIC_RGB;
        return r->spp >= 3 ? IP_OK : unsupported(r, "YCbCr with fewer than 3 samples per pixel");
    case PHOTOMETRIC_SEPARATED:
        return unsupported(r, "CMYK colour is not supported; convert it to RGB first");
    default:
        snprintf(what, sizeof what, "photometric interpretation %u (supported: gray, RGB, palette)",
                 r->photometric);
        return unsupported(r, what);
    }
}

static int check_layout(tiff_reader *r)
{
    char what[128];
    if (r->planar != PLANARCONFIG_CONTIG && r->planar != PLANARCONFIG_SEPARATE)
        return corrupt(r, "unknown planar configuration");
    if (!TIFFIsCODECConfigured(r->compression)) {
        snprintf(what, sizeof what, "compression scheme %u is not available", r->compression);
        return unsupported(r, what);
    }
    if (r->width == 0 || r->height == 0) return corrupt(r, "image has no pixels");
    if (r->width > INT32_MAX || r->height > INT32_MAX) {
        snprintf(r->err, r->errlen, "image of %ux%u pixels is too large", r->width, r->height);
        return IP_ELIMIT;
    }
    return IP_OK;
}

static ip_dtype raw_dtype(const tiff_reader *r)
{
    return r->bps == 32 ? IP_F32 : r->bps == 16 ? IP_U16 : IP_U8;
}

/* Checks the decoded and the final image against the limits, then allocates the samples. */
static int alloc_raw(tiff_reader *r)
{
    ip_shape raw = { (int32_t)r->width, (int32_t)r->height, r->spp, raw_dtype(r) };
    ip_shape final = raw;
    if (r->photometric == PHOTOMETRIC_PALETTE) final.channels = 3;
    int rc = io_shape_known(r->opt, &final, r->err, r->errlen);
    /* A palette image is expanded into a second buffer; otherwise the samples are the result. */
    if (!rc && r->photometric == PHOTOMETRIC_PALETTE) rc = img_alloc(&r->raw, &raw, r->opt->max_pixels, r->err, r->errlen);
    else if (!rc) rc = io_image_alloc(r->opt, &r->raw, &raw, r->err, r->errlen);
    return rc;
}

static unsigned unpack_bits(const unsigned char *src, size_t index, unsigned bps)
{
    size_t bit = index * bps;
    unsigned shift = 8 - bps - (unsigned)(bit & 7);   /* TIFF packs the first sample in the high bits */
    return (src[bit >> 3] >> shift) & ((1u << bps) - 1);
}

/* Copies a decoded strip or tile (rows row_bytes apart, starting at x0, y0) into raw;
 * with separate planes each block holds the one channel `plane`. */
static void copy_block(tiff_reader *r, const unsigned char *buf, size_t row_bytes, uint32_t x0,
                       uint32_t y0, uint32_t block_width, uint32_t rows, unsigned plane)
{
    unsigned per_px = r->planar == PLANARCONFIG_SEPARATE ? 1 : r->spp;
    uint32_t cols = block_width < r->width - x0 ? block_width : r->width - x0;
    size_t sb = ip_dtype_size(r->raw.shape.dtype);
    for (uint32_t y = 0; y < rows; y++) {
        const unsigned char *src = buf + (size_t)y * row_bytes;
        unsigned char *dst = (unsigned char *)r->raw.data + (size_t)(y0 + y) * (size_t)r->raw.stride +
                             (size_t)x0 * r->spp * sb;
        if (r->bps >= 8 && per_px == r->spp) {
            memcpy(dst, src, (size_t)cols * r->spp * sb);
            continue;
        }
        for (uint32_t x = 0; x < cols; x++)
            for (unsigned k = 0; k < per_px; k++) {
                size_t i = (size_t)x * per_px + k;
                unsigned char *d = dst + ((size_t)x * r->spp + (per_px == 1 ? plane : k)) * sb;
                if (r->bps < 8) *d = (unsigned char)unpack_bits(src, i, r->bps);
                else memcpy(d, src + i * sb, sb);
            }
    }
}

static int alloc_block(tiff_reader *r, uint64_t bytes)
{
    uint64_t cap = 4 * (uint64_t)r->raw.stride * r->height;
    if (cap < BLOCK_BYTES_FLOOR) cap = BLOCK_BYTES_FLOOR;
    if (bytes == 0 || bytes > cap || bytes > SIZE_MAX) return corrupt(r, "strip or tile size out of range");
    r->block = malloc((size_t)bytes);
    if (!r->block) {
        snprintf(r->err, r->errlen, "out of memory");
        return IP_ENOMEM;
    }
    return IP_OK;
}

static unsigned plane_count(const tiff_reader *r)
{
    return r->planar == PLANARCONFIG_SEPARATE ? r->spp : 1;
}

static int read_strips(tiff_reader *r)
{
    uint32_t rps = 0;
    TIFFGetFieldDefaulted(r->tif, TIFFTAG_ROWSPERSTRIP, &rps);
    if (rps == 0 || rps > r->height) rps = r->height;
    uint32_t per_plane = (uint32_t)(((uint64_t)r->height + rps - 1) / rps);
    if ((uint64_t)TIFFNumberOfStrips(r->tif) < (uint64_t)per_plane * plane_count(r))
        return corrupt(r, "fewer strips than the image needs");
    uint64_t row_bytes = TIFFScanlineSize64(r->tif);
    int rc = alloc_block(r, row_bytes * rps);
    if (rc) return rc;
    for (unsigned p = 0; p < plane_count(r); p++)
        for (uint32_t s = 0; s < per_plane; s++) {
            uint32_t y0 = s * rps;
            uint32_t rows = r->height - y0 < rps ? r->height - y0 : rps;
            tmsize_t need = (tmsize_t)(rows * row_bytes);
            if (TIFFReadEncodedStrip(r->tif, p * per_plane + s, r->block, need) < need)
                return corrupt(r, "strip shorter than expected");
            copy_block(r, r->block, (size_t)row_bytes, 0, y0, r->width, rows, p);
        }
    return IP_OK;
}

static int read_tiles(tiff_reader *r)
{
    uint32_t tw = 0, th = 0;
    TIFFGetField(r->tif, TIFFTAG_TILEWIDTH, &tw);
    TIFFGetField(r->tif, TIFFTAG_TILELENGTH, &th);
    if (tw == 0 || th == 0 || tw > TILE_SIDE_MAX || th > TILE_SIDE_MAX) return corrupt(r, "bad tile size");
    uint64_t row_bytes = TIFFTileRowSize64(r->tif);
    uint64_t tile_bytes = TIFFTileSize64(r->tif);
    int rc = alloc_block(r, tile_bytes);
    if (rc) return rc;
    for (unsigned p = 0; p < plane_count(r); p++)
        for (uint32_t y0 = 0; y0 < r->height; y0 += th)
            for (uint32_t x0 = 0; x0 < r->width; x0 += tw) {
                uint32_t rows = r->height - y0 < th ? r->height - y0 : th;
                uint32_t tile = TIFFComputeTile(r->tif, x0, y0, 0, (uint16_t)p);
                if (TIFFReadEncodedTile(r->tif, tile, r->block, (tmsize_t)tile_bytes) < (tmsize_t)(rows * row_bytes))
                    return corrupt(r, "tile shorter than expected");
                copy_block(r, r->block, (size_t)row_bytes, x0, y0, tw, rows, p);
            }
    return IP_OK;
}

static int expand_palette(tiff_reader *r, ip_image *out)
{
    uint16_t *map[3];
    if (!TIFFGetField(r->tif, TIFFTAG_COLORMAP, &map[0], &map[1], &map[2]))
        return corrupt(r, "palette image without a colour map");
    size_t entries = (size_t)1 << r->bps;
    /* Some writers store 8-bit values in the 16-bit map; libtiff's own reader allows it too. */
    unsigned shift = 0;
    for (size_t i = 0; i < entries; i++)
        if (map[0][i] > 255 || map[1][i] > 255 || map[2][i] > 255) shift = 8;
    ip_shape shape = { r->raw.shape.width, r->raw.shape.height, 3, IP_U8 };
    int rc = io_image_alloc(r->opt, out, &shape, r->err, r->errlen);
    if (rc) return rc;
    for (int32_t y = 0; y < shape.height; y++) {
        const uint8_t *src = (const uint8_t *)r->raw.data + (size_t)y * (size_t)r->raw.stride;
        uint8_t *dst = (uint8_t *)out->data + (size_t)y * (size_t)out->stride;
        for (int32_t x = 0; x < shape.width; x++)
            for (int c = 0; c < 3; c++) dst[3 * (size_t)x + c] = (uint8_t)(map[c][src[x]] >> shift);
    }
    return IP_OK;
}

/* 1, 2 and 4-bit samples become 0..255, as libpng does for low-depth gray. */
static void scale_to_8bit(ip_image *img, unsigned bps)
{
    unsigned max = (1u << bps) - 1;
    size_t n = (size_t)img->shape.width * (size_t)img->shape.channels;
    for (int32_t y = 0; y < img->shape.height; y++) {
        uint8_t *row = (uint8_t *)img->data + (size_t)y * (size_t)img->stride;
        for (size_t i = 0; i < n; i++) row[i] = (uint8_t)(row[i] * 255u / max);
    }
}

/* Min-is-white stores 0 as white; flip the colour channels (not alpha) to min-is-black. */
static void invert_colour(ip_image *img, int colour_channels)
{
    int c = img->shape.channels;
    for (int32_t y = 0; y < img->shape.height; y++) {
        unsigned char *row = (unsigned char *)img->data + (size_t)y * (size_t)img->stride;
        for (size_t x = 0; x < (size_t)img->shape.width; x++)
            for (int k = 0; k < colour_channels; k++) {
                if (img->shape.dtype == IP_U8) row[x * c + k] = (uint8_t)(255 - row[x * c + k]);
                else ((uint16_t *)row)[x * c + k] = (uint16_t)(65535 - ((uint16_t *)row)[x * c + k]);
            }
    }
}

static int finish(tiff_reader *r, ip_image *out)
{
    if (r->photometric == PHOTOMETRIC_PALETTE) return expand_palette(r, out);
    if (r->bps < 8) scale_to_8bit(&r->raw, r->bps);
    if (r->photometric == PHOTOMETRIC_MINISWHITE) {
        int colour = r->spp == 2 || r->extra_count >= r->spp ? 1 : r->spp - r->extra_count;
        invert_colour(&r->raw, colour);
    }
    *out = r->raw;
    r->raw.data = NULL;
    return IP_OK;
}

static int decode(tiff_reader *r, ip_image *out)
{
    int rc = read_tags(r);
    if (!rc) rc = check_samples(r);
    if (!rc) rc = check_colour(r);
    if (!rc) rc = check_layout(r);
    if (!rc) rc = alloc_raw(r);
    if (!rc) rc = TIFFIsTiled(r->tif) ? read_tiles(r) : read_strips(r);
    if (!rc) rc = finish(r, out);
    return rc;
}

int io_read_tiff(int fd, const io_options *opt, ip_image *out, char *err, size_t errlen)
{
    tiff_reader r = { .err = err, .errlen = errlen, .opt = opt };
    int tfd = dup(fd);   /* TIFFClose closes its descriptor; the caller keeps fd */
    if (tfd < 0) {
        char why[128];
        snprintf(err, errlen, "cannot read: %s", io_strerror(errno, why, sizeof why));
        return IP_EIO;
    }
    r.tif = tiff_open_fd(tfd, "rm", &r.log);   /* m: read(), not mmap, so a file cut short is an error, not SIGBUS */
    if (!r.tif) {
        close(tfd);
        return corrupt(&r, "cannot parse the header");
    }
    int rc = decode(&r, out);
    TIFFClose(r.tif);
    free(r.block);
    if (r.photometric == PHOTOMETRIC_PALETTE) img_free(&r.raw);
    else io_image_free(opt, &r.raw);
    if (rc) io_image_free(opt, out);
    return rc;
}

static uint16_t tiff_scheme(io_tiff_compression c)
{
    return c == IO_TIFF_LZW ? COMPRESSION_LZW : c == IO_TIFF_ZSTD ? COMPRESSION_ZSTD
         : c == IO_TIFF_NONE ? COMPRESSION_NONE : COMPRESSION_ADOBE_DEFLATE;
}

static int set_tags(TIFF *tif, const ip_shape *s, uint32_t rows_per_strip, io_tiff_compression c)
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

/* Rows are copied into a strip buffer: the predictor rewrites its input in place. */
static int write_strips(TIFF *tif, const ip_image *img, size_t row_bytes, uint32_t rps)
{
    unsigned char *buf = malloc(row_bytes * rps);
    if (!buf) return IP_ENOMEM;
    uint32_t height = (uint32_t)img->shape.height;
    int rc = IP_OK;
    for (uint32_t y0 = 0, s = 0; y0 < height && !rc; y0 += rps, s++) {
        uint32_t rows = height - y0 < rps ? height - y0 : rps;
        for (uint32_t y = 0; y < rows; y++)
            memcpy(buf + (size_t)y * row_bytes, (const unsigned char *)img->data + (size_t)(y0 + y) * (size_t)img->stride,
                   row_bytes);
        if (TIFFWriteEncodedStrip(tif, s, buf, (tmsize_t)(rows * row_bytes)) < 0) rc = IP_EIO;
    }
    free(buf);
    return rc;
}

int io_write_tiff(int fd, const ip_image *img, const io_options *opt, char *err, size_t errlen)
{
    tiff_log log = { .have = 0 };
    char why[128];
    const ip_shape *s = &img->shape;
    size_t row_bytes = img_row_bytes(s);
    uint32_t rps = (uint32_t)(STRIP_TARGET_BYTES / row_bytes);
    if (rps == 0) rps = 1;
    if (rps > (uint32_t)s->height) rps = (uint32_t)s->height;
    const char *mode = (uint64_t)row_bytes * (uint64_t)s->height > BIGTIFF_THRESHOLD ? "w8" : "w";
    int tfd = dup(fd);
    TIFF *tif = tfd >= 0 ? tiff_open_fd(tfd, mode, &log) : NULL;
    if (!tif) {
        snprintf(err, errlen, "cannot write TIFF: %s",
                 tfd < 0 ? io_strerror(errno, why, sizeof why) : log_text(&log, "out of memory"));
        if (tfd >= 0) close(tfd);
        close(fd);
        return IP_EIO;
    }
    if (!TIFFIsCODECConfigured(tiff_scheme(opt->tiff_compression))) {
        snprintf(err, errlen, "cannot write TIFF: this libtiff has no %s compression; choose another "
                 "--tiff-compression", io_tiff_compression_name(opt->tiff_compression));
        TIFFClose(tif);
        close(fd);
        return IP_EINVAL;
    }
    int rc = set_tags(tif, s, rps, opt->tiff_compression) ? write_strips(tif, img, row_bytes, rps) : IP_EIO;
    if (!rc && !TIFFFlush(tif)) rc = IP_EIO;
    TIFFClose(tif);
    if (rc) snprintf(err, errlen, "cannot write TIFF: %s", log_text(&log, rc == IP_ENOMEM ? "out of memory" : "write error"));
    if (close(fd) != 0 && !rc) {
        snprintf(err, errlen, "cannot write TIFF: %s", io_strerror(errno, why, sizeof why));
        rc = IP_EIO;
    }
    return rc;
}
