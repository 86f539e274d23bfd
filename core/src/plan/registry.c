#define _DEFAULT_SOURCE
#include "plan/registry.h"
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "plan/stage_class.h"

#ifndef IMGPIPE_PLUGIN_RELDIR
#define IMGPIPE_PLUGIN_RELDIR "../lib/imgpipe/plugins"
#endif

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static int add_problem(registry *r, const char *path, const char *reason)
{
    char **grown = realloc(r->problems, (size_t)(r->n_problems + 1) * sizeof *grown);
    if (!grown) return IP_ENOMEM;
    r->problems = grown;
    size_t len = strlen(path) + strlen(reason) + 3;
    char *msg = malloc(len);
    if (!msg) return IP_ENOMEM;
    snprintf(msg, len, "%s: %s", path, reason);
    r->problems[r->n_problems++] = msg;
    return IP_OK;
}

/* One folder under two spellings ("plugins", "plugins/", "./lib/../lib/plugins", a link to it). */
static int same_dir(const char *a, const char *b)
{
    struct stat sa, sb;
    if (strcmp(a, b) == 0) return 1;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static int add_dir(registry *r, const char *dir)
{
    for (int i = 0; i < r->n_dirs; i++)
        if (same_dir(r->dirs[i], dir)) return IP_OK;
    char **grown = realloc(r->dirs, (size_t)(r->n_dirs + 1) * sizeof *grown);
    if (!grown) return IP_ENOMEM;
    r->dirs = grown;
    if (!(r->dirs[r->n_dirs] = dup_str(dir))) return IP_ENOMEM;
    r->n_dirs++;
    return IP_OK;
}

static int add_path_list(registry *r, const char *list)
{
    if (!list) return IP_OK;
    char *copy = dup_str(list);
    if (!copy) return IP_ENOMEM;
    int rc = IP_OK;
    for (char *save = NULL, *dir = strtok_r(copy, ":", &save); dir && rc == IP_OK;
         dir = strtok_r(NULL, ":", &save))
        if (*dir) rc = add_dir(r, dir);
    free(copy);
    return rc;
}

/* Checks a descriptor before anything in it is trusted; returns NULL when it is usable. */
static const char *descriptor_problem(const ip_stage *s, char *buf, size_t len)
{
    if (!s) return "imgpipe_stage() returned NULL";
    if (s->abi_version != IP_ABI_VERSION) {
        snprintf(buf, len, "built for plugin ABI version %u, this imgpipe needs version %d: rebuild the plugin",
                 s->abi_version, IP_ABI_VERSION);
        return buf;
    }
    /* Fields added later go at the end; a descriptor needs only what version 1 had. */
    if (s->struct_size < offsetof(ip_stage, destroy) + sizeof s->destroy)
        return "stage descriptor is smaller than ABI version 1 requires";
    if (!s->name || !*s->name) return "stage has no name";
    if (!s->create || !s->plan || !s->run_cpu || !s->destroy)
        return "stage lacks create, plan, run_cpu or destroy";
    if (s->n_params < 0 || (s->n_params > 0 && !s->params)) return "stage has a bad parameter table";
    return stage_class_problem(s);
}

static reg_plugin *find_mut(registry *r, const char *name)
{
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->plugins[i].stage->name, name) == 0) return &r->plugins[i];
    return NULL;
}

static int add_plugin(registry *r, const ip_stage *stage, void *handle, const char *path)
{
    reg_plugin *twin = find_mut(r, stage->name);
    if (twin) {
        char reason[PATH_MAX + 128];
        snprintf(reason, sizeof reason, "stage '%s' is also provided by %s; both are refused", stage->name, twin->path);
        if (!twin->shadowed_by && !(twin->shadowed_by = dup_str(path))) return IP_ENOMEM;
        dlclose(handle);
        return add_problem(r, path, reason);
    }
    if (r->n == r->cap) {
        int cap = r->cap ? r->cap * 2 : 16;
        reg_plugin *grown = realloc(r->plugins, (size_t)cap * sizeof *grown);
        if (!grown) return IP_ENOMEM;
        r->plugins = grown;
        r->cap = cap;
    }
    reg_plugin *p = &r->plugins[r->n];
    if (!(p->path = dup_str(path))) return IP_ENOMEM;
    p->stage = stage;
    p->handle = handle;
    p->shadowed_by = NULL;
    r->n++;
    return IP_OK;
}

static int handle_loaded(const registry *r, const void *handle)
{
    for (int i = 0; i < r->n; i++)
        if (r->plugins[i].handle == handle) return 1;
    return 0;
}

static int load_one(registry *r, const char *path)
{
    /* Never unmapped, even after dlclose: a plugin's OpenMP (or own) threads outlive its last
     * call, and unloading the libgomp it brought in under them crashes them (seen at exit of a
     * test program that did not link libgomp itself). */
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!handle) {
        const char *why = dlerror();
        return add_problem(r, path, why ? why : "cannot be opened");
    }
    if (handle_loaded(r, handle)) {   /* the same file by another name (a link): one plugin */
        dlclose(handle);
        return IP_OK;
    }
    dlerror();
    void *sym = dlsym(handle, "imgpipe_stage");
    if (!sym) {
        dlclose(handle);
        return add_problem(r, path, "not an imgpipe plugin: it does not export imgpipe_stage()");
    }
    const ip_stage *(*entry)(void);
    memcpy(&entry, &sym, sizeof entry);   /* object to function pointer without a cast warning */
    const ip_stage *stage = entry();
    char buf[160];
    const char *problem = descriptor_problem(stage, buf, sizeof buf);
    if (problem) {
        dlclose(handle);
        return add_problem(r, path, problem);
    }
    return add_plugin(r, stage, handle, path);
}

static int is_shared_object(const char *name)
{
    size_t n = strlen(name);
    return n > 3 && strcmp(name + n - 3, ".so") == 0 && name[0] != '.';
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted, so that which of two duplicates is seen first never depends on the file system. */
static int load_dir(registry *r, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return IP_OK;
    char **names = NULL;
    int n = 0, rc = IP_OK;
    for (struct dirent *e; (e = readdir(d)) && rc == IP_OK;) {
        if (!is_shared_object(e->d_name)) continue;
        char **grown = realloc(names, (size_t)(n + 1) * sizeof *grown);
        if (!grown || !(grown[n] = dup_str(e->d_name))) rc = IP_ENOMEM;
        if (grown) names = grown;
        if (rc == IP_OK) n++;
    }
    closedir(d);
    if (n > 1) qsort(names, (size_t)n, sizeof *names, cmp_str);
    for (int i = 0; i < n; i++) {
        char path[PATH_MAX];
        if (rc == IP_OK && snprintf(path, sizeof path, "%s/%s", dir, names[i]) < (int)sizeof path)
            rc = load_one(r, path);
        free(names[i]);
    }
    free(names);
    return rc;
}

int registry_load(registry *r, const char *cli_path, const char *env_path, const char *default_dir,
                  char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    int rc = add_path_list(r, cli_path);
    if (rc == IP_OK) rc = add_path_list(r, env_path);
    if (rc == IP_OK && default_dir) rc = add_dir(r, default_dir);
    for (int i = 0; i < r->n_dirs && rc == IP_OK; i++) rc = load_dir(r, r->dirs[i]);
    if (rc != IP_OK) {
        snprintf(err, errlen, "out of memory while loading plugins");
        registry_free(r);
    }
    return rc;
}

void registry_free(registry *r)
{
    for (int i = 0; i < r->n; i++) {
        dlclose(r->plugins[i].handle);
        free(r->plugins[i].path);
        free(r->plugins[i].shadowed_by);
    }
    free(r->plugins);
    for (int i = 0; i < r->n_dirs; i++) free(r->dirs[i]);
    free(r->dirs);
    for (int i = 0; i < r->n_problems; i++) free(r->problems[i]);
    free(r->problems);
    memset(r, 0, sizeof *r);
}

const reg_plugin *registry_find(const registry *r, const char *name)
{
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->plugins[i].stage->name, name) == 0) return &r->plugins[i];
    return NULL;
}

const char **registry_names(const registry *r, int *n)
{
    const char **names = malloc((size_t)(r->n ? r->n : 1) * sizeof *names);
    if (!names) {
        *n = 0;
        return NULL;
    }
    for (int i = 0; i < r->n; i++) names[i] = r->plugins[i].stage->name;
    *n = r->n;
    return names;
}

int registry_default_dir(char *out, size_t outlen)
{
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) return IP_EIO;
    exe[len] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash) return IP_EIO;
    *slash = '\0';
    if (snprintf(out, outlen, "%s/%s", exe, IMGPIPE_PLUGIN_RELDIR) >= (int)outlen) return IP_EINVAL;
    return IP_OK;
}
