#define _POSIX_C_SOURCE 200809L
#include "band.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "image.h"

/* Host rows of one shape, packed, grown as needed; rows [lo, hi) of the image are held. */
typedef struct {
    unsigned char *data;
    size_t cap_rows, row_bytes;
    int lo, hi;
} row_buf;

typedef struct {
    const plan_step *st;
    ip_stage_class cls;
    int halo;
    size_t in_row, out_row;
    row_buf ctx;          /* area: input rows kept for context, and the new ones */
    row_buf out;          /* point, area: the stage's output for one call */
    int done;             /* rows of output made so far */
    void *total, *partial;   /* reduction */
    size_t partial_bytes;
} band_step;

struct band_segment {
    band_step *steps;
    int n, height, threads;
    const char *input_path;
    void *scratch;
    size_t scratch_bytes;
    band_times times;
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Room for rows more rows after the held ones, keeping those. */
static int row_buf_room(row_buf *b, size_t rows, char *err, size_t errlen)
{
    size_t held = (size_t)(b->hi - b->lo), need = held + rows;
    if (need <= b->cap_rows) return IP_OK;
    if (b->row_bytes && need > SIZE_MAX / b->row_bytes) {
        snprintf(err, errlen, "a band of %zu rows is too large to address", need);
        return IP_ELIMIT;
    }
    unsigned char *grown = img_big_malloc(need * b->row_bytes);
    if (!grown) {
        snprintf(err, errlen, "out of memory allocating %zu bytes for a band", need * b->row_bytes);
        return IP_ENOMEM;
    }
    if (held) memcpy(grown, b->data, held * b->row_bytes);
    free(b->data);
    b->data = grown;
    b->cap_rows = need;
    return IP_OK;
}

static unsigned char *row_at(const row_buf *b, int y) { return b->data + (size_t)(y - b->lo) * b->row_bytes; }

static ip_image view(void *data, size_t row_bytes, const ip_shape *shape, int rows)
{
    ip_image im = { data, (ptrdiff_t)row_bytes, *shape, 0 };
    im.shape.height = rows;
    return im;
}

static int stage_failed(const plan_step *st, int rc, const char *msg, char *err, size_t errlen)
{
    snprintf(err, errlen, "stage '%s' (line %d) failed: %s", st->plugin->stage->name, st->line,
             msg[0] ? msg : "the plugin reported an error without a message");
    return rc ? rc : IP_EINVAL;
}

/* Scratch as the stage plans it for this band's shape (a band is not the image it planned). */
static int band_scratch(band_segment *s, const band_step *b, const ip_image *in, size_t *bytes, char *err, size_t errlen)
{
    const ip_stage *stage = b->st->plugin->stage;
    ip_shape out;
    ip_needs needs;
    memset(&needs, 0, sizeof needs);
    char msg[512] = "";
    int rc = stage->plan(b->st->state, &in->shape, &out, &needs, msg, sizeof msg);
    if (rc != IP_OK) return stage_failed(b->st, rc, msg, err, errlen);
    *bytes = needs.scratch_bytes;
    if (needs.scratch_bytes <= s->scratch_bytes) return IP_OK;
    free(s->scratch);
    s->scratch = malloc(needs.scratch_bytes);
    s->scratch_bytes = s->scratch ? needs.scratch_bytes : 0;
    if (!s->scratch) {
        snprintf(err, errlen, "out of memory allocating %zu bytes of scratch", needs.scratch_bytes);
        return IP_ENOMEM;
    }
    return IP_OK;
}

static int run_stage(band_segment *s, band_step *b, const ip_image *in, ip_image *out, char *err, size_t errlen)
{
    size_t scratch = 0;
    int rc = band_scratch(s, b, in, &scratch, err, errlen);
    if (rc != IP_OK) return rc;
    char msg[512] = "";
    ip_exec ex = { NULL, s->threads, s->input_path, s->scratch, scratch, msg, sizeof msg };
    rc = b->st->plugin->stage->run_cpu(b->st->state, in, out, &ex);
    return rc == IP_OK ? IP_OK : stage_failed(b->st, rc, msg, err, errlen);
}

static int push_from(band_segment *s, int k, const ip_image *rows, int y0, const band_sink *sink, char *err,
                     size_t errlen);

static int push_point(band_segment *s, int k, const ip_image *rows, int y0, const band_sink *sink, char *err,
                      size_t errlen)
{
    band_step *b = &s->steps[k];
    int n = rows->shape.height;
    b->out.lo = b->out.hi = 0;
    int rc = row_buf_room(&b->out, (size_t)n, err, errlen);
    if (rc != IP_OK) return rc;
    ip_image out = view(b->out.data, b->out_row, &b->st->out, n);
    double t0 = now_ms();
    rc = run_stage(s, b, rows, &out, err, errlen);
    s->times.stage_ms[k] += now_ms() - t0;
    b->done = y0 + n;
    return rc == IP_OK ? push_from(s, k + 1, &out, y0, sink, err, errlen) : rc;
}

static int push_reduction(band_segment *s, int k, const ip_image *rows, int y0, const band_sink *sink, char *err,
                          size_t errlen)
{
    band_step *b = &s->steps[k];
    const ip_stage *stage = b->st->plugin->stage;
    char msg[512] = "";
    ip_exec ex = { NULL, s->threads, s->input_path, NULL, 0, msg, sizeof msg };
    double t0 = now_ms();
    memset(b->partial, 0, b->partial_bytes);
    int rc = stage->reduce_band(b->st->state, rows, b->partial, &ex);
    if (rc == IP_OK) stage->reduce_merge(b->st->state, &b->st->in, b->total, b->partial);
    s->times.stage_ms[k] += now_ms() - t0;
    if (rc != IP_OK) return stage_failed(b->st, rc, msg, err, errlen);
    b->done = y0 + rows->shape.height;
    rc = push_from(s, k + 1, rows, y0, sink, err, errlen);
    if (rc == IP_OK && b->done == s->height) {
        t0 = now_ms();
        rc = stage->reduce_finish(b->st->state, &b->st->in, b->total, &ex);
        s->times.stage_ms[k] += now_ms() - t0;
        if (rc != IP_OK) return stage_failed(b->st, rc, msg, err, errlen);
    }
    return rc;
}

/* Appends the new rows to the context; makes every output row whose window now lies in rows
 * that have arrived (all of them once the last row has); keeps halo rows below the last one made
 * and the rows after it. The stage runs on its rows from done - halo, so the rows it gets wrong
 * at that artificial top edge, and at the bottom one, are exactly the rows not passed on. */
static int push_area(band_segment *s, int k, const ip_image *rows, int y0, const band_sink *sink, char *err,
                     size_t errlen)
{
    band_step *b = &s->steps[k];
    int n = rows->shape.height, h = b->halo;
    int rc = row_buf_room(&b->ctx, (size_t)n, err, errlen);
    if (rc != IP_OK) return rc;
    if (b->ctx.hi == b->ctx.lo) b->ctx.lo = b->ctx.hi = y0;
    for (int y = 0; y < n; y++)
        memcpy(row_at(&b->ctx, y0 + y), (const char *)rows->data + (ptrdiff_t)y * rows->stride, b->in_row);
    b->ctx.hi = y0 + n;
    int target = b->ctx.hi == s->height ? s->height : b->ctx.hi - h;
    if (target <= b->done) return IP_OK;
    int ext_lo = b->done - h > 0 ? b->done - h : 0;
    int ext_hi = target + h < s->height ? target + h : s->height;
    b->out.lo = b->out.hi = 0;
    if ((rc = row_buf_room(&b->out, (size_t)(ext_hi - ext_lo), err, errlen)) != IP_OK) return rc;
    ip_image in = view(row_at(&b->ctx, ext_lo), b->in_row, &b->st->in, ext_hi - ext_lo);
    ip_image out = view(b->out.data, b->out_row, &b->st->out, ext_hi - ext_lo);
    double t0 = now_ms();
    rc = run_stage(s, b, &in, &out, err, errlen);
    s->times.stage_ms[k] += now_ms() - t0;
    if (rc != IP_OK) return rc;
    ip_image made = view(b->out.data + (size_t)(b->done - ext_lo) * b->out_row, b->out_row, &b->st->out,
                         target - b->done);
    int from = b->done;
    b->done = target;
    rc = push_from(s, k + 1, &made, from, sink, err, errlen);
    int keep = target - h > b->ctx.lo ? target - h : b->ctx.lo;
    size_t kept = (size_t)(b->ctx.hi - keep);
    if (keep > b->ctx.lo && kept) memmove(b->ctx.data, row_at(&b->ctx, keep), kept * b->in_row);
    b->ctx.lo = keep;
    return rc;
}

static int push_from(band_segment *s, int k, const ip_image *rows, int y0, const band_sink *sink, char *err,
                     size_t errlen)
{
    if (rows->shape.height <= 0) return IP_OK;
    if (k == s->n) return sink->rows(sink->user, rows, y0, err, errlen);
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
    int expected = first->cls == IP_CLASS_AREA ? first->ctx.hi : first->done;
    if (y0 != expected || rows->shape.height < 0 || y0 + rows->shape.height > s->height ||
        rows->shape.width != first->st->in.width || rows->shape.channels != first->st->in.channels ||
        rows->shape.dtype != first->st->in.dtype) {
        snprintf(err, errlen, "band executor: rows %d.. arrived where rows %d.. were expected", y0, expected);
        return IP_EINVAL;
    }
    return push_from(s, 0, rows, y0, sink, err, errlen);
}

static int step_init(band_step *b, const plan_step *st, char *err, size_t errlen)
{
    b->st = st;
    b->cls = band_step_class(st);
    b->halo = b->cls == IP_CLASS_AREA && st->needs.halo > 0 ? st->needs.halo : 0;
    b->in_row = img_row_bytes(&st->in);
    b->out_row = img_row_bytes(&st->out);
    b->ctx.row_bytes = b->in_row;
    b->out.row_bytes = b->out_row;
    if (b->cls != IP_CLASS_REDUCTION) return IP_OK;
    b->partial_bytes = st->plugin->stage->partial_bytes(st->state, &st->in);
    b->total = calloc(1, b->partial_bytes ? b->partial_bytes : 1);
    b->partial = calloc(1, b->partial_bytes ? b->partial_bytes : 1);
    if (b->total && b->partial) return IP_OK;
    snprintf(err, errlen, "out of memory");
    return IP_ENOMEM;
}

int band_segment_create(band_segment **out, const plan *p, const band_seg *seg, int threads,
                        const char *input_path, char *err, size_t errlen)
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
    s->n = seg->last - seg->first;
    s->height = p->steps[seg->first].in.height;
    s->threads = threads;
    s->input_path = input_path;
    for (int i = 0; i < s->n; i++) {
        int rc = step_init(&s->steps[i], &p->steps[seg->first + i], err, errlen);
        if (rc != IP_OK) {
            s->n = i + 1;
            band_segment_destroy(s);
            return rc;
        }
    }
    *out = s;
    return IP_OK;
}

void band_segment_destroy(band_segment *s)
{
    if (!s) return;
    for (int i = 0; i < s->n; i++) {
        free(s->steps[i].ctx.data);
        free(s->steps[i].out.data);
        free(s->steps[i].total);
        free(s->steps[i].partial);
    }
    free(s->steps);
    free(s->scratch);
    free(s);
}

const band_times *band_segment_times(const band_segment *s) { return &s->times; }

size_t band_segment_bytes(const plan *p, const band_seg *seg, int band_rows)
{
    size_t total = 0, arriving = (size_t)band_rows, scratch = 0;
    for (int i = seg->first; i < seg->last; i++) {
        const plan_step *st = &p->steps[i];
        ip_stage_class c = band_step_class(st);
        size_t h = c == IP_CLASS_AREA && st->needs.halo > 0 ? (size_t)st->needs.halo : 0;
        if (c == IP_CLASS_AREA) total += (arriving + 2 * h) * img_row_bytes(&st->in);
        if (c != IP_CLASS_REDUCTION) total += (arriving + 2 * h) * img_row_bytes(&st->out);
        scratch = st->needs.scratch_bytes > scratch ? st->needs.scratch_bytes : scratch;
        arriving += h;
    }
    return total + scratch;
}
