#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ipk.h"
#include "border.h"
#include "pixels.h"
#include "threads.h"

/* Box mean by running sums: per strip of rows, column sums over the 2r+1 window rows slide
 * down one row at a time, and a running sum along each row adds them across, so the cost per
 * pixel does not depend on the radius. Exception, where it is faster: for windows up to
 * 15x15 (8-bit) or 5x5 the row step adds the 2r+1 column sums directly, vectorised. Integer
 * sums are exact. Float column sums (in double) are not slid: each output row adds its 2r+1
 * window rows afresh, top to bottom, so its rounding depends on those rows alone, not on where
 * a strip, a thread's share or a streamed band begins (a band of rows gives the whole image's
 * bits); that costs r adds more per value, for float images only. */

/* The hot loops are compiled twice, for plain x86-64 (the build's target) and for AVX2, and the
 * loader picks one for the machine: the same operations, so the same results. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define MEAN_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define MEAN_CLONES
#endif

typedef struct {
    int width, channels, radius, border;
    size_t ext_len;        /* (width + 2r) * channels column sums, border columns included */
    uint64_t magic;        /* u8 full windows: floor(a / n) == (a * magic) >> shift */
    int shift;
    uint16_t magic16;      /* u8 full windows of n <= 256: floor(a / n) == (a * magic16) >> (16 + shift16) */
    int shift16;           /* -1 when no 16-bit pair is exact */
} mean_geom;

static int mean_strip_rows(int radius)
{
    int k = 2 * radius + 1;
    return 2 * k > 64 ? 2 * k : 64;
}

/* a * ceil(2^s / n) / 2^s = a/n + a * excess / (n 2^s), with excess < n: the floor stays
 * floor(a/n) while a * excess < 2^s, i.e. for every a < 256 n when 2^s >= 256 n^2. The 16-bit
 * pair (for the 16-bit lanes) is searched and kept only when that bound holds for it. */
static void mean_set_magic(mean_geom *g, uint32_t n)
{
    int log2n = 0;
    while ((1u << log2n) < n) log2n++;
    g->shift = 8 + 2 * log2n;
    g->magic = ((1ull << g->shift) + n - 1) / n;
    g->shift16 = -1;
    const uint32_t a_max = 255 * n + n / 2;
    for (int t = 0; t < 16 && a_max < 65536; t++) {
        uint64_t m = ((1ull << (16 + t)) + n - 1) / n, excess = m * n - (1ull << (16 + t));
        if (m > 65535) break;
        if (a_max * excess < (1ull << (16 + t))) {
            g->magic16 = (uint16_t)m;
            g->shift16 = t;
            break;
        }
    }
}

/* Number of in-image positions among i-r .. i+r. */
static int mean_inside(int i, int n, int r)
{
    int lo = i - r < 0 ? 0 : i - r, hi = i + r > n - 1 ? n - 1 : i + r;
    return hi - lo + 1;
}

/* Source row for window row y, or NULL when it contributes nothing (zero, shrink). */
static const void *mean_src_row(const ipk_img *src, int y, int border)
{
    int m = ipk_border_index(y, src->height, border);
    return m < 0 ? NULL : ipk_row(src, m);
}

/* col[i] += add[i] - sub[i] over the in-image columns; NULL rows are zero rows. */
static inline void mean_slide_int(uint32_t *col, const ipk_img *src, const void *add, const void *sub, size_t n)
{
    if (src->dtype == IPK_U8) {
        const uint8_t *a = add, *s = sub;
        if (a) for (size_t i = 0; i < n; i++) col[i] += a[i];
        if (s) for (size_t i = 0; i < n; i++) col[i] -= s[i];
    } else {
        const uint16_t *a = add, *s = sub;
        if (a) for (size_t i = 0; i < n; i++) col[i] += a[i];
        if (s) for (size_t i = 0; i < n; i++) col[i] -= s[i];
    }
}

static inline void mean_slide_f32(double *col, const float *add, const float *sub, size_t n)
{
    if (add) for (size_t i = 0; i < n; i++) col[i] += add[i];
    if (sub) for (size_t i = 0; i < n; i++) col[i] -= sub[i];
}

/* Fills the 2r border columns of the column sums from the in-image ones. */
#define MEAN_FILL_BORDER(T, g, col)                                                     \
    do {                                                                                \
        for (int x = -(g)->radius; x < (g)->width + (g)->radius; x++) {                 \
            if (x == 0) x = (g)->width;                                                 \
            int m = ipk_border_index(x, (g)->width, (g)->border);                       \
            for (int c = 0; c < (g)->channels; c++)                                     \
                (col)[(size_t)(x + (g)->radius) * (g)->channels + c] =                  \
                    m < 0 ? (T)0 : (col)[(size_t)(m + (g)->radius) * (g)->channels + c]; \
        }                                                                               \
    } while (0)

/* u8 with a full window of at most 256 pixels: every sum fits 16 bits, so the column sums,
 * the row sums and the division (a high-half multiply) all run on 16-bit lanes. */
static inline void mean_slide_u16(uint16_t *col, const uint8_t *add, const uint8_t *sub, size_t n)
{
    if (add && sub)
        for (size_t i = 0; i < n; i++) col[i] = (uint16_t)(col[i] + add[i] - sub[i]);
    else if (add)
        for (size_t i = 0; i < n; i++) col[i] = (uint16_t)(col[i] + add[i]);
    else if (sub)
        for (size_t i = 0; i < n; i++) col[i] = (uint16_t)(col[i] - sub[i]);
}

static inline void mean_hsum_store_u16(const mean_geom *g, const uint16_t *col, uint16_t *hs, uint8_t *d)
{
    const int ch = g->channels, k = 2 * g->radius + 1, t = g->shift16;
    const size_t n = (size_t)g->width * ch;
    const uint16_t half = (uint16_t)(k * k / 2), m = g->magic16;
    for (size_t i = 0; i < n; i++) hs[i] = (uint16_t)(half + col[i]);
    for (int j = 1; j < k; j++) {
        const uint16_t *cj = col + (size_t)j * ch;
        for (size_t i = 0; i < n; i++) hs[i] = (uint16_t)(hs[i] + cj[i]);
    }
    for (size_t i = 0; i < n; i++) d[i] = (uint8_t)((uint16_t)(((uint32_t)hs[i] * m) >> 16) >> t);
}

MEAN_CLONES static void mean_strip_u8_small(const mean_geom *g, const ipk_img *src, const ipk_img *dst, int y0, int y1,
                                uint16_t *col, uint16_t *hs)
{
    const int r = g->radius;
    const size_t n = (size_t)g->width * g->channels;
    memset(col, 0, g->ext_len * sizeof *col);
    for (int y = y0 - 2 * r; y < y1; y++) {
        const uint8_t *add = mean_src_row(src, y + r, g->border);
        const uint8_t *sub = y > y0 ? mean_src_row(src, y - r - 1, g->border) : NULL;
        mean_slide_u16(col + (size_t)r * g->channels, add, sub, n);
        if (y < y0) continue;
        MEAN_FILL_BORDER(uint16_t, g, col);
        mean_hsum_store_u16(g, col, hs, ipk_row(dst, y));
    }
}

/* hs[x*ch + c] = sum of col over the 2r+1 columns centred on x. Small radii add directly
 * (vectorises); larger ones slide a running sum per channel. */
static inline void mean_hsum_int(const mean_geom *g, const uint32_t *col, uint32_t *hs)
{
    const int ch = g->channels, k = 2 * g->radius + 1;
    const size_t n = (size_t)g->width * ch;
    if (g->radius <= 2) {
        for (size_t i = 0; i < n; i++) {
            uint32_t s = 0;
            for (int j = 0; j < k; j++) s += col[i + (size_t)j * ch];
            hs[i] = s;
        }
        return;
    }
    for (int c = 0; c < ch; c++) {
        uint32_t s = 0;
        for (int j = 0; j < k; j++) s += col[(size_t)j * ch + c];
        hs[c] = s;
        for (size_t i = (size_t)ch + c; i < n; i += ch) {
            s += col[i + (size_t)(k - 1) * ch] - col[i - ch];
            hs[i] = s;
        }
    }
}

static inline void mean_hsum_f64(const mean_geom *g, const double *col, double *hs)
{
    const int ch = g->channels, k = 2 * g->radius + 1;
    const size_t n = (size_t)g->width * ch;
    for (int c = 0; c < ch; c++) {
        double s = 0;
        for (int j = 0; j < k; j++) s += col[(size_t)j * ch + c];
        hs[c] = s;
        for (size_t i = (size_t)ch + c; i < n; i += ch) {
            s += col[i + (size_t)(k - 1) * ch] - col[i - ch];
            hs[i] = s;
        }
    }
}

/* floor((a + n/2) / n) through ((a + n/2) + 0.5) / n in double: the result is within
 * 1e-11 of the exact quotient, which is at least 0.5/n away from an integer. */
static inline uint32_t mean_round_div(uint32_t a, uint32_t n)
{
    return (uint32_t)(((double)a + (double)(n / 2) + 0.5) * (1.0 / (double)n));
}

static inline void mean_store_int(const mean_geom *g, const uint32_t *hs, void *drow, int dtype, int rows_in)
{
    const int ch = g->channels, k = 2 * g->radius + 1;
    const size_t n = (size_t)g->width * ch;
    const uint32_t full = (uint32_t)k * (uint32_t)k, half = full / 2;
    if (g->border == IPK_SHRINK) {
        for (int x = 0; x < g->width; x++) {
            uint32_t cnt = (uint32_t)(mean_inside(x, g->width, g->radius) * rows_in);
            for (int c = 0; c < ch; c++) {
                uint32_t q = mean_round_div(hs[(size_t)x * ch + c], cnt);
                if (dtype == IPK_U8) ((uint8_t *)drow)[(size_t)x * ch + c] = (uint8_t)q;
                else ((uint16_t *)drow)[(size_t)x * ch + c] = (uint16_t)q;
            }
        }
    } else if (dtype == IPK_U8) {
        uint8_t *d = drow;
        const uint64_t magic = g->magic;
        for (size_t i = 0; i < n; i++) d[i] = (uint8_t)(((uint64_t)(hs[i] + half) * magic) >> g->shift);
    } else {
        uint16_t *d = drow;
        for (size_t i = 0; i < n; i++) d[i] = (uint16_t)mean_round_div(hs[i], full);
    }
}

static inline void mean_store_f32(const mean_geom *g, const double *hs, float *d, int rows_in)
{
    const int ch = g->channels, k = 2 * g->radius + 1;
    const double full = (double)k * k;
    for (int x = 0; x < g->width; x++) {
        double cnt = g->border == IPK_SHRINK ? (double)(mean_inside(x, g->width, g->radius) * rows_in) : full;
        for (int c = 0; c < ch; c++) d[(size_t)x * ch + c] = (float)(hs[(size_t)x * ch + c] / cnt);
    }
}

/* Float: the window's rows summed afresh for every output row (see the top of the file). */
MEAN_CLONES static void mean_strip_f32(const mean_geom *g, const ipk_img *src, const ipk_img *dst, int y0, int y1,
                                       double *col, double *hs)
{
    const int r = g->radius;
    const size_t n = (size_t)g->width * g->channels, inner = (size_t)r * g->channels;
    for (int y = y0; y < y1; y++) {
        memset(col, 0, g->ext_len * sizeof *col);
        for (int dy = -r; dy <= r; dy++) {
            const float *add = mean_src_row(src, y + dy, g->border);
            if (add) mean_slide_f32(col + inner, add, NULL, n);
        }
        MEAN_FILL_BORDER(double, g, col);
        mean_hsum_f64(g, col, hs);
        mean_store_f32(g, hs, ipk_row(dst, y), mean_inside(y, src->height, r));
    }
}

/* One strip of output rows y0..y1-1; col and hs are this thread's buffers. */
MEAN_CLONES static void mean_strip(const mean_geom *g, const ipk_img *src, const ipk_img *dst, int y0, int y1,
                       void *col_buf, void *hs_buf)
{
    if (src->dtype == IPK_U8 && g->border != IPK_SHRINK && g->shift16 >= 0) {
        mean_strip_u8_small(g, src, dst, y0, y1, col_buf, hs_buf);
        return;
    }
    if (src->dtype == IPK_F32) {
        mean_strip_f32(g, src, dst, y0, y1, col_buf, hs_buf);
        return;
    }
    const int r = g->radius;
    const size_t n = (size_t)g->width * g->channels, inner = (size_t)r * g->channels;
    memset(col_buf, 0, g->ext_len * sizeof(uint32_t));
    for (int y = y0 - 2 * r; y < y1; y++) {
        const void *add = mean_src_row(src, y + r, g->border);
        const void *sub = y > y0 ? mean_src_row(src, y - r - 1, g->border) : NULL;
        mean_slide_int((uint32_t *)col_buf + inner, src, add, sub, n);
        if (y < y0) continue;
        MEAN_FILL_BORDER(uint32_t, g, (uint32_t *)col_buf);
        mean_hsum_int(g, col_buf, hs_buf);
        mean_store_int(g, hs_buf, ipk_row(dst, y), src->dtype, mean_inside(y, src->height, r));
    }
}

static int mean_args_ok(const ipk_img *src, const ipk_img *dst, int radius, ipk_border border)
{
    return src->data && dst->data && src->width > 0 && src->height > 0 && src->channels >= 1 &&
           src->channels <= 4 && src->width == dst->width && src->height == dst->height &&
           src->channels == dst->channels && src->dtype == dst->dtype &&
           (src->dtype == IPK_U8 || src->dtype == IPK_U16 || src->dtype == IPK_F32) &&
           radius >= 1 && radius <= 100 && border >= IPK_REPLICATE && border <= IPK_SHRINK;
}

int ipk_mean_cpu(const ipk_img *src, const ipk_img *dst, int radius, ipk_border border, int threads)
{
    if (!mean_args_ok(src, dst, radius, border)) return IPK_EINVAL;
    if ((size_t)src->width > (SIZE_MAX / 64 - 256) / 4) return IPK_ENOMEM;
    mean_geom g = { src->width, src->channels, radius, (int)border, 0, 0, 0, 0, -1 };
    g.ext_len = ((size_t)src->width + 2 * (size_t)radius) * (size_t)src->channels;
    mean_set_magic(&g, (uint32_t)((2 * radius + 1) * (2 * radius + 1)));
    const size_t elem = src->dtype == IPK_F32 ? sizeof(double) : sizeof(uint32_t);
    const int strip = mean_strip_rows(radius), n_strips = (src->height + strip - 1) / strip;
    int failed = 0;

    #pragma omp parallel num_threads(ipk_threads(threads))
    {
        void *col = malloc(g.ext_len * elem), *hs = malloc((size_t)src->width * src->channels * elem);
        if (!col || !hs) {
            #pragma omp atomic write
            failed = 1;
        }
        #pragma omp for schedule(static)
        for (int s = 0; s < n_strips; s++) {
            int y1 = (s + 1) * strip < src->height ? (s + 1) * strip : src->height;
            if (col && hs) mean_strip(&g, src, dst, s * strip, y1, col, hs);
        }
        free(col);
        free(hs);
    }
    return failed ? IPK_ENOMEM : IPK_OK;
}
