/* The run's result to its sink: a file written atomically (by nvJPEG on the GPU when the result
 * stayed there), or a packed copy in host memory. */
#ifndef IMGPIPE_RUN_OUTPUT_H
#define IMGPIPE_RUN_OUTPUT_H
#include "run/run.h"

int run_output_write(jpeg_gpu *jpeg, const ip_image *result, const run_sink *out, const run_options *o,
                     io_meta *meta, char *err, size_t errlen);
#endif
