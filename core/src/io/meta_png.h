/* Metadata in PNG files: iCCP, pHYs, eXIf and the text chunks (XMP's iTXt among them). */
#ifndef IMGPIPE_META_PNG_H
#define IMGPIPE_META_PNG_H
#include <stdio.h>
#include "io/meta.h"

/* Writes m's chunks that a PNG of this shape holds (NULL: none), for after IHDR and before IDAT.
 * Write errors show in f's error state; IP_ENOMEM. */
int meta_png_write(FILE *f, const io_meta *m, const ip_shape *shape);
#endif
