/* Byte helpers of the vec kernels of convolve, mean and median (convolve_vec_block.cuh,
 * convolve_vecf_block.cuh, median_vec_block.cuh): a word gathered through the border, and up to 16
 * output bytes stored as one 16-byte store or byte by byte. */
#ifndef IPK_GPU_BYTES_CUH
#define IPK_GPU_BYTES_CUH
#include "gpu_common.cuh"

/* Bytes x .. x+3 of a row through the border, 0 where it drops them. */
__device__ __forceinline__ uint32_t sw_gather4(const uint8_t *row, int x, int width, int border)
{
    uint32_t w = 0;
    #pragma unroll
    for (int k = 0; k < 4; k++) {
        const int xi = ipk_border_index(x + k, width, border);
        if (xi >= 0) w |= (uint32_t)row[xi] << (8 * k);
    }
    return w;
}

__device__ __forceinline__ void sw_store(uint8_t *d, const uint32_t *o, int n, bool vec)
{
    if (vec) {
        *(uint4 *)d = make_uint4(o[0], o[1], o[2], o[3]);
        return;
    }
    for (int b = 0; b < n; b++) d[b] = (uint8_t)(o[b >> 2] >> (8 * (b & 3)));
}
#endif
