#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "imgpipe/plugin.h"
#include "../common/adapt.h"
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

static int conv_create(const ip_value *args, void **state, char *err, size_t errlen)
{
    conv_state *s = malloc(sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    int rc = conv_take_kernel(&args[0], s, err, errlen);
    if (!rc) rc = conv_take_divisor(&args[1], s, err, errlen);
    if (!rc && !isfinite(args[2].f)) {
        snprintf(err, errlen, "offset must be a finite number");
        rc = IP_EINVAL;
    }
    if (rc) {
        free(s);
        return rc;
    }
    s->offset = args[2].f;
    s->border = (ipk_border)args[3].i;
    s->output_f32 = args[4].i == 1;
    *state = s;
    return IP_OK;
}

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
    needs->halo = (s->kw > s->kh ? s->kw : s->kh) / 2;
    needs->scratch_bytes = 0;
#ifdef IMGPIPE_HAVE_CUDA
    needs->gpu_scratch_bytes = ipk_convolve_gpu_scratch(in->width, in->height, in->channels,
                                                        (ipk_dtype)in->dtype, s->kw, s->kh);
#else
    needs->gpu_scratch_bytes = 0;
#endif
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
#define CONV_RUN_GPU conv_run_gpu
#else
#define CONV_RUN_GPU NULL
#endif

static const ip_stage conv_stage = {
    .abi_version = IP_ABI_VERSION,
    .struct_size = sizeof(ip_stage),
    .name = "convolve",
    .summary = "weighted sum of the window as OpenCV filter2D, / divisor + offset, rounded and saturated",
    .params = conv_params,
    .n_params = 5,
    .create = conv_create,
    .plan = conv_plan,
    .run_cpu = conv_run_cpu,
    .run_gpu = CONV_RUN_GPU,
    .destroy = free,
    .stage_class = IP_CLASS_AREA,
};

IP_EXPORT const ip_stage *imgpipe_stage(void) { return &conv_stage; }
