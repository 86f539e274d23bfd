/* What codec_mock_basics.c gives the mock GPU codec tests beside the device's functions. */
#ifndef IMGPIPE_CODEC_MOCK_H
#define IMGPIPE_CODEC_MOCK_H
#include "gpu/nvcomp.h"

/* The chunk's raw deflate inflated by zlib into its buffer, dst_bytes what it wrote: zlib's
 * inflate code (Z_STREAM_END when the stream ended within the buffer), Z_MEM_ERROR when zlib
 * did not start. */
int codec_mock_inflate(nvcomp_chunk *c);
/* The chunk's bytes deflated raw by zlib at level 6 into its buffer, dst_bytes what it wrote: 0,
 * or -1 when zlib failed or the buffer was too small. */
int codec_mock_deflate(nvcomp_chunk *c);
#endif
