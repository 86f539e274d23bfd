#include "io/tiff_gpu_blocks.h"
#include <stdio.h>
#include "imgpipe/plugin.h"

#ifdef IMGPIPE_HAVE_CUDA
#include "gpu/gpu.h"
#include "io/codec_gpu.h"
#include "ipk_codec.h"

int tiff_gpu_blocks_queue_adler(const tiff_gpu_layout *l, const unsigned char *blocks, uint64_t n, uint64_t last_bytes,
                                uint32_t *dev_sums, uint32_t *host_sums, void *stream, char *err, size_t errlen)
{
    size_t total = (size_t)((n - 1) * l->block_bytes + last_bytes), sum_bytes = (size_t)n * sizeof(uint32_t);
    int status = ipk_adler32_spans(blocks, total, (size_t)l->block_bytes, dev_sums, stream);
    if (status != 0) return io_gpu_kernel_rc(status, "adler32", err, errlen);
    return gpu_copy2d(host_sums, sum_bytes, dev_sums, sum_bytes, sum_bytes, 1, GPU_D2H, stream, err, errlen);
}

int tiff_gpu_blocks_sums_differ(const uint32_t *host_sums, const uint32_t *want, uint64_t n, uint64_t *bad)
{
    for (uint64_t b = 0; b < n; b++)
        if (host_sums[b] != want[b]) {
            *bad = b;
            return 1;
        }
    return 0;
}

int tiff_gpu_blocks_adler(const tiff_gpu_layout *l, const unsigned char *blocks, uint64_t n, uint64_t last_bytes,
                          const uint32_t *want, uint32_t *dev_sums, uint32_t *host_sums, void *stream, uint64_t *bad,
                          char *err, size_t errlen)
{
    int rc = tiff_gpu_blocks_queue_adler(l, blocks, n, last_bytes, dev_sums, host_sums, stream, err, errlen);
    if (!rc) rc = gpu_stream_sync(stream, err, errlen);
    if (!rc && tiff_gpu_blocks_sums_differ(host_sums, want, n, bad)) return IP_EUNSUPPORTED;
    return rc;
}

int tiff_gpu_blocks_queue_predictor(const tiff_gpu_layout *l, unsigned char *blocks, uint64_t n, uint32_t rows,
                                    void *stream, char *err, size_t errlen)
{
    int sample_bytes = (int)(l->bps / 8);
    uint64_t block_rows = l->tiled ? n * l->bh : rows;
    if (block_rows > INT32_MAX) {
        snprintf(err, errlen, "TIFF on the GPU: %llu rows of tiles, more than the predictor takes",
                 (unsigned long long)block_rows);
        return IP_EUNSUPPORTED;
    }
    int status = l->predictor != PREDICTOR_HORIZONTAL
                     ? 0
                     : ipk_tiff_predictor_undo(blocks, (size_t)l->row_bytes, (int)(l->tiled ? l->bw : l->width),
                                               (int)block_rows, l->spp, sample_bytes, stream);
    return status != 0 ? io_gpu_kernel_rc(status, "predictor", err, errlen) : IP_OK;
}

int tiff_gpu_blocks_queue_tiles(const tiff_gpu_layout *l, const unsigned char *blocks, uint32_t rows,
                                unsigned char *dst, void *stream, char *err, size_t errlen)
{
    if (!l->tiled) return IP_OK;
    size_t pixel_bytes = (size_t)l->spp * (size_t)(l->bps / 8);
    int status = ipk_tiff_tiles_to_image(blocks, (int)l->bw, (int)l->bh, pixel_bytes, dst,
                                         (size_t)l->width * pixel_bytes, (int)l->width, (int)rows, stream);
    return status != 0 ? io_gpu_kernel_rc(status, "tile copy", err, errlen) : IP_OK;
}

int tiff_gpu_blocks_finish(const tiff_gpu_layout *l, unsigned char *blocks, uint64_t n, uint32_t rows,
                           unsigned char *dst, void *stream, char *err, size_t errlen)
{
    int rc = tiff_gpu_blocks_queue_predictor(l, blocks, n, rows, stream, err, errlen);
    if (!rc) rc = tiff_gpu_blocks_queue_tiles(l, blocks, rows, dst, stream, err, errlen);
    return rc ? rc : gpu_stream_sync(stream, err, errlen);
}
#endif
