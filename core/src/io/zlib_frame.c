#include "io/zlib_frame.h"

int zlib_frame_split(const uint8_t *z, size_t len, size_t *body_len, uint32_t *adler)
{
    /* the shortest deflate stream is one byte pair (an empty fixed block) */
    if (len < ZLIB_FRAME_HEADER + 2 + ZLIB_FRAME_TRAILER) return -1;
    unsigned cmf = z[0], flg = z[1];
    if ((cmf & 0x0f) != 8 || (cmf >> 4) > 7 || (cmf * 256 + flg) % 31 != 0 || (flg & 0x20)) return -1;
    const uint8_t *t = z + len - ZLIB_FRAME_TRAILER;
    *body_len = len - ZLIB_FRAME_HEADER - ZLIB_FRAME_TRAILER;
    *adler = (uint32_t)t[0] << 24 | (uint32_t)t[1] << 16 | (uint32_t)t[2] << 8 | t[3];
    return 0;
}

void zlib_frame_header(int level, uint8_t out[ZLIB_FRAME_HEADER])
{
    unsigned flevel = level < 2 ? 0 : level < 6 ? 1 : level == 6 ? 2 : 3;
    unsigned cmf = 0x78, flg = flevel << 6;
    flg += (31 - (cmf * 256 + flg) % 31) % 31;
    out[0] = (uint8_t)cmf;
    out[1] = (uint8_t)flg;
}

void zlib_frame_trailer(uint32_t adler, uint8_t out[ZLIB_FRAME_TRAILER])
{
    out[0] = (uint8_t)(adler >> 24);
    out[1] = (uint8_t)(adler >> 16);
    out[2] = (uint8_t)(adler >> 8);
    out[3] = (uint8_t)adler;
}
