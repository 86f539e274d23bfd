#include "fuse_window.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "conv_round.h"
#include "convolve_separable.h"
#include "convolve_vec.h"
#include "ipk_conv_named.h"

#define CONV_MAX_SIDE 31

/* One use of convolve, as plugins/convolve/convolve.c reads its arguments. */
typedef struct {
    int kw, kh, border;
    double w[CONV_MAX_SIDE * CONV_MAX_SIDE];
    double divisor, offset, abs_sum;
} conv_use;

/* The in-tree convolve, told by name and parameter table. */
static int is_convolve_stage(const ip_stage *s)
{
    static const struct { const char *name; ip_type type; } want[] = {
        { "kernel", IP_MATRIX }, { "divisor", IP_FLOAT }, { "offset", IP_FLOAT }, { "border", IP_ENUM },
        { "output", IP_ENUM },
    };
    if (strcmp(s->name, "convolve") != 0 || s->n_params != (int)(sizeof want / sizeof *want)) return 0;
    for (int i = 0; i < s->n_params; i++)
        if (strcmp(s->params[i].name, want[i].name) != 0 || s->params[i].type != want[i].type) return 0;
    return 1;
}

static int take_weights(const ip_value *kernel, conv_use *c)
{
    if (!kernel->m.v) {
        if (kernel->choice < 0 || kernel->choice >= IPK_CONV_N_NAMED) return 0;
        const ipk_named_kernel *k = &ipk_conv_named[kernel->choice];
        c->kw = c->kh = k->side;
        memcpy(c->w, k->w, sizeof(double) * (size_t)(k->side * k->side));
        return 1;
    }
    c->kw = kernel->m.cols;
    c->kh = kernel->m.rows;
    if (c->kw < 1 || c->kh < 1 || c->kw > CONV_MAX_SIDE || c->kh > CONV_MAX_SIDE || !(c->kw & 1) || !(c->kh & 1))
        return 0;
    memcpy(c->w, kernel->m.v, sizeof(double) * (size_t)(c->kw * c->kh));
    return 1;
}

/* The use's kernel, divisor (auto: the weights' sum, or 1 when it is 0), offset and border; 0
 * when the fused kernel does not take it. */
static int conv_use_of(const plan_step *st, conv_use *c)
{
    const ip_value *v = st->args.values;
    if (!is_convolve_stage(st->plugin->stage) || st->in.dtype != IP_U8 || st->out.dtype != IP_U8 ||
        st->in.channels != 1 || !take_weights(&v[0], c))
        return 0;
    const int n = c->kw * c->kh;
    double sum = 0;
    c->abs_sum = 0;
    for (int i = 0; i < n; i++) {
        sum += c->w[i];
        c->abs_sum += fabs(c->w[i]);
    }
    c->divisor = v[1].choice == 0 ? (sum == 0 ? 1 : sum) : v[1].f;
    c->offset = v[2].f;
    c->border = (int)v[3].i;
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
