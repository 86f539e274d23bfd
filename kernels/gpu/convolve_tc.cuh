/* Certified float convolve on the tensor cores (convolve_tc.h): a direct 5x5 or 7x7 float kernel, 1-channel
 * u8 in and out. For each pair of kernel rows ky, ky + 1 and limb l, one mma.m16n8k32 (u8 pixels x
 * s8 weights, exact int32 sums) adds 16 output rows x 8 output columns: A is 16 input bytes of 16
 * rows for each of the two kernel rows (from 4 left of an 8-column group, so that its words are
 * aligned), B the limb's two kernel rows laid out as bands (B[k][n] = q[l][ky][k - n - 4 + R], input
 * column k, output column n), which a warp keeps in K x L registers (each lane picks its bytes out
 * of the rows) while it walks down its two column groups of the block's 64 x 128 outputs, TC_TT x
 * 16 rows at a time. The sums become 16.16 fixed point in 64-bit multiply-adds, two pixels' bytes
 * are clamped in one 16x2 instruction and the fractions kept in a running 16x2 minimum, so that a
 * group of tiles with every pixel certain costs one test. The input tile and the outputs are in shared memory. A
 * lane with an open pixel queues its group's fractions in its warp's queue; those pixels are
 * recomputed from the tile in the CPU's order before the block stores its outputs, 16 bytes at a
 * time. */
#ifndef IPK_CONV_TC_CUH
#define IPK_CONV_TC_CUH
#include "convolve_tc.h"
#include "convolve_cert.cuh"

#define TC_WARPS 4
#define TC_GROUPS 2     /* 8-column groups a warp: blocks of 4 warps, 8 an SM, whose phases overlap */
#define TC_COLS (8 * TC_GROUPS * TC_WARPS)
#define TC_ROWS 128
#define TC_TT 2         /* 16-row tiles a warp takes at a time: a lane's 8 pixels, a mask byte */
#define TC_PITCH 80     /* input columns x0 - 8 .. x0 + 71; 20 words: A's 8 rows x 4 words fall in 32 banks */
#define TC_QUEUE 32      /* entries a warp: all of them, one a thread of the block */
#define TC_FRAGS (IPK_CONV_TC_MAXK * IPK_CONV_TC_LIMBS)

struct tc_params {
    uint32_t q[TC_FRAGS][2];   /* kernel row ky of limb l at [ky * L + l]: its digits, bytes 0 .. k - 1, 0 past them */
    float w[IPK_CONV_TC_MAXK * IPK_CONV_TC_MAXK];   /* the float weights, for the CPU's order */
    ipk_conv_tc_plan plan;                          /* its fixed point and certificate (mhi, mlo, c, shift, open) */
    rbc_finish fin;    /* the CPU's finish */
};

/* The plan's digits as rows of 8 bytes, for tc_b_selector's byte_perm. */
static void tc_rows(const ipk_conv_tc_plan &plan, tc_params &p)
{
    const int k = plan.k;
    for (int ky = 0; ky < k; ky++)
        for (int l = 0; l < plan.limbs; l++)
            for (int kx = 0; kx < k; kx++)
                p.q[ky * plan.limbs + l][kx / 4] |= (uint32_t)(uint8_t)plan.q[l][ky * k + kx] << (8 * (kx % 4));
}

/* The byte_perm selector that makes a kernel row's 8 bytes (tc_rows) the lane's B word: byte i holds
 * B[k][n], k = 4 tig + i, n = g (g = lane / 4, tig = lane % 4; the PTX layout of 8-bit B, each half
 * of m16n8k32's), the weight of input column k for output column n, digit k - n - 4 + R of the
 * row, byte 7 (0: K is at most 7) past the row. The same for every row, and every lane reads the
 * same rows: no lane-dependent parameter load. */
template <int K>
__device__ __forceinline__ uint32_t tc_b_selector(int lane)
{
    static_assert(K <= 7, "byte 7 of a row is 0");
    uint32_t sel = 0;
    #pragma unroll
    for (int i = 0; i < 4; i++) {
        const int kx = 4 * (lane & 3) + i - (lane >> 2) - 4 + K / 2;
        sel |= (uint32_t)(kx >= 0 && kx < K ? kx : 7) << (4 * i);
    }
    return sel;
}

/* c += A B with A 16 x 32 u8 (a0, a1: rows g and g + 8 of the first 16 columns, a2, a3 of the
 * last), B 32 x 8 s8 (b0, b1: the halves), exact in int32. */
__device__ __forceinline__ void tc_mma(int (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                       uint32_t b1)
{
    asm("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/* The same with A 16 x 16 and B 16 x 8: the last kernel row of an odd count. */
__device__ __forceinline__ void tc_mma(int (&c)[4], uint32_t a0, uint32_t a1, uint32_t b)
{
    asm("mma.sync.aligned.m16n8k16.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
        : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
        : "r"(a0), "r"(a1), "r"(b));
}

/* Bytes x .. x + 7 of a row through the border, out of line: the tile load's slow path, kept out of
 * its unrolled fast path. */
static __device__ __noinline__ uint2 tc_border_chunk(const uint8_t *row, int x, int width, int border)
{
    uint32_t w[2] = { 0, 0 };
    for (int b = 0; b < 8; b++) {
        const int xi = ipk_border_index(x + b, width, border);
        if (xi >= 0) w[b / 4] |= (uint32_t)row[xi] << (8 * (b % 4));
    }
    return make_uint2(w[0], w[1]);
}

static __device__ __noinline__ int tc_border_row(int y, int height, int border)
{
    return ipk_border_index(y, height, border);
}

/* The tile's rows, and its loads: thread i takes chunk i % 10 (8 bytes) of rows i / 10 + STEP n. */
template <int K>
struct tc_tile {
    static constexpr int ROWS = TC_ROWS + K - 1, CHUNKS = TC_PITCH / 8, STEP = TC_WARPS * 32 / CHUNKS;
    static constexpr int ITER = (ROWS + STEP - 1) / STEP;
    static_assert(STEP * (ITER - 1) <= ROWS, "every row of all but the last load in the tile");
};

/* Input rows y0 - R .. y0 + TC_ROWS + R - 1, columns x0 - 8 .. x0 + 71, as bytes (border pixels mapped,
 * those the border drops 0), into the thread's chunks: in a block away from the borders one pointer
 * stepping down the image. The loads are only issued: tc_stash_tile waits for them. */
template <int K>
__device__ void tc_fetch_tile(const uint8_t *src, ptrdiff_t ss, int width, int height, int border, int x0, int y0,
                              uint2 (&chunks)[tc_tile<K>::ITER])
{
    using T = tc_tile<K>;
    constexpr int R = K / 2;
    const int xl = x0 - 8, ci = threadIdx.x % T::CHUNKS, r0 = threadIdx.x / T::CHUNKS;
    if (r0 >= T::STEP) return;
    const bool cols_inside = xl >= 0 && xl + TC_PITCH <= width && ((uintptr_t)src % 8) == 0 && (ss % 8) == 0;
    const bool rows_inside = y0 - R >= 0 && y0 + TC_ROWS + R <= height;
    if (cols_inside && rows_inside) {
        const uint8_t *at = src + (ptrdiff_t)(y0 - R + r0) * ss + xl + 8 * ci;
        const ptrdiff_t step = (ptrdiff_t)T::STEP * ss;
        #pragma unroll
        for (int it = 0; it < T::ITER - 1; it++, at += step) chunks[it] = __ldg((const uint2 *)at);
        chunks[T::ITER - 1] = r0 + (T::ITER - 1) * T::STEP < T::ROWS ? __ldg((const uint2 *)at) : make_uint2(0, 0);
        return;
    }
    #pragma unroll
    for (int it = 0; it < T::ITER; it++) {
        const int r = r0 + it * T::STEP, y = y0 - R + r;
        const int yi = r >= T::ROWS ? -1 : (unsigned)y < (unsigned)height ? y : tc_border_row(y, height, border);
        uint2 chunk = make_uint2(0, 0);
        if (yi >= 0) {
            const uint8_t *row = src + (ptrdiff_t)yi * ss;
            chunk = cols_inside ? __ldg((const uint2 *)(row + xl) + ci) : tc_border_chunk(row, xl + 8 * ci, width, border);
        }
        chunks[it] = chunk;
    }
}

/* The fetched chunks into the tile. */
template <int K>
__device__ void tc_stash_tile(const uint2 (&chunks)[tc_tile<K>::ITER], uint8_t *tile)
{
    using T = tc_tile<K>;
    const int r0 = threadIdx.x / T::CHUNKS;
    if (r0 >= T::STEP) return;
    uint2 *to = (uint2 *)tile + threadIdx.x;
    #pragma unroll
    for (int it = 0; it < T::ITER - 1; it++) to[it * T::STEP * T::CHUNKS] = chunks[it];
    if (r0 + (T::ITER - 1) * T::STEP < T::ROWS) to[(T::ITER - 1) * T::STEP * T::CHUNKS] = chunks[T::ITER - 1];
}

/* Output (row, col) of the block in the CPU's order from the tile: every product and sum rounded.
 * The window's bytes come from aligned words, each made a float in full-rate instructions
 * (ipk_vecf_byte), so that the chain of rounded sums is the recompute's only latency. */
template <int K>
__device__ uint32_t tc_exact(const uint8_t *tile, int row, int col, const tc_params &p)
{
    constexpr int R = K / 2;
    const int at = row * TC_PITCH + col + 8 - R, shift = 8 * (at & 3);
    const uint32_t *words = (const uint32_t *)tile + at / 4;
    float acc = 0.0f;
    #pragma unroll
    for (int ky = 0; ky < K; ky++) {
        const uint32_t *w = words + ky * (TC_PITCH / 4);
        const uint32_t lo = __funnelshift_r(w[0], w[1], shift), hi = __funnelshift_r(w[1], w[2], shift);
        #pragma unroll
        for (int kx = 0; kx < K; kx++)
            acc = __fadd_rn(acc, __fmul_rn(p.w[ky * K + kx], ipk_vecf_byte(kx < 4 ? lo : hi, kx % 4)));
    }
    return rbc_cpu_byte(acc, p.fin);
}

/* Byte (row, col) of the block's outputs in shared memory: a row's 16-byte chunks swapped by bits 1
 * and 2 of the row (XOR), so that the 8 rows of a warp's 2-byte stores fall in distinct banks (in
 * rows of 64 bytes, rows g and g + 2 share theirs: 4-way conflicts, as many wavefronts as the A loads). */
__device__ __forceinline__ int tc_out_index(int row, int col)
{
    static_assert(TC_COLS == 64, "4 chunks of 16 bytes, 16 banks a row");
    return row * TC_COLS + (col ^ ((row >> 1 & 3) << 4));
}

/* The block's outputs from shared memory (tc_out_index), 16 bytes a store: thread i takes columns
 * 16 (i % 4) of rows i / 4 + 32 n, whose chunks sit at the same place in each of those rows; a block
 * inside the image with aligned rows steps one pointer down. */
__device__ void tc_store(uint8_t *dst, ptrdiff_t ds, int width, int height, int x0, int y0, const uint8_t *out)
{
    constexpr int PER_ROW = TC_COLS / 16, STEP = TC_WARPS * 32 / PER_ROW;
    static_assert(TC_ROWS % STEP == 0 && STEP % 8 == 0, "whole passes, each chunk where row r0's is");
    const int c = 16 * (threadIdx.x % PER_ROW), r0 = threadIdx.x / PER_ROW;
    const uint8_t *from = out + tc_out_index(r0, c);
    uint8_t *to = dst + (ptrdiff_t)(y0 + r0) * ds + x0 + c;
    if (x0 + TC_COLS <= width && y0 + TC_ROWS <= height && ((uintptr_t)dst % 16) == 0 && (ds % 16) == 0) {
        #pragma unroll
        for (int it = 0; it < TC_ROWS / STEP; it++) *(uint4 *)(to + it * STEP * ds) = *(const uint4 *)(from + it * STEP * TC_COLS);
        return;
    }
    for (int it = 0; it < TC_ROWS / STEP; it++) {
        const int y = y0 + r0 + it * STEP, x = x0 + c;
        if (y >= height || x >= width) break;
        uint8_t *d = dst + (ptrdiff_t)y * ds + x;
        const uint8_t *o = from + it * STEP * TC_COLS;
        if (x + 16 <= width && ((uintptr_t)d % 16) == 0) {
            *(uint4 *)d = *(const uint4 *)o;
        } else {
            const int n = min(16, width - x);
            for (int j = 0; j < n; j++) d[j] = o[j];
        }
    }
}

/* A warp's queue: for each lane of a group of tiles with an open pixel, the group's first tile t,
 * its column group cg and the lane (t << 8 | cg << 5 | lane), and its pixels' fractions two a word
 * (word 2 tt + h: the low halves of x for columns 2 tig and 2 tig + 1 of row g + 8 h of tile tt),
 * read back in tc_recompute. */
struct tc_queue {
    uint4 frac[TC_WARPS][TC_QUEUE];
    uint32_t where[TC_WARPS][TC_QUEUE];
    int count[TC_WARPS];
};

/* The mask of a lane's open pixels (bit 4 tt + 2 h + j) from its fraction words. */
__device__ __forceinline__ uint32_t tc_open_mask(uint4 frac, uint32_t open)
{
    const uint32_t words[4] = { frac.x, frac.y, frac.z, frac.w };
    uint32_t mask = 0;
    #pragma unroll
    for (int bit = 0; bit < 4 * TC_TT; bit++)
        mask |= (uint32_t)(((words[bit >> 1] >> (16 * (bit & 1))) & 0xffffu) < open) << bit;
    return mask;
}

/* Pixel `bit` of the group from tile t and column group cg (8 cg .. 8 cg + 7) of a lane, as
 * row << 6 | column of the block. */
__device__ __forceinline__ uint32_t tc_pixel(int t, int cg, int lane, int bit)
{
    static_assert(TC_COLS <= 64, "a column in 6 bits");
    const int row = 16 * (t + (bit >> 2)) + (lane >> 2) + 8 * ((bit >> 1) & 1), col = 8 * cg + 2 * (lane & 3) + (bit & 1);
    return (uint32_t)row << 6 | (uint32_t)col;
}

/* Pixel row << 6 | column of the block in the CPU's order, into out. */
template <int K>
__device__ __forceinline__ void tc_recompute_pixel(const uint8_t *tile, uint8_t *out, uint32_t pixel, const tc_params &p)
{
    const int row = (int)(pixel >> 6), col = (int)(pixel & 63);
    out[tc_out_index(row, col)] = (uint8_t)tc_exact<K>(tile, row, col, p);
}

/* The open pixels of entry i of the queue (0 past the last): its mask, and in *t, *cg and *lane
 * whose group it is. */
__device__ __forceinline__ uint32_t tc_entry_mask(const tc_queue &q, const int (&count)[TC_WARPS], int i, uint32_t open,
                                                  int *t, int *cg, int *lane)
{
    int w = -1, at = i;
    #pragma unroll
    for (int v = 0; v < TC_WARPS; v++)
        if (w < 0) {
            if (at < count[v]) w = v;
            else at -= count[v];
        }
    if (w < 0) return 0;
    *t = (int)(q.where[w][at] >> 8);
    *lane = (int)(q.where[w][at] & 31);
    *cg = (int)(q.where[w][at] >> 5 & 7);
    return tc_open_mask(q.frac[w][at], open);
}

/* A lane's open pixels of a group in the CPU's order, into out, when its warp's queue is full: out of
 * line, so that the loop's code stays small for a case that hardly comes. */
template <int K>
static __device__ __noinline__ void tc_recompute_now(const uint8_t *tile, uint8_t *out, uint4 frac, int t, int cg,
                                                     const tc_params &p)
{
    for (uint32_t mask = tc_open_mask(frac, p.plan.open); mask; mask &= mask - 1)
        tc_recompute_pixel<K>(tile, out, tc_pixel(t, cg, threadIdx.x & 31, __ffs(mask) - 1), p);
}

/* The queued pixels in the CPU's order, into out: those whose fraction is below open. Thread i reads
 * entry i; each warp then lists its entries' pixels (in the queue's memory, read by then) and its
 * lanes take one pixel each, so that the block waits for one pass of the CPU's order, not one a
 * pixel of the busiest entry. Warps past the entries stay out of the recompute's instructions. All
 * threads call it (it holds a barrier). */
template <int K>
__device__ void tc_recompute(const uint8_t *tile, uint8_t *out, tc_queue &q, const tc_params &p)
{
    static_assert(TC_WARPS * 32 * 4 * TC_TT * sizeof(uint16_t) <= sizeof q.frac, "the pixel lists fit the queue");
    static_assert(TC_QUEUE == 32, "an entry a thread of the block");
    static_assert(TC_ROWS / 16 <= 256 / 8 && TC_COLS / 8 <= 8, "t and cg fit where's bits");
    int count[TC_WARPS], total = 0;
    #pragma unroll
    for (int w = 0; w < TC_WARPS; w++) {
        count[w] = q.count[w];
        total += count[w];
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int t = 0, owner = 0, owner_lane = 0;
    uint32_t mask = tc_entry_mask(q, count, (int)threadIdx.x, p.plan.open, &t, &owner, &owner_lane);
    __syncthreads();   /* every entry read: its memory holds the lists now */
    if (32 * warp >= total) return;
    uint16_t *list = (uint16_t *)&q.frac[0][0] + warp * 32 * 4 * TC_TT;
    const int n = __popc(mask);
    int end = n;   /* inclusive prefix of the warp's pixel counts */
    #pragma unroll
    for (int d = 1; d < 32; d *= 2) {
        const int v = __shfl_up_sync(0xffffffffu, end, d);
        if (lane >= d) end += v;
    }
    const int pixels = __shfl_sync(0xffffffffu, end, 31);
    for (int k = end - n; mask; mask &= mask - 1, k++) list[k] = (uint16_t)tc_pixel(t, owner, owner_lane, __ffs(mask) - 1);
    __syncwarp();
    for (int k = lane; k < pixels; k += 32) tc_recompute_pixel<K>(tile, out, list[k], p);
}

/* SHIFT: the plan's shift is not 0 (convolve_tc.h); without it x is T's high word. 32 warps an SM at
 * 64 registers a thread. */
template <int K, int L, bool SHIFT>
__global__ void __launch_bounds__(TC_WARPS * 32, 32 / TC_WARPS)
    tc_kernel(const uint8_t *src, ptrdiff_t ss, uint8_t *dst, ptrdiff_t ds, int width, int height, int border,
              const __grid_constant__ tc_params p)
{
    constexpr int NF = K * L;
    static_assert(TC_ROWS / 16 % TC_TT == 0, "whole groups of tiles");
    __shared__ __align__(16) uint8_t tile[(TC_ROWS + K - 1) * TC_PITCH];
    __shared__ __align__(16) uint8_t out[TC_ROWS * TC_COLS];
    __shared__ tc_queue queue;
    const int x0 = blockIdx.x * TC_COLS, y0 = blockIdx.y * TC_ROWS;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, tig = lane & 3;

    uint2 chunks[tc_tile<K>::ITER];
    tc_fetch_tile<K>(src, ss, width, height, border, x0, y0, chunks);
    uint32_t b[NF];   /* under the loads */
    const uint32_t sel = tc_b_selector<K>(lane);
    #pragma unroll
    for (int f = 0; f < NF; f++) b[f] = __byte_perm(p.q[f][0], p.q[f][1], sel);
    tc_stash_tile<K>(chunks, tile);
    __syncthreads();

    int queued = 0;   /* the warp's entries */
    constexpr int STEPS = TC_ROWS / 16 / TC_TT;   /* down a column group */
    for (int u = 0; u < TC_GROUPS * STEPS; u++) {
        const int cg = TC_GROUPS * warp + u / STEPS, t = u % STEPS * TC_TT;
        const uint8_t *acol = tile + 8 * cg + 4 + 4 * tig;
        uint8_t *obase = out + tc_out_index(g, 8 * cg + 2 * tig);   /* rows 16 n + 8 h + g: g's chunk order */
        int acc[TC_TT][L][4] = {};
        #pragma unroll
        for (int ky = 0; ky < K; ky += 2)   /* rows ky and ky + 1 a k32 product; the last row alone */
            #pragma unroll
            for (int tt = 0; tt < TC_TT; tt++) {
                const uint8_t *row = acol + (16 * (t + tt) + g + ky) * TC_PITCH;
                const uint32_t a0 = *(const uint32_t *)row, a1 = *(const uint32_t *)(row + 8 * TC_PITCH);
                if (ky + 1 < K) {
                    const uint32_t a2 = *(const uint32_t *)(row + TC_PITCH), a3 = *(const uint32_t *)(row + 9 * TC_PITCH);
                    #pragma unroll
                    for (int l = 0; l < L; l++) tc_mma(acc[tt][l], a0, a1, a2, a3, b[ky * L + l], b[(ky + 1) * L + l]);
                } else {
                    #pragma unroll
                    for (int l = 0; l < L; l++) tc_mma(acc[tt][l], a0, a1, b[ky * L + l]);
                }
            }
        int32_t x[TC_TT][2][2];   /* tile, row g + 8 h, column 2 tig + j */
        uint32_t least = 0xffffffffu;
        #pragma unroll
        for (int tt = 0; tt < TC_TT; tt++)
            #pragma unroll
            for (int h = 0; h < 2; h++) {
                #pragma unroll
                for (int j = 0; j < 2; j++) {
                    const int i = 2 * h + j;
                    x[tt][h][j] = ipk_conv_tc_fixed(acc[tt][0][i], acc[tt][1][i], L == 3 ? acc[tt][L - 1][i] : 0, L,
                                                    p.plan.mhi, p.plan.mlo, p.plan.c, SHIFT ? p.plan.shift : 0);
                }
                const uint32_t ints = __byte_perm(x[tt][h][0], x[tt][h][1], 0x7632);
                const uint32_t bytes = __viaddmin_s16x2_relu(ints, 0, 0x00ff00ffu);
                *(uint16_t *)(obase + (16 * (t + tt) + 8 * h) * TC_COLS) = (uint16_t)__byte_perm(bytes, 0, 0x0020);
                least = __vimin3_u16x2(least, x[tt][h][0], x[tt][h][1]);   /* the low halves: fractions */
            }
        const bool open = (least & 0xffffu) < p.plan.open;   /* outside the image too: harmless, never stored */
        const uint32_t lanes = __ballot_sync(0xffffffffu, open);
        if (lanes) {
            const int k = queued + __popc(lanes & ((1u << lane) - 1));
            if (open) {
                static_assert(TC_TT == 2, "four fraction words a lane");
                const uint4 frac = make_uint4(__byte_perm(x[0][0][0], x[0][0][1], 0x5410),
                                              __byte_perm(x[0][1][0], x[0][1][1], 0x5410),
                                              __byte_perm(x[1][0][0], x[1][0][1], 0x5410),
                                              __byte_perm(x[1][1][0], x[1][1][1], 0x5410));
                if (k < TC_QUEUE) {
                    queue.frac[warp][k] = frac;
                    queue.where[warp][k] = (uint32_t)t << 8 | (uint32_t)cg << 5 | (uint32_t)lane;
                } else {
                    tc_recompute_now<K>(tile, out, frac, t, cg, p);
                }
            }
            queued += __popc(lanes);
        }
    }
    if (lane == 0) queue.count[warp] = min(queued, TC_QUEUE);
    __syncthreads();
    tc_recompute<K>(tile, out, queue, p);
    __syncthreads();
    tc_store(dst, ds, width, height, x0, y0, out);
}

template <int K, int L>
static int tc_launch(const ipk_img *src, const ipk_img *dst, int border, const tc_params &p, cudaStream_t s)
{
    dim3 block(TC_WARPS * 32), grid(ipk_div_up(src->width, TC_COLS), ipk_div_up(src->height, TC_ROWS));
    if (grid.y > IPK_MAX_GRID_Y) return IPK_ERANGE;
    if (p.plan.shift)
        tc_kernel<K, L, true><<<grid, block, 0, s>>>((const uint8_t *)src->data, src->stride, (uint8_t *)dst->data,
                                                     dst->stride, src->width, src->height, border, p);
    else
        tc_kernel<K, L, false><<<grid, block, 0, s>>>((const uint8_t *)src->data, src->stride, (uint8_t *)dst->data,
                                                      dst->stride, src->width, src->height, border, p);
    return ipk_launch_status();
}
#endif
