/* The run layer's side of nvJPEG's route: the device buffer it decodes into is the executor's
 * input for the planned pipeline. */
#ifndef IMGPIPE_RUN_JPEG_H
#define IMGPIPE_RUN_JPEG_H
#include "exec/exec.h"
#include "io/jpeg_route.h"

typedef struct {
    exec_ctx *ctx;
    const plan *p;
    jpeg_route_target target;
} run_jpeg_target;

/* A target for decoding into ctx's device input, p planned on the decoded shape. */
void run_jpeg_target_init(run_jpeg_target *t, exec_ctx *ctx, const plan *p);
int run_jpeg_wanted(const jpeg_gpu *g, io_format in_format, exec_transfer transfer);
#endif
