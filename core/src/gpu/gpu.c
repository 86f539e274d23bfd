#define _POSIX_C_SOURCE 200809L
#include "gpu/gpu.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "imgpipe/plugin.h"

/* The NVIDIA driver's control node: without it no CUDA device can exist, and saying so costs no
 * CUDA start-up. */
int gpu_driver_present(char *why, size_t whylen)
{
    if (access("/dev/nvidiactl", F_OK) == 0 || access("/proc/driver/nvidia/version", F_OK) == 0) return 1;
    snprintf(why, whylen, "no GPU: this machine has no NVIDIA driver (no /dev/nvidiactl)");
    return 0;
}

#ifdef IMGPIPE_HAVE_CUDA
#include <cuda_runtime_api.h>

int gpu_built(void) { return 1; }

void gpu_prefer_eager_loading(void)
{
    setenv("CUDA_MODULE_LOADING", "EAGER", 0);
}

static int cuda_fail(cudaError_t rc, const char *what, char *err, size_t errlen)
{
    if (rc == cudaSuccess) return IP_OK;
    if (err && errlen) snprintf(err, errlen, "%s: %s", what, cudaGetErrorString(rc));
    cudaGetLastError();
    return rc == cudaErrorMemoryAllocation ? IP_ENOMEM : IP_ECUDA;
}

int gpu_device_count(char *why, size_t whylen)
{
    int n = 0;
    cudaError_t rc = cudaGetDeviceCount(&n);
    if (rc != cudaSuccess) {
        snprintf(why, whylen, "no usable CUDA device (%s)", cudaGetErrorString(rc));
        cudaGetLastError();
        return 0;
    }
    if (n == 0) snprintf(why, whylen, "no CUDA device found");
    return n;
}

int gpu_device_name(int device, char *name, size_t len)
{
    struct cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) return IP_ECUDA;
    snprintf(name, len, "%s", prop.name);
    return IP_OK;
}

int gpu_select(int device, char *err, size_t errlen)
{
    return cuda_fail(cudaSetDevice(device), "cudaSetDevice", err, errlen);
}

void gpu_prefer_blocking_sync(int device)
{
    if (cudaSetDevice(device) != cudaSuccess || cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync) != cudaSuccess)
        cudaGetLastError();   /* a context already made keeps its flags: waits then spin, as before */
}

int gpu_start(int device, char *err, size_t errlen)
{
    char why[256];
    int n = gpu_device_count(why, sizeof why);
    if (n == 0) {
        snprintf(err, errlen, "%s", why);
        return IP_EUNSUPPORTED;
    }
    if (device >= n) {
        snprintf(err, errlen, "GPU %d does not exist (this machine has %d)", device, n);
        return IP_EINVAL;
    }
    int rc = gpu_select(device, err, errlen);
    /* cudaFree(0) makes the primary context now rather than at the first real call. */
    if (rc == IP_OK) rc = cuda_fail(cudaFree(0), "creating the GPU context", err, errlen);
    return rc;
}

int gpu_stream_create(void **stream, char *err, size_t errlen)
{
    cudaStream_t s;
    int rc = cuda_fail(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate", err, errlen);
    *stream = rc == IP_OK ? (void *)s : NULL;
    return rc;
}

int gpu_stream_create_urgent(void **stream, char *err, size_t errlen)
{
    int least = 0, greatest = 0;
    cudaStream_t s;
    *stream = NULL;
    int rc = cuda_fail(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange", err,
                       errlen);
    if (rc == IP_OK)
        rc = cuda_fail(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, greatest), "cudaStreamCreateWithPriority",
                       err, errlen);
    if (rc == IP_OK) *stream = s;
    return rc;
}

void gpu_stream_destroy(void *stream)
{
    if (stream) cudaStreamDestroy((cudaStream_t)stream);
}

int gpu_stream_sync(void *stream, char *err, size_t errlen)
{
    return cuda_fail(cudaStreamSynchronize((cudaStream_t)stream), "GPU work failed", err, errlen);
}

/* IMGPIPE_GPU_ALLOC_LIMIT (bytes) makes larger allocations fail as if the card were full, so the
 * out-of-memory path can be tested without an image larger than the card. */
static int over_test_limit(size_t bytes)
{
    const char *limit = getenv("IMGPIPE_GPU_ALLOC_LIMIT");
    return limit && *limit && bytes > strtoull(limit, NULL, 10);
}

/* An allocation's outcome; out of memory says how much was asked for. */
static int alloc_fail(cudaError_t rc, size_t bytes, const char *what, char *err, size_t errlen)
{
    if (rc != cudaErrorMemoryAllocation) return cuda_fail(rc, what, err, errlen);
    cudaGetLastError();
    snprintf(err, errlen, "GPU out of memory allocating %.1f MiB", (double)bytes / 1048576.0);
    return IP_ENOMEM;
}

int gpu_malloc(void **ptr, size_t bytes, char *err, size_t errlen)
{
    *ptr = NULL;
    cudaError_t rc = over_test_limit(bytes) ? cudaErrorMemoryAllocation : cudaMalloc(ptr, bytes ? bytes : 1);
    return alloc_fail(rc, bytes, "cudaMalloc", err, errlen);
}

void gpu_free(void *ptr)
{
    if (ptr) cudaFree(ptr);
}

/* Stream-ordered pools: cudaMalloc and cudaFree of an 8192x8192 result cost 0.37 and 0.47 ms on
 * the H100, an allocation from a warm pool a few microseconds, and its free does not wait. */
int gpu_pool_create(void **pool, int device, uint64_t keep_bytes, char *err, size_t errlen)
{
    *pool = NULL;
    struct cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    cudaMemPool_t p = NULL;
    int rc = cuda_fail(cudaMemPoolCreate(&p, &props), "cudaMemPoolCreate", err, errlen);
    /* keep that much freed memory at a synchronisation instead of trimming it all */
    if (rc == IP_OK)
        rc = cuda_fail(cudaMemPoolSetAttribute(p, cudaMemPoolAttrReleaseThreshold, &keep_bytes),
                       "cudaMemPoolSetAttribute", err, errlen);
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
    cudaError_t rc = over_test_limit(bytes) ? cudaErrorMemoryAllocation
                                            : cudaMallocFromPoolAsync(ptr, bytes ? bytes : 1, (cudaMemPool_t)pool,
                                                                      (cudaStream_t)stream);
    return alloc_fail(rc, bytes, "cudaMallocFromPoolAsync", err, errlen);
}

int gpu_free_async(void *ptr, void *stream, char *err, size_t errlen)
{
    return ptr ? cuda_fail(cudaFreeAsync(ptr, (cudaStream_t)stream), "cudaFreeAsync", err, errlen) : IP_OK;
}

int gpu_host_alloc(void **ptr, size_t bytes, int mapped, char *err, size_t errlen)
{
    *ptr = NULL;
    unsigned flags = mapped ? cudaHostAllocMapped : cudaHostAllocDefault;
    return cuda_fail(cudaHostAlloc(ptr, bytes ? bytes : 1, flags), "pinned host allocation", err, errlen);
}

void gpu_host_free(void *ptr)
{
    if (ptr) cudaFreeHost(ptr);
}

int gpu_host_device_pointer(void *host, void **device, char *err, size_t errlen)
{
    return cuda_fail(cudaHostGetDevicePointer(device, host, 0), "mapping host memory", err, errlen);
}

int gpu_copy2d(void *dst, size_t dst_pitch, const void *src, size_t src_pitch, size_t row_bytes,
               size_t rows, gpu_copy_kind kind, void *stream, char *err, size_t errlen)
{
    enum cudaMemcpyKind k = kind == GPU_H2D ? cudaMemcpyHostToDevice
                          : kind == GPU_D2H ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice;
    return cuda_fail(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, row_bytes, rows, k, (cudaStream_t)stream),
                     "GPU copy", err, errlen);
}

int gpu_zero(void *ptr, size_t bytes, void *stream, char *err, size_t errlen)
{
    return cuda_fail(cudaMemsetAsync(ptr, 0, bytes, (cudaStream_t)stream), "GPU memset", err, errlen);
}

int gpu_event_create(void **event, char *err, size_t errlen)
{
    cudaEvent_t e;
    int rc = cuda_fail(cudaEventCreate(&e), "cudaEventCreate", err, errlen);
    *event = rc == IP_OK ? (void *)e : NULL;
    return rc;
}

void gpu_event_destroy(void *event)
{
    if (event) cudaEventDestroy((cudaEvent_t)event);
}

int gpu_event_record(void *event, void *stream)
{
    return cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream) == cudaSuccess ? IP_OK : IP_ECUDA;
}

int gpu_stream_wait_event(void *stream, void *event, char *err, size_t errlen)
{
    return cuda_fail(cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)event, 0), "cudaStreamWaitEvent", err,
                     errlen);
}

int gpu_event_sync(void *event, char *err, size_t errlen)
{
    return cuda_fail(cudaEventSynchronize((cudaEvent_t)event), "GPU work failed", err, errlen);
}

float gpu_event_ms(void *start, void *stop)
{
    float ms = 0;
    if (cudaEventSynchronize((cudaEvent_t)stop) != cudaSuccess ||
        cudaEventElapsedTime(&ms, (cudaEvent_t)start, (cudaEvent_t)stop) != cudaSuccess)
        return -1.0f;
    return ms;
}

int gpu_memory_info(size_t *free_bytes, size_t *total_bytes, char *err, size_t errlen)
{
    return cuda_fail(cudaMemGetInfo(free_bytes, total_bytes), "cudaMemGetInfo", err, errlen);
}

void gpu_clear_error(void) { cudaGetLastError(); }

int gpu_compute_capability(int device, int *arch, char *err, size_t errlen)
{
    int major = 0, minor = 0;
    int rc = cuda_fail(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), "compute capability",
                       err, errlen);
    if (rc == IP_OK)
        rc = cuda_fail(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device), "compute capability",
                       err, errlen);
    *arch = rc == IP_OK ? major * 10 + minor : 0;
    return rc;
}

int gpu_capture_begin(void *stream, char *err, size_t errlen)
{
    return cuda_fail(cudaStreamBeginCapture((cudaStream_t)stream, cudaStreamCaptureModeThreadLocal),
                     "starting a CUDA graph capture", err, errlen);
}

int gpu_capture_end(void *stream, void **graph_exec, char *err, size_t errlen)
{
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    *graph_exec = NULL;
    int rc = cuda_fail(cudaStreamEndCapture((cudaStream_t)stream, &graph), "capturing the stages as a CUDA graph",
                       err, errlen);
    if (rc == IP_OK) rc = cuda_fail(cudaGraphInstantiate(&exec, graph, 0), "instantiating a CUDA graph", err, errlen);
    if (graph) cudaGraphDestroy(graph);
    if (rc != IP_OK) cudaGetLastError();
    *graph_exec = rc == IP_OK ? (void *)exec : NULL;
    return rc;
}

int gpu_graph_launch(void *graph_exec, void *stream, char *err, size_t errlen)
{
    return cuda_fail(cudaGraphLaunch((cudaGraphExec_t)graph_exec, (cudaStream_t)stream), "replaying a CUDA graph",
                     err, errlen);
}

void gpu_graph_destroy(void *graph_exec)
{
    if (graph_exec) cudaGraphExecDestroy((cudaGraphExec_t)graph_exec);
}

#else

static int no_cuda(char *err, size_t errlen)
{
    if (err && errlen) snprintf(err, errlen, "imgpipe was built without CUDA");
    return IP_EUNSUPPORTED;
}

int gpu_built(void) { return 0; }
void gpu_prefer_eager_loading(void) {}
void gpu_prefer_blocking_sync(int device) { (void)device; }
int gpu_start(int device, char *err, size_t errlen) { (void)device; return no_cuda(err, errlen); }

int gpu_device_count(char *why, size_t whylen)
{
    snprintf(why, whylen, "imgpipe was built without CUDA");
    return 0;
}

int gpu_device_name(int device, char *name, size_t len) { (void)device; (void)name; (void)len; return IP_EUNSUPPORTED; }
int gpu_select(int device, char *err, size_t errlen) { (void)device; return no_cuda(err, errlen); }
int gpu_stream_create(void **stream, char *err, size_t errlen) { *stream = NULL; return no_cuda(err, errlen); }
int gpu_stream_create_urgent(void **stream, char *err, size_t errlen) { return gpu_stream_create(stream, err, errlen); }
void gpu_stream_destroy(void *stream) { (void)stream; }
int gpu_stream_sync(void *stream, char *err, size_t errlen) { (void)stream; return no_cuda(err, errlen); }
int gpu_malloc(void **ptr, size_t bytes, char *err, size_t errlen) { (void)bytes; *ptr = NULL; return no_cuda(err, errlen); }
void gpu_free(void *ptr) { (void)ptr; }
int gpu_pool_create(void **pool, int device, uint64_t keep_bytes, char *err, size_t errlen)
{
    (void)device; (void)keep_bytes; *pool = NULL;
    return no_cuda(err, errlen);
}
void gpu_pool_destroy(void *pool) { (void)pool; }
int gpu_malloc_from_pool(void **ptr, size_t bytes, void *pool, void *stream, char *err, size_t errlen)
{
    (void)bytes; (void)pool; (void)stream; *ptr = NULL;
    return no_cuda(err, errlen);
}
int gpu_free_async(void *ptr, void *stream, char *err, size_t errlen)
{
    (void)stream;
    return ptr ? no_cuda(err, errlen) : IP_OK;
}
int gpu_host_alloc(void **ptr, size_t bytes, int mapped, char *err, size_t errlen)
{
    (void)bytes; (void)mapped; *ptr = NULL;
    return no_cuda(err, errlen);
}
void gpu_host_free(void *ptr) { (void)ptr; }
int gpu_host_device_pointer(void *host, void **device, char *err, size_t errlen)
{
    (void)host; *device = NULL;
    return no_cuda(err, errlen);
}
int gpu_copy2d(void *dst, size_t dst_pitch, const void *src, size_t src_pitch, size_t row_bytes,
               size_t rows, gpu_copy_kind kind, void *stream, char *err, size_t errlen)
{
    (void)dst; (void)dst_pitch; (void)src; (void)src_pitch; (void)row_bytes; (void)rows; (void)kind; (void)stream;
    return no_cuda(err, errlen);
}
int gpu_zero(void *ptr, size_t bytes, void *stream, char *err, size_t errlen)
{
    (void)ptr; (void)bytes; (void)stream;
    return no_cuda(err, errlen);
}
int gpu_event_create(void **event, char *err, size_t errlen) { *event = NULL; return no_cuda(err, errlen); }
void gpu_event_destroy(void *event) { (void)event; }
int gpu_event_record(void *event, void *stream) { (void)event; (void)stream; return IP_EUNSUPPORTED; }
int gpu_stream_wait_event(void *stream, void *event, char *err, size_t errlen)
{
    (void)stream; (void)event;
    return no_cuda(err, errlen);
}
int gpu_event_sync(void *event, char *err, size_t errlen) { (void)event; return no_cuda(err, errlen); }
float gpu_event_ms(void *start, void *stop) { (void)start; (void)stop; return -1.0f; }
int gpu_memory_info(size_t *free_bytes, size_t *total_bytes, char *err, size_t errlen)
{
    *free_bytes = *total_bytes = 0;
    return no_cuda(err, errlen);
}
void gpu_clear_error(void) {}
int gpu_compute_capability(int device, int *arch, char *err, size_t errlen)
{
    (void)device; *arch = 0;
    return no_cuda(err, errlen);
}
int gpu_capture_begin(void *stream, char *err, size_t errlen) { (void)stream; return no_cuda(err, errlen); }
int gpu_capture_end(void *stream, void **graph_exec, char *err, size_t errlen)
{
    (void)stream; *graph_exec = NULL;
    return no_cuda(err, errlen);
}
int gpu_graph_launch(void *graph_exec, void *stream, char *err, size_t errlen)
{
    (void)graph_exec; (void)stream;
    return no_cuda(err, errlen);
}
void gpu_graph_destroy(void *graph_exec) { (void)graph_exec; }
#endif
