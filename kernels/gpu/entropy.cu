/* Entropy map on the GPU. Each thread owns one column and walks a strip of rows down,
 * keeping its window's bin counts (one histogram per thread, laid out [bin][thread] so
 * that a warp's accesses fall in distinct banks) and sum n_i log n_i in the same 64-bit
 * fixed point as kernels/cpu/entropy.c. The n log n and 1/n tables are built on the host with
 * the CPU kernel's expressions (the device's log() is 1 ulp off glibc's at times, which moved
 * u8 outputs by one), so results match the CPU kernel bit for bit. Histograms live in shared
 * memory when they fit, else in the caller's scratch (global memory, few threads walking many
 * columns). */
#include <cuda_runtime.h>
#include <math.h>
#include <stdlib.h>
#include "ipk.h"
#include "entropy_scratch.cuh"

#define ENT_FIX_SCALE 1099511627776.0   /* 2^40, as the CPU kernel */
#define ENT_MAX_RADIUS 30
#define ENT_SMEM_LIMIT (96 * 1024)
#define ENT_GLOBAL_HIST_BYTES ((size_t)64 << 20)
#define ENT_GLOBAL_THREADS 64

typedef struct {
    const char *src;
    char *dst;
    ptrdiff_t src_stride, dst_stride;
    int width, height, radius, levels, bins, strip;
    int dst_u8;
    double out_scale;
    unsigned *flag;
    const long long *t_n;       /* T(n) = llround(n log n 2^40), n = 0..nmax */
    const double *inv_n;        /* 1 / (n 2^40), n = 0..nmax */
    unsigned *hist;             /* global histograms, or NULL for shared ones */
    long long workers;          /* global mode: threads in the grid */
} ent_args;

typedef struct {
    int threads;                /* 0: global-memory histograms */
    size_t table_bytes, smem_bytes, hist_bytes;
    long long workers;
} ent_plan;

static int ent_params_ok(const ipk_entropy_params *p)
{
    return p && p->radius >= 1 && p->radius <= ENT_MAX_RADIUS && p->levels >= 2 && p->levels <= 65536 &&
           p->bins >= 1 && p->bins <= p->levels && isfinite(p->log_scale);
}

static size_t ent_align16(size_t n) { return (n + 15) & ~(size_t)15; }

/* Shared memory per block: the delta table, the u8 bin table, then the histograms. */
static ent_plan ent_make_plan(const ipk_entropy_params *p)
{
    ent_plan pl;
    size_t side = (size_t)(2 * p->radius + 1), nmax = side * side;
    pl.table_bytes = 2 * ent_align16((nmax + 1) * 8);
    size_t fixed = ent_align16(nmax * 8) + 256 * 4;
    pl.threads = 0;
    pl.hist_bytes = 0;
    pl.workers = 0;
    for (int t = 128; t >= 32; t /= 2)
        if (fixed + (size_t)p->bins * (size_t)t * 4 <= ENT_SMEM_LIMIT) {
            pl.threads = t;
            break;
        }
    if (pl.threads) {
        pl.smem_bytes = fixed + (size_t)p->bins * (size_t)pl.threads * 4;
    } else {
        pl.smem_bytes = fixed;
        long long w = (long long)(ENT_GLOBAL_HIST_BYTES / ((size_t)p->bins * 4));
        w = w / ENT_GLOBAL_THREADS * ENT_GLOBAL_THREADS;
        pl.workers = w < ENT_GLOBAL_THREADS ? ENT_GLOBAL_THREADS : w > 8192 ? 8192 : w;
        pl.hist_bytes = (size_t)pl.workers * (size_t)p->bins * 4;
    }
    return pl;
}

/* The CPU kernel's tables, with its expressions, in host code (glibc's log). */
static void ent_host_tables(long long *t_n, double *inv_n, int nmax)
{
    t_n[0] = 0;
    inv_n[0] = 0;
    for (int n = 1; n <= nmax; n++) {
        t_n[n] = llround((double)n * log((double)n) * ENT_FIX_SCALE);
        inv_n[n] = 1.0 / ((double)n * ENT_FIX_SCALE);
    }
}

template <bool U16>
__device__ __forceinline__ unsigned ent_bin(const ent_args &a, const unsigned *lut, unsigned v, unsigned &bad)
{
    if (v >= (unsigned)a.levels) {
        bad = v > bad ? v : bad;
        v = a.levels - 1;
    }
    if (!U16) return lut[v];
    return v * (unsigned)a.bins / (unsigned)a.levels;   /* < 65536 * 65536: fits 32 bits */
}

/* Adds (sign > 0) or removes source row y, columns xa..xb, to one thread's histogram. */
template <bool U16>
__device__ __forceinline__ long long ent_row(const ent_args &a, const unsigned *lut, const long long *delta,
                                             unsigned *hist, long long hstride, int y, int xa, int xb,
                                             bool add, long long sum, unsigned &bad)
{
    const char *row = a.src + (ptrdiff_t)y * a.src_stride;
    for (int x = xa; x <= xb; x++) {
        unsigned v = U16 ? __ldg((const unsigned short *)row + x) : __ldg((const unsigned char *)row + x);
        unsigned *c = hist + (long long)ent_bin<U16>(a, lut, v, bad) * hstride;
        if (add) {
            unsigned n = *c;
            sum += delta[n];
            *c = n + 1;
        } else {
            unsigned n = *c - 1;
            sum -= delta[n];
            *c = n;
        }
    }
    return sum;
}

/* The CPU kernel's expression, without contraction, so u8 rounding agrees too. */
__device__ __forceinline__ void ent_store(const ent_args &a, int x, int y, long long sum, int n)
{
    double h = __dmul_rn(__dmul_rn((double)(__ldg(a.t_n + n) - sum), __ldg(a.inv_n + n)), a.out_scale);
    char *row = a.dst + (ptrdiff_t)y * a.dst_stride;
    if (a.dst_u8) ((unsigned char *)row)[x] = (unsigned char)(h >= 255.0 ? 255 : (int)__dadd_rn(h, 0.5));
    else ((float *)row)[x] = (float)h;
}

/* Column x, rows [y0, y1): build the first window, slide it down, then empty the histogram
 * again so the next walk (global mode) starts from zero. */
template <bool U16>
__device__ void ent_walk(const ent_args &a, const unsigned *lut, const long long *delta, unsigned *hist,
                         long long hstride, int x, int y0, int y1, unsigned &bad)
{
    const int r = a.radius, h = a.height;
    const int xa = max(x - r, 0), xb = min(x + r, a.width - 1), ncols = xb - xa + 1;
    long long sum = 0;
    for (int y = max(y0 - r, 0); y <= min(y0 + r, h - 1); y++)
        sum = ent_row<U16>(a, lut, delta, hist, hstride, y, xa, xb, true, sum, bad);
    for (int y = y0; y < y1; y++) {
        int rows = min(y + r, h - 1) - max(y - r, 0) + 1;
        ent_store(a, x, y, sum, rows * ncols);
        if (y + 1 == y1) break;
        if (y - r >= 0) sum = ent_row<U16>(a, lut, delta, hist, hstride, y - r, xa, xb, false, sum, bad);
        if (y + r + 1 < h) sum = ent_row<U16>(a, lut, delta, hist, hstride, y + r + 1, xa, xb, true, sum, bad);
    }
    for (int y = max(y1 - 1 - r, 0); y <= min(y1 - 1 + r, h - 1); y++)
        sum = ent_row<U16>(a, lut, delta, hist, hstride, y, xa, xb, false, sum, bad);
}

template <bool U16>
__global__ void ent_kernel(ent_args a)
{
    extern __shared__ __align__(16) unsigned char smem[];
    const int side = 2 * a.radius + 1, nmax = side * side;
    long long *delta = (long long *)smem;
    unsigned *lut = (unsigned *)(smem + ((nmax * 8 + 15) & ~15));
    unsigned *hist_s = lut + 256;
    const int tid = threadIdx.x, nt = blockDim.x;

    for (int i = tid; i < nmax; i += nt) delta[i] = a.t_n[i + 1] - a.t_n[i];
    if (!U16)
        for (int v = tid; v < 256; v += nt) {
            unsigned c = v < a.levels ? v : a.levels - 1;
            lut[v] = c * (unsigned)a.bins / (unsigned)a.levels;
        }
    if (!a.hist)
        for (int i = tid; i < a.bins * nt; i += nt) hist_s[i] = 0;
    __syncthreads();

    unsigned bad = 0;
    if (!a.hist) {
        int x = blockIdx.x * nt + tid, y0 = blockIdx.y * a.strip;
        if (x < a.width) ent_walk<U16>(a, lut, delta, hist_s + tid, nt, x, y0, min(y0 + a.strip, a.height), bad);
    } else {
        long long gid = (long long)blockIdx.x * nt + tid;
        long long strips = (a.height + a.strip - 1) / a.strip, items = strips * a.width;
        for (long long it = gid; it < items; it += a.workers) {
            int x = (int)(it % a.width), y0 = (int)(it / a.width) * a.strip;
            ent_walk<U16>(a, lut, delta, a.hist + gid, a.workers, x, y0, min(y0 + a.strip, a.height), bad);
        }
    }
    if (bad) {
        atomicOr(a.flag, 1u);
        atomicMax(a.flag + 1, bad);
    }
}

/* Fast path for bins <= 16 and radius <= 3 (the common 16-level case). A block stages a strip
 * of bins in shared memory (16-byte source loads, one bin byte per pixel, out-of-image pixels
 * marked empty); each thread owns ENTF_K adjacent output columns and walks the strip down,
 * keeping per column the window's vertical bin counts as 16 nibbles (counts <= 7) in two
 * registers, so a row update is two shifts and an add. Per output the window's counts
 * (bytes, scaled by 4 to be table offsets) slide across the thread's columns, and the sum of
 * n log n is read from a table of the CPU kernel's fixed-point values, split in two 24-bit
 * halves so 16 terms add exactly in 32 bits. */
#define ENTF_K 8
#define ENTF_THREADS 128
#define ENTF_BW (ENTF_K * ENTF_THREADS)
#define ENTF_PAD 16
#define ENTF_ROW (ENTF_BW + 2 * ENTF_PAD)
#define ENTF_STRIP 32
#define ENTF_MAXR 3
#define ENTF_EMPTY 0xffu
#define ENTF_TAB 64

__device__ __forceinline__ unsigned entf_shl(unsigned x, unsigned s)
{
    unsigned r;
    asm("shl.b32 %0, %1, %2;" : "=r"(r) : "r"(x), "r"(s));   /* PTX clamps s >= 32 to a zero result */
    return r;
}

/* Bin code of one source value: 4 * bin, the nibble shift of its count; records values >= levels. */
template <bool U16>
__device__ __forceinline__ unsigned entf_code(const ent_args &a, const unsigned char *lut, unsigned v, unsigned &bad)
{
    if (v >= (unsigned)a.levels) {
        bad = v > bad ? v : bad;
        v = a.levels - 1;
    }
    if (!U16) return lut[v];
    return 4u * (v * (unsigned)a.bins / (unsigned)a.levels);
}

/* Tile row ty holds source row y, columns bx0 - ENTF_PAD .. bx0 + ENTF_BW + ENTF_PAD - 1. */
template <bool U16>
__device__ void entf_load_tile(const ent_args &a, const unsigned char *lut, unsigned char *tile, int bx0, int ybase,
                               int rows, unsigned &bad)
{
    const int chunks = ENTF_ROW / 16, es = U16 ? 2 : 1;
    for (int i = threadIdx.x; i < rows * chunks; i += blockDim.x) {
        int ty = i / chunks, c = i % chunks, y = ybase + ty, gx = bx0 - ENTF_PAD + 16 * c;
        unsigned char code[16];
        const char *row = a.src + (ptrdiff_t)y * a.src_stride;
        bool inside = y >= 0 && y < a.height && gx >= 0 && gx + 16 <= a.width;
        if (!U16 && inside && (((uintptr_t)(row + gx)) & 15) == 0) {
            uint4 q = __ldg((const uint4 *)(row + gx));
            unsigned w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
            for (int j = 0; j < 16; j++) code[j] = (unsigned char)entf_code<U16>(a, lut, (w[j >> 2] >> (8 * (j & 3))) & 255u, bad);
        } else {
#pragma unroll
            for (int j = 0; j < 16; j++) {
                int x = gx + j;
                unsigned cd = ENTF_EMPTY;
                if (y >= 0 && y < a.height && x >= 0 && x < a.width) {
                    const char *p = row + (ptrdiff_t)x * es;
                    unsigned v = U16 ? __ldg((const unsigned short *)p) : __ldg((const unsigned char *)p);
                    cd = entf_code<U16>(a, lut, v, bad);
                }
                code[j] = (unsigned char)cd;
            }
        }
        uint4 o;
        o.x = code[0] | code[1] << 8 | code[2] << 16 | (unsigned)code[3] << 24;
        o.y = code[4] | code[5] << 8 | code[6] << 16 | (unsigned)code[7] << 24;
        o.z = code[8] | code[9] << 8 | code[10] << 16 | (unsigned)code[11] << 24;
        o.w = code[12] | code[13] << 8 | code[14] << 16 | (unsigned)code[15] << 24;
        *(uint4 *)(tile + ty * ENTF_ROW + 16 * c) = o;
    }
}

/* The 16 nibble counts of one column as bytes scaled by 4 (even bins, odd bins of each half). */
__device__ __forceinline__ void entf_expand(unsigned lo, unsigned hi, unsigned x[4])
{
    const unsigned m = 0x3c3c3c3cu;
    x[0] = (lo << 2) & m;
    x[1] = (lo >> 2) & m;
    x[2] = (hi << 2) & m;
    x[3] = (hi >> 2) & m;
}

/* Sum over 16 bins of T(n), exact: the table holds T's low and high 24-bit halves. */
__device__ __forceinline__ long long entf_tsum(const unsigned h[4], const unsigned *tlo, const unsigned *thi)
{
    unsigned slo = 0, shi = 0;
#pragma unroll
    for (int k = 0; k < 4; k++)
#pragma unroll
        for (int j = 0; j < 4; j++) {
            unsigned off = __byte_perm(h[k], 0u, 0x4440u + (unsigned)j);
            slo += *(const unsigned *)((const char *)tlo + off);
            shi += *(const unsigned *)((const char *)thi + off);
        }
    return ((long long)shi << 24) + (long long)slo;
}

/* f32 output: the same sum from a float table of n ln n. The error stays below 7e-6 bits at
 * radius 3 (16 table entries and 15 additions, each off by at most 2^-24 of a sum <= 49 ln 49,
 * divided by n = 49), inside the f32 tolerance of 1e-5, and the table reads halve. */
__device__ __forceinline__ float entf_tsum_f(const unsigned h[4], const float *tf)
{
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < 4; k++)
#pragma unroll
        for (int j = 0; j < 4; j++) s += *(const float *)((const char *)tf + __byte_perm(h[k], 0u, 0x4440u + (unsigned)j));
    return s;
}

/* Output row y for the thread's ENTF_K columns: the window's counts slide across the columns
 * (one column enters, one leaves), then the values go out in 16-byte stores where aligned. */
template <int R, bool F32>
__device__ __forceinline__ void entf_store_row(const ent_args &a, int y, int x0, const unsigned vlo[ENTF_K + 2 * R],
                                               const unsigned vhi[ENTF_K + 2 * R], const unsigned *tlo,
                                               const unsigned *thi, const float *tf)
{
    const int rows = min(y + R, a.height - 1) - max(y - R, 0) + 1, nfull = rows * (2 * R + 1);
    const long long tfull = __ldg(a.t_n + nfull);
    const double ifull = __ldg(a.inv_n + nfull);
    const float scale_f = (float)a.out_scale, tfull_f = tf[nfull];
    unsigned h[4] = {0, 0, 0, 0};
#pragma unroll
    for (int c = 0; c < 2 * R + 1; c++) {
        unsigned x[4];
        entf_expand(vlo[c], vhi[c], x);
#pragma unroll
        for (int k = 0; k < 4; k++) h[k] += x[k];
    }
    float vf[ENTF_K];
    unsigned char vu[ENTF_K];
#pragma unroll
    for (int i = 0; i < ENTF_K; i++) {
        if (i > 0) {
            unsigned xin[4], xout[4];
            entf_expand(vlo[i + 2 * R], vhi[i + 2 * R], xin);
            entf_expand(vlo[i - 1], vhi[i - 1], xout);
#pragma unroll
            for (int k = 0; k < 4; k++) h[k] = h[k] + xin[k] - xout[k];
        }
        /* columns beyond the image take the last one's count, so the table reads stay in range */
        const int x = min(x0 + i, a.width - 1), cols = min(x + R, a.width - 1) - max(x - R, 0) + 1;
        const bool full = cols == 2 * R + 1;
        const int n = rows * cols;
        if (F32) {
            float tn = full ? tfull_f : tf[n];
            vf[i] = (tn - entf_tsum_f(h, tf)) * (scale_f / (float)n);
        } else {
            long long tn = full ? tfull : __ldg(a.t_n + n);
            double in = full ? ifull : __ldg(a.inv_n + n);
            double v = __dmul_rn(__dmul_rn((double)(tn - entf_tsum(h, tlo, thi)), in), a.out_scale);
            vu[i] = (unsigned char)(v >= 255.0 ? 255 : (int)__dadd_rn(v, 0.5));
        }
    }
    char *row = a.dst + (ptrdiff_t)y * a.dst_stride;
    if (F32) {
        float *o = (float *)row + x0;
        if (x0 + ENTF_K <= a.width && ((uintptr_t)o & 15) == 0) {
            ((float4 *)o)[0] = make_float4(vf[0], vf[1], vf[2], vf[3]);
            ((float4 *)o)[1] = make_float4(vf[4], vf[5], vf[6], vf[7]);
        } else
#pragma unroll
            for (int i = 0; i < ENTF_K; i++)
                if (x0 + i < a.width) o[i] = vf[i];
    } else {
        unsigned char *o = (unsigned char *)row + x0;
        if (x0 + ENTF_K <= a.width && ((uintptr_t)o & 7) == 0) {
            *(uint2 *)o = make_uint2(vu[0] | vu[1] << 8 | vu[2] << 16 | (unsigned)vu[3] << 24,
                                     vu[4] | vu[5] << 8 | vu[6] << 16 | (unsigned)vu[7] << 24);
        } else
#pragma unroll
            for (int i = 0; i < ENTF_K; i++)
                if (x0 + i < a.width) o[i] = vu[i];
    }
}

template <bool U16, int R, bool F32>
__global__ void __launch_bounds__(ENTF_THREADS) entf_kernel(ent_args a)
{
    __shared__ __align__(16) unsigned char tile[(ENTF_STRIP + 2 * ENTF_MAXR) * ENTF_ROW];
    __shared__ unsigned tlo[ENTF_TAB], thi[ENTF_TAB];
    __shared__ float tf[ENTF_TAB];
    __shared__ unsigned char lut[256];
    const int tid = threadIdx.x, bx0 = blockIdx.x * ENTF_BW, y0 = blockIdx.y * ENTF_STRIP;
    const int y1 = min(y0 + ENTF_STRIP, a.height), trows = y1 - y0 + 2 * R;
    const int nmax = (2 * R + 1) * (2 * R + 1);
    for (int n = tid; n < ENTF_TAB; n += blockDim.x) {
        long long t = n <= nmax ? a.t_n[n] : 0;
        tlo[n] = (unsigned)(t & 0xffffff);
        thi[n] = (unsigned)(t >> 24);
        tf[n] = (float)((double)t / ENT_FIX_SCALE);
    }
    if (!U16)
        for (int v = tid; v < 256; v += blockDim.x) {
            unsigned c = v < a.levels ? v : a.levels - 1;
            lut[v] = (unsigned char)(4u * (c * (unsigned)a.bins / (unsigned)a.levels));
        }
    __syncthreads();
    unsigned bad = 0;
    entf_load_tile<U16>(a, lut, tile, bx0, y0 - R, trows, bad);
    if (bad) {
        atomicOr(a.flag, 1u);
        atomicMax(a.flag + 1, bad);
    }
    __syncthreads();

    const int x0 = bx0 + ENTF_K * tid;
    if (x0 >= a.width) return;
    constexpr int NC = ENTF_K + 2 * R;
    unsigned vlo[NC], vhi[NC];
#pragma unroll
    for (int c = 0; c < NC; c++) vlo[c] = vhi[c] = 0;
    /* the thread's columns x0 - R .. x0 + K - 1 + R start at byte 12 + 4 - R of its 16-byte view */
    const unsigned char *col = tile + ENTF_PAD - 4 + ENTF_K * tid;
    for (int ty = 0; ty < trows; ty++) {
        const unsigned *win = (const unsigned *)(col + ty * ENTF_ROW);
        unsigned w[4] = {win[0], win[1], win[2], win[3]};
        const bool drop = ty > 2 * R;
        unsigned u[4] = {0, 0, 0, 0};
        if (drop) {
            const unsigned *wout = (const unsigned *)(col + (ty - 2 * R - 1) * ENTF_ROW);
            u[0] = wout[0], u[1] = wout[1], u[2] = wout[2], u[3] = wout[3];
        }
#pragma unroll
        for (int c = 0; c < NC; c++) {
            const int b = 4 - R + c;
            unsigned e = (w[b >> 2] >> (8 * (b & 3))) & 255u;
            unsigned add_lo = entf_shl(1u, e), add_hi = entf_shl(1u, e - 32u);
            unsigned f = drop ? (u[b >> 2] >> (8 * (b & 3))) & 255u : ENTF_EMPTY;
            unsigned sub_lo = entf_shl(1u, f), sub_hi = entf_shl(1u, f - 32u);
            vlo[c] = vlo[c] + add_lo - sub_lo;
            vhi[c] = vhi[c] + add_hi - sub_hi;
        }
        if (ty >= 2 * R) entf_store_row<R, F32>(a, y0 + ty - 2 * R, x0, vlo, vhi, tlo, thi, tf);
    }
}

extern "C" size_t ipk_entropy_gpu_scratch(int width, int height, const ipk_entropy_params *p)
{
    (void)width;
    (void)height;
    if (!ent_params_ok(p)) return IPK_ENTROPY_GPU_HEADER_BYTES;
    ent_plan pl = ent_make_plan(p);
    return IPK_ENTROPY_GPU_HEADER_BYTES + pl.table_bytes + pl.hist_bytes;
}

static int ent_images_ok(const ipk_img *src, const ipk_img *dst)
{
    if (!src || !dst || !src->data || !dst->data) return 0;
    if (src->channels != 1 || dst->channels != 1 || (src->dtype != IPK_U8 && src->dtype != IPK_U16)) return 0;
    if (dst->dtype != IPK_F32 && dst->dtype != IPK_U8) return 0;
    if (src->width != dst->width || src->height != dst->height || src->width < 0 || src->height < 0) return 0;
    return src->stride >= (ptrdiff_t)src->width * (src->dtype == IPK_U8 ? 1 : 2) &&
           dst->stride >= (ptrdiff_t)dst->width * (dst->dtype == IPK_U8 ? 1 : 4);
}

static int ent_strip_rows(int radius) { return radius <= 4 ? 64 : 8 * (2 * radius + 1); }

/* Scratch: header (flag words), T(n), 1/n, then global histograms if any. */
static void ent_fill_args(ent_args *a, const ipk_img *src, const ipk_img *dst, const ipk_entropy_params *p,
                          const ent_plan *pl, char *scratch)
{
    const int side = 2 * p->radius + 1, nmax = side * side;
    a->src = (const char *)src->data;
    a->dst = (char *)dst->data;
    a->src_stride = src->stride;
    a->dst_stride = dst->stride;
    a->width = src->width;
    a->height = src->height;
    a->radius = p->radius;
    a->levels = p->levels;
    a->bins = p->bins;
    a->strip = ent_strip_rows(p->radius);
    a->dst_u8 = dst->dtype == IPK_U8;
    double hmax = log((double)(p->bins < nmax ? p->bins : nmax));
    a->out_scale = a->dst_u8 ? (hmax > 0 ? 255.0 / hmax : 0.0) : p->log_scale;
    char *t = scratch + IPK_ENTROPY_GPU_HEADER_BYTES;
    a->flag = (unsigned *)(scratch + IPK_ENTROPY_GPU_FLAG_OFFSET);
    a->t_n = (const long long *)t;
    a->inv_n = (const double *)(t + ent_align16(((size_t)nmax + 1) * 8));
    a->hist = pl->threads ? NULL : (unsigned *)(t + pl->table_bytes);
    a->workers = pl->workers;
}

static bool entf_fits_args(const ent_args *a)
{
    return a->bins <= 16 && a->radius <= ENTF_MAXR && a->height <= 65535LL * ENTF_STRIP;
}

template <bool U16, bool F32>
static void entf_launch(const ent_args *a, cudaStream_t s)
{
    dim3 grid((a->width + ENTF_BW - 1) / ENTF_BW, (a->height + ENTF_STRIP - 1) / ENTF_STRIP);
    if (a->radius == 1) entf_kernel<U16, 1, F32><<<grid, ENTF_THREADS, 0, s>>>(*a);
    else if (a->radius == 2) entf_kernel<U16, 2, F32><<<grid, ENTF_THREADS, 0, s>>>(*a);
    else entf_kernel<U16, 3, F32><<<grid, ENTF_THREADS, 0, s>>>(*a);
}

static int ent_launch(const ent_args *a, const ent_plan *pl, bool u16, cudaStream_t s)
{
    if (entf_fits_args(a)) {
        if (a->dst_u8) u16 ? entf_launch<true, false>(a, s) : entf_launch<false, false>(a, s);
        else u16 ? entf_launch<true, true>(a, s) : entf_launch<false, true>(a, s);
        return cudaGetLastError() == cudaSuccess ? IPK_OK : IPK_ECUDA;
    }
    const void *fn = u16 ? (const void *)ent_kernel<true> : (const void *)ent_kernel<false>;
    if (pl->smem_bytes > 48 * 1024 &&
        cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)pl->smem_bytes) != cudaSuccess)
        return IPK_ECUDA;
    dim3 grid, block;
    if (pl->threads) {
        block = dim3(pl->threads);
        grid = dim3((a->width + pl->threads - 1) / pl->threads, (a->height + a->strip - 1) / a->strip);
    } else {
        block = dim3(ENT_GLOBAL_THREADS);
        grid = dim3((unsigned)(a->workers / ENT_GLOBAL_THREADS));
    }
    if (u16) ent_kernel<true><<<grid, block, pl->smem_bytes, s>>>(*a);
    else ent_kernel<false><<<grid, block, pl->smem_bytes, s>>>(*a);
    return cudaGetLastError() == cudaSuccess ? IPK_OK : IPK_ECUDA;
}

/* A small pageable copy (at most 60 KB, radius 30): cudaMemcpyAsync stages pageable memory
 * before it returns, so the host buffer may go at once; the copy is ordered on the stream. */
static int ent_upload_tables(const ent_args *a, const ent_plan *pl, const ipk_entropy_params *p, cudaStream_t s)
{
    const int side = 2 * p->radius + 1, nmax = side * side;
    char *host = (char *)calloc(1, pl->table_bytes);
    if (!host) return IPK_ENOMEM;
    ent_host_tables((long long *)host, (double *)(host + ((const char *)a->inv_n - (const char *)a->t_n)), nmax);
    cudaError_t e = cudaMemcpyAsync((void *)a->t_n, host, pl->table_bytes, cudaMemcpyHostToDevice, s);
    free(host);
    return e == cudaSuccess ? IPK_OK : IPK_ECUDA;
}

extern "C" int ipk_entropy_gpu(const ipk_img *src, const ipk_img *dst, const ipk_entropy_params *p,
                               void *scratch, size_t scratch_bytes, void *stream)
{
    if (!ent_params_ok(p) || !ent_images_ok(src, dst) || !scratch) return IPK_EINVAL;
    if (scratch_bytes < ipk_entropy_gpu_scratch(src->width, src->height, p)) return IPK_EINVAL;
    if (((uintptr_t)scratch & 15) != 0) return IPK_EINVAL;
    if ((long long)src->height > 65535LL * ent_strip_rows(p->radius)) return IPK_EINVAL;
    cudaStream_t s = (cudaStream_t)stream;
    ent_plan pl = ent_make_plan(p);
    ent_args a;
    ent_fill_args(&a, src, dst, p, &pl, (char *)scratch);
    if (cudaMemsetAsync(scratch, 0, IPK_ENTROPY_GPU_HEADER_BYTES, s) != cudaSuccess) return IPK_ECUDA;
    if (src->width == 0 || src->height == 0) return IPK_OK;
    if (a.hist && cudaMemsetAsync(a.hist, 0, pl.hist_bytes, s) != cudaSuccess) return IPK_ECUDA;
    int rc = ent_upload_tables(&a, &pl, p, s);
    if (rc != IPK_OK) return rc;
    return ent_launch(&a, &pl, src->dtype == IPK_U16, s);
}
