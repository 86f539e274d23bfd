#define _POSIX_C_SOURCE 200809L
#include "bench_common.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint8_t bench_pattern(uint32_t x, uint32_t y, uint32_t c)
{
    uint32_t h = (x * 0x9E3779B1u) ^ (y * 0x85EBCA77u) ^ (c * 0xC2B2AE3Du);
    h ^= h >> 15;
    h *= 0x2C1B3C6Du;
    h ^= h >> 12;
    return (uint8_t)(((x + y) >> 4) + (h >> 26));
}

static size_t dtype_bytes(ipk_dtype t) { return t == IPK_U8 ? 1 : t == IPK_U16 ? 2 : 4; }

size_t bench_img_bytes(const ipk_img *img)
{
    if (img->height <= 0 || img->stride <= 0) return 0;
    if ((size_t)img->stride > SIZE_MAX / (size_t)img->height) return 0;
    return (size_t)img->stride * (size_t)img->height;
}

int bench_img_zeros(ipk_img *img, int w, int h, int c, ipk_dtype t, int pad)
{
    memset(img, 0, sizeof *img);
    if (w <= 0 || h <= 0 || c <= 0 || pad < 0) return -1;
    size_t px = dtype_bytes(t) * (size_t)c;
    if ((size_t)w > (SIZE_MAX - (size_t)pad) / px || (size_t)w * px + (size_t)pad > (size_t)PTRDIFF_MAX)
        return -1;
    img->width = w;
    img->height = h;
    img->channels = c;
    img->dtype = t;
    img->stride = (ptrdiff_t)((size_t)w * px + (size_t)pad);
    size_t bytes = bench_img_bytes(img);
    img->data = bytes ? calloc(bytes, 1) : NULL;
    return img->data ? 0 : -1;
}

int bench_img_pattern(ipk_img *img, int w, int h, int c, int pad, int shift, int x0, int y0)
{
    if (bench_img_zeros(img, w, h, c, IPK_U8, pad) != 0) return -1;
    #pragma omp parallel for schedule(static)
    for (int y = 0; y < h; y++) {
        uint8_t *row = (uint8_t *)img->data + (ptrdiff_t)y * img->stride;
        for (int x = 0; x < w; x++)
            for (int k = 0; k < c; k++)
                row[(size_t)x * c + k] = (uint8_t)(bench_pattern((uint32_t)(x + x0), (uint32_t)(y + y0),
                                                                 (uint32_t)k) >> shift);
    }
    return 0;
}

void bench_img_free(ipk_img *img)
{
    free(img->data);
    img->data = NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *v, int n)
{
    if (n <= 0) return 0.0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double bench_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}
