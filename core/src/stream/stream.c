#define _POSIX_C_SOURCE 200809L
#include "stream/stream.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "base/image.h"
#include "stream/stream_overlap.h"
#include "base/mono_clock.h"
#include "exec/stage_call.h"

static int image_next(void *user, ip_image *rows, int *y0, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    stream_image_source *s = user;
    int left = s->img->shape.height - s->next_row, n = left < s->band_rows ? left : s->band_rows;
    *rows = *s->img;
    rows->data = (char *)s->img->data + (ptrdiff_t)s->next_row * s->img->stride;
    rows->shape.height = n;
    *y0 = s->next_row;
    s->next_row += n;
    return IP_OK;
}

stream_source stream_source_of_image(stream_image_source *s, const ip_image *img, int band_rows)
{
    s->img = img;
    s->band_rows = band_rows > 0 ? band_rows : 1;
    s->next_row = 0;
    return (stream_source){ .next = image_next, .user = s };
}

static int image_rows(void *user, const ip_image *rows, int y0, char *err, size_t errlen)
{
    stream_image_sink *s = user;
    size_t row = img_row_bytes(&s->img.shape);
    if (y0 != s->rows_in || y0 + rows->shape.height > s->img.shape.height || img_row_bytes(&rows->shape) != row) {
        snprintf(err, errlen, "rows %d.. arrived out of order", y0);
        return IP_EINVAL;
    }
    for (int y = 0; y < rows->shape.height; y++)
        memcpy((char *)s->img.data + (size_t)(y0 + y) * row, (const char *)rows->data + (ptrdiff_t)y * rows->stride, row);
    s->rows_in += rows->shape.height;
    return IP_OK;
}

int stream_image_sink_init(stream_image_sink *s, const ip_shape *shape, char *err, size_t errlen)
{
    s->rows_in = 0;
    return img_alloc(&s->img, shape, UINT64_MAX, err, errlen);
}

band_sink stream_sink_of_image(stream_image_sink *s) { return (band_sink){ image_rows, s }; }

/* Sources and sinks timed, so the profile can tell decoding and encoding from the stages. */
typedef struct {
    const stream_source *src;
    const band_sink *sink;
    stream_profile *prof;
    double *source_ms, *sink_ms;   /* where the time in src and sink adds up (NULL: not counted) */
} timed;

static int timed_rows(void *user, const ip_image *rows, int y0, char *err, size_t errlen)
{
    timed *t = user;
    double t0 = now_ms();
    int rc = t->sink->rows(t->sink->user, rows, y0, err, errlen);
    *t->sink_ms += now_ms() - t0;
    return rc;
}

static int timed_next(const timed *t, ip_image *rows, int *y0, char *err, size_t errlen)
{
    double t0 = now_ms();
    int rc = t->src->next(t->src->user, rows, y0, err, errlen);
    if (t->source_ms) *t->source_ms += now_ms() - t0;
    return rc;
}

static int timed_next_of(void *user, ip_image *rows, int *y0, char *err, size_t errlen)
{
    return timed_next(user, rows, y0, err, errlen);
}

static band_config band_config_of(const stream_options *o)
{
    band_config cfg = { o->place, o->gpu_ids[0], o->threads, o->input_path, o->band_rows };
    return cfg;
}

/* One worker: the source's rows pushed through one segment executor, in bands. */
static int run_one_executor(const plan *p, const band_seg *seg, const timed *t, const band_sink *sink,
                            const stream_options *o, band_times *times, size_t *peak, char *err, size_t errlen)
{
    band_segment *bs;
    band_config cfg = band_config_of(o);
    int rc = band_segment_create(&bs, p, seg, &cfg, err, errlen);
    if (rc != IP_OK) return rc;
    for (;;) {
        ip_image rows;
        int y0;
        rc = timed_next(t, &rows, &y0, err, errlen);
        if (rc != IP_OK || rows.shape.height == 0) break;
        /* a source's block may be taller than the band the memory allows: it goes in pieces */
        for (int done = 0; rc == IP_OK && done < rows.shape.height; done += o->band_rows) {
            ip_image piece = rows;
            piece.data = (char *)rows.data + (ptrdiff_t)done * rows.stride;
            piece.shape.height = rows.shape.height - done < o->band_rows ? rows.shape.height - done : o->band_rows;
            rc = band_segment_push(bs, &piece, y0 + done, sink, err, errlen);
        }
        if (rc != IP_OK) break;
    }
    if (rc == IP_OK) rc = band_segment_finish(bs, err, errlen);
    *times = *band_segment_times(bs);
    *peak = band_segment_device_peak(bs);
    band_segment_destroy(bs);
    return rc;
}

static void add_worker_stats(stream_profile *prof, const band_worker_stat *stats, const band_workers_waits *waits,
                             int n)
{
    prof->n_workers = n;
    prof->chunk_waits.fill_wait_ms += waits->fill_wait_ms;
    prof->chunk_waits.emit_wait_ms += waits->emit_wait_ms;
    for (int i = 0; i < n; i++) {
        prof->workers[i].gpu = stats[i].gpu;
        prof->workers[i].chunks += stats[i].chunks;
        prof->workers[i].busy_ms += stats[i].busy_ms;
    }
}

/* Pulls every row of the source through one segment of bands into sink: one executor, or the
 * rows dealt in chunks of a band to several. */
static int run_bands(const plan *p, const band_seg *seg, const timed *t, const band_sink *sink,
                     const stream_options *o, char *err, size_t errlen)
{
    band_times times;
    size_t peak = 0;
    int rc;
    if (o->n_workers > 1) {
        band_workers_options wo = { band_config_of(o), o->n_workers, { 0 }, o->chunk_rows > 0 ? o->chunk_rows : o->band_rows };
        memcpy(wo.gpu_ids, o->gpu_ids, sizeof wo.gpu_ids);
        band_worker_stat stats[BAND_MAX_WORKERS];
        band_workers_waits waits = { 0 };
        rc = band_workers_run(p, seg, &wo, timed_next_of, (void *)t, sink, &times, &peak, stats, &waits, err, errlen);
        add_worker_stats(t->prof, stats, &waits, o->n_workers);
    } else {
        rc = run_one_executor(p, seg, t, sink, o, &times, &peak, err, errlen);
    }
    for (int i = seg->first; i < seg->last; i++) {
        t->prof->stage_ms[i] += times.stage_ms[i - seg->first];
        t->prof->stage_on_gpu[i] = o->place == BAND_ON_GPU && p->steps[i].plugin->stage->run_gpu;
    }
    if (peak > t->prof->gpu_peak_bytes) t->prof->gpu_peak_bytes = peak;
    return rc;
}

/* A global stage in a GPU run: the whole-image executor on that one step (run_gpu, or a round trip). */
static int run_global_gpu(const plan *p, int i, const ip_image *in, ip_image *out, const stream_options *o,
                          stream_profile *prof, char *err, size_t errlen)
{
    plan one = { &p->steps[i], 1, NULL };
    exec_options eo = { EXEC_GPU, o->gpu_ids[0], o->threads, EXEC_COPY, 0, 0 };
    exec_ctx *ctx = NULL;
    ip_image res;
    int rc = exec_create(&ctx, &eo, err, errlen);
    double t0 = now_ms();
    if (rc == IP_OK) rc = exec_run(ctx, &one, in, o->input_path, &res, NULL, err, errlen);
    prof->stage_ms[i] += now_ms() - t0;
    prof->stage_on_gpu[i] = p->steps[i].plugin->stage->run_gpu != NULL;
    if (rc == IP_OK) rc = img_alloc(out, &res.shape, UINT64_MAX, err, errlen);
    for (int y = 0; rc == IP_OK && y < res.shape.height; y++)
        memcpy((char *)out->data + (ptrdiff_t)y * out->stride, (const char *)res.data + (ptrdiff_t)y * res.stride,
               img_row_bytes(&res.shape));
    if (ctx && exec_device_bytes(ctx) > prof->gpu_peak_bytes) prof->gpu_peak_bytes = exec_device_bytes(ctx);
    exec_destroy(ctx);
    return rc;
}

static int run_global(const plan *p, int i, const ip_image *in, ip_image *out, const stream_options *o,
                      stream_profile *prof, char *err, size_t errlen)
{
    if (o->place == BAND_ON_GPU) return run_global_gpu(p, i, in, out, o, prof, err, errlen);
    const plan_step *st = &p->steps[i];
    int rc = img_alloc(out, &st->out, UINT64_MAX, err, errlen);
    void *scratch = NULL;
    if (rc == IP_OK && st->needs.scratch_bytes && !(scratch = malloc(st->needs.scratch_bytes))) {
        snprintf(err, errlen, "out of memory allocating %zu bytes of scratch", st->needs.scratch_bytes);
        rc = IP_ENOMEM;
    }
    if (rc != IP_OK) {
        img_free(out);
        return rc;
    }
    char msg[512] = "";
    stage_env env = { o->threads, o->input_path, NULL };
    double t0 = now_ms();
    rc = stage_call_cpu(st, &env, scratch, &st->needs, in, out, msg, sizeof msg);
    prof->stage_ms[i] += now_ms() - t0;
    free(scratch);
    if (rc != IP_OK) {
        img_free(out);
        return stage_failed_message(st, rc, msg, err, errlen);
    }
    return IP_OK;
}

/* Every row of src into a whole image of shape. */
static int hold_all(const timed *t, const ip_shape *shape, ip_image *held, char *err, size_t errlen)
{
    stream_image_sink collect;
    int rc = stream_image_sink_init(&collect, shape, err, errlen);
    for (; rc == IP_OK;) {
        ip_image rows;
        int y0;
        rc = timed_next(t, &rows, &y0, err, errlen);
        if (rc != IP_OK || rows.shape.height == 0) break;
        rc = image_rows(&collect, &rows, y0, err, errlen);
    }
    if (rc == IP_OK && collect.rows_in != shape->height) {
        snprintf(err, errlen, "the image ended after %d of %d rows", collect.rows_in, shape->height);
        rc = IP_EFORMAT;
    }
    if (rc != IP_OK) img_free(&collect.img);
    else *held = collect.img;
    return rc;
}

/* One segment: from the held image when there is one (else from the source), into the next held
 * image (else, for the last segment, into the sink). */
static int run_segment(const plan *p, const band_seg *seg, int last, const timed *src, ip_image *held,
                       const band_sink *sink, const stream_options *o, stream_profile *prof, char *err, size_t errlen)
{
    stream_image_source from_held;
    stream_source held_src = held->data ? stream_source_of_image(&from_held, held, o->band_rows) : *src->src;
    timed in = { &held_src, NULL, prof, held->data ? NULL : src->source_ms, NULL };
    int rc = IP_OK;
    if (seg->global) {
        ip_image whole = *held, out;
        if (!whole.data) rc = hold_all(&in, &p->steps[seg->first].in, &whole, err, errlen);
        if (rc == IP_OK) rc = run_global(p, seg->first, &whole, &out, o, prof, err, errlen);
        img_free(&whole);
        *held = rc == IP_OK ? out : (ip_image){ 0 };
        return rc;
    }
    stream_image_sink collect = { 0 };
    band_sink to_held = stream_sink_of_image(&collect);
    if (!last) rc = stream_image_sink_init(&collect, &p->steps[seg->last - 1].out, err, errlen);
    if (rc == IP_OK) rc = run_bands(p, seg, &in, last ? sink : &to_held, o, err, errlen);
    img_free(held);
    *held = (ip_image){ 0 };
    if (rc == IP_OK && !last) *held = collect.img;
    else if (!last) img_free(&collect.img);
    return rc;
}

int stream_run(const plan *p, const stream_source *src, const band_sink *sink, const stream_options *o,
               stream_profile *prof, char *err, size_t errlen)
{
    stream_profile local;
    if (!prof) prof = &local;
    memset(prof, 0, sizeof *prof);
    if (p->n < 1 || p->n > EXEC_MAX_STAGES) {
        snprintf(err, errlen, "a pipeline must have 1 to %d stages", EXEC_MAX_STAGES);
        return IP_EINVAL;
    }
    prof->n_stages = p->n;
    double t0 = now_ms();
    band_layout layout;
    int rc = band_layout_make(p, &layout, err, errlen);
    if (rc != IP_OK) return rc;
    prof->segments = layout.n;
    stream_source from = *src;
    band_sink to = *sink;
    stream_overlap *ov = NULL;
    if (o->overlap_slots > 0) {
        stream_overlap_options oo = { o->overlap_slots, p->steps[p->n - 1].out, o->sink_rows > 0 ? o->sink_rows : o->band_rows,
                                      &prof->source_ms, &prof->sink_ms };
        if ((rc = stream_overlap_start(&ov, src, sink, &oo, err, errlen)) != IP_OK) {
            band_layout_free(&layout);
            return rc;
        }
        from = stream_overlap_source(ov);
        to = stream_overlap_sink(ov);
        prof->overlapped = 1;
    }
    timed t = { &from, &to, prof, ov ? &prof->source_wait_ms : &prof->source_ms, ov ? &prof->sink_wait_ms : &prof->sink_ms };
    band_sink timed_sink = { timed_rows, &t };
    /* Band workers hand their chunks on from a thread of their own, in order: the last segment's
     * rows go from there to the sink, not through the encoder's queue (a copy of the image fewer). */
    timed direct = { NULL, sink, prof, NULL, &prof->sink_ms };   /* a sink alone: no source */
    band_sink direct_sink = { timed_rows, &direct };
    const band_sink *last_sink = ov && o->n_workers > 1 ? &direct_sink : &timed_sink;
    ip_image held = { 0 };
    for (int i = 0; i < layout.n && rc == IP_OK; i++)
        rc = run_segment(p, &layout.segs[i], i == layout.n - 1, &t, &held, last_sink, o, prof, err, errlen);
    if (rc == IP_OK && held.data) {   /* the last stage was global: its image goes out in bands */
        stream_image_source from_held;
        stream_source s = stream_source_of_image(&from_held, &held, o->band_rows);
        for (;;) {
            ip_image rows;
            int y0;
            if ((rc = s.next(s.user, &rows, &y0, err, errlen)) != IP_OK || rows.shape.height == 0) break;
            if ((rc = timed_sink.rows(timed_sink.user, &rows, y0, err, errlen)) != IP_OK) break;
        }
    }
    img_free(&held);
    band_layout_free(&layout);
    if (ov) rc = stream_overlap_finish(ov, rc, err, errlen);   /* the last rows written, or everyone stopped */
    prof->wall_ms = now_ms() - t0;
    return rc;
}
