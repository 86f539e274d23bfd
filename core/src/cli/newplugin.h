#ifndef IMGPIPE_NEWPLUGIN_H
#define IMGPIPE_NEWPLUGIN_H
/* `imgpipe new-plugin`: writes samples/plugin-template (embedded at build time) with the
 * stage renamed. */
#include <stddef.h>

/* The template's stage name, replaced in file names and contents (and its upper case too). */
#define NEWPLUGIN_TEMPLATE_NAME "threshold"
#define NEWPLUGIN_MAX_NAME 48

typedef struct {
    const char *path;           /* relative to the template folder */
    const unsigned char *data;  /* followed by a 0 byte */
    size_t size;
} newplugin_file;

extern const newplugin_file newplugin_files[];
extern const int newplugin_n_files;

/* IP_OK when name can be a stage, a file and a C identifier prefix: a lowercase letter, then
 * lowercase letters, digits or '_', at most NEWPLUGIN_MAX_NAME; else IP_EINVAL and why. */
int newplugin_check_name(const char *name, char *err, size_t errlen);

/* Creates dir (name when dir is NULL), which must not exist, and writes the template into it
 * with the stage called name. On failure nothing is left behind; returns an ip_status. */
int newplugin_write(const char *name, const char *dir, char *err, size_t errlen);
/* The installation prefix of the running imgpipe (its folder's parent), for
 * -DCMAKE_PREFIX_PATH: IP_OK when the CMake package is installed there, else IP_EUNSUPPORTED
 * and a message saying to install first (a build tree has no package). */
int newplugin_prefix(char *out, size_t outlen, char *err, size_t errlen);
#endif
