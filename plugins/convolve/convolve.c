#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "imgpipe/plugin.h"
#include "../common/adapt.h"
#include "../common/cost.h"
#include "ipk_conv_named.h"

#define CONV_MAX_SIDE 31

typedef struct {
    int kw, kh;
    double weights[CONV_MAX_SIDE * CONV_MAX_SIDE];
    double divisor, offset;
    ipk_border border;
    int output_f32;
} conv_state;

static const ip_param conv_params[] = {
    { "kernel", IP_MATRIX, "gaussian3", 0, 0,
      IPK_CONV_NAMED_CHOICES,
      "weights: a name, or rows of numbers separated by ';' (odd width and height up to 31), "
      "applied as OpenCV filter2D (correlation, anchor at the centre)" },
    { "divisor", IP_FLOAT, "auto", 0, 0, "auto",
      "the weighted sum is divided by this; auto: the sum of the weights, or 1 when it is 0" },
    { "offset", IP_FLOAT, "0", 0, 0, NULL, "added after dividing" },
    { "border", IP_ENUM, "reflect101", 0, 0, ADAPT_BORDER_CHOICES,
      "pixels beyond the edge: reflect101 (as OpenCV filter2D), replicate, zero, or shrink "
      "(only in-image pixels count, which for a weighted sum is the same as zero)" },
    { "output", IP_ENUM, "same", 0, 0, "same|f32",
      "same: the input type, rounded and saturated; f32: 32-bit float, keeps negative results (edges)" },
};

/* Copies the named or literal kernel into the state; checks its size and values. */
static int conv_take_kernel(const ip_value *arg, conv_state *s, char *err, size_t errlen)
{
    if (!arg->m.v) {
        const ipk_named_kernel *k = &ipk_conv_named[arg->choice];
        s->kw = s->kh = k->side;
        memcpy(s->weights, k->w, sizeof(double) * (size_t)(k->side * k->side));
        return IP_OK;
    }
    int rows = arg->m.rows, cols = arg->m.cols;
    if (rows < 1 || cols < 1 || rows > CONV_MAX_SIDE || cols > CONV_MAX_SIDE || rows % 2 == 0 || cols % 2 == 0) {
        snprintf(err, errlen, "kernel must have odd width and height up to %d, got %dx%d", CONV_MAX_SIDE,
                 cols, rows);
        return IP_EINVAL;
    }
    for (int i = 0; i < rows * cols; i++)
        if (!isfinite(arg->m.v[i])) {
            snprintf(err, errlen, "kernel weight %d is not a finite number", i + 1);
            return IP_EINVAL;
        }
    s->kw = cols;
    s->kh = rows;
    memcpy(s->weights, arg->m.v, sizeof(double) * (size_t)(rows * cols));
    return IP_OK;
}

static int conv_take_divisor(const ip_value *arg, conv_state *s, char *err, size_t errlen)
{
    if (arg->choice == 0) {
        double sum = 0;
        for (int i = 0; i < s->kw * s->kh; i++) sum += s->weights[i];
        s->divisor = sum == 0 ? 1 : sum;
        return IP_OK;
    }
    if (arg->f == 0 || !isfinite(arg->f)) {
        snprintf(err, errlen, "divisor must be a non-zero number or auto, got %g", arg->f);
        return IP_EINVAL;
    }
    s->divisor = arg->f;
    return IP_OK;
}

/* The offset, border and output arguments into the state. */
static int conv_take_rest(const ip_value *offset, const ip_value *border, const ip_value *output, conv_state *s,
                          char *err, size_t errlen)
{
    if (!isfinite(offset->f)) {
        snprintf(err, errlen, "offset must be a finite number");
        return IP_EINVAL;
    }
    s->offset = offset->f;
    s->border = (ipk_border)border->i;
    s->output_f32 = output->i == 1;
    return IP_OK;
}

static int conv_create(const ip_value *args, void **state, char *err, size_t errlen)
{
    const ip_value *kernel = IP_ARG(conv_params, args, "kernel"), *divisor = IP_ARG(conv_params, args, "divisor"),
                   *offset = IP_ARG(conv_params, args, "offset"), *border = IP_ARG(conv_params, args, "border"),
                   *output = IP_ARG(conv_params, args, "output");
    if (!kernel || !divisor || !offset || !border || !output) {
        snprintf(err, errlen, "convolve's parameter table lacks a parameter its create reads");
        return IP_EINVAL;
    }
    conv_state *s = malloc(sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    int rc = conv_take_kernel(kernel, s, err, errlen);
    if (!rc) rc = conv_take_divisor(divisor, s, err, errlen);
    if (!rc) rc = conv_take_rest(offset, border, output, s, err, errlen);
    if (rc) {
        free(s);
        return rc;
    }
    *state = s;
    return IP_OK;
}

/* The larger half-side of the kernel: rows and columns read around each output pixel. */
static int conv_halo(const conv_state *s) { return (s->kw > s->kh ? s->kw : s->kh) / 2; }

static int conv_plan(const void *state, const ip_shape *in, ip_shape *out, ip_needs *needs,
                     char *err, size_t errlen)
{
    const conv_state *s = state;
    if (in->channels < 1 || in->channels > 4) {
        snprintf(err, errlen, "convolve needs 1 to 4 channels, got %d", (int)in->channels);
        return IP_EUNSUPPORTED;
    }
    *out = *in;
    if (s->output_f32) out->dtype = IP_F32;
    needs->halo = conv_halo(s);
    needs->scratch_bytes = 0;
    size_t (*gpu_scratch)(int, int, int, ipk_dtype, int, int) = IP_GPU_ENTRY(ipk_convolve_gpu_scratch);
    needs->gpu_scratch_bytes =
        gpu_scratch ? gpu_scratch(in->width, in->height, in->channels, (ipk_dtype)in->dtype, s->kw, s->kh) : 0;
    return IP_OK;
}

static ipk_conv_params conv_kernel_params(const conv_state *s)
{
    ipk_conv_params p = { s->weights, s->kw, s->kh, s->divisor, s->offset, s->border };
    return p;
}

static int conv_run_cpu(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex)
{
    ipk_conv_params p = conv_kernel_params(state);
    ipk_img src = adapt_img(in), dst = adapt_img(out);
    return adapt_status(ipk_convolve_cpu(&src, &dst, &p, ex->threads), "convolve", ex);
}

#ifdef IMGPIPE_HAVE_CUDA
static int conv_run_gpu(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex)
{
    ipk_conv_params p = conv_kernel_params(state);
    ipk_img src = adapt_img(in), dst = adapt_img(out);
    return adapt_status(ipk_convolve_gpu(&src, &dst, &p, ex->scratch, ex->scratch_bytes, ex->stream),
                        "convolve", ex);
}
#endif

static int conv_cost(const void *state, const ip_shape *in, ip_cost *cost)
{
    const double side = cost_side(conv_halo(state));
    (void)in;
    return cost_set(cost, 0.2 * side * side, 0.0030);
}

/* Same-type output only: the fused kernel rounds and saturates as run_cpu does for it. */
static int conv_window(const void *state, const ip_shape *in, ip_window *w)
{
    const conv_state *s = state;
    (void)in;
    if (s->output_f32) return IP_EUNSUPPORTED;
    w->kind = IP_WINDOW_CONVOLVE;
    w->border = (uint32_t)s->border;
    w->weights = s->weights;
    w->kw = s->kw;
    w->kh = s->kh;
    w->divisor = s->divisor;
    w->offset = s->offset;
    return IP_OK;
}

static const ip_stage conv_stage = {
    .abi_version = IP_ABI_VERSION,
    .struct_size = sizeof(ip_stage),
    .name = "convolve",
    .summary = "weighted sum of the window as OpenCV filter2D, / divisor + offset, rounded and saturated",
    .params = conv_params,
    .n_params = IP_COUNT(conv_params),
    .create = conv_create,
    .plan = conv_plan,
    .run_cpu = conv_run_cpu,
    .run_gpu = IP_GPU_ENTRY(conv_run_gpu),
    .destroy = free,
    .stage_class = IP_CLASS_AREA,
    .cost_of = conv_cost,
    .window_of = conv_window,
};

IP_EXPORT const ip_stage *imgpipe_stage(void) { return &conv_stage; }
