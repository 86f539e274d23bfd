#include "api_check.h"

int api_failures;

size_t api_sample_size(imgpipe_sample s) { return s == IMGPIPE_U8 ? 1 : s == IMGPIPE_U16 ? 2 : 4; }

static uint32_t next_random(uint32_t *state)
{
    *state = *state * 1664525u + 1013904223u;
    return *state >> 8;
}

imgpipe_image api_random_image(int w, int h, int c, imgpipe_sample s, size_t stride, uint32_t seed)
{
    size_t row = (size_t)w * (size_t)c * api_sample_size(s);
    imgpipe_image im = { NULL, w, h, c, s, stride ? stride : row, IMGPIPE_HOST, 0 };
    im.data = malloc(im.stride * (size_t)h);
    memset(im.data, 0xAB, im.stride * (size_t)h);
    for (int y = 0; y < h; y++) {
        unsigned char *r = (unsigned char *)im.data + (size_t)y * im.stride;
        for (int i = 0; i < w * c; i++) {
            uint32_t v = next_random(&seed);
            /* memcpy: a row stride need not be a multiple of the sample's size */
            uint16_t v16 = (uint16_t)v;
            float vf = (float)(v % 100000) / 1000.0f - 20.0f;
            if (s == IMGPIPE_U8) r[i] = (unsigned char)v;
            else if (s == IMGPIPE_U16) memcpy(r + 2 * (size_t)i, &v16, 2);
            else memcpy(r + 4 * (size_t)i, &vf, 4);
        }
    }
    return im;
}

double api_at(const imgpipe_image *im, int x, int y, int k)
{
    size_t stride = im->stride ? im->stride : (size_t)im->width * (size_t)im->channels * api_sample_size(im->sample);
    const unsigned char *r = (const unsigned char *)im->data + (size_t)y * stride;
    size_t i = (size_t)x * (size_t)im->channels + (size_t)k;
    uint16_t v16;
    float vf;
    if (im->sample == IMGPIPE_U8) return r[i];
    if (im->sample == IMGPIPE_U16) return memcpy(&v16, r + 2 * i, 2), v16;
    return memcpy(&vf, r + 4 * i, 4), vf;
}

static void put(imgpipe_image *im, int x, int y, int k, double v)
{
    unsigned char *r = (unsigned char *)im->data + (size_t)y * im->stride;
    size_t i = (size_t)x * (size_t)im->channels + (size_t)k;
    if (im->sample == IMGPIPE_U8) r[i] = (unsigned char)v;
    uint16_t v16 = (uint16_t)v;
    float vf = (float)v;
    if (im->sample == IMGPIPE_U16) memcpy(r + 2 * i, &v16, 2);
    else if (im->sample == IMGPIPE_F32) memcpy(r + 4 * i, &vf, 4);
}

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

imgpipe_image api_ref_median3(const imgpipe_image *in)
{
    imgpipe_image out = api_random_image(in->width, in->height, in->channels, in->sample, 0, 1);
    for (int y = 0; y < in->height; y++)
        for (int x = 0; x < in->width; x++)
            for (int k = 0; k < in->channels; k++) {
                double win[9];
                int n = 0;
                for (int dy = -1; dy <= 1; dy++)
                    for (int dx = -1; dx <= 1; dx++)
                        win[n++] = api_at(in, clampi(x + dx, 0, in->width - 1), clampi(y + dy, 0, in->height - 1), k);
                qsort(win, 9, sizeof *win, cmp_double);
                put(&out, x, y, k, win[4]);
            }
    return out;
}

imgpipe_image api_ref_gray_u8(const imgpipe_image *in)
{
    imgpipe_image out = api_random_image(in->width, in->height, 1, IMGPIPE_U8, 0, 1);
    for (int y = 0; y < in->height; y++)
        for (int x = 0; x < in->width; x++) {
            unsigned r = (unsigned)api_at(in, x, y, 0), g = (unsigned)api_at(in, x, y, 1), b = (unsigned)api_at(in, x, y, 2);
            put(&out, x, y, 0, (double)((r * 9798 + g * 19235 + b * 3735 + 16384) >> 15));
        }
    return out;
}

int api_same(const imgpipe_image *a, const imgpipe_image *b, const char *what)
{
    if (a->width != b->width || a->height != b->height || a->channels != b->channels || a->sample != b->sample) {
        fprintf(stderr, "%s: shapes differ: %dx%dx%d/%d against %dx%dx%d/%d\n", what, a->width, a->height, a->channels,
                (int)a->sample, b->width, b->height, b->channels, (int)b->sample);
        return 0;
    }
    for (int y = 0; y < a->height; y++)
        for (int x = 0; x < a->width; x++)
            for (int k = 0; k < a->channels; k++)
                if (api_at(a, x, y, k) != api_at(b, x, y, k)) {
                    fprintf(stderr, "%s: differ at (%d, %d) channel %d: %g against %g\n", what, x, y, k,
                            api_at(a, x, y, k), api_at(b, x, y, k));
                    return 0;
                }
    return 1;
}
