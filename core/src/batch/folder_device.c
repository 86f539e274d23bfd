#include "batch/folder_device.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "io/png_gpu.h"
#include "io/tiff_gpu.h"
#include "run/cost.h"
#include "run/run_output.h"
#include "base/image.h"

/* Measured with bench/folder-devices.sh on the H100 machine (16 cores, 60 and 100 JPEGs of
 * 12 megapixels): the GPU path's wall time less the CPU path's, plus the stages' CPU time it
 * saves, came to 0.6-1.0 s a folder, fitted as a fixed part and core time per image (more when
 * the output is JPEG, whose encoder waits on the download). */
#define GPU_FOLDER_FIXED_MS 450.0
#define GPU_IMAGE_CORE_MS 50.0
#define GPU_IMAGE_CORE_MS_JPEG_OUT 90.0

/* With nvJPEG (one GPU, the read-ahead decoder), measured with bench/jpeg-folder.sh on the H200
 * machine (16 cores, 12-MP JPEGs through denoise to JPEG, 5e184c8): 3.4-3.7 s for 200 files and
 * 4.6-5.0 s for 800, fitted as 3.0 s once (the handle, the first batch, the workers' first images,
 * the end) and the engine's 2.2 ms a 12-MP file, one file after another; the CPU path's decoding
 * and encoding, which it saves, are in the plan's estimate. */
#define NVJPEG_FOLDER_FIXED_MS 2600.0
#define NVJPEG_FOLDER_NS_PER_PIXEL 0.18

#define GPU_HOPELESS_RATIO 2.0
#define TOO_SHORT_TO_MEASURE_S 1.0

#define SHAPE_SEEN 0x5eed   /* the header was read: the read stops there */

static int stop_at_shape(void *user, const ip_shape *shape, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    *(ip_shape *)user = *shape;
    return SHAPE_SEEN;
}

/* The shape of the first entry whose header can be read. */
static int first_shape(const batch_options *o, const batch_listing *l, ip_shape *shape, const batch_entry **which)
{
    io_options io = o->io;
    io.on_shape = stop_at_shape;
    io.on_shape_user = shape;
    io.meta = NULL;
    io.warnings = NULL;
    for (int i = 0; i < l->n && i < 8; i++) {
        ip_image img = { 0 };
        char msg[256];
        io.page = l->items[i].page;
        if (io_read(l->items[i].in, &io, &img, msg, sizeof msg) == SHAPE_SEEN) {
            *which = &l->items[i];
            return IP_OK;
        }
        img_free(&img);
    }
    return IP_EFORMAT;
}

void folder_estimate_images(const cost_estimate *one, const ip_shape *in, int n, int workers, io_format out_fmt,
                            int gpu_jpeg, folder_estimate *est)
{
    if (workers < 1) workers = 1;
    est->n_images = n;
    est->cpu_s = n * one->cpu_ms / workers / 1e3;
    if (gpu_jpeg) {   /* the workers wait on the engine and the card's encoding, not on their cores */
        double engine_ms = (double)in->width * (double)in->height * NVJPEG_FOLDER_NS_PER_PIXEL / 1e6;
        double card_ms = engine_ms + one->gpu_codec_ms;
        double serial_ms = card_ms > one->gpu_stages_ms ? card_ms : one->gpu_stages_ms;
        est->gpu_s = (GPU_FOLDER_FIXED_MS + NVJPEG_FOLDER_FIXED_MS + n * serial_ms) / 1e3;
        return;
    }
    double per_image = out_fmt == IO_FMT_JPEG ? GPU_IMAGE_CORE_MS_JPEG_OUT : GPU_IMAGE_CORE_MS;
    est->gpu_s = (GPU_FOLDER_FIXED_MS + n * per_image / workers) / 1e3;
    /* the card runs every image's stages and its share of the encoding, one after another */
    double card_ms = one->gpu_stages_ms + one->gpu_codec_ms;
    if (est->gpu_s < n * card_ms / 1e3) est->gpu_s = n * card_ms / 1e3;
}

int folder_estimate_run(const batch_options *o, const plan *p, int cores, folder_estimate *est, char *err,
                        size_t errlen)
{
    memset(est, 0, sizeof *est);
    batch_listing l;
    int rc = batch_list(o, &l, err, errlen);
    if (rc != IP_OK) return rc;
    ip_shape shape;
    const batch_entry *first = NULL;
    plan own;
    if (plan_share(p, &own) != IP_OK) rc = IP_ENOMEM;
    if (rc == IP_OK && (rc = first_shape(o, &l, &shape, &first)) != IP_OK) snprintf(err, errlen, "no image header could be read");
    ip_shape final;
    if (rc == IP_OK) rc = plan_shapes(&own, &shape, &final, err, errlen);
    if (rc == IP_OK) {
        io_format out_fmt = o->format != IO_FMT_UNKNOWN ? o->format : first->fmt;
        int gpu_jpeg = o->jpeg_on_gpu && first->fmt == IO_FMT_JPEG;
        int card = run_card_codecs_allowed(o->codecs, o->transfer);
        int png_gpu = out_fmt == IO_FMT_PNG && card && png_gpu_settings_for(o->io.png_level).algorithm >= 0;
        double tiff_share = out_fmt == IO_FMT_TIFF && card
                                ? tiff_gpu_card_share(&final, &o->io, o->codecs == RUN_CODECS_GPU, o->n_gpus,
                                                      tiff_gpu_cores_level(NULL, o->io.tiff_level))
                                : 0;
        cost_setting set = { .in_format = first->fmt, .out_format = out_fmt, .cpu_threads = 1, .gpu_jpeg = gpu_jpeg,
                             .png_gpu = png_gpu, .tiff_card_share = tiff_share, .tiff_level = o->io.tiff_level };
        cost_estimate one;
        cost_estimate_plan(&own, &shape, &set, &one);
        int workers = o->jobs < cores ? o->jobs : cores;
        folder_estimate_images(&one, &shape, l.n, workers, out_fmt, gpu_jpeg, est);
        est->card_encodes = png_gpu || tiff_share > 0;
    }
    plan_unshare(&own);
    batch_listing_free(&l);
    return rc;
}

int folder_gpu_ruled_out(const folder_estimate *est)
{
    if (est->gpu_s < est->cpu_s) return 0;
    return est->gpu_s > GPU_HOPELESS_RATIO * est->cpu_s || est->cpu_s < TOO_SHORT_TO_MEASURE_S;
}
