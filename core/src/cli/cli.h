#ifndef IMGPIPE_CLI_H
#define IMGPIPE_CLI_H
/* The command line: the only code that prints or chooses an exit code. */
enum { CLI_OK = 0, CLI_IMAGE_FAILED = 1, CLI_USAGE = 2 };
int cli_main(int argc, char **argv);
#endif
