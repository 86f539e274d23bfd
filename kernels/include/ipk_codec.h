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

/* TIFF's horizontal predictor (Predictor=2) on height rows of width pixels of channels (1-4)
 * interleaved samples of sample_bytes (1, or 2: native-order uint16), each row from its own
 * start (a strip's or a tile's rows alike). Undo: in place, each sample becomes the running sum
 * of its channel along the row (mod 2^bits). Apply: dst gets each sample minus the one a pixel
 * to its left (the row's first pixel as is). Pitches are multiples of sample_bytes. */
int ipk_tiff_predictor_undo(void *rows, size_t pitch, int width, int height, int channels, int sample_bytes,
                            void *stream);
int ipk_tiff_predictor_apply(const void *src, size_t src_pitch, void *dst, size_t dst_pitch, int width, int height,
                             int channels, int sample_bytes, void *stream);
/* Tiles in TIFF's order (across, then down; each tile_w x tile_h pixels of pixel_bytes, packed)
 * copied into an image of width x height with dst_pitch, the parts past its edges left out. */
int ipk_tiff_tiles_to_image(const void *tiles, int tile_w, int tile_h, size_t pixel_bytes, void *dst,
                            size_t dst_pitch, int width, int height, void *stream);
/* PNG's filtered image data (RFC 2083 filter method 0) of height rows of row_bytes bytes, src's
 * rows stride bytes apart, bpp (1..8) bytes a pixel, sample_bytes 1 or 2 (16-bit samples as the
 * device holds them, little-endian, written big-endian as PNG wants): out gets, for each row, its
 * filter byte then its row_bytes filtered bytes (height * (row_bytes + 1) bytes). Each row's
 * filter is chosen among the allowed ones (bits 1 << type, None 0 .. Paeth 4) exactly as the CPU
 * writer chooses it (least sum of the filtered bytes taken as signed, ties to the lower type), so
 * that both give the same bytes. IPK_OK, IPK_EINVAL, or IPK_ECUDA. */
int ipk_png_filter(const uint8_t *src, ptrdiff_t stride, size_t row_bytes, size_t height, unsigned bpp,
                   int sample_bytes, unsigned allowed, uint8_t *out, void *stream);

/* Walks n raw deflate streams (RFC 1951) without inflating them, a thread each: stream k is the
 * len[k] bytes at data + k * slot (device). walks[2k] gets the bit offset of its final block's
 * header and walks[2k + 1] the bit offset just past that block, as the host's
 * deflate_walk_prefix gives them (bytes may follow the stream); both all ones when the bytes
 * hold no valid stream. IPK_OK, IPK_EINVAL, or IPK_ECUDA. */
int ipk_deflate_walk(const uint8_t *data, size_t slot, const unsigned long long *len, size_t n,
                     unsigned long long *walks, void *stream);

#ifdef __cplusplus
}
#endif
#endif
