/* The GPU codecs a run may use besides nvJPEG: nvCOMP's deflate and zstd for TIFF strips and
 * tiles and for PNG's image data, on the run's stream. */
#ifndef IMGPIPE_CODEC_GPU_H
#define IMGPIPE_CODEC_GPU_H
#include "gpu/nvcomp.h"

/* Buffers a codec keeps between images (grown, never shrunk): cudaMalloc, cudaFree and pinned
 * allocations per image serialise a folder's workers, cudaFree waiting for the whole device. */
typedef enum {
    IO_GPU_SCRATCH_A = 0, IO_GPU_SCRATCH_B, IO_GPU_SCRATCH_C, IO_GPU_SCRATCH_D, IO_GPU_SCRATCH_N
} io_gpu_scratch_slot;
typedef struct {
    void *device[IO_GPU_SCRATCH_N], *pinned[IO_GPU_SCRATCH_N];
    size_t device_bytes[IO_GPU_SCRATCH_N], pinned_bytes[IO_GPU_SCRATCH_N];
} io_gpu_scratch;

typedef struct {
    nvcomp_lib *nvcomp;          /* NULL: none (the CPU codecs run) */
    nvcomp_batch *batch;         /* scratch on stream */
    void *stream;                /* a cudaStream_t */
    int device;
    io_gpu_scratch *scratch;     /* one thread at a time, as the codecs */
    struct tiff_fast_check *tiff_fast;   /* the cores' faster level beside the card's TIFF strips,
                                            checked over every image written (NULL: the asked level) */
} io_gpu_codecs;

/* Opens nvCOMP and a batch on stream for device (the GPU context current). IP_EUNSUPPORTED with
 * one line saying why (no library, no CUDA build). */
int io_gpu_codecs_open(io_gpu_codecs **c, int device, void *stream, char *why, size_t whylen);
void io_gpu_codecs_close(io_gpu_codecs *c);
/* The same on a stream of their own, created on device (selected) and urgent when asked
 * (gpu_stream_create_urgent); closed with the codecs by io_gpu_codecs_close_own, which waits for
 * the stream first. Either may be NULL there. */
int io_gpu_codecs_open_own(io_gpu_codecs **c, void **stream, int device, int urgent, char *why, size_t whylen);
void io_gpu_codecs_close_own(io_gpu_codecs *c, void *stream, int device);
/* Whether nvCOMP opens here: IP_OK, or why not (each state opens its own later). */
int io_gpu_nvcomp_usable(char *why, size_t whylen);
/* A setting for measuring from the environment, within [lo, hi]; fallback when unset. */
long io_gpu_env_long(const char *name, long fallback, long lo, long hi);
/* A codec kernel's status (ipk_codec.h; 0: it ran): IP_OK, or IP_ECUDA naming the kernel. */
int io_gpu_kernel_rc(int status, const char *what, char *err, size_t errlen);
/* Device (or pinned host) memory of at least bytes in slot, kept for the next image; valid until
 * the next call for the same slot or the close. */
int io_gpu_scratch_device(const io_gpu_codecs *c, io_gpu_scratch_slot slot, size_t bytes, void **ptr, char *err,
                          size_t errlen);
int io_gpu_scratch_pinned(const io_gpu_codecs *c, io_gpu_scratch_slot slot, size_t bytes, void **ptr, char *err,
                          size_t errlen);
#endif
