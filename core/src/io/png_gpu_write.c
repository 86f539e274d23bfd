#define _POSIX_C_SOURCE 200809L
/* The GPU PNG writer's device half: filter, adler32 per band and nvCOMP's deflate on the card,
 * one download of the deflated bands, then the host half (png_gpu_join.h) joins and writes. */
#include "io/png_gpu.h"
#include "io/deflate_walk_gpu.h"
#include "io/png_gpu_join.h"
#include "io/io_internal.h"
#include "base/image.h"
#include "base/mono_clock.h"
#include "gpu/gpu.h"
#include <stdlib.h>
#include <string.h>
#ifdef IMGPIPE_HAVE_CUDA
#include "ipk.h"
#include "ipk_codec.h"
#endif

/* nvCOMP's deflate is documented at chunks of 64 KiB (its compressor's stated limit); the bands
 * are cut at fixed byte offsets of the filtered data, mid-row as it falls. */
#define MAX_BAND_BYTES ((size_t)64 << 20)

/* --png-level -> nvCOMP's deflate algorithm, from test_gpu_png's bench on the H100 (4096x4096
 * photographs, RGB and gray, 2026-11-27): algorithm 2 is within 1% of zlib level 1 (libpng's) on
 * filtered rows; algorithm 0 is smaller than stored; for levels 5-9 no algorithm comes within 3%
 * of zlib's size faster than the CPU writer on 16 cores (4: 35% larger; 5: 4% larger at 0.02-0.16
 * GB/s), so those levels stay on the CPU (-1). */
static const int level_algorithm[10] = { 0, 2, 2, 2, 2, -1, -1, -1, -1, -1 };
/* 32 KiB bands: a band's deflate takes the card's time in proportion to its length, and a folder
 * worker waits for it. 200 12-MP gray photographs through 16 workers (H200, 2026-11-29): 81.3-83.5
 * images/s against 73.7-74.6 at 64 KiB (written behind the next decode), files 940.3 MB against
 * 937.2 (the CPU writer's 932.0: +0.9%); 16 KiB ran no faster than 32 for +1.5%. At 256 KiB (before
 * 2026-11-28) an image's deflate took 108-140 ms against 41-72 at 64. */
#define BAND_BYTES ((size_t)32 << 10)

png_gpu_settings png_gpu_settings_for(int level)
{
    int at = level < 0 ? 0 : level > 9 ? 9 : level;
    png_gpu_settings s = { level_algorithm[at], BAND_BYTES };
    return s;
}

int png_gpu_encodable(const ip_shape *s, const io_options *opt)
{
    return gpu_built() && (s->dtype == IP_U8 || s->dtype == IP_U16) && s->channels >= 1 &&
           s->channels <= 4 && s->width > 0 && s->height > 0 && opt && opt->png_level >= 0 && opt->png_level <= 9 &&
           png_gpu_settings_for(opt->png_level).algorithm >= 0;
}

int png_gpu_write(const io_gpu_codecs *c, const ip_image *dev_out, const char *path, const io_options *opt,
                  char *err, size_t errlen)
{
    png_gpu_settings s = png_gpu_settings_for(opt ? opt->png_level : 6);
    return png_gpu_write_with(c, dev_out, path, opt, &s, NULL, err, errlen);
}

#ifdef IMGPIPE_HAVE_CUDA
/* Where the bands lie: band k's filtered bytes at k * band_bytes, its deflated bytes at k * slot
 * on the device (slot: nvCOMP's most for a band, and the join's spare room). */
typedef struct {
    size_t row_bytes, filtered_bytes, band_bytes, n_bands, max_deflated, slot;
    unsigned bpp, allowed, sample_bytes;
} layout;

/* The walk's table, on the device and pinned alike: n band lengths, then n pairs of bit offsets
 * (ipk_deflate_walk). */
typedef struct {
    uint8_t *filtered, *deflated;   /* device */
    uint32_t *adler;                /* device */
    unsigned long long *walk_table; /* device */
    uint8_t *host;                  /* band k's deflated bytes at k * host_pitch */
    size_t host_pitch;              /* the longest band's, and the join's spare room */
    unsigned long long *host_walk_table;
    uint32_t *host_adler;
    nvcomp_chunk *chunks;
    pngx_band *bands;
    deflate_walk_result *walks;
} buffers;

static int fail(int rc, const char *what, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s", what);
    return rc;
}

static int plan_layout(const io_gpu_codecs *c, const ip_shape *shape, const png_gpu_settings *s, layout *l,
                       char *err, size_t errlen)
{
    pngx_plan p;
    pngx_plan_make(&p, shape, 0);
    l->row_bytes = p.row_bytes, l->bpp = p.bpp, l->allowed = p.allowed;
    l->sample_bytes = shape->dtype == IP_U16 ? 2 : 1;
    l->band_bytes = s->band_bytes;
    if ((size_t)shape->height > SIZE_MAX / (l->row_bytes + 1))
        return fail(IP_ELIMIT, "cannot write PNG on the GPU: the image is too large", err, errlen);
    l->filtered_bytes = (l->row_bytes + 1) * (size_t)shape->height;
    l->n_bands = (l->filtered_bytes - 1) / l->band_bytes + 1;
    int rc = nvcomp_max_compressed_bytes(c->nvcomp, NVCOMP_DEFLATE, s->algorithm, l->band_bytes, &l->max_deflated,
                                         err, errlen);
    if (rc) return rc;
    l->slot = nvcomp_align_up(l->max_deflated + PNG_GPU_JOIN_SPARE);
    if (l->n_bands > (size_t)INT32_MAX || l->n_bands > SIZE_MAX / l->slot)
        return fail(IP_ELIMIT, "cannot write PNG on the GPU: the image is too large", err, errlen);
    return IP_OK;
}

static int alloc_buffers(const io_gpu_codecs *c, const layout *l, buffers *b, char *err, size_t errlen)
{
    int rc = io_gpu_scratch_device(c, IO_GPU_SCRATCH_A, l->filtered_bytes, (void **)&b->filtered, err, errlen);
    if (!rc) rc = io_gpu_scratch_device(c, IO_GPU_SCRATCH_B, l->n_bands * l->slot, (void **)&b->deflated, err, errlen);
    if (!rc) rc = io_gpu_scratch_device(c, IO_GPU_SCRATCH_C, l->n_bands * sizeof(uint32_t), (void **)&b->adler, err,
                                        errlen);
    size_t table = deflate_walk_gpu_table_bytes(l->n_bands);
    if (!rc) rc = io_gpu_scratch_device(c, IO_GPU_SCRATCH_D, table, (void **)&b->walk_table, err, errlen);
    if (!rc) rc = io_gpu_scratch_pinned(c, IO_GPU_SCRATCH_D, table, (void **)&b->host_walk_table, err, errlen);
    if (rc) return rc;
    b->host_adler = malloc(l->n_bands * sizeof(uint32_t));
    b->chunks = calloc(l->n_bands, sizeof(nvcomp_chunk));
    b->bands = calloc(l->n_bands, sizeof(pngx_band));
    b->walks = calloc(l->n_bands, sizeof(deflate_walk_result));
    if (!b->host_adler || !b->chunks || !b->bands || !b->walks) return fail(IP_ENOMEM, "out of memory", err, errlen);
    return IP_OK;
}

static void free_buffers(buffers *b)
{
    free(b->host_adler);
    free(b->chunks);
    free(b->bands);
    free(b->walks);
}

static int filter_and_sum(const io_gpu_codecs *c, const ip_image *img, const layout *l, buffers *b, char *err,
                          size_t errlen)
{
    int k = ipk_png_filter(img->data, img->stride, l->row_bytes, (size_t)img->shape.height, l->bpp,
                           (int)l->sample_bytes, l->allowed, b->filtered, c->stream);
    if (!k) k = ipk_adler32_spans(b->filtered, l->filtered_bytes, l->band_bytes, b->adler, c->stream);
    if (k) return fail(k == IPK_EINVAL ? IP_EINVAL : IP_ECUDA, "cannot write PNG on the GPU: the filter kernel failed",
                       err, errlen);
    return gpu_stream_sync(c->stream, err, errlen);
}

static int deflate_bands(const io_gpu_codecs *c, int algorithm, const layout *l, buffers *b, char *err, size_t errlen)
{
    for (size_t k = 0; k < l->n_bands; k++) {
        size_t at = k * l->band_bytes;
        b->chunks[k] = (nvcomp_chunk){ b->filtered + at, l->filtered_bytes - at < l->band_bytes ? l->filtered_bytes - at
                                                                                                 : l->band_bytes,
                                       b->deflated + k * l->slot, l->max_deflated, 0 };
    }
    return nvcomp_compress(c->batch, NVCOMP_DEFLATE, algorithm, (int)l->n_bands, b->chunks, err, errlen);
}

/* One pitched copy of the first (largest band's) bytes of every slot, the checksums and the walks
 * (nvcomp_compress has refused a band past its slot's max_deflated). The host's pitch is the longest
 * band's, not the slot's: a folder worker pins a quarter of the bytes (each pinned byte costs every
 * worker's first image time in the driver). */
static int download(const io_gpu_codecs *c, const layout *l, buffers *b, size_t *deflated, char *err, size_t errlen)
{
    size_t longest = 0, n = l->n_bands;
    *deflated = 0;
    for (size_t k = 0; k < n; k++) {
        if (b->chunks[k].dst_bytes > longest) longest = b->chunks[k].dst_bytes;
        *deflated += b->chunks[k].dst_bytes;
    }
    b->host_pitch = nvcomp_align_up(longest + PNG_GPU_JOIN_SPARE);   /* at most slot: n * slot was checked */
    int rc = io_gpu_scratch_pinned(c, IO_GPU_SCRATCH_A, n * b->host_pitch, (void **)&b->host, err, errlen);
    if (!rc) rc = deflate_walk_gpu_queue(c, b->deflated, l->slot, b->chunks, n, b->walk_table, b->host_walk_table, err,
                                    errlen);
    if (!rc) rc = gpu_copy2d(b->host, b->host_pitch, b->deflated, l->slot, longest, n, GPU_D2H, c->stream, err, errlen);
    size_t sums = n * sizeof(uint32_t);
    if (!rc) rc = gpu_copy2d(b->host_adler, sums, b->adler, sums, sums, 1, GPU_D2H, c->stream, err, errlen);
    if (!rc) rc = gpu_stream_sync(c->stream, err, errlen);
    for (size_t k = 0; !rc && k < n; k++) {
        b->bands[k] = (pngx_band){ b->host + k * b->host_pitch, b->chunks[k].dst_bytes, b->host_adler[k],
                                   b->chunks[k].src_bytes, 0 };
        b->walks[k] = deflate_walk_gpu_result(b->host_walk_table, n, k);
    }
    return rc;
}

static int check_request(const io_gpu_codecs *c, const ip_image *img, const io_options *opt,
                         const png_gpu_settings *s, char *err, size_t errlen)
{
    if (!c || !c->nvcomp || !c->batch) return fail(IP_EUNSUPPORTED, "nvCOMP is not loaded", err, errlen);
    if (!img || !opt || !img->on_device || !png_gpu_encodable(&img->shape, opt))
        return fail(IP_EUNSUPPORTED, "this image's PNG cannot be encoded on the GPU", err, errlen);
    if (!s || s->algorithm < 0 || s->algorithm > 5 || s->band_bytes < 8 || s->band_bytes % 8 ||
        s->band_bytes > MAX_BAND_BYTES)
        return fail(IP_EINVAL, "GPU PNG: invalid deflate settings", err, errlen);
    return IP_OK;
}

int png_gpu_write_with(const io_gpu_codecs *c, const ip_image *dev_out, const char *path, const io_options *opt,
                       const png_gpu_settings *s, png_gpu_times *times, char *err, size_t errlen)
{
    png_gpu_times t = { 0 };
    double t0 = now_ms();
    layout l;
    buffers b = { 0 };
    int rc = check_request(c, dev_out, opt, s, err, errlen);
    if (!rc) rc = gpu_select(c->device, err, errlen);
    if (!rc) rc = plan_layout(c, &dev_out->shape, s, &l, err, errlen);
    if (!rc) rc = alloc_buffers(c, &l, &b, err, errlen);
    double t1 = now_ms();
    if (!rc) rc = filter_and_sum(c, dev_out, &l, &b, err, errlen);
    double t2 = now_ms();
    if (!rc) rc = deflate_bands(c, s->algorithm, &l, &b, err, errlen);
    double t3 = now_ms();
    if (!rc) rc = download(c, &l, &b, &t.deflated_bytes, err, errlen);
    double t4 = now_ms();
    if (!rc) rc = png_gpu_write_bands(path, &dev_out->shape, opt, b.bands, l.n_bands, b.walks, err, errlen);
    double t5 = now_ms();
    free_buffers(&b);
    if (times && !rc) {
        t.filter_ms = t2 - t1, t.deflate_ms = t3 - t2, t.download_ms = t4 - t3, t.join_ms = t5 - t4;
        t.total_ms = now_ms() - t0, t.filtered_bytes = l.filtered_bytes, t.bands = l.n_bands;
        *times = t;
    }
    return rc;
}
#else
int png_gpu_write_with(const io_gpu_codecs *c, const ip_image *dev_out, const char *path, const io_options *opt,
                       const png_gpu_settings *s, png_gpu_times *times, char *err, size_t errlen)
{
    (void)c, (void)dev_out, (void)path, (void)opt, (void)s, (void)times;
    snprintf(err, errlen, "built without CUDA");
    return IP_EUNSUPPORTED;
}
#endif
