/* io: PNG files of every colour type and depth, written here with libpng itself, read back. */
#include "test_io_helpers.h"
#include <png.h>

static char err[512];

typedef struct {
    int w, h, depth, type, interlace;
    int samples;            /* samples per pixel as stored (palette: 1) */
    const png_color *palette;
    int n_palette;
    const png_byte *trns;   /* palette alpha */
    int n_trns;
    const png_color_16 *trns_color;
} png_spec;

/* Packs stored samples (values below 2^depth) into PNG rows, big-endian, high bits first. */
static void pack_row(const unsigned *values, int n, int depth, png_bytep row)
{
    if (depth == 16) {
        for (int i = 0; i < n; i++) {
            row[2 * i] = (png_byte)(values[i] >> 8);
            row[2 * i + 1] = (png_byte)values[i];
        }
        return;
    }
    memset(row, 0, (size_t)(n * depth + 7) / 8);
    for (int i = 0; i < n; i++) {
        int bit = i * depth;
        row[bit / 8] |= (png_byte)(values[i] << (8 - depth - bit % 8));
    }
}

static int write_png(const char *path, const png_spec *s, const unsigned *stored)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    int n = s->w * s->samples;
    png_bytep row = malloc((size_t)n * 2 + 1);
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        fclose(f);
        free(row);
        return -1;
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)s->w, (png_uint_32)s->h, s->depth, s->type, s->interlace,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (s->palette) png_set_PLTE(png, info, s->palette, s->n_palette);
    if (s->trns || s->trns_color) png_set_tRNS(png, info, s->trns, s->n_trns, s->trns_color);
    png_write_info(png, info);
    int passes = png_set_interlace_handling(png);
    for (int p = 0; p < passes; p++)
        for (int y = 0; y < s->h; y++) {
            pack_row(stored + (size_t)y * n, n, s->depth, row);
            png_write_row(png, row);
        }
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    free(row);
    return fclose(f) == 0 ? 0 : -1;
}

static unsigned *random_samples(int count, unsigned below, uint64_t seed)
{
    tu_rng rng;
    tu_seed(&rng, seed);
    unsigned *v = malloc(sizeof *v * (size_t)count);
    for (int i = 0; i < count; i++) v[i] = tu_next(&rng) % below;
    return v;
}

/* Reads path and compares with expected values (w*h*channels, row-major, interleaved). */
static void expect_image(const char *name, const char *path, int w, int h, int c, ip_dtype t,
                         const unsigned *expected)
{
    ip_image img;
    int rc = io_read(path, NULL, &img, err, sizeof err);
    CHECK(rc == IP_OK, "%s: %s", name, err);
    if (rc) return;
    CHECK(tio_same_shape(&img, w, h, c, t), "%s: got %dx%dx%d dtype %d", name, img.shape.width,
          img.shape.height, img.shape.channels, img.shape.dtype);
    if (tio_same_shape(&img, w, h, c, t)) {
        int bad = 0;
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                for (int k = 0; k < c; k++) {
                    double want = expected[((size_t)y * w + x) * c + k];
                    if (tio_get(&img, x, y, k) != want && bad++ < 3)
                        CHECK(0, "%s: (%d,%d,%d) = %g, want %g", name, x, y, k, tio_get(&img, x, y, k), want);
                }
        CHECK(bad == 0, "%s: %d wrong values", name, bad);
    }
    img_free(&img);
}

static void test_palette_with_trns(void)
{
    png_color pal[6] = { { 255, 0, 0 }, { 0, 255, 0 }, { 0, 0, 255 }, { 10, 20, 30 }, { 200, 100, 50 }, { 1, 2, 3 } };
    png_byte trns[3] = { 0, 128, 77 };
    png_spec s = { 9, 5, 8, PNG_COLOR_TYPE_PALETTE, PNG_INTERLACE_NONE, 1, pal, 6, trns, 3, NULL };
    unsigned *idx = random_samples(9 * 5, 6, 11);
    unsigned want[9 * 5 * 4];
    for (int i = 0; i < 9 * 5; i++) {
        want[4 * i] = pal[idx[i]].red;
        want[4 * i + 1] = pal[idx[i]].green;
        want[4 * i + 2] = pal[idx[i]].blue;
        want[4 * i + 3] = idx[i] < 3 ? trns[idx[i]] : 255;
    }
    const char *path = tio_path("palette_trns.png");
    CHECK(write_png(path, &s, idx) == 0, "write");
    expect_image("palette+tRNS", path, 9, 5, 4, IP_U8, want);
    free(idx);
}

static void test_palette_4bit(void)
{
    png_color pal[16];
    for (int i = 0; i < 16; i++) pal[i] = (png_color){ (png_byte)(i * 16), (png_byte)(255 - i), (png_byte)(i * 3) };
    png_spec s = { 7, 3, 4, PNG_COLOR_TYPE_PALETTE, PNG_INTERLACE_NONE, 1, pal, 16, NULL, 0, NULL };
    unsigned *idx = random_samples(7 * 3, 16, 12);
    unsigned want[7 * 3 * 3];
    for (int i = 0; i < 7 * 3; i++) {
        want[3 * i] = pal[idx[i]].red;
        want[3 * i + 1] = pal[idx[i]].green;
        want[3 * i + 2] = pal[idx[i]].blue;
    }
    const char *path = tio_path("palette4.png");
    CHECK(write_png(path, &s, idx) == 0, "write");
    expect_image("4-bit palette", path, 7, 3, 3, IP_U8, want);
    free(idx);
}

/* Low-depth gray expands to 0..255 (1-bit: 0/255, 2-bit: x85, 4-bit: x17). */
static void test_low_depth_gray(void)
{
    static const int depths[3] = { 1, 2, 4 };
    for (int d = 0; d < 3; d++) {
        int w = 11, h = 4, depth = depths[d];
        unsigned max = (1u << depth) - 1;
        png_spec s = { w, h, depth, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, 1, NULL, 0, NULL, 0, NULL };
        unsigned *v = random_samples(w * h, max + 1, 20 + (uint64_t)depth);
        unsigned want[11 * 4];
        for (int i = 0; i < w * h; i++) want[i] = v[i] * 255 / max;
        char name[32];
        snprintf(name, sizeof name, "gray%d.png", depth);
        const char *path = tio_path(name);
        CHECK(write_png(path, &s, v) == 0, "write");
        expect_image(name, path, w, h, 1, IP_U8, want);
        free(v);
    }
}

static void test_sixteen_bit(void)
{
    int w = 7, h = 5;
    png_spec s = { w, h, 16, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, 1, NULL, 0, NULL, 0, NULL };
    unsigned *v = random_samples(w * h, 65536, 30);
    v[0] = 0x0102;   /* byte order shows: 258 in host order, not 513 */
    const char *path = tio_path("gray16.png");
    CHECK(write_png(path, &s, v) == 0, "write");
    expect_image("16-bit gray", path, w, h, 1, IP_U16, v);
    free(v);
}

static void test_interlaced(void)
{
    int w = 13, h = 11;
    png_spec s = { w, h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_ADAM7, 3, NULL, 0, NULL, 0, NULL };
    unsigned *v = random_samples(w * h * 3, 256, 40);
    const char *path = tio_path("interlaced.png");
    CHECK(write_png(path, &s, v) == 0, "write");
    expect_image("interlaced RGB", path, w, h, 3, IP_U8, v);
    free(v);

    w = 6, h = 9;
    png_spec s16 = { w, h, 16, PNG_COLOR_TYPE_RGB_ALPHA, PNG_INTERLACE_ADAM7, 4, NULL, 0, NULL, 0, NULL };
    v = random_samples(w * h * 4, 65536, 41);
    path = tio_path("interlaced16.png");
    CHECK(write_png(path, &s16, v) == 0, "write");
    expect_image("interlaced 16-bit RGBA", path, w, h, 4, IP_U16, v);
    free(v);
}

static void test_alpha_and_trns(void)
{
    int w = 3, h = 2;
    png_spec ga = { w, h, 8, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_INTERLACE_NONE, 2, NULL, 0, NULL, 0, NULL };
    unsigned *v = random_samples(w * h * 2, 256, 50);
    const char *path = tio_path("gray_alpha.png");
    CHECK(write_png(path, &ga, v) == 0, "write");
    expect_image("gray+alpha", path, w, h, 2, IP_U8, v);
    free(v);

    /* A tRNS gray level becomes an alpha channel: 0 where the value matches, else 255. */
    w = 8, h = 3;
    png_color_16 key = { .gray = 7 };
    png_spec gk = { w, h, 8, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, 1, NULL, 0, NULL, 0, &key };
    v = random_samples(w * h, 10, 51);
    v[0] = 7;
    unsigned want[8 * 3 * 2];
    for (int i = 0; i < w * h; i++) {
        want[2 * i] = v[i];
        want[2 * i + 1] = v[i] == 7 ? 0 : 255;
    }
    path = tio_path("gray_trns.png");
    CHECK(write_png(path, &gk, v) == 0, "write");
    expect_image("gray+tRNS", path, w, h, 2, IP_U8, want);
    free(v);

    png_color_16 rgb_key = { .red = 1, .green = 2, .blue = 3 };
    png_spec rk = { 2, 1, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, 3, NULL, 0, NULL, 0, &rgb_key };
    unsigned rgb[6] = { 1, 2, 3, 1, 2, 4 };
    unsigned rgba[8] = { 1, 2, 3, 0, 1, 2, 4, 255 };
    path = tio_path("rgb_trns.png");
    CHECK(write_png(path, &rk, rgb) == 0, "write");
    expect_image("RGB+tRNS", path, 2, 1, 4, IP_U8, rgba);
}

int main(void)
{
    test_palette_with_trns();
    test_palette_4bit();
    test_low_depth_gray();
    test_sixteen_bit();
    test_interlaced();
    test_alpha_and_trns();
    return tu_finish();
}
