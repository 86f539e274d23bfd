/* Metadata through the writers and readers, each side checked with the format's own library
 * (libpng, libjpeg, libtiff): ICC profiles byte for byte (JPEG's split into numbered APP2 pieces
 * and put back together), EXIF, XMP, PNG text, resolution, orientation applied on reading, a
 * profile that does not fit the output's channels left out, and damaged metadata never fatal. */
#include "test_io_helpers.h"
#include <jpeglib.h>
#include <math.h>
#include <png.h>
#include <tiffio.h>
#include <unistd.h>
#include "io/exif.h"
#include "io/meta.h"
#include "io/meta_jpeg.h"
#include "io/orient.h"

static char err[512];

static void put_be32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (24 - 8 * i));
}

/* A profile with a header libpng accepts (size, version, class, colour space, PCS, 'acsp', D50,
 * no tags) followed by seeded bytes; len a multiple of 4. */
static unsigned char *fake_icc(const char *space, size_t len, uint64_t seed)
{
    tu_rng r;
    tu_seed(&r, seed);
    unsigned char *p = malloc(len);
    for (size_t i = 0; i < len; i++) p[i] = (unsigned char)tu_next(&r);
    memset(p, 0, 132);
    put_be32(p, (uint32_t)len);
    put_be32(p + 8, 0x04300000);
    memcpy(p + 12, "mntr", 4);
    memcpy(p + 16, space, 4);
    memcpy(p + 20, "XYZ ", 4);
    memcpy(p + 36, "acsp", 4);
    put_be32(p + 68, 0xF6D6);
    put_be32(p + 72, 0x10000);
    put_be32(p + 76, 0xD32D);
    return p;
}

static void exif_blob(int orientation, unsigned char **blob, size_t *len)
{
    exif_ifd ifd0 = { 0 }, *sub = calloc(1, sizeof *sub);
    exif_set(&ifd0, 271, EXIF_ASCII, 9, "TestMake", 9);
    unsigned char o[2] = { (unsigned char)orientation, 0 }, exposure[8] = { 1, 0, 0, 0, 250, 0, 0, 0 };
    exif_set(&ifd0, EXIF_TAG_ORIENTATION, EXIF_SHORT, 1, o, 2);
    exif_set(sub, 33434, EXIF_RATIONAL, 1, exposure, 8);
    exif_set(sub, 36867, EXIF_ASCII, 20, "2020:01:02 03:04:05", 20);
    exif_set_sub(&ifd0, EXIF_TAG_EXIF_IFD, sub);
    exif_serialize(&ifd0, blob, len);
    exif_ifd_free(&ifd0);
}

static const char xmp_text[] = "<x:xmpmeta xmlns:x=\"adobe:ns:meta/\"><rdf:RDF/></x:xmpmeta>";

static void sample_meta(io_meta *m, const char *space, size_t icc_len, int orientation)
{
    meta_init(m);
    m->icc = fake_icc(space, icc_len, icc_len);
    m->icc_len = icc_len;
    exif_blob(orientation, &m->exif, &m->exif_len);
    meta_set_bytes(&m->xmp, &m->xmp_len, xmp_text, strlen(xmp_text));
    static const char latin1[] = "plain \xe9t\xe9", utf8[] = "\xc3\xa9" "crivain";
    meta_add_text(m, META_TEXT_PLAIN, 0, "Title", NULL, NULL, latin1, strlen(latin1));
    meta_add_text(m, META_TEXT_ZIP, 0, "Comment", NULL, NULL, "squeezed squeezed squeezed", 26);
    meta_add_text(m, META_TEXT_INTL, 1, "Author", "fr", "Auteur", utf8, strlen(utf8));
    m->res_unit = META_RES_INCH;
    m->res_x = 300;
    m->res_y = 150;
    m->orientation = orientation;
}

static ip_image test_image(int w, int h, int c, tu_rng *r, ipk_img *keep)
{
    *keep = tu_img_random(w, h, c, IPK_U8, 0, r);
    return tio_from_ipk(keep);
}

static int write_with(const char *path, const ip_image *img, io_meta *m)
{
    io_options opt;
    io_default_options(&opt);
    opt.meta = m;
    int rc = io_write(path, img, &opt, err, sizeof err);
    CHECK(rc == IP_OK, "write %s: %s", path, err);
    return rc;
}

static int read_with(const char *path, io_meta *m, int autorotate, ip_image *img)
{
    io_options opt;
    io_default_options(&opt);
    opt.meta = m;
    opt.autorotate = autorotate;
    int rc = io_read(path, &opt, img, err, sizeof err);
    CHECK(rc == IP_OK, "read %s: %s", path, err);
    return rc;
}

static int same_bytes(const void *a, size_t a_len, const void *b, size_t b_len)
{
    return a && b && a_len == b_len && !memcmp(a, b, a_len);
}

/* ---- PNG ---- */

static void test_png_written(void)
{
    tu_rng r;
    tu_seed(&r, 1);
    ipk_img k;
    ip_image img = test_image(17, 11, 3, &r, &k);
    io_meta m;
    sample_meta(&m, "RGB ", 3000, 1);
    const char *path = tio_path("meta.png");
    write_with(path, &img, &m);
    FILE *f = fopen(path, "rb");
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    png_init_io(png, f);
    png_read_info(png, info);
    png_charp name;
    int compression;
    png_bytep profile;
    png_uint_32 profile_len;
    CHECK(png_get_iCCP(png, info, &name, &compression, &profile, &profile_len) &&
          same_bytes(profile, profile_len, m.icc, m.icc_len), "libpng reads the profile back");
    png_uint_32 xppu, yppu;
    int unit;
    CHECK(png_get_pHYs(png, info, &xppu, &yppu, &unit) && xppu == 11811 && yppu == 5906 && unit == PNG_RESOLUTION_METER,
          "pHYs 300x150 dpi as %u x %u per metre", xppu, yppu);
    png_bytep exif;
    png_uint_32 exif_len;
    unsigned char *want;
    size_t want_len;
    meta_exif_for_output(&m, &want, &want_len);
    CHECK(png_get_eXIf_1(png, info, &exif_len, &exif) && same_bytes(exif, exif_len, want, want_len), "eXIf");
    free(want);
    png_textp text;
    int n = png_get_text(png, info, &text, NULL);
    CHECK(n == 4, "4 text chunks (XMP among them), not %d", n);
    for (int i = 0; i < n && n == 4; i++) {
        const char *key = i == 0 ? "XML:com.adobe.xmp" : m.texts[i - 1].key;
        size_t len = i == 0 ? m.xmp_len : m.texts[i - 1].text_len;
        const char *body = i == 0 ? (const char *)m.xmp : m.texts[i - 1].text;
        int want_comp = i == 0 ? PNG_ITXT_COMPRESSION_NONE : i == 1 ? PNG_TEXT_COMPRESSION_NONE
                      : i == 2 ? PNG_TEXT_COMPRESSION_zTXt : PNG_ITXT_COMPRESSION_zTXt;
        size_t got_len = text[i].compression >= PNG_ITXT_COMPRESSION_NONE ? text[i].itxt_length : text[i].text_length;
        CHECK(!strcmp(text[i].key, key) && text[i].compression == want_comp && same_bytes(text[i].text, got_len, body, len),
              "text %d: %s compression %d", i, text[i].key, text[i].compression);
        if (i == 3) CHECK(!strcmp(text[i].lang, "fr") && !strcmp(text[i].lang_key, "Auteur"), "iTXt language");
    }
    png_destroy_read_struct(&png, &info, NULL);
    fclose(f);

    io_meta back;
    ip_image got;
    meta_init(&back);
    if (read_with(path, &back, 1, &got) == IP_OK) {
        CHECK(same_bytes(back.icc, back.icc_len, m.icc, m.icc_len) && same_bytes(back.xmp, back.xmp_len, m.xmp, m.xmp_len),
              "our reader: profile and XMP");
        CHECK(back.n_texts == 3 && back.texts[2].kind == META_TEXT_INTL && back.texts[2].compressed &&
              !strcmp(back.texts[1].text, "squeezed squeezed squeezed"), "our reader: texts");
        CHECK(back.res_unit == META_RES_INCH && fabs(back.res_x - 300) < 0.01 && fabs(back.res_y - 150) < 0.02,
              "our reader: %g x %g dpi", back.res_x, back.res_y);
        img_free(&got);
    }
    meta_clear(&back);
    meta_clear(&m);
    tu_img_free(&k);
}

/* A PNG written by libpng: text before and after the image data, eXIf turning it 180 degrees. */
static void test_png_read(void)
{
    tu_rng r;
    tu_seed(&r, 2);
    ipk_img k;
    ip_image img = test_image(13, 7, 4, &r, &k);
    const char *path = tio_path("libpng_meta.png");
    unsigned char *icc = fake_icc("RGB ", 776, 5), *exif;
    size_t exif_len;
    exif_blob(3, &exif, &exif_len);
    FILE *f = fopen(path, "wb");
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png), end = png_create_info_struct(png);
    png_init_io(png, f);
    png_set_IHDR(png, info, 13, 7, 8, PNG_COLOR_TYPE_RGBA, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_set_iCCP(png, info, "some profile", 0, icc, 776);
    png_set_pHYs(png, info, 3780, 3780, PNG_RESOLUTION_METER);
    png_set_eXIf_1(png, info, (png_uint_32)exif_len, exif);
    png_text before = { .compression = PNG_TEXT_COMPRESSION_NONE, .key = "Before", .text = "one" };
    png_text after = { .compression = PNG_TEXT_COMPRESSION_zTXt, .key = "After", .text = "two" };
    png_set_text(png, info, &before, 1);
    png_set_text(png, end, &after, 1);
    png_write_info(png, info);
    for (int y = 0; y < 7; y++) png_write_row(png, (png_bytep)img.data + y * img.stride);
    png_write_end(png, end);
    png_destroy_info_struct(png, &end);
    png_destroy_write_struct(&png, &info);
    fclose(f);

    io_meta m;
    meta_init(&m);
    ip_image upright, stored;
    if (read_with(path, &m, 1, &upright) == IP_OK) {
        CHECK(same_bytes(m.icc, m.icc_len, icc, 776), "iCCP inflated");
        CHECK(same_bytes(m.exif, m.exif_len, exif, exif_len) && m.orientation == 1, "eXIf kept, orientation applied");
        CHECK(m.n_texts == 2 && !strcmp(m.texts[0].key, "Before") && !strcmp(m.texts[1].text, "two") &&
              m.texts[1].kind == META_TEXT_ZIP, "text before and after IDAT");
        CHECK(m.res_unit == META_RES_INCH && fabs(m.res_x - 96.012) < 1e-9, "3780 per metre: %g dpi", m.res_x);
        int bad = 0;
        for (int y = 0; y < 7; y++)
            for (int x = 0; x < 13; x++)
                for (int c = 0; c < 4; c++) bad += tio_get(&upright, x, y, c) != tio_get(&img, 12 - x, 6 - y, c);
        CHECK(bad == 0, "turned 180 degrees: %d values wrong", bad);
        img_free(&upright);
    }
    if (read_with(path, &m, 0, &stored) == IP_OK) {
        ipk_img got = tio_to_ipk(&stored);
        CHECK(tu_max_diff(&got, &k) == 0 && m.orientation == 3, "--no-autorotate: stored pixels, orientation 3 kept");
        img_free(&stored);
    }
    meta_clear(&m);
    free(icc);
    free(exif);
    tu_img_free(&k);
}

/* 40 zTXt chunks of 4 MiB each (4 KiB compressed): no more than META_MAX_BYTES is inflated. */
static void test_png_text_budget(void)
{
    tu_rng r;
    tu_seed(&r, 11);
    ipk_img k;
    ip_image img = test_image(5, 3, 3, &r, &k);
    const size_t big = (size_t)4 << 20;
    char *zeros = malloc(big + 1);
    memset(zeros, 'z', big);
    zeros[big] = '\0';
    const char *path = tio_path("bomb.png");
    FILE *f = fopen(path, "wb");
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    png_init_io(png, f);
    png_set_IHDR(png, info, 5, 3, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_text texts[40];
    char keys[40][16];
    for (int i = 0; i < 40; i++) {
        snprintf(keys[i], sizeof keys[i], "k%d", i);
        texts[i] = (png_text){ .compression = PNG_TEXT_COMPRESSION_zTXt, .key = keys[i], .text = zeros, .text_length = big };
    }
    png_set_text(png, info, texts, 40);
    png_write_info(png, info);
    for (int y = 0; y < 3; y++) png_write_row(png, (png_bytep)img.data + y * img.stride);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    fclose(f);
    free(zeros);
    io_meta m;
    meta_init(&m);
    ip_image got;
    if (read_with(path, &m, 1, &got) == IP_OK) {
        size_t total = 0;
        for (int i = 0; i < m.n_texts; i++) total += m.texts[i].text_len;
        CHECK(m.n_texts == (int)(META_MAX_BYTES / big) && total <= META_MAX_BYTES, "%d texts, %zu bytes kept",
              m.n_texts, total);
        img_free(&got);
    }
    meta_clear(&m);
    tu_img_free(&k);
}

/* ---- JPEG ---- */

typedef struct {
    int marker;
    size_t len;
    unsigned char data[65536];
} seg;

/* A JPEG by libjpeg with the given APP segments written right after its header. */
static void write_jpeg_with(const char *path, const ip_image *img, const seg *segs, int n)
{
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr jerr;
    FILE *f = fopen(path, "wb");
    c.err = jpeg_std_error(&jerr);
    jpeg_create_compress(&c);
    jpeg_stdio_dest(&c, f);
    c.image_width = (JDIMENSION)img->shape.width;
    c.image_height = (JDIMENSION)img->shape.height;
    c.input_components = img->shape.channels;
    c.in_color_space = img->shape.channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_start_compress(&c, TRUE);
    for (int i = 0; i < n; i++) jpeg_write_marker(&c, segs[i].marker, segs[i].data, (unsigned)segs[i].len);
    while (c.next_scanline < c.image_height) {
        JSAMPROW row = (JSAMPROW)img->data + c.next_scanline * img->stride;
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    fclose(f);
}

static void icc_seg(seg *s, int seq, int count, const unsigned char *data, size_t len)
{
    s->marker = JPEG_APP0 + 2;
    memcpy(s->data, "ICC_PROFILE\0", 12);
    s->data[12] = (unsigned char)seq;
    s->data[13] = (unsigned char)count;
    memcpy(s->data + 14, data, len);
    s->len = 14 + len;
}

static void test_jpeg_written(void)
{
    tu_rng r;
    tu_seed(&r, 3);
    ipk_img k;
    ip_image img = test_image(21, 9, 3, &r, &k);
    io_meta m;
    sample_meta(&m, "RGB ", 200000, 1);   /* four APP2 pieces */
    const char *path = tio_path("meta.jpg");
    write_with(path, &img, &m);
    FILE *f = fopen(path, "rb");
    struct jpeg_decompress_struct d;
    struct jpeg_error_mgr jerr;
    d.err = jpeg_std_error(&jerr);
    jpeg_create_decompress(&d);
    jpeg_stdio_src(&d, f);
    jpeg_save_markers(&d, JPEG_APP0 + 1, 0xffff);
    jpeg_save_markers(&d, JPEG_APP0 + 2, 0xffff);
    jpeg_read_header(&d, TRUE);
    JOCTET *icc = NULL;
    unsigned icc_len = 0;
    CHECK(jpeg_read_icc_profile(&d, &icc, &icc_len) && same_bytes(icc, icc_len, m.icc, m.icc_len),
          "libjpeg puts the profile back together");
    free(icc);
    int app2 = 0, exif_ok = 0, xmp_ok = 0;
    unsigned char *want;
    size_t want_len;
    meta_exif_for_output(&m, &want, &want_len);
    for (jpeg_saved_marker_ptr s = d.marker_list; s; s = s->next) {
        app2 += s->marker == JPEG_APP0 + 2;
        if (s->marker == JPEG_APP0 + 1 && s->data_length > 6 && !memcmp(s->data, "Exif\0\0", 6))
            exif_ok = same_bytes(s->data + 6, s->data_length - 6, want, want_len);
        if (s->marker == JPEG_APP0 + 1 && s->data_length > 29 && !memcmp(s->data, "http://ns.adobe.com/xap/1.0/\0", 29))
            xmp_ok = same_bytes(s->data + 29, s->data_length - 29, m.xmp, m.xmp_len);
    }
    free(want);
    CHECK(app2 == 4 && exif_ok && xmp_ok, "APP2 pieces %d, EXIF %d, XMP %d", app2, exif_ok, xmp_ok);
    CHECK(d.saw_JFIF_marker && d.density_unit == 1 && d.X_density == 300 && d.Y_density == 150, "JFIF density %d %u %u",
          d.density_unit, d.X_density, d.Y_density);
    jpeg_destroy_decompress(&d);
    fclose(f);
    meta_clear(&m);
    tu_img_free(&k);
}

/* The pieces in any order come back whole; a missing, doubled or inconsistent piece drops the
 * profile (the image still decodes). */
static void test_jpeg_icc_pieces(void)
{
    tu_rng r;
    tu_seed(&r, 4);
    ipk_img k;
    ip_image img = test_image(8, 8, 3, &r, &k);
    unsigned char *icc = fake_icc("RGB ", 150000, 9);
    static seg segs[4];
    const struct { const char *what; int order[4], counts[4], n, whole; } cases[] = {
        { "in order", { 1, 2, 3 }, { 3, 3, 3 }, 3, 1 },
        { "shuffled", { 3, 1, 2 }, { 3, 3, 3 }, 3, 1 },
        { "one missing", { 1, 3 }, { 3, 3 }, 2, 0 },
        { "one twice", { 1, 2, 2, 3 }, { 3, 3, 3, 3 }, 4, 0 },
        { "counts disagree", { 1, 2, 3 }, { 3, 4, 3 }, 3, 0 },
        { "number zero", { 0, 1, 2 }, { 3, 3, 3 }, 3, 0 },
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        for (int i = 0; i < cases[c].n; i++) {
            int seq = cases[c].order[i], piece = seq ? seq - 1 : 0;
            icc_seg(&segs[i], seq, cases[c].counts[i], icc + piece * 50000, 50000);
        }
        const char *path = tio_path("pieces.jpg");
        write_jpeg_with(path, &img, segs, cases[c].n);
        io_meta m;
        meta_init(&m);
        ip_image got;
        if (read_with(path, &m, 1, &got) == IP_OK) {
            if (cases[c].whole) CHECK(same_bytes(m.icc, m.icc_len, icc, 150000), "%s: the profile whole", cases[c].what);
            else CHECK(m.icc == NULL, "%s: no profile", cases[c].what);
            img_free(&got);
        }
        meta_clear(&m);
    }
    free(icc);
    tu_img_free(&k);
}

typedef struct {
    ip_shape seen;
    int calls;
} shape_probe;

static int probe_shape(void *user, const ip_shape *shape, char *e, size_t elen)
{
    (void)e, (void)elen;
    shape_probe *p = user;
    p->seen = *shape;
    p->calls++;
    return IP_OK;
}

typedef struct {
    int allocs, releases;
} counting_memory;

static int count_alloc(void *user, size_t bytes, void **ptr, char *e, size_t elen)
{
    (void)e, (void)elen;
    ((counting_memory *)user)->allocs++;
    *ptr = malloc(bytes);
    return *ptr ? IP_OK : IP_ENOMEM;
}

static void count_release(void *user, void *ptr)
{
    ((counting_memory *)user)->releases++;
    free(ptr);
}

/* A JPEG with EXIF orientation 1..8 from libjpeg: the reader's caller plans for the upright shape,
 * gets the pixels in its own memory, turned as orient_apply turns the stored ones. */
static void test_jpeg_orientations(void)
{
    tu_rng r;
    tu_seed(&r, 6);
    ipk_img k;
    ip_image img = test_image(19, 6, 3, &r, &k);
    for (int o = 1; o <= 8; o++) {
        static seg s;
        unsigned char *blob;
        size_t len;
        exif_blob(o, &blob, &len);
        s.marker = JPEG_APP0 + 1;
        memcpy(s.data, "Exif\0\0", 6);
        memcpy(s.data + 6, blob, len);
        s.len = 6 + len;
        free(blob);
        const char *path = tio_path("oriented.jpg");
        write_jpeg_with(path, &img, &s, 1);
        io_options opt;
        io_default_options(&opt);
        ip_image stored, upright;
        CHECK(io_read(path, &opt, &stored, err, sizeof err) == IP_OK, "plain read: %s", err);
        shape_probe probe = { { 0 }, 0 };
        counting_memory mem = { 0, 0 };
        io_meta m;
        meta_init(&m);
        opt.autorotate = 1;
        opt.meta = &m;
        opt.on_shape = probe_shape;
        opt.on_shape_user = &probe;
        opt.memory = (io_pixel_memory){ count_alloc, count_release, &mem };
        int rc = io_read(path, &opt, &upright, err, sizeof err);
        CHECK(rc == IP_OK, "orientation %d: %s", o, err);
        ip_shape want = orient_shape(&stored.shape, o);
        CHECK(probe.calls >= 1 && probe.seen.width == want.width && probe.seen.height == want.height,
              "orientation %d: planned for %dx%d", o, probe.seen.width, probe.seen.height);
        if (rc == IP_OK) {
            ip_image ref;
            img_alloc(&ref, &want, IMG_DEFAULT_MAX_PIXELS, err, sizeof err);
            orient_apply(&stored, &ref, o, 1);
            ipk_img a = tio_to_ipk(&ref), b = tio_to_ipk(&upright);
            CHECK(upright.shape.width == want.width && tu_max_diff(&a, &b) == 0, "orientation %d: pixels", o);
            CHECK(m.orientation == 1 && exif_orientation(m.exif, m.exif_len) == o,
                  "orientation %d: the record says upright, its EXIF still says %d", o, o);
            img_free(&ref);
            io_image_free(&opt, &upright);
        }
        CHECK(mem.allocs == 1 && mem.releases == mem.allocs, "orientation %d: %d allocations from the caller's memory",
              o, mem.allocs);
        img_free(&stored);
        meta_clear(&m);
    }
    tu_img_free(&k);
}

/* nvJPEG's output gets its segments spliced in: checked here on libjpeg's output. */
static void test_jpeg_splice(void)
{
    tu_rng r;
    tu_seed(&r, 7);
    ipk_img k;
    ip_image img = test_image(16, 16, 3, &r, &k);
    const char *plain = tio_path("plain.jpg"), *spliced_path = tio_path("spliced.jpg");
    write_with(plain, &img, NULL);
    size_t len = 0, out_len;
    unsigned char *bytes = tio_slurp(plain, &len), *out;
    io_meta m, back;
    sample_meta(&m, "RGB ", 70000, 1);
    CHECK(meta_jpeg_splice(bytes, len, &m, &img.shape, &out, &out_len, err, sizeof err) == IP_OK, "splice: %s", err);
    tio_spit(spliced_path, out, out_len);
    meta_init(&back);
    ip_image a, b;
    if (read_with(spliced_path, &back, 1, &a) == IP_OK && read_with(plain, NULL, 0, &b) == IP_OK) {
        ipk_img ka = tio_to_ipk(&a), kb = tio_to_ipk(&b);
        CHECK(tu_max_diff(&ka, &kb) == 0, "same pixels after splicing");
        CHECK(same_bytes(back.icc, back.icc_len, m.icc, m.icc_len) && same_bytes(back.xmp, back.xmp_len, m.xmp, m.xmp_len) &&
              same_bytes(back.exif, back.exif_len, m.exif, m.exif_len), "profile, XMP, EXIF spliced in");
        CHECK(back.res_unit == META_RES_INCH && back.res_x == 300 && back.res_y == 150, "JFIF density patched");
        img_free(&a);
        img_free(&b);
    }
    free(out);
    /* An encoder that writes no JFIF header: one is made for the density. */
    memmove(bytes + 2, bytes + 20, len - 20);
    CHECK(bytes[2] == 0xFF && bytes[3] == 0xDB, "JFIF header cut out of the test file");
    CHECK(meta_jpeg_splice(bytes, len - 18, &m, &img.shape, &out, &out_len, err, sizeof err) == IP_OK, "splice: %s", err);
    tio_spit(spliced_path, out, out_len);
    meta_clear(&back);
    if (read_with(spliced_path, &back, 1, &a) == IP_OK) {
        CHECK(back.res_unit == META_RES_INCH && back.res_x == 300 && back.res_y == 150 && back.icc, "JFIF header made");
        img_free(&a);
    }
    free(out);
    CHECK(meta_jpeg_splice((const unsigned char *)"nope", 4, &m, &img.shape, &out, &out_len, err, sizeof err) == IP_EINVAL &&
          !out, "not a JPEG");
    free(bytes);
    meta_clear(&m);
    meta_clear(&back);
    tu_img_free(&k);
}

/* ---- TIFF ---- */

static void test_tiff_written(void)
{
    tu_rng r;
    tu_seed(&r, 8);
    ipk_img k;
    ip_image img = test_image(15, 10, 3, &r, &k);
    io_meta m;
    sample_meta(&m, "RGB ", 5000, 6);   /* as --no-autorotate leaves it */
    const char *path = tio_path("meta.tif");
    write_with(path, &img, &m);
    TIFF *t = TIFFOpen(path, "r");
    uint32_t len = 0;
    void *data = NULL;
    CHECK(TIFFGetField(t, TIFFTAG_ICCPROFILE, &len, &data) && same_bytes(data, len, m.icc, m.icc_len), "libtiff: profile");
    CHECK(TIFFGetField(t, TIFFTAG_XMLPACKET, &len, &data) && same_bytes(data, len, m.xmp, m.xmp_len), "libtiff: XMP");
    float x = 0, y = 0;
    uint16_t unit = 0, orientation = 0;
    CHECK(TIFFGetField(t, TIFFTAG_XRESOLUTION, &x) && TIFFGetField(t, TIFFTAG_YRESOLUTION, &y) &&
          TIFFGetField(t, TIFFTAG_RESOLUTIONUNIT, &unit) && x == 300 && y == 150 && unit == RESUNIT_INCH,
          "libtiff: %g x %g unit %u", x, y, unit);
    CHECK(TIFFGetField(t, TIFFTAG_ORIENTATION, &orientation) && orientation == 6, "libtiff: orientation %u", orientation);
    char *make = NULL;
    CHECK(TIFFGetField(t, TIFFTAG_MAKE, &make) && !strcmp(make, "TestMake"), "libtiff: make");
    uint64_t exif_at = 0;
    CHECK(TIFFGetField(t, TIFFTAG_EXIFIFD, &exif_at) && exif_at > 8, "libtiff: an EXIF directory");
    int exif_read_back = exif_at > 8 && TIFFReadEXIFDirectory(t, exif_at);
    CHECK(exif_read_back, "libtiff reads the EXIF directory");
    if (exif_read_back) {
        float exposure = 0;
        CHECK(TIFFGetField(t, EXIFTAG_EXPOSURETIME, &exposure) && fabs(exposure - 1.0 / 250) < 1e-7,
              "libtiff: exposure %g", exposure);
    }
    TIFFClose(t);
    ip_image got;
    io_meta back;
    meta_init(&back);
    if (read_with(path, &back, 0, &got) == IP_OK) {
        exif_ifd tree;
        CHECK(back.orientation == 6 && same_bytes(back.icc, back.icc_len, m.icc, m.icc_len) &&
              same_bytes(back.xmp, back.xmp_len, m.xmp, m.xmp_len), "our reader: orientation, profile, XMP");
        CHECK(exif_parse(back.exif, back.exif_len, &tree) == IP_OK &&
              exif_number(exif_find(exif_find(&tree, EXIF_TAG_EXIF_IFD)->sub, 33434), 0, 0) == 1.0 / 250 &&
              exif_find(&tree, 271), "our reader: EXIF from the TIFF's tags and directory");
        exif_ifd_free(&tree);
        img_free(&got);
    }
    meta_clear(&back);
    meta_clear(&m);
    tu_img_free(&k);
}

/* An RGB profile stays out of a one-channel output (a grayscale stage); a gray one goes in. */
static void test_colour_model(void)
{
    tu_rng r;
    tu_seed(&r, 9);
    const char *exts[] = { "png", "jpg", "tif" };
    for (int gray_profile = 0; gray_profile <= 1; gray_profile++)
        for (int e = 0; e < 3; e++) {
            ipk_img k;
            ip_image img = test_image(9, 5, 1, &r, &k);
            io_meta m, back;
            sample_meta(&m, gray_profile ? "GRAY" : "RGB ", 900, 1);
            char name[32];
            snprintf(name, sizeof name, "gray%d.%s", gray_profile, exts[e]);
            const char *path = tio_path(name);
            write_with(path, &img, &m);
            meta_init(&back);
            ip_image got;
            if (read_with(path, &back, 1, &got) == IP_OK) {
                if (gray_profile) CHECK(same_bytes(back.icc, back.icc_len, m.icc, m.icc_len), "%s: gray profile kept", name);
                else CHECK(!back.icc && back.exif, "%s: RGB profile left out, EXIF kept", name);
                img_free(&got);
            }
            meta_clear(&m);
            meta_clear(&back);
            tu_img_free(&k);
        }
    io_meta m;
    sample_meta(&m, "CMYK", 900, 1);
    ip_shape rgb = { 4, 4, 3, IP_U8 }, rgba = { 4, 4, 4, IP_U8 };
    CHECK(!meta_icc_fits(&m, &rgb), "a CMYK profile fits no output");
    memcpy(m.icc + 16, "RGB ", 4);
    CHECK(meta_icc_fits(&m, &rgb) && meta_icc_fits(&m, &rgba), "RGB profile, RGB and RGBA outputs");
    meta_clear(&m);
}

/* Damage anywhere in files full of metadata: a decoded image or one error, never a crash. */
static void test_damage(void)
{
    tu_rng r;
    tu_seed(&r, 10);
    const char *exts[] = { "png", "jpg", "tif" };
    for (int e = 0; e < 3; e++) {
        ipk_img k;
        ip_image img = test_image(12, 8, 3, &r, &k);
        io_meta m;
        sample_meta(&m, "RGB ", 3000, 6);
        char name[32];
        snprintf(name, sizeof name, "damage_src.%s", exts[e]);
        write_with(tio_path(name), &img, &m);
        size_t len = 0;
        unsigned char *bytes = tio_slurp(tio_path(name), &len);
        snprintf(name, sizeof name, "damaged.%s", exts[e]);
        int decoded = 0, failed = 0;
        for (int round = 0; round < 300; round++) {
            unsigned char *copy = malloc(len);
            memcpy(copy, bytes, len);
            size_t keep = round % 3 == 0 ? tu_next(&r) % len : len;
            for (int n = 0; n < 1 + round % 5; n++) copy[8 + tu_next(&r) % (len - 8)] ^= (unsigned char)(1 + tu_next(&r) % 255);
            tio_spit(tio_path(name), copy, keep);
            io_options opt;
            io_default_options(&opt);
            io_meta back;
            meta_init(&back);
            opt.meta = &back;
            opt.autorotate = 1;
            ip_image got;
            if (io_read(tio_path(name), &opt, &got, err, sizeof err) == IP_OK) {
                decoded++;
                CHECK(back.orientation == 1, "upright after reading");
                img_free(&got);
            } else {
                failed++;
                CHECK(!back.icc && !back.exif && !back.n_texts, "a failed read leaves no metadata");
            }
            meta_clear(&back);
            free(copy);
        }
        CHECK(decoded + failed == 300, "%s: %d decoded, %d refused", exts[e], decoded, failed);
        free(bytes);
        meta_clear(&m);
        tu_img_free(&k);
    }
}

int main(void)
{
    test_png_written();
    test_png_read();
    test_png_text_budget();
    test_jpeg_written();
    test_jpeg_icc_pieces();
    test_jpeg_orientations();
    test_jpeg_splice();
    test_tiff_written();
    test_colour_model();
    test_damage();
    return tu_finish();
}
