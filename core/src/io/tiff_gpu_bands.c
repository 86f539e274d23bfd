#define _POSIX_C_SOURCE 200809L
#include "io/tiff_gpu_bands.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tiff_gpu_bands {
    tiff_band_decoder decoder;
    int device;
};

#ifdef IMGPIPE_HAVE_CUDA
#include "gpu/gpu.h"
#include "io/codec_gpu.h"
#include "io/tiff_gpu_layout.h"
#include "io/zlib_frame.h"
#include "ipk_codec.h"

#define BODY_ALIGN 8   /* nvCOMP's alignment for compressed chunks (8 for zstd, 4 for deflate) */

typedef struct {
    int device;
    void *stream;
    io_gpu_codecs *c;
    nvcomp_codec codec;
    int predictor, spp, sample_bytes, tiled;
    uint32_t width, bw, bh, max_blocks;
    size_t row_bytes, block_row_bytes, block_bytes, raw_cap, staged_cap;
    unsigned char *host;       /* pinned: the band's blocks as staged, then the adler32s */
    unsigned char *dev_comp;
    unsigned char *dev_blocks; /* the blocks inflated: the band's rows themselves for strips */
    unsigned char *dev_rows;   /* tiles: the band's rows they are copied into */
    nvcomp_chunk *chunks;
    uint32_t *adler;           /* from each block's zlib trailer */
} band_state;

static void state_close(void *state)
{
    band_state *s = state;
    if (!s) return;
    io_gpu_codecs_close_own(s->c, s->stream, s->device);
    free(s->chunks);
    free(s->adler);
    free(s);
}

static size_t state_raw_capacity(const void *state) { return ((const band_state *)state)->raw_cap; }

static uint64_t state_held_bytes(const void *state)
{
    const band_state *s = state;
    return s->c && s->c->scratch ? s->c->scratch->pinned_bytes[IO_GPU_SCRATCH_A] : 0;
}

/* A band's raw blocks as large as its pixels and an eighth more (incompressible data grows a
 * little); each block's body aligned after room for its zlib header; the adler32s after them. */
static int state_buffers(band_state *s, uint32_t blocks_down, char *err, size_t errlen)
{
    size_t n = s->max_blocks, band_rows = (size_t)blocks_down * s->bh;
    if (s->block_bytes > SIZE_MAX / 4 / n || s->row_bytes > SIZE_MAX / 4 / band_rows) {
        snprintf(err, errlen, "TIFF on the GPU: bands too large");
        return IP_EUNSUPPORTED;
    }
    size_t blocks = s->block_bytes * n, rows = s->row_bytes * band_rows;
    s->raw_cap = blocks + blocks / 8 + ((size_t)64 << 10);
    /* aligned, so that the adler32s after it are */
    s->staged_cap = (s->raw_cap + n * (ZLIB_FRAME_HEADER + 2 * BODY_ALIGN)) / BODY_ALIGN * BODY_ALIGN;
    s->chunks = calloc(n, sizeof *s->chunks);
    s->adler = calloc(n, sizeof *s->adler);
    if (!s->chunks || !s->adler) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    size_t sums = 4 * n;
    int rc = io_gpu_scratch_pinned(s->c, IO_GPU_SCRATCH_A, s->staged_cap + sums, (void **)&s->host, err, errlen);
    if (!rc) rc = io_gpu_scratch_device(s->c, IO_GPU_SCRATCH_A, s->staged_cap + sums, (void **)&s->dev_comp, err,
                                        errlen);
    if (!rc) rc = io_gpu_scratch_device(s->c, IO_GPU_SCRATCH_B, blocks, (void **)&s->dev_blocks, err, errlen);
    if (!rc && s->tiled) rc = io_gpu_scratch_device(s->c, IO_GPU_SCRATCH_C, rows, (void **)&s->dev_rows, err, errlen);
    if (!rc && !s->tiled) s->dev_rows = s->dev_blocks;
    return rc;
}

static int state_open(const tiff_band_decoder *d, TIFF *tif, uint32_t blocks_down, void **state, char *why,
                      size_t whylen)
{
    const tiff_gpu_bands *g = d->user;
    tiff_gpu_layout l;
    int rc = tiff_gpu_layout_of(&l, tif, why, whylen);
    if (rc != IP_OK) return rc;
    uint64_t across = l.tiled ? ((uint64_t)l.width + l.bw - 1) / l.bw : 1;
    if (blocks_down == 0 || across * blocks_down > INT32_MAX) {
        snprintf(why, whylen, "TIFF on the GPU: bands too large");
        return IP_EUNSUPPORTED;
    }
    band_state *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(why, whylen, "out of memory");
        return IP_ENOMEM;
    }
    size_t pixel_bytes = (size_t)l.spp * (l.bps / 8);
    *s = (band_state){ .device = g->device, .codec = l.codec, .predictor = l.predictor == PREDICTOR_HORIZONTAL,
                       .spp = l.spp, .sample_bytes = l.bps / 8, .tiled = l.tiled, .width = l.width, .bw = l.bw,
                       .bh = l.bh, .max_blocks = (uint32_t)(across * blocks_down),
                       .row_bytes = (size_t)l.width * pixel_bytes, .block_row_bytes = (size_t)l.row_bytes,
                       .block_bytes = (size_t)l.block_bytes };
    rc = io_gpu_codecs_open_own(&s->c, &s->stream, s->device, why, whylen);
    if (!rc && s->block_bytes > nvcomp_max_chunk(s->c->nvcomp)) {
        snprintf(why, whylen, "TIFF on the GPU: blocks over nvCOMP's chunk");
        rc = IP_EUNSUPPORTED;
    }
    if (!rc) rc = state_buffers(s, blocks_down, why, whylen);
    if (rc) {
        state_close(s);
        return rc;
    }
    *state = s;
    return IP_OK;
}

/* The blocks staged as nvCOMP takes them (deflate's zlib frame taken off, its adler32 kept) and
 * where each decodes: block i at i blocks in. */
static int stage(band_state *s, const tiff_band_block *blocks, uint32_t n, size_t *staged, char *why, size_t whylen)
{
    size_t at = 0;
    for (uint32_t i = 0; i < n; i++) {
        const tiff_band_block *b = &blocks[i];
        size_t body_at = (at + ZLIB_FRAME_HEADER + BODY_ALIGN - 1) / BODY_ALIGN * BODY_ALIGN;
        if (b->raw_len > s->staged_cap - body_at || b->len > s->block_bytes) {
            snprintf(why, whylen, "block %u past the GPU's band", b->index);
            return IP_EUNSUPPORTED;
        }
        size_t body = b->raw_len;
        unsigned char *src = s->host + body_at - (s->codec == NVCOMP_DEFLATE ? ZLIB_FRAME_HEADER : 0);
        memcpy(src, b->raw, b->raw_len);
        if (s->codec == NVCOMP_DEFLATE && zlib_frame_split(src, b->raw_len, &body, &s->adler[i]) != 0) {
            snprintf(why, whylen, "block %u is not a zlib stream", b->index);
            return IP_EUNSUPPORTED;
        }
        s->chunks[i] = (nvcomp_chunk){ .src = s->dev_comp + body_at, .src_bytes = body,
                                       .dst = s->dev_blocks + (size_t)i * s->block_bytes,
                                       .dst_capacity = s->block_bytes };
        at = body_at + body;
    }
    *staged = at;
    return IP_OK;
}

/* Each block inflated to its whole size (the image's last strip: at least its rows, as libtiff
 * ignores a padded one's surplus), and for deflate to the adler32 its trailer holds. */
static int check(band_state *s, const tiff_band_block *blocks, uint32_t n, char *why, size_t whylen)
{
    for (uint32_t i = 0; i < n; i++) {
        size_t got = s->chunks[i].dst_bytes, len = blocks[i].len;
        if (got < len || (len == s->block_bytes && got != len)) {
            snprintf(why, whylen, "block %u inflates to %zu bytes, not %zu", blocks[i].index, got, len);
            return IP_EUNSUPPORTED;
        }
    }
    if (s->codec != NVCOMP_DEFLATE) return IP_OK;
    size_t total = (size_t)(n - 1) * s->block_bytes + s->chunks[n - 1].dst_bytes, sum_bytes = 4 * (size_t)n;
    uint32_t *dev_sums = (uint32_t *)(s->dev_comp + s->staged_cap), *sums = (uint32_t *)(s->host + s->staged_cap);
    int rc = ipk_adler32_spans(s->dev_blocks, total, s->block_bytes, dev_sums, s->stream) ? IP_ECUDA : IP_OK;
    if (!rc) rc = gpu_copy2d(sums, sum_bytes, dev_sums, sum_bytes, sum_bytes, 1, GPU_D2H, s->stream, why, whylen);
    if (!rc) rc = gpu_stream_sync(s->stream, why, whylen);
    for (uint32_t i = 0; !rc && i < n; i++)
        if (sums[i] != s->adler[i]) {
            snprintf(why, whylen, "block %u's adler32 differs", blocks[i].index);
            rc = IP_EUNSUPPORTED;
        }
    return rc;
}

/* The predictor undone on each block's own rows; tiles then copied into the band's rows. */
static int finish_rows(band_state *s, uint32_t n, uint32_t band_rows, char *why, size_t whylen)
{
    uint64_t rows = s->tiled ? (uint64_t)n * s->bh : band_rows;   /* the tiles one under another */
    if (rows > INT32_MAX) {
        snprintf(why, whylen, "TIFF on the GPU: %llu rows of tiles, more than the predictor takes",
                 (unsigned long long)rows);
        return IP_EUNSUPPORTED;
    }
    if (s->predictor && ipk_tiff_predictor_undo(s->dev_blocks, s->block_row_bytes, (int)(s->tiled ? s->bw : s->width),
                                                (int)rows, s->spp, s->sample_bytes, s->stream) != 0) {
        snprintf(why, whylen, "GPU predictor failed");
        return IP_ECUDA;
    }
    if (s->tiled && ipk_tiff_tiles_to_image(s->dev_blocks, (int)s->bw, (int)s->bh, (size_t)s->spp * s->sample_bytes,
                                            s->dev_rows, s->row_bytes, (int)s->width, (int)band_rows, s->stream) != 0) {
        snprintf(why, whylen, "GPU tile copy failed");
        return IP_ECUDA;
    }
    return IP_OK;
}

static int state_decode(void *state, const tiff_band_block *blocks, uint32_t n, uint32_t band_rows,
                        unsigned char *rows, char *why, size_t whylen)
{
    band_state *s = state;
    if (n == 0 || n > s->max_blocks || (size_t)band_rows * s->row_bytes > s->max_blocks * s->block_bytes) {
        snprintf(why, whylen, "a band of %u blocks, over the GPU's %u", n, s->max_blocks);
        return IP_EINVAL;
    }
    size_t staged = 0, bytes = (size_t)band_rows * s->row_bytes;
    int rc = gpu_select(s->device, why, whylen);
    if (!rc) rc = stage(s, blocks, n, &staged, why, whylen);
    if (!rc) rc = gpu_copy2d(s->dev_comp, staged, s->host, staged, staged, 1, GPU_H2D, s->stream, why, whylen);
    int bad = -1;
    if (!rc) rc = nvcomp_decompress(s->c->batch, s->codec, (int)n, s->chunks, &bad, why, whylen);
    if (!rc) rc = check(s, blocks, n, why, whylen);
    if (!rc) rc = finish_rows(s, n, band_rows, why, whylen);
    if (!rc) rc = gpu_copy2d(rows, bytes, s->dev_rows, bytes, bytes, 1, GPU_D2H, s->stream, why, whylen);
    if (!rc) rc = gpu_stream_sync(s->stream, why, whylen);
    return rc;
}

int tiff_gpu_bands_create(tiff_gpu_bands **out, int gpu, char *why, size_t whylen)
{
    *out = NULL;
    const char *on = getenv("IMGPIPE_TIFF_GPU_READ_BANDS");
    if (!on || strcmp(on, "1") != 0) {
        if (whylen) why[0] = '\0';
        return IP_EUNSUPPORTED;
    }
    nvcomp_lib *lib = NULL;
    int rc = nvcomp_open(&lib, why, whylen);
    nvcomp_close(lib);
    if (rc) return rc;
    tiff_gpu_bands *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(why, whylen, "out of memory");
        return IP_ENOMEM;
    }
    g->device = gpu;
    g->decoder = (tiff_band_decoder){ state_open, state_decode, state_close, state_raw_capacity, state_held_bytes, g };
    *out = g;
    return IP_OK;
}

#else

int tiff_gpu_bands_create(tiff_gpu_bands **out, int gpu, char *why, size_t whylen)
{
    (void)gpu;
    *out = NULL;
    snprintf(why, whylen, "TIFF on the GPU needs a CUDA build");
    return IP_EUNSUPPORTED;
}
#endif

const tiff_band_decoder *tiff_gpu_bands_decoder(const tiff_gpu_bands *g) { return g ? &g->decoder : NULL; }

void tiff_gpu_bands_destroy(tiff_gpu_bands *g) { free(g); }
