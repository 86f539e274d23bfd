#include "run/run_jpeg.h"
#include "io/tiff_gpu.h"

static int exec_input(void *user, const ip_shape *shape, size_t bytes, void **dev, char *err, size_t errlen)
{
    run_jpeg_target *t = user;
    return exec_device_input(t->ctx, t->p, shape, bytes, dev, err, errlen);
}

void run_jpeg_target_init(run_jpeg_target *t, exec_ctx *ctx, const plan *p)
{
    t->ctx = ctx;
    t->p = p;
    t->target = (jpeg_route_target){ exec_input, t };
}

int run_jpeg_wanted(const jpeg_gpu *g, io_format in_format, exec_transfer transfer)
{
    return jpeg_route_wanted(g, in_format, transfer == EXEC_ZEROCOPY);
}

int run_tiff_gpu_decode(const io_gpu_codecs *codecs, exec_ctx *ctx, const plan *p, io_input *in, const io_options *io,
                        ip_image *img, char *err, size_t errlen)
{
    if (!codecs) return IP_EUNSUPPORTED;
    run_jpeg_target target;
    run_jpeg_target_init(&target, ctx, p);
    /* a file the GPU does not take is declined from its directory, before the target is asked */
    int rc = tiff_gpu_decode(codecs, &target.target, in, io, img, err, errlen);
    return rc == IP_ECUDA || rc == IP_ENOMEM ? IP_EUNSUPPORTED : rc;
}
