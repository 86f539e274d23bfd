/* exif: TIFF-structured directories read from blobs of both byte orders, written back, the
 * orientation read and set (patched in place, or added), and damaged blobs refused or trimmed
 * without reading outside them. */
#include <stdlib.h>
#include <string.h>
#include "io/exif.h"
#include "imgpipe/plugin.h"
#include "io/meta.h"
#include "testutil.h"

static void set_short(exif_ifd *d, uint16_t tag, uint16_t v)
{
    unsigned char b[2] = { (unsigned char)v, (unsigned char)(v >> 8) };
    exif_set(d, tag, EXIF_SHORT, 1, b, 2);
}

static void set_rational(exif_ifd *d, uint16_t tag, uint32_t num, uint32_t den)
{
    unsigned char b[8];
    for (int i = 0; i < 4; i++) b[i] = (unsigned char)(num >> (8 * i)), b[4 + i] = (unsigned char)(den >> (8 * i));
    exif_set(d, tag, EXIF_RATIONAL, 1, b, 8);
}

/* IFD0: make, orientation 6, resolution; Exif: exposure 1/250, a date, odd-length undefined bytes,
 * three shorts, an Interop directory; GPS: a latitude reference and three rationals. */
static void build_tree(exif_ifd *ifd0)
{
    *ifd0 = (exif_ifd){ 0 };
    exif_ifd *exif = calloc(1, sizeof *exif), *gps = calloc(1, sizeof *gps), *interop = calloc(1, sizeof *interop);
    exif_set(ifd0, 271, EXIF_ASCII, 9, "TestMake", 9);
    set_short(ifd0, EXIF_TAG_ORIENTATION, 6);
    set_rational(ifd0, 282, 300, 1);
    set_rational(exif, 33434, 1, 250);
    exif_set(exif, 36867, EXIF_ASCII, 20, "2020:01:02 03:04:05", 20);
    exif_set(exif, 37510, EXIF_UNDEFINED, 5, "abcde", 5);
    const unsigned char shorts[6] = { 1, 0, 2, 0, 0xff, 0xee };
    exif_set(exif, 41728, EXIF_SHORT, 3, shorts, 6);
    exif_set(interop, 1, EXIF_ASCII, 4, "R98", 4);
    exif_set_sub(exif, EXIF_TAG_INTEROP_IFD, interop);
    exif_set(gps, 1, EXIF_ASCII, 2, "N", 2);
    unsigned char lat[24] = { 0 };
    lat[0] = 52, lat[4] = 1, lat[8] = 30, lat[12] = 1, lat[16] = 7, lat[20] = 2;
    exif_set(gps, 2, EXIF_RATIONAL, 3, lat, 24);
    exif_set_sub(ifd0, EXIF_TAG_EXIF_IFD, exif);
    exif_set_sub(ifd0, EXIF_TAG_GPS_IFD, gps);
}

static int same_ifd(const exif_ifd *a, const exif_ifd *b)
{
    if (a->n != b->n) return 0;
    for (int i = 0; i < a->n; i++) {
        const exif_entry *x = &a->entries[i], *y = exif_find(b, x->tag);
        if (!y || !!x->sub != !!y->sub) return 0;
        if (x->sub ? !same_ifd(x->sub, y->sub)
                   : x->type != y->type || x->count != y->count || x->len != y->len || memcmp(x->value, y->value, x->len))
            return 0;
    }
    return 1;
}

/* A big-endian blob of the tree, written as a camera would. */
static unsigned char *big_endian_blob(const exif_ifd *ifd0, size_t *len)
{
    size_t size = exif_ifd_size(ifd0);
    unsigned char *blob = malloc(8 + size);
    memcpy(blob, "MM\0*\0\0\0\x08", 8);
    CHECK(exif_write_ifd(ifd0, 1, 8, blob + 8) == IP_OK, "big-endian write");
    *len = 8 + size;
    return blob;
}

static void test_round_trips(void)
{
    exif_ifd tree, back;
    build_tree(&tree);
    unsigned char *le_blob;
    size_t le_len, be_len;
    CHECK(exif_serialize(&tree, &le_blob, &le_len) == IP_OK, "serialize");
    CHECK(le_len > 8 && !memcmp(le_blob, "II*\0", 4), "little-endian header");
    CHECK(exif_parse(le_blob, le_len, &back) == IP_OK && same_ifd(&tree, &back), "little-endian tree back");
    CHECK(exif_number(exif_find(exif_find(&back, EXIF_TAG_EXIF_IFD)->sub, 33434), 0, 0) == 1.0 / 250, "1/250");
    CHECK(exif_uint(exif_find(exif_find(&back, EXIF_TAG_EXIF_IFD)->sub, 41728), 2, 0) == 0xeeff, "third short");
    exif_ifd_free(&back);
    unsigned char *be_blob = big_endian_blob(&tree, &be_len);
    CHECK(be_len == le_len, "both orders the same size");
    CHECK(exif_parse(be_blob, be_len, &back) == IP_OK && same_ifd(&tree, &back), "big-endian tree back");
    CHECK(exif_number(exif_find(&back, 282), 0, 0) == 300, "300 dpi from a big-endian rational");
    exif_ifd_free(&back);
    CHECK(exif_orientation(le_blob, le_len) == 6 && exif_orientation(be_blob, be_len) == 6, "orientation 6");

    unsigned char *patched;
    size_t patched_len;
    CHECK(exif_with_orientation(be_blob, be_len, 1, &patched, &patched_len) == IP_OK, "patch");
    CHECK(patched_len == be_len && exif_orientation(patched, patched_len) == 1, "patched to 1 in place");
    int differing = 0;
    for (size_t i = 0; i < be_len; i++) differing += patched[i] != be_blob[i];
    CHECK(differing == 1, "one byte of a big-endian short changes, not %d", differing);
    free(patched);
    free(le_blob);
    free(be_blob);
    exif_ifd_free(&tree);
}

static void test_orientation_added(void)
{
    unsigned char *blob;
    size_t len;
    CHECK(exif_with_orientation(NULL, 0, 1, &blob, &len) == IP_OK && !blob && !len, "nothing to write");
    CHECK(exif_with_orientation(NULL, 0, 8, &blob, &len) == IP_OK && exif_orientation(blob, len) == 8,
          "orientation alone");
    free(blob);
    exif_ifd tree, back;
    build_tree(&tree);
    exif_entry *o = exif_find(&tree, EXIF_TAG_ORIENTATION);
    o->tag = 305;   /* no orientation any more: a short under another tag */
    unsigned char *src;
    size_t src_len;
    exif_serialize(&tree, &src, &src_len);
    CHECK(exif_orientation(src, src_len) == 1, "missing orientation reads as 1");
    CHECK(exif_with_orientation(src, src_len, 3, &blob, &len) == IP_OK && exif_orientation(blob, len) == 3, "added");
    CHECK(exif_parse(blob, len, &back) == IP_OK && back.n == tree.n + 1 &&
          same_ifd(exif_find(&tree, EXIF_TAG_EXIF_IFD)->sub, exif_find(&back, EXIF_TAG_EXIF_IFD)->sub),
          "the rest kept");
    exif_ifd_free(&back);
    free(blob);
    free(src);
    exif_ifd_free(&tree);
}

/* Every truncation and random damage of a valid blob: parsing may fail or drop entries, never read
 * outside the blob (the sanitizers watch) nor loop. */
static void test_damage(void)
{
    exif_ifd tree, back;
    build_tree(&tree);
    unsigned char *blob;
    size_t len;
    exif_serialize(&tree, &blob, &len);
    int parsed = 0;
    for (size_t cut = 0; cut < len; cut++) {
        unsigned char *part = malloc(cut ? cut : 1);
        memcpy(part, blob, cut);
        if (exif_parse(part, cut, &back) == IP_OK) parsed++, exif_ifd_free(&back);
        int o = exif_orientation(part, cut);
        CHECK(o >= 1 && o <= 8, "orientation of a cut blob %d", o);
        free(part);
    }
    CHECK(parsed > 0 && parsed < (int)len, "cut blobs: %d of %zu parsed", parsed, len);
    tu_rng r;
    tu_seed(&r, 77);
    unsigned char *copy = malloc(len);
    for (int round = 0; round < 3000; round++) {
        memcpy(copy, blob, len);
        for (int k = 0; k < 1 + round % 4; k++) copy[tu_next(&r) % len] = (unsigned char)tu_next(&r);
        if (exif_parse(copy, len, &back) == IP_OK) exif_ifd_free(&back);
        unsigned char *out;
        size_t out_len;
        if (exif_with_orientation(copy, len, 1 + round % 8, &out, &out_len) == IP_OK) free(out);
    }
    free(copy);
    const unsigned char huge_count[] = { 'I', 'I', 42, 0, 8, 0, 0, 0, 0xff, 0xff };
    CHECK(exif_parse(huge_count, sizeof huge_count, &back) == IP_EFORMAT, "65535 entries claimed in 10 bytes");
    CHECK(exif_parse((const unsigned char *)"GIF89a..", 8, &back) == IP_EFORMAT, "not TIFF-structured");
    free(blob);
    exif_ifd_free(&tree);
}

/* 300 entries naming the same megabyte: no more than META_MAX_BYTES of values are taken. */
static void test_budget(void)
{
    const size_t n = 300, big = (size_t)1 << 20, len = 8 + 2 + 12 * n + 4 + big;
    unsigned char *blob = calloc(1, len);
    memcpy(blob, "II*\0\x08\0\0\0", 8);
    blob[8] = (unsigned char)n, blob[9] = (unsigned char)(n >> 8);
    uint32_t data_at = (uint32_t)(len - big);
    for (size_t i = 0; i < n; i++) {
        unsigned char *e = blob + 10 + 12 * i;
        uint32_t tag = 40000 + (uint32_t)i, count = (uint32_t)big;
        e[0] = (unsigned char)tag, e[1] = (unsigned char)(tag >> 8), e[2] = EXIF_UNDEFINED;
        for (int k = 0; k < 4; k++) e[4 + k] = (unsigned char)(count >> (8 * k)), e[8 + k] = (unsigned char)(data_at >> (8 * k));
    }
    exif_ifd back;
    CHECK(exif_parse(blob, len, &back) == IP_OK, "parse");
    size_t total = 0;
    for (int i = 0; i < back.n; i++) total += back.entries[i].len;
    CHECK(back.n == (int)(META_MAX_BYTES / big) && total <= META_MAX_BYTES, "%d entries, %zu bytes taken", back.n, total);
    exif_ifd_free(&back);
    free(blob);
}

int main(void)
{
    test_budget();
    test_round_trips();
    test_orientation_added();
    test_damage();
    return tu_finish();
}
