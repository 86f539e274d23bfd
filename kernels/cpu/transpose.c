#include <stdint.h>
#include <string.h>
#include "ipk.h"
#include "pixels.h"
#include "threads.h"

/* Blocked so that both the reads and the writes of a block stay in cache. */
#define TRANSPOSE_BLOCK 32

/* Whole pixels of 1, 2, 4 or 8 bytes move as one value; other sizes (3, 6, 12 bytes) by memcpy. */
#define TRANSPOSE_TILE(T)                                                                 \
    for (int y = y0; y < y1; y++) {                                                       \
        const T *s = (const T *)ipk_row(src, y);                                          \
        for (int x = x0; x < x1; x++) ((T *)ipk_row(dst, x))[y] = s[x];                   \
    }

int ipk_transpose_cpu(const ipk_img *src, const ipk_img *dst, int threads)
{
    if (src->width != dst->height || src->height != dst->width || src->channels != dst->channels ||
        src->dtype != dst->dtype)
        return IPK_EINVAL;
    const size_t px = ipk_dtype_bytes(src->dtype) * (size_t)src->channels;
    /* Whole-pixel moves need every pixel aligned to its size; otherwise bytes are copied. */
    const uintptr_t addresses = (uintptr_t)src->data | (uintptr_t)src->stride | (uintptr_t)dst->data |
                                (uintptr_t)dst->stride;
    const size_t move = (px & (px - 1)) == 0 && px <= 8 && addresses % px == 0 ? px : 0;
    const int bw = (src->width + TRANSPOSE_BLOCK - 1) / TRANSPOSE_BLOCK;
    const int bh = (src->height + TRANSPOSE_BLOCK - 1) / TRANSPOSE_BLOCK;

    #pragma omp parallel for schedule(static) collapse(2) num_threads(ipk_threads(threads))
    for (int by = 0; by < bh; by++)
        for (int bx = 0; bx < bw; bx++) {
            int y0 = by * TRANSPOSE_BLOCK, x0 = bx * TRANSPOSE_BLOCK;
            int y1 = y0 + TRANSPOSE_BLOCK < src->height ? y0 + TRANSPOSE_BLOCK : src->height;
            int x1 = x0 + TRANSPOSE_BLOCK < src->width ? x0 + TRANSPOSE_BLOCK : src->width;
            switch (move) {
            case 1: TRANSPOSE_TILE(uint8_t); break;
            case 2: TRANSPOSE_TILE(uint16_t); break;
            case 4: TRANSPOSE_TILE(uint32_t); break;
            case 8: TRANSPOSE_TILE(uint64_t); break;
            default:
                for (int y = y0; y < y1; y++)
                    for (int x = x0; x < x1; x++)
                        memcpy((char *)ipk_row(dst, x) + (size_t)y * px, (const char *)ipk_row(src, y) + (size_t)x * px, px);
            }
        }
    return IPK_OK;
}
