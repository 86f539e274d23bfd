#include "io_tiff_alpha.h"
#include <stdint.h>

static void row_u8(uint8_t *p, int32_t width, int c)
{
    for (int32_t x = 0; x < width; x++, p += c) {
        unsigned a = p[c - 1];
        for (int k = 0; k < c - 1 && a != 255; k++) {
            unsigned v = a ? p[k] * 255u / a : 0;
            p[k] = (uint8_t)(v > 255 ? 255 : v);
        }
    }
}

static void row_u16(uint16_t *p, int32_t width, int c)
{
    for (int32_t x = 0; x < width; x++, p += c) {
        uint32_t a = p[c - 1];
        for (int k = 0; k < c - 1 && a != 65535; k++) {
            uint32_t v = a ? p[k] * 65535u / a : 0;
            p[k] = (uint16_t)(v > 65535 ? 65535 : v);
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
        if (img->shape.dtype == IP_U8) row_u8(row, img->shape.width, c);
        else if (img->shape.dtype == IP_U16) row_u16((uint16_t *)(void *)row, img->shape.width, c);
        else if (img->shape.dtype == IP_F32) row_f32((float *)(void *)row, img->shape.width, c);
    }
}
