/* Writes the test CMYK ICC profile (icc_make.h) for the cross-checks, which Python cannot make:
 * cmyk_profile_write plain|swapped OUT.icc ("swapped": red and blue exchanged, so a conversion
 * through it tells itself apart from the plain formula). */
#include <stdio.h>
#include <string.h>
#include "icc_make.h"

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[1], "plain") && strcmp(argv[1], "swapped"))) {
        fprintf(stderr, "usage: cmyk_profile_write plain|swapped OUT.icc\n");
        return 2;
    }
    size_t len = 0;
    unsigned char *icc = make_cmyk_profile(strcmp(argv[1], "swapped") == 0, &len);
    FILE *out = icc ? fopen(argv[2], "wb") : NULL;
    int ok = out && fwrite(icc, 1, len, out) == len;
    if (out && fclose(out)) ok = 0;
    free(icc);
    return ok ? 0 : 1;
}
