#include "io/deflate_walk_gpu.h"
#include "gpu/gpu.h"
#include "imgpipe/plugin.h"

#ifdef IMGPIPE_HAVE_CUDA
#include "ipk_codec.h"

int deflate_walk_gpu_queue(const io_gpu_codecs *c, const unsigned char *data, size_t slot, const nvcomp_chunk *chunks,
                           size_t n, unsigned long long *dev_table, unsigned long long *host_table, char *err,
                           size_t errlen)
{
    size_t lens = n * sizeof(unsigned long long);
    for (size_t k = 0; k < n; k++) host_table[k] = chunks[k].dst_bytes;
    int rc = gpu_copy2d(dev_table, lens, host_table, lens, lens, 1, GPU_H2D, c->stream, err, errlen);
    if (!rc) rc = io_gpu_kernel_rc(ipk_deflate_walk(data, slot, dev_table, n, dev_table + n, c->stream),
                                   "deflate walk", err, errlen);
    if (!rc) rc = gpu_copy2d(host_table + n, 2 * lens, dev_table + n, 2 * lens, 2 * lens, 1, GPU_D2H, c->stream, err,
                             errlen);
    return rc;
}

#endif
