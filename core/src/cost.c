#include "cost.h"
#include <string.h>

/* Costs per input sample (pixel x channel) at one radius. CPU: core-nanoseconds, from
 * bench/run-cpu on the 2-core machine (4096^2 u8, 2 threads; bench/RESULTS.md, commit 12ff3eb),
 * scaled by the cores. GPU: nanoseconds of the whole card, from bench_gpu on the H100 (8192^2 u8,
 * commit 23ce0be). Only their order of magnitude matters: the choice turns on start-up and
 * transfers, which dwarf the GPU's stages. */
typedef struct {
    double cpu_core_ns, gpu_ns;
} stage_cost;

/* The driver and context (100-200 and 115-135 ms on the H100 machine, shared/GPU.md) plus
 * loading every plugin's kernels eagerly. */
#define GPU_STARTUP_MS 330.0
/* Pageable copies (not pinned: pinning a whole image costs more than it saves), measured by
 * bench/transfer.sh on the H100: 192 MiB up in 40 ms, 64 MiB down in 9 ms. */
#define UPLOAD_BYTES_PER_MS 4.8e6
#define DOWNLOAD_BYTES_PER_MS 7.0e6
/* Decoding time that hides start-up, per pixel on one core (H100 machine, whole-image runs). */
#define DECODE_NS_PNG 5.0
#define DECODE_NS_JPEG 8.0
#define DECODE_NS_TIFF 12.0

static double cube(double x) { return x * x * x; }

static stage_cost median_cost(int r)
{
    /* 8-bit: sorting networks up to 5x5, a sliding histogram (constant in r) beyond. */
    if (r <= 1) return (stage_cost){ 0.31, 0.0023 };
    if (r == 2) return (stage_cost){ 1.03, 0.0116 };
    return (stage_cost){ 11.0, 0.040 * cube((2.0 * r + 1) / 7.0) };
}

static stage_cost cost_of(const char *name, int r)
{
    double w = 2.0 * r + 1;
    if (!strcmp(name, "grayscale")) return (stage_cost){ 0.16, 0.0005 };
    if (!strcmp(name, "median")) return median_cost(r);
    if (!strcmp(name, "mean")) return (stage_cost){ 0.35 + 0.05 * r, 0.0016 + 0.0001 * r };
    if (!strcmp(name, "convolve")) return (stage_cost){ 0.07 * w * w, 0.0022 * w * w / 9.0 };
    if (!strcmp(name, "entropy")) return (stage_cost){ 5.3 * (r + 1) / 3.0, 0.0055 * w * w / 25.0 };
    if (!strcmp(name, "histogram")) return (stage_cost){ 0.39, 0.0005 };
    if (!strcmp(name, "transpose")) return (stage_cost){ 3.2, 0.0008 };
    return (stage_cost){ 1.0, 0.01 };   /* a stage of someone else's: a light window stage */
}

static double samples(const ip_shape *s)
{
    return (double)s->width * (double)s->height * (double)s->channels;
}

static double bytes_of(const ip_shape *s)
{
    return samples(s) * (double)ip_dtype_size(s->dtype);
}

static double decode_ms(const ip_shape *in, io_format fmt, int threads)
{
    double px = (double)in->width * (double)in->height;
    switch (fmt) {
    case IO_FMT_PNG: return px * DECODE_NS_PNG / 1e6;
    case IO_FMT_JPEG: return px * DECODE_NS_JPEG / 1e6;
    case IO_FMT_TIFF: return px * DECODE_NS_TIFF / 1e6 / (threads > 0 ? threads : 1);
    case IO_FMT_UNKNOWN: break;
    }
    return 0;
}

void cost_estimate_plan(const plan *p, const ip_shape *in, io_format in_format, int cpu_threads,
                        cost_estimate *out)
{
    int threads = cpu_threads > 0 ? cpu_threads : 1;
    double cpu = 0, gpu = 0;
    for (int i = 0; i < p->n; i++) {
        const plan_step *st = &p->steps[i];
        stage_cost c = cost_of(st->plugin->stage->name, st->needs.halo);
        double n = samples(&st->in) * (double)ip_dtype_size(st->in.dtype);
        double cpu_ms = c.cpu_core_ns * n / threads / 1e6;
        cpu += cpu_ms;
        if (st->plugin->stage->run_gpu) gpu += c.gpu_ns * n / 1e6;
        else gpu += cpu_ms + bytes_of(&st->in) / DOWNLOAD_BYTES_PER_MS + bytes_of(&st->out) / UPLOAD_BYTES_PER_MS;
    }
    double hidden = decode_ms(in, in_format, threads);
    out->startup_ms = GPU_STARTUP_MS > hidden ? GPU_STARTUP_MS - hidden : 0;
    gpu += out->startup_ms + bytes_of(in) / UPLOAD_BYTES_PER_MS;
    if (p->n > 0) gpu += bytes_of(&p->steps[p->n - 1].out) / DOWNLOAD_BYTES_PER_MS;
    out->cpu_ms = cpu;
    out->gpu_ms = gpu;
}
