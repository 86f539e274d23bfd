/* GPU start-up in the background: driver, context, kernels and the run's stream are made on a
 * thread while the main thread reads and decodes the input, so the user does not wait for both. */
#ifndef IMGPIPE_STARTUP_H
#define IMGPIPE_STARTUP_H
#include "exec/exec.h"
#include "io/codec_gpu.h"
#include "io/jpeg_gpu.h"

typedef struct startup startup;

/* Starts making a GPU exec context for opt (opt->device must be EXEC_GPU); with jpeg_uses
 * (JPEG_GPU_DECODE, JPEG_GPU_ENCODE) nvJPEG on its stream too, ready for those uses, and with
 * nvcomp set nvCOMP (TIFF and PNG on the GPU). */
int startup_begin(startup **s, const exec_options *opt, unsigned jpeg_uses, int nvcomp, char *err, size_t errlen);

/* Waits for the thread and hands over its context, or its error (IP_EUNSUPPORTED when there is no
 * usable GPU). *took_ms: how long start-up took; *waited_ms: how long this call waited for it.
 * Free s with startup_free. */
int startup_finish(startup *s, exec_ctx **ctx, double *took_ms, double *waited_ms, char *err, size_t errlen);

/* After startup_finish: nvJPEG, or NULL (not asked for, or not available: *why says so). The
 * caller closes it. */
jpeg_gpu *startup_take_jpeg(startup *s, const char **why);
/* After startup_finish: the GPU codecs, or NULL (not asked for, or not available: *why says so).
 * The caller closes them (io_gpu_codecs_close). */
io_gpu_codecs *startup_take_codecs(startup *s, const char **why);
void startup_free(startup *s);
#endif
