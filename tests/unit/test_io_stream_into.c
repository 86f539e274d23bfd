/* A TIFF's bands decoded into the caller's rows (io_stream_next_into): bands read that way and
 * by io_stream_next, in turn, give libtiff's pixels of files libtiff wrote (strips and 16x16
 * tiles, 1x1 to prime sizes, 8 and 16 bits, 1 to 4 channels); rows too few or with another
 * stride are refused with the band's size; the PNG reader declines. */
#include "test_io_helpers.h"
#include "io/io_stream.h"
#include "tiff_testutil.h"
#include <tiffio.h>

static char err[512];

/* path in bands of about band_bytes, every other one into rows of the caller's: the rows of img,
 * each band of the into-kind landing in the caller's buffer. */
static int stream_alternating(const char *path, const ip_image *img, uint64_t band_bytes)
{
    io_options opt;
    io_default_options(&opt);
    opt.threads = 2;
    io_stream_reader *r;
    ip_shape shape;
    int rc = io_stream_open(path, &opt, band_bytes, &r, &shape, err, sizeof err);
    if (rc != IP_OK) return rc;
    size_t row = img_row_bytes(&shape);
    int block_rows = io_stream_block_rows(r), y_next = 0, wrong = 0;
    unsigned char *into = malloc((size_t)block_rows * row);
    rc = into && io_stream_reads_into(r) ? IP_OK : IP_ENOMEM;
    for (int band = 0; rc == IP_OK; band++) {
        ip_image rows = { into, (ptrdiff_t)row, shape, 0 };
        int y0 = -1;
        rows.shape.height = block_rows;
        rc = band % 2 ? io_stream_next_into(r, &rows, &y0, err, sizeof err)
                      : io_stream_next(r, &rows, &y0, err, sizeof err);
        if (rc != IP_OK || rows.shape.height == 0) break;
        wrong += y0 != y_next || (band % 2 && rows.data != into) || rows.shape.height > block_rows;
        for (int y = 0; y < rows.shape.height && y0 + y < img->shape.height; y++)
            wrong += memcmp((char *)rows.data + (size_t)y * rows.stride, (char *)img->data + (size_t)(y0 + y) * row,
                            row) != 0;
        y_next = y0 + rows.shape.height;
    }
    io_stream_close(r);
    free(into);
    if (rc == IP_OK && (wrong || y_next != img->shape.height)) {
        snprintf(err, sizeof err, "%d bands or rows wrong, %d of %d rows read", wrong, y_next, img->shape.height);
        rc = IP_EFORMAT;
    }
    return rc;
}

static void test_same_rows(void)
{
    static const struct {
        int w, h, c;
        ip_dtype t;
        uint32_t rps;   /* 0: tiles of 16x16 */
        uint64_t band_bytes;
    } cases[] = {
        { 1, 1, 1, IP_U8, 1, 1 },         { 1, 97, 1, IP_U8, 5, 64 },          { 1021, 37, 3, IP_U8, 3, 1 },
        { 509, 300, 4, IP_U16, 7, 100000 }, { 997, 61, 2, IP_U8, 61, 1 },     { 1, 1, 1, IP_U8, 0, 1 },
        { 101, 67, 3, IP_U8, 0, 1 },      { 257, 33, 1, IP_U16, 0, 40000 },    { 31, 400, 1, IP_U8, 0, 1 << 20 },
    };
    tu_rng rng;
    tu_seed(&rng, 4177);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ip_image img;
        ip_shape shape = { cases[i].w, cases[i].h, cases[i].c, cases[i].t };
        if (ttu_image(&img, &shape, &rng) != 0) continue;
        const char *path = tio_path("into.tif");
        int wrote = ttu_write_libtiff(path, &img, cases[i].rps, COMPRESSION_ADOBE_DEFLATE, PREDICTOR_HORIZONTAL,
                                      cases[i].rps == 0) == 0;
        int rc = wrote ? stream_alternating(path, &img, cases[i].band_bytes) : IP_EIO;
        CHECK(rc == IP_OK, "%dx%dx%d, %u rows a strip, bands of %llu bytes: %s", cases[i].w, cases[i].h, cases[i].c,
              cases[i].rps, (unsigned long long)cases[i].band_bytes, wrote ? err : "not written");
        img_free(&img);
    }
}

/* Rows one short of a band, or padded, are refused and name the band; the PNG reader declines. */
static void test_refused(void)
{
    tu_rng rng;
    tu_seed(&rng, 11);
    ip_image img;
    ip_shape shape = { 29, 40, 1, IP_U8 };
    CHECK(ttu_image(&img, &shape, &rng) == 0, "image");
    const char *path = tio_path("refused.tif");
    CHECK(ttu_write_libtiff(path, &img, 8, COMPRESSION_ADOBE_DEFLATE, PREDICTOR_NONE, 0) == 0, "write");
    io_options opt;
    io_default_options(&opt);
    io_stream_reader *r;
    ip_shape got;
    CHECK(io_stream_open(path, &opt, 29 * 16, &r, &got, err, sizeof err) == IP_OK, "open: %s", err);
    unsigned char buf[64 * 40];
    ip_image short_rows = { buf, 29, got, 0 }, padded = { buf, 30, got, 0 };
    short_rows.shape.height = io_stream_block_rows(r) - 1;
    padded.shape.height = io_stream_block_rows(r);
    int y0;
    int rc_short = io_stream_next_into(r, &short_rows, &y0, err, sizeof err);
    CHECK(rc_short == IP_EINVAL && strstr(err, "a band of 16 rows of 29 bytes"), "too few rows: %d %s", rc_short, err);
    int rc_padded = io_stream_next_into(r, &padded, &y0, err, sizeof err);
    CHECK(rc_padded == IP_EINVAL && strstr(err, "does not fit"), "another stride: %d %s", rc_padded, err);
    ip_image rows;
    CHECK(io_stream_next(r, &rows, &y0, err, sizeof err) == IP_OK && y0 == 0 && rows.shape.height == 16 &&
              memcmp(rows.data, img.data, 29 * 16) == 0,
          "the first band after the refusals: y0 %d, %d rows", y0, rows.shape.height);
    io_stream_close(r);
    CHECK(io_write(tio_path("refused.png"), &img, &opt, err, sizeof err) == IP_OK, "write PNG: %s", err);
    CHECK(io_stream_open(tio_path("refused.png"), &opt, 0, &r, &got, err, sizeof err) == IP_OK, "open PNG: %s", err);
    ip_image png_rows = { buf, 29, got, 0 };
    png_rows.shape.height = 40;
    CHECK(!io_stream_reads_into(r) && io_stream_next_into(r, &png_rows, &y0, err, sizeof err) == IP_EUNSUPPORTED,
          "PNG decoded into the caller's rows: %s", err);
    io_stream_close(r);
    img_free(&img);
}

int main(void)
{
    test_same_rows();
    test_refused();
    return tu_finish();
}
