#define _POSIX_C_SOURCE 200809L
#include "io/tiff_gpu_strips.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "imgpipe/plugin.h"

struct tiff_gpu_strips {
    tiff_strip_batch_codec codec;
    int gpu_ids[64];
    int n_gpus;
    pthread_mutex_t mu;
    tiff_gpu_strips_stat stat;
};


#ifdef IMGPIPE_HAVE_CUDA
#include "base/image.h"
#include "base/mono_clock.h"
#include "gpu/gpu.h"
#include "io/codec_gpu.h"
#include "io/deflate_walk_gpu.h"
#include "io/tiff_gpu.h"
#include "io/zlib_frame.h"
#include "ipk_codec.h"

/* nvCOMP's deflate takes its chunks in parallel, each one serially, so a batch takes about as long
 * whatever its size: on the H100 32 MiB batches ran 190 MB/s a stream, 24 MiB ones 146
 * (bench/RESULTS.md). Strips of 64 KiB, or a row where that is longer; deflate strips go to nvCOMP
 * in pieces of about tiff_gpu_chunk_bytes, walked on the card and joined into each strip's stream,
 * as the whole-image writer's. IMGPIPE_TIFF_GPU_BATCH_MB, _STRIP_KB and _STATES (a GPU) override
 * them, for the bench. */
#define DEFAULT_BATCH_MB 32
#define DEFAULT_STRIP_KB 64
#define DEFAULT_STATES 2

typedef struct {
    tiff_gpu_strips *g;
    tiff_strip_format f;
    int device;
    void *stream;
    io_gpu_codecs *c;
    nvcomp_codec kind;
    int algorithm;
    size_t row_bytes, strip_bytes, pitch;
    size_t piece_bytes;        /* the most a piece holds: a whole strip for zstd, whose frames do not join */
    size_t slot;               /* a compressed piece's room, the join's spare included */
    uint32_t max_strips, max_pieces;
    unsigned char *host;       /* pinned: the batch's rows going up, then its slots coming back */
    unsigned char *dev_rows, *dev_pred, *dev_comp;
    unsigned long long *dev_walk, *host_walk;   /* the pieces' lengths, then their walks */
    nvcomp_chunk *chunks;      /* nvCOMP's chunk a piece, each in its slot */
    uint32_t *first_piece;     /* a batch's strip i has pieces [first_piece[i], first_piece[i + 1]) */
    uint32_t batch_strips, batch_pieces;   /* the batch's; walked where it has more pieces than strips */
} gpu_state;

static void state_close(void *state)
{
    gpu_state *s = state;
    if (!s) return;
    io_gpu_codecs_close_own(s->c, s->stream, s->device);
    free(s->chunks);
    free(s->first_piece);
    free(s);
}

static int strips_too_large(char *err, size_t errlen)
{
    snprintf(err, errlen, "strips too large for the GPU");
    return IP_ELIMIT;
}

/* Pieces of at most piece_bytes; a slot a piece with room for the join. */
static int plan_pieces(gpu_state *s, char *err, size_t errlen)
{
    s->piece_bytes = tiff_gpu_piece_bytes(s->kind, s->strip_bytes);
    size_t each = 0;
    uint64_t pieces = (uint64_t)s->max_strips * tiff_gpu_pieces(s->strip_bytes, s->piece_bytes, &each);
    if (pieces > UINT32_MAX / 4) return strips_too_large(err, errlen);
    s->max_pieces = (uint32_t)pieces;
    size_t bound = 0;
    int rc = nvcomp_max_compressed_bytes(s->c->nvcomp, s->kind, s->algorithm, s->piece_bytes, &bound, err, errlen);
    if (rc) return rc;
    if (bound > SIZE_MAX / 4) return strips_too_large(err, errlen);
    s->slot = nvcomp_slot_bytes(bound + NVCOMP_CHUNK_ALIGN + DEFLATE_JOIN_SPARE);
    return IP_OK;
}

/* Room for max_strips strips: their rows and predicted rows on the card, each compressed piece's
 * slot and the strips' adler32s after them, the walk's table; on the host one pinned buffer,
 * which the slots come back into once the rows have gone up on the same stream, and the table. */
static int state_buffers(gpu_state *s, char *err, size_t errlen)
{
    int rc = plan_pieces(s, err, errlen);
    if (rc) return rc;
    size_t n = s->max_strips, pieces = s->max_pieces;
    if (s->slot > (SIZE_MAX / 2 - 4 * n) / pieces || s->pitch > SIZE_MAX / 2 / n) return strips_too_large(err, errlen);
    size_t rows = s->pitch * n, comp = s->slot * pieces + 4 * n, walk = deflate_walk_gpu_table_bytes(pieces);
    s->chunks = calloc(pieces, sizeof *s->chunks);
    s->first_piece = calloc(n + 1, sizeof *s->first_piece);
    if (!s->chunks || !s->first_piece) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    rc = io_gpu_scratch_device(s->c, IO_GPU_SCRATCH_A, rows, (void **)&s->dev_rows, err, errlen);
    if (!rc) rc = io_gpu_scratch_device(s->c, IO_GPU_SCRATCH_B, rows, (void **)&s->dev_pred, err, errlen);
    if (!rc) rc = io_gpu_scratch_device(s->c, IO_GPU_SCRATCH_C, comp, (void **)&s->dev_comp, err, errlen);
    if (!rc) rc = io_gpu_scratch_pinned(s->c, IO_GPU_SCRATCH_A, rows > comp ? rows : comp, (void **)&s->host, err,
                                        errlen);
    if (!rc && s->piece_bytes < s->strip_bytes)
        rc = io_gpu_scratch_device(s->c, IO_GPU_SCRATCH_D, walk, (void **)&s->dev_walk, err, errlen);
    if (!rc && s->piece_bytes < s->strip_bytes)
        rc = io_gpu_scratch_pinned(s->c, IO_GPU_SCRATCH_D, walk, (void **)&s->host_walk, err, errlen);
    return rc;
}

static int state_open(const tiff_strip_batch_codec *codec, int which, const tiff_strip_format *f, uint32_t max_strips,
                      void **state, char *err, size_t errlen)
{
    tiff_gpu_strips *g = codec->user;
    io_options probe;
    io_default_options(&probe);
    probe.tiff_compression = f->compression;
    if (!tiff_gpu_encodable(&f->shape, &probe)) {
        snprintf(err, errlen, "this TIFF output cannot be compressed on the GPU");
        return IP_EUNSUPPORTED;
    }
    gpu_state *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    *s = (gpu_state){ .g = g, .f = *f, .device = g->gpu_ids[which % g->n_gpus], .max_strips = max_strips };
    s->kind = f->compression == IO_TIFF_ZSTD ? NVCOMP_ZSTD : NVCOMP_DEFLATE;
    s->algorithm = tiff_gpu_deflate_algorithm(f->level);
    s->row_bytes = img_row_bytes(&f->shape);
    s->strip_bytes = s->row_bytes * f->rows_per_strip;
    /* zstd wants its chunks aligned; deflate takes them back to back, predicted in one pass */
    s->pitch = s->kind == NVCOMP_ZSTD ? nvcomp_align_up(s->strip_bytes) : s->strip_bytes;
    int rc = io_gpu_codecs_open_own(&s->c, &s->stream, s->device, 0, err, errlen);
    if (!rc) rc = state_buffers(s, err, errlen);
    if (rc) {
        state_close(s);
        return rc;
    }
    *state = s;
    return IP_OK;
}

/* The batch's rows on the card, the predictor applied and, for deflate, each strip's adler32:
 * strips back to back take one launch each, aligned ones one a strip. */
static int predict(gpu_state *s, const tiff_strip_job *jobs, uint32_t n, char *err, size_t errlen)
{
    const ip_shape *sh = &s->f.shape;
    int sample = (int)ip_dtype_size(sh->dtype);
    size_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        memcpy(s->host + i * s->pitch, jobs[i].rows, jobs[i].len);
        total += jobs[i].len;
    }
    size_t span = (n - 1) * s->pitch + jobs[n - 1].len;
    int rc = gpu_copy2d(s->dev_rows, span, s->host, span, span, 1, GPU_H2D, s->stream, err, errlen);
    uint32_t *sums = (uint32_t *)(s->dev_comp + s->slot * s->max_pieces);
    int deflate = s->kind == NVCOMP_DEFLATE;
    if (!rc && s->pitch == s->strip_bytes) {
        int rows = (int)(total / s->row_bytes);
        rc = io_gpu_kernel_rc(ipk_tiff_predictor_apply(s->dev_rows, s->row_bytes, s->dev_pred, s->row_bytes, sh->width,
                                                       rows, sh->channels, sample, s->stream),
                              "predictor", err, errlen);
        if (!rc && deflate)
            rc = io_gpu_kernel_rc(ipk_adler32_spans(s->dev_pred, total, s->strip_bytes, sums, s->stream), "adler32",
                                  err, errlen);
        return rc;
    }
    for (uint32_t i = 0; !rc && i < n; i++) {
        size_t at = i * s->pitch;
        int rows = (int)(jobs[i].len / s->row_bytes);
        rc = io_gpu_kernel_rc(ipk_tiff_predictor_apply(s->dev_rows + at, s->row_bytes, s->dev_pred + at, s->row_bytes,
                                                       sh->width, rows, sh->channels, sample, s->stream),
                              "predictor", err, errlen);
        if (!rc && deflate)
            rc = io_gpu_kernel_rc(ipk_adler32_spans(s->dev_pred + at, jobs[i].len, jobs[i].len, sums + i, s->stream),
                                  "adler32", err, errlen);
    }
    return rc;
}

/* The batch's strips for nvCOMP, each strip's predicted rows in pieces (tiff_gpu_pieces), a slot
 * each: the number of pieces. */
static uint32_t list_pieces(gpu_state *s, const tiff_strip_job *jobs, uint32_t n)
{
    uint32_t p = 0;
    for (uint32_t i = 0; i < n; i++) {
        s->first_piece[i] = p;
        p += tiff_gpu_strip_chunks(s->dev_pred + i * s->pitch, jobs[i].len, s->piece_bytes, s->dev_comp, s->slot, p,
                                   s->chunks);
    }
    s->first_piece[n] = p;
    s->batch_strips = n;
    s->batch_pieces = p;
    return p;
}

/* Walks the pieces on the card where strips have several (to find each one's final block for the
 * join), then brings every slot back as far as the longest piece reaches, and the strips'
 * adler32s. */
static int download(gpu_state *s, uint32_t strips, uint32_t pieces, char *err, size_t errlen)
{
    size_t longest = 0;
    for (uint32_t p = 0; p < pieces; p++) {
        if (s->chunks[p].dst_bytes > s->chunks[p].dst_capacity) {
            snprintf(err, errlen, "the GPU's compressor gave a chunk of %zu bytes, over its %zu",
                     s->chunks[p].dst_bytes, s->chunks[p].dst_capacity);
            return IP_ECUDA;
        }
        longest = s->chunks[p].dst_bytes > longest ? s->chunks[p].dst_bytes : longest;
    }
    int rc = IP_OK;
    if (pieces > strips)
        rc = deflate_walk_gpu_queue(s->c, s->dev_comp + NVCOMP_CHUNK_ALIGN, s->slot, s->chunks, pieces, s->dev_walk,
                                    s->host_walk, err, errlen);
    size_t sums_at = s->slot * s->max_pieces;
    if (!rc) rc = gpu_copy2d(s->host + NVCOMP_CHUNK_ALIGN, s->slot, s->dev_comp + NVCOMP_CHUNK_ALIGN, s->slot,
                             longest, pieces, GPU_D2H, s->stream, err, errlen);
    if (!rc) rc = gpu_copy2d(s->host + sums_at, 4 * (size_t)strips, s->dev_comp + sums_at, 4 * (size_t)strips,
                             4 * (size_t)strips, 1, GPU_D2H, s->stream, err, errlen);
    if (!rc) rc = gpu_stream_sync(s->stream, err, errlen);
    return rc;
}

static int no_stream(const gpu_state *s, const tiff_strip_job *job, char *err, size_t errlen)
{
    const char *codec = s->kind == NVCOMP_ZSTD ? "zstd" : "deflate";
    snprintf(err, errlen, "the GPU's %s gave strip %u as no valid %s stream", codec, job->index, codec);
    return IP_ECUDA;
}

/* Strip i's pieces into its job, joined, in zlib's frame for deflate (the header, the adler32). */
static int hand_back(gpu_state *s, uint32_t i, tiff_strip_job *job, char *err, size_t errlen)
{
    uint32_t pieces = s->first_piece[i + 1] - s->first_piece[i];
    size_t room = 0;
    for (uint32_t p = s->first_piece[i]; p < s->first_piece[i + 1]; p++) room += s->chunks[p].dst_bytes;
    int framed = s->kind == NVCOMP_DEFLATE;
    tiff_strip_bytes *out = job->out;
    size_t frame = framed ? ZLIB_FRAME_HEADER + ZLIB_FRAME_TRAILER : 0;
    int rc = tiff_strip_bytes_grow(out, room + (size_t)pieces * DEFLATE_JOIN_SPARE + frame, err, errlen);
    if (rc != IP_OK) return rc;
    unsigned char *at = out->data;
    if (framed) zlib_frame_header(s->f.level > 0 ? s->f.level : 6, at);
    at += framed ? ZLIB_FRAME_HEADER : 0;
    const unsigned long long *walks = s->batch_pieces > s->batch_strips ? s->host_walk : NULL;
    size_t body = deflate_walk_gpu_join(s->host + NVCOMP_CHUNK_ALIGN, s->slot, s->chunks, walks, s->batch_pieces,
                                        s->first_piece[i], s->first_piece[i + 1], at);
    if (body == 0) return no_stream(s, job, err, errlen);
    at += body;
    if (framed) {
        const uint32_t *sums = (const uint32_t *)(s->host + s->slot * s->max_pieces);
        zlib_frame_trailer(sums[i], at);
        at += ZLIB_FRAME_TRAILER;
    }
    out->len = (size_t)(at - out->data);
    return IP_OK;
}

static int state_compress(void *state, tiff_strip_job *jobs, uint32_t n, char *err, size_t errlen)
{
    gpu_state *s = state;
    double t0 = now_ms();
    if (n == 0) return IP_OK;
    for (uint32_t i = 0; i < n; i++)
        if (jobs[i].len == 0 || jobs[i].len > s->strip_bytes) {
            snprintf(err, errlen, "a GPU batch's strip of %zu bytes, past its %zu", jobs[i].len, s->strip_bytes);
            return IP_EINVAL;
        }
    if (n > s->max_strips) {
        snprintf(err, errlen, "a GPU batch of %u strips, over its %u", n, s->max_strips);
        return IP_EINVAL;
    }
    int rc = gpu_select(s->device, err, errlen);
    if (!rc) rc = predict(s, jobs, n, err, errlen);
    uint32_t pieces = rc ? 0 : list_pieces(s, jobs, n);
    if (!rc) rc = nvcomp_compress(s->c->batch, s->kind, s->algorithm, (int)pieces, s->chunks, err, errlen);
    if (!rc) rc = download(s, n, pieces, err, errlen);
    uint64_t in = 0, out = 0;
    for (uint32_t i = 0; !rc && i < n; i++) {
        rc = hand_back(s, i, &jobs[i], err, errlen);
        in += jobs[i].len;
        out += jobs[i].out->len;
    }
    if (rc) return rc;
    pthread_mutex_lock(&s->g->mu);
    s->g->stat.strips += n;
    s->g->stat.pieces += pieces;
    s->g->stat.batches++;
    s->g->stat.bytes_in += in;
    s->g->stat.bytes_out += out;
    s->g->stat.busy_ms += now_ms() - t0;
    pthread_mutex_unlock(&s->g->mu);
    return IP_OK;
}

int tiff_gpu_strips_create(tiff_gpu_strips **out, const int *gpu_ids, int n_gpus, char *why, size_t whylen)
{
    *out = NULL;
    int rc = io_gpu_nvcomp_usable(why, whylen);
    if (rc) return rc;
    tiff_gpu_strips *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(why, whylen, "out of memory");
        return IP_ENOMEM;
    }
    for (int i = 0; i < (n_gpus < 1 ? 1 : n_gpus) && g->n_gpus < 64; i++) {
        int id = n_gpus < 1 ? 0 : gpu_ids[i], seen = 0;
        for (int k = 0; k < g->n_gpus; k++) seen |= g->gpu_ids[k] == id;
        if (!seen) g->gpu_ids[g->n_gpus++] = id;
    }
    int states = (int)io_gpu_env_long("IMGPIPE_TIFF_GPU_STATES", DEFAULT_STATES, 1, 8);
    uint64_t batch = (uint64_t)io_gpu_env_long("IMGPIPE_TIFF_GPU_BATCH_MB", DEFAULT_BATCH_MB, 1, 1024) << 20;
    uint64_t strip = (uint64_t)io_gpu_env_long("IMGPIPE_TIFF_GPU_STRIP_KB", DEFAULT_STRIP_KB, 0, 65536) << 10;
    /* pinned: a batch's compressed slots (deflate's bound a little over the rows, and a piece's
     * alignment and join spare), and nvCOMP's and CUDA's own host memory */
    uint64_t slots = batch + (batch >> 3);
    g->codec = (tiff_strip_batch_codec){ state_open, state_compress, state_close, states * g->n_gpus, batch,
                                         slots + ((uint64_t)16 << 20), strip, g };
    g->stat.states = states * g->n_gpus;
    pthread_mutex_init(&g->mu, NULL);
    *out = g;
    return IP_OK;
}

void tiff_gpu_strips_destroy(tiff_gpu_strips *g)
{
    if (!g) return;
    pthread_mutex_destroy(&g->mu);
    free(g);
}

void tiff_gpu_strips_stats(tiff_gpu_strips *g, tiff_gpu_strips_stat *st)
{
    pthread_mutex_lock(&g->mu);
    *st = g->stat;
    pthread_mutex_unlock(&g->mu);
}

#else

int tiff_gpu_strips_create(tiff_gpu_strips **out, const int *gpu_ids, int n_gpus, char *why, size_t whylen)
{
    (void)gpu_ids, (void)n_gpus;
    *out = NULL;
    snprintf(why, whylen, "TIFF on the GPU needs a CUDA build");
    return IP_EUNSUPPORTED;
}

void tiff_gpu_strips_destroy(tiff_gpu_strips *g) { (void)g; }

void tiff_gpu_strips_stats(tiff_gpu_strips *g, tiff_gpu_strips_stat *st)
{
    (void)g;
    memset(st, 0, sizeof *st);
}
#endif

const tiff_strip_batch_codec *tiff_gpu_strips_codec(const tiff_gpu_strips *g) { return g ? &g->codec : NULL; }
