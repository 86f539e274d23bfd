/* Median filter on the GPU, three paths, each in an issue-14 version (IPK_GPU_NET, what AUTO
 * runs) and the version before it (IPK_GPU_TILE):
 * - u8 (and u16 in the new version), 1 channel, radius 1 to 3, replicate/reflect101/zero:
 *   16 pixels by a few rows per thread, 2 pixels a word in 16-bit lanes; columns sorted once
 *   per word (shared by the 2R+1 horizontal neighbours, and the 2R common rows by two
 *   vertical ones); then either (old) the rank rows pruned to the entries that can be the
 *   median and a forgetful selection, or (new, median_sep.cuh) the sorted columns merged in a
 *   tree shared by neighbouring outputs; u8 3x3 also in the vec median (IPK_GPU_VEC,
 *   median_vec_block.cuh: every input row loaded first, sorted columns shared by two
 *   neighbouring outputs), which AUTO takes where MEDIAN_VEC_AUTO says;
 * - u8, any channel count, radius and border: each thread walks one column down with its
 *   window's coarse (16) and fine (256) histograms in shared memory (Huang), so a pixel costs
 *   O(radius) updates plus at most 32 bin reads, never O(radius^2); the issue-14 version
 *   (median_huang.cuh) updates them by shared-memory atomics and reads 8 words per level;
 * - other u16, and f32: a radix selection of the k-th smallest key over the window per pixel
 *   (correct for every case, cost grows with the window: the slow fallback). */
#include <cuda_runtime.h>
#include <stdint.h>
#include "ipk_bench.h"
#include "border.h"
#include "median_sep.cuh"
#include "median_huang.cuh"
#include "median_sep_warp.cuh"
#include "median_vec_block.cuh"

/* 1: plain calls take the vec median (median_vec_block.cuh) for 1-channel u8 3x3, not shrink;
 * 0: the packed kernel as before (IPK_GPU_VEC still runs it). On: 0.067 ms against the packed
 * kernel's 0.159 on the H100 at 8192x8192 (bench/RESULTS.md, 2026-11-25). */
#define MEDIAN_VEC_AUTO 1

#define MED_MAX_RADIUS 25
#define MED_MAX_GRID_Y 65535

/* Order-preserving unsigned keys: floats map so that unsigned order is numeric order. */
__device__ __forceinline__ unsigned med_key(unsigned char v) { return v; }
__device__ __forceinline__ unsigned med_key(unsigned short v) { return v; }
__device__ __forceinline__ unsigned med_key(float v)
{
    unsigned u = __float_as_uint(v);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

template <typename T> __device__ __forceinline__ T med_from_key(unsigned k) { return (T)k; }
template <> __device__ __forceinline__ float med_from_key<float>(unsigned k)
{
    return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}

/* Counts the window's keys whose bits above `bit` equal prefix's and whose `bit` is 0. */
template <typename T>
__device__ int med_count_prefix(const med_args &a, int x, int ch, int y, unsigned prefix, int bit)
{
    const int r = a.radius;
    const unsigned want = prefix >> bit, zero_key = med_key((T)0);
    int count = 0;
    for (int dy = -r; dy <= r; dy++) {
        int yy = ipk_border_index(y + dy, a.height, a.border);
        if (yy < 0 && a.border == IPK_SHRINK) continue;
        const T *row = yy >= 0 ? (const T *)(a.src + (ptrdiff_t)yy * a.src_stride) : NULL;
        for (int dx = -r; dx <= r; dx++) {
            int xx = ipk_border_index(x + dx, a.width, a.border);
            if (xx < 0 && a.border == IPK_SHRINK) continue;
            unsigned key = (row && xx >= 0) ? med_key(row[(ptrdiff_t)xx * a.channels + ch]) : zero_key;
            count += (key >> bit) == want;
        }
    }
    return count;
}

/* One thread per value (x, channel); rows in a grid-stride loop. */
template <typename T, int BITS>
__global__ void med_generic(med_args a)
{
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)a.width * a.channels) return;
    const int x = (int)(idx / a.channels), ch = (int)(idx % a.channels);
    for (int y = blockIdx.y; y < a.height; y += gridDim.y) {
        int k = (med_window_n(a, x, y) - 1) / 2;
        unsigned prefix = 0;
        for (int bit = BITS - 1; bit >= 0; bit--) {
            int zeros = med_count_prefix<T>(a, x, ch, y, prefix, bit);
            if (k >= zeros) {
                k -= zeros;
                prefix |= 1u << bit;
            }
        }
        T *out = (T *)(a.dst + (ptrdiff_t)y * a.dst_stride);
        out[(ptrdiff_t)x * a.channels + ch] = med_from_key<T>(prefix);
    }
}

/* Adds (d = 1) or removes (d = -1) logical window row ly to one thread's histograms. */
__device__ __forceinline__ void med_hist_row(const med_args &a, unsigned short *fine, unsigned short *coarse,
                                             int x, int ch, int ly, int d)
{
    const int r = a.radius, nt = MED_HUANG_THREADS;
    int yy = ipk_border_index(ly, a.height, a.border);
    if (yy < 0) {
        if (a.border == IPK_SHRINK) return;
        fine[0] += d * (2 * r + 1);     /* zero border: a whole row of zeros */
        coarse[0] += d * (2 * r + 1);
        return;
    }
    const unsigned char *row = (const unsigned char *)(a.src + (ptrdiff_t)yy * a.src_stride);
    for (int dx = -r; dx <= r; dx++) {
        int xx = ipk_border_index(x + dx, a.width, a.border);
        if (xx < 0 && a.border == IPK_SHRINK) continue;
        unsigned v = xx >= 0 ? __ldg(row + (ptrdiff_t)xx * a.channels + ch) : 0u;
        fine[v * nt] += d;
        coarse[(v >> 4) * nt] += d;
    }
}

/* The k-th smallest (0-based) value in the histograms: coarse bins first, then 16 fine ones. */
__device__ __forceinline__ unsigned med_hist_select(const unsigned short *fine, const unsigned short *coarse, int k)
{
    const int nt = MED_HUANG_THREADS;
    int acc = 0, cb = 0;
    while (acc + coarse[cb * nt] <= k) acc += coarse[cb++ * nt];
    unsigned v = cb * 16;
    while (acc + fine[v * nt] <= k) acc += fine[v++ * nt];
    return v;
}

/* Histograms laid out [bin][thread]: each thread touches only its own column of them. */
__global__ void __launch_bounds__(MED_HUANG_THREADS) med_huang_u8(med_args a, int strip)
{
    __shared__ unsigned short fine[256 * MED_HUANG_THREADS];
    __shared__ unsigned short coarse[16 * MED_HUANG_THREADS];
    const int tid = threadIdx.x, nt = MED_HUANG_THREADS;
    for (int i = tid; i < 256 * nt / 2; i += nt) ((unsigned *)fine)[i] = 0;
    for (int i = tid; i < 16 * nt / 2; i += nt) ((unsigned *)coarse)[i] = 0;
    __syncthreads();

    long long col = (long long)blockIdx.x * nt + tid;
    if (col >= (long long)a.width * a.channels) return;
    const int x = (int)(col / a.channels), ch = (int)(col % a.channels), r = a.radius;
    const int y0 = blockIdx.y * strip, y1 = min(y0 + strip, a.height);
    unsigned short *f = fine + tid, *c = coarse + tid;
    for (int dy = -r; dy <= r; dy++) med_hist_row(a, f, c, x, ch, y0 + dy, 1);
    for (int y = y0; y < y1; y++) {
        unsigned v = med_hist_select(f, c, (med_window_n(a, x, y) - 1) / 2);
        unsigned char *out = (unsigned char *)(a.dst + (ptrdiff_t)y * a.dst_stride);
        out[(ptrdiff_t)x * a.channels + ch] = (unsigned char)v;
        if (y + 1 == y1) break;
        med_hist_row(a, f, c, x, ch, y - r, -1);
        med_hist_row(a, f, c, x, ch, y + r + 1, 1);
    }
}

/* Shared-atomic Huang (median_huang.cuh): histograms laid out [word][thread]. */
__global__ void __launch_bounds__(MED_HUANG_THREADS) med_huang2_u8(med_args a, int strip)
{
    __shared__ unsigned fine[128 * MED_HUANG_THREADS];
    __shared__ unsigned coarse[8 * MED_HUANG_THREADS];
    const int tid = threadIdx.x, nt = MED_HUANG_THREADS;
    for (int i = tid; i < 128 * nt; i += nt) fine[i] = 0;
    for (int i = tid; i < 8 * nt; i += nt) coarse[i] = 0;
    __syncthreads();

    long long col = (long long)blockIdx.x * nt + tid;
    if (col >= (long long)a.width * a.channels) return;
    const int y0 = blockIdx.y * strip;
    med_huang2_column(a, fine + tid, coarse + tid, (int)(col / a.channels), (int)(col % a.channels), y0,
                      min(y0 + strip, a.height));
}

__device__ __forceinline__ unsigned med_byte(const med_args &a, const unsigned char *row, int x)
{
    int xx = ipk_border_index(x, a.width, a.border);
    return xx >= 0 ? __ldg(row + xx) : 0u;
}

/* Logical row ly around columns gx..gx+15; out-of-image pixels of the zero border read 0. */
template <int R>
__device__ __forceinline__ void med_pk_load(const med_args &a, int gx, int ly, unsigned *w)
{
    int yy = ipk_border_index(ly, a.height, a.border);
    if (yy < 0) {
#pragma unroll
        for (int i = 0; i < med_pk<R>::NW; i++) w[i] = 0;
        return;
    }
    const unsigned char *row = (const unsigned char *)(a.src + (ptrdiff_t)yy * a.src_stride);
    unsigned l[3], r[3];   /* pixels gx-1, gx-2, gx-3 and gx+16, gx+17, gx+18 */
    if (gx >= 4 && gx + 20 <= a.width && ((uintptr_t)(row + gx) & 15) == 0) {
        uint4 c = __ldg((const uint4 *)(row + gx));
        unsigned q[4] = {c.x, c.y, c.z, c.w};
#pragma unroll
        for (int i = 0; i < 4; i++) {
            w[2 * i] = __byte_perm(q[i], 0, 0x4140);
            w[2 * i + 1] = __byte_perm(q[i], 0, 0x4342);
        }
        unsigned left = __ldg((const unsigned *)(row + gx - 4)), right = __ldg((const unsigned *)(row + gx + 16));
        l[0] = left >> 24, l[1] = (left >> 16) & 0xffu, l[2] = (left >> 8) & 0xffu;
        r[0] = right & 0xffu, r[1] = (right >> 8) & 0xffu, r[2] = (right >> 16) & 0xffu;
    } else {
#pragma unroll
        for (int i = 0; i < 8; i++) w[i] = med_lanes(med_byte(a, row, gx + 2 * i), med_byte(a, row, gx + 2 * i + 1));
#pragma unroll
        for (int i = 0; i < 3; i++) {
            l[i] = i < R ? med_byte(a, row, gx - 1 - i) : 0u;
            r[i] = i < R ? med_byte(a, row, gx + 16 + i) : 0u;
        }
    }
    med_pk_edges<R>(l, r, w);
}

/* Pixels gx..gx+15 of output row y from q[0..3]: one 16-byte store where it can. */
__device__ __forceinline__ void med_store16(const med_args &a, int gx, int y, const unsigned *q)
{
    unsigned char *row = (unsigned char *)(a.dst + (ptrdiff_t)y * a.dst_stride);
    if (gx + 16 <= a.width && ((uintptr_t)(row + gx) & 15) == 0) {
        *(uint4 *)(row + gx) = make_uint4(q[0], q[1], q[2], q[3]);
        return;
    }
    for (int j = 0; j < 16 && gx + j < a.width; j++) row[gx + j] = (unsigned char)(q[j >> 2] >> (8 * (j & 3)));
}

__device__ __forceinline__ void med_pk_store(const med_args &a, int gx, int y, const unsigned *v)
{
    unsigned q[4];
#pragma unroll
    for (int i = 0; i < 4; i++) q[i] = __byte_perm(v[2 * i], v[2 * i + 1], 0x6420);
    med_store16(a, gx, y, q);
}

/* Logical row ly around columns gx-4..gx+19 as the separable kernel's words (median_sep.cuh). */
template <int R>
__device__ __forceinline__ void med_sp_load(const med_args &a, int gx, int ly, unsigned *w)
{
    int yy = ipk_border_index(ly, a.height, a.border);
    if (yy < 0) {
#pragma unroll
        for (int i = 0; i < med_sp<R>::NW; i++) w[i] = 0;
        return;
    }
    const unsigned char *row = (const unsigned char *)(a.src + (ptrdiff_t)yy * a.src_stride);
    unsigned q[4], left, right;
    if (gx >= 4 && gx + 20 <= a.width && ((uintptr_t)(row + gx) & 15) == 0) {
        uint4 c = __ldg((const uint4 *)(row + gx));
        q[0] = c.x, q[1] = c.y, q[2] = c.z, q[3] = c.w;
        left = __ldg((const unsigned *)(row + gx - 4));
        right = __ldg((const unsigned *)(row + gx + 16));
    } else {
        unsigned v[6] = {0, 0, 0, 0, 0, 0};   /* pixels gx-4..gx+19, 4 a word */
#pragma unroll
        for (int i = 0; i < 24; i++) v[i >> 2] |= med_byte(a, row, gx - 4 + i) << (8 * (i & 3));
        left = v[0], q[0] = v[1], q[1] = v[2], q[2] = v[3], q[3] = v[4], right = v[5];
    }
    med_sp_pack<R>(q, left, right, w);
}

__device__ __forceinline__ unsigned med_px16(const med_args &a, const unsigned short *row, int x)
{
    int xx = ipk_border_index(x, a.width, a.border);
    return xx >= 0 ? __ldg(row + xx) : 0u;
}

/* As med_sp_load for 16-bit pixels: 2 16-byte loads and 2 8-byte ones where it can. */
template <int R>
__device__ __forceinline__ void med_sp_load16(const med_args &a, int gx, int ly, unsigned *w)
{
    int yy = ipk_border_index(ly, a.height, a.border);
    if (yy < 0) {
#pragma unroll
        for (int i = 0; i < med_sp<R>::NW; i++) w[i] = 0;
        return;
    }
    const unsigned short *row = (const unsigned short *)(a.src + (ptrdiff_t)yy * a.src_stride);
    unsigned v[12];   /* pixels gx-4..gx+19, 2 a word */
    if (gx >= 4 && gx + 20 <= a.width && ((uintptr_t)(row + gx) & 15) == 0) {
        uint4 c0 = __ldg((const uint4 *)(row + gx)), c1 = __ldg((const uint4 *)(row + gx + 8));
        uint2 l = __ldg((const uint2 *)(row + gx - 4)), r = __ldg((const uint2 *)(row + gx + 16));
        v[0] = l.x, v[1] = l.y, v[2] = c0.x, v[3] = c0.y, v[4] = c0.z, v[5] = c0.w;
        v[6] = c1.x, v[7] = c1.y, v[8] = c1.z, v[9] = c1.w, v[10] = r.x, v[11] = r.y;
    } else {
#pragma unroll
        for (int i = 0; i < 12; i++) v[i] = med_lanes(med_px16(a, row, gx - 4 + 2 * i), med_px16(a, row, gx - 3 + 2 * i));
    }
    med_sp_pack16<R>(v + 2, v, v + 10, w);
}

/* 16-bit pixels gx..gx+15 of output row y from q[0..7]: two 16-byte stores where it can. */
__device__ __forceinline__ void med_store32(const med_args &a, int gx, int y, const unsigned *q)
{
    unsigned short *row = (unsigned short *)(a.dst + (ptrdiff_t)y * a.dst_stride);
    if (gx + 16 <= a.width && ((uintptr_t)(row + gx) & 15) == 0) {
        *(uint4 *)(row + gx) = make_uint4(q[0], q[1], q[2], q[3]);
        *(uint4 *)(row + gx + 8) = make_uint4(q[4], q[5], q[6], q[7]);
        return;
    }
    for (int j = 0; j < 16 && gx + j < a.width; j++) row[gx + j] = (unsigned short)med_half(q, j);
}

/* Rows y0..y0+ROWS-1 in pairs: the 2R rows two outputs share are sorted once per word, then
 * each output's own extra row is inserted. */
template <int R>
__global__ void __launch_bounds__(128) med_packed_u8(med_args a)
{
    typedef med_pk<R> P;
    const int gx = 16 * (blockIdx.x * blockDim.x + threadIdx.x);
    const int y0 = (blockIdx.y * blockDim.y + threadIdx.y) * P::ROWS;
    if (gx >= a.width || y0 >= a.height) return;
    unsigned rows[P::ROWS + 2 * R][P::NW];
#pragma unroll
    for (int j = 0; j < P::ROWS + 2 * R; j++) med_pk_load<R>(a, gx, y0 - R + j, rows[j]);
#pragma unroll
    for (int p = 0; p < P::ROWS; p += 2) {
        unsigned top[P::S][P::NW], bottom[P::S][P::NW];
#pragma unroll
        for (int i = 0; i < P::NW; i++) {
            unsigned shared[2 * R], sa[P::S], sb[P::S];
#pragma unroll
            for (int j = 0; j < 2 * R; j++) shared[j] = rows[p + 1 + j][i];
            med_sort_n<2 * R>(shared);
            med_insert<2 * R>(shared, rows[p][i], sa);
            med_insert<2 * R>(shared, rows[p + 2 * R + 1][i], sb);
#pragma unroll
            for (int k = 0; k < P::S; k++) {
                top[k][i] = sa[k];
                bottom[k][i] = sb[k];
            }
        }
        unsigned out[8];
        med_rank_rows<R>(top, out);
        if (y0 + p < a.height) med_pk_store(a, gx, y0 + p, out);
        med_rank_rows<R>(bottom, out);
        if (y0 + p + 1 < a.height) med_pk_store(a, gx, y0 + p + 1, out);
    }
}

/* Output row y (if in the image) from the split layout's 8 words. */
template <int WIDE>
__device__ __forceinline__ void med_sep_store(const med_args &a, int gx, int y, const unsigned *words)
{
    unsigned q[8];
    if (y >= a.height) return;
    if (WIDE) {
        med_sp_unpack16(words, q);
        med_store32(a, gx, y, q);
    } else {
        med_sp_unpack(words, q);
        med_store16(a, gx, y, q);
    }
}

/* Separable-network path: ROWS rows (even) of 16 pixels a thread, u8 (WIDE = 0) or u16
 * (WIDE = 1), all rows loaded first so that their loads overlap; see median_sep.cuh for the
 * networks and the word layout, which is the same for both. */
template <int R, int ROWS, int WIDE>
__global__ void __launch_bounds__(128) med_sep_kernel(med_args a)
{
    typedef med_sp<R> P;
    const int gx = 16 * (blockIdx.x * blockDim.x + threadIdx.x);
    const int y0 = (blockIdx.y * blockDim.y + threadIdx.y) * ROWS;
    if (gx >= a.width || y0 >= a.height) return;
    unsigned rows[ROWS + 2 * R][P::NW];
#pragma unroll
    for (int j = 0; j < ROWS + 2 * R; j++) {
        if (WIDE) med_sp_load16<R>(a, gx, y0 - R + j, rows[j]);
        else med_sp_load<R>(a, gx, y0 - R + j, rows[j]);
    }
#pragma unroll
    for (int p = 0; p < ROWS; p += 2) {
        unsigned top[8], bottom[8];
        med_sp_pair<R>(rows + p, top, bottom);
        med_sep_store<WIDE>(a, gx, y0 + p, top);
        med_sep_store<WIDE>(a, gx, y0 + p + 1, bottom);
    }
}

extern "C" size_t ipk_median_gpu_scratch(int width, int height, int channels, ipk_dtype dtype, int radius)
{
    (void)width;
    (void)height;
    (void)channels;
    (void)dtype;
    (void)radius;
    return 0;
}

static int med_elem_bytes(ipk_dtype t) { return t == IPK_U8 ? 1 : t == IPK_U16 ? 2 : t == IPK_F32 ? 4 : 0; }

static int med_image_ok(const ipk_img *im)
{
    int eb = med_elem_bytes(im->dtype);
    if (!eb || im->channels < 1 || im->channels > 4 || im->width < 0 || im->height < 0) return 0;
    if (im->stride < (ptrdiff_t)im->width * im->channels * eb) return 0;
    if ((im->width > 0 && im->height > 0 && !im->data) || (uintptr_t)im->data % eb || im->stride % eb) return 0;
    return 1;
}

static int med_args_ok(const ipk_img *src, const ipk_img *dst, int radius, ipk_border border)
{
    if (!src || !dst || !med_image_ok(src) || !med_image_ok(dst)) return 0;
    if (src->width != dst->width || src->height != dst->height || src->channels != dst->channels ||
        src->dtype != dst->dtype)
        return 0;
    return radius >= 0 && radius <= MED_MAX_RADIUS && border >= IPK_REPLICATE && border <= IPK_SHRINK;
}

static void med_launch_generic(const med_args *a, ipk_dtype t, cudaStream_t s)
{
    long long cols = (long long)a->width * a->channels;
    dim3 block(128), grid((unsigned)((cols + 127) / 128), a->height < MED_MAX_GRID_Y ? a->height : MED_MAX_GRID_Y);
    if (t == IPK_U16) med_generic<unsigned short, 16><<<grid, block, 0, s>>>(*a);
    else med_generic<float, 32><<<grid, block, 0, s>>>(*a);
}

static int med_launch_huang(const med_args *a, int shared_atomics, cudaStream_t s)
{
    int strip = med_huang_strip(a->radius);
    long long cols = (long long)a->width * a->channels, strips = (a->height + strip - 1) / strip;
    if (strips > MED_MAX_GRID_Y) return IPK_EINVAL;
    dim3 grid((unsigned)((cols + MED_HUANG_THREADS - 1) / MED_HUANG_THREADS), (unsigned)strips);
    if (shared_atomics) med_huang2_u8<<<grid, MED_HUANG_THREADS, 0, s>>>(*a, strip);
    else med_huang_u8<<<grid, MED_HUANG_THREADS, 0, s>>>(*a, strip);
    return IPK_OK;
}

template <int R>
static int med_launch_packed_r(const med_args *a, cudaStream_t s)
{
    const int rows = med_pk<R>::ROWS;
    dim3 block(32, 4);
    long long groups = (a->width + 15) / 16, bands = (a->height + rows - 1) / rows;
    long long gy = (bands + block.y - 1) / block.y;
    if (gy > MED_MAX_GRID_Y) return IPK_EINVAL;
    dim3 grid((unsigned)((groups + block.x - 1) / block.x), (unsigned)gy);
    med_packed_u8<R><<<grid, block, 0, s>>>(*a);
    return IPK_OK;
}

/* The packed networks: radius 1 to 3, 16 pixels by a few rows per thread. */
static int med_launch_packed(const med_args *a, cudaStream_t s)
{
    if (a->radius == 1) return med_launch_packed_r<1>(a, s);
    if (a->radius == 2) return med_launch_packed_r<2>(a, s);
    return med_launch_packed_r<3>(a, s);
}

/* Separable networks: 8 rows a thread at radius 1 (memory-bound: fewer halo rows per output
 * row), 2 at radius 2 and 3 (bound by min/max count: registers for the merges). */
template <int R, int ROWS>
static int med_launch_sep_r(const med_args *a, int wide, cudaStream_t s)
{
    dim3 block(32, 4);
    long long groups = (a->width + 15) / 16, bands = (a->height + ROWS - 1) / ROWS;
    long long gy = (bands + block.y - 1) / block.y;
    if (gy > MED_MAX_GRID_Y) return IPK_EINVAL;
    dim3 grid((unsigned)((groups + block.x - 1) / block.x), (unsigned)gy);
    if (wide) med_sep_kernel<R, ROWS, 1><<<grid, block, 0, s>>>(*a);
    else med_sep_kernel<R, ROWS, 0><<<grid, block, 0, s>>>(*a);
    return IPK_OK;
}

/* u8 5x5 and 7x7 run the 8x2 shuffle tiles of median_sep_warp.cu, timed fastest on the H100
 * (2026-11-25): 0.203 ms against 0.472 at 5x5, 0.442 against 1.098 at 7x7; 16-bit images keep
 * med_sep_kernel. */
static int med_launch_sep(const med_args *a, int wide, cudaStream_t s)
{
    if (a->radius == 1) return med_launch_sep_r<1, 8>(a, wide, s);
    if ((a->radius == 2 || a->radius == 3) && !wide) return med_sepx_run(a, s);
    if (a->radius == 2) return med_launch_sep_r<2, 2>(a, wide, s);
    return med_launch_sep_r<3, 2>(a, wide, s);
}

/* 1 channel, radius 1 to 3, not shrink: the packed network kernels (the old one: u8 only). */
static int med_network_case(const ipk_img *src, int radius, ipk_border border)
{
    return src->channels == 1 && radius >= 1 && radius <= 3 && border != IPK_SHRINK;
}

/* What AUTO runs: the issue-14 kernels, except for 8-bit 3x3, where the previous packed kernel
 * measured faster on the H100 (0.158 against 0.259 ms at 8192x8192, bench/RESULTS.md). */
static int med_auto_is_net(const ipk_img *src, int radius, ipk_border border)
{
    (void)border;
    return !(src->dtype == IPK_U8 && radius == 1);
}

/* The vec median's cases: 1-channel u8, radius 1, not shrink. */
static int med_vec_case(const ipk_img *src, int radius, ipk_border border)
{
    return src->dtype == IPK_U8 && src->channels == 1 && radius == 1 && border != IPK_SHRINK;
}

/* The vec median's instantiations, all without spills at their register bound (sm_90, CUDA 13.0;
 * blocks of 128 threads): rows a thread, blocks per SM, output rows paired. IPK_GPU_VEC runs the
 * first; the others are there for the bench to compare (ipk_median_gpu_vec_variant). */
static int med_vec_launch(const ipk_img *src, const ipk_img *dst, ipk_border border, int rows, int min_blocks,
                          int paired, cudaStream_t s)
{
    const int b = (int)border;
    if (rows == 2 && min_blocks == 8 && !paired) return medvec_launch<2, 8, false>(src, dst, b, s);     /* 64 regs */
    if (rows == 2 && min_blocks == 10 && !paired) return medvec_launch<2, 10, false>(src, dst, b, s);   /* 48 */
    if (rows == 4 && min_blocks == 7 && !paired) return medvec_launch<4, 7, false>(src, dst, b, s);     /* 72 */
    if (rows == 6 && min_blocks == 6 && !paired) return medvec_launch<6, 6, false>(src, dst, b, s);     /* 80 */
    if (rows == 2 && min_blocks == 6 && paired) return medvec_launch<2, 6, true>(src, dst, b, s);       /* 79 */
    return IPK_EINVAL;
}

extern "C" int ipk_median_gpu_vec_variant(const ipk_img *src, const ipk_img *dst, ipk_border border, int rows,
                                          int blocks_per_sm, int paired, void *stream)
{
    if (!med_args_ok(src, dst, 1, border) || !med_vec_case(src, 1, border)) return IPK_EINVAL;
    if (src->width == 0 || src->height == 0) return IPK_OK;
    return med_vec_launch(src, dst, border, rows, blocks_per_sm, paired, (cudaStream_t)stream);
}

extern "C" int ipk_median_gpu_path(const ipk_img *src, const ipk_img *dst, int radius, ipk_border border,
                                   void *scratch, size_t scratch_bytes, void *stream, ipk_gpu_path path)
{
    (void)scratch;
    (void)scratch_bytes;
    if (!med_args_ok(src, dst, radius, border)) return IPK_EINVAL;
    if (path != IPK_GPU_AUTO && path != IPK_GPU_TILE && path != IPK_GPU_NET && path != IPK_GPU_VEC) return IPK_EINVAL;
    if (path == IPK_GPU_VEC && !med_vec_case(src, radius, border)) return IPK_EINVAL;
    if (src->width == 0 || src->height == 0) return IPK_OK;
    if (path == IPK_GPU_VEC || (path == IPK_GPU_AUTO && MEDIAN_VEC_AUTO && med_vec_case(src, radius, border))) {
        const int rc = med_vec_launch(src, dst, border, MEDVEC_ROWS, MEDVEC_MINB, MEDVEC_PAIRED, (cudaStream_t)stream);
        if (path == IPK_GPU_VEC || rc != IPK_ERANGE) return rc;   /* too tall for AUTO: the packed kernel */
    }
    med_args a = {(const char *)src->data, (char *)dst->data, src->stride, dst->stride,
                  src->width, src->height, src->channels, radius, (int)border};
    cudaStream_t s = (cudaStream_t)stream;
    const int newer = path == IPK_GPU_NET || (path == IPK_GPU_AUTO && med_auto_is_net(src, radius, border));
    const int network = med_network_case(src, radius, border);
    int rc;
    if (network && newer && src->dtype != IPK_F32) rc = med_launch_sep(&a, src->dtype == IPK_U16, s);
    else if (network && src->dtype == IPK_U8) rc = med_launch_packed(&a, s);
    else if (src->dtype == IPK_U8) rc = med_launch_huang(&a, newer, s);
    else {
        med_launch_generic(&a, src->dtype, s);
        rc = IPK_OK;
    }
    if (rc != IPK_OK) return rc;
    return cudaGetLastError() == cudaSuccess ? IPK_OK : IPK_ECUDA;
}

extern "C" int ipk_median_gpu(const ipk_img *src, const ipk_img *dst, int radius, ipk_border border,
                              void *scratch, size_t scratch_bytes, void *stream)
{
    return ipk_median_gpu_path(src, dst, radius, border, scratch, scratch_bytes, stream, IPK_GPU_AUTO);
}
