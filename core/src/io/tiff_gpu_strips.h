/* A streamed TIFF's strips compressed on GPUs beside the CPU's threads: a batch codec for
 * io_tiff_strips.h whose states (two a GPU, so that one batch's copies and framing overlap the
 * other's deflate) each upload a batch of strips, apply the predictor and the adler32s on the
 * card, deflate every strip with nvCOMP in pieces joined into zlib's stream (zstd: whole strips,
 * framed by nvCOMP). The threads keep what they can; a GPU takes strips only when they queue up. */
#ifndef IMGPIPE_TIFF_GPU_STRIPS_H
#define IMGPIPE_TIFF_GPU_STRIPS_H
#include <stdint.h>
#include "io/io_tiff_strips.h"

typedef struct tiff_gpu_strips tiff_gpu_strips;

/* What the GPUs compressed. */
typedef struct {
    uint64_t strips, pieces, batches, bytes_in, bytes_out;   /* pieces: nvCOMP's chunks */
    double busy_ms;          /* the states' compress calls, summed */
    int states;
} tiff_gpu_strips_stat;

/* States for these GPUs (one listed twice counts once). IP_EUNSUPPORTED with one line saying why
 * when nvCOMP cannot be opened or the build has no CUDA. */
int tiff_gpu_strips_create(tiff_gpu_strips **g, const int *gpu_ids, int n_gpus, char *why, size_t whylen);
const tiff_strip_batch_codec *tiff_gpu_strips_codec(const tiff_gpu_strips *g);
void tiff_gpu_strips_stats(tiff_gpu_strips *g, tiff_gpu_strips_stat *st);
void tiff_gpu_strips_destroy(tiff_gpu_strips *g);
#endif
