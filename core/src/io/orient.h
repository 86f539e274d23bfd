/* EXIF orientation applied to pixels: the eight ways a camera may have stored an image (flips
 * and quarter turns) turned into the upright image a viewer shows. */
#ifndef IMGPIPE_ORIENT_H
#define IMGPIPE_ORIENT_H
#include "imgpipe/plugin.h"

/* The upright shape of an image stored with this orientation: width and height swapped for 5..8. */
ip_shape orient_shape(const ip_shape *stored, int orientation);

/* Writes the upright image of src (stored with orientation 1..8) into dst, whose shape must be
 * orient_shape(src) (any strides, host memory, not overlapping src). With EXIF's meaning:
 * 2 mirrored left-right, 3 turned 180 degrees, 4 mirrored top-bottom, 5 transposed, 6 shown
 * turned 90 degrees clockwise, 7 transversed, 8 shown turned 90 degrees anticlockwise.
 * IP_EINVAL for another orientation or a shape that does not match. */
int orient_apply(const ip_image *src, ip_image *dst, int orientation, int threads);
#endif
