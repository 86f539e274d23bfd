#include "io/orient.h"
#include <stddef.h>
#include <string.h>

/* Destination tiles of this side keep a transpose's source reads within a few cache lines. */
#define TILE 64

ip_shape orient_shape(const ip_shape *stored, int orientation)
{
    ip_shape s = *stored;
    if (orientation >= 5 && orientation <= 8) {
        s.width = stored->height;
        s.height = stored->width;
    }
    return s;
}

/* The source pixel shown at upright (x, y): its column and row. */
static void source_of(int orientation, int w, int h, int x, int y, int *sx, int *sy)
{
    switch (orientation) {
    case 2: *sx = w - 1 - x, *sy = y; break;
    case 3: *sx = w - 1 - x, *sy = h - 1 - y; break;
    case 4: *sx = x, *sy = h - 1 - y; break;
    case 5: *sx = y, *sy = x; break;
    case 6: *sx = y, *sy = h - 1 - x; break;
    case 7: *sx = w - 1 - y, *sy = h - 1 - x; break;
    case 8: *sx = w - 1 - y, *sy = x; break;
    default: *sx = x, *sy = y; break;
    }
}

#define SPAN(N)                                                         \
    for (int i = 0; i < n; i++, s += step) memcpy(d + (size_t)i * N, s, N); \
    break;

/* n pixels of bpp bytes to consecutive places, read step bytes apart. */
static void copy_span(unsigned char *d, const unsigned char *s, int n, ptrdiff_t step, size_t bpp)
{
    switch (bpp) {
    case 1: SPAN(1)
    case 2: SPAN(2)
    case 3: SPAN(3)
    case 4: SPAN(4)
    case 6: SPAN(6)
    case 8: SPAN(8)
    case 12: SPAN(12)
    case 16: SPAN(16)
    default:
        for (int i = 0; i < n; i++, s += step) memcpy(d + (size_t)i * bpp, s, bpp);
        break;
    }
}

static int shapes_match(const ip_shape *a, const ip_shape *b)
{
    return a->width == b->width && a->height == b->height && a->channels == b->channels && a->dtype == b->dtype;
}

int orient_apply(const ip_image *src, ip_image *dst, int orientation, int threads)
{
    ip_shape want = orient_shape(&src->shape, orientation);
    if (orientation < 1 || orientation > 8 || !shapes_match(&want, &dst->shape) || !src->data || !dst->data ||
        src->shape.channels < 1 || src->shape.channels > 4)
        return IP_EINVAL;
    int w = src->shape.width, h = src->shape.height, out_w = want.width, out_h = want.height;
    size_t bpp = ip_dtype_size(src->shape.dtype) * (size_t)src->shape.channels;
    int transposing = orientation >= 5;
    ptrdiff_t step = transposing ? (orientation == 5 || orientation == 8 ? src->stride : -src->stride)
                                 : (orientation == 1 || orientation == 4 ? (ptrdiff_t)bpp : -(ptrdiff_t)bpp);
    int tile_w = transposing ? TILE : out_w, tile_h = transposing ? TILE : 1;
    long tiles_y = (out_h + tile_h - 1) / tile_h;
    if (threads < 1) threads = 1;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long ty = 0; ty < tiles_y; ty++) {
        int y0 = (int)ty * tile_h, y1 = y0 + tile_h < out_h ? y0 + tile_h : out_h;
        for (int x0 = 0; x0 < out_w; x0 += tile_w) {
            int n = out_w - x0 < tile_w ? out_w - x0 : tile_w;
            for (int y = y0; y < y1; y++) {
                int sx, sy;
                source_of(orientation, w, h, x0, y, &sx, &sy);
                const unsigned char *s = (const unsigned char *)src->data + (ptrdiff_t)sy * src->stride + (size_t)sx * bpp;
                unsigned char *d = (unsigned char *)dst->data + (ptrdiff_t)y * dst->stride + (size_t)x0 * bpp;
                copy_span(d, s, n, step, bpp);
            }
        }
    }
    return IP_OK;
}
