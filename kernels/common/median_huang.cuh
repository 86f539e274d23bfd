/* The per-thread column walk of the GPU median's Huang path with shared-memory atomics
 * (kernels/gpu/median.cu, med_huang2_u8), host and device alike so that
 * tests/gpu/test_median_sep_host.cu runs it on the CPU. A thread owns one column (x, channel)
 * of a strip of rows and slides its window's histograms down it: a row costs 2(2r+1) updates
 * and one selection, so a pixel's cost grows with the radius, not with the window's area.
 * Histograms: a thread's bins v and v^1 share one 32-bit word (16-bit counts, at most 51*51),
 * laid out [word][thread] so that a warp's updates fall in distinct banks; atomicAdd without
 * a result does not wait for the old value, so one thread's consecutive updates no longer form
 * a load-add-store chain through shared memory. */
#ifndef IPK_MEDIAN_HUANG_CUH
#define IPK_MEDIAN_HUANG_CUH

#include <stddef.h>
#include "border.h"
#include "ipk.h"
#include "median_packed.cuh"

#define MED_HUANG_THREADS 64

typedef struct {
    const char *src;
    char *dst;
    ptrdiff_t src_stride, dst_stride;
    int width, height, channels, radius, border;
} med_args;

/* Window size: full (2r+1)^2 except for shrink, which counts only in-image pixels. */
IPK_HD int med_window_n(const med_args &a, int x, int y)
{
    const int r = a.radius, side = 2 * r + 1;
    if (a.border != IPK_SHRINK) return side * side;
    int rows = (y + r < a.height - 1 ? y + r : a.height - 1) - (y - r > 0 ? y - r : 0) + 1;
    int cols = (x + r < a.width - 1 ? x + r : a.width - 1) - (x - r > 0 ? x - r : 0) + 1;
    return rows * cols;
}

IPK_HD unsigned med_load_u8(const unsigned char *p)
{
#ifdef __CUDA_ARCH__
    return __ldg(p);
#else
    return *p;
#endif
}

/* Adds d (possibly negative) to bin v; the word's other half is untouched (no borrow: a
 * count is removed only after it was added). */
IPK_HD void med_bins_add(unsigned *bins, unsigned v, int d)
{
#ifdef __CUDA_ARCH__
    atomicAdd(bins + (v >> 1) * MED_HUANG_THREADS, (unsigned)d << (16 * (v & 1)));
#else
    bins[(v >> 1) * MED_HUANG_THREADS] += (unsigned)d << (16 * (v & 1));
#endif
}

IPK_HD void med_hist2_value(unsigned *fine, unsigned *coarse, unsigned v, int d)
{
    med_bins_add(fine, v, d);
    med_bins_add(coarse, v >> 4, d);
}

/* Adds (d = 1) or removes (d = -1) logical window row ly: interior columns without border maps. */
IPK_HD void med_hist2_row(const med_args &a, unsigned *fine, unsigned *coarse, int x, int ch, int ly, int d)
{
    const int r = a.radius;
    int yy = ipk_border_index(ly, a.height, a.border);
    if (yy < 0) {
        if (a.border != IPK_SHRINK) med_hist2_value(fine, coarse, 0, d * (2 * r + 1));   /* zero: a row of zeros */
        return;
    }
    const unsigned char *row = (const unsigned char *)(a.src + (ptrdiff_t)yy * a.src_stride) + ch;
    if (x >= r && x + r < a.width) {
        const unsigned char *p = row + (ptrdiff_t)(x - r) * a.channels;
#ifdef __CUDA_ARCH__
#pragma unroll 4
#endif
        for (int dx = 0; dx <= 2 * r; dx++) med_hist2_value(fine, coarse, med_load_u8(p + (ptrdiff_t)dx * a.channels), d);
        return;
    }
    for (int dx = -r; dx <= r; dx++) {
        int xx = ipk_border_index(x + dx, a.width, a.border);
        if (xx < 0 && a.border == IPK_SHRINK) continue;
        med_hist2_value(fine, coarse, xx >= 0 ? med_load_u8(row + (ptrdiff_t)xx * a.channels) : 0u, d);
    }
}

/* Where rank k falls among 16 counts held 2 a word in w[0..7] (k below their total): the bin,
 * and in *below the count of the bins before it (the count before w's first bin on entry). */
IPK_HD unsigned med_scan16(const unsigned *w, int k, int *below)
{
    int acc = *below, found = 0;
    unsigned bin = 0;
IPK_UNROLL
    for (int i = 0; i < 16; i++) {
        int count = (int)((w[i >> 1] >> (16 * (i & 1))) & 0xffffu);
        if (!found && acc + count > k) {
            found = 1;
            bin = (unsigned)i;
            *below = acc;
        }
        acc += count;
    }
    return bin;
}

/* The k-th smallest (0-based) value in the histograms: the 8 coarse words, then the 8 fine
 * words of the chosen coarse bin, each read at once rather than bin by dependent bin. */
IPK_HD unsigned med_hist2_select(const unsigned *fine, const unsigned *coarse, int k)
{
    unsigned w[8];
    int below = 0;
IPK_UNROLL
    for (int i = 0; i < 8; i++) w[i] = coarse[i * MED_HUANG_THREADS];
    unsigned cb = med_scan16(w, k, &below);
IPK_UNROLL
    for (int i = 0; i < 8; i++) w[i] = fine[(cb * 8 + i) * MED_HUANG_THREADS];
    return cb * 16 + med_scan16(w, k, &below);
}

/* Rows y0..y1-1 of column (x, ch) from zeroed histograms fine (128 words) and coarse (8). */
IPK_HD void med_huang2_column(const med_args &a, unsigned *fine, unsigned *coarse, int x, int ch, int y0, int y1)
{
    const int r = a.radius;
    for (int dy = -r; dy <= r; dy++) med_hist2_row(a, fine, coarse, x, ch, y0 + dy, 1);
    for (int y = y0; y < y1; y++) {
        unsigned v = med_hist2_select(fine, coarse, (med_window_n(a, x, y) - 1) / 2);
        unsigned char *out = (unsigned char *)(a.dst + (ptrdiff_t)y * a.dst_stride);
        out[(ptrdiff_t)x * a.channels + ch] = (unsigned char)v;
        if (y + 1 == y1) break;
        med_hist2_row(a, fine, coarse, x, ch, y - r, -1);
        med_hist2_row(a, fine, coarse, x, ch, y + r + 1, 1);
    }
}

/* Rows a strip of the shared-atomic Huang kernel covers: at least 64, at least 4 windows. */
IPK_HD int med_huang_strip(int radius) { return 4 * (2 * radius + 1) > 64 ? 4 * (2 * radius + 1) : 64; }

#endif
