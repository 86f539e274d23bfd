/* Grayscale on the GPU. 8-bit: each thread converts 16 pixels with 16-byte loads and one
 * 16-byte store when its rows are 16-byte aligned, else pixel by pixel. Integer sums in
 * uint32: the bits kept by ">> 15" and the narrowing cast are the same as the CPU's uint64. */
#include "gpu_common.cuh"

#define GRAY_GROUP 16
#define GRAY_BLOCK 128

struct gray_weights {
    uint32_t q0, q1, q2;
    float f0, f1, f2;
};

template <typename T>
__device__ __forceinline__ T gray_value(const T *p, const gray_weights &w);

template <> __device__ __forceinline__ uint8_t gray_value<uint8_t>(const uint8_t *p, const gray_weights &w)
{
    return (uint8_t)((p[0] * w.q0 + p[1] * w.q1 + p[2] * w.q2 + 16384u) >> 15);
}
template <> __device__ __forceinline__ uint16_t gray_value<uint16_t>(const uint16_t *p, const gray_weights &w)
{
    return (uint16_t)((p[0] * w.q0 + p[1] * w.q1 + p[2] * w.q2 + 16384u) >> 15);
}
/* Same rounding steps as the CPU's (a*f0 + b*f1) + c*f2 without contraction. */
template <> __device__ __forceinline__ float gray_value<float>(const float *p, const gray_weights &w)
{
    return __fadd_rn(__fadd_rn(__fmul_rn(p[0], w.f0), __fmul_rn(p[1], w.f1)), __fmul_rn(p[2], w.f2));
}

/* 16 pixels of CH bytes each, held in CH 16-byte registers: byte k of the run is word k/4. */
template <int CH>
__device__ __forceinline__ uint32_t gray_byte(const uint32_t *words, int k)
{
    return (words[k >> 2] >> ((k & 3) * 8)) & 0xffu;
}

template <int CH>
__device__ __forceinline__ void gray_group_u8_vec(const uint8_t *s, uint8_t *d, const gray_weights &w)
{
    uint32_t in[CH * 4];
    #pragma unroll
    for (int v = 0; v < CH; v++) {
        uint4 q = __ldg((const uint4 *)s + v);
        in[4 * v] = q.x; in[4 * v + 1] = q.y; in[4 * v + 2] = q.z; in[4 * v + 3] = q.w;
    }
    uint32_t out[4] = { 0, 0, 0, 0 };
    #pragma unroll
    for (int i = 0; i < GRAY_GROUP; i++) {
        uint32_t g = (gray_byte<CH>(in, i * CH) * w.q0 + gray_byte<CH>(in, i * CH + 1) * w.q1 +
                      gray_byte<CH>(in, i * CH + 2) * w.q2 + 16384u) >> 15;
        out[i >> 2] |= (g & 0xffu) << ((i & 3) * 8);
    }
    *(uint4 *)d = make_uint4(out[0], out[1], out[2], out[3]);
}

template <int CH>
__global__ void gray_u8_kernel(const uint8_t *src, ptrdiff_t ss, uint8_t *dst, ptrdiff_t ds, int width,
                               int height, gray_weights w)
{
    int x0 = (blockIdx.x * blockDim.x + threadIdx.x) * GRAY_GROUP;
    if (x0 >= width) return;
    for (int y = blockIdx.y; y < height; y += gridDim.y) {
        const uint8_t *s = ipk_crow<uint8_t>(src, ss, y) + (size_t)x0 * CH;
        uint8_t *d = ipk_wrow<uint8_t>(dst, ds, y) + x0;
        bool vec = x0 + GRAY_GROUP <= width && ((uintptr_t)s % 16) == 0 && ((uintptr_t)d % 16) == 0;
        if (vec) {
            gray_group_u8_vec<CH>(s, d, w);
        } else {
            int n = min(GRAY_GROUP, width - x0);
            for (int i = 0; i < n; i++) d[i] = gray_value<uint8_t>(s + i * CH, w);
        }
    }
}

template <typename T>
__global__ void gray_kernel(const void *src, ptrdiff_t ss, void *dst, ptrdiff_t ds, int width, int height,
                            int ch, gray_weights w)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= width) return;
    for (int y = blockIdx.y; y < height; y += gridDim.y)
        ipk_wrow<T>(dst, ds, y)[x] = gray_value<T>(ipk_crow<T>(src, ss, y) + (size_t)x * ch, w);
}

static gray_weights make_weights(const int32_t q[3])
{
    gray_weights w;
    w.q0 = (uint32_t)q[0];
    w.q1 = (uint32_t)q[1];
    w.q2 = (uint32_t)q[2];
    w.f0 = (float)(uint64_t)(int64_t)q[0] / 32768.0f;
    w.f1 = (float)(uint64_t)(int64_t)q[1] / 32768.0f;
    w.f2 = (float)(uint64_t)(int64_t)q[2] / 32768.0f;
    return w;
}

extern "C" int ipk_grayscale_gpu(const ipk_img *src, const ipk_img *dst, const int32_t weights_q15[3], void *stream)
{
    if (!ipk_img_ok(src) || !ipk_img_ok(dst) || (src->channels != 3 && src->channels != 4) ||
        dst->channels != 1 || src->dtype != dst->dtype || src->width != dst->width || src->height != dst->height)
        return IPK_EINVAL;
    if (ipk_img_empty(src)) return IPK_OK;
    cudaStream_t s = (cudaStream_t)stream;
    gray_weights w = make_weights(weights_q15);
    const int width = src->width, height = src->height;
    if (src->dtype == IPK_U8) {
        dim3 grid(ipk_div_up(ipk_div_up(width, GRAY_GROUP), GRAY_BLOCK), ipk_grid_rows(height));
        if (src->channels == 3)
            gray_u8_kernel<3><<<grid, GRAY_BLOCK, 0, s>>>((const uint8_t *)src->data, src->stride,
                                                         (uint8_t *)dst->data, dst->stride, width, height, w);
        else
            gray_u8_kernel<4><<<grid, GRAY_BLOCK, 0, s>>>((const uint8_t *)src->data, src->stride,
                                                         (uint8_t *)dst->data, dst->stride, width, height, w);
        return ipk_launch_status();
    }
    dim3 grid(ipk_div_up(width, GRAY_BLOCK), ipk_grid_rows(height));
    if (src->dtype == IPK_U16)
        gray_kernel<uint16_t><<<grid, GRAY_BLOCK, 0, s>>>(src->data, src->stride, dst->data, dst->stride, width,
                                                         height, src->channels, w);
    else
        gray_kernel<float><<<grid, GRAY_BLOCK, 0, s>>>(src->data, src->stride, dst->data, dst->stride, width,
                                                      height, src->channels, w);
    return ipk_launch_status();
}
