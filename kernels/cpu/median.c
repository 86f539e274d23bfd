/* Median filter on the CPU. Every method is exact, so results never depend on the thread
 * count, the tiling or the method chosen:
 *   radius 1, 2 (any dtype): columns sorted once per row, then a comparator network per pixel
 *     over the sorted columns, vectorised along the row (median_net.h);
 *   8-bit, radius 3 to 90: Perreault & Hebert's constant-time sliding histograms;
 *   16-bit, radius 3 and up: Huang's sliding histogram, two levels;
 *   float, radius 3 and up: the window gathered and selected pixel by pixel. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "ipk.h"
#include "border.h"
#include "median_net.h"
#include "pixels.h"
#include "threads.h"

/* Larger windows are no median filter anyone runs; the bound keeps every count in range. */
#define MEDIAN_MAX_RADIUS 127
/* Row indices are int: a row of more values than this is refused (IPK_ERANGE). */
#define MEDIAN_MAX_ROW_VALUES (INT_MAX / 4)
/* The 8-bit histograms count in int16 lanes: (2r+1)^2 must stay below 32768. */
#define O1_MAX_RADIUS 90
/* Tiles of the histogram path: narrow enough for the column histograms to stay in L2. */
#define O1_TILE_W 512
#define O1_TILE_H 512

/* The network rows are straight-line min/max code: wider vectors pay almost linearly, so on
 * x86-64 GCC builds them also for AVX2 and picks at load time. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define MEDIAN_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define MEDIAN_SIMD_CLONES
#endif
/* The rows' loops carry nothing from one pixel to the next: said to GCC. Clang (the fuzz build)
 * knows no such pragma, and its forced vectorizing warns where the sanitizers forbid it: none. */
#if defined(__clang__)
#define MEDIAN_IVDEP
#else
#define MEDIAN_IVDEP _Pragma("GCC ivdep")
#endif

IPK_MEDIAN_NETS(uint8_t, u8)
IPK_MEDIAN_NETS(uint16_t, u16)
IPK_MEDIAN_NETS(float, f32)

static int median_args_ok(const ipk_img *src, const ipk_img *dst, int radius, ipk_border border)
{
    if (!src->data || !dst->data || src->data == dst->data) return 0;
    if (src->width < 1 || src->height < 1 || src->channels < 1 || src->channels > 4) return 0;
    if (dst->width != src->width || dst->height != src->height ||
        dst->channels != src->channels || dst->dtype != src->dtype) return 0;
    if (src->dtype != IPK_U8 && src->dtype != IPK_U16 && src->dtype != IPK_F32) return 0;
    size_t row_bytes = (size_t)src->width * (size_t)src->channels * ipk_dtype_bytes(src->dtype);
    if (src->stride < 0 || (size_t)src->stride < row_bytes) return 0;
    if (dst->stride < 0 || (size_t)dst->stride < row_bytes) return 0;
    return radius >= 0 && radius <= MEDIAN_MAX_RADIUS &&
           border >= IPK_REPLICATE && border <= IPK_SHRINK;
}

/* a * b, or 0 when it overflows (a size of 0 is never asked for). */
static size_t mul_size(size_t a, size_t b)
{
    return a && b > SIZE_MAX / a ? 0 : a * b;
}

/* ---- generic path: gather the window, select the k-th smallest ---- */

static float value_at(const ipk_img *img, int x, int y, int c)
{
    const char *row = ipk_row(img, y);
    size_t i = (size_t)x * (size_t)img->channels + (size_t)c;
    if (img->dtype == IPK_U8) return ((const uint8_t *)row)[i];
    if (img->dtype == IPK_U16) return ((const uint16_t *)row)[i];
    return ((const float *)row)[i];
}

static void store_at(const ipk_img *img, int x, int y, int c, float v)
{
    char *row = ipk_row(img, y);
    size_t i = (size_t)x * (size_t)img->channels + (size_t)c;
    if (img->dtype == IPK_U8) ((uint8_t *)row)[i] = (uint8_t)v;
    else if (img->dtype == IPK_U16) ((uint16_t *)row)[i] = (uint16_t)v;
    else ((float *)row)[i] = v;
}

/* Hoare's selection: v[k] ends as the k-th smallest of v[0..n-1]. */
static float select_kth(float *v, int n, int k)
{
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        float pivot = v[lo + (hi - lo) / 2];
        int i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot) i++;
            while (pivot < v[j]) j--;
            if (i <= j) {
                float t = v[i];
                v[i++] = v[j];
                v[j--] = t;
            }
        }
        if (k <= j) hi = j;
        else if (k >= i) lo = i;
        else break;
    }
    return v[k];
}

/* Appends the 2r+1 values of row sy around column x (all inside the image) to buf. */
static int gather_span(const ipk_img *src, int sy, int x, int c, int r, float *buf)
{
    const size_t ch = (size_t)src->channels, first = (size_t)(x - r) * ch + (size_t)c;
    const char *row = ipk_row(src, sy);
    if (src->dtype == IPK_U8)
        for (int i = 0; i <= 2 * r; i++) buf[i] = ((const uint8_t *)row)[first + (size_t)i * ch];
    else if (src->dtype == IPK_U16)
        for (int i = 0; i <= 2 * r; i++) buf[i] = ((const uint16_t *)row)[first + (size_t)i * ch];
    else
        for (int i = 0; i <= 2 * r; i++) buf[i] = ((const float *)row)[first + (size_t)i * ch];
    return 2 * r + 1;
}

/* The window's values of channel c as the border gives them; returns their count. */
static int gather_window(const ipk_img *src, int x, int y, int c, int r, ipk_border border,
                         float *buf)
{
    const int inside_x = x - r >= 0 && x + r < src->width;
    int n = 0;
    for (int dy = -r; dy <= r; dy++) {
        int sy = ipk_border_index(y + dy, src->height, (int)border);
        if (sy >= 0 && inside_x) {
            n += gather_span(src, sy, x, c, r, buf + n);
            continue;
        }
        for (int dx = -r; dx <= r; dx++) {
            int sx = ipk_border_index(x + dx, src->width, (int)border);
            if (sx >= 0 && sy >= 0) buf[n++] = value_at(src, sx, sy, c);
            else if (border == IPK_ZERO) buf[n++] = 0.0f;
        }
    }
    return n;
}

/* u8 and u16 values are exact in a float, so one float path serves every dtype. */
static void generic_pixel(const ipk_img *src, const ipk_img *dst, int x, int y, int radius,
                          ipk_border border, float *buf)
{
    for (int c = 0; c < src->channels; c++) {
        int n = gather_window(src, x, y, c, radius, border, buf);
        store_at(dst, x, y, c, select_kth(buf, n, (n - 1) / 2));
    }
}

static int median_generic(const ipk_img *src, const ipk_img *dst, int radius, ipk_border border,
                          int threads)
{
    size_t side = 2 * (size_t)radius + 1;
    int failed = 0;
    #pragma omp parallel num_threads(ipk_threads(threads))
    {
        float *buf = malloc(side * side * sizeof *buf);
        if (!buf) {
            #pragma omp atomic write
            failed = 1;
        }
        #pragma omp for schedule(dynamic, 4)
        for (int y = 0; y < src->height; y++)
            for (int x = 0; buf && x < src->width; x++)
                generic_pixel(src, dst, x, y, radius, border, buf);
        free(buf);
    }
    return failed ? IPK_ENOMEM : IPK_OK;
}

/* ---- radius 1 and 2: sorted columns, then a network per pixel, vectorised over the row ---- */

/* Row buffers of one thread: `planes` arrays of (width + 2r) pixels, the image column x at
 * index (x + r) * channels, plus a row of zeros for rows outside the image. */
typedef struct {
    void *mem;
    size_t plane;   /* elements per plane */
    const void *zeros;
} net_bufs;

static int net_bufs_alloc(net_bufs *b, const ipk_img *src, int radius, int planes)
{
    size_t px = (size_t)src->width + 2 * (size_t)radius, es = ipk_dtype_bytes(src->dtype);
    size_t plane = mul_size(px, (size_t)src->channels);
    /* whole cache lines plus three, so that planes do not all fall in the same cache sets */
    const size_t line = 64 / es;
    b->plane = plane && plane < SIZE_MAX / 2 ? (plane + line - 1) / line * line + 3 * line : 0;
    size_t bytes = mul_size(mul_size(b->plane, (size_t)planes + 1), es);
    b->mem = bytes ? calloc(1, bytes) : NULL;
    b->zeros = b->mem ? (char *)b->mem + b->plane * (size_t)planes * es : NULL;
    return b->mem != NULL;
}

/* Rows are often exactly a page, where hardware prefetchers stop: the kernels fetch the
 * next row's lines while they work on this one. */
static void prefetch_bytes(const void *p, size_t bytes)
{
#if defined(__GNUC__)
    for (size_t i = 0; i < bytes; i += 64) __builtin_prefetch((const char *)p + i);
#else
    (void)p;
    (void)bytes;
#endif
}

static void prefetch_row(const ipk_img *img, int y)
{
    if (y >= 0)
        prefetch_bytes(ipk_row(img, y),
                       (size_t)img->width * (size_t)img->channels * ipk_dtype_bytes(img->dtype));
}

/* Five planes at one index, unrolled by hand so that the loops around them vectorise. */
#define MEDIAN_GET5(p, i) (p)[i], (p)[plane + (i)], (p)[2 * plane + (i)], (p)[3 * plane + (i)], \
                          (p)[4 * plane + (i)]
#define MEDIAN_PUT5(p, i, a, b, c, d, e)                                                      \
    do {                                                                                      \
        (p)[i] = a; (p)[plane + (i)] = b; (p)[2 * plane + (i)] = c;                           \
        (p)[3 * plane + (i)] = d; (p)[4 * plane + (i)] = e;                                   \
    } while (0)

/* Defines the row functions of the network path for one element type. */
#define MEDIAN_NET_ROWS(T, sfx)                                                               \
/* Fills the r border pixels on each side of a plane of sorted columns: the sorted column of  \
 * a mapped x is the mapped column's; outside (zero, shrink) it is all zeros. */              \
static void pad_plane_##sfx(T *p, int width, int ch, int r, ipk_border border)                \
{                                                                                             \
    for (int px = -r; px < width + r; px = (px == -1 ? width : px + 1)) {                     \
        int m = ipk_border_index(px, width, (int)border);                                     \
        T *d = p + (size_t)(px + r) * ch;                                                     \
        for (int c = 0; c < ch; c++) d[c] = m < 0 ? (T)0 : p[(size_t)(m + r) * ch + c];       \
    }                                                                                         \
}                                                                                             \
/* Paeth's 3x3: the median of nine is the median of the largest of the column minima, the     \
 * median of the column medians and the smallest of the column maxima. */                     \
MEDIAN_SIMD_CLONES                                                                            \
static void h3x3_##sfx(const T *restrict lo, const T *restrict mid, const T *restrict hi,     \
                       T *restrict out, int n, int ch)                                        \
{                                                                                             \
    MEDIAN_IVDEP                                                                              \
    for (int i = 0; i < n; i++) {                                                             \
        T a = IPK_MAX(IPK_MAX(lo[i], lo[i + ch]), lo[i + 2 * ch]);                            \
        T b = ipk_med3_##sfx(mid[i], mid[i + ch], mid[i + 2 * ch]);                           \
        T c = IPK_MIN(IPK_MIN(hi[i], hi[i + ch]), hi[i + 2 * ch]);                            \
        out[i] = ipk_med3_##sfx(a, b, c);                                                     \
    }                                                                                         \
}                                                                                             \
MEDIAN_SIMD_CLONES                                                                            \
static void row3x3_##sfx(const T *const *rows, T *restrict out, T *planes, size_t plane,      \
                         int width, int ch, ipk_border border)                                \
{                                                                                             \
    const int n = width * ch;                                                                 \
    const T *restrict r0 = rows[0], *restrict r1 = rows[1], *restrict r2 = rows[2];           \
    T *restrict lo = planes, *restrict mid = planes + plane, *restrict hi = planes + 2 * plane; \
    MEDIAN_IVDEP                                                                              \
    for (int i = 0; i < n; i++) {                                                             \
        T v[3] = { r0[i], r1[i], r2[i] };                                                     \
        ipk_sort3_##sfx(v);                                                                   \
        lo[ch + i] = v[0];                                                                    \
        mid[ch + i] = v[1];                                                                   \
        hi[ch + i] = v[2];                                                                    \
    }                                                                                         \
    for (int k = 0; k < 3; k++) pad_plane_##sfx(planes + k * plane, width, ch, 1, border);    \
    h3x3_##sfx(lo, mid, hi, out, n, ch);                                                      \
}                                                                                             \
/* Two output rows from four input rows: the middle two are sorted once for both. */          \
MEDIAN_SIMD_CLONES                                                                            \
static void row3x3_pair_##sfx(const T *const *rows, T *restrict out0, T *restrict out1,       \
                              T *planes, size_t plane, int width, int ch, ipk_border border)  \
{                                                                                             \
    const int n = width * ch;                                                                 \
    const T *restrict r0 = rows[0], *restrict r1 = rows[1], *restrict r2 = rows[2];           \
    const T *restrict r3 = rows[3];                                                           \
    T *restrict lo0 = planes, *restrict mid0 = planes + plane, *restrict hi0 = planes + 2 * plane; \
    T *restrict lo1 = planes + 3 * plane, *restrict mid1 = planes + 4 * plane;                \
    T *restrict hi1 = planes + 5 * plane;                                                     \
    MEDIAN_IVDEP                                                                              \
    for (int i = 0; i < n; i++) {                                                             \
        T s = IPK_MIN(r1[i], r2[i]), t = IPK_MAX(r1[i], r2[i]), p = r0[i], q = r3[i];         \
        lo0[ch + i] = IPK_MIN(p, s);                                                          \
        mid0[ch + i] = IPK_MAX(s, IPK_MIN(p, t));                                             \
        hi0[ch + i] = IPK_MAX(p, t);                                                          \
        lo1[ch + i] = IPK_MIN(q, s);                                                          \
        mid1[ch + i] = IPK_MAX(s, IPK_MIN(q, t));                                             \
        hi1[ch + i] = IPK_MAX(q, t);                                                          \
    }                                                                                         \
    for (int k = 0; k < 6; k++) pad_plane_##sfx(planes + k * plane, width, ch, 1, border);    \
    h3x3_##sfx(lo0, mid0, hi0, out0, n, ch);                                                  \
    h3x3_##sfx(lo1, mid1, hi1, out1, n, ch);                                                  \
}                                                                                             \
/* planes: 5 sorted columns, 10 pairs of columns merged, 6 middle ranks of 4 columns */       \
MEDIAN_SIMD_CLONES                                                                            \
static void row5x5_##sfx(const T *const *rows, T *restrict out, T *planes, size_t plane,      \
                         int width, int ch, ipk_border border)                                \
{                                                                                             \
    static const int m2_rank[10] = IPK_MERGE55_RANKS, m4_rank[6] = IPK_MID6_RANKS;            \
    const int n = width * ch, pad = 2 * ch;                                                   \
    const T *restrict r0 = rows[0], *restrict r1 = rows[1], *restrict r2 = rows[2];           \
    const T *restrict r3 = rows[3], *restrict r4 = rows[4];                                   \
    T *restrict s = planes, *restrict m2 = planes + 5 * plane, *restrict m4 = planes + 15 * plane; \
    MEDIAN_IVDEP                                                                              \
    for (int i = 0; i < n; i++) {                                                             \
        T v[5] = { r0[i], r1[i], r2[i], r3[i], r4[i] };                                       \
        ipk_sort5_##sfx(v);                                                                   \
        MEDIAN_PUT5(s, pad + i, v[0], v[1], v[2], v[3], v[4]);                                \
    }                                                                                         \
    for (int k = 0; k < 5; k++) pad_plane_##sfx(s + k * plane, width, ch, 2, border);         \
    /* columns j and j+1 merged, for every padded column j that a window's pairs start at */  \
    MEDIAN_IVDEP                                                                              \
    for (int i = 0; i < n + pad; i++) {                                                       \
        T v[10] = { MEDIAN_GET5(s, i), MEDIAN_GET5(s, i + ch) };                              \
        ipk_merge_5_5_##sfx(v);                                                               \
        MEDIAN_PUT5(m2, i, v[m2_rank[0]], v[m2_rank[1]], v[m2_rank[2]], v[m2_rank[3]],        \
                    v[m2_rank[4]]);                                                           \
        MEDIAN_PUT5(m2 + 5 * plane, i, v[m2_rank[5]], v[m2_rank[6]], v[m2_rank[7]], v[m2_rank[8]], \
                    v[m2_rank[9]]);                                                           \
    }                                                                                         \
    /* columns x-2..x+1: the only ranks (7..12 of 20) that can be the median of 25 */         \
    MEDIAN_IVDEP                                                                              \
    for (int i = 0; i < n; i++) {                                                             \
        T v[20] = { MEDIAN_GET5(m2, i), MEDIAN_GET5(m2 + 5 * plane, i),                       \
                    MEDIAN_GET5(m2, i + pad), MEDIAN_GET5(m2 + 5 * plane, i + pad) };         \
        ipk_mid6_of_10_10_##sfx(v);                                                           \
        MEDIAN_PUT5(m4, i, v[m4_rank[0]], v[m4_rank[1]], v[m4_rank[2]], v[m4_rank[3]],        \
                    v[m4_rank[4]]);                                                           \
        m4[5 * plane + i] = v[m4_rank[5]];                                                    \
    }                                                                                         \
    MEDIAN_IVDEP                                                                              \
    for (int i = 0; i < n; i++) {                                                             \
        T v[11] = { MEDIAN_GET5(m4, i), m4[5 * plane + i], MEDIAN_GET5(s, i + 2 * pad) };     \
        out[i] = ipk_med25_last_##sfx(v);                                                     \
    }                                                                                         \
}                                                                                             \
static void net_row_##sfx(const ipk_img *src, const ipk_img *dst, int y, int radius,          \
                          ipk_border border, const net_bufs *b)                               \
{                                                                                             \
    const T *rows[5];                                                                         \
    for (int k = 0; k <= 2 * radius; k++) {                                                   \
        int sy = ipk_border_index(y - radius + k, src->height, (int)border);                  \
        rows[k] = sy < 0 ? (const T *)b->zeros : (const T *)ipk_row(src, sy);                 \
    }                                                                                         \
    prefetch_row(src, ipk_border_index(y + radius + 1, src->height, (int)border));            \
    if (radius == 1)                                                                          \
        row3x3_##sfx(rows, ipk_row(dst, y), b->mem, b->plane, src->width, src->channels, border); \
    else                                                                                      \
        row5x5_##sfx(rows, ipk_row(dst, y), b->mem, b->plane, src->width, src->channels, border); \
}                                                                                             \
static void net_pair_##sfx(const ipk_img *src, const ipk_img *dst, int y, ipk_border border,  \
                           const net_bufs *b)                                                 \
{                                                                                             \
    const T *rows[4];                                                                         \
    for (int k = 0; k < 4; k++) {                                                             \
        int sy = ipk_border_index(y - 1 + k, src->height, (int)border);                       \
        rows[k] = sy < 0 ? (const T *)b->zeros : (const T *)ipk_row(src, sy);                 \
    }                                                                                         \
    prefetch_row(src, ipk_border_index(y + 3, src->height, (int)border));                     \
    prefetch_row(src, ipk_border_index(y + 4, src->height, (int)border));                     \
    row3x3_pair_##sfx(rows, ipk_row(dst, y), ipk_row(dst, y + 1), b->mem, b->plane, src->width, \
                      src->channels, border);                                                 \
}

MEDIAN_NET_ROWS(uint8_t, u8)
MEDIAN_NET_ROWS(uint16_t, u16)
MEDIAN_NET_ROWS(float, f32)

static void net_row(const ipk_img *src, const ipk_img *dst, int y, int radius, ipk_border border,
                    const net_bufs *b)
{
    if (src->dtype == IPK_U8) net_row_u8(src, dst, y, radius, border, b);
    else if (src->dtype == IPK_U16) net_row_u16(src, dst, y, radius, border, b);
    else net_row_f32(src, dst, y, radius, border, b);
}

static void net_pair(const ipk_img *src, const ipk_img *dst, int y, ipk_border border,
                     const net_bufs *b)
{
    if (src->dtype == IPK_U8) net_pair_u8(src, dst, y, border, b);
    else if (src->dtype == IPK_U16) net_pair_u16(src, dst, y, border, b);
    else net_pair_f32(src, dst, y, border, b);
}

/* Shrink windows differ from the padded ones only within r of an edge: those pixels are
 * redone one by one. */
static void shrink_edges(const ipk_img *src, const ipk_img *dst, int y, int radius, float *buf)
{
    int whole_row = y < radius || y >= src->height - radius;
    for (int x = 0; x < src->width; x++) {
        if (!whole_row && x == radius && src->width - radius > x) x = src->width - radius;
        generic_pixel(src, dst, x, y, radius, IPK_SHRINK, buf);
    }
}

static int median_network(const ipk_img *src, const ipk_img *dst, int radius, ipk_border border,
                          int threads)
{
    int failed = 0;
    #pragma omp parallel num_threads(ipk_threads(threads))
    {
        net_bufs b;
        float buf[25];
        int ok = net_bufs_alloc(&b, src, radius, radius == 1 ? 6 : 21);
        if (!ok) {
            #pragma omp atomic write
            failed = 1;
        }
        #pragma omp for schedule(static)
        for (int pair = 0; pair < (src->height + 1) / 2; pair++) {
            const int y0 = 2 * pair, rows = src->height - y0 < 2 ? 1 : 2;
            if (!ok) continue;
            if (radius == 1 && rows == 2 && border != IPK_SHRINK) {
                net_pair(src, dst, y0, border, &b);
                continue;
            }
            for (int y = y0; y < y0 + rows; y++) {
                int edge_row = y < radius || y >= src->height - radius;
                if (border != IPK_SHRINK || !edge_row) net_row(src, dst, y, radius, border, &b);
                if (border == IPK_SHRINK) shrink_edges(src, dst, y, radius, buf);
            }
        }
        free(b.mem);
    }
    return failed ? IPK_ENOMEM : IPK_OK;
}

/* ---- 8-bit, radius 3 and up: Perreault & Hebert's constant-time median ----
 * Each tile keeps, per image column, histograms of the window's rows at two levels: 16 coarse
 * bins (v >> 4) and 16 fine bins (v & 15) within each. They are stored cumulative (count of
 * values below a bin), so adding a value and finding the median are 16-lane compares and
 * adds that vectorise, with no scan. The window's coarse histogram slides by one column
 * add and one subtract; the fine bins of the coarse bin that holds the median are brought
 * up to date lazily, as they are needed. */

typedef struct {
    uint16_t *coarse;   /* [slots][16]: the column's values with a coarse bin below b */
    uint16_t *fine;     /* [slots][16][16]: its values in coarse bin b with a fine bin below j */
    int *slot;          /* window column x0 - r + i -> histogram slot */
    int cmin, ncols;    /* image columns cmin.. have slots 0..ncols-1; slot ncols: outside */
} o1_hists;

typedef struct {
    const ipk_img *src;
    const ipk_img *dst;
    int radius, ch;
    ipk_border border;
} o1_job;

/* Sixteen uint16_t counts as one GCC vector: two SSE2 registers in the default build, one
 * AVX2 register in the clones of o1_tile (MEDIAN_SIMD_CLONES), with the same source. */
#if defined(__GNUC__)
#define O1_INLINE static inline __attribute__((always_inline))
#else
#define O1_INLINE static inline
#endif

#if defined(__GNUC__) && defined(__SSE2__)
#include <emmintrin.h>
#pragma GCC diagnostic ignored "-Wpsabi"
typedef uint16_t o1_vec __attribute__((vector_size(32), aligned(16)));
typedef int16_t o1_svec __attribute__((vector_size(32), aligned(16)));
O1_INLINE o1_vec v16_load(const uint16_t *p)
{
    o1_vec v;
    memcpy(&v, p, sizeof v);
    return v;
}
O1_INLINE o1_vec v16_zero(void) { return (o1_vec){ 0 }; }
/* Macros: GCC notes an ABI change for a 32-byte vector parameter, even of an inlined static
 * function, and no pragma silences the note (returns only warn, ignored above). */
#define v16_store(p, v)                                                                       \
    do {                                                                                      \
        const o1_vec v16_stored_ = (v);                                                       \
        memcpy((p), &v16_stored_, sizeof v16_stored_);                                        \
    } while (0)
#define v16_add(x, y) ((x) + (y))
#define v16_sub(x, y) ((x) - (y))
/* delta in the lanes above `bin`, 0 in the others */
O1_INLINE o1_vec v16_step(int bin, int delta)
{
    const o1_svec lanes = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
    return (o1_vec)(lanes > (int16_t)bin) & (uint16_t)delta;
}
/* Lanes at most k (counts below 32768: see O1_MAX_RADIUS); cumulative counts never
 * decrease, so the lanes above k are the top ones and the first of them says how many.
 * The two halves of the lane mask pack into one byte per lane for a single movemask. */
O1_INLINE int v16_count_upto(const o1_vec *v, int k)
{
    const o1_svec above = (o1_svec)*v > (int16_t)k;
    __m128i lo, hi;
    memcpy(&lo, &above, sizeof lo);
    memcpy(&hi, (const char *)&above + sizeof lo, sizeof hi);
    unsigned mask = (unsigned)_mm_movemask_epi8(_mm_packs_epi16(lo, hi));
    return mask ? __builtin_ctz(mask) : 16;
}
#else
typedef struct { uint16_t c[16]; } o1_vec;
static inline o1_vec v16_load(const uint16_t *p) { o1_vec v; memcpy(v.c, p, sizeof v.c); return v; }
static inline void v16_store(uint16_t *p, o1_vec v) { memcpy(p, v.c, sizeof v.c); }
static inline o1_vec v16_zero(void) { o1_vec v = { { 0 } }; return v; }
static inline o1_vec v16_add(o1_vec x, o1_vec y)
{
    for (int i = 0; i < 16; i++) x.c[i] = (uint16_t)(x.c[i] + y.c[i]);
    return x;
}
static inline o1_vec v16_sub(o1_vec x, o1_vec y)
{
    for (int i = 0; i < 16; i++) x.c[i] = (uint16_t)(x.c[i] - y.c[i]);
    return x;
}
static inline o1_vec v16_step(int bin, int delta)
{
    o1_vec v;
    for (int i = 0; i < 16; i++) v.c[i] = (uint16_t)(i > bin ? delta : 0);
    return v;
}
static inline int v16_count_upto(const o1_vec *v, int k)
{
    int n = 0;
    for (int i = 0; i < 16; i++) n += v->c[i] <= k;
    return n;
}
#endif

/* Counts value v `delta` times (negative to remove); uint16_t arithmetic wraps as needed. */
O1_INLINE void o1_count(uint16_t *coarse, uint16_t *fine, int v, int delta)
{
    uint16_t *f = fine + (v >> 4) * 16;
    v16_store(coarse, v16_add(v16_load(coarse), v16_step(v >> 4, delta)));
    v16_store(f, v16_add(v16_load(f), v16_step(v & 15, delta)));
}

/* Fields are copied to locals in the loops below: vector stores may alias anything and
 * would otherwise force their reload on every column. */
O1_INLINE void o1_add_row(const o1_job *j, o1_hists *h, int sy, int c, int delta)
{
    if (sy < 0 && j->border != IPK_ZERO) return;
    const uint8_t *row = sy >= 0 ? (const uint8_t *)ipk_row(j->src, sy) + c : NULL;
    uint16_t *const coarse = h->coarse, *const fine = h->fine;
    const int ncols = h->ncols, ch = j->ch;
    const size_t first = (size_t)h->cmin * (size_t)ch;
    for (int m = 0; m < ncols; m++) {
        int v = row ? row[first + (size_t)m * ch] : 0;
        o1_count(coarse + (size_t)m * 16, fine + (size_t)m * 256, v, delta);
    }
}

/* o1_steps[b][i] = (i > b): what one value of bin b adds to a cumulative histogram. */
#define O1_STEP(b) { 0 > b, 1 > b, 2 > b, 3 > b, 4 > b, 5 > b, 6 > b, 7 > b, \
                     8 > b, 9 > b, 10 > b, 11 > b, 12 > b, 13 > b, 14 > b, 15 > b }
static const uint16_t o1_steps[16][16] = {
    O1_STEP(0), O1_STEP(1), O1_STEP(2), O1_STEP(3), O1_STEP(4), O1_STEP(5), O1_STEP(6), O1_STEP(7),
    O1_STEP(8), O1_STEP(9), O1_STEP(10), O1_STEP(11),
    O1_STEP(12), O1_STEP(13), O1_STEP(14), O1_STEP(15),
};

/* Moves the column histograms down one row: row `out` leaves, row `in` comes. Equal values
 * (smooth images) skip; otherwise no branch on whether they share a coarse bin: on noisy
 * images that is a coin toss, and mispredictions cost more than the updates it would save. */
O1_INLINE void o1_next_row(const o1_job *j, o1_hists *h, int out, int in, int c)
{
    if (out < 0 || in < 0) {
        o1_add_row(j, h, out, c, -1);
        o1_add_row(j, h, in, c, 1);
        return;
    }
    const uint8_t *old_row = (const uint8_t *)ipk_row(j->src, out) + c;
    const uint8_t *new_row = (const uint8_t *)ipk_row(j->src, in) + c;
    uint16_t *const coarse = h->coarse, *const fine = h->fine;
    const int ncols = h->ncols, ch = j->ch;
    const size_t first = (size_t)h->cmin * (size_t)ch;
    for (int m = 0; m < ncols; m++) {
        size_t i = first + (size_t)m * ch;
        int was = old_row[i], now = new_row[i];
        if (was == now) continue;
        uint16_t *cm = coarse + (size_t)m * 16, *fm = fine + (size_t)m * 256;
        uint16_t *f_now = fm + (now >> 4) * 16, *f_was = fm + (was >> 4) * 16;
        v16_store(cm, v16_sub(v16_add(v16_load(cm), v16_load(o1_steps[now >> 4])),
                              v16_load(o1_steps[was >> 4])));
        v16_store(f_was, v16_sub(v16_load(f_was), v16_load(o1_steps[was & 15])));
        v16_store(f_now, v16_add(v16_load(f_now), v16_load(o1_steps[now & 15])));
    }
}

/* Column histograms for output row y0, and the slot of every window column of the tile. */
O1_INLINE void o1_init_columns(const o1_job *j, o1_hists *h, int x0, int x1, int y0, int c)
{
    const int r = j->radius, width = j->src->width;
    int cmin = INT_MAX, cmax = -1;
    for (int px = x0 - r; px < x1 + r; px++) {
        int m = ipk_border_index(px, width, (int)j->border);
        if (m >= 0 && m < cmin) cmin = m;
        if (m > cmax) cmax = m;
    }
    h->cmin = cmin;
    h->ncols = cmax - cmin + 1;
    for (int px = x0 - r; px < x1 + r; px++) {
        int m = ipk_border_index(px, width, (int)j->border);
        h->slot[px - (x0 - r)] = m < 0 ? h->ncols : m - cmin;
    }
    memset(h->coarse, 0, (size_t)(h->ncols + 1) * 16 * sizeof *h->coarse);
    memset(h->fine, 0, (size_t)(h->ncols + 1) * 256 * sizeof *h->fine);
    if (j->border == IPK_ZERO)   /* a column outside the image: 2r+1 zeros */
        o1_count(h->coarse + (size_t)h->ncols * 16, h->fine + (size_t)h->ncols * 256, 0, 2 * r + 1);
    for (int dy = -r; dy <= r; dy++)
        o1_add_row(j, h, ipk_border_index(y0 + dy, j->src->height, (int)j->border), c, 1);
}

/* Number of in-image indices in [i - r, i + r] of 0..n-1. */
static int span_inside(int i, int r, int n)
{
    int lo = i - r < 0 ? 0 : i - r, hi = i + r > n - 1 ? n - 1 : i + r;
    return hi - lo + 1;
}

/* Brings the window's fine bins of coarse bin b from column `last` to column x: slides
 * when that is cheaper than summing the 2r+1 columns afresh. */
O1_INLINE o1_vec o1_fine_update(const o1_hists *h, const int *slot, const uint16_t *wf, int b,
                             int last, int x, int r)
{
    const uint16_t *fine = h->fine + b * 16;
    o1_vec f;
    if (last == INT_MIN || x - last > r) {
        f = v16_zero();
        for (int d = -r; d <= r; d++) f = v16_add(f, v16_load(fine + (size_t)slot[x + d] * 256));
        return f;
    }
    f = v16_load(wf + b * 16);
    for (int xx = last + 1; xx <= x; xx++)
        f = v16_sub(v16_add(f, v16_load(fine + (size_t)slot[xx + r] * 256)),
                    v16_load(fine + (size_t)slot[xx - r - 1] * 256));
    return f;
}

/* One output row of the tile. Fields are copied to locals: the uint8_t output stores could
 * otherwise alias them and force reloads on every pixel. `linear`, a constant once inlined,
 * says that window column px has slot px - cmin (every tile away from the image's sides),
 * which spares a table look-up per histogram read. */
O1_INLINE void o1_row_in(const o1_job *j, const o1_hists *h, int x0, int x1, int y, int c,
                          int linear)
{
    const int r = j->radius, ch = j->ch, width = j->src->width;
    const int shrink = j->border == IPK_SHRINK;
    const uint16_t *const coarse = h->coarse, *const fine = h->fine;
    const int *const slot = h->slot - (x0 - r);   /* slot[px] for window column px */
    const int cmin = h->cmin;
#define O1_SLOT(px) (linear ? (px) - cmin : slot[px])
    uint16_t wf[256];
    int fine_x[16];
    for (int b = 0; b < 16; b++) fine_x[b] = INT_MIN;
    o1_vec wc = v16_zero(), cur_f = v16_zero();
    int cur_b = -1;   /* the coarse bin whose fine bins cur_f holds, up to date at x - 1 */
    for (int d = -r; d <= r; d++) wc = v16_add(wc, v16_load(coarse + (size_t)O1_SLOT(x0 + d) * 16));
    const int rows_in = shrink ? span_inside(y, r, j->src->height) : 2 * r + 1;
    const int k_full = (rows_in * (2 * r + 1) - 1) / 2;
    uint8_t *const out = (uint8_t *)ipk_row(j->dst, y) + c;
    for (int x = x0; x < x1; x++) {
        if (x > x0)
            wc = v16_sub(v16_add(wc, v16_load(coarse + (size_t)O1_SLOT(x + r) * 16)),
                         v16_load(coarse + (size_t)O1_SLOT(x - r - 1) * 16));
        int k = shrink ? (rows_in * span_inside(x, r, width) - 1) / 2 : k_full;
        uint16_t below[16];
        v16_store(below, wc);
        int b = v16_count_upto(&wc, k) - 1;
        if (b == cur_b) {   /* the usual case: the fine bins stay in registers */
            cur_f = v16_sub(v16_add(cur_f, v16_load(fine + (size_t)O1_SLOT(x + r) * 256 + b * 16)),
                            v16_load(fine + (size_t)O1_SLOT(x - r - 1) * 256 + b * 16));
        } else {
            if (cur_b >= 0) {
                v16_store(wf + cur_b * 16, cur_f);
                fine_x[cur_b] = x - 1;
            }
            cur_f = o1_fine_update(h, slot, wf, b, fine_x[b], x, r);
            cur_b = b;
        }
        int i = v16_count_upto(&cur_f, k - below[b]) - 1;
        out[(size_t)x * ch] = (uint8_t)(b * 16 + i);
    }
}
#undef O1_SLOT

O1_INLINE void o1_row(const o1_job *j, const o1_hists *h, int x0, int x1, int y, int c)
{
    if (x0 - j->radius >= 0 && x1 + j->radius <= j->src->width) o1_row_in(j, h, x0, x1, y, c, 1);
    else o1_row_in(j, h, x0, x1, y, c, 0);
}

MEDIAN_SIMD_CLONES
static void o1_tile(const o1_job *j, o1_hists *h, int x0, int x1, int y0, int y1)
{
    const int r = j->radius, height = j->src->height;
    for (int c = 0; c < j->ch; c++) {
        o1_init_columns(j, h, x0, x1, y0, c);
        for (int y = y0; y < y1; y++) {
            int ahead = ipk_border_index(y + r + 1, height, (int)j->border);
            if (ahead >= 0)
                prefetch_bytes((const uint8_t *)ipk_row(j->src, ahead) + (size_t)h->cmin * j->ch,
                               (size_t)h->ncols * j->ch);
            if (y > y0)
                o1_next_row(j, h, ipk_border_index(y - r - 1, height, (int)j->border),
                            ipk_border_index(y + r, height, (int)j->border), c);
            o1_row(j, h, x0, x1, y, c);
        }
    }
}

static int o1_alloc(o1_hists *h, int width, int radius)
{
    int tile_w = width < O1_TILE_W ? width : O1_TILE_W;
    size_t slots = (size_t)width + 1;   /* columns map into the image, plus one outside */
    h->coarse = malloc(slots * 16 * sizeof *h->coarse);
    h->fine = malloc(slots * 256 * sizeof *h->fine);
    h->slot = malloc(((size_t)tile_w + 2 * (size_t)radius) * sizeof *h->slot);
    return h->coarse && h->fine && h->slot;
}

static int median_o1_u8(const ipk_img *src, const ipk_img *dst, int radius, ipk_border border,
                        int threads)
{
    const o1_job job = { src, dst, radius, src->channels, border };
    const int tiles_x = (src->width + O1_TILE_W - 1) / O1_TILE_W;
    const int tiles_y = (src->height + O1_TILE_H - 1) / O1_TILE_H;
    int failed = 0;
    #pragma omp parallel num_threads(ipk_threads(threads))
    {
        o1_hists h;
        int ok = o1_alloc(&h, src->width, radius);
        if (!ok) {
            #pragma omp atomic write
            failed = 1;
        }
        #pragma omp for schedule(dynamic)
        for (int t = 0; t < tiles_x * tiles_y; t++) {
            if (!ok) continue;
            int x0 = (t % tiles_x) * O1_TILE_W, y0 = (t / tiles_x) * O1_TILE_H;
            int x1 = x0 + O1_TILE_W < src->width ? x0 + O1_TILE_W : src->width;
            int y1 = y0 + O1_TILE_H < src->height ? y0 + O1_TILE_H : src->height;
            o1_tile(&job, &h, x0, x1, y0, y1);
        }
        free(h.coarse);
        free(h.fine);
        free(h.slot);
    }
    return failed ? IPK_ENOMEM : IPK_OK;
}

/* ---- 16-bit, radius 3 and up: Huang's sliding histogram along each row ----
 * 65536 fine bins and 256 coarse ones; the median and the count below it follow the
 * window, skipping whole coarse bins, so a pixel costs 2(2r+1) updates plus the median's
 * move. */

typedef struct {
    uint16_t *fine;        /* [65536] */
    uint16_t coarse[256];  /* values >> 8 */
    int med, below;        /* current median, and the window's values below it */
    const uint16_t **rows; /* the window's source rows for this output row, NULL outside */
} h16_state;

static void h16_column(const ipk_img *src, h16_state *h, int px, int c, int r,
                       ipk_border border, int delta)
{
    int sx = ipk_border_index(px, src->width, (int)border);
    if (sx < 0 && border != IPK_ZERO) return;
    const size_t i = (size_t)(sx < 0 ? 0 : sx) * (size_t)src->channels + (size_t)c;
    for (int d = 0; d <= 2 * r; d++) {
        const uint16_t *row = h->rows[d];
        if (!row && border != IPK_ZERO) continue;
        int v = sx < 0 || !row ? 0 : row[i];
        h->fine[v] = (uint16_t)(h->fine[v] + delta);
        h->coarse[v >> 8] = (uint16_t)(h->coarse[v >> 8] + delta);
        if (v < h->med) h->below += delta;
    }
}

/* Moves the median to the k-th smallest value of the window. */
static void h16_settle(h16_state *h, int k)
{
    while (h->below > k) {
        if ((h->med & 255) == 0 && h->below - h->coarse[(h->med >> 8) - 1] > k) {
            h->med -= 256;
            h->below -= h->coarse[h->med >> 8];
        } else {
            h->med--;
            h->below -= h->fine[h->med];
        }
    }
    for (;;) {
        if ((h->med & 255) == 0 && h->below + h->coarse[h->med >> 8] <= k) {
            h->below += h->coarse[h->med >> 8];
            h->med += 256;
        } else if (h->below + h->fine[h->med] <= k) {
            h->below += h->fine[h->med];
            h->med++;
        } else {
            return;
        }
    }
}

static void h16_row(const ipk_img *src, const ipk_img *dst, int y, int r, ipk_border border,
                    h16_state *h)
{
    const int width = src->width, shrink = border == IPK_SHRINK;
    const int rows_in = shrink ? span_inside(y, r, src->height) : 2 * r + 1;
    uint16_t *out = (uint16_t *)ipk_row(dst, y);
    for (int c = 0; c < src->channels; c++) {
        h->med = h->below = 0;
        for (int px = -r; px <= r; px++) h16_column(src, h, px, c, r, border, 1);
        for (int x = 0; x < width; x++) {
            if (x > 0) {
                h16_column(src, h, x - r - 1, c, r, border, -1);
                h16_column(src, h, x + r, c, r, border, 1);
            }
            int cols_in = shrink ? span_inside(x, r, width) : 2 * r + 1;
            h16_settle(h, (rows_in * cols_in - 1) / 2);
            out[(size_t)x * src->channels + c] = (uint16_t)h->med;
        }
        for (int px = width - 1 - r; px <= width - 1 + r; px++)
            h16_column(src, h, px, c, r, border, -1);
    }
}

static int median_huang_u16(const ipk_img *src, const ipk_img *dst, int radius,
                            ipk_border border, int threads)
{
    int failed = 0;
    #pragma omp parallel num_threads(ipk_threads(threads))
    {
        h16_state h;
        h.fine = calloc(65536, sizeof *h.fine);
        const uint16_t **rows = malloc((2 * (size_t)radius + 1) * sizeof *rows);
        memset(h.coarse, 0, sizeof h.coarse);
        h.rows = rows;
        if (!h.fine || !rows) {
            #pragma omp atomic write
            failed = 1;
        }
        #pragma omp for schedule(static)
        for (int y = 0; y < src->height; y++) {
            if (!h.fine || !rows) continue;
            for (int d = 0; d <= 2 * radius; d++) {
                int sy = ipk_border_index(y - radius + d, src->height, (int)border);
                rows[d] = sy < 0 ? NULL : (const uint16_t *)ipk_row(src, sy);
            }
            h16_row(src, dst, y, radius, border, &h);
        }
        free(h.fine);
        free((void *)rows);
    }
    return failed ? IPK_ENOMEM : IPK_OK;
}

static void copy_image(const ipk_img *src, const ipk_img *dst)
{
    size_t row_bytes = (size_t)src->width * (size_t)src->channels * ipk_dtype_bytes(src->dtype);
    for (int y = 0; y < src->height; y++) memcpy(ipk_row(dst, y), ipk_row(src, y), row_bytes);
}

int ipk_median_cpu(const ipk_img *src, const ipk_img *dst, int radius, ipk_border border,
                   int threads)
{
    if (!median_args_ok(src, dst, radius, border)) return IPK_EINVAL;
    if ((size_t)src->width * (size_t)src->channels > MEDIAN_MAX_ROW_VALUES) return IPK_ERANGE;
    if (radius == 0) {
        copy_image(src, dst);
        return IPK_OK;
    }
    if (radius <= 2) return median_network(src, dst, radius, border, threads);
    if (src->dtype == IPK_U8 && radius <= O1_MAX_RADIUS)
        return median_o1_u8(src, dst, radius, border, threads);
    if (src->dtype == IPK_U16) return median_huang_u16(src, dst, radius, border, threads);
    return median_generic(src, dst, radius, border, threads);
}
