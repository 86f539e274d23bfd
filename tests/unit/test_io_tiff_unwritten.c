/* A deflate strip whose stream runs on past the strip's end without a flush: libtiff with
 * libdeflate stops before the back-reference that crosses the end and still succeeds, leaving the
 * strip's last bytes unwritten. Both CPU readers (whole image, at 1 and 2 threads, into memory
 * filled with two kinds of garbage; streamed, a strip a band) give the pattern up to where libtiff
 * stopped and zeros after, whatever the memory held. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <tiffio.h>
#include "io/io.h"
#include "io/io_stream.h"
#include "testutil.h"
#include "tiff_testutil.h"

/* ttu_pixel repeats every 1280 rows, 32000 bytes at 25 wide: within deflate's window, so the
 * rows past 1280 are back-references and one crosses the end of a strip of 1300 rows. */
enum { WIDTH = 25, ROWS_PER_STRIP = 1300, HEIGHT = 2590 };   /* strips of 1300 and 1290 rows */

static uint32_t strip_rows(uint32_t strip)
{
    uint32_t y0 = strip * ROWS_PER_STRIP;
    return HEIGHT - y0 < ROWS_PER_STRIP ? HEIGHT - y0 : ROWS_PER_STRIP;
}

/* How many bytes of the strip libtiff leaves unwritten: those two reads, into memory filled
 * differently, disagree on (a tail: libdeflate writes nothing past where it stops). */
static size_t libtiff_unwritten(const char *path, uint32_t strip)
{
    TIFF *tif = TIFFOpen(path, "r");
    size_t n = (size_t)WIDTH * strip_rows(strip), differ = 0;
    uint8_t *a = malloc(n), *b = malloc(n);
    int ok = tif && a && b;
    if (ok) {
        memset(a, 0xa5, n);
        memset(b, 0x5a, n);
    }
    ok = ok && TIFFReadEncodedStrip(tif, strip, a, (tmsize_t)n) == (tmsize_t)n &&
         TIFFReadEncodedStrip(tif, strip, b, (tmsize_t)n) == (tmsize_t)n;
    for (size_t i = 0; ok && i < n; i++) differ += a[i] != b[i];
    CHECK(ok, "libtiff does not read strip %u", strip);
    if (tif) TIFFClose(tif);
    free(a);
    free(b);
    return differ;
}

/* The pattern, with the last `unwritten` bytes of the strip zero. */
static uint8_t expected(uint32_t x, uint32_t y, uint32_t strip, size_t unwritten)
{
    size_t end = (size_t)WIDTH * (strip * ROWS_PER_STRIP + strip_rows(strip)), at = (size_t)y * WIDTH + x;
    return at < end && at + unwritten >= end ? 0 : ttu_pixel(x, y);
}

static long wrong_pixels(const ip_image *img, uint32_t y0, uint32_t rows, uint32_t strip, size_t unwritten)
{
    long wrong = 0;
    for (uint32_t y = 0; y < rows; y++)
        for (uint32_t x = 0; x < WIDTH; x++)
            wrong += ((const uint8_t *)img->data)[(size_t)y * (size_t)img->stride + x] != expected(x, y0 + y, strip,
                                                                                                 unwritten);
    return wrong;
}

/* The image's memory, filled with the byte *user points to before the reader sees it. */
static int garbage_alloc(void *user, size_t bytes, void **ptr, char *err, size_t errlen)
{
    *ptr = malloc(bytes ? bytes : 1);
    if (!*ptr) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    memset(*ptr, *(const uint8_t *)user, bytes);
    return IP_OK;
}

static void garbage_release(void *user, void *ptr)
{
    (void)user;
    free(ptr);
}

static void whole_image(const char *path, uint32_t strip, size_t unwritten, uint8_t fill, int threads)
{
    io_options opt;
    io_default_options(&opt);
    opt.threads = threads;
    opt.memory = (io_pixel_memory){ garbage_alloc, garbage_release, &fill };
    char err[256] = "";
    ip_image img = { 0 };
    int rc = io_read(path, &opt, &img, err, sizeof err);
    CHECK(rc == IP_OK, "strip %u, io_read: %s", strip, err);
    long wrong = rc == IP_OK ? wrong_pixels(&img, 0, HEIGHT, strip, unwritten) : 0;
    CHECK(wrong == 0, "strip %u, memory of 0x%02x, %d threads: %ld pixels not the pattern's or zero", strip, fill,
          threads, wrong);
    io_image_free(&opt, &img);
}

/* A band a strip: the band's memory holds the strip before's pixels when the odd one is read. */
static void streamed(const char *path, uint32_t strip, size_t unwritten)
{
    io_options opt;
    io_default_options(&opt);
    char err[256] = "";
    io_stream_reader *r = NULL;
    ip_shape shape;
    int rc = io_stream_open(path, &opt, 1, &r, &shape, err, sizeof err);
    CHECK(rc == IP_OK, "strip %u, io_stream_open: %s", strip, err);
    long wrong = 0;
    ip_image rows = { 0 };
    int y0 = 0;
    while (rc == IP_OK && (rc = io_stream_next(r, &rows, &y0, err, sizeof err)) == IP_OK && rows.shape.height > 0)
        wrong += wrong_pixels(&rows, (uint32_t)y0, (uint32_t)rows.shape.height, strip, unwritten);
    CHECK(rc == IP_OK && wrong == 0, "strip %u streamed: %s; %ld pixels not the pattern's or zero", strip, err, wrong);
    if (r) io_stream_close(r);
}

static void crossing(uint32_t strip, int data_rows)
{
    char path[512];
    snprintf(path, sizeof path, "%s/unwritten_%u.tif", tu_tmpdir(), strip);
    ttu_strips s = { WIDTH, HEIGHT, ROWS_PER_STRIP, strip, data_rows };
    CHECK(ttu_write_crossing(path, &s) == 0, "strip %u: cannot write it", strip);
    size_t unwritten = libtiff_unwritten(path, strip);
    /* libtiff on zlib alone fills the strip (zlib writes the start of a crossing match). */
    printf("strip %u: libtiff leaves %zu of its %u bytes unwritten%s\n", strip, unwritten, WIDTH * strip_rows(strip),
           unwritten ? "" : " (no libdeflate?): only the pattern is checked");
    for (int threads = 1; threads <= 2; threads++) {
        whole_image(path, strip, unwritten, 0xa5, threads);
        whole_image(path, strip, unwritten, 0x5a, threads);
    }
    streamed(path, strip, unwritten);
}

int main(void)
{
    crossing(0, ROWS_PER_STRIP + 10);
    crossing(1, ROWS_PER_STRIP);   /* the last strip, of 1290 rows */
    return tu_finish();
}
