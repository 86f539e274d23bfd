/* The stage-call layer (stage_call.c) and the executors' use of it: each call hands a stage the
 * ip_exec it should (threads, input file, the stream only on the device, the scratch of the
 * side it runs on with that side's planned size, the caller's message buffer), a failure reads
 * "stage 'NAME' (line N) failed: ...", and in a GPU run a stage without run_gpu goes down,
 * through run_cpu and up again, in the whole-image executor and the band executor alike. The
 * GPU is a mock of gpu.h whose device memory is host memory and whose copies happen at once;
 * copies, waits and stage calls are written to a trace, in order. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "stream/band.h"
#include "exec/exec.h"
#include "gpu/gpu.h"
#include "exec/stage_call.h"
#include "testutil.h"

#define FAKE_SCRATCH 100
#define FAKE_GPU_SCRATCH 200
#define FAKE_LINE 4
#define NO_MESSAGE "the plugin reported an error without a message"

static char trace_buf[1024];
static int fail_copy;          /* the mock's next copy fails */

static void trace(const char *word)
{
    size_t used = strlen(trace_buf);
    snprintf(trace_buf + used, sizeof trace_buf - used, "%s%s", used ? " " : "", word);
}

static void trace_reset(void)
{
    trace_buf[0] = '\0';
    fail_copy = 0;
}

/* The mock device (with tests/gpu_mock_basics.c). */

int gpu_stream_create(void **stream, char *err, size_t errlen)
{
    (void)err; (void)errlen;
    *stream = malloc(1);
    return *stream ? IP_OK : IP_ENOMEM;
}
int gpu_stream_create_urgent(void **stream, char *err, size_t errlen) { return gpu_stream_create(stream, err, errlen); }
void gpu_stream_destroy(void *stream) { free(stream); }

int gpu_stream_sync(void *stream, char *err, size_t errlen)
{
    (void)err; (void)errlen;
    trace(stream ? "sync" : "sync-no-stream");
    return IP_OK;
}


int gpu_copy2d(void *dst, size_t dst_pitch, const void *src, size_t src_pitch, size_t row_bytes, size_t rows,
               gpu_copy_kind kind, void *stream, char *err, size_t errlen)
{
    if (fail_copy) {
        snprintf(err, errlen, "mock copy failed");
        trace("copy-failed");
        return IP_ECUDA;
    }
    trace(!stream ? "copy-no-stream" : kind == GPU_D2H ? "down" : kind == GPU_H2D ? "up" : "d2d");
    for (size_t y = 0; y < rows; y++)
        memcpy((char *)dst + y * dst_pitch, (const char *)src + y * src_pitch, row_bytes);
    return IP_OK;
}


/* The fake stage: 8-bit pixels plus one; a reduction sums them. It keeps what each call got. */
typedef struct {
    int calls;
    ip_exec ex;
    ip_image in;
    ip_shape finish_shape;
    const void *finish_total;
} seen_call;

static seen_call seen_cpu, seen_gpu, seen_reduce, seen_finish;
static int fail_rc;            /* the stage's calls fail with this status */
static const char *fail_text;  /* and this message (NULL: none) */
static unsigned long long finished_sum;

static void seen_reset(void)
{
    memset(&seen_cpu, 0, sizeof seen_cpu);
    memset(&seen_gpu, 0, sizeof seen_gpu);
    memset(&seen_reduce, 0, sizeof seen_reduce);
    memset(&seen_finish, 0, sizeof seen_finish);
    fail_rc = IP_OK;
    fail_text = NULL;
    finished_sum = 0;
    trace_reset();
}

static int fake_fails(const ip_exec *ex)
{
    if (fail_text) snprintf(ex->err, ex->errlen, "%s", fail_text);
    return fail_rc;
}

static int fake_plan(const void *state, const ip_shape *in, ip_shape *out, ip_needs *needs, char *err, size_t errlen)
{
    (void)state; (void)err; (void)errlen;
    *out = *in;
    *needs = (ip_needs){ 0, FAKE_SCRATCH, FAKE_GPU_SCRATCH };
    return IP_OK;
}

static int add_one(seen_call *seen, const char *word, const ip_image *in, ip_image *out, const ip_exec *ex)
{
    trace(word);
    seen->calls++;
    seen->ex = *ex;
    seen->in = *in;
    if (fail_rc) return fake_fails(ex);
    size_t row = (size_t)in->shape.width * (size_t)in->shape.channels;
    for (int y = 0; y < in->shape.height; y++)
        for (size_t x = 0; x < row; x++)
            ((unsigned char *)out->data)[(ptrdiff_t)y * out->stride + (ptrdiff_t)x] =
                (unsigned char)(((const unsigned char *)in->data)[(ptrdiff_t)y * in->stride + (ptrdiff_t)x] + 1);
    return IP_OK;
}

static int fake_cpu(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex)
{
    (void)state;
    return add_one(&seen_cpu, "cpu", in, out, ex);
}

static int fake_gpu(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex)
{
    (void)state;
    return add_one(&seen_gpu, "gpu", in, out, ex);
}

static size_t sum_bytes(const void *state, const ip_shape *in)
{
    (void)state; (void)in;
    return sizeof(unsigned long long);
}

static int sum_band(const void *state, const ip_image *band, void *partial, const ip_exec *ex)
{
    (void)state;
    trace(band->on_device ? "reduce-device" : "reduce-host");
    seen_reduce.calls++;
    seen_reduce.ex = *ex;
    seen_reduce.in = *band;
    if (fail_rc) return fake_fails(ex);
    unsigned long long *sum = partial;
    size_t row = (size_t)band->shape.width * (size_t)band->shape.channels;
    for (int y = 0; y < band->shape.height; y++)
        for (size_t x = 0; x < row; x++)
            *sum += ((const unsigned char *)band->data)[(ptrdiff_t)y * band->stride + (ptrdiff_t)x];
    return IP_OK;
}

static void sum_merge(const void *state, const ip_shape *in, void *total, const void *partial)
{
    (void)state; (void)in;
    *(unsigned long long *)total += *(const unsigned long long *)partial;
}

static int sum_finish(const void *state, const ip_shape *in, const void *total, const ip_exec *ex)
{
    (void)state;
    trace("finish");
    seen_finish.calls++;
    seen_finish.ex = *ex;
    seen_finish.finish_shape = *in;
    seen_finish.finish_total = total;
    if (fail_rc) return fake_fails(ex);
    finished_sum = *(const unsigned long long *)total;
    return IP_OK;
}

static const ip_stage fake_point = {
    .abi_version = IP_ABI_VERSION, .struct_size = sizeof(ip_stage), .name = "fake", .summary = "adds one",
    .plan = fake_plan, .run_cpu = fake_cpu, .run_gpu = fake_gpu, .stage_class = IP_CLASS_POINT,
};

static const ip_stage fake_sum = {
    .abi_version = IP_ABI_VERSION, .struct_size = sizeof(ip_stage), .name = "fakesum", .summary = "sums",
    .plan = fake_plan, .run_cpu = fake_cpu, .run_gpu = fake_gpu, .stage_class = IP_CLASS_REDUCTION,
    .partial_bytes = sum_bytes, .reduce_band = sum_band, .reduce_merge = sum_merge, .reduce_finish = sum_finish,
};

static reg_plugin plugin_of(const ip_stage *stage)
{
    reg_plugin r = { stage, NULL, NULL, NULL };
    return r;
}

static plan_step step_of(const reg_plugin *plugin, const ip_shape *shape)
{
    plan_step st;
    memset(&st, 0, sizeof st);
    st.plugin = plugin;
    st.line = FAKE_LINE;
    st.in = st.out = *shape;
    st.needs = (ip_needs){ 0, FAKE_SCRATCH, FAKE_GPU_SCRATCH };
    return st;
}

static const ip_shape shape = { 5, 3, 1, IP_U8 };
static const char input_path[] = "photo.png";

/* Pixel (x, y) of the test image: a pattern whose every value differs from its neighbours'. */
static unsigned char pixel(int x, int y) { return (unsigned char)(7 * y + 3 * x + 11); }

static unsigned char *pattern(ptrdiff_t stride)
{
    unsigned char *p = calloc((size_t)stride * (size_t)shape.height, 1);
    if (!p) abort();
    for (int y = 0; y < shape.height; y++)
        for (int x = 0; x < shape.width; x++) p[(ptrdiff_t)y * stride + x] = pixel(x, y);
    return p;
}

static unsigned long long pattern_sum(void)
{
    unsigned long long sum = 0;
    for (int y = 0; y < shape.height; y++)
        for (int x = 0; x < shape.width; x++) sum += pixel(x, y);
    return sum;
}

static int is_pattern_plus_one(const unsigned char *data, ptrdiff_t stride)
{
    for (int y = 0; y < shape.height; y++)
        for (int x = 0; x < shape.width; x++)
            if (data[(ptrdiff_t)y * stride + x] != (unsigned char)(pixel(x, y) + 1)) return 0;
    return 1;
}

static void check_exec(const seen_call *seen, const char *what, void *stream, const void *scratch,
                       size_t scratch_bytes, const char *msg, size_t msglen)
{
    CHECK(seen->calls == 1, "%s: called %d times", what, seen->calls);
    CHECK(seen->ex.stream == stream, "%s: stream %p, wanted %p", what, seen->ex.stream, stream);
    CHECK(seen->ex.threads == 3, "%s: threads %d", what, seen->ex.threads);
    CHECK(seen->ex.input_path == input_path, "%s: input path %s", what,
          seen->ex.input_path ? seen->ex.input_path : "NULL");
    CHECK(seen->ex.scratch == scratch, "%s: scratch %p, wanted %p", what, seen->ex.scratch, scratch);
    CHECK(seen->ex.scratch_bytes == scratch_bytes, "%s: %zu scratch bytes, wanted %zu", what, seen->ex.scratch_bytes,
          scratch_bytes);
    CHECK(seen->ex.err == msg && seen->ex.errlen == msglen, "%s: message buffer %p (%zu), wanted %p (%zu)", what,
          (void *)seen->ex.err, seen->ex.errlen, (const void *)msg, msglen);
}

/* Each call's ip_exec, and what it computes. */
static void test_calls(void)
{
    reg_plugin plug = plugin_of(&fake_sum);
    plan_step st = step_of(&plug, &shape);
    char stream_token, host_scratch[FAKE_SCRATCH], dev_scratch[FAKE_GPU_SCRATCH], msg[64];
    stage_env env = { 3, input_path, &stream_token };
    unsigned char *in = pattern(8), *out = pattern(8);
    ip_image im = { in, 8, shape, 0 }, om = { out, 8, shape, 0 };

    seen_reset();
    int rc = stage_call_cpu(&st, &env, host_scratch, &st.needs, &im, &om, msg, sizeof msg);
    CHECK(rc == IP_OK && is_pattern_plus_one(out, 8), "run_cpu: rc %d or wrong pixels", rc);
    CHECK(seen_cpu.in.data == in, "run_cpu got another input");
    check_exec(&seen_cpu, "run_cpu", NULL, host_scratch, FAKE_SCRATCH, msg, sizeof msg);

    seen_reset();
    im.on_device = om.on_device = 1;
    rc = stage_call_gpu(&st, &env, dev_scratch, &st.needs, &im, &om, msg, sizeof msg);
    CHECK(rc == IP_OK && is_pattern_plus_one(out, 8), "run_gpu: rc %d or wrong pixels", rc);
    check_exec(&seen_gpu, "run_gpu", &stream_token, dev_scratch, FAKE_GPU_SCRATCH, msg, sizeof msg);
    CHECK(seen_cpu.calls == 0, "run_gpu's call ran run_cpu");

    seen_reset();
    unsigned long long partial = 5;
    rc = stage_call_reduce_gpu(&st, &env, dev_scratch, &st.needs, &im, &partial, msg, sizeof msg);
    CHECK(rc == IP_OK && partial == 5 + pattern_sum(), "device reduce_band: rc %d, sum %llu, wanted %llu", rc, partial,
          5 + pattern_sum());
    check_exec(&seen_reduce, "device reduce_band", &stream_token, dev_scratch, FAKE_GPU_SCRATCH, msg, sizeof msg);

    seen_reset();
    im.on_device = 0;
    partial = 0;
    rc = stage_call_reduce_cpu(&st, &env, host_scratch, &st.needs, &im, &partial, msg, sizeof msg);
    CHECK(rc == IP_OK && partial == pattern_sum(), "host reduce_band: rc %d, sum %llu", rc, partial);
    check_exec(&seen_reduce, "host reduce_band", NULL, host_scratch, FAKE_SCRATCH, msg, sizeof msg);

    seen_reset();
    rc = stage_call_reduce_finish(&st, &env, &partial, msg, sizeof msg);
    CHECK(rc == IP_OK && finished_sum == pattern_sum(), "reduce_finish: rc %d, total %llu", rc, finished_sum);
    check_exec(&seen_finish, "reduce_finish", NULL, NULL, 0, msg, sizeof msg);
    CHECK(seen_finish.finish_total == &partial && seen_finish.finish_shape.width == shape.width &&
          seen_finish.finish_shape.height == shape.height, "reduce_finish: another total or shape");
    free(in);
    free(out);
}

static void check_failure(const plan_step *st, int rc, const char *detail, int want_rc, const char *want)
{
    char err[128];
    memset(err, 'x', sizeof err);
    int got = stage_failed_message(st, rc, detail, err, sizeof err);
    CHECK(got == want_rc, "failure of rc %d returned %d, wanted %d", rc, got, want_rc);
    CHECK(strcmp(err, want) == 0, "failure message '%s', wanted '%s'", err, want);
}

/* A failing stage's status and message come back, and are worded as every executor words them. */
static void test_failure(void)
{
    reg_plugin plug = plugin_of(&fake_point);
    plan_step st = step_of(&plug, &shape);
    char msg[64] = "";
    stage_env env = { 3, input_path, NULL };
    unsigned char *in = pattern(5), *out = pattern(5);
    ip_image im = { in, 5, shape, 0 }, om = { out, 5, shape, 0 };
    seen_reset();
    fail_rc = IP_EIO;
    fail_text = "bad pixel 7";
    int rc = stage_call_cpu(&st, &env, NULL, &st.needs, &im, &om, msg, sizeof msg);
    CHECK(rc == IP_EIO && strcmp(msg, "bad pixel 7") == 0, "failing run_cpu: rc %d, message '%s'", rc, msg);
    check_failure(&st, rc, msg, IP_EIO, "stage 'fake' (line 4) failed: bad pixel 7");
    check_failure(&st, IP_ENOMEM, "", IP_ENOMEM, "stage 'fake' (line 4) failed: " NO_MESSAGE);
    check_failure(&st, IP_OK, "odd", IP_EINVAL, "stage 'fake' (line 4) failed: odd");
    free(in);
    free(out);
}

/* Down into the host buffers, run_cpu there with host scratch and no stream, up again. */
static void test_round_trip(void)
{
    reg_plugin plug = plugin_of(&fake_point);
    plan_step st = step_of(&plug, &shape);
    char stream_token, host_scratch[FAKE_SCRATCH], msg[64] = "";
    stage_env env = { 3, input_path, &stream_token };
    unsigned char *dev_in = pattern(16), *dev_out = calloc(16 * (size_t)shape.height, 1);
    unsigned char *h_in_data = calloc((size_t)shape.width * (size_t)shape.height, 1);
    unsigned char *h_out_data = calloc((size_t)shape.width * (size_t)shape.height, 1);
    if (!dev_out || !h_in_data || !h_out_data) abort();
    ip_image din = { dev_in, 16, shape, 1 }, dout = { dev_out, 16, shape, 1 };
    ip_image h_in = { h_in_data, shape.width, shape, 0 }, h_out = { h_out_data, shape.width, shape, 0 };

    seen_reset();
    int rc = stage_round_trip(&st, &env, host_scratch, &st.needs, &din, &dout, &h_in, &h_out, msg, sizeof msg);
    CHECK(rc == IP_OK, "round trip: rc %d (%s)", rc, msg);
    CHECK(strcmp(trace_buf, "down sync cpu up") == 0, "round trip ran '%s'", trace_buf);
    CHECK(is_pattern_plus_one(dev_out, 16), "round trip: wrong device pixels");
    CHECK(seen_cpu.in.data == h_in_data && !seen_cpu.in.on_device, "round trip: run_cpu not on the host copy");
    check_exec(&seen_cpu, "round trip's run_cpu", NULL, host_scratch, FAKE_SCRATCH, msg, sizeof msg);

    seen_reset();
    fail_rc = IP_EUNSUPPORTED;
    fail_text = "no such mode";
    rc = stage_round_trip(&st, &env, host_scratch, &st.needs, &din, &dout, &h_in, &h_out, msg, sizeof msg);
    CHECK(rc == IP_EUNSUPPORTED && strcmp(msg, "no such mode") == 0, "failing round trip: rc %d, '%s'", rc, msg);
    CHECK(strcmp(trace_buf, "down sync cpu") == 0, "failing round trip ran '%s'", trace_buf);

    seen_reset();
    fail_copy = 1;
    rc = stage_round_trip(&st, &env, host_scratch, &st.needs, &din, &dout, &h_in, &h_out, msg, sizeof msg);
    CHECK(rc == IP_ECUDA && strcmp(msg, "mock copy failed") == 0, "failed download: rc %d, '%s'", rc, msg);
    CHECK(seen_cpu.calls == 0, "run_cpu ran after a failed download");
    free(dev_in);
    free(dev_out);
    free(h_in_data);
    free(h_out_data);
}

static int exec_once(exec_device device, const plan_step *st, unsigned char *in, ip_image *out, exec_ctx **ctx,
                     char *err, size_t errlen)
{
    plan one = { (plan_step *)st, 1, NULL };
    exec_options eo = { device, 0, 3, EXEC_COPY, 0, 0 };
    exec_fusion_options fo = { 1, 1, 0 };
    ip_image im = { in, shape.width, shape, 0 };
    int rc = exec_create(ctx, &eo, err, errlen);
    if (rc != IP_OK) return rc;
    exec_set_fusion(*ctx, &fo);
    return exec_run(*ctx, &one, &im, input_path, out, NULL, err, errlen);
}

/* The whole-image executor: run_gpu where there is one, the round trip where there is not, and
 * the CPU path's run_cpu; the failure message is the layer's. */
static void test_exec_choice(void)
{
    ip_stage no_gpu = fake_point;
    no_gpu.run_gpu = NULL;
    reg_plugin with = plugin_of(&fake_point), without = plugin_of(&no_gpu);
    plan_step st_with = step_of(&with, &shape), st_without = step_of(&without, &shape);
    unsigned char *in = pattern(shape.width);
    char err[256] = "";
    exec_ctx *ctx = NULL;
    ip_image out;

    seen_reset();
    int rc = exec_once(EXEC_GPU, &st_without, in, &out, &ctx, err, sizeof err);
    CHECK(rc == IP_OK && is_pattern_plus_one(out.data, out.stride), "GPU exec, no run_gpu: rc %d (%s)", rc, err);
    CHECK(strstr(trace_buf, "down sync cpu up") && seen_gpu.calls == 0, "GPU exec, no run_gpu: ran '%s'", trace_buf);
    CHECK(seen_cpu.calls == 1 && seen_cpu.ex.stream == NULL && seen_cpu.ex.scratch_bytes == FAKE_SCRATCH &&
          seen_cpu.ex.scratch && seen_cpu.ex.input_path == input_path && seen_cpu.ex.threads == 3,
          "GPU exec, no run_gpu: run_cpu got stream %p, %zu scratch bytes", seen_cpu.ex.stream,
          seen_cpu.ex.scratch_bytes);
    CHECK(ctx && strstr(exec_take_notes(ctx),
                        "stage 'fake' has no GPU path: it runs on the CPU, costing one round trip"),
          "GPU exec, no run_gpu: notes '%s'", ctx ? exec_take_notes(ctx) : "");
    exec_destroy(ctx);

    seen_reset();
    rc = exec_once(EXEC_GPU, &st_with, in, &out, &ctx, err, sizeof err);
    CHECK(rc == IP_OK && is_pattern_plus_one(out.data, out.stride), "GPU exec: rc %d (%s)", rc, err);
    CHECK(seen_cpu.calls == 0 && seen_gpu.calls == 1 && !strstr(trace_buf, "sync cpu"), "GPU exec ran '%s'", trace_buf);
    CHECK(ctx && seen_gpu.ex.stream == exec_stream(ctx) && seen_gpu.ex.stream && seen_gpu.ex.scratch &&
          seen_gpu.ex.scratch_bytes == FAKE_GPU_SCRATCH && seen_gpu.ex.input_path == input_path,
          "GPU exec: run_gpu got stream %p, %zu scratch bytes", seen_gpu.ex.stream, seen_gpu.ex.scratch_bytes);
    exec_destroy(ctx);

    seen_reset();
    fail_rc = IP_EIO;
    fail_text = "bad pixel 7";
    rc = exec_once(EXEC_GPU, &st_without, in, &out, &ctx, err, sizeof err);
    CHECK(rc == IP_EIO && strcmp(err, "stage 'fake' (line 4) failed: bad pixel 7") == 0,
          "GPU exec, failing round trip: rc %d, '%s'", rc, err);
    exec_destroy(ctx);

    seen_reset();
    rc = exec_once(EXEC_CPU, &st_with, in, &out, &ctx, err, sizeof err);
    CHECK(rc == IP_OK && is_pattern_plus_one(out.data, out.stride) && seen_gpu.calls == 0, "CPU exec: rc %d (%s)", rc,
          err);
    CHECK(seen_cpu.ex.stream == NULL && seen_cpu.ex.scratch && seen_cpu.ex.scratch_bytes == FAKE_SCRATCH &&
          seen_cpu.ex.input_path == input_path && seen_cpu.ex.threads == 3, "CPU exec: run_cpu's ip_exec");
    exec_destroy(ctx);

    seen_reset();
    fail_rc = IP_ENOMEM;
    rc = exec_once(EXEC_CPU, &st_with, in, &out, &ctx, err, sizeof err);
    CHECK(rc == IP_ENOMEM && strcmp(err, "stage 'fake' (line 4) failed: " NO_MESSAGE) == 0,
          "CPU exec, failing: rc %d, '%s'", rc, err);
    exec_destroy(ctx);
    free(in);
}

extern size_t gpu_mock_pinned_allocs;   /* tests/gpu_mock_basics.c */

/* A pinning context pins only the buffers an image passes through: none for an image decoded
 * into device memory whose result stays there, the output's when it is downloaded, the input's
 * when it comes from the host. */
static void test_exec_pinning(void)
{
    reg_plugin plug = plugin_of(&fake_point);
    plan_step st = step_of(&plug, &shape);
    plan one = { &st, 1, NULL };
    exec_options eo = { EXEC_GPU, 0, 3, EXEC_COPY, 0, 1 };
    exec_fusion_options fo = { 1, 1, 0 };
    unsigned char *host = pattern(shape.width);
    char err[256] = "";
    exec_ctx *ctx = NULL;
    void *dev = NULL;
    ip_image out = { 0 };
    seen_reset();
    int rc = exec_create(&ctx, &eo, err, sizeof err);
    if (rc == IP_OK) exec_set_fusion(ctx, &fo);
    gpu_mock_pinned_allocs = 0;
    if (rc == IP_OK) rc = exec_device_input(ctx, &one, &shape, (size_t)shape.width * (size_t)shape.height, &dev, err,
                                            sizeof err);
    if (rc == IP_OK) {
        memcpy(dev, host, (size_t)shape.width * (size_t)shape.height);
        exec_keep_result_on_device(ctx, 1);
        ip_image dev_in = { dev, shape.width, shape, 1 };
        rc = exec_run(ctx, &one, &dev_in, input_path, &out, NULL, err, sizeof err);
    }
    CHECK(rc == IP_OK && out.on_device && is_pattern_plus_one(out.data, out.stride), "device in and out: rc %d (%s)",
          rc, err);
    CHECK(gpu_mock_pinned_allocs == 0, "device in and out: %zu pinned buffers", gpu_mock_pinned_allocs);
    if (rc != IP_OK) {
        exec_destroy(ctx);
        free(host);
        return;
    }

    exec_keep_result_on_device(ctx, 0);
    ip_image dev_in = { dev, shape.width, shape, 1 };
    memcpy(dev, host, (size_t)shape.width * (size_t)shape.height);
    rc = exec_run(ctx, &one, &dev_in, input_path, &out, NULL, err, sizeof err);
    CHECK(rc == IP_OK && !out.on_device && is_pattern_plus_one(out.data, out.stride), "device in, host out: rc %d (%s)",
          rc, err);
    CHECK(gpu_mock_pinned_allocs == 1, "device in, host out: %zu pinned buffers, not the output's 1",
          gpu_mock_pinned_allocs);

    ip_image host_in = { host, shape.width, shape, 0 };
    rc = exec_run(ctx, &one, &host_in, input_path, &out, NULL, err, sizeof err);
    CHECK(rc == IP_OK && !out.on_device && is_pattern_plus_one(out.data, out.stride), "host in and out: rc %d (%s)",
          rc, err);
    CHECK(gpu_mock_pinned_allocs == 2, "host in and out: %zu pinned buffers, not 2 (the input's added)",
          gpu_mock_pinned_allocs);
    exec_destroy(ctx);
    free(host);
}

typedef struct {
    unsigned char *data;
    int rows;
} collected;

static int collect(void *user, const ip_image *rows, int y0, char *err, size_t errlen)
{
    (void)err; (void)errlen;
    collected *c = user;
    for (int y = 0; y < rows->shape.height; y++)
        memcpy(c->data + (size_t)(y0 + y) * (size_t)shape.width, (const char *)rows->data + (ptrdiff_t)y * rows->stride,
               (size_t)shape.width);
    c->rows += rows->shape.height;
    return IP_OK;
}

/* The whole image through a one-step band segment in one push; rc, and the rows collected. */
static int band_once(band_place place, const plan_step *st, unsigned char *in, collected *got, char *err,
                     size_t errlen)
{
    plan one = { (plan_step *)st, 1, NULL };
    band_seg seg = { 0, 1, 0, 0 };
    band_config cfg = { place, 0, 3, input_path, shape.height };
    band_segment *s = NULL;
    ip_image im = { in, shape.width, shape, 0 };
    band_sink sink = { collect, got };
    int rc = band_segment_create(&s, &one, &seg, &cfg, err, errlen);
    if (rc == IP_OK) rc = band_segment_push(s, &im, 0, &sink, err, errlen);
    if (rc == IP_OK) rc = band_segment_finish(s, err, errlen);
    band_segment_destroy(s);
    return rc;
}

/* The band executor on the mock GPU: run_gpu or the round trip, reduce_band on device rows or
 * on downloaded ones, and on the host; the failure message is the layer's. */
static void test_band_choice(void)
{
    ip_stage point_no_gpu = fake_point, sum_no_gpu = fake_sum;
    point_no_gpu.run_gpu = NULL;
    sum_no_gpu.run_gpu = NULL;
    reg_plugin point = plugin_of(&fake_point), point_cpu = plugin_of(&point_no_gpu);
    reg_plugin sum = plugin_of(&fake_sum), sum_cpu = plugin_of(&sum_no_gpu);
    plan_step st_point = step_of(&point, &shape), st_point_cpu = step_of(&point_cpu, &shape);
    plan_step st_sum = step_of(&sum, &shape), st_sum_cpu = step_of(&sum_cpu, &shape);
    unsigned char *in = pattern(shape.width), *out = calloc((size_t)shape.width * (size_t)shape.height, 1);
    if (!out) abort();
    char err[256] = "";
    collected got = { out, 0 };

    seen_reset();
    int rc = band_once(BAND_ON_GPU, &st_point_cpu, in, &got, err, sizeof err);
    CHECK(rc == IP_OK && got.rows == shape.height && is_pattern_plus_one(out, shape.width),
          "GPU band, no run_gpu: rc %d (%s), %d rows", rc, err, got.rows);
    CHECK(strstr(trace_buf, "down sync cpu up") && seen_gpu.calls == 0, "GPU band, no run_gpu: ran '%s'", trace_buf);
    CHECK(seen_cpu.ex.stream == NULL && !seen_cpu.in.on_device && seen_cpu.ex.scratch &&
          seen_cpu.ex.scratch_bytes == FAKE_SCRATCH && seen_cpu.ex.input_path == input_path && seen_cpu.ex.threads == 3,
          "GPU band, no run_gpu: run_cpu got stream %p, %zu scratch bytes", seen_cpu.ex.stream,
          seen_cpu.ex.scratch_bytes);

    seen_reset();
    got.rows = 0;
    rc = band_once(BAND_ON_GPU, &st_point, in, &got, err, sizeof err);
    CHECK(rc == IP_OK && got.rows == shape.height && is_pattern_plus_one(out, shape.width), "GPU band: rc %d (%s)", rc,
          err);
    CHECK(seen_cpu.calls == 0 && seen_gpu.calls == 1 && seen_gpu.in.on_device, "GPU band ran '%s'", trace_buf);
    CHECK(seen_gpu.ex.stream && seen_gpu.ex.scratch && seen_gpu.ex.scratch_bytes == FAKE_GPU_SCRATCH &&
          seen_gpu.ex.input_path == input_path,
          "GPU band: run_gpu got stream %p, %zu scratch bytes", seen_gpu.ex.stream, seen_gpu.ex.scratch_bytes);

    seen_reset();
    rc = band_once(BAND_ON_GPU, &st_sum, in, &got, err, sizeof err);
    CHECK(rc == IP_OK && finished_sum == pattern_sum(), "GPU band sum: rc %d (%s), %llu", rc, err, finished_sum);
    CHECK(strstr(trace_buf, "reduce-device") && !strstr(trace_buf, "reduce-host"), "GPU band sum ran '%s'", trace_buf);
    CHECK(seen_reduce.ex.stream && seen_reduce.ex.scratch_bytes == FAKE_GPU_SCRATCH,
          "GPU band sum: stream %p, %zu bytes", seen_reduce.ex.stream, seen_reduce.ex.scratch_bytes);
    CHECK(seen_finish.calls == 1 && seen_finish.ex.stream == NULL && seen_finish.ex.scratch == NULL &&
          seen_finish.ex.input_path == input_path, "GPU band sum: reduce_finish's ip_exec");

    seen_reset();
    rc = band_once(BAND_ON_GPU, &st_sum_cpu, in, &got, err, sizeof err);
    CHECK(rc == IP_OK && finished_sum == pattern_sum(), "GPU band host sum: rc %d (%s), %llu", rc, err, finished_sum);
    CHECK(strstr(trace_buf, "down sync reduce-host") && !strstr(trace_buf, "reduce-device"),
          "GPU band host sum ran '%s'", trace_buf);
    CHECK(seen_reduce.ex.stream == NULL && seen_reduce.ex.scratch && seen_reduce.ex.scratch_bytes == FAKE_SCRATCH,
          "GPU band host sum: stream %p, %zu bytes", seen_reduce.ex.stream, seen_reduce.ex.scratch_bytes);

    seen_reset();
    rc = band_once(BAND_ON_HOST, &st_sum, in, &got, err, sizeof err);
    CHECK(rc == IP_OK && finished_sum == pattern_sum() && strcmp(trace_buf, "reduce-host finish") == 0,
          "host band sum: rc %d (%s), ran '%s'", rc, err, trace_buf);
    CHECK(seen_reduce.ex.stream == NULL && seen_reduce.ex.scratch_bytes == FAKE_SCRATCH, "host band sum's ip_exec");

    seen_reset();
    fail_rc = IP_EIO;
    fail_text = "bad pixel 7";
    rc = band_once(BAND_ON_GPU, &st_point_cpu, in, &got, err, sizeof err);
    CHECK(rc == IP_EIO && strcmp(err, "stage 'fake' (line 4) failed: bad pixel 7") == 0,
          "GPU band, failing round trip: rc %d, '%s'", rc, err);

    seen_reset();
    fail_rc = IP_EIO;
    fail_text = "no total";
    rc = band_once(BAND_ON_HOST, &st_sum, in, &got, err, sizeof err);
    CHECK(rc == IP_EIO && strcmp(err, "stage 'fakesum' (line 4) failed: no total") == 0, "host band, failing sum: '%s'",
          err);
    free(in);
    free(out);
}

int main(void)
{
    test_calls();
    test_failure();
    test_round_trip();
    test_exec_choice();
    test_exec_pinning();
    test_band_choice();
    return tu_finish();
}
