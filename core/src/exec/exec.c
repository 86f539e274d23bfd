#define _POSIX_C_SOURCE 200809L
#include "exec/exec.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "exec/fuse.h"
#include "gpu/gpu.h"
#include "base/image.h"
#include "plan/stage_class.h"
#include "base/mono_clock.h"
#include "exec/stage_call.h"

/* Device rows are padded to this many bytes so every row starts aligned for wide loads. */
#define EXEC_PITCH_ALIGN 256

typedef struct {
    void *ptr;
    size_t bytes;
} grow_buf;

/* What a captured graph baked in: replayed only while all of it is unchanged. */
typedef struct {
    const plan *p;
    uint64_t plan_print;       /* its stages, states and arguments, in case another plan reuses p's address */
    ip_shape shape;
    const void *in, *dev0, *dev1, *scratch, *mapped_out;
    ptrdiff_t in_stride;
    const void *target;
    ptrdiff_t target_stride;
} graph_key;

/* The fused group each step starts (kind FUSE_NONE: the step runs by itself). */
typedef struct {
    fuse_group group;
    fuse_kernel kernel;
} step_fusion;

struct exec_ctx {
    exec_options opt;
    exec_fusion_options fopt;
    grow_buf host[2], scratch;                 /* CPU path */
    grow_buf dev[2], dev_scratch;              /* GPU path */
    grow_buf pinned_in, pinned_out, pinned_tmp[2];
    grow_buf host_out;                         /* GPU path without pinning: the downloaded result */
    int result_on_device;
    ip_image target;                           /* the caller's memory for the result (data NULL: none) */
    void *stream;
    void *events[2 * EXEC_MAX_STAGES + 4];
    int n_events;
    char notes[1024];
    unsigned char noted[EXEC_MAX_STAGES];
    fuser *fuser;
    int fuse_off;                              /* no NVRTC, or a fused kernel failed: said once */
    step_fusion fusion[EXEC_MAX_STAGES];       /* this run's groups */
    void *graph;                               /* the captured stages, and what they baked in */
    graph_key graph_for;
    graph_key last_plain;                      /* the last run's key when it ran without a graph */
    ip_image graph_result;
    const plan *graph_refused;                 /* a plan whose stages could not be captured */
};

typedef enum { MEM_HOST, MEM_DEVICE, MEM_PINNED, MEM_MAPPED } mem_kind;

static void buf_release(grow_buf *b, mem_kind kind)
{
    if (kind == MEM_HOST) free(b->ptr);
    else if (kind == MEM_DEVICE) gpu_free(b->ptr);
    else gpu_host_free(b->ptr);
    b->ptr = NULL;
    b->bytes = 0;
}

/* Grows (never shrinks) a buffer; the old contents are not kept. */
static int buf_reserve(grow_buf *b, size_t bytes, mem_kind kind, char *err, size_t errlen)
{
    if (bytes <= b->bytes && b->ptr) return IP_OK;
    buf_release(b, kind);
    int rc = IP_OK;
    if (kind == MEM_HOST) {
        b->ptr = img_big_malloc(bytes);
        if (!b->ptr) {
            snprintf(err, errlen, "out of memory allocating %zu bytes", bytes);
            rc = IP_ENOMEM;
        }
    } else if (kind == MEM_DEVICE) {
        rc = gpu_malloc(&b->ptr, bytes, err, errlen);
    } else {
        rc = gpu_host_alloc(&b->ptr, bytes, kind == MEM_MAPPED, err, errlen);
    }
    if (rc == IP_OK) b->bytes = bytes;
    return rc;
}

static size_t packed_bytes(const ip_shape *s) { return img_row_bytes(s) * (size_t)s->height; }

static size_t pitch_of(const ip_shape *s)
{
    size_t row = img_row_bytes(s);
    return (row + EXEC_PITCH_ALIGN - 1) / EXEC_PITCH_ALIGN * EXEC_PITCH_ALIGN;
}

static ip_image image_at(void *data, ptrdiff_t stride, const ip_shape *shape, int on_device)
{
    ip_image im = { data, stride, *shape, on_device };
    return im;
}

int exec_create(exec_ctx **out, const exec_options *opt, char *err, size_t errlen)
{
    exec_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        snprintf(err, errlen, "out of memory");
        return IP_ENOMEM;
    }
    ctx->opt = *opt;
    if (opt->device == EXEC_GPU) {
        int rc = gpu_select(opt->gpu_index, err, errlen);
        if (rc == IP_OK) rc = gpu_stream_create(&ctx->stream, err, errlen);
        for (int i = 0; rc == IP_OK && opt->profile && i < (int)(sizeof ctx->events / sizeof *ctx->events); i++) {
            rc = gpu_event_create(&ctx->events[i], err, errlen);
            ctx->n_events = i + 1;
        }
        if (rc != IP_OK) {
            exec_destroy(ctx);
            return rc;
        }
    }
    *out = ctx;
    return IP_OK;
}

void exec_destroy(exec_ctx *ctx)
{
    if (!ctx) return;
    if (ctx->stream) gpu_stream_sync(ctx->stream, NULL, 0);
    for (int i = 0; i < 2; i++) {
        buf_release(&ctx->host[i], MEM_HOST);
        buf_release(&ctx->dev[i], MEM_DEVICE);
        buf_release(&ctx->pinned_tmp[i], MEM_PINNED);
    }
    buf_release(&ctx->scratch, MEM_HOST);
    buf_release(&ctx->host_out, MEM_HOST);
    buf_release(&ctx->dev_scratch, MEM_DEVICE);
    buf_release(&ctx->pinned_in, MEM_MAPPED);
    buf_release(&ctx->pinned_out, MEM_MAPPED);
    for (int i = 0; i < ctx->n_events; i++) gpu_event_destroy(ctx->events[i]);
    gpu_graph_destroy(ctx->graph);
    fuser_destroy(ctx->fuser);
    gpu_stream_destroy(ctx->stream);
    free(ctx);
}

const char *exec_take_notes(exec_ctx *ctx)
{
    static const char none[] = "";
    return ctx->notes[0] ? ctx->notes : none;
}

static void add_note(exec_ctx *ctx, const char *text)
{
    size_t used = strlen(ctx->notes);
    snprintf(ctx->notes + used, sizeof ctx->notes - used, "%s%s", used ? "\n" : "", text);
}

/* The caller's memory for the last stage's output, when it is there, of its shape, and where
 * the path writes it (device memory on the GPU, host memory on the CPU). */
static int target_takes(const exec_ctx *ctx, const ip_shape *final, int on_device)
{
    const ip_image *t = &ctx->target;
    return t->data && t->on_device == on_device && t->shape.width == final->width &&
           t->shape.height == final->height && t->shape.channels == final->channels && t->shape.dtype == final->dtype;
}

static int run_cpu_path(exec_ctx *ctx, const plan *p, const ip_image *in, const stage_env *env, ip_image *out,
                        exec_profile *prof, char *err, size_t errlen)
{
    size_t largest = 0, scratch = 0;
    for (int i = 0; i < p->n; i++) {
        size_t b = packed_bytes(&p->steps[i].out);
        largest = b > largest ? b : largest;
        scratch = p->steps[i].needs.scratch_bytes > scratch ? p->steps[i].needs.scratch_bytes : scratch;
    }
    int rc = buf_reserve(&ctx->host[0], largest, MEM_HOST, err, errlen);
    if (rc == IP_OK && p->n > 1) rc = buf_reserve(&ctx->host[1], largest, MEM_HOST, err, errlen);
    if (rc == IP_OK && scratch) rc = buf_reserve(&ctx->scratch, scratch, MEM_HOST, err, errlen);
    if (rc != IP_OK) return rc;

    ip_image cur = *in;
    for (int i = 0; i < p->n; i++) {
        const plan_step *st = &p->steps[i];
        ip_image next = image_at(ctx->host[i % 2].ptr, (ptrdiff_t)img_row_bytes(&st->out), &st->out, 0);
        if (i == p->n - 1 && target_takes(ctx, &st->out, 0)) next = image_at(ctx->target.data, ctx->target.stride, &st->out, 0);
        char msg[512] = "";
        double t0 = now_ms();
        rc = stage_call_cpu(st, env, ctx->scratch.ptr, &st->needs, &cur, &next, msg, sizeof msg);
        if (prof) {
            prof->stage_ms[i] = now_ms() - t0;
            prof->stage_on_gpu[i] = 0;
        }
        if (rc != IP_OK) return stage_failed_message(st, rc, msg, err, errlen);
        cur = next;
    }
    *out = cur;
    return IP_OK;
}

static int uses_pinned(const exec_ctx *ctx)
{
    return ctx->opt.device == EXEC_GPU && (ctx->opt.pin_host || ctx->opt.transfer == EXEC_ZEROCOPY);
}

static int alloc_input(void *user, size_t bytes, void **ptr, char *err, size_t errlen)
{
    exec_ctx *ctx = user;
    int rc = buf_reserve(&ctx->pinned_in, bytes, MEM_MAPPED, err, errlen);
    *ptr = rc == IP_OK ? ctx->pinned_in.ptr : NULL;
    return rc;
}

/* The buffer stays with the context, for the next image. */
static void keep_input(void *user, void *ptr)
{
    (void)user;
    (void)ptr;
}

io_pixel_memory exec_input_memory(exec_ctx *ctx)
{
    io_pixel_memory m = { NULL, NULL, NULL };
    if (uses_pinned(ctx)) m = (io_pixel_memory){ alloc_input, keep_input, ctx };
    return m;
}

void exec_keep_result_on_device(exec_ctx *ctx, int on) { ctx->result_on_device = on; }

void exec_set_result_target(exec_ctx *ctx, const ip_image *target)
{
    memset(&ctx->target, 0, sizeof ctx->target);
    if (target && ctx->opt.transfer == EXEC_COPY) ctx->target = *target;
}


void *exec_stream(exec_ctx *ctx) { return ctx->stream; }

size_t exec_device_bytes(const exec_ctx *ctx) { return ctx->dev[0].bytes + ctx->dev[1].bytes + ctx->dev_scratch.bytes; }
void exec_set_fusion(exec_ctx *ctx, const exec_fusion_options *fo) { ctx->fopt = *fo; }

static int reserve_gpu(exec_ctx *ctx, const plan *p, const ip_shape *in_shape, int host_input, int host_output,
                       char *err, size_t errlen);

int exec_device_input(exec_ctx *ctx, const plan *p, const ip_shape *in_shape, size_t bytes, void **dev,
                      char *err, size_t errlen)
{
    *dev = NULL;
    if (ctx->opt.device != EXEC_GPU) {
        snprintf(err, errlen, "no device input on the CPU path");
        return IP_EINVAL;
    }
    int rc = gpu_select(ctx->opt.gpu_index, err, errlen);
    if (rc == IP_OK) rc = reserve_gpu(ctx, p, in_shape, 0, 0, err, errlen);
    if (rc == IP_OK && bytes > ctx->dev[1].bytes) rc = buf_reserve(&ctx->dev[1], bytes, MEM_DEVICE, err, errlen);
    if (rc == IP_OK) *dev = ctx->dev[1].ptr;
    return rc;
}

/* Device buffers hold any stage's image at an aligned pitch; with pinning, pinned buffers the
 * packed input and output, mapped so zero-copy can use them directly: only those the image
 * passes through (host_input, host_output): sixteen folder workers pinning on their first
 * images waited on each other, 66 ms a call on average (bench/RESULTS.md). */
static int reserve_gpu(exec_ctx *ctx, const plan *p, const ip_shape *in_shape, int host_input, int host_output,
                       char *err, size_t errlen)
{
    size_t largest = pitch_of(in_shape) * (size_t)in_shape->height, scratch = 0, host_tmp = 0;
    for (int i = 0; i < p->n; i++) {
        const plan_step *st = &p->steps[i];
        size_t b = pitch_of(&st->out) * (size_t)st->out.height;
        largest = b > largest ? b : largest;
        scratch = st->needs.gpu_scratch_bytes > scratch ? st->needs.gpu_scratch_bytes : scratch;
        if (!st->plugin->stage->run_gpu) {
            size_t need = packed_bytes(&st->in) > packed_bytes(&st->out) ? packed_bytes(&st->in) : packed_bytes(&st->out);
            host_tmp = need > host_tmp ? need : host_tmp;
            scratch = st->needs.scratch_bytes > scratch ? st->needs.scratch_bytes : scratch;
        }
    }
    int rc = buf_reserve(&ctx->dev[0], largest, MEM_DEVICE, err, errlen);
    if (rc == IP_OK) rc = buf_reserve(&ctx->dev[1], largest, MEM_DEVICE, err, errlen);
    if (rc == IP_OK && scratch) rc = buf_reserve(&ctx->dev_scratch, scratch, MEM_DEVICE, err, errlen);
    if (rc == IP_OK && scratch) rc = buf_reserve(&ctx->scratch, scratch, MEM_HOST, err, errlen);
    size_t out_bytes = packed_bytes(&p->steps[p->n - 1].out);
    int pinned = uses_pinned(ctx);
    if (rc == IP_OK && pinned && host_input)
        rc = buf_reserve(&ctx->pinned_in, packed_bytes(in_shape), MEM_MAPPED, err, errlen);
    if (rc == IP_OK && pinned && host_output) rc = buf_reserve(&ctx->pinned_out, out_bytes, MEM_MAPPED, err, errlen);
    if (rc == IP_OK && !pinned && host_output) rc = buf_reserve(&ctx->host_out, out_bytes, MEM_HOST, err, errlen);
    for (int i = 0; i < 2 && rc == IP_OK && host_tmp; i++)
        rc = buf_reserve(&ctx->pinned_tmp[i], host_tmp, MEM_PINNED, err, errlen);
    return rc;
}

/* A stage with no GPU path: down, run on the CPU, up again, on the same stream. */
static int round_trip(exec_ctx *ctx, const plan_step *st, const ip_image *cur, ip_image *next, const stage_env *env,
                      char *msg, size_t msglen)
{
    ip_image h_in = image_at(ctx->pinned_tmp[0].ptr, (ptrdiff_t)img_row_bytes(&st->in), &st->in, 0);
    ip_image h_out = image_at(ctx->pinned_tmp[1].ptr, (ptrdiff_t)img_row_bytes(&st->out), &st->out, 0);
    return stage_round_trip(st, env, ctx->scratch.ptr, &st->needs, cur, next, &h_in, &h_out, msg, msglen);
}

static void note_round_trip(exec_ctx *ctx, int i, const plan_step *st)
{
    if (i >= EXEC_MAX_STAGES || ctx->noted[i]) return;
    ctx->noted[i] = 1;
    char text[160];
    snprintf(text, sizeof text, "stage '%s' has no GPU path: it runs on the CPU, costing one round trip",
             st->plugin->stage->name);
    add_note(ctx, text);
}

static int record(exec_ctx *ctx, int k)
{
    return ctx->opt.profile && k < ctx->n_events ? gpu_event_record(ctx->events[k], ctx->stream) : IP_OK;
}

/* Pixels decoded into the pinned input buffer go up as they are; others are staged into it only
 * when pinning is wanted, and otherwise copied from pageable memory directly. */
static int upload(exec_ctx *ctx, const ip_image *in, ip_image *dev_in, char *err, size_t errlen)
{
    size_t row = img_row_bytes(&in->shape);
    const void *src = in->data;
    size_t src_pitch = (size_t)in->stride;
    if (uses_pinned(ctx) && in->data != ctx->pinned_in.ptr) {
        for (int y = 0; y < in->shape.height; y++)
            memcpy((char *)ctx->pinned_in.ptr + (size_t)y * row, (const char *)in->data + (ptrdiff_t)y * in->stride, row);
    }
    if (uses_pinned(ctx)) {
        src = ctx->pinned_in.ptr;
        src_pitch = row;
    }
    if (ctx->opt.transfer == EXEC_ZEROCOPY) {
        void *mapped;
        int rc = gpu_host_device_pointer(ctx->pinned_in.ptr, &mapped, err, errlen);
        *dev_in = image_at(mapped, (ptrdiff_t)row, &in->shape, 1);
        return rc;
    }
    *dev_in = image_at(ctx->dev[1].ptr, (ptrdiff_t)pitch_of(&in->shape), &in->shape, 1);
    return gpu_copy2d(dev_in->data, (size_t)dev_in->stride, src, src_pitch, row, (size_t)in->shape.height,
                      GPU_H2D, ctx->stream, err, errlen);
}

/* Step i's output goes to the device buffer cur is not in (so a fused group, which skips steps,
 * never writes over its input); the last stage writes straight into mapped host memory under
 * zero-copy. */
static int stage_target(exec_ctx *ctx, const plan *p, int i, const ip_image *cur, ip_image *next, char *err,
                        size_t errlen)
{
    const plan_step *st = &p->steps[i];
    int last = i == p->n - 1;
    if (last && target_takes(ctx, &st->out, 1)) {
        *next = image_at(ctx->target.data, ctx->target.stride, &st->out, 1);
        return IP_OK;
    }
    if (last && ctx->opt.transfer == EXEC_ZEROCOPY && st->plugin->stage->run_gpu) {
        void *mapped;
        int rc = gpu_host_device_pointer(ctx->pinned_out.ptr, &mapped, err, errlen);
        *next = image_at(mapped, (ptrdiff_t)img_row_bytes(&st->out), &st->out, 1);
        return rc;
    }
    void *other = cur->data == ctx->dev[0].ptr ? ctx->dev[1].ptr : ctx->dev[0].ptr;
    *next = image_at(other, (ptrdiff_t)pitch_of(&st->out), &st->out, 1);
    return IP_OK;
}

static int run_gpu_step(exec_ctx *ctx, const plan *p, int i, ip_image *cur, const stage_env *env, char *err,
                        size_t errlen)
{
    const plan_step *st = &p->steps[i];
    ip_image next;
    int rc = stage_target(ctx, p, i, cur, &next, err, errlen);
    if (rc != IP_OK) return rc;
    char msg[512] = "";
    record(ctx, 2 + 2 * i);
    if (st->plugin->stage->run_gpu) {
        rc = stage_call_gpu(st, env, ctx->dev_scratch.ptr, &st->needs, cur, &next, msg, sizeof msg);
    } else {
        note_round_trip(ctx, i, st);
        rc = round_trip(ctx, st, cur, &next, env, msg, sizeof msg);
    }
    record(ctx, 3 + 2 * i);
    if (rc != IP_OK) return stage_failed_message(st, rc, msg, err, errlen);
    *cur = next;
    return IP_OK;
}

/* A fused histogram's counts, added on the device, handed to the stage's reduce_finish as its
 * partial (uint64 per counter, fuse_plan.h), which writes what the stage writes unfused. */
static int finish_fused_counts(exec_ctx *ctx, const plan *p, const fuse_group *g, size_t counters, const stage_env *env,
                               char *err, size_t errlen)
{
    const plan_step *st = &p->steps[g->first + g->n_points];
    uint32_t *counts = malloc(counters * sizeof *counts);
    uint64_t *total = malloc(counters * sizeof *total);
    int rc = counts && total ? IP_OK : IP_ENOMEM;
    if (rc != IP_OK) snprintf(err, errlen, "out of memory");
    if (rc == IP_OK)
        rc = gpu_copy2d(counts, counters * sizeof *counts, ctx->dev_scratch.ptr, counters * sizeof *counts,
                        counters * sizeof *counts, 1, GPU_D2H, ctx->stream, err, errlen);
    if (rc == IP_OK) rc = gpu_stream_sync(ctx->stream, err, errlen);
    if (rc == IP_OK) {
        for (size_t i = 0; i < counters; i++) total[i] = counts[i];
        char msg[512] = "";
        rc = stage_call_reduce_finish(st, env, total, msg, sizeof msg);
        if (rc != IP_OK) rc = stage_failed_message(st, rc, msg, err, errlen);
    }
    free(counts);
    free(total);
    return rc;
}

/* The group's kernel in place of its steps; IP_EUNSUPPORTED: run them one by one instead. */
static int run_fused(exec_ctx *ctx, const plan *p, const step_fusion *f, ip_image *cur, const stage_env *env, char *err,
                     size_t errlen)
{
    const fuse_group *g = &f->group;
    int last = g->first + g->n_steps - 1;
    size_t counters = fuse_counter_count(p, g);
    ip_image next;
    int rc = stage_target(ctx, p, last, cur, &next, err, errlen);
    if (rc == IP_OK && counters && counters > SIZE_MAX / sizeof(uint32_t)) {
        snprintf(err, errlen, "too many histogram counters");
        rc = IP_ELIMIT;
    }
    if (rc == IP_OK && counters) rc = buf_reserve(&ctx->dev_scratch, counters * sizeof(uint32_t), MEM_DEVICE, err, errlen);
    if (rc == IP_OK && counters) rc = gpu_zero(ctx->dev_scratch.ptr, counters * sizeof(uint32_t), ctx->stream, err, errlen);
    if (rc != IP_OK) return rc;
    record(ctx, 2 + 2 * g->first);
    if (counters)
        rc = fuser_launch_counts(ctx->fuser, &f->kernel, g, cur->data, cur->stride, next.data, next.stride,
                                 cur->shape.width, cur->shape.height, ctx->dev_scratch.ptr, ctx->stream, err, errlen);
    else
        rc = fuser_launch(ctx->fuser, &f->kernel, g, cur->data, cur->stride, next.data, next.stride, cur->shape.width,
                          cur->shape.height, ctx->stream, err, errlen);
    record(ctx, 3 + 2 * g->first);
    if (rc == IP_OK && counters) rc = finish_fused_counts(ctx, p, g, counters, env, err, errlen);
    if (rc == IP_OK) *cur = next;
    return rc;
}

static int run_gpu_stages(exec_ctx *ctx, const plan *p, ip_image *cur, const stage_env *env, char *err, size_t errlen)
{
    for (int i = 0; i < p->n;) {
        step_fusion *f = &ctx->fusion[i];
        if (f->group.kind != FUSE_NONE) {
            int rc = run_fused(ctx, p, f, cur, env, err, errlen);
            if (rc == IP_OK) {
                i += f->group.n_steps;
                continue;
            }
            if (rc != IP_EUNSUPPORTED) return rc;
            f->group.kind = FUSE_NONE;
        }
        int rc = run_gpu_step(ctx, p, i, cur, env, err, errlen);
        if (rc != IP_OK) return rc;
        i++;
    }
    return IP_OK;
}

static void note_fusion(exec_ctx *ctx, const plan *p, const step_fusion *f)
{
    char label[256], text[900];
    if (!ctx->opt.profile && !ctx->fopt.verbose) return;
    fuse_group_label(p, &f->group, label, sizeof label);
    if (f->kernel.compiled && !f->kernel.cache_note[0])
        snprintf(text, sizeof text, "fusion: %s compiled by NVRTC in %.0f ms, cached for later runs", label,
                 f->kernel.compile_ms);
    else if (f->kernel.compiled)
        snprintf(text, sizeof text, "fusion: %s compiled by NVRTC in %.0f ms, not cached: %s", label,
                 f->kernel.compile_ms, f->kernel.cache_note);
    else if (f->kernel.from_disk)
        snprintf(text, sizeof text, "fusion: %s loaded from the disk cache", label);
    else
        return;
    add_note(ctx, text);
}

static void fusion_off(exec_ctx *ctx, const char *why)
{
    char text[700];
    ctx->fuse_off = 1;
    if (!ctx->opt.profile && !ctx->fopt.verbose) return;
    snprintf(text, sizeof text, "fusion off, stages run unfused: %s", why);
    add_note(ctx, text);
}

/* One group left unfused while the others stay fused; said each time, as notes are per image. */
static void fusion_skipped(exec_ctx *ctx, const plan *p, step_fusion *f, const char *why)
{
    char label[256], text[900];
    if (ctx->opt.profile || ctx->fopt.verbose) {
        fuse_group_label(p, &f->group, label, sizeof label);
        snprintf(text, sizeof text, "fusion skipped, %s runs unfused: %s", label, why);
        add_note(ctx, text);
    }
    memset(f, 0, sizeof *f);
}

/* Finds this run's fused groups and makes their kernels ready (compiled, or loaded from the
 * cache) before anything is queued, so that a graph capture holds launches only. */
static void prepare_fusion(exec_ctx *ctx, const plan *p)
{
    memset(ctx->fusion, 0, sizeof ctx->fusion);
    if (ctx->fopt.no_fuse || ctx->fuse_off) return;
    char err[512] = "";
    if (!ctx->fuser && fuser_create(&ctx->fuser, ctx->opt.gpu_index, err, sizeof err) != IP_OK) {
        fusion_off(ctx, err);
        return;
    }
    for (int i = 0; i < p->n;) {
        step_fusion *f = &ctx->fusion[i];
        f->group = fuse_group_at(p, i);
        if (f->group.kind == FUSE_NONE) {
            i++;
            continue;
        }
        int rc = fuser_prepare(ctx->fuser, p, &f->group, &f->kernel, err, sizeof err);
        if (rc == IP_ELIMIT) {
            i += f->group.n_steps;
            fusion_skipped(ctx, p, f, err);
            continue;
        }
        if (rc != IP_OK) {
            memset(ctx->fusion, 0, sizeof ctx->fusion);
            fusion_off(ctx, err);
            return;
        }
        note_fusion(ctx, p, f);
        i += f->group.n_steps;
    }
}

static int graph_wanted(const exec_ctx *ctx, const plan *p, const ip_shape *in)
{
    if (ctx->fopt.no_graph || ctx->opt.profile || ctx->graph_refused == p ||
        (int64_t)in->width * in->height > EXEC_GRAPH_MAX_PIXELS)
        return 0;
    for (int i = 0; i < p->n; i++) {
        ip_stage_class c = stage_use_class(p->steps[i].plugin->stage, p->steps[i].state);
        if (c != IP_CLASS_POINT && c != IP_CLASS_AREA) return 0;
    }
    return 1;
}

static uint64_t mix(uint64_t h, const void *data, size_t n)
{
    const unsigned char *b = data;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static uint64_t plan_print(const plan *p)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < p->n; i++) {
        const plan_step *st = &p->steps[i];
        h = mix(h, &st->plugin, sizeof st->plugin);
        h = mix(h, &st->state, sizeof st->state);
        for (int a = 0; a < st->args.n; a++) {
            const ip_value *v = &st->args.values[a];
            h = mix(mix(mix(h, &v->i, sizeof v->i), &v->f, sizeof v->f), &v->choice, sizeof v->choice);
            if (v->s) h = mix(h, v->s, strlen(v->s));
            if (v->m.v && v->m.rows > 0 && v->m.cols > 0) h = mix(h, v->m.v, sizeof *v->m.v * (size_t)v->m.rows * (size_t)v->m.cols);
        }
    }
    return h;
}

static graph_key graph_key_of(const exec_ctx *ctx, const plan *p, const ip_image *cur)
{
    graph_key k;
    memset(&k, 0, sizeof k);
    k.p = p;
    k.plan_print = plan_print(p);
    k.shape = cur->shape;
    k.in = cur->data;
    k.in_stride = cur->stride;
    k.dev0 = ctx->dev[0].ptr;
    k.dev1 = ctx->dev[1].ptr;
    k.scratch = ctx->dev_scratch.ptr;
    k.mapped_out = ctx->pinned_out.ptr;
    k.target = ctx->target.data;
    k.target_stride = ctx->target.stride;
    return k;
}

static int same_graph_key(const graph_key *a, const graph_key *b)
{
    return a->p == b->p && a->plan_print == b->plan_print && a->shape.width == b->shape.width && a->shape.height == b->shape.height &&
           a->shape.channels == b->shape.channels && a->shape.dtype == b->shape.dtype && a->in == b->in &&
           a->in_stride == b->in_stride && a->dev0 == b->dev0 && a->dev1 == b->dev1 && a->scratch == b->scratch &&
           a->mapped_out == b->mapped_out && a->target == b->target && a->target_stride == b->target_stride;
}

/* Captures the stages' launches, then replays them: one launch per image instead of one per
 * stage. A key is captured the second time in a row it is seen, so that images of changing
 * sizes run as before instead of paying a capture each. Stages that cannot be captured (a host
 * round trip, a synchronising call) are run one by one, and the plan is not tried again.
 * *replayed: whether this image ran as a graph. */
static int run_graphed(exec_ctx *ctx, const plan *p, ip_image *cur, const stage_env *env, int *replayed, char *err,
                       size_t errlen)
{
    graph_key key = graph_key_of(ctx, p, cur);
    *replayed = 0;
    if (!(ctx->graph && same_graph_key(&key, &ctx->graph_for)) && !same_graph_key(&key, &ctx->last_plain)) {
        prepare_fusion(ctx, p);
        ctx->last_plain = key;
        return run_gpu_stages(ctx, p, cur, env, err, errlen);
    }
    if (!ctx->graph || !same_graph_key(&key, &ctx->graph_for)) {
        gpu_graph_destroy(ctx->graph);
        ctx->graph = NULL;
        prepare_fusion(ctx, p);
        ip_image out = *cur;
        char why[512] = "";
        int rc = gpu_capture_begin(ctx->stream, why, sizeof why);
        int staged = rc == IP_OK ? run_gpu_stages(ctx, p, &out, env, why, sizeof why) : rc;
        if (rc == IP_OK) rc = gpu_capture_end(ctx->stream, &ctx->graph, why, sizeof why);
        if (staged != IP_OK || rc != IP_OK) {
            gpu_graph_destroy(ctx->graph);
            ctx->graph = NULL;
            gpu_clear_error();
            ctx->graph_refused = p;
            return run_gpu_stages(ctx, p, cur, env, err, errlen);
        }
        ctx->graph_for = key;
        ctx->graph_result = out;
    }
    int rc = gpu_graph_launch(ctx->graph, ctx->stream, err, errlen);
    if (rc == IP_OK) *cur = ctx->graph_result;
    *replayed = rc == IP_OK;
    return rc;
}

static void gpu_profile(exec_ctx *ctx, const plan *p, exec_profile *prof)
{
    if (!prof || !ctx->opt.profile) return;
    int last = 2 + 2 * p->n;
    prof->upload_ms = gpu_event_ms(ctx->events[0], ctx->events[1]);
    for (int i = 0; i < p->n; i++) {
        const fuse_group *g = &ctx->fusion[i].group;
        prof->stage_on_gpu[i] = p->steps[i].plugin->stage->run_gpu != NULL;
        if (prof->stage_fused[i] < 0) continue;
        if (g->kind != FUSE_NONE) {
            prof->stage_on_gpu[i] = 1;
            prof->stage_fused[i] = g->n_steps;
            for (int k = 1; k < g->n_steps; k++) prof->stage_fused[i + k] = -1;
        }
        prof->stage_ms[i] = gpu_event_ms(ctx->events[2 + 2 * i], ctx->events[3 + 2 * i]);
    }
    prof->download_ms = gpu_event_ms(ctx->events[last], ctx->events[last + 1]);
}

static int run_gpu_path(exec_ctx *ctx, const plan *p, const ip_image *in, const stage_env *env, ip_image *out,
                        exec_profile *prof, char *err, size_t errlen)
{
    /* The context may have been made on another thread (start-up runs beside decoding). */
    int rc = gpu_select(ctx->opt.gpu_index, err, errlen);
    /* the result leaves the device unless kept there; zero-copy writes it into mapped memory */
    int host_output = !ctx->result_on_device || ctx->opt.transfer == EXEC_ZEROCOPY;
    if (rc == IP_OK) rc = reserve_gpu(ctx, p, &in->shape, !in->on_device, host_output, err, errlen);
    if (rc != IP_OK) return rc;
    ip_image cur = *in;
    record(ctx, 0);
    if (!in->on_device) rc = upload(ctx, in, &cur, err, errlen);
    record(ctx, 1);
    int graphed = rc == IP_OK && graph_wanted(ctx, p, &cur.shape), replayed = 0;
    if (rc == IP_OK && !graphed) prepare_fusion(ctx, p);
    if (rc == IP_OK)
        rc = graphed ? run_graphed(ctx, p, &cur, env, &replayed, err, errlen) : run_gpu_stages(ctx, p, &cur, env, err, errlen);
    if (prof) prof->graphed = replayed;
    const ip_shape *final = &p->steps[p->n - 1].out;
    size_t row = img_row_bytes(final);
    void *host_out = uses_pinned(ctx) ? ctx->pinned_out.ptr : ctx->host_out.ptr;
    size_t host_pitch = row;
    int on_host = cur.on_device && !ctx->result_on_device;
    if (on_host && target_takes(ctx, final, 0)) {   /* downloaded straight into the caller's memory */
        host_out = ctx->target.data;
        host_pitch = (size_t)ctx->target.stride;
    }
    record(ctx, 2 + 2 * p->n);
    if (rc == IP_OK && on_host && !(ctx->opt.transfer == EXEC_ZEROCOPY && p->steps[p->n - 1].plugin->stage->run_gpu))
        rc = gpu_copy2d(host_out, host_pitch, cur.data, (size_t)cur.stride, row, (size_t)final->height, GPU_D2H,
                        ctx->stream, err, errlen);
    record(ctx, 3 + 2 * p->n);
    /* A result left in the caller's device memory is ordered by the caller's stream, not waited for. */
    int queued = rc == IP_OK && !on_host && ctx->target.data && cur.data == ctx->target.data;
    char sync_err[256] = "";
    int sync_rc = queued ? IP_OK : gpu_stream_sync(ctx->stream, sync_err, sizeof sync_err);
    if (rc == IP_OK && sync_rc != IP_OK) {
        snprintf(err, errlen, "%s", sync_err);
        rc = sync_rc;
    }
    if (rc != IP_OK) {
        gpu_clear_error();
        return rc;
    }
    gpu_profile(ctx, p, prof);
    *out = on_host || !cur.on_device ? image_at(host_out, (ptrdiff_t)host_pitch, final, 0) : cur;
    return IP_OK;
}

int exec_run(exec_ctx *ctx, const plan *p, const ip_image *in, const char *input_path, ip_image *out,
             exec_profile *prof, char *err, size_t errlen)
{
    if (p->n < 1 || p->n > EXEC_MAX_STAGES) {
        snprintf(err, errlen, "a pipeline must have 1 to %d stages", EXEC_MAX_STAGES);
        return IP_EINVAL;
    }
    ctx->notes[0] = '\0';
    if (prof) {
        memset(prof, 0, sizeof *prof);
        prof->n_stages = p->n;
    }
    stage_env env = { ctx->opt.threads, input_path, ctx->stream };
    double t0 = now_ms();
    int rc = ctx->opt.device == EXEC_GPU ? run_gpu_path(ctx, p, in, &env, out, prof, err, errlen)
                                          : run_cpu_path(ctx, p, in, &env, out, prof, err, errlen);
    if (prof) prof->total_ms = now_ms() - t0;
    return rc;
}
