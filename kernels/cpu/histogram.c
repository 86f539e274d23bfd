#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ipk.h"
#include "pixels.h"
#include "threads.h"

/* U8 values are counted as they are (256 per channel) and mapped to bins once at the end,
 * so no pixel pays for a bin computation. Four interleaved 32-bit sub-histograms let runs of
 * equal values increment different counters instead of waiting on the previous store. */
#define HIST_SUBS 4
/* The 32-bit counters are flushed into 64-bit ones before they can reach 2^32. */
#define HIST_FLUSH_AT ((uint64_t)UINT32_MAX - (1u << 24))
#define HIST_SEGMENT (1 << 24)
#define HIST_CHUNK_ROWS 32

/* F32: floor(v * bins) in double (exact for any float and bins <= 65536, as numpy's
 * float64 arithmetic), values below 0 in bin 0, 1 and above in the last bin; NaN is
 * counted nowhere, so a channel's counts may sum to less than the pixel count. */
static inline int hist_f32_bin(float v, int bins)
{
    double f = floor((double)v * bins);
    return f < 0 ? 0 : f >= bins ? bins - 1 : (int)f;
}

/* Adds one U16 or F32 row's values to the per-channel counts (counts[c * bins + b]). */
static void hist_row_wide(const ipk_img *src, int y, int bins, uint64_t *counts)
{
    const int ch = src->channels, w = src->width;
    const void *row = ipk_row(src, y);
    for (int c = 0; c < ch; c++) {
        uint64_t *cc = counts + (size_t)c * (size_t)bins;
        if (src->dtype == IPK_U16) {
            const uint16_t *s = (const uint16_t *)row + c;
            for (int x = 0; x < w; x++) cc[((uint64_t)s[(size_t)x * ch] * (uint64_t)bins) >> 16]++;
        } else {
            const float *s = (const float *)row + c;
            for (int x = 0; x < w; x++)
                if (!isnan(s[(size_t)x * ch])) cc[hist_f32_bin(s[(size_t)x * ch], bins)]++;
        }
    }
}

/* One channel's bytes, 8 at a time from one 64-bit load, spread over the sub-histograms. */
static void hist_bytes_1ch(const uint8_t *s, size_t n, uint32_t *sub)
{
    uint32_t *h0 = sub, *h1 = sub + 256, *h2 = sub + 512, *h3 = sub + 768;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        uint64_t a, b;
        memcpy(&a, s + i, 8);
        memcpy(&b, s + i + 8, 8);
        h0[a & 255]++, h1[(a >> 8) & 255]++, h2[(a >> 16) & 255]++, h3[(a >> 24) & 255]++;
        h0[(a >> 32) & 255]++, h1[(a >> 40) & 255]++, h2[(a >> 48) & 255]++, h3[a >> 56]++;
        h0[b & 255]++, h1[(b >> 8) & 255]++, h2[(b >> 16) & 255]++, h3[(b >> 24) & 255]++;
        h0[(b >> 32) & 255]++, h1[(b >> 40) & 255]++, h2[(b >> 48) & 255]++, h3[b >> 56]++;
    }
    for (; i < n; i++) h0[s[i]]++;
}

/* Interleaved pixels of ch channels: value v of channel c goes to sub[k][c * 256 + v]. */
static void hist_bytes_nch(const uint8_t *s, size_t npix, int ch, uint32_t *sub)
{
    const size_t plane = (size_t)ch * 256;
    size_t x = 0;
    for (; x + HIST_SUBS <= npix; x += HIST_SUBS)
        for (int k = 0; k < HIST_SUBS; k++)
            for (int c = 0; c < ch; c++) sub[(size_t)k * plane + (size_t)c * 256 + s[(x + k) * ch + c]]++;
    for (; x < npix; x++)
        for (int c = 0; c < ch; c++) sub[(size_t)c * 256 + s[x * ch + c]]++;
}

/* Adds the sub-histograms into the 64-bit value counts and clears them. */
static void hist_flush(uint32_t *sub, size_t plane, uint64_t *values)
{
    for (int k = 0; k < HIST_SUBS; k++)
        for (size_t i = 0; i < plane; i++) values[i] += sub[(size_t)k * plane + i];
    memset(sub, 0, HIST_SUBS * plane * sizeof *sub);
}

/* Row y of a U8 image into the sub-histograms; long rows go in segments, and *pending (values
 * counted since the last flush) decides when the 32-bit counters must be flushed. */
static void hist_u8_row(const ipk_img *src, int y, uint32_t *sub, uint64_t *values, uint64_t *pending)
{
    const int ch = src->channels;
    const size_t plane = (size_t)ch * 256, w = (size_t)src->width;
    const uint8_t *row = ipk_row(src, y);
    for (size_t x = 0; x < w; x += HIST_SEGMENT) {
        size_t npix = w - x < HIST_SEGMENT ? w - x : HIST_SEGMENT;
        if (ch == 1) hist_bytes_1ch(row + x, npix, sub);
        else hist_bytes_nch(row + x * (size_t)ch, npix, ch, sub);
        *pending += npix;
        if (*pending >= HIST_FLUSH_AT) {
            hist_flush(sub, plane, values);
            *pending = 0;
        }
    }
}

/* U8: b = v * bins >> 8, in 32-bit arithmetic as the per-pixel formula always was. */
static void hist_u8_to_bins(const uint64_t *values, int ch, int bins, uint64_t *counts)
{
    for (int c = 0; c < ch; c++)
        for (uint32_t v = 0; v < 256; v++)
            counts[(size_t)c * (size_t)bins + ((v * (uint32_t)bins) >> 8)] += values[(size_t)c * 256 + v];
}

static int hist_u8(const ipk_img *src, int bins, uint64_t *counts, int nt)
{
    const size_t plane = (size_t)src->channels * 256;
    if (plane > SIZE_MAX / sizeof(uint64_t) / (HIST_SUBS + 1) / (size_t)nt) return IPK_ENOMEM;
    uint64_t *values = calloc((size_t)nt * plane, sizeof *values);
    uint32_t *subs = calloc((size_t)nt * HIST_SUBS * plane, sizeof *subs);
    if (!values || !subs) {
        free(values);
        free(subs);
        return IPK_ENOMEM;
    }
    /* Rows are handed out in chunks as threads come free, so a core busy with other work
     * does not hold the rest back. */
    #pragma omp parallel num_threads(nt)
    {
        const int t = omp_get_thread_num();
        uint32_t *sub = subs + (size_t)t * HIST_SUBS * plane;
        uint64_t *mine = values + (size_t)t * plane, pending = 0;
        #pragma omp for schedule(dynamic, HIST_CHUNK_ROWS)
        for (int y = 0; y < src->height; y++) hist_u8_row(src, y, sub, mine, &pending);
        hist_flush(sub, plane, mine);
    }
    for (int t = 1; t < nt; t++)
        for (size_t i = 0; i < plane; i++) values[i] += values[(size_t)t * plane + i];
    hist_u8_to_bins(values, src->channels, bins, counts);
    free(values);
    free(subs);
    return IPK_OK;
}

/* U16 and F32: each thread counts its rows into a private array; the arrays are then summed,
 * which is exact in integers, so the counts do not depend on the thread count. */
static int hist_wide(const ipk_img *src, int bins, uint64_t *counts, int nt)
{
    const size_t per_thread = (size_t)src->channels * (size_t)bins;
    if (per_thread > SIZE_MAX / sizeof(uint64_t) / (size_t)nt) return IPK_ENOMEM;
    uint64_t *priv = calloc((size_t)nt * per_thread, sizeof(uint64_t));
    if (!priv) return IPK_ENOMEM;

    #pragma omp parallel num_threads(nt)
    {
        uint64_t *mine = priv + (size_t)omp_get_thread_num() * per_thread;
        #pragma omp for schedule(dynamic, HIST_CHUNK_ROWS)
        for (int y = 0; y < src->height; y++) hist_row_wide(src, y, bins, mine);
    }
    for (int t = 0; t < nt; t++)
        for (size_t i = 0; i < per_thread; i++) counts[i] += priv[(size_t)t * per_thread + i];
    free(priv);
    return IPK_OK;
}

int ipk_histogram_cpu(const ipk_img *src, int bins, uint64_t *counts, int threads)
{
    if (bins < 1 || src->channels < 1 || src->width < 0 || src->height < 0 || !counts ||
        (src->dtype != IPK_U8 && src->dtype != IPK_U16 && src->dtype != IPK_F32))
        return IPK_EINVAL;
    const size_t per_thread = (size_t)src->channels * (size_t)bins;
    if (per_thread > SIZE_MAX / sizeof(uint64_t)) return IPK_ENOMEM;
    memset(counts, 0, per_thread * sizeof(uint64_t));
    const int nt = ipk_threads(threads);
    return src->dtype == IPK_U8 ? hist_u8(src, bins, counts, nt) : hist_wide(src, bins, counts, nt);
}
