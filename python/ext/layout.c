/* Array shapes, strides and sample types, whatever memory the array lies in. */
#include "arrays.h"
#include <limits.h>
#include <stdint.h>
#include <string.h>

static PyObject *shape_text(const array_layout *a)
{
    if (a->ndim == 2)
        return PyUnicode_FromFormat("(%zd, %zd)", a->shape[0], a->shape[1]);
    return PyUnicode_FromFormat("(%zd, %zd, %zd)", a->shape[0], a->shape[1], a->shape[2]);
}

int layout_check(const array_layout *a, imgpipe_image *img)
{
    int channels = a->ndim == 3 ? (int)a->shape[2] : 1;
    if (a->ndim != 2 && a->ndim != 3) {
        PyErr_Format(PyExc_ValueError, "imgpipe takes HxW or HxWxC arrays, not a %d-D array", a->ndim);
        return -1;
    }
    if (a->ndim == 3 && (a->shape[2] < 1 || a->shape[2] > 4)) {
        PyObject *shape = shape_text(a);
        PyErr_Format(PyExc_ValueError, "an image has 1 to 4 channels, this array has %zd (shape %U); "
                     "a CxHxW array: pass a.transpose(1, 2, 0)", a->shape[2], shape);
        Py_XDECREF(shape);
        return -1;
    }
    if (a->shape[0] < 1 || a->shape[1] < 1 || a->shape[0] > INT_MAX || a->shape[1] > INT_MAX) {
        PyObject *shape = shape_text(a);
        PyErr_Format(PyExc_ValueError, "the array's shape %U is not an image's (1 to %d rows and columns)",
                     shape, INT_MAX);
        Py_XDECREF(shape);
        return -1;
    }
    img->height = (int)a->shape[0];
    img->width = (int)a->shape[1];
    img->channels = channels;
    return 0;
}

/* A dimension of one element may carry any stride. */
static int stride_is(const array_layout *a, int dim, Py_ssize_t want)
{
    return a->shape[dim] == 1 || a->strides[dim] == want;
}

int layout_fits(const array_layout *a, const void *data, imgpipe_image *img)
{
    size_t sample = ext_sample_size(img->sample);
    Py_ssize_t pixel = (Py_ssize_t)(sample * (size_t)img->channels);
    Py_ssize_t row = pixel * img->width;
    if ((uintptr_t)data % sample != 0)
        return 0;
    if (a->ndim == 3 && !stride_is(a, 2, (Py_ssize_t)sample))
        return 0;
    if (!stride_is(a, 1, pixel))
        return 0;
    if (img->height == 1 || a->strides[0] == row) {
        img->stride = 0;
        return 1;
    }
    if (a->strides[0] < row || a->strides[0] % (Py_ssize_t)sample != 0)
        return 0;
    img->stride = (size_t)a->strides[0];
    return 1;
}

static const char *numpy_name_of_format(char code)
{
    switch (code) {
    case 'b': return "int8";
    case 'h': return "int16";
    case 'i': return "int32";
    case 'l': case 'q': return "int64";
    case 'I': return "uint32";
    case 'L': case 'Q': return "uint64";
    case 'e': return "float16";
    case 'd': return "float64";
    case 'g': return "longdouble";
    case '?': return "bool";
    case 'Z': return "complex";
    default: return NULL;
    }
}

static int little_endian(void)
{
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 1;
}

static int unsupported_dtype(const char *what)
{
    PyErr_Format(PyExc_TypeError, "imgpipe takes uint8, uint16 or float32 arrays, not %s", what);
    return -1;
}

int sample_of_format(const char *format, Py_ssize_t itemsize, imgpipe_sample *s)
{
    const char *f = format ? format : "B";
    const char *name;
    int swapped = 0;
    if (*f == '@' || *f == '=' || *f == '<' || *f == '>' || *f == '!') {
        swapped = (*f == '<' && !little_endian()) || ((*f == '>' || *f == '!') && little_endian());
        f++;
    }
    if (f[0] != '\0' && f[1] == '\0') {
        imgpipe_sample found = f[0] == 'B' ? IMGPIPE_U8 : f[0] == 'H' ? IMGPIPE_U16 : f[0] == 'f' ? IMGPIPE_F32 : 0;
        if (found && (size_t)itemsize == ext_sample_size(found)) {
            if (swapped && found != IMGPIPE_U8) {
                PyErr_Format(PyExc_TypeError, "the array's %s samples are byte-swapped (format '%s'): "
                             "pass a.astype(a.dtype.newbyteorder('='))", ext_dtype_name(found), format);
                return -1;
            }
            *s = found;
            return 0;
        }
    }
    name = numpy_name_of_format(f[0]);
    if (name)
        return unsupported_dtype(name);
    PyErr_Format(PyExc_TypeError, "imgpipe takes uint8, uint16 or float32 arrays, not the buffer format '%s'",
                 format ? format : "");
    return -1;
}

int sample_of_typestr(const char *t, imgpipe_sample *s)
{
    static const struct { const char *kind; imgpipe_sample sample; } known[] = {
        {"u1", IMGPIPE_U8}, {"u2", IMGPIPE_U16}, {"f4", IMGPIPE_F32}};
    int swapped = (t[0] == '<' && !little_endian()) || (t[0] == '>' && little_endian());
    if (t[0] != '\0' && strchr("<>|=", t[0])) {
        for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
            if (strcmp(t + 1, known[i].kind) == 0 && (!swapped || known[i].sample == IMGPIPE_U8)) {
                *s = known[i].sample;
                return 0;
            }
        }
    }
    PyErr_Format(PyExc_TypeError, "imgpipe takes uint8, uint16 or float32 arrays, not typestr '%s'", t);
    return -1;
}

int sample_of_dltype(DLDataType t, imgpipe_sample *s)
{
    if (t.lanes == 1 && t.code == DL_UINT && (t.bits == 8 || t.bits == 16)) {
        *s = t.bits == 8 ? IMGPIPE_U8 : IMGPIPE_U16;
        return 0;
    }
    if (t.lanes == 1 && t.code == DL_FLOAT && t.bits == 32) {
        *s = IMGPIPE_F32;
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "imgpipe takes uint8, uint16 or float32 arrays, not DLPack type "
                 "(code %d, %d bits, %d lanes)", t.code, t.bits, t.lanes);
    return -1;
}
