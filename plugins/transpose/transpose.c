#include "imgpipe/plugin.h"
#include "../common/adapt.h"
#include "../common/cost.h"

static int transpose_create(const ip_value *args, void **state, char *err, size_t errlen)
{
    (void)args;
    (void)err;
    (void)errlen;
    *state = NULL;
    return IP_OK;
}

static int transpose_plan(const void *state, const ip_shape *in, ip_shape *out, ip_needs *needs,
                          char *err, size_t errlen)
{
    (void)state;
    (void)err;
    (void)errlen;
    *out = *in;
    out->width = in->height;
    out->height = in->width;
    needs->halo = 0;
    return IP_OK;
}

static int transpose_run_cpu(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex)
{
    (void)state;
    ipk_img src = adapt_img(in), dst = adapt_img(out);
    return adapt_status(ipk_transpose_cpu(&src, &dst, ex->threads), "transpose", ex);
}

#ifdef IMGPIPE_HAVE_CUDA
static int transpose_run_gpu(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex)
{
    (void)state;
    ipk_img src = adapt_img(in), dst = adapt_img(out);
    return adapt_status(ipk_transpose_gpu(&src, &dst, ex->stream), "transpose", ex);
}
#endif

static int transpose_cost(const void *state, const ip_shape *in, ip_cost *cost)
{
    (void)state;
    (void)in;
    return cost_set(cost, 17.8, 0.0011);
}

static void transpose_destroy(void *state) { (void)state; }

static const ip_stage transpose_stage = {
    .abi_version = IP_ABI_VERSION,
    .struct_size = sizeof(ip_stage),
    .name = "transpose",
    .summary = "swap rows and columns: out(x, y) = in(y, x)",
    .params = NULL,
    .n_params = 0,
    .create = transpose_create,
    .plan = transpose_plan,
    .run_cpu = transpose_run_cpu,
    .run_gpu = IP_GPU_ENTRY(transpose_run_gpu),
    .destroy = transpose_destroy,
    .stage_class = IP_CLASS_GLOBAL,
    .cost_of = transpose_cost,
};

IP_EXPORT const ip_stage *imgpipe_stage(void) { return &transpose_stage; }
