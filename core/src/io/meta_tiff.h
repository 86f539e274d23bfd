/* Metadata in TIFF files. Written with libtiff where it has tags for it (ICC profile, XMP,
 * resolution, orientation, and EXIF's text tags of IFD0: make, model, date, ...); EXIF's Exif and
 * GPS directories, which libtiff could only write tag by tag through its own types (rationals
 * turned into floats), are appended as bytes after libtiff closes the file, and the first
 * directory's EXIFIFD and GPSIFD entries (written by libtiff with a placeholder) pointed at them. */
#ifndef IMGPIPE_META_TIFF_H
#define IMGPIPE_META_TIFF_H
#include <tiffio.h>
#include "io/meta.h"

/* Sets the tags of m (NULL: none) that a TIFF of this shape holds on the output handle, before
 * its directory is written. Returns 0 when libtiff refuses one. */
int meta_tiff_set_tags(TIFF *tif, const io_meta *m, const ip_shape *shape);
/* After TIFFClose, on the file's descriptor (open for reading and writing): appends the EXIF
 * directories whose placeholders meta_tiff_set_tags wrote. Nothing for BigTIFF (placeholders are
 * not written there). */
int meta_tiff_finish(int fd, const io_meta *m, char *err, size_t errlen);
#endif
