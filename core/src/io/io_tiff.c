/* TIFF reading: strips and tiles decoded by all threads, one libtiff handle per thread on the
 * one descriptor, straight into the final image where the layout allows. */
#define _POSIX_C_SOURCE 200809L
#include "io/io_internal.h"
#include "io/color_cmyk_image.h"
#include "io/io_tiff_alpha.h"
#include "io/io_tiff_convert.h"
#include "io/io_tiff_handle.h"
#include "io/io_tiff_ycbcr.h"
#include "base/image.h"
#include "io/io_limits.h"
#include <omp.h>
#include <stdlib.h>
#include <string.h>


/* What the samples as stored become (finish). */
typedef enum {
    TIFF_AS_STORED,    /* themselves: 1-8 bits to u8 (1, 2, 4 scaled to 0..255), 9-16 to u16, float */
    TIFF_PALETTE,      /* indices into the colour map, to 8-bit RGB */
    TIFF_CMYK,         /* inks to RGB, or RGBA with an alpha extra sample */
    TIFF_TO_FLOAT      /* signed 8, 16, 32-bit and unsigned 32-bit integers to f32, same values */
} tiff_result;

typedef struct {
    TIFF *tif;
    tiff_log log;
    tiff_fd_cursor cursor;
    char *err;
    size_t errlen;
    const io_options *opt;
    int threads;
    uint32_t width, height;
    uint16_t spp, bps, format, planar, photometric, compression, extra_count, first_extra;
    int jpeg_to_rgb;           /* YCbCr JPEG: every handle asks libjpeg for RGB */
    tiff_ycbcr *ycbcr;         /* other YCbCr: converted to RGB as libtiff converts it */
    unsigned ycbcr_h, ycbcr_v; /* its subsampling: above 1x1 blocks hold data units, turned into RGB */
    tiff_result result;
    io_warnings seen;          /* libtiff's warnings while decoding, settled at the end */
    ip_image raw;              /* samples as stored: u8 for 8 bits and fewer, u16 up to 16, 32-bit ones
                                * in f32's place; more than 4 samples a pixel: one channel, spp times wider */
    int raw_private;           /* raw is a separate buffer (malloc), not the image handed out */
    /* The lowest failed block, so the message does not depend on the thread count. */
    uint64_t failed_block;     /* UINT64_MAX: none */
    int failed_rc;
    char failed_msg[256];
} tiff_reader;

static int corrupt(tiff_reader *r, const char *fallback)
{
    snprintf(r->err, r->errlen, "truncated or corrupt TIFF: %s", tiff_log_text(&r->log, fallback));
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
    r->first_extra = r->extra_count && extra ? extra[0] : EXTRASAMPLE_UNSPECIFIED;
    return IP_OK;
}

/* Integers 1-16 bits unsigned are kept; 32-bit unsigned and signed ones become float. */
static int check_integer_samples(tiff_reader *r)
{
    char what[128];
    int is_signed = r->format == SAMPLEFORMAT_INT;
    if (r->bps == 32 || (is_signed && (r->bps == 8 || r->bps == 16))) {
        r->result = TIFF_TO_FLOAT;
        return IP_OK;
    }
    if (!is_signed && r->bps >= 1 && r->bps <= 16 && (r->bps >= 8 || 8 % r->bps == 0)) return IP_OK;
    snprintf(what, sizeof what, "%u-bit %s samples (supported: 1, 2, 4, 8 to 16 and 32 bits unsigned, "
             "8, 16, 32 bits signed, 32-bit float)", r->bps, is_signed ? "signed" : "unsigned");
    return unsupported(r, what);
}

static int check_samples(tiff_reader *r)
{
    char what[128];
    unsigned max_spp = r->photometric == PHOTOMETRIC_SEPARATED ? 6 : 4;   /* CMYK and two extra */
    if (r->spp < 1 || r->spp > max_spp) {
        snprintf(what, sizeof what, "%u samples per pixel (supported: 1 to 4, CMYK with up to 2 extra)", r->spp);
        return unsupported(r, what);
    }
    if (r->format == SAMPLEFORMAT_IEEEFP) {
        if (r->bps == 32) return IP_OK;
        snprintf(what, sizeof what, "%u-bit float samples (supported: 8, 16, 32-bit float)", r->bps);
        return unsupported(r, what);
    }
    if (r->format != SAMPLEFORMAT_UINT && r->format != SAMPLEFORMAT_VOID && r->format != SAMPLEFORMAT_INT)
        return unsupported(r, "complex samples (supported: integers and 32-bit float)");
    return check_integer_samples(r);
}

/* Separated colour with four inks is CMYK, whatever the InkSet tag says (as Pillow takes it);
 * extra samples past the inks are dropped, but for an alpha first among them. */
static int check_cmyk(tiff_reader *r)
{
    if (r->spp < 4) return unsupported(r, "separated colour with fewer than 4 inks");
    if (r->bps != 8 && r->bps != 16) return unsupported(r, "CMYK with other than 8 or 16-bit samples");
    if (r->result == TIFF_TO_FLOAT || r->format == SAMPLEFORMAT_IEEEFP)
        return unsupported(r, "CMYK with float or signed samples");
    r->result = TIFF_CMYK;
    return IP_OK;
}

static int subsampled(const tiff_reader *r)
{
    return r->ycbcr && r->ycbcr_h * r->ycbcr_v > 1;
}

static int check_ycbcr(tiff_reader *r)
{
    char why[200], what[256];
    if (r->spp != 3) return unsupported(r, "YCbCr with other than 3 samples per pixel");
    r->ycbcr = tiff_ycbcr_open(r->tif, &r->ycbcr_h, &r->ycbcr_v, why, sizeof why);
    if (!r->ycbcr) {
        snprintf(what, sizeof what, "YCbCr: %s", why);
        return unsupported(r, what);
    }
    if (subsampled(r) && r->planar != PLANARCONFIG_CONTIG)
        return unsupported(r, "subsampled YCbCr in separate planes");
    r->photometric = PHOTOMETRIC_RGB;
    return IP_OK;
}

static int check_colour(tiff_reader *r)
{
    char what[128];
    switch (r->photometric) {
    case PHOTOMETRIC_MINISBLACK:
        return IP_OK;
    case PHOTOMETRIC_MINISWHITE:
        if (r->format == SAMPLEFORMAT_IEEEFP || r->result == TIFF_TO_FLOAT)
            return unsupported(r, "min-is-white float, signed or 32-bit samples");
        return IP_OK;
    case PHOTOMETRIC_RGB:
        if (r->spp >= 3) return IP_OK;
        snprintf(what, sizeof what, "RGB with %u samples per pixel", r->spp);
        return unsupported(r, what);
    case PHOTOMETRIC_PALETTE:
        if (r->spp != 1 || r->bps > 8 || r->format == SAMPLEFORMAT_INT)
            return unsupported(r, "palette image with more than one sample or indices of more than 8 bits");
        r->result = TIFF_PALETTE;
        return IP_OK;
    case PHOTOMETRIC_SEPARATED:
        return check_cmyk(r);
    case PHOTOMETRIC_YCBCR:
        if (r->bps != 8 || r->format == SAMPLEFORMAT_INT)
            return unsupported(r, "YCbCr with other than 8-bit unsigned samples");
        if (r->compression != COMPRESSION_JPEG) return check_ycbcr(r);
        /* libjpeg converts JPEG-compressed YCbCr to RGB for us. */
        if (!TIFFSetField(r->tif, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB)) return corrupt(r, "bad JPEG tables");
        r->jpeg_to_rgb = 1;
        r->photometric = PHOTOMETRIC_RGB;
        return r->spp >= 3 ? IP_OK : unsupported(r, "YCbCr with fewer than 3 samples per pixel");
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
    int rc = img_pixel_check(r->width, r->height, r->opt->max_pixels, r->err, r->errlen);
    if (!rc && (r->width > INT32_MAX || r->height > INT32_MAX)) {
        snprintf(r->err, r->errlen, "image is %ux%u, over the limit of %d pixels a side (no option raises it)",
                 r->width, r->height, INT32_MAX);
        rc = IP_ELIMIT;
    }
    return rc;
}

static ip_dtype raw_dtype(const tiff_reader *r)
{
    return r->bps == 32 ? IP_F32 : r->bps > 8 ? IP_U16 : IP_U8;
}

static int cmyk_alpha(const tiff_reader *r)
{
    int alpha = r->first_extra == EXTRASAMPLE_ASSOCALPHA || r->first_extra == EXTRASAMPLE_UNASSALPHA;
    return r->spp > 4 && alpha ? 4 : -1;
}

/* The samples as stored, one pixel's samples side by side. */
static ip_shape raw_shape(const tiff_reader *r)
{
    return (ip_shape){ (int32_t)r->width, (int32_t)r->height, r->spp, raw_dtype(r) };
}

static ip_shape final_shape(const tiff_reader *r)
{
    ip_shape s = raw_shape(r);
    if (r->result == TIFF_PALETTE) s.channels = 3;
    if (r->result == TIFF_CMYK) s.channels = cmyk_alpha(r) >= 0 ? 4 : 3;
    if (r->result == TIFF_TO_FLOAT) s.dtype = IP_F32;
    return s;
}

/* A row of the samples as stored (up to 6 a pixel: within 64 bits for any width). */
static uint64_t raw_row_bytes(const tiff_reader *r)
{
    return (uint64_t)r->width * r->spp * ip_dtype_size(raw_dtype(r));
}

/* Checks the final image against the limits (and tells on_shape) before any block is looked at;
 * the samples as stored must be addressable too, and more than 4 a pixel are held as one channel
 * that many times wider. */
static int check_shape(tiff_reader *r)
{
    ip_shape final = final_shape(r);
    int rc = io_shape_known(r->opt, &final, io_file_bytes(r->cursor.fd), r->err, r->errlen);
    if (!rc && raw_row_bytes(r) > SIZE_MAX / r->height) {
        snprintf(r->err, r->errlen, "image is %ux%u with %u samples a pixel, too large to address (no option "
                 "raises it)", r->width, r->height, r->spp);
        rc = IP_ELIMIT;
    }
    if (!rc && r->spp > 4 && (uint64_t)r->width * r->spp > INT32_MAX) {
        snprintf(r->err, r->errlen, "image is %ux%u with %u samples a pixel, over the limit of %d samples a row "
                 "(no option raises it)", r->width, r->height, r->spp, INT32_MAX);
        rc = IP_ELIMIT;
    }
    return rc;
}

/* The samples go into the final image itself when they are alike, else into a separate buffer
 * that finish() converts (its size follows from the final one's, already within the limits). */
static int alloc_raw(tiff_reader *r)
{
    ip_shape raw = raw_shape(r), final = final_shape(r);
    if (raw.channels > 4) {   /* CMYK with extra samples: one wide channel */
        raw.width *= raw.channels;
        raw.channels = 1;
    }
    r->raw_private = raw.width != final.width || raw.channels != final.channels || raw.dtype != final.dtype;
    if (r->raw_private) return img_alloc(&r->raw, &raw, UINT64_MAX, r->err, r->errlen);
    return io_image_alloc(r->opt, &r->raw, &raw, r->err, r->errlen);
}

/* Byte-aligned samples are copied as they are; others unpacked. */
static int whole_bytes(const tiff_reader *r)
{
    return r->bps == 8 || r->bps == 16 || r->bps == 32;
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
        if (whole_bytes(r) && per_px == r->spp) {
            memcpy(dst, src, (size_t)cols * r->spp * sb);
            continue;
        }
        for (uint32_t x = 0; x < cols; x++)
            for (unsigned k = 0; k < per_px; k++) {
                size_t i = (size_t)x * per_px + k;
                unsigned char *d = dst + ((size_t)x * r->spp + (per_px == 1 ? plane : k)) * sb;
                if (whole_bytes(r)) {
                    memcpy(d, src + i * sb, sb);
                } else if (sb == 1) {
                    *d = (unsigned char)tiff_bits_at(src, i, r->bps);
                } else {
                    uint16_t v = (uint16_t)tiff_bits_at(src, i, r->bps);
                    memcpy(d, &v, sizeof v);
                }
            }
    }
}

static unsigned plane_count(const tiff_reader *r)
{
    return r->planar == PLANARCONFIG_SEPARATE ? r->spp : 1;
}

/* Strips or tiles: blocks of bw x bh pixels, `across` in a band, `down` bands in a plane;
 * block b is libtiff's strip or tile number b. */
typedef struct {
    int tiled;
    int direct;                /* strips decode straight into the image: same rows */
    uint32_t bw, bh, across, down;
    uint64_t count, row_bytes, block_bytes;
    uint32_t units_across;     /* subsampled YCbCr: data units to a row of them (row_bytes: that row) */
} block_layout;

/* The whole image's samples: as decoded, or in subsampled YCbCr's data units where those take more
 * (a unit of 4x4 pixels serving an image 1 pixel wide). */
static uint64_t whole_image_bytes(const tiff_reader *r)
{
    uint64_t decoded = raw_row_bytes(r) * r->height;
    if (!subsampled(r)) return decoded;
    uint64_t units = ((uint64_t)r->width + r->ycbcr_h - 1) / r->ycbcr_h * (((uint64_t)r->height + r->ycbcr_v - 1) / r->ycbcr_v);
    uint64_t unit_bytes = units * (r->ycbcr_h * r->ycbcr_v + 2);
    return unit_bytes > decoded ? unit_bytes : decoded;
}

/* A strip never decodes to more than the image (its rows are the image's); a tile may, padding the
 * image's edges, within the limit. */
static int check_block_size(tiff_reader *r, const block_layout *l)
{
    uint64_t image_bytes = whole_image_bytes(r);
    if (l->block_bytes == 0 || l->block_bytes > SIZE_MAX || (!l->tiled && l->block_bytes > image_bytes))
        return corrupt(r, l->tiled ? "tile size out of range" : "strip size out of range");
    if (!l->tiled) return IP_OK;
    return io_limit_tiff_tile(r->opt, l->bw, l->bh, l->block_bytes, image_bytes, r->err, r->errlen);
}

/* Subsampled YCbCr: a block is rows of data units, each vs pixel rows high. */
static int unit_layout(tiff_reader *r, block_layout *l)
{
    unsigned unit = r->ycbcr_h * r->ycbcr_v + 2;
    if (l->tiled && (l->bw % r->ycbcr_h || l->bh % r->ycbcr_v))
        return corrupt(r, "YCbCr tiles that are not whole subsampling blocks");
    if (!l->tiled && l->bh % r->ycbcr_v && l->bh < r->height)
        return corrupt(r, "YCbCr strips that are not whole subsampling blocks");
    l->units_across = (uint32_t)(((uint64_t)l->bw + r->ycbcr_h - 1) / r->ycbcr_h);
    l->row_bytes = (uint64_t)l->units_across * unit;
    l->block_bytes = ((uint64_t)l->bh + r->ycbcr_v - 1) / r->ycbcr_v * l->row_bytes;
    l->direct = 0;
    return check_block_size(r, l);
}

static int strip_layout(tiff_reader *r, block_layout *l)
{
    uint32_t rps = 0;
    TIFFGetFieldDefaulted(r->tif, TIFFTAG_ROWSPERSTRIP, &rps);
    if (rps == 0 || rps > r->height) rps = r->height;
    *l = (block_layout){ .bw = r->width, .bh = rps, .across = 1, .down = (uint32_t)(((uint64_t)r->height + rps - 1) / rps) };
    l->count = (uint64_t)l->down * plane_count(r);
    int rc = io_limit_tiff_blocks(r->opt, l->count, 0, r->err, r->errlen);
    if (rc) return rc;
    if ((uint64_t)TIFFNumberOfStrips(r->tif) < l->count) return corrupt(r, "fewer strips than the image needs");
    l->row_bytes = TIFFScanlineSize64(r->tif);
    if (l->row_bytes == 0 || rps > UINT64_MAX / l->row_bytes) return corrupt(r, "strip size out of range");
    l->block_bytes = l->row_bytes * rps;
    l->direct = r->planar == PLANARCONFIG_CONTIG && whole_bytes(r) && l->row_bytes == raw_row_bytes(r);
    return subsampled(r) ? unit_layout(r, l) : check_block_size(r, l);
}

static int tile_layout(tiff_reader *r, block_layout *l)
{
    uint32_t tw = 0, th = 0;
    TIFFGetField(r->tif, TIFFTAG_TILEWIDTH, &tw);
    TIFFGetField(r->tif, TIFFTAG_TILELENGTH, &th);
    if (tw == 0 || th == 0 || tw > TILE_SIDE_MAX || th > TILE_SIDE_MAX) return corrupt(r, "bad tile size");
    *l = (block_layout){ .tiled = 1, .bw = tw, .bh = th, .across = (uint32_t)(((uint64_t)r->width + tw - 1) / tw),
                         .down = (uint32_t)(((uint64_t)r->height + th - 1) / th) };
    l->count = (uint64_t)l->across * l->down * plane_count(r);
    int rc = io_limit_tiff_blocks(r->opt, l->count, 1, r->err, r->errlen);
    if (rc) return rc;
    if ((uint64_t)TIFFNumberOfTiles(r->tif) < l->count) return corrupt(r, "fewer tiles than the image needs");
    l->row_bytes = TIFFTileRowSize64(r->tif);
    l->block_bytes = TIFFTileSize64(r->tif);
    return subsampled(r) ? unit_layout(r, l) : check_block_size(r, l);
}

/* One thread's reading state: its own handle (thread 0 keeps the one that read the tags). */
typedef struct {
    TIFF *tif;
    tiff_log *log;
    tiff_log own_log;
    tiff_fd_cursor cursor;
    unsigned char *scratch;    /* one decoded block, when it cannot go straight into the image */
} block_worker;

/* A new handle on the page being read, set up as the first one; its warnings (those the first
 * handle has already given) are counted only from here on. */
static int prepare_handle(tiff_reader *r, TIFF *tif, tiff_log *log)
{
    if (r->opt->page > 0 && !TIFFSetDirectory(tif, (tdir_t)r->opt->page)) return IP_EFORMAT;
    if (r->jpeg_to_rgb && !TIFFSetField(tif, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB)) return IP_EFORMAT;
    log->warnings = &r->seen;
    return IP_OK;
}

static int worker_open(tiff_reader *r, const block_layout *l, block_worker *w, int index)
{
    w->tif = r->tif;
    w->log = &r->log;
    if (index > 0) {
        w->log = &w->own_log;
        w->cursor = (tiff_fd_cursor){ r->cursor.fd, 0 };
        w->tif = tiff_open_shared(&w->cursor, w->log);
        if (!w->tif || prepare_handle(r, w->tif, w->log)) return IP_EFORMAT;
    }
    if (l->direct) return IP_OK;
    w->scratch = malloc((size_t)l->block_bytes);
    return w->scratch ? IP_OK : IP_ENOMEM;
}

static void worker_close(tiff_reader *r, block_worker *w)
{
    if (w->tif && w->tif != r->tif) TIFFClose(w->tif);
    free(w->scratch);
}

/* Decodes block b into dst (room for size bytes, of which need must come); 0 or -1. */
static int decode_block(tiff_reader *r, const block_layout *l, block_worker *w, uint64_t b, unsigned char *dst,
                        tmsize_t size, tmsize_t need)
{
    *w->log = (tiff_log){ .warnings = w->log->warnings };   /* this block's own message, not an earlier one's */
    if (tiff_decoder_may_leave_unwritten(r->compression)) memset(dst, 0, (size_t)size);
    tmsize_t got = l->tiled ? TIFFReadEncodedTile(w->tif, (uint32_t)b, dst, size)
                            : TIFFReadEncodedStrip(w->tif, (uint32_t)b, dst, size);
    if (got < need) return -1;
    tiff_log_went_past(w->log);
    return 0;
}

static int read_block(tiff_reader *r, const block_layout *l, block_worker *w, uint64_t b)
{
    uint64_t per_plane = (uint64_t)l->across * l->down;
    unsigned plane = (unsigned)(b / per_plane);
    uint32_t x0 = (uint32_t)(b % per_plane % l->across) * l->bw;
    uint32_t y0 = (uint32_t)(b % per_plane / l->across) * l->bh;
    uint32_t rows = r->height - y0 < l->bh ? r->height - y0 : l->bh;
    uint32_t data_rows = subsampled(r) ? (rows + r->ycbcr_v - 1) / r->ycbcr_v : rows;
    tmsize_t need = (tmsize_t)(data_rows * l->row_bytes);
    if (l->direct) {   /* strips straight into the image */
        unsigned char *dst = (unsigned char *)r->raw.data + (size_t)y0 * (size_t)r->raw.stride;
        return decode_block(r, l, w, b, dst, need, need);
    }
    if (decode_block(r, l, w, b, w->scratch, l->tiled ? (tmsize_t)l->block_bytes : need, need) != 0) return -1;
    if (subsampled(r)) {
        uint32_t cols = l->bw < r->width - x0 ? l->bw : r->width - x0;
        unsigned char *dst = (unsigned char *)r->raw.data + (size_t)y0 * (size_t)r->raw.stride + (size_t)x0 * 3;
        tiff_ycbcr_units(r->ycbcr, w->scratch, l->units_across, cols, rows, dst, (size_t)r->raw.stride);
    } else {
        copy_block(r, w->scratch, (size_t)l->row_bytes, x0, y0, l->bw, rows, plane);
    }
    return 0;
}

static void record_failure(tiff_reader *r, uint64_t block, int rc, const char *why)
{
#pragma omp critical(io_tiff_read_failure)
    if (block < r->failed_block) {
        r->failed_rc = rc;
        snprintf(r->failed_msg, sizeof r->failed_msg, "%s%s", rc == IP_EFORMAT ? "truncated or corrupt TIFF: " : "", why);
#pragma omp atomic write
        r->failed_block = block;
    }
}

static int failed_before(tiff_reader *r, uint64_t block)
{
    uint64_t failed;
#pragma omp atomic read
    failed = r->failed_block;
    return failed < block;
}

/* Blocks are handed out in order, so every block before the first bad one is tried whatever
 * the thread count, and the message names the same cause. */
static int read_blocks(tiff_reader *r, const block_layout *l)
{
    int threads = (uint64_t)r->threads < l->count ? r->threads : (int)l->count;
    const char *short_block = l->tiled ? "tile shorter than expected" : "strip shorter than expected";
    r->failed_block = UINT64_MAX;
#pragma omp parallel num_threads(threads)
    {
        block_worker w = { .tif = NULL };
        int setup = worker_open(r, l, &w, omp_get_thread_num());
        if (setup) record_failure(r, l->count, setup, setup == IP_ENOMEM ? "out of memory" : tiff_log_text(w.log, "cannot reopen"));
#pragma omp for schedule(dynamic, 1)
        for (uint64_t b = 0; b < l->count; b++)
            if (!setup && !failed_before(r, b) && read_block(r, l, &w, b) != 0)
                record_failure(r, b, IP_EFORMAT, tiff_log_text(w.log, short_block));
        worker_close(r, &w);
    }
    if (r->failed_block == UINT64_MAX) return IP_OK;
    snprintf(r->err, r->errlen, "%s", r->failed_msg);
    return r->failed_rc;
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
#pragma omp parallel for num_threads(r->threads) schedule(static)
    for (int32_t y = 0; y < shape.height; y++) {
        const uint8_t *src = (const uint8_t *)r->raw.data + (size_t)y * (size_t)r->raw.stride;
        uint8_t *dst = (uint8_t *)out->data + (size_t)y * (size_t)out->stride;
        for (int32_t x = 0; x < shape.width; x++)
            for (int c = 0; c < 3; c++) dst[3 * (size_t)x + c] = (uint8_t)(map[c][src[x]] >> shift);
    }
    return IP_OK;
}

/* 1, 2 and 4-bit samples become 0..255, as libpng does for low-depth gray. */
static void scale_to_8bit(ip_image *img, unsigned bps, int threads)
{
    unsigned max = (1u << bps) - 1;
    size_t n = (size_t)img->shape.width * (size_t)img->shape.channels;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int32_t y = 0; y < img->shape.height; y++) {
        uint8_t *row = (uint8_t *)img->data + (size_t)y * (size_t)img->stride;
        for (size_t i = 0; i < n; i++) row[i] = (uint8_t)(row[i] * 255u / max);
    }
}

/* Min-is-white stores 0 as white; flip the colour channels (not alpha) to min-is-black. max: the
 * largest value the samples hold (255, 65535, or 4095 for 12 bits kept as they are). */
static void invert_colour(ip_image *img, int colour_channels, unsigned max, int threads)
{
    int c = img->shape.channels;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int32_t y = 0; y < img->shape.height; y++) {
        unsigned char *row = (unsigned char *)img->data + (size_t)y * (size_t)img->stride;
        for (size_t x = 0; x < (size_t)img->shape.width; x++)
            for (int k = 0; k < colour_channels; k++) {
                if (img->shape.dtype == IP_U8) row[x * c + k] = (uint8_t)(max - row[x * c + k]);
                else ((uint16_t *)row)[x * c + k] = (uint16_t)(max - ((uint16_t *)row)[x * c + k]);
            }
    }
}

/* Through the page's ICC profile when it has a usable one; a profile left unused is a warning
 * about colour, not damage, so --fail-on warning does not refuse the file for it. */
static int cmyk_to_rgb(tiff_reader *r, ip_image *out)
{
    uint32_t icc_len = 0;
    const unsigned char *icc = NULL;
    if (!TIFFGetField(r->tif, TIFFTAG_ICCPROFILE, &icc_len, &icc)) icc = NULL, icc_len = 0;
    char why[256];
    int rc = color_cmyk_image_to_rgb(icc, icc_len, r->raw.data, r->raw.stride, r->spp, 0, cmyk_alpha(r), out,
                                     r->threads, why, sizeof why);
    if (rc) snprintf(r->err, r->errlen, "out of memory");
    else if (why[0]) io_warnings_add(r->opt->warnings, 1, why);
    return rc;
}

/* Gray or RGB with one associated-alpha extra sample, last in the final image. */
static int premultiplied(const tiff_reader *r, const ip_image *out)
{
    int plain = r->result == TIFF_AS_STORED || r->result == TIFF_TO_FLOAT;
    return plain && r->first_extra == EXTRASAMPLE_ASSOCALPHA && r->extra_count == 1 &&
           (out->shape.channels == 2 || out->shape.channels == 4);
}

/* The samples become the final image, converted into a new one where they differ. */
static int convert(tiff_reader *r, ip_image *out)
{
    ip_shape shape = final_shape(r);
    int rc = r->raw_private ? io_image_alloc(r->opt, out, &shape, r->err, r->errlen) : IP_OK;
    if (rc) return rc;
    if (!r->raw_private) *out = r->raw;
    if (r->result == TIFF_CMYK && (rc = cmyk_to_rgb(r, out)) != IP_OK) return rc;   /* out freed by the caller */
    if (r->result == TIFF_TO_FLOAT)
        tiff_to_float(r->raw.data, r->raw.stride, r->bps / 8u, r->format == SAMPLEFORMAT_INT,
                      (size_t)r->width * r->spp, out, r->threads);
    if (!r->raw_private) r->raw.data = NULL;
    if (premultiplied(r, out)) tiff_unpremultiply(out, r->threads);
    return IP_OK;
}

static int finish(tiff_reader *r, ip_image *out)
{
    if (r->result == TIFF_PALETTE) return expand_palette(r, out);
    if (r->ycbcr && !subsampled(r)) tiff_ycbcr_in_place(r->ycbcr, &r->raw, r->threads);
    if (r->bps < 8) scale_to_8bit(&r->raw, r->bps, r->threads);
    if (r->photometric == PHOTOMETRIC_MINISWHITE) {
        int colour = r->spp == 2 || r->extra_count >= r->spp ? 1 : r->spp - r->extra_count;
        unsigned max = r->bps <= 8 ? 255u : (1u << r->bps) - 1;
        invert_colour(&r->raw, colour, max, r->threads);
    }
    return convert(r, out);
}

/* libtiff's warnings over the whole decode: the image with a warning, or a refusal. */
static int settle_warnings(tiff_reader *r)
{
    return r->seen.count ? io_warn(r->opt, r->seen.count, r->seen.first, r->err, r->errlen) : IP_OK;
}

/* Every limit is checked before the image is allocated. */
static int decode(tiff_reader *r, ip_image *out)
{
    block_layout l = { 0 };
    int rc = read_tags(r);
    if (!rc) rc = check_samples(r);
    if (!rc) rc = check_colour(r);
    if (!rc) rc = check_layout(r);
    if (!rc) rc = check_shape(r);
    if (!rc) rc = TIFFIsTiled(r->tif) ? tile_layout(r, &l) : strip_layout(r, &l);
    if (!rc) rc = alloc_raw(r);
    if (!rc) rc = read_blocks(r, &l);
    if (!rc) rc = finish(r, out);
    if (!rc) rc = settle_warnings(r);
    return rc;
}

/* --page N: the Nth directory, counting from 0. */
static int open_page(tiff_reader *r)
{
    if (r->opt->page == 0) return IP_OK;
    tdir_t pages = TIFFNumberOfDirectories(r->tif);
    if (r->opt->page < pages && TIFFSetDirectory(r->tif, (tdir_t)r->opt->page)) return IP_OK;
    if (r->opt->page < pages) return corrupt(r, "cannot read the page's directory");
    snprintf(r->err, r->errlen, "TIFF has %u page%s (counted from 0); there is no page %u", (unsigned)pages,
             pages == 1 ? "" : "s", r->opt->page);
    return IP_EINVAL;
}

int io_read_tiff(int fd, const io_options *opt, ip_image *out, char *err, size_t errlen)
{
    tiff_reader r = { .err = err, .errlen = errlen, .opt = opt, .threads = io_thread_count(opt) };
    r.cursor = (tiff_fd_cursor){ fd, 0 };
    r.log.warnings = &r.seen;
    r.tif = tiff_open_shared(&r.cursor, &r.log);
    if (!r.tif) return corrupt(&r, "cannot parse the header");
    int rc = open_page(&r);
    if (!rc) rc = decode(&r, out);
    TIFFClose(r.tif);
    tiff_ycbcr_free(r.ycbcr);
    if (r.raw_private) img_free(&r.raw);
    else io_image_free(opt, &r.raw);
    if (rc) io_image_free(opt, out);
    return rc;
}
