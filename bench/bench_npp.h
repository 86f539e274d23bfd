/* NPP, loaded at run time: this machine has no NPP headers, the GPU machine has the
 * libraries (libnpp*.so.13). The few types below follow NPP 12/13's nppdefs.h. */
#ifndef BENCH_NPP_H
#define BENCH_NPP_H
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime.h>

typedef struct { int width, height; } npp_size;     /* NppiSize */
typedef struct { int x, y; } npp_point;             /* NppiPoint */
enum { NPP_BORDER_REPLICATE = 2 };                  /* NppiBorderType */

typedef struct {                                    /* NppStreamContext */
    cudaStream_t hStream;
    int nCudaDeviceId;
    int nMultiProcessorCount;
    int nMaxThreadsPerMultiProcessor;
    int nMaxThreadsPerBlock;
    size_t nSharedMemPerBlock;
    int nCudaDevAttrComputeCapabilityMajor;
    int nCudaDevAttrComputeCapabilityMinor;
    unsigned int nStreamFlags;
    int nReserved0;
} npp_ctx;

/* NppStatus is an int enum: negative is an error, positive a warning. Buffer sizes are
 * written through void * because NPP versions differ (Npp32u or size_t); callers pass a
 * zeroed uint64_t, which reads right either way on little-endian. A NULL member is a
 * function that was not found. */
typedef struct {
    int (*rgb_to_gray)(const uint8_t *src, int src_step, uint8_t *dst, int dst_step, npp_size roi, npp_ctx ctx);
    int (*median)(const uint8_t *src, int32_t src_step, uint8_t *dst, int32_t dst_step, npp_size roi,
                  npp_size mask, npp_point anchor, uint8_t *buffer, npp_ctx ctx);
    int (*median_buffer_size)(npp_size roi, npp_size mask, void *bytes, npp_ctx ctx);
    int (*box)(const uint8_t *src, int32_t src_step, npp_size src_size, npp_point src_offset, uint8_t *dst,
               int32_t dst_step, npp_size roi, npp_size mask, npp_point anchor, int border, npp_ctx ctx);
    int (*filter32f)(const uint8_t *src, int32_t src_step, npp_size src_size, npp_point src_offset,
                     uint8_t *dst, int32_t dst_step, npp_size roi, const float *kernel_dev,
                     npp_size kernel_size, npp_point anchor, int border, npp_ctx ctx);
    int (*histogram_even)(const uint8_t *src, int src_step, npp_size roi, int32_t *hist_dev, int levels,
                          int32_t lower, int32_t upper, uint8_t *buffer, npp_ctx ctx);
    int (*histogram_buffer_size)(npp_size roi, int levels, void *bytes, npp_ctx ctx);
    int (*transpose)(const uint8_t *src, int src_step, uint8_t *dst, int dst_step, npp_size src_roi, npp_ctx ctx);
    npp_ctx ctx;
    char missing[256];          /* what was not found, for the report */
} npp_api;

/* Opens the NPP libraries and fills the context for `stream` on the current device.
 * Never fails: whatever is missing is NULL and named in api->missing. */
void npp_load(npp_api *api, cudaStream_t stream);
#endif
