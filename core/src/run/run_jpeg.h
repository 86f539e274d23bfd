/* The run layer's side of nvJPEG's route: the device buffer it decodes into is the executor's
 * input for the planned pipeline. */
#ifndef IMGPIPE_RUN_JPEG_H
#define IMGPIPE_RUN_JPEG_H
#include "exec/exec.h"
#include "io/codec_gpu.h"
#include "io/jpeg_route.h"

typedef struct {
    exec_ctx *ctx;
    const plan *p;
    jpeg_route_target target;
} run_jpeg_target;

/* A target for decoding into ctx's device input, p planned on the decoded shape. */
void run_jpeg_target_init(run_jpeg_target *t, exec_ctx *ctx, const plan *p);
int run_jpeg_wanted(const jpeg_gpu *g, io_format in_format, exec_transfer transfer);
/* The opened TIFF decoded by nvCOMP into ctx's device input, p planned on its shape; IP_OK, an
 * error of the file, or IP_EUNSUPPORTED when the GPU declined or failed (the CPU reader then reads
 * it, and words any damage itself). */
int run_tiff_gpu_decode(const io_gpu_codecs *codecs, exec_ctx *ctx, const plan *p, io_input *in, const io_options *io,
                        ip_image *img, char *err, size_t errlen);
#endif
