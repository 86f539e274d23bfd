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
#include "entropy_fast.cuh"
#include "entropy_scratch.cuh"
#include "entropy_tables.h"

#define ENT_MAX_RADIUS 30
#define ENT_SMEM_LIMIT (96 * 1024)
#define ENT_GLOBAL_HIST_BYTES ((size_t)64 << 20)
#define ENT_GLOBAL_THREADS 64

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

/* Fast path for bins <= 16 and radius <= 3 (the common 16-level case): kernels/common/
 * entropy_fast.cuh, from a tile of bin codes staged here (16-byte source loads, one code byte
 * per pixel, out-of-image pixels marked empty). */

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
        entf_put_codes(tile, ty, c, code);
    }
}

template <bool U16, int R, bool F32>
__global__ void __launch_bounds__(ENTF_THREADS) entf_kernel(ent_args a)
{
    __shared__ __align__(16) unsigned char tile[(ENTF_STRIP + 2 * ENTF_MAXR) * ENTF_ROW];
    __shared__ entf_tables tables;
    const int bx0 = blockIdx.x * ENTF_BW, y0 = blockIdx.y * ENTF_STRIP;
    const int y1 = min(y0 + ENTF_STRIP, a.height), trows = y1 - y0 + 2 * R;
    entf_fill_tables(a, R, !U16, &tables);
    __syncthreads();
    unsigned bad = 0;
    entf_load_tile<U16>(a, tables.lut, tile, bx0, y0 - R, trows, bad);
    if (bad) {
        atomicOr(a.flag, 1u);
        atomicMax(a.flag + 1, bad);
    }
    __syncthreads();
    entf_walk_tile<R, F32>(a, tile, &tables, bx0, y0, trows);
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
    a->out_scale = ipk_entropy_out_scale(p->radius, p->bins, a->dst_u8, p->log_scale);
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
    ipk_entropy_host_tables((int64_t *)host, (double *)(host + ((const char *)a->inv_n - (const char *)a->t_n)), nmax);
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
