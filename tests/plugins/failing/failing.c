/* A stage that fails on purpose: at plan time (mode=plan) or at run time (mode=run). */
#include <stdio.h>
#include <stdlib.h>
#include "imgpipe/plugin.h"

static const ip_param fail_params[] = {
    { "mode", IP_ENUM, "run", 0, 0, "plan|run", "where to fail" },
};

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
    if (*(const int *)state == 0) {
        snprintf(err, errlen, "refuses every input (test plugin)");
        return IP_EUNSUPPORTED;
    }
    *out = *in;
    return IP_OK;
}

static int fail_run(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex)
{
    (void)state; (void)in; (void)out;
    snprintf(ex->err, ex->errlen, "deliberate failure (test plugin)");
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
    .destroy = free,
};

IP_EXPORT const ip_stage *imgpipe_stage(void) { return &fail_stage; }
