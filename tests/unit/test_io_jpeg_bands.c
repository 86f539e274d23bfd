/* Large JPEGs are written in bands joined by restart markers: the file must decode to exactly the
 * pixels of one libjpeg-turbo stream with the same settings (encoded here independently, by
 * tests/jpeg_make.h), at every thread count give the same bytes, and carry its DRI segment (so the
 * banded path is the one tested). Shapes: widths not a multiple of the MCU, a tall narrow strip,
 * a 65500-pixel-wide one, gray, RGB 4:4:4 (quality 95) and 4:2:0 (quality 75). */
#include "test_io_helpers.h"
#include "jpeg_make.h"

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    unsigned char *b = n > 0 ? malloc((size_t)n) : NULL;
    *len = b && fread(b, 1, (size_t)n, f) == (size_t)n ? (size_t)n : 0;
    fclose(f);
    return b;
}

static int has_dri(const unsigned char *b, size_t n)
{
    for (size_t i = 2; i + 3 < n && b[i] == 0xFF && b[i + 1] != 0xDA; i += 2 + ((size_t)b[i + 2] << 8 | b[i + 3]))
        if (b[i + 1] == 0xDD) return 1;
    return 0;
}

static ip_image decode(const char *path, int *rc)
{
    io_options opt;
    io_default_options(&opt);
    ip_image img = { 0 };
    char err[256];
    *rc = io_read(path, &opt, &img, err, sizeof err);
    if (*rc) printf("%s: %s\n", path, err);
    return img;
}

static void one_shape(int w, int h, int c, int quality, tu_rng *r)
{
    ipk_img k = tu_img_random(w, h, c, IPK_U8, 0, r);
    /* Smooth content with noise, so that blocks differ and the DC predictions matter. */
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w * c; x++) {
            unsigned char *p = (unsigned char *)k.data + (size_t)y * (size_t)k.stride + (size_t)x;
            *p = (unsigned char)((x * 3 + y * 5) / 7 + (*p & 15));
        }
    ip_image img = tio_from_ipk(&k);
    io_options opt;
    io_default_options(&opt);
    opt.jpeg_quality = quality;
    char err[256], a_path[512], b_path[512];
    snprintf(a_path, sizeof a_path, "%s", tio_path("bands1.jpg"));
    snprintf(b_path, sizeof b_path, "%s", tio_path("bands3.jpg"));
    opt.threads = 1;
    int rc = io_write(a_path, &img, &opt, err, sizeof err);
    opt.threads = 3;
    if (!rc) rc = io_write(b_path, &img, &opt, err, sizeof err);
    CHECK(rc == IP_OK, "%dx%d c%d q%d: %s", w, h, c, quality, err);
    size_t a_len = 0, b_len = 0, ref_len = 0;
    unsigned char *a = slurp(a_path, &a_len), *b = slurp(b_path, &b_len);
    CHECK(a && b && a_len == b_len && !memcmp(a, b, a_len), "%dx%d c%d q%d: 1 and 3 threads wrote different files",
          w, h, c, quality);
    CHECK(a && has_dri(a, a_len), "%dx%d c%d q%d: not written in bands", w, h, c, quality);
    jm_settings s = { quality, quality >= 90 ? JM_444 : JM_420, 0, 0, JCS_UNKNOWN };
    unsigned char *ref = jm_encode(k.data, (size_t)k.stride, w, h, c, &s, &ref_len);
    FILE *f = fopen(tio_path("ref.jpg"), "wb");
    int wrote = f && fwrite(ref, 1, ref_len, f) == ref_len;
    if (f) fclose(f);
    int rc_a, rc_ref;
    ip_image da = decode(a_path, &rc_a), dref = decode(tio_path("ref.jpg"), &rc_ref);
    int same = wrote && !rc_a && !rc_ref && da.shape.width == w && da.shape.height == h && dref.shape.width == w;
    for (int y = 0; same && y < h; y++)
        same = !memcmp((char *)da.data + (size_t)y * (size_t)da.stride, (char *)dref.data + (size_t)y * (size_t)dref.stride,
                       (size_t)w * (size_t)c);
    CHECK(same, "%dx%d c%d q%d: banded file decodes differently from one stream", w, h, c, quality);
    printf("%6dx%-6d c%d q%d: %zu bytes banded, %zu in one stream\n", w, h, c, quality, a_len, ref_len);
    if (!rc_a) img_free(&da);
    if (!rc_ref) img_free(&dref);
    free(a);
    free(b);
    free(ref);
    tu_img_free(&k);
}

int main(void)
{
    tu_rng r;
    tu_seed(&r, 1992);
    one_shape(1031, 2100, 1, 90, &r);
    one_shape(997, 1201, 3, 95, &r);
    one_shape(641, 1700, 3, 75, &r);
    one_shape(201, 20000, 1, 85, &r);
    one_shape(65500, 200, 1, 80, &r);
    return tu_finish();
}
