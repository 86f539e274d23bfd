/* The command line's options and the helpers every command's printing uses. */
#ifndef IMGPIPE_CLI_OPTIONS_H
#define IMGPIPE_CLI_OPTIONS_H
#include "cli/cli.h"
#include "run/run.h"

typedef struct {
    const char *command;
    const char *positional[4];
    int n_positional;
    const char *expr;            /* -e TEXT */
    const char *plugin_path;
    int quiet, verbose;
    run_options run;             /* device, threads, codecs, streaming, limits */
    int device_mixed;            /* --device gpu+cpu (run.device is then RUN_DEVICE_GPU) */
    ip_shape check_shape;
    int recursive, resume, jobs;
    const char *format;          /* --format png|tif|jpg for folders */
    const char *gpus;            /* --gpus all|0,2 */
    int shard_index, shard_count;   /* --shard I/N */
    int page_given, all_pages;      /* --page N, --all-pages */
} cli_options;

extern const char cli_usage_text[];

int cli_parse_args(int argc, char **argv, cli_options *o);
int cli_parse_long(const char *text, long lo, long hi, long *out);
/* --gpus: "all" or a list of GPUs of the count the machine has, into ids (at most max). */
int cli_parse_gpu_list(const char *text, int count, int *ids, int *n, int max);

/* "imgpipe: ..." on stderr: say unless --quiet, fail always; usage_error returns CLI_USAGE. */
void cli_say(const cli_options *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#endif
