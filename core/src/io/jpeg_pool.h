/* nvJPEG for a folder's workers: one handle per GPU, opened on a thread while the workers start,
 * and one decoder per GPU that decodes the files the workers hand it in batches. A worker that
 * finds the decoder idle decodes every file waiting at that moment as one batch (the hardware
 * engine decodes a batch much faster than its files one by one), so no thread is added and a
 * lone worker is never held back waiting for others. With jpeg_pool_decode_ready the workers
 * prepare their files themselves, so a turn at the decoder is the engine's time alone. */
#ifndef IMGPIPE_JPEG_POOL_H
#define IMGPIPE_JPEG_POOL_H
#include "io/jpeg_gpu.h"

typedef struct jpeg_pool jpeg_pool;

/* Starts opening nvJPEG on each of the n GPUs (device numbers in devices), each making at open
 * what uses names (JPEG_GPU_DECODE, JPEG_GPU_ENCODE). max_batch: the most files in one batch. */
int jpeg_pool_open(jpeg_pool **pool, int n, const int *devices, unsigned uses, int max_batch, char *err,
                   size_t errlen);

/* Waits for device's handle; NULL when nvJPEG could not be opened there (*why says why). */
jpeg_gpu *jpeg_pool_handle(jpeg_pool *pool, int device, const char **why);

/* Decodes one file on device's shared decoder, in a batch with whatever other workers hand in
 * meanwhile; the same contract as jpeg_gpu_decode (mem->alloc is called with index 0), and mem
 * and opt's callbacks may run on another worker's thread while this one waits. */
int jpeg_pool_decode(jpeg_pool *pool, int device, const unsigned char *data, size_t len, const io_options *opt,
                     const jpeg_gpu_memory *mem, ip_image *out, char *err, size_t errlen);

/* The same for a file the caller prepared on its own object (jpeg_gpu_prepare on the pool's
 * handle): the decoder only runs the hardware engine on it. IP_EUNSUPPORTED: read it on the CPU. */
int jpeg_pool_decode_ready(jpeg_pool *pool, int device, const jpeg_gpu_ready *ready, char *err, size_t errlen);

typedef struct {
    long batches, files;     /* files decoded on the GPU, in this many batches */
    int largest_batch;
    double open_ms;          /* the slowest GPU's open, on its thread */
    double decode_ms;        /* time spent decoding batches, summed over GPUs */
    double wait_ms;          /* callers' time from handing a file in to its decode, summed */
    long inits;              /* batch states initialised for a batch size, and their time */
    double init_ms;
    double engine_ms;        /* the hardware batches' own time (decode_ms less preparing) */
} jpeg_pool_stats;
jpeg_pool_stats jpeg_pool_totals(jpeg_pool *pool);

void jpeg_pool_close(jpeg_pool *pool);
#endif
