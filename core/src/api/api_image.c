/* Images at the API's edge: every field checked with a message naming it, and the memory the
 * library allocates for results (host malloc, or cudaMalloc on the image's device). */
#include <stdint.h>
#include <stdlib.h>
#include "api/api_image.h"
#include "base/image.h"
#include "gpu/gpu.h"

/* imgpipe_sample has ip_dtype's values */
static size_t sample_bytes(imgpipe_sample s) { return ip_dtype_size((ip_dtype)s); }

int api_image_shape(const imgpipe_image *im, const char *name, ip_shape *shape, imgpipe_error *err)
{
    if (im->width < 1) return api_fail(err, IMGPIPE_EINVAL, "%s->width must be at least 1 (it is %d)", name, im->width);
    if (im->height < 1) return api_fail(err, IMGPIPE_EINVAL, "%s->height must be at least 1 (it is %d)", name, im->height);
    if (im->channels < 1 || im->channels > 4)
        return api_fail(err, IMGPIPE_EINVAL, "%s->channels must be 1 to 4 (it is %d)", name, im->channels);
    if (im->sample != IMGPIPE_U8 && im->sample != IMGPIPE_U16 && im->sample != IMGPIPE_F32)
        return api_fail(err, IMGPIPE_EINVAL, "%s->sample must be IMGPIPE_U8, IMGPIPE_U16 or IMGPIPE_F32 (it is %d)", name,
                        (int)im->sample);
    *shape = (ip_shape){ im->width, im->height, im->channels, (ip_dtype)im->sample };
    return IP_OK;
}

/* A row's bytes, and the stride (0: packed), checked against it and against overflow. */
static int checked_stride(const imgpipe_image *im, const char *name, size_t *stride, imgpipe_error *err)
{
    size_t row = (size_t)im->width * (size_t)im->channels * sample_bytes(im->sample);
    size_t s = im->stride ? im->stride : row;
    if (s > (size_t)PTRDIFF_MAX)
        return api_fail(err, IMGPIPE_EINVAL, "%s->stride is negative or too large (%zu as a size_t)", name, im->stride);
    if (s < row)
        return api_fail(err, IMGPIPE_EINVAL, "%s->stride (%zu bytes) is smaller than a row of %d x %d channels (%zu bytes)",
                        name, s, im->width, im->channels, row);
    /* the stages read and write whole samples: a row must start on one */
    if (s % sample_bytes(im->sample) != 0)
        return api_fail(err, IMGPIPE_EINVAL, "%s->stride (%zu bytes) is not a multiple of the %zu-byte sample", name, s,
                        sample_bytes(im->sample));
    if (s > ((size_t)PTRDIFF_MAX - row) / (size_t)im->height)
        return api_fail(err, IMGPIPE_ELIMIT, "%s: %zu bytes a row times %d rows is too large", name, s, im->height);
    *stride = s;
    return IP_OK;
}

int api_image_view(const imgpipe_image *im, const char *name, ip_image *view, imgpipe_error *err)
{
    ip_shape shape;
    size_t stride = 0;
    int rc = api_image_shape(im, name, &shape, err);
    if (rc == IP_OK) rc = checked_stride(im, name, &stride, err);
    if (rc != IP_OK) return rc;
    if (!im->data) return api_fail(err, IMGPIPE_EINVAL, "%s->data is NULL", name);
    if ((uintptr_t)im->data % sample_bytes(im->sample) != 0)
        return api_fail(err, IMGPIPE_EINVAL, "%s->data is not aligned to its %zu-byte samples", name,
                        sample_bytes(im->sample));
    if (im->memory != IMGPIPE_HOST && im->memory != IMGPIPE_CUDA_DEVICE)
        return api_fail(err, IMGPIPE_EINVAL, "%s->memory must be IMGPIPE_HOST or IMGPIPE_CUDA_DEVICE (it is %d)", name,
                        (int)im->memory);
    if (im->memory == IMGPIPE_CUDA_DEVICE && im->device < 0)
        return api_fail(err, IMGPIPE_EINVAL, "%s->device must be a CUDA device number (it is %d)", name, im->device);
    *view = (ip_image){ im->data, (ptrdiff_t)stride, shape, im->memory == IMGPIPE_CUDA_DEVICE };
    return IP_OK;
}

void api_image_set_shape(imgpipe_image *im, const ip_shape *s)
{
    im->width = s->width;
    im->height = s->height;
    im->channels = s->channels;
    im->sample = (imgpipe_sample)s->dtype;
}

int api_image_alloc(imgpipe_image *im, void *pool, void *stream, imgpipe_error *err)
{
    ip_shape shape;
    int rc = api_image_shape(im, "out", &shape, err);
    if (rc != IP_OK) return rc;
    size_t row = img_row_bytes(&shape);
    if (row > SIZE_MAX / (size_t)im->height) return api_fail(err, IMGPIPE_ELIMIT, "the result is too large");
    size_t bytes = row * (size_t)im->height;
    char msg[512];
    if (im->memory == IMGPIPE_CUDA_DEVICE) {
        rc = gpu_select(im->device, msg, sizeof msg);
        if (rc == IP_OK) rc = gpu_malloc_from_pool(&im->data, bytes, pool, stream, msg, sizeof msg);
        if (rc != IP_OK) return api_fail_from(err, rc, msg, NULL);
    } else {
        im->data = malloc(bytes);
        if (!im->data) return api_fail(err, IMGPIPE_ENOMEM, "out of memory allocating the result (%zu bytes)", bytes);
    }
    im->stride = row;
    return IP_OK;
}

void imgpipe_image_free(imgpipe_image *img)
{
    if (!img || !img->data) return;
    if (img->memory == IMGPIPE_CUDA_DEVICE) {
        if (gpu_select(img->device, NULL, 0) == IP_OK) gpu_free(img->data);
    } else {
        free(img->data);
    }
    img->data = NULL;
    img->stride = 0;
}

int imgpipe_image_free_async(imgpipe_image *img, void *cuda_stream, imgpipe_error *err)
{
    if (!img || !img->data) return IMGPIPE_OK;
    if (img->memory != IMGPIPE_CUDA_DEVICE) {
        imgpipe_image_free(img);
        api_ok(err);
        return IMGPIPE_OK;
    }
    char msg[512];
    int rc = gpu_select(img->device, msg, sizeof msg);
    if (rc == IP_OK) rc = gpu_free_async(img->data, cuda_stream, msg, sizeof msg);
    if (rc != IP_OK) return api_fail_from(err, rc, msg, NULL);
    img->data = NULL;
    img->stride = 0;
    api_ok(err);
    return IMGPIPE_OK;
}
