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
/* and no more than this much inflated in the groups in flight: large strips need far fewer */
#define GROUP_INFLATED_BYTES ((size_t)512 << 20)
#define GROUP_MOST 64
/* Groups in flight: while one group's rows go back, the next is read, uploaded and inflated on a
 * stream of its own. */
#define DEPTH_MOST 2

typedef struct {
    uint32_t first, n, rows;   /* its blocks in the groups' chunks, and its rows */
    int rc;                    /* once its group is judged: not IP_OK, why it goes to libtiff */
    char why[128];
} staged_band;

typedef struct {
    io_gpu_codecs *c;          /* its nvCOMP batch, and the scratch its buffers are in */
    void *stream;
    unsigned char *dev_comp;   /* the group's bands as staged, staged_cap apart, then the adler32s */
    unsigned char *dev_blocks; /* the group's blocks inflated, blocks_cap a band: a strip band's rows */
    uint32_t n_chunks;         /* staged since its last inflate */
    uint64_t staged;           /* its bands staged since then, bit j for the jth */
    uint64_t inflating;        /* those of the inflate queued last */
    uint32_t queued;           /* chunks whose inflate is queued and not yet judged */
    int rc;                    /* the last inflate's verdict: not IP_OK, each of its bands goes to libtiff */
    char why[160];
} band_group;

typedef struct {
    int device;
    tiff_gpu_layout l;         /* the file's blocks (its handle the reader's, not kept) */
    uint32_t max_blocks, group, depth;
    size_t row_bytes, raw_cap, staged_cap, blocks_cap;   /* blocks_cap: a band's blocks inflated */
    band_group groups[DEPTH_MOST];
    uint32_t staging;          /* the group of the band staged last */
    unsigned char *host;       /* pinned: a band's blocks as read, then each group's adler32s */
    uint32_t *host_sums;
    unsigned char *dev_rows;   /* tiles: a band's rows they are copied into */
    nvcomp_chunk *chunks;      /* group g's blocks from g * group * max_blocks on, band after band */
    size_t *want;              /* what each decodes to, as libtiff reads it */
    uint32_t *adler;           /* from each block's zlib trailer */
    staged_band *bands;        /* band k in group k / group */
    double ms[4];              /* staging, upload, inflate and checks (queuing, waiting), rows back: --profile */
} band_state;

static void state_close(void *state)
{
    band_state *s = state;
    if (!s) return;
    for (uint32_t g = 0; g < DEPTH_MOST; g++) io_gpu_codecs_close_own(s->groups[g].c, s->groups[g].stream, s->device);
    free(s->chunks);
    free(s->want);
    free(s->adler);
    free(s->bands);
    free(s);
}

static void state_describe(const void *state, char *text, size_t len)
{
    const band_state *s = state;
    snprintf(text, len, "%u bands a batch, %u batches in flight; staging %.0f ms, upload %.0f ms, inflate and checks "
             "%.0f ms, rows back %.0f ms", s->group, s->depth, s->ms[0], s->ms[1], s->ms[2], s->ms[3]);
}

static uint32_t state_group(const void *state) { return ((const band_state *)state)->group; }
static uint32_t state_depth(const void *state) { return ((const band_state *)state)->depth; }
static size_t state_raw_capacity(const void *state) { return ((const band_state *)state)->raw_cap; }

static uint64_t state_held_bytes(const void *state)
{
    const band_state *s = state;
    const io_gpu_codecs *c = s->groups[0].c;
    return c && c->scratch ? c->scratch->pinned_bytes[IO_GPU_SCRATCH_A] : 0;
}

/* Bands a group: IMGPIPE_TIFF_GPU_BAND_GROUP when set (1 to 64, for measuring), else enough for
 * GROUP_BLOCKS blocks in all the groups in flight, within GROUP_INFLATED_BYTES and device_bytes. */
static uint32_t group_size(const band_state *s, uint64_t device_bytes)
{
    long asked = io_gpu_env_long("IMGPIPE_TIFF_GPU_BAND_GROUP", 0, 0, GROUP_MOST);
    if (asked >= 1) return (uint32_t)asked;
    size_t per_band = (s->staged_cap + s->blocks_cap) * s->depth, per_group = (size_t)s->max_blocks * s->depth;
    size_t by_blocks = (GROUP_BLOCKS + per_group - 1) / per_group;
    size_t by_bytes = GROUP_INFLATED_BYTES / (s->blocks_cap * s->depth);
    size_t by_memory = device_bytes / per_band;
    size_t g = by_blocks < by_memory ? by_blocks : by_memory;
    if (by_bytes < g) g = by_bytes;
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
    if (s->staged_cap > SIZE_MAX / 2 / GROUP_MOST / DEPTH_MOST ||
        s->blocks_cap > SIZE_MAX / 2 / GROUP_MOST / DEPTH_MOST || n > INT32_MAX / GROUP_MOST / DEPTH_MOST) {
        snprintf(why, whylen, "TIFF on the GPU: bands too large");
        return IP_EUNSUPPORTED;
    }
    if ((s->staged_cap + s->blocks_cap) * s->depth > device_bytes) {
        snprintf(why, whylen, "TIFF on the GPU: a band needs %zu MiB of the GPU, over the %llu MiB it may take",
                 ((s->staged_cap + s->blocks_cap) * s->depth) >> 20, (unsigned long long)(device_bytes >> 20));
        return IP_EUNSUPPORTED;
    }
    s->group = group_size(s, device_bytes);
    return IP_OK;
}

static int state_buffers(band_state *s, uint32_t blocks_down, char *why, size_t whylen)
{
    size_t n = (size_t)s->max_blocks * s->group, rows = s->row_bytes * blocks_down * s->l.bh, sums = 4 * n;
    s->chunks = calloc(n * s->depth, sizeof *s->chunks);
    s->want = calloc(n * s->depth, sizeof *s->want);
    s->adler = calloc(n * s->depth, sizeof *s->adler);
    s->bands = calloc((size_t)s->group * s->depth, sizeof *s->bands);
    if (!s->chunks || !s->want || !s->adler || !s->bands) {
        snprintf(why, whylen, "out of memory");
        return IP_ENOMEM;
    }
    const io_gpu_codecs *first = s->groups[0].c;
    int rc = io_gpu_scratch_pinned(first, IO_GPU_SCRATCH_A, s->staged_cap + sums * s->depth, (void **)&s->host, why,
                                   whylen);
    s->host_sums = rc ? NULL : (uint32_t *)(s->host + s->staged_cap);
    for (uint32_t g = 0; !rc && g < s->depth; g++) {
        band_group *G = &s->groups[g];
        rc = io_gpu_scratch_device(G->c, IO_GPU_SCRATCH_A, s->staged_cap * s->group + sums, (void **)&G->dev_comp,
                                   why, whylen);
        if (!rc) rc = io_gpu_scratch_device(G->c, IO_GPU_SCRATCH_B, s->blocks_cap * s->group, (void **)&G->dev_blocks,
                                            why, whylen);
    }
    if (!rc && s->l.tiled) rc = io_gpu_scratch_device(first, IO_GPU_SCRATCH_C, rows, (void **)&s->dev_rows, why, whylen);
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
                       .row_bytes = img_row_bytes(&shape),
                       .depth = (uint32_t)io_gpu_env_long("IMGPIPE_TIFF_GPU_BAND_DEPTH", DEPTH_MOST, 1, DEPTH_MOST) };
    rc = state_sizes(s, blocks_down, g->device_bytes, why, whylen);
    /* urgent: the streamed writer's strip compressor, on the same card, would hold the SMs */
    for (uint32_t k = 0; !rc && k < s->depth; k++)
        rc = io_gpu_codecs_open_own(&s->groups[k].c, &s->groups[k].stream, s->device, 1, why, whylen);
    if (!rc && s->l.block_bytes > nvcomp_max_chunk(s->groups[0].c->nvcomp)) {
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

/* Where a block of raw_len bytes as stored goes in the staging buffer after the band's bytes so
 * far (*at, moved past it): its deflate body aligned for nvCOMP, its zlib header just before.
 * SIZE_MAX when it does not fit. */
static size_t block_place(const band_state *s, size_t *at, size_t raw_len)
{
    size_t head = s->l.codec == NVCOMP_DEFLATE ? ZLIB_FRAME_HEADER : 0;
    size_t body_at = nvcomp_align_up(*at + ZLIB_FRAME_HEADER);
    if (body_at > s->staged_cap || raw_len > s->staged_cap - body_at) return SIZE_MAX;
    *at = body_at - head + raw_len;
    return body_at - head;
}

static int band_fits(const band_state *s, uint32_t k, uint32_t n, char *why, size_t whylen)
{
    if (k < s->group * s->depth && n > 0 && n <= s->max_blocks) return IP_OK;
    snprintf(why, whylen, "band %u of %u blocks, over the GPU's %u of %u", k, n, s->group * s->depth, s->max_blocks);
    return IP_EINVAL;
}

static int state_place(void *state, uint32_t k, const tiff_band_block *blocks, uint32_t n, unsigned char **to,
                       char *why, size_t whylen)
{
    band_state *s = state;
    size_t at = 0;
    int rc = band_fits(s, k, n, why, whylen);
    for (uint32_t i = 0; !rc && i < n; i++) {
        size_t place = block_place(s, &at, blocks[i].raw_len);
        if (place == SIZE_MAX) {
            snprintf(why, whylen, "block %u past the GPU's band", blocks[i].index);
            return IP_EUNSUPPORTED;
        }
        to[i] = s->host + place;
    }
    return rc;
}

/* Band k's blocks staged as nvCOMP takes them (deflate's zlib frame taken off, its adler32 kept)
 * after its group's earlier ones, each decoding at its place among the band's blocks; blocks
 * already read to their place (state_place) are not copied. */
static int stage_blocks(band_state *s, uint32_t k, const tiff_band_block *blocks, uint32_t n, size_t *staged,
                        char *why, size_t whylen)
{
    band_group *G = &s->groups[k / s->group];
    size_t at = 0, j = k % s->group;
    unsigned char *dev_comp = G->dev_comp + j * s->staged_cap, *dev_blocks = G->dev_blocks + j * s->blocks_cap;
    uint32_t base = k / s->group * s->group * s->max_blocks + G->n_chunks;
    for (uint32_t i = 0; i < n; i++) {
        const tiff_band_block *b = &blocks[i];
        uint32_t c = base + i;
        size_t place = block_place(s, &at, b->raw_len);
        if (place == SIZE_MAX || b->len > s->l.block_bytes) {
            snprintf(why, whylen, "block %u past the GPU's band", b->index);
            return IP_EUNSUPPORTED;
        }
        size_t body = b->raw_len;
        int framed = s->l.codec == NVCOMP_DEFLATE;
        unsigned char *src = s->host + place;
        if (src != b->raw) memcpy(src, b->raw, b->raw_len);
        if (framed && zlib_frame_split(src, b->raw_len, &body, &s->adler[c]) != 0) {
            snprintf(why, whylen, "block %u is not a zlib stream", b->index);
            return IP_EUNSUPPORTED;
        }
        size_t body_at = place + (framed ? ZLIB_FRAME_HEADER : 0);
        s->chunks[c] = (nvcomp_chunk){ .src = dev_comp + body_at, .src_bytes = body,
                                       .dst = dev_blocks + (size_t)i * s->l.block_bytes,
                                       .dst_capacity = (size_t)s->l.block_bytes };
        s->want[c] = b->len;
    }
    *staged = at;
    return IP_OK;
}

/* Band k's verdict from its group's inflate: no block short of what libtiff reads
 * (tiff_gpu_blocks.h), and for deflate each one's adler32 the one its trailer holds. Bands are
 * named by their place in their group. */
static void judge_band(band_state *s, uint32_t k)
{
    staged_band *b = &s->bands[k];
    const nvcomp_chunk *chunks = s->chunks + b->first;
    uint32_t j = k % s->group;
    for (uint32_t i = 0; i < b->n; i++)
        if (chunks[i].dst_bytes < s->want[b->first + i]) {
            snprintf(b->why, sizeof b->why, "block %u of band %u inflates to %zu bytes, not %zu", i, j,
                     chunks[i].dst_bytes, s->want[b->first + i]);
            b->rc = IP_EUNSUPPORTED;
            return;
        }
    uint64_t bad = 0;
    if (s->l.codec == NVCOMP_DEFLATE &&
        tiff_gpu_blocks_sums_differ(s->host_sums + b->first, s->adler + b->first, b->n, &bad)) {
        snprintf(b->why, sizeof b->why, "block %llu of band %u: its adler32 differs", (unsigned long long)bad, j);
        b->rc = IP_EUNSUPPORTED;
    }
}

/* A group's inflate and checks waited for, once; the verdicts then stand for each of its bands. */
static int group_judged(band_state *s, uint32_t g)
{
    band_group *G = &s->groups[g];
    if (!G->queued) return G->rc;
    double t0 = now_ms();
    int bad = -1;
    G->rc = gpu_select(s->device, G->why, sizeof G->why);
    if (!G->rc) G->rc = nvcomp_decompress_finish(G->c->batch, s->l.codec, (int)G->queued,
                                                 s->chunks + (size_t)g * s->group * s->max_blocks, &bad, G->why,
                                                 sizeof G->why);
    for (uint32_t j = 0; !G->rc && j < s->group; j++)
        if (G->inflating >> j & 1) judge_band(s, g * s->group + j);
    G->queued = 0;
    s->ms[2] += now_ms() - t0;
    return G->rc;
}

/* The staging buffer is one band's: each band's upload is waited for before the next is staged.
 * A group is staged again only once its rows have all gone back (tiff_band_decode.h). */
static int state_stage(void *state, uint32_t k, const tiff_band_block *blocks, uint32_t n, uint32_t band_rows,
                       char *why, size_t whylen)
{
    band_state *s = state;
    int rc = band_fits(s, k, n, why, whylen);
    if (rc) return rc;
    if ((size_t)band_rows * s->row_bytes > s->blocks_cap) {
        snprintf(why, whylen, "band %u of %u rows, over the GPU's band", k, band_rows);
        return IP_EINVAL;
    }
    uint32_t g = k / s->group;
    band_group *G = &s->groups[g];
    group_judged(s, g);   /* an inflate nobody took the rows of: waited for before its buffers are reused */
    size_t staged = 0;
    double t[3] = { now_ms() };
    rc = gpu_select(s->device, why, whylen);
    if (!rc) rc = stage_blocks(s, k, blocks, n, &staged, why, whylen);
    t[1] = now_ms();
    unsigned char *dev_comp = G->dev_comp + (size_t)(k % s->group) * s->staged_cap;
    if (!rc) rc = gpu_copy2d(dev_comp, staged, s->host, staged, staged, 1, GPU_H2D, G->stream, why, whylen);
    if (!rc) rc = gpu_stream_sync(G->stream, why, whylen);
    t[2] = now_ms();
    s->ms[0] += t[1] - t[0];
    s->ms[1] += t[2] - t[1];
    if (rc) return rc;
    s->bands[k] = (staged_band){ g * s->group * s->max_blocks + G->n_chunks, n, band_rows, IP_OK, "" };
    G->n_chunks += n;
    G->staged |= (uint64_t)1 << (k % s->group);
    s->staging = g;
    return IP_OK;
}

/* Behind the inflate, on its stream, each staged band's adler32s and its predictor undone in
 * place, so that the group is waited for once. A band's last block is summed over what libtiff
 * reads of it: a strip padded past its rows goes to libtiff. */
static int queue_checks(band_state *s, uint32_t g, char *why, size_t whylen)
{
    band_group *G = &s->groups[g];
    uint32_t base = g * s->group * s->max_blocks;
    int rc = IP_OK;
    for (uint32_t j = 0; !rc && j < s->group; j++) {
        if (!(G->inflating >> j & 1)) continue;
        const staged_band *b = &s->bands[g * s->group + j];
        unsigned char *blocks = G->dev_blocks + (size_t)j * s->blocks_cap;
        uint32_t *dev_sums = (uint32_t *)(G->dev_comp + s->staged_cap * s->group) + (b->first - base);
        if (s->l.codec == NVCOMP_DEFLATE)
            rc = tiff_gpu_blocks_queue_adler(&s->l, blocks, b->n, s->want[b->first + b->n - 1], dev_sums,
                                             s->host_sums + b->first, G->stream, why, whylen);
        if (!rc) rc = tiff_gpu_blocks_queue_predictor(&s->l, blocks, b->n, b->rows, G->stream, why, whylen);
    }
    return rc;
}

/* The group staged last queued for inflating and checking; waited for when its first band's rows
 * are asked. */
static int state_inflate(void *state, char *why, size_t whylen)
{
    band_state *s = state;
    uint32_t g = s->staging;
    band_group *G = &s->groups[g];
    double t0 = now_ms();
    G->inflating = G->staged;
    G->staged = 0;
    int rc = gpu_select(s->device, why, whylen);
    if (!rc) rc = nvcomp_decompress_start(G->c->batch, s->l.codec, (int)G->n_chunks,
                                          s->chunks + (size_t)g * s->group * s->max_blocks, why, whylen);
    if (!rc) rc = queue_checks(s, g, why, whylen);
    if (rc) gpu_stream_sync(G->stream, NULL, 0);   /* nothing of the group's may still be read */
    G->queued = rc ? 0 : G->n_chunks;
    G->rc = rc;
    G->n_chunks = 0;   /* the next staging's start; the bands keep where their blocks are */
    s->ms[2] += now_ms() - t0;
    return rc;
}

static int state_rows(void *state, uint32_t k, unsigned char *rows, char *why, size_t whylen)
{
    band_state *s = state;
    if (k >= s->group * s->depth) {
        snprintf(why, whylen, "band %u of %u groups of %u", k, s->depth, s->group);
        return IP_EINVAL;
    }
    uint32_t g = k / s->group;
    band_group *G = &s->groups[g];
    if (group_judged(s, g) != IP_OK) {
        snprintf(why, whylen, "%s", G->why);
        return G->rc;
    }
    const staged_band *b = &s->bands[k];
    if (b->rc != IP_OK) {
        snprintf(why, whylen, "%s", b->why);
        return b->rc;
    }
    unsigned char *blocks = G->dev_blocks + (size_t)(k % s->group) * s->blocks_cap;
    unsigned char *dev_rows = s->l.tiled ? s->dev_rows : blocks;
    size_t bytes = (size_t)b->rows * s->row_bytes;
    double t0 = now_ms();
    int rc = gpu_select(s->device, why, whylen);
    if (!rc) rc = tiff_gpu_blocks_queue_tiles(&s->l, blocks, b->rows, dev_rows, G->stream, why, whylen);
    if (!rc) rc = gpu_copy2d(rows, bytes, dev_rows, bytes, bytes, 1, GPU_D2H, G->stream, why, whylen);
    if (!rc) rc = gpu_stream_sync(G->stream, why, whylen);
    s->ms[3] += now_ms() - t0;
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
    g->decoder = (tiff_band_decoder){ .open = state_open, .group = state_group, .stage = state_stage,
                                      .place = state_place, .inflate = state_inflate, .rows = state_rows,
                                      .depth = state_depth,
                                      .close = state_close, .raw_capacity = state_raw_capacity,
                                      .held_bytes = state_held_bytes, .describe = state_describe, .user = g };
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
