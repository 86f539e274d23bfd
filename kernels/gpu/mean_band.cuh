/* The band mean kernel for 1-channel u8 at radius 3 to IPK_MBAND_MAXR, every border but shrink:
 * each thread walks a band of rows down 32 output columns with the vertical window sums of its 64
 * (radius up to 15) or 96 input columns in registers (the arithmetic: kernels/common/mean_band.h,
 * which test_mean_band checks on the host). No shared memory and no shuffles: a thread needs
 * nobody. It keeps 2 (1 at the wider halo, for registers) entering and leaving rows in flight as
 * 16-byte loads; the leaving row is read again 2r + 1 rows after it entered, from L2. The columns
 * near the image's sides, where the loads would cross them, are the tile kernels' (mean.cu
 * launches both). */
#ifndef IPK_MEAN_BAND_CUH
#define IPK_MEAN_BAND_CUH
#include "gpu_common.cuh"
#include "mean_band.h"

#define MBAND_THREADS 64

/* Input row y through the vertical border (zeros where it contributes nothing) at the thread's
 * columns x0 - H .. x0 + 31 + H, all inside the image. */
template <int H>
__device__ __forceinline__ void mband_load(const uint8_t *__restrict__ src, ptrdiff_t ss, int height, int border,
                                           int x0, int y, uint32_t *w)
{
    constexpr int W = (IPK_MBAND_OUT + 2 * H) / 4;
    const int yi = ipk_border_index(y, height, border);
    if (yi < 0) {
        #pragma unroll
        for (int k = 0; k < W; k++) w[k] = 0;
        return;
    }
    const uint4 *p = (const uint4 *)(src + (ptrdiff_t)yi * ss + x0 - H);
    #pragma unroll
    for (int q = 0; q < W / 4; q++) {
        const uint4 v = __ldg(p + q);
        w[4 * q] = v.x, w[4 * q + 1] = v.y, w[4 * q + 2] = v.z, w[4 * q + 3] = v.w;
    }
}

/* Step s of the walk enters input row y0 - R + s, takes out row y0 - R + s - (2R + 1) from
 * s = 2R + 1 on and emits output row y0 + s - 2R from s = 2R on. */
template <int R>
__global__ void __launch_bounds__(MBAND_THREADS)
    mband_kernel(const uint8_t *__restrict__ src, ptrdiff_t ss, uint8_t *__restrict__ dst, ptrdiff_t ds,
                 int x_begin, int x_end, int height, int border, int band, uint32_t mul)
{
    constexpr int H = R <= 15 ? 16 : 32, W = (IPK_MBAND_OUT + 2 * H) / 4, D = H == 16 ? 2 : 1, K = 2 * R + 1;
    const int x0 = x_begin + (blockIdx.x * MBAND_THREADS + threadIdx.x) * IPK_MBAND_OUT;
    const int y0 = blockIdx.y * band;
    if (x0 >= x_end) return;
    const int steps = min(band, height - y0) + 2 * R, j0 = y0 - R;
    uint32_t vp[2 * W];
    #pragma unroll
    for (int k = 0; k < 2 * W; k++) vp[k] = 0;
    uint32_t enter[D][W], leave[D][W];
    #pragma unroll
    for (int i = 0; i < D; i++) {
        mband_load<H>(src, ss, height, border, x0, j0 + i, enter[i]);   /* steps > 2R >= D */
        #pragma unroll
        for (int k = 0; k < W; k++) leave[i][k] = 0;   /* D < K: nothing leaves yet */
    }
    for (int s0 = 0; s0 < steps; s0 += D) {
        #pragma unroll
        for (int i = 0; i < D; i++) {
            const int s = s0 + i;
            if (s >= steps) break;
            ipk_mband_vstep(vp, enter[i], leave[i], W);
            if (s + D < steps) {
                mband_load<H>(src, ss, height, border, x0, j0 + s + D, enter[i]);
                if (s + D >= K) {
                    mband_load<H>(src, ss, height, border, x0, j0 + s + D - K, leave[i]);
                } else {
                    #pragma unroll
                    for (int k = 0; k < W; k++) leave[i][k] = 0;
                }
            }
            if (s < 2 * R) continue;
            uint32_t out[IPK_MBAND_OUT / 4];
            ipk_mband_row(vp, R, H, mul, out);
            uint4 *d = (uint4 *)(ipk_wrow<uint8_t>(dst, ds, y0 + s - 2 * R) + x0);
            d[0] = make_uint4(out[0], out[1], out[2], out[3]);
            d[1] = make_uint4(out[4], out[5], out[6], out[7]);
        }
    }
}

/* Rows a band: enough bands that the grid fills the device's resident blocks (each band costs 2r
 * rows of priming), at least min_band and few enough for the grid. */
static int mband_band(const void *kernel, int blocks_x, int height, int min_band, int *band)
{
    long long resident = 0;
    if (!ipk_resident_blocks(kernel, MBAND_THREADS, &resident)) return 0;
    const long long bands = resident / blocks_x > 1 ? resident / blocks_x : 1;
    *band = (int)ipk_div_up(height, bands);
    if (*band < min_band) *band = min_band;
    if (*band < (int)ipk_div_up(height, IPK_MAX_GRID_Y)) *band = (int)ipk_div_up(height, IPK_MAX_GRID_Y);
    return 1;
}

/* The band columns of ipk_mband_span; the caller checked the image (1-channel u8, 16-byte rows). */
template <int R>
static int mband_launch_r(const ipk_img *src, const ipk_img *dst, int border, int min_band, cudaStream_t s)
{
    int x_begin = 0, x_end = 0;
    if (!ipk_mband_span(src->width, ipk_mband_halo(R), &x_begin, &x_end)) return IPK_EINVAL;
    const int blocks_x = (int)ipk_div_up((x_end - x_begin) / IPK_MBAND_OUT, MBAND_THREADS);
    int band = 0;
    if (!mband_band((const void *)mband_kernel<R>, blocks_x, src->height, min_band, &band)) return IPK_ECUDA;
    dim3 grid(blocks_x, ipk_div_up(src->height, band));
    mband_kernel<R><<<grid, MBAND_THREADS, 0, s>>>((const uint8_t *)src->data, src->stride, (uint8_t *)dst->data,
                                                   dst->stride, x_begin, x_end, src->height, border, band,
                                                   ipk_mband_mul(R));
    return ipk_launch_status();
}

static int mband_launch(const ipk_img *src, const ipk_img *dst, int radius, int border, int min_band,
                        cudaStream_t s)
{
    switch (radius) {
    case 3: return mband_launch_r<3>(src, dst, border, min_band, s);
    case 4: return mband_launch_r<4>(src, dst, border, min_band, s);
    case 5: return mband_launch_r<5>(src, dst, border, min_band, s);
    case 6: return mband_launch_r<6>(src, dst, border, min_band, s);
    case 7: return mband_launch_r<7>(src, dst, border, min_band, s);
    case 8: return mband_launch_r<8>(src, dst, border, min_band, s);
    case 9: return mband_launch_r<9>(src, dst, border, min_band, s);
    case 10: return mband_launch_r<10>(src, dst, border, min_band, s);
    case 11: return mband_launch_r<11>(src, dst, border, min_band, s);
    case 12: return mband_launch_r<12>(src, dst, border, min_band, s);
    case 13: return mband_launch_r<13>(src, dst, border, min_band, s);
    case 14: return mband_launch_r<14>(src, dst, border, min_band, s);
    case 15: return mband_launch_r<15>(src, dst, border, min_band, s);
    case 16: return mband_launch_r<16>(src, dst, border, min_band, s);
    case 17: return mband_launch_r<17>(src, dst, border, min_band, s);
    case 18: return mband_launch_r<18>(src, dst, border, min_band, s);
    case 19: return mband_launch_r<19>(src, dst, border, min_band, s);
    case 20: return mband_launch_r<20>(src, dst, border, min_band, s);
    case 21: return mband_launch_r<21>(src, dst, border, min_band, s);
    case 22: return mband_launch_r<22>(src, dst, border, min_band, s);
    case 23: return mband_launch_r<23>(src, dst, border, min_band, s);
    case 24: return mband_launch_r<24>(src, dst, border, min_band, s);
    case 25: return mband_launch_r<25>(src, dst, border, min_band, s);
    case 26: return mband_launch_r<26>(src, dst, border, min_band, s);
    case 27: return mband_launch_r<27>(src, dst, border, min_band, s);
    case 28: return mband_launch_r<28>(src, dst, border, min_band, s);
    case 29: return mband_launch_r<29>(src, dst, border, min_band, s);
    case 30: return mband_launch_r<30>(src, dst, border, min_band, s);
    case 31: return mband_launch_r<31>(src, dst, border, min_band, s);
    }
    return IPK_EINVAL;
}

/* 1 when the band kernel takes the image: 1-channel u8, radius 3 to IPK_MBAND_MAXR, not shrink,
 * rows of both images on 16 bytes, and wide enough for band columns. */
static bool mband_fits(const ipk_img *src, const ipk_img *dst, int radius, int border)
{
    int x_begin = 0, x_end = 0;
    return src->dtype == IPK_U8 && src->channels == 1 && radius >= 3 && radius <= IPK_MBAND_MAXR &&
           border != IPK_SHRINK && ipk_aligned(src->data, src->stride, 16) &&
           ipk_aligned(dst->data, dst->stride, 16) &&
           ipk_mband_span(src->width, ipk_mband_halo(radius), &x_begin, &x_end);
}
#endif
