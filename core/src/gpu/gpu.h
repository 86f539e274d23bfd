/* The only core file that calls the CUDA runtime; stubs when built without CUDA. */
#ifndef IMGPIPE_GPU_H
#define IMGPIPE_GPU_H
#include <stddef.h>
#include <stdint.h>

typedef enum { GPU_H2D, GPU_D2H, GPU_D2D } gpu_copy_kind;

/* Whether this build has the CUDA path at all (no driver call). */
int gpu_built(void);
/* Asks CUDA to load every registered kernel when the context is made instead of at its first
 * launch (unless CUDA_MODULE_LOADING is set already). Call before any other gpu_ function,
 * from one thread, after the plugins are loaded: the start-up thread then pays it. */
void gpu_prefer_eager_loading(void);
/* Before the device's context exists: threads waiting for the GPU sleep rather than spin, so that
 * a folder's workers waiting on their streams leave the cores to the others' codecs. */
void gpu_prefer_blocking_sync(int device);
/* Initialises the driver and makes device's context (the slow part of start-up). */
int gpu_start(int device, char *err, size_t errlen);

/* Number of usable devices, 0 with the reason in `why` when there is none. */
int gpu_device_count(char *why, size_t whylen);
/* Whether an NVIDIA driver is there at all, without starting CUDA; why says it when not. */
int gpu_driver_present(char *why, size_t whylen);
int gpu_device_name(int device, char *name, size_t len);
int gpu_select(int device, char *err, size_t errlen);

int gpu_stream_create(void **stream, char *err, size_t errlen);
/* A stream whose kernels the SMs take ahead of a plain stream's when both wait: for work a
 * pipeline waits on, beside bulk work (the strips' compression) that would otherwise hold the SMs. */
int gpu_stream_create_urgent(void **stream, char *err, size_t errlen);
void gpu_stream_destroy(void *stream);
int gpu_stream_sync(void *stream, char *err, size_t errlen);

int gpu_malloc(void **ptr, size_t bytes, char *err, size_t errlen);
void gpu_free(void *ptr);
/* Stream-ordered pools: memory freed into a pool is kept for its next allocation, up
 * to keep_bytes at a synchronisation. Destroy a pool only when nothing allocated from it is out. */
int gpu_pool_create(void **pool, int device, uint64_t keep_bytes, char *err, size_t errlen);
void gpu_pool_destroy(void *pool);
int gpu_malloc_from_pool(void **ptr, size_t bytes, void *pool, void *stream, char *err, size_t errlen);
/* Frees in stream order: the memory may be reused by work queued on stream after this call. */
int gpu_free_async(void *ptr, void *stream, char *err, size_t errlen);
/* Pinned host memory; mapped = also addressable from the device (zero-copy). */
int gpu_host_alloc(void **ptr, size_t bytes, int mapped, char *err, size_t errlen);
void gpu_host_free(void *ptr);
int gpu_host_device_pointer(void *host, void **device, char *err, size_t errlen);

int gpu_copy2d(void *dst, size_t dst_pitch, const void *src, size_t src_pitch, size_t row_bytes,
               size_t rows, gpu_copy_kind kind, void *stream, char *err, size_t errlen);
/* Queues zeroing bytes of device memory at ptr on stream. */
int gpu_zero(void *ptr, size_t bytes, void *stream, char *err, size_t errlen);

int gpu_event_create(void **event, char *err, size_t errlen);
void gpu_event_destroy(void *event);
int gpu_event_record(void *event, void *stream);
/* Work queued on stream after this call waits until event's recorded work is done. */
int gpu_stream_wait_event(void *stream, void *event, char *err, size_t errlen);
/* Waits on the host until event's recorded work is done. */
int gpu_event_sync(void *event, char *err, size_t errlen);
/* Milliseconds between two recorded events (waits for the second). */
float gpu_event_ms(void *start, void *stop);
/* Free and total memory of the current device (cudaMemGetInfo). */
int gpu_memory_info(size_t *free_bytes, size_t *total_bytes, char *err, size_t errlen);
/* Clears a sticky error left by a failed kernel so the process can carry on on the CPU. */
void gpu_clear_error(void);
/* The device's compute capability as one number (90 for 9.0). */
int gpu_compute_capability(int device, int *arch, char *err, size_t errlen);

/* CUDA graphs: what is queued on stream between begin and end is recorded, not run; end makes
 * it a graph ready to replay (IP_ECUDA when a queued call cannot be captured, with the stream
 * usable again). */
int gpu_capture_begin(void *stream, char *err, size_t errlen);
int gpu_capture_end(void *stream, void **graph_exec, char *err, size_t errlen);
int gpu_graph_launch(void *graph_exec, void *stream, char *err, size_t errlen);
void gpu_graph_destroy(void *graph_exec);
#endif
