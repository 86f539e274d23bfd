/* The GPU codecs a run may use besides nvJPEG: nvCOMP's deflate and zstd for TIFF strips and
 * tiles and for PNG's image data, on the run's stream. */
#ifndef IMGPIPE_CODEC_GPU_H
#define IMGPIPE_CODEC_GPU_H
#include "gpu/nvcomp.h"

typedef struct {
    nvcomp_lib *nvcomp;          /* NULL: none (the CPU codecs run) */
    nvcomp_batch *batch;         /* scratch on stream */
    void *stream;                /* a cudaStream_t */
    int device;
} io_gpu_codecs;

/* Opens nvCOMP and a batch on stream for device (the GPU context current). IP_EUNSUPPORTED with
 * one line saying why (no library, no CUDA build). */
int io_gpu_codecs_open(io_gpu_codecs **c, int device, void *stream, char *why, size_t whylen);
void io_gpu_codecs_close(io_gpu_codecs *c);
#endif
