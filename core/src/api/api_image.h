/* The API's images checked field by field and turned into the core's, and results allocated. */
#ifndef IMGPIPE_API_IMAGE_H
#define IMGPIPE_API_IMAGE_H
#include "api/api_internal.h"

/* The shape of im (width, height, channels, sample checked; name says which image in messages). */
int api_image_shape(const imgpipe_image *im, const char *name, ip_shape *shape, imgpipe_error *err);
/* im as an ip_image, every field checked (data, stride, memory too). */
int api_image_view(const imgpipe_image *im, const char *name, ip_image *view, imgpipe_error *err);
void api_image_set_shape(imgpipe_image *im, const ip_shape *s);
/* Packed memory for *im's shape, in im->memory on im->device; device memory from pool in stream
 * order on stream (the caller's: the run's work is ordered after it). */
int api_image_alloc(imgpipe_image *im, void *pool, void *stream, imgpipe_error *err);
#endif
