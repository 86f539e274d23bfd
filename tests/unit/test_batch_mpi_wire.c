/* The messages of an MPI folder run: a fixed message against its bytes written out by hand,
 * random messages (seeded) through encode and decode, and every truncated, padded or
 * overstated message refused without a crash or a huge allocation. */
#include <stdlib.h>
#include <string.h>
#include "batch/batch_mpi_wire.h"
#include "imgpipe/plugin.h"
#include "testutil.h"

static char *random_text(tu_rng *r, size_t max)
{
    size_t n = tu_next(r) % (max + 1);
    char *s = malloc(n + 1);
    for (size_t i = 0; i < n; i++) s[i] = (char)(1 + tu_next(r) % 255);   /* any byte but NUL */
    s[n] = '\0';
    return s;
}

static void check_fixed_ask_bytes(void)
{
    wire_result res = { 7, IP_EFORMAT, 0, "ab" };
    uint32_t back = 0x01020304;
    wire_ask a = { 3, 1, 0x0A0B0C0D, 0x1122334455667788ull, "h", &res, 1, &back, 1 };
    static const unsigned char want[] = {
        3, 0, 0, 0, 1, 0, 0, 0, 0x0D, 0x0C, 0x0B, 0x0A,             /* want, final, pid */
        0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,             /* pid namespace */
        1, 0, 0, 0, 'h',                                           /* host */
        1, 0, 0, 0, 7, 0, 0, 0, IP_EFORMAT, 0, 0, 0, 0, 0, 0, 0,   /* one result: index, rc, resumed */
        2, 0, 0, 0, 'a', 'b',                                      /* its message */
        1, 0, 0, 0, 4, 3, 2, 1 };                                  /* one image given back */
    wire_writer w = { 0 };
    CHECK(wire_encode_ask(&w, &a) == IP_OK, "encode");
    CHECK(w.len == sizeof want && memcmp(w.data, want, sizeof want) == 0, "ask bytes differ (%zu bytes)", w.len);
    wire_writer_free(&w);
}

static void check_ask_round_trip(tu_rng *r, int round)
{
    wire_ask a;
    memset(&a, 0, sizeof a);
    a.want = tu_next(r);
    a.final = tu_next(r) & 1;
    a.pid = tu_next(r);
    a.pid_namespace = (uint64_t)tu_next(r) << 32 | tu_next(r);
    char *host = random_text(r, sizeof a.host - 1);
    memcpy(a.host, host, strlen(host) + 1);
    a.n_results = tu_next(r) % 20;
    a.results = calloc(a.n_results + 1, sizeof *a.results);
    for (uint32_t i = 0; i < a.n_results; i++)
        a.results[i] = (wire_result){ tu_next(r), (int32_t)(tu_next(r) % 8), tu_next(r) & 1,
                                      random_text(r, i == 3 ? 5000 : 40) };
    a.n_returned = tu_next(r) % 10;
    a.returned = calloc(a.n_returned + 1, sizeof *a.returned);
    for (uint32_t i = 0; i < a.n_returned; i++) a.returned[i] = tu_next(r);
    wire_writer w = { 0 };
    CHECK(wire_encode_ask(&w, &a) == IP_OK, "round %d: encode", round);
    wire_ask b;
    CHECK(wire_decode_ask(w.data, w.len, &b) == IP_OK, "round %d: decode", round);
    CHECK(b.want == a.want && b.final == a.final && b.pid == a.pid && b.pid_namespace == a.pid_namespace &&
          strcmp(b.host, a.host) == 0, "round %d: header", round);
    CHECK(b.n_results == a.n_results && b.n_returned == a.n_returned, "round %d: counts", round);
    for (uint32_t i = 0; i < a.n_results && i < b.n_results; i++)
        CHECK(b.results[i].index == a.results[i].index && b.results[i].rc == a.results[i].rc &&
              b.results[i].resumed == a.results[i].resumed && strcmp(b.results[i].message, a.results[i].message) == 0,
              "round %d: result %u", round, i);
    for (uint32_t i = 0; i < a.n_returned && i < b.n_returned; i++)
        CHECK(b.returned[i] == a.returned[i], "round %d: returned %u", round, i);
    for (size_t cut = 0; cut < w.len; cut += round < 8 ? 1 : 1 + tu_next(r) % 97) {   /* shorter: refused */
        wire_ask c;
        int rc = wire_decode_ask(w.data, cut, &c);
        CHECK(rc == IP_EFORMAT, "round %d: %zu of %zu bytes gave %d", round, cut, w.len, rc);
        if (rc == IP_OK) wire_ask_free(&c);
    }
    unsigned char *longer = calloc(w.len + 1, 1);   /* one byte more is refused too */
    memcpy(longer, w.data, w.len);
    wire_ask c;
    CHECK(wire_decode_ask(longer, w.len + 1, &c) == IP_EFORMAT, "round %d: trailing byte", round);
    free(longer);
    wire_ask_free(&b);
    wire_ask_free(&a);
    wire_writer_free(&w);
    free(host);
}

static void check_work_round_trip(tu_rng *r, int round)
{
    wire_work k;
    memset(&k, 0, sizeof k);
    k.end = tu_next(r) & 1;
    k.stop = tu_next(r) & 1;
    k.release = tu_next(r) % 3;
    k.n = tu_next(r) % 70;
    k.items = calloc(k.n + 1, sizeof *k.items);
    for (uint32_t i = 0; i < k.n; i++)
        k.items[i] = (wire_item){ tu_next(r), (uint64_t)tu_next(r) << 32 | tu_next(r), tu_next(r) % 4,
                                  random_text(r, 300), random_text(r, 300) };
    wire_writer w = { 0 };
    CHECK(wire_encode_work(&w, &k) == IP_OK, "round %d: encode work", round);
    wire_work b;
    CHECK(wire_decode_work(w.data, w.len, &b) == IP_OK, "round %d: decode work", round);
    CHECK(b.end == k.end && b.stop == k.stop && b.release == k.release && b.n == k.n, "round %d: work header", round);
    for (uint32_t i = 0; i < k.n && i < b.n; i++)
        CHECK(b.items[i].index == k.items[i].index && b.items[i].size == k.items[i].size &&
              b.items[i].format == k.items[i].format && strcmp(b.items[i].in, k.items[i].in) == 0 &&
              strcmp(b.items[i].out, k.items[i].out) == 0, "round %d: item %u", round, i);
    for (size_t cut = 0; cut < w.len; cut += round < 8 ? 1 : 1 + tu_next(r) % 97) {
        wire_work c;
        int rc = wire_decode_work(w.data, cut, &c);
        CHECK(rc == IP_EFORMAT, "round %d: work cut to %zu of %zu gave %d", round, cut, w.len, rc);
        if (rc == IP_OK) wire_work_free(&c);
    }
    wire_work_free(&b);
    wire_work_free(&k);
    wire_writer_free(&w);
}

/* Counts and lengths larger than the message are refused before anything is allocated for them. */
static void check_overstated_lengths(void)
{
    unsigned char work[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF };
    wire_work k;
    CHECK(wire_decode_work(work, sizeof work, &k) == IP_EFORMAT, "4 billion items in 16 bytes");
    wire_result res = { 1, 0, 0, "message" };
    wire_ask a = { 0, 0, 1, 1, "host", &res, 1, NULL, 0 };
    wire_writer w = { 0 };
    CHECK(wire_encode_ask(&w, &a) == IP_OK, "encode");
    size_t text_len_at = 4 + 4 + 4 + 8 + 4 + 4 + 4 + 4 + 4 + 4;   /* the result's message length */
    w.data[text_len_at + 3] = 0x7F;
    wire_ask b;
    CHECK(wire_decode_ask(w.data, w.len, &b) == IP_EFORMAT, "a message length past the end");
    wire_writer_free(&w);
}

int main(void)
{
    tu_rng r;
    tu_seed(&r, 15);
    check_fixed_ask_bytes();
    for (int round = 0; round < 40; round++) {
        check_ask_round_trip(&r, round);
        check_work_round_trip(&r, round);
    }
    check_overstated_lengths();
    return tu_finish();
}
