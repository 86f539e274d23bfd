#include "batch/sched.h"
#include <stdio.h>
#include <string.h>

/* A window counts twice the workers' images (at least 8), so each worker finishes a couple in it
 * and one slow image does not decide; the warm-up after start-up lets every worker make its
 * buffers (and wait for nvJPEG's handle) before anything is timed, and the second window lets
 * each worker's first image of its new role pass untimed (workers come to it from an image of
 * their old role). Measuring needs a folder with at least a window's images left after it. */
#define SCHED_MIN_WINDOW 8

/* Every worker on the CPU, extrapolated from the CPU workers' share of the mixed run. */
static double cpu_only_rate(const sched_rates *r)
{
    return r->mixed_cpu_workers > 0 ? r->mixed_cpu * r->workers / r->mixed_cpu_workers : 0.0;
}

sched_arrangement sched_choose(const sched_rates *r, double *expected)
{
    double mixed = r->mixed_gpu + r->mixed_cpu;
    double cpu_only = cpu_only_rate(r);
    sched_arrangement best = SCHED_GPU_ONLY;
    double rate = r->gpu_only;
    if (mixed > rate * (1.0 + SCHED_MARGIN)) {
        best = SCHED_MIXED;
        rate = mixed;
    }
    /* CPU only's rate is extrapolated from fewer workers: it must win clearly. */
    if (cpu_only > rate * (1.0 + SCHED_MARGIN)) {
        best = SCHED_CPU_ONLY;
        rate = cpu_only;
    }
    if (expected) *expected = rate;
    return best;
}

static int window_of(const sched_options *o)
{
    return 2 * o->workers > SCHED_MIN_WINDOW ? 2 * o->workers : SCHED_MIN_WINDOW;
}

static void enter(sched *s, sched_phase phase, int gpu_role_workers, double now)
{
    s->phase = phase;
    s->gpu_role_workers = gpu_role_workers;
    s->epoch++;
    s->counted = s->counted_gpu = s->counted_cpu = 0;
    s->untimed = phase == SCHED_WINDOW_GPU ? s->o.workers : 0;
    s->t_phase = now;
}

static int workers_for(const sched *s, sched_arrangement a)
{
    return a == SCHED_CPU_ONLY ? 0 : a == SCHED_GPU_ONLY ? s->o.workers : s->o.gpu_workers;
}

int sched_measurable(int workers, int n_images)
{
    sched_options o = { .workers = workers > 0 ? workers : 1 };
    int window = window_of(&o);
    return n_images >= 2 * (o.workers + window) + window;
}

void sched_init(sched *s, const sched_options *o, double now)
{
    memset(s, 0, sizeof *s);
    s->o = *o;
    if (s->o.workers < 1) s->o.workers = 1;
    if (s->o.gpu_workers < 0) s->o.gpu_workers = 0;
    if (s->o.gpu_workers > s->o.workers) s->o.gpu_workers = s->o.workers;
    s->window = window_of(&s->o);
    int mixed = s->o.gpu_workers > 0 && s->o.gpu_workers < s->o.workers;
    /* warm-up, two windows (the second after a round untimed), and a window more */
    s->o.measure = mixed && s->o.measure && sched_measurable(s->o.workers, s->o.n_images);
    s->chosen = s->o.gpu_workers == 0 ? SCHED_CPU_ONLY : mixed ? SCHED_MIXED : SCHED_GPU_ONLY;
    if (mixed && s->o.cpu_while_starting) enter(s, SCHED_STARTING, 0, now);
    else if (s->o.measure) enter(s, SCHED_WARMING, s->o.gpu_workers, now);
    else enter(s, SCHED_SETTLED, s->o.gpu_workers, now);
}

sched_role sched_role_of(const sched *s, int worker)
{
    return worker < s->gpu_role_workers ? SCHED_ROLE_GPU : SCHED_ROLE_CPU;
}

int sched_taken(const sched *s)
{
    return s->epoch;
}

void sched_gpu_ready(sched *s, double now)
{
    if (s->phase != SCHED_STARTING) return;
    enter(s, s->o.measure ? SCHED_WARMING : SCHED_SETTLED, s->o.gpu_workers, now);
}

int sched_gpu_failed(sched *s)
{
    if (s->gpu_failed) return 0;
    s->gpu_failed = 1;
    s->chosen = SCHED_CPU_ONLY;
    s->measured = 0;
    enter(s, SCHED_SETTLED, 0, s->t_phase);
    return 1;
}

static double per_s(int n, double seconds)
{
    return seconds > 0 ? n / seconds : 0.0;
}

int sched_finished(sched *s, sched_role role, int ticket, double now)
{
    if (ticket != s->epoch || s->phase == SCHED_STARTING || s->phase == SCHED_SETTLED) return 0;
    if (s->untimed > 0) {
        if (--s->untimed == 0) s->t_phase = now;
        return 0;
    }
    s->counted++;
    if (role == SCHED_ROLE_GPU) s->counted_gpu++;
    else s->counted_cpu++;
    double took = now - s->t_phase;
    if (s->phase == SCHED_WARMING && s->counted >= s->o.workers) {
        enter(s, SCHED_WINDOW_MIXED, s->o.gpu_workers, now);
    } else if (s->phase == SCHED_WINDOW_MIXED && s->counted >= s->window) {
        s->rates.mixed_gpu = per_s(s->counted_gpu, took);
        s->rates.mixed_cpu = per_s(s->counted_cpu, took);
        s->rates.workers = s->o.workers;
        s->rates.mixed_cpu_workers = s->o.workers - s->o.gpu_workers;
        enter(s, SCHED_WINDOW_GPU, s->o.workers, now);
    } else if (s->phase == SCHED_WINDOW_GPU && s->counted >= s->window) {
        s->rates.gpu_only = per_s(s->counted, took);
        s->chosen = sched_choose(&s->rates, NULL);
        s->measured = 1;
        enter(s, SCHED_SETTLED, workers_for(s, s->chosen), now);
        return 1;
    }
    return 0;
}

sched_arrangement sched_current(const sched *s)
{
    if (s->phase == SCHED_SETTLED) return s->chosen;
    return s->gpu_role_workers == 0 ? SCHED_CPU_ONLY : s->gpu_role_workers == s->o.workers ? SCHED_GPU_ONLY
                                                                                             : SCHED_MIXED;
}

static int name_of(const sched *s, sched_arrangement a, char *buf, unsigned len)
{
    int gpu = workers_for(s, a), cpu = s->o.workers - gpu;
    if (a == SCHED_CPU_ONLY) return snprintf(buf, len, "cpu only, %d worker%s", cpu, cpu == 1 ? "" : "s");
    if (a == SCHED_GPU_ONLY) return snprintf(buf, len, "gpu only, %d worker%s", gpu, gpu == 1 ? "" : "s");
    return snprintf(buf, len, "gpu + %d CPU worker%s (%d on the GPU)", cpu, cpu == 1 ? "" : "s", gpu);
}

void sched_describe(const sched *s, char *buf, unsigned len)
{
    if (!len) return;
    int n = name_of(s, sched_current(s), buf, len);
    if (n < 0 || (unsigned)n >= len || !s->measured) return;
    const sched_rates *r = &s->rates;
    double cpu_only = cpu_only_rate(r);
    snprintf(buf + n, len - (unsigned)n, ": measured %.1f images/s with %d GPU and %d CPU workers (%.1f GPU, %.1f "
             "CPU), %.1f with every worker on the GPU, about %.1f on the CPU alone",
             r->mixed_gpu + r->mixed_cpu, s->o.gpu_workers, r->mixed_cpu_workers, r->mixed_gpu, r->mixed_cpu,
             r->gpu_only, cpu_only);
}
