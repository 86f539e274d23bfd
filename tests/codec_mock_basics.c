/* What the mock GPU codec tests share (test_tiff_gpu_read_mock, _strips_mock, _bands_mock,
 * _write_mock): copies and streams that are done at once, an nvCOMP whose handles are placeholders,
 * zlib's inflate and deflate (codec_mock.h) with deflate's bound, and the adler32, predictor and
 * deflate walk kernels as host loops. Each test brings its own nvcomp_max_chunk and its nvCOMP calls. */
#include <stdlib.h>
#include <string.h>
#include "imgpipe/plugin.h"

#ifdef IMGPIPE_HAVE_CUDA
#include <zlib.h>
#include "gpu/gpu.h"
#include "gpu/nvcomp.h"
#include "codec_mock.h"
#include "io/deflate_walk.h"
#include "ipk_codec.h"

static int mock_lib, mock_batch;

int gpu_stream_create(void **stream, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    *stream = malloc(1);
    return *stream ? IP_OK : IP_ENOMEM;
}
int gpu_stream_create_urgent(void **stream, char *err, size_t errlen) { return gpu_stream_create(stream, err, errlen); }
void gpu_stream_destroy(void *stream) { free(stream); }

int gpu_stream_sync(void *stream, char *err, size_t errlen)
{
    (void)stream, (void)err, (void)errlen;
    return IP_OK;
}

int gpu_copy2d(void *dst, size_t dst_pitch, const void *src, size_t src_pitch, size_t row_bytes, size_t rows,
               gpu_copy_kind kind, void *stream, char *err, size_t errlen)
{
    (void)kind, (void)stream, (void)err, (void)errlen;
    for (size_t y = 0; y < rows; y++) memcpy((char *)dst + y * dst_pitch, (const char *)src + y * src_pitch, row_bytes);
    return IP_OK;
}

int nvcomp_open(nvcomp_lib **lib, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    *lib = (nvcomp_lib *)&mock_lib;
    return IP_OK;
}
void nvcomp_close(nvcomp_lib *lib) { (void)lib; }
int nvcomp_batch_create(nvcomp_batch **b, const nvcomp_lib *lib, int device, void *stream, char *err, size_t errlen)
{
    (void)lib, (void)device, (void)stream, (void)err, (void)errlen;
    *b = (nvcomp_batch *)&mock_batch;
    return IP_OK;
}
void nvcomp_batch_destroy(nvcomp_batch *b) { (void)b; }

/* zlib's stream over the chunk: its source in, its buffer out. */
static void aim(z_stream *z, const nvcomp_chunk *c)
{
    z->next_in = (Bytef *)c->src;
    z->avail_in = (uInt)c->src_bytes;
    z->next_out = c->dst;
    z->avail_out = (uInt)c->dst_capacity;
}

int codec_mock_inflate(nvcomp_chunk *c)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, -15) != Z_OK) return Z_MEM_ERROR;
    aim(&z, c);
    int rc = inflate(&z, Z_FINISH);
    c->dst_bytes = c->dst_capacity - z.avail_out;
    inflateEnd(&z);
    return rc;
}

int codec_mock_deflate(nvcomp_chunk *c)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) return -1;
    aim(&z, c);
    int rc = deflate(&z, Z_FINISH);
    c->dst_bytes = c->dst_capacity - z.avail_out;
    deflateEnd(&z);
    return rc == Z_STREAM_END ? 0 : -1;
}

int nvcomp_max_compressed_bytes(const nvcomp_lib *lib, nvcomp_codec codec, int algorithm, size_t chunk_bytes,
                                size_t *bytes, char *err, size_t errlen)
{
    (void)lib, (void)codec, (void)algorithm, (void)err, (void)errlen;
    *bytes = compressBound((uLong)chunk_bytes);
    return IP_OK;
}

/* TIFF's horizontal differencing, sample by sample in native order, as the kernel's header says. */
int ipk_tiff_predictor_apply(const void *src, size_t src_pitch, void *dst, size_t dst_pitch, int width, int height,
                             int channels, int sample_bytes, void *stream)
{
    (void)stream;
    for (int y = 0; y < height; y++) {
        const uint8_t *in = (const uint8_t *)src + (size_t)y * src_pitch;
        uint8_t *out = (uint8_t *)dst + (size_t)y * dst_pitch;
        for (size_t i = 0; i < (size_t)width * channels; i++) {
            size_t left = i - (size_t)channels;
            if (sample_bytes == 1) {
                out[i] = (uint8_t)(in[i] - (i >= (size_t)channels ? in[left] : 0));
                continue;
            }
            uint16_t v, l = 0;
            memcpy(&v, in + 2 * i, 2);
            if (i >= (size_t)channels) memcpy(&l, in + 2 * left, 2);
            v = (uint16_t)(v - l);
            memcpy(out + 2 * i, &v, 2);
        }
    }
    return 0;
}

int ipk_adler32_spans(const uint8_t *data, size_t total, size_t span, uint32_t *out, void *stream)
{
    (void)stream;
    for (size_t i = 0; i * span < total; i++)
        out[i] = (uint32_t)adler32(1, data + i * span, (uInt)(total - i * span < span ? total - i * span : span));
    return 0;
}

/* The host's walk in the kernel's place: all ones where no stream is found. */
int ipk_deflate_walk(const uint8_t *data, size_t slot, const unsigned long long *len, size_t n,
                     unsigned long long *walks, void *stream)
{
    (void)stream;
    for (size_t k = 0; k < n; k++) {
        deflate_walk_result w;
        int bad = deflate_walk_prefix(data + k * slot, (size_t)len[k], &w) != 0;
        walks[2 * k] = bad ? ~0ULL : w.final_start;
        walks[2 * k + 1] = bad ? ~0ULL : w.end;
    }
    return 0;
}
#endif
