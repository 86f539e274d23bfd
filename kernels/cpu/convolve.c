#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ipk.h"
#include "border.h"
#include "conv_round.h"
#include "convolve_separable.h"
#include "pixels.h"
#include "threads.h"

/* Convolve (correlation as OpenCV filter2D, anchor at the centre). EXACT ARITHMETIC, which
 * the GPU kernel reproduces bit for bit for integer output:
 *
 * Out-of-image pixels: replicate and reflect101 map through ipk_border_index; zero and
 * shrink read them as 0 (shrink cuts the window to the image, which for a weighted sum is the
 * same: the divisor does not change).
 *
 * Integer path, when the input is u8/u16 and ipk_conv_weights_integral() holds:
 *   S = sum of w * px over the window, exact (any order; here int16, int32 or int64 lanes,
 *   chosen so that sum|w| * max pixel fits, and a separable kernel as two exact integer passes
 *   with the factors of ipk_conv_split_int()). v = (double)S / divisor + offset in double.
 *   Integer output: rint(v) (half to even), saturated; f32 output: (float)v.
 *
 * Float path, otherwise, in fp32 with no fused multiply-add (C11 mode: -ffp-contract=off):
 *   separable (ipk_conv_split_float(), factors col/row): t = 0.0f; for kx = 0..kw-1 ascending
 *   t = t + row[kx] * px(x + kx - rx, y'); then acc = 0.0f; for ky = 0..kh-1 ascending
 *   acc = acc + col[ky] * t(x, y + ky - ry). Otherwise acc = 0.0f; for ky ascending, for kx
 *   ascending acc = acc + (float)w * px. Every term is added, zero weights and zero border
 *   pixels included. v = acc / (float)divisor + (float)offset in float.
 *   Integer output: rintf(v) saturated; f32 output: v.
 * In both paths a NaN result gives 0 in an integer output. */

/* The hot loops are compiled twice, for plain x86-64 (the build's target) and for AVX2, and the
 * loader picks one for the machine: the same operations, so the same results. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define CONV_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define CONV_CLONES
#endif

/* Rows per strip: each strip reads kh - 1 rows beyond its own, so tall kernels get taller
 * strips. The split never changes a result: every output row is computed the same way. */
static int conv_strip_rows(int kh) { return 4 * kh > 32 ? 4 * kh : 32; }
#define CONV_LUT_MAX 65536

typedef struct {
    int width, height, channels, kw, kh, rx, ry, border;
    ipk_dtype in_type, out_type;
    size_t n;              /* values per row: width * channels */
    size_t ext_len;        /* a row widened by the horizontal border: (width + kw - 1) * channels */
    int integer, separable, acc_bytes;   /* acc_bytes: 2, 4 or 8 (integer); 4 (float) */
    int64_t iw[31 * 31], icol[31], irow[31];
    float fw[31 * 31], fcol[31], frow[31];
    double divisor, offset;
    float fdivisor, foffset;
    int64_t lut_min;       /* lut[S - lut_min] is the output for sum S; lut NULL if not used */
    void *lut;
    int finish;            /* IPK_CONV_FINISH_*: how integer sums become integer output */
    ipk_conv_rounding fin; /* its constants (conv_round.h) */
} conv_plan;

static double conv_max_value(ipk_dtype t) { return t == IPK_U8 ? 255.0 : t == IPK_U16 ? 65535.0 : 1.0; }

static void conv_store_double(const conv_plan *p, void *d, size_t i, double v)
{
    if (p->out_type == IPK_F32) ((float *)d)[i] = (float)v;
    else if (p->out_type == IPK_U8) ((uint8_t *)d)[i] = (uint8_t)ipk_conv_saturate(v, 255.0);
    else ((uint16_t *)d)[i] = (uint16_t)ipk_conv_saturate(v, 65535.0);
}

/* Integer path: CONV_INT_FUNCS makes one copy per accumulator type (int16, int32, int64). */

#define CONV_FINISH_LOOP(ROUND, acc, d)                                                            \
    do {                                                                                           \
        const ipk_conv_rounding r = p->fin;                                                        \
        if (p->out_type == IPK_U8) {                                                               \
            uint8_t *restrict o8 = (d);                                                            \
            for (size_t i = 0; i < n; i++)                                                         \
                o8[i] = (uint8_t)ipk_conv_clamp(ROUND(r, r.sign * (int32_t)(acc)[i] + r.bias), 255); \
        } else {                                                                                   \
            uint16_t *restrict o16 = (d);                                                          \
            for (size_t i = 0; i < n; i++)                                                         \
                o16[i] = (uint16_t)ipk_conv_clamp(ROUND(r, r.sign * (int32_t)(acc)[i] + r.bias), 65535); \
        }                                                                                          \
    } while (0)

/* Source row y (border mapped, zeros when it contributes nothing), widened and converted. */
#define CONV_INT_FUNCS(T, SUF)                                                                     \
static inline void conv_load_##SUF(const conv_plan *p, const ipk_img *src, int y, T *ext)          \
{                                                                                                  \
    int sy = ipk_border_index(y, p->height, p->border);                                            \
    if (sy < 0) {                                                                                  \
        memset(ext, 0, p->ext_len * sizeof *ext);                                                  \
        return;                                                                                    \
    }                                                                                              \
    const void *row = ipk_row(src, sy);                                                            \
    T *mid = ext + (size_t)p->rx * p->channels;                                                    \
    if (p->in_type == IPK_U8)                                                                      \
        for (size_t i = 0; i < p->n; i++) mid[i] = (T)((const uint8_t *)row)[i];                   \
    else                                                                                           \
        for (size_t i = 0; i < p->n; i++) mid[i] = (T)((const uint16_t *)row)[i];                  \
    for (int x = -p->rx; x < p->width + p->rx; x++) {                                              \
        if (x == 0) x = p->width;                                                                  \
        if (x >= p->width + p->rx) break;                                                          \
        int sx = ipk_border_index(x, p->width, p->border);                                         \
        for (int c = 0; c < p->channels; c++)                                                      \
            ext[(size_t)(x + p->rx) * p->channels + c] =                                           \
                sx < 0 ? (T)0 : mid[(size_t)sx * p->channels + c];                                 \
    }                                                                                              \
}                                                                                                  \
                                                                                                   \
/* out[i] = sum over the m taps of w[t] * src[t][i], three taps per pass over out (the             \
 * integer sums are exact, so the grouping does not matter); no taps: zeros. */                    \
static inline void conv_sum_##SUF(const T *const *src, const T *w, int m, T *restrict out,         \
                                  size_t n)                                                        \
{                                                                                                  \
    if (m == 0) memset(out, 0, n * sizeof *out);                                                   \
    for (int t = 0; t < m; t += 3) {                                                               \
        const T *restrict a = src[t], *restrict b = src[t + (t + 1 < m)];                          \
        const T *restrict c = src[t + 2 * (t + 2 < m)];                                            \
        const T wa = w[t], wb = t + 1 < m ? w[t + 1] : 0, wc = t + 2 < m ? w[t + 2] : 0;           \
        if (t == 0)                                                                                \
            for (size_t i = 0; i < n; i++) out[i] = (T)(wa * a[i] + wb * b[i] + wc * c[i]);        \
        else                                                                                       \
            for (size_t i = 0; i < n; i++) out[i] = (T)(out[i] + wa * a[i] + wb * b[i] + wc * c[i]); \
    }                                                                                              \
}                                                                                                  \
                                                                                                   \
/* The non-zero taps of weights w[0..count-1] read at base[k] + k*step. */                         \
static inline int conv_list_##SUF(const int64_t *w, int count, T *const base, size_t step,         \
                                  const T **src, T *wt)                                            \
{                                                                                                  \
    int m = 0;                                                                                     \
    for (int k = 0; k < count; k++)                                                                \
        if (w[k]) {                                                                                \
            src[m] = base + (size_t)k * step;                                                      \
            wt[m++] = (T)w[k];                                                                     \
        }                                                                                          \
    return m;                                                                                      \
}                                                                                                  \
                                                                                                   \
/* Table lookups go to `near` (in cache) and then to the image in one copy: one scalar store a     \
 * byte straight into uncached rows would stall on every line. */                                  \
static inline void conv_finish_##SUF(const conv_plan *p, const T *restrict acc, void *near, void *d) \
{                                                                                                  \
    const size_t n = p->n;                                                                         \
    if (p->lut && p->out_type == IPK_U8) {                                                         \
        const uint8_t *restrict lut = (const uint8_t *)p->lut - p->lut_min;                        \
        uint8_t *restrict out = near;                                                              \
        for (size_t i = 0; i < n; i++) out[i] = lut[acc[i]];                                       \
        memcpy(d, near, n);                                                                        \
    } else if (p->lut && p->out_type == IPK_U16) {                                                 \
        const uint16_t *restrict lut = (const uint16_t *)p->lut - p->lut_min;                      \
        uint16_t *restrict out = near;                                                             \
        for (size_t i = 0; i < n; i++) out[i] = lut[acc[i]];                                       \
        memcpy(d, near, n * 2);                                                                    \
    } else if (p->finish == IPK_CONV_FINISH_SHIFT) {                                               \
        CONV_FINISH_LOOP(ipk_conv_round_shift, acc, d);                                            \
    } else if (p->finish == IPK_CONV_FINISH_ODD) {                                                 \
        CONV_FINISH_LOOP(ipk_conv_round_odd, acc, d);                                              \
    } else {                                                                                       \
        for (size_t i = 0; i < p->n; i++)                                                          \
            conv_store_double(p, d, i, (double)acc[i] / p->divisor + p->offset);                   \
    }                                                                                              \
}                                                                                                  \
                                                                                                   \
/* Output rows y0..y1-1. ring: kh rows of ext_len (direct) or of n (separable, row-pass            \
 * results) plus one ext row; slot of source row j is j mod kh. */                                 \
CONV_CLONES static void conv_strip_##SUF(const conv_plan *p, const ipk_img *src, const ipk_img *dst, \
                                         int y0, int y1, T *ring, T *ext, T *acc)                  \
{                                                                                                  \
    const size_t slot = p->separable ? p->n : p->ext_len, ch = (size_t)p->channels;                \
    const T *taps[31 * 31];                                                                        \
    T weights[31 * 31];                                                                            \
    for (int j = y0 - p->ry; j < y1 + p->ry; j++) {                                                \
        T *r = ring + (size_t)(((j % p->kh) + p->kh) % p->kh) * slot;                              \
        if (p->separable) {                                                                        \
            conv_load_##SUF(p, src, j, ext);                                                       \
            int m = conv_list_##SUF(p->irow, p->kw, ext, ch, taps, weights);                       \
            conv_sum_##SUF(taps, weights, m, r, p->n);                                             \
        } else {                                                                                   \
            conv_load_##SUF(p, src, j, r);                                                         \
        }                                                                                          \
        int y = j - p->ry, m = 0;                                                                  \
        if (y < y0) continue;                                                                      \
        for (int k = 0; k < p->kh; k++) {                                                          \
            T *row = ring + (size_t)((((y - p->ry + k) % p->kh) + p->kh) % p->kh) * slot;          \
            if (p->separable)                                                                      \
                m += conv_list_##SUF(p->icol + k, 1, row, 0, taps + m, weights + m);               \
            else                                                                                   \
                m += conv_list_##SUF(p->iw + (size_t)k * p->kw, p->kw, row, ch, taps + m, weights + m); \
        }                                                                                          \
        conv_sum_##SUF(taps, weights, m, acc, p->n);                                               \
        conv_finish_##SUF(p, acc, ext, ipk_row(dst, y));                                           \
    }                                                                                              \
}

CONV_INT_FUNCS(int16_t, i16)
CONV_INT_FUNCS(int32_t, i32)
CONV_INT_FUNCS(int64_t, i64)

/* Float path, in the documented order. */

static inline void conv_load_f32(const conv_plan *p, const ipk_img *src, int y, float *ext)
{
    int sy = ipk_border_index(y, p->height, p->border);
    if (sy < 0) {
        memset(ext, 0, p->ext_len * sizeof *ext);
        return;
    }
    const void *row = ipk_row(src, sy);
    float *mid = ext + (size_t)p->rx * p->channels;
    if (p->in_type == IPK_U8)
        for (size_t i = 0; i < p->n; i++) mid[i] = (float)((const uint8_t *)row)[i];
    else if (p->in_type == IPK_U16)
        for (size_t i = 0; i < p->n; i++) mid[i] = (float)((const uint16_t *)row)[i];
    else
        memcpy(mid, row, p->n * sizeof *mid);
    for (int x = -p->rx; x < p->width + p->rx; x++) {
        if (x == 0) x = p->width;
        if (x >= p->width + p->rx) break;
        int sx = ipk_border_index(x, p->width, p->border);
        for (int c = 0; c < p->channels; c++)
            ext[(size_t)(x + p->rx) * p->channels + c] = sx < 0 ? 0.0f : mid[(size_t)sx * p->channels + c];
    }
}

/* out[i] = sum of w[t] * src[t][i] for t = 0..m-1, added one term at a time in that order to
 * an accumulator that starts at 0.0f; three terms per pass over out. */
static inline void conv_sum_f32(const float *const *src, const float *w, int m, float *restrict out, size_t n)
{
    int t = 0;
    for (; t + 3 <= m; t += 3) {
        const float *restrict a = src[t], *restrict b = src[t + 1], *restrict c = src[t + 2];
        const float wa = w[t], wb = w[t + 1], wc = w[t + 2], start = 0.0f;
        if (t == 0)
            for (size_t i = 0; i < n; i++) out[i] = ((start + wa * a[i]) + wb * b[i]) + wc * c[i];
        else
            for (size_t i = 0; i < n; i++) out[i] = ((out[i] + wa * a[i]) + wb * b[i]) + wc * c[i];
    }
    if (m - t == 2) {
        const float *restrict a = src[t], *restrict b = src[t + 1];
        const float wa = w[t], wb = w[t + 1];
        for (size_t i = 0; i < n; i++) out[i] = ((t ? out[i] : 0.0f) + wa * a[i]) + wb * b[i];
    } else if (m - t == 1) {
        const float *restrict a = src[t];
        const float wa = w[t];
        for (size_t i = 0; i < n; i++) out[i] = (t ? out[i] : 0.0f) + wa * a[i];
    }
}

/* Every tap, zero weights included (the order is part of the result): base + k*step. */
static inline int conv_list_f32(const float *w, int count, const float *base, size_t step, const float **src,
                                float *wt)
{
    for (int k = 0; k < count; k++) {
        src[k] = base + (size_t)k * step;
        wt[k] = w[k];
    }
    return count;
}

/* Integer output: rintf, then NaN and negatives to 0 and the top clamped, as compares that vectorise. */
static inline void conv_finish_f32(const conv_plan *p, float *restrict acc, void *d)
{
    const float div = p->fdivisor, off = p->foffset;
    const size_t n = p->n;
    for (size_t i = 0; i < n; i++) acc[i] = acc[i] / div + off;
    if (p->out_type == IPK_F32) {
        memcpy(d, acc, n * sizeof *acc);
        return;
    }
    const float max_value = p->out_type == IPK_U8 ? 255.0f : 65535.0f;
    for (size_t i = 0; i < n; i++) {
        float r = rintf(acc[i]);
        r = r > 0.0f ? r : 0.0f;
        acc[i] = r < max_value ? r : max_value;
    }
    if (p->out_type == IPK_U8) {
        uint8_t *restrict o8 = d;
        for (size_t i = 0; i < n; i++) o8[i] = (uint8_t)(int32_t)acc[i];
    } else {
        uint16_t *restrict o16 = d;
        for (size_t i = 0; i < n; i++) o16[i] = (uint16_t)(int32_t)acc[i];
    }
}

CONV_CLONES static void conv_strip_f32(const conv_plan *p, const ipk_img *src, const ipk_img *dst, int y0,
                                       int y1, float *ring, float *ext, float *acc)
{
    const size_t slot = p->separable ? p->n : p->ext_len, ch = (size_t)p->channels;
    const float *taps[31 * 31];
    float weights[31 * 31];
    for (int j = y0 - p->ry; j < y1 + p->ry; j++) {
        float *r = ring + (size_t)(((j % p->kh) + p->kh) % p->kh) * slot;
        if (p->separable) {
            conv_load_f32(p, src, j, ext);
            conv_sum_f32(taps, weights, conv_list_f32(p->frow, p->kw, ext, ch, taps, weights), r, p->n);
        } else {
            conv_load_f32(p, src, j, r);
        }
        int y = j - p->ry, m = 0;
        if (y < y0) continue;
        for (int k = 0; k < p->kh; k++) {
            const float *row = ring + (size_t)((((y - p->ry + k) % p->kh) + p->kh) % p->kh) * slot;
            if (p->separable)
                m += conv_list_f32(p->fcol + k, 1, row, 0, taps + m, weights + m);
            else
                m += conv_list_f32(p->fw + (size_t)k * p->kw, p->kw, row, ch, taps + m, weights + m);
        }
        conv_sum_f32(taps, weights, m, acc, p->n);
        conv_finish_f32(p, acc, ipk_row(dst, y));
    }
}

static int conv_weights_finite(const ipk_conv_params *p)
{
    for (int i = 0; i < p->kw * p->kh; i++)
        if (!isfinite(p->weights[i])) return 0;
    return 1;
}

static int conv_args_ok(const ipk_img *src, const ipk_img *dst, const ipk_conv_params *p)
{
    int dtype_ok = src->dtype == IPK_U8 || src->dtype == IPK_U16 || src->dtype == IPK_F32;
    return src->data && dst->data && p && p->weights && dtype_ok && src->width > 0 && src->height > 0 &&
           src->channels >= 1 && src->channels <= 4 && src->width == dst->width &&
           src->height == dst->height && src->channels == dst->channels &&
           (dst->dtype == src->dtype || dst->dtype == IPK_F32) && p->kw >= 1 && p->kw <= 31 &&
           p->kh >= 1 && p->kh <= 31 && p->kw % 2 == 1 && p->kh % 2 == 1 && p->divisor != 0 &&
           isfinite(p->divisor) && isfinite(p->offset) && p->border >= IPK_REPLICATE &&
           p->border <= IPK_SHRINK && conv_weights_finite(p);
}

/* SHIFT or ODD rounding when the divisor, the offset and the largest |sum| allow (conv_round.h). */
static void conv_plan_finish(conv_plan *p, int64_t max_abs_sum)
{
    p->finish = p->out_type == IPK_F32 ? IPK_CONV_FINISH_GENERAL
                                       : ipk_conv_round_plan(p->divisor, p->offset, max_abs_sum, &p->fin);
}

/* Lane width for exact integer sums: the largest |partial sum| is sum|w| * max pixel. */
static void conv_plan_integer(conv_plan *p, const double *w)
{
    const int taps = p->kw * p->kh;
    int64_t abs_sum = 0, lo = 0, hi = 0, max_value = (int64_t)conv_max_value(p->in_type);
    for (int i = 0; i < taps; i++) {
        p->iw[i] = (int64_t)w[i];
        abs_sum += p->iw[i] < 0 ? -p->iw[i] : p->iw[i];
        if (p->iw[i] < 0) lo += p->iw[i] * max_value;
        else hi += p->iw[i] * max_value;
    }
    const int64_t bound = abs_sum * max_value;
    p->acc_bytes = bound <= INT16_MAX ? 2 : bound <= INT32_MAX ? 4 : 8;
    p->separable = ipk_conv_split_int(w, p->kw, p->kh, p->icol, p->irow);
    p->lut_min = lo;
    p->lut = NULL;
    conv_plan_finish(p, lo < -hi ? -lo : hi);
    if (p->finish == IPK_CONV_FINISH_GENERAL && hi - lo < CONV_LUT_MAX && p->out_type != IPK_F32)
        p->lut = malloc((size_t)(hi - lo + 1) * (p->out_type == IPK_U8 ? 1 : 2));
    for (int64_t s = lo; p->lut && s <= hi; s++)
        conv_store_double(p, p->lut, (size_t)(s - lo), (double)s / p->divisor + p->offset);
}

static void conv_plan_float(conv_plan *p, const double *w)
{
    for (int i = 0; i < p->kw * p->kh; i++) p->fw[i] = (float)w[i];
    p->separable = ipk_conv_split_float(w, p->kw, p->kh, p->fcol, p->frow);
    p->acc_bytes = 4;
    p->lut = NULL;
}

static void conv_plan_init(conv_plan *p, const ipk_img *src, const ipk_img *dst, const ipk_conv_params *k)
{
    memset(p, 0, sizeof *p);
    p->width = src->width;
    p->height = src->height;
    p->channels = src->channels;
    p->kw = k->kw;
    p->kh = k->kh;
    p->rx = k->kw / 2;
    p->ry = k->kh / 2;
    p->border = (int)k->border;
    p->in_type = src->dtype;
    p->out_type = dst->dtype;
    p->n = (size_t)src->width * src->channels;
    p->ext_len = ((size_t)src->width + (size_t)k->kw - 1) * src->channels;
    p->divisor = k->divisor;
    p->offset = k->offset;
    p->fdivisor = (float)k->divisor;
    p->foffset = (float)k->offset;
    p->integer = src->dtype != IPK_F32 && ipk_conv_weights_integral(k->weights, k->kw * k->kh);
    if (p->integer) conv_plan_integer(p, k->weights);
    else conv_plan_float(p, k->weights);
}

static void conv_strip(const conv_plan *p, const ipk_img *src, const ipk_img *dst, int y0, int y1,
                       void *ring, void *ext, void *acc)
{
    if (!p->integer) conv_strip_f32(p, src, dst, y0, y1, ring, ext, acc);
    else if (p->acc_bytes == 2) conv_strip_i16(p, src, dst, y0, y1, ring, ext, acc);
    else if (p->acc_bytes == 4) conv_strip_i32(p, src, dst, y0, y1, ring, ext, acc);
    else conv_strip_i64(p, src, dst, y0, y1, ring, ext, acc);
}

int ipk_convolve_cpu(const ipk_img *src, const ipk_img *dst, const ipk_conv_params *params, int threads)
{
    if (!conv_args_ok(src, dst, params)) return IPK_EINVAL;
    if ((size_t)src->width > SIZE_MAX / 8192) return IPK_ENOMEM;
    conv_plan *p = malloc(sizeof *p);
    if (!p) return IPK_ENOMEM;
    conv_plan_init(p, src, dst, params);
    const size_t ring_bytes = (size_t)p->kh * p->ext_len * (size_t)p->acc_bytes;
    const size_t row_bytes = p->ext_len * (size_t)p->acc_bytes;
    const int strip = conv_strip_rows(params->kh), n_strips = (src->height + strip - 1) / strip;
    int failed = 0;

    #pragma omp parallel num_threads(ipk_threads(threads))
    {
        void *ring = malloc(ring_bytes), *ext = malloc(row_bytes), *acc = malloc(row_bytes);
        if (!ring || !ext || !acc) {
            #pragma omp atomic write
            failed = 1;
        }
        #pragma omp for schedule(static)
        for (int s = 0; s < n_strips; s++) {
            int y1 = (s + 1) * strip < src->height ? (s + 1) * strip : src->height;
            if (ring && ext && acc) conv_strip(p, src, dst, s * strip, y1, ring, ext, acc);
        }
        free(ring);
        free(ext);
        free(acc);
    }
    free(p->lut);
    free(p);
    return failed ? IPK_ENOMEM : IPK_OK;
}
