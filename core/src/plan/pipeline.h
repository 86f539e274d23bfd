/* Pipeline text -> list of stages with their key=value arguments and positions. */
#ifndef IMGPIPE_PIPELINE_H
#define IMGPIPE_PIPELINE_H
#include <stddef.h>

typedef struct {
    char *key, *value;      /* value unquoted */
    int line, col;          /* of the key */
    int value_col;          /* of the value's first character (the quote when quoted) */
} pl_arg;

typedef struct {
    char *name;
    int line, col;
    pl_arg *args;
    int n_args;
} pl_stage;

typedef struct {
    char *source;           /* file name, or "-e" for an expression */
    pl_stage *stages;
    int n_stages;
} pl_pipeline;

/* Parses text; on error returns IP_EINVAL with err = "SOURCE:LINE:COL: message". */
int pl_parse(const char *text, const char *source, pl_pipeline *out, char *err, size_t errlen);
/* Reads and parses a file (IP_EIO with "SOURCE: message" when unreadable). */
int pl_parse_file(const char *path, pl_pipeline *out, char *err, size_t errlen);
void pl_free(pl_pipeline *p);
#endif
