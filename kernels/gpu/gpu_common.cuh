/* Helpers shared by the CUDA kernels: launch status, grid sizing, row addressing. */
#ifndef IPK_GPU_COMMON_CUH
#define IPK_GPU_COMMON_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include "ipk.h"
#include "border.h"

/* CUDA limits gridDim.y and gridDim.z to 65535: kernels loop over rows past that. */
#define IPK_MAX_GRID_Y 65535

static inline int ipk_launch_status(void)
{
    return cudaGetLastError() == cudaSuccess ? IPK_OK : IPK_ECUDA;
}

static inline int ipk_dtype_size(ipk_dtype t) { return t == IPK_U8 ? 1 : t == IPK_U16 ? 2 : 4; }

static inline unsigned ipk_grid_rows(int rows)
{
    return (unsigned)(rows < IPK_MAX_GRID_Y ? (rows > 0 ? rows : 1) : IPK_MAX_GRID_Y);
}

static inline unsigned ipk_div_up(long long n, long long d) { return (unsigned)((n + d - 1) / d); }

/* Sane image description: sizes >= 0, 1-4 channels, a known dtype, rows that hold a row. */
static inline int ipk_img_ok(const ipk_img *im)
{
    if (!im || im->width < 0 || im->height < 0 || im->channels < 1 || im->channels > 4) return 0;
    if (im->dtype != IPK_U8 && im->dtype != IPK_U16 && im->dtype != IPK_F32) return 0;
    long long row_bytes = (long long)im->width * im->channels * ipk_dtype_size(im->dtype);
    return im->stride >= row_bytes;
}

static inline int ipk_img_empty(const ipk_img *im) { return im->width == 0 || im->height == 0; }

static inline int ipk_same_shape(const ipk_img *a, const ipk_img *b)
{
    return a->width == b->width && a->height == b->height && a->channels == b->channels;
}

static inline int ipk_aligned(const void *p, ptrdiff_t stride, unsigned align)
{
    return ((uintptr_t)p % align) == 0 && ((uintptr_t)stride % align) == 0;
}

template <typename T>
__device__ __forceinline__ const T *ipk_crow(const void *base, ptrdiff_t stride, int y)
{
    return (const T *)((const char *)base + (ptrdiff_t)y * stride);
}

template <typename T>
__device__ __forceinline__ T *ipk_wrow(void *base, ptrdiff_t stride, int y)
{
    return (T *)((char *)base + (ptrdiff_t)y * stride);
}

/* Integer saturation used by every rounded store. */
template <typename T> __device__ __forceinline__ T ipk_sat(long long v);
template <> __device__ __forceinline__ uint8_t ipk_sat<uint8_t>(long long v)
{
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}
template <> __device__ __forceinline__ uint16_t ipk_sat<uint16_t>(long long v)
{
    return (uint16_t)(v < 0 ? 0 : v > 65535 ? 65535 : v);
}

#endif
