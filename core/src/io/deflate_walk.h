/* Walks a raw deflate stream (RFC 1951) block by block without producing output, to find where its
 * final block starts and ends. The PNG writer compresses bands with libdeflate, which always ends
 * a stream with a final block; knowing where it is lets the writer turn it into an ordinary block
 * ending on a byte boundary, so that the bands join into one stream as zlib's sync flush allows. */
#ifndef IMGPIPE_DEFLATE_WALK_H
#define IMGPIPE_DEFLATE_WALK_H
#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t final_start;   /* bit offset of the final block's header (its BFINAL bit) */
    uint64_t end;           /* bit offset just past the final block */
} deflate_walk_result;

/* 0 on success; -1 when the data is not one valid deflate stream ending in the last byte. */
int deflate_walk(const uint8_t *data, size_t len, deflate_walk_result *out);
/* The same for a stream that may be followed by other bytes (padding a compressor left): 0 when
 * one valid stream starts at data and ends within len bytes, (out->end + 7) / 8 of them. */
int deflate_walk_prefix(const uint8_t *data, size_t len, deflate_walk_result *out);

/* Makes a stream that deflate_walk accepted joinable: clears the final block's BFINAL bit and
 * ends it with an empty stored block (00 00 FF FF), so the next stream may follow from the next
 * byte. buf holds len bytes and room for 5 more; returns the new length. */
size_t deflate_make_joinable(uint8_t *buf, size_t len, const deflate_walk_result *w);

/* Whether a walk (a device's, which may be all ones for no stream) names a valid stream within
 * len bytes: its final block starts before it ends, and it ends within them. */
int deflate_walk_fits(const deflate_walk_result *w, size_t len);

/* Bytes past a piece's len that deflate_join_piece may write. */
#define DEFLATE_JOIN_SPARE 5

/* One of several streams compressed apart (a GPU's chunks, a band) readied to be joined back to
 * back: cut where its stream ends (a compressor's padding dropped) and, unless last, made
 * joinable. The length it then has; 0 when buf holds no valid stream. */
size_t deflate_join_piece(uint8_t *buf, size_t len, int last);
/* The same for a stream already walked (w, within buf's bytes): its length once readied. */
size_t deflate_join_walked(uint8_t *buf, const deflate_walk_result *w, int last);
#endif
