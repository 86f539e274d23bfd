/* Plugin search path, dlopen, ABI version check, stage lookup. */
#ifndef IMGPIPE_REGISTRY_H
#define IMGPIPE_REGISTRY_H
#include "imgpipe/plugin.h"

typedef struct {
    const ip_stage *stage;
    void *handle;
    char *path;
    char *shadowed_by;   /* non-NULL: another plugin claims the same name; the stage is refused */
} reg_plugin;

typedef struct {
    reg_plugin *plugins;
    int n, cap;
    char **dirs;         /* the folders searched, in order */
    int n_dirs;
    char **problems;     /* "FILE: reason" for every plugin refused */
    int n_problems;
} registry;

/* Searches, in order: cli_path (colon-separated, may be NULL), env_path (the value of
 * IMGPIPE_PLUGIN_PATH, may be NULL) and default_dir (beside the executable, may be NULL).
 * Every *.so in those folders is opened; refused ones are listed in problems. Fails only
 * when memory runs out. */
int registry_load(registry *r, const char *cli_path, const char *env_path, const char *default_dir,
                  char *err, size_t errlen);
void registry_free(registry *r);
/* The plugin for a stage name, or NULL. */
const reg_plugin *registry_find(const registry *r, const char *name);
/* Stage names, for suggestions: a malloc'd array (free it) of n names owned by the registry. */
const char **registry_names(const registry *r, int *n);
/* The folder holding the running executable's plugins: exe_dir/../lib/imgpipe/plugins. */
int registry_default_dir(char *out, size_t outlen);
#endif
