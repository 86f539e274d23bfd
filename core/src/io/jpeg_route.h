/* JPEG on the GPU: a file decoded by nvJPEG straight into the device buffer its caller hands it
 * (the run layer: the buffer the run's first stage reads), and a result on the device encoded on
 * the card and written, so no pixels cross PCIe (only the compressed bytes do). */
#ifndef IMGPIPE_JPEG_ROUTE_H
#define IMGPIPE_JPEG_ROUTE_H
#include "io/jpeg_gpu.h"
#include "io/jpeg_pool.h"

/* Where a decoded image goes: device memory of at least bytes for an image of shape (the shape
 * the caller was told through opt->on_shape first), kept until the caller's run is done. */
typedef struct {
    int (*device_input)(void *user, const ip_shape *shape, size_t bytes, void **dev, char *err, size_t errlen);
    void *user;
} jpeg_route_target;

/* Reads the opened input and decodes it into the target's device memory. opt->on_shape, if any,
 * runs with the shape first (the caller plans there). On IP_OK *dev_in is the device image, and
 * opt->meta (when set, and not already known) holds the file's metadata. IP_EUNSUPPORTED:
 * nvJPEG declined the file (not 8-bit gray or YCbCr, damaged structure, ...), or opt->autorotate
 * asks to turn it upright (its EXIF orientation is not 1): read it on the CPU instead, which also
 * gives any error message. Other errors are the file's (cannot read) or the shape's
 * (opt->on_shape, the pixel limit). */
int jpeg_route_decode(jpeg_gpu *g, const jpeg_route_target *target, io_input *in, const io_options *opt,
                      ip_image *dev_in, char *err, size_t errlen);
/* The same through a folder's shared decoder for device (in a batch with other workers' files).
 * own (NULL: none): the worker's object on the pool's handle, which checks, plans and parses the
 * file on the worker's thread, so the shared decoder only runs the engine; a file the hardware
 * engine does not take (progressive, ...) is decoded by own's CUDA decoder beside the batches. */
int jpeg_route_decode_pooled(jpeg_pool *pool, int device, jpeg_gpu *own, const jpeg_route_target *target,
                             io_input *in, const io_options *opt, ip_image *dev_in, char *err, size_t errlen);
/* Encodes a device result (u8, 1 or 3 channels) at opt->jpeg_quality, with opt->meta's segments
 * when set, and writes it to path atomically (temporary file, then rename). */
int jpeg_route_write(jpeg_gpu *g, const ip_image *dev_out, const char *path, const io_options *opt, char *err,
                     size_t errlen);
/* Whether the route can take this run: nvJPEG open, a JPEG input, a run that copies to the card
 * (not zero-copy). */
int jpeg_route_wanted(const jpeg_gpu *g, io_format in_format, int zero_copy);
#endif
