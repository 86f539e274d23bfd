#define _POSIX_C_SOURCE 200809L
#include "io/tiff_gpu_bands.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tiff_gpu_bands {
    tiff_band_decoder decoder;
    int device;
    uint64_t device_bytes;   /* a group's at most */
};

#ifdef IMGPIPE_HAVE_CUDA
#include "base/image.h"
#include "base/mono_clock.h"
#include "gpu/gpu.h"
#include "io/codec_gpu.h"
#include "io/tiff_gpu_blocks.h"
#include "io/zlib_frame.h"

/* A group's blocks in one nvCOMP batch: about this many keep the card's inflate busy (one band of
 * a 10-gigapixel image's 512x512 tiles, 196 blocks, inflated in 81 ms on the H100 while nvCOMP
 * compressed strips beside it; 8 such bands in 92 ms), within this much device memory at most. */
#define GROUP_BLOCKS 1536
#define GROUP_DEVICE_BYTES ((size_t)1 << 30)
#define GROUP_MOST 64

typedef struct {
    uint32_t first, n, rows;   /* its blocks in the group's chunks, and its rows */
} staged_band;

typedef struct {
    int device;
    void *stream;
    io_gpu_codecs *c;
    tiff_gpu_layout l;         /* the file's blocks (its handle the reader's, not kept) */
    uint32_t max_blocks, group, n_chunks;
    size_t row_bytes, raw_cap, staged_cap, blocks_cap;   /* blocks_cap: a band's blocks inflated */
    unsigned char *host;       /* pinned: a band's blocks as staged, then a band's adler32s */
    unsigned char *dev_comp;   /* the group's bands as staged, staged_cap apart, then the adler32s */
    unsigned char *dev_blocks; /* the group's blocks inflated, blocks_cap a band: a strip band's rows */
    unsigned char *dev_rows;   /* tiles: a band's rows they are copied into */
    nvcomp_chunk *chunks;      /* the group's blocks, band after band */
    size_t *want;              /* what each decodes to, as libtiff reads it */
    uint32_t *adler;           /* from each block's zlib trailer */
    staged_band *bands;
    double ms[5];              /* staging, upload, inflate, checking, the rows back: for --profile */
} band_state;

static void state_close(void *state)
{
    band_state *s = state;
    if (!s) return;
    io_gpu_codecs_close_own(s->c, s->stream, s->device);
    free(s->chunks);
    free(s->want);
    free(s->adler);
    free(s->bands);
    free(s);
}

static void state_describe(const void *state, char *text, size_t len)
{
    const band_state *s = state;
    snprintf(text, len, "%u bands a batch; staging %.0f ms, upload %.0f ms, inflate %.0f ms, checks %.0f ms, "
             "rows back %.0f ms", s->group, s->ms[0], s->ms[1], s->ms[2], s->ms[3], s->ms[4]);
}

static uint32_t state_group(const void *state) { return ((const band_state *)state)->group; }
static size_t state_raw_capacity(const void *state) { return ((const band_state *)state)->raw_cap; }

static uint64_t state_held_bytes(const void *state)
{
    const band_state *s = state;
    return s->c && s->c->scratch ? s->c->scratch->pinned_bytes[IO_GPU_SCRATCH_A] : 0;
}

/* Bands a group: IMGPIPE_TIFF_GPU_BAND_GROUP when set (1 to 64, for measuring), else enough for
 * GROUP_BLOCKS blocks within device_bytes. */
static uint32_t group_size(const band_state *s, uint64_t device_bytes)
{
    long asked = io_gpu_env_long("IMGPIPE_TIFF_GPU_BAND_GROUP", 0, 0, GROUP_MOST);
    if (asked >= 1) return (uint32_t)asked;
    size_t per_band = s->staged_cap + s->blocks_cap;
    size_t by_blocks = (GROUP_BLOCKS + s->max_blocks - 1) / s->max_blocks;
    size_t by_memory = device_bytes / per_band;
    size_t g = by_blocks < by_memory ? by_blocks : by_memory;
    return g < 1 ? 1 : g > GROUP_MOST ? GROUP_MOST : (uint32_t)g;
}

/* A band's raw blocks as large as its pixels and an eighth more (incompressible data grows a
 * little); each block's body aligned after room for its zlib header; the adler32s after them. */
static int state_sizes(band_state *s, uint32_t blocks_down, uint64_t device_bytes, char *why, size_t whylen)
{
    size_t n = s->max_blocks, band_rows = (size_t)blocks_down * s->l.bh;
    if (s->l.block_bytes > SIZE_MAX / 4 / n || s->row_bytes > SIZE_MAX / 4 / band_rows) {
        snprintf(why, whylen, "TIFF on the GPU: bands too large");
        return IP_EUNSUPPORTED;
    }
    s->blocks_cap = (size_t)s->l.block_bytes * n;
    s->raw_cap = s->blocks_cap + s->blocks_cap / 8 + ((size_t)64 << 10);
    /* aligned, so that the adler32s after it are */
    s->staged_cap =
        (s->raw_cap + n * (ZLIB_FRAME_HEADER + 2 * NVCOMP_CHUNK_ALIGN)) / NVCOMP_CHUNK_ALIGN * NVCOMP_CHUNK_ALIGN;
    if (s->staged_cap > SIZE_MAX / 2 / GROUP_MOST || s->blocks_cap > SIZE_MAX / 2 / GROUP_MOST ||
        n > INT32_MAX / GROUP_MOST) {
        snprintf(why, whylen, "TIFF on the GPU: bands too large");
        return IP_EUNSUPPORTED;
    }
    if (s->staged_cap + s->blocks_cap > device_bytes) {
        snprintf(why, whylen, "TIFF on the GPU: a band needs %zu MiB of the GPU, over the %llu MiB it may take",
                 (s->staged_cap + s->blocks_cap) >> 20, (unsigned long long)(device_bytes >> 20));
        return IP_EUNSUPPORTED;
    }
    s->group = group_size(s, device_bytes);
    return IP_OK;
}

static int state_buffers(band_state *s, uint32_t blocks_down, char *why, size_t whylen)
{
    size_t n = (size_t)s->max_blocks * s->group, rows = s->row_bytes * blocks_down * s->l.bh, sums = 4 * n;
    s->chunks = calloc(n, sizeof *s->chunks);
    s->want = calloc(n, sizeof *s->want);
    s->adler = calloc(n, sizeof *s->adler);
    s->bands = calloc(s->group, sizeof *s->bands);
    if (!s->chunks || !s->want || !s->adler || !s->bands) {
        snprintf(why, whylen, "out of memory");
        return IP_ENOMEM;
    }
    int rc = io_gpu_scratch_pinned(s->c, IO_GPU_SCRATCH_A, s->staged_cap + sums, (void **)&s->host, why, whylen);
    if (!rc) rc = io_gpu_scratch_device(s->c, IO_GPU_SCRATCH_A, s->staged_cap * s->group + sums, (void **)&s->dev_comp,
                                        why, whylen);
    if (!rc) rc = io_gpu_scratch_device(s->c, IO_GPU_SCRATCH_B, s->blocks_cap * s->group, (void **)&s->dev_blocks, why,
                                        whylen);
    if (!rc && s->l.tiled) rc = io_gpu_scratch_device(s->c, IO_GPU_SCRATCH_C, rows, (void **)&s->dev_rows, why, whylen);
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
    rc = state_sizes(s, blocks_down, g->device_bytes, why, whylen);
    /* urgent: the streamed writer's strip compressor, on the same card, would hold the SMs */
    if (!rc) rc = io_gpu_codecs_open_own(&s->c, &s->stream, s->device, 1, why, whylen);
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

/* Band k's blocks staged as nvCOMP takes them (deflate's zlib frame taken off, its adler32 kept)
 * after the group's earlier ones, each decoding at its place among the band's blocks. */
static int stage_blocks(band_state *s, uint32_t k, const tiff_band_block *blocks, uint32_t n, size_t *staged,
                        char *why, size_t whylen)
{
    size_t at = 0;
    unsigned char *dev_comp = s->dev_comp + k * s->staged_cap, *dev_blocks = s->dev_blocks + k * s->blocks_cap;
    for (uint32_t i = 0; i < n; i++) {
        const tiff_band_block *b = &blocks[i];
        uint32_t c = s->n_chunks + i;
        size_t body_at = nvcomp_align_up(at + ZLIB_FRAME_HEADER);
        if (b->raw_len > s->staged_cap - body_at || b->len > s->l.block_bytes) {
            snprintf(why, whylen, "block %u past the GPU's band", b->index);
            return IP_EUNSUPPORTED;
        }
        size_t body = b->raw_len;
        int framed = s->l.codec == NVCOMP_DEFLATE;
        unsigned char *src = s->host + body_at - (framed ? ZLIB_FRAME_HEADER : 0);
        memcpy(src, b->raw, b->raw_len);
        if (framed && zlib_frame_split(src, b->raw_len, &body, &s->adler[c]) != 0) {
            snprintf(why, whylen, "block %u is not a zlib stream", b->index);
            return IP_EUNSUPPORTED;
        }
        s->chunks[c] = (nvcomp_chunk){ .src = dev_comp + body_at, .src_bytes = body,
                                       .dst = dev_blocks + (size_t)i * s->l.block_bytes,
                                       .dst_capacity = (size_t)s->l.block_bytes };
        s->want[c] = b->len;
        at = body_at + body;
    }
    *staged = at;
    return IP_OK;
}

/* The staging buffer is one band's: each band's upload is waited for before the next is staged. */
static int state_stage(void *state, uint32_t k, const tiff_band_block *blocks, uint32_t n, uint32_t band_rows,
                       char *why, size_t whylen)
{
    band_state *s = state;
    if (k >= s->group || n == 0 || n > s->max_blocks || (size_t)band_rows * s->row_bytes > s->blocks_cap) {
        snprintf(why, whylen, "band %u of %u blocks, over the GPU's %u of %u", k, n, s->group, s->max_blocks);
        return IP_EINVAL;
    }
    size_t staged = 0;
    double t[3] = { now_ms() };
    int rc = gpu_select(s->device, why, whylen);
    if (!rc) rc = stage_blocks(s, k, blocks, n, &staged, why, whylen);
    t[1] = now_ms();
    unsigned char *dev_comp = s->dev_comp + k * s->staged_cap;
    if (!rc) rc = gpu_copy2d(dev_comp, staged, s->host, staged, staged, 1, GPU_H2D, s->stream, why, whylen);
    if (!rc) rc = gpu_stream_sync(s->stream, why, whylen);
    t[2] = now_ms();
    s->ms[0] += t[1] - t[0];
    s->ms[1] += t[2] - t[1];
    if (rc) return rc;
    s->bands[k] = (staged_band){ s->n_chunks, n, band_rows };
    s->n_chunks += n;
    return IP_OK;
}

static int state_inflate(void *state, char *why, size_t whylen)
{
    band_state *s = state;
    double t0 = now_ms();
    int bad = -1;
    int rc = gpu_select(s->device, why, whylen);
    if (!rc) rc = nvcomp_decompress(s->c->batch, s->l.codec, (int)s->n_chunks, s->chunks, &bad, why, whylen);
    s->n_chunks = 0;   /* the next group's start; the bands keep where their blocks are */
    s->ms[2] += now_ms() - t0;
    return rc;
}

/* No block of band k short of what libtiff reads (tiff_gpu_blocks.h), and for deflate each one's
 * adler32 the one its trailer holds. */
static int check(band_state *s, uint32_t k, char *why, size_t whylen)
{
    const staged_band *b = &s->bands[k];
    const nvcomp_chunk *chunks = s->chunks + b->first;
    for (uint32_t i = 0; i < b->n; i++)
        if (chunks[i].dst_bytes < s->want[b->first + i]) {
            snprintf(why, whylen, "block %u of band %u inflates to %zu bytes, not %zu", i, k, chunks[i].dst_bytes,
                     s->want[b->first + i]);
            return IP_EUNSUPPORTED;
        }
    if (s->l.codec != NVCOMP_DEFLATE) return IP_OK;
    uint64_t bad = 0;
    unsigned char *dev_sums = s->dev_comp + s->staged_cap * s->group;
    int rc = tiff_gpu_blocks_adler(&s->l, s->dev_blocks + k * s->blocks_cap, b->n, chunks[b->n - 1].dst_bytes,
                                   s->adler + b->first, (uint32_t *)dev_sums, (uint32_t *)(s->host + s->staged_cap),
                                   s->stream, &bad, why, whylen);
    if (rc == IP_EUNSUPPORTED) snprintf(why, whylen, "block %llu of band %u: its adler32 differs",
                                        (unsigned long long)bad, k);
    return rc;
}

static int state_rows(void *state, uint32_t k, unsigned char *rows, char *why, size_t whylen)
{
    band_state *s = state;
    if (k >= s->group) {
        snprintf(why, whylen, "band %u of a group of %u", k, s->group);
        return IP_EINVAL;
    }
    const staged_band *b = &s->bands[k];
    unsigned char *blocks = s->dev_blocks + k * s->blocks_cap, *dev_rows = s->l.tiled ? s->dev_rows : blocks;
    size_t bytes = (size_t)b->rows * s->row_bytes;
    double t[3] = { now_ms() };
    int rc = gpu_select(s->device, why, whylen);
    if (!rc) rc = check(s, k, why, whylen);
    t[1] = now_ms();
    if (!rc) rc = tiff_gpu_blocks_finish(&s->l, blocks, b->n, b->rows, dev_rows, s->stream, why, whylen);
    if (!rc) rc = gpu_copy2d(rows, bytes, dev_rows, bytes, bytes, 1, GPU_D2H, s->stream, why, whylen);
    if (!rc) rc = gpu_stream_sync(s->stream, why, whylen);
    t[2] = now_ms();
    s->ms[3] += t[1] - t[0];
    s->ms[4] += t[2] - t[1];
    return rc;
}

int tiff_gpu_bands_create(tiff_gpu_bands **out, int gpu, uint64_t device_bytes, char *why, size_t whylen)
{
    *out = NULL;
    const char *on = getenv("IMGPIPE_TIFF_GPU_READ_BANDS");
    if (!on || strcmp(on, "1") != 0) {
        if (whylen) why[0] = '\0';
        return IP_EUNSUPPORTED;
    }
    int rc = io_gpu_nvcomp_usable(why, whylen);
    if (rc) return rc;
    tiff_gpu_bands *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(why, whylen, "out of memory");
        return IP_ENOMEM;
    }
    g->device = gpu;
    g->device_bytes = device_bytes ? device_bytes : GROUP_DEVICE_BYTES;
    g->decoder = (tiff_band_decoder){ state_open,  state_group,        state_stage,      state_inflate,
                                      state_rows,  state_close,        state_raw_capacity, state_held_bytes,
                                      state_describe, g };
    *out = g;
    return IP_OK;
}

#else

int tiff_gpu_bands_create(tiff_gpu_bands **out, int gpu, uint64_t device_bytes, char *why, size_t whylen)
{
    (void)gpu, (void)device_bytes;
    *out = NULL;
    snprintf(why, whylen, "TIFF on the GPU needs a CUDA build");
    return IP_EUNSUPPORTED;
}
#endif

const tiff_band_decoder *tiff_gpu_bands_decoder(const tiff_gpu_bands *g) { return g ? &g->decoder : NULL; }

void tiff_gpu_bands_destroy(tiff_gpu_bands *g) { free(g); }
