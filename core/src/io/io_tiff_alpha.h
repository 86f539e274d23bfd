/* TIFF's associated (premultiplied) alpha turned into the straight alpha imgpipe's images carry. */
#ifndef IMGPIPE_IO_TIFF_ALPHA_H
#define IMGPIPE_IO_TIFF_ALPHA_H
#include "imgpipe/plugin.h"

/* img: 2 or 4 channels, alpha last, u8, u16 or f32; each colour sample divided by its alpha,
 * as Pillow's RGBa unpacking does: c * max / a truncated and clipped to max, 0 where a is 0
 * (floats: c / a, 0 where a is 0). */
void tiff_unpremultiply(ip_image *img, int threads);
#endif
