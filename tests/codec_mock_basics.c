/* What the mock GPU codec tests share (test_tiff_gpu_read_mock, test_tiff_gpu_strips_mock): copies
 * and streams that are done at once, an nvCOMP whose handles are placeholders, and the adler32
 * kernel as zlib's loop. Each test brings its own nvcomp_max_chunk and (de)compression. */
#include <string.h>
#include "imgpipe/plugin.h"

#ifdef IMGPIPE_HAVE_CUDA
#include <zlib.h>
#include "gpu/gpu.h"
#include "gpu/nvcomp.h"
#include "ipk_codec.h"

static int mock_lib, mock_batch;

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

int ipk_adler32_spans(const uint8_t *data, size_t total, size_t span, uint32_t *out, void *stream)
{
    (void)stream;
    for (size_t i = 0; i * span < total; i++)
        out[i] = (uint32_t)adler32(1, data + i * span, (uInt)(total - i * span < span ? total - i * span : span));
    return 0;
}
#endif
