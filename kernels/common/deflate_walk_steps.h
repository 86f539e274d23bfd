/* Walking a raw deflate stream (RFC 1951) block by block without producing output, to find where
 * its final block starts and ends. The host's walker (core/src/io/deflate_walk.c) and the card's
 * (codec/deflate_walk.cu) are this code, so both accept and reject the same bytes. DW_FAST_BITS
 * (10 unless defined before) sizes each code's first lookup: the card keeps a thread's tables in
 * shared memory and takes 9. */
#ifndef IPK_COMMON_DEFLATE_WALK_STEPS_H
#define IPK_COMMON_DEFLATE_WALK_STEPS_H
#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define DW_FN __device__ static inline
#define DW_LOAD(p) __ldg(p)
#else
#define DW_FN static inline
#define DW_LOAD(p) (*(p))
#endif
#ifndef DW_FAST_BITS
#define DW_FAST_BITS 10
#endif
#define DW_MAX_BITS 15
#define DW_FAST_SIZE (1u << DW_FAST_BITS)

typedef struct {
    const uint8_t *data;
    uint64_t len, next;  /* next: the next byte to load into bits */
    uint64_t past;       /* zero bits supplied past the end */
    uint64_t bits;       /* loaded, not yet used, least significant first */
    unsigned count;      /* how many of bits are loaded */
} dw_reader;

/* A canonical code: codes up to DW_FAST_BITS long by one lookup (entry = symbol << 4 | length, 0
 * when the code is longer or absent), longer ones bit by bit from the counts (as zlib's puff
 * does). */
typedef struct {
    uint16_t fast[DW_FAST_SIZE];
    uint16_t count[DW_MAX_BITS + 1];
    uint16_t symbol[320];
} dw_huffman;

typedef struct {
    dw_huffman lit, dist, codes;
    uint8_t lengths[320];
} dw_tables;

DW_FN void dw_refill(dw_reader *b)
{
    while (b->count <= 56) {
        uint64_t byte = 0;
        if (b->next < b->len) byte = DW_LOAD(b->data + b->next++);
        else b->past += 8;
        b->bits |= byte << b->count;
        b->count += 8;
    }
}

DW_FN unsigned dw_take(dw_reader *b, unsigned n)
{
    if (b->count < n) dw_refill(b);
    unsigned v = (unsigned)(b->bits & ((1ull << n) - 1));
    b->bits >>= n;
    b->count -= n;
    return v;
}

/* Drops n whole bytes (the reader at a byte boundary): those still loaded, then the rest unread. */
DW_FN void dw_skip_bytes(dw_reader *b, uint64_t n)
{
    uint64_t loaded = b->count / 8, drop = n < loaded ? n : loaded;
    b->bits = drop == 8 ? 0 : b->bits >> (drop * 8);
    b->count -= (unsigned)(drop * 8);
    n -= drop;
    uint64_t left = b->len - b->next, ahead = n < left ? n : left;
    b->next += ahead;
    b->past += (n - ahead) * 8;
}

/* Bits consumed so far. */
DW_FN uint64_t dw_position(const dw_reader *b) { return b->next * 8 + b->past - b->count; }
DW_FN int dw_overrun(const dw_reader *b) { return b->past > b->count; }

DW_FN unsigned dw_reverse_bits(unsigned code, unsigned n)
{
    unsigned r = 0;
    for (unsigned i = 0; i < n; i++) r = (r << 1) | ((code >> i) & 1);
    return r;
}

/* -1 for an over-subscribed code; incomplete codes are allowed (their holes decode as invalid). */
DW_FN int dw_build(dw_huffman *h, const uint8_t *lengths, unsigned n)
{
    unsigned next[DW_MAX_BITS + 1], offs[DW_MAX_BITS + 1];
    for (unsigned l = 0; l <= DW_MAX_BITS; l++) h->count[l] = 0;
    for (unsigned s = 0; s < n; s++) h->count[lengths[s]]++;
    h->count[0] = 0;
    int left = 1;
    for (unsigned l = 1; l <= DW_MAX_BITS; l++) {
        left = left * 2 - (int)h->count[l];
        if (left < 0) return -1;
    }
    unsigned code = 0;
    offs[1] = 0;
    for (unsigned l = 1; l <= DW_MAX_BITS; l++) {
        code = (code + (l > 1 ? h->count[l - 1] : 0)) << 1;
        next[l] = code;
        if (l > 1) offs[l] = offs[l - 1] + h->count[l - 1];
    }
    for (unsigned i = 0; i < DW_FAST_SIZE; i++) h->fast[i] = 0;
    for (unsigned s = 0; s < n; s++) {
        unsigned l = lengths[s];
        if (!l) continue;
        h->symbol[offs[l]++] = (uint16_t)s;
        unsigned c = next[l]++;
        if (l > DW_FAST_BITS) continue;
        for (unsigned i = dw_reverse_bits(c, l); i < DW_FAST_SIZE; i += 1u << l) h->fast[i] = (uint16_t)(s << 4 | l);
    }
    return 0;
}

DW_FN int dw_decode_slow(dw_reader *b, const dw_huffman *h)
{
    int code = 0, first = 0, index = 0;
    for (unsigned l = 1; l <= DW_MAX_BITS; l++) {
        code |= (int)dw_take(b, 1);
        int count = h->count[l];
        if (code - count < first) return h->symbol[index + (code - first)];
        index += count;
        first = (first + count) << 1;
        code <<= 1;
    }
    return -1;
}

DW_FN int dw_decode(dw_reader *b, const dw_huffman *h)
{
    if (b->count < DW_MAX_BITS) dw_refill(b);
    uint16_t e = h->fast[b->bits & (DW_FAST_SIZE - 1)];
    if (!e) return dw_decode_slow(b, h);
    b->bits >>= e & 15;
    b->count -= e & 15;
    return e >> 4;
}

/* Symbols up to end of block, checking each; the distances' values need no checks to walk. Extra
 * bits of lengths 257..284: none for the first eight, then one more every four. */
DW_FN int dw_walk_codes(dw_reader *b, const dw_huffman *lit, const dw_huffman *dist)
{
    for (;;) {
        int s = dw_decode(b, lit);
        if (s < 0 || s > 285 || dw_overrun(b)) return -1;
        if (s == 256) return 0;
        if (s < 256) continue;
        dw_take(b, s < 265 || s == 285 ? 0 : (unsigned)((s - 261) / 4));
        int d = dw_decode(b, dist);
        if (d < 0 || d > 29) return -1;
        dw_take(b, d < 4 ? 0 : (unsigned)(d / 2 - 1));
    }
}

DW_FN int dw_fixed_tables(dw_tables *t)
{
    uint8_t *l = t->lengths;
    for (unsigned i = 0; i < 288; i++) l[i] = i < 144 ? 8 : i < 256 ? 9 : i < 280 ? 7 : 8;
    if (dw_build(&t->lit, l, 288)) return -1;
    for (unsigned i = 0; i < 30; i++) l[i] = 5;
    return dw_build(&t->dist, l, 30);
}

DW_FN int dw_dynamic_tables(dw_reader *b, dw_tables *t)
{
    const uint8_t order[19] = { 16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15 };
    unsigned nlit = dw_take(b, 5) + 257, ndist = dw_take(b, 5) + 1, ncode = dw_take(b, 4) + 4;
    uint8_t *lengths = t->lengths;
    for (unsigned i = 0; i < 320; i++) lengths[i] = 0;
    for (unsigned i = 0; i < ncode; i++) lengths[order[i]] = (uint8_t)dw_take(b, 3);
    if (nlit > 286 || dw_build(&t->codes, lengths, 19)) return -1;
    for (unsigned i = 0; i < 19; i++) lengths[i] = 0;
    for (unsigned i = 0; i < nlit + ndist;) {
        int s = dw_decode(b, &t->codes);
        if (s < 0 || dw_overrun(b)) return -1;
        if (s < 16) {
            lengths[i++] = (uint8_t)s;
            continue;
        }
        unsigned repeat = s == 16 ? 3 + dw_take(b, 2) : s == 17 ? 3 + dw_take(b, 3) : 11 + dw_take(b, 7);
        if ((s == 16 && i == 0) || i + repeat > nlit + ndist) return -1;
        uint8_t v = s == 16 ? lengths[i - 1] : 0;
        while (repeat--) lengths[i++] = v;
    }
    if (!lengths[256]) return -1;
    return dw_build(&t->lit, lengths, nlit) || dw_build(&t->dist, lengths + nlit, ndist) ? -1 : 0;
}

/* 0 with the bit offsets of the final block's header and just past it, or -1 when the bytes
 * hold no valid stream (bytes may follow it). */
DW_FN int dw_walk(const uint8_t *data, uint64_t len, dw_tables *t, uint64_t *final_start, uint64_t *end)
{
    dw_reader b = { data, len, 0, 0, 0, 0 };
    for (;;) {
        uint64_t start = dw_position(&b);
        unsigned final = dw_take(&b, 1), type = dw_take(&b, 2);
        if (type == 0) {
            dw_take(&b, b.count & 7);   /* to the byte boundary */
            unsigned n = dw_take(&b, 16), check = dw_take(&b, 16);
            if ((n ^ 0xFFFFu) != check) return -1;
            dw_skip_bytes(&b, n);
        } else if (type == 3) {
            return -1;
        } else if ((type == 1 ? dw_fixed_tables(t) : dw_dynamic_tables(&b, t)) || dw_walk_codes(&b, &t->lit, &t->dist)) {
            return -1;
        }
        if (dw_overrun(&b)) return -1;
        if (final) {
            *final_start = start;
            *end = dw_position(&b);
            return 0;
        }
    }
}
#endif
