/* The host half of the GPU PNG writer (png_gpu.h), no CUDA in it: the bands nvCOMP deflated on
 * their own (each a complete raw deflate stream ending in a final block) joined into one zlib
 * stream, and the file written around it with the CPU writer's chunk code. */
#ifndef IMGPIPE_PNG_GPU_JOIN_H
#define IMGPIPE_PNG_GPU_JOIN_H
#include "io/deflate_walk.h"
#include "io/io_png_deflate.h"

/* Bytes each band's buffer must have beyond its len: an empty stored block (and a byte for its
 * header when the last byte has fewer than three spare bits). */
#define PNG_GPU_JOIN_SPARE DEFLATE_JOIN_SPARE

/* Makes bands[0 .. n-1] one deflate stream, each band walked (deflate_walk.h) on up to threads
 * threads: a band's padding after its stream is cut off; every band but the last has its final
 * block made an ordinary one and ends with an empty stored block, so the next starts on a byte
 * boundary. IP_EFORMAT with *bad (when not NULL) the first band that is not a raw deflate
 * stream; IP_ENOMEM. */
int png_gpu_join_bands(pngx_band *bands, size_t n, int threads, size_t *bad);
/* The same from walks already made, one a band (the device's, ipk_deflate_walk): a band whose
 * walk is all ones (no valid stream) or ends past its len is IP_EFORMAT with *bad. */
int png_gpu_join_walked(pngx_band *bands, size_t n, const deflate_walk_result *walks, size_t *bad);

/* Joins the bands (png_gpu_join_walked with walks, else png_gpu_join_bands on opt's codec
 * threads) and writes the PNG to path as the CPU writer would around them (signature, IHDR,
 * opt's metadata, the zlib header for opt's level, the bands in IDAT chunks, the adler32 combined
 * from the bands' adler and filtered_len, IEND), through a temporary file renamed into place; on
 * failure nothing is left at path. A band that does not join is IP_ECUDA (the device's deflate
 * failed), naming it. */
int png_gpu_write_bands(const char *path, const ip_shape *s, const io_options *opt, pngx_band *bands, size_t n,
                        const deflate_walk_result *walks, char *err, size_t errlen);
#endif
