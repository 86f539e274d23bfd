/* Keyword options (a dict from __init__.py) to imgpipe_run_options, and the sample types. */
#include "ext.h"
#include <string.h>

const char *ext_dtype_name(imgpipe_sample s)
{
    return s == IMGPIPE_U8 ? "uint8" : s == IMGPIPE_U16 ? "uint16" : "float32";
}

size_t ext_sample_size(imgpipe_sample s)
{
    return s == IMGPIPE_U8 ? 1 : s == IMGPIPE_U16 ? 2 : 4;
}

int ext_result_ndim(int in_ndim, int in_channels, int out_channels)
{
    return out_channels == 1 && !(in_ndim == 3 && in_channels == 1) ? 2 : 3;
}

int ext_device_of(PyObject *name, imgpipe_device *device)
{
    const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8AndSize(name, NULL) : NULL;
    if (s && strcmp(s, "auto") == 0)
        *device = IMGPIPE_DEVICE_AUTO;
    else if (s && strcmp(s, "cpu") == 0)
        *device = IMGPIPE_DEVICE_CPU;
    else if (s && strcmp(s, "gpu") == 0)
        *device = IMGPIPE_DEVICE_GPU;
    else {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "device must be 'auto', 'cpu' or 'gpu', not %R", name);
        return -1;
    }
    return 0;
}

static int int_option(PyObject *dict, const char *key, int *out)
{
    PyObject *value = PyDict_GetItemString(dict, key);
    long v;
    if (!value || value == Py_None)
        return 0;
    v = PyLong_AsLong(value);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v < 0 || v > 1 << 30) {
        PyErr_Format(PyExc_ValueError, "%s=%ld is out of range", key, v);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int text_option(PyObject *dict, const char *key, const char **out)
{
    PyObject *value = PyDict_GetItemString(dict, key);
    if (!value || value == Py_None)
        return 0;
    if (!PyUnicode_Check(value)) {
        PyErr_Format(PyExc_TypeError, "%s must be a str, not %R", key, value);
        return -1;
    }
    *out = PyUnicode_AsUTF8AndSize(value, NULL);
    return *out ? 0 : -1;
}

static int memory_option(PyObject *dict, uint64_t *out)
{
    PyObject *value = PyDict_GetItemString(dict, "memory");
    unsigned long long v;
    if (!value || value == Py_None)
        return 0;
    v = PyLong_AsUnsignedLongLong(value);
    if (v == (unsigned long long)-1 && PyErr_Occurred())
        return -1;
    *out = v;
    return 0;
}

int ext_options(PyObject *dict, imgpipe_run_options *o)
{
    PyObject *device;
    int recursive = 0;
    imgpipe_run_options_init(o);
    if (!dict || dict == Py_None)
        return 0;
    device = PyDict_GetItemString(dict, "device");
    if (device && ext_device_of(device, &o->device) < 0)
        return -1;
    if (int_option(dict, "gpu", &o->gpu) < 0 || int_option(dict, "threads", &o->threads) < 0 ||
        int_option(dict, "png_level", &o->png_level) < 0 || int_option(dict, "jpeg_quality", &o->jpeg_quality) < 0 ||
        int_option(dict, "jobs", &o->jobs) < 0 || int_option(dict, "recursive", &recursive) < 0 ||
        text_option(dict, "tiff_compression", &o->tiff_compression) < 0 ||
        text_option(dict, "output_format", &o->output_format) < 0 || memory_option(dict, &o->memory) < 0)
        return -1;
    o->recursive = recursive != 0;
    return 0;
}
