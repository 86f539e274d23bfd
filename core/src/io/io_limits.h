/* The limits on untrusted files that a fuzzer probes (docs/FUZZING.md), besides the pixel limit
 * (image.h): each is checked before the memory or time it guards is spent, and each refusal is
 * IP_ELIMIT with one line naming the limit, the value found and the option that raises it. */
#ifndef IMGPIPE_IO_LIMITS_H
#define IMGPIPE_IO_LIMITS_H
#include <stddef.h>
#include <stdint.h>
#include "io/io.h"

/* Real files stay far below these. The most compressible ones measured: a blank 1-bit palette
 * PNG decodes to 24,500 times its size (deflate's bound makes 33,000 the most any PNG can), a
 * blank Group 4 fax page to 11,600 times. */
#define IO_DEFAULT_MAX_RATIO 100000
#define IO_DEFAULT_MAX_JPEG_SCANS 1000   /* real progressive files have about ten */
/* A gigapixel of RGBA float in libtiff's 8 KiB strips is 2M strips. */
#define IO_DEFAULT_MAX_TIFF_BLOCKS ((uint64_t)1 << 22)
#define IO_DEFAULT_MAX_TIFF_TILE_BYTES ((uint64_t)64 << 20)
/* A TIFF tile side beyond this is corrupt, whatever the options (every reader: whole, streamed, GPU). */
#define TILE_SIDE_MAX 65536u

/* The size of the regular file open on fd; 0 (unknown) for anything else. */
uint64_t io_file_bytes(int fd);

/* decoded_bytes (the image of this shape) against the file's size; no check when file_bytes is 0. */
int io_limit_ratio(const io_options *opt, const ip_shape *shape, uint64_t decoded_bytes, uint64_t file_bytes,
                   char *err, size_t errlen);
/* For a reader that counts scans as it meets them: refuses once `seen` passes the limit. */
int io_limit_jpeg_scans(const io_options *opt, int seen, char *err, size_t errlen);
int io_limit_tiff_blocks(const io_options *opt, uint64_t count, int tiled, char *err, size_t errlen);
/* A tile may always be as large as the whole image (image_bytes); beyond that, up to the limit. */
int io_limit_tiff_tile(const io_options *opt, uint32_t width, uint32_t height, uint64_t tile_bytes,
                       uint64_t image_bytes, char *err, size_t errlen);
#endif
