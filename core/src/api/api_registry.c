/* The plugins, opened once for the process: from imgpipe_set_plugin_path's folders, then
 * $IMGPIPE_PLUGIN_PATH, then imgpipe/plugins beside libimgpipe.so (the installed layout:
 * lib/libimgpipe.so and lib/imgpipe/plugins), or beside the program when the library is linked
 * into it statically (bin/../lib/imgpipe/plugins, as the command line). A shared library never
 * looks beside the program: that is some other program's (python's) folder, where a system
 * imgpipe's plugins would clash with the caller's. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "api/api_internal.h"

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static registry plugins;
static int plugins_loaded;
static char *plugin_path;

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* imgpipe/plugins in the folder of the object this function is in (the library, or the program);
 * *in_program: that object is the program itself (the core linked statically). */
static int beside_library(char *out, size_t outlen, int *in_program)
{
    Dl_info info;
    char real[PATH_MAX], exe[PATH_MAX];
    *in_program = 1;
    if (!dladdr((void *)beside_library, &info) || !info.dli_fname || !realpath(info.dli_fname, real)) return 0;
    *in_program = realpath("/proc/self/exe", exe) && strcmp(real, exe) == 0;
    char *slash = strrchr(real, '/');
    if (!slash) return 0;
    *slash = '\0';
    return snprintf(out, outlen, "%s/imgpipe/plugins", real) < (int)outlen && is_dir(out);
}

static const char *default_dir(char *buf, size_t len)
{
    int in_program;
    if (beside_library(buf, len, &in_program)) return buf;
    if (!in_program) return NULL;
    return registry_default_dir(buf, len) == IP_OK ? buf : NULL;
}

int imgpipe_set_plugin_path(const char *dirs, imgpipe_error *err)
{
    pthread_mutex_lock(&registry_lock);
    int rc = IMGPIPE_OK;
    char *copy = NULL;
    if (plugins_loaded)
        rc = api_fail(err, IMGPIPE_EINVAL, "imgpipe_set_plugin_path: the plugins are already loaded (a pipeline was "
                      "opened or the stages listed): set the path before");
    else if (dirs && !(copy = strdup(dirs)))
        rc = api_fail(err, IMGPIPE_ENOMEM, "out of memory");
    if (rc == IMGPIPE_OK) {
        free(plugin_path);
        plugin_path = copy;
        api_ok(err);
    }
    pthread_mutex_unlock(&registry_lock);
    return rc;
}

int api_registry(const registry **reg, imgpipe_error *err)
{
    pthread_mutex_lock(&registry_lock);
    int rc = IP_OK;
    if (!plugins_loaded) {
        char dir[PATH_MAX], msg[256];
        rc = registry_load(&plugins, plugin_path, getenv("IMGPIPE_PLUGIN_PATH"), default_dir(dir, sizeof dir), msg,
                           sizeof msg);
        if (rc != IP_OK) api_fail_from(err, rc, msg, NULL);
        plugins_loaded = rc == IP_OK;
    }
    pthread_mutex_unlock(&registry_lock);
    *reg = &plugins;
    return rc;
}
