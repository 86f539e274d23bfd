/* Row addressing for strided interleaved images. */
#ifndef IPK_PIXELS_H
#define IPK_PIXELS_H
#include "ipk.h"

static inline void *ipk_row(const ipk_img *img, int y)
{
    return (char *)img->data + (ptrdiff_t)y * img->stride;
}

static inline size_t ipk_dtype_bytes(ipk_dtype t) { return t == IPK_U8 ? 1 : t == IPK_U16 ? 2 : 4; }
#endif
