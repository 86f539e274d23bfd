/* The named convolution kernels, in the order of convolve's `kernel` choices: the plugin
 * (plugins/convolve) takes them from here, and so does run-time fusion (core/src/exec/fuse_window.c),
 * which bakes the weights into the fused kernel's source. */
#ifndef IPK_CONV_NAMED_H
#define IPK_CONV_NAMED_H

#define IPK_CONV_NAMED_CHOICES "box3|gaussian3|gaussian5|sharpen|laplacian|sobel-x|sobel-y|emboss"

typedef struct { int side; double w[25]; } ipk_named_kernel;

static const ipk_named_kernel ipk_conv_named[] = {
    { 3, { 1, 1, 1, 1, 1, 1, 1, 1, 1 } },                          /* box3 */
    { 3, { 1, 2, 1, 2, 4, 2, 1, 2, 1 } },                          /* gaussian3 */
    { 5, { 1, 4, 6, 4, 1, 4, 16, 24, 16, 4, 6, 24, 36, 24, 6,
           4, 16, 24, 16, 4, 1, 4, 6, 4, 1 } },                    /* gaussian5 */
    { 3, { 0, -1, 0, -1, 5, -1, 0, -1, 0 } },                      /* sharpen */
    { 3, { 0, 1, 0, 1, -4, 1, 0, 1, 0 } },                         /* laplacian */
    { 3, { -1, 0, 1, -2, 0, 2, -1, 0, 1 } },                       /* sobel-x */
    { 3, { -1, -2, -1, 0, 0, 0, 1, 2, 1 } },                       /* sobel-y */
    { 3, { -2, -1, 0, -1, 1, 1, 0, 1, 2 } },                       /* emboss */
};
#define IPK_CONV_N_NAMED ((int)(sizeof ipk_conv_named / sizeof *ipk_conv_named))
#endif
