/* The few CUDA driver calls fusion needs (loading a CUBIN, launching its kernel), through
 * libcuda.so.1 opened with dlopen. They act on the calling thread's current context, which the
 * runtime's gpu_select makes current. */
#ifndef IMGPIPE_CUDA_DRV_H
#define IMGPIPE_CUDA_DRV_H
#include <stddef.h>

typedef struct cuda_drv cuda_drv;

int cuda_drv_open(cuda_drv **drv, char *err, size_t errlen);
void cuda_drv_close(cuda_drv *drv);
/* The driver's CUDA version as the driver reports it (13000 for 13.0). */
int cuda_drv_version(const cuda_drv *drv);

/* Loads image (a CUBIN) into the current context and finds kernel `name` in it. */
int cuda_drv_load(const cuda_drv *drv, const void *image, const char *name, void **module, void **function,
                  char *err, size_t errlen);
void cuda_drv_unload(const cuda_drv *drv, void *module);
/* Queues function on stream (a cudaStream_t) with params as cuLaunchKernel takes them. */
int cuda_drv_launch(const cuda_drv *drv, void *function, const unsigned grid[3], const unsigned block[3],
                    void *stream, void **params, char *err, size_t errlen);
#endif
