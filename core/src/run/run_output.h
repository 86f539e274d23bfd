/* The run's result to its sink: a file written atomically (by nvJPEG on the GPU when the result
 * stayed there), or a packed copy in host memory. */
#ifndef IMGPIPE_RUN_OUTPUT_H
#define IMGPIPE_RUN_OUTPUT_H
#include "io/codec_gpu.h"
#include "run/run.h"

/* Whether nvCOMP is worth opening for a run from in to out under o: a TIFF to inflate on the
 * card, a deflate TIFF or a PNG at a level the card deflates, or either output under --codecs gpu
 * (which needs it). Other runs never write on the card, so they do not pay for the library. */
int run_gpu_codecs_wanted(const run_options *o, io_format in, io_format out);
/* The part of that rule for every format, which the folder estimate shares: not under --codecs
 * cpu, nor with --transfer zerocopy, where the stages read and write mapped host memory and the
 * result is encoded on the cores. */
int run_card_codecs_allowed(run_codecs codecs, exec_transfer transfer);
/* The share of a TIFF result's strips the card compresses (tiff_gpu_card_share) under o, beside
 * the cores at the level codecs' check keeps (tiff_gpu_cores_level). */
double run_tiff_card_share(const ip_shape *shape, const run_options *o, const io_gpu_codecs *codecs);
/* Whether a result of this shape, kept on the device, is written there to path's format under o. */
int run_output_on_device(const jpeg_gpu *jpeg, const io_gpu_codecs *codecs, const ip_shape *shape, const char *path,
                         const run_options *o);

int run_output_write(jpeg_gpu *jpeg, const io_gpu_codecs *codecs, const ip_image *result, const run_sink *out, const run_options *o,
                     io_meta *meta, char *err, size_t errlen);
#endif
