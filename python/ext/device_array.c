/* imgpipe.DeviceArray: a result in CUDA device memory, allocated from the library's pool and
 * given back to it when the last owner lets go (the object, or a DLPack consumer's deleter). Made
 * on a default stream, it goes back in that stream's order, as CuPy's and PyTorch's allocators
 * order their own frees; made on the caller's own stream (which may be destroyed before the
 * result), or exported to another stream, the free waits for the device instead. It exposes
 * __cuda_array_interface__ (v3), __dlpack__ and __dlpack_device__. */
#include "arrays.h"
#include <stdlib.h>
#include <string.h>

typedef struct {
    PyObject_HEAD
    imgpipe_image img;
    int ndim;
    void *stream;               /* the stream the result was made on */
    int other_streams;          /* __dlpack__ ordered another stream after it: the free waits */
} device_array;

/* One allocation: the managed tensor first (the deleter frees it by its own address), then the
 * shape and strides it points to. */
typedef struct {
    DLManagedTensor managed;
    int64_t shape[3], strides[3];
} legacy_block;

typedef struct {
    DLManagedTensorVersioned managed;
    int64_t shape[3], strides[3];
} versioned_block;

PyObject *device_array_wrap(ext_state *st, const imgpipe_image *img, int ndim, void *stream)
{
    allocfunc alloc = (allocfunc)PyType_GetSlot(st->device_array_type, Py_tp_alloc);
    device_array *self = (device_array *)alloc(st->device_array_type, 0);
    if (!self) {
        imgpipe_image copy = *img;
        imgpipe_image_free(&copy);
        return NULL;
    }
    self->img = *img;
    self->ndim = ndim;
    self->stream = stream;
    return (PyObject *)self;
}

/* NULL and cudaStreamLegacy: one stream for the process, alive as long as it is (the per-thread
 * default stream is another stream on each thread, so it does not count). */
static int default_stream(void *stream)
{
    return (uintptr_t)stream <= 1;
}

static void give_back(device_array *a)
{
    if (!a->other_streams && default_stream(a->stream) && imgpipe_image_free_async(&a->img, a->stream, NULL) == IMGPIPE_OK)
        return;
    Py_BEGIN_ALLOW_THREADS   /* the synchronous free waits for the device */
    imgpipe_image_free(&a->img);
    Py_END_ALLOW_THREADS
}

static void device_array_dealloc(PyObject *obj)
{
    PyTypeObject *type = Py_TYPE(obj);
    freefunc free_fn = (freefunc)PyType_GetSlot(type, Py_tp_free);
    give_back((device_array *)obj);
    free_fn(obj);
    Py_DECREF(type);
}

static void fill_dims(const device_array *a, int64_t *shape, int64_t *strides)
{
    shape[0] = a->img.height;
    shape[1] = a->img.width;
    shape[2] = a->img.channels;
    int64_t row = a->img.stride ? (int64_t)(a->img.stride / ext_sample_size(a->img.sample))
                                : (int64_t)a->img.width * a->img.channels;
    strides[0] = row;
    strides[1] = a->ndim == 3 ? a->img.channels : 1;
    strides[2] = 1;
}

static void fill_tensor(device_array *a, DLTensor *t, int64_t *shape, int64_t *strides)
{
    static const uint8_t codes[] = {[IMGPIPE_U8] = DL_UINT, [IMGPIPE_U16] = DL_UINT, [IMGPIPE_F32] = DL_FLOAT};
    fill_dims(a, shape, strides);
    t->data = a->img.data;
    t->device.device_type = DL_CUDA;
    t->device.device_id = a->img.device;
    t->ndim = a->ndim;
    t->dtype.code = codes[a->img.sample];
    t->dtype.bits = (uint8_t)(8 * ext_sample_size(a->img.sample));
    t->dtype.lanes = 1;
    t->shape = shape;
    t->strides = strides;
    t->byte_offset = 0;
}

/* The deleters may run on any thread, with or without the GIL. */
static void release_owner(void *owner, void *block)
{
    PyGILState_STATE gil = PyGILState_Ensure();
    Py_XDECREF((PyObject *)owner);
    PyGILState_Release(gil);
    free(block);
}

static void legacy_deleter(DLManagedTensor *m)
{
    release_owner(m->manager_ctx, m);
}

static void versioned_deleter(DLManagedTensorVersioned *m)
{
    release_owner(m->manager_ctx, m);
}

/* A capsule never consumed still owns its tensor. */
static void legacy_capsule_destructor(PyObject *capsule)
{
    if (PyCapsule_IsValid(capsule, "dltensor")) {
        DLManagedTensor *m = PyCapsule_GetPointer(capsule, "dltensor");
        m->deleter(m);
    }
}

static void versioned_capsule_destructor(PyObject *capsule)
{
    if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
        DLManagedTensorVersioned *m = PyCapsule_GetPointer(capsule, "dltensor_versioned");
        m->deleter(m);
    }
}

static PyObject *export_legacy(device_array *self)
{
    legacy_block *b = calloc(1, sizeof *b);
    PyObject *capsule;
    if (!b)
        return PyErr_NoMemory();
    fill_tensor(self, &b->managed.dl_tensor, b->shape, b->strides);
    b->managed.manager_ctx = Py_NewRef((PyObject *)self);
    b->managed.deleter = legacy_deleter;
    capsule = PyCapsule_New(&b->managed, "dltensor", legacy_capsule_destructor);
    if (!capsule)
        legacy_deleter(&b->managed);
    return capsule;
}

static PyObject *export_versioned(device_array *self)
{
    versioned_block *b = calloc(1, sizeof *b);
    PyObject *capsule;
    if (!b)
        return PyErr_NoMemory();
    b->managed.version.major = 1;
    b->managed.version.minor = 0;
    fill_tensor(self, &b->managed.dl_tensor, b->shape, b->strides);
    b->managed.manager_ctx = Py_NewRef((PyObject *)self);
    b->managed.deleter = versioned_deleter;
    capsule = PyCapsule_New(&b->managed, "dltensor_versioned", versioned_capsule_destructor);
    if (!capsule)
        versioned_deleter(&b->managed);
    return capsule;
}

static void remember_consumer(device_array *self, void *consumer)
{
    uintptr_t c = (uintptr_t)consumer, own = (uintptr_t)self->stream;
    if (c != own && !(c <= 1 && own <= 1))
        self->other_streams = 1;
}

/* The consumer's stream waits for the one the result was made on; None is the legacy default,
 * -1 asks for no ordering. */
static int order_for_consumer(device_array *self, PyObject *stream)
{
    void *consumer = (void *)1;
    char err[256];
    if (stream != Py_None) {
        long long value = PyLong_AsLongLong(stream);
        if (value == -1 && PyErr_Occurred())
            return -1;
        if (value == -1)
            return 0;
        consumer = PyLong_AsVoidPtr(stream);
        if (!consumer && PyErr_Occurred())
            return -1;
    }
    if (cuda_stream_wait(consumer, self->stream, self->img.device, err, sizeof err) < 0) {
        PyErr_Format(PyExc_BufferError, "imgpipe result: %s", err);
        return -1;
    }
    remember_consumer(self, consumer);
    return 0;
}

static int wants_versioned(PyObject *max_version)
{
    PyObject *major;
    long value;
    if (max_version == Py_None)
        return 0;
    major = PySequence_GetItem(max_version, 0);
    if (!major)
        return -1;
    value = PyLong_AsLong(major);
    Py_DECREF(major);
    if (value == -1 && PyErr_Occurred())
        return -1;
    return value >= 1;
}

static int check_device(device_array *self, PyObject *dl_device)
{
    int type, id;
    if (dl_device == Py_None)
        return 0;
    if (!PyArg_ParseTuple(dl_device, "ii", &type, &id))
        return -1;
    if (type != DL_CUDA || id != self->img.device) {
        PyErr_Format(PyExc_BufferError, "imgpipe results stay on CUDA device %d (asked for device type %d, %d)",
                     self->img.device, type, id);
        return -1;
    }
    return 0;
}

static PyObject *dlpack(PyObject *obj, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"stream", "max_version", "dl_device", "copy", NULL};
    device_array *self = (device_array *)obj;
    PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
    int versioned;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:__dlpack__", names, &stream, &max_version,
                                     &dl_device, &copy))
        return NULL;
    if (copy == Py_True) {
        PyErr_SetString(PyExc_BufferError, "imgpipe results are exported without a copy (copy=True asked)");
        return NULL;
    }
    versioned = wants_versioned(max_version);
    if (versioned < 0 || check_device(self, dl_device) < 0 || order_for_consumer(self, stream) < 0)
        return NULL;
    return versioned ? export_versioned(self) : export_legacy(self);
}

static PyObject *dlpack_device(PyObject *obj, PyObject *unused)
{
    (void)unused;
    return Py_BuildValue("(ii)", DL_CUDA, ((device_array *)obj)->img.device);
}

static PyObject *shape_tuple(const device_array *a)
{
    if (a->ndim == 2)
        return Py_BuildValue("(ii)", a->img.height, a->img.width);
    return Py_BuildValue("(iii)", a->img.height, a->img.width, a->img.channels);
}

static PyObject *strides_tuple(const device_array *a)
{
    int64_t shape[3], strides[3];
    Py_ssize_t sample = (Py_ssize_t)ext_sample_size(a->img.sample);
    if (!a->img.stride)
        Py_RETURN_NONE;
    fill_dims(a, shape, strides);
    if (a->ndim == 2)
        return Py_BuildValue("(nn)", (Py_ssize_t)strides[0] * sample, (Py_ssize_t)strides[1] * sample);
    return Py_BuildValue("(nnn)", (Py_ssize_t)strides[0] * sample, (Py_ssize_t)strides[1] * sample, sample);
}

static PyObject *cuda_array_interface(PyObject *obj, void *closure)
{
    static const char *typestrs[] = {[IMGPIPE_U8] = "|u1", [IMGPIPE_U16] = "<u2", [IMGPIPE_F32] = "<f4"};
    device_array *self = (device_array *)obj;
    (void)closure;
    return Py_BuildValue("{s:N,s:s,s:(NO),s:N,s:i,s:N}", "shape", shape_tuple(self), "typestr",
                         typestrs[self->img.sample], "data", PyLong_FromVoidPtr(self->img.data), Py_False,
                         "strides", strides_tuple(self), "version", 3, "stream",
                         PyLong_FromVoidPtr(self->stream ? self->stream : (void *)1));
}

static PyObject *get_shape(PyObject *obj, void *closure)
{
    (void)closure;
    return shape_tuple((device_array *)obj);
}

static PyObject *get_dtype(PyObject *obj, void *closure)
{
    (void)closure;
    return PyUnicode_FromString(ext_dtype_name(((device_array *)obj)->img.sample));
}

static PyObject *get_device(PyObject *obj, void *closure)
{
    (void)closure;
    return PyLong_FromLong(((device_array *)obj)->img.device);
}

static PyObject *get_ptr(PyObject *obj, void *closure)
{
    (void)closure;
    return PyLong_FromVoidPtr(((device_array *)obj)->img.data);
}

static PyObject *device_array_repr(PyObject *obj)
{
    device_array *self = (device_array *)obj;
    PyObject *shape = shape_tuple(self), *text;
    if (!shape)
        return NULL;
    text = PyUnicode_FromFormat("imgpipe.DeviceArray(shape=%R, dtype=%s, device=cuda:%d)", shape,
                                ext_dtype_name(self->img.sample), self->img.device);
    Py_DECREF(shape);
    return text;
}

static PyMethodDef methods[] = {
    {"__dlpack__", (PyCFunction)(void (*)(void))dlpack, METH_VARARGS | METH_KEYWORDS,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None): a DLPack capsule of the "
     "result, without a copy; the consumer's stream is ordered after the one the result was made on."},
    {"__dlpack_device__", dlpack_device, METH_NOARGS, "(kDLCUDA, device)"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef getset[] = {
    {"__cuda_array_interface__", cuda_array_interface, NULL, "the CUDA array interface, version 3", NULL},
    {"shape", get_shape, NULL, "(height, width) or (height, width, channels)", NULL},
    {"dtype", get_dtype, NULL, "'uint8', 'uint16' or 'float32'", NULL},
    {"device", get_device, NULL, "the CUDA device number", NULL},
    {"ptr", get_ptr, NULL, "the device pointer, as an int", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject *device_array_type_create(PyObject *module)
{
    PyType_Slot slots[] = {
        {Py_tp_dealloc, device_array_dealloc},
        {Py_tp_repr, device_array_repr},
        {Py_tp_methods, methods},
        {Py_tp_getset, getset},
        {Py_tp_doc, "A pipeline's result in CUDA device memory. cupy.asarray(r), cupy.from_dlpack(r) and "
                    "torch.from_dlpack(r) take it without a copy; its memory is freed when the last of "
                    "them lets go."},
        {0, NULL}};
    /* only the library makes them: an empty one would export no memory at all */
    PyType_Spec spec = {"imgpipe.DeviceArray", sizeof(device_array), 0,
                        Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, slots};
    return (PyTypeObject *)PyType_FromModuleAndSpec(module, &spec, NULL);
}
