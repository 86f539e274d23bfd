/* Integer convolution sums to integer output, shared by the CPU and GPU convolve so that both
 * round with the same operations. Every method here equals the reference
 * rint((double)S / divisor + offset), saturated (NaN to 0), bit for bit:
 * SHIFT, for an integer offset and d = +-2^k: (S/d + offset) is exact in double, so rint is
 * the integer floor plus the half-to-even step. ODD, for an integer offset and an odd d:
 * S/d + offset is never a tie and lies at least 1/(2|d|) from one, so rint is
 * floor((2T + |d|) / (2|d|)) with T = sign*S + bias, computed in float with a 0.5 margin,
 * exact while |2T + |d|| < 2^22. GENERAL: the reference in double. */
#ifndef IPK_CONV_ROUND_H
#define IPK_CONV_ROUND_H
#ifdef __CUDACC_RTC__
/* NVRTC (run-time fusion, kernels/fused/fused_convolve.cu) has no system headers; its math is built in. */
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
#else
#include <math.h>
#include <stdint.h>
#endif
#include "border.h"

enum { IPK_CONV_FINISH_GENERAL = 0, IPK_CONV_FINISH_SHIFT, IPK_CONV_FINISH_ODD };

/* sign: of the divisor, S / d == (sign * S) / |d|; bias: offset * |d|, so that
 * sign * S + bias == (S / d + offset) * |d|; div: |d|; shift, half: log2 |d| and half of |d|
 * for a power of two; inv: 1 / (2|d|) for an odd |d|. */
typedef struct { int32_t sign, bias, div, shift, half; float inv; } ipk_conv_rounding;

/* rint(t / 2^k), half to even, for k >= 1: floor((t + 2^(k-1) - 1 + parity of floor(t / 2^k)) / 2^k).
 * The lift keeps values non-negative and, a multiple of 2^(k+1), keeps the parity. */
IPK_HD int32_t ipk_conv_round_shift(const ipk_conv_rounding r, int32_t t)
{
    const uint32_t lift = 1u << 30;
    uint32_t u = (uint32_t)t + lift, odd = (u >> r.shift) & 1u;
    return (int32_t)((u + (uint32_t)r.half - 1u + odd) >> r.shift) - (int32_t)(lift >> r.shift);
}

/* Truncation is the floor for x >= 0; below 0 both give at most 0, which the clamp makes 0. */
IPK_HD int32_t ipk_conv_round_odd(const ipk_conv_rounding r, int32_t t)
{
    return (int32_t)(((float)(2 * t + r.div) + 0.5f) * r.inv);
}

IPK_HD int32_t ipk_conv_clamp(int32_t v, int32_t max_value)
{
    return v < 0 ? 0 : v > max_value ? max_value : v;
}

/* Integer output from the double result: rint, saturated, NaN to 0. */
IPK_HD double ipk_conv_saturate(double v, double max_value)
{
    double r = rint(v);
    return r >= 0 ? (r <= max_value ? r : max_value) : 0;
}

static inline int ipk_conv_is_int(double v, double limit) { return v == floor(v) && fabs(v) <= limit; }

/* Picks SHIFT or ODD when the divisor, the offset and the largest |sum| allow (see above) and
 * fills *r; GENERAL otherwise. */
static inline int ipk_conv_round_plan(double divisor, double offset, int64_t max_abs_sum, ipk_conv_rounding *r)
{
    if (!ipk_conv_is_int(divisor, 1 << 20) || !ipk_conv_is_int(offset, 1 << 20)) return IPK_CONV_FINISH_GENERAL;
    const int32_t d = (int32_t)fabs(divisor);
    r->sign = divisor < 0 ? -1 : 1;
    r->div = d;
    const int64_t bias = (int64_t)offset * d, reach = max_abs_sum + (bias < 0 ? -bias : bias);
    if (2 * reach >= (1 << 29)) return IPK_CONV_FINISH_GENERAL;
    r->bias = (int32_t)bias;
    if ((d & (d - 1)) == 0) {
        r->shift = 0;
        while ((1 << r->shift) < d) r->shift++;
        if (d == 1) {   /* as 2T / 2, which the shift rounding handles */
            r->sign *= 2;
            r->bias *= 2;
            r->shift = 1;
        }
        r->half = 1 << (r->shift - 1);
        return IPK_CONV_FINISH_SHIFT;
    }
    if ((d & 1) && 2 * reach + d < (1 << 22)) {
        r->inv = 1.0f / (float)(2 * d);
        return IPK_CONV_FINISH_ODD;
    }
    return IPK_CONV_FINISH_GENERAL;
}
#endif
