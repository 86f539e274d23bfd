/* nvCOMP's batched deflate and zstd on the GPU, opened with dlopen (libnvcomp.so.6, from NVIDIA's
 * PyPI package nvidia-libnvcomp-cu13; $IMGPIPE_NVCOMP_LIB names the only file tried), so the
 * program builds without its headers and runs where it is missing (the CPU codecs then). Its C
 * ABI is declared in nvcomp.c. The chunks are raw deflate streams (RFC 1951) or zstd frames:
 * zlib's header and adler32 are the caller's (ipk_adler32_spans). */
#ifndef IMGPIPE_NVCOMP_H
#define IMGPIPE_NVCOMP_H
#include <stddef.h>

typedef struct nvcomp_lib nvcomp_lib;

/* IP_EUNSUPPORTED with the reason when no library can be opened (or it lacks a function). */
int nvcomp_open(nvcomp_lib **lib, char *err, size_t errlen);
void nvcomp_close(nvcomp_lib *lib);
/* "nvCOMP 6.0.0", for -v. */
const char *nvcomp_description(const nvcomp_lib *lib);

typedef enum { NVCOMP_DEFLATE = 0, NVCOMP_ZSTD = 1 } nvcomp_codec;

/* The largest chunk a batch takes (64 MiB): a larger one is IP_EINVAL. Readers decline a block
 * over it, decoded or compressed, before they ask for device memory. */
size_t nvcomp_max_chunk(const nvcomp_lib *lib);

/* The alignment of every chunk's src and dst: 8 for zstd, 4 for deflate; the readers and writers
 * keep to the larger for both. */
#define NVCOMP_CHUNK_ALIGN 8
static inline size_t nvcomp_align_up(size_t n)
{
    return (n + NVCOMP_CHUNK_ALIGN - 1) / NVCOMP_CHUNK_ALIGN * NVCOMP_CHUNK_ALIGN;
}
/* A slot holding n bytes a chunk's alignment into it (the room before it for a header), its size
 * a multiple of the alignment, with spare after: n + 2 alignments, rounded down. */
static inline size_t nvcomp_slot_bytes(size_t n)
{
    return (n + 2 * NVCOMP_CHUNK_ALIGN) / NVCOMP_CHUNK_ALIGN * NVCOMP_CHUNK_ALIGN;
}

/* One chunk of a batch, in device memory. Compressing: src/src_bytes in, dst of dst_capacity
 * (at least nvcomp_max_compressed_bytes), dst_bytes out. Decompressing: src/src_bytes the
 * compressed chunk, dst of dst_capacity, dst_bytes out (the caller checks it against what it
 * expects). */
typedef struct {
    const void *src;
    size_t src_bytes;
    void *dst;
    size_t dst_capacity;
    size_t dst_bytes;
} nvcomp_chunk;

/* The largest compressed chunk for chunks of up to chunk_bytes. algorithm: deflate's 0..5
 * (nvcompBatchedDeflateCompressOpts_t.algorithm; 0 entropy coding only), ignored for zstd. */
int nvcomp_max_compressed_bytes(const nvcomp_lib *lib, nvcomp_codec codec, int algorithm, size_t chunk_bytes,
                                size_t *bytes, char *err, size_t errlen);

/* What one stream keeps between batches: device arrays of the chunks' pointers, sizes and
 * statuses, and nvCOMP's temporary memory, grown as batches need and reused. One thread at a
 * time. stream: a cudaStream_t (NULL: the default stream); device: the CUDA device. */
typedef struct nvcomp_batch nvcomp_batch;
int nvcomp_batch_create(nvcomp_batch **b, const nvcomp_lib *lib, int device, void *stream, char *err,
                        size_t errlen);
void nvcomp_batch_destroy(nvcomp_batch *b);

/* Compresses n chunks; returns once done (the stream synchronised) with every dst_bytes set.
 * Chunk sizes are at most 64 MiB; src pointers aligned to 8 bytes, dst to 8 (deflate's
 * alignment). */
int nvcomp_compress(nvcomp_batch *b, nvcomp_codec codec, int algorithm, int n, nvcomp_chunk *chunks, char *err,
                    size_t errlen);
/* nvcomp_compress in two halves, so that the host can work while the card compresses: start
 * queues the batch on b's stream (chunks read now), finish waits for it and sets every dst_bytes
 * of the same n chunks. Nothing else may use b in between; after a failed start, sync the stream
 * before reusing the chunks' memory. */
int nvcomp_compress_start(nvcomp_batch *b, nvcomp_codec codec, int algorithm, int n, const nvcomp_chunk *chunks,
                          char *err, size_t errlen);
int nvcomp_compress_finish(nvcomp_batch *b, int n, nvcomp_chunk *chunks, char *err, size_t errlen);
/* Decompresses n chunks; returns once done. IP_EFORMAT naming the first chunk whose data is not
 * valid (its index in *bad_chunk when not NULL) and nothing else is trusted then. */
int nvcomp_decompress(nvcomp_batch *b, nvcomp_codec codec, int n, nvcomp_chunk *chunks, int *bad_chunk,
                      char *err, size_t errlen);
/* nvcomp_decompress in two halves, as compressing: start queues the batch on b's stream, finish
 * waits for it and judges the same n chunks. Nothing else may use b in between. */
int nvcomp_decompress_start(nvcomp_batch *b, nvcomp_codec codec, int n, const nvcomp_chunk *chunks, char *err,
                            size_t errlen);
int nvcomp_decompress_finish(nvcomp_batch *b, nvcomp_codec codec, int n, nvcomp_chunk *chunks, int *bad_chunk,
                             char *err, size_t errlen);
#endif
