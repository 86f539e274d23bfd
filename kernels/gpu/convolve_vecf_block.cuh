/* The float vec kernel (IPK_GPU_VEC for float-weight 3x3): convolve of a 1-channel u8 image with
 * 3x3 float weights, u8 or f32 output, bit-identical to the CPU float path (the arithmetic is
 * kernels/common/convolve_vecf.h, which test_conv_vecf checks on the host), sized for bytes in flight
 * and occupancy as convolve_vec_block.cuh is.
 *
 * A thread makes 8 outputs x ROWS rows (vecf_rows: 8, or 6); a warp covers 256 columns, a block VECF_WARPS
 * warps stacked down the image. A thread first issues all of its ROWS + 2 input rows as 8-byte
 * loads, before any arithmetic; then it streams them down, converting each row once and adding it
 * into the three outputs still open, in float registers. The columns on each side come from the
 * neighbouring lanes' converted values by shuffles, and a warp's first and last lanes load the byte
 * beyond their side, VECF_EDGE_AHEAD rows before its use. Threads at the image's sides and unaligned rows
 * gather their bytes through the border instead. No shared memory; ptxas is held to 64 registers
 * so that 8 blocks (32 warps) stay resident on each SM. */
#ifndef IPK_VECF_BLOCK_CUH
#define IPK_VECF_BLOCK_CUH
#include "gpu_common.cuh"
#include "gpu_bytes.cuh"
#include "convolve_vecf.h"

#define VECF_WARPS 4
#define VECF_MIN_BLOCKS 8   /* 8 blocks of 128 threads per SM: at most 64 registers a thread */
#define VECF_EDGE_AHEAD 2
/* 1: u8 outputs of narrow plans (convolve_vecf.h: |v| bounded, as any kernel with weights of moderate
 * size has) take the narrow finish, 9 instructions for 4 pixels instead of 15; 0: the clamp of each
 * value in float. Both bit-identical to the CPU; bench_gpu's "(vec, narrow finish)" rows time it.
 * 1: float 3x3 0.0801 against 0.0859 ms on the H100. */
#define VECF_NARROW_AUTO 1
/* How plain calls make floats of the bytes (convolve_vecf.h's IPK_VECF_CVT_*: MAGIC 2 instructions a
 * byte, I2F 1.5 of which 0.5 on the conversion pipe, HALF 1.5 with no conversion pipe); HALF falls
 * back to MAGIC for plans that are not scaled. bench_gpu's "(vec, narrow, I2F)" and "(vec, narrow,
 * HALF)" rows time them with the narrow finish, against "(vec, narrow finish)". I2F: 0.0763 ms
 * against HALF's 0.0787 and MAGIC's 0.0801 on the H100. */
#define VECF_CVT_AUTO IPK_VECF_CVT_I2F

/* Output rows a thread makes: the most (of 8, 6) with which ptxas keeps the instantiation at 64
 * registers without spilling (sm_90, CUDA 13.0; unbounded, 8 rows take 70-72 and 6 rows 65-72).
 * 8 rows spilled 16 bytes in the direct kernel with a true division and f32 output only. */
template <int MODE, int FIN, typename Out> struct vecf_rows {
    static constexpr int value = MODE == IPK_VECF_DIRECT && FIN == IPK_VECF_FIN_DIV && sizeof(Out) == 4 ? 6 : 8;
};

/* Bytes x .. x+7 of a row through the border (0 where it drops them): out of line, so that it
 * does not weigh on the fast path's registers. */
static __device__ __noinline__ uint2 vecf_gather(const uint8_t *row, int x, int width, int border)
{
    return make_uint2(sw_gather4(row, x, width, border), sw_gather4(row, x + 4, width, border));
}

/* The bytes of a thread's word(s) through the border, out of line (vecf_gather, vecf_gather_word). */
__device__ __forceinline__ void vecf_gather_into(uint2 &w, const uint8_t *row, int x, int width, int border);
__device__ __forceinline__ void vecf_gather_into(uint32_t &w, const uint8_t *row, int x, int width, int border);

/* Every input row of the thread: in[rr] is row y0 - R + rr through the border (R the radius), as
 * 8-byte (uint2) or 4-byte (uint32_t) words. Inside the image, one straight run of loads; fast says
 * whether the thread's columns allow them, rows_in whether its rows are all inside. */
template <int ROWS, int R, typename W>
__device__ __forceinline__ void vecf_load_rows(const uint8_t *__restrict__ src, ptrdiff_t ss, int width, int height,
                                               int border, int x, int y0, bool fast, bool rows_in, W *in)
{
    if (fast && rows_in) {
        const uint8_t *row = src + (ptrdiff_t)(y0 - R) * ss + x;
        #pragma unroll
        for (int rr = 0; rr < ROWS + 2 * R; rr++, row += ss) in[rr] = __ldg((const W *)row);
        return;
    }
    #pragma unroll
    for (int rr = 0; rr < ROWS + 2 * R; rr++) {
        const int yi = ipk_border_index(y0 - R + rr, height, border);
        in[rr] = W{};
        if (yi < 0) continue;
        const uint8_t *row = src + (ptrdiff_t)yi * ss;
        if (fast) in[rr] = __ldg((const W *)(row + x));
        else vecf_gather_into(in[rr], row, x, width, border);
    }
}

/* The byte at column xe of row y (0 when xe < 0 or the border drops the row); at, its address when
 * rows_in: the caller steps it down the rows, which costs less than the row's address each time. */
__device__ __forceinline__ uint32_t vecf_edge_byte(const uint8_t *__restrict__ src, ptrdiff_t ss, int height,
                                                   int border, int xe, int y, bool rows_in, const uint8_t *at)
{
    if (xe < 0) return 0u;
    if (rows_in) return __ldg(at);
    const int yi = ipk_border_index(y, height, border);
    return yi >= 0 ? (uint32_t)__ldg(src + (ptrdiff_t)yi * ss + xe) : 0u;
}

/* Bytes x .. x+3 of a row through the border: out of line, off the fast path's registers. */
static __device__ __noinline__ uint32_t vecf_gather_word(const uint8_t *row, int x, int width, int border)
{
    return sw_gather4(row, x, width, border);
}

__device__ __forceinline__ void vecf_gather_into(uint2 &w, const uint8_t *row, int x, int width, int border)
{
    w = vecf_gather(row, x, width, border);
}
__device__ __forceinline__ void vecf_gather_into(uint32_t &w, const uint8_t *row, int x, int width, int border)
{
    w = vecf_gather_word(row, x, width, border);
}

/* The side word of row y from column xw on the warp's first and last lanes (the 4 bytes beyond
 * their side; convolve_vecsep_block.cuh uses it too); 0 on the other lanes and where the border
 * drops the row. */
__device__ __forceinline__ uint32_t vecf_edge_word(const uint8_t *__restrict__ src, ptrdiff_t ss, int width,
                                                     int height, int border, int xw, int y, bool edge_lane,
                                                     bool edge_fast, bool rows_in)
{
    if (!edge_lane) return 0;
    const int yi = rows_in ? y : ipk_border_index(y, height, border);
    if (yi < 0) return 0;
    const uint8_t *row = src + (ptrdiff_t)yi * ss;
    return edge_fast ? __ldg((const uint32_t *)(row + xw)) : vecf_gather_word(row, xw, width, border);
}

/* PX (4 or 8) outputs of a row: u8 from the low bytes of q as one 4- or 8-byte store when whole
 * and aligned, f32 as 16-byte stores when whole and aligned (convolve_vecsep_block.cuh uses them
 * too). */
template <int PX>
__device__ __forceinline__ void vecf_put_words(uint8_t *d, uint32_t w0, uint32_t w1, int n, bool vec)
{
    if (n == PX && vec) {
        if (PX == 8) *(uint2 *)d = make_uint2(w0, w1);
        else *(uint32_t *)d = w0;
        return;
    }
    for (int b = 0; b < n; b++) d[b] = (uint8_t)((b < 4 ? w0 : w1) >> (8 * (b & 3)));
}
template <int PX>
__device__ __forceinline__ void vecf_put(uint8_t *d, const uint32_t *q, int n, bool vec)
{
    vecf_put_words<PX>(d, ipk_vecf_pack4(q), PX == 8 ? ipk_vecf_pack4(q + PX - 4) : 0u, n, vec);
}
template <int PX>
__device__ __forceinline__ void vecf_put(float *d, const float *o, int n, bool vec)
{
    if (n == PX && vec) {
        #pragma unroll
        for (int i = 0; i < PX / 4; i++) ((float4 *)d)[i] = make_float4(o[4 * i], o[4 * i + 1], o[4 * i + 2], o[4 * i + 3]);
        return;
    }
    for (int j = 0; j < n; j++) d[j] = o[j];
}

/* The outputs of one row of PX pixels from their sums (see vecf_put); NARROW: p is a narrow plan,
 * whose u8 finish takes ipk_vecf_narrow_pack4's shorter way (f32 outputs ignore it). */
template <int FIN, int PX, bool NARROW = false>
__device__ __forceinline__ void vecf_store(uint8_t *d, const float *acc, const ipk_vecf_plan &p, int n, bool vec)
{
    float v[PX];
    #pragma unroll
    for (int j = 0; j < PX; j++) v[j] = ipk_vecf_value(&p, FIN, 0, acc[j]);
    if (NARROW) {
        vecf_put_words<PX>(d, ipk_vecf_narrow_pack4(v), PX == 8 ? ipk_vecf_narrow_pack4(v + PX - 4) : 0u, n, vec);
    } else {
        uint32_t q[PX];
        #pragma unroll
        for (int j = 0; j < PX; j++) q[j] = ipk_vecf_rint_u8(v[j]);
        vecf_put<PX>(d, q, n, vec);
    }
}
template <int FIN, int PX, bool NARROW = false>
__device__ __forceinline__ void vecf_store(float *d, const float *acc, const ipk_vecf_plan &p, int n, bool vec)
{
    float o[PX];
    #pragma unroll
    for (int j = 0; j < PX; j++) o[j] = ipk_vecf_value(&p, FIN, 1, acc[j]);
    vecf_put<PX>(d, o, n, vec);
}

/* Every thread of a warp runs to the end (the shuffles need the whole warp); threads right of
 * the image gather their columns through the border for their neighbours and store nothing.
 * NARROW: p.narrow holds, and u8 outputs take the narrow finish (see vecf_store). CVT: how bytes
 * become floats (IPK_VECF_CVT_*; HALF only where p.scaled holds). */
template <int MODE, int FIN, typename Out, int ROWS, bool NARROW = false, int CVT = IPK_VECF_CVT_MAGIC>
__global__ void __launch_bounds__(32 * VECF_WARPS, VECF_MIN_BLOCKS)
    vecf3_kernel(const uint8_t *__restrict__ src, ptrdiff_t ss, Out *__restrict__ dst, ptrdiff_t ds, int width,
                 int height, int border, const __grid_constant__ ipk_vecf_plan p)
{
    const int lane = threadIdx.x;
    const int x = (blockIdx.x * 32 + lane) * IPK_VECF_PX;
    const int y0 = (blockIdx.y * VECF_WARPS + threadIdx.y) * ROWS;
    if (y0 >= height) return;   /* the whole warp */
    const bool fast = x + IPK_VECF_PX <= width && ((uintptr_t)src % 8) == 0 && (ss % 8) == 0;
    const int xe = lane == 0 ? ipk_border_index(x - 1, width, border)
                   : lane == 31 ? ipk_border_index(x + IPK_VECF_PX, width, border) : -1;
    const bool rows_in = y0 >= 1 && y0 + ROWS < height;
    uint2 in[ROWS + 2];
    vecf_load_rows<ROWS, 1>(src, ss, width, height, border, x, y0, fast, rows_in, in);
    uint32_t edge[ROWS + 2];
    const uint8_t *edge_at = src + (ptrdiff_t)(y0 - 1) * ss + xe;
    #pragma unroll
    for (int rr = 0; rr < VECF_EDGE_AHEAD; rr++, edge_at += ss)
        edge[rr] = vecf_edge_byte(src, ss, height, border, xe, y0 - 1 + rr, rows_in, edge_at);

    const int n = min(IPK_VECF_PX, width - x);
    const size_t align = IPK_VECF_PX * sizeof(Out) < 16 ? IPK_VECF_PX * sizeof(Out) : 16;
    const bool vec_out = ((uintptr_t)dst % align) == 0 && (ds % align) == 0;
    float older[IPK_VECF_PX], newer[IPK_VECF_PX], fresh[IPK_VECF_PX];
    Out *drow = ipk_wrow<Out>(dst, ds, y0) + x;   /* stepped down a row a store, as edge_at */
    #pragma unroll
    for (int rr = 0; rr < ROWS + 2; rr++) {
        if (rr + VECF_EDGE_AHEAD < ROWS + 2) {
            edge[rr + VECF_EDGE_AHEAD] =
                vecf_edge_byte(src, ss, height, border, xe, y0 - 1 + rr + VECF_EDGE_AHEAD, rows_in, edge_at);
            edge_at += ss;
        }
        float v[IPK_VECF_PX + 2];
        ipk_vecf_values(in[rr].x, in[rr].y, CVT, v);
        /* the only side value of lanes 0 and 31 (a byte: already the halves HALF wants) */
        const float e = CVT == IPK_VECF_CVT_HALF ? ipk_vecf_half(edge[rr], 0) : ipk_vecf_byte_cvt(edge[rr], 0, CVT);
        const float l = __shfl_up_sync(0xffffffffu, v[IPK_VECF_PX], 1), r = __shfl_down_sync(0xffffffffu, v[1], 1);
        v[0] = lane == 0 ? e : l;
        v[IPK_VECF_PX + 1] = lane == 31 ? e : r;
        ipk_vecf_step(&p, MODE, CVT == IPK_VECF_CVT_HALF, v, rr, ROWS, older, newer, fresh);
        if (rr >= 2) {
            if (n > 0 && y0 + rr - 2 < height) vecf_store<FIN, IPK_VECF_PX, NARROW>(drow, older, p, n, vec_out);
            drow = ipk_wrow<Out>(drow, ds, 1);
        }
        #pragma unroll
        for (int j = 0; j < IPK_VECF_PX; j++) {
            older[j] = newer[j];
            newer[j] = fresh[j];
        }
    }
}

/* The kernel with ROWS rows a thread (vecf3_launch_one: vecf_rows; ipk_convolve_gpu_vec_shape: others);
 * NARROW only with a narrow plan, CVT HALF only with a scaled one. */
template <int MODE, int FIN, typename Out, int ROWS, bool NARROW = false, int CVT = IPK_VECF_CVT_MAGIC>
static int vecf3_launch_rows(const ipk_img *src, const ipk_img *dst, int border, const ipk_vecf_plan &p,
                             cudaStream_t s)
{
    dim3 block(32, VECF_WARPS);
    dim3 grid(ipk_div_up(src->width, 32 * IPK_VECF_PX), ipk_div_up(src->height, (long long)ROWS * VECF_WARPS));
    if (grid.y > IPK_MAX_GRID_Y) return IPK_ERANGE;
    if ((NARROW && !p.narrow) || (CVT == IPK_VECF_CVT_HALF && !p.scaled)) return IPK_EINVAL;
    vecf3_kernel<MODE, FIN, Out, ROWS, NARROW, CVT><<<grid, block, 0, s>>>(
        (const uint8_t *)src->data, src->stride, (Out *)dst->data, dst->stride, src->width, src->height, border, p);
    return ipk_launch_status();
}

template <int MODE, int FIN, typename Out>
static int vecf3_launch_one(const ipk_img *src, const ipk_img *dst, int border, const ipk_vecf_plan &p, cudaStream_t s)
{
    constexpr int rows = vecf_rows<MODE, FIN, Out>::value;
    /* f32 outputs keep MAGIC: untimed, and the separable true-division one spilled 8 bytes with
     * HALF and 4 with I2F */
    constexpr int cvt = sizeof(Out) != 1 ? IPK_VECF_CVT_MAGIC : VECF_CVT_AUTO;
    const bool cvt_ok = cvt != IPK_VECF_CVT_HALF || p.scaled;
    if (VECF_NARROW_AUTO && p.narrow && cvt_ok)
        return vecf3_launch_rows<MODE, FIN, Out, rows, sizeof(Out) == 1, cvt>(src, dst, border, p, s);
    if (cvt_ok) return vecf3_launch_rows<MODE, FIN, Out, rows, false, cvt>(src, dst, border, p, s);
    return vecf3_launch_rows<MODE, FIN, Out, rows>(src, dst, border, p, s);
}

template <int MODE, typename Out>
static int vecf3_launch_fin(const ipk_img *src, const ipk_img *dst, int border, const ipk_vecf_plan &p, cudaStream_t s)
{
    if (p.fin == IPK_VECF_FIN_ONE) return vecf3_launch_one<MODE, IPK_VECF_FIN_ONE, Out>(src, dst, border, p, s);
    if (p.fin == IPK_VECF_FIN_MUL) return vecf3_launch_one<MODE, IPK_VECF_FIN_MUL, Out>(src, dst, border, p, s);
    return vecf3_launch_one<MODE, IPK_VECF_FIN_DIV, Out>(src, dst, border, p, s);
}

/* 1-channel u8 in, u8 or f32 out (the caller checks), the plan of ipk_vecf_plan_conv. */
template <typename Out>
static int vecf3_launch(const ipk_img *src, const ipk_img *dst, int border, const ipk_vecf_plan &p, cudaStream_t s)
{
    return p.mode == IPK_VECF_SEP ? vecf3_launch_fin<IPK_VECF_SEP, Out>(src, dst, border, p, s)
                                  : vecf3_launch_fin<IPK_VECF_DIRECT, Out>(src, dst, border, p, s);
}
#endif
