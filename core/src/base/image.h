/* Host images: allocation with overflow and pixel-limit checks. */
#ifndef IMGPIPE_IMAGE_H
#define IMGPIPE_IMAGE_H
#include <stdint.h>
#include "imgpipe/plugin.h"

#define IMG_DEFAULT_MAX_PIXELS ((uint64_t)1 << 30)   /* 1 Gpixel */

/* Bytes of one tightly packed row, or 0 on overflow / invalid shape. */
size_t img_row_bytes(const ip_shape *shape);
/* IP_ELIMIT, with the message naming --max-pixels, when width*height exceeds max_pixels (sides
 * below 2^32). */
int img_pixel_check(uint64_t width, uint64_t height, uint64_t max_pixels, char *err, size_t errlen);
/* Total bytes of a tightly packed image; returns IP_ELIMIT with a message when
 * width*height exceeds max_pixels or the size overflows, IP_EINVAL for a bad shape. */
int img_size_check(const ip_shape *shape, uint64_t max_pixels, size_t *bytes, char *err, size_t errlen);
/* Allocates a tightly packed host image (stride = row bytes). */
int img_alloc(ip_image *img, const ip_shape *shape, uint64_t max_pixels, char *err, size_t errlen);
void img_free(ip_image *img);
/* malloc for large buffers (images, codec scratch): backed by huge pages where the kernel allows,
 * so first touching hundreds of MiB costs hundreds of page faults rather than a hundred thousand.
 * Free with free(). */
void *img_big_malloc(size_t bytes);
const char *img_dtype_name(ip_dtype dtype);   /* "u8", "u16", "f32" */
#endif
