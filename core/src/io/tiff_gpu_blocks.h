/* What the GPU's TIFF readers (tiff_gpu_read.c, a whole image; tiff_gpu_bands.c, a streamed
 * band) do once nvCOMP has inflated a run of blocks back to back into buffers of block_bytes:
 * check each block's adler32, undo the predictor and put tiles in place, all on the card. A block
 * cannot inflate past its buffer (nvCOMP refuses it, or stops there and the adler32 differs), so
 * the readers check only that none fell short: the last strip may hold fewer rows than its
 * buffer, and libtiff ignores a padded one's surplus. */
#ifndef IMGPIPE_TIFF_GPU_BLOCKS_H
#define IMGPIPE_TIFF_GPU_BLOCKS_H
#include <stdint.h>
#include "io/tiff_gpu_layout.h"

/* The adler32s of n blocks inflated at blocks (the last last_bytes long) against want: IP_OK;
 * IP_EUNSUPPORTED with *bad the first that differs; IP_ECUDA. dev_sums and host_sums (pinned)
 * hold n each. */
int tiff_gpu_blocks_adler(const tiff_gpu_layout *l, const unsigned char *blocks, uint64_t n, uint64_t last_bytes,
                          const uint32_t *want, uint32_t *dev_sums, uint32_t *host_sums, void *stream, uint64_t *bad,
                          char *err, size_t errlen);
/* The predictor undone on n blocks' own rows (tiles one under another), then tiles copied into
 * the first `rows` rows of the image at dst (its rows packed); strips' blocks are those rows
 * already (dst unused). Waits for the stream. IP_EUNSUPPORTED for more rows than the kernels
 * take, IP_ECUDA. */
int tiff_gpu_blocks_finish(const tiff_gpu_layout *l, unsigned char *blocks, uint64_t n, uint32_t rows,
                           unsigned char *dst, void *stream, char *err, size_t errlen);
/* The same in parts that only queue work on the stream, for a caller that waits once for many:
 * the adler32s computed and copied to host_sums, then compared with want (1 when block *bad
 * differs); the predictor undone in place; tiles copied into rows at dst (nothing for strips). */
int tiff_gpu_blocks_queue_adler(const tiff_gpu_layout *l, const unsigned char *blocks, uint64_t n, uint64_t last_bytes,
                                uint32_t *dev_sums, uint32_t *host_sums, void *stream, char *err, size_t errlen);
int tiff_gpu_blocks_sums_differ(const uint32_t *host_sums, const uint32_t *want, uint64_t n, uint64_t *bad);
int tiff_gpu_blocks_queue_predictor(const tiff_gpu_layout *l, unsigned char *blocks, uint64_t n, uint32_t rows,
                                    void *stream, char *err, size_t errlen);
int tiff_gpu_blocks_queue_tiles(const tiff_gpu_layout *l, const unsigned char *blocks, uint32_t rows,
                                unsigned char *dst, void *stream, char *err, size_t errlen);
#endif
