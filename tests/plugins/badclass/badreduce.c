/* Declares the reduction class without the functions a reduction needs: refused at load. */
#include "imgpipe/plugin.h"

static int bad_create(const ip_value *args, void **state, char *err, size_t errlen)
{
    (void)args; (void)err; (void)errlen;
    *state = NULL;
    return IP_OK;
}

static int bad_plan(const void *state, const ip_shape *in, ip_shape *out, ip_needs *needs, char *err, size_t errlen)
{
    (void)state; (void)needs; (void)err; (void)errlen;
    *out = *in;
    return IP_OK;
}

static int bad_run(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex)
{
    (void)state; (void)in; (void)out; (void)ex;
    return IP_OK;
}

static void bad_destroy(void *state) { (void)state; }

static const ip_stage bad_stage = {
    .abi_version = IP_ABI_VERSION,
    .struct_size = sizeof(ip_stage),
    .name = "badreduce",
    .summary = "a reduction without reduce functions (test plugin)",
    .create = bad_create,
    .plan = bad_plan,
    .run_cpu = bad_run,
    .destroy = bad_destroy,
    .stage_class = IP_CLASS_REDUCTION,
};

IP_EXPORT const ip_stage *imgpipe_stage(void) { return &bad_stage; }
