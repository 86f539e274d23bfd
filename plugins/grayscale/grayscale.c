#include <stdlib.h>
#include <string.h>
#include "imgpipe/plugin.h"
#include "../common/adapt.h"
#include "../common/cost.h"

typedef struct { int32_t weights_q15[3]; } gray_state;

/* Q15 weights that sum to 32768; bt601 is OpenCV's cvtColor RGB2GRAY. */
static const int32_t gray_weights[][3] = {
    { 9798, 19235, 3735 },    /* bt601 */
    { 6966, 23436, 2366 },    /* bt709 */
    { 10923, 10923, 10922 },  /* average */
};

static const ip_param gray_params[] = {
    { "weights", IP_ENUM, "bt601", 0, 0, "bt601|bt709|average",
      "luma weights: bt601 (0.299, 0.587, 0.114, as OpenCV), bt709 (0.2126, 0.7152, 0.0722) or average" },
};

static int gray_create(const ip_value *args, void **state, char *err, size_t errlen)
{
    const ip_value *weights = IP_ARG(gray_params, args, "weights");
    if (!weights) {
        snprintf(err, errlen, "grayscale's parameter table has no weights");
        return IP_EINVAL;
    }
    gray_state *s = malloc(sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    memcpy(s->weights_q15, gray_weights[weights->i], sizeof s->weights_q15);
    *state = s;
    return IP_OK;
}

/* 1 channel passes through; gray+alpha and RGBA drop the alpha. */
static int gray_plan(const void *state, const ip_shape *in, ip_shape *out, ip_needs *needs,
                     char *err, size_t errlen)
{
    (void)state;
    (void)err;
    (void)errlen;
    *out = *in;
    out->channels = 1;
    needs->halo = 0;
    return IP_OK;
}

/* Copies channel 0 for 1- and 2-channel input, where there is nothing to weigh. */
static void gray_copy_first_channel(const ip_image *in, ip_image *out)
{
    size_t px = ip_dtype_size(in->shape.dtype);
    for (int y = 0; y < in->shape.height; y++) {
        const char *s = (const char *)in->data + (ptrdiff_t)y * in->stride;
        char *d = (char *)out->data + (ptrdiff_t)y * out->stride;
        for (int x = 0; x < in->shape.width; x++)
            memcpy(d + (size_t)x * px, s + (size_t)x * px * (size_t)in->shape.channels, px);
    }
}

static int gray_run_cpu(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex)
{
    const gray_state *s = state;
    if (in->shape.channels < 3) {
        gray_copy_first_channel(in, out);
        return IP_OK;
    }
    ipk_img src = adapt_img(in), dst = adapt_img(out);
    return adapt_status(ipk_grayscale_cpu(&src, &dst, s->weights_q15, ex->threads), "grayscale", ex);
}

/* The per-pixel function for run-time fusion: the arithmetic of kernels/gpu/grayscale.cu's
 * gray_value (uint32 sums, or float without contraction) with this use's weights written in. */
static int gray_point_cuda(const void *state, const ip_shape *in, char *src, size_t cap)
{
    const gray_state *s = state;
    const int32_t *q = s->weights_q15;
    int n;
    if (in->channels < 3)
        n = snprintf(src, cap, "__device__ __forceinline__ void IP_POINT_FN(const IP_T *in, IP_T *out)\n"
                               "{ out[0] = in[0]; }\n");
    else if (in->dtype == IP_F32)
        n = snprintf(src, cap, "__device__ __forceinline__ void IP_POINT_FN(const IP_T *in, IP_T *out)\n"
                               "{ out[0] = __fadd_rn(__fadd_rn(__fmul_rn(in[0], %.9ef), __fmul_rn(in[1], %.9ef)),"
                               " __fmul_rn(in[2], %.9ef)); }\n",
                     (double)((float)q[0] / 32768.0f), (double)((float)q[1] / 32768.0f),
                     (double)((float)q[2] / 32768.0f));
    else
        n = snprintf(src, cap, "__device__ __forceinline__ void IP_POINT_FN(const IP_T *in, IP_T *out)\n"
                               "{ out[0] = (IP_T)((in[0] * %uu + in[1] * %uu + in[2] * %uu + 16384u) >> 15); }\n",
                     (unsigned)q[0], (unsigned)q[1], (unsigned)q[2]);
    return n > 0 && (size_t)n < cap ? IP_OK : IP_ELIMIT;
}

#ifdef IMGPIPE_HAVE_CUDA
#include <cuda_runtime_api.h>

/* Rare inputs (1 or 2 channels): copies with the runtime rather than a kernel of their own. */
static int gray_copy_first_channel_gpu(const ip_image *in, ip_image *out, void *stream)
{
    size_t px = ip_dtype_size(in->shape.dtype);
    size_t in_px = px * (size_t)in->shape.channels;
    cudaError_t rc = cudaSuccess;
    if (in->shape.channels == 1)
        rc = cudaMemcpy2DAsync(out->data, (size_t)out->stride, in->data, (size_t)in->stride,
                               px * (size_t)in->shape.width, (size_t)in->shape.height,
                               cudaMemcpyDeviceToDevice, (cudaStream_t)stream);
    for (int y = 0; in->shape.channels == 2 && y < in->shape.height && rc == cudaSuccess; y++)
        rc = cudaMemcpy2DAsync((char *)out->data + (ptrdiff_t)y * out->stride, px,
                               (const char *)in->data + (ptrdiff_t)y * in->stride, in_px, px,
                               (size_t)in->shape.width, cudaMemcpyDeviceToDevice, (cudaStream_t)stream);
    return rc == cudaSuccess ? IPK_OK : IPK_ECUDA;
}

static int gray_run_gpu(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex)
{
    const gray_state *s = state;
    if (in->shape.channels < 3)
        return adapt_status(gray_copy_first_channel_gpu(in, out, ex->stream), "grayscale", ex);
    ipk_img src = adapt_img(in), dst = adapt_img(out);
    return adapt_status(ipk_grayscale_gpu(&src, &dst, s->weights_q15, ex->stream), "grayscale", ex);
}
#endif

static int gray_cost(const void *state, const ip_shape *in, ip_cost *cost)
{
    (void)state;
    (void)in;
    return cost_set(cost, 0.64, 0.00064);
}

static const ip_stage gray_stage = {
    .abi_version = IP_ABI_VERSION,
    .struct_size = sizeof(ip_stage),
    .name = "grayscale",
    .summary = "RGB(A) to one gray channel with luma weights (identical to OpenCV cvtColor RGB2GRAY)",
    .params = gray_params,
    .n_params = IP_COUNT(gray_params),
    .create = gray_create,
    .plan = gray_plan,
    .run_cpu = gray_run_cpu,
    .run_gpu = IP_GPU_ENTRY(gray_run_gpu),
    .destroy = free,
    .stage_class = IP_CLASS_POINT,
    .point_cuda = gray_point_cuda,
    .cost_of = gray_cost,
};

IP_EXPORT const ip_stage *imgpipe_stage(void) { return &gray_stage; }
