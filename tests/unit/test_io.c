/* io: format detection, round trips through every writer, shape refusals, atomic writes. */
#include "test_io_helpers.h"
#include <math.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

static char err[512];

static void test_detect(void)
{
    const unsigned char png[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
    const unsigned char jpg[4] = { 0xff, 0xd8, 0xff, 0xe0 };
    const unsigned char tif_le[4] = { 'I', 'I', 42, 0 }, tif_be[4] = { 'M', 'M', 0, 42 };
    const unsigned char big_le[4] = { 'I', 'I', 43, 0 }, bad_tif[4] = { 'I', 'I', 0, 42 };
    CHECK(io_detect(png, 8) == IO_FMT_PNG, "png");
    CHECK(io_detect(png, 7) == IO_FMT_UNKNOWN, "short png signature");
    CHECK(io_detect(jpg, 4) == IO_FMT_JPEG, "jpeg");
    CHECK(io_detect(jpg, 2) == IO_FMT_UNKNOWN, "short jpeg");
    CHECK(io_detect(tif_le, 4) == IO_FMT_TIFF && io_detect(tif_be, 4) == IO_FMT_TIFF, "tiff");
    CHECK(io_detect(big_le, 4) == IO_FMT_TIFF, "bigtiff");
    CHECK(io_detect(bad_tif, 4) == IO_FMT_UNKNOWN, "mixed-order tiff magic");
    CHECK(io_detect((const unsigned char *)"GIF89a", 6) == IO_FMT_UNKNOWN, "gif");
    CHECK(io_detect(png, 0) == IO_FMT_UNKNOWN, "empty");

    CHECK(io_format_from_ext("a/b.TIF") == IO_FMT_TIFF, "TIF");
    CHECK(io_format_from_ext("x.tiff") == IO_FMT_TIFF, "tiff");
    CHECK(io_format_from_ext("x.Png") == IO_FMT_PNG, "Png");
    CHECK(io_format_from_ext("x.JpEg") == IO_FMT_JPEG && io_format_from_ext("x.jpg") == IO_FMT_JPEG, "jpeg");
    CHECK(io_format_from_ext("dir.png/file") == IO_FMT_UNKNOWN, "extension of a folder");
    CHECK(io_format_from_ext("x.bmp") == IO_FMT_UNKNOWN && io_format_from_ext("png") == IO_FMT_UNKNOWN, "other");
    CHECK(!strcmp(io_format_name(IO_FMT_PNG), "PNG") && !strcmp(io_format_name(IO_FMT_TIFF), "TIFF") &&
          !strcmp(io_format_name(IO_FMT_JPEG), "JPEG"), "names");

    /* Detection reads bytes, not the name: PNG bytes under a .jpg name. */
    const char *path = tio_path("really_png.jpg");
    CHECK(tio_spit(path, png, 8) == 0, "write");
    CHECK(io_detect_file(path) == IO_FMT_PNG, "detect by content");
    CHECK(io_detect_file(tio_path("missing.png")) == IO_FMT_UNKNOWN, "missing file");

    io_options opt;
    io_default_options(&opt);
    CHECK(opt.png_level == 6 && opt.jpeg_quality == 90 && opt.max_pixels == IMG_DEFAULT_MAX_PIXELS, "defaults");
}

/* Writes a random image with padded rows, reads it back, compares. */
static void round_trip(const char *ext, int w, int h, int c, ipk_dtype t, uint64_t seed)
{
    tu_rng rng;
    tu_seed(&rng, seed);
    ipk_img src = tu_img_random(w, h, c, t, 4 * (1 + (int)(seed % 3)), &rng);   /* aligned padding */
    ip_image img = tio_from_ipk(&src);
    char name[64];
    snprintf(name, sizeof name, "rt_%dx%dx%d_%d.%s", w, h, c, (int)t, ext);
    const char *path = tio_path(name);
    io_options opt;
    io_default_options(&opt);
    opt.jpeg_quality = 100;
    int rc = io_write(path, &img, &opt, err, sizeof err);
    CHECK(rc == IP_OK, "write %s: %s", name, err);
    ip_image back;
    rc = io_read(path, &opt, &back, err, sizeof err);
    CHECK(rc == IP_OK, "read %s: %s", name, err);
    if (rc == IP_OK) {
        CHECK(tio_same_shape(&back, w, h, c, (ip_dtype)t), "%s: shape %dx%dx%d dtype %d", name,
              back.shape.width, back.shape.height, back.shape.channels, back.shape.dtype);
        CHECK(back.stride == (ptrdiff_t)((size_t)w * c * ip_dtype_size((ip_dtype)t)), "%s: packed", name);
        ipk_img got = tio_to_ipk(&back);
        if (io_format_from_ext(path) != IO_FMT_JPEG) {
            CHECK(tu_max_diff(&src, &got) == 0, "%s: max diff %g", name, tu_max_diff(&src, &got));
        } else {
            double sum = 0;
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++)
                    for (int k = 0; k < c; k++) sum += fabs(tu_get(&src, x, y, k) - tu_get(&got, x, y, k));
            double mean = sum / ((double)w * h * c);
            CHECK(mean < 1.5 && tu_max_diff(&src, &got) <= 12, "%s: mean abs %g max %g", name, mean,
                  tu_max_diff(&src, &got));
        }
        img_free(&back);
    }
    tu_img_free(&src);
}

static void test_round_trips(void)
{
    static const int sizes[][2] = { { 1, 1 }, { 1, 9 }, { 9, 1 }, { 13, 7 }, { 31, 17 } };
    uint64_t seed = 1;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int w = sizes[s][0], h = sizes[s][1];
        for (int c = 1; c <= 4; c++) {
            round_trip("png", w, h, c, IPK_U8, seed++);
            round_trip("png", w, h, c, IPK_U16, seed++);
            round_trip("tif", w, h, c, IPK_U8, seed++);
            round_trip("tiff", w, h, c, IPK_U16, seed++);
            round_trip("TIF", w, h, c, IPK_F32, seed++);
            if (c == 1 || c == 3) round_trip("jpg", w, h, c, IPK_U8, seed++);
        }
    }
    /* Many strips: rows of 4 KiB with a 256 KiB strip target. */
    round_trip("tif", 1021, 300, 4, IPK_U8, seed++);
    round_trip("jpeg", 257, 131, 3, IPK_U8, seed++);
    CHECK(tio_leftover_temps() == 0, "temporaries left behind");
}

static void test_file_mode(void)
{
    mode_t mask = umask(022);
    umask(mask);
    uint8_t px = 7;
    ip_image img = { &px, 1, { 1, 1, 1, IP_U8 }, 0 };
    const char *path = tio_path("mode.png");
    CHECK(io_write(path, &img, NULL, err, sizeof err) == IP_OK, "write: %s", err);
    struct stat st;
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == (0666 & ~mask), "mode %o", (unsigned)(st.st_mode & 0777));
}

static int refused(io_format fmt, int w, int h, int c, ip_dtype t, const char *needle)
{
    ip_shape s = { w, h, c, t };
    err[0] = 0;
    int rc = io_check_writable(fmt, &s, err, sizeof err);
    return rc != IP_OK && strstr(err, needle) != NULL;
}

static void test_writable(void)
{
    for (int c = 1; c <= 4; c++) {
        ip_shape u8 = { 5, 5, c, IP_U8 }, u16 = { 5, 5, c, IP_U16 }, f32 = { 5, 5, c, IP_F32 };
        CHECK(io_check_writable(IO_FMT_TIFF, &u8, err, sizeof err) == IP_OK &&
              io_check_writable(IO_FMT_TIFF, &u16, err, sizeof err) == IP_OK &&
              io_check_writable(IO_FMT_TIFF, &f32, err, sizeof err) == IP_OK, "tiff %d channels", c);
        CHECK(io_check_writable(IO_FMT_PNG, &u8, err, sizeof err) == IP_OK &&
              io_check_writable(IO_FMT_PNG, &u16, err, sizeof err) == IP_OK, "png %d channels", c);
        CHECK(refused(IO_FMT_PNG, 5, 5, c, IP_F32, "PNG cannot hold 32-bit float pixels; write a .tif"), "%s", err);
        CHECK(refused(IO_FMT_JPEG, 5, 5, c, IP_U16, "JPEG holds 8-bit only"), "%s", err);
        CHECK(refused(IO_FMT_JPEG, 5, 5, c, IP_F32, "write .png or .tif"), "%s", err);
    }
    CHECK(refused(IO_FMT_PNG, 5, 5, 1, IP_F32, "entropy output=u8"), "%s", err);
    CHECK(refused(IO_FMT_JPEG, 5, 5, 4, IP_U8, "JPEG cannot hold an alpha channel (4 channels); write .png or .tif, or add grayscale"), "%s", err);
    CHECK(refused(IO_FMT_JPEG, 5, 5, 2, IP_U8, "alpha channel (2 channels)"), "%s", err);
    CHECK(refused(IO_FMT_JPEG, 70000, 5, 3, IP_U8, "65500"), "%s", err);
    ip_shape ok = { 65500, 1, 1, IP_U8 };
    CHECK(io_check_writable(IO_FMT_JPEG, &ok, err, sizeof err) == IP_OK, "65500 wide jpeg: %s", err);
    CHECK(refused(IO_FMT_UNKNOWN, 5, 5, 3, IP_U8, ".png"), "%s", err);
    CHECK(refused(IO_FMT_TIFF, 5, 5, 5, IP_U8, "5 channels"), "%s", err);
    CHECK(refused(IO_FMT_TIFF, 0, 5, 1, IP_U8, "invalid"), "%s", err);

    /* io_write refuses the same shapes and leaves nothing behind. */
    float px[3] = { 0.5f, 0.25f, 1 };
    ip_image img = { px, sizeof px, { 1, 1, 3, IP_F32 }, 0 };
    const char *path = tio_path("float.png");
    CHECK(io_write(path, &img, NULL, err, sizeof err) == IP_EFORMAT, "float png written");
    CHECK(strstr(err, "PNG cannot hold") && !strstr(err, path), "message %s", err);
    CHECK(!tio_exists(path), "float.png exists");
    path = tio_path("float.bmp");
    CHECK(io_write(path, &img, NULL, err, sizeof err) != IP_OK && !tio_exists(path), "bmp written");
    io_options opt;
    io_default_options(&opt);
    opt.png_level = 10;
    uint8_t b = 1;
    ip_image one = { &b, 1, { 1, 1, 1, IP_U8 }, 0 };
    CHECK(io_write(tio_path("level.png"), &one, &opt, err, sizeof err) == IP_EINVAL, "png level 10");
    io_default_options(&opt);
    opt.jpeg_quality = 0;
    CHECK(io_write(tio_path("q0.jpg"), &one, &opt, err, sizeof err) == IP_EINVAL, "jpeg quality 0");
    one.stride = 0;
    CHECK(io_write(tio_path("stride.png"), &one, NULL, err, sizeof err) == IP_EINVAL, "short stride");
    CHECK(io_write(tu_tmpdir(), &one, NULL, err, sizeof err) != IP_OK, "writing to a folder's name");
    CHECK(tio_leftover_temps() == 0, "temporaries left behind");
}

static void test_write_failures(void)
{
    tu_rng rng;
    tu_seed(&rng, 77);
    ipk_img src = tu_img_random(64, 64, 3, IPK_U8, 0, &rng);
    ip_image img = tio_from_ipk(&src);
    char path[600];
    snprintf(path, sizeof path, "%s/no/such/folder/out.png", tu_tmpdir());
    CHECK(io_write(path, &img, NULL, err, sizeof err) == IP_EIO, "missing folder: %s", err);
    CHECK(!tio_exists(path) && !strstr(err, "no/such"), "message repeats the path or file exists: %s", err);

    /* A file size limit makes the encoder's writes fail part way: nothing may remain. */
    static const char *names[] = { "big.png", "big.tif", "big.jpg" };
    struct rlimit old;
    getrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, SIG_IGN);
    for (int i = 0; i < 3; i++) {
        struct rlimit small = { 2000, old.rlim_max };
        setrlimit(RLIMIT_FSIZE, &small);
        int rc = io_write(tio_path(names[i]), &img, NULL, err, sizeof err);
        setrlimit(RLIMIT_FSIZE, &old);
        CHECK(rc == IP_EIO, "%s over the size limit gave %d: %s", names[i], rc, err);
        CHECK(!tio_exists(tio_path(names[i])), "%s left behind", names[i]);
    }
    CHECK(tio_leftover_temps() == 0, "temporaries left behind");

    /* A failed write keeps the previous file; a good one replaces it. */
    const char *keep = tio_path("keep.tif");
    CHECK(io_write(keep, &img, NULL, err, sizeof err) == IP_OK, "%s", err);
    ipk_img other = tu_img_random(5, 3, 1, IPK_U16, 0, &rng);
    ip_image second = tio_from_ipk(&other);
    CHECK(io_write(keep, &second, NULL, err, sizeof err) == IP_OK, "%s", err);
    ip_image back;
    CHECK(io_read(keep, NULL, &back, err, sizeof err) == IP_OK, "%s", err);
    ipk_img got = tio_to_ipk(&back);
    CHECK(tio_same_shape(&back, 5, 3, 1, IP_U16) && tu_max_diff(&other, &got) == 0, "replaced content");
    img_free(&back);
    tu_img_free(&other);
    tu_img_free(&src);
}

static void test_read_errors(void)
{
    ip_image out;
    CHECK(io_read(tio_path("absent.png"), NULL, &out, err, sizeof err) == IP_EIO && out.data == NULL, "absent");
    CHECK(strstr(err, "cannot open") && !strstr(err, "absent.png"), "message: %s", err);
    CHECK(io_read(tu_tmpdir(), NULL, &out, err, sizeof err) == IP_EIO, "folder: %s", err);
    CHECK(tio_spit(tio_path("empty.png"), "", 0) == 0, "write");
    CHECK(io_read(tio_path("empty.png"), NULL, &out, err, sizeof err) == IP_EFORMAT, "empty: %s", err);
    CHECK(tio_spit(tio_path("text.png"), "hello, world\n", 13) == 0, "write");
    CHECK(io_read(tio_path("text.png"), NULL, &out, err, sizeof err) == IP_EFORMAT, "text");
    CHECK(!strcmp(err, "not a PNG, JPEG or TIFF file"), "message: %s", err);
}

static void test_pixel_limit(void)
{
    tu_rng rng;
    tu_seed(&rng, 5);
    ipk_img src = tu_img_random(40, 30, 1, IPK_U8, 0, &rng);
    ip_image img = tio_from_ipk(&src);
    io_options opt;
    io_default_options(&opt);
    opt.max_pixels = 40 * 30 - 1;
    static const char *names[] = { "limit.png", "limit.tif", "limit.jpg" };
    for (int i = 0; i < 3; i++) {
        ip_image out;
        CHECK(io_write(tio_path(names[i]), &img, NULL, err, sizeof err) == IP_OK, "%s", err);
        int rc = io_read(tio_path(names[i]), &opt, &out, err, sizeof err);
        CHECK(rc == IP_ELIMIT && out.data == NULL, "%s over the limit gave %d: %s", names[i], rc, err);
        opt.max_pixels++;
        rc = io_read(tio_path(names[i]), &opt, &out, err, sizeof err);
        CHECK(rc == IP_OK, "%s at the limit: %s", names[i], err);
        if (!rc) img_free(&out);
        opt.max_pixels--;
    }
    tu_img_free(&src);
}

int main(void)
{
    test_detect();
    test_round_trips();
    test_file_mode();
    test_writable();
    test_write_failures();
    test_read_errors();
    test_pixel_limit();
    return tu_finish();
}
