#include "io/io_png_internal.h"
#include <string.h>

/* Filtered rows are tried in blocks so that a filter already worse than the best one stops
 * early (as libpng's does) while the loops inside a block stay simple enough to vectorise. */
#define FILTER_BLOCK 4096

static int paeth_predictor(int a, int b, int c)
{
    int pa = b - c < 0 ? c - b : b - c;
    int pb = a - c < 0 ? c - a : a - c;
    int pc = a + b - 2 * c < 0 ? 2 * c - a - b : a + b - 2 * c;
    return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/* Filters bytes [i0, i1) of row into out; bytes before bpp have no left neighbour (0). */
static void filter_range(int type, const uint8_t *r, const uint8_t *p, size_t i0, size_t i1, unsigned bpp,
                         uint8_t *out)
{
    size_t i = i0;
    for (; i < i1 && i < bpp; i++) {
        int up = p[i];
        int pred = type == PNGX_FILTER_SUB ? 0 : type == PNGX_FILTER_AVG ? up >> 1 : up;
        out[i] = (uint8_t)(r[i] - pred);
    }
    switch (type) {
    case PNGX_FILTER_SUB:
        for (; i < i1; i++) out[i] = (uint8_t)(r[i] - r[i - bpp]);
        break;
    case PNGX_FILTER_UP:
        for (; i < i1; i++) out[i] = (uint8_t)(r[i] - p[i]);
        break;
    case PNGX_FILTER_AVG:
        for (; i < i1; i++) out[i] = (uint8_t)(r[i] - ((r[i - bpp] + p[i]) >> 1));
        break;
    default:
        for (; i < i1; i++) out[i] = (uint8_t)(r[i] - paeth_predictor(r[i - bpp], p[i], p[i - bpp]));
        break;
    }
}

/* Sum of the bytes taken as signed magnitudes, libpng's measure of a filtered row. */
static size_t signed_sum(const uint8_t *v, size_t n)
{
    size_t sum = 0;
    for (size_t i = 0; i < n; i++) sum += v[i] < 128 ? v[i] : 256 - v[i];
    return sum;
}

/* Filters the whole row into out unless its sum exceeds limit; returns the sum so far. */
static size_t try_filter(int type, const uint8_t *r, const uint8_t *p, size_t n, unsigned bpp, size_t limit,
                         uint8_t *out)
{
    size_t sum = 0;
    for (size_t i0 = 0; i0 < n && sum <= limit; i0 += FILTER_BLOCK) {
        size_t i1 = n - i0 < FILTER_BLOCK ? n : i0 + FILTER_BLOCK;
        filter_range(type, r, p, i0, i1, bpp, out);
        sum += signed_sum(out + i0, i1 - i0);
    }
    return sum;
}

/* The five trials vectorise far better with AVX2: on a 12-MP gray image they went from 12-14% of
 * a PNG run's cycles on one core to 1-1.5% (perf); the same code, so the same filter choices.
 * The clones stay static (clang 14 names an exported one's dispatcher apart from the function). */
#define FILTER_CLONES __attribute__((target_clones("avx2", "default")))

FILTER_CLONES static void filter_row(const uint8_t *row, const uint8_t *prev, size_t n, unsigned bpp,
                                     unsigned allowed, uint8_t *out, uint8_t *try)
{
    /* Without a filter other than None, libpng writes the row as it is. */
    if ((allowed & ~1u) == 0) {
        out[0] = PNGX_FILTER_NONE;
        memcpy(out + 1, row, n);
        return;
    }
    int best = -1;
    size_t best_sum = (size_t)-1;
    if (allowed & 1u) {
        best = PNGX_FILTER_NONE;
        best_sum = signed_sum(row, n);
    }
    uint8_t *best_buf = NULL, *spare = out + 1, *other = try + 1;
    for (int type = PNGX_FILTER_SUB; type <= PNGX_FILTER_PAETH; type++) {
        if (!(allowed & (1u << type))) continue;
        size_t sum = try_filter(type, row, prev, n, bpp, best_sum, spare);
        if (sum < best_sum || best < 0) {
            best = type, best_sum = sum;
            uint8_t *was = best_buf ? best_buf : other;
            best_buf = spare;
            spare = was;
        }
    }
    out[0] = (uint8_t)best;
    if (best == PNGX_FILTER_NONE) memcpy(out + 1, row, n);
    else if (best_buf != out + 1) memcpy(out + 1, best_buf, n);
}

void pngx_filter_row(const uint8_t *row, const uint8_t *prev, size_t n, unsigned bpp, unsigned allowed,
                     uint8_t *out, uint8_t *try)
{
    filter_row(row, prev, n, bpp, allowed, out, try);
}

unsigned pngx_allowed_filters(uint32_t width, uint32_t height)
{
    unsigned allowed = PNGX_ALL_FILTERS;
    if (height == 1) allowed &= ~((1u << PNGX_FILTER_UP) | (1u << PNGX_FILTER_AVG) | (1u << PNGX_FILTER_PAETH));
    if (width == 1) allowed &= ~((1u << PNGX_FILTER_SUB) | (1u << PNGX_FILTER_AVG) | (1u << PNGX_FILTER_PAETH));
    return allowed ? allowed : 1u;
}

/* The reconstruction loops for bytes [i0, i1) of one row, from the filtered bytes f into r
 * (whose bytes before i0 and all of p are final), specialised by the compiler for each pixel size
 * they are called with. */
static inline __attribute__((always_inline)) void unfilter_span(int type, const uint8_t *f, uint8_t *r,
                                                               const uint8_t *p, size_t i0, size_t i1, unsigned bpp)
{
    size_t i = i0;
    switch (type) {
    case PNGX_FILTER_NONE:
        memcpy(r + i0, f + i0, i1 - i0);
        break;
    case PNGX_FILTER_SUB:
        for (; i < bpp && i < i1; i++) r[i] = f[i];
        for (; i < i1; i++) r[i] = (uint8_t)(f[i] + r[i - bpp]);
        break;
    case PNGX_FILTER_UP:
        for (; i < i1; i++) r[i] = (uint8_t)(f[i] + p[i]);
        break;
    case PNGX_FILTER_AVG:
        for (; i < bpp && i < i1; i++) r[i] = (uint8_t)(f[i] + (p[i] >> 1));
        for (; i < i1; i++) r[i] = (uint8_t)(f[i] + ((r[i - bpp] + p[i]) >> 1));
        break;
    default:
        for (; i < bpp && i < i1; i++) r[i] = (uint8_t)(f[i] + p[i]);
        for (; i < i1; i++) r[i] = (uint8_t)(f[i] + paeth_predictor(r[i - bpp], p[i], p[i - bpp]));
        break;
    }
}

int pngx_unfilter_span(int type, const uint8_t *filtered, uint8_t *row, const uint8_t *prev, size_t i0, size_t i1,
                       unsigned bpp)
{
    if (type < PNGX_FILTER_NONE || type > PNGX_FILTER_PAETH) return -1;
    switch (bpp) {
    case 1: unfilter_span(type, filtered, row, prev, i0, i1, 1); break;
    case 2: unfilter_span(type, filtered, row, prev, i0, i1, 2); break;
    case 3: unfilter_span(type, filtered, row, prev, i0, i1, 3); break;
    case 4: unfilter_span(type, filtered, row, prev, i0, i1, 4); break;
    case 6: unfilter_span(type, filtered, row, prev, i0, i1, 6); break;
    case 8: unfilter_span(type, filtered, row, prev, i0, i1, 8); break;
    default: unfilter_span(type, filtered, row, prev, i0, i1, bpp); break;
    }
    return 0;
}

int pngx_unfilter_row(int type, const uint8_t *filtered, uint8_t *row, const uint8_t *prev, size_t n,
                      unsigned bpp)
{
    return pngx_unfilter_span(type, filtered, row, prev, 0, n, bpp);
}
