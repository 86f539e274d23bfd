#include "io/color_cmyk.h"
#include <stdint.h>

/* k - round(ink * k / max); the quotient never lies exactly half-way, since max is odd. */
static inline uint32_t channel(uint32_t ink, uint32_t k, uint32_t max)
{
    return k - (uint32_t)(((uint64_t)ink * k + max / 2) / max);
}

static void row_u8(const uint8_t *src, int step, int inverted, int alpha, uint8_t *dst, size_t n)
{
    uint8_t flip = inverted ? 255 : 0;
    int out = alpha >= 0 ? 4 : 3;
    for (size_t i = 0; i < n; i++, src += step, dst += out) {
        uint32_t k = 255u - (uint8_t)(src[3] ^ flip);
        for (int c = 0; c < 3; c++) dst[c] = (uint8_t)channel((uint8_t)(src[c] ^ flip), k, 255u);
        if (alpha >= 0) dst[3] = src[alpha];
    }
}

static void row_u16(const uint16_t *src, int step, int inverted, int alpha, uint16_t *dst, size_t n)
{
    uint16_t flip = inverted ? 65535 : 0;
    int out = alpha >= 0 ? 4 : 3;
    for (size_t i = 0; i < n; i++, src += step, dst += out) {
        uint32_t k = 65535u - (uint16_t)(src[3] ^ flip);
        for (int c = 0; c < 3; c++) dst[c] = (uint16_t)channel((uint16_t)(src[c] ^ flip), k, 65535u);
        if (alpha >= 0) dst[3] = src[alpha];
    }
}

void color_cmyk_to_rgb_row(const void *src, int src_step, int inverted, int alpha, void *dst, ip_dtype depth,
                           size_t n)
{
    if (depth == IP_U16) row_u16(src, src_step, inverted, alpha, dst, n);
    else row_u8(src, src_step, inverted, alpha, dst, n);
}
