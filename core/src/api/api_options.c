/* The API's run options: defaults as the command line's, checked, and turned into run/'s. */
#include <stddef.h>
#include <string.h>
#include "api/api_internal.h"

void imgpipe_run_options_init(imgpipe_run_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
    o->device = IMGPIPE_DEVICE_AUTO;
    io_options io;   /* the command line's defaults */
    io_default_options(&io);
    o->png_level = io.png_level;
    o->jpeg_quality = io.jpeg_quality;
}

static int check_ranges(const imgpipe_run_options *v, imgpipe_error *err)
{
    if (v->device != IMGPIPE_DEVICE_AUTO && v->device != IMGPIPE_DEVICE_CPU && v->device != IMGPIPE_DEVICE_GPU)
        return api_fail(err, IMGPIPE_EINVAL, "o->device must be IMGPIPE_DEVICE_AUTO, _CPU or _GPU (it is %d)", (int)v->device);
    if (v->gpu < 0) return api_fail(err, IMGPIPE_EINVAL, "o->gpu must be 0 or more (it is %d)", v->gpu);
    if (v->threads < 0 || v->threads > 1024)
        return api_fail(err, IMGPIPE_EINVAL, "o->threads must be 0 (all cores) to 1024 (it is %d)", v->threads);
    if (v->png_level < 0 || v->png_level > 9)
        return api_fail(err, IMGPIPE_EINVAL, "o->png_level must be 0 to 9 (it is %d)", v->png_level);
    if (v->jpeg_quality < 1 || v->jpeg_quality > 100)
        return api_fail(err, IMGPIPE_EINVAL, "o->jpeg_quality must be 1 to 100 (it is %d)", v->jpeg_quality);
    if (v->jobs < 0 || v->jobs > 4096) return api_fail(err, IMGPIPE_EINVAL, "o->jobs must be 0 to 4096 (it is %d)", v->jobs);
    if (v->output_format && strcmp(v->output_format, "png") != 0 && strcmp(v->output_format, "jpg") != 0 &&
        strcmp(v->output_format, "tif") != 0)
        return api_fail(err, IMGPIPE_EINVAL, "o->output_format must be \"png\", \"jpg\" or \"tif\" (it is \"%s\")",
                        v->output_format);
    return IP_OK;
}

int api_run_options(const imgpipe_run_options *o, imgpipe_run_options *v, run_options *ro, imgpipe_error *err)
{
    imgpipe_run_options_init(v);
    if (o) {
        if (o->struct_size < offsetof(imgpipe_run_options, device) + sizeof o->device)
            return api_fail(err, IMGPIPE_EINVAL, "o->struct_size is %zu: fill the options with imgpipe_run_options_init",
                            o->struct_size);
        memcpy(v, o, o->struct_size < sizeof *v ? o->struct_size : sizeof *v);   /* an older program's struct: its part */
        v->struct_size = sizeof *v;
    }
    int rc = check_ranges(v, err);
    if (rc != IP_OK) return rc;
    run_default_options(ro);
    ro->device = v->device == IMGPIPE_DEVICE_CPU ? RUN_DEVICE_CPU : v->device == IMGPIPE_DEVICE_GPU ? RUN_DEVICE_GPU
                                                                                                     : RUN_DEVICE_AUTO;
    ro->threads = v->threads;
    ro->io.threads = v->threads;
    ro->memory = v->memory;
    ro->io.png_level = v->png_level;
    ro->io.jpeg_quality = v->jpeg_quality;
    if (v->tiff_compression && !io_tiff_compression_from_name(v->tiff_compression, &ro->io.tiff_compression))
        return api_fail(err, IMGPIPE_EINVAL, "o->tiff_compression must be \"deflate\", \"lzw\", \"zstd\" or \"none\" "
                        "(it is \"%s\")", v->tiff_compression);
    if (ro->device != RUN_DEVICE_CPU && v->gpu) {   /* the GPU asked for: a streamed image's bands go there */
        ro->gpu_ids[0] = v->gpu;
        ro->n_gpus = 1;
    }
    return IP_OK;
}
