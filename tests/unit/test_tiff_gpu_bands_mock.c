/* The GPU's band decoder for streamed TIFFs (tiff_gpu_bands.h) on a mock device whose memory is
 * host memory: nvCOMP's inflate replaced by zlib's, the predictor and adler32 kernels by host
 * loops. Files libtiff wrote (deflate with and without the predictor, u8 and u16, 1 to 4
 * channels, 1x1 to prime sizes, strips and 16x16 tiles, bands of one block row to many) stream
 * back as their pixels with every band taken by the decoder, each read on all threads straight
 * into its staging, with one group or two in flight; a band whose inflate fails, comes back with
 * another adler32 or another size is decoded by libtiff, pixels still right, in groups of bands
 * inflated together or one at a time; a damaged strip, or one past the file's end, fails with
 * the CPU reader's own message; LZW files and bands over its device memory are not taken; and
 * without IMGPIPE_TIFF_GPU_READ_BANDS=1 there is no decoder. A build without CUDA has none either. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include "imgpipe/plugin.h"
#include "testutil.h"

#ifdef IMGPIPE_HAVE_CUDA
#include <tiffio.h>
#include <zlib.h>
#include "base/image.h"
#include "codec_mock.h"
#include "gpu/gpu.h"
#include "gpu/nvcomp.h"
#include "io/io_stream.h"
#include "io/tiff_gpu_bands.h"
#include "ipk_codec.h"
#include "tiff_testutil.h"

/* How the mock nvCOMP's inflate goes wrong from the nth call on (fault_from: 0 never). */
static enum { GOOD, FAILS, FLIPS_A_BYTE, SHORT } fault;
static int calls, fault_from;

/* The mock device: tests/gpu_mock_basics.c, gpu_mock_plain.c and codec_mock_basics.c. */
size_t nvcomp_max_chunk(const nvcomp_lib *lib)
{
    (void)lib;
    return (size_t)64 << 20;
}

/* The mock runs each call as it is made, as the card runs a stream in order: start inflates (the
 * checks queued behind it then see the rows) and goes wrong as it was told to; finish gives the
 * sizes and the verdict back. Batches may be in flight together: each is found by its chunks. */
typedef struct {
    const nvcomp_chunk *chunks;
    int rc, bad;
    size_t *sizes;
    int faulty;
} mock_batch_run;
static mock_batch_run started[4];
static int in_flight, most_in_flight;

static int mock_inflate(int n, const nvcomp_chunk *chunks, size_t *sizes, int *bad)
{
    for (int i = 0; i < n; i++) {
        nvcomp_chunk c = chunks[i];
        if (codec_mock_inflate(&c) != Z_STREAM_END) {
            *bad = i;
            return IP_EFORMAT;
        }
        sizes[i] = c.dst_bytes;
    }
    return IP_OK;
}

int nvcomp_decompress_start(nvcomp_batch *b, nvcomp_codec codec, int n, const nvcomp_chunk *chunks, char *err,
                            size_t errlen)
{
    (void)b;
    if (codec != NVCOMP_DEFLATE) {
        snprintf(err, errlen, "mock: deflate only");
        return IP_EUNSUPPORTED;
    }
    int faulty = fault_from && ++calls >= fault_from ? (int)fault : GOOD;
    for (int i = 0; i < 4; i++) {
        if (started[i].chunks) continue;
        size_t *sizes = calloc((size_t)n, sizeof *sizes);
        if (!sizes) return IP_ENOMEM;
        started[i] = (mock_batch_run){ chunks, IP_OK, -1, sizes, faulty };
        if (faulty != FAILS) started[i].rc = mock_inflate(n, chunks, sizes, &started[i].bad);
        if (started[i].rc == IP_OK && faulty == FLIPS_A_BYTE)
            ((unsigned char *)chunks[n - 1].dst)[sizes[n - 1] / 2] ^= 0x10;
        if (++in_flight > most_in_flight) most_in_flight = in_flight;
        return IP_OK;
    }
    snprintf(err, errlen, "mock: more than 4 batches in flight");
    return IP_EINVAL;
}

int nvcomp_decompress_finish(nvcomp_batch *b, nvcomp_codec codec, int n, nvcomp_chunk *chunks, int *bad_chunk,
                             char *err, size_t errlen)
{
    (void)b, (void)codec;
    *bad_chunk = -1;
    for (int i = 0; i < 4; i++) {
        if (started[i].chunks != chunks) continue;
        int rc = started[i].rc, faulty = started[i].faulty;
        for (int c = 0; c < n; c++) chunks[c].dst_bytes = started[i].sizes[c];
        *bad_chunk = started[i].bad;
        free(started[i].sizes);
        started[i].chunks = NULL;
        in_flight--;
        if (faulty == FAILS) snprintf(err, errlen, "mock: inflate failed");
        else if (rc) snprintf(err, errlen, "chunk %d is not valid deflate data (mock)", *bad_chunk);
        if (faulty == FAILS) return IP_EFORMAT;
        if (!rc && faulty == SHORT) chunks[0].dst_bytes--;
        return rc;
    }
    snprintf(err, errlen, "mock: finish without start");
    return IP_EINVAL;
}

int ipk_tiff_predictor_undo(void *rows, size_t pitch, int width, int height, int channels, int sample_bytes,
                            void *stream)
{
    (void)stream;
    for (int y = 0; y < height; y++) {
        uint8_t *row = (uint8_t *)rows + (size_t)y * pitch;
        for (size_t i = (size_t)channels; i < (size_t)width * channels; i++) {
            if (sample_bytes == 1) {
                row[i] = (uint8_t)(row[i] + row[i - (size_t)channels]);
                continue;
            }
            uint16_t v, l;
            memcpy(&v, row + 2 * i, 2);
            memcpy(&l, row + 2 * (i - (size_t)channels), 2);
            v = (uint16_t)(v + l);
            memcpy(row + 2 * i, &v, 2);
        }
    }
    return 0;
}

int ipk_tiff_tiles_to_image(const void *tiles, int tile_w, int tile_h, size_t pixel_bytes, void *dst,
                            size_t dst_pitch, int width, int height, void *stream)
{
    (void)stream;
    int across = (width + tile_w - 1) / tile_w;
    for (int y = 0; y < height; y++)
        for (int tx = 0; tx < across; tx++) {
            const uint8_t *tile = (const uint8_t *)tiles + ((size_t)(y / tile_h) * across + tx) * tile_w * tile_h *
                                                               pixel_bytes;
            int cols = width - tx * tile_w < tile_w ? width - tx * tile_w : tile_w;
            memcpy((uint8_t *)dst + (size_t)y * dst_pitch + (size_t)tx * tile_w * pixel_bytes,
                   tile + (size_t)(y % tile_h) * tile_w * pixel_bytes, (size_t)cols * pixel_bytes);
        }
    return 0;
}

/* path streamed in bands of about band_bytes, with the decoder when g: IP_OK and every row equal
 * to img's, or the code and err; *st the decoder's counts; *set what setting it returned. Every
 * other band is decoded into rows of the caller's (io_stream_next_into), which must hold it. */
static int stream_back(const char *path, const ip_image *img, uint64_t band_bytes, tiff_gpu_bands *g,
                       tiff_band_decode_stat *st, int *set, char *err, size_t errlen)
{
    io_options opt;
    io_default_options(&opt);
    opt.threads = 2;
    io_stream_reader *r = NULL;
    ip_shape shape;
    memset(st, 0, sizeof *st);
    *set = IP_OK;
    int rc = io_stream_open(path, &opt, band_bytes, &r, &shape, err, errlen);
    char why[256] = "";
    if (rc == IP_OK && g) *set = io_stream_set_band_decoder(r, tiff_gpu_bands_decoder(g), why, sizeof why);
    size_t row = img_row_bytes(&img->shape);
    int block_rows = rc == IP_OK ? io_stream_block_rows(r) : 1;
    unsigned char *into = malloc((size_t)block_rows * row);
    if (!into && rc == IP_OK) rc = IP_ENOMEM;
    int same = 1, y_next = 0;
    for (int band = 0;; band++) {
        ip_image rows = { into, (ptrdiff_t)row, shape, 0 };
        int y0 = 0;
        rows.shape.height = block_rows;
        if (rc == IP_OK && band % 2) rc = io_stream_next_into(r, &rows, &y0, err, errlen);
        else if (rc == IP_OK) rc = io_stream_next(r, &rows, &y0, err, errlen);
        if (rc != IP_OK || rows.shape.height == 0) break;
        same = same && y0 == y_next && (band % 2 == 0 || rows.data == into);
        for (int y = 0; same && y < rows.shape.height; y++)
            same = memcmp((char *)rows.data + (size_t)y * rows.stride, (char *)img->data + (size_t)(y0 + y) * row,
                          row) == 0;
        y_next = y0 + rows.shape.height;
    }
    if (r) io_stream_band_decode_stat(r, st);
    io_stream_close(r);
    free(into);
    if (rc == IP_OK && (!same || y_next != img->shape.height)) {
        snprintf(err, errlen, "rows differ (%d of %d read)", y_next, img->shape.height);
        rc = IP_EFORMAT;
    }
    return rc;
}

static int image(ip_image *img, int w, int h, int c, ip_dtype t, tu_rng *r)
{
    ip_shape shape = { w, h, c, t };
    return ttu_image(img, &shape, r);
}

static tiff_gpu_bands *bands(void)
{
    tiff_gpu_bands *g = NULL;
    char why[256] = "";
    setenv("IMGPIPE_TIFF_GPU_READ_BANDS", "1", 1);
    CHECK(tiff_gpu_bands_create(&g, 0, 0, why, sizeof why) == IP_OK, "create: %s", why);
    unsetenv("IMGPIPE_TIFF_GPU_READ_BANDS");
    return g;
}

static void good_files(tiff_gpu_bands *g, tu_rng *r)
{
    static const struct {
        int w, h, c;
        ip_dtype t;
        uint32_t rps;   /* 0: tiles of 16x16 */
        uint16_t predictor;
        uint64_t band_bytes;
    } cases[] = {
        { 1, 1, 1, IP_U8, 1, PREDICTOR_NONE, 1 },           { 1, 97, 1, IP_U8, 5, PREDICTOR_HORIZONTAL, 64 },
        { 1021, 37, 3, IP_U8, 3, PREDICTOR_HORIZONTAL, 1 }, { 509, 300, 4, IP_U16, 7, PREDICTOR_HORIZONTAL, 100000 },
        { 509, 300, 2, IP_U16, 16, PREDICTOR_NONE, 1 << 20 }, { 997, 61, 1, IP_U8, 61, PREDICTOR_HORIZONTAL, 1 },
        { 4099, 3, 4, IP_U8, 1, PREDICTOR_HORIZONTAL, 1 << 20 }, { 1, 1, 1, IP_U8, 0, PREDICTOR_NONE, 1 },
        { 101, 67, 3, IP_U8, 0, PREDICTOR_HORIZONTAL, 1 },   { 257, 33, 2, IP_U16, 0, PREDICTOR_HORIZONTAL, 40000 },
        { 31, 400, 1, IP_U8, 0, PREDICTOR_NONE, 1 << 20 },
    };
    char path[512];
    snprintf(path, sizeof path, "%s/bands.tif", tu_tmpdir());
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ip_image img;
        if (image(&img, cases[i].w, cases[i].h, cases[i].c, cases[i].t, r) != 0) continue;
        char err[512] = "";
        tiff_band_decode_stat st;
        int set = 0;
        int wrote = ttu_write_libtiff(path, &img, cases[i].rps, COMPRESSION_ADOBE_DEFLATE, cases[i].predictor,
                               cases[i].rps == 0) == 0;
        int rc = wrote ? stream_back(path, &img, cases[i].band_bytes, g, &st, &set, err, sizeof err) : IP_EIO;
        CHECK(rc == IP_OK && set == IP_OK, "%dx%dx%d, %u rows a strip: rc %d, set %d: %s", cases[i].w, cases[i].h,
              cases[i].c, cases[i].rps, rc, set, err);
        uint32_t block_rows = cases[i].rps ? cases[i].rps : 16;
        uint64_t down = ((uint64_t)cases[i].h + block_rows - 1) / block_rows;
        CHECK(st.bands >= 1 && st.bands <= down && st.declined == 0, "%dx%dx%d: %llu bands, %llu declined (%s)",
              cases[i].w, cases[i].h, cases[i].c, (unsigned long long)st.bands, (unsigned long long)st.declined,
              st.first_why);
        CHECK(st.placed == st.bands, "%dx%dx%d: %llu of %llu bands read straight to the staging", cases[i].w,
              cases[i].h, cases[i].c, (unsigned long long)st.placed, (unsigned long long)st.bands);
        img_free(&img);
    }
}

/* Faults in 5 bands of 2 strips, the nth batch of nvCOMP on: a batch that fails leaves all of its
 * bands to libtiff, a block that comes back wrong only its own; the pixels right either way.
 * Groups of 1 and 2 bands (IMGPIPE_TIFF_GPU_BAND_GROUP), and of all 5 (the default). */
static void faulty_decoder(tiff_gpu_bands *g, tu_rng *r)
{
    static const struct {
        const char *group;
        int fault, from, declined;
        const char *says;
    } faults[] = {
        { "1", FAILS, 2, 4, "inflate failed" }, { "1", FLIPS_A_BYTE, 2, 4, "adler32 differs" },
        { "1", SHORT, 2, 4, "inflates to" },    { "2", FAILS, 2, 3, "inflate failed" },
        { "2", FLIPS_A_BYTE, 2, 2, "block 1 of band 1: its adler32 differs" },
        { "2", SHORT, 2, 2, "block 0 of band 0 inflates to" },
        { NULL, FAILS, 1, 5, "inflate failed" }, { NULL, FLIPS_A_BYTE, 1, 1, "block 0 of band 4: its adler32" },
        { NULL, SHORT, 1, 1, "block 0 of band 0 inflates to" },
    };
    char path[512];
    snprintf(path, sizeof path, "%s/faults.tif", tu_tmpdir());
    ip_image img;
    if (image(&img, 333, 90, 3, IP_U8, r) != 0) return;
    CHECK(ttu_write_libtiff(path, &img, 10, COMPRESSION_ADOBE_DEFLATE, PREDICTOR_HORIZONTAL, 0) == 0, "write");
    for (size_t i = 0; i < sizeof faults / sizeof *faults; i++) {
        char err[512] = "";
        tiff_band_decode_stat st;
        int set = 0;
        if (faults[i].group) setenv("IMGPIPE_TIFF_GPU_BAND_GROUP", faults[i].group, 1);
        fault = faults[i].fault, calls = 0, fault_from = faults[i].from;
        int rc = stream_back(path, &img, 333 * 3 * 20, g, &st, &set, err, sizeof err);
        fault = GOOD, fault_from = 0;
        unsetenv("IMGPIPE_TIFF_GPU_BAND_GROUP");
        CHECK(rc == IP_OK, "case %zu: %s", i, err);
        CHECK(st.bands == 5 && st.declined == (uint64_t)faults[i].declined && strstr(st.first_why, faults[i].says),
              "case %zu: %llu bands, %llu declined, first '%s'", i, (unsigned long long)st.bands,
              (unsigned long long)st.declined, st.first_why);
    }
    img_free(&img);
}

/* Groups of one band each, 5 of them: two inflate at once by default (the next queued before the
 * first's rows are taken), one with IMGPIPE_TIFF_GPU_BAND_DEPTH=1; the pixels right either way. */
static void groups_in_flight(tu_rng *r)
{
    char path[512];
    snprintf(path, sizeof path, "%s/flight.tif", tu_tmpdir());
    ip_image img;
    if (image(&img, 333, 90, 3, IP_U8, r) != 0) return;
    CHECK(ttu_write_libtiff(path, &img, 10, COMPRESSION_ADOBE_DEFLATE, PREDICTOR_HORIZONTAL, 0) == 0, "write");
    setenv("IMGPIPE_TIFF_GPU_BAND_GROUP", "1", 1);
    for (int depth = 1; depth <= 2; depth++) {
        if (depth == 1) setenv("IMGPIPE_TIFF_GPU_BAND_DEPTH", "1", 1);
        tiff_gpu_bands *g = bands();
        char err[512] = "";
        tiff_band_decode_stat st;
        int set = 0;
        most_in_flight = in_flight = 0;
        int rc = g ? stream_back(path, &img, 333 * 3 * 20, g, &st, &set, err, sizeof err) : IP_EINVAL;
        unsetenv("IMGPIPE_TIFF_GPU_BAND_DEPTH");
        CHECK(rc == IP_OK && st.bands == 5 && st.declined == 0, "depth %d: rc %d, %llu bands, %llu declined: %s %s",
              depth, rc, (unsigned long long)st.bands, (unsigned long long)st.declined, err, st.first_why);
        CHECK(most_in_flight == depth && in_flight == 0, "depth %d: %d groups inflating at once at most, %d left",
              depth, most_in_flight, in_flight);
        CHECK(strstr(st.steps, depth == 1 ? "1 batches in flight" : "2 batches in flight"), "depth %d: '%s'", depth,
              st.steps);
        tiff_gpu_bands_destroy(g);
    }
    unsetenv("IMGPIPE_TIFF_GPU_BAND_GROUP");
    img_free(&img);
}

/* A random gray image w x 40 written to name in the test's folder as deflate strips of 4 rows:
 * 0, or -1 with nothing to free. */
static int gray_strips(char *path, size_t len, const char *name, ip_image *img, int w, uint16_t predictor, tu_rng *r)
{
    snprintf(path, len, "%s/%s", tu_tmpdir(), name);
    if (image(img, w, 40, 1, IP_U8, r) != 0) return -1;
    int wrote = ttu_write_libtiff(path, img, 4, COMPRESSION_ADOBE_DEFLATE, predictor, 0) == 0;
    CHECK(wrote, "writing %s", name);
    if (!wrote) img_free(img);
    return wrote ? 0 : -1;
}

/* A strip damaged in the file: the same failure as without the decoder. */
static void damaged_strip(tiff_gpu_bands *g, tu_rng *r)
{
    char path[512];
    ip_image img;
    if (gray_strips(path, sizeof path, "damaged.tif", &img, 200, PREDICTOR_NONE, r) != 0) return;
    TIFF *tif = TIFFOpen(path, "r");
    uint64_t *offsets = NULL, *sizes = NULL;
    int ok = tif && TIFFGetField(tif, TIFFTAG_STRIPOFFSETS, &offsets) && TIFFGetField(tif, TIFFTAG_STRIPBYTECOUNTS, &sizes);
    uint64_t at = ok ? offsets[5] + 2 : 0, len = ok ? sizes[5] - 6 : 0;
    if (tif) TIFFClose(tif);
    FILE *f = ok ? fopen(path, "r+b") : NULL;
    for (uint64_t i = 0; f && i < len; i++) {
        fseek(f, (long)(at + i), SEEK_SET);
        fputc(0xFF, f);
    }
    if (f) fclose(f);
    CHECK(f != NULL, "damaging strip 5");
    char with[512] = "", without[512] = "";
    tiff_band_decode_stat st;
    int set = 0;
    int rc_with = stream_back(path, &img, 200 * 4, g, &st, &set, with, sizeof with);
    int rc_without = stream_back(path, &img, 200 * 4, NULL, &st, &set, without, sizeof without);
    CHECK(rc_with == IP_EFORMAT && rc_with == rc_without && strcmp(with, without) == 0,
          "damaged: with the decoder %d '%s', without %d '%s'", rc_with, with, rc_without, without);
    img_free(&img);
}

/* Strip 7's offset in path's offsets array (little-endian LONGs, found by its neighbours' values)
 * moved to 8 bytes before the file's end, so that its bytes run past it. 0 when done. */
static int point_past_end(const char *path, const uint64_t *offsets)
{
    FILE *f = fopen(path, "r+b");
    unsigned char *bytes = NULL;
    long len = f && fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (len > 12 && (bytes = malloc((size_t)len)) && fseek(f, 0, SEEK_SET) == 0 && fread(bytes, 1, (size_t)len, f) == (size_t)len) {
        unsigned char want[12];
        for (int i = 0; i < 12; i++) want[i] = (unsigned char)(offsets[6 + i / 4] >> (8 * (i % 4)));
        for (long at = 0; at + 12 <= len; at++) {
            if (memcmp(bytes + at, want, 12) != 0) continue;
            uint32_t past = (uint32_t)(len - 8);
            unsigned char le[4] = { (unsigned char)past, (unsigned char)(past >> 8), (unsigned char)(past >> 16),
                                    (unsigned char)(past >> 24) };
            int ok = fseek(f, at + 4, SEEK_SET) == 0 && fwrite(le, 1, 4, f) == 4;
            free(bytes);
            return fclose(f) == 0 && ok ? 0 : -1;
        }
    }
    free(bytes);
    if (f) fclose(f);
    return -1;
}

/* Strip 7 (of 10) running past the file's end: the band is left to libtiff, whose failure is the
 * one without the decoder. */
static void past_the_end(tiff_gpu_bands *g, tu_rng *r)
{
    char path[512];
    ip_image img;
    if (gray_strips(path, sizeof path, "past.tif", &img, 150, PREDICTOR_HORIZONTAL, r) != 0) return;
    TIFF *tif = TIFFOpen(path, "r");
    uint64_t *offsets = NULL, copy[10] = { 0 };
    if (tif && TIFFGetField(tif, TIFFTAG_STRIPOFFSETS, &offsets)) memcpy(copy, offsets, sizeof copy);
    if (tif) TIFFClose(tif);
    CHECK(copy[9] && point_past_end(path, copy) == 0, "moving strip 7 past the end");
    char with[512] = "", without[512] = "";
    tiff_band_decode_stat st;
    int set = 0;
    int rc_with = stream_back(path, &img, 150 * 8, g, &st, &set, with, sizeof with);
    CHECK(st.declined == 1 && strstr(st.first_why, "cannot be read raw"), "%llu declined, first '%s'",
          (unsigned long long)st.declined, st.first_why);
    int rc_without = stream_back(path, &img, 150 * 8, NULL, &st, &set, without, sizeof without);
    /* libtiff's text names the handle's last row, which depends on what the handle read before */
    CHECK(rc_with == IP_EFORMAT && rc_with == rc_without && strstr(with, "got 8 bytes, expected") &&
          strstr(with, "(strip 7)") && strstr(without, "got 8 bytes, expected") && strstr(without, "(strip 7)"),
          "past the end: with the decoder %d '%s', without %d '%s'", rc_with, with, rc_without, without);
    img_free(&img);
}

/* Not for the decoder (LZW, a band over its device memory): the reader reads them as before. */
static void not_taken(tiff_gpu_bands *g, tu_rng *r)
{
    char path[512], err[512] = "";
    snprintf(path, sizeof path, "%s/other.tif", tu_tmpdir());
    ip_image img;
    if (image(&img, 70, 50, 1, IP_U8, r) != 0) return;
    tiff_band_decode_stat st;
    int set = 0;
    CHECK(ttu_write_libtiff(path, &img, 8, COMPRESSION_LZW, PREDICTOR_NONE, 0) == 0, "write LZW");
    int rc = stream_back(path, &img, 1, g, &st, &set, err, sizeof err);
    CHECK(rc == IP_OK && set == IP_EUNSUPPORTED && st.bands == 0, "LZW: rc %d, set %d, %llu bands: %s", rc, set,
          (unsigned long long)st.bands, err);
    tiff_gpu_bands *off = NULL;
    char why[256] = "left";
    unsetenv("IMGPIPE_TIFF_GPU_READ_BANDS");
    CHECK(tiff_gpu_bands_create(&off, 0, 0, why, sizeof why) == IP_EUNSUPPORTED && !off && why[0] == '\0',
          "off by default, nothing said: '%s'", why);
    setenv("IMGPIPE_TIFF_GPU_READ_BANDS", "1", 1);
    tiff_gpu_bands *small = NULL;
    CHECK(ttu_write_libtiff(path, &img, 8, COMPRESSION_ADOBE_DEFLATE, PREDICTOR_NONE, 0) == 0, "write deflate");
    CHECK(tiff_gpu_bands_create(&small, 0, 50000, why, sizeof why) == IP_OK, "create: %s", why);
    int rc_small = stream_back(path, &img, 70 * 40, small, &st, &set, err, sizeof err);
    CHECK(rc_small == IP_OK && set == IP_EUNSUPPORTED && st.bands == 0,
          "a band over the decoder's device memory: rc %d, set %d, %llu bands: %s", rc_small, set,
          (unsigned long long)st.bands, err);
    tiff_gpu_bands_destroy(small);
    unsetenv("IMGPIPE_TIFF_GPU_READ_BANDS");
    img_free(&img);
}

int main(void)
{
    tu_rng r;
    tu_seed(&r, 2929);
    tiff_gpu_bands *g = bands();
    if (g) {
        good_files(g, &r);
        setenv("IMGPIPE_TIFF_GPU_BAND_GROUP", "3", 1);   /* groups that end mid-image */
        good_files(g, &r);
        unsetenv("IMGPIPE_TIFF_GPU_BAND_GROUP");
        setenv("IMGPIPE_TIFF_GPU_BAND_DEPTH", "1", 1);   /* one group at a time */
        good_files(g, &r);
        unsetenv("IMGPIPE_TIFF_GPU_BAND_DEPTH");
        faulty_decoder(g, &r);
        groups_in_flight(&r);
        damaged_strip(g, &r);
        past_the_end(g, &r);
        not_taken(g, &r);
    }
    tiff_gpu_bands_destroy(g);
    return tu_finish();
}

#else
int main(void)
{
    tu_skip("built without CUDA: no GPU band decoder");
    return 0;
}
#endif
