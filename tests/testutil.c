#define _POSIX_C_SOURCE 200809L
#include "testutil.h"
#include <stdlib.h>
#include <string.h>
#include <math.h>

int tu_passed, tu_failed;

int tu_finish(void)
{
    printf("%d passed, %d failed\n", tu_passed, tu_failed);
    /* a test that checked nothing proved nothing; one that has nothing to check skips (tu_skip) */
    if (tu_passed + tu_failed == 0) {
        printf("FAIL: no check ran\n");
        return 1;
    }
    return tu_failed ? 1 : 0;
}

void tu_skip(const char *reason)
{
    printf("SKIP: %s\n", reason);
    exit(77);
}

int tu_quick(void)
{
    const char *v = getenv("IMGPIPE_TEST_QUICK");
    return v && atoi(v) > 0;
}

void tu_seed(tu_rng *r, uint64_t seed) { r->s = seed * 2654435761u + 88172645463325252ull; }

uint32_t tu_next(tu_rng *r)
{
    uint64_t x = r->s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    r->s = x;
    return (uint32_t)(x >> 32);
}

static size_t dsize(ipk_dtype t) { return t == IPK_U8 ? 1 : t == IPK_U16 ? 2 : 4; }

ipk_img tu_img_zeros(int w, int h, int c, ipk_dtype t, int pad_bytes)
{
    ipk_img img = { 0 };
    img.width = w;
    img.height = h;
    img.channels = c;
    img.dtype = t;
    /* Padding is rounded to whole values: real strides always keep elements aligned. */
    size_t pad = ((size_t)pad_bytes + dsize(t) - 1) / dsize(t) * dsize(t);
    img.stride = (ptrdiff_t)((size_t)w * c * dsize(t) + pad);
    img.data = calloc((size_t)img.stride * (size_t)(h > 0 ? h : 1) + 16, 1);
    if (!img.data) { fprintf(stderr, "out of memory\n"); exit(2); }
    return img;
}

ipk_img tu_img_random(int w, int h, int c, ipk_dtype t, int pad_bytes, tu_rng *r)
{
    ipk_img img = tu_img_zeros(w, h, c, t, pad_bytes);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int k = 0; k < c; k++) {
                void *p = tu_px(&img, x, y, k);
                uint32_t v = tu_next(r);
                if (t == IPK_U8) *(uint8_t *)p = (uint8_t)v;
                else if (t == IPK_U16) *(uint16_t *)p = (uint16_t)v;
                else *(float *)p = (float)(v >> 8) / 16777216.0f;
            }
    return img;
}

ipk_img tu_img_u8_extremes(int w, int h, tu_rng *r)
{
    ipk_img img = tu_img_random(w, h, 1, IPK_U8, 3, r);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            uint32_t kind = (uint32_t)((x / 5 + y / 3) % 3);
            if (kind) *(uint8_t *)tu_px(&img, x, y, 0) = kind == 1 ? 0 : 255;
        }
    return img;
}

void tu_img_free(ipk_img *img)
{
    free(img->data);
    img->data = NULL;
}

void *tu_px(const ipk_img *img, int x, int y, int ch)
{
    return (char *)img->data + (ptrdiff_t)y * img->stride + ((size_t)x * img->channels + ch) * dsize(img->dtype);
}

ipk_img tu_img_view(const ipk_img *img, int x, int w)
{
    ipk_img view = *img;
    view.data = tu_px(img, x, 0, 0);
    view.width = w;
    return view;
}

double tu_get(const ipk_img *img, int x, int y, int ch)
{
    const void *p = tu_px(img, x, y, ch);
    if (img->dtype == IPK_U8) return *(const uint8_t *)p;
    if (img->dtype == IPK_U16) return *(const uint16_t *)p;
    return *(const float *)p;
}

double tu_max_diff(const ipk_img *a, const ipk_img *b)
{
    double worst = 0;
    for (int y = 0; y < a->height; y++)
        for (int x = 0; x < a->width; x++)
            for (int k = 0; k < a->channels; k++) {
                double d = fabs(tu_get(a, x, y, k) - tu_get(b, x, y, k));
                if (d > worst || isnan(d)) worst = isnan(d) ? INFINITY : d;
            }
    return worst;
}

const char *tu_tmpdir(void)
{
    static char path[256];
    if (!path[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(path, sizeof path, "%s/imgpipe-test-XXXXXX", base && *base ? base : "/tmp");
        if (!mkdtemp(path)) { perror("mkdtemp"); exit(2); }
    }
    return path;
}

int tu_same_file(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb, ca = 0, cb = 0;
    while (same && (ca = fgetc(fa)) == (cb = fgetc(fb)) && ca != EOF) {}
    same = same && ca == cb;
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return same;
}
