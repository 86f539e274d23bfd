#include "io/deflate_walk_gpu.h"
#include <string.h>
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

size_t deflate_walk_gpu_join(unsigned char *bodies, size_t slot, const nvcomp_chunk *chunks,
                             const unsigned long long *host_table, size_t n, size_t first, size_t end,
                             unsigned char *out)
{
    size_t len = 0;
    for (size_t k = first; k < end; k++) {
        unsigned char *body = bodies + k * slot;
        size_t body_len = chunks[k].dst_bytes;
        if (host_table) {
            deflate_walk_result walk = deflate_walk_gpu_result(host_table, n, k);
            if (!deflate_walk_fits(&walk, body_len)) return 0;
            body_len = deflate_join_walked(body, &walk, k + 1 == end);
        }
        if (body_len == 0) return 0;
        memcpy(out + len, body, body_len);
        len += body_len;
    }
    return len;
}

#endif
