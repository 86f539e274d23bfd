/* Folders on the command line: the device for the folder, the progress line, failures as they
 * come, the summary, and the ranks' lines under mpirun. */
#define _POSIX_C_SOURCE 200809L
#include "cli/cli_folder.h"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "batch/batch.h"
#include "batch/batch_mpi.h"
#include "cli/cli_print.h"
#include "batch/folder_device.h"
#include "batch/sched.h"
#include "gpu/gpu.h"
#include "batch/mpi_lib.h"

/* Where a folder runs: a device for every worker, or GPU and CPU workers side by side (mixed),
 * in an arrangement measured on the first images (by_rates). */
typedef struct {
    exec_device dev;
    int mixed, by_rates;
    char why[256];               /* by_rates: the estimate, said with the measured choice */
} folder_plan;

static int choose_device(const cli_options *o, exec_device *dev)
{
    char why[256] = "", name[256] = "GPU";
    int n = o->run.device == RUN_DEVICE_CPU ? 0 : gpu_device_count(why, sizeof why);
    if (o->run.device == RUN_DEVICE_GPU && n == 0) {
        cli_fail("--device gpu: %s", why);
        return CLI_USAGE;
    }
    if (n > 0) {
        gpu_device_name(0, name, sizeof name);
        cli_say(o, "device: GPU 0 (%s)%s", name, o->run.transfer == EXEC_ZEROCOPY ? ", zero-copy transfers" : "");
        *dev = EXEC_GPU;
    } else {
        if (o->run.device == RUN_DEVICE_CPU) cli_say(o, "device: CPU, %d threads", run_cpu_threads(&o->run));
        else cli_say(o, "device: CPU, %d threads (%s)", run_cpu_threads(&o->run), why);
        *dev = EXEC_CPU;
    }
    return CLI_OK;
}

/* Ctrl-C asks the batch to stop taking images; a signal handler can only reach a global. */
static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
    (void)sig;
    interrupted = 1;
}

typedef struct {
    const cli_options *o;
    int tty;
    double last_print;
    char **failures;
    int n_failures;
    char shard[48];   /* "shard I/N: " or "" */
} batch_view;

static void format_duration(double s, char *buf, size_t len)
{
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else snprintf(buf, len, "%ld:%02ld", t / 60, t % 60);
}

static void on_progress(void *user, const batch_progress *p)
{
    batch_view *v = user;
    int finished = p->done + p->failed + p->resumed;
    if (v->o->quiet) return;
    if (!v->tty && p->elapsed_s - v->last_print < 5.0 && finished < p->total) return;
    if (v->tty && p->elapsed_s - v->last_print < 0.1 && finished < p->total) return;
    v->last_print = p->elapsed_s;
    double rate = p->elapsed_s > 0 ? (p->done + p->failed) / p->elapsed_s : 0;
    char elapsed[32], eta[32] = "?";
    format_duration(p->elapsed_s, elapsed, sizeof elapsed);
    if (rate > 0) format_duration((p->total - finished) / rate, eta, sizeof eta);
    fprintf(stderr, "%s%d/%d images, %.1f images/s, %.1f MB/s, elapsed %s, ETA %s%s", v->tty ? "\r" : "imgpipe: ",
            finished, p->total, rate, p->elapsed_s > 0 ? (double)p->bytes_in / 1e6 / p->elapsed_s : 0.0, elapsed, eta,
            v->tty ? "\033[K" : "\n");
    fflush(stderr);
}

static void on_failure(void *user, const char *path, const char *message)
{
    batch_view *v = user;
    size_t len = strlen(path) + strlen(message) + 3;
    char *line = malloc(len);
    if (line) {
        snprintf(line, len, "%s: %s", path, message);
        char **grown = realloc(v->failures, (size_t)(v->n_failures + 1) * sizeof *grown);
        if (grown) {
            v->failures = grown;
            v->failures[v->n_failures++] = line;
        } else {
            free(line);
        }
    }
    fprintf(stderr, "%simgpipe: %s: %s\n", v->tty ? "\r\033[K" : "", path, message);
}

static void on_warning(void *user, const char *path, const io_warnings *w)
{
    batch_view *v = user;
    if (v->tty && !v->o->quiet) fputs("\r\033[K", stderr);
    cli_warn_decoded(v->o, path, w);
}

static void on_note(void *user, const char *message)
{
    batch_view *v = user;
    if (!v->o->quiet) fprintf(stderr, "%simgpipe: %s\n", v->tty ? "\r\033[K" : "", message);
}

/* The mixed arrangement: half the workers (at least one a GPU) on the GPUs, the others on the
 * cores, each worker with its share of the cores, as CPU workers have. */
static void arrange_mixed(const cli_options *o, const folder_plan *fp, long cores, batch_options *b)
{
    if (!fp || !fp->mixed) return;
    int gpu = (b->jobs + 1) / 2 > b->n_gpus ? (b->jobs + 1) / 2 : b->n_gpus;
    b->gpu_workers = gpu < b->jobs ? gpu : 0;
    b->arrange_by_rates = fp->by_rates;
    b->arrangement_why = fp->by_rates && fp->why[0] ? fp->why : NULL;
    if (!o->run.threads) b->threads = (int)(cores / b->jobs > 0 ? cores / b->jobs : 1);
}

/* pl: under mpirun, the rank's place (its share of the cores, its GPU); NULL otherwise. fp: the
 * folder's arrangement (NULL: every worker on dev). */
static int batch_setup(const cli_options *o, exec_device dev, const folder_plan *fp, const char *in, const char *out,
                       const mpi_place *pl, batch_options *b)
{
    memset(b, 0, sizeof *b);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1) cores = 1;
    if (pl) cores = batch_mpi_cores(pl, cores);
    b->input = in;
    b->output_dir = out;
    b->recursive = o->recursive;
    b->resume = o->resume;
    b->format = !o->format ? IO_FMT_UNKNOWN : strcmp(o->format, "png") == 0 ? IO_FMT_PNG
              : strcmp(o->format, "jpg") == 0 ? IO_FMT_JPEG : IO_FMT_TIFF;
    b->jobs = o->jobs ? o->jobs : (int)cores;
    b->device = dev;
    b->threads = o->run.threads ? o->run.threads : (dev == EXEC_CPU ? (int)(cores / b->jobs > 0 ? cores / b->jobs : 1) : 1);
    b->transfer = o->run.transfer;
    b->cpu_fallback = o->run.device == RUN_DEVICE_AUTO;
    b->jpeg_on_gpu = o->run.jpeg_gpu_required;
    b->codecs = o->run.codecs;
    b->verbose = o->run.profile;
    b->no_fuse = o->run.no_fuse;
    b->shard_index = o->shard_index;
    b->shard_count = o->shard_count;
    b->all_pages = o->all_pages;
    b->strip = o->run.strip;
    b->io = o->run.io;
    b->stream = o->run.stream;
    /* the images in flight share the memory a run may use */
    b->memory = (o->run.memory ? o->run.memory : run_default_memory()) / (uint64_t)b->jobs;
    /* Images in flight already share the cores; each codec takes its share. */
    b->io.threads = o->run.threads ? o->run.threads : (int)(cores / b->jobs > 0 ? cores / b->jobs : 1);
    b->stop = &interrupted;
    if (dev == EXEC_GPU) {
        char why[128];
        int rc = cli_parse_gpu_list(o->gpus, gpu_device_count(why, sizeof why), b->gpu_ids, &b->n_gpus, BATCH_MAX_GPUS);
        if (rc == CLI_OK && pl) batch_mpi_pick_gpu(pl, b);
        if (rc == CLI_OK) arrange_mixed(o, fp, cores, b);
        return rc;
    }
    return CLI_OK;
}

static const char *warned_text(const batch_progress *r, char *buf, size_t len)
{
    if (r->warned) snprintf(buf, len, ", %d decoded with warnings", r->warned);
    else buf[0] = '\0';
    return buf;
}

static void print_batch_summary(const cli_options *o, const batch_view *v, const batch_progress *r)
{
    char warned[64];
    if (v->tty && !o->quiet) fputc('\n', stderr);
    if (!o->quiet || r->failed)
        fprintf(stderr, "imgpipe: %s%d succeeded, %d failed, %d skipped (output exists), %d not images%s; %.1f s%s\n",
                v->shard, r->done, r->failed, r->resumed, r->not_images, warned_text(r, warned, sizeof warned),
                r->elapsed_s, r->stopped ? "; interrupted: run again with --resume to finish" : "");
    for (int i = 0; i < v->n_failures; i++) fprintf(stderr, "  failed: %s\n", v->failures[i]);
}

/* Under mpirun, after the summary: each rank's share and speed. */
static void print_rank_lines(const cli_options *o, const batch_mpi *mpi, const batch_progress *r)
{
    int n;
    const batch_mpi_rank_stats *s = batch_mpi_stats(mpi, &n);
    for (int k = 0; k < n && !o->quiet; k++)
        fprintf(stderr, "  rank %d (%s): %d done, %d failed, %d skipped; %.1f images/s%s\n", k, s[k].host, s[k].done,
                s[k].failed, s[k].resumed, s[k].seconds > 0 ? (s[k].done + s[k].failed) / s[k].seconds : 0.0,
                s[k].lost ? "; lost (died or stopped answering)" : "");
    if (n && !o->quiet)
        fprintf(stderr, "  all %d ranks: %.1f images/s\n", n, r->elapsed_s > 0 ? (r->done + r->failed) / r->elapsed_s : 0.0);
}

/* Under mpirun, every rank but 0 stays silent except for its own errors. */
static int batch_outcome(const cli_options *o, batch_view *v, const batch_mpi *mpi, int rank, int rc,
                         const char *err, const batch_progress *result)
{
    if (rc != IP_OK && rank > 0) cli_fail("rank %d: %s", rank, err);
    else if (rc != IP_OK) cli_fail("%s", err);
    if (rc != IP_OK) return rc == IP_EINVAL ? CLI_USAGE : CLI_IMAGE_FAILED;
    if (rank > 0) return CLI_OK;
    print_batch_summary(o, v, result);
    if (mpi) print_rank_lines(o, mpi, result);
    return result->failed || result->stopped ? CLI_IMAGE_FAILED : CLI_OK;
}

static void say_workers(const cli_options *o, const batch_options *b)
{
    if (b->device != EXEC_GPU || o->quiet) return;
    if (b->arrange_by_rates) return;   /* the measured choice says it */
    if (!b->gpu_workers) {
        cli_say(o, "%d worker%s on %d GPU%s", b->jobs, b->jobs == 1 ? "" : "s", b->n_gpus, b->n_gpus == 1 ? "" : "s");
        return;
    }
    int cpu = b->jobs - b->gpu_workers;
    cli_say(o, "%d workers: %d on %d GPU%s, %d CPU worker%s with %d thread%s each, from one queue", b->jobs,
            b->gpu_workers, b->n_gpus, b->n_gpus == 1 ? "" : "s", cpu, cpu == 1 ? "" : "s", b->threads,
            b->threads == 1 ? "" : "s");
    if (o->verbose && b->jpeg_on_gpu)
        cli_say(o, "gpu+cpu with --jpeg-decoder gpu: a JPEG's output depends on the worker that ran it (nvJPEG's "
                "pixels differ from libjpeg-turbo's by up to 3 levels), so two runs may differ there");
}

static int cmd_batch(const cli_options *o, const plan *p, const folder_plan *fp, const char *in, const char *out)
{
    mpi_place place = { 1, 0, 1, 0 };
    int under_mpi = mpi_lib_place(&place);
    batch_options b;
    exec_device dev = fp->dev;
    int rc = batch_setup(o, dev, under_mpi ? NULL : fp, in, out, under_mpi ? &place : NULL, &b);
    if (rc) return rc;
    say_workers(o, &b);
    batch_view view = { o, isatty(STDERR_FILENO), -1e9, NULL, 0, "" };
    if (o->shard_count) snprintf(view.shard, sizeof view.shard, "shard %d/%d: ", o->shard_index, o->shard_count);
    if (under_mpi) snprintf(view.shard + strlen(view.shard), sizeof view.shard - strlen(view.shard), "%d ranks: ", place.size);
    batch_callbacks cb = { on_progress, on_failure, on_note, on_warning, &view };
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_interrupt;
    sa.sa_flags = (int)SA_RESETHAND;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (under_mpi) sigaction(SIGUSR1, &sa, NULL);   /* mpirun forwards it at once, unlike Ctrl-C */
    batch_progress result;
    char err[1024];
    batch_mpi *mpi = NULL;
    if (under_mpi && batch_mpi_open(&mpi, &place, err, sizeof err) != IP_OK) {
        cli_fail("rank %d: %s", place.rank, err);
        return CLI_USAGE;
    }
    rc = mpi ? batch_mpi_run(mpi, &b, p, &cb, &result, err, sizeof err) : batch_run(&b, p, &cb, &result, err, sizeof err);
    rc = batch_outcome(o, &view, mpi, place.rank, rc, err, &result);
    batch_mpi_close(mpi);
    for (int i = 0; i < view.n_failures; i++) free(view.failures[i]);
    free(view.failures);
    return rc;
}

/* auto with a GPU the estimate does not rule out: the arrangement is measured on the first images.
 * Not with nvJPEG, whose pixels differ from libjpeg-turbo's: each output would then depend on
 * which worker ran it, and a folder run twice could differ; auto keeps every image on the GPU. */
static int arrange_by_rates(const cli_options *o, const folder_estimate *est, int workers, folder_plan *fp)
{
    char why[256];
    if (o->run.jpeg_gpu_required && o->verbose)
        cli_say(o, "auto with --jpeg-decoder gpu: no CPU workers beside the GPU's (their JPEG pixels would differ "
                "from nvJPEG's, so the outputs would depend on the worker)");
    if (o->run.jpeg_gpu_required || gpu_device_count(why, sizeof why) == 0) return choose_device(o, &fp->dev);
    fp->dev = EXEC_GPU;
    if (est && !sched_measurable(workers, est->n_images)) {
        /* too few images to measure: the estimate decides, every worker on one side, said as
         * a single device's line */
        if (est->gpu_s < est->cpu_s) return choose_device(o, &fp->dev);
        fp->dev = EXEC_CPU;
        cli_say(o, "device: CPU, %d threads (auto: too few images to measure; estimated %.1f s against %.1f s on the GPU)",
                run_cpu_threads(&o->run), est->cpu_s, est->gpu_s);
        return CLI_OK;
    }
    fp->mixed = fp->by_rates = 1;
    if (est) snprintf(fp->why, sizeof fp->why, "estimate for the folder: the CPU about %.1f s, the GPU path about %.1f s",
                      est->cpu_s, est->gpu_s);
    return CLI_OK;
}

/* auto, for a folder: the CPU path when the estimate says the stages cost the CPU's workers less
 * than the GPU path's start-up and staging would (light pipelines), so the GPU is never started;
 * else the arrangement measured. gpu+cpu: the mixed arrangement as asked. */
static int choose_folder_device(const cli_options *o, const plan *p, const char *in, const char *out,
                                folder_plan *fp)
{
    mpi_place place;
    memset(fp, 0, sizeof *fp);
    if (mpi_lib_place(&place)) return choose_device(o, &fp->dev);
    if (o->device_mixed) {
        int rc = choose_device(o, &fp->dev);
        fp->mixed = rc == CLI_OK && fp->dev == EXEC_GPU;
        return rc;
    }
    if (o->run.device != RUN_DEVICE_AUTO || !gpu_built()) return choose_device(o, &fp->dev);
    batch_options b;
    folder_estimate est;
    char err[1024];
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (batch_setup(o, EXEC_CPU, NULL, in, out, NULL, &b) != CLI_OK ||
        folder_estimate_run(&b, p, cores > 0 ? (int)cores : 1, &est, err, sizeof err) != IP_OK)
        return arrange_by_rates(o, NULL, 0, fp);
    /* with nvJPEG auto never measures: the estimate alone decides, as for one device */
    int nvjpeg = o->run.jpeg_gpu_required;
    int cpu_wins = nvjpeg ? est.gpu_s >= est.cpu_s : folder_gpu_ruled_out(&est);
    if (!cpu_wins && nvjpeg)
        cli_say(o, "auto with --jpeg-decoder gpu: the GPU path, about %.1f s for %d image%s, against about %.1f s for "
                "the cores' decoding, stages and encoding", est.gpu_s, est.n_images, est.n_images == 1 ? "" : "s",
                est.cpu_s);
    if (!cpu_wins) return arrange_by_rates(o, &est, b.jobs, fp);
    /* with nvJPEG the estimates count the CPU path's decoding and encoding, and the engine's start */
    cli_say(o, "device: CPU, %d workers (auto: %s of %d image%s would take the cores about %.1f s, less than %s, "
            "about %.1f s)", b.jobs,
            nvjpeg ? "the decoding, stages and encoding" : est.card_encodes ? "the stages and encoding" : "the stages",
            est.n_images,
            est.n_images == 1 ? "" : "s", est.cpu_s,
            nvjpeg ? "the GPU path with nvJPEG's start" : "the GPU's start-up and staging", est.gpu_s);
    fp->dev = EXEC_CPU;
    return CLI_OK;
}

int cli_run_folder(const cli_options *o, const plan *p, const char *in, const char *out)
{
    folder_plan fp;
    int rc = choose_folder_device(o, p, in, out, &fp);
    return rc == CLI_OK ? cmd_batch(o, p, &fp, in, out) : rc;
}
