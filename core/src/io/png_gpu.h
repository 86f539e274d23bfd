/* PNG written from a device image: rows filtered on the card, the filtered bytes deflated by
 * nvCOMP in bands, the bands joined into one zlib stream (each band ending on a byte boundary,
 * the adler32s combined), then IDAT chunks and CRCs on the host. Decoding stays on the CPU. */
#ifndef IMGPIPE_PNG_GPU_H
#define IMGPIPE_PNG_GPU_H
#include "io/codec_gpu.h"
#include "io/io.h"

/* Whether opt's PNG output of this image can be encoded on the GPU (u8 or u16, 1-4 channels). */
int png_gpu_encodable(const ip_image *dev_out, const io_options *opt);
/* Writes the device image to path atomically with opt's metadata, as io_write would. */
int png_gpu_write(const io_gpu_codecs *c, const ip_image *dev_out, const char *path, const io_options *opt,
                  char *err, size_t errlen);
#endif
