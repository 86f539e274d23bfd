/* jpeg_layout: the structure check that stands before the GPU decoder. Files made by
 * libjpeg-turbo pass with the right facts; truncation, stray, missing or reordered restart
 * markers and a missing end-of-image marker fail; random damage never crashes (ASan run). */
#include "test_io_helpers.h"
#include <string.h>
#include "io/jpeg_layout.h"
#include "jpeg_make.h"

static char why[256];

static ipk_img smooth_image(int w, int h, int c, uint64_t seed)
{
    tu_rng rng;
    tu_seed(&rng, seed);
    ipk_img img = tu_img_zeros(w, h, c, IPK_U8, 0);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int k = 0; k < c; k++)
                *(unsigned char *)tu_px(&img, x, y, k) = (unsigned char)((x * 3 + y * 5 + k * 60) % 256 + tu_next(&rng) % 8);
    return img;
}

static unsigned char *make(int w, int h, int c, jm_settings s, size_t *len)
{
    ipk_img img = smooth_image(w, h, c, (uint64_t)w * 31 + (uint64_t)h);
    unsigned char *jpg = jm_encode(img.data, (size_t)img.stride, w, h, c, &s, len);
    tu_img_free(&img);
    return jpg;
}

/* Position of the first marker m (0xFF m) after the first SOS; 0 when none. */
static size_t find_marker(const unsigned char *d, size_t len, int m, size_t from)
{
    for (size_t i = from; i + 1 < len; i++)
        if (d[i] == 0xFF && d[i + 1] == m) return i;
    return 0;
}

static void good_files(void)
{
    const int sizes[][2] = { { 1, 1 }, { 17, 9 }, { 641, 479 }, { 1, 37 } };
    const jm_settings settings[] = { { 90, JM_444, 0, 0, JCS_UNKNOWN }, { 85, JM_422, 0, 0, JCS_UNKNOWN }, { 75, JM_420, 0, 0, JCS_UNKNOWN },
                                     { 90, JM_420, 1, 0, JCS_UNKNOWN }, { 90, JM_420, 0, 1, JCS_UNKNOWN }, { 90, JM_444, 1, 2, JCS_UNKNOWN } };
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++)
        for (size_t k = 0; k < sizeof settings / sizeof settings[0]; k++)
            for (int c = 1; c <= 3; c += 2) {
                int w = sizes[z][0], h = sizes[z][1];
                size_t len;
                unsigned char *jpg = make(w, h, c, settings[k], &len);
                jpeg_layout L;
                int rc = jpeg_layout_read(jpg, len, &L, why, sizeof why);
                CHECK(rc == IP_OK, "%dx%dx%d setting %zu: %s", w, h, c, k, why);
                CHECK(L.width == w && L.height == h && L.components == c && L.precision == 8,
                      "%dx%dx%d setting %zu: read %dx%dx%d", w, h, c, k, L.width, L.height, L.components);
                CHECK(L.colour == (c == 1 ? JL_GRAY : JL_YCBCR), "colour %d", (int)L.colour);
                CHECK(L.coding == (settings[k].progressive ? JL_PROGRESSIVE : JL_BASELINE), "coding %d", (int)L.coding);
                CHECK(settings[k].progressive ? L.scans > 1 : L.scans == 1, "scans %d", L.scans);
                /* 641x479 in MCU rows of 8 or 16 lines: 30 or more rows, so restart markers. */
                if (settings[k].restart_rows && h == 479)
                    CHECK(L.restart_markers >= 29 / settings[k].restart_rows, "%d restart markers", L.restart_markers);
                if (!settings[k].restart_rows) CHECK(L.restart_markers == 0, "%d restart markers", L.restart_markers);
                /* Bytes after the end-of-image marker are ignored, as libjpeg-turbo does. */
                unsigned char *longer = malloc(len + 5);
                memcpy(longer, jpg, len);
                memcpy(longer + len, "junk!", 5);
                CHECK(jpeg_layout_read(longer, len + 5, &L, why, sizeof why) == IP_OK, "trailing bytes: %s", why);
                free(longer);
                free(jpg);
            }
}

/* Every cut before the end-of-image marker is found. */
static void truncations(void)
{
    const jm_settings settings[] = { { 90, JM_420, 0, 0, JCS_UNKNOWN }, { 90, JM_420, 1, 0, JCS_UNKNOWN }, { 90, JM_444, 0, 1, JCS_UNKNOWN } };
    for (size_t k = 0; k < sizeof settings / sizeof settings[0]; k++) {
        size_t len;
        unsigned char *jpg = make(97, 61, 3, settings[k], &len);
        int accepted = 0;
        for (size_t cut = 0; cut < len; cut += 1 + cut / 97) {
            jpeg_layout L;
            if (jpeg_layout_read(jpg, cut, &L, why, sizeof why) == IP_OK) accepted++;
        }
        CHECK(accepted == 0, "setting %zu: %d truncated copies accepted", k, accepted);
        jpeg_layout L;
        CHECK(jpeg_layout_read(jpg, len - 1, &L, why, sizeof why) == IP_EFORMAT && strstr(why, "truncated"),
              "cut inside EOI: %s", why);
        free(jpg);
    }
}

static int layout_ok(const unsigned char *d, size_t len)
{
    jpeg_layout L;
    return jpeg_layout_read(d, len, &L, why, sizeof why) == IP_OK;
}

static void restart_damage(void)
{
    size_t len;
    unsigned char *jpg = make(160, 128, 3, (jm_settings){ 90, JM_420, 0, 1, JCS_UNKNOWN }, &len);
    CHECK(layout_ok(jpg, len), "%s", why);
    size_t sos = find_marker(jpg, len, 0xDA, 2);
    size_t rst0 = find_marker(jpg, len, 0xD0, sos), rst1 = find_marker(jpg, len, 0xD1, sos);
    CHECK(sos && rst0 && rst1, "test file has no restart markers");
    if (!(sos && rst0 && rst1)) return;
    /* Reordered: RST1 where RST0 was. */
    jpg[rst0 + 1] = 0xD1;
    CHECK(!layout_ok(jpg, len) && strstr(why, "out of order"), "reordered restart markers: %s", why);
    jpg[rst0 + 1] = 0xD0;
    /* Missing: RST0 cut out. */
    unsigned char *cut = malloc(len);
    memcpy(cut, jpg, rst0);
    memcpy(cut + rst0, jpg + rst0 + 2, len - rst0 - 2);
    CHECK(!layout_ok(cut, len - 2), "a restart marker removed: accepted");
    free(cut);
    free(jpg);

    /* A restart marker in a file with no restart interval, as a damaged byte pair would make. */
    jpg = make(160, 128, 3, (jm_settings){ 90, JM_420, 0, 0, JCS_UNKNOWN }, &len);
    sos = find_marker(jpg, len, 0xDA, 2);
    size_t mid = sos + (len - sos) / 2;
    while (jpg[mid] == 0xFF || jpg[mid - 1] == 0xFF) mid++;
    unsigned char saved[2] = { jpg[mid], jpg[mid + 1] };
    jpg[mid] = 0xFF;
    jpg[mid + 1] = 0xD0;
    CHECK(!layout_ok(jpg, len), "stray restart marker accepted");
    /* An early end-of-image marker leaves bytes that are no marker. */
    jpg[mid + 1] = 0xD9;
    CHECK(layout_ok(jpg, len), "early EOI: the structure is complete there (a known limit: only libjpeg-turbo sees the short scan)");
    jpg[mid] = saved[0];
    jpg[mid + 1] = saved[1];
    /* The end-of-image marker overwritten. */
    jpg[len - 1] = 0x00;
    CHECK(!layout_ok(jpg, len), "missing EOI accepted");
    free(jpg);
}

static unsigned char *make_colourspace(J_COLOR_SPACE in, J_COLOR_SPACE file, int c, int arith, size_t *len)
{
    ipk_img img = smooth_image(33, 21, c, 5);
    struct jpeg_compress_struct cinfo;
    struct jpeg_error_mgr jerr;
    unsigned char *out = NULL;
    unsigned long out_len = 0;
    cinfo.err = jpeg_std_error(&jerr);
    jpeg_create_compress(&cinfo);
    jpeg_mem_dest(&cinfo, &out, &out_len);
    cinfo.image_width = 33;
    cinfo.image_height = 21;
    cinfo.input_components = c;
    cinfo.in_color_space = in;
    jpeg_set_defaults(&cinfo);
    jpeg_set_colorspace(&cinfo, file);
    cinfo.arith_code = arith ? TRUE : FALSE;
    jpeg_start_compress(&cinfo, TRUE);
    while (cinfo.next_scanline < cinfo.image_height) {
        JSAMPROW row = (JSAMPROW)((unsigned char *)img.data + (size_t)cinfo.next_scanline * (size_t)img.stride);
        jpeg_write_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    tu_img_free(&img);
    *len = out_len;
    return out;
}

/* The colour space and coding the GPU path must hand to libjpeg-turbo. */
static void colour_and_coding(void)
{
    struct { J_COLOR_SPACE in, file; int c, arith; jpeg_layout_colour colour; jpeg_layout_coding coding; } cases[] = {
        { JCS_RGB, JCS_RGB, 3, 0, JL_RGB, JL_BASELINE },
        { JCS_CMYK, JCS_CMYK, 4, 0, JL_CMYK, JL_BASELINE },
        { JCS_CMYK, JCS_YCCK, 4, 0, JL_YCCK, JL_BASELINE },
        { JCS_RGB, JCS_YCbCr, 3, 1, JL_YCBCR, JL_ARITHMETIC },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len;
        unsigned char *jpg = make_colourspace(cases[i].in, cases[i].file, cases[i].c, cases[i].arith, &len);
        jpeg_layout L;
        int rc = jpeg_layout_read(jpg, len, &L, why, sizeof why);
        CHECK(rc == IP_OK && L.components == cases[i].c && L.colour == cases[i].colour && L.coding == cases[i].coding,
              "case %zu: rc %d (%s), %d components, colour %d, coding %d", i, rc, why, L.components,
              (int)L.colour, (int)L.coding);
        free(jpg);
    }
}

/* Random damage anywhere: no crash, no read outside the buffer (ASan), a message on failure. */
static void random_damage(void)
{
    size_t len;
    unsigned char *jpg = make(64, 48, 3, (jm_settings){ 80, JM_420, 1, 1, JCS_UNKNOWN }, &len);
    unsigned char *copy = malloc(len);
    tu_rng rng;
    tu_seed(&rng, 11);
    for (int round = 0; round < 3000; round++) {
        memcpy(copy, jpg, len);
        for (int k = 0; k < 3; k++) copy[tu_next(&rng) % len] = (unsigned char)tu_next(&rng);
        size_t cut = round % 3 ? len : tu_next(&rng) % len;
        jpeg_layout L;
        why[0] = 0;
        if (jpeg_layout_read(copy, cut, &L, why, sizeof why) != IP_OK) CHECK(why[0], "failure without reason");
    }
    free(copy);
    free(jpg);
}

int main(void)
{
    good_files();
    truncations();
    restart_damage();
    colour_and_coding();
    random_damage();
    return tu_finish();
}
