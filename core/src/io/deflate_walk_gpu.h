/* Compressed chunks walked on the card where nvCOMP left them (ipk_deflate_walk), for the join
 * (deflate_walk.h): the GPU PNG writer's bands and the GPU TIFF writer's pieces. A walk on a core
 * took 67 ms of a 12-MP gray PNG's 131 ms write in a 16-worker folder. */
#ifndef IMGPIPE_DEFLATE_WALK_GPU_H
#define IMGPIPE_DEFLATE_WALK_GPU_H
#include "io/codec_gpu.h"
#include "io/deflate_walk.h"

/* A walk table's bytes for n chunks, on the device and pinned alike: their lengths, then a pair
 * of bit offsets each. */
static inline size_t deflate_walk_gpu_table_bytes(size_t n)
{
    return 3 * n * sizeof(unsigned long long);
}

/* Queues on c's stream: the n chunks' lengths (their dst_bytes) up through host_table, the walk
 * of the chunks lying slot bytes apart from data (device), and the walks back into host_table
 * after the lengths. Read them with deflate_walk_gpu_result once the stream is done. */
int deflate_walk_gpu_queue(const io_gpu_codecs *c, const unsigned char *data, size_t slot, const nvcomp_chunk *chunks,
                           size_t n, unsigned long long *dev_table, unsigned long long *host_table, char *err,
                           size_t errlen);
/* Chunk k's walk, of n, from the table read back. */
static inline deflate_walk_result deflate_walk_gpu_result(const unsigned long long *host_table, size_t n, size_t k)
{
    return (deflate_walk_result){ host_table[n + 2 * k], host_table[n + 2 * k + 1] };
}
/* Chunks [first, end) of the n, their bodies slot bytes apart from bodies (host) as nvCOMP left
 * them, joined back to back at out: each cut where its walk in host_table ends and, but the last,
 * made joinable (DEFLATE_JOIN_SPARE bytes past it may be written); without a table (chunks never
 * walked) each copied as it is. The length; 0 when a chunk holds no valid stream. */
size_t deflate_walk_gpu_join(unsigned char *bodies, size_t slot, const nvcomp_chunk *chunks,
                             const unsigned long long *host_table, size_t n, size_t first, size_t end,
                             unsigned char *out);
#endif
