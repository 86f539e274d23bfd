/* Running a plan on one image: buffers, CPU/GPU dispatch, timing. */
#ifndef IMGPIPE_EXEC_H
#define IMGPIPE_EXEC_H
#include "io/io.h"
#include "plan/plan.h"

typedef enum { EXEC_CPU, EXEC_GPU } exec_device;
typedef enum { EXEC_COPY, EXEC_ZEROCOPY } exec_transfer;

typedef struct {
    exec_device device;
    int gpu_index;
    int threads;             /* OpenMP threads for CPU stages, 0 = all cores */
    exec_transfer transfer;
    int profile;             /* record per-stage times */
    int pin_host;            /* GPU: keep pinned host buffers and decode into them (folders, where
                                they are reused); 0: copy from and to pageable memory, since pinning
                                a whole image once costs more than the faster copy saves */
} exec_options;

/* GPU runs of images with at most this many pixels are captured as a CUDA graph when the same
 * shape comes twice in a row, and replayed for every later image of it (launch costs dominate
 * below this size). */
#define EXEC_GRAPH_MAX_PIXELS ((int64_t)2048 * 2048)

#define EXEC_MAX_STAGES 64

typedef struct {
    double total_ms;          /* wall time of exec_run: staging copies, transfers, stages, waits */
    double upload_ms, download_ms;
    double stage_ms[EXEC_MAX_STAGES];
    int stage_on_gpu[EXEC_MAX_STAGES];
    /* Run-time fusion: at the first step of a fused group, the group's size (its time in
     * stage_ms there); -1 at the steps it took in; 0 for a step run by itself. */
    int stage_fused[EXEC_MAX_STAGES];
    int n_stages;
    int graphed;              /* this image's stages ran as a CUDA graph (no per-stage times) */
} exec_profile;

typedef struct exec_ctx exec_ctx;

/* A context keeps its buffers (host, pinned, device) from image to image and grows them only
 * when a larger image arrives. One context per worker thread. */
int exec_create(exec_ctx **ctx, const exec_options *opt, char *err, size_t errlen);
void exec_destroy(exec_ctx *ctx);

/* Runs p (plan_shapes already done for in's shape) on the host image in. On success *out is a
 * host image owned by ctx, valid until the next exec_run or exec_destroy. A GPU failure returns
 * IP_ECUDA or IP_ENOMEM with a message naming the stage. */
int exec_run(exec_ctx *ctx, const plan *p, const ip_image *in, const char *input_path, ip_image *out,
             exec_profile *prof, char *err, size_t errlen);

/* Memory for the decoder to write the next input into, so the upload needs no staging copy:
 * the context's pinned (mapped, under zero-copy) input buffer on the GPU with pin_host or
 * zero-copy; malloc otherwise. Free the image with io_image_free, never img_free. */
io_pixel_memory exec_input_memory(exec_ctx *ctx);

/* For a decoder that writes into device memory (nvJPEG): the device buffer the run's first stage
 * will read, reserved for p planned on in_shape (so it is not moved before the run) and at least
 * bytes long. Hand the decoded image to exec_run with on_device set. */
int exec_device_input(exec_ctx *ctx, const plan *p, const ip_shape *in_shape, size_t bytes, void **dev,
                      char *err, size_t errlen);

/* With on set, the GPU path leaves its result in device memory (*out->on_device = 1, valid until the
 * next run) for an encoder on the GPU, instead of copying it to the host. */
void exec_keep_result_on_device(exec_ctx *ctx, int on);

/* The caller's memory for the result (NULL: none): the last stage writes there, or the result is
 * downloaded there, when target has the final shape and the path allows (copy transfers; device
 * memory on the GPU with the result kept on the device, host memory otherwise); *out->data then
 * equals target->data, else *out is the context's as before. A result left in device memory is
 * queued on exec_stream and not waited for. Kept until changed. */
void exec_set_result_target(exec_ctx *ctx, const ip_image *target);

/* Device bytes the context holds now (its buffers only grow: the most it has held). */
size_t exec_device_bytes(const exec_ctx *ctx);

/* GPU run-time fusion (NVRTC) and CUDA graphs for small images, both on by default; verbose:
 * notes on fusion (compiled, loaded from the disk cache, or why it is off). */
typedef struct {
    int no_fuse, no_graph, verbose;
} exec_fusion_options;
void exec_set_fusion(exec_ctx *ctx, const exec_fusion_options *fo);

/* The context's CUDA stream (NULL on the CPU). */
void *exec_stream(exec_ctx *ctx);

/* Notes worth telling the user once (e.g. a stage without a GPU path; under profile, what fusion
 * compiled, loaded from the cache, or why it is off), then cleared; "" when there is none. */
const char *exec_take_notes(exec_ctx *ctx);
#endif
