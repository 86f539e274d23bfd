#include "ipk.h"
#include "pixels.h"
#include "threads.h"

static int gray_args_ok(const ipk_img *src, const ipk_img *dst)
{
    return (src->channels == 3 || src->channels == 4) && dst->channels == 1 &&
           src->dtype == dst->dtype && src->width == dst->width && src->height == dst->height;
}

/* 255 * 32768 + 16384 fits 32 bits: 32-bit lanes, and a channel count known at each call
 * site, let the compiler vectorise the row. */
/* Compiled for plain x86-64 and for AVX2, whose shuffles vectorise the 3- and 4-channel loads;
 * the loader picks one: the same integer operations, so the same results. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define GRAY_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define GRAY_CLONES
#endif

GRAY_CLONES static void gray_row_u8_3(const uint8_t *s, uint8_t *d, int width, const int32_t w[3]);
GRAY_CLONES static void gray_row_u8_4(const uint8_t *s, uint8_t *d, int width, const int32_t w[3]);

static inline void gray_row_u8(const uint8_t *s, uint8_t *d, int width, int ch, const int32_t w[3])
{
    const uint32_t w0 = (uint32_t)w[0], w1 = (uint32_t)w[1], w2 = (uint32_t)w[2];
    for (int x = 0; x < width; x++)
        d[x] = (uint8_t)((s[x * ch] * w0 + s[x * ch + 1] * w1 + s[x * ch + 2] * w2 + 16384u) >> 15);
}

static void gray_row_u8_3(const uint8_t *s, uint8_t *d, int width, const int32_t w[3])
{
    gray_row_u8(s, d, width, 3, w);
}

static void gray_row_u8_4(const uint8_t *s, uint8_t *d, int width, const int32_t w[3])
{
    gray_row_u8(s, d, width, 4, w);
}

/* Rounded Q15 fixed point, so 8-bit output equals OpenCV's cvtColor(RGB2GRAY);
 * 64-bit sums because 65535 * 32768 * 3 does not fit 32 bits. */
int ipk_grayscale_cpu(const ipk_img *src, const ipk_img *dst, const int32_t weights_q15[3], int threads)
{
    if (!gray_args_ok(src, dst)) return IPK_EINVAL;
    const uint64_t w0 = (uint64_t)weights_q15[0], w1 = (uint64_t)weights_q15[1], w2 = (uint64_t)weights_q15[2];
    const float f0 = (float)w0 / 32768.0f, f1 = (float)w1 / 32768.0f, f2 = (float)w2 / 32768.0f;
    const int ch = src->channels, width = src->width;
    const ipk_dtype dtype = src->dtype;

    #pragma omp parallel for schedule(static) num_threads(ipk_threads(threads))
    for (int y = 0; y < src->height; y++) {
        const void *s = ipk_row(src, y);
        void *d = ipk_row(dst, y);
        if (dtype == IPK_U8 && ch == 3) {
            gray_row_u8_3(s, d, width, weights_q15);
        } else if (dtype == IPK_U8) {
            gray_row_u8_4(s, d, width, weights_q15);
        } else if (dtype == IPK_U16) {
            const uint16_t *sp = s;
            uint16_t *dp = d;
            for (int x = 0; x < width; x++, sp += ch)
                dp[x] = (uint16_t)((sp[0] * w0 + sp[1] * w1 + sp[2] * w2 + 16384u) >> 15);
        } else {
            const float *sp = s;
            float *dp = d;
            for (int x = 0; x < width; x++, sp += ch)
                dp[x] = sp[0] * f0 + sp[1] * f1 + sp[2] * f2;
        }
    }
    return IPK_OK;
}
