#include "tiff_testutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tiffio.h>
#include <zlib.h>
#include "imgpipe/plugin.h"
#include "io/io.h"
#include "io/io_tiff_handle.h"

uint8_t ttu_pixel(uint32_t x, uint32_t y)
{
    return (uint8_t)(x * 7 + y * 31 + (x * y) / 5);
}

static uint32_t own_rows(const ttu_strips *s, uint32_t strip)
{
    uint32_t y0 = strip * s->rows_per_strip;
    return s->height - y0 < s->rows_per_strip ? s->height - y0 : s->rows_per_strip;
}

/* Rows y0 .. y0 + n - 1 of the pattern, packed. */
static uint8_t *pattern_rows(const ttu_strips *s, uint32_t y0, uint32_t n)
{
    uint8_t *rows = malloc((size_t)s->width * n + 1);
    for (uint32_t y = 0; rows && y < n; y++)
        for (uint32_t x = 0; x < s->width; x++) rows[(size_t)y * s->width + x] = ttu_pixel(x, y0 + y);
    return rows;
}

/* One deflate call's worth of input; Z_OK or Z_STREAM_END (flush Z_FINISH) when it went in whole. */
static int feed(z_stream *z, const uint8_t *data, size_t len, int flush)
{
    z->next_in = (Bytef *)data;
    z->avail_in = (uInt)len;
    int rc = deflate(z, flush);
    return z->avail_in == 0 && z->avail_out > 0 ? rc : Z_BUF_ERROR;
}

/* The strip's zlib stream: its own rows, then (sync-flushed unless crossing) the rest; malloc'd,
 * *len bytes. */
static uint8_t *compress_strip(const ttu_strips *s, uint32_t strip, uint32_t data_rows, int crossing, size_t *len)
{
    uint32_t own = own_rows(s, strip) < data_rows && !crossing ? own_rows(s, strip) : 0;   /* rows before the flush */
    size_t row = s->width, cap = compressBound((uLong)(row * data_rows)) + 64;
    uint8_t *rows = pattern_rows(s, strip * s->rows_per_strip, data_rows), *out = malloc(cap);
    z_stream z;
    memset(&z, 0, sizeof z);
    int ok = rows && out && deflateInit(&z, 6) == Z_OK;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    if (ok && own) ok = feed(&z, rows, row * own, Z_SYNC_FLUSH) == Z_OK;
    if (ok) ok = feed(&z, rows + row * own, row * (data_rows - own), Z_FINISH) == Z_STREAM_END;
    *len = cap - z.avail_out;
    deflateEnd(&z);
    free(rows);
    if (!ok) free(out);
    return ok ? out : NULL;
}

static TIFF *open_strips(const char *path, const ttu_strips *s)
{
    TIFF *tif = TIFFOpen(path, "w");
    int ok = tif && TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, s->width) && TIFFSetField(tif, TIFFTAG_IMAGELENGTH, s->height) &&
             TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, 8) && TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, 1) &&
             TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK) &&
             TIFFSetField(tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG) &&
             TIFFSetField(tif, TIFFTAG_COMPRESSION, COMPRESSION_ADOBE_DEFLATE) &&
             TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, s->rows_per_strip);
    if (!ok && tif) TIFFClose(tif);
    return ok ? tif : NULL;
}

static int write_strips(const char *path, const ttu_strips *s, int crossing)
{
    static const uint8_t damaged[16] = { 0x78, 0x9c, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                         0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1 };   /* BTYPE 3: reserved */
    TIFF *tif = open_strips(path, s);
    uint32_t strips = (s->height + s->rows_per_strip - 1) / s->rows_per_strip;
    int ok = tif != NULL;
    for (uint32_t b = 0; ok && b < strips; b++) {
        int odd = b == s->odd_strip;
        if (odd && s->odd_rows == TTU_DAMAGED) {
            ok = TIFFWriteRawStrip(tif, b, (void *)damaged, sizeof damaged) == (tmsize_t)sizeof damaged;
            continue;
        }
        size_t len = 0;
        uint8_t *z = compress_strip(s, b, odd ? (uint32_t)s->odd_rows : own_rows(s, b), odd && crossing, &len);
        ok = z && TIFFWriteRawStrip(tif, b, z, (tmsize_t)len) == (tmsize_t)len;
        free(z);
    }
    if (tif) TIFFClose(tif);
    return ok ? 0 : -1;
}

int ttu_write_strips(const char *path, const ttu_strips *s)
{
    return write_strips(path, s, 0);
}

int ttu_write_crossing(const char *path, const ttu_strips *s)
{
    return write_strips(path, s, 1);
}

/* The file's pixels as libtiff reads them, packed: malloc'd; NULL when a strip does not read. */
static uint8_t *libtiff_pixels(const char *path, size_t *bytes)
{
    TIFF *tif = TIFFOpen(path, "r");
    uint32_t w = 0, h = 0, rps = 0;
    int ok = tif && TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &w) && TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &h) &&
             TIFFGetField(tif, TIFFTAG_ROWSPERSTRIP, &rps) && rps > 0;
    *bytes = (size_t)w * h;
    uint8_t *px = ok ? calloc(*bytes + 1, 1) : NULL;
    for (uint32_t y = 0; px && y < h; y += rps) {
        tmsize_t want = (tmsize_t)((size_t)w * (h - y < rps ? h - y : rps));
        if (TIFFReadEncodedStrip(tif, y / rps, px + (size_t)y * w, want) != want) {
            free(px);
            px = NULL;
        }
    }
    if (tif) TIFFClose(tif);
    return px;
}

long ttu_differences(const char *path, const ip_image *img, long *off_pattern)
{
    size_t bytes = 0;
    uint8_t *lib = libtiff_pixels(path, &bytes);
    uint32_t w = (uint32_t)img->shape.width, h = (uint32_t)img->shape.height;
    int same_shape = bytes == (size_t)w * h;
    long differ = same_shape ? 0 : (long)bytes;   /* another shape: all of it */
    *off_pattern = 0;
    for (uint32_t y = 0; lib && same_shape && y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            uint8_t v = ((const uint8_t *)img->data)[(size_t)y * (size_t)img->stride + x];
            differ += v != lib[(size_t)y * w + x];
            *off_pattern += v != ttu_pixel(x, y);
        }
    if (!lib) return -1;
    free(lib);
    return differ;
}

int ttu_libtiff_reads(const char *path)
{
    size_t bytes = 0;
    uint8_t *lib = libtiff_pixels(path, &bytes);
    int reads = lib != NULL;
    free(lib);
    return reads;
}

/* The strips compressed by codec into out[0 .. strips - 1]. */
static int batch_compress_all(const tiff_strip_batch_codec *codec, const ip_image *img, const tiff_strip_format *f,
                              uint32_t max_strips, tiff_strip_bytes *out, char *err, size_t errlen)
{
    uint32_t rps = f->rows_per_strip, h = (uint32_t)img->shape.height;
    uint32_t strips = (h + rps - 1) / rps;
    size_t row = img_row_bytes(&img->shape);
    void *state = NULL;
    int rc = codec->open(codec, 0, f, max_strips, &state, err, errlen);
    tiff_strip_job *jobs = calloc(max_strips, sizeof *jobs);
    if (rc == IP_OK && !jobs) rc = IP_ENOMEM;
    for (uint32_t k0 = 0; rc == IP_OK && k0 < strips; k0 += max_strips) {
        uint32_t n = strips - k0 < max_strips ? strips - k0 : max_strips;
        for (uint32_t j = 0; j < n; j++) {
            uint32_t k = k0 + j, rows = h - k * rps < rps ? h - k * rps : rps;
            jobs[j] = (tiff_strip_job){ k, (unsigned char *)img->data + (size_t)k * rps * img->stride, rows * row,
                                        &out[k] };
        }
        rc = codec->compress(state, jobs, n, err, errlen);
    }
    if (state) codec->close(state);
    free(jobs);
    return rc;
}

int ttu_batch_round_trip(const tiff_strip_batch_codec *codec, const ip_image *img, const tiff_strip_format *f,
                         uint32_t max_strips, const char *path, char *err, size_t errlen)
{
    const ip_shape *shape = &img->shape;
    uint32_t rps = f->rows_per_strip, strips = ((uint32_t)shape->height + rps - 1) / rps;
    size_t row = img_row_bytes(shape);
    if ((size_t)img->stride != row) {
        snprintf(err, errlen, "the strips' rows must be packed");
        return IP_EINVAL;
    }
    tiff_strip_bytes *out = calloc(strips, sizeof *out);
    int rc = out ? batch_compress_all(codec, img, f, max_strips, out, err, errlen) : IP_ENOMEM;
    TIFF *tif = rc == IP_OK ? TIFFOpen(path, "w") : NULL;
    int ok = tif && tiff_set_image_tags(tif, shape, rps, f->compression);
    for (uint32_t k = 0; ok && k < strips; k++) ok = TIFFWriteRawStrip(tif, k, out[k].data, (tmsize_t)out[k].len) >= 0;
    if (tif) TIFFClose(tif);
    if (rc == IP_OK && !ok) {
        snprintf(err, errlen, "libtiff cannot write the strips");
        rc = IP_EIO;
    }
    for (uint32_t k = 0; out && k < strips; k++) free(out[k].data);
    free(out);
    io_options opt;
    io_default_options(&opt);
    ip_image back = { 0 };
    if (rc == IP_OK) rc = io_read(path, &opt, &back, err, errlen);
    int same = rc == IP_OK && back.shape.width == shape->width && back.shape.height == shape->height;
    for (int y = 0; same && y < shape->height; y++)
        same = memcmp((char *)back.data + (size_t)y * back.stride, (char *)img->data + (size_t)y * img->stride, row) == 0;
    if (rc == IP_OK && !same) {
        snprintf(err, errlen, "read back, the pixels differ");
        rc = IP_EFORMAT;
    }
    img_free(&back);
    return rc;
}

int ttu_write_libtiff(const char *path, const ip_image *img, uint32_t rps, uint16_t compression, uint16_t predictor,
                      int tiled)
{
    const ip_shape *s = &img->shape;
    TIFF *tif = TIFFOpen(path, "w");
    if (!tif) return -1;
    uint16_t bps = s->dtype == IP_U16 ? 16 : 8;
    TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, (uint32_t)s->width);
    TIFFSetField(tif, TIFFTAG_IMAGELENGTH, (uint32_t)s->height);
    TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, (uint16_t)s->channels);
    TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, bps);
    TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, s->channels >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK);
    if (s->channels == 2 || s->channels == 4) {
        uint16_t extra = EXTRASAMPLE_UNASSALPHA;
        TIFFSetField(tif, TIFFTAG_EXTRASAMPLES, 1, &extra);
    }
    TIFFSetField(tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
    TIFFSetField(tif, TIFFTAG_COMPRESSION, compression);
    if (predictor != PREDICTOR_NONE) TIFFSetField(tif, TIFFTAG_PREDICTOR, predictor);
    int ok = 1;
    size_t row = img_row_bytes(s);
    if (tiled) {
        TIFFSetField(tif, TIFFTAG_TILEWIDTH, 16);
        TIFFSetField(tif, TIFFTAG_TILELENGTH, 16);
        size_t px = row / (size_t)s->width;
        unsigned char *tile = calloc(16 * 16, px);
        for (uint32_t ty = 0; ok && tile && ty < (uint32_t)s->height; ty += 16)
            for (uint32_t tx = 0; ok && tx < (uint32_t)s->width; tx += 16) {
                memset(tile, 0, 16 * 16 * px);
                for (uint32_t y = 0; y < 16 && ty + y < (uint32_t)s->height; y++)
                    memcpy(tile + y * 16 * px, (char *)img->data + (ty + y) * row + tx * px,
                           ((uint32_t)s->width - tx < 16 ? (uint32_t)s->width - tx : 16) * px);
                ok = TIFFWriteTile(tif, tile, tx, ty, 0, 0) >= 0;
            }
        ok = ok && tile;
        free(tile);
    } else {
        TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, rps);
        for (uint32_t y0 = 0, k = 0; ok && y0 < (uint32_t)s->height; y0 += rps, k++) {
            uint32_t rows = (uint32_t)s->height - y0 < rps ? (uint32_t)s->height - y0 : rps;
            ok = TIFFWriteEncodedStrip(tif, k, (char *)img->data + y0 * row, (tmsize_t)(rows * row)) >= 0;
        }
    }
    TIFFClose(tif);
    return ok ? 0 : -1;
}

int ttu_image(ip_image *img, const ip_shape *shape, tu_rng *r)
{
    char err[256];
    if (img_alloc(img, shape, UINT64_MAX, err, sizeof err) != IP_OK) return -1;
    size_t bytes = img_row_bytes(shape) * (size_t)shape->height;
    for (size_t i = 0; i < bytes; i++) ((unsigned char *)img->data)[i] = (unsigned char)(tu_next(r) % 7 + i / 333);
    return 0;
}
