/* The GPU's strip codec (tiff_gpu_strips.h) on a mock device whose memory is host memory: nvCOMP
 * replaced by zlib's raw deflate, the predictor, adler32 and walk kernels by host loops. Strips are
 * written raw and read back equal by the CPU reader, for u8 and u16, 1 to 4 channels, 1x1 to rows
 * of 70001 bytes; nvCOMP gets each strip in the fewest pieces of at most 16 KiB, none smaller than
 * the next less one (counted, and the largest and smallest seen); a piece that comes back empty,
 * past its slot or as no deflate stream fails the batch naming the strip, and nvCOMP's failure is
 * the batch's. A build without CUDA has no such codec. */
#include <string.h>
#include "imgpipe/plugin.h"
#include "testutil.h"

#ifdef IMGPIPE_HAVE_CUDA
#include "gpu/gpu.h"
#include "gpu/nvcomp.h"
#include "io/tiff_gpu_strips.h"
#include "codec_mock.h"
#include "tiff_testutil.h"

/* How the mock nvCOMP's next compress goes wrong: not at all, no bytes for one chunk, a size past
 * a chunk's capacity, a failed call, or the second chunk's bytes no deflate stream. */
static enum { GOOD, EMPTY_CHUNK, OVERSIZE_CHUNK, CALL_FAILS, JUNK_CHUNK } fault;
static int chunks_seen;
static size_t largest_chunk, smallest_chunk = SIZE_MAX;

/* The mock device: tests/gpu_mock_basics.c, gpu_mock_plain.c and codec_mock_basics.c. */

size_t nvcomp_max_chunk(const nvcomp_lib *lib)
{
    (void)lib;
    return (size_t)64 << 20;
}
int nvcomp_compress(nvcomp_batch *b, nvcomp_codec codec, int algorithm, int n, nvcomp_chunk *chunks, char *err,
                    size_t errlen)
{
    (void)b, (void)algorithm;
    if (codec != NVCOMP_DEFLATE || fault == CALL_FAILS) {
        snprintf(err, errlen, codec != NVCOMP_DEFLATE ? "mock: deflate only" : "mock: the batch failed");
        return IP_ECUDA;
    }
    for (int i = 0; i < n; i++)
        if (codec_mock_deflate(&chunks[i]) != 0) {
            snprintf(err, errlen, "mock: zlib failed on chunk %d", i);
            return IP_ECUDA;
        }
    chunks_seen += n;
    for (int i = 0; i < n; i++) {
        largest_chunk = chunks[i].src_bytes > largest_chunk ? chunks[i].src_bytes : largest_chunk;
        smallest_chunk = chunks[i].src_bytes < smallest_chunk ? chunks[i].src_bytes : smallest_chunk;
    }
    if (fault == JUNK_CHUNK && n > 1) memset(chunks[1].dst, 0xff, chunks[1].dst_bytes);
    if (fault == EMPTY_CHUNK) chunks[0].dst_bytes = 0;
    if (fault == OVERSIZE_CHUNK) chunks[n - 1].dst_bytes = chunks[n - 1].dst_capacity + 1;
    return IP_OK;
}

static tiff_gpu_strips *strips_codec(void)
{
    tiff_gpu_strips *g = NULL;
    char why[256] = "";
    int gpu = 0;
    CHECK(tiff_gpu_strips_create(&g, &gpu, 1, why, sizeof why) == IP_OK, "create: %s", why);
    return g;
}

static int image(ip_image *img, int w, int h, int c, ip_dtype t, tu_rng *r)
{
    ip_shape shape = { w, h, c, t };
    return ttu_image(img, &shape, r);
}

/* One image through the codec: IP_OK and the pixels back, or the code and err; *chunks how many
 * the mock compressed. */
static int round_trip(tiff_gpu_strips *g, int w, int h, int c, ip_dtype t, uint32_t rps, uint32_t max_strips,
                      int *chunks, char *err, size_t errlen, tu_rng *r)
{
    char path[512];
    snprintf(path, sizeof path, "%s/strips.tif", tu_tmpdir());
    ip_image img;
    if (image(&img, w, h, c, t, r) != 0) return IP_ENOMEM;
    tiff_strip_format f = { img.shape, rps, IO_TIFF_DEFLATE, 6, NULL };
    int before = chunks_seen;
    int rc = ttu_batch_round_trip(tiff_gpu_strips_codec(g), &img, &f, max_strips, path, err, errlen);
    *chunks = chunks_seen - before;
    img_free(&img);
    return rc;
}

typedef struct {
    int w, h, c;
    ip_dtype t;
    uint32_t rps, max_strips;
} strip_case;

/* The fewest pieces of at most 16 KiB that strips of rps rows of this shape come in, the last strip
 * as tall as the image leaves it. */
static uint32_t pieces_for(const strip_case *s)
{
    size_t row = (size_t)s->w * (size_t)s->c * (s->t == IP_U16 ? 2 : 1), piece = (size_t)16 << 10;
    uint32_t n = 0;
    for (uint32_t y = 0; y < (uint32_t)s->h; y += s->rps) {
        size_t len = row * ((uint32_t)s->h - y < s->rps ? (uint32_t)s->h - y : s->rps);
        n += (uint32_t)((len + piece - 1) / piece);
    }
    return n;
}

static void good_files(tu_rng *r)
{
    static const strip_case cases[] = {
        { 1, 1, 1, IP_U8, 1, 1 },        { 1021, 37, 3, IP_U8, 3, 5 },     { 509, 300, 4, IP_U16, 7, 64 },
        { 70001, 9, 1, IP_U8, 1, 4 },    { 3001, 17, 2, IP_U16, 2, 3 },    { 1, 4099, 1, IP_U8, 4099, 1 },
        { 2049, 5, 1, IP_U8, 1, 5 },     { 16385, 3, 1, IP_U8, 1, 3 },     { 8192, 11, 2, IP_U8, 3, 2 },
    };
    tiff_gpu_strips *g = strips_codec();
    uint64_t strips = 0;
    for (size_t i = 0; g && i < sizeof cases / sizeof *cases; i++) {
        const strip_case *s = &cases[i];
        char err[512] = "";
        int chunks = 0;
        int rc = round_trip(g, s->w, s->h, s->c, s->t, s->rps, s->max_strips, &chunks, err, sizeof err, r);
        CHECK(rc == IP_OK, "%dx%dx%d %s, %u rows a strip: %s", s->w, s->h, s->c, s->t == IP_U8 ? "u8" : "u16",
              s->rps, err);
        uint32_t want = pieces_for(s);
        CHECK(chunks == (int)want, "%dx%dx%d: %d chunks compressed, %u pieces", s->w, s->h, s->c, chunks, want);
        strips += ((uint32_t)s->h + s->rps - 1) / s->rps;
    }
    /* 8192x2 rows come in pieces of 16 KiB exactly, and none is larger */
    CHECK(largest_chunk == (size_t)16 << 10, "the largest piece %zu bytes, not 16 KiB", largest_chunk);
    CHECK(smallest_chunk == 1, "the smallest piece %zu bytes (the 1x1 image's 1)", smallest_chunk);
    tiff_gpu_strips_stat st;
    if (g) tiff_gpu_strips_stats(g, &st);
    if (g) CHECK(st.strips == strips, "stats: %llu strips, %llu written", (unsigned long long)st.strips,
                 (unsigned long long)strips);
    tiff_gpu_strips_destroy(g);
}

/* Strips of 16385 bytes are cut 8193 + 8192, never 16384 + 1. */
static void even_cut(tu_rng *r)
{
    tiff_gpu_strips *g = strips_codec();
    char err[512] = "";
    int chunks = 0;
    largest_chunk = 0, smallest_chunk = SIZE_MAX;
    int rc = g ? round_trip(g, 16385, 2, 1, IP_U8, 1, 2, &chunks, err, sizeof err, r) : IP_EINVAL;
    CHECK(rc == IP_OK && chunks == 4, "16385x2: rc %d, %d pieces '%s'", rc, chunks, err);
    CHECK(largest_chunk == 8193 && smallest_chunk == 8192, "16385 bytes cut %zu and %zu", largest_chunk,
          smallest_chunk);
    tiff_gpu_strips_destroy(g);
}

static void faults(tu_rng *r)
{
    static const struct {
        int fault;
        const char *says;
    } bad[] = { { EMPTY_CHUNK, "no valid deflate stream" }, { OVERSIZE_CHUNK, "over its" },
                { CALL_FAILS, "the batch failed" }, { JUNK_CHUNK, "gave strip 0 as no valid deflate stream" } };
    tiff_gpu_strips *g = strips_codec();
    for (size_t i = 0; g && i < sizeof bad / sizeof *bad; i++) {
        char err[512] = "";
        int chunks = 0;
        fault = bad[i].fault;
        int rc = bad[i].fault == JUNK_CHUNK ? round_trip(g, 70001, 9, 1, IP_U8, 1, 4, &chunks, err, sizeof err, r)
                                            : round_trip(g, 1021, 37, 3, IP_U8, 3, 5, &chunks, err, sizeof err, r);
        fault = GOOD;
        CHECK(rc == IP_ECUDA && strstr(err, bad[i].says), "fault %d: rc %d '%s'", bad[i].fault, rc, err);
    }
    tiff_gpu_strips_destroy(g);
}

int main(void)
{
    tu_rng r;
    tu_seed(&r, 29);
    good_files(&r);
    even_cut(&r);
    faults(&r);
    return tu_finish();
}

#else
int main(void)
{
    tu_skip("built without CUDA: no GPU strip codec");
    return 0;
}
#endif
