/* The vec median (IPK_GPU_VEC): 3x3 median of a 1-channel u8 image, built like the vec kernel of
 * convolve_vec_block.cuh (whose loads it reuses) for bytes in flight and occupancy; the lane arithmetic is
 * kernels/common/median_vec.h, which test_median_vec checks on the host.
 *
 * A thread makes 16 output bytes x ROWS rows; a warp covers 512 columns, a block VEC_WARPS warps
 * stacked down the image. A thread first issues all of its ROWS + 2 input rows as 16-byte loads,
 * before any arithmetic; then it makes its output rows one at a time, or in pairs that sort the two
 * input rows they share once (PAIR: fewer min/max, more registers). The columns each side come
 * from the neighbouring lanes' split words by shuffles, before any sorting (2 shuffles an input
 * row), and the warp's first and last lanes load the byte beyond their side, VEC_EDGE_AHEAD rows
 * before its use. Threads at the image's sides and unaligned rows gather their bytes through the
 * border (vec_load_rows). No shared memory; MINB blocks of 128 threads per SM bound the registers
 * (8: 64, 10: 48, 7: 72, 6: 80). */
#ifndef IPK_MEDIAN_VEC_BLOCK_CUH
#define IPK_MEDIAN_VEC_BLOCK_CUH
#include "convolve_vec_block.cuh"
#include "median_vec.h"

/* What IPK_GPU_VEC runs: output rows a thread, blocks per SM (7: at most 72 registers), rows paired
 * (1) or alone (0); one of the instantiations med_vec_launch (median.cu) lists, which the bench
 * times side by side. 4 rows at 7 blocks and 6 at 6 timed fastest on the H100 (0.0667 and 0.0666
 * ms against 0.0697 for 2 rows at 8, 2026-11-25). */
#define MEDVEC_ROWS 4
#define MEDVEC_MINB 7
#define MEDVEC_PAIRED 0

/* A row as median_vec.h takes it: the loaded bytes and the edge word, from the neighbouring lanes'
 * split words 7 and 0 (or the loaded edge byte on the warp's first and last lanes). */
__device__ __forceinline__ void medvec_row(uint4 q, uint32_t edge_byte, int lane, uint32_t *row)
{
    row[0] = q.x, row[1] = q.y, row[2] = q.z, row[3] = q.w;
    const uint32_t l = __shfl_up_sync(0xffffffffu, ipk_mvec_word(row, 7), 1);
    const uint32_t r = __shfl_down_sync(0xffffffffu, ipk_mvec_word(row, 0), 1);
    row[IPK_MVEC_EDGE] = ipk_mvec_edge(lane == 0 ? ipk_vec_edge(edge_byte, 1) : l,
                                       lane == 31 ? ipk_vec_edge(edge_byte, 0) : r);
}

/* Every thread of a warp runs to the end (the shuffles need the whole warp); threads right of the
 * image gather their columns through the border for their neighbours and store nothing. PAIR: output
 * rows in pairs that sort their two common rows once (ROWS even), else each row alone. */
template <int ROWS, int MINB, bool PAIR>
__global__ void __launch_bounds__(32 * VEC_WARPS, MINB)
    medvec_kernel(const uint8_t *__restrict__ src, ptrdiff_t ss, uint8_t *__restrict__ dst, ptrdiff_t ds, int width,
                  int height, int border)
{
    static_assert(!PAIR || ROWS % 2 == 0, "paired output rows");
    const int y0 = vec_first_row<ROWS>();
    if (y0 >= height) return;   /* the whole warp */
    const vec_thread t = vec_thread_at<ROWS>(src, ss, width, height, border, y0);
    const int lane = t.lane, x = t.x;
    uint4 in[ROWS + 2];
    vec_load_rows<ROWS, 1>(src, ss, width, height, border, x, y0, t.fast, t.rows_in, in);
    uint32_t edge[ROWS + 2];
    #pragma unroll
    for (int rr = 0; rr < 4 + VEC_EDGE_AHEAD && rr < ROWS + 2; rr++)
        edge[rr] = vec_edge_byte(src, ss, height, border, t.xe, y0 - 1 + rr, t.rows_in);

    const int n = min(IPK_VEC_PX, width - x);
    const bool vec_out = n == IPK_VEC_PX && ((uintptr_t)dst % 16) == 0 && (ds % 16) == 0;
    constexpr int STEP = PAIR ? 2 : 1;
    uint32_t rows[ROWS + 2][IPK_MVEC_ROW];
    #pragma unroll
    for (int rr = 0; rr < 2; rr++) medvec_row(in[rr], edge[rr], lane, rows[rr]);
    #pragma unroll
    for (int o = 0; o < ROWS; o += STEP) {
        #pragma unroll
        for (int k = 0; k < STEP; k++) {
            medvec_row(in[o + 2 + k], edge[o + 2 + k], lane, rows[o + 2 + k]);
            const int ahead = o + 4 + VEC_EDGE_AHEAD + k;
            if (ahead < ROWS + 2)
                edge[ahead] = vec_edge_byte(src, ss, height, border, t.xe, y0 - 1 + ahead, t.rows_in);
        }
        uint32_t out[2][4];
        if constexpr (PAIR) ipk_mvec_pair(rows[o], rows[o + 1], rows[o + 2], rows[o + 3], out[0], out[1]);
        else ipk_mvec_row(rows[o], rows[o + 1], rows[o + 2], out[0]);
        #pragma unroll
        for (int k = 0; k < STEP; k++)
            if (n > 0 && y0 + o + k < height) sw_store(ipk_wrow<uint8_t>(dst, ds, y0 + o + k) + x, out[k], n, vec_out);
    }
}

/* The vec median with ROWS output rows a thread, MINB blocks per SM, rows paired or not; IPK_ERANGE
 * when the grid would be too tall. */
template <int ROWS, int MINB, bool PAIR>
static int medvec_launch(const ipk_img *src, const ipk_img *dst, int border, cudaStream_t s)
{
    dim3 block(32, VEC_WARPS);
    dim3 grid(ipk_div_up(src->width, 32 * IPK_VEC_PX), ipk_div_up(src->height, (long long)ROWS * VEC_WARPS));
    if (grid.y > IPK_MAX_GRID_Y) return IPK_ERANGE;
    medvec_kernel<ROWS, MINB, PAIR><<<grid, block, 0, s>>>((const uint8_t *)src->data, src->stride,
                                                           (uint8_t *)dst->data, dst->stride, src->width,
                                                           src->height, border);
    return ipk_launch_status();
}
#endif
