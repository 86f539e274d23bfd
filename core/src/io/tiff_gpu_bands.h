/* A streamed TIFF's bands of deflate or zstd strips or tiles inflated on a GPU
 * (tiff_band_decode.h): each band's blocks read on the reader's threads straight into pinned
 * staging and uploaded in one copy, a group of bands inflated by nvCOMP in one batch and each
 * block's adler32 and the predictor queued behind it, while the next group is read and inflated
 * on a stream of its own; then band by band each block's size and adler32 judged, tiles put in
 * place on the card, and the rows copied back. Whatever does not check out goes to libtiff for
 * that band. The cores are then left to the stages and the writer. */
#ifndef IMGPIPE_TIFF_GPU_BANDS_H
#define IMGPIPE_TIFF_GPU_BANDS_H
#include "io/tiff_band_decode.h"

typedef struct tiff_gpu_bands tiff_gpu_bands;

/* A decoder on this GPU whose groups of bands take at most device_bytes there (0: 1 GiB; a file
 * one band of which would not fit is not taken). IP_EUNSUPPORTED with why when nvCOMP cannot be
 * opened or the build has no CUDA; with why empty unless IMGPIPE_TIFF_GPU_READ_BANDS is 1 (off:
 * nothing to say; beside heavy stages on two H200s the rows' copies back held the run up, and
 * the cores' libtiff was faster, bench/RESULTS.md). IMGPIPE_TIFF_GPU_BAND_GROUP and
 * IMGPIPE_TIFF_GPU_BAND_DEPTH (1 or 2 groups in flight) set its batches, for measuring. */
int tiff_gpu_bands_create(tiff_gpu_bands **g, int gpu, uint64_t device_bytes, char *why, size_t whylen);
const tiff_band_decoder *tiff_gpu_bands_decoder(const tiff_gpu_bands *g);
void tiff_gpu_bands_destroy(tiff_gpu_bands *g);
#endif
