/* The two messages of a folder run under mpirun, as bytes: a rank asks rank 0 (results of its
 * finished images, images it gives back unstarted, how many more it wants) and rank 0 answers
 * with images. Little-endian; every length is checked when read. */
#ifndef IMGPIPE_BATCH_MPI_WIRE_H
#define IMGPIPE_BATCH_MPI_WIRE_H
#include <stddef.h>
#include <stdint.h>

enum { WIRE_TAG_ASK = 1, WIRE_TAG_WORK = 2 };

/* How a finished rank ends: not yet (ask again), with a finalize, or without one: Open MPI's
 * finalize waits for every rank, so it hangs once one has died. */
enum { WIRE_RELEASE_WAIT = 0, WIRE_RELEASE_FINALIZE = 1, WIRE_RELEASE_EXIT = 2 };

typedef struct {
    uint32_t index;      /* the image's place in rank 0's list */
    int32_t rc;          /* IP_OK or the error */
    uint32_t resumed;    /* skipped: its output existed */
    char *message;       /* the error's text, "" when none */
} wire_result;

typedef struct {
    uint32_t want;           /* images it can take now */
    uint32_t final;          /* it is done: nothing in flight, nothing more wanted */
    uint32_t pid;            /* who it is, so rank 0 can tell when it died */
    uint64_t pid_namespace;  /* pids compare only within one namespace of one host */
    char host[64];
    wire_result *results;
    uint32_t n_results;
    uint32_t *returned;      /* images handed to it that it never started */
    uint32_t n_returned;
} wire_ask;

typedef struct {
    uint32_t index;
    uint64_t size;           /* input bytes */
    uint32_t format;         /* io_format of the input */
    char *in, *out;
} wire_item;

typedef struct {
    uint32_t end;            /* no more images will come */
    uint32_t stop;           /* stop: give back the images not started */
    uint32_t release;        /* WIRE_RELEASE_*, for a rank that has sent its final request */
    wire_item *items;
    uint32_t n;
} wire_work;

typedef struct {
    uint8_t *data;
    size_t len, cap;
    int failed;              /* out of memory: the message is incomplete */
} wire_writer;

/* Encoders append to w (emptied first); IP_OK or IP_ENOMEM. */
int wire_encode_ask(wire_writer *w, const wire_ask *a);
int wire_encode_work(wire_writer *w, const wire_work *k);
void wire_writer_free(wire_writer *w);

/* Decoders fill *a or *k with copies; IP_OK, IP_EFORMAT for a malformed message, or IP_ENOMEM. */
int wire_decode_ask(const void *data, size_t len, wire_ask *a);
int wire_decode_work(const void *data, size_t len, wire_work *k);
void wire_ask_free(wire_ask *a);
void wire_work_free(wire_work *k);
#endif
