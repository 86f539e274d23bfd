#include "io/deflate_walk.h"
#include <stdlib.h>
#include <string.h>

#define MAX_BITS 15
#define FAST_BITS 10
#define FAST_SIZE (1u << FAST_BITS)

typedef struct {
    const uint8_t *data;
    size_t len, next;  /* next: the next byte to load into bits */
    uint64_t bits;     /* loaded, not yet used, least significant first */
    unsigned count;    /* how many of bits are loaded */
    uint64_t past;     /* zero bits supplied past the end */
} bit_reader;

static void refill(bit_reader *b)
{
    while (b->count <= 56) {
        uint64_t byte = 0;
        if (b->next < b->len) byte = b->data[b->next++];
        else b->past += 8;
        b->bits |= byte << b->count;
        b->count += 8;
    }
}

static uint32_t take(bit_reader *b, unsigned n)
{
    if (b->count < n) refill(b);
    uint32_t v = (uint32_t)(b->bits & ((1ull << n) - 1));
    b->bits >>= n;
    b->count -= n;
    return v;
}

/* Drops n whole bytes (the reader at a byte boundary): those still loaded, then the rest unread. */
static void skip_bytes(bit_reader *b, uint64_t n)
{
    uint64_t loaded = b->count / 8, drop = n < loaded ? n : loaded;
    b->bits = drop == 8 ? 0 : b->bits >> (drop * 8);
    b->count -= (unsigned)(drop * 8);
    n -= drop;
    uint64_t left = b->len - b->next, ahead = n < left ? n : left;
    b->next += (size_t)ahead;
    b->past += (n - ahead) * 8;
}

/* Bits consumed so far. */
static uint64_t position(const bit_reader *b) { return (uint64_t)b->next * 8 + b->past - b->count; }
static int overrun(const bit_reader *b) { return b->past > b->count; }

/* A canonical code: codes up to FAST_BITS long by one lookup (entry = symbol << 4 | length, 0 when
 * the code is longer or absent), longer ones bit by bit from the counts (as zlib's puff does). */
typedef struct {
    uint16_t fast[FAST_SIZE];
    uint16_t count[MAX_BITS + 1];
    uint16_t symbol[320];
} huffman;

static unsigned reverse_bits(unsigned code, unsigned n)
{
    unsigned r = 0;
    for (unsigned i = 0; i < n; i++) r = (r << 1) | ((code >> i) & 1);
    return r;
}

/* -1 for an over-subscribed code; incomplete codes are allowed (their holes decode as invalid). */
static int build(huffman *h, const uint8_t *lengths, unsigned n)
{
    unsigned next[MAX_BITS + 1], offs[MAX_BITS + 1];
    memset(h->count, 0, sizeof h->count);
    for (unsigned s = 0; s < n; s++) h->count[lengths[s]]++;
    h->count[0] = 0;
    int left = 1;
    for (unsigned l = 1; l <= MAX_BITS; l++) {
        left = left * 2 - (int)h->count[l];
        if (left < 0) return -1;
    }
    unsigned code = 0;
    offs[1] = 0;
    for (unsigned l = 1; l <= MAX_BITS; l++) {
        code = (code + (l > 1 ? h->count[l - 1] : 0)) << 1;
        next[l] = code;
        if (l > 1) offs[l] = offs[l - 1] + h->count[l - 1];
    }
    memset(h->fast, 0, sizeof h->fast);
    for (unsigned s = 0; s < n; s++) {
        unsigned l = lengths[s];
        if (!l) continue;
        h->symbol[offs[l]++] = (uint16_t)s;
        unsigned c = next[l]++;
        if (l > FAST_BITS) continue;
        for (unsigned i = reverse_bits(c, l); i < FAST_SIZE; i += 1u << l) h->fast[i] = (uint16_t)(s << 4 | l);
    }
    return 0;
}

static int decode_slow(bit_reader *b, const huffman *h)
{
    int code = 0, first = 0, index = 0;
    for (unsigned l = 1; l <= MAX_BITS; l++) {
        code |= (int)take(b, 1);
        int count = h->count[l];
        if (code - count < first) return h->symbol[index + (code - first)];
        index += count;
        first = (first + count) << 1;
        code <<= 1;
    }
    return -1;
}

static int decode(bit_reader *b, const huffman *h)
{
    if (b->count < MAX_BITS) refill(b);
    uint16_t e = h->fast[b->bits & (FAST_SIZE - 1)];
    if (!e) return decode_slow(b, h);
    b->bits >>= e & 15;
    b->count -= e & 15;
    return e >> 4;
}

static const uint8_t length_extra[29] = { 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                          2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0 };

/* Symbols up to end of block, checking each; the distances' values need no checks to walk. */
static int walk_codes(bit_reader *b, const huffman *lit, const huffman *dist)
{
    for (;;) {
        int s = decode(b, lit);
        if (s < 0 || s > 285 || overrun(b)) return -1;
        if (s == 256) return 0;
        if (s < 256) continue;
        take(b, length_extra[s - 257]);
        int d = decode(b, dist);
        if (d < 0 || d > 29) return -1;
        take(b, d < 4 ? 0 : (unsigned)(d / 2 - 1));
    }
}

static int fixed_tables(huffman *lit, huffman *dist)
{
    uint8_t l[288];
    memset(l, 8, 144);
    memset(l + 144, 9, 112);
    memset(l + 256, 7, 24);
    memset(l + 280, 8, 8);
    uint8_t d[30];
    memset(d, 5, sizeof d);
    return build(lit, l, 288) || build(dist, d, 30) ? -1 : 0;
}

static int dynamic_tables(bit_reader *b, huffman *lit, huffman *dist, huffman *scratch)
{
    static const uint8_t order[19] = { 16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15 };
    unsigned nlit = take(b, 5) + 257, ndist = take(b, 5) + 1, ncode = take(b, 4) + 4;
    uint8_t cl[19] = { 0 }, lengths[320] = { 0 };
    for (unsigned i = 0; i < ncode; i++) cl[order[i]] = (uint8_t)take(b, 3);
    if (nlit > 286 || build(scratch, cl, 19)) return -1;
    for (unsigned i = 0; i < nlit + ndist;) {
        int s = decode(b, scratch);
        if (s < 0 || overrun(b)) return -1;
        if (s < 16) {
            lengths[i++] = (uint8_t)s;
            continue;
        }
        unsigned repeat = s == 16 ? 3 + take(b, 2) : s == 17 ? 3 + take(b, 3) : 11 + take(b, 7);
        if ((s == 16 && i == 0) || i + repeat > nlit + ndist) return -1;
        uint8_t v = s == 16 ? lengths[i - 1] : 0;
        while (repeat--) lengths[i++] = v;
    }
    if (!lengths[256]) return -1;
    return build(lit, lengths, nlit) || build(dist, lengths + nlit, ndist) ? -1 : 0;
}

static int walk_blocks(bit_reader *b, huffman *lit, huffman *dist, huffman *scratch, deflate_walk_result *out)
{
    for (;;) {
        uint64_t start = position(b);
        unsigned final = take(b, 1), type = take(b, 2);
        if (type == 0) {
            take(b, b->count & 7);   /* to the byte boundary */
            unsigned n = take(b, 16), check = take(b, 16);
            if ((n ^ 0xFFFFu) != check) return -1;
            skip_bytes(b, n);
        } else if (type == 3) {
            return -1;
        } else if ((type == 1 ? fixed_tables(lit, dist) : dynamic_tables(b, lit, dist, scratch)) ||
                   walk_codes(b, lit, dist)) {
            return -1;
        }
        if (overrun(b)) return -1;
        if (final) {
            out->final_start = start;
            out->end = position(b);
            return 0;
        }
    }
}

int deflate_walk_prefix(const uint8_t *data, size_t len, deflate_walk_result *out)
{
    huffman *tables = malloc(3 * sizeof *tables);
    if (!tables) return -1;
    bit_reader b = { data, len, 0, 0, 0, 0 };
    int rc = walk_blocks(&b, &tables[0], &tables[1], &tables[2], out);
    free(tables);
    return rc;
}

int deflate_walk(const uint8_t *data, size_t len, deflate_walk_result *out)
{
    int rc = deflate_walk_prefix(data, len, out);
    /* The stream must fill the buffer exactly: nothing may follow the final block. */
    if (rc == 0 && (out->end + 7) / 8 != (uint64_t)len) rc = -1;
    return rc;
}

size_t deflate_make_joinable(uint8_t *buf, size_t len, const deflate_walk_result *w)
{
    buf[w->final_start >> 3] &= (uint8_t)~(1u << (w->final_start & 7));
    unsigned spare = (unsigned)((8 - (w->end & 7)) & 7);   /* zero bits padding the last byte */
    if (spare) buf[w->end >> 3] &= (uint8_t)((1u << (w->end & 7)) - 1);
    /* A stored block's header is three zero bits, then zero padding to the byte: the padding
     * already there holds it when it has three bits, else one more zero byte does. */
    if (spare < 3) buf[len++] = 0;
    buf[len++] = 0x00;
    buf[len++] = 0x00;
    buf[len++] = 0xFF;
    buf[len++] = 0xFF;
    return len;
}

size_t deflate_join_piece(uint8_t *buf, size_t len, int last)
{
    deflate_walk_result w;
    if (deflate_walk_prefix(buf, len, &w)) return 0;
    len = (size_t)((w.end + 7) / 8);
    return last ? len : deflate_make_joinable(buf, len, &w);
}
