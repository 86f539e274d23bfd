/* TIFF samples as stored turned into the image imgpipe works on: packed bits of any depth up to
 * 16, signed and 32-bit unsigned integers as float. */
#ifndef IMGPIPE_IO_TIFF_CONVERT_H
#define IMGPIPE_IO_TIFF_CONVERT_H
#include <stddef.h>
#include <stdint.h>
#include "imgpipe/plugin.h"

/* Sample `index` of a row packed `bps` bits a sample (1 to 16), first sample in the high bits,
 * as TIFF packs them; reads only the bytes the sample lies in. */
static inline unsigned tiff_bits_at(const unsigned char *row, size_t index, unsigned bps)
{
    size_t bit = index * bps;
    const unsigned char *p = row + (bit >> 3);
    unsigned offset = (unsigned)(bit & 7), bytes = (offset + bps + 7) / 8;
    uint32_t window = 0;
    for (unsigned k = 0; k < bytes; k++) window = window << 8 | p[k];
    return (unsigned)(window >> (bytes * 8 - offset - bps)) & ((1u << bps) - 1);
}

/* raw holds samples of `bytes` (1, 2 or 4) bytes, signed or not, `samples` to a row; out gets
 * them as f32 with the same values (32-bit ones rounded to the nearest float). out may be raw
 * itself when bytes is 4. */
void tiff_to_float(const void *raw, ptrdiff_t raw_stride, unsigned bytes, int is_signed, size_t samples,
                   ip_image *out, int threads);

#endif
