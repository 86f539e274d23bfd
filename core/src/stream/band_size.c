/* What a band segment holds, at most, for bands of a given height: the figures the memory
 * limits choose the band height from (stream_budget.c). */
#include <string.h>
#include "stream/band.h"
#include "base/image.h"

#define BAND_DEVICE_PITCH 256

static size_t device_pitch(const ip_shape *s)
{
    size_t row = img_row_bytes(s);
    return (row + BAND_DEVICE_PITCH - 1) / BAND_DEVICE_PITCH * BAND_DEVICE_PITCH;
}

static size_t larger(size_t a, size_t b) { return a > b ? a : b; }

/* The stage planned for a band of rows rows: a band's scratch, not the image's. */
static ip_needs band_needs(const plan_step *st, size_t rows)
{
    ip_shape in = st->in, out;
    in.height = rows < (size_t)in.height ? (int)rows : in.height;
    ip_needs needs;
    memset(&needs, 0, sizeof needs);
    char msg[256];
    if (st->plugin->stage->plan(st->state, &in, &out, &needs, msg, sizeof msg) != IP_OK) needs = st->needs;
    return needs;
}

size_t band_segment_bytes(const plan *p, const band_seg *seg, band_place place, int band_rows)
{
    size_t total = 0, arriving = (size_t)band_rows, scratch = 0;
    for (int i = seg->first; i < seg->last; i++) {
        const plan_step *st = &p->steps[i];
        ip_stage_class c = band_step_class(st);
        size_t h = c == IP_CLASS_AREA && st->needs.halo > 0 ? (size_t)st->needs.halo : 0;
        size_t rows = arriving + 2 * h, in_row = img_row_bytes(&st->in), out_row = img_row_bytes(&st->out);
        if (place == BAND_ON_HOST) {
            if (c == IP_CLASS_AREA) total += rows * in_row;
            if (c != IP_CLASS_REDUCTION) total += rows * out_row;
            scratch = larger(scratch, st->needs.scratch_bytes);
        } else if (!st->plugin->stage->run_gpu) {   /* a round trip's rows, pinned, and run_cpu's scratch */
            total += rows * (in_row + out_row);
            scratch = larger(scratch, band_needs(st, rows).scratch_bytes);
        }
        arriving += h;
    }
    if (place == BAND_ON_GPU)   /* pinned staging: two bands in, two bands out */
        total += 2 * (size_t)band_rows * img_row_bytes(&p->steps[seg->first].in) +
                 2 * arriving * img_row_bytes(&p->steps[seg->last - 1].out);
    return total + scratch;
}

size_t band_segment_device_bytes(const plan *p, const band_seg *seg, int band_rows)
{
    size_t total = 2 * (size_t)band_rows * device_pitch(&p->steps[seg->first].in), arriving = (size_t)band_rows;
    size_t scratch = 0;
    for (int i = seg->first; i < seg->last; i++) {
        const plan_step *st = &p->steps[i];
        ip_stage_class c = band_step_class(st);
        size_t h = c == IP_CLASS_AREA && st->needs.halo > 0 ? (size_t)st->needs.halo : 0;
        size_t rows = arriving + 2 * h;
        if (c == IP_CLASS_AREA) total += rows * device_pitch(&st->in);
        if (c != IP_CLASS_REDUCTION) total += rows * device_pitch(&st->out);
        if (st->plugin->stage->run_gpu) scratch = larger(scratch, band_needs(st, rows).gpu_scratch_bytes);
        arriving += h;
    }
    return total + scratch;
}
