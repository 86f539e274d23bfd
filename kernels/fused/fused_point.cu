/* Run-time fusion (core/src/exec/fuse_plan.c): a chain of point stages as one kernel. The core puts
 * before this file IP_T, IP_IN_CH, IP_OUT_CH and ip_chain(), the stages' per-pixel functions in
 * order, so the image is read once and written once. Compiled by NVRTC, not by the build. */
#include "fused_pixels.cuh"

extern "C" __global__ void ip_fused_point(const char *src, long long ss, char *dst, long long ds, int width,
                                          int height)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= width) return;
    for (int y = blockIdx.y; y < height; y += gridDim.y) {
        IP_T *d = (IP_T *)(dst + (long long)y * ds) + (size_t)x * IP_OUT_CH;
        IP_T out[IP_OUT_CH];
        ipf_chain_at(src + (long long)y * ss, x, out);
#pragma unroll
        for (int c = 0; c < IP_OUT_CH; c++) d[c] = out[c];
    }
}
