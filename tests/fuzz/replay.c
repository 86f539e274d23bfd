/* Runs a harness over files and folders of inputs without libFuzzer: every input that ever
 * crashed, hung or leaked (tests/fuzz/regressions/HARNESS/) is replayed by the normal test
 * suite, under the sanitizers in the sanitizer build. */
#define _DEFAULT_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "fuzz_common.h"

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return 1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(n > 0 ? (size_t)n : 1);
    int ok = buf && n >= 0 && fread(buf, 1, (size_t)n, f) == (size_t)n;
    fclose(f);
    if (ok) LLVMFuzzerTestOneInput(buf, (size_t)n);
    free(buf);
    return !ok;
}

static int replay(const char *path, int *count)
{
    struct stat st;
    if (stat(path, &st) != 0) return 1;
    if (!S_ISDIR(st.st_mode)) {
        (*count)++;
        return replay_file(path);
    }
    DIR *d = opendir(path);
    if (!d) return 1;
    int bad = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char child[4096];
        snprintf(child, sizeof child, "%s/%s", path, e->d_name);
        bad |= replay(child, count);
    }
    closedir(d);
    return bad;
}

int main(int argc, char **argv)
{
    int count = 0, bad = 0;
    for (int i = 1; i < argc; i++) bad |= replay(argv[i], &count);
    printf("replayed %d inputs%s\n", count, bad ? "; some could not be read" : "");
    if (count == 0) printf("no inputs: the seeds were not made\n");
    return bad || count == 0;
}
