#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "base/image.h"
#include "gpu/gpu.h"
#include "io/jpeg_route.h"
#include "io/png_gpu.h"
#include "io/tiff_gpu.h"
#include "run/run_output.h"

/* Into the caller's memory: nothing to do when the stages wrote there; else one copy, through
 * the GPU's copy when either side is on the device. */
static int copy_into(const ip_image *result, ip_image *dst, char *err, size_t errlen)
{
    const ip_shape *a = &result->shape, *b = &dst->shape;
    if (a->width != b->width || a->height != b->height || a->channels != b->channels || a->dtype != b->dtype) {
        snprintf(err, errlen, "the output memory is not of the result's shape");
        return IP_EINVAL;
    }
    if (result->data == dst->data) return IP_OK;
    size_t row = img_row_bytes(a);
    if (result->on_device || dst->on_device) {   /* rare: a result the stages could not leave in place */
        int rc = gpu_copy2d(dst->data, (size_t)dst->stride, result->data, (size_t)result->stride, row,
                            (size_t)a->height, result->on_device ? (dst->on_device ? GPU_D2D : GPU_D2H) : GPU_H2D,
                            NULL, err, errlen);
        return rc == IP_OK ? gpu_stream_sync(NULL, err, errlen) : rc;
    }
    for (int32_t y = 0; y < a->height; y++)
        memcpy((unsigned char *)dst->data + (ptrdiff_t)y * dst->stride,
               (const unsigned char *)result->data + (ptrdiff_t)y * result->stride, row);
    return IP_OK;
}

/* Into a malloc'd packed image (a host result only). */
static int copy_to_memory(const ip_image *result, ip_image *dst, char *err, size_t errlen)
{
    if (result->on_device) {
        snprintf(err, errlen, "the result is on the GPU: ask for it in host memory");
        return IP_EINVAL;
    }
    int rc = img_alloc(dst, &result->shape, UINT64_MAX, err, errlen);
    return rc == IP_OK ? copy_into(result, dst, err, errlen) : rc;
}

int run_output_write(jpeg_gpu *jpeg, const io_gpu_codecs *codecs, const ip_image *result, const run_sink *out, const run_options *o,
                     io_meta *meta, char *err, size_t errlen)
{
    if (!out->path && out->into) return copy_into(result, out->image, err, errlen);
    if (!out->path) return copy_to_memory(result, out->image, err, errlen);
    io_options io = o->io;
    io.meta = o->strip ? NULL : meta;
    if (!result->on_device) return io_write(out->path, result, &io, err, errlen);
    switch (io_format_from_ext(out->path)) {
    case IO_FMT_TIFF:
        return tiff_gpu_write(codecs, result, out->path, &io, run_tiff_card_share(&result->shape, o, codecs), err,
                              errlen);
    case IO_FMT_PNG: return png_gpu_write(codecs, result, out->path, &io, err, errlen);
    default: return jpeg_route_write(jpeg, result, out->path, &io, err, errlen);
    }
}

double run_tiff_card_share(const ip_shape *shape, const run_options *o, const io_gpu_codecs *codecs)
{
    return tiff_gpu_card_share(shape, &o->io, o->codecs == RUN_CODECS_GPU, o->n_gpus,
                               tiff_gpu_cores_level(codecs, o->io.tiff_level));
}

int run_card_codecs_allowed(run_codecs codecs, exec_transfer transfer)
{
    return codecs != RUN_CODECS_CPU && transfer == EXEC_COPY;
}

int run_gpu_codecs_wanted(const run_options *o, io_format in, io_format out)
{
    if (!run_card_codecs_allowed(o->codecs, o->transfer) || !gpu_built()) return 0;
    if (in == IO_FMT_TIFF) return 1;
    if (o->codecs == RUN_CODECS_GPU) return out == IO_FMT_TIFF || out == IO_FMT_PNG;
    if (out == IO_FMT_TIFF) return o->io.tiff_compression == IO_TIFF_DEFLATE;
    return out == IO_FMT_PNG && png_gpu_settings_for(o->io.png_level).algorithm >= 0;
}

int run_output_on_device(const jpeg_gpu *jpeg, const io_gpu_codecs *codecs, const ip_shape *shape, const char *path,
                         const run_options *o)
{
    const io_options *io = &o->io;
    if (!path) return 0;
    switch (io_format_from_ext(path)) {
    case IO_FMT_JPEG: return jpeg != NULL;
    /* the card deflates beside the cores where that adds to their rate, all of it when asked */
    case IO_FMT_TIFF: return codecs && run_tiff_card_share(shape, o, codecs) > 0;
    case IO_FMT_PNG: return codecs && png_gpu_encodable(shape, io);
    default: return 0;
    }
}
