/* A stage that fails on purpose: at plan time (mode=plan), at run time (mode=run), or on the GPU
 * only (mode=gpu: the CPU path passes the image on, so a run that falls back to the CPU succeeds). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "imgpipe/plugin.h"

static const ip_param fail_params[] = {
    { "mode", IP_ENUM, "run", 0, 0, "plan|run|gpu", "where to fail" },
};

enum { FAIL_PLAN, FAIL_RUN, FAIL_GPU };

static int fail_create(const ip_value *args, void **state, char *err, size_t errlen)
{
    const ip_value *where = IP_ARG(fail_params, args, "mode");
    if (!where) {
        snprintf(err, errlen, "no mode parameter");
        return IP_EINVAL;
    }
    int *mode = malloc(sizeof *mode);
    if (!mode) return IP_ENOMEM;
    *mode = (int)where->i;
    *state = mode;
    return IP_OK;
}

static int fail_plan(const void *state, const ip_shape *in, ip_shape *out, ip_needs *needs, char *err, size_t errlen)
{
    (void)needs;
    if (*(const int *)state == FAIL_PLAN) {
        snprintf(err, errlen, "refuses every input (test plugin)");
        return IP_EUNSUPPORTED;
    }
    *out = *in;
    return IP_OK;
}

static int fail_run(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex)
{
    if (*(const int *)state == FAIL_GPU) {
        size_t row = (size_t)in->shape.width * (size_t)in->shape.channels * ip_dtype_size(in->shape.dtype);
        for (int32_t y = 0; y < in->shape.height; y++)
            memcpy((char *)out->data + (size_t)y * (size_t)out->stride, (const char *)in->data + (size_t)y * (size_t)in->stride, row);
        return IP_OK;
    }
    snprintf(ex->err, ex->errlen, "deliberate failure (test plugin)");
    return IP_EINVAL;
}

static int fail_run_gpu(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex)
{
    (void)in; (void)out;
    snprintf(ex->err, ex->errlen, "deliberate failure%s (test plugin)", *(const int *)state == FAIL_GPU ? " on the GPU" : "");
    return IP_EINVAL;
}

static const ip_stage fail_stage = {
    .abi_version = IP_ABI_VERSION,
    .struct_size = sizeof(ip_stage),
    .name = "failing",
    .summary = "fails on purpose (test plugin)",
    .params = fail_params,
    .n_params = IP_COUNT(fail_params),
    .create = fail_create,
    .plan = fail_plan,
    .run_cpu = fail_run,
    .run_gpu = fail_run_gpu,
    .destroy = free,
};

IP_EXPORT const ip_stage *imgpipe_stage(void) { return &fail_stage; }
