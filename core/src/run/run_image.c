/* One image's run: the input probed once, then the streamed path where it takes the image, else
 * the whole-image path. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "gpu/gpu.h"
#include "run/cost.h"
#include "run/run_internal.h"

void run_default_options(run_options *o)
{
    memset(o, 0, sizeof *o);
    io_default_options(&o->io);
    o->io.autorotate = 1;
}

/* Half the machine's memory: a run that keeps to it leaves the rest to everything else. */
uint64_t run_default_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page / 2 : (uint64_t)4 << 30;
}

int run_cpu_threads(const run_options *o)
{
    int threads = o->threads;
#ifdef _OPENMP
    if (!threads) threads = omp_get_max_threads();
#endif
    return threads > 0 ? threads : 1;
}

void run_note(run_result *res, const char *fmt, ...)
{
    size_t used = strlen(res->notes);
    if (used + 2 >= sizeof res->notes) return;
    if (used) res->notes[used++] = '\n';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->notes + used, sizeof res->notes - used, fmt, ap);
    va_end(ap);
}

int run_auto_prefers_gpu(const plan *p, const ip_shape *shape, io_format in_format, const char *out_path,
                         const run_options *o, int gpu_jpeg, run_result *res)
{
    if (!gpu_built()) {
        snprintf(res->why, sizeof res->why, "imgpipe was built without CUDA");
        return 0;
    }
    if (!gpu_driver_present(res->why, sizeof res->why)) return 0;
    cost_estimate est;
    /* PNG's and TIFF's encoding on the card are counted for folders only, where they were measured
     * (a core a worker) */
    cost_setting set = { .in_format = in_format,
                         .out_format = out_path ? io_format_from_ext(out_path) : IO_FMT_UNKNOWN,
                         .cpu_threads = run_cpu_threads(o),
                         .gpu_jpeg = gpu_jpeg };
    cost_estimate_plan(p, shape, &set, &est);
    if (est.cpu_ms <= est.gpu_ms) {
        snprintf(res->why, sizeof res->why, "auto: the CPU is estimated faster for this image, %.0f ms against %.0f ms "
                 "on the GPU with %.0f ms of its start-up", est.cpu_ms, est.gpu_ms, est.startup_ms);
        return 0;
    }
    snprintf(res->why, sizeof res->why, "auto: estimated %.0f ms against %.0f ms on the CPU", est.gpu_ms, est.cpu_ms);
    return 1;
}

run_device run_choose_device(const plan *p, const ip_shape *shape, const run_options *o, char *why, size_t whylen)
{
    run_result r;   /* the estimate says why in it */
    r.why[0] = '\0';
    run_device dev = run_auto_prefers_gpu(p, shape, IO_FMT_UNKNOWN, NULL, o, 0, &r) ? RUN_DEVICE_GPU : RUN_DEVICE_CPU;
    snprintf(why, whylen, "%s", r.why);
    return dev;
}

int run_image(run_worker *w, plan *p, const run_source *in, const run_sink *out, const run_options *o,
              run_result *res, char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    res->device = EXEC_CPU;
    if ((!in->path) == (!in->image) || (!out->path) == (!out->image)) {
        snprintf(err, errlen, "a run needs one input and one output, each a file or an image in memory");
        res->usage_error = 1;
        return IP_EINVAL;
    }
    run_probe pr;
    int rc = run_probe_input(in, o, &pr, err, errlen);
    if (rc != IP_OK) res->failed_path = in->path;
    if (rc == IP_OK) {
        rc = run_streamed(w, p, in, out, o, &pr, res, err, errlen);
        if (rc == RUN_DECLINED) rc = run_whole(w, p, in, out, o, &pr, res, err, errlen);
    }
    run_probe_clear(&pr);
    return rc;
}
