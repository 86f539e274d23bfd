/* The command line: sub-commands, and one image's run printed; the options, folders, plugins and
 * what a run prints live in the cli_*.c files beside it. */
#define _POSIX_C_SOURCE 200809L
#include "cli/cli.h"
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "batch/batch.h"
#include "cli/cli_folder.h"
#include "cli/cli_options.h"
#include "cli/cli_plugins.h"
#include "cli/cli_print.h"
#include "gpu/gpu.h"
#include "batch/mpi_lib.h"
#include "plan/pipeline.h"
#include "plan/plan.h"
#include "plan/registry.h"
#include "run/run.h"

#ifndef IMGPIPE_VERSION_TEXT
#define IMGPIPE_VERSION_TEXT "0.0.0"
#endif

/* Parses the pipeline file or -e text and binds it to plugins. */
static int load_plan(const cli_options *o, const char *file, const registry *reg, plan *p)
{
    pl_pipeline pl;
    char err[1024];
    int rc = o->expr ? pl_parse(o->expr, "-e", &pl, err, sizeof err) : pl_parse_file(file, &pl, err, sizeof err);
    if (rc != IP_OK) {
        cli_fail("%s", err);
        return CLI_USAGE;
    }
    rc = plan_build(reg, &pl, p, err, sizeof err);
    pl_free(&pl);
    if (rc != IP_OK) {
        cli_fail("%s", err);
        return CLI_USAGE;
    }
    return CLI_OK;
}

/* --device gpu in a build without CUDA fails before anything is read. */
static int check_gpu_build(const cli_options *o)
{
    if (o->run.device != RUN_DEVICE_GPU || gpu_built()) return CLI_OK;
    cli_fail("--device gpu: imgpipe was built without CUDA");
    return CLI_USAGE;
}

/* --gpus for one image: the GPUs a streamed image's bands are dealt to (without it, GPU 0:
 * on two H200s every measured pipeline ran at 0.71x to 1.07x dealt to both, bench/RESULTS.md). */
static int image_gpus(cli_options *o)
{
    if (!o->gpus || o->run.device == RUN_DEVICE_CPU) return CLI_OK;
    char none[256];
    int count = gpu_device_count(none, sizeof none);
    return count ? cli_parse_gpu_list(o->gpus, count, o->run.gpu_ids, &o->run.n_gpus, RUN_MAX_GPUS) : CLI_OK;
}

/* One image's output temporary, named by the writers while it exists (io_options.temp_slot): a
 * signal that ends the run removes it, as a finished or failed write does; a signal handler can
 * only reach a global. */
static io_temp_slot live_temp;

static void on_ending_signal(int sig)
{
    if (live_temp.set) unlink(live_temp.path);
    raise(sig);   /* SA_RESETHAND: the default action, which ends the process as before */
}

/* A signal ignored on entry (nohup, a script's background job) stays ignored. */
static void catch_ending_signal(int sig, const struct sigaction *sa)
{
    struct sigaction old;
    if (sigaction(sig, NULL, &old) == 0 && old.sa_handler == SIG_IGN) return;
    sigaction(sig, sa, NULL);
}

/* One image: the output's temporary is removed if Ctrl-C or a TERM or HUP ends the run. */
static int run_one_image(const cli_options *o, plan *p, const char *in_path, const char *out_path)
{
    cli_options one = *o;
    one.run.io.temp_slot = &live_temp;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_ending_signal;
    sa.sa_flags = (int)SA_RESETHAND;
    catch_ending_signal(SIGINT, &sa);
    catch_ending_signal(SIGTERM, &sa);
    catch_ending_signal(SIGHUP, &sa);
    run_source in = { in_path, NULL, NULL, 0, NULL, NULL };
    run_sink out = { out_path, NULL, 0, NULL, NULL };
    run_result res;
    char err[1024];
    int rc = run_image(NULL, p, &in, &out, &one.run, &res, err, sizeof err);
    return cli_print_run(o, p, in_path, &res, rc, err);
}

static int cmd_run(const cli_options *o)
{
    int need = o->expr ? 2 : 3;
    if (o->n_positional != need)
        return cli_usage_error(o->expr ? "run -e TEXT needs IN and OUT" : "run needs PIPELINE, IN and OUT");
    const char *in_path = o->positional[need - 2], *out_path = o->positional[need - 1];
    int is_batch = batch_is_batch_input(in_path);
    if (!is_batch && o->shard_count) return cli_usage_error("--shard applies to a folder or an @LIST, not one image");
    mpi_place place;
    if (mpi_lib_place(&place)) {   /* under mpirun: only rank 0 says what is wrong */
        if (!mpi_lib_built())
            return place.rank ? CLI_USAGE : cli_usage_error("run under mpirun, but imgpipe was built without MPI "
                                                        "(-DIMGPIPE_MPI=ON): run one copy, or use --shard I/N");
        if (!is_batch)
            return place.rank ? CLI_USAGE : cli_usage_error("under mpirun, IN must be a folder or an @LIST, not one image");
        if (o->all_pages)   /* rank 0 hands out files, not pages: the other ranks would read page 0 */
            return place.rank ? CLI_USAGE : cli_usage_error("--all-pages does not run under mpirun yet: run one copy "
                                                        "per host with --shard I/N");
    }
    if (!is_batch && o->all_pages)
        return cli_usage_error("--all-pages applies to a folder or an @LIST; for one image choose a page with --page N");
    if (o->all_pages && o->page_given) return cli_usage_error("--page and --all-pages exclude each other");
    if (!is_batch && io_format_from_ext(out_path) == IO_FMT_UNKNOWN)
        return cli_usage_error("%s: cannot tell the output format from its extension: use .png, .jpg, .jpeg, .tif or .tiff",
                           out_path);
    registry reg;
    plan p;
    cli_options one_gpus = *o;
    int rc = cli_load_registry(o, &reg);
    if (rc) return rc;
    rc = load_plan(o, o->expr ? NULL : o->positional[0], &reg, &p);
    if (rc == CLI_OK) {
        gpu_prefer_eager_loading();
        if (!is_batch) {
            rc = check_gpu_build(o);
            if (rc == CLI_OK) rc = image_gpus(&one_gpus);
            if (rc == CLI_OK) rc = run_one_image(&one_gpus, &p, in_path, out_path);
        } else {
            rc = cli_run_folder(o, &p, in_path, out_path);
        }
        plan_free(&p);
    }
    registry_free(&reg);
    return rc;
}

static int cmd_check(const cli_options *o)
{
    if (o->n_positional != (o->expr ? 0 : 1)) return cli_usage_error("check needs PIPELINE or -e TEXT");
    registry reg;
    plan p;
    int rc = cli_load_registry(o, &reg);
    if (rc) return rc;
    rc = load_plan(o, o->expr ? NULL : o->positional[0], &reg, &p);
    if (rc == CLI_OK) {
        char err[1024], in_text[64], out_text[64];
        ip_shape final;
        if (plan_shapes(&p, &o->check_shape, &final, err, sizeof err) != IP_OK) {
            cli_fail("%s", err);
            rc = CLI_USAGE;
        } else if (!o->quiet) {
            plan_shape_text(&o->check_shape, in_text, sizeof in_text);
            plan_shape_text(&final, out_text, sizeof out_text);
            printf("%s: ok: %d stage%s, %s in -> %s out\n", p.source, p.n, p.n == 1 ? "" : "s", in_text, out_text);
        }
        plan_free(&p);
    }
    registry_free(&reg);
    return rc;
}

int cli_main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs(cli_usage_text, stdout);
            return CLI_OK;
        }
        if (strcmp(argv[i], "--version") == 0) {
            printf("imgpipe %s (plugin ABI %d, CUDA %s, MPI %s)\n", IMGPIPE_VERSION_TEXT, IP_ABI_VERSION,
#ifdef IMGPIPE_HAVE_CUDA
                   "built in",
#else
                   "not built",
#endif
                   mpi_lib_built() ? "built in" : "not built");
            return CLI_OK;
        }
    }
    cli_options o;
    int rc = cli_parse_args(argc, argv, &o);
    if (rc) return rc;
    mpi_place place;
    if (mpi_lib_place(&place) && place.rank > 0) o.quiet = 1;   /* rank 0 alone reports */
    if (!o.command) {
        fputs(cli_usage_text, stderr);
        return CLI_USAGE;
    }
    if (strcmp(o.command, "run") == 0) return cmd_run(&o);
    if (strcmp(o.command, "check") == 0) return cmd_check(&o);
    if (strcmp(o.command, "plugins") == 0) return cli_cmd_plugins(&o);
    if (strcmp(o.command, "new-plugin") == 0) return cli_cmd_new_plugin(&o);
    return cli_usage_error("unknown command '%s': use run, check, plugins or new-plugin", o.command);
}
