#include "io/io_tiff_convert.h"
#include <string.h>

static float sample_as_float(const unsigned char *p, unsigned bytes, int is_signed)
{
    if (bytes == 1) return is_signed ? (float)(int8_t)p[0] : (float)p[0];
    if (bytes == 2) {
        uint16_t v;
        memcpy(&v, p, 2);
        return is_signed ? (float)(int16_t)v : (float)v;
    }
    uint32_t v;
    memcpy(&v, p, 4);
    return is_signed ? (float)(int32_t)v : (float)v;
}

void tiff_to_float(const void *raw, ptrdiff_t raw_stride, unsigned bytes, int is_signed, size_t samples,
                   ip_image *out, int threads)
{
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int32_t y = 0; y < out->shape.height; y++) {
        const unsigned char *src = (const unsigned char *)raw + (size_t)y * (size_t)raw_stride;
        unsigned char *dst = (unsigned char *)out->data + (size_t)y * (size_t)out->stride;
        /* In place (4-byte samples) each sample is read before its own bytes are written. */
        for (size_t i = 0; i < samples; i++) {
            float f = sample_as_float(src + i * bytes, bytes, is_signed);
            memcpy(dst + i * sizeof f, &f, sizeof f);
        }
    }
}
