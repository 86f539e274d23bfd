/* The GPU's TIFF reader (tiff_gpu_decode) on a mock device whose memory is host memory, nvCOMP
 * replaced by zlib: a good file decodes to its pixels; a strip that inflates past its block,
 * whether nvCOMP refuses it or fills the block and stops, or one short of it, is left to the CPU
 * reader (IP_EUNSUPPORTED naming it); a damaged one fails as corrupt; a strip over nvCOMP's
 * chunk (1 MiB in the mock), decoded or compressed, is left to the CPU reader before any device
 * memory is asked for. A build without CUDA has no such reader: skipped there. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include "imgpipe/plugin.h"
#include "testutil.h"

#ifdef IMGPIPE_HAVE_CUDA
#include <zlib.h>
#include "codec_mock.h"
#include "gpu/gpu.h"
#include "io/tiff_gpu.h"
#include "ipk_codec.h"
#include "tiff_testutil.h"

/* How the mock nvCOMP meets a stream that inflates past its buffer: it refuses the chunk (as
 * nvcomp_decompress reports a bad status or a size over the capacity), or fills the buffer and
 * says it succeeded. */
static enum { PAST_REFUSED, PAST_TRUNCATED } past_mode;

/* The mock device: tests/gpu_mock_basics.c, gpu_mock_plain.c and codec_mock_basics.c. */
/* The mock nvCOMP: raw deflate inflated by zlib into each chunk's buffer, chunks of up to
 * MOCK_MAX_CHUNK (nvCOMP's 64 MiB, smaller so that the files stay small). */
#define MOCK_MAX_CHUNK ((size_t)1 << 20)
size_t nvcomp_max_chunk(const nvcomp_lib *lib)
{
    (void)lib;
    return MOCK_MAX_CHUNK;
}

/* 0 when the chunk inflated whole into its buffer, else -1; dst_bytes what it wrote. */
static int inflate_chunk(nvcomp_chunk *c)
{
    int rc = codec_mock_inflate(c);
    int past = rc == Z_BUF_ERROR && c->dst_bytes == c->dst_capacity;
    return rc == Z_STREAM_END || (past && past_mode == PAST_TRUNCATED) ? 0 : -1;
}

int nvcomp_decompress(nvcomp_batch *b, nvcomp_codec codec, int n, nvcomp_chunk *chunks, int *bad_chunk, char *err,
                      size_t errlen)
{
    (void)b;
    *bad_chunk = -1;
    if (codec != NVCOMP_DEFLATE) {
        snprintf(err, errlen, "mock: deflate only");
        return IP_EINVAL;
    }
    for (int i = 0; i < n; i++)
        if (chunks[i].dst_capacity > MOCK_MAX_CHUNK) {   /* as nvcomp.c refuses it */
            snprintf(err, errlen, "nvCOMP: chunk %d is misplaced (NULL, misaligned or over 64 MiB)", i);
            return IP_EINVAL;
        }
    for (int i = 0; i < n; i++)
        if (inflate_chunk(&chunks[i]) != 0) {
            snprintf(err, errlen, "chunk %d is not valid deflate data (mock)", i);
            *bad_chunk = i;
            return IP_EFORMAT;
        }
    return IP_OK;
}

/* The codec kernels on the host (adler32: codec_mock_basics.c); these files have neither a
 * predictor nor tiles. */
int ipk_tiff_predictor_undo(void *rows, size_t pitch, int width, int height, int channels, int sample_bytes,
                            void *stream)
{
    (void)rows, (void)pitch, (void)width, (void)height, (void)channels, (void)sample_bytes, (void)stream;
    return -1;
}
int ipk_tiff_tiles_to_image(const void *tiles, int tile_w, int tile_h, size_t pixel_bytes, void *dst,
                            size_t dst_pitch, int width, int height, void *stream)
{
    (void)tiles, (void)tile_w, (void)tile_h, (void)pixel_bytes, (void)dst, (void)dst_pitch, (void)width, (void)height,
        (void)stream;
    return -1;
}

static int device_input(void *user, const ip_shape *shape, size_t bytes, void **dev, char *err, size_t errlen)
{
    (void)shape, (void)err, (void)errlen;
    void **held = user;
    free(*held);
    *held = *dev = malloc(bytes);
    return *dev ? IP_OK : IP_ENOMEM;
}

/* The file at path decoded by tiff_gpu_decode with default options into the mock device; *held:
 * the device memory the target gave, NULL when none was asked for. */
static int decode_file(io_gpu_codecs *codecs, const char *path, void **held, ip_image *dev, char *err, size_t errlen)
{
    io_options opt;
    io_default_options(&opt);
    io_input in;
    jpeg_route_target target = { device_input, held };
    *dev = (ip_image){ 0 };
    int rc = io_input_open(path, &in, err, errlen);
    if (!rc) rc = tiff_gpu_decode(codecs, &target, &in, &opt, dev, err, errlen);
    io_input_close(&in);
    return rc;
}

/* Strip odd_strip of 37x11 gray in strips of 3 rows (3, 3, 3 and 2) holds rows of data. */
static void decode(io_gpu_codecs *codecs, uint32_t odd_strip, int rows, int want, const char *says, const char *what)
{
    char path[512], err[256] = "";
    snprintf(path, sizeof path, "%s/gpu_read_mock.tif", tu_tmpdir());
    ttu_strips s = { 37, 11, 3, odd_strip, rows };
    CHECK(ttu_write_strips(path, &s) == 0, "%s: cannot write it", what);
    void *held = NULL;
    ip_image dev;
    int rc = decode_file(codecs, path, &held, &dev, err, sizeof err);
    CHECK(rc == want && strstr(err, says), "%s: %d, not %d ('%s', not '%s')", what, rc, want, err, says);
    int wrong = 0;
    for (uint32_t y = 0; rc == IP_OK && y < s.height; y++)
        for (uint32_t x = 0; x < s.width; x++)
            wrong += ((const uint8_t *)dev.data)[(size_t)y * (size_t)dev.stride + x] != ttu_pixel(x, y);
    CHECK(wrong == 0, "%s: %d pixels wrong", what, wrong);
    free(held);
}

static void decisions(io_gpu_codecs *codecs)
{
    const char *past = "not decoded on the GPU: strip 1 ";
    decode(codecs, 1, 3, IP_OK, "", "a good file");
    decode(codecs, 3, 3, IP_OK, "", "the last strip padded to its block, as libtiff allows");
    past_mode = PAST_REFUSED;
    decode(codecs, 1, 5, IP_EUNSUPPORTED, past, "strip 1 past its block, refused");
    decode(codecs, 3, 6, IP_EUNSUPPORTED, "not decoded on the GPU: strip 3 ", "the last strip past its block, refused");
    decode(codecs, 1, 2, IP_EUNSUPPORTED, "not decoded on the GPU: strip 1 inflates short", "strip 1 short");
    decode(codecs, 1, TTU_DAMAGED, IP_EFORMAT, "truncated or corrupt TIFF: strip 1 is not valid", "strip 1 damaged");
    past_mode = PAST_TRUNCATED;
    decode(codecs, 1, 5, IP_EUNSUPPORTED, "strip 1's adler32 differs", "strip 1 past its block, cut at it");
}

static size_t scratch_bytes(const io_gpu_codecs *c)
{
    size_t total = 0;
    for (int i = 0; i < IO_GPU_SCRATCH_N; i++) total += c->scratch->device_bytes[i] + c->scratch->pinned_bytes[i];
    return total;
}

/* A strip over the mock's chunk goes to the CPU reader before the target or the scratch is asked
 * for memory (the scratch grows, never shrinks: its size shows a request). */
static void over_chunk(io_gpu_codecs *codecs, const ttu_strips *s, const char *says, const char *what)
{
    char path[512], err[256] = "";
    snprintf(path, sizeof path, "%s/gpu_read_mock_large.tif", tu_tmpdir());
    CHECK(ttu_write_strips(path, s) == 0, "%s: cannot write it", what);
    void *held = NULL;
    ip_image dev;
    size_t scratch_before = scratch_bytes(codecs);
    int rc = decode_file(codecs, path, &held, &dev, err, sizeof err);
    CHECK(rc == IP_EUNSUPPORTED && strstr(err, says), "%s: %d, not IP_EUNSUPPORTED ('%s', not '%s')", what, rc, err,
          says);
    CHECK(held == NULL && scratch_bytes(codecs) == scratch_before, "%s: device memory asked for (target %s, scratch "
          "%zu bytes, was %zu)", what, held ? "yes" : "no", scratch_bytes(codecs), scratch_before);
    free(held);
}

static void large_strips(io_gpu_codecs *codecs)
{
    ttu_strips one_strip = { 1024, 1100, 1100, 0, 1100 };   /* 1126400 bytes decoded */
    over_chunk(codecs, &one_strip, "not decoded on the GPU: strip 0 is 1126400 bytes, over nvCOMP's 1 MiB chunk",
               "a strip over the chunk");
    ttu_strips long_data = { 1024, 128, 64, 1, 4096 };   /* strip 1: 64 KiB decoded from 1.1 MB */
    over_chunk(codecs, &long_data, "bytes compressed, over nvCOMP's 1 MiB chunk", "strip 1's compressed data over "
               "the chunk");
}

int main(void)
{
    io_gpu_codecs *codecs = NULL;
    char why[256] = "";
    int stream;
    CHECK(io_gpu_codecs_open(&codecs, 0, &stream, why, sizeof why) == IP_OK, "mock codecs: %s", why);
    if (codecs) decisions(codecs);
    if (codecs) large_strips(codecs);
    io_gpu_codecs_close(codecs);
    return tu_finish();
}
#else
int main(void)
{
    tu_skip("built without CUDA: no GPU TIFF reader");
    return 0;
}
#endif
