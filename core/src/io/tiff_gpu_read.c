/* TIFF decoded on the GPU: the raw strips or tiles read by libtiff into one pinned buffer (zlib's
 * header stripped, its adler32 kept), uploaded in one copy, inflated by nvCOMP in one batch into
 * the device image (tiles into a scratch, then copied into place), checked, the predictor undone. */
#define _POSIX_C_SOURCE 200809L
#include "io/tiff_gpu.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/image.h"
#include "gpu/gpu.h"
#include "io/io_limits.h"
#include "io/io_tiff_handle.h"
#include "io/tiff_gpu_blocks.h"
#include "io/tiff_gpu_layout.h"
#include "io/zlib_frame.h"

#ifdef IMGPIPE_HAVE_CUDA

typedef struct {
    tiff_gpu_layout l;
    const io_gpu_codecs *c;
    const io_options *opt;
    char *err;
    size_t errlen;
    nvcomp_chunk *chunks;
    uint32_t *adler;            /* from each zlib trailer */
    size_t *body_at;            /* each chunk's offset in the staging buffer */
    size_t staged;              /* bytes of compressed data staged, aligned */
    unsigned char *host;        /* pinned: compressed chunks, then the device's adler32s */
    unsigned char *dev_comp;    /* the same on the device */
    unsigned char *tiles;       /* tiled: the decoded tiles */
    unsigned char *image;       /* the target's memory */
    size_t image_bytes;         /* what was asked of the target: whole strips (a last one may be padded) */
} gpu_read;

static int damaged(gpu_read *r, uint64_t block, const char *why)
{
    snprintf(r->err, r->errlen, "truncated or corrupt TIFF: %s %llu %s", r->l.tiled ? "tile" : "strip",
             (unsigned long long)block, why);
    return IP_EFORMAT;
}

/* A block the GPU path does not decode as it is: the CPU reader reads the file, libtiff deciding. */
static int not_on_gpu(gpu_read *r, uint64_t block, const char *why)
{
    snprintf(r->err, r->errlen, "not decoded on the GPU: %s %llu %s", r->l.tiled ? "tile" : "strip",
             (unsigned long long)block, why);
    return IP_EUNSUPPORTED;
}

/* A block over nvCOMP's chunk, decoded (all are block_bytes) or compressed, would fail the batch
 * (IP_EINVAL): the CPU reader takes the file, before any memory is asked for. */
static int chunks_fit(gpu_read *r)
{
    uint64_t limit = nvcomp_max_chunk(r->c->nvcomp), b = 0;
    while (b < r->l.count && r->l.raw_bytes[b] <= limit) b++;
    int decoded_over = r->l.block_bytes > limit;
    if (!decoded_over && b == r->l.count) return IP_OK;
    char why[128];
    snprintf(why, sizeof why, "is %llu bytes%s, over nvCOMP's %llu MiB chunk",
             (unsigned long long)(decoded_over ? r->l.block_bytes : r->l.raw_bytes[b]), decoded_over ? "" : " compressed",
             (unsigned long long)(limit >> 20));
    return not_on_gpu(r, decoded_over ? 0 : b, why);
}

/* Where each block's raw bytes go in the staging buffer: deflate's body lands aligned, the
 * 2-byte zlib header just before it. */
static int plan_staging(gpu_read *r)
{
    size_t at = 0, count = (size_t)r->l.count;
    r->body_at = malloc(count * sizeof *r->body_at);
    r->adler = calloc(count, sizeof *r->adler);
    r->chunks = calloc(count, sizeof *r->chunks);
    if (!r->body_at || !r->adler || !r->chunks) {
        snprintf(r->err, r->errlen, "out of memory");
        return IP_ENOMEM;
    }
    for (size_t b = 0; b < count; b++) {
        uint64_t raw = r->l.raw_bytes[b];
        if (raw > SIZE_MAX / 2 || at > SIZE_MAX / 2 - raw - 2 * NVCOMP_CHUNK_ALIGN) return damaged(r, b, "is too large");
        r->body_at[b] = nvcomp_align_up(at + ZLIB_FRAME_HEADER);
        at = r->body_at[b] + (size_t)raw;
    }
    r->staged = nvcomp_align_up(at);
    return IP_OK;
}

static int alloc_buffers(gpu_read *r)
{
    size_t adler_bytes = (size_t)r->l.count * sizeof(uint32_t);
    int rc = io_gpu_scratch_pinned(r->c, IO_GPU_SCRATCH_A, r->staged + adler_bytes, (void **)&r->host, r->err, r->errlen);
    if (!rc) rc = io_gpu_scratch_device(r->c, IO_GPU_SCRATCH_A, r->staged + adler_bytes, (void **)&r->dev_comp, r->err,
                                        r->errlen);
    if (!rc && r->l.tiled) {
        if (r->l.block_bytes > SIZE_MAX / r->l.count) {
            snprintf(r->err, r->errlen, "image is too large to address");
            return IP_ELIMIT;
        }
        rc = io_gpu_scratch_device(r->c, IO_GPU_SCRATCH_B, (size_t)(r->l.block_bytes * r->l.count), (void **)&r->tiles,
                                   r->err, r->errlen);
    }
    return rc;
}

/* One block's raw bytes into staging; a deflate block's frame checked and taken off. */
static int read_raw_block(gpu_read *r, uint64_t b)
{
    size_t raw = (size_t)r->l.raw_bytes[b];
    unsigned char *dst = r->host + r->body_at[b] - (r->l.codec == NVCOMP_DEFLATE ? ZLIB_FRAME_HEADER : 0);
    tmsize_t got = r->l.tiled ? TIFFReadRawTile(r->l.tif, (uint32_t)b, dst, (tmsize_t)raw)
                              : TIFFReadRawStrip(r->l.tif, (uint32_t)b, dst, (tmsize_t)raw);
    if (got != (tmsize_t)raw) return damaged(r, b, "cannot be read");
    size_t body = raw;
    if (r->l.codec == NVCOMP_DEFLATE && zlib_frame_split(dst, raw, &body, &r->adler[b]) != 0)
        return damaged(r, b, "is not a zlib stream");
    r->chunks[b].src_bytes = body;
    return IP_OK;
}

/* Each block's compressed bytes on the device, and where it decodes: straight into the image's
 * rows (strips) or into its slot of the tile scratch. */
static void place_chunks(gpu_read *r)
{
    for (uint64_t b = 0; b < r->l.count; b++) {
        nvcomp_chunk *ch = &r->chunks[b];
        ch->src = r->dev_comp + r->body_at[b];
        ch->dst = (r->l.tiled ? r->tiles : r->image) + (size_t)(b * r->l.block_bytes);
        ch->dst_capacity = (size_t)r->l.block_bytes;
    }
}

/* What block b must decode to: a whole tile, a whole strip but for the last (its rows only; a
 * writer may pad it, as libtiff allows). */
static uint64_t block_need(const gpu_read *r, uint64_t b)
{
    if (r->l.tiled || b + 1 < r->l.count) return r->l.block_bytes;
    return ((uint64_t)r->l.height - b * r->l.bh) * r->l.row_bytes;
}

/* A block short of its size goes to the CPU reader: libtiff fails it or zero-fills it (by codec
 * and version), so it decides (tiff_gpu_blocks.h: none is past it). */
static int check_sizes(gpu_read *r)
{
    for (uint64_t b = 0; b < r->l.count; b++)
        if (r->chunks[b].dst_bytes < block_need(r, b)) return not_on_gpu(r, b, "inflates short of its block");
    return IP_OK;
}

/* nvCOMP refused block b, which is how a stream that inflates past its block ends there. When
 * libtiff reads the block (ignoring the surplus), the CPU reader reads the file; else it is damaged. */
static int inflate_refused(gpu_read *r, int bad)
{
    uint64_t b = (uint64_t)(bad < 0 ? 0 : bad);
    int rc = tiff_gpu_layout_cpu_reads(&r->l, b, block_need(r, b));
    if (rc == IP_OK) return not_on_gpu(r, b, "fails nvCOMP's inflate (past its block?) but not libtiff's");
    if (rc == IP_EFORMAT) return damaged(r, b, "is not valid compressed data");
    snprintf(r->err, r->errlen, "out of memory");
    return rc;
}

/* The adler32 of every block's inflated bytes against its trailer. A mismatch goes to the CPU
 * reader, whose verdict (libtiff's, with or without libdeflate) is then the same as without the GPU. */
static int check_adler(gpu_read *r)
{
    if (r->l.codec != NVCOMP_DEFLATE) return IP_OK;
    uint64_t last = r->l.count - 1, bad = 0;
    uint32_t *dev_sums = (uint32_t *)(r->dev_comp + r->staged), *sums = (uint32_t *)(r->host + r->staged);
    int rc = tiff_gpu_blocks_adler(&r->l, r->l.tiled ? r->tiles : r->image, r->l.count, r->chunks[last].dst_bytes,
                                   r->adler, dev_sums, sums, r->c->stream, &bad, r->err, r->errlen);
    if (rc == IP_EUNSUPPORTED)
        snprintf(r->err, r->errlen, "%s %llu's adler32 differs: read on the CPU", r->l.tiled ? "tile" : "strip",
                 (unsigned long long)bad);
    return rc;
}

static int inflate_blocks(gpu_read *r)
{
    for (uint64_t b = 0; b < r->l.count; b++) {
        int rc = read_raw_block(r, b);
        if (rc) return rc;
    }
    place_chunks(r);
    int rc = gpu_copy2d(r->dev_comp, r->staged, r->host, r->staged, r->staged, 1, GPU_H2D, r->c->stream, r->err,
                        r->errlen);
    int bad = -1;
    if (!rc) rc = nvcomp_decompress(r->c->batch, r->l.codec, (int)r->l.count, r->chunks, &bad, r->err, r->errlen);
    if (rc == IP_EFORMAT) return inflate_refused(r, bad);
    if (!rc) rc = check_sizes(r);
    if (!rc) rc = check_adler(r);
    if (!rc) rc = tiff_gpu_blocks_finish(&r->l, r->l.tiled ? r->tiles : r->image, r->l.count, r->l.height, r->image,
                                         r->c->stream, r->err, r->errlen);
    return rc;
}

static int decode_into_target(gpu_read *r, const jpeg_route_target *target, ip_image *dev_in)
{
    ip_shape shape = tiff_gpu_layout_shape(&r->l);
    size_t packed = img_row_bytes(&shape) * (size_t)shape.height;
    r->image_bytes = r->l.tiled ? packed : (size_t)(r->l.block_bytes * r->l.count);
    int rc = plan_staging(r);
    if (!rc) rc = alloc_buffers(r);
    if (!rc) rc = target->device_input(target->user, &shape, r->image_bytes, (void **)&r->image, r->err, r->errlen);
    if (!rc) rc = inflate_blocks(r);
    if (rc) return rc;
    *dev_in = (ip_image){ .data = r->image, .stride = (ptrdiff_t)img_row_bytes(&shape), .shape = shape,
                          .on_device = 1 };
    return IP_OK;
}

int tiff_gpu_decode(const io_gpu_codecs *c, const jpeg_route_target *target, io_input *in, const io_options *opt,
                    ip_image *dev_in, char *err, size_t errlen)
{
    memset(dev_in, 0, sizeof *dev_in);
    if (!c || !c->nvcomp || !c->batch) {
        snprintf(err, errlen, "nvCOMP is not open");
        return IP_EUNSUPPORTED;
    }
    gpu_read r = { .c = c, .opt = opt, .err = err, .errlen = errlen };
    int rc = tiff_gpu_layout_open(&r.l, in, opt, err, errlen);
    if (!rc) rc = tiff_gpu_layout_limits(&r.l, opt, err, errlen);
    if (!rc) rc = chunks_fit(&r);
    if (!rc) rc = decode_into_target(&r, target, dev_in);
    tiff_gpu_layout_close(&r.l);
    free(r.chunks);
    free(r.adler);
    free(r.body_at);
    return rc;
}

#else

int tiff_gpu_decode(const io_gpu_codecs *c, const jpeg_route_target *target, io_input *in, const io_options *opt,
                    ip_image *dev_in, char *err, size_t errlen)
{
    (void)c, (void)target, (void)in, (void)opt;
    memset(dev_in, 0, sizeof *dev_in);
    snprintf(err, errlen, "TIFF on the GPU needs a CUDA build");
    return IP_EUNSUPPORTED;
}
#endif
