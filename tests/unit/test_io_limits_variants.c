/* io: the limits on untrusted files (io_limits.h) on the decoding variants: the ratio is taken on
 * the image handed out (RGBA from CMYK and alpha, float from 16-bit integers), strip counts and
 * tile sizes of subsampled YCbCr in its data units (a unit may be larger than the pixels it
 * covers), the page read (--page) and not the first, and the scan limit on progressive CMYK JPEG.
 * Each refuses one over with its message and no image allocated, and accepts at the limit with
 * libtiff's or libjpeg's own pixels. */
#include "test_io_helpers.h"
#include <tiffio.h>
#include "io/io_limits.h"
#include "io/jpeg_layout.h"
#include "jpeg_make.h"
#include "io/meta.h"

static char err[512];

static int count_alloc(void *user, size_t bytes, void **ptr, char *e, size_t elen)
{
    ++*(int *)user;
    *ptr = malloc(bytes ? bytes : 1);
    if (*ptr) return IP_OK;
    snprintf(e, elen, "out of memory");
    return IP_ENOMEM;
}

static void count_release(void *user, void *ptr)
{
    (void)user;
    free(ptr);
}

static io_options counted(int *allocs)
{
    io_options opt;
    io_default_options(&opt);
    *allocs = 0;
    opt.memory = (io_pixel_memory){ count_alloc, count_release, allocs };
    return opt;
}

static void expect_refused(const char *what, const char *path, io_options opt, int *allocs, int want_rc,
                           const char *want)
{
    *allocs = 0;
    ip_image out;
    int rc = io_read(path, &opt, &out, err, sizeof err);
    CHECK(rc == want_rc && !strcmp(err, want), "%s: status %d, message\n  got  '%s'\n  want '%s'", what, rc, err, want);
    CHECK(*allocs == 0 && out.data == NULL, "%s: %d image allocations before the refusal", what, *allocs);
    if (rc == IP_OK) io_image_free(&opt, &out);
}

/* Reads path expecting exactly these packed samples (w x h x c of dtype). */
static void expect_samples(const char *what, const char *path, io_options opt, const void *want, int w, int h, int c,
                           ip_dtype dtype)
{
    ip_image out;
    int rc = io_read(path, &opt, &out, err, sizeof err);
    CHECK(rc == IP_OK, "%s: status %d (%s)", what, rc, err);
    if (rc != IP_OK) return;
    size_t row = (size_t)w * c * ip_dtype_size(dtype);
    int same = tio_same_shape(&out, w, h, c, dtype);
    for (int y = 0; same && y < h; y++)
        same = !memcmp((const uint8_t *)out.data + (size_t)y * (size_t)out.stride, (const uint8_t *)want + y * row, row);
    CHECK(same, "%s: decoded to other samples (%dx%dx%d)", what, out.shape.width, out.shape.height, out.shape.channels);
    io_image_free(&opt, &out);
}

static uint64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static void ratio_message(char *buf, size_t len, int w, int h, uint64_t decoded, uint64_t file, uint64_t limit)
{
    snprintf(buf, len,
             "image of %dx%d decodes to %llu bytes, %llu times the file's %llu bytes, over the limit of %llu times "
             "(--max-ratio raises it)",
             w, h, (unsigned long long)decoded, (unsigned long long)((decoded + file - 1) / file),
             (unsigned long long)file, (unsigned long long)limit);
}

/* ---- TIFF files written with libtiff ---- */

typedef struct {
    int w, h, spp, bps, format, photometric, compression, alpha;
    int rows_per_strip;          /* strips of this many rows, or tiles of tile x tile */
    int tile;
    int ycbcr_h, ycbcr_v;        /* YCbCr subsampling; blocks are written raw (data units) */
} tiff_spec;

static TIFF *open_tiff(TIFF *tif, const tiff_spec *s)
{
    uint16_t extra[1] = { EXTRASAMPLE_UNASSALPHA };
    int ok = tif && TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, s->w) && TIFFSetField(tif, TIFFTAG_IMAGELENGTH, s->h) &&
             TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, s->spp) && TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, s->bps) &&
             TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, s->format ? s->format : SAMPLEFORMAT_UINT) &&
             TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, s->photometric) &&
             TIFFSetField(tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG) &&
             TIFFSetField(tif, TIFFTAG_COMPRESSION, s->compression ? s->compression : COMPRESSION_NONE);
    if (ok && s->alpha) ok = TIFFSetField(tif, TIFFTAG_EXTRASAMPLES, 1, extra);
    if (ok && s->ycbcr_h) ok = TIFFSetField(tif, TIFFTAG_YCBCRSUBSAMPLING, s->ycbcr_h, s->ycbcr_v);
    if (ok && s->tile) ok = TIFFSetField(tif, TIFFTAG_TILEWIDTH, s->tile) && TIFFSetField(tif, TIFFTAG_TILELENGTH, s->tile);
    if (ok && !s->tile) ok = TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, s->rows_per_strip);
    CHECK(ok, "libtiff refused the tags");
    return ok ? tif : NULL;
}

/* Strips of packed samples, encoded by libtiff. */
static void write_strips(const char *path, const tiff_spec *s, const void *samples)
{
    TIFF *tif = open_tiff(TIFFOpen(path, "w"), s);
    size_t row = (size_t)s->w * s->spp * (size_t)(s->bps / 8);
    int ok = tif != NULL;
    for (int y = 0; ok && y < s->h; y += s->rows_per_strip) {
        int rows = s->h - y < s->rows_per_strip ? s->h - y : s->rows_per_strip;
        tmsize_t n = (tmsize_t)(row * rows);
        ok = TIFFWriteEncodedStrip(tif, (uint32_t)(y / s->rows_per_strip), (uint8_t *)samples + row * y, n) == n;
    }
    if (tif) TIFFClose(tif);
    CHECK(ok, "libtiff could not write %s", path);
}

/* Subsampled YCbCr: every block `block_bytes` of data units taken in turn from units. */
static void write_units(const char *path, const tiff_spec *s, const uint8_t *units, int blocks, size_t block_bytes)
{
    TIFF *tif = open_tiff(TIFFOpen(path, "w"), s);
    int ok = tif != NULL;
    for (int b = 0; ok && b < blocks; b++)
        ok = (s->tile ? TIFFWriteRawTile(tif, (uint32_t)b, (void *)(units + b * block_bytes), (tmsize_t)block_bytes)
                      : TIFFWriteRawStrip(tif, (uint32_t)b, (void *)(units + b * block_bytes), (tmsize_t)block_bytes)) ==
             (tmsize_t)block_bytes;
    if (tif) TIFFClose(tif);
    CHECK(ok, "libtiff could not write %s", path);
}

/* libtiff's own RGBA reader, top row first, as packed RGB. */
static uint8_t *libtiff_rgb(const char *path, int w, int h)
{
    TIFF *tif = TIFFOpen(path, "r");
    uint32_t *raster = malloc((size_t)w * h * sizeof *raster);
    uint8_t *rgb = malloc((size_t)w * h * 3);
    int ok = tif && TIFFReadRGBAImageOriented(tif, (uint32_t)w, (uint32_t)h, raster, ORIENTATION_TOPLEFT, 0);
    for (size_t i = 0; ok && i < (size_t)w * h; i++) {
        rgb[3 * i] = (uint8_t)TIFFGetR(raster[i]);
        rgb[3 * i + 1] = (uint8_t)TIFFGetG(raster[i]);
        rgb[3 * i + 2] = (uint8_t)TIFFGetB(raster[i]);
    }
    if (tif) TIFFClose(tif);
    free(raster);
    CHECK(ok, "libtiff's RGBA reader refused %s", path);
    return rgb;
}

static uint8_t *random_bytes(size_t n, uint64_t seed)
{
    tu_rng rng;
    tu_seed(&rng, seed);
    uint8_t *p = malloc(n);
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)tu_next(&rng);
    return p;
}

/* ---- the limits ---- */

/* The ratio on what is handed out: blank CMYK with alpha becomes RGBA (4 bytes a pixel from 5
 * stored); blank signed 16-bit becomes float (4 bytes from 2). */
static void test_ratio_final_shape(void)
{
    enum { W = 301, H = 199 };
    uint8_t *zeros = calloc((size_t)W * H * 5 * 2, 1);
    const char *path = tio_path("blank-cmyka.tif");
    write_strips(path, &(tiff_spec){ W, H, 5, 8, 0, PHOTOMETRIC_SEPARATED, COMPRESSION_ADOBE_DEFLATE, 1, 64, 0, 0, 0 },
                 zeros);
    uint64_t decoded = (uint64_t)W * H * 4, file = file_size(path), times = (decoded + file - 1) / file;
    CHECK(times > 50, "blank CMYK TIFF: %llu times is no test of the ratio", (unsigned long long)times);
    int allocs;
    io_options opt = counted(&allocs);
    opt.max_ratio = times - 1;
    char want[400];
    ratio_message(want, sizeof want, W, H, decoded, file, times - 1);
    expect_refused("blank CMYK+alpha TIFF, ratio", path, opt, &allocs, IP_ELIMIT, want);
    uint8_t *white = malloc((size_t)W * H * 4);   /* no ink: white, alpha 0 */
    for (size_t i = 0; i < (size_t)W * H; i++) white[4 * i] = white[4 * i + 1] = white[4 * i + 2] = 255, white[4 * i + 3] = 0;
    opt.max_ratio = times;
    expect_samples("blank CMYK+alpha TIFF at the ratio", path, opt, white, W, H, 4, IP_U8);
    opt.max_pixels = (uint64_t)W * H - 1;
    char pixels[200];
    snprintf(pixels, sizeof pixels, "image is %dx%d (%d pixels), over the limit of %d pixels (--max-pixels raises it)",
             W, H, W * H, W * H - 1);
    expect_refused("CMYK+alpha TIFF, pixels", path, opt, &allocs, IP_ELIMIT, pixels);
    free(white);

    path = tio_path("blank-int16.tif");
    write_strips(path, &(tiff_spec){ W, H, 1, 16, SAMPLEFORMAT_INT, PHOTOMETRIC_MINISBLACK, COMPRESSION_ADOBE_DEFLATE, 0,
                                     64, 0, 0, 0 },
                 zeros);
    decoded = (uint64_t)W * H * 4, file = file_size(path), times = (decoded + file - 1) / file;
    opt = counted(&allocs);
    opt.max_ratio = times - 1;
    ratio_message(want, sizeof want, W, H, decoded, file, times - 1);
    expect_refused("blank int16 TIFF, ratio", path, opt, &allocs, IP_ELIMIT, want);
    opt.max_ratio = times;
    expect_samples("blank int16 TIFF at the ratio", path, opt, zeros, W, H, 1, IP_F32);
    free(zeros);
}

/* 2x2-subsampled YCbCr, 37x23 in strips of 4 rows: 6 strips of 19x2 data units of 6 bytes. */
static void test_ycbcr_strip_count(void)
{
    enum { W = 37, H = 23, STRIPS = 6, STRIP_BYTES = 19 * 2 * 6 };
    uint8_t *units = random_bytes((size_t)STRIPS * STRIP_BYTES, 21);
    const char *path = tio_path("ycbcr-strips.tif");
    write_units(path, &(tiff_spec){ W, H, 3, 8, 0, PHOTOMETRIC_YCBCR, 0, 0, 4, 0, 2, 2 }, units, STRIPS, STRIP_BYTES);
    free(units);
    int allocs;
    io_options opt = counted(&allocs);
    opt.max_tiff_blocks = STRIPS - 1;
    expect_refused("YCbCr strips", path, opt, &allocs, IP_ELIMIT,
                   "TIFF image is stored in 6 strips, over the limit of 5 strips or tiles (--max-tiff-blocks raises it)");
    opt.max_tiff_blocks = STRIPS;
    uint8_t *want = libtiff_rgb(path, W, H);
    expect_samples("YCbCr strips at the limit", path, opt, want, W, H, 3, IP_U8);
    free(want);
}

/* 2x2-subsampled YCbCr, 20x20 in one 64x64 tile: 32x32 data units of 6 bytes, more than the image. */
static void test_ycbcr_tile_bytes(void)
{
    enum { W = 20, H = 20, TILE_BYTES = 32 * 32 * 6 };
    uint8_t *units = random_bytes(TILE_BYTES, 22);
    const char *path = tio_path("ycbcr-tile.tif");
    write_units(path, &(tiff_spec){ W, H, 3, 8, 0, PHOTOMETRIC_YCBCR, 0, 0, 0, 64, 2, 2 }, units, 1, TILE_BYTES);
    free(units);
    int allocs;
    io_options opt = counted(&allocs);
    opt.max_tiff_tile_bytes = TILE_BYTES - 1;
    expect_refused("YCbCr tile", path, opt, &allocs, IP_ELIMIT,
                   "TIFF tiles of 64x64 decode to 6144 bytes each, more than the whole image (1200 bytes) and over the "
                   "limit of 6143 bytes (--max-tiff-tile-bytes raises it)");
    opt.max_tiff_tile_bytes = TILE_BYTES;
    uint8_t *want = libtiff_rgb(path, W, H);
    expect_samples("YCbCr tile at the limit", path, opt, want, W, H, 3, IP_U8);
    free(want);
}

/* A column 1 pixel wide under 4x2 subsampling: its one strip of 3 data units (30 bytes) is more
 * than its 5 pixels of RGB (15 bytes), and is no damage. (Not 4x4: libtiff 4.5's RGBA reader takes
 * the chroma of a 4x4 block cut by the image's edge from the wrong bytes.) */
static void test_ycbcr_narrow(void)
{
    enum { W = 1, H = 5, STRIP_BYTES = 3 * 10 };
    uint8_t *units = random_bytes(STRIP_BYTES, 23);
    const char *path = tio_path("ycbcr-column.tif");
    write_units(path, &(tiff_spec){ W, H, 3, 8, 0, PHOTOMETRIC_YCBCR, 0, 0, 5, 0, 4, 2 }, units, 1, STRIP_BYTES);
    free(units);
    io_options opt;
    io_default_options(&opt);
    uint8_t *want = libtiff_rgb(path, W, H);
    expect_samples("1x5 YCbCr, 4x2 subsampling", path, opt, want, W, H, 3, IP_U8);
    free(want);
}

/* Two pages, 8x8 and 64x64: the limits apply to the page read, through the metadata pass too. */
static void test_page_limits(void)
{
    uint8_t *px = random_bytes(64 * 64, 24);
    const char *path = tio_path("two-pages.tif");
    TIFF *tif = TIFFOpen(path, "w");
    int ok = open_tiff(tif, &(tiff_spec){ 8, 8, 1, 8, 0, PHOTOMETRIC_MINISBLACK, 0, 0, 8, 0, 0, 0 }) &&
             TIFFWriteEncodedStrip(tif, 0, px, 64) == 64 && TIFFWriteDirectory(tif) &&
             open_tiff(tif, &(tiff_spec){ 64, 64, 1, 8, 0, PHOTOMETRIC_MINISBLACK, 0, 0, 64, 0, 0, 0 }) &&
             TIFFWriteEncodedStrip(tif, 0, px, 64 * 64) == 64 * 64;
    if (tif) TIFFClose(tif);
    CHECK(ok, "libtiff could not write two pages");
    io_meta meta;
    meta_init(&meta);
    for (int with_meta = 0; with_meta < 2; with_meta++) {
        int allocs;
        io_options opt = counted(&allocs);
        opt.meta = with_meta ? &meta : NULL;
        opt.autorotate = with_meta;
        opt.max_pixels = 64;
        expect_samples("page 0 within 64 pixels", path, opt, px, 8, 8, 1, IP_U8);
        opt.page = 1;
        expect_refused("page 1 over 64 pixels", path, opt, &allocs, IP_ELIMIT,
                       "image is 64x64 (4096 pixels), over the limit of 64 pixels (--max-pixels raises it)");
        opt.max_pixels = 4096;
        expect_samples("page 1 within 4096 pixels", path, opt, px, 64, 64, 1, IP_U8);
        opt.page = 2;
        expect_refused("page 2 of 2", path, opt, &allocs, IP_EINVAL, "TIFF has 2 pages (counted from 0); there is no page 2");
        meta_clear(&meta);
    }
    free(px);
}

/* Progressive CMYK JPEG: its scans counted before the image exists, as for any other. */
static void test_cmyk_jpeg_scans(void)
{
    enum { W = 29, H = 19 };
    uint8_t *inks = random_bytes((size_t)W * H * 4, 25);
    size_t len;
    unsigned char *jpg = jm_encode(inks, (size_t)W * 4, W, H, 4, &(jm_settings){ 90, JM_444, 1, 0, JCS_UNKNOWN }, &len);
    free(inks);
    const char *path = tio_path("progressive-cmyk.jpg");
    CHECK(tio_spit(path, jpg, len) == 0, "write %s", path);
    jpeg_layout L;
    CHECK(jpeg_layout_read(jpg, len, &L, err, sizeof err) == IP_OK && L.scans > 2 && L.components == 4,
          "progressive CMYK JPEG: %d scans, %d components (%s)", L.scans, L.components, err);

    /* libjpeg's CMYK samples (Adobe's, 0 = full ink) through R = k - round(C k / 255), k = 255 - K. */
    struct jpeg_decompress_struct d;
    struct jpeg_error_mgr jerr;
    d.err = jpeg_std_error(&jerr);
    jpeg_create_decompress(&d);
    jpeg_mem_src(&d, jpg, (unsigned long)len);
    jpeg_read_header(&d, TRUE);
    d.out_color_space = JCS_CMYK;
    jpeg_start_decompress(&d);
    uint8_t *row = malloc((size_t)W * 4), *want = malloc((size_t)W * H * 3);
    while (d.output_scanline < d.output_height) {
        uint8_t *dst = want + (size_t)d.output_scanline * W * 3;
        jpeg_read_scanlines(&d, &row, 1);
        for (int x = 0; x < W; x++) {
            unsigned k = row[4 * x + 3];
            for (int c = 0; c < 3; c++) dst[3 * x + c] = (uint8_t)(k - ((255u - row[4 * x + c]) * k + 127) / 255);
        }
    }
    jpeg_finish_decompress(&d);
    jpeg_destroy_decompress(&d);
    free(row);
    free(jpg);

    int allocs;
    io_options opt = counted(&allocs);
    opt.max_jpeg_scans = L.scans - 1;
    char message[200];
    snprintf(message, sizeof message, "JPEG has %d scans or more, over the limit of %d scans (--max-jpeg-scans raises it)",
             L.scans, L.scans - 1);
    expect_refused("progressive CMYK JPEG, scans", path, opt, &allocs, IP_ELIMIT, message);
    opt.max_jpeg_scans = L.scans;
    expect_samples("progressive CMYK JPEG at the limit", path, opt, want, W, H, 3, IP_U8);
    free(want);
}

int main(void)
{
    test_ratio_final_shape();
    test_ycbcr_strip_count();
    test_ycbcr_tile_bytes();
    test_ycbcr_narrow();
    test_page_limits();
    test_cmyk_jpeg_scans();
    return tu_finish();
}
