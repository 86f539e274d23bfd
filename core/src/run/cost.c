#include "run/cost.h"
#include <math.h>
#include "io/tiff_gpu.h"
#include "plan/stage_class.h"

/* Driver, context and every plugin's kernels loaded eagerly: 212-244 ms in a fresh process there
 * (192-194 ms lazily, but then each stage's first launch costs 1-8 ms more). */
#define GPU_STARTUP_MS 240.0
/* Pageable copies (not pinned: pinning a whole image costs more than it saves), measured by
 * bench/transfer.sh on the H100: 192 MiB up in 40 ms, 64 MiB down in 9 ms. */
#define UPLOAD_BYTES_PER_MS 4.8e6
#define DOWNLOAD_BYTES_PER_MS 7.0e6
/* Decoding time that hides start-up, per pixel on one core (H100 machine, whole-image runs). */
#define DECODE_NS_PNG 5.0
#define DECODE_NS_JPEG 8.0
#define DECODE_NS_TIFF 12.0
/* nvJPEG (shared/GPU.md, H100): making the hardware backend 180 ms (our test's open took up to
 * 635 ms with its fallbacks: the estimate takes the middle), decoding 44 ms for 8192x8192 RGB,
 * encoding 5.7 ms warm and 46 ms the first time; libjpeg-turbo encodes about 2 ns a sample. */
#define NVJPEG_OPEN_MS 400.0
#define NVJPEG_DECODE_NS 0.65
#define NVJPEG_ENCODE_FIRST_MS 46.0
#define JPEG_ENCODE_NS_CPU 2.0
/* PNG at the levels the card writes (0-4), in a 16-worker folder of 12-MP photographs (H200,
 * level 3): the CPU's filter, deflate and write 24-26 ns a sample on a worker's core (23.5-24.3 on
 * 2026-11-29, libjpeg-turbo decoding); the card's filter, deflate and walk about 0.3 ns a byte of
 * the whole card's time (with nvJPEG, the engine's decoding slowed beside it), fitted to 200 and
 * 800 files, gray and RGB, on 2026-11-28. */
#define PNG_ENCODE_NS_CPU 25.0
#define PNG_GPU_NS_PER_BYTE 0.3

/* A stage without a cost hint (too old to have one, or giving none that is a number of nanoseconds):
 * as a light window stage. */
#define DEFAULT_CPU_NS 2.0
#define DEFAULT_GPU_NS 0.01

ip_cost cost_of_step(const plan_step *st)
{
    int (*hint)(const void *, const ip_shape *, ip_cost *) = stage_cost_hook(st->plugin->stage);
    ip_cost c = { DEFAULT_CPU_NS, DEFAULT_GPU_NS };
    if (hint && hint(st->state, &st->in, &c) == IP_OK && isfinite(c.cpu_ns) && isfinite(c.gpu_ns) && c.cpu_ns >= 0 &&
        c.gpu_ns >= 0)
        return c;
    return (ip_cost){ DEFAULT_CPU_NS, DEFAULT_GPU_NS };
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

/* With nvJPEG the GPU decodes (and encodes) what the CPU would: the decoding no longer hides
 * start-up, and the pixels do not cross PCIe. */
static void add_gpu_jpeg(const ip_shape *in, const ip_shape *final, const cost_setting *set, double *cpu, double *gpu,
                         double *startup)
{
    double px = (double)in->width * (double)in->height;
    if (set->in_format == IO_FMT_JPEG) {
        *cpu += px * DECODE_NS_JPEG / 1e6;
        *gpu += px * NVJPEG_DECODE_NS / 1e6 - bytes_of(in) / UPLOAD_BYTES_PER_MS;
        *startup = GPU_STARTUP_MS + NVJPEG_OPEN_MS;
    }
    if (set->out_format == IO_FMT_JPEG) {
        *cpu += samples(final) * JPEG_ENCODE_NS_CPU / 1e6;
        *gpu += NVJPEG_ENCODE_FIRST_MS - bytes_of(final) / DOWNLOAD_BYTES_PER_MS;
    }
}

/* PNG the card writes: the CPU path pays its encoding, the card its filter and deflate (*codec),
 * and the result is not downloaded whole. */
static void add_png_gpu(const ip_shape *final, double *cpu, double *gpu, double *codec)
{
    *cpu += samples(final) * PNG_ENCODE_NS_CPU / 1e6;
    *codec = bytes_of(final) * PNG_GPU_NS_PER_BYTE / 1e6;
    *gpu += *codec - bytes_of(final) / DOWNLOAD_BYTES_PER_MS;
}

/* The card's share of a deflate TIFF output: the CPU path's cores pay it, the card deflates it. */
static void add_tiff_gpu(const ip_shape *final, const cost_setting *set, double *cpu, double *gpu, double *codec)
{
    *cpu += set->tiff_card_share * tiff_gpu_core_deflate_ms(final, set->tiff_level);
    *codec += set->tiff_card_share * tiff_gpu_card_deflate_ms(final);
    *gpu += *codec;
}

void cost_estimate_plan(const plan *p, const ip_shape *in, const cost_setting *set, cost_estimate *out)
{
    int threads = set->cpu_threads > 0 ? set->cpu_threads : 1;
    io_format in_format = set->in_format;
    double cpu = 0, gpu = 0, stages = 0;
    for (int i = 0; i < p->n; i++) {
        const plan_step *st = &p->steps[i];
        ip_cost c = cost_of_step(st);
        double work = bytes_of(&st->in);
        double cpu_ms = c.cpu_ns * work / threads / 1e6;
        cpu += cpu_ms;
        if (st->plugin->stage->run_gpu) stages += c.gpu_ns * work / 1e6;
        else gpu += cpu_ms + bytes_of(&st->in) / DOWNLOAD_BYTES_PER_MS + bytes_of(&st->out) / UPLOAD_BYTES_PER_MS;
    }
    gpu += stages;
    out->gpu_stages_ms = stages;
    double hidden = decode_ms(in, in_format, threads);
    out->startup_ms = GPU_STARTUP_MS > hidden ? GPU_STARTUP_MS - hidden : 0;
    gpu += bytes_of(in) / UPLOAD_BYTES_PER_MS;
    if (p->n > 0) gpu += bytes_of(&p->steps[p->n - 1].out) / DOWNLOAD_BYTES_PER_MS;
    out->gpu_codec_ms = 0;
    if (set->gpu_jpeg && p->n > 0)
        add_gpu_jpeg(in, &p->steps[p->n - 1].out, set, &cpu, &gpu, &out->startup_ms);
    if (set->out_format == IO_FMT_PNG && set->png_gpu && p->n > 0)
        add_png_gpu(&p->steps[p->n - 1].out, &cpu, &gpu, &out->gpu_codec_ms);
    if (set->out_format == IO_FMT_TIFF && set->tiff_card_share > 0 && p->n > 0)
        add_tiff_gpu(&p->steps[p->n - 1].out, set, &cpu, &gpu, &out->gpu_codec_ms);
    gpu += out->startup_ms;
    out->cpu_ms = cpu;
    out->gpu_ms = gpu;
}
