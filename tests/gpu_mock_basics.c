/* The parts of a mock device (gpu/gpu.h) that every GPU mock test shares: one device, named
 * "mock", that starts at once and records no CUDA graphs (a capture is refused should one be
 * tried), whose pinned host memory is its device memory. Each mock test adds its own memory,
 * streams and copies; gpu_mock_plain.c is memory from malloc and events that are done at once. */
#include <stdio.h>
#include <string.h>
#include "gpu/gpu.h"
#include "imgpipe/plugin.h"

int gpu_built(void) { return 1; }
void gpu_prefer_eager_loading(void) {}
void gpu_prefer_blocking_sync(int device) { (void)device; }
/* A test that waits for the start-up sets this (it runs on the starting thread). */
void (*gpu_mock_on_start)(int device);

int gpu_start(int device, char *err, size_t errlen)
{
    (void)err; (void)errlen;
    if (gpu_mock_on_start) gpu_mock_on_start(device);
    return IP_OK;
}
int gpu_device_count(char *why, size_t whylen) { (void)why; (void)whylen; return 1; }
int gpu_device_name(int device, char *name, size_t len) { (void)device; snprintf(name, len, "mock"); return IP_OK; }
int gpu_select(int device, char *err, size_t errlen) { (void)device; (void)err; (void)errlen; return IP_OK; }
void gpu_clear_error(void) {}

int gpu_compute_capability(int device, int *arch, char *err, size_t errlen)
{
    (void)device; (void)err; (void)errlen;
    *arch = 90;
    return IP_OK;
}

int gpu_capture_begin(void *stream, char *err, size_t errlen)
{
    (void)stream;
    snprintf(err, errlen, "the mock device records no graphs");
    return IP_ECUDA;
}
int gpu_capture_end(void *stream, void **graph_exec, char *err, size_t errlen)
{
    *graph_exec = NULL;
    return gpu_capture_begin(stream, err, errlen);
}
int gpu_graph_launch(void *graph_exec, void *stream, char *err, size_t errlen)
{
    (void)graph_exec;
    return gpu_capture_begin(stream, err, errlen);
}
void gpu_graph_destroy(void *graph_exec) { (void)graph_exec; }

/* Pinned host memory is the mock's device memory (gpu_malloc, each test's own), mapped to itself;
 * a test may count the allocations. */
size_t gpu_mock_pinned_allocs;
int gpu_host_alloc(void **ptr, size_t bytes, int mapped, char *err, size_t errlen)
{
    (void)mapped;
    gpu_mock_pinned_allocs++;
    return gpu_malloc(ptr, bytes, err, errlen);
}
void gpu_host_free(void *ptr) { gpu_free(ptr); }
int gpu_host_device_pointer(void *host, void **device, char *err, size_t errlen)
{
    (void)err; (void)errlen;
    *device = host;
    return IP_OK;
}
int gpu_zero(void *ptr, size_t bytes, void *stream, char *err, size_t errlen)
{
    (void)stream; (void)err; (void)errlen;
    memset(ptr, 0, bytes);
    return IP_OK;
}
int gpu_memory_info(size_t *free_bytes, size_t *total_bytes, char *err, size_t errlen)
{
    (void)err; (void)errlen;
    *free_bytes = *total_bytes = (size_t)1 << 30;
    return IP_OK;
}
