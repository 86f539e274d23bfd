#define _POSIX_C_SOURCE 200809L
#include "stream/band.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "stream/band_internal.h"
#include "base/image.h"
#include "base/mono_clock.h"
#include "exec/stage_call.h"

band_window band_window_whole(int height) { return (band_window){ 0, height, 0, height }; }

band_window band_window_of(int lo, int hi, int halo_sum, int height)
{
    band_window w = { lo - halo_sum > 0 ? lo - halo_sum : 0, hi + halo_sum < height ? hi + halo_sum : height, lo, hi };
    return w;
}

int band_plan_rows(const band_step *b, int rows, ip_needs *needs, char *err, size_t errlen)
{
    const ip_stage *stage = b->st->plugin->stage;
    ip_shape in = b->st->in, out;
    in.height = rows;
    memset(needs, 0, sizeof *needs);
    char msg[512] = "";
    int rc = stage->plan(b->st->state, &in, &out, needs, msg, sizeof msg);
    return rc == IP_OK ? IP_OK : stage_failed_message(b->st, rc, msg, err, errlen);
}

/* The host table: rows in malloc'd memory, stages through run_cpu, rows straight to the sink. */
static int host_alloc(band_segment *s, void **ptr, size_t bytes, char *err, size_t errlen)
{
    (void)s;
    *ptr = img_big_malloc(bytes ? bytes : 1);
    if (*ptr) return IP_OK;
    snprintf(err, errlen, "out of memory allocating %zu bytes for a band", bytes);
    return IP_ENOMEM;
}

static void host_release(band_segment *s, void *ptr, size_t bytes)
{
    (void)s;
    (void)bytes;
    free(ptr);
}

static int host_copy(band_segment *s, void *dst, size_t dst_pitch, const void *src, size_t src_pitch, size_t row_bytes,
                     size_t rows, char *err, size_t errlen)
{
    (void)s;
    (void)err;
    (void)errlen;
    for (size_t y = 0; y < rows; y++)
        memcpy((char *)dst + y * dst_pitch, (const char *)src + y * src_pitch, row_bytes);
    return IP_OK;
}

int band_host_scratch(band_segment *s, size_t bytes, char *msg, size_t msglen)
{
    if (bytes <= s->scratch_bytes) return IP_OK;
    free(s->scratch);
    s->scratch = malloc(bytes);
    s->scratch_bytes = s->scratch ? bytes : 0;
    if (s->scratch) return IP_OK;
    snprintf(msg, msglen, "out of memory allocating %zu bytes of scratch", bytes);
    return IP_ENOMEM;
}

static int host_run(band_segment *s, int k, const ip_image *in, ip_image *out, const ip_needs *needs, char *msg,
                    size_t msglen)
{
    const plan_step *st = s->steps[k].st;
    int rc = band_host_scratch(s, needs->scratch_bytes, msg, msglen);
    return rc == IP_OK ? stage_call_cpu(st, &s->env, s->scratch, needs, in, out, msg, msglen) : rc;
}

static int host_reduce(band_segment *s, int k, const ip_image *rows, void *partial, const ip_needs *needs, char *msg,
                       size_t msglen)
{
    const plan_step *st = s->steps[k].st;
    int rc = band_host_scratch(s, needs->scratch_bytes, msg, msglen);
    return rc == IP_OK ? stage_call_reduce_cpu(st, &s->env, s->scratch, needs, rows, partial, msg, msglen) : rc;
}

static int host_feed(band_segment *s, const ip_image *host_rows, ip_image *rows, char *err, size_t errlen)
{
    (void)s;
    (void)err;
    (void)errlen;
    *rows = *host_rows;
    return IP_OK;
}

static int host_fed_done(band_segment *s, char *err, size_t errlen)
{
    (void)s;
    (void)err;
    (void)errlen;
    return IP_OK;
}

static int host_emit(band_segment *s, const ip_image *rows, int y0, const band_sink *sink, char *err, size_t errlen)
{
    (void)s;
    return sink->rows(sink->user, rows, y0, err, errlen);
}

static int host_drain(band_segment *s, const band_sink *sink, char *err, size_t errlen)
{
    (void)s;
    (void)sink;
    (void)err;
    (void)errlen;
    return IP_OK;
}

static void host_destroy(band_segment *s) { (void)s; }

static const band_ops host_ops = { 1, host_alloc, host_release, host_copy, host_run, host_reduce, host_feed,
                                   host_fed_done, host_emit, host_drain, host_destroy };

/* Room for rows more rows after the held ones, keeping those. */
static int row_buf_room(band_segment *s, row_buf *b, size_t rows, char *err, size_t errlen)
{
    size_t held = (size_t)(b->hi - b->lo), need = held + rows;
    if (need <= b->cap_rows) return IP_OK;
    if (b->pitch && need > SIZE_MAX / b->pitch) {
        snprintf(err, errlen, "a band of %zu rows is too large to address", need);
        return IP_ELIMIT;
    }
    if (need < b->hint_rows) need = b->hint_rows;
    void *grown;
    int rc = s->ops->alloc(s, &grown, need * b->pitch, err, errlen);
    if (rc == IP_OK && held) rc = s->ops->copy(s, grown, b->pitch, b->data, b->pitch, b->pitch, held, err, errlen);
    if (rc != IP_OK) {
        if (grown) s->ops->release(s, grown, need * b->pitch);
        return rc;
    }
    s->ops->release(s, b->data, b->cap_rows * b->pitch);
    b->data = grown;
    b->cap_rows = need;
    return IP_OK;
}

static unsigned char *row_at(const row_buf *b, int y) { return b->data + (size_t)(y - b->lo) * b->pitch; }

static ip_image view(void *data, size_t pitch, const ip_shape *shape, int rows, int on_device)
{
    ip_image im = { data, (ptrdiff_t)pitch, *shape, on_device };
    im.shape.height = rows;
    return im;
}

/* Rows [keep, hi) moved to the front. Copies never overlap (a device copy may not), so they go
 * in pieces no taller than the distance moved. */
static int row_buf_drop_to(band_segment *s, row_buf *b, int keep, char *err, size_t errlen)
{
    if (keep <= b->lo) return IP_OK;
    size_t shift = (size_t)(keep - b->lo), kept = (size_t)(b->hi - keep);
    for (size_t y = 0; y < kept; y += shift) {
        size_t n = kept - y < shift ? kept - y : shift;
        int rc = s->ops->copy(s, b->data + y * b->pitch, b->pitch, b->data + (y + shift) * b->pitch, b->pitch,
                              b->pitch, n, err, errlen);
        if (rc != IP_OK) return rc;
    }
    b->lo = keep;
    return IP_OK;
}

static int on_device(const band_segment *s) { return s->cfg.place == BAND_ON_GPU; }

static int run_stage(band_segment *s, int k, const ip_image *in, ip_image *out, char *err, size_t errlen)
{
    ip_needs needs;
    int rc = band_plan_rows(&s->steps[k], in->shape.height, &needs, err, errlen);
    if (rc != IP_OK) return rc;
    char msg[512] = "";
    rc = s->ops->run(s, k, in, out, &needs, msg, sizeof msg);
    return rc == IP_OK ? IP_OK : stage_failed_message(s->steps[k].st, rc, msg, err, errlen);
}

static int push_from(band_segment *s, int k, const ip_image *rows, int y0, const band_sink *sink, char *err,
                     size_t errlen);

static int push_point(band_segment *s, int k, const ip_image *rows, int y0, const band_sink *sink, char *err,
                      size_t errlen)
{
    band_step *b = &s->steps[k];
    int n = rows->shape.height;
    b->out.lo = b->out.hi = 0;
    int rc = row_buf_room(s, &b->out, (size_t)n, err, errlen);
    if (rc != IP_OK) return rc;
    ip_image out = view(b->out.data, b->out.pitch, &b->st->out, n, on_device(s));
    double t0 = now_ms();
    rc = run_stage(s, k, rows, &out, err, errlen);
    s->times.stage_ms[k] += on_device(s) ? 0 : now_ms() - t0;
    b->done = y0 + n;
    return rc == IP_OK ? push_from(s, k + 1, &out, y0, sink, err, errlen) : rc;
}

/* Only the rows the window owns count: its context rows are counted by the worker owning them. */
static int push_reduction(band_segment *s, int k, const ip_image *rows, int y0, const band_sink *sink, char *err,
                          size_t errlen)
{
    band_step *b = &s->steps[k];
    const ip_stage *stage = b->st->plugin->stage;
    int lo = y0 > s->win.own_lo ? y0 : s->win.own_lo;
    int hi = y0 + rows->shape.height < s->win.own_hi ? y0 + rows->shape.height : s->win.own_hi;
    double t0 = now_ms();
    if (hi > lo) {
        ip_image owned = *rows;
        owned.data = (char *)rows->data + (ptrdiff_t)(lo - y0) * rows->stride;
        owned.shape.height = hi - lo;
        ip_needs needs;
        int rc = band_plan_rows(b, hi - lo, &needs, err, errlen);
        if (rc != IP_OK) return rc;
        char msg[512] = "";
        memset(b->partial, 0, b->partial_bytes);
        rc = s->ops->reduce(s, k, &owned, b->partial, &needs, msg, sizeof msg);
        if (rc != IP_OK) return stage_failed_message(b->st, rc, msg, err, errlen);
        stage->reduce_merge(b->st->state, &b->st->in, b->total, b->partial);
    }
    s->times.stage_ms[k] += now_ms() - t0;
    b->done = y0 + rows->shape.height;
    return push_from(s, k + 1, rows, y0, sink, err, errlen);
}

/* Appends the new rows to the context; makes every output row whose window now lies in rows
 * that have arrived (all of them once the window's last row has); keeps halo rows below the last
 * one made and the rows after it. The stage runs on its rows from done - halo, so the rows it
 * gets wrong at that artificial top edge, and at an artificial bottom one, are exactly the rows
 * not passed on; at the image's own top and bottom its border rule applies as on the whole image. */
static int push_area(band_segment *s, int k, const ip_image *rows, int y0, const band_sink *sink, char *err,
                     size_t errlen)
{
    band_step *b = &s->steps[k];
    int n = rows->shape.height, h = b->halo;
    int rc = row_buf_room(s, &b->ctx, (size_t)n, err, errlen);
    if (rc != IP_OK) return rc;
    if (b->ctx.hi == b->ctx.lo) b->ctx.lo = b->ctx.hi = y0;
    rc = s->ops->copy(s, row_at(&b->ctx, y0), b->ctx.pitch, rows->data, (size_t)rows->stride, b->in_row, (size_t)n,
                      err, errlen);
    if (rc != IP_OK) return rc;
    b->ctx.hi = y0 + n;
    int target = b->ctx.hi == s->height ? s->height : b->ctx.hi - h;
    if (target > b->out_hi) target = b->out_hi;
    if (target <= b->done) return IP_OK;
    int ext_lo = b->done - h > 0 ? b->done - h : 0;
    int ext_hi = target + h < s->height ? target + h : s->height;
    b->out.lo = b->out.hi = 0;
    if ((rc = row_buf_room(s, &b->out, (size_t)(ext_hi - ext_lo), err, errlen)) != IP_OK) return rc;
    ip_image in = view(row_at(&b->ctx, ext_lo), b->ctx.pitch, &b->st->in, ext_hi - ext_lo, on_device(s));
    ip_image out = view(b->out.data, b->out.pitch, &b->st->out, ext_hi - ext_lo, on_device(s));
    double t0 = now_ms();
    rc = run_stage(s, k, &in, &out, err, errlen);
    s->times.stage_ms[k] += on_device(s) ? 0 : now_ms() - t0;
    if (rc != IP_OK) return rc;
    ip_image made = view(b->out.data + (size_t)(b->done - ext_lo) * b->out.pitch, b->out.pitch, &b->st->out,
                         target - b->done, on_device(s));
    int from = b->done;
    b->done = target;
    rc = push_from(s, k + 1, &made, from, sink, err, errlen);
    int keep = target - h > b->ctx.lo ? target - h : b->ctx.lo;
    int drop_rc = row_buf_drop_to(s, &b->ctx, keep, err, errlen);
    return rc != IP_OK ? rc : drop_rc;
}

static int push_from(band_segment *s, int k, const ip_image *rows, int y0, const band_sink *sink, char *err,
                     size_t errlen)
{
    if (rows->shape.height <= 0) return IP_OK;
    if (k == s->n) {   /* a point stage or reduction last passes on context rows too: only own rows go out */
        int lo = y0 > s->win.own_lo ? y0 : s->win.own_lo;
        int hi = y0 + rows->shape.height < s->win.own_hi ? y0 + rows->shape.height : s->win.own_hi;
        if (hi <= lo) return IP_OK;
        ip_image own = *rows;
        own.data = (char *)rows->data + (ptrdiff_t)(lo - y0) * rows->stride;
        own.shape.height = hi - lo;
        return s->ops->emit(s, &own, lo, sink, err, errlen);
    }
    switch (s->steps[k].cls) {
    case IP_CLASS_AREA: return push_area(s, k, rows, y0, sink, err, errlen);
    case IP_CLASS_REDUCTION: return push_reduction(s, k, rows, y0, sink, err, errlen);
    default: return push_point(s, k, rows, y0, sink, err, errlen);
    }
}

int band_segment_push(band_segment *s, const ip_image *rows, int y0, const band_sink *sink, char *err,
                      size_t errlen)
{
    if (s->n == 0) return IP_EINVAL;
    const band_step *first = &s->steps[0];
    if (y0 != s->fed || rows->shape.height < 0 || y0 + rows->shape.height > s->win.in_hi ||
        rows->shape.width != first->st->in.width || rows->shape.channels != first->st->in.channels ||
        rows->shape.dtype != first->st->in.dtype) {
        snprintf(err, errlen, "band executor: rows %d.. arrived where rows %d.. were expected", y0, s->fed);
        return IP_EINVAL;
    }
    ip_image fed;
    int rc = rows->shape.height ? s->ops->feed(s, rows, &fed, err, errlen) : IP_OK;
    if (rc == IP_OK && rows->shape.height) rc = push_from(s, 0, &fed, y0, sink, err, errlen);
    if (rc == IP_OK && rows->shape.height) rc = s->ops->fed_done(s, err, errlen);
    s->fed = y0 + rows->shape.height;
    if (rc == IP_OK && s->fed == s->win.in_hi) rc = s->ops->drain(s, sink, err, errlen);
    return rc;
}

/* Each step's rows in and out of the window: an area stage passes on its input less its halo at
 * each edge that is not the image's. */
int band_segment_start(band_segment *s, const band_window *w, char *err, size_t errlen)
{
    if (w->in_lo < 0 || w->in_hi > s->height || w->in_lo > w->own_lo || w->own_hi > w->in_hi ||
        w->own_lo > w->own_hi) {
        snprintf(err, errlen, "band executor: window of rows %d..%d (making %d..%d) does not fit the image of %d rows",
                 w->in_lo, w->in_hi, w->own_lo, w->own_hi, s->height);
        return IP_EINVAL;
    }
    s->win = *w;
    s->fed = w->in_lo;
    int lo = w->in_lo, hi = w->in_hi, after = 0;
    for (int k = 0; k < s->n; k++) after += s->steps[k].halo;
    for (int k = 0; k < s->n; k++) {
        band_step *b = &s->steps[k];
        b->in_lo = lo;
        b->in_hi = hi;
        after -= b->halo;
        if (b->cls == IP_CLASS_AREA) {
            /* no more than the stages after it read to make the window's own rows */
            lo = lo == 0 ? 0 : lo + b->halo;
            hi = hi == s->height ? hi : hi - b->halo;
            if (lo < w->own_lo - after) lo = w->own_lo - after;
            if (hi > w->own_hi + after) hi = w->own_hi + after;
            if (hi < lo) hi = lo;
        }
        b->out_lo = lo;
        b->out_hi = hi;
        b->done = b->cls == IP_CLASS_AREA ? lo : b->in_lo;
        b->ctx.lo = b->ctx.hi = b->in_lo;
        b->out.lo = b->out.hi = 0;
    }
    return IP_OK;
}

void band_segment_merge(band_segment *into, const band_segment *from)
{
    for (int k = 0; k < into->n && k < from->n; k++) {
        const band_step *b = &into->steps[k];
        if (b->cls == IP_CLASS_REDUCTION)
            b->st->plugin->stage->reduce_merge(b->st->state, &b->st->in, b->total, from->steps[k].total);
    }
}

int band_segment_finish(band_segment *s, char *err, size_t errlen)
{
    for (int k = 0; k < s->n; k++) {
        const band_step *b = &s->steps[k];
        if (b->cls != IP_CLASS_REDUCTION) continue;
        char msg[512] = "";
        double t0 = now_ms();
        int rc = stage_call_reduce_finish(b->st, &s->env, b->total, msg, sizeof msg);
        s->times.stage_ms[k] += now_ms() - t0;
        if (rc != IP_OK) return stage_failed_message(b->st, rc, msg, err, errlen);
    }
    return IP_OK;
}

static size_t pitch_of(size_t row, size_t align) { return (row + align - 1) / align * align; }

/* arriving: the most rows a step is handed at once for bands of cfg.band_rows rows (its halos
 * before it add up: an area stage hands on up to its halo more than it got, at the image's end). */
static int step_init(band_segment *s, band_step *b, const plan_step *st, size_t *arriving, char *err, size_t errlen)
{
    b->st = st;
    b->cls = band_step_class(st);
    b->halo = b->cls == IP_CLASS_AREA && st->needs.halo > 0 ? st->needs.halo : 0;
    if (s->cfg.band_rows > 0) {
        b->ctx.hint_rows = *arriving + 2 * (size_t)b->halo;
        b->out.hint_rows = *arriving + 2 * (size_t)b->halo;
        *arriving += (size_t)b->halo;
    }
    b->in_row = img_row_bytes(&st->in);
    b->out_row = img_row_bytes(&st->out);
    b->ctx.pitch = pitch_of(b->in_row, s->ops->pitch_align);
    b->out.pitch = pitch_of(b->out_row, s->ops->pitch_align);
    if (b->cls != IP_CLASS_REDUCTION) return IP_OK;
    b->partial_bytes = st->plugin->stage->partial_bytes(st->state, &st->in);
    b->total = calloc(1, b->partial_bytes ? b->partial_bytes : 1);
    b->partial = calloc(1, b->partial_bytes ? b->partial_bytes : 1);
    if (b->total && b->partial) return IP_OK;
    snprintf(err, errlen, "out of memory");
    return IP_ENOMEM;
}

int band_segment_create(band_segment **out, const plan *p, const band_seg *seg, const band_config *cfg, char *err,
                        size_t errlen)
{
    *out = NULL;
    if (seg->global || seg->first < 0 || seg->last > p->n || seg->last <= seg->first ||
        seg->last - seg->first > (int)(sizeof ((band_times *)0)->stage_ms / sizeof(double))) {
        snprintf(err, errlen, "band executor: not a segment of bands");
        return IP_EINVAL;
    }
    band_segment *s = calloc(1, sizeof *s);
    if (s) s->steps = calloc((size_t)(seg->last - seg->first), sizeof *s->steps);
    if (!s || !s->steps) {
        free(s);
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    s->ops = &host_ops;
    s->cfg = *cfg;
    s->env = (stage_env){ cfg->threads, cfg->input_path, NULL };
    s->height = p->steps[seg->first].in.height;
    int rc = cfg->place == BAND_ON_GPU ? band_gpu_attach(s, seg->last - seg->first, err, errlen) : IP_OK;
    size_t arriving = cfg->band_rows > 0 ? (size_t)cfg->band_rows : 0;
    for (int i = 0; rc == IP_OK && i < seg->last - seg->first; i++) {
        s->n = i + 1;
        rc = step_init(s, &s->steps[i], &p->steps[seg->first + i], &arriving, err, errlen);
    }
    if (rc == IP_OK) {
        band_window whole = band_window_whole(s->height);
        rc = band_segment_start(s, &whole, err, errlen);
    }
    if (rc != IP_OK) {
        band_segment_destroy(s);
        return rc;
    }
    *out = s;
    return IP_OK;
}

void band_segment_destroy(band_segment *s)
{
    if (!s) return;
    for (int i = 0; i < s->n; i++) {
        band_step *b = &s->steps[i];
        s->ops->release(s, b->ctx.data, b->ctx.cap_rows * b->ctx.pitch);
        s->ops->release(s, b->out.data, b->out.cap_rows * b->out.pitch);
        free(b->total);
        free(b->partial);
    }
    s->ops->destroy(s);
    free(s->steps);
    free(s->scratch);
    free(s);
}

const band_times *band_segment_times(const band_segment *s) { return &s->times; }

size_t band_segment_device_peak(const band_segment *s) { return on_device(s) ? band_gpu_peak(s) : 0; }
