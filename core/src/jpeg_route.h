/* JPEG on the GPU around an exec run: the file decoded by nvJPEG straight into the device buffer the
 * run's first stage reads, and a JPEG output encoded on the card from the run's device result, so
 * no pixels cross PCIe (only the compressed bytes do). */
#ifndef IMGPIPE_JPEG_ROUTE_H
#define IMGPIPE_JPEG_ROUTE_H
#include "exec.h"
#include "jpeg_gpu.h"
#include "jpeg_pool.h"

/* Reads the opened input in and decodes it into ctx's device input (ctx: a GPU context). opt->on_shape, if any,
 * runs with the shape first and must leave p planned for it. On IP_OK *dev_in is the device
 * image to hand to exec_run, and opt->meta (when set) holds the file's metadata. IP_EUNSUPPORTED:
 * nvJPEG declined the file (not 8-bit gray or YCbCr, damaged structure, ...), or opt->autorotate
 * asks to turn it upright (its EXIF orientation is not 1): read it on the CPU instead, which also
 * gives any error message.
 * Other errors are the file's (cannot open) or the shape's (opt->on_shape, the pixel limit). */
int jpeg_route_decode(jpeg_gpu *g, exec_ctx *ctx, const plan *p, io_input *in, const io_options *opt,
                      ip_image *dev_in, char *err, size_t errlen);

/* The same through a folder's shared decoder for device (in a batch with other workers' files). */
int jpeg_route_decode_pooled(jpeg_pool *pool, int device, exec_ctx *ctx, const plan *p, io_input *in,
                             const io_options *opt, ip_image *dev_in, char *err, size_t errlen);

/* Encodes a device result (u8, 1 or 3 channels) at opt->jpeg_quality, with opt->meta's segments
 * when set, and writes it to path atomically (temporary file, then rename). */
int jpeg_route_write(jpeg_gpu *g, const ip_image *dev_out, const char *path, const io_options *opt, char *err,
                     size_t errlen);

/* Whether the route can take this run: nvJPEG open, a JPEG input, a copy (not zero-copy) run. */
int jpeg_route_wanted(const jpeg_gpu *g, io_format in_format, exec_transfer transfer);
#endif
