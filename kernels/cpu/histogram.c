#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ipk.h"
#include "pixels.h"
#include "threads.h"

/* F32: floor(v * bins) in double (exact for any float and bins <= 65536, as numpy's
 * float64 arithmetic), values below 0 in bin 0, 1 and above in the last bin; NaN is
 * counted nowhere, so a channel's counts may sum to less than the pixel count. */
static inline int hist_f32_bin(float v, int bins)
{
    double f = floor((double)v * bins);
    return f < 0 ? 0 : f >= bins ? bins - 1 : (int)f;
}

/* Adds one row's values to the per-channel counts (counts[c * bins + b]). */
static void hist_row(const ipk_img *src, int y, int bins, uint64_t *counts)
{
    const int ch = src->channels, w = src->width;
    const void *row = ipk_row(src, y);
    for (int c = 0; c < ch; c++) {
        uint64_t *cc = counts + (size_t)c * (size_t)bins;
        if (src->dtype == IPK_U8) {
            const uint8_t *s = (const uint8_t *)row + c;
            for (int x = 0; x < w; x++) cc[((uint32_t)s[(size_t)x * ch] * (uint32_t)bins) >> 8]++;
        } else if (src->dtype == IPK_U16) {
            const uint16_t *s = (const uint16_t *)row + c;
            for (int x = 0; x < w; x++) cc[((uint64_t)s[(size_t)x * ch] * (uint64_t)bins) >> 16]++;
        } else {
            const float *s = (const float *)row + c;
            for (int x = 0; x < w; x++)
                if (!isnan(s[(size_t)x * ch])) cc[hist_f32_bin(s[(size_t)x * ch], bins)]++;
        }
    }
}

/* Each thread counts its rows into a private array; the arrays are then summed, which is
 * exact in integers, so the counts do not depend on the thread count. */
int ipk_histogram_cpu(const ipk_img *src, int bins, uint64_t *counts, int threads)
{
    if (bins < 1 || src->channels < 1 || src->width < 0 || src->height < 0 || !counts ||
        (src->dtype != IPK_U8 && src->dtype != IPK_U16 && src->dtype != IPK_F32))
        return IPK_EINVAL;
    const size_t per_thread = (size_t)src->channels * (size_t)bins;
    if (per_thread > SIZE_MAX / sizeof(uint64_t)) return IPK_ENOMEM;
    memset(counts, 0, per_thread * sizeof(uint64_t));
    const int nt = ipk_threads(threads);
    if (per_thread > SIZE_MAX / sizeof(uint64_t) / (size_t)nt) return IPK_ENOMEM;
    uint64_t *priv = calloc((size_t)nt * per_thread, sizeof(uint64_t));
    if (!priv) return IPK_ENOMEM;

    #pragma omp parallel num_threads(nt)
    {
        uint64_t *mine = priv + (size_t)omp_get_thread_num() * per_thread;
        #pragma omp for schedule(static)
        for (int y = 0; y < src->height; y++) hist_row(src, y, bins, mine);
    }
    for (int t = 0; t < nt; t++)
        for (size_t i = 0; i < per_thread; i++) counts[i] += priv[(size_t)t * per_thread + i];
    free(priv);
    return IPK_OK;
}
