/* TIFF predictors applied before compression exactly as libtiff applies them when it encodes a
 * strip (tif_predict.c), so strips compressed outside libtiff are the bytes libtiff would write. */
#ifndef IMGPIPE_IO_TIFF_PREDICT_H
#define IMGPIPE_IO_TIFF_PREDICT_H
#include <stddef.h>
#include <stdint.h>
#include "imgpipe/plugin.h"

/* Rewrites n_rows packed rows of shape's width in place: the horizontal predictor (2) for 8- and
 * 16-bit samples, the floating-point one (3) for 32-bit floats, in the host's byte order. scratch
 * holds one row (used for floats only). */
void tiff_predict_rows(unsigned char *rows, uint32_t n_rows, const ip_shape *shape, unsigned char *scratch);
#endif
