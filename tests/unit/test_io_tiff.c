/* io: TIFF layouts (tiles, separate planes, float, min-is-white, LZW, zstd, packbits, JPEG,
 * palette, low depths, 10 to 14 bits, signed and 32-bit integers, CMYK, odd sizes), written here
 * with libtiff itself and read back with 1, 2, 3 and 8 threads; unsupported kinds refused with
 * a message. */
#include "test_io_helpers.h"
#include <math.h>
#include <tiffio.h>

static char err[512];

typedef struct {
    int w, h, spp, bps, format, photometric, planar, compression, predictor;
    int tile_w, tile_h;      /* 0: strips of rows_per_strip rows */
    int rows_per_strip;
    int alpha;               /* the last sample is unassociated alpha */
    const char *mode;        /* "w", or "wb" for big-endian */
    uint16_t *cmap[3];
} tiff_spec;

/* Bytes a sample takes in the test's arrays: 1 up to 8 bits, 2 up to 16, 4 for 32. */
static size_t store_bytes(const tiff_spec *s)
{
    return s->bps <= 8 ? 1 : s->bps <= 16 ? 2 : 4;
}

static int whole_bytes(const tiff_spec *s)
{
    return s->bps == 8 || s->bps == 16 || s->bps == 32;
}

/* Sets sample i of a row packed bps bits a sample, first sample in the high bits. */
static void put_bits(unsigned char *row, size_t i, int bps, unsigned v)
{
    for (int b = 0; b < bps; b++) {
        size_t pos = i * (size_t)bps + (size_t)b;
        if ((v >> (bps - 1 - b)) & 1) row[pos >> 3] |= (unsigned char)(0x80u >> (pos & 7));
    }
}

/* Packs samples x0..x0+n-1 of row y, plane p (separate planes) or all samples (contiguous). */
static void pack(const tiff_spec *s, const void *samples, int p, int y, int x0, int n, unsigned char *dst)
{
    int per_px = s->planar == PLANARCONFIG_SEPARATE ? 1 : s->spp;
    size_t sb = store_bytes(s);
    for (int x = 0; x < n; x++)
        for (int k = 0; k < per_px; k++) {
            int ch = per_px == 1 ? p : k;
            size_t src = ((size_t)y * s->w + x0 + x) * s->spp + ch;
            size_t i = (size_t)x * per_px + k;
            if (whole_bytes(s))
                memcpy(dst + i * sb, (const unsigned char *)samples + src * sb, sb);
            else
                put_bits(dst, i, s->bps, sb == 1 ? ((const uint8_t *)samples)[src] : ((const uint16_t *)samples)[src]);
        }
}

static int set_fields(TIFF *tif, const tiff_spec *s)
{
    uint16_t extra[1] = { EXTRASAMPLE_UNASSALPHA };
    int ok = TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, s->w) && TIFFSetField(tif, TIFFTAG_IMAGELENGTH, s->h) &&
             TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, s->spp) && TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, s->bps) &&
             TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, s->format ? s->format : SAMPLEFORMAT_UINT) &&
             TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, s->photometric) &&
             TIFFSetField(tif, TIFFTAG_PLANARCONFIG, s->planar ? s->planar : PLANARCONFIG_CONTIG) &&
             TIFFSetField(tif, TIFFTAG_COMPRESSION, s->compression ? s->compression : COMPRESSION_NONE);
    if (ok && s->predictor) ok = TIFFSetField(tif, TIFFTAG_PREDICTOR, s->predictor);
    if (ok && s->alpha) ok = TIFFSetField(tif, TIFFTAG_EXTRASAMPLES, 1, extra);
    if (ok && s->cmap[0]) ok = TIFFSetField(tif, TIFFTAG_COLORMAP, s->cmap[0], s->cmap[1], s->cmap[2]);
    if (ok && s->tile_w) ok = TIFFSetField(tif, TIFFTAG_TILEWIDTH, s->tile_w) && TIFFSetField(tif, TIFFTAG_TILELENGTH, s->tile_h);
    if (ok && !s->tile_w) ok = TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, s->rows_per_strip ? s->rows_per_strip : s->h);
    return ok;
}

static int write_blocks(TIFF *tif, const tiff_spec *s, const void *samples)
{
    int planes = s->planar == PLANARCONFIG_SEPARATE ? s->spp : 1;
    int bw = s->tile_w ? s->tile_w : s->w;
    int bh = s->tile_w ? s->tile_h : (s->rows_per_strip ? s->rows_per_strip : s->h);
    size_t row_bytes = s->tile_w ? (size_t)TIFFTileRowSize(tif) : (size_t)TIFFScanlineSize(tif);
    unsigned char *buf = malloc(row_bytes * (size_t)bh);
    int ok = buf != NULL;
    uint32_t block = 0;
    for (int p = 0; p < planes && ok; p++)
        for (int y0 = 0; y0 < s->h && ok; y0 += bh)
            for (int x0 = 0; x0 < s->w && ok; x0 += bw, block++) {
                int rows = s->tile_w ? bh : (s->h - y0 < bh ? s->h - y0 : bh);
                memset(buf, 0, row_bytes * (size_t)bh);
                for (int y = 0; y < rows && y0 + y < s->h; y++)
                    pack(s, samples, p, y0 + y, x0, s->w - x0 < bw ? s->w - x0 : bw, buf + (size_t)y * row_bytes);
                tmsize_t n = (tmsize_t)(row_bytes * (size_t)rows);
                ok = s->tile_w ? TIFFWriteEncodedTile(tif, block, buf, n) >= 0
                               : TIFFWriteEncodedStrip(tif, block, buf, n) >= 0;
            }
    free(buf);
    return ok;
}

static int write_tiff(const char *path, const tiff_spec *s, const void *samples)
{
    TIFF *tif = TIFFOpen(path, s->mode ? s->mode : "w");
    if (!tif) return -1;
    int ok = set_fields(tif, s) && write_blocks(tif, s, samples);
    TIFFClose(tif);
    return ok ? 0 : -1;
}

/* Random samples of the spec's type: values below 2^bps (any bit pattern for signed and 32-bit
 * integers), or floats in [-1, 1). */
static void *random_samples(const tiff_spec *s, uint64_t seed)
{
    tu_rng rng;
    tu_seed(&rng, seed);
    size_t n = (size_t)s->w * s->h * s->spp;
    unsigned char *v = malloc(n * store_bytes(s));
    for (size_t i = 0; i < n; i++) {
        uint32_t r = tu_next(&rng);
        if (s->bps < 8) v[i] = (unsigned char)(r % (1u << s->bps));
        else if (s->bps == 8) v[i] = (unsigned char)r;
        else if (s->bps <= 16) ((uint16_t *)v)[i] = (uint16_t)(r % (1u << s->bps));
        else if (s->format == SAMPLEFORMAT_IEEEFP) ((float *)v)[i] = (float)((int32_t)r) / 2147483648.0f;
        else ((uint32_t *)v)[i] = r;
    }
    return v;
}

static double sample_at(const tiff_spec *s, const void *v, size_t i)
{
    int is_signed = s->format == SAMPLEFORMAT_INT;
    if (s->bps <= 8) return is_signed ? (double)((const int8_t *)v)[i] : (double)((const unsigned char *)v)[i];
    if (s->bps <= 16) return is_signed ? (double)((const int16_t *)v)[i] : (double)((const uint16_t *)v)[i];
    if (s->format == SAMPLEFORMAT_IEEEFP) return ((const float *)v)[i];
    return is_signed ? (double)((const int32_t *)v)[i] : (double)((const uint32_t *)v)[i];
}

typedef double (*expect_fn)(const tiff_spec *s, const void *v, size_t i, int ch);

static double same(const tiff_spec *s, const void *v, size_t i, int ch)
{
    (void)ch;
    return sample_at(s, v, i);
}

/* Reads path with `threads` codec threads and compares every value with want(). */
static void check_read(const char *name, const char *path, int threads, const tiff_spec *s, const void *v,
                       int out_channels, ip_dtype t, expect_fn want)
{
    io_options opt;
    io_default_options(&opt);
    opt.threads = threads;
    ip_image img;
    int rc = io_read(path, &opt, &img, err, sizeof err);
    CHECK(rc == IP_OK, "%s, %d threads: %s", name, threads, err);
    if (rc != IP_OK) return;
    int shape_ok = tio_same_shape(&img, s->w, s->h, out_channels, t);
    CHECK(shape_ok, "%s: got %dx%dx%d dtype %d", name, img.shape.width, img.shape.height, img.shape.channels,
          img.shape.dtype);
    int bad = 0;
    for (int y = 0; y < s->h && shape_ok; y++)
        for (int x = 0; x < s->w; x++)
            for (int k = 0; k < out_channels; k++) {
                size_t px = (size_t)y * s->w + x;
                double expect = want(s, v, px * s->spp + (out_channels == s->spp ? (size_t)k : 0), k);
                double got = tio_get(&img, x, y, k);
                if (got != expect && bad++ < 3) CHECK(0, "%s: (%d,%d,%d) = %g, want %g", name, x, y, k, got, expect);
            }
    CHECK(bad == 0, "%s, %d threads: %d wrong values", name, threads, bad);
    img_free(&img);
}

/* Writes the spec, reads it back with 1, 2, 3 and 8 threads and compares every value. */
static void check_tiff(const char *name, const tiff_spec *s, uint64_t seed, int out_channels, ip_dtype t,
                       expect_fn want)
{
    static const int thread_counts[] = { 1, 2, 3, 8 };
    if (s->compression && !TIFFIsCODECConfigured((uint16_t)s->compression)) return;
    void *v = random_samples(s, seed);
    char file[64];
    snprintf(file, sizeof file, "%s.tif", name);
    const char *path = tio_path(file);
    CHECK(write_tiff(path, s, v) == 0, "%s: libtiff write failed", name);
    for (int i = 0; i < 4; i++) check_read(name, path, thread_counts[i], s, v, out_channels, t, want);
    free(v);
}

static void test_layouts(void)
{
    tiff_spec tiled = { .w = 37, .h = 23, .spp = 3, .bps = 8, .photometric = PHOTOMETRIC_RGB, .tile_w = 16, .tile_h = 16 };
    check_tiff("tiled_rgb", &tiled, 1, 3, IP_U8, same);

    tiff_spec sep = { .w = 19, .h = 7, .spp = 4, .bps = 16, .photometric = PHOTOMETRIC_RGB,
                      .planar = PLANARCONFIG_SEPARATE, .rows_per_strip = 3, .alpha = 1 };
    check_tiff("separate_rgba16", &sep, 2, 4, IP_U16, same);

    tiff_spec sep_tiled = { .w = 20, .h = 18, .spp = 3, .bps = 8, .photometric = PHOTOMETRIC_RGB,
                            .planar = PLANARCONFIG_SEPARATE, .tile_w = 16, .tile_h = 16 };
    check_tiff("separate_tiled", &sep_tiled, 3, 3, IP_U8, same);

    tiff_spec flt = { .w = 11, .h = 5, .spp = 1, .bps = 32, .format = SAMPLEFORMAT_IEEEFP,
                      .photometric = PHOTOMETRIC_MINISBLACK, .rows_per_strip = 2 };
    check_tiff("float_gray", &flt, 4, 1, IP_F32, same);
    tiff_spec flt2 = flt;
    flt2.spp = 2;
    flt2.alpha = 1;
    flt2.compression = COMPRESSION_ADOBE_DEFLATE;
    flt2.predictor = PREDICTOR_FLOATINGPOINT;
    check_tiff("float_gray_alpha", &flt2, 5, 2, IP_F32, same);

    tiff_spec lzw = { .w = 29, .h = 13, .spp = 3, .bps = 8, .photometric = PHOTOMETRIC_RGB,
                      .compression = COMPRESSION_LZW, .predictor = PREDICTOR_HORIZONTAL, .rows_per_strip = 4 };
    check_tiff("lzw_rgb", &lzw, 6, 3, IP_U8, same);
    tiff_spec lzw16 = { .w = 8, .h = 3, .spp = 1, .bps = 16, .photometric = PHOTOMETRIC_MINISBLACK,
                        .compression = COMPRESSION_LZW };
    check_tiff("lzw_gray16", &lzw16, 7, 1, IP_U16, same);

    tiff_spec ga = { .w = 6, .h = 4, .spp = 2, .bps = 8, .photometric = PHOTOMETRIC_MINISBLACK, .alpha = 1 };
    check_tiff("gray_alpha", &ga, 8, 2, IP_U8, same);

    tiff_spec be = { .w = 5, .h = 3, .spp = 1, .bps = 16, .photometric = PHOTOMETRIC_MINISBLACK, .mode = "wb" };
    check_tiff("big_endian16", &be, 9, 1, IP_U16, same);
    tiff_spec bef = { .w = 5, .h = 3, .spp = 3, .bps = 32, .format = SAMPLEFORMAT_IEEEFP,
                      .photometric = PHOTOMETRIC_RGB, .mode = "wb" };
    check_tiff("big_endian_float", &bef, 10, 3, IP_F32, same);
}

/* Odd sizes, tiles that do not divide the image, many small blocks for the threads to share. */
static void test_odd_layouts(void)
{
    tiff_spec one = { .w = 1, .h = 1, .spp = 1, .bps = 8, .photometric = PHOTOMETRIC_MINISBLACK, .tile_w = 16, .tile_h = 16 };
    check_tiff("one_pixel_tiled", &one, 40, 1, IP_U8, same);
    tiff_spec column = { .w = 1, .h = 29, .spp = 1, .bps = 16, .photometric = PHOTOMETRIC_MINISBLACK, .rows_per_strip = 1,
                         .compression = COMPRESSION_ADOBE_DEFLATE, .predictor = PREDICTOR_HORIZONTAL };
    check_tiff("column_strips", &column, 41, 1, IP_U16, same);
    tiff_spec row = { .w = 29, .h = 1, .spp = 3, .bps = 8, .photometric = PHOTOMETRIC_RGB, .tile_w = 16, .tile_h = 16 };
    check_tiff("row_tiled", &row, 42, 3, IP_U8, same);
    tiff_spec sep_tiles = { .w = 97, .h = 61, .spp = 4, .bps = 8, .photometric = PHOTOMETRIC_RGB, .alpha = 1,
                            .planar = PLANARCONFIG_SEPARATE, .tile_w = 32, .tile_h = 16,
                            .compression = COMPRESSION_ADOBE_DEFLATE, .predictor = PREDICTOR_HORIZONTAL };
    check_tiff("separate_tiles_deflate", &sep_tiles, 43, 4, IP_U8, same);
    tiff_spec sep_float = { .w = 101, .h = 53, .spp = 3, .bps = 32, .format = SAMPLEFORMAT_IEEEFP,
                            .photometric = PHOTOMETRIC_RGB, .planar = PLANARCONFIG_SEPARATE, .rows_per_strip = 7,
                            .compression = COMPRESSION_ZSTD, .predictor = PREDICTOR_FLOATINGPOINT };
    check_tiff("separate_float_zstd", &sep_float, 44, 3, IP_F32, same);
    tiff_spec lzw_tiles = { .w = 67, .h = 45, .spp = 4, .bps = 16, .photometric = PHOTOMETRIC_RGB, .alpha = 1,
                            .tile_w = 16, .tile_h = 32, .compression = COMPRESSION_LZW, .predictor = PREDICTOR_HORIZONTAL };
    check_tiff("lzw_tiles16", &lzw_tiles, 45, 4, IP_U16, same);
    tiff_spec packbits = { .w = 59, .h = 31, .spp = 3, .bps = 8, .photometric = PHOTOMETRIC_RGB, .rows_per_strip = 5,
                           .compression = COMPRESSION_PACKBITS };
    check_tiff("packbits", &packbits, 46, 3, IP_U8, same);
    tiff_spec float_tiles = { .w = 53, .h = 47, .spp = 1, .bps = 32, .format = SAMPLEFORMAT_IEEEFP,
                              .photometric = PHOTOMETRIC_MINISBLACK, .tile_w = 16, .tile_h = 16,
                              .compression = COMPRESSION_ADOBE_DEFLATE, .predictor = PREDICTOR_FLOATINGPOINT };
    check_tiff("float_tiles_deflate", &float_tiles, 47, 1, IP_F32, same);
    tiff_spec zstd_big_endian = { .w = 41, .h = 23, .spp = 2, .bps = 16, .photometric = PHOTOMETRIC_MINISBLACK, .alpha = 1,
                                  .rows_per_strip = 2, .compression = COMPRESSION_ZSTD, .mode = "wb" };
    check_tiff("zstd_big_endian", &zstd_big_endian, 48, 2, IP_U16, same);
}

static double inverted(const tiff_spec *s, const void *v, size_t i, int ch)
{
    double x = sample_at(s, v, i), max = (1 << s->bps) - 1;
    if (s->alpha && ch == s->spp - 1) return x;
    return s->bps < 8 ? floor((max - x) * 255 / max) : max - x;
}

static double scaled(const tiff_spec *s, const void *v, size_t i, int ch)
{
    (void)ch;
    return sample_at(s, v, i) * 255 / ((1 << s->bps) - 1);
}

static void test_min_is_white_and_low_depths(void)
{
    tiff_spec w8 = { .w = 9, .h = 4, .spp = 1, .bps = 8, .photometric = PHOTOMETRIC_MINISWHITE };
    check_tiff("miniswhite8", &w8, 20, 1, IP_U8, inverted);
    tiff_spec w16 = { .w = 3, .h = 5, .spp = 1, .bps = 16, .photometric = PHOTOMETRIC_MINISWHITE };
    check_tiff("miniswhite16", &w16, 21, 1, IP_U16, inverted);
    tiff_spec wa = { .w = 4, .h = 4, .spp = 2, .bps = 8, .photometric = PHOTOMETRIC_MINISWHITE, .alpha = 1 };
    check_tiff("miniswhite_alpha", &wa, 22, 2, IP_U8, inverted);
    /* Fax-style bilevel: 0 is white. */
    tiff_spec w1 = { .w = 13, .h = 3, .spp = 1, .bps = 1, .photometric = PHOTOMETRIC_MINISWHITE };
    check_tiff("miniswhite1", &w1, 23, 1, IP_U8, inverted);
    tiff_spec g4 = { .w = 7, .h = 5, .spp = 1, .bps = 4, .photometric = PHOTOMETRIC_MINISBLACK, .rows_per_strip = 2 };
    check_tiff("gray4", &g4, 24, 1, IP_U8, scaled);
    tiff_spec g2 = { .w = 5, .h = 5, .spp = 1, .bps = 2, .photometric = PHOTOMETRIC_MINISBLACK, .tile_w = 16, .tile_h = 16 };
    check_tiff("gray2_tiled", &g2, 25, 1, IP_U8, scaled);
    tiff_spec w1s = { .w = 45, .h = 19, .spp = 1, .bps = 1, .photometric = PHOTOMETRIC_MINISWHITE, .rows_per_strip = 2 };
    check_tiff("miniswhite1_strips", &w1s, 26, 1, IP_U8, inverted);
    tiff_spec w8t = { .w = 37, .h = 35, .spp = 1, .bps = 8, .photometric = PHOTOMETRIC_MINISWHITE, .tile_w = 16, .tile_h = 16,
                      .compression = COMPRESSION_LZW };
    check_tiff("miniswhite8_tiled", &w8t, 27, 1, IP_U8, inverted);
}

/* Integers read as float: the same value, rounded to a float where it has more than 24 bits. */
static double as_float(const tiff_spec *s, const void *v, size_t i, int ch)
{
    (void)ch;
    return (float)sample_at(s, v, i);
}

/* Pillow's CMYK to RGB, in integers: k - round(ink * k / max) with k = max - K; channel 3 is the
 * alpha sample after the inks. */
static double cmyk_rgb(const tiff_spec *s, const void *v, size_t i, int ch)
{
    if (ch == 3) return sample_at(s, v, i + 4);
    uint64_t max = s->bps == 16 ? 65535 : 255, k = max - (uint64_t)sample_at(s, v, i + 3);
    uint64_t ink = (uint64_t)sample_at(s, v, i + (size_t)ch);
    return (double)(k - (ink * k + max / 2) / max);
}

/* Depths between 8 and 16 bits kept as 16-bit values; signed and 32-bit integers as float. */
static void test_other_depths_and_integers(void)
{
    tiff_spec g12 = { .w = 23, .h = 11, .spp = 1, .bps = 12, .photometric = PHOTOMETRIC_MINISBLACK, .rows_per_strip = 3,
                      .compression = COMPRESSION_LZW };
    check_tiff("gray12_lzw", &g12, 50, 1, IP_U16, same);
    tiff_spec rgb12 = { .w = 37, .h = 19, .spp = 3, .bps = 12, .photometric = PHOTOMETRIC_RGB,
                        .planar = PLANARCONFIG_SEPARATE, .tile_w = 16, .tile_h = 16 };
    check_tiff("rgb12_separate_tiles", &rgb12, 51, 3, IP_U16, same);
    tiff_spec rgba12 = { .w = 13, .h = 5, .spp = 4, .bps = 12, .photometric = PHOTOMETRIC_RGB, .alpha = 1,
                         .compression = COMPRESSION_ADOBE_DEFLATE };
    check_tiff("rgba12_deflate", &rgba12, 52, 4, IP_U16, same);
    tiff_spec g10 = { .w = 1, .h = 17, .spp = 1, .bps = 10, .photometric = PHOTOMETRIC_MINISBLACK, .rows_per_strip = 1 };
    check_tiff("gray10_column", &g10, 53, 1, IP_U16, same);
    tiff_spec w14 = { .w = 31, .h = 3, .spp = 1, .bps = 14, .photometric = PHOTOMETRIC_MINISWHITE, .mode = "wb" };
    check_tiff("miniswhite14", &w14, 54, 1, IP_U16, inverted);
    tiff_spec w4 = { .w = 9, .h = 7, .spp = 1, .bps = 4, .photometric = PHOTOMETRIC_MINISWHITE, .rows_per_strip = 2 };
    check_tiff("miniswhite4", &w4, 55, 1, IP_U8, inverted);

    tiff_spec i8 = { .w = 29, .h = 7, .spp = 1, .bps = 8, .format = SAMPLEFORMAT_INT, .photometric = PHOTOMETRIC_MINISBLACK,
                     .rows_per_strip = 2 };
    check_tiff("int8", &i8, 56, 1, IP_F32, as_float);
    tiff_spec i16 = { .w = 41, .h = 13, .spp = 3, .bps = 16, .format = SAMPLEFORMAT_INT, .photometric = PHOTOMETRIC_RGB,
                      .planar = PLANARCONFIG_SEPARATE, .rows_per_strip = 4, .compression = COMPRESSION_ADOBE_DEFLATE,
                      .predictor = PREDICTOR_HORIZONTAL };
    check_tiff("int16_rgb_separate", &i16, 57, 3, IP_F32, as_float);
    tiff_spec i32 = { .w = 33, .h = 35, .spp = 1, .bps = 32, .format = SAMPLEFORMAT_INT, .photometric = PHOTOMETRIC_MINISBLACK,
                      .tile_w = 16, .tile_h = 16, .compression = COMPRESSION_LZW };
    check_tiff("int32_tiles", &i32, 58, 1, IP_F32, as_float);
    tiff_spec u32 = { .w = 1, .h = 1, .spp = 1, .bps = 32, .photometric = PHOTOMETRIC_MINISBLACK };
    check_tiff("uint32_one_pixel", &u32, 59, 1, IP_F32, as_float);
    tiff_spec u32a = { .w = 17, .h = 9, .spp = 2, .bps = 32, .photometric = PHOTOMETRIC_MINISBLACK, .alpha = 1,
                       .rows_per_strip = 2, .mode = "wb" };
    check_tiff("uint32_gray_alpha_big_endian", &u32a, 60, 2, IP_F32, as_float);
    tiff_spec i16be = { .w = 19, .h = 5, .spp = 1, .bps = 16, .format = SAMPLEFORMAT_INT, .photometric = PHOTOMETRIC_MINISBLACK,
                        .mode = "wb", .compression = COMPRESSION_ZSTD, .predictor = PREDICTOR_HORIZONTAL };
    check_tiff("int16_big_endian_zstd", &i16be, 61, 1, IP_F32, as_float);
}

/* CMYK (separated, four inks) to RGB, and RGBA with an alpha after the inks. */
static void test_cmyk(void)
{
    tiff_spec c8 = { .w = 37, .h = 23, .spp = 4, .bps = 8, .photometric = PHOTOMETRIC_SEPARATED, .rows_per_strip = 5 };
    check_tiff("cmyk8", &c8, 70, 3, IP_U8, cmyk_rgb);
    tiff_spec c8s = { .w = 41, .h = 33, .spp = 4, .bps = 8, .photometric = PHOTOMETRIC_SEPARATED,
                      .planar = PLANARCONFIG_SEPARATE, .tile_w = 16, .tile_h = 16, .compression = COMPRESSION_LZW };
    check_tiff("cmyk8_separate_tiles", &c8s, 71, 3, IP_U8, cmyk_rgb);
    tiff_spec c16 = { .w = 29, .h = 9, .spp = 4, .bps = 16, .photometric = PHOTOMETRIC_SEPARATED, .rows_per_strip = 2,
                      .compression = COMPRESSION_ADOBE_DEFLATE, .predictor = PREDICTOR_HORIZONTAL };
    check_tiff("cmyk16", &c16, 72, 3, IP_U16, cmyk_rgb);
    tiff_spec c16s = { .w = 1, .h = 13, .spp = 4, .bps = 16, .photometric = PHOTOMETRIC_SEPARATED,
                       .planar = PLANARCONFIG_SEPARATE, .rows_per_strip = 3, .mode = "wb" };
    check_tiff("cmyk16_separate_column", &c16s, 73, 3, IP_U16, cmyk_rgb);
    tiff_spec ca = { .w = 23, .h = 7, .spp = 5, .bps = 8, .photometric = PHOTOMETRIC_SEPARATED, .alpha = 1,
                     .rows_per_strip = 3 };
    check_tiff("cmyk_alpha", &ca, 74, 4, IP_U8, cmyk_rgb);
    tiff_spec ca16 = { .w = 11, .h = 19, .spp = 5, .bps = 16, .photometric = PHOTOMETRIC_SEPARATED, .alpha = 1,
                       .planar = PLANARCONFIG_SEPARATE, .tile_w = 16, .tile_h = 16 };
    check_tiff("cmyk_alpha16_separate_tiles", &ca16, 75, 4, IP_U16, cmyk_rgb);
    tiff_spec cx = { .w = 5, .h = 3, .spp = 5, .bps = 8, .photometric = PHOTOMETRIC_SEPARATED };
    check_tiff("cmyk_unnamed_extra", &cx, 76, 3, IP_U8, cmyk_rgb);
}

static uint16_t cmap16[3][256], cmap8[3][16];

static double from_cmap16(const tiff_spec *s, const void *v, size_t i, int ch)
{
    return cmap16[ch][(int)sample_at(s, v, i)] >> 8;
}

static double from_cmap8(const tiff_spec *s, const void *v, size_t i, int ch)
{
    return cmap8[ch][(int)sample_at(s, v, i)];
}

static void test_palette(void)
{
    for (int i = 0; i < 256; i++) {
        cmap16[0][i] = (uint16_t)(i * 257);
        cmap16[1][i] = (uint16_t)((255 - i) * 257 + 3);
        cmap16[2][i] = (uint16_t)((i * 7 % 256) << 8);
    }
    /* Values that fit 8 bits: an 8-bit map stored in the 16-bit field, read as is. */
    for (int i = 0; i < 16; i++) {
        cmap8[0][i] = (uint16_t)(i * 16);
        cmap8[1][i] = (uint16_t)(200 - i);
        cmap8[2][i] = (uint16_t)i;
    }
    tiff_spec p8 = { .w = 10, .h = 6, .spp = 1, .bps = 8, .photometric = PHOTOMETRIC_PALETTE,
                     .cmap = { cmap16[0], cmap16[1], cmap16[2] } };
    check_tiff("palette8", &p8, 30, 3, IP_U8, from_cmap16);
    tiff_spec p4 = { .w = 7, .h = 3, .spp = 1, .bps = 4, .photometric = PHOTOMETRIC_PALETTE,
                     .cmap = { cmap8[0], cmap8[1], cmap8[2] } };
    check_tiff("palette4", &p4, 31, 3, IP_U8, from_cmap8);
    tiff_spec p4t = { .w = 41, .h = 37, .spp = 1, .bps = 4, .photometric = PHOTOMETRIC_PALETTE, .tile_w = 16, .tile_h = 16,
                      .cmap = { cmap8[0], cmap8[1], cmap8[2] } };
    check_tiff("palette4_tiled", &p4t, 32, 3, IP_U8, from_cmap8);
    tiff_spec p8s = { .w = 43, .h = 29, .spp = 1, .bps = 8, .photometric = PHOTOMETRIC_PALETTE, .rows_per_strip = 3,
                      .compression = COMPRESSION_ADOBE_DEFLATE, .cmap = { cmap16[0], cmap16[1], cmap16[2] } };
    check_tiff("palette8_strips", &p8s, 33, 3, IP_U8, from_cmap16);
}

/* JPEG-compressed YCbCr in several strips or tiles: near the source, the same with any thread count. */
static void check_jpeg_ycbcr(const char *name, int tiled)
{
    enum { W = 37, H = 57 };   /* the last strip and tiles are cut short */
    static unsigned char rgb[W * H * 3];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            unsigned char *p = rgb + ((size_t)y * W + x) * 3;
            p[0] = (unsigned char)(x * 6), p[1] = (unsigned char)(y * 4), p[2] = 128;
        }
    const char *path = tio_path(name);
    TIFF *tif = TIFFOpen(path, "w");
    tiff_spec s = { .w = W, .h = H, .spp = 3, .bps = 8, .photometric = PHOTOMETRIC_YCBCR, .compression = COMPRESSION_JPEG,
                    .rows_per_strip = 16, .tile_w = tiled ? 16 : 0, .tile_h = tiled ? 16 : 0 };
    int ok = tif && set_fields(tif, &s) && TIFFSetField(tif, TIFFTAG_JPEGQUALITY, 95) &&
             TIFFSetField(tif, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB) && write_blocks(tif, &s, rgb);
    if (tif) TIFFClose(tif);
    CHECK(ok, "%s: libtiff JPEG write", name);
    static const int thread_counts[] = { 1, 2, 3, 8 };
    ip_image first = { 0 };
    for (int i = 0; i < 4; i++) {
        io_options opt;
        io_default_options(&opt);
        opt.threads = thread_counts[i];
        ip_image img;
        int rc = io_read(path, &opt, &img, err, sizeof err);
        CHECK(rc == IP_OK, "%s: %s", name, err);
        if (rc) continue;
        CHECK(tio_same_shape(&img, W, H, 3, IP_U8), "%s shape", name);
        if (!first.data) {
            double sum = 0;
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++)
                    for (int k = 0; k < 3; k++) sum += fabs(tio_get(&img, x, y, k) - rgb[((size_t)y * W + x) * 3 + k]);
            CHECK(sum / (W * H * 3) < 3, "%s mean abs error %g", name, sum / (W * H * 3));
            first = img;
            continue;
        }
        CHECK(memcmp(img.data, first.data, (size_t)W * H * 3) == 0, "%s: %d threads decode other pixels", name,
              thread_counts[i]);
        img_free(&img);
    }
    img_free(&first);
}

static void test_jpeg_ycbcr(void)
{
    if (!TIFFIsCODECConfigured(COMPRESSION_JPEG)) return;
    check_jpeg_ycbcr("jpeg_ycbcr_strips.tif", 0);
    check_jpeg_ycbcr("jpeg_ycbcr_tiles.tif", 1);
}

/* Writes a file of zeros with the given layout and expects a refusal naming the problem. */
static void refuse(const char *name, int spp, int bps, int format, int photometric, const char *needle)
{
    const char *path = tio_path(name);
    TIFF *tif = TIFFOpen(path, "w");
    tiff_spec s = { .w = 4, .h = 2, .spp = spp, .bps = bps, .format = format, .photometric = photometric };
    int ok = tif && set_fields(tif, &s);
    tmsize_t n = ok ? TIFFStripSize(tif) : 0;
    unsigned char *zeros = calloc((size_t)n + 1, 1);
    ok = ok && TIFFWriteEncodedStrip(tif, 0, zeros, n) >= 0;
    free(zeros);
    if (tif) TIFFClose(tif);
    CHECK(ok, "%s: libtiff write failed", name);
    ip_image img;
    int rc = io_read(path, NULL, &img, err, sizeof err);
    CHECK(rc == IP_EFORMAT && img.data == NULL, "%s: got %d", name, rc);
    CHECK(strstr(err, needle) != NULL, "%s: message '%s' lacks '%s'", name, err, needle);
}

static void test_refusals(void)
{
    refuse("bits3.tif", 1, 3, SAMPLEFORMAT_UINT, PHOTOMETRIC_MINISBLACK, "unsupported TIFF: 3-bit unsigned samples");
    refuse("bits24.tif", 1, 24, SAMPLEFORMAT_UINT, PHOTOMETRIC_MINISBLACK, "24-bit unsigned samples");
    refuse("int12.tif", 1, 12, SAMPLEFORMAT_INT, PHOTOMETRIC_MINISBLACK, "12-bit signed samples");
    refuse("complex.tif", 1, 32, SAMPLEFORMAT_COMPLEXINT, PHOTOMETRIC_MINISBLACK, "complex");
    refuse("double.tif", 1, 64, SAMPLEFORMAT_IEEEFP, PHOTOMETRIC_MINISBLACK, "64-bit float");
    refuse("cmy.tif", 3, 8, SAMPLEFORMAT_UINT, PHOTOMETRIC_SEPARATED, "fewer than 4 inks");
    refuse("cmyk12.tif", 4, 12, SAMPLEFORMAT_UINT, PHOTOMETRIC_SEPARATED, "CMYK with other than 8 or 16-bit");
    refuse("cmyk_signed.tif", 4, 16, SAMPLEFORMAT_INT, PHOTOMETRIC_SEPARATED, "CMYK with float or signed");
    refuse("seven_inks.tif", 7, 8, SAMPLEFORMAT_UINT, PHOTOMETRIC_SEPARATED, "7 samples per pixel");
    refuse("white_signed.tif", 1, 16, SAMPLEFORMAT_INT, PHOTOMETRIC_MINISWHITE, "min-is-white float, signed");
    refuse("five.tif", 5, 8, SAMPLEFORMAT_UINT, PHOTOMETRIC_MINISBLACK, "5 samples per pixel");
    refuse("lab.tif", 3, 8, SAMPLEFORMAT_UINT, PHOTOMETRIC_CIELAB, "photometric interpretation 8");
    refuse("rgb2.tif", 2, 8, SAMPLEFORMAT_UINT, PHOTOMETRIC_RGB, "RGB with 2 samples");
}

int main(void)
{
    TIFFSetWarningHandler(NULL);   /* this test's own libtiff writes only; the reader uses its handlers */
    test_layouts();
    test_odd_layouts();
    test_min_is_white_and_low_depths();
    test_palette();
    test_other_depths_and_integers();
    test_cmyk();
    test_jpeg_ycbcr();
    test_refusals();
    return tu_finish();
}
