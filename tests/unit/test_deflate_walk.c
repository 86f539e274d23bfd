/* deflate_walk: finds the final block of libdeflate's streams at every level, on data of every
 * kind; streams made joinable and concatenated inflate (with zlib, independently) to the
 * concatenated inputs; damaged or truncated streams are refused, never overrun. deflate_join_piece
 * joins zlib's raw streams with padding after each, as a GPU's chunks come back. */
#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "io/deflate_walk.h"
#include "testutil.h"

/* Kinds of content: random bytes (stored blocks), runs, text-like skewed bytes, a smooth ramp. */
static void fill(unsigned char *p, size_t n, int kind, tu_rng *r)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t v = tu_next(r);
        p[i] = kind == 0 ? (unsigned char)v
             : kind == 1 ? (unsigned char)((i / 97) % 3)
             : kind == 2 ? (unsigned char)("etaoin shrdlu"[v % 13] + (v % 200 == 0))
                         : (unsigned char)(i / 40 + (v % 3));
    }
}

static int inflate_all(const unsigned char *z, size_t zlen, unsigned char *out, size_t cap, size_t *got)
{
    z_stream s = { 0 };
    if (inflateInit2(&s, -15) != Z_OK) return -1;
    s.next_in = (Bytef *)z;
    s.avail_in = (uInt)zlen;
    s.next_out = out;
    s.avail_out = (uInt)cap;
    int rc = inflate(&s, Z_FINISH);
    *got = cap - s.avail_out;
    inflateEnd(&s);
    return rc == Z_STREAM_END && s.avail_in == 0 ? 0 : -1;
}

static void joined_streams(int level, int kind, tu_rng *r)
{
    enum { PARTS = 3 };
    const size_t sizes[PARTS] = { 1 + tu_next(r) % 70000, 1 + tu_next(r) % 300, 1 + tu_next(r) % 400000 };
    size_t total = 0, zlen = 0;
    for (int k = 0; k < PARTS; k++) total += sizes[k];
    unsigned char *in = malloc(total), *z = malloc(2 * total + 4096), *back = malloc(total + 16);
    fill(in, total, kind, r);
    struct libdeflate_compressor *c = libdeflate_alloc_compressor(level);
    int walked = 1;
    for (size_t k = 0, off = 0; k < PARTS; off += sizes[k], k++) {
        size_t n = libdeflate_deflate_compress(c, in + off, sizes[k], z + zlen, 2 * total + 4096 - zlen - 5);
        deflate_walk_result w;
        if (!n || deflate_walk(z + zlen, n, &w) != 0) walked = 0;
        if (k + 1 < PARTS && walked) n = deflate_make_joinable(z + zlen, n, &w);
        zlen += n;
    }
    size_t got = 0;
    int ok = walked && inflate_all(z, zlen, back, total + 16, &got) == 0 && got == total && !memcmp(back, in, total);
    CHECK(ok, "level %d kind %d: walked %d, joined stream inflates to %zu of %zu bytes", level, kind, walked, got, total);
    /* Truncated or damaged: refused or walked, never a crash (ASan watches the reads). */
    size_t n = libdeflate_deflate_compress(c, in, sizes[0], z, 2 * total + 4096);
    deflate_walk_result w;
    CHECK(n < 2 || deflate_walk(z, n - 1, &w) != 0, "level %d kind %d: a stream cut by one byte was accepted", level,
          kind);
    for (int d = 0; d < 20 && n > 0; d++) {
        z[tu_next(r) % n] ^= (unsigned char)(1u << (tu_next(r) % 8));
        (void)deflate_walk(z, n, &w);
    }
    libdeflate_free_compressor(c);
    free(in);
    free(z);
    free(back);
}

/* A raw stream of in by zlib at level, then pad bytes of 0xA5 after it. */
static size_t zlib_raw_padded(const unsigned char *in, size_t len, int level, size_t pad, unsigned char *out,
                              size_t cap)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) return 0;
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    int rc = deflate(&z, Z_FINISH);
    size_t n = cap - z.avail_out;
    deflateEnd(&z);
    if (rc != Z_STREAM_END || n + pad > cap) return 0;
    memset(out + n, 0xA5, pad);
    return n + pad;
}

/* Pieces of sizes 1 byte up, each compressed on its own, padded and joined, inflate to the
 * whole; a piece that is no stream joins as 0. */
static void joined_pieces(int level, int kind, tu_rng *r)
{
    enum { PIECES = 7 };
    size_t sizes[PIECES] = { 1, 2 + tu_next(r) % 50, 1 + tu_next(r) % 40000, 32768, 1 + tu_next(r) % 100000, 3, 65536 };
    size_t total = 0;
    for (int k = 0; k < PIECES; k++) total += sizes[k];
    size_t cap = 2 * total + PIECES * (64 + DEFLATE_JOIN_SPARE);
    unsigned char *in = malloc(total), *piece = malloc(cap), *joined = malloc(cap), *back = malloc(total + 16);
    fill(in, total, kind, r);
    size_t at = 0, zlen = 0;
    int ok = in && piece && joined && back;
    for (int k = 0; ok && k < PIECES; at += sizes[k], k++) {
        size_t n = zlib_raw_padded(in + at, sizes[k], level, tu_next(r) % 9, piece, cap - DEFLATE_JOIN_SPARE);
        n = n ? deflate_join_piece(piece, n, k + 1 == PIECES) : 0;
        ok = n > 0 && zlen + n <= cap;
        if (ok) memcpy(joined + zlen, piece, n);
        zlen += n;
    }
    size_t got = 0;
    ok = ok && inflate_all(joined, zlen, back, total + 16, &got) == 0 && got == total && !memcmp(back, in, total);
    CHECK(ok, "level %d kind %d: joined pieces inflate to %zu of %zu bytes", level, kind, got, total);
    unsigned char junk[16];
    memset(junk, 0xFF, sizeof junk);   /* block type 3 from the first bits */
    CHECK(deflate_join_piece(junk, 8, 0) == 0 && deflate_join_piece(junk, 8, 1) == 0, "junk joined as a piece");
    free(in);
    free(piece);
    free(joined);
    free(back);
}

int main(void)
{
    tu_rng r;
    tu_seed(&r, 1951);
    for (int level = 0; level <= 12; level++)
        for (int kind = 0; kind < 4; kind++) joined_streams(level, kind, &r);
    for (int level = 1; level <= 9; level += 4)
        for (int kind = 0; kind < 4; kind++) joined_pieces(level, kind, &r);
    deflate_walk_result w;
    const unsigned char empty_final[] = { 0x03, 0x00 };   /* a fixed final block holding only its end */
    CHECK(deflate_walk(empty_final, 2, &w) == 0 && w.final_start == 0 && w.end == 10, "empty fixed block: %d..%d",
          (int)w.final_start, (int)w.end);
    const unsigned char reserved[] = { 0x07, 0x00 };      /* block type 3 */
    CHECK(deflate_walk(reserved, 2, &w) != 0, "block type 3 accepted");
    return tu_finish();
}
