/* PNG written from a device image: rows filtered on the card, the filtered bytes deflated by
 * nvCOMP in bands, the bands joined into one zlib stream (each band ending on a byte boundary,
 * the adler32s combined), then IDAT chunks and CRCs on the host. Decoding stays on the CPU. */
#ifndef IMGPIPE_PNG_GPU_H
#define IMGPIPE_PNG_GPU_H
#include "io/codec_gpu.h"
#include "io/io.h"

/* Whether opt's PNG output of an image of this shape can be encoded on the GPU (u8 or u16, 1-4
 * channels, a level the GPU writes). */
int png_gpu_encodable(const ip_shape *shape, const io_options *opt);
/* Writes the device image to path atomically with opt's metadata, as io_write would. */
int png_gpu_write(const io_gpu_codecs *c, const ip_image *dev_out, const char *path, const io_options *opt,
                  char *err, size_t errlen);

/* What png_gpu_write chooses for a level (nvCOMP's deflate algorithm 0..5 and the bytes of
 * filtered data a band), and where its time went: for the tests and the benchmark, which try
 * other choices through png_gpu_write_with. */
typedef struct {
    int algorithm;
    size_t band_bytes;   /* a multiple of 8, at most 64 MiB */
} png_gpu_settings;
typedef struct {
    double filter_ms, deflate_ms, download_ms, join_ms, total_ms;   /* download: walk too; join: and file */
    size_t filtered_bytes, deflated_bytes, bands;
} png_gpu_times;
png_gpu_settings png_gpu_settings_for(int level);
int png_gpu_write_with(const io_gpu_codecs *c, const ip_image *dev_out, const char *path, const io_options *opt,
                       const png_gpu_settings *s, png_gpu_times *times, char *err, size_t errlen);
#endif
