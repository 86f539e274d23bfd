/* Median filter on the GPU, three paths:
 * - u8, 1 channel, radius 1 or 2, replicate/reflect101/zero: 4 packed pixels per thread;
 *   3x3 by column sorts (max of lows / median of middles / min of highs), 5x5 by forgetful
 *   selection over the 25 shifted words;
 * - u8, any channel count, radius and border: each thread walks one column down with its
 *   window's coarse (16) and fine (256) histograms in shared memory (Huang), so a pixel costs
 *   O(radius) updates plus at most 32 bin reads, never O(radius^2);
 * - u16 and f32: a radix selection of the k-th smallest key over the window per pixel
 *   (correct for every case, cost grows with the window: the slow fallback). */
#include <cuda_runtime.h>
#include <stdint.h>
#include "ipk.h"
#include "border.h"
#include "median_packed.cuh"

#define MED_MAX_RADIUS 25
#define MED_HUANG_THREADS 64
#define MED_P3_ROWS 8
#define MED_P5_ROWS 4
#define MED_MAX_GRID_Y 65535

typedef struct {
    const char *src;
    char *dst;
    ptrdiff_t src_stride, dst_stride;
    int width, height, channels, radius, border;
} med_args;

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

/* Window size: full (2r+1)^2 except for shrink, which counts only in-image pixels. */
__device__ __forceinline__ int med_window_n(const med_args &a, int x, int y)
{
    const int r = a.radius, side = 2 * r + 1;
    if (a.border != IPK_SHRINK) return side * side;
    int rows = min(y + r, a.height - 1) - max(y - r, 0) + 1;
    int cols = min(x + r, a.width - 1) - max(x - r, 0) + 1;
    return rows * cols;
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

/* Loads columns gx..gx+3 of logical row ly packed in *centre and columns gx-1, gx+4 in
 * bytes 0 and 1 of *edges; out-of-image pixels of the zero border read 0. */
__device__ __forceinline__ void med_p3_load(const med_args &a, int gx, int ly, unsigned *centre, unsigned *edges)
{
    int yy = ipk_border_index(ly, a.height, a.border);
    if (yy < 0) {
        *centre = *edges = 0;
        return;
    }
    const unsigned char *row = (const unsigned char *)(a.src + (ptrdiff_t)yy * a.src_stride);
    if (gx >= 1 && gx + 4 < a.width && ((uintptr_t)(row + gx) & 3) == 0) {
        *centre = __ldg((const unsigned *)(row + gx));
        *edges = __ldg(row + gx - 1) | ((unsigned)__ldg(row + gx + 4) << 8);
        return;
    }
    unsigned px[6];
    for (int j = 0; j < 6; j++) {
        int xx = ipk_border_index(gx - 1 + j, a.width, a.border);
        px[j] = xx >= 0 ? __ldg(row + xx) : 0u;
    }
    *centre = px[1] | (px[2] << 8) | (px[3] << 16) | (px[4] << 24);
    *edges = px[0] | (px[5] << 8);
}

__device__ __forceinline__ void med_p3_store(const med_args &a, int gx, int y, unsigned v)
{
    unsigned char *row = (unsigned char *)(a.dst + (ptrdiff_t)y * a.dst_stride);
    if (gx + 3 < a.width && ((uintptr_t)(row + gx) & 3) == 0) {
        *(unsigned *)(row + gx) = v;
        return;
    }
    for (int j = 0; j < 4 && gx + j < a.width; j++) row[gx + j] = (unsigned char)(v >> (8 * j));
}

/* Median of 9 from three sorted columns: med3(max of lows, med3 of middles, min of highs). */
__device__ __forceinline__ unsigned med_p3_median(unsigned c0, unsigned c1, unsigned c2,
                                                  unsigned e0, unsigned e1, unsigned e2)
{
    med_sort3(c0, c1, c2);
    med_sort3(e0, e1, e2);
    unsigned lo = __vmaxu4(__vmaxu4(med_shift_left(c0, e0), c0), med_shift_right(c0, e0 >> 8));
    unsigned mid = med_med3(med_shift_left(c1, e1), c1, med_shift_right(c1, e1 >> 8));
    unsigned hi = __vminu4(__vminu4(med_shift_left(c2, e2), c2), med_shift_right(c2, e2 >> 8));
    return med_med3(lo, mid, hi);
}

/* Each thread: 4 adjacent pixels of MED_P3_ROWS rows, three input rows in registers. */
__global__ void med_3x3_u8(med_args a)
{
    const int gx = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
    const int y0 = (blockIdx.y * blockDim.y + threadIdx.y) * MED_P3_ROWS;
    if (gx >= a.width || y0 >= a.height) return;
    unsigned c0, c1, c2, e0, e1, e2;
    med_p3_load(a, gx, y0 - 1, &c0, &e0);
    med_p3_load(a, gx, y0, &c1, &e1);
    for (int i = 0; i < MED_P3_ROWS && y0 + i < a.height; i++) {
        med_p3_load(a, gx, y0 + i + 1, &c2, &e2);
        med_p3_store(a, gx, y0 + i, med_p3_median(c0, c1, c2, e0, e1, e2));
        c0 = c1;
        c1 = c2;
        e0 = e1;
        e1 = e2;
    }
}

/* Loads columns gx..gx+3 of logical row ly packed in *centre and columns gx-2, gx-1, gx+4,
 * gx+5 in bytes 0..3 of *edges; out-of-image pixels of the zero border read 0. */
__device__ __forceinline__ void med_p5_load(const med_args &a, int gx, int ly, unsigned *centre, unsigned *edges)
{
    int yy = ipk_border_index(ly, a.height, a.border);
    if (yy < 0) {
        *centre = *edges = 0;
        return;
    }
    const unsigned char *row = (const unsigned char *)(a.src + (ptrdiff_t)yy * a.src_stride);
    if (gx >= 2 && gx + 5 < a.width && ((uintptr_t)(row + gx) & 3) == 0) {
        *centre = __ldg((const unsigned *)(row + gx));
        *edges = __ldg(row + gx - 2) | ((unsigned)__ldg(row + gx - 1) << 8) | ((unsigned)__ldg(row + gx + 4) << 16) |
                 ((unsigned)__ldg(row + gx + 5) << 24);
        return;
    }
    unsigned px[8];
    for (int j = 0; j < 8; j++) {
        int xx = ipk_border_index(gx - 2 + j, a.width, a.border);
        px[j] = xx >= 0 ? __ldg(row + xx) : 0u;
    }
    *centre = px[2] | (px[3] << 8) | (px[4] << 16) | (px[5] << 24);
    *edges = px[0] | (px[1] << 8) | (px[6] << 16) | (px[7] << 24);
}

/* The row's five horizontal shifts (columns -2..+2 around each of the 4 pixels). */
__device__ __forceinline__ void med_p5_shifts(unsigned c, unsigned e, unsigned *v)
{
    v[0] = (c << 16) | (e & 0xffffu);
    v[1] = (c << 8) | ((e >> 8) & 0xffu);
    v[2] = c;
    v[3] = (c >> 8) | (((e >> 16) & 0xffu) << 24);
    v[4] = (c >> 16) | ((e >> 16) << 16);
}

/* Forgetful selection of the 13th of 25: keep 14 values, drop the smallest and the largest,
 * take the next value, repeat; the median of the last three is the median of all 25. */
__device__ __forceinline__ unsigned med_p5_select(const unsigned *v)
{
    unsigned w[14];
#pragma unroll
    for (int i = 0; i < 14; i++) w[i] = v[i];
#pragma unroll
    for (int step = 0; step < 11; step++) {
        const int n = 14 - step;
#pragma unroll
        for (int i = 1; i < n; i++) med_sort2(w[0], w[i]);
#pragma unroll
        for (int i = 1; i < n - 1; i++) med_sort2(w[i], w[n - 1]);
#pragma unroll
        for (int i = 0; i < n - 2; i++) w[i] = w[i + 1];
        w[n - 2] = v[14 + step];
    }
    return med_med3(w[0], w[1], w[2]);
}

/* Each thread: 4 adjacent pixels of MED_P5_ROWS rows, five input rows in registers. */
__global__ void med_5x5_u8(med_args a)
{
    const int gx = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
    const int y0 = (blockIdx.y * blockDim.y + threadIdx.y) * MED_P5_ROWS;
    if (gx >= a.width || y0 >= a.height) return;
    unsigned c[5], e[5], v[25];
#pragma unroll
    for (int j = 0; j < 4; j++) med_p5_load(a, gx, y0 - 2 + j, &c[j], &e[j]);
    for (int i = 0; i < MED_P5_ROWS && y0 + i < a.height; i++) {
        med_p5_load(a, gx, y0 + i + 2, &c[4], &e[4]);
#pragma unroll
        for (int j = 0; j < 5; j++) med_p5_shifts(c[j], e[j], v + 5 * j);
        med_p3_store(a, gx, y0 + i, med_p5_select(v));
#pragma unroll
        for (int j = 0; j < 4; j++) {
            c[j] = c[j + 1];
            e[j] = e[j + 1];
        }
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

static int med_launch_huang(const med_args *a, cudaStream_t s)
{
    int strip = 4 * (2 * a->radius + 1) > 64 ? 4 * (2 * a->radius + 1) : 64;
    long long cols = (long long)a->width * a->channels, strips = (a->height + strip - 1) / strip;
    if (strips > MED_MAX_GRID_Y) return IPK_EINVAL;
    dim3 grid((unsigned)((cols + MED_HUANG_THREADS - 1) / MED_HUANG_THREADS), (unsigned)strips);
    med_huang_u8<<<grid, MED_HUANG_THREADS, 0, s>>>(*a, strip);
    return IPK_OK;
}

/* The packed networks: radius 1 or 2, 4 pixels by `rows` rows per thread. */
static int med_launch_packed(const med_args *a, cudaStream_t s)
{
    const int rows = a->radius == 1 ? MED_P3_ROWS : MED_P5_ROWS;
    dim3 block(64, 4);
    long long quads = (a->width + 3) / 4, bands = (a->height + rows - 1) / rows;
    long long gy = (bands + block.y - 1) / block.y;
    if (gy > MED_MAX_GRID_Y) return IPK_EINVAL;
    dim3 grid((unsigned)((quads + block.x - 1) / block.x), (unsigned)gy);
    if (a->radius == 1) med_3x3_u8<<<grid, block, 0, s>>>(*a);
    else med_5x5_u8<<<grid, block, 0, s>>>(*a);
    return IPK_OK;
}

extern "C" int ipk_median_gpu(const ipk_img *src, const ipk_img *dst, int radius, ipk_border border,
                              void *scratch, size_t scratch_bytes, void *stream)
{
    (void)scratch;
    (void)scratch_bytes;
    if (!med_args_ok(src, dst, radius, border)) return IPK_EINVAL;
    if (src->width == 0 || src->height == 0) return IPK_OK;
    med_args a = {(const char *)src->data, (char *)dst->data, src->stride, dst->stride,
                  src->width, src->height, src->channels, radius, (int)border};
    cudaStream_t s = (cudaStream_t)stream;
    int rc;
    if (src->dtype == IPK_U8 && src->channels == 1 && (radius == 1 || radius == 2) && border != IPK_SHRINK)
        rc = med_launch_packed(&a, s);
    else if (src->dtype == IPK_U8) rc = med_launch_huang(&a, s);
    else {
        med_launch_generic(&a, src->dtype, s);
        rc = IPK_OK;
    }
    if (rc != IPK_OK) return rc;
    return cudaGetLastError() == cudaSuccess ? IPK_OK : IPK_ECUDA;
}
