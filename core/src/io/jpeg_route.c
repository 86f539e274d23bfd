#include "io/jpeg_route.h"
#include <stdio.h>
#include <stdlib.h>
#include "io/meta.h"
#include "io/meta_jpeg.h"

typedef struct {
    const jpeg_route_target *target;
    const io_options *user;
    ip_shape shape;
} route_state;

/* The caller's shape callback plans the pipeline; the shape is kept to reserve the buffers. */
static int on_shape(void *user, const ip_shape *shape, char *err, size_t errlen)
{
    route_state *r = user;
    r->shape = *shape;
    return r->user->on_shape ? r->user->on_shape(r->user->on_shape_user, shape, err, errlen) : IP_OK;
}

static int device_input(void *user, int index, size_t bytes, void **dev, char *err, size_t errlen)
{
    (void)index;
    route_state *r = user;
    return r->target->device_input(r->target->user, &r->shape, bytes, dev, err, errlen);
}

int jpeg_route_wanted(const jpeg_gpu *g, io_format in_format, int zero_copy)
{
    return g && in_format == IO_FMT_JPEG && !zero_copy;
}

/* The file's metadata into opt->meta. nvJPEG decodes straight into device memory, where nothing
 * turns the pixels upright: a file whose EXIF orientation needs turning goes to the CPU reader
 * (IP_EUNSUPPORTED), which does. */
static int read_meta(const unsigned char *data, size_t len, const io_options *opt, char *err, size_t errlen)
{
    if (opt->meta && opt->meta_known) return opt->autorotate && opt->meta->orientation != 1 ? IP_EUNSUPPORTED : IP_OK;
    if (!opt->meta && !opt->autorotate) return IP_OK;
    io_meta local;
    io_meta *m = opt->meta ? opt->meta : &local;
    meta_init(&local);
    int rc = meta_read_jpeg_bytes(data, len, m);
    if (rc) snprintf(err, errlen, "out of memory");
    else if (opt->autorotate && m->orientation != 1) rc = IP_EUNSUPPORTED;
    if (m == &local) meta_clear(m);
    return rc;
}

/* The file is checked, planned and given its buffer on this thread with g's parser; the shared
 * decoder then only runs the engine, in a batch with the other workers' files. A file the engine
 * does not take (progressive, ...) goes to g's own CUDA decoder on this worker's stream (its
 * Huffman decoding on this thread), beside the batches: the decoder a run of its own uses for it,
 * so a folder's output equals the single run's. */
static int decode_prepared(jpeg_gpu *g, jpeg_pool *pool, int device, const unsigned char *data, size_t len,
                           const io_options *io, const jpeg_gpu_memory *mem, ip_image *dev_in, char *err,
                           size_t errlen)
{
    jpeg_gpu_ready ready;
    int rc = jpeg_gpu_prepare(g, data, len, io, mem, dev_in, &ready, err, errlen);
    if (rc == IP_OK)
        rc = ready.hardware ? jpeg_pool_decode_ready(pool, device, &ready, err, errlen)
                            : jpeg_gpu_decode_ready_cuda(g, &ready, err, errlen);
    if (rc != IP_OK) dev_in->data = NULL;
    return rc;
}

/* pool NULL: g decodes alone; else the pool's decoder for device, in a batch (g, when set, on the
 * pool's handle: the file prepared on it first). */
static int route_decode(jpeg_gpu *g, jpeg_pool *pool, int device, const jpeg_route_target *target, io_input *in,
                        const io_options *opt, ip_image *dev_in, char *err, size_t errlen)
{
    if (opt->page > 0) {   /* no such page: the CPU reader says so */
        snprintf(err, errlen, "not decoded on the GPU: page %u", opt->page);
        return IP_EUNSUPPORTED;
    }
    unsigned char *data = NULL;
    size_t len = 0;
    int rc = io_input_bytes(in, &data, &len, err, errlen);
    if (rc == IP_OK) rc = read_meta(data, len, opt, err, errlen);
    if (rc != IP_OK) {
        free(data);
        return rc;
    }
    route_state r = { target, opt, { 0 } };
    io_options io = *opt;
    io.on_shape = on_shape;
    io.on_shape_user = &r;
    jpeg_gpu_memory mem = { device_input, &r };
    if (pool && g) rc = decode_prepared(g, pool, device, data, len, &io, &mem, dev_in, err, errlen);
    else if (pool) rc = jpeg_pool_decode(pool, device, data, len, &io, &mem, dev_in, err, errlen);
    else rc = jpeg_gpu_decode(g, data, len, &io, &mem, dev_in, err, errlen);
    free(data);
    return rc;
}

int jpeg_route_decode(jpeg_gpu *g, const jpeg_route_target *target, io_input *in, const io_options *opt,
                      ip_image *dev_in, char *err, size_t errlen)
{
    return route_decode(g, NULL, 0, target, in, opt, dev_in, err, errlen);
}

int jpeg_route_decode_pooled(jpeg_pool *pool, int device, jpeg_gpu *own, const jpeg_route_target *target,
                             io_input *in, const io_options *opt, ip_image *dev_in, char *err, size_t errlen)
{
    return route_decode(own, pool, device, target, in, opt, dev_in, err, errlen);
}

int jpeg_route_write(jpeg_gpu *g, const ip_image *dev_out, const char *path, const io_options *opt, char *err,
                     size_t errlen)
{
    int rc = io_check_writable(io_format_from_ext(path), &dev_out->shape, err, errlen);
    unsigned char *bytes = NULL;
    size_t len = 0;
    if (rc == IP_OK) rc = jpeg_gpu_encode(g, dev_out, opt->jpeg_quality, &bytes, &len, err, errlen);
    if (rc == IP_OK && opt->meta) {
        unsigned char *tagged = NULL;
        size_t tagged_len = 0;
        rc = meta_jpeg_splice(bytes, len, opt->meta, &dev_out->shape, &tagged, &tagged_len, err, errlen);
        free(bytes);
        bytes = tagged;
        len = tagged_len;
    }
    if (rc == IP_OK) rc = io_write_bytes(path, bytes, len, opt, err, errlen);
    free(bytes);
    return rc;
}
