#include "io/io_tiff_predict.h"
#include <string.h>
#include "base/image.h"

/* Bytes a block of the differences takes at once: both of its loads come before its store, so
 * the compiler vectorizes it, where a loop over single samples with a run-time stride stayed
 * scalar (a byte a step: 6-8% of the cores' samples under perf on the 10-gigapixel run at level 1). */
#define DIFF_BLOCK 32

/* Each sample minus the one `stride` before it, from the row's end back (libtiff's horDiff8):
 * a block reads only samples below its own end, which no later (lower) block has written yet. */
static void diff8(unsigned char *row, size_t n, size_t stride)
{
    size_t i = n;
    for (; i >= stride + DIFF_BLOCK; i -= DIFF_BLOCK) {
        unsigned char cur[DIFF_BLOCK], before[DIFF_BLOCK];
        memcpy(cur, row + i - DIFF_BLOCK, DIFF_BLOCK);
        memcpy(before, row + i - DIFF_BLOCK - stride, DIFF_BLOCK);
        for (int k = 0; k < DIFF_BLOCK; k++) cur[k] = (unsigned char)(cur[k] - before[k]);
        memcpy(row + i - DIFF_BLOCK, cur, DIFF_BLOCK);
    }
    for (; i-- > stride;) row[i] = (unsigned char)(row[i] - row[i - stride]);
}

/* The same on 16-bit samples (n_words of them), in the machine's byte order. */
static void diff16(unsigned char *row, size_t n_words, size_t stride)
{
    enum { WORDS = DIFF_BLOCK / 2 };
    size_t i = n_words;
    for (; i >= stride + WORDS; i -= WORDS) {
        uint16_t cur[WORDS], before[WORDS];
        memcpy(cur, row + 2 * (i - WORDS), sizeof cur);
        memcpy(before, row + 2 * (i - WORDS - stride), sizeof before);
        for (int k = 0; k < WORDS; k++) cur[k] = (uint16_t)(cur[k] - before[k]);
        memcpy(row + 2 * (i - WORDS), cur, sizeof cur);
    }
    uint16_t *w = (uint16_t *)(void *)row;
    for (; i-- > stride;) w[i] = (uint16_t)(w[i] - w[i - stride]);
}

/* libtiff's fpDiff: each float's bytes into byte planes, most significant first, then the
 * differences of the planes' bytes `stride` (samples a pixel) apart. */
static void diff_float(unsigned char *row, size_t row_bytes, size_t stride, unsigned char *scratch)
{
    const size_t bps = 4, words = row_bytes / bps;
    memcpy(scratch, row, row_bytes);
    for (size_t i = 0; i < words; i++)
        for (size_t b = 0; b < bps; b++) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
            row[b * words + i] = scratch[bps * i + b];
#else
            row[(bps - b - 1) * words + i] = scratch[bps * i + b];
#endif
        }
    diff8(row, row_bytes, stride);
}

void tiff_predict_rows(unsigned char *rows, uint32_t n_rows, const ip_shape *shape, unsigned char *scratch)
{
    size_t row_bytes = img_row_bytes(shape), stride = (size_t)shape->channels;
    for (uint32_t y = 0; y < n_rows; y++) {
        unsigned char *row = rows + (size_t)y * row_bytes;
        if (shape->dtype == IP_U8) diff8(row, row_bytes, stride);
        else if (shape->dtype == IP_U16) diff16(row, row_bytes / 2, stride);
        else diff_float(row, row_bytes, stride, scratch);
    }
}
