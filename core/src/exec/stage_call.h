/* Calling one stage of a plan: the ip_exec a stage is handed is built here and nowhere else, the
 * round trip of a stage without run_gpu in a GPU run is made here, and a failed stage's message
 * is worded here. The whole-image executor (exec.c), the band executor (band.c, band_gpu.c) and
 * the global stages of a stream (stream.c) call stages only through these functions. Each call
 * returns the plugin's status and leaves the plugin's message in msg; the caller words the
 * failure with stage_failed_message once it has added whatever of its own can fail. */
#ifndef IMGPIPE_STAGE_CALL_H
#define IMGPIPE_STAGE_CALL_H
#include "plan/plan.h"

/* What every stage call of one run shares. */
typedef struct {
    int threads;              /* OpenMP threads a host call may use */
    const char *input_path;   /* the image's file, or NULL */
    void *stream;             /* the GPU stream of device calls and round trips; NULL in a CPU run */
} stage_env;

/* run_cpu on host images, with host scratch of needs->scratch_bytes. */
int stage_call_cpu(const plan_step *st, const stage_env *env, void *scratch, const ip_needs *needs,
                   const ip_image *in, ip_image *out, char *msg, size_t msglen);
/* run_gpu on device images, queued on env->stream, with device scratch of needs->gpu_scratch_bytes. */
int stage_call_gpu(const plan_step *st, const stage_env *env, void *scratch, const ip_needs *needs,
                   const ip_image *in, ip_image *out, char *msg, size_t msglen);
/* reduce_band adding host rows into partial, with host scratch of needs->scratch_bytes. */
int stage_call_reduce_cpu(const plan_step *st, const stage_env *env, void *scratch, const ip_needs *needs,
                          const ip_image *rows, void *partial, char *msg, size_t msglen);
/* reduce_band adding device rows into partial on env->stream (partial complete when it returns),
 * with device scratch of needs->gpu_scratch_bytes. */
int stage_call_reduce_gpu(const plan_step *st, const stage_env *env, void *scratch, const ip_needs *needs,
                          const ip_image *rows, void *partial, char *msg, size_t msglen);
/* reduce_finish on the whole image's total (on the host, without scratch). */
int stage_call_reduce_finish(const plan_step *st, const stage_env *env, const void *total, char *msg,
                             size_t msglen);

/* Device rows down into host (its data, stride and shape given), on env->stream, waited for. */
int stage_rows_down(const stage_env *env, const ip_image *dev, const ip_image *host, char *msg, size_t msglen);
/* A stage without run_gpu in a GPU run: device in down into host h_in, run_cpu into host h_out
 * with host scratch, h_out up into device out, on env->stream (the upload queued, not waited for).
 * h_in and h_out carry the shapes copied. */
int stage_round_trip(const plan_step *st, const stage_env *env, void *host_scratch, const ip_needs *needs,
                     const ip_image *in, ip_image *out, const ip_image *h_in, ip_image *h_out, char *msg,
                     size_t msglen);

/* err gets "stage 'NAME' (line N) failed: DETAIL" (DETAIL empty: the plugin gave none); returns
 * rc, or IP_EINVAL for a failure reported as IP_OK. */
int stage_failed_message(const plan_step *st, int rc, const char *detail, char *err, size_t errlen);
#endif
