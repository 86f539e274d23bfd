/* TIFF written from a device image: the CPU writer's tags and strips, the last strips compressed
 * on the card (the predictor applied into a scratch, nvCOMP's batch of 16 KiB pieces, walked there
 * and joined into each strip's stream, framed by zlib's header and the strip's adler32) while the
 * cores compress the first ones from a downloaded copy, then all written by libtiff, atomically. */
#define _POSIX_C_SOURCE 200809L
#include "io/tiff_gpu.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "base/image.h"
#include "gpu/gpu.h"
#include "io/deflate_walk_gpu.h"
#include "io/io_internal.h"
#include "io/io_tiff_handle.h"
#include "io/io_tiff_strip_cpu.h"
#include "io/meta_tiff.h"
#include "io/zlib_frame.h"

#ifdef IMGPIPE_HAVE_CUDA
#include "ipk_codec.h"

/* A device image whose rows the kernels can read: whole samples, no overlap. */
static int device_rows_ok(const ip_image *img)
{
    return img->on_device && img->data && img->stride >= (ptrdiff_t)img_row_bytes(&img->shape) &&
           img->stride % (ptrdiff_t)ip_dtype_size(img->shape.dtype) == 0;
}

typedef struct {
    const io_gpu_codecs *c;
    const ip_image *img;
    const io_options *opt;
    char *err;
    size_t errlen;
    nvcomp_codec codec;
    int algorithm;
    size_t row_bytes, strip_bytes;
    size_t piece_bytes;         /* the card's deflate chunks: strips cut in pieces, joined after */
    uint32_t pieces_per_strip, pieces;
    size_t slot;                /* a compressed piece's room, framing and the join's spare included */
    size_t strip_pitch;         /* strips' distance in the predicted image: zstd wants them aligned */
    uint32_t rps, strips;
    uint32_t first_card;        /* strips [0, first_card) compressed by the cores, the rest by the card */
    uint32_t card_strips;
    int card_pending;           /* the card's batch queued and not yet waited for */
    unsigned char *cpu_rows;    /* pinned: the cores' strips' rows, packed */
    unsigned char *predicted;   /* device: the card's strips' rows, packed, the predictor applied */
    unsigned char *dev_comp;    /* device: a slot a piece, then the card strips' adler32s */
    unsigned char *host;        /* pinned: the same */
    unsigned long long *dev_walk, *host_walk;   /* the pieces' lengths, then their walks */
    unsigned char *joined;      /* a card strip's pieces joined, framed */
    nvcomp_chunk *chunks;       /* a piece each */
} gpu_write;

static int ipk_fail(gpu_write *w, int status, const char *what)
{
    if (status == 0) return IP_OK;
    snprintf(w->err, w->errlen, "cannot write TIFF: GPU %s failed (ipk status %d)", what, status);
    return IP_ECUDA;
}

static int too_large(gpu_write *w)
{
    snprintf(w->err, w->errlen, "cannot write TIFF: image too large");
    return IP_ELIMIT;
}

/* The card takes share of the strips, the last ones; none (the cores alone, the CPU writer's
 * bytes) where that rounds to no strip. */
static void share_strips(gpu_write *w, double share)
{
    const ip_shape *s = &w->img->shape;
    w->rps = tiff_rows_per_strip(s);
    w->strips = (uint32_t)(((uint64_t)s->height + w->rps - 1) / w->rps);
    w->card_strips = share >= 1 ? w->strips : share > 0 ? (uint32_t)floor(share * w->strips + 0.5) : 0;
    w->first_card = w->strips - w->card_strips;
}

static uint32_t strip_rows(const gpu_write *w, uint32_t i)
{
    uint32_t height = (uint32_t)w->img->shape.height;
    return height - i * w->rps < w->rps ? height - i * w->rps : w->rps;
}

/* Pieces of card strip j (counted from the card's first strip), and each one's length. */
static uint32_t strip_pieces(const gpu_write *w, uint32_t j, size_t *each)
{
    return tiff_gpu_pieces((size_t)strip_rows(w, w->first_card + j) * w->row_bytes, w->piece_bytes, each);
}

static int out_of_memory(gpu_write *w)
{
    snprintf(w->err, w->errlen, "out of memory");
    return IP_ENOMEM;
}

/* The card's strips in pieces (zstd's whole: its frames do not join), a slot a piece. */
static int plan_pieces(gpu_write *w)
{
    w->piece_bytes = tiff_gpu_piece_bytes(w->codec, w->strip_bytes);
    size_t each = 0;
    w->pieces_per_strip = tiff_gpu_pieces(w->strip_bytes, w->piece_bytes, &each);
    uint64_t pieces = (uint64_t)(w->card_strips - 1) * w->pieces_per_strip + strip_pieces(w, w->card_strips - 1, &each);
    if (pieces > UINT32_MAX / 4) return too_large(w);
    w->pieces = (uint32_t)pieces;
    size_t bound = 0;
    int rc = nvcomp_max_compressed_bytes(w->c->nvcomp, w->codec, w->algorithm, w->piece_bytes, &bound, w->err,
                                         w->errlen);
    if (rc) return rc;
    if (bound > SIZE_MAX / 4 / w->pieces_per_strip) return too_large(w);
    w->slot = nvcomp_slot_bytes(bound + ZLIB_FRAME_HEADER + ZLIB_FRAME_TRAILER + DEFLATE_JOIN_SPARE);
    if (w->slot > (SIZE_MAX - 4 * (size_t)w->card_strips) / w->pieces) return too_large(w);
    w->chunks = calloc(w->pieces, sizeof *w->chunks);
    w->joined = w->pieces_per_strip > 1 ? malloc(w->pieces_per_strip * w->slot + ZLIB_FRAME_HEADER + ZLIB_FRAME_TRAILER)
                                        : NULL;
    return !w->chunks || (w->pieces_per_strip > 1 && !w->joined) ? out_of_memory(w) : IP_OK;
}

static int plan_strips(gpu_write *w, double share)
{
    w->codec = w->opt->tiff_compression == IO_TIFF_ZSTD ? NVCOMP_ZSTD : NVCOMP_DEFLATE;
    w->algorithm = tiff_gpu_deflate_algorithm(w->opt->tiff_level);
    w->row_bytes = img_row_bytes(&w->img->shape);
    share_strips(w, share);
    w->strip_bytes = w->row_bytes * w->rps;
    w->strip_pitch = w->codec == NVCOMP_ZSTD ? nvcomp_align_up(w->strip_bytes) : w->strip_bytes;
    if (w->card_strips == 0) return IP_OK;
    if (w->strip_pitch < w->strip_bytes || w->strip_pitch > SIZE_MAX / w->card_strips) return too_large(w);
    return plan_pieces(w);
}

/* A piece's compressed body sits NVCOMP_CHUNK_ALIGN into its slot, with room for zlib's header
 * just before it. */
static size_t body_at(const gpu_write *w, uint32_t piece)
{
    return (size_t)piece * w->slot + NVCOMP_CHUNK_ALIGN;
}

static int alloc_buffers(gpu_write *w)
{
    int rc = IP_OK;
    if (w->first_card > 0) {
        size_t rows = (size_t)w->first_card * w->rps;
        if (rows > SIZE_MAX / w->row_bytes) return too_large(w);
        rc = io_gpu_scratch_pinned(w->c, IO_GPU_SCRATCH_B, rows * w->row_bytes, (void **)&w->cpu_rows, w->err,
                                   w->errlen);
    }
    if (rc || w->card_strips == 0) return rc;
    size_t comp = w->slot * w->pieces + (size_t)w->card_strips * sizeof(uint32_t);
    size_t walk = deflate_walk_gpu_table_bytes(w->pieces);
    rc = io_gpu_scratch_device(w->c, IO_GPU_SCRATCH_A, w->strip_pitch * w->card_strips, (void **)&w->predicted,
                               w->err, w->errlen);
    if (!rc) rc = io_gpu_scratch_device(w->c, IO_GPU_SCRATCH_B, comp, (void **)&w->dev_comp, w->err, w->errlen);
    if (!rc) rc = io_gpu_scratch_pinned(w->c, IO_GPU_SCRATCH_A, comp, (void **)&w->host, w->err, w->errlen);
    if (!rc && w->pieces_per_strip > 1)
        rc = io_gpu_scratch_device(w->c, IO_GPU_SCRATCH_D, walk, (void **)&w->dev_walk, w->err, w->errlen);
    if (!rc && w->pieces_per_strip > 1)
        rc = io_gpu_scratch_pinned(w->c, IO_GPU_SCRATCH_D, walk, (void **)&w->host_walk, w->err, w->errlen);
    return rc;
}

/* The cores' strips' rows into pinned memory, waited for before the card's batch is queued. */
static int download_cpu_rows(gpu_write *w)
{
    if (w->first_card == 0) return IP_OK;
    size_t rows = (size_t)w->first_card * w->rps;
    if (rows > (size_t)w->img->shape.height) rows = (size_t)w->img->shape.height;
    int rc = gpu_copy2d(w->cpu_rows, w->row_bytes, w->img->data, (size_t)w->img->stride, w->row_bytes, rows, GPU_D2H,
                        w->c->stream, w->err, w->errlen);
    return rc ? rc : gpu_stream_sync(w->c->stream, w->err, w->errlen);
}

static int predict_card_rows(gpu_write *w)
{
    const ip_shape *s = &w->img->shape;
    int sample_bytes = (int)ip_dtype_size(s->dtype);
    size_t y0 = (size_t)w->first_card * w->rps;
    const unsigned char *src = (const unsigned char *)w->img->data + y0 * (size_t)w->img->stride;
    if (w->strip_pitch == w->strip_bytes)   /* strips back to back: one pass over the rows */
        return ipk_fail(w, ipk_tiff_predictor_apply(src, (size_t)w->img->stride, w->predicted, w->row_bytes, s->width,
                                                    (int)((size_t)s->height - y0), s->channels, sample_bytes,
                                                    w->c->stream),
                        "predictor");
    int rc = IP_OK;
    for (uint32_t j = 0; !rc && j < w->card_strips; j++)
        rc = ipk_fail(w, ipk_tiff_predictor_apply(src + (size_t)j * w->rps * (size_t)w->img->stride,
                                                  (size_t)w->img->stride, w->predicted + (size_t)j * w->strip_pitch,
                                                  w->row_bytes, s->width, (int)strip_rows(w, w->first_card + j),
                                                  s->channels, sample_bytes, w->c->stream),
                      "predictor");
    return rc;
}

/* The card's strips queued on its stream: predictor, adler32s, nvCOMP's batch. */
static int start_card(gpu_write *w)
{
    if (w->card_strips == 0) return IP_OK;
    int rc = predict_card_rows(w);
    for (uint32_t j = 0; j < w->card_strips; j++)
        tiff_gpu_strip_chunks(w->predicted + (size_t)j * w->strip_pitch,
                              (size_t)strip_rows(w, w->first_card + j) * w->row_bytes, w->piece_bytes, w->dev_comp,
                              w->slot, j * w->pieces_per_strip, w->chunks);
    size_t total = w->row_bytes * ((size_t)w->img->shape.height - (size_t)w->first_card * w->rps);
    uint32_t *dev_sums = (uint32_t *)(w->dev_comp + w->slot * w->pieces);
    if (!rc && w->codec == NVCOMP_DEFLATE)
        rc = ipk_fail(w, ipk_adler32_spans(w->predicted, total, w->strip_bytes, dev_sums, w->c->stream), "adler32");
    w->card_pending = 1;
    if (!rc) rc = nvcomp_compress_start(w->c->batch, w->codec, w->algorithm, (int)w->pieces, w->chunks, w->err,
                                        w->errlen);
    return rc;
}

/* Waits for the card's batch, walks the pieces when strips have several (to find each one's final
 * block for the join), then one copy brings every slot back, as far as the longest piece reaches,
 * and the adler32s. */
static int finish_card(gpu_write *w)
{
    w->card_pending = 0;
    int rc = nvcomp_compress_finish(w->c->batch, (int)w->pieces, w->chunks, w->err, w->errlen);
    if (!rc && w->pieces_per_strip > 1)
        rc = deflate_walk_gpu_queue(w->c, w->dev_comp + NVCOMP_CHUNK_ALIGN, w->slot, w->chunks, w->pieces, w->dev_walk,
                                    w->host_walk, w->err, w->errlen);
    if (rc) return rc;
    size_t longest = 0;
    for (uint32_t p = 0; p < w->pieces; p++)
        longest = w->chunks[p].dst_bytes > longest ? w->chunks[p].dst_bytes : longest;
    size_t sums = (size_t)w->card_strips * sizeof(uint32_t), sums_at = w->slot * w->pieces;
    rc = gpu_copy2d(w->host + NVCOMP_CHUNK_ALIGN, w->slot, w->dev_comp + NVCOMP_CHUNK_ALIGN, w->slot, longest,
                    w->pieces, GPU_D2H, w->c->stream, w->err, w->errlen);
    if (!rc) rc = gpu_copy2d(w->host + sums_at, sums, w->dev_comp + sums_at, sums, sums, 1, GPU_D2H, w->c->stream,
                             w->err, w->errlen);
    if (!rc) rc = gpu_stream_sync(w->c->stream, w->err, w->errlen);
    return rc;
}

static uint32_t strip_adler(const gpu_write *w, uint32_t j)
{
    return ((const uint32_t *)(w->host + w->slot * w->pieces))[j];
}

static int no_stream(gpu_write *w, uint32_t j)
{
    const char *codec = w->codec == NVCOMP_ZSTD ? "zstd" : "deflate";
    snprintf(w->err, w->errlen, "cannot write TIFF: the GPU's %s gave strip %u no valid %s stream", codec,
             w->first_card + j, codec);
    return IP_ECUDA;
}

/* Card strip j's bytes as the file holds them, of one piece: deflate framed in place in its slot. */
static int framed_strip(gpu_write *w, uint32_t j, unsigned char **bytes, size_t *len)
{
    unsigned char *body = w->host + body_at(w, j);
    *len = w->chunks[j].dst_bytes;
    *bytes = body;
    if (*len == 0) return no_stream(w, j);
    if (w->codec != NVCOMP_DEFLATE) return IP_OK;
    zlib_frame_header(w->opt->tiff_level, body - ZLIB_FRAME_HEADER);
    zlib_frame_trailer(strip_adler(w, j), body + *len);
    *len += ZLIB_FRAME_HEADER + ZLIB_FRAME_TRAILER;
    *bytes = body - ZLIB_FRAME_HEADER;
    return IP_OK;
}

/* The same of several pieces: each readied for the join as its walk says, all back to back. */
static int joined_strip(gpu_write *w, uint32_t j, unsigned char **bytes, size_t *len)
{
    size_t first = (size_t)j * w->pieces_per_strip, each = 0;
    zlib_frame_header(w->opt->tiff_level, w->joined);
    size_t body = deflate_walk_gpu_join(w->host + NVCOMP_CHUNK_ALIGN, w->slot, w->chunks, w->host_walk, w->pieces,
                                        first, first + strip_pieces(w, j, &each), w->joined + ZLIB_FRAME_HEADER);
    if (body == 0) return no_stream(w, j);
    zlib_frame_trailer(strip_adler(w, j), w->joined + ZLIB_FRAME_HEADER + body);
    *len = ZLIB_FRAME_HEADER + body + ZLIB_FRAME_TRAILER;
    *bytes = w->joined;
    return IP_OK;
}

/* The cores' strips, compressed by opt's threads from the downloaded rows while the card works. */
static int write_cpu_strips(gpu_write *w, tiff_raw_out *out)
{
    if (w->first_card == 0) return IP_OK;
    ip_shape part = w->img->shape;
    size_t rows = (size_t)w->first_card * w->rps;
    part.height = rows < (size_t)part.height ? (int32_t)rows : part.height;
    ip_image host = { .shape = part, .data = w->cpu_rows, .stride = (ptrdiff_t)w->row_bytes };
    tiff_strip_format f = { part, w->rps, w->opt->tiff_compression, w->opt->tiff_level,
                            w->card_strips > 0 ? w->c->tiff_fast : NULL };
    char why[512];
    int rc = tiff_strips_write_host(&host, &f, w->opt, tiff_write_raw_strip, out, why, sizeof why);
    if (rc) snprintf(w->err, w->errlen, "cannot write TIFF: %s", why);
    return rc;
}

static int write_card_strips(gpu_write *w, TIFF *tif, tiff_log *log)
{
    if (w->card_strips == 0) return IP_OK;
    int rc = finish_card(w);
    for (uint32_t j = 0; !rc && j < w->card_strips; j++) {
        size_t len = 0;
        unsigned char *bytes = NULL;
        rc = w->pieces_per_strip > 1 ? joined_strip(w, j, &bytes, &len) : framed_strip(w, j, &bytes, &len);
        if (!rc && TIFFWriteRawStrip(tif, w->first_card + j, bytes, (tmsize_t)len) < 0) {
            snprintf(w->err, w->errlen, "cannot write TIFF: %s", tiff_log_text(log, "write error"));
            return IP_EIO;
        }
    }
    return rc;
}

static int write_strips(gpu_write *w, TIFF *tif, tiff_log *log)
{
    const ip_shape *s = &w->img->shape;
    if (!tiff_set_image_tags(tif, s, w->rps, w->opt->tiff_compression) || !meta_tiff_set_tags(tif, w->opt->meta, s)) {
        snprintf(w->err, w->errlen, "cannot write TIFF: %s", tiff_log_text(log, "bad tags"));
        return IP_EIO;
    }
    tiff_raw_out out = { tif, log };
    int rc = write_cpu_strips(w, &out);
    if (!rc) rc = write_card_strips(w, tif, log);
    if (!rc && !TIFFFlush(tif)) {
        snprintf(w->err, w->errlen, "cannot write TIFF: %s", tiff_log_text(log, "write error"));
        rc = IP_EIO;
    }
    return rc;
}

/* As io_write_tiff: libtiff closes its own descriptor, the metadata is finished on fd. */
static int write_file(gpu_write *w, int fd)
{
    tiff_log log = { .have = 0 };
    char why[128];
    const char *mode = tiff_wants_bigtiff(&w->img->shape, 0) ? "w8" : "w";
    int tfd = dup(fd);
    TIFF *tif = tfd >= 0 ? tiff_open_fd_write(tfd, mode, &log) : NULL;
    int rc = IP_OK;
    if (!tif) {
        snprintf(w->err, w->errlen, "cannot write TIFF: %s",
                 tfd < 0 ? io_strerror(errno, why, sizeof why) : tiff_log_text(&log, "out of memory"));
        if (tfd >= 0) close(tfd);
        rc = IP_EIO;
    }
    if (!rc) {
        rc = write_strips(w, tif, &log);
        TIFFClose(tif);
    }
    if (!rc) rc = meta_tiff_finish(fd, w->opt->meta, w->err, w->errlen);
    if (close(fd) != 0 && !rc) {
        snprintf(w->err, w->errlen, "cannot write TIFF: %s", io_strerror(errno, why, sizeof why));
        rc = IP_EIO;
    }
    return rc;
}

/* io_write_atomically's fill: the file into the temporary (w's err is the one passed). */
static int fill_file(int fd, void *ctx, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    return write_file(ctx, fd);
}

int tiff_gpu_write(const io_gpu_codecs *c, const ip_image *dev_out, const char *path, const io_options *opt,
                   double card_share, char *err, size_t errlen)
{
    if (!c || (card_share > 0 && (!c->nvcomp || !c->batch)) || !device_rows_ok(dev_out) ||
        !tiff_gpu_encodable(&dev_out->shape, opt)) {
        snprintf(err, errlen, "this TIFF output cannot be compressed on the GPU");
        return IP_EUNSUPPORTED;
    }
    int rc = io_check_writable(io_format_from_ext(path), &dev_out->shape, err, errlen);
    if (rc) return rc;
    gpu_write w = { .c = c, .img = dev_out, .opt = opt, .err = err, .errlen = errlen };
    rc = plan_strips(&w, card_share);
    if (!rc) rc = alloc_buffers(&w);
    if (!rc) rc = download_cpu_rows(&w);
    if (!rc) rc = start_card(&w);
    if (!rc) rc = io_write_atomically(path, opt, fill_file, &w, err, errlen);
    if (w.card_pending) {   /* a failure left the batch running: its buffers are the next image's */
        char ignored[64];
        gpu_stream_sync(c->stream, ignored, sizeof ignored);
    }
    free(w.chunks);
    free(w.joined);
    return rc;
}

#else

int tiff_gpu_write(const io_gpu_codecs *c, const ip_image *dev_out, const char *path, const io_options *opt,
                   double card_share, char *err, size_t errlen)
{
    (void)c, (void)dev_out, (void)path, (void)opt, (void)card_share;
    snprintf(err, errlen, "TIFF on the GPU needs a CUDA build");
    return IP_EUNSUPPORTED;
}
#endif
