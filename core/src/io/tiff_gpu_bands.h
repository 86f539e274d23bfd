/* A streamed TIFF's bands of deflate or zstd strips or tiles inflated on a GPU
 * (tiff_band_decode.h): each band's blocks uploaded in one copy, a group of bands inflated by
 * nvCOMP in one batch, then band by band each block's size and adler32 checked, the predictor
 * undone and tiles put in place on the card, and the rows copied back. Whatever does not check
 * out goes to libtiff for that band. The cores are then left to the stages and the writer. */
#ifndef IMGPIPE_TIFF_GPU_BANDS_H
#define IMGPIPE_TIFF_GPU_BANDS_H
#include "io/tiff_band_decode.h"

typedef struct tiff_gpu_bands tiff_gpu_bands;

/* A decoder on this GPU whose groups of bands take at most device_bytes there (0: 1 GiB; a file
 * one band of which would not fit is not taken). IP_EUNSUPPORTED with why when nvCOMP cannot be
 * opened or the build has no CUDA; with why empty unless IMGPIPE_TIFF_GPU_READ_BANDS is 1 (off:
 * nothing to say; on the H100 the cores' libtiff beside the strip compressor was faster). */
int tiff_gpu_bands_create(tiff_gpu_bands **g, int gpu, uint64_t device_bytes, char *why, size_t whylen);
const tiff_band_decoder *tiff_gpu_bands_decoder(const tiff_gpu_bands *g);
void tiff_gpu_bands_destroy(tiff_gpu_bands *g);
#endif
