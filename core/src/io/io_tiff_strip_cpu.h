/* The CPU's TIFF strip compressors for io_tiff_strips.h: deflate by libdeflate, with the
 * predictor applied first as libtiff applies it; LZW and zstd by libtiff's own encoders; none by
 * a copy. */
#ifndef IMGPIPE_IO_TIFF_STRIP_CPU_H
#define IMGPIPE_IO_TIFF_STRIP_CPU_H
#include "io/io_tiff_strips.h"
#include "io/tiff_fast_check.h"

const tiff_strip_codec *tiff_strip_codec_cpu(io_tiff_compression c);
/* The options' compressor, else the CPU's for their compression. */
const tiff_strip_codec *tiff_strip_codec_for(const io_options *opt);
/* img's rows compressed as f's strips 0, 1, ... by opt's threads and CPU codec, and handed to
 * write in order: the whole-image writer's strips (img may hold only the first strips' rows). */
int tiff_strips_write_host(const ip_image *img, const tiff_strip_format *f, const io_options *opt,
                           tiff_strip_write_fn write, void *user, char *err, size_t errlen);
/* libdeflate's level for zlib's level L (0: zlib's default, 6): the same number. libdeflate's 6
 * deflates at twice zlib's speed, at most 0.1% larger on the sample photographs; libtiff, left to
 * itself, gives libdeflate L + 1 from 6 up (7 for the default: zlib's speed, 0.02-3% smaller). */
int tiff_libdeflate_level(int zlib_level);
/* libdeflate's level for the cores' strips of a streamed file whose other strips a card deflates
 * at zlib's level L: lower from 4 to 6, so that the cores take a larger share of the strips, the
 * file staying within 3% of the cores' own at L (the card's algorithm 4 deflates about as well as
 * 6). The card takes about two thirds of the strips there. */
int tiff_libdeflate_level_beside_card(int zlib_level);
/* The same for a whole image's writer (tiff_gpu_write), where the cores take about half the strips:
 * a level less fast. */
int tiff_libdeflate_level_beside_card_image(int zlib_level);
#endif
