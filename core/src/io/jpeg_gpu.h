/* JPEG decode and encode on the GPU with nvJPEG, loaded at run time (dlopen of libnvjpeg.so.13), so
 * the program runs where it is missing. Decoding uses the card's hardware JPEG engine where it has
 * one (A100, H100) and the file suits it (baseline, one scan), else nvJPEG's CUDA decoder.
 *
 * Files nvJPEG cannot take, and any error inside nvJPEG, give IP_EUNSUPPORTED: the caller then
 * reads the file with libjpeg-turbo (io_read), which decodes it or gives the proper error message.
 * Damage that shows in the file's structure (truncation, stray or missing restart markers) is found
 * before decoding (jpeg_layout.h); bit damage inside the entropy-coded data may decode to wrong
 * pixels without an error where libjpeg-turbo would report a bad Huffman code.
 *
 * One jpeg_gpu object serves one thread at a time; it may be opened on another thread than the
 * one that uses it (each call selects the device). Built without CUDA or without nvjpeg.h, every
 * function gives IP_EUNSUPPORTED. */
#ifndef IMGPIPE_JPEG_GPU_H
#define IMGPIPE_JPEG_GPU_H
#include <stddef.h>
#include "io/io.h"

typedef struct jpeg_gpu jpeg_gpu;

/* Whether this build has the nvJPEG layer (nvjpeg.h was found); the library itself may still be
 * missing at run time. */
int jpeg_gpu_built(void);

/* Device memory for one decoded image (index: its place in a batch, 0 for jpeg_gpu_decode), asked
 * for once its size is known; the memory stays the caller's, whatever the outcome. */
typedef struct {
    int (*alloc)(void *user, int index, size_t bytes, void **dev, char *err, size_t errlen);
    void *user;
} jpeg_gpu_memory;

/* A ready-made provider: user points at an array of jpeg_gpu_buffer (one per batch index), each
 * grown with gpu_malloc when too small and kept for the next image. */
typedef struct {
    void *dev;
    size_t bytes;
} jpeg_gpu_buffer;
int jpeg_gpu_buffer_alloc(void *user, int index, size_t bytes, void **dev, char *err, size_t errlen);
void jpeg_gpu_buffer_free(jpeg_gpu_buffer *buf);

/* Loads nvJPEG and makes its handle (hardware backend when the card has one: about 180 ms, else
 * the default backend: about 580 ms; IMGPIPE_NVJPEG_BACKEND=default declines the engine, and
 * IMGPIPE_NVJPEG_LIB names the library file). stream: a cudaStream_t all work goes to (NULL: the default
 * stream). IP_EUNSUPPORTED with the reason when there is no library or no usable backend. */
int jpeg_gpu_open(jpeg_gpu **g, int device, void *stream, char *err, size_t errlen);
/* The same, making at open only what uses names (the rest is made on first use): a run that only
 * decodes does not pay for the encoder. jpeg_gpu_open makes both. */
enum { JPEG_GPU_DECODE = 1, JPEG_GPU_ENCODE = 2 };
int jpeg_gpu_open_for(jpeg_gpu **g, int device, void *stream, unsigned uses, char *err, size_t errlen);
/* Where opening went, for --profile: loading the library, creating the handle (handle_tries
 * backends and flag sets tried), the decoder's state and the encoder (0 when not made yet);
 * decoder_made: the decoder's state has been made. */
typedef struct {
    double library_ms, handle_ms, decoder_ms, encoder_ms;
    int handle_tries, decoder_made;
} jpeg_gpu_open_times;
jpeg_gpu_open_times jpeg_gpu_times(const jpeg_gpu *g);
/* Another object on parent's handle (nvJPEG handles serve several threads; states do not), with
 * its own states on its own stream: a folder's workers each encode on their stream without paying
 * for a handle each. Close it before parent. */
int jpeg_gpu_open_shared(jpeg_gpu **g, jpeg_gpu *parent, void *stream, unsigned uses, char *err, size_t errlen);
void jpeg_gpu_close(jpeg_gpu *g);
/* Whether decodes may use the hardware engine. */
int jpeg_gpu_has_hardware(const jpeg_gpu *g);
/* The backend and flags in use, for logs ("nvJPEG hardware backend, strict, ..."). */
const char *jpeg_gpu_description(const jpeg_gpu *g);
/* Images decoded by the hardware engine so far (the rest took the CUDA decoder). */
long jpeg_gpu_hardware_decodes(const jpeg_gpu *g);
/* The hardware batches so far: states initialised for a batch size (and the time that took), and
 * batches decoded (with their time, waiting for the stream included; submit_ms: of that, the time
 * nvJPEG took before the wait, its work on the host). */
typedef struct {
    long inits, decodes;
    double init_ms, decode_ms, submit_ms;
} jpeg_gpu_batch_times;
jpeg_gpu_batch_times jpeg_gpu_batch_totals(const jpeg_gpu *g);

/* Decodes a whole JPEG file held in memory into device memory from mem: packed rows (stride =
 * width * channels), RGB (3 channels) or gray (1), u8, out->on_device = 1; done when it returns.
 * The shape goes through io_shape_known(opt) first (pixel and ratio limits, on_shape) and its error
 * is returned as is. IP_EUNSUPPORTED: read the file with libjpeg-turbo instead (also for a file over
 * --max-jpeg-scans, which libjpeg-turbo then refuses with the limit's message). */
int jpeg_gpu_decode(jpeg_gpu *g, const unsigned char *data, size_t len, const io_options *opt,
                    const jpeg_gpu_memory *mem, ip_image *out, char *err, size_t errlen);

/* Decodes n files at once (one hardware batch for those the engine takes, the others one by one).
 * rcs[i] is each file's status as jpeg_gpu_decode would give it (the files whose status is not
 * IP_OK are left to the CPU reader, which gives their messages); returns IP_OK, or an error that
 * stopped the whole batch (with err). */
/* One file of a jpeg_gpu_decode_items call, each with its own options (shape callback, limits) and
 * memory (alloc is called with the item's index); out, rc and err are filled in. */
typedef struct {
    const unsigned char *data;
    size_t len;
    const io_options *opt;          /* NULL: defaults */
    const jpeg_gpu_memory *mem;
    ip_image out;
    int rc;
    char err[256];
} jpeg_gpu_item;
int jpeg_gpu_decode_items(jpeg_gpu *g, int n, jpeg_gpu_item *items, char *err, size_t errlen);

/* A file checked, planned (opt->on_shape) and given its device memory (mem, index 0) on the calling
 * thread with g's own parser, so that a decoder shared by several threads only runs the engine:
 * hardware says whether the hardware engine takes it. IP_EUNSUPPORTED and errors as for
 * jpeg_gpu_decode; on IP_OK *out is the image the decode will fill. */
typedef struct {
    const unsigned char *data;
    size_t len;
    int format;                     /* nvJPEG's output format */
    void *dest;
    size_t pitch;
    int hardware;
} jpeg_gpu_ready;
int jpeg_gpu_prepare(jpeg_gpu *g, const unsigned char *data, size_t len, const io_options *opt,
                     const jpeg_gpu_memory *mem, ip_image *out, jpeg_gpu_ready *ready, char *err, size_t errlen);
/* jpeg_gpu_prepare for a file only the engine will decode: nvJPEG parses its header alone (the
 * whole parse took about 5 ms a 12-MP file, on the cores the engine's batches need), so a file the
 * engine does not take cannot go on to jpeg_gpu_decode_ready_cuda. A damaged file fails its batch
 * and is then decoded alone, as jpeg_gpu_decode_ready says. */
int jpeg_gpu_prepare_header(jpeg_gpu *g, const unsigned char *data, size_t len, const io_options *opt,
                            const jpeg_gpu_memory *mem, ip_image *out, jpeg_gpu_ready *ready, char *err,
                            size_t errlen);
/* Initialises the hardware batch state for n RGB images ahead of the first batch of that size
 * (2-70 ms on the H200, 0.4 s each beside 16 starting workers), so a decoder thread can pay for
 * it while it would otherwise wait. */
void jpeg_gpu_batch_warm(jpeg_gpu *g, int n);
/* Decodes n prepared files on the hardware engine (any object on the handle they were prepared
 * with), one batch per output format; rcs[i] per file (IP_EUNSUPPORTED: the CPU reader takes it).
 * Returns IP_OK, or IP_ECUDA when the GPU broke (every rcs[i] then says so). */
int jpeg_gpu_decode_ready(jpeg_gpu *g, int n, const jpeg_gpu_ready *ready, int *rcs, char *err, size_t errlen);
/* Decodes a prepared file the engine does not take on g's CUDA decoder, on g's stream; right after
 * jpeg_gpu_prepare on the same g (its parser still holds the file). */
int jpeg_gpu_decode_ready_cuda(jpeg_gpu *g, const jpeg_gpu_ready *ready, char *err, size_t errlen);

int jpeg_gpu_decode_batch(jpeg_gpu *g, int n, const unsigned char *const *data, const size_t *len,
                          const io_options *opt, const jpeg_gpu_memory *mem, ip_image *out, int *rcs,
                          char *err, size_t errlen);

/* Encoded bytes up to this size come back through pinned memory the encoder keeps; larger ones
 * straight into *bytes, so a folder's workers never hold more than this pinned each. */
#define JPEG_GPU_PINNED_MAX ((size_t)32 << 20)

/* Encodes a device image (u8, 1 or 3 channels, any stride) as the CPU writer does: baseline,
 * quality 1..100, 4:4:4 chroma at quality >= 90, 4:2:0 below, one gray component for 1 channel.
 * *bytes is malloc'd (free it); write it with io_write_bytes. */
int jpeg_gpu_encode(jpeg_gpu *g, const ip_image *dev_in, int quality, unsigned char **bytes, size_t *len,
                    char *err, size_t errlen);
#endif
