/* A whole CMYK image to RGB(A) as the readers need it: through its embedded ICC profile when there
 * is a usable one and lcms2 is built in, else by the plain formula (color_cmyk.h). */
#ifndef IMGPIPE_COLOR_CMYK_IMAGE_H
#define IMGPIPE_COLOR_CMYK_IMAGE_H
#include <stddef.h>
#include "imgpipe/plugin.h"

/* src: rows src_stride bytes apart of out's width in pixels of src_step samples (out's dtype,
 * IP_U8 or IP_U16), C, M, Y, K first; inverted: 0 means full ink (Adobe's CMYK JPEG); alpha: the
 * index of a sample copied as out's fourth channel, or -1. icc: the file's profile, or NULL.
 * why gets, when a profile was there but not used (no lcms2, not a usable CMYK profile), the
 * reason; else "". IP_OK, or IP_ENOMEM (nothing converted). */
int color_cmyk_image_to_rgb(const unsigned char *icc, size_t icc_len, const void *src, ptrdiff_t src_stride,
                            int src_step, int inverted, int alpha, ip_image *out, int threads, char *why,
                            size_t whylen);
#endif
