#include "exec/fuse_window.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "conv_round.h"
#include "convolve_separable.h"
#include "convolve_vec.h"
#include "plan/stage_class.h"

#define CONV_MAX_SIDE 31

/* One use of a convolve window, as its stage's window_of gives it. */
typedef struct {
    int kw, kh, border;
    double w[CONV_MAX_SIDE * CONV_MAX_SIDE];
    double divisor, offset, abs_sum;
} conv_use;

static int take_weights(const ip_window *win, conv_use *c)
{
    c->kw = win->kw;
    c->kh = win->kh;
    if (!win->weights || c->kw < 1 || c->kh < 1 || c->kw > CONV_MAX_SIDE || c->kh > CONV_MAX_SIDE || !(c->kw & 1) ||
        !(c->kh & 1))
        return 0;
    memcpy(c->w, win->weights, sizeof(double) * (size_t)(c->kw * c->kh));
    return 1;
}

/* The use's kernel, divisor, offset and border; 0 when the fused kernel does not take it. */
static int conv_use_of(const plan_step *st, conv_use *c)
{
    ip_window win;
    if (!stage_window(st->plugin->stage, st->state, &st->in, &win) || win.kind != IP_WINDOW_CONVOLVE ||
        st->in.dtype != IP_U8 || st->out.dtype != IP_U8 || st->in.channels != 1 || !take_weights(&win, c))
        return 0;
    const int n = c->kw * c->kh;
    c->abs_sum = 0;
    for (int i = 0; i < n; i++) c->abs_sum += fabs(c->w[i]);
    c->divisor = win.divisor;
    c->offset = win.offset;
    c->border = win.border <= IP_BORDER_SHRINK ? (int)win.border : -1;
    return ipk_conv_weights_integral(c->w, n) && c->abs_sum * 255.0 < 2147483647.0 && c->divisor != 0 &&
           isfinite(c->divisor) && isfinite(c->offset) && c->border >= 0 && c->border <= 3 &&
           c->kw / 2 <= FUSE_WINDOW_MAX_RADIUS && c->kh / 2 <= FUSE_WINDOW_MAX_RADIUS;
}

int fuse_convolve_fits(const plan_step *st, int *radius, int *border)
{
    conv_use c;
    ipk_vec_plan vec;
    if (!conv_use_of(st, &c)) return 0;
    /* A 3x3 the GPU's vec kernel takes runs apart: grayscale then gaussian3 took 0.09 + 0.06 ms at
     * 8192x8192 on the H100, the fused tile kernel 0.163 (bench/RESULTS.md). */
    if ((c.kw == 3 || CONV_VEC5_AUTO) && ipk_vec_plan_conv(c.w, c.kw, c.kh, c.divisor, c.offset, &vec)) return 0;
    /* A separable kernel runs apart too: the unfused row and column passes beat the fused kernel's
     * direct sum (grayscale then the 7x7 binomial: 0.251 ms apart, 0.283 fused on the H100). */
    int64_t col[CONV_MAX_SIDE], row[CONV_MAX_SIDE];
    if (c.kw > 1 && c.kh > 1 && ipk_conv_split_int(c.w, c.kw, c.kh, col, row)) return 0;
    *radius = (c.kw > c.kh ? c.kw : c.kh) / 2;
    *border = c.border;
    return 1;
}

static unsigned long long double_bits(double d)
{
    unsigned long long u;
    memcpy(&u, &d, sizeof u);
    return u;
}

int fuse_convolve_defines(const plan_step *st, char *buf, size_t cap)
{
    conv_use c;
    if (!conv_use_of(st, &c)) return IP_EINVAL;
    ipk_conv_rounding r;
    memset(&r, 0, sizeof r);
    int finish = ipk_conv_round_plan(c.divisor, c.offset, (int64_t)(c.abs_sum * 255.0), &r);
    uint32_t inv_bits;
    memcpy(&inv_bits, &r.inv, sizeof inv_bits);
    int used = snprintf(buf, cap,
                        "#define IPF_KW %d\n#define IPF_KH %d\n#define IPF_FINISH %d\n"
                        "#define IPF_ROUNDING { %d, %d, %d, %d, %d, __int_as_float((int)0x%08xu) }\n"
                        "#define IPF_DIVISOR __longlong_as_double((long long)0x%016llxull)\n"
                        "#define IPF_OFFSET __longlong_as_double((long long)0x%016llxull)\n#define IPF_WEIGHTS {",
                        c.kw, c.kh, finish, (int)r.sign, (int)r.bias, (int)r.div, (int)r.shift, (int)r.half,
                        (unsigned)inv_bits, double_bits(c.divisor), double_bits(c.offset));
    for (int i = 0; i < c.kw * c.kh && used > 0 && (size_t)used < cap; i++)
        used += snprintf(buf + used, cap - (size_t)used, "%s%lld", i ? "," : " ", (long long)c.w[i]);
    if (used > 0 && (size_t)used < cap) used += snprintf(buf + used, cap - (size_t)used, " }\n");
    return used > 0 && (size_t)used < cap ? IP_OK : IP_ELIMIT;
}
