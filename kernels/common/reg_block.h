/* Per-thread arithmetic of the GPU register-streaming kernel (kernels/gpu/reg_block.cuh) for
 * K x K windows (K = 3, 5, 7) over a 1-channel u8 image, in C that the host compiles too, so
 * that tests/unit/test_reg_block.c walks the kernel's threads and warps on the CPU.
 *
 * A thread owns RG_PX = 8 adjacent columns x .. x+7 and walks down a band of rows. Each input
 * row is one 8-byte load (words m0, m1); lane 0 of a warp also loads the word left of it and
 * lane 31 the word right of it (e); the other lanes take their halo from the neighbouring
 * lanes' words (shuffles in the kernel). The K outputs still open stay in registers as float
 * accumulators, each adding its rows in ascending ky and, inside a row, its taps in ascending
 * kx (or the row pass, then col[ky] times it, for a split kernel): the order of rb_kernel in
 * gpu_common.cuh and of the CPU's float path. u8 values and integer sums below 2^24 are exact
 * in float, so integer kernels may contract (fma) and still give the exact sum. */
#ifndef IPK_REG_BLOCK_H
#define IPK_REG_BLOCK_H
#include <math.h>
#include <stdint.h>
#include "border.h"

#ifdef __CUDA_ARCH__
#define RG_UNROLL _Pragma("unroll")
#define RG_LDG32(p) __ldg((const uint32_t *)(p))
#define RG_LDG64(p) __ldg((const uint2 *)(p))
#else
#define RG_UNROLL
#endif

#define RG_PX 8
#define RG_MAXK 7
#define RG_NV (RG_PX + RG_MAXK - 1)   /* window values of one row: columns x-R .. x+7+R */

typedef struct {
    float w[RG_MAXK * RG_MAXK];   /* direct taps, row-major */
    float row[RG_MAXK], col[RG_MAXK];
} rg_weights;

/* One input row as a thread holds it: bytes x .. x+3 (m0), x+4 .. x+7 (m1) and, on lane 0 the
 * bytes x-4 .. x-1, on lane 31 the bytes x+8 .. x+11 (e); 0 where the border drops a pixel. */
typedef struct { uint32_t m0, m1, e; } rg_row;

/* Rows of outputs a thread makes at least: each band reads K - 1 halo rows. */
IPK_HD int rg_min_band(int k) { return k == 7 ? 24 : 16; }

/* Band height for a grid of blocks_x block columns on `slots` resident blocks: the least whole
 * number of waves that bands of min_band rows need, filled as evenly as the rows allow, so that
 * the last wave is not a small tail. */
IPK_HD int rg_band(int height, int blocks_x, long long slots, int min_band)
{
    const long long bands_min = ((long long)height + min_band - 1) / min_band;
    if (slots < 1) return min_band;
    const long long waves = (blocks_x * bands_min + slots - 1) / slots;
    long long bands = waves * slots / blocks_x;
    if (bands < 1) bands = 1;
    if (bands > height) bands = height;
    if (bands > 65535) bands = 65535;   /* gridDim.y */
    return (int)((height + bands - 1) / bands);
}

/* Rows a thread holds in flight ahead of their use, a multiple of K. */
#define RG_DEPTH(K) ((K) == 3 ? 6 : (K))
/* Resident blocks of 128 threads the kernel is compiled for: at most 80, 96 and 128 registers a
 * thread (at 72 and 80 the convolve kernels of K = 3 and 5 spilled). */
#define RG_MIN_BLOCKS(K) ((K) == 3 ? 6 : (K) == 5 ? 5 : 4)

/* Bytes x .. x+3 through the border. */
IPK_HD uint32_t rg_gather4(const uint8_t *row, int x, int width, int border)
{
    uint32_t w = 0;
    RG_UNROLL
    for (int k = 0; k < 4; k++) {
        const int xi = ipk_border_index(x + k, width, border);
        if (xi >= 0) w |= (uint32_t)row[xi] << (8 * k);
    }
    return w;
}

/* Whether the thread at x reads its row words straight: its bytes and both side words inside
 * the image, 8-byte aligned rows. */
IPK_HD int rg_fast(const uint8_t *src, ptrdiff_t ss, int width, int x)
{
    return x >= 4 && x + RG_PX + 4 <= width && ((uintptr_t)src % 8) == 0 && (ss % 8) == 0;
}

/* The row's words through the border, byte by byte: threads at the image's sides or rows that
 * are not 8-byte aligned. Out of line on the GPU, so that it does not weigh on the registers of
 * the fast path. */
#ifdef __CUDACC__
static __host__ __device__ __noinline__
#else
static inline
#endif
rg_row rg_gather_row(const uint8_t *row, int x, int width, int border, int lane)
{
    const int ex = lane == 0 ? x - 4 : x + RG_PX;
    rg_row r;
    r.m0 = rg_gather4(row, x, width, border);
    r.m1 = rg_gather4(row, x + 4, width, border);
    r.e = lane == 0 || lane == 31 ? rg_gather4(row, ex, width, border) : 0u;
    return r;
}

/* Input row y (any y: the border maps it or drops it) for the thread at x on warp lane `lane`. */
IPK_HD rg_row rg_load(const uint8_t *src, ptrdiff_t ss, int width, int height, int border, int x, int y, int fast,
                      int lane)
{
    const int yi = ipk_border_index(y, height, border);
    if (yi < 0) {
        rg_row zero = { 0, 0, 0 };
        return zero;
    }
    const uint8_t *row = src + (ptrdiff_t)yi * ss;
#ifdef __CUDA_ARCH__
    if (fast) {
        rg_row r;
        const uint2 m = RG_LDG64(row + x);
        r.m0 = m.x;
        r.m1 = m.y;
        r.e = lane == 0 || lane == 31 ? RG_LDG32(row + (lane == 0 ? x - 4 : x + RG_PX)) : 0u;
        return r;
    }
#else
    (void)fast;
#endif
    return rg_gather_row(row, x, width, border, lane);
}

/* Byte b (0..15) of the four words left, m0, m1, right as a float. */
IPK_HD float rg_byte(const uint32_t *words, int b)
{
    const uint32_t v = (words[b >> 2] >> (8 * (b & 3))) & 0xffu;
#ifdef __CUDA_ARCH__
    return __uint_as_float(0x4B000000u | v) - 8388608.0f;   /* 2^23 + v, exact, no conversion unit */
#else
    return (float)v;
#endif
}

/* The row's window values v[i] = pixel x - R + i, i = 0 .. 7 + 2R; left: the m1 word of the
 * lane to the left, right: the m0 word of the lane to the right (the thread's own e at the
 * warp's ends). */
IPK_HD void rg_values(rg_row cur, uint32_t left, uint32_t right, int lane, int r, float *v)
{
    const uint32_t words[4] = { lane == 0 ? cur.e : left, cur.m0, cur.m1, lane == 31 ? cur.e : right };
    RG_UNROLL
    for (int i = 0; i < RG_PX + 2 * RG_MAXK / 2; i++)
        if (i < RG_PX + 2 * r) v[i] = rg_byte(words, 4 - r + i);
}

IPK_HD float rg_mac(float acc, float w, float v, int contract)
{
#ifdef __CUDA_ARCH__
    return contract ? fmaf(w, v, acc) : __fadd_rn(acc, __fmul_rn(w, v));
#else
    return contract ? fmaf(w, v, acc) : acc + w * v;   /* C11 build: -ffp-contract=off */
#endif
}

/* Adds one input row to the open outputs. The row's index in the band modulo K is `base`;
 * the output that starts at it (ky = 0) lives in slot base, the one that takes it as its row ky
 * in slot (base - ky) mod K; the slot (base + 1) mod K is complete afterwards. */
IPK_HD void rg_add_row(float acc[][RG_PX], int k, int sep, int contract, const rg_weights *w, const float *v,
                       int base)
{
    float h[RG_PX];
    if (sep) {
        RG_UNROLL
        for (int j = 0; j < RG_PX; j++) {
            h[j] = 0.0f;
            RG_UNROLL
            for (int kx = 0; kx < k; kx++) h[j] = rg_mac(h[j], w->row[kx], v[j + kx], contract);
        }
    }
    RG_UNROLL
    for (int ky = k - 1; ky >= 0; ky--) {
        const int slot = (base - ky + k) % k;
        RG_UNROLL
        for (int j = 0; j < RG_PX; j++) {
            if (ky == 0) acc[slot][j] = 0.0f;
            if (sep) {
                acc[slot][j] = rg_mac(acc[slot][j], w->col[ky], h[j], contract);
            } else {
                RG_UNROLL
                for (int kx = 0; kx < k; kx++)
                    acc[slot][j] = rg_mac(acc[slot][j], w->w[ky * k + kx], v[j + kx], contract);
            }
        }
    }
}

/* Box mean of radius 4 to RM_MAXR (rm_kernel in kernels/gpu/mean.cu): a thread keeps the vertical
 * sums of its 8 columns over the window's rows, adding the row that enters and subtracting the
 * row that leaves as it walks down (integers, exact); an output's horizontal sum is the
 * difference of two prefix sums of those column sums along the warp (a shuffle scan). A warp
 * reads 256 columns and writes the 224 in their middle: lanes 0, 1, 30 and 31 only lend their
 * column sums, as the window reaches at most 2 lanes (16 columns) to each side. */
#define RM_MAXR 15
#define RM_OUT_COLS 224
#define RM_DEPTH 4    /* rows in flight ahead of their use */

typedef struct { uint32_t m0, m1; } rm_row;

IPK_HD int rm_min_band(void) { return 64; }

/* The first column of lane `lane` of warp `warp` (counted over the whole grid). */
IPK_HD int rm_lane_x(int warp, int lane) { return RM_OUT_COLS * warp - 16 + RG_PX * lane; }
IPK_HD int rm_stores(int lane) { return lane >= 2 && lane <= 29; }

#ifdef __CUDACC__
static __host__ __device__ __noinline__
#else
static inline
#endif
rm_row rm_gather_row(const uint8_t *row, int x, int width, int border)
{
    rm_row r;
    r.m0 = rg_gather4(row, x, width, border);
    r.m1 = rg_gather4(row, x + 4, width, border);
    return r;
}

/* Bytes x .. x+7 of input row y through the border (0 where it drops them). */
IPK_HD rm_row rm_load(const uint8_t *src, ptrdiff_t ss, int width, int height, int border, int x, int y, int fast)
{
    const int yi = ipk_border_index(y, height, border);
    if (yi < 0) {
        rm_row zero = { 0, 0 };
        return zero;
    }
    const uint8_t *row = src + (ptrdiff_t)yi * ss;
#ifdef __CUDA_ARCH__
    if (fast) {
        const uint2 m = RG_LDG64(row + x);
        rm_row r = { m.x, m.y };
        return r;
    }
#else
    (void)fast;
#endif
    return rm_gather_row(row, x, width, border);
}

/* cs[i] += byte i of the row, or -= when sub. */
IPK_HD void rm_add(uint32_t *cs, rm_row a, int sub)
{
    RG_UNROLL
    for (int i = 0; i < RG_PX; i++) {
        const uint32_t b = ((i < 4 ? a.m0 : a.m1) >> (8 * (i & 3))) & 0xffu;
        cs[i] = sub ? cs[i] - b : cs[i] + b;
    }
}

IPK_HD void rm_prefix(const uint32_t *cs, uint32_t *p)
{
    p[0] = cs[0];
    RG_UNROLL
    for (int i = 1; i < RG_PX; i++) p[i] = p[i - 1] + cs[i];
}

/* Output column x+i adds columns x+i-r .. x+i+r: the prefix sum at x+i+r lies `rm_hi_lanes` lanes
 * to the right, in element rm_hi_elem; the one at x+i-r-1 `rm_lo_lanes` lanes to the left. */
IPK_HD int rm_hi_lanes(int i, int r) { return (i + r) >> 3; }
IPK_HD int rm_hi_elem(int i, int r) { return (i + r) & 7; }
IPK_HD int rm_lo_lanes(int i, int r) { return 2 - ((i - r - 1 + 16) >> 3); }
IPK_HD int rm_lo_elem(int i, int r) { return (i - r - 1 + 16) & 7; }

/* In-image positions among i-r .. i+r (the shrink border's count). */
IPK_HD uint32_t rm_span(int i, int n, int r)
{
    const int lo = i - r < 0 ? 0 : i - r, hi = i + r > n - 1 ? n - 1 : i + r;
    return (uint32_t)(hi - lo + 1);
}
#endif
