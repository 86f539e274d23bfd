/* Lane-wise primitives of the SWAR filters and the median networks, host and device alike. No
 * system header, so that NVRTC compiles it as it is for run-time fusion (core/src/exec/fuse_plan.c). */
#ifndef IPK_SWAR_OPS_H
#define IPK_SWAR_OPS_H
#include "border.h"

#ifdef __CUDA_ARCH__
#define IPK_UNROLL _Pragma("unroll")
#else
#define IPK_UNROLL
#endif

IPK_HD unsigned ipk_swar_perm(unsigned x, unsigned y, unsigned s)
{
#ifdef __CUDA_ARCH__
    return __byte_perm(x, y, s);
#else
    const unsigned long long v = ((unsigned long long)y << 32) | x;
    unsigned r = 0;
    for (int i = 0; i < 4; i++) r |= (unsigned)((v >> (8 * ((s >> (4 * i)) & 7))) & 0xffu) << (8 * i);
    return r;
#endif
}

/* The high 32 bits of a * b (the divisions by a constant of the mean finishes). */
IPK_HD unsigned ipk_swar_umulhi(unsigned a, unsigned b)
{
#ifdef __CUDA_ARCH__
    return __umulhi(a, b);
#else
    return (unsigned)(((unsigned long long)a * b) >> 32);
#endif
}

IPK_HD unsigned ipk_swar_max2(unsigned a, unsigned b)
{
#ifdef __CUDA_ARCH__
    return __vmaxu2(a, b);
#else
    unsigned lo = (a & 0xffffu) > (b & 0xffffu) ? a & 0xffffu : b & 0xffffu;
    return lo | ((a >> 16) > (b >> 16) ? a >> 16 : b >> 16) << 16;
#endif
}

IPK_HD unsigned ipk_swar_min2(unsigned a, unsigned b)
{
#ifdef __CUDA_ARCH__
    return __vminu2(a, b);
#else
    unsigned lo = (a & 0xffffu) < (b & 0xffffu) ? a & 0xffffu : b & 0xffffu;
    return lo | ((a >> 16) < (b >> 16) ? a >> 16 : b >> 16) << 16;
#endif
}
#endif
