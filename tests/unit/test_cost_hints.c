/* --device auto's per-stage costs come from each descriptor's cost_of: the in-tree stages give the
 * numbers core/src/run/cost.c held for them by name (so device choices stay as they were), a stage
 * without the hint, or built before it, gets the light window stage's default. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "io/tiff_gpu.h"
#include "run/cost.h"
#include "plan_testutil.h"
#include "testutil.h"

static registry reg;

/* core/src/run/cost.c as it was at 23ca716, when it told stages by name: per input byte, r the step's
 * halo. The reference the hints must reproduce to the last bit. */
static ip_cost reference_cost(const char *name, int r)
{
    static const struct { int r; double cpu, gpu; } at[] = {
        { 1, 1.51, 0.0028 }, { 2, 3.68, 0.0120 }, { 3, 18.5, 0.0405 }, { 7, 19.2, 0.116 }, { 15, 19.6, 0.209 },
    };
    double w = 2.0 * r + 1;
    if (!strcmp(name, "grayscale")) return (ip_cost){ 0.64, 0.00064 };
    if (!strcmp(name, "median")) {
        int n = (int)(sizeof at / sizeof *at), i = 0;
        if (r <= at[0].r) return (ip_cost){ at[0].cpu, at[0].gpu };
        while (i < n - 2 && r > at[i + 1].r) i++;
        double f = (double)(r - at[i].r) / (at[i + 1].r - at[i].r);
        return (ip_cost){ at[i].cpu + f * (at[i + 1].cpu - at[i].cpu), at[i].gpu + f * (at[i + 1].gpu - at[i].gpu) };
    }
    if (!strcmp(name, "mean")) return (ip_cost){ 1.45 + 0.12 * r, 0.0020 + 0.00006 * r };
    if (!strcmp(name, "convolve")) return (ip_cost){ 0.2 * w * w, 0.0030 };
    if (!strcmp(name, "entropy")) return (ip_cost){ 11.0 * w * w / 25.0, 0.0065 * w * w / 25.0 };
    if (!strcmp(name, "histogram")) return (ip_cost){ 9.0, 0.0105 };
    if (!strcmp(name, "transpose")) return (ip_cost){ 17.8, 0.0011 };
    return (ip_cost){ 2.0, 0.01 };
}

static int same_cost(ip_cost a, ip_cost b) { return a.cpu_ns == b.cpu_ns && a.gpu_ns == b.gpu_ns; }

/* Every step of text's plan costs what the reference says for its stage and halo. */
static void check_pipeline(const char *text)
{
    const ip_shape shape = { 40, 24, 1, IP_U8 };
    plan p;
    if (!tu_build_plan(&reg, text, &shape, &p)) return;
    for (int i = 0; i < p.n; i++) {
        const plan_step *st = &p.steps[i];
        ip_cost got = cost_of_step(st), want = reference_cost(st->plugin->stage->name, st->needs.halo);
        CHECK(same_cost(got, want), "%s, step %d: %.17g %.17g ns, cost.c had %.17g %.17g", text, i, got.cpu_ns,
              got.gpu_ns, want.cpu_ns, want.gpu_ns);
    }
    plan_free(&p);
}

static void test_in_tree_costs(void)
{
    static const char *const fixed[] = {
        "grayscale | histogram bins=7 | transpose",
        "convolve",
        "convolve kernel=gaussian5",
        "convolve kernel=\"1 2 3 4 3 2 1\"",
        "convolve kernel=\"1; 2; 1\" output=f32",
        "pointinv | oldinvert",
    };
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) check_pipeline(fixed[i]);
    char text[64];
    for (int r = 1; r <= 25; r++) {
        snprintf(text, sizeof text, "median radius=%d", r);
        check_pipeline(text);
    }
    for (int r = 1; r <= 100; r += 9) {
        snprintf(text, sizeof text, "mean radius=%d", r);
        check_pipeline(text);
    }
    for (int r = 1; r <= 30; r += 4) {
        snprintf(text, sizeof text, "entropy radius=%d", r);
        check_pipeline(text);
    }
}

typedef struct {
    ip_cost give;
    int status, calls;
} fake_state;

static int fake_cost(const void *state, const ip_shape *in, ip_cost *cost)
{
    fake_state *s = (fake_state *)state;   /* the test's own memory: counts the calls */
    (void)in;
    s->calls++;
    *cost = s->give;
    return s->status;
}

static int fake_run(const void *state, const ip_image *in, ip_image *out, const ip_exec *ex)
{
    (void)state, (void)in, (void)out, (void)ex;
    return IP_OK;
}

/* One step of stage over a 100x10 3-channel 16-bit image (6000 bytes). */
static plan_step fake_step(const reg_plugin *plugin, fake_state *state)
{
    plan_step st;
    memset(&st, 0, sizeof st);
    st.plugin = plugin;
    st.state = state;
    st.in = st.out = (ip_shape){ 100, 10, 3, IP_U16 };
    return st;
}

static void test_fake_stages(void)
{
    const ip_cost fallback = { 2.0, 0.01 }, hint = { 3.5, 0.25 };
    ip_stage with = { .abi_version = IP_ABI_VERSION, .struct_size = sizeof(ip_stage), .name = "anything",
                      .run_cpu = fake_run, .run_gpu = fake_run, .cost_of = fake_cost };
    ip_stage without = with, older = with;
    without.cost_of = NULL;
    older.struct_size = (uint32_t)offsetof(ip_stage, cost_of);   /* built before hints: cost_of lies past its end */
    reg_plugin p_with = { &with, NULL, "with", NULL }, p_without = { &without, NULL, "without", NULL },
               p_older = { &older, NULL, "older", NULL };
    fake_state s = { hint, IP_OK, 0 };
    plan_step st = fake_step(&p_with, &s);
    CHECK(same_cost(cost_of_step(&st), hint) && s.calls == 1, "the hint was not used (%d calls)", s.calls);

    st = fake_step(&p_without, &s);
    CHECK(same_cost(cost_of_step(&st), fallback), "a stage without cost_of did not get the default");
    st = fake_step(&p_older, &s);
    s.calls = 0;
    CHECK(same_cost(cost_of_step(&st), fallback) && s.calls == 0, "an old descriptor was read past its size");

    st = fake_step(&p_with, &s);
    s.status = IP_EUNSUPPORTED;
    CHECK(same_cost(cost_of_step(&st), fallback), "a hint that declined was used");
    s.status = IP_OK;
    s.give = (ip_cost){ NAN, 0.5 };
    CHECK(same_cost(cost_of_step(&st), fallback), "a hint of NaN was used");
    s.give = (ip_cost){ 1.0, -0.5 };
    CHECK(same_cost(cost_of_step(&st), fallback), "a negative hint was used");
    s.give = (ip_cost){ 0, 0 };
    CHECK(same_cost(cost_of_step(&st), s.give), "a free stage's hint (0 ns) was not used");
}

/* The estimate of a one-step plan whose stage hints 3.5 ns a byte on the CPU and 0.25 on the GPU,
 * its input and output 100x10x3 u16: 3000 samples, 6000 bytes. */
static void estimate_one_step(const cost_setting *set, cost_estimate *est)
{
    ip_stage with = { .abi_version = IP_ABI_VERSION, .struct_size = sizeof(ip_stage), .name = "anything",
                      .run_cpu = fake_run, .run_gpu = fake_run, .cost_of = fake_cost };
    reg_plugin plugin = { &with, NULL, "with", NULL };
    fake_state s = { { 3.5, 0.25 }, IP_OK, 0 };
    plan_step st = fake_step(&plugin, &s);
    plan p = { &st, 1, NULL };
    cost_estimate_plan(&p, &st.in, set, est);
}

/* The estimate takes the hint per byte of the step's input: 6000 bytes, 4 threads. */
static void test_estimate_uses_hint(void)
{
    cost_setting set = { .in_format = IO_FMT_PNG, .out_format = IO_FMT_PNG, .cpu_threads = 4 };
    cost_estimate est;
    estimate_one_step(&set, &est);
    CHECK(est.cpu_ms == 3.5 * 6000.0 / 4 / 1e6, "cpu %.17g ms", est.cpu_ms);
    CHECK(est.gpu_stages_ms == 0.25 * 6000.0 / 1e6, "gpu stages %.17g ms", est.gpu_stages_ms);
}

/* PNG written on the card, with nvJPEG or without: the CPU path pays its PNG encoding (25 ns a
 * sample) and the card its filter and deflate (0.3 ns a byte); PNG it does not write, or JPEG,
 * adds neither. */
static void test_estimate_png_on_card(void)
{
    cost_setting on_card = { .in_format = IO_FMT_JPEG, .out_format = IO_FMT_PNG, .cpu_threads = 4, .gpu_jpeg = 1,
                             .png_gpu = 1 };
    cost_setting on_cores = { .in_format = IO_FMT_JPEG, .out_format = IO_FMT_PNG, .cpu_threads = 4, .gpu_jpeg = 1 };
    cost_setting jpeg_out = { .in_format = IO_FMT_JPEG, .out_format = IO_FMT_JPEG, .cpu_threads = 4, .gpu_jpeg = 1,
                              .png_gpu = 1 };
    cost_estimate card, cores, jpeg;
    estimate_one_step(&on_card, &card);
    estimate_one_step(&on_cores, &cores);
    estimate_one_step(&jpeg_out, &jpeg);
    CHECK(fabs(card.cpu_ms - cores.cpu_ms - 3000 * 25.0 / 1e6) < 1e-12, "CPU PNG encoding: %.17g ms more",
          card.cpu_ms - cores.cpu_ms);
    CHECK(fabs(card.gpu_codec_ms - 6000 * 0.3 / 1e6) < 1e-12 && cores.gpu_codec_ms == 0 && jpeg.gpu_codec_ms == 0,
          "card's PNG encoding: %.17g, %.17g, %.17g ms", card.gpu_codec_ms, cores.gpu_codec_ms, jpeg.gpu_codec_ms);
    CHECK(fabs(card.gpu_ms - cores.gpu_ms - card.gpu_codec_ms + 6000 / 7.0e6) < 1e-12,
          "the card's PNG encoding in gpu_ms: %.17g ms more", card.gpu_ms - cores.gpu_ms);
    cost_setting turbo_card = { .in_format = IO_FMT_JPEG, .out_format = IO_FMT_PNG, .cpu_threads = 4, .png_gpu = 1 };
    cost_setting turbo_cores = { .in_format = IO_FMT_JPEG, .out_format = IO_FMT_PNG, .cpu_threads = 4 };
    estimate_one_step(&turbo_card, &card);
    estimate_one_step(&turbo_cores, &cores);
    CHECK(fabs(card.cpu_ms - cores.cpu_ms - 3000 * 25.0 / 1e6) < 1e-12 &&
              fabs(card.gpu_codec_ms - 6000 * 0.3 / 1e6) < 1e-12 && cores.gpu_codec_ms == 0,
          "without nvJPEG, PNG on the card: CPU %.17g ms more, the card %.17g ms", card.cpu_ms - cores.cpu_ms,
          card.gpu_codec_ms);
}

/* A deflate TIFF with a share on the card: the CPU path pays that share of a core's deflate at
 * the level, the card that share of its own (tiff_gpu.h's rates); no share adds neither. */
static void test_estimate_tiff_on_card(void)
{
    cost_setting half = { .in_format = IO_FMT_TIFF, .out_format = IO_FMT_TIFF, .cpu_threads = 4,
                          .tiff_card_share = 0.5, .tiff_level = 6 };
    cost_setting none = { .in_format = IO_FMT_TIFF, .out_format = IO_FMT_TIFF, .cpu_threads = 4, .tiff_level = 6 };
    cost_estimate card, cores;
    estimate_one_step(&half, &card);
    estimate_one_step(&none, &cores);
    ip_shape out = { 100, 10, 3, IP_U16 };
    double core_ms = tiff_gpu_core_deflate_ms(&out, 6), card_ms = tiff_gpu_card_deflate_ms(&out);
    CHECK(core_ms > 0 && card_ms > 0 && core_ms > card_ms, "deflate of 6000 bytes: a core %.17g ms, the card %.17g",
          core_ms, card_ms);
    CHECK(fabs(card.cpu_ms - cores.cpu_ms - 0.5 * core_ms) < 1e-12, "CPU TIFF encoding: %.17g ms more",
          card.cpu_ms - cores.cpu_ms);
    CHECK(fabs(card.gpu_codec_ms - 0.5 * card_ms) < 1e-12 && cores.gpu_codec_ms == 0, "card's TIFF share: %.17g, %.17g",
          card.gpu_codec_ms, cores.gpu_codec_ms);
    CHECK(fabs(card.gpu_ms - cores.gpu_ms - card.gpu_codec_ms) < 1e-12, "the card's share in gpu_ms: %.17g ms more",
          card.gpu_ms - cores.gpu_ms);
}

int main(void)
{
    const char *build = getenv("IMGPIPE_BUILD_DIR"), *tp = getenv("IMGPIPE_TEST_PLUGINS");
    if (!build || !tp) tu_skip("IMGPIPE_BUILD_DIR or IMGPIPE_TEST_PLUGINS is not set (run through ctest)");
    char dirs[1300], err[512];
    snprintf(dirs, sizeof dirs, "%s/lib/imgpipe/plugins:%s/point:%s/oldsize", build, tp, tp);
    if (registry_load(&reg, dirs, NULL, NULL, err, sizeof err) != IP_OK) tu_skip(err);
    test_in_tree_costs();
    test_fake_stages();
    test_estimate_uses_hint();
    test_estimate_png_on_card();
    test_estimate_tiff_on_card();
    registry_free(&reg);
    return tu_finish();
}
