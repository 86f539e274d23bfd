/* Stream-ordered memory pools: memory freed into one is kept for the next allocation on the same
 * device, so a warm caller allocates without a trip to the driver and frees without waiting for
 * the device (cudaMalloc and cudaFree of an 8192x8192 result cost 0.37 and 0.47 ms). */
#include "gpu/gpu.h"
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "imgpipe/plugin.h"

#ifdef IMGPIPE_HAVE_CUDA
#include <cuda_runtime_api.h>

static int pool_fail(cudaError_t rc, const char *what, size_t bytes, char *err, size_t errlen)
{
    if (rc == cudaSuccess) return IP_OK;
    cudaGetLastError();
    if (rc == cudaErrorMemoryAllocation) {
        if (err && errlen) snprintf(err, errlen, "GPU out of memory allocating %.1f MiB", (double)bytes / 1048576.0);
        return IP_ENOMEM;
    }
    if (err && errlen) snprintf(err, errlen, "%s: %s", what, cudaGetErrorString(rc));
    return IP_ECUDA;
}

int gpu_pool_create(void **pool, int device, uint64_t keep_bytes, char *err, size_t errlen)
{
    *pool = NULL;
    struct cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    cudaMemPool_t p = NULL;
    int rc = pool_fail(cudaMemPoolCreate(&p, &props), "cudaMemPoolCreate", 0, err, errlen);
    /* keep that much freed memory at a synchronisation instead of trimming it all */
    if (rc == IP_OK)
        rc = pool_fail(cudaMemPoolSetAttribute(p, cudaMemPoolAttrReleaseThreshold, &keep_bytes), "cudaMemPoolSetAttribute",
                       0, err, errlen);
    if (rc != IP_OK && p) cudaMemPoolDestroy(p);
    if (rc == IP_OK) *pool = p;
    return rc;
}

void gpu_pool_destroy(void *pool)
{
    if (pool) cudaMemPoolDestroy((cudaMemPool_t)pool);
}

int gpu_malloc_from_pool(void **ptr, size_t bytes, void *pool, void *stream, char *err, size_t errlen)
{
    *ptr = NULL;
    return pool_fail(cudaMallocFromPoolAsync(ptr, bytes ? bytes : 1, (cudaMemPool_t)pool, (cudaStream_t)stream),
                     "cudaMallocFromPoolAsync", bytes, err, errlen);
}

int gpu_free_async(void *ptr, void *stream, char *err, size_t errlen)
{
    return ptr ? pool_fail(cudaFreeAsync(ptr, (cudaStream_t)stream), "cudaFreeAsync", 0, err, errlen) : IP_OK;
}

#else

static int no_cuda(char *err, size_t errlen)
{
    if (err && errlen) snprintf(err, errlen, "imgpipe was built without CUDA");
    return IP_EUNSUPPORTED;
}

int gpu_pool_create(void **pool, int device, uint64_t keep_bytes, char *err, size_t errlen)
{
    (void)device; (void)keep_bytes;
    *pool = NULL;
    return no_cuda(err, errlen);
}

void gpu_pool_destroy(void *pool) { (void)pool; }

int gpu_malloc_from_pool(void **ptr, size_t bytes, void *pool, void *stream, char *err, size_t errlen)
{
    (void)bytes; (void)pool; (void)stream;
    *ptr = NULL;
    return no_cuda(err, errlen);
}

int gpu_free_async(void *ptr, void *stream, char *err, size_t errlen)
{
    (void)ptr; (void)stream;
    return no_cuda(err, errlen);
}
#endif
