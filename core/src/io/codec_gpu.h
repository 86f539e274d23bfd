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
#endif
