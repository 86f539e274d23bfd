/* Kernels of the GPU codecs (the core's io/ room calls them, not the plugins): checksums,
 * TIFF's horizontal predictor and PNG's row filters on device memory. Like ipk.h: device
 * pointers, a cudaStream_t passed as void *, work enqueued and never synchronised. */
#ifndef IPK_CODEC_H
#define IPK_CODEC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Adler-32 (RFC 1950) of each span of data: span i is bytes [i*span, min(total, (i+1)*span)),
 * n = ceil(total / span) spans, out[i] (device) its checksum started from 1. Spans of one image
 * join on the host with zlib's adler32_combine. IPK_OK, IPK_EINVAL, or IPK_ECUDA. */
int ipk_adler32_spans(const uint8_t *data, size_t total, size_t span, uint32_t *out, void *stream);

#ifdef __cplusplus
}
#endif
#endif
