/* Helpers shared by the CUDA kernels: launch status, grid sizing, row addressing. */
#ifndef IPK_GPU_COMMON_CUH
#define IPK_GPU_COMMON_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include "ipk.h"
#include "border.h"

/* CUDA limits gridDim.y and gridDim.z to 65535: kernels loop over rows past that. */
#define IPK_MAX_GRID_Y 65535

static inline int ipk_launch_status(void)
{
    return cudaGetLastError() == cudaSuccess ? IPK_OK : IPK_ECUDA;
}

static inline int ipk_dtype_size(ipk_dtype t) { return t == IPK_U8 ? 1 : t == IPK_U16 ? 2 : 4; }

static inline unsigned ipk_grid_rows(int rows)
{
    return (unsigned)(rows < IPK_MAX_GRID_Y ? (rows > 0 ? rows : 1) : IPK_MAX_GRID_Y);
}

static inline unsigned ipk_div_up(long long n, long long d) { return (unsigned)((n + d - 1) / d); }

/* Sane image description: sizes >= 0, 1-4 channels, a known dtype, rows that hold a row. */
static inline int ipk_img_ok(const ipk_img *im)
{
    if (!im || im->width < 0 || im->height < 0 || im->channels < 1 || im->channels > 4) return 0;
    if (im->dtype != IPK_U8 && im->dtype != IPK_U16 && im->dtype != IPK_F32) return 0;
    long long row_bytes = (long long)im->width * im->channels * ipk_dtype_size(im->dtype);
    return im->stride >= row_bytes;
}

static inline int ipk_img_empty(const ipk_img *im) { return im->width == 0 || im->height == 0; }

static inline int ipk_same_shape(const ipk_img *a, const ipk_img *b)
{
    return a->width == b->width && a->height == b->height && a->channels == b->channels;
}

/* Blocks of `threads` threads of `kernel` (no dynamic shared memory) the current device holds at
 * once; false when CUDA cannot say. */
template <typename Kernel>
static bool ipk_resident_blocks(Kernel kernel, int threads, long long *blocks)
{
    int dev = 0, sms = 0, per_sm = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0) != cudaSuccess)
        return false;
    *blocks = (long long)sms * per_sm;
    return true;
}

static inline int ipk_aligned(const void *p, ptrdiff_t stride, unsigned align)
{
    return ((uintptr_t)p % align) == 0 && ((uintptr_t)stride % align) == 0;
}

template <typename T>
__device__ __forceinline__ const T *ipk_crow(const void *base, ptrdiff_t stride, int y)
{
    return (const T *)((const char *)base + (ptrdiff_t)y * stride);
}

template <typename T>
__device__ __forceinline__ T *ipk_wrow(void *base, ptrdiff_t stride, int y)
{
    return (T *)((char *)base + (ptrdiff_t)y * stride);
}

/* Integer saturation used by every rounded store. */
template <typename T> __device__ __forceinline__ T ipk_sat(long long v);
template <> __device__ __forceinline__ uint8_t ipk_sat<uint8_t>(long long v)
{
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}
template <> __device__ __forceinline__ uint16_t ipk_sat<uint16_t>(long long v)
{
    return (uint16_t)(v < 0 ? 0 : v > 65535 ? 65535 : v);
}

/* Register-blocked window sums over a 1-channel u8 image (the fast path of convolve and mean):
 * a block computes RB_TW x RB_TH outputs; the input tile with a RB_HALO-column halo is loaded
 * once into shared memory as floats (word loads when the tile is inside the image), then each
 * thread computes RB_PX x RB_ROWS outputs from 16-byte shared loads, streaming input rows down
 * so that every output adds its rows in ascending ky and, inside a row, its taps in ascending kx
 * (the CPU's float order). u8 values are exact in float, and so is any integer sum below 2^24. */
#define RB_PX 4
#define RB_ROWS 8
#define RB_TX 32
#define RB_TY 8
#define RB_TW (RB_PX * RB_TX)
#define RB_TH (RB_ROWS * RB_TY)
#define RB_HALO 4
#define RB_SW4 ((RB_TW + 2 * RB_HALO) / 4)     /* float4 per shared row */
#define RB_MAXK (2 * RB_HALO + 1)

/* 2^23 + v: the low mantissa bits hold v; subtracting 2^23 gives v exactly, with no conversion unit. */
#define RB_TWO23 8388608.0f
__device__ __forceinline__ float rb_u8_to_float(uint32_t word, int byte)
{
    return __uint_as_float(0x4B000000u | ((word >> (8 * byte)) & 0xffu)) - RB_TWO23;
}

struct rb_weights {
    float w[RB_MAXK * RB_MAXK];   /* 2-D taps, row-major */
    float row[RB_MAXK], col[RB_MAXK];
};

template <bool CONTRACT>
__device__ __forceinline__ float rb_mac(float acc, float w, float v)
{
    return CONTRACT ? fmaf(w, v, acc) : __fadd_rn(acc, __fmul_rn(w, v));
}

template <int K>
__device__ void rb_load_tile(const uint8_t *src, ptrdiff_t ss, int width, int height, int border, int x0, int y0,
                             float4 *tile)
{
    const int rows = RB_TH + K - 1, xl = x0 - RB_HALO;
    const bool inside = xl >= 0 && xl + 4 * RB_SW4 <= width && ((uintptr_t)src % 4) == 0 && (ss % 4) == 0;
    const int tid = threadIdx.y * RB_TX + threadIdx.x;
    /* every word is loaded before any is stored, so that a thread has all its loads in flight */
    constexpr int ITER = ((RB_TH + K - 1) * RB_SW4 + RB_TX * RB_TY - 1) / (RB_TX * RB_TY);
    uint32_t words[ITER];
    #pragma unroll
    for (int it = 0; it < ITER; it++) {
        const int i = tid + it * RB_TX * RB_TY, ry = i / RB_SW4, wi = i - ry * RB_SW4;
        const int yi = ry < rows ? ipk_border_index(y0 - K / 2 + ry, height, border) : -1;
        uint32_t word = 0;
        if (yi >= 0) {
            const uint8_t *row = src + (ptrdiff_t)yi * ss;
            if (inside) {
                word = __ldg((const uint32_t *)(row + xl + 4 * wi));
            } else {
                for (int k = 0; k < 4; k++) {
                    int xi = ipk_border_index(xl + 4 * wi + k, width, border);
                    if (xi >= 0) word |= (uint32_t)row[xi] << (8 * k);
                }
            }
        }
        words[it] = word;
    }
    #pragma unroll
    for (int it = 0; it < ITER; it++) {
        const int i = tid + it * RB_TX * RB_TY;
        if (i < rows * RB_SW4)
            tile[i] = make_float4(rb_u8_to_float(words[it], 0), rb_u8_to_float(words[it], 1),
                                  rb_u8_to_float(words[it], 2), rb_u8_to_float(words[it], 3));
    }
}

/* Outputs of one thread: u8 packed 4 to a word, or f32. */
__device__ __forceinline__ void rb_store(uint8_t *d, const uint32_t *q, int n, bool word_ok)
{
    if (n == RB_PX && word_ok) {
        *(uint32_t *)d = q[0] | (q[1] << 8) | (q[2] << 16) | (q[3] << 24);
        return;
    }
    for (int j = 0; j < n; j++) d[j] = (uint8_t)q[j];
}
__device__ __forceinline__ void rb_store(float *d, const float *q, int n, bool vec_ok)
{
    if (n == RB_PX && vec_ok) {
        *(float4 *)d = make_float4(q[0], q[1], q[2], q[3]);
        return;
    }
    for (int j = 0; j < n; j++) d[j] = q[j];
}

template <typename Out> struct rb_out { typedef uint32_t value; };
template <> struct rb_out<float> { typedef float value; };

/* A thread's RB_ROWS x RB_PX sums from the shared tile. SEP: a row pass (w.row) into h, then
 * the column pass (w.col); otherwise the K x K taps (w.w). */
template <int K, bool SEP, bool CONTRACT>
__device__ __forceinline__ void rb_accumulate(const float4 *tile, const rb_weights &w, float (&acc)[RB_ROWS][RB_PX])
{
    const int R = K / 2, tx = threadIdx.x, ty = threadIdx.y;
    #pragma unroll
    for (int o = 0; o < RB_ROWS; o++)
        #pragma unroll
        for (int j = 0; j < RB_PX; j++) acc[o][j] = 0.0f;
    const float4 *t = tile + (ty * RB_ROWS) * RB_SW4 + tx;
    #pragma unroll
    for (int rr = 0; rr < RB_ROWS + K - 1; rr++) {
        const float4 a = t[rr * RB_SW4], b = t[rr * RB_SW4 + 1], c = t[rr * RB_SW4 + 2];
        const float v[12] = { a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w, c.x, c.y, c.z, c.w };
        float h[RB_PX];
        if (SEP) {
            #pragma unroll
            for (int j = 0; j < RB_PX; j++) {
                h[j] = 0.0f;
                #pragma unroll
                for (int kx = 0; kx < K; kx++) h[j] = rb_mac<CONTRACT>(h[j], w.row[kx], v[j + kx - R + RB_HALO]);
            }
        }
        #pragma unroll
        for (int o = 0; o < RB_ROWS; o++) {
            const int ky = rr - o;
            if (ky < 0 || ky >= K) continue;
            #pragma unroll
            for (int j = 0; j < RB_PX; j++) {
                if (SEP) {
                    acc[o][j] = rb_mac<CONTRACT>(acc[o][j], w.col[ky], h[j]);
                } else {
                    #pragma unroll
                    for (int kx = 0; kx < K; kx++)
                        acc[o][j] = rb_mac<CONTRACT>(acc[o][j], w.w[ky * K + kx], v[j + kx - R + RB_HALO]);
                }
            }
        }
    }
}

/* The block's input tile from src, then the thread's sums over it (rb_accumulate): the first half
 * of every kernel on the tiles. */
template <int K, bool SEP, bool CONTRACT>
__device__ __forceinline__ void rb_block_sums(const uint8_t *src, ptrdiff_t ss, int width, int height, int border,
                                              float4 *tile, const rb_weights &w, float (&acc)[RB_ROWS][RB_PX])
{
    rb_load_tile<K>(src, ss, width, height, border, blockIdx.x * RB_TW, blockIdx.y * RB_TH, tile);
    __syncthreads();
    rb_accumulate<K, SEP, CONTRACT>(tile, w, acc);
}

/* Fin: a functor, float sum -> rb_out<Out>::value; the sums as rb_accumulate's. */
template <int K, bool SEP, bool CONTRACT, typename Out, typename Fin>
__global__ void __launch_bounds__(RB_TX *RB_TY)
    rb_kernel(const uint8_t *src, ptrdiff_t ss, Out *dst, ptrdiff_t ds, int width, int height, int border,
              const __grid_constant__ rb_weights w, const __grid_constant__ Fin fin)
{
    __shared__ float4 tile[(RB_TH + K - 1) * RB_SW4];
    float acc[RB_ROWS][RB_PX];
    rb_block_sums<K, SEP, CONTRACT>(src, ss, width, height, border, tile, w, acc);

    const int x0 = blockIdx.x * RB_TW, y0 = blockIdx.y * RB_TH, tx = threadIdx.x, ty = threadIdx.y;

    const int x = x0 + tx * RB_PX, n = min(RB_PX, width - x);
    if (n <= 0) return;
    const bool vec_ok = ((uintptr_t)dst % (RB_PX * sizeof(Out))) == 0 && (ds % (RB_PX * sizeof(Out))) == 0;
    #pragma unroll
    for (int o = 0; o < RB_ROWS; o++) {
        const int y = y0 + ty * RB_ROWS + o;
        if (y >= height) break;
        typename rb_out<Out>::value q[RB_PX];
        #pragma unroll
        for (int j = 0; j < RB_PX; j++) q[j] = fin(acc[o][j]);
        rb_store(ipk_wrow<Out>(dst, ds, y) + x, q, n, vec_ok);
    }
}

template <int K, bool SEP, bool CONTRACT, typename Out, typename Fin>
static int rb_launch(const ipk_img *src, const ipk_img *dst, int border, const rb_weights &w, const Fin &fin,
                     cudaStream_t s)
{
    dim3 block(RB_TX, RB_TY), grid(ipk_div_up(src->width, RB_TW), ipk_div_up(src->height, RB_TH));
    if (grid.y > IPK_MAX_GRID_Y) return IPK_ERANGE;
    rb_kernel<K, SEP, CONTRACT, Out, Fin><<<grid, block, 0, s>>>((const uint8_t *)src->data, src->stride,
                                                                 (Out *)dst->data, dst->stride, src->width,
                                                                 src->height, border, w, fin);
    return ipk_launch_status();
}

/* Rounds v to the nearest integer (ties to even, as rintf), clamps to 0..255 (NaN to 0) and
 * returns it: v + 1.5 * 2^23 rounds v into the low mantissa bits for |v| < 2^22; larger |v|
 * lands beyond the clamp on the right side. */
__device__ __forceinline__ uint32_t rb_rint_u8(float v)
{
    const float c = 12582912.0f;
    float t = fminf(fmaxf(__fadd_rn(v, c), c), c + 255.0f);
    return __float_as_uint(t) & 0xffu;
}

/* 3x3 strip path (1-channel u8): each thread walks down a strip ST_PX columns wide and ST_ROWS
 * rows tall. It first loads every input row of the strip (a 16-byte load plus the byte on each
 * side), all in flight before any store, then adds them in, keeping the running sums of the two
 * outputs still open in registers: no shared memory, each input byte read about once. Every
 * output adds its rows in ascending ky and its taps in ascending kx, as rb_kernel does, so the
 * results are the same. */
#define ST_PX 16
#define ST_ROWS 8
#define ST_BX 128

/* Row y of the strip: bytes x .. x+ST_PX-1 in q and the bytes x-1 and x+ST_PX in the low two
 * bytes of *edges; pixels the border drops are 0. */
__device__ __forceinline__ void st_load_row(const uint8_t *__restrict__ src, ptrdiff_t ss, int width, int height,
                                            int border, int x, int xl, int xr, int y, bool vec, uint4 *q,
                                            uint32_t *edges)
{
    const int yi = ipk_border_index(y, height, border);
    *q = make_uint4(0, 0, 0, 0);
    *edges = 0;
    if (yi < 0) return;
    const uint8_t *row = src + (ptrdiff_t)yi * ss;
    *edges = (xl >= 0 ? (uint32_t)__ldg(row + xl) : 0u) | (xr >= 0 ? (uint32_t)__ldg(row + xr) << 8 : 0u);
    if (vec) {
        *q = __ldg((const uint4 *)(row + x));
        return;
    }
    uint32_t w[4] = { 0, 0, 0, 0 };
    for (int k = 0; k < ST_PX; k++) {
        const int xi = ipk_border_index(x + k, width, border);
        if (xi >= 0) w[k / 4] |= (uint32_t)row[xi] << (8 * (k % 4));
    }
    *q = make_uint4(w[0], w[1], w[2], w[3]);
}

/* The ST_PX + 2 bytes of a loaded row as floats, left edge first. */
__device__ __forceinline__ void st_unpack(uint4 q, uint32_t edges, float *v)
{
    const uint32_t words[4] = { q.x, q.y, q.z, q.w };
    v[0] = rb_u8_to_float(edges, 0);
    #pragma unroll
    for (int k = 0; k < ST_PX; k++) v[1 + k] = rb_u8_to_float(words[k / 4], k % 4);
    v[ST_PX + 1] = rb_u8_to_float(edges, 1);
}

__device__ __forceinline__ void st_store(uint8_t *d, const uint32_t *q, int n, bool vec)
{
    if (n == ST_PX && vec) {
        uint32_t w[4];
        #pragma unroll
        for (int k = 0; k < 4; k++) w[k] = q[4 * k] | (q[4 * k + 1] << 8) | (q[4 * k + 2] << 16) | (q[4 * k + 3] << 24);
        *(uint4 *)d = make_uint4(w[0], w[1], w[2], w[3]);
        return;
    }
    for (int j = 0; j < n; j++) d[j] = (uint8_t)q[j];
}
__device__ __forceinline__ void st_store(float *d, const float *q, int n, bool vec)
{
    if (n == ST_PX && vec) {
        #pragma unroll
        for (int k = 0; k < ST_PX / 4; k++) ((float4 *)d)[k] = make_float4(q[4 * k], q[4 * k + 1], q[4 * k + 2], q[4 * k + 3]);
        return;
    }
    for (int j = 0; j < n; j++) d[j] = q[j];
}

/* Adds input row ky of the window to acc: the row pass h (SEP) times col[ky], or the 3 taps. */
template <bool SEP, bool CONTRACT>
__device__ __forceinline__ void st_add_row(float *acc, const float *v, const float *h, const rb_weights &w, int ky)
{
    #pragma unroll
    for (int j = 0; j < ST_PX; j++) {
        if (SEP) {
            acc[j] = rb_mac<CONTRACT>(acc[j], w.col[ky], h[j]);
        } else {
            #pragma unroll
            for (int kx = 0; kx < 3; kx++) acc[j] = rb_mac<CONTRACT>(acc[j], w.w[ky * 3 + kx], v[j + kx]);
        }
    }
}

template <bool SEP, bool CONTRACT, typename Out, typename Fin>
__global__ void __launch_bounds__(ST_BX)
    st3_kernel(const uint8_t *__restrict__ src, ptrdiff_t ss, Out *__restrict__ dst, ptrdiff_t ds, int width,
               int height, int border, const __grid_constant__ rb_weights w, const __grid_constant__ Fin fin)
{
    const int x = (blockIdx.x * ST_BX + threadIdx.x) * ST_PX, y0 = blockIdx.y * ST_ROWS;
    if (x >= width) return;
    const bool vec_in = x + ST_PX <= width && ((uintptr_t)src % 16) == 0 && (ss % 16) == 0;
    const bool vec_out = ((uintptr_t)dst % 16) == 0 && (ds % 16) == 0;
    const int n = min(ST_PX, width - x), rows = min(ST_ROWS, height - y0);
    const int xl = ipk_border_index(x - 1, width, border), xr = ipk_border_index(x + ST_PX, width, border);
    uint4 q[ST_ROWS + 2];
    uint32_t edges[ST_ROWS + 2];
    #pragma unroll
    for (int rr = 0; rr < ST_ROWS + 2; rr++) {
        if (rr - 2 >= rows) break;
        st_load_row(src, ss, width, height, border, x, xl, xr, y0 + rr - 1, vec_in, &q[rr], &edges[rr]);
    }
    float older[ST_PX], newer[ST_PX];   /* outputs y - 2 and y - 1 while row y is added */
    #pragma unroll
    for (int j = 0; j < ST_PX; j++) older[j] = newer[j] = 0.0f;
    #pragma unroll
    for (int rr = 0; rr < ST_ROWS + 2; rr++) {
        if (rr - 2 >= rows) break;
        float v[ST_PX + 2], h[ST_PX], fresh[ST_PX];
        st_unpack(q[rr], edges[rr], v);
        if (SEP) {
            #pragma unroll
            for (int j = 0; j < ST_PX; j++) {
                h[j] = 0.0f;
                #pragma unroll
                for (int kx = 0; kx < 3; kx++) h[j] = rb_mac<CONTRACT>(h[j], w.row[kx], v[j + kx]);
            }
        }
        if (rr >= 2) {
            st_add_row<SEP, CONTRACT>(older, v, h, w, 2);
            typename rb_out<Out>::value out[ST_PX];
            #pragma unroll
            for (int j = 0; j < ST_PX; j++) out[j] = fin(older[j]);
            st_store(ipk_wrow<Out>(dst, ds, y0 + rr - 2) + x, out, n, vec_out);
        }
        if (rr >= 1) st_add_row<SEP, CONTRACT>(newer, v, h, w, 1);
        #pragma unroll
        for (int j = 0; j < ST_PX; j++) fresh[j] = 0.0f;
        st_add_row<SEP, CONTRACT>(fresh, v, h, w, 0);
        #pragma unroll
        for (int j = 0; j < ST_PX; j++) {
            older[j] = newer[j];
            newer[j] = fresh[j];
        }
    }
}

template <bool SEP, bool CONTRACT, typename Out, typename Fin>
static int st3_launch(const ipk_img *src, const ipk_img *dst, int border, const rb_weights &w, const Fin &fin,
                      cudaStream_t s)
{
    dim3 grid(ipk_div_up(src->width, (long long)ST_BX * ST_PX), ipk_div_up(src->height, ST_ROWS));
    if (grid.y > IPK_MAX_GRID_Y) return IPK_ERANGE;
    st3_kernel<SEP, CONTRACT, Out, Fin><<<grid, ST_BX, 0, s>>>((const uint8_t *)src->data, src->stride,
                                                               (Out *)dst->data, dst->stride, src->width,
                                                               src->height, border, w, fin);
    return ipk_launch_status();
}

#endif
