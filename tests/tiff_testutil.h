/* What the TIFF readers' tests share (the GPU layout's unit test, the device test, the CPU
 * reader's unwritten-pixels test): deflate TIFFs whose strips are written raw from zlib, one of
 * them odd (inflating past its block, short of it, or no deflate stream at all), and the pixels
 * libtiff itself reads from a file. And for the GPU strip codec's tests (on the device and on the
 * mock): an image's strips through a batch codec, written raw and read back. */
#ifndef IMGPIPE_TIFF_TESTUTIL_H
#define IMGPIPE_TIFF_TESTUTIL_H
#include <stddef.h>
#include <stdint.h>
#include "base/image.h"
#include "io/io_tiff_strips.h"
#include "testutil.h"

/* TTU_DAMAGED: the odd strip is a zlib header on bytes that are no deflate stream. */
enum { TTU_DAMAGED = -1 };

typedef struct {
    uint32_t width, height, rows_per_strip;   /* 8-bit gray, Adobe deflate */
    uint32_t odd_strip;
    int odd_rows;   /* rows of data in odd_strip: more than it holds, fewer, or TTU_DAMAGED */
} ttu_strips;

/* Row y's pixel x; rows past a strip's own (and past the image) continue the pattern. */
uint8_t ttu_pixel(uint32_t x, uint32_t y);
/* Writes the file; 0, or -1 when zlib or libtiff failed. A strip holding more rows than its
 * own is sync-flushed after them, so that its block ends on a deflate block boundary and
 * libtiff with zlib or libdeflate decodes all of its own rows. */
int ttu_write_strips(const char *path, const ttu_strips *s);
/* The same, but odd_strip's rows (more than its own) are one deflate stream without the flush,
 * so that a back-reference may cross the block's end. */
int ttu_write_crossing(const char *path, const ttu_strips *s);
/* How many of img's pixels (a reading of path, ttu_strips' shape) differ from libtiff's own,
 * strip by strip (TIFFReadEncodedStrip, into zeroed memory); -1 when libtiff does not read
 * the file. *off_pattern: how many differ from ttu_pixel. */
long ttu_differences(const char *path, const ip_image *img, long *off_pattern);
/* Whether libtiff reads every strip of the file whole. */
int ttu_libtiff_reads(const char *path);

/* An image of shape with random rows over a ramp (small deltas and runs, so that the predictor
 * and the matches both matter), packed; -1 when it cannot be allocated. */
int ttu_image(ip_image *img, const ip_shape *shape, tu_rng *r);

/* img (packed) written by libtiff itself, compressing: strips of rps rows, or 16x16 tiles when
 * tiled; libtiff's compression and predictor tags. 0, or -1 when libtiff failed. */
int ttu_write_libtiff(const char *path, const ip_image *img, uint32_t rps, uint16_t compression, uint16_t predictor,
                      int tiled);

/* img's strips of f's rows_per_strip rows compressed by codec (state 0) in batches of at most
 * max_strips, written raw to path in a TIFF tagged as the CPU writer tags it, read back by the
 * CPU reader: IP_OK when the pixels are img's; else the failing step's code and err. */
int ttu_batch_round_trip(const tiff_strip_batch_codec *codec, const ip_image *img, const tiff_strip_format *f,
                         uint32_t max_strips, const char *path, char *err, size_t errlen);
#endif
