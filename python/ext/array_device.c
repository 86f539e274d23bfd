/* Device arrays without a copy: __cuda_array_interface__ (v2, v3) or DLPack on a CUDA device.
 * The run goes on the caller's stream; the array's own stream is waited for first. */
#include "arrays.h"
#include <string.h>

/* An int stream handle from None or an int; -1 with an exception. */
static int stream_of(PyObject *value, void **stream, int *given)
{
    *given = 0;
    if (!value || value == Py_None)
        return 0;
    *stream = PyLong_AsVoidPtr(value);
    if (*stream == NULL && PyErr_Occurred())
        return -1;
    *given = 1;
    return 0;
}

/* The stream the run goes on: the stream= argument, else the array's library's current stream. */
static int run_stream(ext_state *st, PyObject *obj, PyObject *stream, void **out, int *given)
{
    PyObject *current;
    int status;
    if (stream_of(stream, out, given) < 0)
        return -1;
    if (*given)
        return 0;
    current = PyObject_CallFunctionObjArgs(st->default_stream, obj, NULL);
    if (!current)
        return -1;
    status = stream_of(current, out, given);
    Py_DECREF(current);
    return status;
}

static int tuple_of_ssize(PyObject *seq, Py_ssize_t *out, Py_ssize_t n, const char *what)
{
    if (!PyTuple_Check(seq) || PyTuple_Size(seq) != n) {
        PyErr_Format(PyExc_ValueError, "__cuda_array_interface__: %s does not match the shape", what);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        out[i] = PyLong_AsSsize_t(PyTuple_GetItem(seq, i));
        if (out[i] == -1 && PyErr_Occurred())
            return -1;
    }
    return 0;
}

/* shape, typestr, strides: the layout and sample type. */
static int cai_layout(PyObject *cai, array_layout *a, imgpipe_image *img)
{
    PyObject *shape = PyDict_GetItemString(cai, "shape");
    PyObject *typestr = PyDict_GetItemString(cai, "typestr");
    PyObject *strides = PyDict_GetItemString(cai, "strides");
    const char *t;
    if (!shape || !PyTuple_Check(shape) || !typestr || !PyUnicode_Check(typestr)) {
        PyErr_SetString(PyExc_ValueError, "__cuda_array_interface__ has no shape or typestr");
        return -1;
    }
    t = PyUnicode_AsUTF8AndSize(typestr, NULL);
    if (!t || sample_of_typestr(t, &img->sample) < 0)
        return -1;
    a->ndim = (int)PyTuple_Size(shape);
    if (a->ndim != 2 && a->ndim != 3)
        return layout_check(a, img);
    if (tuple_of_ssize(shape, a->shape, a->ndim, "shape") < 0 || layout_check(a, img) < 0)
        return -1;
    if (strides && strides != Py_None)
        return tuple_of_ssize(strides, a->strides, a->ndim, "strides");
    a->strides[a->ndim - 1] = (Py_ssize_t)ext_sample_size(img->sample);
    for (int d = a->ndim - 2; d >= 0; d--)
        a->strides[d] = a->strides[d + 1] * a->shape[d + 1];
    return 0;
}

static int not_packed(const array_layout *a)
{
    PyErr_Format(PyExc_ValueError, "the device array's pixels are not packed (strides %zd, %zd, %zd bytes): "
                 "rows may lie apart, but a row's samples must be contiguous; pass cupy.ascontiguousarray(a) "
                 "or t.contiguous()", a->strides[0], a->strides[1], a->ndim == 3 ? a->strides[2] : 0);
    return -1;
}

static int cai_data(PyObject *cai, void **data)
{
    PyObject *pair = PyDict_GetItemString(cai, "data");
    PyObject *mask = PyDict_GetItemString(cai, "mask");
    if (mask && mask != Py_None) {
        PyErr_SetString(PyExc_ValueError, "masked device arrays are not supported");
        return -1;
    }
    if (!pair || !PyTuple_Check(pair) || PyTuple_Size(pair) < 1) {
        PyErr_SetString(PyExc_ValueError, "__cuda_array_interface__ has no data pointer");
        return -1;
    }
    *data = PyLong_AsVoidPtr(PyTuple_GetItem(pair, 0));
    return *data == NULL && PyErr_Occurred() ? -1 : 0;
}

static int open_cai(ext_state *st, device_input *in, PyObject *obj, PyObject *cai, PyObject *stream)
{
    array_layout a = {0};
    void *array_stream = NULL;
    int given, array_given;
    char err[256];
    if (!PyDict_Check(cai)) {
        PyErr_SetString(PyExc_TypeError, "__cuda_array_interface__ is not a dict");
        return -1;
    }
    if (cai_layout(cai, &a, &in->img) < 0 || cai_data(cai, &in->img.data) < 0)
        return -1;
    if (!layout_fits(&a, in->img.data, &in->img))
        return not_packed(&a);
    in->ndim = a.ndim;
    if (cuda_pointer_device(in->img.data, &in->img.device) < 0)
        in->img.device = 0;
    if (stream_of(PyDict_GetItemString(cai, "stream"), &array_stream, &array_given) < 0 ||
        run_stream(st, obj, stream, &in->stream, &given) < 0)
        return -1;
    if (!given)
        in->stream = array_given ? array_stream : NULL;
    if (array_given && cuda_stream_wait(in->stream, array_stream, in->img.device, err, sizeof err) < 0) {
        PyErr_Format(st->error, "%s", err);
        return -1;
    }
    return 1;
}

static int dl_layout(const DLTensor *t, array_layout *a, imgpipe_image *img)
{
    size_t sample;
    if (sample_of_dltype(t->dtype, &img->sample) < 0)
        return -1;
    sample = ext_sample_size(img->sample);
    a->ndim = t->ndim;
    if (a->ndim != 2 && a->ndim != 3)
        return layout_check(a, img);
    for (int d = 0; d < a->ndim; d++)
        a->shape[d] = (Py_ssize_t)t->shape[d];
    if (layout_check(a, img) < 0)
        return -1;
    for (int d = a->ndim - 1; d >= 0; d--) {
        if (t->strides)
            a->strides[d] = (Py_ssize_t)(t->strides[d] * (int64_t)sample);
        else
            a->strides[d] = d == a->ndim - 1 ? (Py_ssize_t)sample : a->strides[d + 1] * a->shape[d + 1];
    }
    return 0;
}

/* DLPack's stream argument: the run's stream, with 1 for the legacy default (0 is not allowed). */
static PyObject *dlpack_capsule(PyObject *obj, void *stream)
{
    PyObject *method = PyObject_GetAttrString(obj, "__dlpack__");
    PyObject *args, *kwargs, *capsule = NULL;
    if (!method)
        return NULL;
    args = PyTuple_New(0);
    kwargs = Py_BuildValue("{s:N}", "stream", PyLong_FromVoidPtr(stream ? stream : (void *)1));
    if (args && kwargs)
        capsule = PyObject_Call(method, args, kwargs);
    Py_XDECREF(args);
    Py_XDECREF(kwargs);
    Py_DECREF(method);
    return capsule;
}

static int open_dlpack(ext_state *st, device_input *in, PyObject *obj, int device, PyObject *stream)
{
    array_layout a = {0};
    const DLTensor *t;
    int given;
    if (run_stream(st, obj, stream, &in->stream, &given) < 0)
        return -1;
    in->capsule = dlpack_capsule(obj, in->stream);
    if (!in->capsule)
        return -1;
    in->managed = PyCapsule_GetPointer(in->capsule, "dltensor");
    if (!in->managed || PyCapsule_SetName(in->capsule, "used_dltensor") < 0) {
        in->managed = NULL;
        return -1;
    }
    t = &in->managed->dl_tensor;
    in->img.data = (char *)t->data + t->byte_offset;
    in->img.device = t->device.device_id >= 0 ? t->device.device_id : device;
    if (dl_layout(t, &a, &in->img) < 0)
        return -1;
    if (!layout_fits(&a, in->img.data, &in->img))
        return not_packed(&a);
    in->ndim = a.ndim;
    return 1;
}

/* (device_type, device_id) from __dlpack_device__, or 0 when obj has none. */
static int dlpack_device(PyObject *obj, int *type, int *id)
{
    PyObject *dev = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
    if (!dev) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
            return -1;
        PyErr_Clear();
        return 0;
    }
    if (!PyArg_ParseTuple(dev, "ii", type, id)) {
        Py_DECREF(dev);
        return -1;
    }
    Py_DECREF(dev);
    return 1;
}

int device_input_open(ext_state *st, device_input *in, PyObject *obj, PyObject *stream)
{
    PyObject *cai;
    int type = 0, id = 0, found, status;
    memset(in, 0, sizeof *in);
    in->img.memory = IMGPIPE_CUDA_DEVICE;
    cai = PyObject_GetAttrString(obj, "__cuda_array_interface__");
    if (cai) {
        status = open_cai(st, in, obj, cai, stream);
        Py_DECREF(cai);
        return status;
    }
    if (!PyErr_ExceptionMatches(PyExc_AttributeError))
        return -1;
    PyErr_Clear();
    found = dlpack_device(obj, &type, &id);
    if (found <= 0 || (type != DL_CUDA && type != DL_CUDA_MANAGED))
        return found < 0 ? -1 : 0;
    return open_dlpack(st, in, obj, id, stream);
}

void device_input_close(device_input *in)
{
    if (in->managed && in->managed->deleter)
        in->managed->deleter(in->managed);
    in->managed = NULL;
    Py_CLEAR(in->capsule);
}
