/* The band executor's device table: a segment's row buffers in GPU memory, its stages through
 * run_gpu. What overlaps: input bands go up on their own stream from a ring of two pinned
 * staging buffers into a ring of two device buffers, so the upload of band k+1 runs beside the
 * stage work of band k on the compute stream; each band's output rows come down (on the compute
 * stream, after its stages) into one of two pinned buffers and reach the sink only during the
 * next push, so the device works on band k while the host decodes band k+1 and encodes band k-1.
 * A stage without run_gpu makes a round trip (down, run_cpu, up), as in the whole-image path. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "stream/band_internal.h"
#include "gpu/gpu.h"
#include "base/image.h"

#define BAND_GPU_PITCH 256
#define BAND_GPU_MAX_STEPS 64

typedef struct {
    void *ptr;
    size_t bytes;
} pinned_buf;

typedef struct {
    int pending;
    unsigned long seq;
    ip_image rows;
    int y0;
} held_rows;

typedef struct {
    void *compute, *upload;
    void *up_done[2], *consumed[2], *out_done[2];
    void *in_dev[2];
    size_t in_dev_bytes[2];
    pinned_buf in_pin[2], out_pin[2], trip[2];
    int in_slot, in_used[2], out_slot;
    held_rows held[2];
    unsigned long seq;
    void *scratch;                 /* device scratch for run_gpu and reduce_band */
    size_t scratch_bytes;
    void *t0[2][BAND_GPU_MAX_STEPS], *t1[2][BAND_GPU_MAX_STEPS];   /* per step, two bands' worth */
    int timed[2][BAND_GPU_MAX_STEPS], t_set;
    size_t bytes, peak;
} gpu_state;

static gpu_state *state_of(band_segment *s) { return s->dev; }

static int sync_all(gpu_state *g, char *err, size_t errlen)
{
    int rc = gpu_stream_sync(g->compute, err, errlen);
    return rc == IP_OK ? gpu_stream_sync(g->upload, err, errlen) : rc;
}

/* gpu_event_record says nothing of why: the message is given here. */
static int record(void *event, void *stream, char *err, size_t errlen)
{
    int rc = gpu_event_record(event, stream);
    if (rc != IP_OK) snprintf(err, errlen, "recording a GPU event failed");
    return rc;
}

static int dev_alloc(band_segment *s, void **ptr, size_t bytes, char *err, size_t errlen)
{
    gpu_state *g = state_of(s);
    int rc = gpu_malloc(ptr, bytes, err, errlen);
    if (rc != IP_OK) return rc;
    g->bytes += bytes;
    if (g->bytes > g->peak) g->peak = g->bytes;
    return IP_OK;
}

/* Waits for queued work first: a buffer is freed only when nothing on the device still uses it. */
static void dev_release(band_segment *s, void *ptr, size_t bytes)
{
    gpu_state *g = state_of(s);
    if (!ptr) return;
    gpu_select(s->cfg.gpu_index, NULL, 0);   /* a segment may be destroyed on another thread */
    sync_all(g, NULL, 0);
    gpu_free(ptr);
    g->bytes -= bytes;
}

static int dev_copy(band_segment *s, void *dst, size_t dst_pitch, const void *src, size_t src_pitch, size_t row_bytes,
                    size_t rows, char *err, size_t errlen)
{
    if (!rows || !row_bytes) return IP_OK;
    return gpu_copy2d(dst, dst_pitch, src, src_pitch, row_bytes, rows, GPU_D2D, state_of(s)->compute, err, errlen);
}

/* A device buffer of at least bytes; its contents are not kept. */
static int dev_reserve(band_segment *s, void **ptr, size_t *have, size_t bytes, char *err, size_t errlen)
{
    if (bytes <= *have && *ptr) return IP_OK;
    dev_release(s, *ptr, *have);
    *ptr = NULL;
    *have = 0;
    int rc = dev_alloc(s, ptr, bytes, err, errlen);
    if (rc == IP_OK) *have = bytes;
    return rc;
}

static int pinned_reserve(gpu_state *g, pinned_buf *b, size_t bytes, char *err, size_t errlen)
{
    if (bytes <= b->bytes && b->ptr) return IP_OK;
    int rc = sync_all(g, err, errlen);
    gpu_host_free(b->ptr);
    b->ptr = NULL;
    b->bytes = 0;
    if (rc == IP_OK) rc = gpu_host_alloc(&b->ptr, bytes ? bytes : 1, 0, err, errlen);
    if (rc == IP_OK) b->bytes = bytes;
    return rc;
}

/* Pinned trip buffer t grown to hold rows of shape, packed: host, a view of it. */
static int trip_rows(gpu_state *g, int t, const ip_shape *shape, ip_image *host, char *msg, size_t msglen)
{
    size_t row = img_row_bytes(shape), n = (size_t)shape->height;
    if (row && n > SIZE_MAX / row) return IP_ELIMIT;
    int rc = pinned_reserve(g, &g->trip[t], row * n, msg, msglen);
    *host = (ip_image){ g->trip[t].ptr, (ptrdiff_t)row, *shape, 0 };
    return rc;
}

/* A stage without run_gpu: its rows down, run_cpu, the result up, on the compute stream. */
static int round_trip(band_segment *s, const plan_step *st, const ip_image *in, ip_image *out, const ip_needs *needs,
                      char *msg, size_t msglen)
{
    gpu_state *g = state_of(s);
    ip_image h_in, h_out;
    int rc = trip_rows(g, 0, &in->shape, &h_in, msg, msglen);
    if (rc == IP_OK) rc = trip_rows(g, 1, &out->shape, &h_out, msg, msglen);
    if (rc == IP_OK) rc = band_host_scratch(s, needs->scratch_bytes, msg, msglen);
    return rc == IP_OK ? stage_round_trip(st, &s->env, s->scratch, needs, in, out, &h_in, &h_out, msg, msglen) : rc;
}

static int dev_run(band_segment *s, int k, const ip_image *in, ip_image *out, const ip_needs *needs, char *msg,
                   size_t msglen)
{
    gpu_state *g = state_of(s);
    const plan_step *st = s->steps[k].st;
    int timed = k < BAND_GPU_MAX_STEPS && g->t0[g->t_set][k];
    if (timed) gpu_event_record(g->t0[g->t_set][k], g->compute);
    int rc;
    if (st->plugin->stage->run_gpu) {
        rc = dev_reserve(s, &g->scratch, &g->scratch_bytes, needs->gpu_scratch_bytes, msg, msglen);
        if (rc == IP_OK) rc = stage_call_gpu(st, &s->env, g->scratch, needs, in, out, msg, msglen);
    } else {
        rc = round_trip(s, st, in, out, needs, msg, msglen);
    }
    if (timed) {
        gpu_event_record(g->t1[g->t_set][k], g->compute);
        g->timed[g->t_set][k] = 1;
    }
    return rc;
}

/* A reduction with a GPU path counts device rows on the compute stream (its partial complete when
 * reduce_band returns); one without counts them on the host after a download. */
static int dev_reduce(band_segment *s, int k, const ip_image *rows, void *partial, const ip_needs *needs, char *msg,
                      size_t msglen)
{
    gpu_state *g = state_of(s);
    const plan_step *st = s->steps[k].st;
    if (st->plugin->stage->run_gpu) {
        int rc = dev_reserve(s, &g->scratch, &g->scratch_bytes, needs->gpu_scratch_bytes, msg, msglen);
        return rc == IP_OK ? stage_call_reduce_gpu(st, &s->env, g->scratch, needs, rows, partial, msg, msglen) : rc;
    }
    ip_image host;
    int rc = trip_rows(g, 0, &rows->shape, &host, msg, msglen);
    if (rc == IP_OK) rc = stage_rows_down(&s->env, rows, &host, msg, msglen);
    if (rc == IP_OK) rc = band_host_scratch(s, needs->scratch_bytes, msg, msglen);
    return rc == IP_OK ? stage_call_reduce_cpu(st, &s->env, s->scratch, needs, &host, partial, msg, msglen) : rc;
}

/* Adds the times of the band that last used event set `set` (long finished by now). */
static void collect_times(band_segment *s, int set)
{
    gpu_state *g = state_of(s);
    for (int k = 0; k < s->n && k < BAND_GPU_MAX_STEPS; k++) {
        if (!g->timed[set][k]) continue;
        float ms = gpu_event_ms(g->t0[set][k], g->t1[set][k]);
        if (ms > 0) s->times.stage_ms[k] += ms;
        g->timed[set][k] = 0;
    }
}

/* Host rows into pinned slot j, up on the upload stream into device slot j once the compute
 * stream is done with what slot j held two bands ago; the compute stream waits for the upload. */
static int dev_feed(band_segment *s, const ip_image *host_rows, ip_image *rows, char *err, size_t errlen)
{
    gpu_state *g = state_of(s);
    int j = g->in_slot;
    size_t row = img_row_bytes(&host_rows->shape), pitch = s->steps[0].ctx.pitch, n = (size_t)host_rows->shape.height;
    if (n > SIZE_MAX / pitch) {
        snprintf(err, errlen, "a band of %zu rows is too large to address", n);
        return IP_ELIMIT;
    }
    g->t_set ^= 1;
    collect_times(s, g->t_set);
    int rc = g->in_used[j] ? gpu_event_sync(g->up_done[j], err, errlen) : IP_OK;
    if (rc == IP_OK) rc = pinned_reserve(g, &g->in_pin[j], row * n, err, errlen);
    if (rc == IP_OK) rc = dev_reserve(s, &g->in_dev[j], &g->in_dev_bytes[j], pitch * n, err, errlen);
    if (rc != IP_OK) return rc;
    for (size_t y = 0; y < n; y++)
        memcpy((char *)g->in_pin[j].ptr + y * row, (const char *)host_rows->data + (ptrdiff_t)y * host_rows->stride, row);
    if (g->in_used[j]) rc = gpu_stream_wait_event(g->upload, g->consumed[j], err, errlen);
    if (rc == IP_OK && row) rc = gpu_copy2d(g->in_dev[j], pitch, g->in_pin[j].ptr, row, row, n, GPU_H2D, g->upload, err, errlen);
    if (rc == IP_OK) rc = record(g->up_done[j], g->upload, err, errlen);
    if (rc == IP_OK) rc = gpu_stream_wait_event(g->compute, g->up_done[j], err, errlen);
    *rows = (ip_image){ g->in_dev[j], (ptrdiff_t)pitch, host_rows->shape, 1 };
    return rc;
}

static int dev_fed_done(band_segment *s, char *err, size_t errlen)
{
    gpu_state *g = state_of(s);
    int j = g->in_slot;
    int rc = record(g->consumed[j], g->compute, err, errlen);
    g->in_used[j] = 1;
    g->in_slot ^= 1;
    return rc;
}

static int flush(band_segment *s, int slot, const band_sink *sink, char *err, size_t errlen)
{
    gpu_state *g = state_of(s);
    held_rows *h = &g->held[slot];
    if (!h->pending) return IP_OK;
    h->pending = 0;
    int rc = gpu_event_sync(g->out_done[slot], err, errlen);
    return rc == IP_OK ? sink->rows(sink->user, &h->rows, h->y0, err, errlen) : rc;
}

/* This band's rows go down into pinned slot j; the band before reaches the sink meanwhile. */
static int dev_emit(band_segment *s, const ip_image *rows, int y0, const band_sink *sink, char *err, size_t errlen)
{
    gpu_state *g = state_of(s);
    int j = g->out_slot;
    size_t row = img_row_bytes(&rows->shape), n = (size_t)rows->shape.height;
    /* sized once for the most a push can make (a band and the halos) rather than grown band by band */
    size_t most = s->cfg.band_rows > 0 ? (size_t)s->cfg.band_rows : n;
    for (int k = 0; k < s->n; k++) most += (size_t)s->steps[k].halo;
    int rc = flush(s, j, sink, err, errlen);   /* a slot still held (not expected): out first, in order */
    if (rc == IP_OK) rc = pinned_reserve(g, &g->out_pin[j], row * (n > most ? n : most), err, errlen);
    if (rc == IP_OK && row)
        rc = gpu_copy2d(g->out_pin[j].ptr, row, rows->data, (size_t)rows->stride, row, n, GPU_D2H, g->compute, err, errlen);
    if (rc == IP_OK) rc = record(g->out_done[j], g->compute, err, errlen);
    if (rc != IP_OK) return rc;
    g->held[j] = (held_rows){ 1, ++g->seq, { g->out_pin[j].ptr, (ptrdiff_t)row, rows->shape, 0 }, y0 };
    g->out_slot ^= 1;
    return flush(s, j ^ 1, sink, err, errlen);
}

static int dev_drain(band_segment *s, const band_sink *sink, char *err, size_t errlen)
{
    gpu_state *g = state_of(s);
    int older = g->held[0].pending && (!g->held[1].pending || g->held[0].seq < g->held[1].seq) ? 0 : 1;
    int rc = flush(s, older, sink, err, errlen);
    if (rc == IP_OK) rc = flush(s, older ^ 1, sink, err, errlen);
    if (rc == IP_OK) rc = sync_all(g, err, errlen);
    collect_times(s, 0);
    collect_times(s, 1);
    return rc;
}

static void dev_destroy(band_segment *s)
{
    gpu_state *g = state_of(s);
    if (!g) return;
    gpu_select(s->cfg.gpu_index, NULL, 0);
    if (g->compute) sync_all(g, NULL, 0);
    for (int j = 0; j < 2; j++) {
        dev_release(s, g->in_dev[j], g->in_dev_bytes[j]);
        gpu_host_free(g->in_pin[j].ptr);
        gpu_host_free(g->out_pin[j].ptr);
        gpu_host_free(g->trip[j].ptr);
        gpu_event_destroy(g->up_done[j]);
        gpu_event_destroy(g->consumed[j]);
        gpu_event_destroy(g->out_done[j]);
        for (int k = 0; k < BAND_GPU_MAX_STEPS; k++) {
            gpu_event_destroy(g->t0[j][k]);
            gpu_event_destroy(g->t1[j][k]);
        }
    }
    dev_release(s, g->scratch, g->scratch_bytes);
    gpu_stream_destroy(g->compute);
    gpu_stream_destroy(g->upload);
    free(g);
    s->dev = NULL;
}

static const band_ops gpu_ops = { BAND_GPU_PITCH, dev_alloc, dev_release, dev_copy, dev_run, dev_reduce, dev_feed,
                                  dev_fed_done, dev_emit, dev_drain, dev_destroy };

int band_gpu_attach(band_segment *s, int n_steps, char *err, size_t errlen)
{
    gpu_state *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    s->dev = g;
    s->ops = &gpu_ops;
    int rc = gpu_select(s->cfg.gpu_index, err, errlen);
    /* urgent: a streamed run's GPU strip compressor would otherwise hold the SMs the stages wait for */
    if (rc == IP_OK) rc = gpu_stream_create_urgent(&g->compute, err, errlen);
    s->env.stream = g->compute;
    if (rc == IP_OK) rc = gpu_stream_create_urgent(&g->upload, err, errlen);
    for (int j = 0; j < 2 && rc == IP_OK; j++) {
        rc = gpu_event_create(&g->up_done[j], err, errlen);
        if (rc == IP_OK) rc = gpu_event_create(&g->consumed[j], err, errlen);
        if (rc == IP_OK) rc = gpu_event_create(&g->out_done[j], err, errlen);
        for (int k = 0; k < n_steps && k < BAND_GPU_MAX_STEPS && rc == IP_OK; k++) {
            rc = gpu_event_create(&g->t0[j][k], err, errlen);
            if (rc == IP_OK) rc = gpu_event_create(&g->t1[j][k], err, errlen);
        }
    }
    return rc;
}

size_t band_gpu_peak(const band_segment *s) { return s->dev ? ((const gpu_state *)s->dev)->peak : 0; }
