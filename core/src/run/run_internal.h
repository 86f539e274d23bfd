/* What the run layer's files share: the probe of the input and the two paths an image can take. */
#ifndef IMGPIPE_RUN_INTERNAL_H
#define IMGPIPE_RUN_INTERNAL_H
#include "run/run.h"

/* The input, probed once: its format and metadata, read before any path is chosen and handed
 * on to whichever path runs it. */
typedef struct {
    io_input input;              /* the file, opened once (no file for an image in memory) */
    io_format format;
    io_meta meta;                /* empty for an image in memory, or under strip */
    int turned;                  /* its EXIF orientation turns it (autorotate): never streamed */
} run_probe;

int run_probe_input(const run_source *in, const run_options *o, run_probe *pr, char *err, size_t errlen);
void run_probe_clear(run_probe *pr);

/* RUN_DECLINED: the streamed path did not take the image (nothing read past the header, nothing
 * written): the whole-image path runs it. */
#define RUN_DECLINED (-1)
int run_streamed(run_worker *w, plan *p, const run_source *in, const run_sink *out, const run_options *o,
                 run_probe *pr, run_result *res, char *err, size_t errlen);
int run_whole(run_worker *w, plan *p, const run_source *in, const run_sink *out, const run_options *o,
              run_probe *pr, run_result *res, char *err, size_t errlen);

int run_whole_worker(run_worker *w, plan *p, const run_source *in, const run_sink *out, const run_options *o,
                     run_probe *pr, run_result *res, char *err, size_t errlen);

/* auto's choice: 1 for the GPU, where imgpipe has CUDA, a driver is present and the cost estimate
 * favours it (res->why says why either way). */
int run_auto_prefers_gpu(const plan *p, const ip_shape *shape, io_format in_format, const char *out_path,
                         const run_options *o, int gpu_jpeg, run_result *res);
/* The worker's device and contexts, for the paths. */
exec_device run_worker_device(const run_worker *w);
int run_worker_gpu(const run_worker *w);
/* Waits for the worker's write behind, if any: its GPU objects, result and stream are free again. */
void run_worker_settle(run_worker *w);
#endif
