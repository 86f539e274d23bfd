#include "io/io_tiff_alpha.h"
#include <stdint.h>
#include <string.h>

static uint32_t get(const unsigned char *row, size_t i, int wide)
{
    uint16_t v;
    if (!wide) return row[i];
    memcpy(&v, row + 2 * i, 2);
    return v;
}

static void put(unsigned char *row, size_t i, int wide, uint32_t value)
{
    uint16_t v = (uint16_t)value;
    if (wide) memcpy(row + 2 * i, &v, 2);
    else row[i] = (unsigned char)value;
}

/* 8 or 16-bit samples (wide): c * max / a, truncated and clipped; alpha at its maximum leaves them. */
static void row_int(unsigned char *row, int32_t width, int c, int wide)
{
    uint32_t max = wide ? 65535u : 255u;
    for (size_t px = 0; px < (size_t)width * (size_t)c; px += (size_t)c) {
        uint32_t a = get(row, px + (size_t)c - 1, wide);
        for (int k = 0; k < c - 1 && a != max; k++) {
            uint32_t v = a ? get(row, px + (size_t)k, wide) * max / a : 0;
            put(row, px + (size_t)k, wide, v > max ? max : v);
        }
    }
}

static void row_f32(float *p, int32_t width, int c)
{
    for (int32_t x = 0; x < width; x++, p += c) {
        float a = p[c - 1];
        for (int k = 0; k < c - 1; k++) p[k] = a != 0.0f ? p[k] / a : 0.0f;
    }
}

void tiff_unpremultiply(ip_image *img, int threads)
{
    int c = img->shape.channels;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int32_t y = 0; y < img->shape.height; y++) {
        unsigned char *row = (unsigned char *)img->data + (size_t)y * (size_t)img->stride;
        if (img->shape.dtype == IP_F32) row_f32((float *)(void *)row, img->shape.width, c);
        else row_int(row, img->shape.width, c, img->shape.dtype == IP_U16);
    }
}
