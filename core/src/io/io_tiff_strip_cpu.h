/* The CPU's TIFF strip compressors for io_tiff_strips.h: deflate by libdeflate, with the
 * predictor applied first as libtiff applies it; LZW and zstd by libtiff's own encoders; none by
 * a copy. The bytes are those libtiff writes itself when it has libdeflate. */
#ifndef IMGPIPE_IO_TIFF_STRIP_CPU_H
#define IMGPIPE_IO_TIFF_STRIP_CPU_H
#include "io/io_tiff_strips.h"

const tiff_strip_codec *tiff_strip_codec_cpu(io_tiff_compression c);
/* The options' compressor, else the CPU's for their compression. */
const tiff_strip_codec *tiff_strip_codec_for(const io_options *opt);
/* libdeflate's level for zlib's level L (-1 or 0: zlib's default, 6), as libtiff maps it: 1-5 as
 * they are, 6-9 one higher (libdeflate's 7 matches zlib's 6 in size). */
int tiff_libdeflate_level(int zlib_level);
#endif
