/* io: TIFF written and read by several threads. Every depth, channel count and compression
 * round-trips at odd sizes; the file is byte-identical for 1, 2, 3 and 8 threads and libtiff
 * itself reads back the exact samples; a corrupt strip mid-file is one error whatever the
 * thread count. (Files cut short: test_io_corrupt.) */
#include "test_io_helpers.h"
#include <math.h>
#include <tiffio.h>

static char err[512];
static const int thread_counts[] = { 1, 2, 3, 8 };
#define N_THREADS (int)(sizeof thread_counts / sizeof thread_counts[0])

static const char *type_name(ip_dtype t)
{
    return t == IP_U8 ? "u8" : t == IP_U16 ? "u16" : "f32";
}

/* A gradient (so the predictor and deflate have work) plus seeded noise (so a misplaced
 * sample shows). */
static ip_image test_image(int w, int h, int c, ip_dtype t, uint64_t seed)
{
    ip_image img = { 0 };
    ip_shape s = { w, h, c, t };
    CHECK(img_alloc(&img, &s, UINT64_MAX, err, sizeof err) == IP_OK, "alloc: %s", err);
    tu_rng rng;
    tu_seed(&rng, seed);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int k = 0; k < c; k++) {
                unsigned char *row = (unsigned char *)img.data + (size_t)y * (size_t)img.stride;
                size_t i = (size_t)x * c + k;
                uint32_t noise = tu_next(&rng);
                if (t == IP_U8) row[i] = (unsigned char)(x + 3 * y + 40 * k + noise % 5);
                else if (t == IP_U16) ((uint16_t *)row)[i] = (uint16_t)(97 * x + 301 * y + 9000 * k + noise % 300);
                else ((float *)row)[i] = sinf((float)x * 0.05f + (float)k) * (float)y + (float)(noise % 1000) * 1e-4f;
            }
    return img;
}

static int same_pixels(const ip_image *a, const ip_image *b)
{
    if (a->shape.width != b->shape.width || a->shape.height != b->shape.height ||
        a->shape.channels != b->shape.channels || a->shape.dtype != b->shape.dtype)
        return 0;
    size_t row = img_row_bytes(&a->shape);
    for (int y = 0; y < a->shape.height; y++)
        if (memcmp((const char *)a->data + (size_t)y * (size_t)a->stride,
                   (const char *)b->data + (size_t)y * (size_t)b->stride, row) != 0)
            return 0;
    return 1;
}

/* libtiff, not imgpipe, reads the file: tags as promised and every sample as written. */
static void check_with_libtiff(const char *name, const char *path, const ip_image *img, uint16_t compression)
{
    TIFF *tif = TIFFOpen(path, "r");
    CHECK(tif != NULL, "%s: libtiff cannot open", name);
    if (!tif) return;
    uint32_t w = 0, h = 0, rps = 0;
    uint16_t spp = 0, bps = 0, format = 0, comp = 0, predictor = PREDICTOR_NONE, planar = 0;
    TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &w);
    TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &h);
    TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
    TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &bps);
    TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &format);
    TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &comp);
    if (comp != COMPRESSION_NONE) TIFFGetFieldDefaulted(tif, TIFFTAG_PREDICTOR, &predictor);   /* no tag without a codec */
    TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &planar);
    TIFFGetFieldDefaulted(tif, TIFFTAG_ROWSPERSTRIP, &rps);
    const ip_shape *s = &img->shape;
    int want_predictor = compression == COMPRESSION_NONE ? PREDICTOR_NONE
                       : s->dtype == IP_F32 ? PREDICTOR_FLOATINGPOINT : PREDICTOR_HORIZONTAL;
    CHECK(w == (uint32_t)s->width && h == (uint32_t)s->height && spp == s->channels &&
          bps == ip_dtype_size(s->dtype) * 8 && planar == PLANARCONFIG_CONTIG,
          "%s: libtiff sees %ux%ux%u, %u bits", name, w, h, spp, bps);
    CHECK(format == (s->dtype == IP_F32 ? SAMPLEFORMAT_IEEEFP : SAMPLEFORMAT_UINT), "%s: sample format %u", name, format);
    CHECK(comp == compression && predictor == want_predictor, "%s: compression %u predictor %u", name, comp, predictor);
    size_t row = img_row_bytes(s);
    unsigned char *buf = malloc(row * (rps ? rps : 1));
    int bad = 0;
    for (uint32_t strip = 0; buf && rps && strip < TIFFNumberOfStrips(tif) && !bad; strip++) {
        uint32_t y0 = strip * rps, rows = h - y0 < rps ? h - y0 : rps;
        bad = TIFFReadEncodedStrip(tif, strip, buf, (tmsize_t)(row * rows)) != (tmsize_t)(row * rows);
        for (uint32_t y = 0; y < rows && !bad; y++)
            bad = memcmp(buf + y * row, (const char *)img->data + (size_t)(y0 + y) * (size_t)img->stride, row) != 0;
    }
    CHECK(buf && rps && !bad, "%s: libtiff reads other samples", name);
    free(buf);
    TIFFClose(tif);
}

static const struct {
    io_tiff_compression option;
    uint16_t tag;
    const char *name;
} compressions[] = {
    { IO_TIFF_DEFLATE, COMPRESSION_ADOBE_DEFLATE, "deflate" },
    { IO_TIFF_LZW, COMPRESSION_LZW, "lzw" },
    { IO_TIFF_ZSTD, COMPRESSION_ZSTD, "zstd" },
    { IO_TIFF_NONE, COMPRESSION_NONE, "none" },
};

/* Writes with every thread count, expects the same bytes each time, then reads the file
 * back with libtiff and with io_read at every thread count. */
static void round_trip(int w, int h, int c, ip_dtype t, int ci)
{
    if (!TIFFIsCODECConfigured(compressions[ci].tag)) return;
    char name[96];
    snprintf(name, sizeof name, "%dx%dx%d %s %s", w, h, c, type_name(t), compressions[ci].name);
    ip_image img = test_image(w, h, c, t, (uint64_t)(w * 7919 + h * 31 + c * 5 + t));
    io_options opt;
    io_default_options(&opt);
    opt.tiff_compression = compressions[ci].option;
    unsigned char *first = NULL;
    size_t first_size = 0;
    char path[512];
    for (int i = 0; i < N_THREADS; i++) {
        opt.threads = thread_counts[i];
        snprintf(path, sizeof path, "%s", tio_path("threads.tif"));
        int rc = io_write(path, &img, &opt, err, sizeof err);
        CHECK(rc == IP_OK, "%s, %d threads: write: %s", name, thread_counts[i], err);
        size_t size = 0;
        unsigned char *bytes = tio_slurp(path, &size);
        if (i == 0) {
            first = bytes, first_size = size;
            check_with_libtiff(name, path, &img, compressions[ci].tag);
            continue;
        }
        CHECK(bytes && size == first_size && memcmp(bytes, first, size) == 0,
              "%s: %d threads write other bytes (%zu vs %zu)", name, thread_counts[i], size, first_size);
        free(bytes);
    }
    for (int i = 0; i < N_THREADS; i++) {
        opt.threads = thread_counts[i];
        ip_image back = { 0 };
        int rc = io_read(path, &opt, &back, err, sizeof err);
        CHECK(rc == IP_OK && same_pixels(&img, &back), "%s, %d threads: read back differs (%s)", name,
              thread_counts[i], rc ? err : "pixels");
        img_free(&back);
    }
    free(first);
    img_free(&img);
}

static void test_round_trips(void)
{
    static const int sizes[][2] = { { 1, 1 }, { 1, 37 }, { 37, 1 }, { 131, 97 } };
    static const ip_dtype types[] = { IP_U8, IP_U16, IP_F32 };
    for (int ti = 0; ti < 3; ti++)
        for (int c = 1; c <= 4; c++)
            for (int ci = 0; ci < 4; ci++) {
                for (int si = 0; si < 4; si++) round_trip(sizes[si][0], sizes[si][1], c, types[ti], ci);
                /* Several 256 KiB strips and a short last one: the threads share real work. */
                if (c == 1 || c == 3) round_trip(1021, 257, c, types[ti], ci);
            }
}

/* 1021x257 RGB u8 makes 4 strips; 2 columns of 16-bit gray make one strip of every row. */
static void test_strip_heights(void)
{
    io_options opt;
    io_default_options(&opt);
    struct { int w, h, c; ip_dtype t; uint32_t rps; } cases[] = {
        { 1021, 257, 3, IP_U8, 85 }, { 2, 300000, 1, IP_U16, 65536 }, { 70000, 3, 1, IP_F32, 1 } };
    for (int i = 0; i < 3; i++) {
        ip_image img = test_image(cases[i].w, cases[i].h, cases[i].c, cases[i].t, 40 + (uint64_t)i);
        const char *path = tio_path("rps.tif");
        CHECK(io_write(path, &img, &opt, err, sizeof err) == IP_OK, "write: %s", err);
        TIFF *tif = TIFFOpen(path, "r");
        uint32_t rps = 0;
        if (tif) TIFFGetField(tif, TIFFTAG_ROWSPERSTRIP, &rps);
        CHECK(rps == cases[i].rps, "%dx%d: %u rows per strip, want %u", cases[i].w, cases[i].h, rps, cases[i].rps);
        if (tif) TIFFClose(tif);
        img_free(&img);
    }
}

/* Strip `strip`'s offset and size in a file libtiff wrote. */
static int strip_place(const char *path, uint32_t strip, uint64_t *offset, uint64_t *size)
{
    TIFF *tif = TIFFOpen(path, "r");
    if (!tif) return -1;
    *offset = TIFFGetStrileOffset(tif, strip);
    *size = TIFFGetStrileByteCount(tif, strip);
    TIFFClose(tif);
    return *offset && *size ? 0 : -1;
}

static int corrupt_strip(unsigned char *bytes, size_t n, const char *path, uint32_t strip)
{
    uint64_t off = 0, size = 0;
    if (strip_place(path, strip, &off, &size) != 0 || off + size > n) return -1;
    for (uint64_t i = 0; i < size; i++) bytes[off + i] = (unsigned char)(0xA5 ^ (i * 29));
    return 0;
}

/* Reads path with every thread count: the same one-line IP_EFORMAT each time, no image. */
static void expect_same_failure(const char *what, const char *path, const char *needle)
{
    io_options opt;
    io_default_options(&opt);
    char first[512] = "";
    for (int i = 0; i < N_THREADS; i++) {
        opt.threads = thread_counts[i];
        ip_image img = { 0 };
        int rc = io_read(path, &opt, &img, err, sizeof err);
        CHECK(rc == IP_EFORMAT && img.data == NULL, "%s, %d threads: got %d", what, thread_counts[i], rc);
        CHECK(strchr(err, '\n') == NULL && strstr(err, needle) != NULL, "%s: message '%s'", what, err);
        if (i == 0) snprintf(first, sizeof first, "%s", err);
        else CHECK(strcmp(err, first) == 0, "%s: %d threads say '%s', 1 thread '%s'", what, thread_counts[i], err, first);
        img_free(&img);
    }
}

static void test_corrupt_strips(void)
{
    ip_image img = test_image(1021, 257, 3, IP_U8, 77);
    io_options opt;
    io_default_options(&opt);
    const char *path = tio_path("good.tif");
    CHECK(io_write(path, &img, &opt, err, sizeof err) == IP_OK, "write: %s", err);
    size_t n = 0;
    unsigned char *bytes = tio_slurp(path, &n);
    CHECK(bytes != NULL, "slurp");
    if (!bytes) return;
    unsigned char *bad = malloc(n);
    memcpy(bad, bytes, n);
    CHECK(corrupt_strip(bad, n, path, 2) == 0, "strip 2 not found");
    const char *bad_path = tio_path("bad_strip.tif");
    tio_spit(bad_path, bad, n);
    expect_same_failure("corrupt strip 2", bad_path, "truncated or corrupt TIFF: ");

    /* Two bad strips: whichever thread meets the later one first, the earlier one is named. */
    CHECK(corrupt_strip(bad, n, path, 1) == 0 && corrupt_strip(bad, n, path, 3) == 0, "strips 1, 3 not found");
    tio_spit(bad_path, bad, n);
    expect_same_failure("corrupt strips 1-3", bad_path, "truncated or corrupt TIFF: ");

    free(bad);
    free(bytes);
    img_free(&img);
}

int main(void)
{
    TIFFSetWarningHandler(NULL);
    test_round_trips();
    test_strip_heights();
    test_corrupt_strips();
    return tu_finish();
}
