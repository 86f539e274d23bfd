/* Host arrays through the buffer protocol: taken as they are when the API can read them in
 * place, else copied to a packed image (transposes, Fortran order, negative strides). */
#include "arrays.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int host_input_open(host_input *in, PyObject *obj)
{
    memset(in, 0, sizeof *in);
    if (PyObject_GetBuffer(obj, &in->view, PyBUF_RECORDS_RO) < 0)
        return -1;
    in->held = 1;
    in->layout.ndim = in->view.ndim;
    if (in->view.ndim == 2 || in->view.ndim == 3) {
        for (int d = 0; d < in->view.ndim; d++) {
            in->layout.shape[d] = in->view.shape[d];
            in->layout.strides[d] = in->view.strides[d];
        }
    }
    in->first = in->view.buf;
    in->img.memory = IMGPIPE_HOST;
    if (sample_of_format(in->view.format, in->view.itemsize, &in->img.sample) < 0 ||
        layout_check(&in->layout, &in->img) < 0) {
        host_input_close(in);
        return -1;
    }
    if (layout_fits(&in->layout, in->first, &in->img))
        in->img.data = (void *)in->first;
    return 0;
}

/* Copies element by element; a sample's size known at compile time makes each copy a move. */
#define GATHER(T)                                                                              \
    do {                                                                                       \
        T *out = dst;                                                                          \
        for (Py_ssize_t y = 0; y < h; y++)                                                     \
            for (Py_ssize_t x = 0; x < w; x++)                                                 \
                for (Py_ssize_t c = 0; c < ch; c++)                                            \
                    memcpy(out++, src + y * s[0] + x * s[1] + c * s[2], sizeof(T));            \
    } while (0)

static void gather(void *dst, const char *src, Py_ssize_t h, Py_ssize_t w, Py_ssize_t ch,
                   const Py_ssize_t *s, size_t sample)
{
    if (sample == 1)
        GATHER(uint8_t);
    else if (sample == 2)
        GATHER(uint16_t);
    else
        GATHER(uint32_t);
}

int host_input_pack(host_input *in)
{
    const array_layout *a = &in->layout;
    size_t sample = ext_sample_size(in->img.sample);
    size_t row = (size_t)in->img.width * (size_t)in->img.channels * sample;   /* width < 2^31: no overflow */
    Py_ssize_t strides[3] = {a->strides[0], a->strides[1], a->ndim == 3 ? a->strides[2] : 0};
    if (in->img.data)
        return IMGPIPE_OK;
    if (row != 0 && (size_t)in->img.height > SIZE_MAX / row)
        return IMGPIPE_ENOMEM;
    in->packed = malloc(row * (size_t)in->img.height);
    if (!in->packed)
        return IMGPIPE_ENOMEM;
    if (a->ndim == 2 || a->shape[2] == 1 || strides[2] == (Py_ssize_t)sample) {
        /* pixels in order along a row (rows negative or apart): a row at a time when they touch */
        Py_ssize_t pixel = (Py_ssize_t)(sample * (size_t)in->img.channels);
        if (in->img.width == 1 || strides[1] == pixel) {
            for (int y = 0; y < in->img.height; y++)
                memcpy((char *)in->packed + (size_t)y * row, in->first + y * strides[0], row);
            in->img.data = in->packed;
            in->img.stride = 0;
            return IMGPIPE_OK;
        }
    }
    gather(in->packed, in->first, in->img.height, in->img.width, in->img.channels, strides, sample);
    in->img.data = in->packed;
    in->img.stride = 0;
    return IMGPIPE_OK;
}

void host_input_close(host_input *in)
{
    if (in->held)
        PyBuffer_Release(&in->view);
    in->held = 0;
    free(in->packed);
    in->packed = NULL;
}
