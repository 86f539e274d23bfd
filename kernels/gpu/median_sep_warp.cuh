/* The u8 5x5 and 7x7 median that plain calls run (median.cu's med_launch_sep): the separable
 * networks of kernels/common/median_sep.cuh, 1-channel u8, a thread making 2W pixels by ROWS rows
 * (1 or 2) with the register budget of __launch_bounds__' minimum of resident blocks of 128
 * threads (4 -> at most 128 registers, 7 -> 72) as template parameters. Unlike med_sep_kernel in
 * median.cu, a row is held as loaded (W/2 words) and put in the 16-bit-lane layout only when its
 * output rows are computed, which halves the registers the loaded rows take; and the lanes of a
 * warp share the column sorts (each lane sorts its own columns and takes the edge columns from
 * its neighbours by shuffles; 30 of 32 lanes make outputs). Rows not aligned for the vector
 * loads, and the image's sides, go through an out-of-line gather through the border. The other
 * tile variants once timed beside it are gone; bench/RESULTS.md keeps their numbers. */
#ifndef IPK_MEDIAN_SEP_WARP_CUH
#define IPK_MEDIAN_SEP_WARP_CUH
#include "gpu_common.cuh"
#include "median_sep.cuh"
#include "median_huang.cuh"

#define MED_SEPV_WARPS 4

/* The thread's band of output rows: grid rows past CUDA's 65535 continue in gridDim.z. */
__device__ __forceinline__ int med_sepv_band()
{
    return (blockIdx.z * gridDim.y + blockIdx.y) * blockDim.y + threadIdx.y;
}

/* The grid for `groups` blocks across and `bands` bands (a thread's rows) down, 4 bands a block. */
static inline dim3 med_sepv_grid(unsigned groups, long long bands)
{
    const long long rows = (bands + MED_SEPV_WARPS - 1) / MED_SEPV_WARPS;
    const unsigned gy = (unsigned)(rows < IPK_MAX_GRID_Y ? rows : IPK_MAX_GRID_Y);
    return dim3(groups, gy, ipk_div_up(rows, gy));
}

/* A gathered row: v[0..W/2-1] pixels gx..gx+2W-1, v[W/2] gx-4..gx-1, v[W/2+1] gx+2W..gx+2W+3. */
template <int W> struct med_raw {
    unsigned v[med_sp_raw<W>::N];
};

/* The row's pixels through the border (0 where the zero border drops them): out of line, so
 * that it does not weigh on the fast path's registers. */
template <int W>
static __device__ __noinline__ med_raw<W> med_sepv_gather(const unsigned char *row, int gx, int width, int border)
{
    med_raw<W> r;
#pragma unroll
    for (int i = 0; i < med_sp_raw<W>::N; i++) r.v[i] = 0;
#pragma unroll
    for (int i = 0; i < 2 * W + 8; i++) {
        const int xx = ipk_border_index(gx - 4 + i, width, border);
        const unsigned b = xx >= 0 ? __ldg(row + xx) : 0u;
        r.v[med_sp_raw<W>::word(i)] |= b << (8 * (i & 3));
    }
    return r;
}

/* Output row y (if in the image) from the split layout's W words: one 2W-byte store where it can. */
template <int W>
__device__ __forceinline__ void med_sepv_store(const med_args &a, int gx, int y, const unsigned *words)
{
    if (y >= a.height) return;
    unsigned q[W / 2];
    med_sp_unpack<W>(words, q);
    unsigned char *row = (unsigned char *)(a.dst + (ptrdiff_t)y * a.dst_stride) + gx;
    if (gx + 2 * W <= a.width && ((uintptr_t)row & (2 * W - 1)) == 0) {
        if constexpr (W == 8) *(uint4 *)row = make_uint4(q[0], q[1], q[2], q[3]);
        else *(uint2 *)row = make_uint2(q[0], q[1]);
        return;
    }
    for (int j = 0; j < 2 * W && gx + j < a.width; j++) row[j] = (unsigned char)(q[j >> 2] >> (8 * (j & 3)));
}

/* Lanes 1..30 of a warp make outputs; lanes 0 and 31 only sort columns for their neighbours. */
#define MED_SEPX_OUT_LANES 30

/* Pixels gx..gx+2W-1 of logical row ly into q[0..W/2-1]: one 2W-byte load where the row allows
 * it, else through the border (gx may lie left of the image or past it). */
template <int W>
__device__ __forceinline__ void med_sepx_load(const med_args &a, int gx, int ly, unsigned *q)
{
    const int yy = ipk_border_index(ly, a.height, a.border);
    const unsigned char *row = (const unsigned char *)(a.src + (ptrdiff_t)(yy > 0 ? yy : 0) * a.src_stride);
    if (yy >= 0 && gx >= 0 && gx + 2 * W <= a.width && ((uintptr_t)(row + gx) & (2 * W - 1)) == 0) {
        if constexpr (W == 8) {
            const uint4 c = __ldg((const uint4 *)(row + gx));
            q[0] = c.x, q[1] = c.y, q[2] = c.z, q[3] = c.w;
        } else {
            const uint2 c = __ldg((const uint2 *)(row + gx));
            q[0] = c.x, q[1] = c.y;
        }
        return;
    }
    const med_raw<W> g = yy >= 0 ? med_sepv_gather<W>(row, gx, a.width, a.border) : med_raw<W>{};
#pragma unroll
    for (int i = 0; i < W / 2; i++) q[i] = g.v[i];
}

/* The edge columns of a lane's sorted words from its neighbours' (med_sp_edges), by shuffles. */
template <int R, int W>
__device__ __forceinline__ void med_sepx_edges(unsigned (*sorted)[med_sp<R, W>::NW])
{
    unsigned from_left[med_sp<R, W>::S][R], from_right[med_sp<R, W>::S][R];
#pragma unroll
    for (int k = 0; k < med_sp<R, W>::S; k++)
#pragma unroll
        for (int i = 0; i < R; i++) {
            from_left[k][i] = __shfl_up_sync(0xffffffffu, med_sp_to_right<R, W>(sorted, k, i), 1);
            from_right[k][i] = __shfl_down_sync(0xffffffffu, med_sp_to_left<R, W>(sorted, k, i), 1);
        }
    med_sp_edges<R, W>(sorted, from_left, from_right);
}

/* ROWS (1 or 2) output rows of 2W pixels a thread, 30 threads a warp: each thread sorts its
 * own W columns of the window's rows and takes its 2R edge columns from its neighbours by
 * shuffles, so that it loads no edge pixels and sorts no column twice; two rows share the
 * sorts of the 2R rows both windows hold (med_sp_pair_own). */
template <int R, int W, int ROWS, int MINB>
__global__ void __launch_bounds__(32 * MED_SEPV_WARPS, MINB) med_sepx_kernel(med_args a)
{
    typedef med_sp<R, W> P;
    const int lane = threadIdx.x;
    const int gx = 2 * W * ((int)blockIdx.x * MED_SEPX_OUT_LANES + lane - 1);
    const int y0 = med_sepv_band() * ROWS;
    if (y0 >= a.height) return;   /* the whole warp: the shuffles need every lane */
    const bool stores = lane >= 1 && lane <= MED_SEPX_OUT_LANES && gx < a.width;
    unsigned raw[ROWS + 2 * R][W / 2], sorted[P::S][P::NW], out[W];
#pragma unroll
    for (int j = 0; j < ROWS + 2 * R; j++) med_sepx_load<W>(a, gx, y0 - R + j, raw[j]);
    if constexpr (ROWS == 1) {
        med_sp_sort_own<R, W>(raw, sorted);
        med_sepx_edges<R, W>(sorted);
        med_sp_row_from_sorted<R, W>(sorted, out);
        if (stores) med_sepv_store<W>(a, gx, y0, out);
    } else {
        static_assert(ROWS == 2, "one row, or a pair");
        unsigned shared[W][2 * R], first[W], last[W];
        med_sp_pair_own<R, W>(raw, shared, first, last);
#pragma unroll
        for (int h = 0; h < 2; h++) {
            med_sp_insert_own<R, W>(shared, h ? last : first, sorted);
            med_sepx_edges<R, W>(sorted);
            med_sp_row_from_sorted<R, W>(sorted, out);
            if (stores) med_sepv_store<W>(a, gx, y0 + h, out);
        }
    }
}

template <int R, int W, int ROWS, int MINB>
static int med_sepx_launch(const med_args *a, cudaStream_t s)
{
    dim3 block(32, MED_SEPV_WARPS);
    const dim3 grid = med_sepv_grid(ipk_div_up(a->width, 2 * W * MED_SEPX_OUT_LANES), ipk_div_up(a->height, ROWS));
    med_sepx_kernel<R, W, ROWS, MINB><<<grid, block, 0, s>>>(*a);
    return ipk_launch_status();
}

/* The u8 5x5 or 7x7 median (a->radius 2 or 3) on arguments already checked: median_sep_warp.cu's
 * shuffle kernel; IPK_EINVAL for another radius. */
int med_sepx_run(const med_args *a, cudaStream_t s);
#endif
