/* io: our PNG writer (parallel bands, own filtering) and reader (libdeflate, own unfiltering)
 * against libpng itself: same filtered bytes as libpng's writer chooses, files libpng reads
 * back exactly, sizes within 3% of libpng's single stream, the same file for every thread
 * count, and every filter type and sample image decoded as libpng decodes it. */
#include "test_io_helpers.h"
#include <png.h>
#include <zlib.h>

static char err[512];

typedef struct {
    unsigned char *data;   /* packed rows as libpng returns them (host order for 16-bit) */
    int w, h, channels, depth;
} decoded;

static void quiet(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

/* libpng's own decode, expanded to 8/16-bit samples in host order. */
static int libpng_read(const char *path, decoded *out)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, quiet);
    png_infop info = png_create_info_struct(png);
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &info, NULL);
        fclose(f);
        return -1;
    }
    png_init_io(png, f);
    png_set_user_limits(png, 0x7fffffff, 0x7fffffff);
    int swap = 1;
    unsigned char *probe = (unsigned char *)&swap;
    png_read_png(png, info, PNG_TRANSFORM_EXPAND | (probe[0] ? PNG_TRANSFORM_SWAP_ENDIAN : 0), NULL);
    out->w = (int)png_get_image_width(png, info), out->h = (int)png_get_image_height(png, info);
    out->channels = png_get_channels(png, info), out->depth = png_get_bit_depth(png, info);
    size_t rb = png_get_rowbytes(png, info);
    png_bytepp rows = png_get_rows(png, info);
    out->data = malloc(rb * (size_t)out->h);
    for (int y = 0; y < out->h; y++) memcpy(out->data + rb * (size_t)y, rows[y], rb);
    png_destroy_read_struct(&png, &info, NULL);
    fclose(f);
    return 0;
}

/* libpng's writer at a level, optionally with one forced filter (0: its default choice). */
static int libpng_write(const char *path, const ipk_img *img, int level, int filter)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        fclose(f);
        return -1;
    }
    static const int types[4] = { PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                                  PNG_COLOR_TYPE_RGB_ALPHA };
    int depth = img->dtype == IPK_U16 ? 16 : 8;
    png_init_io(png, f);
    png_set_compression_level(png, level);
    if (filter) png_set_filter(png, 0, filter);
    png_set_IHDR(png, info, (png_uint_32)img->width, (png_uint_32)img->height, depth, types[img->channels - 1],
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    int one = 1;
    if (depth == 16 && *(unsigned char *)&one) png_set_swap(png);
    for (int y = 0; y < img->height; y++) png_write_row(png, (png_const_bytep)img->data + (size_t)y * img->stride);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    return fclose(f);
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The inflated IDAT data of a file: its filter bytes and filtered rows. */
static unsigned char *filtered_bytes(const char *path, size_t expected)
{
    size_t size = 0;
    unsigned char *file = tio_slurp(path, &size);
    unsigned char *z = malloc(size), *out = malloc(expected + 1);
    size_t zn = 0;
    for (size_t at = 8; file && at + 12 <= size;) {
        uint32_t n = be32(file + at);
        if (!memcmp(file + at + 4, "IDAT", 4)) memcpy(z + zn, file + at + 8, n), zn += n;
        at += 12 + (size_t)n;
    }
    uLongf got = (uLongf)expected + 1;
    int ok = uncompress(out, &got, z, (uLong)zn) == Z_OK && got == expected;
    free(file);
    free(z);
    if (!ok) free(out);
    return ok ? out : NULL;
}

static ipk_img smooth_random(int w, int h, int c, ipk_dtype t, uint64_t seed)
{
    tu_rng rng;
    tu_seed(&rng, seed);
    ipk_img img = tu_img_random(w, h, c, t, 0, &rng);
    unsigned top = t == IPK_U16 ? 65535 : 255;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int k = 0; k < c; k++) {
                /* gradients with a little noise, and a random row now and then */
                double v = (x * 5 + y * 3 + k * 40 + (int)(tu_next(&rng) % 9)) % (top + 1);
                if (y % 11 == 5) v = tu_next(&rng) % (top + 1);
                if (t == IPK_U16) *(uint16_t *)tu_px(&img, x, y, k) = (uint16_t)v;
                else *(uint8_t *)tu_px(&img, x, y, k) = (uint8_t)v;
            }
    return img;
}

static int write_ours(const char *path, const ipk_img *k, int level, int threads)
{
    io_options opt;
    io_default_options(&opt);
    opt.png_level = level;
    opt.threads = threads;
    ip_image img = tio_from_ipk(k);
    return io_write(path, &img, &opt, err, sizeof err);
}

static int same_as_libpng_decode(const char *path, const ipk_img *src)
{
    decoded d;
    if (libpng_read(path, &d)) return 0;
    int ok = d.w == src->width && d.h == src->height && d.channels == src->channels &&
             d.depth == (src->dtype == IPK_U16 ? 16 : 8);
    size_t rb = (size_t)src->width * (size_t)src->channels * (src->dtype == IPK_U16 ? 2 : 1);
    for (int y = 0; ok && y < src->height; y++)
        ok = !memcmp(d.data + rb * (size_t)y, (const unsigned char *)src->data + (size_t)y * src->stride, rb);
    free(d.data);
    return ok;
}

/* Our files: libpng decodes them exactly, and the filtered rows inside are the ones libpng's
 * writer would choose at that level. */
static void test_matches_libpng_writer(void)
{
    static const int sizes[][2] = { { 1, 1 }, { 1, 37 }, { 41, 1 }, { 97, 89 }, { 2, 2 }, { 1500, 700 } };
    static const int levels[] = { 0, 1, 6, 9 };
    uint64_t seed = 100;
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (int c = 1; c <= 4; c++)
            for (int t = 0; t < 2; t++) {
                ipk_dtype dt = t ? IPK_U16 : IPK_U8;
                int w = sizes[s][0], h = sizes[s][1];
                if (w * h > 10000 && (c != 3 || t)) continue;   /* the big one, several bands: RGB8 only */
                ipk_img img = smooth_random(w, h, c, dt, seed++);
                size_t expected = (size_t)h * (1 + (size_t)w * (size_t)c * (t ? 2 : 1));
                for (size_t l = 0; l < sizeof levels / sizeof *levels; l++) {
                    const char *ours = tio_path("ours.png");
                    CHECK(write_ours(ours, &img, levels[l], 3) == IP_OK, "write: %s", err);
                    CHECK(same_as_libpng_decode(ours, &img), "%dx%dx%d depth %d level %d: libpng decodes other pixels",
                          w, h, c, t ? 16 : 8, levels[l]);
                    unsigned char *a = filtered_bytes(ours, expected);
                    CHECK(libpng_write(tio_path("libpng.png"), &img, levels[l], 0) == 0, "libpng write");
                    unsigned char *b = filtered_bytes(tio_path("libpng.png"), expected);
                    CHECK(a && b && !memcmp(a, b, expected), "%dx%dx%d depth %d level %d: filtered rows differ from libpng's",
                          w, h, c, t ? 16 : 8, levels[l]);
                    free(a);
                    free(b);
                }
                tu_img_free(&img);
            }
}

static int same_file(const char *a, const char *b)
{
    size_t na = 0, nb = 0;
    unsigned char *da = tio_slurp(a, &na), *db = tio_slurp(b, &nb);
    int same = da && db && na == nb && !memcmp(da, db, na);
    free(da);
    free(db);
    return same;
}

/* Two bands plus one row (a first, a middle and a last band): every level round-trips through our
 * reader and libpng's. Every thread count writes the same file: checked at one level of each way
 * a band is deflated and headed (io_png_deflate.c: stored at 0; libdeflate at 1, and at 4 under
 * the next zlib header; zlib at 5, 6 and 9, under three headers). */
static void test_levels_and_threads(void)
{
    int w = 301, h = (int)((2u << 20) / (301 * 4 + 1)) * 2 + 1;
    ipk_img img = smooth_random(w, h, 4, IPK_U8, 7);
    for (int level = 0; level <= 9; level++) {
        char one[512];
        snprintf(one, sizeof one, "%s", tio_path("t1.png"));
        CHECK(write_ours(one, &img, level, 1) == IP_OK, "%s", err);
        int thread_level = level == 0 || level == 1 || level == 4 || level == 5 || level == 6 || level == 9;
        for (int threads = 2; thread_level && threads <= 5; threads += 3) {
            CHECK(write_ours(tio_path("tn.png"), &img, level, threads) == IP_OK, "%s", err);
            CHECK(same_file(one, tio_path("tn.png")), "level %d: threads 1 and %d differ", level, threads);
        }
        ip_image back;
        CHECK(io_read(one, NULL, &back, err, sizeof err) == IP_OK, "read level %d: %s", level, err);
        ipk_img got = tio_to_ipk(&back);
        CHECK(back.data && tu_max_diff(&img, &got) == 0, "level %d round trip", level);
        if (back.data) img_free(&back);
        CHECK(same_as_libpng_decode(one, &img), "level %d: libpng", level);
    }
    tu_img_free(&img);
}

static ip_image read_sample(const char *name)
{
    char path[512];
    const char *dir = getenv("IMGPIPE_SAMPLES");
    snprintf(path, sizeof path, "%s/%s", dir ? dir : "samples", name);
    ip_image img = { 0 };
    CHECK(io_read(path, NULL, &img, err, sizeof err) == IP_OK, "%s: %s", name, err);
    return img;
}

static ipk_img tiled(const ip_image *src, int nx, int ny)
{
    ipk_img out = tu_img_zeros(src->shape.width * nx, src->shape.height * ny, src->shape.channels, IPK_U8, 0);
    size_t rb = (size_t)src->stride;
    for (int y = 0; y < out.height; y++)
        for (int i = 0; i < nx; i++)
            memcpy((unsigned char *)out.data + (size_t)y * out.stride + rb * (size_t)i,
                   (const unsigned char *)src->data + (size_t)(y % src->shape.height) * rb, rb);
    return out;
}

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* Real photographs tiled to several bands: at most 3% over libpng's single stream. */
static void test_size_against_libpng(void)
{
    static const char *names[2] = { "astronaut.png", "camera.png" };
    for (int i = 0; i < 2; i++) {
        ip_image photo = read_sample(names[i]);
        if (!photo.data) continue;
        ipk_img big = tiled(&photo, 3, 3);
        for (int level = 1; level <= 9; level += 4) {
            CHECK(write_ours(tio_path("ours.png"), &big, level, 2) == IP_OK, "%s", err);
            CHECK(libpng_write(tio_path("libpng.png"), &big, level, 0) == 0, "libpng write");
            long ours = file_size(tio_path("ours.png")), theirs = file_size(tio_path("libpng.png"));
            CHECK(ours > 0 && theirs > 0 && ours <= theirs * 103 / 100, "%s level %d: %ld bytes, libpng %ld",
                  names[i], level, ours, theirs);
        }
        tu_img_free(&big);
        img_free(&photo);
    }
}

/* Our decoder on files libpng wrote with each filter type forced, and on the samples. */
static void test_decoder(void)
{
    static const int filters[] = { PNG_FILTER_NONE, PNG_FILTER_SUB, PNG_FILTER_UP, PNG_FILTER_AVG, PNG_FILTER_PAETH };
    static const int sizes[][2] = { { 1, 1 }, { 1, 13 }, { 17, 1 }, { 31, 29 } };
    uint64_t seed = 500;
    for (size_t f = 0; f < 5; f++)
        for (size_t s = 0; s < 4; s++)
            for (int c = 1; c <= 4; c++)
                for (int t = 0; t < 2; t++) {
                    ipk_img img = smooth_random(sizes[s][0], sizes[s][1], c, t ? IPK_U16 : IPK_U8, seed++);
                    const char *path = tio_path("forced.png");
                    CHECK(libpng_write(path, &img, 6, filters[f]) == 0, "libpng write");
                    ip_image back;
                    int rc = io_read(path, NULL, &back, err, sizeof err);
                    ipk_img got = tio_to_ipk(&back);
                    CHECK(rc == IP_OK && tu_max_diff(&img, &got) == 0, "filter %#x %dx%dx%d depth %d: %s", filters[f],
                          img.width, img.height, c, t ? 16 : 8, rc ? err : "other pixels");
                    if (rc == IP_OK) img_free(&back);
                    tu_img_free(&img);
                }
    static const char *samples[] = { "astronaut.png", "camera.png", "chelsea.png", "coffee.png" };
    for (size_t i = 0; i < 4; i++) {
        ip_image img = read_sample(samples[i]);
        if (!img.data) continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", getenv("IMGPIPE_SAMPLES") ? getenv("IMGPIPE_SAMPLES") : "samples",
                 samples[i]);
        ipk_img k = tio_to_ipk(&img);
        CHECK(same_as_libpng_decode(path, &k), "%s: our decoder and libpng differ", samples[i]);
        img_free(&img);
    }
}

static void put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16), p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* Reads a damaged file (opt NULL: the defaults); a failure must leave no pixels and one line. */
static int read_damaged_with(const unsigned char *data, size_t n, const io_options *opt)
{
    const char *path = tio_path("damaged.png");
    CHECK(tio_spit(path, data, n) == 0, "write");
    ip_image out = { 0 };
    int rc = io_read(path, opt, &out, err, sizeof err);
    CHECK(rc != IP_OK || out.data, "success without pixels");
    CHECK(rc == IP_OK || (out.data == NULL && !strchr(err, '\n') && err[0]), "failure: pixels or no one-line message");
    if (rc == IP_OK) img_free(&out);
    return rc;
}

static int read_damaged(const unsigned char *data, size_t n)
{
    return read_damaged_with(data, n, NULL);
}

/* Decoded with exactly one warning containing `what` by default, refused under --fail-on warning. */
static void expect_warning(const char *name, const unsigned char *data, size_t n, const char *what)
{
    io_options opt;
    io_default_options(&opt);
    io_warnings w = { 0 };
    opt.warnings = &w;
    int rc = read_damaged_with(data, n, &opt);
    CHECK(rc == IP_OK && w.count == 1 && strstr(w.first, what), "%s: status %d, %d warnings '%s'", name, rc, w.count,
          w.first);
    opt.fail_on = IO_FAIL_ON_WARNING;
    rc = read_damaged_with(data, n, &opt);
    CHECK(rc == IP_EFORMAT && strstr(err, what) && strstr(err, "--fail-on warning"), "%s, --fail-on warning: %d %s",
          name, rc, err);
}

/* A file with one IDAT (small image): data after the zlib stream, a bad IDAT CRC, no IEND, cuts. */
static void test_damage(void)
{
    ipk_img img = smooth_random(20, 10, 3, IPK_U8, 9);
    const char *path = tio_path("small.png");
    CHECK(write_ours(path, &img, 6, 1) == IP_OK, "%s", err);
    size_t n = 0;
    unsigned char *file = tio_slurp(path, &n);
    unsigned char *copy = malloc(n + 16);
    size_t idat = 33, len = be32(file + idat);
    CHECK(!memcmp(file + idat + 4, "IDAT", 4) && idat + 12 + len + 12 == n, "layout");
    /* Extra bytes after the stream inside IDAT, CRC made right. */
    memcpy(copy, file, idat + 8 + len);
    memcpy(copy + idat + 8 + len, "JUNKJUNK", 8);
    put_be32(copy, 0);
    put_be32(copy + idat, (uint32_t)len + 8);
    put_be32(copy + idat + 16 + len, (uint32_t)crc32(0L, copy + idat + 4, (uInt)len + 12));
    memcpy(copy + idat + 20 + len, file + idat + 12 + len, 12);
    memcpy(copy, file, 8);
    expect_warning("data past the end of the stream", copy, n + 8, "after the end");
    memcpy(copy, file, n);
    copy[idat + 8 + len] ^= 1;
    /* As Pillow: damage the whole image data has been read past is a warning. */
    expect_warning("bad IDAT CRC", copy, n, "CRC error");
    expect_warning("no IEND", file, n - 12, "the image data is whole");
    expect_warning("cut inside the adler32", file, n - 12 - 6, "the image data is whole");
    CHECK(read_damaged(file, n - 12 - 4 - len / 2) == IP_EFORMAT, "cut inside the compressed rows decoded");
    CHECK(read_damaged(file, n) == IP_OK, "the undamaged file");
    free(copy);
    free(file);
    tu_img_free(&img);
}

/* Copies file into out with a chunk put in at offset `at` (a chunk boundary); its CRC is right
 * or off by one. Returns the new length. */
static size_t with_chunk(const unsigned char *file, size_t n, size_t at, const char *type, const char *data,
                         int good_crc, unsigned char *out)
{
    uint32_t len = (uint32_t)strlen(data);
    memcpy(out, file, at);
    put_be32(out + at, len);
    memcpy(out + at + 4, type, 4);
    memcpy(out + at + 8, data, len);
    uint32_t crc = (uint32_t)crc32(0L, out + at + 4, (uInt)len + 4);
    put_be32(out + at + 8 + len, good_crc ? crc : crc + 1);
    memcpy(out + at + 12 + len, file + at, n - at);
    return n + 12 + len;
}

static ip_image read_png_bytes(const unsigned char *data, size_t n)
{
    ip_image img = { 0 };
    const char *path = tio_path("crc.png");
    CHECK(tio_spit(path, data, n) == 0 && io_read(path, NULL, &img, err, sizeof err) == IP_OK, "%s", err);
    return img;
}

/* A bad CRC on an ancillary chunk, before or after the image data, through our decoder and
 * through libpng's (a tRNS chunk sends the file there): the chunk is skipped with a warning and
 * the pixels are those of the same file with the CRC right; --fail-on warning refuses it. */
static void test_ancillary_crc(void)
{
    ipk_img img = smooth_random(23, 9, 3, IPK_U8, 12);
    const char *path = tio_path("crc_base.png");
    CHECK(write_ours(path, &img, 6, 1) == IP_OK, "%s", err);
    size_t n = 0;
    unsigned char *file = tio_slurp(path, &n);
    unsigned char *with_trns = malloc(n + 64), *bad = malloc(n + 128), *good = malloc(n + 128);
    size_t trns_n = with_chunk(file, n, 33, "tRNS", "\0\1\0\2\0\3", 1, with_trns);
    struct { const char *name; const unsigned char *base; size_t len, at; } cases[] = {
        { "tEXt after IHDR, our decoder", file, n, 33 },
        { "tEXt before IEND, our decoder", file, n, n - 12 },
        { "tEXt after IHDR, libpng", with_trns, trns_n, 33 },
        { "tEXt before IEND, libpng", with_trns, trns_n, trns_n - 12 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        size_t bad_n = with_chunk(cases[i].base, cases[i].len, cases[i].at, "tEXt", "Comment\0hello", 0, bad);
        with_chunk(cases[i].base, cases[i].len, cases[i].at, "tEXt", "Comment\0hello", 1, good);
        expect_warning(cases[i].name, bad, bad_n, "tEXt: CRC error");
        ip_image a = read_png_bytes(bad, bad_n), b = read_png_bytes(good, bad_n);
        CHECK(a.data && b.data && a.shape.channels == b.shape.channels &&
              !memcmp(a.data, b.data, (size_t)b.stride * (size_t)b.shape.height), "%s: other pixels", cases[i].name);
        img_free(&a);
        img_free(&b);
    }
    free(file);
    free(with_trns);
    free(bad);
    free(good);
    tu_img_free(&img);
}

/* Rows wide enough for several column strips: the strips are reconstructed as a wavefront by
 * several threads (8-bit), which must give libpng's pixels with any thread count, each filter,
 * and a filter per row that changes (the writer's adaptive choice). */
static void test_wavefront_decoder(void)
{
    static const int filters[] = { PNG_FILTER_SUB, PNG_FILTER_AVG, PNG_FILTER_PAETH, PNG_ALL_FILTERS };
    static const int shapes[][3] = { { 4099, 37, 3 }, { 9001, 5, 1 }, { 2053, 19, 4 }, { 8209, 3, 2 } };
    uint64_t seed = 900;
    for (size_t f = 0; f < 4; f++)
        for (size_t s = 0; s < 4; s++) {
            ipk_img img = smooth_random(shapes[s][0], shapes[s][1], shapes[s][2], IPK_U8, seed++);
            const char *path = tio_path("wide.png");
            CHECK(libpng_write(path, &img, 6, filters[f]) == 0, "libpng write");
            for (int threads = 1; threads <= 9; threads += 4) {
                io_options opt;
                io_default_options(&opt);
                opt.threads = threads;
                ip_image back;
                int rc = io_read(path, &opt, &back, err, sizeof err);
                ipk_img got = tio_to_ipk(&back);
                CHECK(rc == IP_OK && tu_max_diff(&img, &got) == 0, "wavefront: filter %#x %dx%dx%d, %d threads: %s",
                      filters[f], img.width, img.height, img.channels, threads, rc ? err : "other pixels");
                if (rc == IP_OK) img_free(&back);
            }
            tu_img_free(&img);
        }
}

int main(void)
{
    test_wavefront_decoder();
    test_matches_libpng_writer();
    test_levels_and_threads();
    test_size_against_libpng();
    test_decoder();
    test_damage();
    test_ancillary_crc();
    return tu_finish();
}
