/* What runs of the GPU's TIFF codec without a GPU: zlib's frame made and split as zlib makes it
 * (checked against zlib's own streams and adler32), which TIFFs (written here by libtiff) the
 * GPU reader takes, with the CPU reader's limits, and libtiff's verdict on a strip nvCOMP
 * refuses: one that inflates past its block reads (the CPU reader's pixels libtiff's), a short
 * or damaged one does not. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <tiffio.h>
#include <zlib.h>
#include "base/image.h"
#include "io/tiff_gpu_layout.h"
#include "io/zlib_frame.h"
#include "testutil.h"
#include "tiff_testutil.h"

static void frame_matches_zlib(int level, size_t n, tu_rng *r)
{
    unsigned char *data = malloc(n + 1), *z = NULL;
    uLongf zlen = compressBound((uLong)n);
    z = malloc(zlen);
    for (size_t i = 0; i < n; i++) data[i] = (unsigned char)(tu_next(r) % 7 + i / 64);
    CHECK(compress2(z, &zlen, data, (uLong)n, level) == Z_OK, "compress2");
    size_t body = 0;
    uint32_t adler = 0;
    CHECK(zlib_frame_split(z, zlen, &body, &adler) == 0, "level %d n %zu", level, n);
    CHECK(adler == (uint32_t)adler32(adler32(0, NULL, 0), data, (uInt)n), "adler level %d n %zu", level, n);
    CHECK(body == zlen - 6, "body %zu of %lu", body, (unsigned long)zlen);
    uint8_t head[2], tail[4];
    zlib_frame_header(level, head);
    CHECK(head[0] == z[0] && head[1] == z[1], "level %d: %02x%02x, zlib %02x%02x", level, head[0], head[1], z[0], z[1]);
    zlib_frame_trailer(adler, tail);
    CHECK(memcmp(tail, z + zlen - 4, 4) == 0, "trailer level %d", level);
    z[1] ^= 0x20;   /* a preset dictionary (and a bad check) */
    CHECK(zlib_frame_split(z, zlen, &body, &adler) != 0, "preset dictionary taken");
    z[1] ^= 0x20;
    z[0] = 0x79;    /* method 9 */
    CHECK(zlib_frame_split(z, zlen, &body, &adler) != 0, "method 9 taken");
    CHECK(zlib_frame_split(z, 7, &body, &adler) != 0 || zlen > 7, "short");
    free(data);
    free(z);
}

typedef struct {
    const char *mode;        /* "w": little-endian, "wb": big-endian */
    uint16_t compression, photometric, planar, bps, spp, format, predictor;
    int tiled;
    uint32_t width, height;
} tiff_spec;

static void write_tiff(const char *path, const tiff_spec *t)
{
    TIFF *tif = TIFFOpen(path, t->mode);
    CHECK(tif != NULL, "open %s", path);
    if (!tif) return;
    TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, t->width);
    TIFFSetField(tif, TIFFTAG_IMAGELENGTH, t->height);
    TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, t->bps);
    TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, t->spp);
    TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, t->format);
    TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, t->photometric);
    TIFFSetField(tif, TIFFTAG_PLANARCONFIG, t->planar);
    TIFFSetField(tif, TIFFTAG_COMPRESSION, t->compression);
    if (t->predictor > 1) TIFFSetField(tif, TIFFTAG_PREDICTOR, t->predictor);
    if (t->photometric == PHOTOMETRIC_YCBCR) TIFFSetField(tif, TIFFTAG_YCBCRSUBSAMPLING, 1, 1);
    size_t sample = t->bps / 8;
    if (t->tiled) {
        TIFFSetField(tif, TIFFTAG_TILEWIDTH, 16);
        TIFFSetField(tif, TIFFTAG_TILELENGTH, 16);
        size_t bytes = (size_t)TIFFTileSize(tif);
        unsigned char *buf = calloc(1, bytes);
        for (uint32_t ty = 0; ty < t->height; ty += 16)
            for (uint32_t tx = 0; tx < t->width; tx += 16)
                TIFFWriteTile(tif, buf, tx, ty, 0, 0);
        free(buf);
    } else {
        TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, 3);
        size_t row = (size_t)t->width * (t->planar == PLANARCONFIG_SEPARATE ? 1 : t->spp) * sample;
        unsigned char *buf = calloc(1, row);
        unsigned planes = t->planar == PLANARCONFIG_SEPARATE ? t->spp : 1;
        for (unsigned p = 0; p < planes; p++)
            for (uint32_t y = 0; y < t->height; y++) TIFFWriteScanline(tif, buf, y, (uint16_t)p);
        free(buf);
    }
    TIFFClose(tif);
}

/* IP_OK: the GPU takes it (and its limits pass); else the code the layout gave. */
static int verdict(const tiff_spec *t, const io_options *opt, char *why, size_t whylen)
{
    char path[512];
    snprintf(path, sizeof path, "%s/gpu_layout.tif", tu_tmpdir());
    write_tiff(path, t);
    io_input in;
    int rc = io_input_open(path, &in, why, whylen);
    if (rc) return rc;
    tiff_gpu_layout l;
    rc = tiff_gpu_layout_open(&l, &in, opt, why, whylen);
    if (!rc) rc = tiff_gpu_layout_limits(&l, opt, why, whylen);
    tiff_gpu_layout_close(&l);
    io_input_close(&in);
    return rc;
}

static void decisions(void)
{
    io_options opt;
    io_default_options(&opt);
    char why[256];
    const tiff_spec base = { "w", COMPRESSION_ADOBE_DEFLATE, PHOTOMETRIC_RGB, PLANARCONFIG_CONTIG, 8, 3,
                             SAMPLEFORMAT_UINT, PREDICTOR_HORIZONTAL, 0, 37, 11 };
    tiff_spec t = base;
    CHECK(verdict(&t, &opt, why, sizeof why) == IP_OK, "deflate RGB strips: %s", why);
    t.tiled = 1;
    CHECK(verdict(&t, &opt, why, sizeof why) == IP_OK, "deflate RGB tiles: %s", why);
    t = base, t.compression = COMPRESSION_ZSTD, t.bps = 16, t.spp = 4;
    CHECK(verdict(&t, &opt, why, sizeof why) == IP_OK, "zstd 16-bit RGBA: %s", why);
    t = base, t.compression = COMPRESSION_DEFLATE, t.photometric = PHOTOMETRIC_MINISBLACK, t.spp = 1, t.width = 1, t.height = 1;
    CHECK(verdict(&t, &opt, why, sizeof why) == IP_OK, "old-style deflate 1x1 gray: %s", why);
    t = base, t.mode = "wb";
    CHECK(verdict(&t, &opt, why, sizeof why) == IP_OK, "big-endian 8-bit: %s", why);
    t = base, t.mode = "wb", t.bps = 16;
    CHECK(verdict(&t, &opt, why, sizeof why) == IP_EUNSUPPORTED && strstr(why, "byte order"), "big-endian 16-bit: %s", why);
    t = base, t.compression = COMPRESSION_LZW;
    CHECK(verdict(&t, &opt, why, sizeof why) == IP_EUNSUPPORTED && strstr(why, "compression"), "LZW: %s", why);
    t = base, t.photometric = PHOTOMETRIC_YCBCR, t.predictor = 1;
    CHECK(verdict(&t, &opt, why, sizeof why) == IP_EUNSUPPORTED && strstr(why, "colour"), "YCbCr: %s", why);
    t = base, t.planar = PLANARCONFIG_SEPARATE;
    CHECK(verdict(&t, &opt, why, sizeof why) == IP_EUNSUPPORTED && strstr(why, "planes"), "planar: %s", why);
    t = base, t.bps = 32, t.format = SAMPLEFORMAT_IEEEFP, t.predictor = PREDICTOR_FLOATINGPOINT;
    CHECK(verdict(&t, &opt, why, sizeof why) == IP_EUNSUPPORTED && strstr(why, "predictor"), "float predictor: %s", why);
    t.predictor = 1;
    CHECK(verdict(&t, &opt, why, sizeof why) == IP_OK, "float without predictor: %s", why);
    t = base, t.format = SAMPLEFORMAT_INT;
    CHECK(verdict(&t, &opt, why, sizeof why) == IP_EUNSUPPORTED, "signed: %s", why);
    t = base;
    opt.max_tiff_blocks = 3;   /* 11 rows in strips of 3: 4 strips */
    CHECK(verdict(&t, &opt, why, sizeof why) == IP_ELIMIT && strstr(why, "--max-tiff-blocks"), "blocks: %s", why);
    io_default_options(&opt);
    opt.max_pixels = 100;
    CHECK(verdict(&t, &opt, why, sizeof why) == IP_ELIMIT, "pixels: %s", why);
}

/* tiff_gpu_layout_cpu_reads on strip b of the file, asking for the strip's own rows. */
static int cpu_reads(const char *path, const ttu_strips *s, uint32_t b)
{
    io_options opt;
    io_default_options(&opt);
    char why[256];
    io_input in;
    int rc = io_input_open(path, &in, why, sizeof why);
    if (rc) return rc;
    tiff_gpu_layout l;
    uint32_t rows = s->height - b * s->rows_per_strip < s->rows_per_strip ? s->height - b * s->rows_per_strip
                                                                          : s->rows_per_strip;
    rc = tiff_gpu_layout_open(&l, &in, &opt, why, sizeof why);
    if (!rc) rc = tiff_gpu_layout_cpu_reads(&l, b, (uint64_t)rows * s->width);
    tiff_gpu_layout_close(&l);
    io_input_close(&in);
    return rc;
}

/* io_read's pixels: the pattern's, and libtiff's own. */
static void cpu_reader_pixels(const char *path, const char *what)
{
    io_options opt;
    io_default_options(&opt);
    char err[256] = "";
    ip_image img = { 0 };
    int rc = io_read(path, &opt, &img, err, sizeof err);
    CHECK(rc == IP_OK, "%s: io_read: %s", what, err);
    long off_pattern = 0, off_libtiff = rc == IP_OK ? ttu_differences(path, &img, &off_pattern) : 0;
    CHECK(off_libtiff == 0 && off_pattern == 0, "%s: %ld pixels not libtiff's (-1: it does not read it), %ld not the "
          "pattern's", what, off_libtiff, off_pattern);
    img_free(&img);
}

static void odd_strips(void)
{
    static const struct { uint32_t strip; int rows, reads; const char *what; } cases[] = {
        { 1, 5, IP_OK, "strip 1 inflating past its block" },
        { 1, 3, IP_OK, "strip 1 as it should be" },
        { 3, 6, IP_OK, "the last strip inflating past its block" },
        { 1, 2, IP_EFORMAT, "strip 1 short" },
        { 1, TTU_DAMAGED, IP_EFORMAT, "strip 1 damaged" },
    };
    char path[512];
    snprintf(path, sizeof path, "%s/odd_strip.tif", tu_tmpdir());
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ttu_strips s = { 37, 11, 3, cases[i].strip, cases[i].rows };   /* strips of 3, 3, 3 and 2 rows */
        CHECK(ttu_write_strips(path, &s) == 0, "%s: cannot write it", cases[i].what);
        CHECK(cpu_reads(path, &s, cases[i].strip) == cases[i].reads, "%s: libtiff's verdict", cases[i].what);
        CHECK(cpu_reads(path, &s, 0) == IP_OK || cases[i].strip == 0, "%s: strip 0 does not read", cases[i].what);
        if (cases[i].reads == IP_OK) {
            cpu_reader_pixels(path, cases[i].what);
            continue;
        }
        io_options opt;
        io_default_options(&opt);
        char err[256] = "";
        ip_image img = { 0 };
        CHECK(io_read(path, &opt, &img, err, sizeof err) == IP_EFORMAT, "%s: the CPU reader took it", cases[i].what);
        printf("%s: the CPU reader says: %s\n", cases[i].what, err);
        img_free(&img);
    }
}

int main(void)
{
    tu_rng r;
    tu_seed(&r, 29);
    const size_t sizes[] = { 1, 2, 13, 5551, 65537, 300001 };
    const int levels[] = { 1, 3, 6, 9 };
    for (int i = 0; i < 6; i++)
        for (int k = 0; k < 4; k++) frame_matches_zlib(levels[k], sizes[i], &r);
    decisions();
    odd_strips();
    return tu_finish();
}
