#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ipk.h"
#include "entropy_tables.h"
#include "pixels.h"
#include "threads.h"

/* sum n_i log n_i is kept in 64-bit fixed point (2^-40 units): integer updates are exact,
 * so the sum never drifts as the window slides and cannot depend on the path taken to a
 * pixel; (2R+1)^2 log (2R+1)^2 < 2^15 leaves ample headroom. */

typedef struct {
    int width, height, radius, bins;
    int64_t *delta;        /* delta[k] = T(k+1) - T(k), T(k) = k log k in fixed point */
    int64_t *t_n;          /* T(n) = n log n in fixed point, for every window size n */
    double *inv_n;         /* 1 / (n 2^40) */
    uint16_t *bin_of;      /* value -> bin, for values < levels */
    double out_scale;      /* natural-log entropy -> output units */
    int out_u8;
} ent_ctx;

static int ent_args_ok(const ipk_img *src, const ipk_img *dst, const ipk_entropy_params *p)
{
    return src->channels == 1 && dst->channels == 1 && (src->dtype == IPK_U8 || src->dtype == IPK_U16) &&
           (dst->dtype == IPK_F32 || dst->dtype == IPK_U8) && src->width == dst->width &&
           src->height == dst->height && p->radius >= 1 && p->radius <= 30 && p->levels >= 2 &&
           p->levels <= 65536 && p->bins >= 1 && p->bins <= p->levels && isfinite(p->log_scale);
}

/* Largest value of a row: a loop without an early exit, so the compiler vectorises it. */
static int ent_row_max(const ipk_img *src, int y)
{
    const void *row = ipk_row(src, y);
    int top = 0;
    if (src->dtype == IPK_U8) {
        const uint8_t *s = row;
        uint8_t m = 0;
        for (int x = 0; x < src->width; x++) m = s[x] > m ? s[x] : m;
        top = m;
    } else {
        const uint16_t *s = row;
        uint16_t m = 0;
        for (int x = 0; x < src->width; x++) m = s[x] > m ? s[x] : m;
        top = m;
    }
    return top;
}

/* First value >= levels in raster order, so the report is the same for any thread count. */
static int ent_find_bad_value(const ipk_img *src, int levels, int threads, int64_t *bad_value)
{
    if (levels >= (src->dtype == IPK_U8 ? 256 : 65536)) return 0;
    int first_row = INT32_MAX;
    #pragma omp parallel for schedule(static) reduction(min : first_row) num_threads(ipk_threads(threads))
    for (int y = 0; y < src->height; y++)
        if (y < first_row && ent_row_max(src, y) >= levels) first_row = y;
    if (first_row == INT32_MAX) return 0;
    const void *row = ipk_row(src, first_row);
    for (int x = 0; x < src->width; x++) {
        int v = src->dtype == IPK_U8 ? ((const uint8_t *)row)[x] : ((const uint16_t *)row)[x];
        if (v >= levels) {
            *bad_value = v;
            return 1;
        }
    }
    return 0;
}

static void ent_ctx_free(ent_ctx *c)
{
    free(c->delta);
    free(c->t_n);
    free(c->inv_n);
    free(c->bin_of);
}

static int ent_ctx_init(ent_ctx *c, const ipk_img *src, const ipk_img *dst, const ipk_entropy_params *p)
{
    const int side = 2 * p->radius + 1, nmax = side * side;
    const int nvalues = src->dtype == IPK_U8 && p->levels > 256 ? 256 : p->levels;
    c->width = src->width;
    c->height = src->height;
    c->radius = p->radius;
    c->bins = p->bins;
    c->delta = malloc(sizeof *c->delta * (size_t)nmax);
    c->t_n = malloc(sizeof *c->t_n * (size_t)(nmax + 1));
    c->inv_n = malloc(sizeof *c->inv_n * (size_t)(nmax + 1));
    c->bin_of = malloc(sizeof *c->bin_of * (size_t)nvalues);
    if (!c->delta || !c->t_n || !c->inv_n || !c->bin_of) return IPK_ENOMEM;

    ipk_entropy_host_tables(c->t_n, c->inv_n, nmax);
    for (int n = 1; n <= nmax; n++) c->delta[n - 1] = c->t_n[n] - c->t_n[n - 1];
    for (int v = 0; v < nvalues; v++)
        c->bin_of[v] = (uint16_t)((int64_t)v * p->bins / p->levels);

    c->out_u8 = dst->dtype == IPK_U8;
    c->out_scale = ipk_entropy_out_scale(p->radius, p->bins, c->out_u8, p->log_scale);
    return IPK_OK;
}

/* Rows are handed out in strips as threads come free, so a core that is busy with something
 * else does not hold the rest back; a strip starts over from the 2R rows above it, which stays
 * a small part of its work at 16R rows or more. */
#define ENT_STRIP_ROWS 64

static int ent_strip_rows(const ent_ctx *c, int nt)
{
    if (nt == 1) return c->height > 0 ? c->height : 1;
    return 16 * c->radius > ENT_STRIP_ROWS ? 16 * c->radius : ENT_STRIP_ROWS;
}

/* Maps source row y to bins, stored in the ring slot y % (2R+1). */
static void ent_map_row(const ent_ctx *c, const ipk_img *src, int y, uint16_t *ring)
{
    uint16_t *dst = ring + (size_t)(y % (2 * c->radius + 1)) * (size_t)c->width;
    const void *row = ipk_row(src, y);
    if (src->dtype == IPK_U8) {
        const uint8_t *s = row;
        for (int x = 0; x < c->width; x++) dst[x] = c->bin_of[s[x]];
    } else {
        const uint16_t *s = row;
        for (int x = 0; x < c->width; x++) dst[x] = c->bin_of[s[x]];
    }
}

static void ent_store(const ent_ctx *c, void *out, int x, int64_t sum, int n)
{
    /* H = (n log n - sum n_i log n_i) / n: the difference is exact, and 0 for a flat window */
    double h = (double)(c->t_n[n] - sum) * c->inv_n[n] * c->out_scale;
    if (c->out_u8) ((uint8_t *)out)[x] = (uint8_t)(h >= 255.0 ? 255 : (int)(h + 0.5));
    else ((float *)out)[x] = (float)h;
}

/* Adds (+1) or removes (-1) window column x, keeping sum = sum T(n_i) exact. */
static inline int64_t ent_column(const ent_ctx *c, uint16_t *const *rows, int nrows, int x, int add,
                                 uint16_t *counts, int64_t sum)
{
    for (int k = 0; k < nrows; k++) {
        uint16_t b = rows[k][x];
        if (add) sum += c->delta[counts[b]++];
        else sum -= c->delta[--counts[b]];
    }
    return sum;
}

/* The middle of a row, where one column enters and one leaves at every step. Inlined with a
 * constant nrows for radii 1-3 so the loop unrolls and the row pointers stay in registers
 * (about 25% faster than the generic loop at 5x5). */
static inline __attribute__((always_inline)) int ent_slide(const ent_ctx *c, uint16_t *const *rows, const int nrows,
                                                        uint16_t *counts, int64_t *sum_io, int x, void *out,
                                                        int n_full)
{
    const int w = c->width, r = c->radius;
    const uint16_t *row_k[61];
    for (int k = 0; k < nrows; k++) row_k[k] = rows[k];
    int64_t sum = *sum_io;
    for (; x + r < w; x++) {
        for (int k = 0; k < nrows; k++) {
            uint16_t bin_in = row_k[k][x + r], bin_out = row_k[k][x - r - 1];
            if (bin_in == bin_out) continue;   /* common in smooth areas: no change */
            sum += c->delta[counts[bin_in]++];
            sum -= c->delta[--counts[bin_out]];
        }
        ent_store(c, out, x, sum, n_full);
    }
    *sum_io = sum;
    return x;
}

/* One output row: the window enters from the left, slides, and leaves on the right, so the
 * counts are all zero again afterwards (no per-row clearing of up to 65536 bins). */
static void ent_row(const ent_ctx *c, uint16_t *const *rows, int nrows, uint16_t *counts, void *out)
{
    const int w = c->width, r = c->radius;
    int64_t sum = 0;
    int x = 0;
    for (int k = 0; k < r && k < w; k++) sum = ent_column(c, rows, nrows, k, 1, counts, sum);
    for (; x <= r && x < w; x++) {
        if (x + r < w) sum = ent_column(c, rows, nrows, x + r, 1, counts, sum);
        int cols = (x + r < w ? x + r : w - 1) + 1;
        ent_store(c, out, x, sum, cols * nrows);
    }
    const int n_full = (2 * r + 1) * nrows;
    if (nrows == 3) x = ent_slide(c, rows, 3, counts, &sum, x, out, n_full);
    else if (nrows == 5) x = ent_slide(c, rows, 5, counts, &sum, x, out, n_full);
    else if (nrows == 7) x = ent_slide(c, rows, 7, counts, &sum, x, out, n_full);
    else x = ent_slide(c, rows, nrows, counts, &sum, x, out, n_full);
    for (; x < w; x++) {
        sum = ent_column(c, rows, nrows, x - r - 1, 0, counts, sum);
        ent_store(c, out, x, sum, (w - (x - r)) * nrows);
    }
    for (int k = w - r - 1 > 0 ? w - r - 1 : 0; k < w; k++) sum = ent_column(c, rows, nrows, k, 0, counts, sum);
}

/* Rows [y_begin, y_end) with the bins of the window's rows in a ring of 2R+1 rows. */
static void ent_strip(const ent_ctx *c, const ipk_img *src, const ipk_img *dst, int y_begin, int y_end,
                      uint16_t *ring, uint16_t *counts)
{
    const int r = c->radius, h = c->height, side = 2 * r + 1;
    uint16_t *rows[61];
    for (int y = y_begin - r > 0 ? y_begin - r : 0; y < y_begin + r && y < h; y++) ent_map_row(c, src, y, ring);
    for (int y = y_begin; y < y_end; y++) {
        if (y + r < h) ent_map_row(c, src, y + r, ring);
        int y0 = y - r > 0 ? y - r : 0, y1 = y + r < h ? y + r : h - 1;
        for (int yy = y0; yy <= y1; yy++) rows[yy - y0] = ring + (size_t)(yy % side) * (size_t)c->width;
        ent_row(c, rows, y1 - y0 + 1, counts, ipk_row(dst, y));
    }
}

/* Per thread: a ring of 2R+1 binned rows and the window's bin counts (zeroed). */
static size_t ent_thread_bytes(const ent_ctx *c, size_t *ring_elems)
{
    size_t side = (size_t)(2 * c->radius + 1), w = (size_t)c->width;
    if (w > SIZE_MAX / sizeof(uint16_t) / side / 2) return 0;
    *ring_elems = side * w;
    return (*ring_elems + (size_t)c->bins) * sizeof(uint16_t);
}

static int ent_run(const ent_ctx *c, const ipk_img *src, const ipk_img *dst, int threads)
{
    const int nt = ipk_threads(threads);
    size_t ring_elems, per_thread = ent_thread_bytes(c, &ring_elems);
    if (per_thread == 0 || per_thread > SIZE_MAX / (size_t)nt) return IPK_ENOMEM;
    uint16_t *work = calloc((size_t)nt, per_thread);
    if (!work) return IPK_ENOMEM;
    size_t per_thread_elems = per_thread / sizeof(uint16_t);

    /* Strips as in the fast path; every row leaves the counts at zero, so a strip can follow
     * any other on the same thread. */
    const int strip_rows = ent_strip_rows(c, nt), nstrips = (int)(((int64_t)c->height + strip_rows - 1) / strip_rows);
    #pragma omp parallel num_threads(nt)
    {
        uint16_t *ring = work + (size_t)omp_get_thread_num() * per_thread_elems;
        #pragma omp for schedule(dynamic, 1)
        for (int k = 0; k < nstrips; k++) {
            int y_begin = k * strip_rows, y_end = c->height - y_begin > strip_rows ? y_begin + strip_rows : c->height;
            ent_strip(c, src, dst, y_begin, y_end, ring, ring + ring_elems);
        }
    }
    free(work);
    return IPK_OK;
}

/* Fast path for bins <= 16 and windows of at most 255 pixels: every column keeps the 16 bin
 * counts (bytes) of its 2R+1 window rows, updated as a row enters and one leaves; the window's
 * counts then move along a row by adding one column and subtracting another (16 byte lanes:
 * one SSE2 add and one subtract), with R+1 zero columns of padding on each side in place of
 * border tests. sum T(n_i) is looked up whole for each pixel, as T(a) + T(b) for pairs of bins when the
 * pair table fits in L1: the same exact integer the sliding update reaches, so the same output. */
#define ENT_LANES 16
#define ENT_PAIR_SHIFT_MAX 6   /* pair table of 2^12 int64 (32 KiB) at most */

typedef struct {
    int64_t *pair;   /* pair[(a << shift) | b] = T(a) + T(b); NULL: single lookups */
    int shift;
} ent_fast;

static int ent_fast_fits(const ent_ctx *c) { return c->bins <= ENT_LANES && c->radius <= 7; }

static int ent_fast_init(ent_fast *f, const ent_ctx *c)
{
    const int nmax = (2 * c->radius + 1) * (2 * c->radius + 1);
    f->pair = NULL;
    f->shift = 0;
    while ((1 << f->shift) <= nmax) f->shift++;
    if (f->shift > ENT_PAIR_SHIFT_MAX) return IPK_OK;
    const int side = 1 << f->shift;
    f->pair = malloc(sizeof *f->pair * (size_t)side * (size_t)side);
    if (!f->pair) return IPK_ENOMEM;
    for (int a = 0; a < side; a++)
        for (int b = 0; b < side; b++)
            f->pair[(a << f->shift) | b] = (a <= nmax ? c->t_n[a] : 0) + (b <= nmax ? c->t_n[b] : 0);
    return IPK_OK;
}

/* Adds source row y_in (if >= 0) to every column's counts and removes row y_out (if >= 0),
 * in one pass so each column's line is loaded once. */
#define ENT_ROWS_LOOP(T)                                                                          \
    do {                                                                                          \
        const T *s_in = y_in >= 0 ? ipk_row(src, y_in) : NULL;                                   \
        const T *s_out = y_out >= 0 ? ipk_row(src, y_out) : NULL;                                \
        if (s_in && s_out)                                                                        \
            for (int x = 0; x < w; x++) {                                                         \
                cols[(size_t)x * ENT_LANES + bin_of[s_in[x]]]++;                                  \
                cols[(size_t)x * ENT_LANES + bin_of[s_out[x]]]--;                                 \
            }                                                                                     \
        else if (s_in)                                                                            \
            for (int x = 0; x < w; x++) cols[(size_t)x * ENT_LANES + bin_of[s_in[x]]]++;          \
        else if (s_out)                                                                           \
            for (int x = 0; x < w; x++) cols[(size_t)x * ENT_LANES + bin_of[s_out[x]]]--;         \
    } while (0)

static void ent_fast_rows(const ent_ctx *c, const ipk_img *src, int y_in, int y_out, uint8_t *cols)
{
    const int w = c->width;
    const uint16_t *bin_of = c->bin_of;
    if (src->dtype == IPK_U8) ENT_ROWS_LOOP(uint8_t);
    else ENT_ROWS_LOOP(uint16_t);
}

#ifdef __SSE2__
#include <emmintrin.h>
typedef __m128i ent_win;   /* a window's 16 bin counts */

static inline ent_win ent_win_step(ent_win win, const uint8_t *in, const uint8_t *gone)
{
    win = _mm_sub_epi8(win, _mm_loadu_si128((const __m128i *)(const void *)gone));
    return _mm_add_epi8(win, _mm_loadu_si128((const __m128i *)(const void *)in));
}

/* T(a) + T(b) for the 8 pairs of lanes, looked up by (a << shift) | b. */
static inline int64_t ent_win_sum_pairs(ent_win win, const int64_t *pair, __m128i shift)
{
    const __m128i lo = _mm_and_si128(win, _mm_set1_epi16(0xff)), hi = _mm_srli_epi16(win, 8);
    const __m128i idx = _mm_or_si128(_mm_sll_epi16(lo, shift), hi);
    uint16_t i[8];
    _mm_storeu_si128((__m128i *)(void *)i, idx);
    return ((pair[i[0]] + pair[i[1]]) + (pair[i[2]] + pair[i[3]])) +
           ((pair[i[4]] + pair[i[5]]) + (pair[i[6]] + pair[i[7]]));
}

static inline int64_t ent_win_sum(ent_win win, const ent_fast *f, const int64_t *t_n)
{
    if (f->pair) return ent_win_sum_pairs(win, f->pair, _mm_cvtsi32_si128(f->shift));
    uint8_t n[ENT_LANES];
    _mm_storeu_si128((__m128i *)(void *)n, win);
    int64_t sum = 0;
    for (int b = 0; b < ENT_LANES; b++) sum += t_n[n[b]];
    return sum;
}

/* The middle of a row with the pair table, where every window has n pixels: the loop the
 * time goes to, with everything it reads in locals. */
static inline __attribute__((always_inline)) ent_win ent_fast_mid(const ent_ctx *c, const ent_fast *f,
                                                                 const uint8_t *cols, ent_win win, int x_begin,
                                                                 int x_end, int n, void *out, const int out_u8)
{
    const int64_t t_full = c->t_n[n], *pair = f->pair;
    const double inv_n = c->inv_n[n], scale = c->out_scale;
    const __m128i shift = _mm_cvtsi32_si128(f->shift);
    const uint8_t *in = cols + (size_t)(x_begin + 2 * c->radius + 1) * ENT_LANES;
    const uint8_t *gone = cols + (size_t)x_begin * ENT_LANES;
    for (int x = x_begin; x < x_end; x++, in += ENT_LANES, gone += ENT_LANES) {
        win = ent_win_step(win, in, gone);
        double h = (double)(t_full - ent_win_sum_pairs(win, pair, shift)) * inv_n * scale;
        if (out_u8) ((uint8_t *)out)[x] = (uint8_t)(h >= 255.0 ? 255 : (int)(h + 0.5));
        else ((float *)out)[x] = (float)h;
    }
    return win;
}
#define ENT_HAVE_FAST_MID 1
#else
typedef struct { uint8_t n[ENT_LANES]; } ent_win;

static inline ent_win ent_win_step(ent_win win, const uint8_t *in, const uint8_t *gone)
{
    for (int b = 0; b < ENT_LANES; b++) win.n[b] = (uint8_t)(win.n[b] + in[b] - gone[b]);
    return win;
}

static inline int64_t ent_win_sum(ent_win win, const ent_fast *f, const int64_t *t_n)
{
    int64_t sum = 0;
    (void)f;
    for (int b = 0; b < ENT_LANES; b++) sum += t_n[win.n[b]];
    return sum;
}
#endif

/* Output pixels [x_begin, x_end) of a row; n_fixed > 0 is every pixel's window size there. */
static inline __attribute__((always_inline)) ent_win ent_fast_span(const ent_ctx *c, const ent_fast *f,
                                                                  const uint8_t *cols, ent_win win, int x_begin,
                                                                  int x_end, int nrows, int n_fixed, void *out)
{
    const int w = c->width, r = c->radius;
    for (int x = x_begin; x < x_end; x++) {
        win = ent_win_step(win, cols + (size_t)(x + 2 * r + 1) * ENT_LANES, cols + (size_t)x * ENT_LANES);
        int x0 = x - r > 0 ? x - r : 0, x1 = x + r < w ? x + r : w - 1;
        int n = n_fixed > 0 ? n_fixed : (x1 - x0 + 1) * nrows;
        ent_store(c, out, x, ent_win_sum(win, f, c->t_n), n);
    }
    return win;
}

/* One output row from the padded column counts (column x at cols + (x + R + 1) lanes): the
 * edges, where the window is cut, apart from the middle, where its size is fixed. */
static void ent_fast_out_row(const ent_ctx *c, const ent_fast *f, const uint8_t *cols, int nrows, void *out)
{
    const int w = c->width, r = c->radius;
    const int mid_begin = r < w ? r : w, mid_end = w - r > mid_begin ? w - r : mid_begin;
    ent_win win;
    memset(&win, 0, sizeof win);
    for (int x = 0; x < r; x++)   /* columns 0..R-1, less a zero padding column */
        win = ent_win_step(win, cols + (size_t)(x + r + 1) * ENT_LANES, cols);
    win = ent_fast_span(c, f, cols, win, 0, mid_begin, nrows, 0, out);
    const int n_full = (2 * r + 1) * nrows;
#ifdef ENT_HAVE_FAST_MID
    if (f->pair && c->out_u8) win = ent_fast_mid(c, f, cols, win, mid_begin, mid_end, n_full, out, 1);
    else if (f->pair) win = ent_fast_mid(c, f, cols, win, mid_begin, mid_end, n_full, out, 0);
    else
#endif
        win = ent_fast_span(c, f, cols, win, mid_begin, mid_end, nrows, n_full, out);
    ent_fast_span(c, f, cols, win, mid_end, w, nrows, 0, out);
}

/* Rows [y_begin, y_end); cols holds width + 2R + 1 zeroed columns of 16 counts. */
static void ent_fast_strip(const ent_ctx *c, const ent_fast *f, const ipk_img *src, const ipk_img *dst,
                           int y_begin, int y_end, uint8_t *cols_padded)
{
    const int r = c->radius, h = c->height;
    uint8_t *cols = cols_padded + (size_t)(r + 1) * ENT_LANES;
    for (int y = y_begin - r > 0 ? y_begin - r : 0; y < y_begin + r && y < h; y++) ent_fast_rows(c, src, y, -1, cols);
    for (int y = y_begin; y < y_end; y++) {
        ent_fast_rows(c, src, y + r < h ? y + r : -1, y > y_begin && y - r - 1 >= 0 ? y - r - 1 : -1, cols);
        int nrows = (y + r < h ? y + r : h - 1) - (y - r > 0 ? y - r : 0) + 1;
        ent_fast_out_row(c, f, cols_padded, nrows, ipk_row(dst, y));
    }
}

static int ent_fast_run(const ent_ctx *c, const ipk_img *src, const ipk_img *dst, int threads)
{
    const int nt = ipk_threads(threads);
    const size_t ncols = (size_t)c->width + 2 * (size_t)c->radius + 1;
    if (ncols > SIZE_MAX / ENT_LANES / (size_t)nt) return IPK_ENOMEM;
    ent_fast f;
    int rc = ent_fast_init(&f, c);
    uint8_t *work = rc == IPK_OK ? calloc((size_t)nt * ncols, ENT_LANES) : NULL;
    if (!work) {
        free(f.pair);
        return IPK_ENOMEM;
    }
    /* Each strip starts from zero counts (a strip leaves its columns' counts non-zero). */
    const int strip_rows = ent_strip_rows(c, nt);
    const int nstrips = (int)(((int64_t)c->height + strip_rows - 1) / strip_rows);
    #pragma omp parallel num_threads(nt)
    {
        uint8_t *cols = work + (size_t)omp_get_thread_num() * ncols * ENT_LANES;
        #pragma omp for schedule(dynamic, 1)
        for (int k = 0; k < nstrips; k++) {
            int y_begin = k * strip_rows, y_end = c->height - y_begin > strip_rows ? y_begin + strip_rows : c->height;
            memset(cols, 0, ncols * ENT_LANES);
            ent_fast_strip(c, &f, src, dst, y_begin, y_end, cols);
        }
    }
    free(work);
    free(f.pair);
    return IPK_OK;
}

/* Entropy of each pixel's window: the window's bin counts slide along a row (a column
 * enters, a column leaves) and sum n_i log n_i follows from a k log k table, touching only
 * the bins that changed; bins <= 16 take the column-count fast path above. Rows are cut into
 * strips shared out among threads; a pixel's value depends only on its window and the sum is
 * exact, so the result depends neither on the thread count nor on the path taken. */
int ipk_entropy_cpu(const ipk_img *src, const ipk_img *dst, const ipk_entropy_params *p,
                    int threads, int64_t *bad_value)
{
    if (!ent_args_ok(src, dst, p)) return IPK_EINVAL;
    if (src->width == 0 || src->height == 0) return IPK_OK;
    int64_t bad = 0;
    if (ent_find_bad_value(src, p->levels, threads, &bad)) {
        if (bad_value) *bad_value = bad;
        return IPK_ERANGE;
    }
    ent_ctx c;
    memset(&c, 0, sizeof c);
    int rc = ent_ctx_init(&c, src, dst, p);
    if (rc == IPK_OK) rc = ent_fast_fits(&c) ? ent_fast_run(&c, src, dst, threads) : ent_run(&c, src, dst, threads);
    ent_ctx_free(&c);
    return rc;
}
