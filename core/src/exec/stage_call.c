#include "exec/stage_call.h"
#include <stdio.h>
#include "gpu/gpu.h"
#include "base/image.h"

int stage_call_cpu(const plan_step *st, const stage_env *env, void *scratch, const ip_needs *needs,
                   const ip_image *in, ip_image *out, char *msg, size_t msglen)
{
    ip_exec ex = { NULL, env->threads, env->input_path, scratch, needs->scratch_bytes, msg, msglen };
    return st->plugin->stage->run_cpu(st->state, in, out, &ex);
}

int stage_call_gpu(const plan_step *st, const stage_env *env, void *scratch, const ip_needs *needs,
                   const ip_image *in, ip_image *out, char *msg, size_t msglen)
{
    ip_exec ex = { env->stream, env->threads, env->input_path, scratch, needs->gpu_scratch_bytes, msg, msglen };
    return st->plugin->stage->run_gpu(st->state, in, out, &ex);
}

int stage_call_reduce_cpu(const plan_step *st, const stage_env *env, void *scratch, const ip_needs *needs,
                          const ip_image *rows, void *partial, char *msg, size_t msglen)
{
    ip_exec ex = { NULL, env->threads, env->input_path, scratch, needs->scratch_bytes, msg, msglen };
    return st->plugin->stage->reduce_band(st->state, rows, partial, &ex);
}

int stage_call_reduce_gpu(const plan_step *st, const stage_env *env, void *scratch, const ip_needs *needs,
                          const ip_image *rows, void *partial, char *msg, size_t msglen)
{
    ip_exec ex = { env->stream, env->threads, env->input_path, scratch, needs->gpu_scratch_bytes, msg, msglen };
    return st->plugin->stage->reduce_band(st->state, rows, partial, &ex);
}

int stage_call_reduce_finish(const plan_step *st, const stage_env *env, const void *total, char *msg,
                             size_t msglen)
{
    ip_exec ex = { NULL, env->threads, env->input_path, NULL, 0, msg, msglen };
    return st->plugin->stage->reduce_finish(st->state, &st->in, total, &ex);
}

/* Empty images copy nothing: a zero-sized copy may be refused by the driver. */
static int copy_rows(void *dst, ptrdiff_t dst_stride, const void *src, ptrdiff_t src_stride, const ip_shape *shape,
                     gpu_copy_kind kind, void *stream, char *msg, size_t msglen)
{
    size_t row = img_row_bytes(shape), rows = (size_t)shape->height;
    if (!row || !rows) return IP_OK;
    return gpu_copy2d(dst, (size_t)dst_stride, src, (size_t)src_stride, row, rows, kind, stream, msg, msglen);
}

int stage_rows_down(const stage_env *env, const ip_image *dev, const ip_image *host, char *msg, size_t msglen)
{
    int rc = copy_rows(host->data, host->stride, dev->data, dev->stride, &host->shape, GPU_D2H, env->stream, msg,
                       msglen);
    return rc == IP_OK ? gpu_stream_sync(env->stream, msg, msglen) : rc;
}

int stage_round_trip(const plan_step *st, const stage_env *env, void *host_scratch, const ip_needs *needs,
                     const ip_image *in, ip_image *out, const ip_image *h_in, ip_image *h_out, char *msg,
                     size_t msglen)
{
    int rc = stage_rows_down(env, in, h_in, msg, msglen);
    if (rc == IP_OK) rc = stage_call_cpu(st, env, host_scratch, needs, h_in, h_out, msg, msglen);
    if (rc == IP_OK)
        rc = copy_rows(out->data, out->stride, h_out->data, h_out->stride, &h_out->shape, GPU_H2D, env->stream, msg,
                       msglen);
    return rc;
}

int stage_failed_message(const plan_step *st, int rc, const char *detail, char *err, size_t errlen)
{
    snprintf(err, errlen, "stage '%s' (line %d) failed: %s", st->plugin->stage->name, st->line,
             detail[0] ? detail : "the plugin reported an error without a message");
    return rc ? rc : IP_EINVAL;
}
