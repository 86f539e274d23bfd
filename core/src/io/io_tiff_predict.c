#include "io/io_tiff_predict.h"
#include <string.h>
#include "base/image.h"

/* Each sample minus the one `stride` before it, from the row's end back (libtiff's horDiff8). */
static void diff8(unsigned char *row, size_t n, size_t stride)
{
    for (size_t i = n; i-- > stride;) row[i] = (unsigned char)(row[i] - row[i - stride]);
}

static void diff16(unsigned char *row, size_t n_words, size_t stride)
{
    uint16_t *w = (uint16_t *)(void *)row;
    for (size_t i = n_words; i-- > stride;) w[i] = (uint16_t)(w[i] - w[i - stride]);
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
