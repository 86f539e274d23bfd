/* tiff_gpu_write with a share of the strips on the card and the rest on the cores, on a mock
 * device whose memory is host memory (nvCOMP replaced by zlib's raw deflate, the kernels by host
 * loops): files read back equal for u8 and u16, 1 to 4 channels, 1x1 to rows of 70001 bytes, a
 * pitch past the rows; the card gets the last of the CPU writer's strips, as many as the share
 * rounds to, each in 16 KiB pieces joined after; no share is the CPU writer's very bytes; the
 * card's failure, or a piece that is no deflate stream, fails the write with nothing left at the
 * path; the cores' strips beside the card checked by the codecs' faster-level check, and not
 * without the card. tiff_gpu_card_share's rules too. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "imgpipe/plugin.h"
#include "testutil.h"

#ifdef IMGPIPE_HAVE_CUDA
#include "base/image.h"
#include "codec_mock.h"
#include "io/tiff_gpu.h"
#include "io/io_tiff_handle.h"
#include "io/tiff_fast_check.h"
#include "tiff_testutil.h"

/* How the mock nvCOMP's next batch goes wrong: not at all, the call fails, or a strip comes back
 * with no bytes. */
static enum { GOOD, CALL_FAILS, EMPTY_CHUNK } fault;
static int chunks_seen;
static size_t pending[4096];   /* each chunk's size, kept from start to finish as the card would */

size_t nvcomp_max_chunk(const nvcomp_lib *lib)
{
    (void)lib;
    return (size_t)64 << 20;
}

int nvcomp_compress_start(nvcomp_batch *b, nvcomp_codec codec, int algorithm, int n, const nvcomp_chunk *chunks,
                          char *err, size_t errlen)
{
    (void)b, (void)algorithm;
    if (codec != NVCOMP_DEFLATE || fault == CALL_FAILS || n > 4096) {
        snprintf(err, errlen, "mock: the batch failed");
        return IP_ECUDA;
    }
    for (int i = 0; i < n; i++) {
        nvcomp_chunk c = chunks[i];
        if (codec_mock_deflate(&c) != 0) {
            snprintf(err, errlen, "mock: zlib failed on chunk %d", i);
            return IP_ECUDA;
        }
        pending[i] = c.dst_bytes;
    }
    chunks_seen += n;
    return IP_OK;
}

int nvcomp_compress_finish(nvcomp_batch *b, int n, nvcomp_chunk *chunks, char *err, size_t errlen)
{
    (void)b, (void)err, (void)errlen;
    for (int i = 0; i < n; i++) chunks[i].dst_bytes = pending[i];
    if (fault == EMPTY_CHUNK && n > 0) chunks[n - 1].dst_bytes = 0;
    return IP_OK;
}

static uint32_t rows_per_strip_of(const char *path)
{
    TIFF *t = TIFFOpen(path, "r");
    uint32_t rps = 0;
    if (t) TIFFGetField(t, TIFFTAG_ROWSPERSTRIP, &rps);
    if (t) TIFFClose(t);
    return rps;
}

typedef struct {
    int w, h, c;
    ip_dtype t;
    int level;
    double share;
} write_case;

/* The image, copied to "device" memory with a pitch past its rows, written with the case's share
 * and read back; the card's chunks counted against the strips the share gives it. */
static void shared_write(io_gpu_codecs *codecs, const write_case *k, tu_rng *r)
{
    char cpu_path[512], path[512], err[512] = "";
    snprintf(cpu_path, sizeof cpu_path, "%s/cpu.tif", tu_tmpdir());
    snprintf(path, sizeof path, "%s/shared.tif", tu_tmpdir());
    ip_shape shape = { k->w, k->h, k->c, k->t };
    ip_image img, dev;
    ip_shape wide = { k->w + 7, k->h, k->c, k->t };
    if (ttu_image(&img, &shape, r) != 0 || ttu_image(&dev, &wide, r) != 0) {
        CHECK(0, "alloc %dx%d", k->w, k->h);
        return;
    }
    size_t row = img_row_bytes(&shape);
    for (int y = 0; y < k->h; y++)
        memcpy((char *)dev.data + (size_t)y * dev.stride, (char *)img.data + (size_t)y * img.stride, row);
    dev.shape = shape;
    dev.on_device = 1;
    io_options opt;
    io_default_options(&opt);
    opt.tiff_level = k->level;
    CHECK(io_write(cpu_path, &img, &opt, err, sizeof err) == IP_OK, "cpu write: %s", err);
    int before = chunks_seen;
    int rc = tiff_gpu_write(codecs, &dev, path, &opt, k->share, err, sizeof err);
    const char *what = k->t == IP_U8 ? "u8" : "u16";
    CHECK(rc == IP_OK, "%dx%dx%d %s, %.0f%% on the card: %s", k->w, k->h, k->c, what, k->share * 100, err);
    uint32_t rps = tiff_rows_per_strip(&shape);
    uint32_t strips = ((uint32_t)k->h + rps - 1) / rps;
    int card = k->share >= 1 ? (int)strips : (int)(k->share * strips + 0.5);
    int pieces = 0;
    for (uint32_t i = strips - (uint32_t)card; i < strips; i++) {
        size_t len = (size_t)(i + 1 == strips ? (uint32_t)k->h - i * rps : rps) * row;
        pieces += (int)((len + (16 << 10) - 1) / (16 << 10));
    }
    CHECK(chunks_seen - before == pieces, "%dx%dx%d %s, %.0f%%: the card took %d pieces, not %d (%d of %u strips)",
          k->w, k->h, k->c, what, k->share * 100, chunks_seen - before, pieces, card, strips);
    CHECK(rc != IP_OK || rows_per_strip_of(path) == rps, "%dx%dx%d: %u rows a strip, not %u", k->w, k->h, k->c,
          rows_per_strip_of(path), rps);
    ip_image back = { 0 };
    if (rc == IP_OK && io_read(path, &opt, &back, err, sizeof err) == IP_OK) {
        int wrong = 0;
        for (int y = 0; y < k->h; y++)
            wrong += memcmp((char *)back.data + (size_t)y * back.stride, (char *)img.data + (size_t)y * img.stride,
                            row) != 0;
        CHECK(wrong == 0, "%dx%dx%d %s, %.0f%%: %d rows differ", k->w, k->h, k->c, what, k->share * 100, wrong);
        img_free(&back);
    } else if (rc == IP_OK) {
        CHECK(0, "read back %dx%dx%d: %s", k->w, k->h, k->c, err);
    }
    if (card == 0) CHECK(tu_same_file(cpu_path, path), "%dx%dx%d, none on the card: not the CPU's bytes", k->w, k->h, k->c);
    img_free(&img);
    img_free(&dev);
}

static void good_files(io_gpu_codecs *codecs, tu_rng *r)
{
    static const write_case cases[] = {
        { 1, 1, 1, IP_U8, 6, 0.5 },        { 4099, 37, 1, IP_U8, 6, 0.5 },   { 997, 641, 3, IP_U8, 1, 0.25 },
        { 509, 300, 4, IP_U16, 9, 0.6 },   { 70001, 3, 1, IP_U8, 6, 0.5 },   { 3001, 17, 2, IP_U16, 6, 1.0 },
        { 2003, 150, 1, IP_U8, 6, 0.0 },   { 333, 77, 3, IP_U8, 6, 0.01 },   { 1, 4099, 1, IP_U8, 3, 0.5 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) shared_write(codecs, &cases[i], r);
}

/* A random u8 image in host memory that the mock device takes for its own. */
static int mock_device_image(ip_image *img, int w, int h, int c, tu_rng *r)
{
    ip_shape shape = { w, h, c, IP_U8 };
    if (ttu_image(img, &shape, r) != 0) return -1;
    img->on_device = 1;
    return 0;
}

/* The card's failures fail the write, with nothing at the path. */
static void faults(io_gpu_codecs *codecs, tu_rng *r)
{
    static const struct {
        int fault;
        const char *says;
    } bad[] = { { CALL_FAILS, "the batch failed" }, { EMPTY_CHUNK, "no valid deflate stream" } };
    char path[512];
    snprintf(path, sizeof path, "%s/faulty.tif", tu_tmpdir());
    ip_image img;
    if (mock_device_image(&img, 1021, 97, 3, r) != 0) return;
    io_options opt;
    io_default_options(&opt);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char err[512] = "";
        unlink(path);
        fault = bad[i].fault;
        int rc = tiff_gpu_write(codecs, &img, path, &opt, 0.5, err, sizeof err);
        fault = GOOD;
        CHECK(rc == IP_ECUDA && strstr(err, bad[i].says), "fault %d: rc %d '%s'", bad[i].fault, rc, err);
        CHECK(access(path, F_OK) != 0, "fault %d: a file was left at the path", bad[i].fault);
    }
    img_free(&img);
}

/* The cores' strips beside the card go through the codecs' check of the faster level (one sample
 * for a write whose cores take one strip), and not where the card takes none. */
static void cores_checked(tu_rng *r)
{
    io_gpu_codecs *codecs = NULL;
    char why[256] = "", path[512];
    int stream;
    snprintf(path, sizeof path, "%s/checked.tif", tu_tmpdir());
    if (io_gpu_codecs_open(&codecs, 0, &stream, why, sizeof why) != IP_OK || !codecs->tiff_fast) {
        CHECK(0, "mock codecs with a check: %s", why);
        io_gpu_codecs_close(codecs);
        return;
    }
    ip_image img;
    if (mock_device_image(&img, 2003, 150, 1, r) != 0) {
        io_gpu_codecs_close(codecs);
        return;
    }
    io_options opt;
    io_default_options(&opt);
    uint32_t strips = (150 + tiff_rows_per_strip(&img.shape) - 1) / tiff_rows_per_strip(&img.shape);
    CHECK(strips == 2, "2003x150: %u strips, the case wants 2", strips);
    for (int k = 0; k < 2; k++) {
        uint32_t before = codecs->tiff_fast->samples;
        double share = k == 0 ? 0 : 0.5;   /* none first: the check samples its first strip */
        CHECK(tiff_gpu_write(codecs, &img, path, &opt, share, why, sizeof why) == IP_OK, "share %.1f: %s", share, why);
        uint32_t sampled = codecs->tiff_fast->samples - before;
        CHECK(sampled == (k == 0 ? 0u : 1u), "share %.1f: the cores' strip sampled %u times", share, sampled);
    }
    img_free(&img);
    io_gpu_codecs_close(codecs);
}

/* The share: all when forced, none for zstd or an image the cores finish at once, else between. */
static void share_rules(void)
{
    io_options opt;
    io_default_options(&opt);
    opt.threads = 1;
    ip_shape photo = { 4000, 3000, 1, IP_U8 }, small = { 64, 64, 1, IP_U8 }, fl = { 4000, 3000, 1, IP_F32 };
    double folder = tiff_gpu_card_share(&photo, &opt, 0, 1, 0);
    CHECK(folder > 0 && folder < 1, "a folder worker's 12-MP gray at level 6: share %.3f", folder);
    CHECK(tiff_gpu_card_share(&small, &opt, 0, 1, 0) == 0, "a 64x64 image goes to the card");
    CHECK(tiff_gpu_card_share(&small, &opt, 1, 1, 0) == 1, "forced, a 64x64 image stays on the cores");
    CHECK(tiff_gpu_card_share(&fl, &opt, 1, 1, 0) == 0, "a float image goes to the card");
    opt.tiff_level = 1;
    double fast = tiff_gpu_card_share(&photo, &opt, 0, 1, 0);
    opt.tiff_level = 9;
    double slow = tiff_gpu_card_share(&photo, &opt, 0, 1, 0);
    CHECK(slow > folder && folder > fast, "shares by level: 1 %.3f, 6 %.3f, 9 %.3f", fast, folder, slow);
    opt.tiff_level = 6;
    /* the shares' sizes follow the host's cores (0.45 at 4 on 2, 0.32 on 32): only their order is asserted */
    double beside = tiff_gpu_card_share(&photo, &opt, 0, 1, 4), beside2 = tiff_gpu_card_share(&photo, &opt, 0, 1, 2);
    CHECK(beside2 > 0 && beside2 < beside && beside < folder,
          "level 6 with the cores at libdeflate's 2: share %.3f, at 4 %.3f, at 6 %.3f", beside2, beside, folder);
    opt.tiff_level = 6;
    opt.tiff_compression = IO_TIFF_ZSTD;
    CHECK(tiff_gpu_card_share(&photo, &opt, 0, 1, 0) == 0, "zstd goes to the card unasked");
    opt.tiff_compression = IO_TIFF_DEFLATE;
    opt.threads = 4096;
    CHECK(tiff_gpu_card_share(&photo, &opt, 0, 1, 0) == 0, "4096 threads on one image still give the card a share");
}

int main(void)
{
    tu_rng r;
    tu_seed(&r, 2911);
    unsetenv("IMGPIPE_TIFF_GPU_SHARE");
    unsetenv("IMGPIPE_TIFF_GPU_CHUNK_KB");
    io_gpu_codecs *codecs = NULL;
    char why[256] = "";
    int stream;
    CHECK(io_gpu_codecs_open(&codecs, 0, &stream, why, sizeof why) == IP_OK, "mock codecs: %s", why);
    if (codecs) good_files(codecs, &r);
    if (codecs) faults(codecs, &r);
    cores_checked(&r);
    share_rules();
    io_gpu_codecs_close(codecs);
    return tu_finish();
}

#else
int main(void)
{
    tu_skip("built without CUDA: no GPU TIFF writer");
    return 0;
}
#endif
