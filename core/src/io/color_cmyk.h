/* CMYK to RGB without a colour profile, for CMYK TIFF and JPEG. */
#ifndef IMGPIPE_COLOR_CMYK_H
#define IMGPIPE_COLOR_CMYK_H
#include <stddef.h>
#include "imgpipe/plugin.h"

/* Converts one row of n pixels the way Pillow's convert("RGB") does: with k = max - K,
 * R = k - round(C * k / max), G from M, B from Y (max = 255, or 65535 for 16-bit), which is
 * (max - C)(max - K) / max rounded.
 *
 * src: n pixels of src_step samples each, C, M, Y, K first; 0 means no ink, or full ink when
 * `inverted` (CMYK JPEG as Adobe writes it). alpha: the index of a sample copied unchanged as a
 * fourth output channel, or -1 for RGB. dst: n pixels of 3 (4 with alpha) samples. depth: IP_U8
 * or IP_U16, for src and dst alike; they must not overlap.
 *
 * This is the one place CMYK becomes RGB: a conversion through the file's ICC profile (lcms2)
 * replaces the call where a profile is present, with the same arguments. */
void color_cmyk_to_rgb_row(const void *src, int src_step, int inverted, int alpha, void *dst, ip_dtype depth,
                           size_t n);
#endif
