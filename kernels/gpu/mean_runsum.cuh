/* The running-sum mean kernel for 1-channel u8 at radius 3 to 100, every border: one pass down the
 * image, the vertical window sums of C columns a lane in registers, the horizontal ones from a
 * prefix in shared memory (the lane arithmetic and layout: kernels/common/mean_runsum.h, which
 * test_mean_runsum checks on the host). A warp owns 32 C input columns and a band of rows; it
 * keeps D entering and D leaving rows in flight as 8- or 16-byte loads (the leaving row is read
 * again, 2r + 1 rows later, from L1 or L2). No __syncthreads: the warps of a block are
 * independent, each with two prefix buffers (and two byte buffers but in the own layout), so a
 * __syncwarp orders a row's writes and reads. Lanes at the image's sides and unaligned rows
 * gather their bytes through the border out of line. */
#ifndef IPK_MEAN_RUNSUM_CUH
#define IPK_MEAN_RUNSUM_CUH
#include "gpu_common.cuh"
#include "swar_strip.cuh"
#include "mean_runsum.h"

#define RSUM_WARPS 1   /* warps a block: each on its own, so blocks as small as the grid wants */

template <int C> struct rsum_row { uint32_t w[C / 4]; };

/* Bytes x .. x+C-1 of a row through the border (0 where it drops them): out of line, so that it
 * does not weigh on the fast path's registers. */
template <int C>
static __device__ __noinline__ rsum_row<C> rsum_gather(const uint8_t *row, int x, int width, int border)
{
    rsum_row<C> r;
    #pragma unroll
    for (int i = 0; i < C / 4; i++) r.w[i] = sw_gather4(row, x + 4 * i, width, border);
    return r;
}

/* Input row y (through the border) at the lane's columns. */
template <int C>
__device__ __forceinline__ rsum_row<C> rsum_load(const uint8_t *__restrict__ src, ptrdiff_t ss, int width,
                                                 int height, int border, int x, int y, bool fast)
{
    rsum_row<C> r;
    const int yi = ipk_border_index(y, height, border);
    if (yi < 0) {
        #pragma unroll
        for (int i = 0; i < C / 4; i++) r.w[i] = 0;
        return r;
    }
    const uint8_t *row = src + (ptrdiff_t)yi * ss;
    if (!fast) return rsum_gather<C>(row, x, width, border);
    if constexpr (C == 16) {
        const uint4 q = __ldg((const uint4 *)(row + x));
        r.w[0] = q.x, r.w[1] = q.y, r.w[2] = q.z, r.w[3] = q.w;
    } else {
        const uint2 q = __ldg((const uint2 *)(row + x));
        r.w[0] = q.x, r.w[1] = q.y;
    }
    return r;
}

template <int C>
__device__ __forceinline__ void rsum_store(uint8_t *d, const uint32_t *o, int n, bool vec)
{
    if constexpr (C == 16) {
        sw_store(d, o, n, vec);
    } else if (vec) {
        *(uint2 *)d = make_uint2(o[0], o[1]);
    } else {
        for (int b = 0; b < n; b++) d[b] = (uint8_t)(o[b >> 2] >> (8 * (b & 3)));
    }
}

/* Where one output row's prefix and bytes go, and what the lane needs to finish and store it. */
struct rsum_lane {
    int lane, x, x_warp0, width, height;
    int hi_base, lo_base, write_base;
    int hi_split, lo_split;   /* own: where the reads cross into the next chunk */
    bool stores, vec_out;
};

/* The full window's finish, or shrink's count at column xc of row y (span_y: the row's). */
template <bool SHRINK, bool SHIFTED>
__device__ __forceinline__ uint32_t rsum_finish(const ipk_rsum_geom &g, uint32_t s, int xc, int width,
                                                uint32_t span_y)
{
    if (SHRINK) {
        const bool inside = xc >= 0 && xc < width;
        return ipk_rsum_finish(&g, s, inside ? ipk_rsum_span(xc, width, g.radius) * span_y : g.n);
    }
    return SHIFTED ? ipk_rsum_full(&g, s) : ipk_swar_umulhi(s + g.n / 2, g.mul);
}

/* own: each lane finishes its own C columns from scalar reads (base + i, one word further from
 * the split on) and stores them; no byte buffer, one __syncwarp a row. */
template <int C, bool SHRINK, bool SHIFTED>
__device__ __forceinline__ void rsum_finish_own(const ipk_rsum_geom &g, const rsum_lane &l, const uint32_t *pbuf,
                                                uint8_t *__restrict__ dst, ptrdiff_t ds, int y)
{
    const uint32_t span_y = SHRINK ? ipk_rsum_span(y, l.height, g.radius) : 0;
    uint32_t o[C / 4];
    #pragma unroll
    for (int w = 0; w < C / 4; w++) {
        uint32_t word = 0;
        #pragma unroll
        for (int b = 0; b < 4; b++) {
            const int i = 4 * w + b;
            const uint32_t hi = pbuf[(i >= l.hi_split ? l.hi_base + 1 : l.hi_base) + i];
            const uint32_t lo = pbuf[(i >= l.lo_split ? l.lo_base + 1 : l.lo_base) + i];
            word |= rsum_finish<SHRINK, SHIFTED>(g, hi - lo, l.x + i, l.width, span_y) << (8 * b);
        }
        o[w] = word;
    }
    if (l.stores) rsum_store<C>(ipk_wrow<uint8_t>(dst, ds, y) + l.x, o, min(C, l.width - l.x), l.vec_out);
}

/* Lane k finishes columns k + 32 i into the byte buffer; each storing lane then writes its own C
 * bytes. */
template <int C, bool SHRINK, bool SHIFTED>
__device__ __forceinline__ void rsum_finish_cols(const ipk_rsum_geom &g, const rsum_lane &l, const uint32_t *pbuf,
                                                 uint8_t *bbuf, uint8_t *__restrict__ dst, ptrdiff_t ds, int y)
{
    const int step = ipk_rsum_read_step(C);
    const uint32_t span_y = SHRINK ? ipk_rsum_span(y, l.height, g.radius) : 0;
    #pragma unroll
    for (int i = 0; i < C; i++) {
        const uint32_t s = pbuf[l.hi_base + i * step] - pbuf[l.lo_base + i * step];
        bbuf[l.lane + 32 * i] = (uint8_t)rsum_finish<SHRINK, SHIFTED>(g, s, l.x_warp0 + l.lane + 32 * i, l.width,
                                                                     span_y);
    }
    __syncwarp();
    if (!l.stores) return;
    uint32_t o[C / 4];
    if constexpr (C == 16) {
        const uint4 b = *(const uint4 *)(bbuf + l.lane * C);
        o[0] = b.x, o[1] = b.y, o[2] = b.z, o[3] = b.w;
    } else {
        const uint2 b = *(const uint2 *)(bbuf + l.lane * C);
        o[0] = b.x, o[1] = b.y;
    }
    rsum_store<C>(ipk_wrow<uint8_t>(dst, ds, y) + l.x, o, min(C, l.width - l.x), l.vec_out);
}

/* Output row y from the lane's vertical sums v: prefix (the lanes' totals scanned by shuffles, then
 * the lane's own) into pbuf, then the finish of the layout (SHIFTED: the divisor plan's shift may
 * not be 0; shrink always takes it). */
template <int C, bool SHRINK, bool SHIFTED, bool OWN>
__device__ __forceinline__ void rsum_emit(const uint32_t *v, const ipk_rsum_geom &g, const rsum_lane &l,
                                          uint32_t *pbuf, uint8_t *bbuf, uint8_t *__restrict__ dst, ptrdiff_t ds,
                                          int y)
{
    const uint32_t total = ipk_rsum_total(v, C);
    uint32_t incl = total;
    #pragma unroll
    for (int d = 1; d < 32; d *= 2) {
        const uint32_t t = __shfl_up_sync(0xffffffffu, incl, d);
        if (l.lane >= d) incl += t;
    }
    uint32_t p[C];
    ipk_rsum_prefix(v, C, incl - total, p);
    if constexpr (OWN) {
        #pragma unroll
        for (int i = 0; i < C; i++) pbuf[l.write_base + i] = p[i];
        __syncwarp();
        rsum_finish_own<C, SHRINK, SHIFTED>(g, l, pbuf, dst, ds, y);
    } else {
        #pragma unroll
        for (int q = 0; q < C / 4; q++)
            *(uint4 *)(pbuf + l.write_base + 4 * q) = make_uint4(p[4 * q], p[4 * q + 1], p[4 * q + 2], p[4 * q + 3]);
        __syncwarp();
        rsum_finish_cols<C, SHRINK, SHIFTED>(g, l, pbuf, bbuf, dst, ds, y);
    }
}

/* One warp: the band of output rows y0 .. y0 + band - 1 over its 32 C input columns. Input row
 * r of the walk (r = 0 is y0 - radius) enters at step r and leaves at step r + 2 radius + 1. */
template <int C, int D, bool SHRINK, bool SHIFTED, bool OWN>
__global__ void __launch_bounds__(32 * RSUM_WARPS)
    rsum_kernel(const uint8_t *__restrict__ src, ptrdiff_t ss, uint8_t *__restrict__ dst, ptrdiff_t ds, int width,
                int height, int border, int band, const __grid_constant__ ipk_rsum_geom g)
{
    extern __shared__ __align__(16) uint32_t rsum_smem[];
    const int warp = threadIdx.y, x_out = (blockIdx.x * RSUM_WARPS + warp) * g.out_w;
    const int y0 = blockIdx.y * band;
    if (x_out >= width || y0 >= height) return;   /* the whole warp */
    uint32_t *wsm = rsum_smem + warp * ipk_rsum_warp_words(&g);
    rsum_lane l;
    l.lane = threadIdx.x;
    l.x_warp0 = x_out - g.halo;
    l.x = ipk_rsum_lane_x(&g, x_out, l.lane);
    l.width = width;
    l.height = height;
    if (OWN) {
        l.hi_base = ipk_rsum_own_base(&g, l.lane, g.radius, &l.hi_split);
        l.lo_base = ipk_rsum_own_base(&g, l.lane, -g.radius - 1, &l.lo_split);
    } else {
        l.hi_base = ipk_rsum_addr(&g, l.lane + g.radius);
        l.lo_base = ipk_rsum_addr(&g, l.lane - g.radius - 1);
        l.hi_split = l.lo_split = C;
    }
    l.write_base = ipk_rsum_addr(&g, l.lane * C);
    l.stores = ipk_rsum_is_out(&g, l.lane * C) && l.x < width;
    l.vec_out = l.x + C <= width && ((uintptr_t)dst % C) == 0 && (ds % C) == 0;
    const bool fast = l.x >= 0 && l.x + C <= width && ((uintptr_t)src % C) == 0 && (ss % C) == 0;

    const int K = 2 * g.radius + 1, j_first = y0 - g.radius, n_in = min(band, height - y0) + K - 1;
    const rsum_row<C> zero = {};
    rsum_row<C> enter[D], leave[D];
    #pragma unroll
    for (int i = 0; i < D; i++) {
        enter[i] = i < n_in ? rsum_load<C>(src, ss, width, height, border, l.x, j_first + i, fast) : zero;
        leave[i] = i < n_in && i >= K ? rsum_load<C>(src, ss, width, height, border, l.x, j_first + i - K, fast)
                                      : zero;
    }
    uint32_t v[C / 2];
    #pragma unroll
    for (int m = 0; m < C / 2; m++) v[m] = 0;
    int par = 0;
    for (int r0 = 0; r0 < n_in; r0 += D) {
        #pragma unroll
        for (int i = 0; i < D; i++) {
            const int r = r0 + i;
            if (r >= n_in) break;
            const rsum_row<C> a = enter[i], b = leave[i];
            if (r + D < n_in) {
                enter[i] = rsum_load<C>(src, ss, width, height, border, l.x, j_first + r + D, fast);
                leave[i] = r + D >= K ? rsum_load<C>(src, ss, width, height, border, l.x, j_first + r + D - K, fast)
                                      : zero;
            }
            ipk_rsum_vstep(v, a.w, b.w, C / 4);
            if (r < K - 1) continue;
            uint32_t *pbuf = wsm + par * g.pbuf_words;
            uint8_t *bbuf = (uint8_t *)(wsm + 2 * g.pbuf_words + par * 8 * C);
            rsum_emit<C, SHRINK, SHIFTED, OWN>(v, g, l, pbuf, bbuf, dst, ds, y0 + r - (K - 1));
            par ^= 1;
        }
    }
}

/* Rows a warp walks: enough bands to fill the device with resident warps (each band costs 2r
 * rows of priming), at least min_band and few enough for the grid. */
template <typename Kernel>
static int rsum_band(Kernel kernel, size_t smem, int width, int height, int out_w, int min_band, int *band)
{
    int dev = 0, sms = 0, per_sm = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, 32 * RSUM_WARPS, smem) != cudaSuccess)
        return 0;
    const long long gx = ipk_div_up(ipk_div_up(width, out_w), RSUM_WARPS);
    const long long bands = (long long)sms * per_sm / gx > 1 ? (long long)sms * per_sm / gx : 1;
    *band = (int)ipk_div_up(height, bands);
    if (*band < min_band) *band = min_band;
    if (*band < (int)ipk_div_up(height, IPK_MAX_GRID_Y)) *band = (int)ipk_div_up(height, IPK_MAX_GRID_Y);
    return 1;
}

template <int C, int D, bool SHRINK, bool SHIFTED, bool OWN>
static int rsum_launch_cfg(const ipk_img *src, const ipk_img *dst, const ipk_rsum_geom &g, int border, int min_band,
                           cudaStream_t s)
{
    const size_t smem = (size_t)RSUM_WARPS * ipk_rsum_warp_words(&g) * sizeof(uint32_t);
    if (smem > 48 * 1024 && cudaFuncSetAttribute(rsum_kernel<C, D, SHRINK, SHIFTED, OWN>,
                                                 cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess)
        return IPK_ECUDA;
    int band = 0;
    if (!rsum_band(rsum_kernel<C, D, SHRINK, SHIFTED, OWN>, smem, src->width, src->height, g.out_w, min_band, &band))
        return IPK_ECUDA;
    dim3 grid(ipk_div_up(ipk_div_up(src->width, g.out_w), RSUM_WARPS), ipk_div_up(src->height, band));
    dim3 block(32, RSUM_WARPS);
    rsum_kernel<C, D, SHRINK, SHIFTED, OWN><<<grid, block, smem, s>>>((const uint8_t *)src->data, src->stride,
                                                                 (uint8_t *)dst->data, dst->stride, src->width,
                                                                 src->height, border, band, g);
    return ipk_launch_status();
}

/* C columns a lane, D rows in flight, at least min_band rows a warp (more where the device's
 * resident warps would otherwise sit idle); OWN: each lane finishes its own columns. */
template <int C, int D, bool OWN>
static int rsum_launch(const ipk_img *src, const ipk_img *dst, int radius, int border, int min_band, cudaStream_t s)
{
    ipk_rsum_geom g;
    if (!ipk_rsum_geom_init(&g, C, radius, OWN)) return IPK_EINVAL;
    if (border == IPK_SHRINK) return rsum_launch_cfg<C, D, true, true, OWN>(src, dst, g, border, min_band, s);
    return g.shift ? rsum_launch_cfg<C, D, false, true, OWN>(src, dst, g, border, min_band, s)
                   : rsum_launch_cfg<C, D, false, false, OWN>(src, dst, g, border, min_band, s);
}
#endif
