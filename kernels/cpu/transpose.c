#include <string.h>
#include "ipk.h"
#include "pixels.h"
#include "threads.h"

/* Blocked so that both the reads and the writes of a block stay in cache. */
#define TRANSPOSE_BLOCK 32

int ipk_transpose_cpu(const ipk_img *src, const ipk_img *dst, int threads)
{
    if (src->width != dst->height || src->height != dst->width || src->channels != dst->channels ||
        src->dtype != dst->dtype)
        return IPK_EINVAL;
    const size_t px = ipk_dtype_bytes(src->dtype) * (size_t)src->channels;
    const int bw = (src->width + TRANSPOSE_BLOCK - 1) / TRANSPOSE_BLOCK;
    const int bh = (src->height + TRANSPOSE_BLOCK - 1) / TRANSPOSE_BLOCK;

    #pragma omp parallel for schedule(static) collapse(2) num_threads(ipk_threads(threads))
    for (int by = 0; by < bh; by++)
        for (int bx = 0; bx < bw; bx++) {
            int y1 = (by + 1) * TRANSPOSE_BLOCK < src->height ? (by + 1) * TRANSPOSE_BLOCK : src->height;
            int x1 = (bx + 1) * TRANSPOSE_BLOCK < src->width ? (bx + 1) * TRANSPOSE_BLOCK : src->width;
            for (int y = by * TRANSPOSE_BLOCK; y < y1; y++) {
                const char *s = (const char *)ipk_row(src, y);
                for (int x = bx * TRANSPOSE_BLOCK; x < x1; x++)
                    memcpy((char *)ipk_row(dst, x) + (size_t)y * px, s + (size_t)x * px, px);
            }
        }
    return IPK_OK;
}
