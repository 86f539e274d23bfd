#include "batch/batch_mpi_wire.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "imgpipe/plugin.h"

#define WIRE_MAX_TEXT (1u << 20)

static void put_bytes(wire_writer *w, const void *bytes, size_t n)
{
    if (w->failed) return;
    if (n > SIZE_MAX / 2 - w->len) {
        w->failed = 1;
        return;
    }
    if (w->len + n > w->cap) {
        size_t cap = w->cap ? w->cap : 256;
        while (cap < w->len + n) cap *= 2;
        uint8_t *grown = realloc(w->data, cap);
        if (!grown) {
            w->failed = 1;
            return;
        }
        w->data = grown;
        w->cap = cap;
    }
    memcpy(w->data + w->len, bytes, n);
    w->len += n;
}

static void put_u64(wire_writer *w, uint64_t v, int bytes)
{
    uint8_t b[8];
    for (int i = 0; i < bytes; i++) b[i] = (uint8_t)(v >> (8 * i));
    put_bytes(w, b, (size_t)bytes);
}

static void put_u32(wire_writer *w, uint32_t v) { put_u64(w, v, 4); }

static void put_text(wire_writer *w, const char *s)
{
    size_t n = strlen(s);
    if (n > WIRE_MAX_TEXT) n = WIRE_MAX_TEXT;
    put_u32(w, (uint32_t)n);
    put_bytes(w, s, n);
}

typedef struct {
    const uint8_t *p;
    size_t left;
    int bad;         /* ran past the end, or a length out of range */
    int no_memory;
} wire_reader;

static uint64_t get_u64(wire_reader *r, int bytes)
{
    if (r->bad || r->left < (size_t)bytes) {
        r->bad = 1;
        return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) v |= (uint64_t)r->p[i] << (8 * i);
    r->p += bytes;
    r->left -= (size_t)bytes;
    return v;
}

static uint32_t get_u32(wire_reader *r) { return (uint32_t)get_u64(r, 4); }

/* A NUL-terminated copy, or NULL (r->bad or r->no_memory set). */
static char *get_text(wire_reader *r)
{
    uint32_t n = get_u32(r);
    if (r->bad || n > WIRE_MAX_TEXT || n > r->left) {
        r->bad = 1;
        return NULL;
    }
    char *s = malloc((size_t)n + 1);
    if (!s) {
        r->no_memory = 1;
        return NULL;
    }
    memcpy(s, r->p, n);
    s[n] = '\0';
    r->p += n;
    r->left -= n;
    return s;
}

/* A count of records of at least min_bytes each, checked against what is left. */
static uint32_t get_count(wire_reader *r, size_t min_bytes)
{
    uint32_t n = get_u32(r);
    if (!r->bad && n > r->left / min_bytes) r->bad = 1;
    return r->bad ? 0 : n;
}

static int reader_status(const wire_reader *r) { return r->no_memory ? IP_ENOMEM : r->bad ? IP_EFORMAT : IP_OK; }

void wire_writer_free(wire_writer *w)
{
    free(w->data);
    memset(w, 0, sizeof *w);
}

int wire_encode_ask(wire_writer *w, const wire_ask *a)
{
    w->len = 0;
    w->failed = 0;
    put_u32(w, a->want);
    put_u32(w, a->final);
    put_u32(w, a->pid);
    put_u64(w, a->pid_namespace, 8);
    put_text(w, a->host);
    put_u32(w, a->n_results);
    for (uint32_t i = 0; i < a->n_results; i++) {
        put_u32(w, a->results[i].index);
        put_u32(w, (uint32_t)a->results[i].rc);
        put_u32(w, a->results[i].resumed);
        put_text(w, a->results[i].message ? a->results[i].message : "");
    }
    put_u32(w, a->n_returned);
    for (uint32_t i = 0; i < a->n_returned; i++) put_u32(w, a->returned[i]);
    return w->failed ? IP_ENOMEM : IP_OK;
}

int wire_decode_ask(const void *data, size_t len, wire_ask *a)
{
    wire_reader r = { data, len, 0, 0 };
    memset(a, 0, sizeof *a);
    a->want = get_u32(&r);
    a->final = get_u32(&r);
    a->pid = get_u32(&r);
    a->pid_namespace = get_u64(&r, 8);
    char *host = get_text(&r);
    if (host) snprintf(a->host, sizeof a->host, "%s", host);
    free(host);
    a->n_results = get_count(&r, 16);
    if (a->n_results && !(a->results = calloc(a->n_results, sizeof *a->results))) r.no_memory = 1;
    for (uint32_t i = 0; i < a->n_results && !r.bad && !r.no_memory; i++) {
        a->results[i].index = get_u32(&r);
        a->results[i].rc = (int32_t)get_u32(&r);
        a->results[i].resumed = get_u32(&r);
        a->results[i].message = get_text(&r);
    }
    a->n_returned = get_count(&r, 4);
    if (a->n_returned && !r.no_memory && !(a->returned = calloc(a->n_returned, sizeof *a->returned))) r.no_memory = 1;
    for (uint32_t i = 0; i < a->n_returned && !r.bad && !r.no_memory; i++) a->returned[i] = get_u32(&r);
    if (!r.bad && r.left) r.bad = 1;
    int rc = reader_status(&r);
    if (rc != IP_OK) wire_ask_free(a);
    return rc;
}

void wire_ask_free(wire_ask *a)
{
    for (uint32_t i = 0; a->results && i < a->n_results; i++) free(a->results[i].message);
    free(a->results);
    free(a->returned);
    a->results = NULL;
    a->returned = NULL;
    a->n_results = a->n_returned = 0;
}

int wire_encode_work(wire_writer *w, const wire_work *k)
{
    w->len = 0;
    w->failed = 0;
    put_u32(w, k->end);
    put_u32(w, k->stop);
    put_u32(w, k->release);
    put_u32(w, k->n);
    for (uint32_t i = 0; i < k->n; i++) {
        put_u32(w, k->items[i].index);
        put_u64(w, k->items[i].size, 8);
        put_u32(w, k->items[i].format);
        put_text(w, k->items[i].in);
        put_text(w, k->items[i].out);
    }
    return w->failed ? IP_ENOMEM : IP_OK;
}

int wire_decode_work(const void *data, size_t len, wire_work *k)
{
    wire_reader r = { data, len, 0, 0 };
    memset(k, 0, sizeof *k);
    k->end = get_u32(&r);
    k->stop = get_u32(&r);
    k->release = get_u32(&r);
    k->n = get_count(&r, 24);
    if (k->n && !(k->items = calloc(k->n, sizeof *k->items))) r.no_memory = 1;
    for (uint32_t i = 0; i < k->n && !r.bad && !r.no_memory; i++) {
        wire_item *it = &k->items[i];
        it->index = get_u32(&r);
        it->size = get_u64(&r, 8);
        it->format = get_u32(&r);
        it->in = get_text(&r);
        it->out = get_text(&r);
    }
    if (!r.bad && r.left) r.bad = 1;
    int rc = reader_status(&r);
    if (rc != IP_OK) wire_work_free(k);
    return rc;
}

void wire_work_free(wire_work *k)
{
    for (uint32_t i = 0; k->items && i < k->n; i++) {
        free(k->items[i].in);
        free(k->items[i].out);
    }
    free(k->items);
    k->items = NULL;
    k->n = 0;
}
