#ifndef IMGPIPE_CLI_PLUGINS_H
#define IMGPIPE_CLI_PLUGINS_H
#include "cli/cli_options.h"
#include "plan/registry.h"

/* The registry the options point to; warnings for refused plugins are printed. */
int cli_load_registry(const cli_options *o, registry *reg);
int cli_cmd_plugins(const cli_options *o);
int cli_cmd_new_plugin(const cli_options *o);
#endif
