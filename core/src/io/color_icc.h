/* Colour conversion through embedded ICC profiles, with lcms2 (optional at build time: without
 * it every conversion answers IP_EUNSUPPORTED). */
#ifndef IMGPIPE_COLOR_ICC_H
#define IMGPIPE_COLOR_ICC_H
#include <stddef.h>
#include "imgpipe/plugin.h"

/* Whether this build has lcms2. */
int color_icc_available(void);

/* Converts width x height CMYK pixels (4 interleaved samples, IP_U8 or IP_U16 host order) to sRGB
 * (3 samples, the same depth) through the CMYK ICC profile icc, perceptual intent, rows in parallel
 * on up to `threads` threads. inverted: the samples are stored inverted, 0 meaning full ink (Adobe's
 * CMYK and YCCK JPEG). Strides in bytes.
 * IP_EUNSUPPORTED: built without lcms2; the caller converts with its plain formula instead and warns
 * once that the profile was not used. IP_EFORMAT: the profile is not a usable CMYK profile (the
 * message says why); the caller may fall back the same way. IP_EINVAL: bad arguments. */
int color_icc_cmyk_to_rgb(const unsigned char *icc, size_t icc_len, ip_dtype dtype, int inverted,
                          const void *cmyk, ptrdiff_t cmyk_stride, void *rgb, ptrdiff_t rgb_stride, int width,
                          int height, int threads, char *err, size_t errlen);
#endif
