#define _DEFAULT_SOURCE
#include "gpu/nvcomp.h"
#include <stdio.h>
#include "imgpipe/plugin.h"

/* nvcompDeflateCompressionMaxAllowedChunkSize and nvcompZstdCompressionMaxAllowedChunkSize
 * allow more; the contract keeps chunks to 64 MiB so temporary memory stays bounded. */
#define NVC_MAX_CHUNK ((size_t)64 << 20)

size_t nvcomp_max_chunk(const nvcomp_lib *lib)
{
    (void)lib;
    return NVC_MAX_CHUNK;
}

#ifdef IMGPIPE_HAVE_CUDA
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "gpu/gpu.h"

/* nvCOMP 6's C ABI (nvcomp/shared_types.h, deflate.h, zstd.h), declared here so that the core
 * builds without its headers. Enums are ints; the options structs are 64 bytes passed by value. */
typedef int nvc_status;
enum { NVC_SUCCESS = 0 };
typedef struct { uint32_t version, cudart_version; } nvc_properties;
typedef struct { size_t input, output, temp; } nvc_alignments;
typedef struct { int algorithm; char reserved[60]; } nvc_deflate_copts;
typedef struct { int backend, sort_before_hw_decompress; char reserved[56]; } nvc_deflate_dopts;
typedef struct { char reserved[64]; } nvc_zstd_copts;
typedef struct { int backend; char reserved[60]; } nvc_zstd_dopts;

typedef nvc_status (*deflate_max_out_fn)(size_t, nvc_deflate_copts, size_t *);
typedef nvc_status (*zstd_max_out_fn)(size_t, nvc_zstd_copts, size_t *);
typedef nvc_status (*deflate_calign_fn)(nvc_deflate_copts, nvc_alignments *);
typedef nvc_status (*zstd_calign_fn)(nvc_zstd_copts, nvc_alignments *);
typedef nvc_status (*deflate_dalign_fn)(nvc_deflate_dopts, nvc_alignments *);
typedef nvc_status (*zstd_dalign_fn)(nvc_zstd_dopts, nvc_alignments *);
typedef nvc_status (*deflate_ctemp_fn)(size_t, size_t, nvc_deflate_copts, size_t *, size_t, void *);
typedef nvc_status (*zstd_ctemp_fn)(size_t, size_t, nvc_zstd_copts, size_t *, size_t, void *);
typedef nvc_status (*deflate_dtemp_fn)(size_t, size_t, nvc_deflate_dopts, size_t *, size_t, void *);
typedef nvc_status (*zstd_dtemp_fn)(size_t, size_t, nvc_zstd_dopts, size_t *, size_t, void *);
typedef nvc_status (*deflate_compress_fn)(const void *const *, const size_t *, size_t, size_t, void *, size_t,
                                          void *const *, size_t *, nvc_deflate_copts, nvc_status *, void *);
typedef nvc_status (*zstd_compress_fn)(const void *const *, const size_t *, size_t, size_t, void *, size_t,
                                       void *const *, size_t *, nvc_zstd_copts, nvc_status *, void *);
typedef nvc_status (*deflate_decompress_fn)(const void *const *, const size_t *, const size_t *, size_t *, size_t,
                                            void *, size_t, void *const *, nvc_deflate_dopts, nvc_status *, void *);
typedef nvc_status (*zstd_decompress_fn)(const void *const *, const size_t *, const size_t *, size_t *, size_t,
                                         void *, size_t, void *const *, nvc_zstd_dopts, nvc_status *, void *);

struct nvcomp_lib {
    void *handle;
    char description[48];
    nvc_status (*properties)(nvc_properties *);
    const char *(*status_string)(nvc_status);
    deflate_max_out_fn deflate_max_out;
    zstd_max_out_fn zstd_max_out;
    deflate_calign_fn deflate_calign;
    zstd_calign_fn zstd_calign;
    deflate_dalign_fn deflate_dalign;
    zstd_dalign_fn zstd_dalign;
    deflate_ctemp_fn deflate_ctemp;
    zstd_ctemp_fn zstd_ctemp;
    deflate_dtemp_fn deflate_dtemp;
    zstd_dtemp_fn zstd_dtemp;
    deflate_compress_fn deflate_compress;
    zstd_compress_fn zstd_compress;
    deflate_decompress_fn deflate_decompress;
    zstd_decompress_fn zstd_decompress;
};

/* Each function pointer of nvcomp_lib and the symbol it is loaded from. */
#define NVC_SYMBOLS(X) \
    X(properties, "nvcompGetProperties") \
    X(status_string, "nvcompGetStatusString") \
    X(deflate_max_out, "nvcompBatchedDeflateCompressGetMaxOutputChunkSize") \
    X(zstd_max_out, "nvcompBatchedZstdCompressGetMaxOutputChunkSize") \
    X(deflate_calign, "nvcompBatchedDeflateCompressGetRequiredAlignments") \
    X(zstd_calign, "nvcompBatchedZstdCompressGetRequiredAlignments") \
    X(deflate_dalign, "nvcompBatchedDeflateDecompressGetRequiredAlignments") \
    X(zstd_dalign, "nvcompBatchedZstdDecompressGetRequiredAlignments") \
    X(deflate_ctemp, "nvcompBatchedDeflateCompressGetTempSize") \
    X(zstd_ctemp, "nvcompBatchedZstdCompressGetTempSize") \
    X(deflate_dtemp, "nvcompBatchedDeflateDecompressGetTempSize") \
    X(zstd_dtemp, "nvcompBatchedZstdDecompressGetTempSize") \
    X(deflate_compress, "nvcompBatchedDeflateCompressAsync") \
    X(zstd_compress, "nvcompBatchedZstdCompressAsync") \
    X(deflate_decompress, "nvcompBatchedDeflateDecompressAsync") \
    X(zstd_decompress, "nvcompBatchedZstdDecompressAsync")

/* The name of the first symbol missing, NULL when all resolve. */
static const char *resolve(nvcomp_lib *l)
{
#define NVC_RESOLVE(field, name) \
    if (!(*(void **)&l->field = dlsym(l->handle, name))) return name;
    NVC_SYMBOLS(NVC_RESOLVE)
#undef NVC_RESOLVE
    return NULL;
}

int nvcomp_open(nvcomp_lib **out, char *err, size_t errlen)
{
    *out = NULL;
    const char *chosen = getenv("IMGPIPE_NVCOMP_LIB");
    const char *name = chosen && chosen[0] ? chosen : "libnvcomp.so.6";
    nvcomp_lib *l = calloc(1, sizeof *l);
    if (!l) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    /* never unmapped: nvCOMP's C++ runtime statics stay reachable, not a leak */
    l->handle = dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!l->handle) {
        if (name == chosen) snprintf(err, errlen, "nvCOMP not found at IMGPIPE_NVCOMP_LIB=%s", chosen);
        else snprintf(err, errlen, "nvCOMP not found (libnvcomp.so.6; IMGPIPE_NVCOMP_LIB may name it)");
        free(l);
        return IP_EUNSUPPORTED;
    }
    const char *missing = resolve(l);
    nvc_properties props = { 0, 0 };
    if (missing || l->properties(&props) != NVC_SUCCESS) {
        snprintf(err, errlen, "the nvCOMP library %s %s", name,
                 missing ? "lacks a function imgpipe needs: " : "does not say its version");
        if (missing && strlen(err) + 1 < errlen) strncat(err, missing, errlen - strlen(err) - 1);
        nvcomp_close(l);
        return IP_EUNSUPPORTED;
    }
    snprintf(l->description, sizeof l->description, "nvCOMP %u.%u.%u", props.version / 1000,
             props.version % 1000 / 100, props.version % 100);
    *out = l;
    return IP_OK;
}

void nvcomp_close(nvcomp_lib *lib)
{
    if (!lib) return;
    if (lib->handle) dlclose(lib->handle);
    free(lib);
}

const char *nvcomp_description(const nvcomp_lib *lib)
{
    return lib ? lib->description : "no nvCOMP";
}

static nvc_deflate_copts deflate_copts(int algorithm)
{
    nvc_deflate_copts o;
    memset(&o, 0, sizeof o);
    o.algorithm = algorithm;
    return o;
}

static nvc_zstd_copts zstd_copts(void)
{
    nvc_zstd_copts o;
    memset(&o, 0, sizeof o);
    return o;
}

static nvc_deflate_dopts deflate_dopts(void)
{
    nvc_deflate_dopts o;
    memset(&o, 0, sizeof o);   /* backend 0: NVCOMP_DECOMPRESS_BACKEND_DEFAULT */
    return o;
}

static nvc_zstd_dopts zstd_dopts(void)
{
    nvc_zstd_dopts o;
    memset(&o, 0, sizeof o);
    return o;
}

static int nvc_fail(const nvcomp_lib *l, nvc_status s, const char *what, char *err, size_t errlen)
{
    if (s == NVC_SUCCESS) return IP_OK;
    snprintf(err, errlen, "nvCOMP %s: %s", what, l->status_string(s));
    return IP_ECUDA;
}

static int check_algorithm(nvcomp_codec codec, int algorithm, char *err, size_t errlen)
{
    if (codec != NVCOMP_DEFLATE && codec != NVCOMP_ZSTD) {
        snprintf(err, errlen, "nvCOMP: unknown codec %d", (int)codec);
        return IP_EINVAL;
    }
    if (codec == NVCOMP_DEFLATE && (algorithm < 0 || algorithm > 5)) {
        snprintf(err, errlen, "nvCOMP: deflate algorithm %d is not 0..5", algorithm);
        return IP_EINVAL;
    }
    return IP_OK;
}

int nvcomp_max_compressed_bytes(const nvcomp_lib *l, nvcomp_codec codec, int algorithm, size_t chunk_bytes,
                                size_t *bytes, char *err, size_t errlen)
{
    *bytes = 0;
    int rc = check_algorithm(codec, algorithm, err, errlen);
    if (rc) return rc;
    if (chunk_bytes > NVC_MAX_CHUNK) {
        snprintf(err, errlen, "nvCOMP: a chunk of %zu bytes is over the 64 MiB limit", chunk_bytes);
        return IP_EINVAL;
    }
    nvc_status s = codec == NVCOMP_DEFLATE ? l->deflate_max_out(chunk_bytes, deflate_copts(algorithm), bytes)
                                           : l->zstd_max_out(chunk_bytes, zstd_copts(), bytes);
    return nvc_fail(l, s, "max compressed size", err, errlen);
}

/* The chunks' arrays live in one device block and one pinned host mirror, in this order, so that
 * a batch uploads in one copy and its results come back in one: src pointers, src sizes, dst
 * pointers, dst capacities | dst sizes, statuses. size_t is 64-bit on every CUDA host. */
_Static_assert(sizeof(size_t) == sizeof(uint64_t) && sizeof(void *) == sizeof(uint64_t), "64-bit host");
enum { ARR_SRC, ARR_SRC_BYTES, ARR_DST, ARR_DST_CAP, ARR_DST_BYTES, ARR_STATUS, ARR_COUNT };

struct nvcomp_batch {
    const nvcomp_lib *lib;
    int device;
    void *stream;
    size_t capacity;          /* chunks the arrays hold */
    uint64_t *host;           /* pinned, ARR_COUNT * capacity slots */
    uint64_t *dev;
    void *temp;               /* nvCOMP's temporary memory */
    size_t temp_bytes;
};

int nvcomp_batch_create(nvcomp_batch **out, const nvcomp_lib *lib, int device, void *stream, char *err,
                        size_t errlen)
{
    *out = NULL;
    if (!lib) {
        snprintf(err, errlen, "nvCOMP is not open");
        return IP_EINVAL;
    }
    int rc = gpu_select(device, err, errlen);
    if (rc) return rc;
    nvcomp_batch *b = calloc(1, sizeof *b);
    if (!b) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    b->lib = lib;
    b->device = device;
    b->stream = stream;
    *out = b;
    return IP_OK;
}

void nvcomp_batch_destroy(nvcomp_batch *b)
{
    if (!b) return;
    gpu_host_free(b->host);
    gpu_free(b->dev);
    gpu_free(b->temp);
    free(b);
}

static int grow_arrays(nvcomp_batch *b, size_t n, char *err, size_t errlen)
{
    if (n <= b->capacity) return IP_OK;
    size_t cap = b->capacity * 2 > n ? b->capacity * 2 : n;
    if (cap > SIZE_MAX / (ARR_COUNT * sizeof(uint64_t))) {
        snprintf(err, errlen, "nvCOMP: too many chunks (%zu)", n);
        return IP_ENOMEM;
    }
    size_t bytes = cap * ARR_COUNT * sizeof(uint64_t);
    gpu_host_free(b->host);
    gpu_free(b->dev);
    b->host = NULL;
    b->dev = NULL;
    b->capacity = 0;
    void *host = NULL, *dev = NULL;
    int rc = gpu_host_alloc(&host, bytes, 0, err, errlen);
    if (!rc) rc = gpu_malloc(&dev, bytes, err, errlen);
    if (rc) {
        gpu_host_free(host);
        return rc;
    }
    b->host = host;
    b->dev = dev;
    b->capacity = cap;
    return IP_OK;
}

static int grow_temp(nvcomp_batch *b, size_t bytes, char *err, size_t errlen)
{
    if (bytes <= b->temp_bytes && b->temp) return IP_OK;
    gpu_free(b->temp);
    b->temp = NULL;
    b->temp_bytes = 0;
    int rc = gpu_malloc(&b->temp, bytes, err, errlen);
    if (!rc) b->temp_bytes = bytes;
    return rc;
}

/* Slot i of array a, on the host or the device. */
static uint64_t *host_slot(const nvcomp_batch *b, int a) { return b->host + (size_t)a * b->capacity; }
static void *dev_slot(const nvcomp_batch *b, int a) { return b->dev + (size_t)a * b->capacity; }

static int misaligned(const void *p, size_t align)
{
    return align > 1 && (uintptr_t)p % align != 0;
}

/* Checks the chunks, grows the arrays and uploads them; *max_chunk and *total: the largest and
 * the sum of the uncompressed sizes (src when compressing, dst capacity when decompressing). */
static int stage_chunks(nvcomp_batch *b, int n, const nvcomp_chunk *chunks, int compressing, const nvc_alignments *al,
                        size_t *max_chunk, size_t *total, char *err, size_t errlen)
{
    *max_chunk = 0;
    *total = 0;
    int rc = grow_arrays(b, (size_t)n, err, errlen);
    if (rc) return rc;
    for (int i = 0; i < n; i++) {
        const nvcomp_chunk *c = &chunks[i];
        size_t raw = compressing ? c->src_bytes : c->dst_capacity;
        if (!c->src || !c->dst || raw > NVC_MAX_CHUNK || misaligned(c->src, al->input) ||
            misaligned(c->dst, al->output)) {
            snprintf(err, errlen, "nvCOMP: chunk %d is misplaced (NULL, misaligned or over 64 MiB)", i);
            return IP_EINVAL;
        }
        if (raw > *max_chunk) *max_chunk = raw;
        *total += raw;
        host_slot(b, ARR_SRC)[i] = (uint64_t)(uintptr_t)c->src;
        host_slot(b, ARR_SRC_BYTES)[i] = c->src_bytes;
        host_slot(b, ARR_DST)[i] = (uint64_t)(uintptr_t)c->dst;
        host_slot(b, ARR_DST_CAP)[i] = c->dst_capacity;
    }
    /* the four input arrays are capacity-strided: copy them as four rows of n slots */
    return gpu_copy2d(b->dev, b->capacity * sizeof(uint64_t), b->host, b->capacity * sizeof(uint64_t),
                      (size_t)n * sizeof(uint64_t), 4, GPU_H2D, b->stream, err, errlen);
}

/* Queues the copy of each chunk's size and status behind the batch. */
static int queue_results(nvcomp_batch *b, int n, char *err, size_t errlen)
{
    return gpu_copy2d(host_slot(b, ARR_DST_BYTES), b->capacity * sizeof(uint64_t), dev_slot(b, ARR_DST_BYTES),
                      b->capacity * sizeof(uint64_t), (size_t)n * sizeof(uint64_t), 2, GPU_D2H, b->stream, err, errlen);
}

/* Statuses are 4-byte enums packed in the status slots' space (4n bytes of 8n). */
static nvc_status chunk_status(const nvcomp_batch *b, int i)
{
    return ((const int32_t *)host_slot(b, ARR_STATUS))[i];
}

static int compress_alignments(const nvcomp_lib *l, nvcomp_codec codec, int algorithm, nvc_alignments *al, char *err,
                               size_t errlen)
{
    nvc_status s = codec == NVCOMP_DEFLATE ? l->deflate_calign(deflate_copts(algorithm), al)
                                           : l->zstd_calign(zstd_copts(), al);
    return nvc_fail(l, s, "alignments", err, errlen);
}

static int decompress_alignments(const nvcomp_lib *l, nvcomp_codec codec, nvc_alignments *al, char *err,
                                 size_t errlen)
{
    nvc_status s = codec == NVCOMP_DEFLATE ? l->deflate_dalign(deflate_dopts(), al) : l->zstd_dalign(zstd_dopts(), al);
    return nvc_fail(l, s, "alignments", err, errlen);
}

static int launch_compress(nvcomp_batch *b, nvcomp_codec codec, int algorithm, int n, size_t max_chunk,
                           size_t total, char *err, size_t errlen)
{
    const nvcomp_lib *l = b->lib;
    size_t temp = 0;
    nvc_status s = codec == NVCOMP_DEFLATE
                       ? l->deflate_ctemp((size_t)n, max_chunk, deflate_copts(algorithm), &temp, total, b->stream)
                       : l->zstd_ctemp((size_t)n, max_chunk, zstd_copts(), &temp, total, b->stream);
    int rc = nvc_fail(l, s, "compression's temporary size", err, errlen);
    if (!rc) rc = grow_temp(b, temp, err, errlen);
    if (rc) return rc;
    const void *const *src = dev_slot(b, ARR_SRC);
    const size_t *src_bytes = dev_slot(b, ARR_SRC_BYTES);
    void *const *dst = dev_slot(b, ARR_DST);
    size_t *dst_bytes = dev_slot(b, ARR_DST_BYTES);
    nvc_status *status = dev_slot(b, ARR_STATUS);
    s = codec == NVCOMP_DEFLATE
            ? l->deflate_compress(src, src_bytes, max_chunk, (size_t)n, b->temp, b->temp_bytes, dst, dst_bytes,
                                  deflate_copts(algorithm), status, b->stream)
            : l->zstd_compress(src, src_bytes, max_chunk, (size_t)n, b->temp, b->temp_bytes, dst, dst_bytes,
                               zstd_copts(), status, b->stream);
    return nvc_fail(l, s, "compression", err, errlen);
}

int nvcomp_compress_start(nvcomp_batch *b, nvcomp_codec codec, int algorithm, int n, const nvcomp_chunk *chunks,
                          char *err, size_t errlen)
{
    int rc = check_algorithm(codec, algorithm, err, errlen);
    if (rc || n <= 0) return rc;
    nvc_alignments al;
    size_t max_chunk, total;
    rc = gpu_select(b->device, err, errlen);
    if (!rc) rc = compress_alignments(b->lib, codec, algorithm, &al, err, errlen);
    if (!rc) rc = stage_chunks(b, n, chunks, 1, &al, &max_chunk, &total, err, errlen);
    if (!rc) rc = launch_compress(b, codec, algorithm, n, max_chunk, total, err, errlen);
    if (!rc) rc = queue_results(b, n, err, errlen);
    return rc;
}

int nvcomp_compress_finish(nvcomp_batch *b, int n, nvcomp_chunk *chunks, char *err, size_t errlen)
{
    if (n <= 0) return IP_OK;
    int rc = gpu_select(b->device, err, errlen);
    if (!rc) rc = gpu_stream_sync(b->stream, err, errlen);
    for (int i = 0; !rc && i < n; i++) {
        nvc_status s = chunk_status(b, i);
        chunks[i].dst_bytes = (size_t)host_slot(b, ARR_DST_BYTES)[i];
        if (s != NVC_SUCCESS || chunks[i].dst_bytes > chunks[i].dst_capacity) {
            snprintf(err, errlen, "nvCOMP could not compress chunk %d: %s", i,
                     s != NVC_SUCCESS ? b->lib->status_string(s) : "it outgrew its buffer");
            rc = IP_ECUDA;
        }
    }
    return rc;
}

int nvcomp_compress(nvcomp_batch *b, nvcomp_codec codec, int algorithm, int n, nvcomp_chunk *chunks, char *err,
                    size_t errlen)
{
    int rc = nvcomp_compress_start(b, codec, algorithm, n, chunks, err, errlen);
    return rc ? rc : nvcomp_compress_finish(b, n, chunks, err, errlen);
}

static int launch_decompress(nvcomp_batch *b, nvcomp_codec codec, int n, size_t max_chunk, size_t total, char *err,
                             size_t errlen)
{
    const nvcomp_lib *l = b->lib;
    size_t temp = 0;
    nvc_status s = codec == NVCOMP_DEFLATE
                       ? l->deflate_dtemp((size_t)n, max_chunk, deflate_dopts(), &temp, total, b->stream)
                       : l->zstd_dtemp((size_t)n, max_chunk, zstd_dopts(), &temp, total, b->stream);
    int rc = nvc_fail(l, s, "decompression's temporary size", err, errlen);
    if (!rc) rc = grow_temp(b, temp, err, errlen);
    if (rc) return rc;
    const void *const *src = dev_slot(b, ARR_SRC);
    const size_t *src_bytes = dev_slot(b, ARR_SRC_BYTES);
    void *const *dst = dev_slot(b, ARR_DST);
    const size_t *dst_cap = dev_slot(b, ARR_DST_CAP);
    size_t *dst_bytes = dev_slot(b, ARR_DST_BYTES);
    nvc_status *status = dev_slot(b, ARR_STATUS);
    s = codec == NVCOMP_DEFLATE
            ? l->deflate_decompress(src, src_bytes, dst_cap, dst_bytes, (size_t)n, b->temp, b->temp_bytes, dst,
                                    deflate_dopts(), status, b->stream)
            : l->zstd_decompress(src, src_bytes, dst_cap, dst_bytes, (size_t)n, b->temp, b->temp_bytes, dst,
                                 zstd_dopts(), status, b->stream);
    return nvc_fail(l, s, "decompression", err, errlen);
}

int nvcomp_decompress_start(nvcomp_batch *b, nvcomp_codec codec, int n, const nvcomp_chunk *chunks, char *err,
                            size_t errlen)
{
    int rc = check_algorithm(codec, 0, err, errlen);
    if (rc || n <= 0) return rc;
    nvc_alignments al;
    size_t max_chunk, total;
    rc = gpu_select(b->device, err, errlen);
    if (!rc) rc = decompress_alignments(b->lib, codec, &al, err, errlen);
    if (!rc) rc = stage_chunks(b, n, chunks, 0, &al, &max_chunk, &total, err, errlen);
    if (!rc) rc = launch_decompress(b, codec, n, max_chunk, total, err, errlen);
    if (!rc) rc = queue_results(b, n, err, errlen);
    return rc;
}

int nvcomp_decompress_finish(nvcomp_batch *b, nvcomp_codec codec, int n, nvcomp_chunk *chunks, int *bad_chunk,
                             char *err, size_t errlen)
{
    if (bad_chunk) *bad_chunk = -1;
    if (n <= 0) return IP_OK;
    int rc = gpu_select(b->device, err, errlen);
    if (!rc) rc = gpu_stream_sync(b->stream, err, errlen);
    for (int i = 0; !rc && i < n; i++) {
        nvc_status s = chunk_status(b, i);
        chunks[i].dst_bytes = (size_t)host_slot(b, ARR_DST_BYTES)[i];
        if (s != NVC_SUCCESS || chunks[i].dst_bytes > chunks[i].dst_capacity) {
            snprintf(err, errlen, "chunk %d is not valid %s data (%s)", i, codec == NVCOMP_DEFLATE ? "deflate" : "zstd",
                     s != NVC_SUCCESS ? b->lib->status_string(s) : "it overflows its buffer");
            if (bad_chunk) *bad_chunk = i;
            rc = IP_EFORMAT;
        }
    }
    return rc;
}

int nvcomp_decompress(nvcomp_batch *b, nvcomp_codec codec, int n, nvcomp_chunk *chunks, int *bad_chunk, char *err,
                      size_t errlen)
{
    if (bad_chunk) *bad_chunk = -1;
    int rc = nvcomp_decompress_start(b, codec, n, chunks, err, errlen);
    return rc ? rc : nvcomp_decompress_finish(b, codec, n, chunks, bad_chunk, err, errlen);
}

#else

int nvcomp_open(nvcomp_lib **lib, char *err, size_t errlen)
{
    *lib = NULL;
    snprintf(err, errlen, "nvCOMP needs a CUDA build (this imgpipe was built without CUDA)");
    return IP_EUNSUPPORTED;
}

void nvcomp_close(nvcomp_lib *lib) { (void)lib; }

const char *nvcomp_description(const nvcomp_lib *lib)
{
    (void)lib;
    return "no nvCOMP";
}

int nvcomp_max_compressed_bytes(const nvcomp_lib *lib, nvcomp_codec codec, int algorithm, size_t chunk_bytes,
                                size_t *bytes, char *err, size_t errlen)
{
    (void)lib, (void)codec, (void)algorithm, (void)chunk_bytes;
    *bytes = 0;
    snprintf(err, errlen, "nvCOMP needs a CUDA build");
    return IP_EUNSUPPORTED;
}

int nvcomp_batch_create(nvcomp_batch **b, const nvcomp_lib *lib, int device, void *stream, char *err,
                        size_t errlen)
{
    (void)lib, (void)device, (void)stream;
    *b = NULL;
    snprintf(err, errlen, "nvCOMP needs a CUDA build");
    return IP_EUNSUPPORTED;
}

void nvcomp_batch_destroy(nvcomp_batch *b) { (void)b; }

int nvcomp_compress(nvcomp_batch *b, nvcomp_codec codec, int algorithm, int n, nvcomp_chunk *chunks, char *err,
                    size_t errlen)
{
    (void)b, (void)codec, (void)algorithm, (void)n, (void)chunks;
    snprintf(err, errlen, "nvCOMP needs a CUDA build");
    return IP_EUNSUPPORTED;
}

int nvcomp_compress_start(nvcomp_batch *b, nvcomp_codec codec, int algorithm, int n, const nvcomp_chunk *chunks,
                          char *err, size_t errlen)
{
    (void)b, (void)codec, (void)algorithm, (void)n, (void)chunks;
    snprintf(err, errlen, "nvCOMP needs a CUDA build");
    return IP_EUNSUPPORTED;
}

int nvcomp_compress_finish(nvcomp_batch *b, int n, nvcomp_chunk *chunks, char *err, size_t errlen)
{
    (void)b, (void)n, (void)chunks;
    snprintf(err, errlen, "nvCOMP needs a CUDA build");
    return IP_EUNSUPPORTED;
}

int nvcomp_decompress_start(nvcomp_batch *b, nvcomp_codec codec, int n, const nvcomp_chunk *chunks, char *err,
                            size_t errlen)
{
    (void)b, (void)codec, (void)n, (void)chunks;
    snprintf(err, errlen, "nvCOMP needs a CUDA build");
    return IP_EUNSUPPORTED;
}

int nvcomp_decompress_finish(nvcomp_batch *b, nvcomp_codec codec, int n, nvcomp_chunk *chunks, int *bad_chunk,
                             char *err, size_t errlen)
{
    (void)b, (void)codec, (void)n, (void)chunks;
    if (bad_chunk) *bad_chunk = -1;
    snprintf(err, errlen, "nvCOMP needs a CUDA build");
    return IP_EUNSUPPORTED;
}

int nvcomp_decompress(nvcomp_batch *b, nvcomp_codec codec, int n, nvcomp_chunk *chunks, int *bad_chunk, char *err,
                      size_t errlen)
{
    (void)b, (void)codec, (void)n, (void)chunks;
    if (bad_chunk) *bad_chunk = -1;
    snprintf(err, errlen, "nvCOMP needs a CUDA build");
    return IP_EUNSUPPORTED;
}
#endif
