#define _POSIX_C_SOURCE 200809L
#include "io/jpeg_gpu.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu/gpu.h"
#include "base/image.h"
#include "io/io_limits.h"
#include "io/jpeg_layout.h"
#include "base/mono_clock.h"

int jpeg_gpu_buffer_alloc(void *user, int index, size_t bytes, void **dev, char *err, size_t errlen)
{
    jpeg_gpu_buffer *buf = (jpeg_gpu_buffer *)user + index;
    if (!buf->dev || buf->bytes < bytes) {
        jpeg_gpu_buffer_free(buf);
        int rc = gpu_malloc(&buf->dev, bytes, err, errlen);
        if (rc) return rc;
        buf->bytes = bytes;
    }
    *dev = buf->dev;
    return IP_OK;
}

void jpeg_gpu_buffer_free(jpeg_gpu_buffer *buf)
{
    gpu_free(buf->dev);
    buf->dev = NULL;
    buf->bytes = 0;
}

#if defined(IMGPIPE_HAVE_CUDA) && defined(IMGPIPE_HAVE_NVJPEG)
#include <dlfcn.h>
#include <nvjpeg.h>
#include <time.h>

/* Every nvJPEG function used; resolved from the library into the object's table. */
#define NVJPEG_FUNCTIONS(X)                                                                          \
    X(nvjpegCreateEx) X(nvjpegDestroy) X(nvjpegJpegStateCreate) X(nvjpegJpegStateDestroy)            \
    X(nvjpegJpegStreamCreate) X(nvjpegJpegStreamDestroy) X(nvjpegJpegStreamParse)                     \
    X(nvjpegDecodeBatchedSupported) X(nvjpegDecodeBatchedInitialize) X(nvjpegDecodeBatched)          \
    X(nvjpegDecoderCreate) X(nvjpegDecoderDestroy) X(nvjpegDecoderStateCreate)                       \
    X(nvjpegBufferPinnedCreate) X(nvjpegBufferPinnedDestroy) X(nvjpegBufferDeviceCreate)             \
    X(nvjpegBufferDeviceDestroy) X(nvjpegStateAttachPinnedBuffer) X(nvjpegStateAttachDeviceBuffer)   \
    X(nvjpegDecodeParamsCreate) X(nvjpegDecodeParamsDestroy) X(nvjpegDecodeParamsSetOutputFormat)    \
    X(nvjpegDecodeJpegHost) X(nvjpegDecodeJpegTransferToDevice) X(nvjpegDecodeJpegDevice)            \
    X(nvjpegEncoderStateCreate) X(nvjpegEncoderStateDestroy) X(nvjpegEncoderParamsCreate)            \
    X(nvjpegEncoderParamsDestroy) X(nvjpegEncoderParamsSetQuality) X(nvjpegEncoderParamsSetEncoding) \
    X(nvjpegEncoderParamsSetOptimizedHuffman) X(nvjpegEncoderParamsSetSamplingFactors)              \
    X(nvjpegEncodeImage) X(nvjpegEncodeYUV) X(nvjpegEncodeRetrieveBitstream)

typedef struct {
#define DECLARE_FN(name) __typeof__(&name) name;
    NVJPEG_FUNCTIONS(DECLARE_FN)
#undef DECLARE_FN
    __typeof__(&nvjpegDecodeBatchedPreAllocate) preallocate;   /* optional: NULL in older libraries */
    __typeof__(&nvjpegJpegStreamParseHeader) parse_header;     /* optional: the whole parse instead */
} nvjpeg_api;

/* The CUDA decoder (decoupled API) for what the hardware engine does not take. */
typedef struct {
    nvjpegJpegDecoder_t decoder;
    nvjpegJpegState_t state;
    nvjpegBufferPinned_t pinned;
    nvjpegBufferDevice_t device;
} cuda_decoder;

/* A hardware batch state and the batch it was initialised for: initialising one took 91 ms on the
 * H100 (4 of them, 12-MP files), so states are kept, one per batch size and format seen lately:
 * a folder's shared decoder sees sizes up to its worker count. */
enum { BATCH_SLOTS = 16 };
typedef struct {
    nvjpegJpegState_t state;
    int size;                             /* 0: nvjpegDecodeBatchedInitialize needed */
    nvjpegOutputFormat_t format;
    long last_use;
    int pooled;                           /* nvjpegDecodeBatchedPreAllocate was called on state */
} batch_slot;

/* One image of a decode call once its header passed: where its pixels go and in which form. */
typedef struct {
    const unsigned char *data;
    size_t len;
    nvjpegOutputFormat_t format;
    nvjpegImage_t dest;
} decode_item;

struct jpeg_gpu {
    void *lib;
    nvjpeg_api api;
    int device;
    cudaStream_t stream;
    int hardware;
    char description[160];
    nvjpegHandle_t handle;
    nvjpegJpegStream_t parsed;
    nvjpegDecodeParams_t params;
    batch_slot batches[BATCH_SLOTS];      /* hardware batch states, each initialised for a size */
    long batch_uses;                      /* a clock for choosing the slot to reinitialise */
    jpeg_gpu_batch_times batch_times;
    long hardware_decodes;
    cuda_decoder cuda;                    /* decoder NULL until first needed */
    nvjpegEncoderState_t enc_state;       /* NULL: encoder unavailable, reason in enc_why */
    nvjpegEncoderParams_t enc_params;
    char enc_why[200];
    unsigned char *encoded;               /* pinned: the encoder's bytes land here, then are copied out */
    size_t encoded_cap;
    int decoder_ready, encoder_tried;     /* made at open when asked for, else on first use */
    int borrowed;                         /* the handle is another object's (jpeg_gpu_open_shared) */
    jpeg_gpu_open_times times;
};

static const char *status_name(nvjpegStatus_t s)
{
    switch (s) {
    case NVJPEG_STATUS_SUCCESS: return "success";
    case NVJPEG_STATUS_NOT_INITIALIZED: return "not initialized";
    case NVJPEG_STATUS_INVALID_PARAMETER: return "invalid parameter";
    case NVJPEG_STATUS_BAD_JPEG: return "bad JPEG";
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED: return "JPEG not supported";
    case NVJPEG_STATUS_ALLOCATOR_FAILURE: return "allocation failed";
    case NVJPEG_STATUS_EXECUTION_FAILED: return "execution failed";
    case NVJPEG_STATUS_ARCH_MISMATCH: return "not supported on this GPU";
    case NVJPEG_STATUS_INTERNAL_ERROR: return "internal error";
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED: return "implementation not supported";
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM: return "incomplete bitstream";
    }
    return "unknown status";
}

/* Any nvJPEG failure: the caller falls back to libjpeg-turbo. */
static int nvj_fail(nvjpegStatus_t s, const char *what, char *err, size_t errlen)
{
    if (s == NVJPEG_STATUS_SUCCESS) return IP_OK;
    snprintf(err, errlen, "nvJPEG %s: %s (%d)", what, status_name(s), (int)s);
    return IP_EUNSUPPORTED;
}

static void *open_library(char *err, size_t errlen)
{
    const char *names[] = { getenv("IMGPIPE_NVJPEG_LIB"), "libnvjpeg.so.13", "libnvjpeg.so",
                            "/usr/local/cuda/lib64/libnvjpeg.so.13",
                            "/usr/local/cuda/targets/x86_64-linux/lib/libnvjpeg.so.13" };
    const char *first_error = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!names[i] || !*names[i]) continue;
        void *lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (lib) return lib;
        if (!first_error) first_error = dlerror();
    }
    snprintf(err, errlen, "nvJPEG library not found (%s)", first_error ? first_error : "libnvjpeg.so.13");
    return NULL;
}

static int resolve_functions(jpeg_gpu *g, char *err, size_t errlen)
{
#define RESOLVE_FN(name)                                                                  \
    {                                                                                     \
        void *sym = dlsym(g->lib, #name);                                                 \
        if (!sym) {                                                                       \
            snprintf(err, errlen, "the nvJPEG library lacks %s (too old?)", #name);      \
            return IP_EUNSUPPORTED;                                                       \
        }                                                                                 \
        memcpy(&g->api.name, &sym, sizeof sym);                                           \
    }
    NVJPEG_FUNCTIONS(RESOLVE_FN)
#undef RESOLVE_FN
    void *pre = dlsym(g->lib, "nvjpegDecodeBatchedPreAllocate");
    memcpy(&g->api.preallocate, &pre, sizeof pre);
    void *header = dlsym(g->lib, "nvjpegJpegStreamParseHeader");
    memcpy(&g->api.parse_header, &header, sizeof header);
    return IP_OK;
}

/* Strict: report damage rather than decode around it. Interpolated chroma upsampling: what
 * libjpeg-turbo does (its "fancy" upsampling), so both decoders agree more closely. A backend
 * that refuses a flag is tried without it; the hardware backend is refused on cards without the engine
 * and can be declined with IMGPIPE_NVJPEG_BACKEND=default. */
static int create_handle(jpeg_gpu *g, char *err, size_t errlen)
{
    const char *wanted = getenv("IMGPIPE_NVJPEG_BACKEND");
    int try_hardware = !(wanted && !strcmp(wanted, "default"));
    const nvjpegBackend_t backends[2] = { NVJPEG_BACKEND_HARDWARE, NVJPEG_BACKEND_DEFAULT };
    const unsigned flag_sets[3] = { NVJPEG_FLAGS_BITSTREAM_STRICT | NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION,
                                    NVJPEG_FLAGS_BITSTREAM_STRICT, NVJPEG_FLAGS_DEFAULT };
    nvjpegStatus_t last = NVJPEG_STATUS_NOT_INITIALIZED;
    for (int b = try_hardware ? 0 : 1; b < 2; b++)
        for (int f = 0; f < 3; f++) {
            last = g->api.nvjpegCreateEx(backends[b], NULL, NULL, flag_sets[f], &g->handle);
            g->times.handle_tries++;
            if (last != NVJPEG_STATUS_SUCCESS) continue;
            g->hardware = b == 0;
            snprintf(g->description, sizeof g->description, "nvJPEG %s backend, %s%s",
                     b == 0 ? "hardware" : "default", f < 2 ? "strict" : "lenient",
                     f == 0 ? ", interpolated chroma" : "");
            return IP_OK;
        }
    g->handle = NULL;
    return nvj_fail(last, "cannot create a decoder", err, errlen);
}

static int create_cuda_decoder(jpeg_gpu *g, char *err, size_t errlen)
{
    if (g->cuda.decoder) return IP_OK;
    const nvjpeg_api *a = &g->api;
    cuda_decoder *c = &g->cuda;
    nvjpegStatus_t s = a->nvjpegDecoderCreate(g->handle, NVJPEG_BACKEND_DEFAULT, &c->decoder);
    if (!s) s = a->nvjpegDecoderStateCreate(g->handle, c->decoder, &c->state);
    if (!s) s = a->nvjpegBufferPinnedCreate(g->handle, NULL, &c->pinned);
    if (!s) s = a->nvjpegBufferDeviceCreate(g->handle, NULL, &c->device);
    if (!s) s = a->nvjpegStateAttachPinnedBuffer(c->state, c->pinned);
    if (!s) s = a->nvjpegStateAttachDeviceBuffer(c->state, c->device);
    return nvj_fail(s, "cannot create the CUDA decoder", err, errlen);
}

static void destroy_cuda_decoder(jpeg_gpu *g)
{
    cuda_decoder *c = &g->cuda;
    if (c->state) g->api.nvjpegJpegStateDestroy(c->state);
    if (c->device) g->api.nvjpegBufferDeviceDestroy(c->device);
    if (c->pinned) g->api.nvjpegBufferPinnedDestroy(c->pinned);
    if (c->decoder) g->api.nvjpegDecoderDestroy(c->decoder);
    memset(c, 0, sizeof *c);
}

/* Not fatal: without an encoder, encodes report why and the CPU writer is used. */
static void create_encoder(jpeg_gpu *g)
{
    if (g->encoder_tried) return;
    g->encoder_tried = 1;
    double t0 = now_ms();
    nvjpegStatus_t s = g->api.nvjpegEncoderStateCreate(g->handle, &g->enc_state, g->stream);
    if (!s) s = g->api.nvjpegEncoderParamsCreate(g->handle, &g->enc_params, g->stream);
    g->times.encoder_ms = now_ms() - t0;
    if (!s) return;
    nvj_fail(s, "encoder unavailable", g->enc_why, sizeof g->enc_why);
    if (g->enc_state) g->api.nvjpegEncoderStateDestroy(g->enc_state);
    g->enc_state = NULL;
    g->enc_params = NULL;
}

/* The parser and decode parameters alone: what preparing a file needs, without the decoder state
 * (the costly part of opening, made once per handle by the shared decoder, not by every worker). */
static int create_parser(jpeg_gpu *g, char *err, size_t errlen)
{
    const nvjpeg_api *a = &g->api;
    nvjpegStatus_t s = NVJPEG_STATUS_SUCCESS;
    if (!g->parsed) s = a->nvjpegJpegStreamCreate(g->handle, &g->parsed);
    if (!s && !g->params) s = a->nvjpegDecodeParamsCreate(g->handle, &g->params);
    return nvj_fail(s, "cannot create the JPEG parser", err, errlen);
}

static int create_decoder_state(jpeg_gpu *g, char *err, size_t errlen)
{
    if (g->decoder_ready) return IP_OK;
    double t0 = now_ms();
    const nvjpeg_api *a = &g->api;
    nvjpegStatus_t s = g->batches[0].state ? NVJPEG_STATUS_SUCCESS
                                           : a->nvjpegJpegStateCreate(g->handle, &g->batches[0].state);
    int rc = nvj_fail(s, "cannot create the decoder state", err, errlen);
    if (!rc) rc = create_parser(g, err, errlen);
    /* Without the engine every file takes the CUDA decoder: pay for it with the state. */
    if (!rc && !g->hardware) rc = create_cuda_decoder(g, err, errlen);
    g->decoder_ready = rc == IP_OK;
    g->times.decoder_ms = now_ms() - t0;
    g->times.decoder_made = g->batches[0].state != NULL;
    return rc;
}

static int create_objects(jpeg_gpu *g, unsigned uses, char *err, size_t errlen)
{
    double t0 = now_ms();
    int rc = create_handle(g, err, errlen);
    g->times.handle_ms = now_ms() - t0;
    if (!rc && (uses & JPEG_GPU_DECODE)) rc = create_decoder_state(g, err, errlen);
    if (!rc && (uses & JPEG_GPU_ENCODE)) create_encoder(g);
    return rc;
}

int jpeg_gpu_open(jpeg_gpu **out, int device, void *stream, char *err, size_t errlen)
{
    return jpeg_gpu_open_for(out, device, stream, JPEG_GPU_DECODE | JPEG_GPU_ENCODE, err, errlen);
}

int jpeg_gpu_open_for(jpeg_gpu **out, int device, void *stream, unsigned uses, char *err, size_t errlen)
{
    *out = NULL;
    jpeg_gpu *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    g->device = device;
    g->stream = (cudaStream_t)stream;
    double t0 = now_ms();
    int rc = gpu_select(device, err, errlen);
    if (!rc) rc = (g->lib = open_library(err, errlen)) ? IP_OK : IP_EUNSUPPORTED;
    if (!rc) rc = resolve_functions(g, err, errlen);
    g->times.library_ms = now_ms() - t0;
    if (!rc) rc = create_objects(g, uses, err, errlen);
    if (rc) {
        jpeg_gpu_close(g);
        return rc;
    }
    *out = g;
    return IP_OK;
}

int jpeg_gpu_open_shared(jpeg_gpu **out, jpeg_gpu *parent, void *stream, unsigned uses, char *err, size_t errlen)
{
    *out = NULL;
    jpeg_gpu *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    g->lib = parent->lib;
    g->api = parent->api;
    g->device = parent->device;
    g->stream = (cudaStream_t)stream;
    g->hardware = parent->hardware;
    g->handle = parent->handle;
    g->borrowed = 1;
    snprintf(g->description, sizeof g->description, "%s", parent->description);
    int rc = gpu_select(g->device, err, errlen);
    if (!rc && (uses & JPEG_GPU_DECODE)) rc = create_decoder_state(g, err, errlen);
    if (!rc && (uses & JPEG_GPU_ENCODE)) create_encoder(g);
    if (rc) {
        jpeg_gpu_close(g);
        return rc;
    }
    *out = g;
    return IP_OK;
}

int jpeg_gpu_built(void) { return 1; }

void jpeg_gpu_close(jpeg_gpu *g)
{
    if (!g) return;
    if (g->handle) {
        const nvjpeg_api *a = &g->api;
        gpu_select(g->device, NULL, 0);
        if (g->enc_params) a->nvjpegEncoderParamsDestroy(g->enc_params);
        if (g->enc_state) a->nvjpegEncoderStateDestroy(g->enc_state);
        destroy_cuda_decoder(g);
        if (g->params) a->nvjpegDecodeParamsDestroy(g->params);
        if (g->parsed) a->nvjpegJpegStreamDestroy(g->parsed);
        for (int i = 0; i < BATCH_SLOTS; i++)
            if (g->batches[i].state) a->nvjpegJpegStateDestroy(g->batches[i].state);
        if (!g->borrowed) a->nvjpegDestroy(g->handle);
    }
    gpu_host_free(g->encoded);
    /* The library stays loaded: its CUDA runtime may still hold the context's resources. */
    free(g);
}

int jpeg_gpu_has_hardware(const jpeg_gpu *g) { return g && g->hardware; }

const char *jpeg_gpu_description(const jpeg_gpu *g) { return g ? g->description : "no nvJPEG"; }

long jpeg_gpu_hardware_decodes(const jpeg_gpu *g) { return g ? g->hardware_decodes : 0; }

jpeg_gpu_batch_times jpeg_gpu_batch_totals(const jpeg_gpu *g)
{
    jpeg_gpu_batch_times none = { 0 };
    return g ? g->batch_times : none;
}

jpeg_gpu_open_times jpeg_gpu_times(const jpeg_gpu *g)
{
    jpeg_gpu_open_times none = { 0 };
    return g ? g->times : none;
}

/* The decoded shape, when nvJPEG can decode the file the way libjpeg-turbo would. */
static int check_layout(const unsigned char *data, size_t len, const io_options *opt, ip_shape *shape, char *err,
                        size_t errlen)
{
    jpeg_layout L;
    char why[160];
    int rc = jpeg_layout_read(data, len, &L, why, sizeof why);
    if (!rc) rc = io_limit_jpeg_scans(opt, L.scans, why, sizeof why);
    if (rc) {
        snprintf(err, errlen, "not decoded on the GPU: %s", why);
        return IP_EUNSUPPORTED;
    }
    int sequential = L.coding == JL_BASELINE || L.coding == JL_EXTENDED || L.coding == JL_PROGRESSIVE;
    if (!sequential || L.precision != 8 || (L.colour != JL_GRAY && L.colour != JL_YCBCR)) {
        snprintf(err, errlen, "not decoded on the GPU: %d-bit, %d components, coding %d, colour %d",
                 L.precision, L.components, (int)L.coding, (int)L.colour);
        return IP_EUNSUPPORTED;
    }
    *shape = (ip_shape){ L.width, L.height, L.colour == JL_GRAY ? 1 : 3, IP_U8 };
    return IP_OK;
}

/* The file into g->parsed: its header alone when asked (and the library has that call). */
static nvjpegStatus_t parse(jpeg_gpu *g, const unsigned char *data, size_t len, int header_only)
{
    if (header_only && g->api.parse_header) return g->api.parse_header(g->handle, data, len, g->parsed);
    return g->api.nvjpegJpegStreamParse(g->handle, data, len, 0, 0, g->parsed);
}

/* Header checks, the caller's shape checks and memory; *hardware says which decoder takes it. */
static int prepare_item(jpeg_gpu *g, int index, const unsigned char *data, size_t len, const io_options *opt,
                        const jpeg_gpu_memory *mem, ip_image *out, decode_item *item, int *hardware,
                        int header_only, char *err, size_t errlen)
{
    ip_shape shape;
    int rc = check_layout(data, len, opt, &shape, err, errlen);
    if (rc) return rc;
    rc = io_shape_known(opt, &shape, len, err, errlen);
    if (rc) return rc;
    size_t bytes;
    rc = img_size_check(&shape, opt->max_pixels, &bytes, err, errlen);
    if (rc) return rc;
    rc = nvj_fail(parse(g, data, len, header_only), "parse", err, errlen);
    if (rc) return rc;
    int unsupported = 1;
    if (g->hardware &&
        g->api.nvjpegDecodeBatchedSupported(g->handle, g->parsed, &unsupported) != NVJPEG_STATUS_SUCCESS)
        unsupported = 1;
    *hardware = unsupported == 0;
    void *dev = NULL;
    rc = mem->alloc(mem->user, index, bytes, &dev, err, errlen);
    if (rc) return rc;
    size_t row = img_row_bytes(&shape);
    *out = (ip_image){ dev, (ptrdiff_t)row, shape, 1 };
    memset(item, 0, sizeof *item);
    item->data = data;
    item->len = len;
    item->format = shape.channels == 1 ? NVJPEG_OUTPUT_Y : NVJPEG_OUTPUT_RGBI;
    item->dest.channel[0] = dev;
    item->dest.pitch[0] = row;
    return IP_OK;
}

/* The CUDA decoder, on the file g->parsed holds. */
static int decode_with_cuda(jpeg_gpu *g, decode_item *item, char *err, size_t errlen)
{
    int rc = create_cuda_decoder(g, err, errlen);
    if (rc) return rc;
    const nvjpeg_api *a = &g->api;
    cuda_decoder *c = &g->cuda;
    nvjpegStatus_t s = a->nvjpegDecodeParamsSetOutputFormat(g->params, item->format);
    if (!s) s = a->nvjpegDecodeJpegHost(g->handle, c->decoder, c->state, g->params, g->parsed);
    if (!s) s = a->nvjpegDecodeJpegTransferToDevice(g->handle, c->decoder, c->state, g->parsed, g->stream);
    if (!s) s = a->nvjpegDecodeJpegDevice(g->handle, c->decoder, c->state, &item->dest, g->stream);
    rc = nvj_fail(s, "decode", err, errlen);
    if (!rc) rc = gpu_stream_sync(g->stream, err, errlen);
    return rc;
}

/* One hardware batch of the items of one output format. */
/* The state initialised for n images of format, or the least recently used one initialised for
 * them (made first when the slot is empty). */
static nvjpegStatus_t batch_slot_for(jpeg_gpu *g, int n, nvjpegOutputFormat_t format, batch_slot **out)
{
    const nvjpeg_api *a = &g->api;
    batch_slot *pick = NULL;
    for (int i = 0; i < BATCH_SLOTS && !pick; i++)
        if (g->batches[i].size == n && g->batches[i].format == format) pick = &g->batches[i];
    for (int i = 0; i < BATCH_SLOTS && !pick; i++)
        if (!g->batches[i].size) pick = &g->batches[i];
    if (!pick) {   /* every slot holds another size: the least recently used one is reinitialised */
        pick = &g->batches[0];
        for (int i = 1; i < BATCH_SLOTS; i++)
            if (g->batches[i].last_use < pick->last_use) pick = &g->batches[i];
    }
    nvjpegStatus_t s = NVJPEG_STATUS_SUCCESS;
    pick->last_use = ++g->batch_uses;
    *out = pick;
    if (pick->size == n && pick->format == format) return s;
    double t0 = now_ms();
    pick->size = 0;
    if (!pick->state) s = a->nvjpegJpegStateCreate(g->handle, &pick->state);
    /* as nvImageCodec and DALI do: the state then draws on a memory pool instead of allocating in
     * its batches (the size hints only set the pool's first size). The decoder's first state is
     * made with the handle, so this is asked on a state's first batch, not its making. */
    if (!s && !pick->pooled && a->preallocate) {
        a->preallocate(g->handle, pick->state, n, 1, 1, NVJPEG_CSS_444, format);
        pick->pooled = 1;
    }
    if (!s) s = a->nvjpegDecodeBatchedInitialize(g->handle, pick->state, n, 1, format);
    if (!s) {
        pick->size = n;
        pick->format = format;
    }
    g->batch_times.inits++;
    g->batch_times.init_ms += now_ms() - t0;
    return s;
}

void jpeg_gpu_batch_warm(jpeg_gpu *g, int n)
{
    batch_slot *slot;
    if (g && g->hardware && n > 0 && gpu_select(g->device, NULL, 0) == IP_OK)
        batch_slot_for(g, n, NVJPEG_OUTPUT_RGBI, &slot);
}

static int decode_with_hardware(jpeg_gpu *g, int n, const unsigned char **data, const size_t *len,
                                nvjpegImage_t *dest, nvjpegOutputFormat_t format, char *err, size_t errlen)
{
    const nvjpeg_api *a = &g->api;
    batch_slot *slot;
    /* the engine writes dest when called, ahead of work queued before it on the stream
     * (torchcodec#1634): only a wait on the host orders them */
    int rc = gpu_stream_sync(g->stream, err, errlen);
    if (rc) return rc;
    nvjpegStatus_t s = batch_slot_for(g, n, format, &slot);
    double t0 = now_ms();
    if (!s) s = a->nvjpegDecodeBatched(g->handle, slot->state, data, len, dest, g->stream);
    g->batch_times.submit_ms += now_ms() - t0;
    rc = nvj_fail(s, "hardware decode", err, errlen);
    if (!rc) rc = gpu_stream_sync(g->stream, err, errlen);
    if (rc) slot->size = 0;   /* a failed batch needs initialising again */
    g->batch_times.decodes++;
    g->batch_times.decode_ms += now_ms() - t0;
    return rc;
}

typedef struct {
    int n;
    const unsigned char **data;
    size_t *len;
    nvjpegImage_t *dest;
    int *index;
} hardware_batch;

static void batch_free(hardware_batch *b)
{
    free(b->data);
    free(b->len);
    free(b->dest);
    free(b->index);
    memset(b, 0, sizeof *b);   /* freeing again (after a failed batch_alloc) is harmless */
}

static int batch_alloc(hardware_batch *b, int n)
{
    memset(b, 0, sizeof *b);
    size_t count = n > 0 ? (size_t)n : 1;
    b->data = calloc(count, sizeof *b->data);
    b->len = calloc(count, sizeof *b->len);
    b->dest = calloc(count, sizeof *b->dest);
    b->index = calloc(count, sizeof *b->index);
    if (b->data && b->len && b->dest && b->index) return IP_OK;
    batch_free(b);
    return IP_ENOMEM;
}

/* A batch reports the first failure's reason (one file: its reason). */
static void keep_first_error(char *err, size_t errlen, const char *item_err)
{
    if (errlen && !err[0]) snprintf(err, errlen, "%s", item_err);
}

static void run_hardware_batch(jpeg_gpu *g, hardware_batch *b, nvjpegOutputFormat_t format, ip_image *out,
                               int *rcs, char *err, size_t errlen)
{
    if (b->n == 0) return;
    char why[256];
    if (decode_with_hardware(g, b->n, b->data, b->len, b->dest, format, why, sizeof why) == IP_OK) {
        g->hardware_decodes += b->n;
        return;
    }
    /* One bad file fails the whole batch: find it by decoding the files one by one, and give the
     * engine's failures a second chance on the CUDA decoder. */
    for (int k = 0; k < b->n; k++) {
        if (b->n > 1 && decode_with_hardware(g, 1, &b->data[k], &b->len[k], &b->dest[k], format, why, sizeof why) == IP_OK) {
            g->hardware_decodes++;
            continue;
        }
        decode_item item = { b->data[k], b->len[k], format, b->dest[k] };
        char cuda_why[256];
        nvjpegStatus_t s = g->api.nvjpegJpegStreamParse(g->handle, item.data, item.len, 0, 0, g->parsed);
        if (s == NVJPEG_STATUS_SUCCESS && decode_with_cuda(g, &item, cuda_why, sizeof cuda_why) == IP_OK) continue;
        keep_first_error(err, errlen, why);
        rcs[b->index[k]] = IP_EUNSUPPORTED;
        if (out) out[b->index[k]].data = NULL;
    }
}

static void batch_add(hardware_batch *b, const decode_item *item, int index)
{
    b->data[b->n] = item->data;
    b->len[b->n] = item->len;
    b->dest[b->n] = item->dest;
    b->index[b->n] = index;
    b->n++;
}

/* Each item's header, checks and memory first, then one hardware batch per output format. */
int jpeg_gpu_decode_items(jpeg_gpu *g, int n, jpeg_gpu_item *items, char *err, size_t errlen)
{
    io_options defaults;
    io_default_options(&defaults);
    if (errlen) err[0] = 0;
    int rc = gpu_select(g->device, err, errlen);
    if (!rc) rc = create_decoder_state(g, err, errlen);
    if (rc) {
        for (int i = 0; i < n; i++) {
            memset(&items[i].out, 0, sizeof items[i].out);
            items[i].rc = rc == IP_ECUDA ? IP_ECUDA : IP_EUNSUPPORTED;
        }
        return rc == IP_ECUDA ? rc : IP_OK;
    }
    hardware_batch rgb, gray;
    if (batch_alloc(&rgb, n) || batch_alloc(&gray, n)) {
        batch_free(&rgb);
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    ip_image *out = malloc((size_t)(n > 0 ? n : 1) * sizeof *out);
    int *rcs = malloc((size_t)(n > 0 ? n : 1) * sizeof *rcs);
    if (!out || !rcs) {
        free(out);
        free(rcs);
        batch_free(&rgb);
        batch_free(&gray);
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    char item_err[256];
    for (int i = 0; i < n && !rc; i++) {
        decode_item item;
        int hardware = 0;
        memset(&out[i], 0, sizeof out[i]);
        const io_options *opt = items[i].opt ? items[i].opt : &defaults;
        rcs[i] = prepare_item(g, i, items[i].data, items[i].len, opt, items[i].mem, &out[i], &item, &hardware, 0,
                              item_err, sizeof item_err);
        if (rcs[i] == IP_OK && hardware) batch_add(item.format == NVJPEG_OUTPUT_Y ? &gray : &rgb, &item, i);
        else if (rcs[i] == IP_OK) rcs[i] = decode_with_cuda(g, &item, item_err, sizeof item_err);
        if (rcs[i] == IP_OK) continue;
        out[i].data = NULL;
        snprintf(items[i].err, sizeof items[i].err, "%s", item_err);
        keep_first_error(err, errlen, item_err);
        if (rcs[i] == IP_ECUDA) rc = IP_ECUDA;   /* the context is broken: nothing more runs on this GPU */
    }
    for (int i = 0; rc && i < n; i++)
        if (rcs[i] == IP_OK) rcs[i] = IP_ECUDA;
    item_err[0] = 0;
    if (!rc) {
        run_hardware_batch(g, &rgb, NVJPEG_OUTPUT_RGBI, out, rcs, item_err, sizeof item_err);
        run_hardware_batch(g, &gray, NVJPEG_OUTPUT_Y, out, rcs, item_err, sizeof item_err);
    }
    for (int i = 0; i < n; i++) {
        items[i].out = out[i];
        items[i].rc = rcs[i];
        if (rcs[i] != IP_OK && !items[i].err[0]) snprintf(items[i].err, sizeof items[i].err, "%s", item_err);
    }
    free(out);
    free(rcs);
    batch_free(&rgb);
    batch_free(&gray);
    return rc;
}

static int prepare_file(jpeg_gpu *g, const unsigned char *data, size_t len, const io_options *opt,
                        const jpeg_gpu_memory *mem, ip_image *out, jpeg_gpu_ready *ready, int header_only,
                        char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    memset(ready, 0, sizeof *ready);
    io_options defaults;
    io_default_options(&defaults);
    int rc = gpu_select(g->device, err, errlen);
    if (!rc) rc = create_parser(g, err, errlen);
    if (rc) return rc == IP_ECUDA ? rc : IP_EUNSUPPORTED;
    decode_item item;
    int hardware = 0;
    rc = prepare_item(g, 0, data, len, opt ? opt : &defaults, mem, out, &item, &hardware, header_only, err, errlen);
    if (rc) {
        out->data = NULL;
        return rc;
    }
    *ready = (jpeg_gpu_ready){ data, len, (int)item.format, item.dest.channel[0], item.dest.pitch[0], hardware };
    return IP_OK;
}

int jpeg_gpu_prepare(jpeg_gpu *g, const unsigned char *data, size_t len, const io_options *opt,
                     const jpeg_gpu_memory *mem, ip_image *out, jpeg_gpu_ready *ready, char *err, size_t errlen)
{
    return prepare_file(g, data, len, opt, mem, out, ready, 0, err, errlen);
}

int jpeg_gpu_prepare_header(jpeg_gpu *g, const unsigned char *data, size_t len, const io_options *opt,
                            const jpeg_gpu_memory *mem, ip_image *out, jpeg_gpu_ready *ready, char *err,
                            size_t errlen)
{
    return prepare_file(g, data, len, opt, mem, out, ready, 1, err, errlen);
}

static decode_item ready_item(const jpeg_gpu_ready *r)
{
    decode_item item;
    memset(&item, 0, sizeof item);
    item.data = r->data;
    item.len = r->len;
    item.format = (nvjpegOutputFormat_t)r->format;
    item.dest.channel[0] = r->dest;
    item.dest.pitch[0] = r->pitch;
    return item;
}

int jpeg_gpu_decode_ready_cuda(jpeg_gpu *g, const jpeg_gpu_ready *ready, char *err, size_t errlen)
{
    decode_item item = ready_item(ready);
    int rc = gpu_select(g->device, err, errlen);
    return rc ? rc : decode_with_cuda(g, &item, err, errlen);
}

int jpeg_gpu_decode_ready(jpeg_gpu *g, int n, const jpeg_gpu_ready *ready, int *rcs, char *err, size_t errlen)
{
    if (errlen) err[0] = 0;
    int rc = gpu_select(g->device, err, errlen);
    if (!rc) rc = create_decoder_state(g, err, errlen);
    hardware_batch rgb, gray;
    if (!rc && (batch_alloc(&rgb, n) || batch_alloc(&gray, n))) {
        batch_free(&rgb);
        snprintf(err, errlen, "out of memory");
        rc = IP_ENOMEM;
    }
    for (int i = 0; i < n; i++) rcs[i] = rc == IP_ECUDA ? IP_ECUDA : rc ? IP_EUNSUPPORTED : IP_OK;
    if (rc) return rc == IP_ECUDA ? rc : IP_OK;
    for (int i = 0; i < n; i++) {
        decode_item item = ready_item(&ready[i]);
        if (ready[i].hardware) batch_add(item.format == NVJPEG_OUTPUT_Y ? &gray : &rgb, &item, i);
        else rcs[i] = IP_EUNSUPPORTED;   /* not the engine's: the caller's CPU reader takes it */
    }
    run_hardware_batch(g, &rgb, NVJPEG_OUTPUT_RGBI, NULL, rcs, err, errlen);
    run_hardware_batch(g, &gray, NVJPEG_OUTPUT_Y, NULL, rcs, err, errlen);
    batch_free(&rgb);
    batch_free(&gray);
    return IP_OK;
}

int jpeg_gpu_decode_batch(jpeg_gpu *g, int n, const unsigned char *const *data, const size_t *len,
                          const io_options *opt, const jpeg_gpu_memory *mem, ip_image *out, int *rcs,
                          char *err, size_t errlen)
{
    jpeg_gpu_item *items = calloc((size_t)(n > 0 ? n : 1), sizeof *items);
    if (!items) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    for (int i = 0; i < n; i++) items[i] = (jpeg_gpu_item){ .data = data[i], .len = len[i], .opt = opt, .mem = mem };
    int rc = jpeg_gpu_decode_items(g, n, items, err, errlen);
    for (int i = 0; i < n; i++) {
        out[i] = items[i].out;
        rcs[i] = items[i].rc;
    }
    free(items);
    return rc;
}

int jpeg_gpu_decode(jpeg_gpu *g, const unsigned char *data, size_t len, const io_options *opt,
                    const jpeg_gpu_memory *mem, ip_image *out, char *err, size_t errlen)
{
    int status = IP_OK;
    int rc = jpeg_gpu_decode_batch(g, 1, &data, &len, opt, mem, out, &status, err, errlen);
    return rc ? rc : status;
}

static int check_encodable(const jpeg_gpu *g, const ip_image *img, int quality, char *err, size_t errlen)
{
    const ip_shape *s = &img->shape;
    if (!g->enc_state) {
        snprintf(err, errlen, "%s", g->enc_why);
        return IP_EUNSUPPORTED;
    }
    if (!img->on_device || !img->data || s->dtype != IP_U8 || (s->channels != 1 && s->channels != 3)) {
        snprintf(err, errlen, "GPU JPEG encoding takes a device image of 8-bit gray or RGB");
        return IP_EINVAL;
    }
    if (s->width < 1 || s->height < 1 || s->width > 65500 || s->height > 65500) {
        snprintf(err, errlen, "JPEG holds 1 to 65500 pixels a side (this image is %dx%d)", s->width, s->height);
        return IP_EINVAL;
    }
    if (img->stride < 0 || (size_t)img->stride < img_row_bytes(s)) {
        snprintf(err, errlen, "image row stride %td is shorter than a row", img->stride);
        return IP_EINVAL;
    }
    if (quality < 1 || quality > 100) {
        snprintf(err, errlen, "JPEG quality %d is out of range 1..100", quality);
        return IP_EINVAL;
    }
    return IP_OK;
}

static int set_encoding(jpeg_gpu *g, int channels, int quality, char *err, size_t errlen)
{
    const nvjpeg_api *a = &g->api;
    nvjpegChromaSubsampling_t css = channels == 1 ? NVJPEG_CSS_GRAY : quality >= 90 ? NVJPEG_CSS_444 : NVJPEG_CSS_420;
    nvjpegStatus_t s = a->nvjpegEncoderParamsSetQuality(g->enc_params, quality, g->stream);
    if (!s) s = a->nvjpegEncoderParamsSetEncoding(g->enc_params, NVJPEG_ENCODING_BASELINE_DCT, g->stream);
    if (!s) s = a->nvjpegEncoderParamsSetOptimizedHuffman(g->enc_params, 0, g->stream);
    if (!s) s = a->nvjpegEncoderParamsSetSamplingFactors(g->enc_params, css, g->stream);
    return nvj_fail(s, "encoder settings", err, errlen);
}

/* The encoder's pinned buffer holds n bytes; 0 when it cannot (past JPEG_GPU_PINNED_MAX, or
 * pinned memory short): those bytes come into pageable memory instead. */
static int reserve_encoded(jpeg_gpu *g, size_t n)
{
    if (n <= g->encoded_cap) return 1;
    if (n > JPEG_GPU_PINNED_MAX) return 0;
    size_t cap = n + n / 2 < JPEG_GPU_PINNED_MAX ? n + n / 2 : JPEG_GPU_PINNED_MAX;
    void *buf = NULL;
    if (gpu_host_alloc(&buf, cap, 0, NULL, 0) != IP_OK) return 0;   /* it clears CUDA's error */
    gpu_host_free(g->encoded);
    g->encoded = buf;
    g->encoded_cap = cap;
    return 1;
}

/* A host wait first: nvJPEG's copies into pageable memory while the encode still ran spun in the
 * driver, holding a lock every other thread's copies need; the bytes then come through pinned
 * memory where they fit. */
static int retrieve_bitstream(jpeg_gpu *g, unsigned char **bytes, size_t *len, char *err, size_t errlen)
{
    size_t n = 0;
    int rc = gpu_stream_sync(g->stream, err, errlen);
    if (!rc) rc = nvj_fail(g->api.nvjpegEncodeRetrieveBitstream(g->handle, g->enc_state, NULL, &n, g->stream),
                           "encoded size", err, errlen);
    if (rc) return rc;
    size_t room = n ? n : 1;
    unsigned char *buf = malloc(room);
    if (!buf) {
        snprintf(err, errlen, "out of memory for a %zu-byte JPEG", n);
        return IP_ENOMEM;
    }
    int pinned = reserve_encoded(g, room);
    rc = nvj_fail(g->api.nvjpegEncodeRetrieveBitstream(g->handle, g->enc_state, pinned ? g->encoded : buf, &n,
                                                       g->stream),
                  "encoded bytes", err, errlen);
    if (!rc) rc = gpu_stream_sync(g->stream, err, errlen);
    if (rc) {
        free(buf);
        return rc;
    }
    if (pinned) memcpy(buf, g->encoded, n);
    *bytes = buf;
    *len = n;
    return IP_OK;
}

int jpeg_gpu_encode(jpeg_gpu *g, const ip_image *dev_in, int quality, unsigned char **bytes, size_t *len,
                    char *err, size_t errlen)
{
    *bytes = NULL;
    *len = 0;
    int rc = gpu_select(g->device, err, errlen);
    if (!rc) create_encoder(g);
    if (!rc) rc = check_encodable(g, dev_in, quality, err, errlen);
    const ip_shape *s = &dev_in->shape;
    if (!rc) rc = set_encoding(g, s->channels, quality, err, errlen);
    if (rc) return rc;
    nvjpegImage_t src;
    memset(&src, 0, sizeof src);
    src.channel[0] = dev_in->data;
    src.pitch[0] = (size_t)dev_in->stride;
    nvjpegStatus_t st = s->channels == 3
        ? g->api.nvjpegEncodeImage(g->handle, g->enc_state, g->enc_params, &src, NVJPEG_INPUT_RGBI, s->width,
                                   s->height, g->stream)
        : g->api.nvjpegEncodeYUV(g->handle, g->enc_state, g->enc_params, &src, NVJPEG_CSS_GRAY, s->width,
                                 s->height, g->stream);
    rc = nvj_fail(st, "encode", err, errlen);
    if (!rc) rc = retrieve_bitstream(g, bytes, len, err, errlen);
    return rc;
}

#else

static int no_nvjpeg(char *err, size_t errlen)
{
    snprintf(err, errlen, "imgpipe was built without %s", gpu_built() ? "nvjpeg.h (nvJPEG)" : "CUDA");
    return IP_EUNSUPPORTED;
}

int jpeg_gpu_open(jpeg_gpu **g, int device, void *stream, char *err, size_t errlen)
{
    (void)device;
    (void)stream;
    *g = NULL;
    return no_nvjpeg(err, errlen);
}

int jpeg_gpu_open_for(jpeg_gpu **g, int device, void *stream, unsigned uses, char *err, size_t errlen)
{
    (void)uses;
    return jpeg_gpu_open(g, device, stream, err, errlen);
}

void jpeg_gpu_batch_warm(jpeg_gpu *g, int n)
{
    (void)g;
    (void)n;
}

int jpeg_gpu_open_shared(jpeg_gpu **g, jpeg_gpu *parent, void *stream, unsigned uses, char *err, size_t errlen)
{
    (void)parent;
    (void)stream;
    (void)uses;
    *g = NULL;
    return no_nvjpeg(err, errlen);
}

int jpeg_gpu_decode_items(jpeg_gpu *g, int n, jpeg_gpu_item *items, char *err, size_t errlen)
{
    (void)g;
    for (int i = 0; i < n; i++) {
        memset(&items[i].out, 0, sizeof items[i].out);
        items[i].rc = IP_EUNSUPPORTED;
    }
    return no_nvjpeg(err, errlen);
}

jpeg_gpu_open_times jpeg_gpu_times(const jpeg_gpu *g)
{
    (void)g;
    jpeg_gpu_open_times none = { 0 };
    return none;
}

int jpeg_gpu_built(void) { return 0; }
void jpeg_gpu_close(jpeg_gpu *g) { (void)g; }
int jpeg_gpu_has_hardware(const jpeg_gpu *g) { (void)g; return 0; }
const char *jpeg_gpu_description(const jpeg_gpu *g) { (void)g; return "no nvJPEG"; }
long jpeg_gpu_hardware_decodes(const jpeg_gpu *g) { (void)g; return 0; }
jpeg_gpu_batch_times jpeg_gpu_batch_totals(const jpeg_gpu *g)
{
    (void)g;
    jpeg_gpu_batch_times none = { 0 };
    return none;
}

int jpeg_gpu_decode(jpeg_gpu *g, const unsigned char *data, size_t len, const io_options *opt,
                    const jpeg_gpu_memory *mem, ip_image *out, char *err, size_t errlen)
{
    (void)g; (void)data; (void)len; (void)opt; (void)mem;
    memset(out, 0, sizeof *out);
    return no_nvjpeg(err, errlen);
}

int jpeg_gpu_decode_batch(jpeg_gpu *g, int n, const unsigned char *const *data, const size_t *len,
                          const io_options *opt, const jpeg_gpu_memory *mem, ip_image *out, int *rcs,
                          char *err, size_t errlen)
{
    (void)g; (void)data; (void)len; (void)opt; (void)mem;
    for (int i = 0; i < n; i++) {
        memset(&out[i], 0, sizeof out[i]);
        rcs[i] = IP_EUNSUPPORTED;
    }
    return no_nvjpeg(err, errlen);
}

int jpeg_gpu_prepare(jpeg_gpu *g, const unsigned char *data, size_t len, const io_options *opt,
                     const jpeg_gpu_memory *mem, ip_image *out, jpeg_gpu_ready *ready, char *err, size_t errlen)
{
    (void)g; (void)data; (void)len; (void)opt; (void)mem;
    memset(out, 0, sizeof *out);
    memset(ready, 0, sizeof *ready);
    return no_nvjpeg(err, errlen);
}

int jpeg_gpu_prepare_header(jpeg_gpu *g, const unsigned char *data, size_t len, const io_options *opt,
                            const jpeg_gpu_memory *mem, ip_image *out, jpeg_gpu_ready *ready, char *err,
                            size_t errlen)
{
    return jpeg_gpu_prepare(g, data, len, opt, mem, out, ready, err, errlen);
}

int jpeg_gpu_decode_ready(jpeg_gpu *g, int n, const jpeg_gpu_ready *ready, int *rcs, char *err, size_t errlen)
{
    (void)g; (void)ready;
    for (int i = 0; i < n; i++) rcs[i] = IP_EUNSUPPORTED;
    no_nvjpeg(err, errlen);
    return IP_OK;
}

int jpeg_gpu_decode_ready_cuda(jpeg_gpu *g, const jpeg_gpu_ready *ready, char *err, size_t errlen)
{
    (void)g; (void)ready;
    return no_nvjpeg(err, errlen);
}

int jpeg_gpu_encode(jpeg_gpu *g, const ip_image *dev_in, int quality, unsigned char **bytes, size_t *len,
                    char *err, size_t errlen)
{
    (void)g; (void)dev_in; (void)quality;
    *bytes = NULL;
    *len = 0;
    return no_nvjpeg(err, errlen);
}
#endif
