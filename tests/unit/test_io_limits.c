/* io: the limits on untrusted files (io_limits.h, --max-pixels): each refuses one over the limit
 * with one line naming the value found and the option that raises it, accepts at the limit (with
 * the pixels written), and refuses before the image is allocated. Files are made here with libpng,
 * libtiff and libjpeg, or by hand where a header must lie. */
#include "test_io_helpers.h"
#include <png.h>
#include <tiffio.h>
#include <zlib.h>
#include "fuzz/fuzz_common.h"
#include "io/io_limits.h"
#include "io/jpeg_layout.h"
#include "jpeg_make.h"

static char err[512];

/* A memory provider that counts the image allocations: a refusal before allocating leaves 0. */
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

/* Reads path expecting IP_ELIMIT with exactly `want`, and no image allocated. */
static void expect_refused(const char *what, const char *path, io_options opt, int *allocs, const char *want)
{
    *allocs = 0;
    ip_image out;
    int rc = io_read(path, &opt, &out, err, sizeof err);
    CHECK(rc == IP_ELIMIT && !strcmp(err, want), "%s: status %d, message\n  got  '%s'\n  want '%s'", what, rc, err, want);
    CHECK(*allocs == 0 && out.data == NULL, "%s: %d image allocations before the refusal", what, *allocs);
    if (rc == IP_OK) io_image_free(&opt, &out);
}

/* Reads path expecting success with exactly these u8 pixels (packed, w x h x c). */
static void expect_pixels(const char *what, const char *path, io_options opt, const uint8_t *px, int w, int h, int c)
{
    ip_image out;
    int rc = io_read(path, &opt, &out, err, sizeof err);
    CHECK(rc == IP_OK, "%s: status %d (%s)", what, rc, err);
    if (rc != IP_OK) return;
    int same = tio_same_shape(&out, w, h, c, IP_U8);
    for (int y = 0; same && y < h; y++)
        same = !memcmp((uint8_t *)out.data + (size_t)y * (size_t)out.stride, px + (size_t)y * w * c, (size_t)w * c);
    CHECK(same, "%s: decoded to other pixels (%dx%dx%d)", what, out.shape.width, out.shape.height, out.shape.channels);
    io_image_free(&opt, &out);
}

static uint8_t *random_u8(size_t n, uint64_t seed)
{
    tu_rng rng;
    tu_seed(&rng, seed);
    uint8_t *p = malloc(n);
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)tu_next(&rng);
    return p;
}

static uint64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* ---- hand-made headers ---- */

static void put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16), p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static size_t png_chunk(unsigned char *buf, size_t at, const char *type, const unsigned char *data, uint32_t n)
{
    put_be32(buf + at, n);
    memcpy(buf + at + 4, type, 4);
    if (n) memcpy(buf + at + 8, data, n);
    put_be32(buf + at + 8 + n, (uint32_t)crc32(0, buf + at + 4, 4 + n));
    return at + 12 + n;
}

/* Signature, IHDR claiming w x h, optionally an IDAT of 16 junk bytes, IEND. */
static const char *tiny_png(const char *name, uint32_t w, uint32_t h, int depth, int type, int with_idat, size_t *size)
{
    static const unsigned char sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
    unsigned char buf[128], ihdr[13] = { 0 }, junk[16] = { 0x78, 0x9c };
    put_be32(ihdr, w);
    put_be32(ihdr + 4, h);
    ihdr[8] = (unsigned char)depth;
    ihdr[9] = (unsigned char)type;
    memcpy(buf, sig, 8);
    size_t n = png_chunk(buf, 8, "IHDR", ihdr, 13);
    if (with_idat) n = png_chunk(buf, n, "IDAT", junk, sizeof junk);
    n = png_chunk(buf, n, "IEND", NULL, 0);
    const char *path = tio_path(name);
    CHECK(tio_spit(path, buf, n) == 0, "write %s", name);
    *size = n;
    return path;
}

static void put_le16(unsigned char *p, unsigned v) { p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8); }
static void put_le32(unsigned char *p, uint32_t v) { put_le16(p, v & 0xffff), put_le16(p + 2, v >> 16); }

typedef struct { uint16_t tag; uint32_t value; } tiff_tag;

/* A little-endian 8-bit gray TIFF with these tags (ascending, each one value; 0xFFFFFFFF stands for
 * the offset of the 16 data bytes after the directory). */
static const char *tiny_tiff(const char *name, const tiff_tag *tags, int n)
{
    unsigned char buf[512] = { 0 };
    memcpy(buf, "II*\0", 4);
    put_le32(buf + 4, 8);
    put_le16(buf + 8, (unsigned)n);
    uint32_t data_at = 8 + 2 + 12 * (uint32_t)n + 4;
    for (int i = 0; i < n; i++) {
        unsigned char *e = buf + 10 + 12 * i;
        int is_short = tags[i].tag == 258 || tags[i].tag == 259 || tags[i].tag == 262 || tags[i].tag == 277;
        put_le16(e, tags[i].tag);
        put_le16(e + 2, is_short ? 3 : 4);
        put_le32(e + 4, 1);
        uint32_t v = tags[i].value == 0xFFFFFFFFu ? data_at : tags[i].value;
        if (is_short) put_le16(e + 8, v);
        else put_le32(e + 8, v);
    }
    const char *path = tio_path(name);
    CHECK(tio_spit(path, buf, data_at + 16) == 0, "write %s", name);
    return path;
}

/* A 1 x rows gray TIFF in one-row strips, every strip the same data byte: the strip offsets and
 * counts are the whole file, as libtiff wants one of each a strip. */
static const char *one_row_strips_tiff(const char *name, uint32_t rows)
{
    const uint32_t offsets_at = 124, counts_at = offsets_at + 4 * rows;
    size_t size = (size_t)counts_at + 2 * (size_t)rows;
    unsigned char *buf = calloc(size, 1);
    memcpy(buf, "II*\0", 4);
    put_le32(buf + 4, 8);
    put_le16(buf + 8, 9);
    static const uint16_t tags[9] = { 256, 257, 258, 259, 262, 273, 277, 278, 279 };
    static const uint16_t types[9] = { 4, 4, 3, 3, 3, 4, 3, 4, 3 };
    uint32_t counts[9] = { 1, 1, 1, 1, 1, rows, 1, 1, rows }, values[9] = { 1, rows, 8, 1, 1, offsets_at, 1, 1, counts_at };
    for (int i = 0; i < 9; i++) {
        unsigned char *e = buf + 10 + 12 * i;
        put_le16(e, tags[i]);
        put_le16(e + 2, types[i]);
        put_le32(e + 4, counts[i]);
        if (types[i] == 3 && counts[i] == 1) put_le16(e + 8, values[i]);
        else put_le32(e + 8, values[i]);
    }
    for (uint32_t k = 0; k < rows; k++) {
        put_le32(buf + offsets_at + 4 * k, 122);
        put_le16(buf + counts_at + 2 * k, 1);
    }
    const char *path = tio_path(name);
    CHECK(tio_spit(path, buf, size) == 0, "write %s", name);
    free(buf);
    return path;
}

/* ---- files written by the libraries ---- */

typedef struct { int w, h, spp, tile_w, tile_h, rows_per_strip, separate, compression; } tiff_spec;

static void write_tiff(const char *path, const tiff_spec *s, const uint8_t *px)
{
    TIFF *tif = TIFFOpen(path, "w");
    int per_px = s->separate ? 1 : s->spp, planes = s->separate ? s->spp : 1;
    int ok = tif && TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, s->w) && TIFFSetField(tif, TIFFTAG_IMAGELENGTH, s->h) &&
             TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, s->spp) && TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, 8) &&
             TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, s->spp == 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK) &&
             TIFFSetField(tif, TIFFTAG_PLANARCONFIG, s->separate ? PLANARCONFIG_SEPARATE : PLANARCONFIG_CONTIG) &&
             TIFFSetField(tif, TIFFTAG_COMPRESSION, s->compression ? s->compression : COMPRESSION_NONE);
    if (ok && s->tile_w) ok = TIFFSetField(tif, TIFFTAG_TILEWIDTH, s->tile_w) && TIFFSetField(tif, TIFFTAG_TILELENGTH, s->tile_h);
    if (ok && !s->tile_w) ok = TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, s->rows_per_strip);
    int bw = s->tile_w ? s->tile_w : s->w, bh = s->tile_w ? s->tile_h : s->rows_per_strip;
    uint8_t *block = malloc((size_t)bw * bh * per_px);
    for (int p = 0; ok && p < planes; p++)
        for (int y0 = 0; ok && y0 < s->h; y0 += bh)
            for (int x0 = 0; ok && x0 < s->w; x0 += bw) {
                memset(block, 0, (size_t)bw * bh * per_px);
                int rows = s->tile_w || y0 + bh <= s->h ? bh : s->h - y0;
                for (int y = 0; y < bh && y0 + y < s->h; y++)
                    for (int x = 0; x < bw && x0 + x < s->w; x++)
                        for (int k = 0; k < per_px; k++)
                            block[((size_t)y * bw + x) * per_px + k] = px[(((size_t)y0 + y) * s->w + x0 + x) * s->spp + (s->separate ? p : k)];
                tmsize_t n = (tmsize_t)((size_t)bw * rows * per_px);
                ok = s->tile_w ? TIFFWriteEncodedTile(tif, TIFFComputeTile(tif, (uint32_t)x0, (uint32_t)y0, 0, (uint16_t)p), block, n) == n
                               : TIFFWriteEncodedStrip(tif, TIFFComputeStrip(tif, (uint32_t)y0, (uint16_t)p), block, n) == n;
            }
    free(block);
    if (tif) TIFFClose(tif);
    CHECK(ok, "libtiff could not write %s", path);
}

/* PNG by libpng at the highest compression; palette files get a one-entry palette (colour 0). */
static void write_png(const char *path, int w, int h, int depth, int type, const uint8_t *rows_packed)
{
    FILE *f = fopen(path, "wb");
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    png_init_io(png, f);
    png_set_compression_level(png, 9);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, depth, type, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_color colour = { 200, 40, 7 };
    if (type == PNG_COLOR_TYPE_PALETTE) png_set_PLTE(png, info, &colour, 1);
    png_write_info(png, info);
    size_t row_bytes = png_get_rowbytes(png, info);
    for (int y = 0; y < h; y++) png_write_row(png, rows_packed + (size_t)y * row_bytes);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    fclose(f);
}

/* A progressive colour JPEG whose scan script takes every coefficient of every component on its
 * own, bit by bit: far more scans than any real file. Returns the number of scans. */
static int many_scans_jpeg(const char *path, const uint8_t *px, int w, int h)
{
    enum { AL = 10 };   /* libjpeg's most successive-approximation bits for 8-bit samples */
    static jpeg_scan_info script[(1 + AL) * (1 + 3 * 63)];
    int n = 0;
    script[n++] = (jpeg_scan_info){ 3, { 0, 1, 2, 0 }, 0, 0, 0, AL };
    for (int al = AL - 1; al >= 0; al--) script[n++] = (jpeg_scan_info){ 3, { 0, 1, 2, 0 }, 0, 0, al + 1, al };
    for (int c = 0; c < 3; c++)
        for (int k = 1; k < 64; k++) {
            script[n++] = (jpeg_scan_info){ 1, { c, 0, 0, 0 }, k, k, 0, AL };
            for (int al = AL - 1; al >= 0; al--) script[n++] = (jpeg_scan_info){ 1, { c, 0, 0, 0 }, k, k, al + 1, al };
        }
    struct jpeg_compress_struct cj;
    struct jpeg_error_mgr jerr;
    cj.err = jpeg_std_error(&jerr);
    jpeg_create_compress(&cj);
    FILE *f = fopen(path, "wb");
    jpeg_stdio_dest(&cj, f);
    cj.image_width = (JDIMENSION)w, cj.image_height = (JDIMENSION)h;
    cj.input_components = 3, cj.in_color_space = JCS_RGB;
    jpeg_set_defaults(&cj);
    jpeg_set_quality(&cj, 90, TRUE);
    cj.scan_info = script;
    cj.num_scans = n;
    jpeg_start_compress(&cj, TRUE);
    while (cj.next_scanline < cj.image_height) {
        JSAMPROW row = (JSAMPROW)(px + (size_t)cj.next_scanline * w * 3);
        jpeg_write_scanlines(&cj, &row, 1);
    }
    jpeg_finish_compress(&cj);
    jpeg_destroy_compress(&cj);
    fclose(f);
    return n;
}

/* The reference decode: libjpeg-turbo directly, RGB out. */
static uint8_t *libjpeg_decode(const unsigned char *data, size_t len, int *w, int *h)
{
    struct jpeg_decompress_struct d;
    struct jpeg_error_mgr jerr;
    d.err = jpeg_std_error(&jerr);
    jpeg_create_decompress(&d);
    jpeg_mem_src(&d, data, (unsigned long)len);
    jpeg_read_header(&d, TRUE);
    d.out_color_space = JCS_RGB;
    jpeg_start_decompress(&d);
    *w = (int)d.output_width, *h = (int)d.output_height;
    uint8_t *px = malloc((size_t)*w * *h * 3);
    while (d.output_scanline < d.output_height) {
        JSAMPROW row = px + (size_t)d.output_scanline * *w * 3;
        jpeg_read_scanlines(&d, &row, 1);
    }
    jpeg_finish_decompress(&d);
    jpeg_destroy_decompress(&d);
    return px;
}

/* ---- the limits ---- */

/* The example: a few dozen bytes claiming 100000x100000. Each limit in turn refuses it
 * before the image exists, and with every limit raised the format's own bound still does. */
static void test_tiny_png_claiming_huge(void)
{
    int allocs;
    size_t n;
    const char *path = tiny_png("huge.png", 100000, 100000, 8, 0, 0, &n);
    CHECK(n == 45, "the hand-made PNG is %zu bytes", n);
    io_options opt = counted(&allocs);
    expect_refused("45-byte PNG, default limits", path, opt, &allocs,
                   "image is 100000x100000 (10000000000 pixels), over the limit of 1073741824 pixels (--max-pixels raises it)");
    opt.max_pixels = 10000000000ull;
    expect_refused("45-byte PNG, pixels raised", path, opt, &allocs,
                   "image of 100000x100000 decodes to 10000000000 bytes, 222222223 times the file's 45 bytes, over the "
                   "limit of 100000 times (--max-ratio raises it)");
    opt.max_ratio = UINT64_MAX;
    ip_image out;
    int rc = io_read(path, &opt, &out, err, sizeof err);
    CHECK(rc == IP_EFORMAT && !strcmp(err, "truncated or corrupt PNG: not enough image data") && allocs == 0,
          "45-byte PNG, all raised: %d (%s), %d allocations", rc, err, allocs);
    /* 1-bit gray goes through libpng, which checks the same bound before allocating. */
    path = tiny_png("huge1.png", 100000, 100000, 1, 0, 1, &n);
    rc = io_read(path, &opt, &out, err, sizeof err);
    CHECK(rc == IP_EFORMAT && !strcmp(err, "truncated or corrupt PNG: not enough image data") && allocs == 0,
          "1-bit PNG, all raised: %d (%s), %d allocations", rc, err, allocs);
}

/* --max-pixels on a real file of each format: 37x23 = 851 pixels. */
static void test_pixels(void)
{
    uint8_t *px = random_u8(37 * 23 * 3, 11);
    ip_image img = { px, 37 * 3, { 37, 23, 3, IP_U8 }, 0 };
    static const char *names[] = { "pixels.png", "pixels.tif" };
    for (int i = 0; i < 2; i++) {
        const char *path = tio_path(names[i]);
        CHECK(io_write(path, &img, NULL, err, sizeof err) == IP_OK, "%s", err);
        int allocs;
        io_options opt = counted(&allocs);
        opt.max_pixels = 850;
        expect_refused(names[i], path, opt, &allocs,
                       "image is 37x23 (851 pixels), over the limit of 850 pixels (--max-pixels raises it)");
        opt.max_pixels = 851;
        expect_pixels(names[i], path, opt, px, 37, 23, 3);
    }
    const char *path = tio_path("pixels.jpg");
    CHECK(io_write(path, &img, NULL, err, sizeof err) == IP_OK, "%s", err);
    int allocs;
    io_options opt = counted(&allocs);
    opt.max_pixels = 850;
    expect_refused("pixels.jpg", path, opt, &allocs,
                   "image is 37x23 (851 pixels), over the limit of 850 pixels (--max-pixels raises it)");
    size_t len;
    unsigned char *jpg = tio_slurp(path, &len);
    int w, h;
    uint8_t *want = libjpeg_decode(jpg, len, &w, &h);
    opt.max_pixels = 851;
    expect_pixels("pixels.jpg", path, opt, want, w, h, 3);
    free(want);
    free(jpg);
    free(px);

    /* TIFF sides are 32-bit: past 2^31-1 a side there is nothing to raise. */
    const tiff_tag wide[] = { { 256, 3000000000u }, { 257, 1 }, { 258, 8 }, { 259, 1 }, { 262, 1 },
                              { 273, 0xFFFFFFFFu }, { 277, 1 }, { 278, 1 }, { 279, 16 } };
    path = tiny_tiff("wide.tif", wide, 9);
    opt = counted(&allocs);
    expect_refused("3000000000x1 TIFF", path, opt, &allocs,
                   "image is 3000000000x1 (3000000000 pixels), over the limit of 1073741824 pixels (--max-pixels raises it)");
    opt.max_pixels = UINT64_MAX;
    expect_refused("3000000000x1 TIFF, pixels raised", path, opt, &allocs,
                   "image is 3000000000x1, over the limit of 2147483647 pixels a side (no option raises it)");
}

/* --max-ratio against blank images, the most compressible there are: ceil(decoded / file) passes,
 * one less is refused. */
static void check_ratio(const char *what, const char *path, int w, int h, int c)
{
    uint64_t decoded = (uint64_t)w * h * c, file = file_size(path);
    uint64_t times = (decoded + file - 1) / file;
    CHECK(file > 0 && times > 50, "%s: %llu bytes from %llu is no test of the ratio", what,
          (unsigned long long)decoded, (unsigned long long)file);
    int allocs;
    io_options opt = counted(&allocs);
    opt.max_ratio = times - 1;
    char want[400];
    snprintf(want, sizeof want,
             "image of %dx%d decodes to %llu bytes, %llu times the file's %llu bytes, over the limit of %llu times "
             "(--max-ratio raises it)",
             w, h, (unsigned long long)decoded, (unsigned long long)times, (unsigned long long)file,
             (unsigned long long)(times - 1));
    expect_refused(what, path, opt, &allocs, want);
    opt.max_ratio = times;
    uint8_t *zeros = calloc(decoded, 1);
    expect_pixels(what, path, opt, zeros, w, h, c);
    free(zeros);
}

static void test_ratio(void)
{
    int w = 1009, h = 997;
    uint8_t *zeros = calloc((size_t)w * h * 3, 1);
    const char *path = tio_path("blank.png");
    write_png(path, w, h, 8, PNG_COLOR_TYPE_GRAY, zeros);
    check_ratio("blank PNG", path, w, h, 1);
    path = tio_path("blank.tif");
    write_tiff(path, &(tiff_spec){ w, h, 3, 0, 0, 64, 0, COMPRESSION_ADOBE_DEFLATE }, zeros);
    check_ratio("blank deflate TIFF", path, w, h, 3);
    size_t len;
    unsigned char *jpg = jm_encode(zeros, (size_t)w, w, h, 1, &(jm_settings){ 90, JM_444, 0, 0, JCS_UNKNOWN }, &len);
    path = tio_path("blank.jpg");
    CHECK(tio_spit(path, jpg, len) == 0, "write blank.jpg");
    free(jpg);
    check_ratio("blank JPEG", path, w, h, 1);
    free(zeros);

    /* The default passes the most compressible PNG there is: blank, 1 bit a pixel, to RGB. */
    w = 3001, h = 2999;
    size_t row = ((size_t)w + 7) / 8;
    uint8_t *bits = calloc(row * h, 1);
    path = tio_path("blank-palette.png");
    write_png(path, w, h, 1, PNG_COLOR_TYPE_PALETTE, bits);
    free(bits);
    uint64_t ratio = (uint64_t)w * h * 3 / file_size(path);
    CHECK(ratio > 20000 && ratio < IO_DEFAULT_MAX_RATIO, "blank palette PNG decodes to %llu times its size",
          (unsigned long long)ratio);
    io_options opt;
    io_default_options(&opt);
    ip_image out;
    int rc = io_read(path, &opt, &out, err, sizeof err);
    int red = rc == IP_OK && tio_same_shape(&out, w, h, 3, IP_U8);
    for (size_t i = 0; red && i < (size_t)w * h; i++) {
        const uint8_t *p = (const uint8_t *)out.data + (size_t)(i / w) * (size_t)out.stride + i % w * 3;
        red = p[0] == 200 && p[1] == 40 && p[2] == 7;
    }
    CHECK(red, "blank palette PNG under the default ratio: %d (%s)", rc, err);
    if (rc == IP_OK) img_free(&out);
}

/* --max-jpeg-scans: 2090 scans, all valid. The CPU reader reads the scans before allocating the
 * image; the layout reader (the GPU's gate) counts them all. */
static void test_jpeg_scans(void)
{
    int w = 23, h = 17;
    uint8_t *px = random_u8((size_t)w * h * 3, 5);
    const char *path = tio_path("scans.jpg");
    int scans = many_scans_jpeg(path, px, w, h);
    free(px);
    CHECK(scans == 2090, "%d scans", scans);
    size_t len;
    unsigned char *jpg = tio_slurp(path, &len);
    jpeg_layout L;
    CHECK(jpeg_layout_read(jpg, len, &L, err, sizeof err) == IP_OK && L.scans == scans, "layout: %d scans (%s)", L.scans, err);
    int allocs;
    io_options opt = counted(&allocs);
    expect_refused("2090 scans, default", path, opt, &allocs,
                   "JPEG has 1001 scans or more, over the limit of 1000 scans (--max-jpeg-scans raises it)");
    opt.max_jpeg_scans = scans - 1;
    expect_refused("2090 scans, limit 2089", path, opt, &allocs,
                   "JPEG has 2090 scans or more, over the limit of 2089 scans (--max-jpeg-scans raises it)");
    opt.max_jpeg_scans = scans;
    int rw, rh;
    uint8_t *want = libjpeg_decode(jpg, len, &rw, &rh);
    expect_pixels("2090 scans, limit 2090", path, opt, want, rw, rh, 3);
    free(want);
    free(jpg);
}

/* --max-tiff-blocks: 53 strips of one row; 48 tiles (16x16 over 61x53, three separate planes). */
static void test_tiff_blocks(void)
{
    int w = 61, h = 53;
    uint8_t *px = random_u8((size_t)w * h * 3, 3);
    const char *path = tio_path("strips.tif");
    write_tiff(path, &(tiff_spec){ w, h, 1, 0, 0, 1, 0, COMPRESSION_NONE }, px);
    int allocs;
    io_options opt = counted(&allocs);
    opt.max_tiff_blocks = 52;
    expect_refused("53 strips", path, opt, &allocs,
                   "TIFF image is stored in 53 strips, over the limit of 52 strips or tiles (--max-tiff-blocks raises it)");
    opt.max_tiff_blocks = 53;
    expect_pixels("53 strips", path, opt, px, w, h, 1);

    path = tio_path("tiles.tif");
    write_tiff(path, &(tiff_spec){ w, h, 3, 16, 16, 0, 1, COMPRESSION_LZW }, px);
    opt.max_tiff_blocks = 47;
    expect_refused("48 tiles", path, opt, &allocs,
                   "TIFF image is stored in 48 tiles, over the limit of 47 strips or tiles (--max-tiff-blocks raises it)");
    opt.max_tiff_blocks = 48;
    expect_pixels("48 tiles", path, opt, px, w, h, 3);
    free(px);

    /* 4194305 one-row strips (a 25 MB file of strip offsets): refused by the default. */
    path = one_row_strips_tiff("tall.tif", 4194305);
    opt = counted(&allocs);
    expect_refused("4194305 strips, default", path, opt, &allocs,
                   "TIFF image is stored in 4194305 strips, over the limit of 4194304 strips or tiles (--max-tiff-blocks "
                   "raises it)");
}

/* --max-tiff-tile-bytes: a 256x256 RGB tile over a 20x20 image; tiles within the image pass any limit. */
static void test_tiff_tile_bytes(void)
{
    uint8_t *px = random_u8(64 * 48 * 3, 9);
    const char *path = tio_path("big-tile.tif");
    write_tiff(path, &(tiff_spec){ 20, 20, 3, 256, 256, 0, 0, COMPRESSION_ADOBE_DEFLATE }, px);
    int allocs;
    io_options opt = counted(&allocs);
    opt.max_tiff_tile_bytes = 256 * 256 * 3 - 1;
    expect_refused("256x256 tile", path, opt, &allocs,
                   "TIFF tiles of 256x256 decode to 196608 bytes each, more than the whole image (1200 bytes) and over "
                   "the limit of 196607 bytes (--max-tiff-tile-bytes raises it)");
    opt.max_tiff_tile_bytes = 256 * 256 * 3;
    expect_pixels("256x256 tile", path, opt, px, 20, 20, 3);

    path = tio_path("small-tiles.tif");
    write_tiff(path, &(tiff_spec){ 64, 48, 3, 32, 16, 0, 0, COMPRESSION_NONE }, px);
    opt.max_tiff_tile_bytes = 1;
    expect_pixels("32x16 tiles of a 64x48 image, limit 1 byte", path, opt, px, 64, 48, 3);
    free(px);

    /* A header claiming 16384x16384 tiles over 16x16 pixels: refused by the default. */
    const tiff_tag tiled[] = { { 256, 16 }, { 257, 16 }, { 258, 8 }, { 259, 1 }, { 262, 1 }, { 277, 1 },
                               { 322, 16384 }, { 323, 16384 }, { 324, 0xFFFFFFFFu }, { 325, 16 } };
    path = tiny_tiff("huge-tile.tif", tiled, 10);
    opt = counted(&allocs);
    expect_refused("16384x16384 tile, default", path, opt, &allocs,
                   "TIFF tiles of 16384x16384 decode to 268435456 bytes each, more than the whole image (256 bytes) and "
                   "over the limit of 67108864 bytes (--max-tiff-tile-bytes raises it)");
}

/* The fuzz harnesses run with a run's limits, only the pixel limit scaled down. */
static void test_fuzz_limits(void)
{
    io_options run, fuzz = fuzz_io_options();
    io_default_options(&run);
    CHECK(fuzz.max_pixels == FUZZ_MAX_PIXELS && fuzz.max_ratio == run.max_ratio &&
              fuzz.max_jpeg_scans == run.max_jpeg_scans && fuzz.max_tiff_blocks == run.max_tiff_blocks &&
              fuzz.max_tiff_tile_bytes == run.max_tiff_tile_bytes,
          "the fuzz harnesses' limits differ from a run's");
    CHECK(run.max_ratio == IO_DEFAULT_MAX_RATIO && run.max_jpeg_scans == IO_DEFAULT_MAX_JPEG_SCANS &&
              run.max_tiff_blocks == IO_DEFAULT_MAX_TIFF_BLOCKS && run.max_tiff_tile_bytes == IO_DEFAULT_MAX_TIFF_TILE_BYTES,
          "io_default_options lacks a default");
}

int main(void)
{
    test_tiny_png_claiming_huge();
    test_pixels();
    test_ratio();
    test_jpeg_scans();
    test_tiff_blocks();
    test_tiff_tile_bytes();
    test_fuzz_limits();
    return tu_finish();
}
