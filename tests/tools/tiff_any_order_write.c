/* tiff_any_order_write OUT.tif REF.tif: one image through the streamed TIFF writer twice, OUT
 * with a stand-in batch compressor beside two threads (libdeflate's strips, each batch held 20
 * ms, as a GPU's are held while the card works), so that its strips land in the file out of
 * order as a GPU run's do; REF without it, in order. tests/e2e/stream.sh has the other readers
 * compare them. Exit 77 when no strip overtook a batch (nothing to check), 1 on a failure. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <tiffio.h>
#include "base/image.h"
#include "io/io_stream.h"
#include "io/io_tiff_strip_cpu.h"
#include "io/io_tiff_strips.h"

#define WIDTH 1021
#define HEIGHT 3001

static int held_open(const tiff_strip_batch_codec *codec, int which, const tiff_strip_format *f, uint32_t max_strips,
                     void **state, char *err, size_t errlen)
{
    (void)codec, (void)which, (void)max_strips;
    const tiff_strip_codec *cpu = tiff_strip_codec_cpu(f->compression);
    return cpu->open(cpu, f, state, err, errlen);
}

static int held_compress(void *state, tiff_strip_job *jobs, uint32_t n, char *err, size_t errlen)
{
    struct timespec held = { 0, 20000000L };
    nanosleep(&held, NULL);
    const tiff_strip_codec *cpu = tiff_strip_codec_cpu(IO_TIFF_DEFLATE);
    for (uint32_t i = 0; i < n; i++) {
        int rc = cpu->compress(state, jobs[i].index, jobs[i].rows, jobs[i].len, jobs[i].out, err, errlen);
        if (rc != IP_OK) return rc;
    }
    return IP_OK;
}

static void held_close(void *state) { tiff_strip_codec_cpu(IO_TIFF_DEFLATE)->close(state); }

static int write_image(const char *path, const ip_image *img, const tiff_strip_batch_codec *batch)
{
    io_options opt;
    io_default_options(&opt);
    opt.threads = 2;
    opt.tiff_compression = IO_TIFF_DEFLATE;
    opt.tiff_strip_batch = batch;
    io_stream_writer *w = NULL;
    char err[512] = "";
    int rc = io_stream_create(path, &img->shape, &opt, &w, err, sizeof err);
    for (int y0 = 0; rc == IP_OK && y0 < HEIGHT; y0 += 100) {
        ip_image rows = *img;
        rows.data = (char *)img->data + (size_t)y0 * img->stride;
        rows.shape.height = HEIGHT - y0 < 100 ? HEIGHT - y0 : 100;
        rc = io_stream_write(w, &rows, y0, err, sizeof err);
    }
    if (rc == IP_OK) rc = io_stream_finish(w, err, sizeof err);
    else if (w) io_stream_abort(w);
    if (rc != IP_OK) fprintf(stderr, "tiff_any_order_write: %s: %s\n", path, err);
    return rc;
}

/* Strips whose bytes lie before the strip above them. */
static long inversions(const char *path)
{
    TIFF *tif = TIFFOpen(path, "r");
    uint64_t *offsets = NULL;
    long n = -1;
    if (tif && TIFFGetField(tif, TIFFTAG_STRIPOFFSETS, &offsets) && offsets) {
        n = 0;
        for (uint32_t i = 1; i < TIFFNumberOfStrips(tif); i++) n += offsets[i] < offsets[i - 1];
    }
    if (tif) TIFFClose(tif);
    return n;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: tiff_any_order_write OUT.tif REF.tif\n");
        return 2;
    }
    ip_shape shape = { WIDTH, HEIGHT, 1, IP_U8 };
    ip_image img = { 0 };
    char err[256] = "";
    if (img_alloc(&img, &shape, UINT64_MAX, err, sizeof err) != IP_OK) {
        fprintf(stderr, "tiff_any_order_write: %s\n", err);
        return 1;
    }
    for (int y = 0; y < HEIGHT; y++)
        for (int x = 0; x < WIDTH; x++)
            ((unsigned char *)img.data)[(size_t)y * img.stride + x] = (unsigned char)((x * 7 + y * 3 + (x * y) % 11) & 0xFF);
    tiff_strip_batch_codec batch = { held_open, held_compress, held_close, 1, 40 * WIDTH * 3, 1 << 20, 3 * WIDTH,
                                     NULL };
    int rc = write_image(argv[1], &img, &batch) || write_image(argv[2], &img, NULL);
    img_free(&img);
    if (rc) return 1;
    long out_of_order = inversions(argv[1]), ref = inversions(argv[2]);
    printf("%s: %ld strips before the strip above them; %s: %ld\n", argv[1], out_of_order, argv[2], ref);
    if (out_of_order < 0 || ref != 0) return 1;
    return out_of_order > 0 ? 0 : 77;
}
