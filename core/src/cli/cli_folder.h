/* imgpipe run over a folder or an @LIST (under mpirun too). */
#ifndef IMGPIPE_CLI_FOLDER_H
#define IMGPIPE_CLI_FOLDER_H
#include "cli/cli_options.h"

int cli_run_folder(const cli_options *o, const plan *p, const char *in, const char *out);
#endif
