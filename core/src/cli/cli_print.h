/* What the command line prints of one image's run: the device line, warnings, notes, --profile. */
#ifndef IMGPIPE_CLI_PRINT_H
#define IMGPIPE_CLI_PRINT_H
#include "cli/cli_options.h"

/* Everything a finished (or failed) run has to say, in order; returns the exit code. */
int cli_print_run(const cli_options *o, const plan *p, const char *in_path, const run_result *res, int rc,
                  const char *err);
/* An image decoded past damage says so once, with the first warning. */
void cli_warn_decoded(const cli_options *o, const char *path, const io_warnings *w);
#endif
