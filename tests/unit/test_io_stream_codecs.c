/* The streamed PNG and JPEG codecs (io_stream.h): every kind of file read in bands of 1, 7 and
 * more rows than the image gives the whole-image reader's pixels; files written in such bands are
 * the whole-image writer's bytes, at every level, quality and group size; damage in the middle
 * fails as the whole-image reader does; interlaced PNG is declined. */
#include "test_io_helpers.h"
#include "io/io_stream.h"
#include "jpeg_make.h"
#include <png.h>

static char err[512];

/* Every row a reader hands out, gathered into one image; band heights checked on the way. */
static int read_streamed(const char *path, const io_options *opt, uint64_t band_bytes, ip_image *out, int *most_rows)
{
    io_stream_reader *r;
    ip_shape shape;
    int rc = io_stream_open(path, opt, band_bytes, &r, &shape, err, sizeof err);
    if (rc != IP_OK) return rc;
    rc = img_alloc(out, &shape, UINT64_MAX, err, sizeof err);
    int expect_y = 0;
    *most_rows = 0;
    while (rc == IP_OK) {
        ip_image rows;
        int y0;
        rc = io_stream_next(r, &rows, &y0, err, sizeof err);
        if (rc != IP_OK || rows.shape.height == 0) break;
        CHECK(y0 == expect_y, "%s: band at row %d, expected %d", path, y0, expect_y);
        if (rows.shape.height > *most_rows) *most_rows = rows.shape.height;
        for (int y = 0; y < rows.shape.height && y0 + y < shape.height; y++)
            memcpy((char *)out->data + (size_t)(y0 + y) * out->stride, (const char *)rows.data + (size_t)y * rows.stride,
                   img_row_bytes(&shape));
        expect_y = y0 + rows.shape.height;
    }
    if (rc == IP_OK) CHECK(expect_y == shape.height, "%s: %d of %d rows handed out", path, expect_y, shape.height);
    io_stream_close(r);
    if (rc != IP_OK) img_free(out);
    return rc;
}

static int same_pixels(const ip_image *a, const ip_image *b)
{
    if (memcmp(&a->shape, &b->shape, sizeof a->shape)) return 0;
    for (int y = 0; y < a->shape.height; y++)
        if (memcmp((const char *)a->data + (size_t)y * a->stride, (const char *)b->data + (size_t)y * b->stride,
                   img_row_bytes(&a->shape)))
            return 0;
    return 1;
}

/* Streamed in bands of 1 row, 7 rows and more than the image: the whole-image reader's pixels. */
static void check_read(const char *name)
{
    io_options opt;
    io_default_options(&opt);
    ip_image whole;
    int rc = io_read(tio_path(name), &opt, &whole, err, sizeof err);
    CHECK(rc == IP_OK, "%s: whole read: %s", name, err);
    if (rc != IP_OK) return;
    size_t row = img_row_bytes(&whole.shape);
    const uint64_t band_bytes[3] = { row, 7 * row, 0 };
    const int expect_most[3] = { 1, whole.shape.height < 7 ? whole.shape.height : 7, whole.shape.height };
    for (int i = 0; i < 3; i++) {
        ip_image streamed;
        int most;
        rc = read_streamed(tio_path(name), &opt, band_bytes[i], &streamed, &most);
        CHECK(rc == IP_OK, "%s: streamed read: %s", name, err);
        if (rc != IP_OK) continue;
        CHECK(same_pixels(&whole, &streamed), "%s: streamed pixels differ (bands of %d rows)", name, most);
        CHECK(most == expect_most[i], "%s: bands of %d rows, expected %d", name, most, expect_most[i]);
        img_free(&streamed);
    }
    img_free(&whole);
}

/* A PNG written by libpng from packed samples (palette: 3 bytes an entry; trns: tRNS bytes). */
typedef struct {
    int color_type, depth, interlace;
    const unsigned char *palette;
    int palette_n;
    const unsigned char *trns;
    int trns_n;
    png_color_16 trns_colour;
    int has_trns_colour;
} png_kind;

static void write_png(const char *name, int w, int h, const png_kind *k, const unsigned char *rows, size_t stride)
{
    FILE *f = fopen(tio_path(name), "wb");
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, k->depth, k->color_type, k->interlace,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (k->palette) png_set_PLTE(png, info, (png_const_colorp)k->palette, k->palette_n);
    if (k->trns || k->has_trns_colour)
        png_set_tRNS(png, info, k->trns, k->trns_n, k->has_trns_colour ? &k->trns_colour : NULL);
    png_write_info(png, info);
    int passes = png_set_interlace_handling(png);
    for (int p = 0; p < passes; p++)
        for (int y = 0; y < h; y++) png_write_row(png, rows + (size_t)y * stride);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    fclose(f);
}

static unsigned char *random_bytes(size_t n, tu_rng *rng)
{
    unsigned char *p = malloc(n ? n : 1);
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)tu_next(rng);
    return p;
}

static void test_png_read_kinds(void)
{
    tu_rng rng;
    tu_seed(&rng, 31);
    static const int sizes[][2] = { { 1, 1 }, { 1, 13 }, { 17, 1 }, { 61, 29 }, { 127, 53 } };
    static const int types[] = { PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                                 PNG_COLOR_TYPE_RGB_ALPHA };
    static const int channels[] = { 1, 2, 3, 4 };
    unsigned char palette[3 * 256], alphas[256];
    for (int i = 0; i < 3 * 256; i++) palette[i] = (unsigned char)tu_next(&rng);
    for (int i = 0; i < 256; i++) alphas[i] = (unsigned char)tu_next(&rng);
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        int w = sizes[s][0], h = sizes[s][1];
        char name[64];
        unsigned char *px = random_bytes((size_t)w * h * 8, &rng);
        for (int t = 0; t < 4; t++)
            for (int depth = 8; depth <= 16; depth += 8) {
                png_kind k = { .color_type = types[t], .depth = depth };
                snprintf(name, sizeof name, "plain_%d_%d_%dx%d.png", t, depth, w, h);
                write_png(name, w, h, &k, px, (size_t)w * channels[t] * depth / 8);
                check_read(name);
            }
        for (int depth = 1; depth <= 8; depth *= 2) {   /* low-depth gray and palette, packed rows */
            size_t stride = ((size_t)w * depth + 7) / 8;
            unsigned char *packed = random_bytes(stride * h, &rng);
            png_kind gray = { .color_type = PNG_COLOR_TYPE_GRAY, .depth = depth };
            snprintf(name, sizeof name, "gray%d_%dx%d.png", depth, w, h);
            write_png(name, w, h, &gray, packed, stride);
            check_read(name);
            png_kind pal = { .color_type = PNG_COLOR_TYPE_PALETTE, .depth = depth, .palette = palette, .palette_n = 1 << depth };
            snprintf(name, sizeof name, "palette%d_%dx%d.png", depth, w, h);
            write_png(name, w, h, &pal, packed, stride);
            check_read(name);
            pal.trns = alphas;
            pal.trns_n = (1 << depth) / 2 + 1;
            snprintf(name, sizeof name, "palette_trns%d_%dx%d.png", depth, w, h);
            write_png(name, w, h, &pal, packed, stride);
            check_read(name);
            free(packed);
        }
        png_kind rgb_key = { .color_type = PNG_COLOR_TYPE_RGB, .depth = 16, .has_trns_colour = 1,
                             .trns_colour = { 0, (png_uint_16)(px[0] << 8 | px[1]), (png_uint_16)(px[2] << 8 | px[3]),
                                              (png_uint_16)(px[4] << 8 | px[5]), 0 } };
        snprintf(name, sizeof name, "rgb16_trns_%dx%d.png", w, h);
        write_png(name, w, h, &rgb_key, px, (size_t)w * 6);
        check_read(name);
        free(px);
    }
}

/* A palette image's expansion against its palette, read in bands of 7 rows. */
static void test_png_palette_values(void)
{
    tu_rng rng;
    tu_seed(&rng, 5);
    int w = 37, h = 23;
    unsigned char palette[3 * 16], *idx = random_bytes((size_t)w * h, &rng);
    for (int i = 0; i < 48; i++) palette[i] = (unsigned char)tu_next(&rng);
    for (int i = 0; i < w * h; i++) idx[i] &= 15;
    png_kind pal = { .color_type = PNG_COLOR_TYPE_PALETTE, .depth = 8, .palette = palette, .palette_n = 16 };
    write_png("palvalues.png", w, h, &pal, idx, (size_t)w);
    io_options opt;
    io_default_options(&opt);
    ip_image img;
    int most;
    int rc = read_streamed(tio_path("palvalues.png"), &opt, (uint64_t)w * 3 * 7, &img, &most);
    CHECK(rc == IP_OK && tio_same_shape(&img, w, h, 3, IP_U8), "palette: %s", err);
    int bad = 0;
    for (int y = 0; rc == IP_OK && y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++)
                bad += tio_get(&img, x, y, c) != palette[idx[y * w + x] * 3 + c];
    CHECK(bad == 0, "palette: %d samples are not their palette entry", bad);
    if (rc == IP_OK) img_free(&img);
    free(idx);
}

static void test_png_interlaced_declined(void)
{
    tu_rng rng;
    tu_seed(&rng, 7);
    unsigned char *px = random_bytes(19 * 11 * 3, &rng);
    png_kind k = { .color_type = PNG_COLOR_TYPE_RGB, .depth = 8, .interlace = PNG_INTERLACE_ADAM7 };
    write_png("interlaced.png", 19, 11, &k, px, 19 * 3);
    io_options opt;
    io_default_options(&opt);
    io_stream_reader *r;
    ip_shape shape;
    int rc = io_stream_open(tio_path("interlaced.png"), &opt, 0, &r, &shape, err, sizeof err);
    CHECK(rc == IP_EUNSUPPORTED && strstr(err, "interlaced"), "interlaced PNG: %d %s", rc, err);
    if (rc == IP_OK) io_stream_close(r);
    free(px);
}

/* Writes img through the streamed writer in bands of `band` rows; *same: the file equals `whole`
 * (the whole-image writer's file) byte for byte. */
static int write_streamed(const ip_image *img, const char *ext, const io_options *opt, int band,
                          const unsigned char *whole, size_t whole_len, int *same)
{
    char streamed[64];
    snprintf(streamed, sizeof streamed, "streamed.%s", ext);
    io_stream_writer *w;
    int rc = io_stream_create(tio_path(streamed), &img->shape, opt, &w, err, sizeof err);
    if (rc != IP_OK) return rc;
    for (int y0 = 0; y0 < img->shape.height && rc == IP_OK; y0 += band) {
        ip_image rows = *img;
        rows.data = (char *)img->data + (size_t)y0 * img->stride;
        rows.shape.height = img->shape.height - y0 < band ? img->shape.height - y0 : band;
        rc = io_stream_write(w, &rows, y0, err, sizeof err);
    }
    if (rc != IP_OK) {
        io_stream_abort(w);
        return rc;
    }
    rc = io_stream_finish(w, err, sizeof err);
    if (rc != IP_OK) return rc;
    size_t n = 0;
    unsigned char *b = tio_slurp(tio_path(streamed), &n);
    *same = whole && b && n == whole_len && memcmp(whole, b, n) == 0;
    free(b);
    return IP_OK;
}

static ip_image random_image(int w, int h, int c, ip_dtype t, tu_rng *rng, int smooth)
{
    ipk_img k = tu_img_random(w, h, c, (ipk_dtype)t, 0, rng);
    ip_image img = tio_from_ipk(&k);
    /* smooth rows compress, so that filters and dictionaries matter */
    for (int y = 0; smooth && y < h; y++)
        for (size_t i = 0; i < img_row_bytes(&img.shape); i++) {
            unsigned char *p = (unsigned char *)img.data + (size_t)y * img.stride + i;
            *p = (unsigned char)((*p & 7) + (i / 5 + (size_t)y) % 200);
        }
    return img;
}

/* The streamed writer, in bands of 1 row, 7 rows and more than the image, gives the bytes of the
 * whole-image writer (written once: the same image and options give the same file). */
static void check_write(const ip_image *img, const char *ext, io_options *opt, const char *what)
{
    const int bands[3] = { 1, 7, img->shape.height + 5 };
    char whole[64];
    snprintf(whole, sizeof whole, "whole.%s", ext);
    int rc = io_write(tio_path(whole), img, opt, err, sizeof err);
    CHECK(rc == IP_OK, "%s: whole-image write: %s", what, err);
    size_t whole_len = 0;
    unsigned char *want = rc == IP_OK ? tio_slurp(tio_path(whole), &whole_len) : NULL;
    CHECK(rc != IP_OK || want, "%s: the whole-image file cannot be read back", what);
    for (int i = 0; want && i < 3; i++) {
        int same = 0;
        rc = write_streamed(img, ext, opt, bands[i], want, whole_len, &same);
        CHECK(rc == IP_OK, "%s: %s", what, err);
        CHECK(rc != IP_OK || same, "%s: streamed file (bands of %d rows) differs from the whole-image one", what, bands[i]);
    }
    free(want);
    CHECK(tio_leftover_temps() == 0, "%s: temporaries left", what);
}

static void test_png_write(void)
{
    tu_rng rng;
    tu_seed(&rng, 99);
    static const int sizes[][2] = { { 1, 1 }, { 1, 17 }, { 23, 1 }, { 61, 41 } };
    static const int levels[] = { 0, 1, 2, 3, 4, 6, 9 };
    io_options opt;
    io_default_options(&opt);
    char what[128];
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (int c = 1; c <= 4; c++)
            for (int t = 0; t < 2; t++) {
                ip_image img = random_image(sizes[s][0], sizes[s][1], c, t ? IP_U16 : IP_U8, &rng, 1);
                for (size_t l = 0; l < sizeof levels / sizeof *levels; l++) {
                    opt.png_level = levels[l];
                    snprintf(what, sizeof what, "PNG %dx%dx%d %s level %d", sizes[s][0], sizes[s][1], c,
                             t ? "16-bit" : "8-bit", levels[l]);
                    check_write(&img, "png", &opt, what);
                }
                img_free(&img);
            }
    /* Several 2 MiB bands, in groups of one band and of two: the dictionary carried between groups.
     * One level of each way the writer deflates a band (io_png_deflate.c): libdeflate at 1 and at
     * 4 (FAST_MAX_LEVEL, the other zlib header), zlib primed with the band before at 6; the
     * whole-image writer joins bands at every level in test_io_png_codec. */
    static const int big_levels[] = { 1, 4, 6 };
    ip_image big = random_image(1031, 1523, 3, IP_U8, &rng, 1);
    for (int hold = 0; hold < 2; hold++)
        for (size_t l = 0; l < sizeof big_levels / sizeof *big_levels; l++) {
            opt.png_level = big_levels[l];
            opt.threads = 2;
            opt.stream_hold_bytes = hold ? 1 : 0;
            snprintf(what, sizeof what, "PNG 1031x1523x3 level %d, groups of %s", big_levels[l], hold ? "one band" : "two");
            check_write(&big, "png", &opt, what);
        }
    img_free(&big);
}

static void test_jpeg_write(void)
{
    tu_rng rng;
    tu_seed(&rng, 17);
    static const int sizes[][2] = { { 1, 1 }, { 1, 19 }, { 29, 1 }, { 67, 43 }, { 1021, 1031 } };
    static const int qualities[] = { 75, 90 };   /* 4:2:0 and 4:4:4 */
    io_options opt;
    io_default_options(&opt);
    char what[128];
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (int c = 1; c <= 3; c += 2) {
            ip_image img = random_image(sizes[s][0], sizes[s][1], c, IP_U8, &rng, 1);
            for (int q = 0; q < 2; q++)
                for (int hold = 0; hold < 2; hold++) {
                    opt.jpeg_quality = qualities[q];
                    opt.stream_hold_bytes = hold ? 1 : 0;
                    snprintf(what, sizeof what, "JPEG %dx%dx%d quality %d%s", sizes[s][0], sizes[s][1], c, qualities[q],
                             hold ? ", one band a group" : "");
                    check_write(&img, "jpg", &opt, what);
                }
            img_free(&img);
        }
}

static void write_jpeg(const char *name, int w, int h, int channels, const jm_settings *s, tu_rng *rng)
{
    ip_image img = random_image(w, h, channels, IP_U8, rng, 1);
    size_t len;
    unsigned char *bytes = jm_encode(img.data, (size_t)img.stride, w, h, channels, s, &len);
    tio_spit(tio_path(name), bytes, len);
    free(bytes);
    img_free(&img);
}

static void test_jpeg_read_kinds(void)
{
    tu_rng rng;
    tu_seed(&rng, 3);
    static const int sizes[][2] = { { 1, 1 }, { 1, 21 }, { 31, 1 }, { 97, 61 }, { 331, 277 } };
    char name[64];
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        int w = sizes[s][0], h = sizes[s][1];
        jm_settings gray = { 85, JM_444, 0, 0, JCS_UNKNOWN }, s444 = gray, s420 = gray, prog = gray, cmyk = gray;
        s420.sampling = JM_420;
        prog.sampling = JM_420;
        prog.progressive = 1;
        snprintf(name, sizeof name, "gray_%dx%d.jpg", w, h);
        write_jpeg(name, w, h, 1, &gray, &rng);
        check_read(name);
        snprintf(name, sizeof name, "444_%dx%d.jpg", w, h);
        write_jpeg(name, w, h, 3, &s444, &rng);
        check_read(name);
        snprintf(name, sizeof name, "420_%dx%d.jpg", w, h);
        write_jpeg(name, w, h, 3, &s420, &rng);
        check_read(name);
        snprintf(name, sizeof name, "progressive_%dx%d.jpg", w, h);
        write_jpeg(name, w, h, 3, &prog, &rng);
        check_read(name);
        snprintf(name, sizeof name, "cmyk_%dx%d.jpg", w, h);
        write_jpeg(name, w, h, 4, &cmyk, &rng);
        check_read(name);
        cmyk.file_colour = JCS_YCCK;
        snprintf(name, sizeof name, "ycck_%dx%d.jpg", w, h);
        write_jpeg(name, w, h, 4, &cmyk, &rng);
        check_read(name);
    }
}

/* Reads every band of a file cut in the middle; the error (or the warnings) as the whole reader's. */
static int read_cut(const char *name, const io_options *opt, char *msg, size_t msglen)
{
    ip_image img;
    int most, rc = read_streamed(tio_path(name), opt, 0, &img, &most);
    snprintf(msg, msglen, "%s", err);
    if (rc == IP_OK) img_free(&img);
    return rc;
}

static void cut_file(const char *from, const char *to, double keep)
{
    size_t n = 0;
    unsigned char *data = tio_slurp(tio_path(from), &n);
    tio_spit(tio_path(to), data, (size_t)(n * keep));
    free(data);
}

static void test_damage(void)
{
    tu_rng rng;
    tu_seed(&rng, 8);
    ip_image img = random_image(211, 307, 3, IP_U8, &rng, 0);
    io_options opt;
    io_default_options(&opt);
    CHECK(io_write(tio_path("cut_src.png"), &img, &opt, err, sizeof err) == IP_OK, "%s", err);
    CHECK(io_write(tio_path("cut_src.jpg"), &img, &opt, err, sizeof err) == IP_OK, "%s", err);
    img_free(&img);
    cut_file("cut_src.png", "cut.png", 0.5);
    cut_file("cut_src.jpg", "cut.jpg", 0.5);
    char msg[512];
    /* PNG cut short: not streamed (the whole reader refuses it, or salvages what it can) */
    int rc = read_cut("cut.png", &opt, msg, sizeof msg);
    CHECK(rc == IP_EUNSUPPORTED && strstr(msg, "not streamed"), "cut PNG: %d %s", rc, msg);
    /* PNG damaged inside its image data, chunks intact: an error, with rows already handed out */
    size_t n = 0;
    unsigned char *bad = tio_slurp(tio_path("cut_src.png"), &n);
    for (size_t i = n / 2; bad && i < n / 2 + 64; i++) bad[i] ^= 0x5a;
    if (bad) tio_spit(tio_path("flipped.png"), bad, n);
    free(bad);
    rc = read_cut("flipped.png", &opt, msg, sizeof msg);
    CHECK(rc == IP_EFORMAT && strstr(msg, "truncated or corrupt PNG") && !strchr(msg, '\n'), "flipped PNG: %d %s", rc, msg);
    /* a chunk claiming more bytes than the file holds: not streamed, nothing allocated for it */
    static const unsigned char head[] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R',
                                          0, 0, 0, 23, 0, 0, 0, 16, 8, 2, 0, 0, 0, 0x72, 0x4d, 0x73, 0x4f,
                                          0x65, 0, 0, 12, 't', 'E', 'X', 't' };
    tio_spit(tio_path("long_chunk.png"), head, sizeof head);
    rc = read_cut("long_chunk.png", &opt, msg, sizeof msg);
    CHECK(rc == IP_EUNSUPPORTED, "a chunk past the end of the file: %d %s", rc, msg);
    ip_image whole;
    CHECK(io_read(tio_path("cut.png"), &opt, &whole, err, sizeof err) == IP_EFORMAT, "cut PNG read whole");
    /* JPEG: libjpeg fills the rest with gray and warns, as the whole reader; refused under --fail-on warning */
    io_warnings seen = { 0 }, seen_whole = { 0 };
    opt.warnings = &seen_whole;
    CHECK(io_read(tio_path("cut.jpg"), &opt, &whole, err, sizeof err) == IP_OK, "cut JPEG read whole: %s", err);
    img_free(&whole);
    opt.warnings = &seen;
    rc = read_cut("cut.jpg", &opt, msg, sizeof msg);
    CHECK(rc == IP_OK && seen.count == seen_whole.count && seen.count > 0 && !strcmp(seen.first, seen_whole.first),
          "cut JPEG: %d, %d warnings (%s), whole: %d (%s)", rc, seen.count, seen.first, seen_whole.count, seen_whole.first);
    check_read("cut.jpg");
    opt.fail_on = IO_FAIL_ON_WARNING;
    rc = read_cut("cut.jpg", &opt, msg, sizeof msg);
    CHECK(rc == IP_EFORMAT && strstr(msg, seen_whole.first) && strstr(msg, "fail-on"), "cut JPEG, --fail-on warning: %d %s", rc, msg);
    /* the pixel limit, before any pixel */
    io_default_options(&opt);
    opt.max_pixels = 1000;
    io_stream_reader *r;
    ip_shape shape;
    CHECK(io_stream_open(tio_path("cut_src.png"), &opt, 0, &r, &shape, err, sizeof err) == IP_ELIMIT, "PNG pixel limit: %s", err);
    CHECK(io_stream_open(tio_path("cut_src.jpg"), &opt, 0, &r, &shape, err, sizeof err) == IP_ELIMIT, "JPEG pixel limit: %s", err);
    /* the scan limit, as the whole reader's, before the first row (decoding starts with the first
     * band: a run that then reads the file whole reads its scans once) */
    io_default_options(&opt);
    opt.max_jpeg_scans = 3;
    int rc_whole = io_read(tio_path("progressive_97x61.jpg"), &opt, &whole, err, sizeof err);
    rc = read_cut("progressive_97x61.jpg", &opt, msg, sizeof msg);
    CHECK(rc == IP_ELIMIT && rc_whole == IP_ELIMIT && strstr(msg, "--max-jpeg-scans"), "JPEG scan limit: %d (whole %d) %s",
          rc, rc_whole, msg);
    /* a page past the first: declined, for the whole reader to refuse */
    io_default_options(&opt);
    opt.page = 1;
    rc = io_stream_open(tio_path("cut_src.png"), &opt, 0, &r, &shape, err, sizeof err);
    CHECK(rc == IP_EUNSUPPORTED, "PNG page 1: %d %s", rc, err);
}

int main(void)
{
    test_png_read_kinds();
    test_png_palette_values();
    test_png_interlaced_declined();
    test_jpeg_read_kinds();
    test_damage();
    test_png_write();
    test_jpeg_write();
    return tu_finish();
}
