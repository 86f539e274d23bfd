/* Box mean on the GPU, fused in one kernel per tile of MEAN_TILE_H rows x V values
 * (V = 64, or 48 for 3 channels, so a tile holds whole pixels):
 *   1. horizontal window sums of the TILE_H + 2r input rows the tile needs, each thread
 *      sliding a running sum over MEAN_SEG pixels of one channel, into shared memory;
 *   2. vertical running sums down MEAN_SEG-row segments of each value column, then the
 *      rounding floor((sum + n/2) / n).
 * Cost per pixel does not grow with the radius past the first window of each segment.
 * Integer sums are exact in uint32 ((2*100+1)^2 * 65535 < 2^32); float sums run in double,
 * the horizontal sums kept as float. Needs no scratch. Plain calls take this tile kernel where the
 * faster ones below do not fit: on 1-channel u8, the band kernel (mean_band.cuh), the vec kernel
 * (convolve_vec_block.cuh), the 3x3 float strips and the running sums (see ipk_mean_gpu_path). */
#include <string.h>
#include "gpu_common.cuh"
#include "ipk_bench.h"
#include "convolve_vec_block.cuh"
#include "mean_band.cuh"

/* 1: plain calls take the vec kernel (convolve_vec_block.cuh) for 1-channel u8 of radius 1 (every
 * border); 0: the tile kernels. 1: 0.060 against 0.103 ms at 8192x8192 on the H100. */
#define MEAN_VEC_AUTO 1
/* 1: plain calls take the vec kernel for 1-channel u8 of radius 2 too (every border); 0: the
 * tile kernels. 1: 0.070 against 0.110 ms at 8192x8192 on the H100. */
#define MEAN_VEC5_AUTO 1
/* 1: plain calls take the band kernel (mean_band.cuh) where it fits (1-channel u8, radius 3 to 31,
 * not shrink, 16-byte rows); 0: the tile kernels. 1: 0.109 against 0.163 ms at 31x31, 0.098
 * against 0.114 at 7x7 on the H100. */
#define MEAN_BAND_AUTO 1

#define MEAN_TILE_H 64
#define MEAN_SEG 16
#define MEAN_VSEGS (MEAN_TILE_H / MEAN_SEG)

template <typename T> struct mean_acc { typedef uint32_t sum; typedef uint32_t stored; };
template <> struct mean_acc<float> { typedef double sum; typedef float stored; };

template <typename T>
__device__ __forceinline__ typename mean_acc<T>::sum mean_px(const T *row, int x, int width, int border, int ch,
                                                             int channels)
{
    int xi = ipk_border_index(x, width, border);
    return xi < 0 ? 0 : (typename mean_acc<T>::sum)row[(size_t)xi * channels + ch];
}

/* Window sums along one input row for pixels px0 .. px0+MEAN_SEG-1 of channel ch. */
template <typename T>
__device__ void mean_row_segment(const T *row, int px0, int ch, int channels, int width, int radius, int border,
                                 typename mean_acc<T>::stored *out, int out_step)
{
    typedef typename mean_acc<T>::sum S;
    S sum = 0;
    for (int dx = -radius; dx <= radius; dx++) sum += mean_px<T>(row, px0 + dx, width, border, ch, channels);
    for (int k = 0; k < MEAN_SEG && px0 + k < width; k++) {
        if (k > 0)
            sum += mean_px<T>(row, px0 + k + radius, width, border, ch, channels) -
                   mean_px<T>(row, px0 + k - radius - 1, width, border, ch, channels);
        out[k * out_step] = (typename mean_acc<T>::stored)sum;
    }
}

__device__ __forceinline__ int mean_span(int i, int n, int radius)
{
    return min(i + radius, n - 1) - max(i - radius, 0) + 1;
}

template <typename T>
__device__ __forceinline__ T mean_round(typename mean_acc<T>::sum sum, uint32_t n)
{
    return (T)((sum + n / 2) / n);
}
template <> __device__ __forceinline__ float mean_round<float>(double sum, uint32_t n)
{
    return (float)(sum / (double)n);
}

/* right_tile0 = 0: tile blockIdx.x; else the first left_tiles tiles, then those from right_tile0 on. */
template <typename T>
__global__ void mean_kernel(const void *src, ptrdiff_t ss, void *dst, ptrdiff_t ds, int width, int height,
                            int channels, int radius, int border, int left_tiles, int right_tile0)
{
    typedef typename mean_acc<T>::sum S;
    typedef typename mean_acc<T>::stored H;
    extern __shared__ __align__(16) unsigned char mean_smem[];
    H *hs = (H *)mean_smem;
    const int V = blockDim.x / MEAN_VSEGS;               /* values per tile row */
    const int rows = MEAN_TILE_H + 2 * radius;
    const int tile_x = right_tile0 && (int)blockIdx.x >= left_tiles ? right_tile0 + (int)blockIdx.x - left_tiles
                                                                    : (int)blockIdx.x;
    const int px_first = tile_x * (V / channels);
    const int y0 = blockIdx.y * MEAN_TILE_H;

    const int items_per_row = V / MEAN_SEG;              /* segments: (group, channel) pairs */
    for (int item = threadIdx.x; item < rows * items_per_row; item += blockDim.x) {
        int ry = item / items_per_row, w = item % items_per_row;
        int g = w / channels, ch = w % channels;
        int px0 = px_first + g * MEAN_SEG;
        H *out = hs + (size_t)ry * V + g * MEAN_SEG * channels + ch;
        if (px0 >= width) continue;
        int yi = ipk_border_index(y0 - radius + ry, height, border);
        if (yi < 0) {
            for (int k = 0; k < MEAN_SEG; k++) out[k * channels] = 0;
            continue;
        }
        mean_row_segment<T>(ipk_crow<T>(src, ss, yi), px0, ch, channels, width, radius, border, out, channels);
    }
    __syncthreads();

    const int j = threadIdx.x % V, seg = threadIdx.x / V;
    const int x = px_first + j / channels;
    const int ty0 = seg * MEAN_SEG;
    if (x >= width || y0 + ty0 >= height) return;
    const uint32_t wx = border == IPK_SHRINK ? mean_span(x, width, radius) : 2 * radius + 1;
    S sum = 0;
    for (int r = 0; r <= 2 * radius; r++) sum += (S)hs[(size_t)(ty0 + r) * V + j];
    for (int k = 0; k < MEAN_SEG && y0 + ty0 + k < height; k++) {
        int ty = ty0 + k;
        if (k > 0) sum += (S)hs[(size_t)(ty + 2 * radius) * V + j] - (S)hs[(size_t)(ty - 1) * V + j];
        int y = y0 + ty;
        uint32_t wy = border == IPK_SHRINK ? mean_span(y, height, radius) : 2 * radius + 1;
        ipk_wrow<T>(dst, ds, y)[(size_t)x * channels + j % channels] = mean_round<T>(sum, wx * wy);
    }
}

/* Running-sum path for 1-channel u8, radius 1..RS_MAXR, every border: a block of RS_THREADS
 * makes RS_TW x RS_TH outputs. Its input tile (a RS_HALO-byte halo each side, zeros where the
 * border contributes nothing) is loaded as words into shared memory; row window sums of
 * RS_HSEG outputs per thread slide four bytes at a time into uint16 (31 * 255 fits); then each
 * thread walks RS_VSEG rows down two columns keeping vertical running sums. The work per pixel
 * does not grow with the radius beyond the first window of each segment. */
#define RS_MAXR 15
#define RS_HALO 16
#define RS_TW 128
#define RS_TH 64
#define RS_THREADS 256
#define RS_HSEG 16
#define RS_VSEG 16
#define RS_TWORDS ((RS_TW + 2 * RS_HALO) / 4 + 1)   /* odd: rows fall on different banks */
#define RS_HWORDS (RS_TW / 2 + 1)                   /* uint16 pairs per row sum row, odd */
#define RS_ROWS_MAX (RS_TH + 2 * RS_MAXR)

/* Each row: RS_TW + 2 * RS_HALO bytes as 16-byte loads when the row span is inside the image
 * and aligned, else byte by byte through the border; the pad word is zeroed. */
__device__ __forceinline__ void rs_load_tile(const uint8_t *src, ptrdiff_t ss, int width, int height, int border,
                                             int x0, int y0, int radius, uint32_t *tile)
{
    constexpr int Q = (RS_TW + 2 * RS_HALO) / 16;   /* 16-byte pieces per row */
    const int rows = RS_TH + 2 * radius, xl = x0 - RS_HALO;
    const bool inside = xl >= 0 && xl + 16 * Q <= width && ((uintptr_t)src % 16) == 0 && (ss % 16) == 0;
    constexpr int ITER = (RS_ROWS_MAX * Q + RS_THREADS - 1) / RS_THREADS;
    uint4 pieces[ITER];
    #pragma unroll
    for (int it = 0; it < ITER; it++) {
        const int i = threadIdx.x + it * RS_THREADS, ry = i / Q, qi = i - ry * Q;
        const int yi = ry < rows ? ipk_border_index(y0 - radius + ry, height, border) : -1;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (yi >= 0) {
            const uint8_t *row = src + (ptrdiff_t)yi * ss;
            if (inside) {
                v = __ldg((const uint4 *)(row + xl + 16 * qi));
            } else {
                uint32_t w[4] = { 0, 0, 0, 0 };
                for (int k = 0; k < 16; k++) {
                    int xi = ipk_border_index(xl + 16 * qi + k, width, border);
                    if (xi >= 0) w[k >> 2] |= (uint32_t)row[xi] << (8 * (k & 3));
                }
                v = make_uint4(w[0], w[1], w[2], w[3]);
            }
        }
        pieces[it] = v;
    }
    #pragma unroll
    for (int it = 0; it < ITER; it++) {
        const int i = threadIdx.x + it * RS_THREADS, ry = i / Q, qi = i - ry * Q;
        if (i < rows * Q) {
            uint32_t *t = tile + ry * RS_TWORDS + 4 * qi;
            t[0] = pieces[it].x;
            t[1] = pieces[it].y;
            t[2] = pieces[it].z;
            t[3] = pieces[it].w;
        }
    }
    for (int ry = threadIdx.x; ry < rows; ry += RS_THREADS) tile[ry * RS_TWORDS + RS_TWORDS - 1] = 0;
}

/* Sum of the bytes a .. a+n-1 of a shared row, a word (masked at the ends) per __dp4a. */
__device__ __forceinline__ uint32_t rs_byte_sum(const uint32_t *row, int a, int n)
{
    uint32_t sum = 0;
    const int b = a + n;
    for (int wi = a >> 2; 4 * wi < b; wi++) {
        const int lo = max(a - 4 * wi, 0), hi = min(b - 4 * wi, 4);
        const uint32_t mask = (hi == 4 ? 0xffffffffu : (1u << (8 * hi)) - 1) & ~((1u << (8 * lo)) - 1);
        sum = __dp4a(row[wi] & mask, 0x01010101u, sum);
    }
    return sum;
}

/* Four bytes starting at byte c of a shared row (c unaligned: a funnel shift of two words). */
__device__ __forceinline__ uint32_t rs_bytes4(const uint32_t *row, int c)
{
    return __funnelshift_r(row[c >> 2], row[(c >> 2) + 1], 8 * (c & 3));
}

/* Bytes 0..b of a word: RS_PREFIX(b) adds them in a __dp4a, RS_LOW(b) (bytes of -1) subtracts. */
#define RS_LOW(b) (0xffffffffu >> (8 * (3 - (b))))
#define RS_PREFIX(b) (RS_LOW(b) & 0x01010101u)

/* c + the unsigned bytes of a times the signed bytes of b (no CUDA intrinsic mixes them). */
__device__ __forceinline__ uint32_t rs_dp4a_su(uint32_t a, int b, uint32_t c)
{
    int d;
    asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"((int)c));
    return (uint32_t)d;
}

/* Window sums of one tile row for outputs j0 .. j0+RS_HSEG-1, as uint16 pairs. */
__device__ __forceinline__ void rs_row_segment(const uint32_t *row, int j0, int radius, uint32_t *out)
{
    const int enter = RS_HALO + j0 + radius + 1, leave = RS_HALO + j0 - radius;
    uint32_t h[RS_HSEG];
    uint32_t sum = rs_byte_sum(row, leave, 2 * radius + 1);
    h[0] = sum;
    #pragma unroll
    for (int q = 0; q < RS_HSEG / 4; q++) {
        const uint32_t in = rs_bytes4(row, enter + 4 * q), out4 = rs_bytes4(row, leave + 4 * q);
        #pragma unroll
        for (int b = 0; b < 4; b++)
            if (4 * q + b + 1 < RS_HSEG)
                h[4 * q + b + 1] = rs_dp4a_su(out4, (int)RS_LOW(b), __dp4a(in, RS_PREFIX(b), sum));
        sum = h[4 * q + 4 < RS_HSEG ? 4 * q + 4 : RS_HSEG - 1];
    }
    #pragma unroll
    for (int p = 0; p < RS_HSEG / 2; p++) out[p] = h[2 * p] | (h[2 * p + 1] << 16);
}

/* floor((sum + n/2) / n) = umulhi(x, ceil(2^32 / n)) with x = sum + n/2: the error x * e / 2^32,
 * e = ceil(2^32 / n) * n - 2^32 < n, stays under 1/n for x < 2^22 / n (x < 2^18, n <= 961).
 * Where the shrink border cuts the window, a division. */
struct rs_div {
    uint32_t n, mul;
    __device__ __forceinline__ uint32_t full(uint32_t sum) const { return __umulhi(sum + n / 2, mul); }
    __device__ __forceinline__ uint32_t any(uint32_t sum, uint32_t count) const
    {
        return count == n ? full(sum) : (sum + count / 2) / count;
    }
};

template <bool SHRINK>
__global__ void __launch_bounds__(RS_THREADS, 5)
    rs_mean_kernel(const uint8_t *src, ptrdiff_t ss, uint8_t *dst, ptrdiff_t ds, int width, int height, int radius,
                   int border, rs_div div, int right_tile0)
{
    __shared__ uint32_t tile[RS_ROWS_MAX * RS_TWORDS];
    __shared__ uint32_t hs[RS_ROWS_MAX * RS_HWORDS];
    const int tile_x = right_tile0 && blockIdx.x ? right_tile0 - 1 + (int)blockIdx.x : (int)blockIdx.x;
    const int x0 = tile_x * RS_TW, y0 = blockIdx.y * RS_TH, rows = RS_TH + 2 * radius;
    rs_load_tile(src, ss, width, height, border, x0, y0, radius, tile);
    __syncthreads();

    constexpr int SEGS = RS_TW / RS_HSEG;
    for (int item = threadIdx.x; item < rows * SEGS; item += RS_THREADS) {
        const int ry = item % rows, g = item / rows;
        rs_row_segment(tile + ry * RS_TWORDS, g * RS_HSEG, radius, hs + ry * RS_HWORDS + g * (RS_HSEG / 2));
    }
    __syncthreads();

    const int cp = threadIdx.x % (RS_TW / 2), ty0 = (threadIdx.x / (RS_TW / 2)) * RS_VSEG;
    const int x = x0 + 2 * cp;
    if (x >= width || y0 + ty0 >= height) return;
    const uint32_t wx0 = SHRINK ? mean_span(x, width, radius) : 0;
    const uint32_t wx1 = SHRINK ? mean_span(min(x + 1, width - 1), width, radius) : 0;
    const bool pair_ok = x + 1 < width && ((uintptr_t)dst % 2) == 0 && (ds % 2) == 0;
    const uint32_t *col = hs + ty0 * RS_HWORDS + cp;
    uint32_t s0 = 0, s1 = 0;
    for (int r = 0; r < 2 * radius + 1; r++) {
        const uint32_t v = col[r * RS_HWORDS];
        s0 += v & 0xffffu;
        s1 += v >> 16;
    }
    const int n_rows = min(RS_VSEG, height - (y0 + ty0));
    uint8_t *d = ipk_wrow<uint8_t>(dst, ds, y0 + ty0) + x;
    #pragma unroll 4
    for (int k = 0; k < n_rows; k++, d += ds) {
        if (k > 0) {
            const uint32_t in = col[(k + 2 * radius) * RS_HWORDS], out = col[(k - 1) * RS_HWORDS];
            s0 += (in & 0xffffu) - (out & 0xffffu);
            s1 += (in >> 16) - (out >> 16);
        }
        uint32_t m0, m1;
        if (SHRINK) {
            const uint32_t wy = mean_span(y0 + ty0 + k, height, radius);
            m0 = div.any(s0, wx0 * wy);
            m1 = div.any(s1, wx1 * wy);
        } else {
            m0 = div.full(s0);
            m1 = div.full(s1);
        }
        if (pair_ok) {
            *(uint16_t *)d = (uint16_t)(m0 | (m1 << 8));
        } else {
            d[0] = (uint8_t)m0;
            if (x + 1 < width) d[1] = (uint8_t)m1;
        }
    }
}

/* right_tile0 = 0: every tile; else only the first tile and those from right_tile0 on (the band
 * kernel makes the columns between). */
static int rs_mean_launch(const ipk_img *src, const ipk_img *dst, int radius, ipk_border border, int right_tile0,
                          cudaStream_t s)
{
    rs_div div;
    div.n = (uint32_t)((2 * radius + 1) * (2 * radius + 1));
    div.mul = (uint32_t)(((1ull << 32) + div.n - 1) / div.n);
    const int tiles_x = (int)ipk_div_up(src->width, RS_TW);
    dim3 grid(right_tile0 ? 1 + tiles_x - right_tile0 : tiles_x, ipk_div_up(src->height, RS_TH));
    if (grid.y > IPK_MAX_GRID_Y) return IPK_ERANGE;
    const uint8_t *sp = (const uint8_t *)src->data;
    uint8_t *dp = (uint8_t *)dst->data;
    if (border == IPK_SHRINK)
        rs_mean_kernel<true><<<grid, RS_THREADS, 0, s>>>(sp, src->stride, dp, dst->stride, src->width, src->height,
                                                         radius, (int)border, div, right_tile0);
    else
        rs_mean_kernel<false><<<grid, RS_THREADS, 0, s>>>(sp, src->stride, dp, dst->stride, src->width, src->height,
                                                          radius, (int)border, div, right_tile0);
    return ipk_launch_status();
}

/* Radius 1 without shrink: the 3x3 strip path of gpu_common.cuh with unit weights (the sum,
 * at most 9 * 255, is exact in float), rounded as rs_mean_kernel does. */
struct st_mean_fin {
    rs_div div;
    __device__ __forceinline__ uint32_t operator()(float sum) const { return div.full((uint32_t)sum); }
};

static int st_mean_launch(const ipk_img *src, const ipk_img *dst, ipk_border border, cudaStream_t s)
{
    rb_weights w;
    memset(&w, 0, sizeof w);
    for (int k = 0; k < 3; k++) w.row[k] = w.col[k] = 1.0f;
    st_mean_fin fin;
    fin.div.n = 9;
    fin.div.mul = (uint32_t)(((1ull << 32) + 9 - 1) / 9);
    return st3_launch<true, true, uint8_t>(src, dst, (int)border, w, fin, s);
}

static int mean_values_per_tile(int channels) { return channels == 3 ? 48 : 64; }

static size_t mean_smem_bytes(int radius, int channels)
{
    return (size_t)(MEAN_TILE_H + 2 * radius) * (size_t)mean_values_per_tile(channels) * 4;
}

/* right_tile0 = 0: every tile; else (1 channel) the tiles of the first IPK_MBAND_EDGE columns and
 * those from right_tile0 on (the band kernel makes the columns between). */
template <typename T>
static int mean_launch(const ipk_img *src, const ipk_img *dst, int radius, ipk_border border, int right_tile0,
                       cudaStream_t s)
{
    const int V = mean_values_per_tile(src->channels), left_tiles = IPK_MBAND_EDGE / V;
    const size_t smem = mean_smem_bytes(radius, src->channels);
    if (smem > 48 * 1024 &&
        cudaFuncSetAttribute(mean_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess)
        return IPK_ECUDA;
    const long long values = (long long)src->width * src->channels;
    const int tiles = (int)ipk_div_up(values, V);
    dim3 grid(right_tile0 ? left_tiles + tiles - right_tile0 : tiles, ipk_div_up(src->height, MEAN_TILE_H));
    if (grid.y > IPK_MAX_GRID_Y) return IPK_ERANGE;
    mean_kernel<T><<<grid, V * MEAN_VSEGS, smem, s>>>(src->data, src->stride, dst->data, dst->stride, src->width,
                                                     src->height, src->channels, radius, (int)border, left_tiles,
                                                     right_tile0);
    return ipk_launch_status();
}

extern "C" size_t ipk_mean_gpu_scratch(int width, int height, int channels, ipk_dtype dtype, int radius)
{
    (void)width; (void)height; (void)channels; (void)dtype; (void)radius;
    return 0;
}

/* The kernels before the vec and band kernels: 3x3 strips in float, running sums, fused tiles. */
static int mean_tile_launch(const ipk_img *src, const ipk_img *dst, int radius, ipk_border border, cudaStream_t s)
{
    if (src->dtype == IPK_U8 && src->channels == 1 && radius == 1 && border != IPK_SHRINK)
        return st_mean_launch(src, dst, border, s);
    if (src->dtype == IPK_U8 && src->channels == 1 && radius >= 1 && radius <= RS_MAXR)
        return rs_mean_launch(src, dst, radius, border, 0, s);
    if (src->dtype == IPK_U8) return mean_launch<uint8_t>(src, dst, radius, border, 0, s);
    if (src->dtype == IPK_U16) return mean_launch<uint16_t>(src, dst, radius, border, 0, s);
    return mean_launch<float>(src, dst, radius, border, 0, s);
}

/* Radius 1 or 2 on 1-channel u8 by the vec kernel: floor((S + n/2) / n) as the plan of convolve_vec.h,
 * or with shrink the count of in-image pixels at the image's edges. */
static int vec_mean_launch(const ipk_img *src, const ipk_img *dst, int radius, ipk_border border, cudaStream_t s)
{
    ipk_vec_plan vp;
    ipk_vec_plan_mean(radius, &vp);
    if (radius == 2) return vec_launch<2, IPK_VEC_UNIT, IPK_SWAR_FIN_MEAN>(src, dst, (int)border, vp, s);
    return vec_launch<1, IPK_VEC_UNIT, IPK_SWAR_FIN_MEAN>(src, dst, (int)border, vp, s);
}

/* The band kernel between the first tile and the last ones, which the tile kernel makes; min_band:
 * the fewest rows a band walks. */
static int band_mean_launch(const ipk_img *src, const ipk_img *dst, int radius, ipk_border border, int min_band,
                            cudaStream_t s)
{
    int x_begin = 0, x_end = 0;
    ipk_mband_span(src->width, ipk_mband_halo(radius), &x_begin, &x_end);
    const int rc = radius <= RS_MAXR ? rs_mean_launch(src, dst, radius, border, x_end / RS_TW, s)
                                     : mean_launch<uint8_t>(src, dst, radius, border, x_end / mean_values_per_tile(1),
                                                            s);
    return rc != IPK_OK ? rc : mband_launch(src, dst, radius, (int)border, min_band, s);
}

extern "C" int ipk_mean_gpu_band(const ipk_img *src, const ipk_img *dst, int radius, ipk_border border, void *stream,
                                 int variant)
{
    static const int min_band[] = { 0, 64, 128 };
    if (!ipk_img_ok(src) || !ipk_img_ok(dst) || !ipk_same_shape(src, dst) || src->dtype != dst->dtype ||
        border < IPK_REPLICATE || border > IPK_SHRINK || variant < 0 || variant > 2 ||
        !mband_fits(src, dst, radius, (int)border))
        return IPK_EINVAL;
    if (ipk_img_empty(src)) return IPK_OK;
    return band_mean_launch(src, dst, radius, border, min_band[variant], (cudaStream_t)stream);
}

extern "C" int ipk_mean_gpu_path(const ipk_img *src, const ipk_img *dst, int radius, ipk_border border,
                                 void *scratch, size_t scratch_bytes, void *stream, ipk_gpu_path path)
{
    (void)scratch; (void)scratch_bytes;
    if (!ipk_img_ok(src) || !ipk_img_ok(dst) || !ipk_same_shape(src, dst) || src->dtype != dst->dtype ||
        radius < 0 || radius > 100 || border < IPK_REPLICATE || border > IPK_SHRINK ||
        (path != IPK_GPU_AUTO && path != IPK_GPU_TILE && path != IPK_GPU_VEC))
        return IPK_EINVAL;
    if (ipk_img_empty(src)) return IPK_OK;
    cudaStream_t s = (cudaStream_t)stream;
    const bool vec_fits = src->dtype == IPK_U8 && src->channels == 1 && (radius == 1 || radius == 2);
    if ((path == IPK_GPU_VEC || (path == IPK_GPU_AUTO && MEAN_BAND_AUTO)) && mband_fits(src, dst, radius, (int)border))
        return band_mean_launch(src, dst, radius, border, 0, s);
    if (path == IPK_GPU_VEC) return vec_fits ? vec_mean_launch(src, dst, radius, border, s) : IPK_EINVAL;
    const bool vec_auto = radius == 1 ? MEAN_VEC_AUTO : MEAN_VEC5_AUTO;
    if (path == IPK_GPU_AUTO && vec_auto && vec_fits) {
        const int rc = vec_mean_launch(src, dst, radius, border, s);
        if (rc != IPK_ERANGE) return rc;   /* too tall for its grid: the kernels below */
    }
    return mean_tile_launch(src, dst, radius, border, s);
}

extern "C" int ipk_mean_gpu(const ipk_img *src, const ipk_img *dst, int radius, ipk_border border,
                            void *scratch, size_t scratch_bytes, void *stream)
{
    return ipk_mean_gpu_path(src, dst, radius, border, scratch, scratch_bytes, stream, IPK_GPU_AUTO);
}
