/* zlib's frame (RFC 1950) around raw deflate data, for the GPU codecs: nvCOMP deflates and
 * inflates raw streams, so the 2-byte header and the big-endian adler32 after them are made and
 * checked here. */
#ifndef IMGPIPE_ZLIB_FRAME_H
#define IMGPIPE_ZLIB_FRAME_H
#include <stddef.h>
#include <stdint.h>

#define ZLIB_FRAME_HEADER 2
#define ZLIB_FRAME_TRAILER 4

/* Splits a zlib stream: the deflate data is bytes [ZLIB_FRAME_HEADER, ZLIB_FRAME_HEADER + *body_len)
 * and *adler the checksum it ends with. -1 when the header is not deflate's (method 8, a window of
 * at most 32 KiB, a valid check) or asks for a preset dictionary, or the stream is too short. */
int zlib_frame_split(const uint8_t *z, size_t len, size_t *body_len, uint32_t *adler);
/* The header zlib writes at this level (0-9; FLEVEL as zlib sets it). */
void zlib_frame_header(int level, uint8_t out[ZLIB_FRAME_HEADER]);
void zlib_frame_trailer(uint32_t adler, uint8_t out[ZLIB_FRAME_TRAILER]);
#endif
