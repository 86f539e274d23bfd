/* Errors as the API returns them, the status texts and the version. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api/api_internal.h"

#ifndef IMGPIPE_VERSION_TEXT
#define IMGPIPE_VERSION_TEXT "0.0.0"
#endif

int imgpipe_version_number(void) { return IMGPIPE_VERSION; }
const char *imgpipe_version(void) { return IMGPIPE_VERSION_TEXT; }

const char *imgpipe_status_text(int code)
{
    switch (code) {
    case IMGPIPE_OK: return "ok";
    case IMGPIPE_EINVAL: return "invalid argument";
    case IMGPIPE_ENOMEM: return "out of memory";
    case IMGPIPE_EIO: return "a file could not be read or written";
    case IMGPIPE_EFORMAT: return "a file is damaged or not an image";
    case IMGPIPE_EUNSUPPORTED: return "not supported by this build or machine";
    case IMGPIPE_ECUDA: return "a CUDA call failed";
    case IMGPIPE_ELIMIT: return "an input is over a limit";
    case IMGPIPE_EPIPELINE: return "error in the pipeline text";
    case IMGPIPE_ECANCELED: return "canceled";
    case IMGPIPE_EFAILED: return "some images failed";
    default: return "unknown error code";
    }
}

static void clear_where(imgpipe_error *err)
{
    err->file[0] = err->suggestion[0] = err->path[0] = '\0';
    err->line = err->column = 0;
}

void api_ok(imgpipe_error *err)
{
    if (!err) return;
    err->code = IMGPIPE_OK;
    err->message[0] = '\0';
    clear_where(err);
}

int api_fail(imgpipe_error *err, int code, const char *fmt, ...)
{
    if (!err) return code;
    err->code = code;
    clear_where(err);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return code;
}

/* The plugin ABI's codes are the API's first ones; anything else is reported as invalid. */
static int api_code(int rc) { return rc >= IMGPIPE_OK && rc <= IMGPIPE_ELIMIT ? rc : IMGPIPE_EINVAL; }

int api_fail_from(imgpipe_error *err, int rc, const char *message, const char *path)
{
    int code = api_code(rc);
    if (!err) return code;
    if (path) api_fail(err, code, "%s: %s", path, message);   /* as the command line says it */
    else api_fail(err, code, "%s", message);
    if (path) snprintf(err->path, sizeof err->path, "%s", path);
    return code;
}

/* "did you mean 'X'" anywhere in the message: X. */
static void find_suggestion(const char *message, char *out, size_t outlen)
{
    static const char cue[] = "did you mean '";
    const char *at = strstr(message, cue);
    out[0] = '\0';
    if (!at) return;
    at += sizeof cue - 1;
    const char *end = strchr(at, '\'');
    if (end && (size_t)(end - at) < outlen) snprintf(out, outlen, "%.*s", (int)(end - at), at);
}

int api_fail_pipeline(imgpipe_error *err, const char *source, const char *message)
{
    if (!err) return IMGPIPE_EPIPELINE;
    api_fail(err, IMGPIPE_EPIPELINE, "%s", message);
    snprintf(err->file, sizeof err->file, "%s", source);
    size_t n = strlen(source);
    if (strncmp(message, source, n) == 0 && message[n] == ':') {
        int line = 0, column = 0, used = 0;
        if (sscanf(message + n + 1, "%d:%d:%n", &line, &column, &used) == 2 && used > 0) {
            err->line = line;
            err->column = column;
        }
    }
    find_suggestion(message, err->suggestion, sizeof err->suggestion);
    return IMGPIPE_EPIPELINE;
}
