/* The folder's arrangement of GPU and CPU workers (batch/sched.c): the choice from measured rates,
 * given as tables worked out by hand, and the measuring itself on a clock the test moves: roles
 * while the GPU starts, the windows, which images count, a GPU that fails, folders too small to
 * measure, and the fixed arrangements. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "batch/folder_device.h"
#include "batch/sched.h"
#include "io/io.h"
#include "plan_testutil.h"
#include "png_testutil.h"
#include "run/run_output.h"
#include "testutil.h"

typedef struct {
    double mixed_gpu, mixed_cpu, gpu_only;
    int workers, cpu_workers;
    sched_arrangement want;
    double want_rate;
} choice_row;

static void test_choose(void)
{
    static const choice_row rows[] = {
        /* the CPU workers add throughput: 150 + 35 beats 160 by more than 3% */
        { 150, 35, 160, 16, 8, SCHED_MIXED, 185 },
        /* they slow the GPU down: 100 + 20 against 190 alone */
        { 100, 20, 190, 16, 8, SCHED_GPU_ONLY, 190 },
        /* a light pipeline: 60 from 8 CPU workers is about 120 from 16, beating 40 + 60 */
        { 40, 60, 70, 16, 8, SCHED_CPU_ONLY, 120 },
        /* 102 is within 3% of 100: the simpler arrangement stays */
        { 100, 2, 100, 16, 8, SCHED_GPU_ONLY, 100 },
        /* CPU alone extrapolated to 102 does not beat 101 by 3% */
        { 50, 51, 90, 16, 8, SCHED_MIXED, 101 },
        /* no CPU workers measured: CPU alone is not guessed */
        { 10, 0, 9, 4, 0, SCHED_MIXED, 10 },
        /* nothing finished: the GPU stays */
        { 0, 0, 0, 2, 1, SCHED_GPU_ONLY, 0 },
        /* one GPU worker of three: 2 CPU workers at 9 are 13.5 from three, less than 12 + 9 */
        { 12, 9, 15, 3, 2, SCHED_MIXED, 21 },
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        const choice_row *r = &rows[i];
        sched_rates rates = { r->mixed_gpu, r->mixed_cpu, r->gpu_only, r->workers, r->cpu_workers };
        double rate = -1;
        sched_arrangement got = sched_choose(&rates, &rate);
        CHECK(got == r->want, "row %zu: chose %d, want %d", i, (int)got, (int)r->want);
        CHECK(rate > r->want_rate - 1e-9 && rate < r->want_rate + 1e-9, "row %zu: rate %g, want %g", i, rate,
              r->want_rate);
    }
}

static int gpu_roles(const sched *s)
{
    int n = 0;
    for (int w = 0; w < s->o.workers; w++) n += sched_role_of(s, w) == SCHED_ROLE_GPU;
    return n;
}

/* n images finished in role, evenly between t0 and t1; returns how many calls said "settled". */
static int finish(sched *s, sched_role role, int n, double t0, double t1)
{
    int settled = 0;
    for (int i = 0; i < n; i++) {
        int ticket = sched_taken(s);
        settled += sched_finished(s, role, ticket, t0 + (t1 - t0) * (i + 1) / n);
    }
    return settled;
}

/* 4 workers, 2 on the GPU in the mixed arrangement; windows of 8 images. */
static void start_measuring(sched *s, int n_images)
{
    sched_options o = { 4, 2, 1, 1, n_images };
    sched_init(s, &o, 0.0);
}

static void test_measure_gpu_wins(void)
{
    sched s;
    start_measuring(&s, 100);
    CHECK(s.phase == SCHED_STARTING && gpu_roles(&s) == 0, "while the GPU starts every worker takes CPU images");
    int early = sched_taken(&s);
    sched_gpu_ready(&s, 1.0);
    CHECK(gpu_roles(&s) == 2 && sched_role_of(&s, 0) == SCHED_ROLE_GPU && sched_role_of(&s, 3) == SCHED_ROLE_CPU,
          "ready: workers 0 and 1 take the GPU (%d do)", gpu_roles(&s));
    /* an image taken before the GPU was ready counts towards nothing */
    for (int i = 0; i < 10; i++) sched_finished(&s, SCHED_ROLE_CPU, early, 1.1);
    CHECK(s.phase == SCHED_WARMING, "images of an earlier phase do not count (phase %d)", (int)s.phase);
    CHECK(finish(&s, SCHED_ROLE_GPU, 4, 1.0, 2.0) == 0 && s.phase == SCHED_WINDOW_MIXED, "warm-up of 4 images");
    /* the mixed window: 6 GPU and 2 CPU images in one second */
    CHECK(finish(&s, SCHED_ROLE_GPU, 6, 2.0, 2.75) == 0, "not settled inside a window");
    CHECK(finish(&s, SCHED_ROLE_CPU, 2, 2.75, 3.0) == 0 && s.phase == SCHED_WINDOW_GPU, "mixed window of 8");
    CHECK(gpu_roles(&s) == 4, "the second window puts every worker on the GPU (%d)", gpu_roles(&s));
    CHECK(s.rates.mixed_gpu == 6.0 && s.rates.mixed_cpu == 2.0, "mixed rates %g %g", s.rates.mixed_gpu,
          s.rates.mixed_cpu);
    /* each worker's first image in its new role passes untimed, however long it took */
    CHECK(finish(&s, SCHED_ROLE_GPU, 4, 3.0, 4.0) == 0 && s.phase == SCHED_WINDOW_GPU, "a round untimed");
    /* every worker on the GPU: 8 images in half a second, 16 images/s against 8 mixed, 4 CPU alone */
    CHECK(finish(&s, SCHED_ROLE_GPU, 8, 4.0, 4.5) == 1, "the window's last image settles it, once");
    CHECK(s.rates.gpu_only == 16.0, "gpu only %g", s.rates.gpu_only);
    CHECK(sched_current(&s) == SCHED_GPU_ONLY && gpu_roles(&s) == 4, "settled on gpu only");
    CHECK(finish(&s, SCHED_ROLE_GPU, 20, 4.5, 5.0) == 0 && gpu_roles(&s) == 4, "settled stays settled");
    char line[512];
    sched_describe(&s, line, sizeof line);
    CHECK(strstr(line, "gpu only, 4 workers: measured 8.0 images/s with 2 GPU and 2 CPU workers (6.0 GPU, 2.0 CPU), "
                       "16.0 with every worker on the GPU, about 4.0 on the CPU alone") == line, "line: %s", line);
}

static void test_measure_mixed_wins(void)
{
    sched s;
    start_measuring(&s, 100);
    sched_gpu_ready(&s, 0.5);
    finish(&s, SCHED_ROLE_CPU, 4, 0.5, 1.0);
    finish(&s, SCHED_ROLE_GPU, 5, 1.0, 1.5);
    finish(&s, SCHED_ROLE_CPU, 3, 1.5, 2.0);   /* 5 + 3 in one second */
    finish(&s, SCHED_ROLE_GPU, 4, 2.0, 2.4);
    CHECK(finish(&s, SCHED_ROLE_GPU, 8, 2.4, 4.0) == 1, "settled");   /* 5 images/s alone */
    CHECK(sched_current(&s) == SCHED_MIXED && gpu_roles(&s) == 2, "mixed kept (%d on the GPU)", gpu_roles(&s));
    char line[512];
    sched_describe(&s, line, sizeof line);
    CHECK(strstr(line, "gpu + 2 CPU workers (2 on the GPU): measured 8.0 images/s") == line, "line: %s", line);
}

static void test_measure_cpu_wins(void)
{
    sched s;
    start_measuring(&s, 100);
    sched_gpu_ready(&s, 0.0);
    finish(&s, SCHED_ROLE_GPU, 4, 0.0, 1.0);
    finish(&s, SCHED_ROLE_GPU, 2, 1.0, 1.5);
    finish(&s, SCHED_ROLE_CPU, 6, 1.5, 2.0);   /* 2 + 6: CPU alone about 12 */
    finish(&s, SCHED_ROLE_GPU, 4, 2.0, 2.1);
    CHECK(finish(&s, SCHED_ROLE_GPU, 8, 2.1, 3.1) == 1, "settled");   /* 8 alone */
    CHECK(sched_current(&s) == SCHED_CPU_ONLY && gpu_roles(&s) == 0, "cpu only (%d on the GPU)", gpu_roles(&s));
}

static void test_gpu_fails(void)
{
    sched s;
    start_measuring(&s, 100);
    CHECK(sched_gpu_failed(&s) == 1 && sched_gpu_failed(&s) == 0, "a failure changes the arrangement once");
    sched_gpu_ready(&s, 1.0);
    CHECK(sched_current(&s) == SCHED_CPU_ONLY && gpu_roles(&s) == 0, "a failed GPU takes nothing");
    /* failing mid-window too */
    start_measuring(&s, 100);
    sched_gpu_ready(&s, 0.0);
    finish(&s, SCHED_ROLE_GPU, 6, 0.0, 1.0);
    CHECK(sched_gpu_failed(&s) == 1 && gpu_roles(&s) == 0 && s.phase == SCHED_SETTLED, "mid-window failure");
    CHECK(finish(&s, SCHED_ROLE_GPU, 30, 1.0, 2.0) == 0 && gpu_roles(&s) == 0, "and nothing measured after it");
    char line[256];
    sched_describe(&s, line, sizeof line);
    CHECK(strcmp(line, "cpu only, 4 workers") == 0, "line: %s", line);
}

static void test_fixed_and_small(void)
{
    sched s;
    /* too few images to measure (2 x (4 + 8) + 8 = 32 needed): mixed once the GPU is ready */
    start_measuring(&s, 31);
    CHECK(s.phase == SCHED_STARTING && gpu_roles(&s) == 0, "small folder still starts on the CPU");
    sched_gpu_ready(&s, 0.1);
    CHECK(s.phase == SCHED_SETTLED && sched_current(&s) == SCHED_MIXED && gpu_roles(&s) == 2, "small: mixed");
    CHECK(finish(&s, SCHED_ROLE_GPU, 31, 0.1, 1.0) == 0, "nothing to settle");
    start_measuring(&s, 32);
    sched_gpu_ready(&s, 0.1);
    CHECK(s.phase == SCHED_WARMING, "32 images are enough to measure");
    /* --device gpu: every worker on the GPU at once, even when CPU images are allowed */
    sched_options gpu = { 3, 3, 1, 1, 1000 };
    sched_init(&s, &gpu, 0.0);
    CHECK(s.phase == SCHED_SETTLED && gpu_roles(&s) == 3 && sched_current(&s) == SCHED_GPU_ONLY, "gpu only");
    /* --device cpu */
    sched_options cpu = { 3, 0, 1, 1, 1000 };
    sched_init(&s, &cpu, 0.0);
    CHECK(gpu_roles(&s) == 0 && sched_current(&s) == SCHED_CPU_ONLY, "cpu only");
    /* gpu+cpu asked without measuring: mixed at once when the GPU need not be waited for */
    sched_options mixed = { 5, 2, 0, 0, 1000 };
    sched_init(&s, &mixed, 0.0);
    CHECK(s.phase == SCHED_SETTLED && gpu_roles(&s) == 2, "gpu+cpu");
    /* more GPU workers asked than there are workers; none at all */
    sched_options over = { 2, 9, 1, 1, 1000 }, none = { 0, 0, 0, 0, 0 };
    sched_init(&s, &over, 0.0);
    CHECK(gpu_roles(&s) == 2 && sched_current(&s) == SCHED_GPU_ONLY, "clamped to the workers");
    sched_init(&s, &none, 0.0);
    CHECK(s.o.workers == 1 && gpu_roles(&s) == 0, "at least one worker");
}

/* auto's first step: the estimate rules the GPU out only when hopeless or too short to measure. */
static void test_ruled_out(void)
{
    static const struct { double cpu_s, gpu_s; int out; } rows[] = {
        { 2.7, 3.1, 0 },     /* denoise, 100 photographs: close, so measured */
        { 2.0, 4.1, 1 },     /* past twice the CPU's time */
        { 2.0, 4.0, 0 },     /* exactly twice: measured */
        { 0.9, 1.0, 1 },     /* under a second of stages: over before the GPU is measured */
        { 0.5, 0.2, 0 },     /* the GPU estimated faster: never ruled out */
        { 30.0, 1.0, 0 },
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        folder_estimate est = { 100, rows[i].cpu_s, rows[i].gpu_s, 0 };
        CHECK(folder_gpu_ruled_out(&est) == rows[i].out, "row %zu: cpu %g s, gpu %g s", i, rows[i].cpu_s,
              rows[i].gpu_s);
    }
}

static int near(double a, double b) { return a > b - 1e-6 && a < b + 1e-6; }

/* The folder estimate's arithmetic, against the hand-worked model, and its choice against what
 * bench/jpeg-folder.sh measured on the H200 (16 cores, 12-MP JPEGs through denoise to JPEG): with
 * nvJPEG the CPU path won at 200 files (2.0 s against 3.4 s), the GPU path at 800 (4.6-5.0 s
 * against 8.0 s). */
static void test_estimate_images(void)
{
    ip_shape photo = { 4000, 3000, 3, IP_U8 };
    /* decoding 96 ms and encoding 24 ms on one core (cost.c), the stages 3 ms */
    cost_estimate one = { .cpu_ms = 123.0, .gpu_stages_ms = 0.5 };
    folder_estimate est;
    folder_estimate_images(&one, &photo, 200, 16, IO_FMT_JPEG, 1, &est);
    CHECK(est.n_images == 200 && near(est.cpu_s, 1.5375) && near(est.gpu_s, 3.05 + 200 * 2.16e-3),
          "nvJPEG, 200 files: cpu %g s, gpu %g s", est.cpu_s, est.gpu_s);
    CHECK(est.cpu_s < est.gpu_s, "nvJPEG, 200 files: the CPU path is faster");
    folder_estimate_images(&one, &photo, 800, 16, IO_FMT_JPEG, 1, &est);
    CHECK(near(est.cpu_s, 6.15) && near(est.gpu_s, 3.05 + 800 * 2.16e-3), "nvJPEG, 800 files: cpu %g s, gpu %g s",
          est.cpu_s, est.gpu_s);
    CHECK(est.gpu_s < est.cpu_s, "nvJPEG, 800 files: the GPU path is faster");
    /* PNG written on the card: its filter and deflate (3.6 ms a 12-MP gray image) follow the
     * engine's decoding; the cores pay their PNG encoding (300 ms an image) */
    cost_estimate png = { .cpu_ms = 123.0 + 300.0, .gpu_stages_ms = 0.5, .gpu_codec_ms = 3.6 };
    folder_estimate_images(&png, &photo, 200, 16, IO_FMT_PNG, 1, &est);
    CHECK(near(est.cpu_s, 5.2875) && near(est.gpu_s, 3.05 + 200 * (2.16e-3 + 3.6e-3)),
          "nvJPEG, PNG on the card, 200 files: cpu %g s, gpu %g s", est.cpu_s, est.gpu_s);
    CHECK(est.gpu_s < est.cpu_s, "nvJPEG, PNG on the card, 200 files: the GPU path is faster");
    /* without nvJPEG, PNG written on the card: the cores would pay its encoding (300 ms an image),
     * the GPU path its start-up and staging; measured on the H200 (2026-11-29), 200 files: 4.9 s
     * on the CPU path against 1.9-2.2 s on the GPU's, where auto had chosen the CPU */
    cost_estimate png_cores = { .cpu_ms = 3.0 + 300.0, .gpu_stages_ms = 0.5, .gpu_codec_ms = 3.6 };
    folder_estimate_images(&png_cores, &photo, 200, 16, IO_FMT_PNG, 0, &est);
    CHECK(near(est.cpu_s, 3.7875) && near(est.gpu_s, 0.45 + 200 * 50.0 / 16 / 1e3),
          "PNG on the card, libjpeg-turbo decoding, 200 files: cpu %g s, gpu %g s", est.cpu_s, est.gpu_s);
    CHECK(!folder_gpu_ruled_out(&est), "PNG on the card, 200 files: the GPU ruled out");
    /* without nvJPEG: start-up, then each worker's staging per image, or the card's stages */
    cost_estimate light = { .cpu_ms = 10.0, .gpu_stages_ms = 0.5 };
    folder_estimate_images(&light, &photo, 100, 16, IO_FMT_PNG, 0, &est);
    CHECK(near(est.cpu_s, 0.0625) && near(est.gpu_s, 0.45 + 100 * 50.0 / 16 / 1e3), "PNG out: cpu %g s, gpu %g s",
          est.cpu_s, est.gpu_s);
    cost_estimate heavy_card = { .cpu_ms = 10.0, .gpu_stages_ms = 40.0 };
    folder_estimate_images(&heavy_card, &photo, 100, 16, IO_FMT_JPEG, 0, &est);
    CHECK(near(est.cpu_s, 0.0625) && near(est.gpu_s, 4.0), "the card's stages bind: cpu %g s, gpu %g s", est.cpu_s,
          est.gpu_s);
}

/* The card's codecs count in auto's estimate (folder_estimate_run) only where GPU workers would
 * use them, by the run's own rule: copied transfers, codecs not forced onto the cores (zerocopy
 * encodes on the cores). */
static void test_card_codecs(void)
{
    static const struct { exec_transfer transfer; run_codecs codecs; int card; } rows[] = {
        { EXEC_COPY, RUN_CODECS_AUTO, 1 },     { EXEC_COPY, RUN_CODECS_GPU, 1 },
        { EXEC_COPY, RUN_CODECS_CPU, 0 },      { EXEC_ZEROCOPY, RUN_CODECS_AUTO, 0 },
        { EXEC_ZEROCOPY, RUN_CODECS_GPU, 0 },  { EXEC_ZEROCOPY, RUN_CODECS_CPU, 0 },
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        CHECK(run_card_codecs_allowed(rows[i].codecs, rows[i].transfer) == rows[i].card, "row %zu: transfer %d, codecs %d", i, (int)rows[i].transfer,
              (int)rows[i].codecs);
    }
}

/* folder_estimate_run on a folder of one PNG to PNG level 3: the card encodes it with copied
 * transfers, not with zerocopy ones or --codecs cpu. Skipped without the plugins (outside ctest). */
static void test_estimate_run_card(void)
{
    const char *build = getenv("IMGPIPE_BUILD_DIR");
    char dirs[1200], in_dir[600], path[700], out_dir[600], err[512];
    registry reg;
    if (!build) return;
    snprintf(dirs, sizeof dirs, "%s/lib/imgpipe/plugins", build);
    if (registry_load(&reg, dirs, NULL, NULL, err, sizeof err) != IP_OK) return;
    snprintf(in_dir, sizeof in_dir, "%s/estimate_in", tu_tmpdir());
    snprintf(out_dir, sizeof out_dir, "%s/estimate_out", tu_tmpdir());
    snprintf(path, sizeof path, "%s/a.png", in_dir);
    ip_image img = ptu_photo(67, 41, 3, IP_U8, 0, 5);
    plan p;
    io_options io;
    io_default_options(&io);
    io.png_level = 3;
    CHECK(mkdir(in_dir, 0700) == 0 && io_write(path, &img, &io, err, sizeof err) == IP_OK, "input: %s", err);
    if (tu_build_plan(&reg, "grayscale", &img.shape, &p)) {
        static const struct { exec_transfer transfer; run_codecs codecs; int card; } rows[] = {
            { EXEC_COPY, RUN_CODECS_AUTO, 1 }, { EXEC_ZEROCOPY, RUN_CODECS_AUTO, 0 }, { EXEC_COPY, RUN_CODECS_CPU, 0 },
        };
        for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
            batch_options o = { .input = in_dir, .output_dir = out_dir, .format = IO_FMT_PNG, .jobs = 2,
                                .device = EXEC_GPU, .transfer = rows[i].transfer, .codecs = rows[i].codecs, .io = io };
            folder_estimate est;
            int rc = folder_estimate_run(&o, &p, 2, &est, err, sizeof err);
            CHECK(rc == IP_OK && est.card_encodes == rows[i].card, "row %zu: rc %d (%s), card encodes %d", i, rc,
                  err, est.card_encodes);
        }
        plan_free(&p);
    }
    img_free(&img);
    registry_free(&reg);
}

int main(void)
{
    test_card_codecs();
    test_estimate_run_card();
    test_choose();
    test_ruled_out();
    test_estimate_images();
    test_measure_gpu_wins();
    test_measure_mixed_wins();
    test_measure_cpu_wins();
    test_gpu_fails();
    test_fixed_and_small();
    return tu_finish();
}
