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
#include "base/image.h"
#include "gpu/gpu.h"
#include "io/codec_gpu.h"
#include "io/tiff_gpu_blocks.h"
#include "io/zlib_frame.h"

#define BODY_ALIGN 8   /* nvCOMP's alignment for compressed chunks (8 for zstd, 4 for deflate) */

typedef struct {
    int device;
    void *stream;
    io_gpu_codecs *c;
    tiff_gpu_layout l;         /* the file's blocks (its handle the reader's, not kept) */
    uint32_t max_blocks;
    size_t row_bytes, raw_cap, staged_cap;
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
    size_t n = s->max_blocks, band_rows = (size_t)blocks_down * s->l.bh;
    if (s->l.block_bytes > SIZE_MAX / 4 / n || s->row_bytes > SIZE_MAX / 4 / band_rows) {
        snprintf(err, errlen, "TIFF on the GPU: bands too large");
        return IP_EUNSUPPORTED;
    }
    size_t blocks = (size_t)s->l.block_bytes * n, rows = s->row_bytes * band_rows;
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
    if (!rc && s->l.tiled) rc = io_gpu_scratch_device(s->c, IO_GPU_SCRATCH_C, rows, (void **)&s->dev_rows, err, errlen);
    if (!rc && !s->l.tiled) s->dev_rows = s->dev_blocks;
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
    l.tif = NULL;
    ip_shape shape = tiff_gpu_layout_shape(&l);
    *s = (band_state){ .device = g->device, .l = l, .max_blocks = (uint32_t)(across * blocks_down),
                       .row_bytes = img_row_bytes(&shape) };
    rc = io_gpu_codecs_open_own(&s->c, &s->stream, s->device, why, whylen);
    if (!rc && s->l.block_bytes > nvcomp_max_chunk(s->c->nvcomp)) {
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
        if (b->raw_len > s->staged_cap - body_at || b->len > s->l.block_bytes) {
            snprintf(why, whylen, "block %u past the GPU's band", b->index);
            return IP_EUNSUPPORTED;
        }
        size_t body = b->raw_len;
        int framed = s->l.codec == NVCOMP_DEFLATE;
        unsigned char *src = s->host + body_at - (framed ? ZLIB_FRAME_HEADER : 0);
        memcpy(src, b->raw, b->raw_len);
        if (framed && zlib_frame_split(src, b->raw_len, &body, &s->adler[i]) != 0) {
            snprintf(why, whylen, "block %u is not a zlib stream", b->index);
            return IP_EUNSUPPORTED;
        }
        s->chunks[i] = (nvcomp_chunk){ .src = s->dev_comp + body_at, .src_bytes = body,
                                       .dst = s->dev_blocks + (size_t)i * s->l.block_bytes,
                                       .dst_capacity = (size_t)s->l.block_bytes };
        at = body_at + body;
    }
    *staged = at;
    return IP_OK;
}

/* No block short of what libtiff reads (tiff_gpu_blocks.h), and for deflate each one's adler32
 * the one its trailer holds. */
static int check(band_state *s, const tiff_band_block *blocks, uint32_t n, char *why, size_t whylen)
{
    for (uint32_t i = 0; i < n; i++)
        if (s->chunks[i].dst_bytes < blocks[i].len) {
            snprintf(why, whylen, "block %u inflates to %zu bytes, not %zu", blocks[i].index, s->chunks[i].dst_bytes,
                     blocks[i].len);
            return IP_EUNSUPPORTED;
        }
    if (s->l.codec != NVCOMP_DEFLATE) return IP_OK;
    uint64_t bad = 0;
    int rc = tiff_gpu_blocks_adler(&s->l, s->dev_blocks, n, s->chunks[n - 1].dst_bytes, s->adler,
                                   (uint32_t *)(s->dev_comp + s->staged_cap), (uint32_t *)(s->host + s->staged_cap),
                                   s->stream, &bad, why, whylen);
    if (rc == IP_EUNSUPPORTED) snprintf(why, whylen, "block %u's adler32 differs", blocks[bad].index);
    return rc;
}

static int state_decode(void *state, const tiff_band_block *blocks, uint32_t n, uint32_t band_rows,
                        unsigned char *rows, char *why, size_t whylen)
{
    band_state *s = state;
    if (n == 0 || n > s->max_blocks || (size_t)band_rows * s->row_bytes > s->max_blocks * s->l.block_bytes) {
        snprintf(why, whylen, "a band of %u blocks, over the GPU's %u", n, s->max_blocks);
        return IP_EINVAL;
    }
    size_t staged = 0, bytes = (size_t)band_rows * s->row_bytes;
    int rc = gpu_select(s->device, why, whylen);
    if (!rc) rc = stage(s, blocks, n, &staged, why, whylen);
    if (!rc) rc = gpu_copy2d(s->dev_comp, staged, s->host, staged, staged, 1, GPU_H2D, s->stream, why, whylen);
    int bad = -1;
    if (!rc) rc = nvcomp_decompress(s->c->batch, s->l.codec, (int)n, s->chunks, &bad, why, whylen);
    if (!rc) rc = check(s, blocks, n, why, whylen);
    if (!rc) rc = tiff_gpu_blocks_finish(&s->l, s->dev_blocks, n, band_rows, s->dev_rows, s->stream, why, whylen);
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
