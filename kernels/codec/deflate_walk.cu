#include <cuda_runtime.h>
#include "ipk.h"
#include "ipk_codec.h"

/* The host's walker (core/src/io/deflate_walk.c) in a thread a stream: the same checks in the
 * same order, so both accept and reject the same bytes. Its tables live in shared memory (local
 * memory would be reserved for every thread the card can hold); a 9-bit first lookup keeps a
 * thread's three tables and code lengths to 5.4 KB, eight threads a block. */
#define MAX_BITS 15
#define FAST_BITS 9
#define FAST_SIZE (1u << FAST_BITS)
#define WALK_THREADS 8
#define BAD_WALK 0xFFFFFFFFFFFFFFFFull

typedef struct {
    uint16_t fast[FAST_SIZE];   /* symbol << 4 | length, 0 when the code is longer or absent */
    uint16_t count[MAX_BITS + 1];
    uint16_t symbol[320];
} huffman;

typedef struct {
    huffman lit, dist, codes;
    uint8_t lengths[320];
} walk_tables;

typedef struct {
    const uint8_t *data;
    unsigned long long len, next, past;   /* past: zero bits supplied beyond the end */
    unsigned long long bits;              /* loaded, not yet used, least significant first */
    unsigned count;
} bit_reader;

__device__ static void refill(bit_reader *b)
{
    while (b->count <= 56) {
        unsigned long long byte = 0;
        if (b->next < b->len) byte = __ldg(b->data + b->next++);
        else b->past += 8;
        b->bits |= byte << b->count;
        b->count += 8;
    }
}

__device__ static unsigned take(bit_reader *b, unsigned n)
{
    if (b->count < n) refill(b);
    unsigned v = (unsigned)(b->bits & ((1ull << n) - 1));
    b->bits >>= n;
    b->count -= n;
    return v;
}

__device__ static void skip_bytes(bit_reader *b, unsigned long long n)
{
    unsigned long long loaded = b->count / 8, drop = n < loaded ? n : loaded;
    b->bits = drop == 8 ? 0 : b->bits >> (drop * 8);
    b->count -= (unsigned)(drop * 8);
    n -= drop;
    unsigned long long left = b->len - b->next, ahead = n < left ? n : left;
    b->next += ahead;
    b->past += (n - ahead) * 8;
}

__device__ static unsigned long long position(const bit_reader *b) { return b->next * 8 + b->past - b->count; }
__device__ static int overrun(const bit_reader *b) { return b->past > b->count; }

__device__ static unsigned reverse_bits(unsigned code, unsigned n)
{
    return __brev(code) >> (32 - n);
}

/* -1 for an over-subscribed code; incomplete codes are allowed (their holes decode as invalid). */
__device__ static int build(huffman *h, const uint8_t *lengths, unsigned n)
{
    unsigned next[MAX_BITS + 1], offs[MAX_BITS + 1];
    for (unsigned l = 0; l <= MAX_BITS; l++) h->count[l] = 0;
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
    for (unsigned i = 0; i < FAST_SIZE; i++) h->fast[i] = 0;
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

__device__ static int decode_slow(bit_reader *b, const huffman *h)
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

__device__ static int decode(bit_reader *b, const huffman *h)
{
    if (b->count < MAX_BITS) refill(b);
    uint16_t e = h->fast[b->bits & (FAST_SIZE - 1)];
    if (!e) return decode_slow(b, h);
    b->bits >>= e & 15;
    b->count -= e & 15;
    return e >> 4;
}

__device__ static int walk_codes(bit_reader *b, const huffman *lit, const huffman *dist)
{
    for (;;) {
        int s = decode(b, lit);
        if (s < 0 || s > 285 || overrun(b)) return -1;
        if (s == 256) return 0;
        if (s < 256) continue;
        /* extra bits of lengths 257..284: 0 for the first eight, then one more every four */
        take(b, s < 265 || s == 285 ? 0 : (unsigned)((s - 261) / 4));
        int d = decode(b, dist);
        if (d < 0 || d > 29) return -1;
        take(b, d < 4 ? 0 : (unsigned)(d / 2 - 1));
    }
}

__device__ static int fixed_tables(walk_tables *t)
{
    uint8_t *l = t->lengths;
    for (unsigned i = 0; i < 288; i++) l[i] = i < 144 ? 8 : i < 256 ? 9 : i < 280 ? 7 : 8;
    if (build(&t->lit, l, 288)) return -1;
    for (unsigned i = 0; i < 30; i++) l[i] = 5;
    return build(&t->dist, l, 30);
}

__device__ static int dynamic_tables(bit_reader *b, walk_tables *t)
{
    const uint8_t order[19] = { 16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15 };
    unsigned nlit = take(b, 5) + 257, ndist = take(b, 5) + 1, ncode = take(b, 4) + 4;
    uint8_t *lengths = t->lengths;
    for (unsigned i = 0; i < 320; i++) lengths[i] = 0;
    for (unsigned i = 0; i < ncode; i++) lengths[order[i]] = (uint8_t)take(b, 3);
    if (nlit > 286 || build(&t->codes, lengths, 19)) return -1;
    for (unsigned i = 0; i < 19; i++) lengths[i] = 0;
    for (unsigned i = 0; i < nlit + ndist;) {
        int s = decode(b, &t->codes);
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
    return build(&t->lit, lengths, nlit) || build(&t->dist, lengths + nlit, ndist) ? -1 : 0;
}

__device__ static int walk_blocks(bit_reader *b, walk_tables *t, unsigned long long *final_start,
                                  unsigned long long *end)
{
    for (;;) {
        unsigned long long start = position(b);
        unsigned final = take(b, 1), type = take(b, 2);
        if (type == 0) {
            take(b, b->count & 7);
            unsigned n = take(b, 16), check = take(b, 16);
            if ((n ^ 0xFFFFu) != check) return -1;
            skip_bytes(b, n);
        } else if (type == 3) {
            return -1;
        } else if ((type == 1 ? fixed_tables(t) : dynamic_tables(b, t)) || walk_codes(b, &t->lit, &t->dist)) {
            return -1;
        }
        if (overrun(b)) return -1;
        if (final) {
            *final_start = start;
            *end = position(b);
            return 0;
        }
    }
}

__global__ void deflate_walk_kernel(const uint8_t *data, size_t slot, const unsigned long long *len, size_t n,
                                    unsigned long long *walks)
{
    __shared__ walk_tables tables[WALK_THREADS];
    size_t k = (size_t)blockIdx.x * WALK_THREADS + threadIdx.x;
    if (k >= n) return;
    bit_reader b = { data + k * slot, len[k], 0, 0, 0, 0 };
    unsigned long long final_start = BAD_WALK, end = BAD_WALK;
    if (walk_blocks(&b, &tables[threadIdx.x], &final_start, &end)) final_start = end = BAD_WALK;
    walks[2 * k] = final_start;
    walks[2 * k + 1] = end;
}

extern "C" int ipk_deflate_walk(const uint8_t *data, size_t slot, const unsigned long long *len, size_t n,
                                unsigned long long *walks, void *stream)
{
    if (n == 0) return IPK_OK;
    if (!data || !len || !walks || n > 0x7fffffffu) return IPK_EINVAL;
    unsigned blocks = (unsigned)((n + WALK_THREADS - 1) / WALK_THREADS);
    deflate_walk_kernel<<<blocks, WALK_THREADS, 0, (cudaStream_t)stream>>>(data, slot, len, n, walks);
    return cudaGetLastError() == cudaSuccess ? IPK_OK : IPK_ECUDA;
}
