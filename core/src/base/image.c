#define _DEFAULT_SOURCE
#include "base/image.h"
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#define HUGE_PAGE_BYTES ((size_t)2 << 20)

const char *img_dtype_name(ip_dtype dtype)
{
    switch (dtype) {
    case IP_U8: return "u8";
    case IP_U16: return "u16";
    case IP_F32: return "f32";
    }
    return "?";
}

size_t img_row_bytes(const ip_shape *shape)
{
    if (shape->width <= 0 || shape->channels <= 0 || shape->channels > 4) return 0;
    size_t px = ip_dtype_size(shape->dtype) * (size_t)shape->channels;
    if ((size_t)shape->width > SIZE_MAX / px) return 0;
    return (size_t)shape->width * px;
}

int img_pixel_check(uint64_t width, uint64_t height, uint64_t max_pixels, char *err, size_t errlen)
{
    /* Sides come from 32-bit header fields, so the product cannot overflow. */
    uint64_t pixels = width * height;
    if (pixels <= max_pixels) return IP_OK;
    snprintf(err, errlen, "image is %llux%llu (%llu pixels), over the limit of %llu pixels (--max-pixels raises it)",
             (unsigned long long)width, (unsigned long long)height, (unsigned long long)pixels,
             (unsigned long long)max_pixels);
    return IP_ELIMIT;
}

int img_size_check(const ip_shape *shape, uint64_t max_pixels, size_t *bytes, char *err, size_t errlen)
{
    if (shape->width <= 0 || shape->height <= 0 || shape->channels < 1 || shape->channels > 4) {
        snprintf(err, errlen, "invalid image shape %dx%d with %d channels", shape->width,
                 shape->height, shape->channels);
        return IP_EINVAL;
    }
    int rc = img_pixel_check((uint64_t)shape->width, (uint64_t)shape->height, max_pixels, err, errlen);
    if (rc) return rc;
    size_t row = img_row_bytes(shape);
    if (row == 0 || (size_t)shape->height > SIZE_MAX / row) {
        snprintf(err, errlen, "image is %dx%d with %d channels of %s, too large to address (no option raises it)",
                 shape->width, shape->height, shape->channels, img_dtype_name(shape->dtype));
        return IP_ELIMIT;
    }
    *bytes = row * (size_t)shape->height;
    return IP_OK;
}

void *img_big_malloc(size_t bytes)
{
    if (bytes < 4 * HUGE_PAGE_BYTES || bytes > SIZE_MAX - HUGE_PAGE_BYTES) return malloc(bytes ? bytes : 1);
    size_t rounded = (bytes + HUGE_PAGE_BYTES - 1) / HUGE_PAGE_BYTES * HUGE_PAGE_BYTES;
    void *p = aligned_alloc(HUGE_PAGE_BYTES, rounded);
    if (p) madvise(p, rounded, MADV_HUGEPAGE);   /* advice only: without it, ordinary pages */
    return p;
}

int img_alloc(ip_image *img, const ip_shape *shape, uint64_t max_pixels, char *err, size_t errlen)
{
    size_t bytes;
    int rc = img_size_check(shape, max_pixels, &bytes, err, errlen);
    if (rc) return rc;
    void *data = img_big_malloc(bytes);
    if (!data) {
        snprintf(err, errlen, "out of memory allocating %zu bytes", bytes);
        return IP_ENOMEM;
    }
    img->data = data;
    img->stride = (ptrdiff_t)img_row_bytes(shape);
    img->shape = *shape;
    img->on_device = 0;
    return IP_OK;
}

void img_free(ip_image *img)
{
    if (!img) return;
    free(img->data);
    img->data = NULL;
}
