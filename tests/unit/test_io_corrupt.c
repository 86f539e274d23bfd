/* io: damaged files never crash the readers (the suite also runs under ASan/UBSan):
 * truncated copies, flipped bytes, headers claiming huge sizes; and a CMYK JPEG. */
#include "test_io_helpers.h"
#include <stdio.h>
#include <jpeglib.h>

static char err[512];

/* Reads data as a file; on success the image must be well formed. Returns the status. */
static int read_bytes(const unsigned char *data, size_t size, const io_options *opt, ip_image *out)
{
    const char *path = tio_path("damaged.bin");
    if (tio_spit(path, data, size) != 0) return -1;
    int rc = io_read(path, opt, out, err, sizeof err);
    if (rc == IP_OK)
        CHECK(out->data && out->shape.width > 0 && out->shape.height > 0 && out->shape.channels >= 1 &&
              out->shape.channels <= 4, "malformed success");
    else
        CHECK(out->data == NULL && err[0] != 0, "failure without message or with pixels");
    return rc;
}

static ipk_img source_image(void)
{
    tu_rng rng;
    tu_seed(&rng, 99);
    return tu_img_random(23, 17, 3, IPK_U8, 0, &rng);
}

/* Every truncation must fail for PNG; a JPEG cut in its compressed data decodes with a warning
 * (never without one), and fails under --fail-on warning; a TIFF cut only in bytes it does not
 * need may still decode, but then to exactly the original pixels. */
static void jpeg_truncations(void)
{
    ipk_img src = source_image();
    ip_image img = tio_from_ipk(&src);
    const char *path = tio_path("cut_warn.jpg");
    CHECK(io_write(path, &img, NULL, err, sizeof err) == IP_OK, "%s", err);
    size_t size = 0;
    unsigned char *data = tio_slurp(path, &size);
    int warned = 0;
    for (size_t cut = 0; cut < size; cut += 1 + cut / 64) {
        io_options opt;
        io_default_options(&opt);
        io_warnings w = { 0 };
        opt.warnings = &w;
        ip_image out;
        int rc = read_bytes(data, cut, &opt, &out);
        CHECK(rc != IP_OK || w.count > 0, "JPEG cut at %zu of %zu decoded without a warning", cut, size);
        if (rc == IP_OK) {
            warned++;
            CHECK(strstr(w.first, "truncated or corrupt JPEG") != NULL, "cut at %zu: warning '%s'", cut, w.first);
            img_free(&out);
        }
        opt.fail_on = IO_FAIL_ON_WARNING;
        rc = read_bytes(data, cut, &opt, &out);
        CHECK(rc == IP_EFORMAT, "JPEG cut at %zu, --fail-on warning: status %d", cut, rc);
        if (rc == IP_OK) img_free(&out);
    }
    CHECK(warned > 0, "no truncated JPEG decoded with a warning");
    free(data);
    tu_img_free(&src);
}

/* Where the last IDAT chunk starts: a PNG cut after it may decode (as Pillow decodes it), when
 * the rows inflate whole. */
static size_t last_idat(const unsigned char *data, size_t size)
{
    size_t at = 0;
    for (size_t i = 4; i + 4 <= size; i++)
        if (!memcmp(data + i, "IDAT", 4)) at = i - 4;
    return at;
}

/* must_fail: every cut before the last IDAT chunk is refused. */
static void truncations(const char *name, int must_fail)
{
    ipk_img src = source_image();
    ip_image img = tio_from_ipk(&src);
    const char *path = tio_path(name);
    CHECK(io_write(path, &img, NULL, err, sizeof err) == IP_OK, "%s", err);
    size_t size = 0;
    unsigned char *data = tio_slurp(path, &size);
    int failures = 0;
    size_t may_decode_from = must_fail ? last_idat(data, size) : 0;
    for (size_t cut = 0; cut < size; cut += 1 + cut / 64) {
        ip_image out;
        int rc = read_bytes(data, cut, NULL, &out);
        if (rc != IP_OK) {
            failures++;
            CHECK(rc == IP_EFORMAT, "%s cut at %zu: status %d (%s)", name, cut, rc, err);
            continue;
        }
        ipk_img got = tio_to_ipk(&out);
        CHECK(cut > may_decode_from, "%s cut at %zu of %zu decoded", name, cut, size);
        CHECK(tio_same_shape(&out, 23, 17, 3, IP_U8) && tu_max_diff(&src, &got) == 0,
              "%s cut at %zu decoded to other pixels", name, cut);
        img_free(&out);
    }
    CHECK(failures > 0, "%s: no truncation failed", name);
    free(data);
    tu_img_free(&src);
}

static void flips(const char *name, int header_must_fail)
{
    ipk_img src = source_image();
    ip_image img = tio_from_ipk(&src);
    const char *path = tio_path(name);
    CHECK(io_write(path, &img, NULL, err, sizeof err) == IP_OK, "%s", err);
    size_t size = 0;
    unsigned char *data = tio_slurp(path, &size);
    for (size_t i = 0; i < 40 && i < size; i++) {
        data[i] ^= 0xff;
        ip_image out;
        int rc = read_bytes(data, size, NULL, &out);
        /* PNG: the signature and IHDR; past them (the IDAT's length) a flip may still decode, to the pixels. */
        CHECK(!header_must_fail || i >= 33 || rc != IP_OK, "%s with byte %zu flipped decoded", name, i);
        if (rc == IP_OK && header_must_fail) {
            ipk_img got = tio_to_ipk(&out);
            CHECK(tu_max_diff(&src, &got) == 0, "%s with byte %zu flipped decoded to other pixels", name, i);
        }
        if (rc == IP_OK) img_free(&out);
        data[i] ^= 0xff;
    }
    /* Random damage anywhere: three bytes at a time. */
    tu_rng rng;
    tu_seed(&rng, 7);
    for (int round = 0; round < 150; round++) {
        size_t at[3];
        unsigned char was[3];
        for (int k = 0; k < 3; k++) {
            at[k] = tu_next(&rng) % size;
            was[k] = data[at[k]];
            data[at[k]] = (unsigned char)tu_next(&rng);
        }
        ip_image out;
        if (read_bytes(data, size, NULL, &out) == IP_OK) img_free(&out);
        for (int k = 2; k >= 0; k--) data[at[k]] = was[k];
    }
    free(data);
    tu_img_free(&src);
}

static void put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16), p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static uint32_t crc32_of(const unsigned char *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
    }
    return ~c;
}

/* Appends a chunk with its CRC; returns the new length. */
static size_t png_chunk(unsigned char *buf, size_t at, const char *type, const unsigned char *data, uint32_t n)
{
    put_be32(buf + at, n);
    memcpy(buf + at + 4, type, 4);
    if (n) memcpy(buf + at + 8, data, n);
    put_be32(buf + at + 8 + n, crc32_of(buf + at + 4, 4 + n));
    return at + 12 + n;
}

/* A PNG claiming width x height, then an IDAT of junk: the size check must come first. */
static size_t huge_png(unsigned char *buf, uint32_t w, uint32_t h, int depth, int type)
{
    static const unsigned char sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
    unsigned char ihdr[13] = { 0 };
    put_be32(ihdr, w);
    put_be32(ihdr + 4, h);
    ihdr[8] = (unsigned char)depth;
    ihdr[9] = (unsigned char)type;
    unsigned char junk[16] = { 0x78, 0x9c };
    memcpy(buf, sig, 8);
    size_t n = png_chunk(buf, 8, "IHDR", ihdr, 13);
    n = png_chunk(buf, n, "IDAT", junk, sizeof junk);
    return png_chunk(buf, n, "IEND", NULL, 0);
}

static void put_le16(unsigned char *p, unsigned v) { p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8); }
static void put_le32(unsigned char *p, uint32_t v) { put_le16(p, v & 0xffff), put_le16(p + 2, v >> 16); }

/* A little-endian TIFF with one strip of 16 bytes but a header claiming width x height. */
static size_t huge_tiff(unsigned char *buf, uint32_t w, uint32_t h, unsigned spp, unsigned bps, unsigned format)
{
    static const unsigned tags[10] = { 256, 257, 258, 259, 262, 273, 277, 278, 279, 339 };
    uint32_t values[10] = { w, h, bps, 1, spp >= 3 ? 2 : 1, 0, spp, h, 16, format };
    memset(buf, 0, 512);
    memcpy(buf, "II*\0", 4);
    put_le32(buf + 4, 8);
    put_le16(buf + 8, 10);
    size_t data_at = 8 + 2 + 10 * 12 + 4;
    values[5] = (uint32_t)data_at;
    for (int i = 0; i < 10; i++) {
        unsigned char *e = buf + 10 + 12 * i;
        int is_short = tags[i] == 258 || tags[i] == 259 || tags[i] == 262 || tags[i] == 277 || tags[i] == 339;
        put_le16(e, tags[i]);
        put_le16(e + 2, is_short ? 3 : 4);
        put_le32(e + 4, 1);   /* one value: all samples share bits and format */
        if (is_short) put_le16(e + 8, values[i]);
        else put_le32(e + 8, values[i]);
    }
    return data_at + 16;
}

/* Refused before any allocation: IP_ELIMIT from our check (or IP_EFORMAT where libtiff
 * itself refuses an overflowing header), never IP_ENOMEM. */
static void expect_refusal(const char *what, const unsigned char *data, size_t size, uint64_t max_pixels,
                           int also_ok)
{
    io_options opt;
    io_default_options(&opt);
    opt.max_pixels = max_pixels;
    ip_image out;
    int rc = read_bytes(data, size, &opt, &out);
    CHECK(rc == IP_ELIMIT || rc == also_ok, "%s: status %d (%s)", what, rc, err);
    if (rc == IP_OK) img_free(&out);
}

static void expect_limit(const char *what, const unsigned char *data, size_t size, uint64_t max_pixels)
{
    expect_refusal(what, data, size, max_pixels, IP_ELIMIT);
}

static void test_huge_headers(void)
{
    unsigned char buf[512];
    size_t n = huge_png(buf, 100000, 100000, 8, 2);
    expect_limit("PNG 100000x100000", buf, n, 1 << 20);
    /* No limit at all: 2^31-1 squared RGBA16 overflows size_t and must be refused, not allocated. */
    n = huge_png(buf, 0x7fffffff, 0x7fffffff, 16, 6);
    expect_limit("PNG size overflow", buf, n, UINT64_MAX);

    n = huge_tiff(buf, 100000, 100000, 1, 8, 1);
    expect_limit("TIFF 100000x100000", buf, n, 1 << 20);
    n = huge_tiff(buf, 2000000000, 2000000000, 4, 32, 3);
    expect_refusal("TIFF size overflow", buf, n, UINT64_MAX, IP_EFORMAT);
    n = huge_tiff(buf, 3000000000u, 1, 1, 8, 1);
    expect_limit("TIFF wider than int32", buf, n, UINT64_MAX);
    n = huge_tiff(buf, 4, 2, 1, 8, 1);   /* the same file at a sane size decodes */
    io_options opt;
    io_default_options(&opt);
    ip_image out;
    CHECK(read_bytes(buf, n, &opt, &out) == IP_OK && tio_same_shape(&out, 4, 2, 1, IP_U8), "small TIFF: %s", err);
    if (out.data) img_free(&out);

    /* JPEG: patch the frame header of a real file to 65000x60000. */
    uint8_t px[64 * 64];
    memset(px, 90, sizeof px);
    ip_image img = { px, 64, { 64, 64, 1, IP_U8 }, 0 };
    const char *path = tio_path("small.jpg");
    CHECK(io_write(path, &img, NULL, err, sizeof err) == IP_OK, "%s", err);
    size_t size = 0;
    unsigned char *jpg = tio_slurp(path, &size);
    size_t sof = 0;
    for (size_t i = 2; i + 9 < size && !sof; i++)
        if (jpg[i] == 0xff && (jpg[i + 1] == 0xc0 || jpg[i + 1] == 0xc1)) sof = i;
    CHECK(sof != 0, "no SOF marker");
    if (sof) {
        jpg[sof + 5] = 60000 >> 8, jpg[sof + 6] = 60000 & 0xff;
        jpg[sof + 7] = 65000 >> 8, jpg[sof + 8] = 65000 & 0xff;
        expect_limit("JPEG 65000x60000", jpg, size, 1 << 20);
    }
    free(jpg);
}

static void test_cmyk_jpeg(void)
{
    const char *path = tio_path("cmyk.jpg");
    FILE *f = fopen(path, "wb");
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr jerr;
    c.err = jpeg_std_error(&jerr);
    jpeg_create_compress(&c);
    jpeg_stdio_dest(&c, f);
    c.image_width = 8, c.image_height = 8, c.input_components = 4, c.in_color_space = JCS_CMYK;
    jpeg_set_defaults(&c);
    jpeg_start_compress(&c, TRUE);
    unsigned char row[8 * 4];
    memset(row, 40, sizeof row);
    JSAMPROW rp = row;
    while (c.next_scanline < c.image_height) jpeg_write_scanlines(&c, &rp, 1);
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    fclose(f);
    /* Taken as Adobe writes CMYK (0 = full ink): 40 is 215 of each ink; RGB = k - round(215 k / 255)
     * with k = 255 - 215 = 40, so 6. */
    ip_image out;
    int rc = io_read(path, NULL, &out, err, sizeof err);
    CHECK(rc == IP_OK && tio_same_shape(&out, 8, 8, 3, IP_U8), "CMYK: %d %s", rc, err);
    for (int i = 0; rc == IP_OK && i < 8 * 8 * 3; i++)
        if (((unsigned char *)out.data)[i] != 6) {
            CHECK(0, "CMYK: sample %d is %d, want 6", i, ((unsigned char *)out.data)[i]);
            break;
        }
    if (rc == IP_OK) img_free(&out);
}

int main(void)
{
    truncations("cut.png", 1);
    jpeg_truncations();
    truncations("cut.tif", 0);
    flips("flip.png", 1);
    flips("flip.jpg", 0);
    flips("flip.tif", 0);
    test_huge_headers();
    test_cmyk_jpeg();
    CHECK(!strstr(err, tu_tmpdir()), "a message repeats the path: %s", err);
    return tu_finish();
}
