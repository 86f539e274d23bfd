/* TIFF written from a device image: the CPU writer's strips and tags, the predictor applied on
 * the card into a scratch, the strips compressed by nvCOMP in one batch with their adler32s, then
 * framed (zlib's header and trailer) and written in order by libtiff, atomically. */
#define _POSIX_C_SOURCE 200809L
#include "io/tiff_gpu.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "base/image.h"
#include "gpu/gpu.h"
#include "io/io_internal.h"
#include "io/io_tiff_handle.h"
#include "io/meta_tiff.h"
#include "io/zlib_frame.h"

#ifdef IMGPIPE_HAVE_CUDA
#include "ipk_codec.h"

/* nvCOMP's deflate algorithm for each --tiff-level, by measured size (bench/tiff-folder.sh on the
 * H100, 2026-11-27: 12-MP photographs, 256 KiB strips with the predictor): algorithm 4 makes files
 * 7% smaller than libtiff's level 6 and 18% smaller than its level 1, algorithm 2 6% larger than
 * level 1, so every level takes 4; 0 (entropy coding only) is never chosen. Retune here. */
static const int deflate_algorithm_for_level[10] = { 0, 4, 4, 4, 4, 4, 4, 4, 4, 4 };

int tiff_gpu_deflate_algorithm(int level)
{
    return deflate_algorithm_for_level[level >= 1 && level <= 9 ? level : 6];
}

int tiff_gpu_encodable(const ip_shape *s, const io_options *opt)
{
    int codec_ok = opt->tiff_compression == IO_TIFF_DEFLATE || opt->tiff_compression == IO_TIFF_ZSTD;
    return codec_ok && (s->dtype == IP_U8 || s->dtype == IP_U16) && s->channels >= 1 && s->channels <= 4 &&
           s->width > 0 && s->height > 0;
}

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
    size_t slot;                /* a compressed strip's room, framing included */
    size_t strip_pitch;         /* strips' distance in the predicted image: zstd wants them aligned */
    uint32_t rps, strips;
    unsigned char *predicted;   /* device: the image's rows, packed, the predictor applied */
    unsigned char *dev_comp;    /* device: a slot a strip, then the adler32s */
    unsigned char *host;        /* pinned: the same */
    nvcomp_chunk *chunks;
} gpu_write;

static int ipk_fail(gpu_write *w, int status, const char *what)
{
    if (status == 0) return IP_OK;
    snprintf(w->err, w->errlen, "cannot write TIFF: GPU %s failed (ipk status %d)", what, status);
    return IP_ECUDA;
}

static int plan_strips(gpu_write *w)
{
    const ip_shape *s = &w->img->shape;
    w->codec = w->opt->tiff_compression == IO_TIFF_ZSTD ? NVCOMP_ZSTD : NVCOMP_DEFLATE;
    w->algorithm = tiff_gpu_deflate_algorithm(w->opt->tiff_level);
    w->row_bytes = img_row_bytes(s);
    w->rps = tiff_rows_per_strip(s);
    w->strips = (uint32_t)(((uint64_t)s->height + w->rps - 1) / w->rps);
    w->strip_bytes = w->row_bytes * w->rps;
    w->strip_pitch = w->codec == NVCOMP_ZSTD ? nvcomp_align_up(w->strip_bytes) : w->strip_bytes;
    if (w->strip_pitch < w->strip_bytes || w->strip_pitch > SIZE_MAX / w->strips) {
        snprintf(w->err, w->errlen, "cannot write TIFF: image too large");
        return IP_ELIMIT;
    }
    size_t bound = 0;
    int rc = nvcomp_max_compressed_bytes(w->c->nvcomp, w->codec, w->algorithm, w->strip_bytes, &bound, w->err,
                                         w->errlen);
    if (rc) return rc;
    w->slot = nvcomp_slot_bytes(bound + ZLIB_FRAME_HEADER + ZLIB_FRAME_TRAILER);
    if (w->slot > (SIZE_MAX - 4 * (size_t)w->strips) / w->strips) {
        snprintf(w->err, w->errlen, "cannot write TIFF: image too large");
        return IP_ELIMIT;
    }
    w->chunks = calloc(w->strips, sizeof *w->chunks);
    if (!w->chunks) {
        snprintf(w->err, w->errlen, "out of memory");
        return IP_ENOMEM;
    }
    return IP_OK;
}

/* A strip's compressed body sits NVCOMP_CHUNK_ALIGN into its slot, with room for zlib's header
 * just before it. */
static size_t body_at(const gpu_write *w, uint32_t strip)
{
    return (size_t)strip * w->slot + NVCOMP_CHUNK_ALIGN;
}

static int alloc_buffers(gpu_write *w)
{
    size_t comp = w->slot * w->strips + (size_t)w->strips * sizeof(uint32_t);
    int rc = io_gpu_scratch_device(w->c, IO_GPU_SCRATCH_A, w->strip_pitch * w->strips,
                                   (void **)&w->predicted, w->err, w->errlen);
    if (!rc) rc = io_gpu_scratch_device(w->c, IO_GPU_SCRATCH_B, comp, (void **)&w->dev_comp, w->err, w->errlen);
    if (!rc) rc = io_gpu_scratch_pinned(w->c, IO_GPU_SCRATCH_A, comp, (void **)&w->host, w->err, w->errlen);
    return rc;
}

static int compress_strips(gpu_write *w)
{
    const ip_shape *s = &w->img->shape;
    int sample_bytes = (int)ip_dtype_size(s->dtype);
    int rc = IP_OK;
    if (w->strip_pitch == w->strip_bytes)   /* strips back to back: one pass over the image */
        rc = ipk_fail(w, ipk_tiff_predictor_apply(w->img->data, (size_t)w->img->stride, w->predicted, w->row_bytes,
                                                  s->width, s->height, s->channels, sample_bytes, w->c->stream),
                      "predictor");
    for (uint32_t i = 0; !rc && w->strip_pitch != w->strip_bytes && i < w->strips; i++) {
        uint32_t rows = (uint32_t)s->height - i * w->rps < w->rps ? (uint32_t)s->height - i * w->rps : w->rps;
        const unsigned char *src = (const unsigned char *)w->img->data + (size_t)i * w->rps * (size_t)w->img->stride;
        rc = ipk_fail(w, ipk_tiff_predictor_apply(src, (size_t)w->img->stride, w->predicted + (size_t)i * w->strip_pitch,
                                                  w->row_bytes, s->width, (int)rows, s->channels, sample_bytes,
                                                  w->c->stream),
                      "predictor");
    }
    for (uint32_t i = 0; i < w->strips; i++) {
        uint32_t rows = (uint32_t)s->height - i * w->rps < w->rps ? (uint32_t)s->height - i * w->rps : w->rps;
        w->chunks[i] = (nvcomp_chunk){ .src = w->predicted + (size_t)i * w->strip_pitch,
                                       .src_bytes = (size_t)rows * w->row_bytes,
                                       .dst = w->dev_comp + body_at(w, i),
                                       .dst_capacity = w->slot - NVCOMP_CHUNK_ALIGN - ZLIB_FRAME_TRAILER };
    }
    size_t total = w->row_bytes * (size_t)s->height;
    uint32_t *dev_sums = (uint32_t *)(w->dev_comp + w->slot * w->strips);
    if (!rc && w->codec == NVCOMP_DEFLATE)
        rc = ipk_fail(w, ipk_adler32_spans(w->predicted, total, w->strip_bytes, dev_sums, w->c->stream), "adler32");
    if (!rc) rc = nvcomp_compress(w->c->batch, w->codec, w->algorithm, (int)w->strips, w->chunks, w->err, w->errlen);
    return rc;
}

/* One copy brings every slot back, as far as the longest strip reaches, and the adler32s. */
static int download(gpu_write *w)
{
    size_t longest = 0;
    for (uint32_t i = 0; i < w->strips; i++) longest = w->chunks[i].dst_bytes > longest ? w->chunks[i].dst_bytes : longest;
    size_t sums = (size_t)w->strips * sizeof(uint32_t), sums_at = w->slot * w->strips;
    int rc = gpu_copy2d(w->host + NVCOMP_CHUNK_ALIGN, w->slot, w->dev_comp + NVCOMP_CHUNK_ALIGN, w->slot, longest,
                        w->strips, GPU_D2H, w->c->stream, w->err, w->errlen);
    if (!rc) rc = gpu_copy2d(w->host + sums_at, sums, w->dev_comp + sums_at, sums, sums, 1, GPU_D2H, w->c->stream,
                             w->err, w->errlen);
    if (!rc) rc = gpu_stream_sync(w->c->stream, w->err, w->errlen);
    return rc;
}

/* Strip i's bytes as the file holds them: deflate framed in place in its slot. */
static unsigned char *framed_strip(gpu_write *w, uint32_t i, size_t *len)
{
    unsigned char *body = w->host + body_at(w, i);
    *len = w->chunks[i].dst_bytes;
    if (w->codec != NVCOMP_DEFLATE) return body;
    const uint32_t *sums = (const uint32_t *)(w->host + w->slot * w->strips);
    zlib_frame_header(w->opt->tiff_level, body - ZLIB_FRAME_HEADER);
    zlib_frame_trailer(sums[i], body + *len);
    *len += ZLIB_FRAME_HEADER + ZLIB_FRAME_TRAILER;
    return body - ZLIB_FRAME_HEADER;
}

static int write_strips(gpu_write *w, TIFF *tif, tiff_log *log)
{
    const ip_shape *s = &w->img->shape;
    if (!tiff_set_image_tags(tif, s, w->rps, w->opt->tiff_compression) || !meta_tiff_set_tags(tif, w->opt->meta, s)) {
        snprintf(w->err, w->errlen, "cannot write TIFF: %s", tiff_log_text(log, "bad tags"));
        return IP_EIO;
    }
    for (uint32_t i = 0; i < w->strips; i++) {
        size_t len = 0;
        unsigned char *bytes = framed_strip(w, i, &len);
        if (TIFFWriteRawStrip(tif, i, bytes, (tmsize_t)len) < 0) {
            snprintf(w->err, w->errlen, "cannot write TIFF: %s", tiff_log_text(log, "write error"));
            return IP_EIO;
        }
    }
    if (!TIFFFlush(tif)) {
        snprintf(w->err, w->errlen, "cannot write TIFF: %s", tiff_log_text(log, "write error"));
        return IP_EIO;
    }
    return IP_OK;
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
                   char *err, size_t errlen)
{
    if (!c || !c->nvcomp || !c->batch || !device_rows_ok(dev_out) || !tiff_gpu_encodable(&dev_out->shape, opt)) {
        snprintf(err, errlen, "this TIFF output cannot be compressed on the GPU");
        return IP_EUNSUPPORTED;
    }
    int rc = io_check_writable(io_format_from_ext(path), &dev_out->shape, err, errlen);
    if (rc) return rc;
    gpu_write w = { .c = c, .img = dev_out, .opt = opt, .err = err, .errlen = errlen };
    rc = plan_strips(&w);
    if (!rc) rc = alloc_buffers(&w);
    if (!rc) rc = compress_strips(&w);
    if (!rc) rc = download(&w);
    if (!rc) rc = io_write_atomically(path, opt, fill_file, &w, err, errlen);
    free(w.chunks);
    return rc;
}

#else

int tiff_gpu_encodable(const ip_shape *shape, const io_options *opt)
{
    (void)shape, (void)opt;
    return 0;
}

int tiff_gpu_write(const io_gpu_codecs *c, const ip_image *dev_out, const char *path, const io_options *opt,
                   char *err, size_t errlen)
{
    (void)c, (void)dev_out, (void)path, (void)opt;
    snprintf(err, errlen, "TIFF on the GPU needs a CUDA build");
    return IP_EUNSUPPORTED;
}
#endif
