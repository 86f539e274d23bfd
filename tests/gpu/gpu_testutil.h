/* Device images for the GPU-vs-CPU tests: rows padded so the pitch is not the row size, either
 * 16-byte aligned (the vector paths) or only element aligned (the fallbacks). */
#ifndef IMGPIPE_GPU_TESTUTIL_H
#define IMGPIPE_GPU_TESTUTIL_H
#include <cuda_runtime_api.h>
#include "testutil.h"

/* Exits 77 (skipped) with one line when there is no usable CUDA device. */
void need_gpu(void);
/* CHECKs a CUDA result; returns whether it succeeded. */
int cuda_ok(cudaError_t e, const char *what);
size_t esize(ipk_dtype t);
/* A device image poisoned with 0xA5 bytes; aligned16 picks the pitch kind. */
ipk_img dev_alloc(int w, int h, int c, ipk_dtype t, int aligned16);
ipk_img dev_upload(const ipk_img *host, int aligned16);
/* Copies a device image into a new host image with padded rows. */
ipk_img dev_download(const ipk_img *d);
void dev_free(ipk_img *d);
/* CHECKs a kernel's status and that the device finished without error. */
int gpu_finish_ok(int status, const char *what);
#endif
