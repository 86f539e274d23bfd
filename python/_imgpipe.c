/* imgpipe._imgpipe: the imgpipe C API (core/include/imgpipe/imgpipe.h) for Python, written
 * against CPython's stable ABI (Py_LIMITED_API 3.11: one abi3 module for every Python from 3.11).
 * __init__.py is the public face; ext/ holds the arrays, the pipeline type and the folder run. */
#include "ext/ext.h"

ext_state *ext_state_of_type(PyTypeObject *type)
{
    ext_state *st = PyType_GetModuleState(type);
    if (st && !st->np_empty)
        PyErr_SetString(PyExc_RuntimeError, "imgpipe._imgpipe is used before imgpipe set it up");
    return st && st->np_empty ? st : NULL;
}

static ext_state *state_of(PyObject *module)
{
    return PyModule_GetState(module);
}

static void replace(PyObject **slot, PyObject *value)
{
    PyObject *old = *slot;
    *slot = Py_NewRef(value);
    Py_XDECREF(old);
}

static PyObject *setup(PyObject *module, PyObject *args)
{
    ext_state *st = state_of(module);
    PyObject *pipeline_error, *error, *np_empty, *np_asarray, *np_ndarray, *default_stream;
    if (!PyArg_ParseTuple(args, "OOOOOO:_setup", &pipeline_error, &error, &np_empty, &np_asarray, &np_ndarray,
                          &default_stream))
        return NULL;
    replace(&st->pipeline_error, pipeline_error);
    replace(&st->error, error);
    replace(&st->np_empty, np_empty);
    replace(&st->np_asarray, np_asarray);
    replace(&st->np_ndarray, np_ndarray);
    replace(&st->default_stream, default_stream);
    Py_RETURN_NONE;
}

static PyObject *version(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    return PyUnicode_FromString(imgpipe_version());
}

static PyObject *version_number(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    return PyLong_FromLong(imgpipe_version_number());
}

static PyObject *gpu_available(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    return PyBool_FromLong(imgpipe_gpu_available());
}

static PyObject *set_plugin_path(PyObject *module, PyObject *arg)
{
    PyObject *encoded = NULL;
    imgpipe_error err = {0};
    int code;
    if (arg != Py_None && !PyUnicode_FSConverter(arg, &encoded))
        return NULL;
    code = imgpipe_set_plugin_path(encoded ? PyBytes_AsString(encoded) : NULL, &err);
    Py_XDECREF(encoded);
    if (code != IMGPIPE_OK)
        return ext_raise(state_of(module), code, &err);
    Py_RETURN_NONE;
}

static PyObject *stage_tuple(const imgpipe_stage_info *info)
{
    PyObject *params = PyList_New(info->n_params);
    if (!params)
        return NULL;
    for (int i = 0; i < info->n_params; i++) {
        const imgpipe_param_info *p = &info->params[i];
        PyObject *item = Py_BuildValue("(sssss)", p->name, p->type, p->default_value ? p->default_value : "",
                                       p->choices ? p->choices : "", p->help ? p->help : "");
        if (!item || PyList_SetItem(params, i, item) < 0) {
            Py_DECREF(params);
            return NULL;
        }
    }
    return Py_BuildValue("(ssON)", info->name, info->summary ? info->summary : "",
                         info->has_gpu ? Py_True : Py_False, params);
}

static PyObject *stage_list(PyObject *module, PyObject *unused)
{
    ext_state *st = state_of(module);
    imgpipe_error err = {0};
    imgpipe_stage_info info;
    int n = imgpipe_stage_count(&err);
    PyObject *list;
    (void)unused;
    if (n < 0)
        return ext_raise(st, err.code ? err.code : IMGPIPE_EFAILED, &err);
    list = PyList_New(0);
    for (int i = 0; list && i < n; i++) {
        int code = imgpipe_stage_at(i, &info, &err);
        PyObject *item = code == IMGPIPE_OK ? stage_tuple(&info) : ext_raise(st, code, &err);
        if (!item || PyList_Append(list, item) < 0)
            Py_CLEAR(list);
        Py_XDECREF(item);
    }
    return list;
}

static PyObject *stage_find(PyObject *module, PyObject *arg)
{
    imgpipe_error err = {0};
    imgpipe_stage_info info;
    const char *name = PyUnicode_Check(arg) ? PyUnicode_AsUTF8AndSize(arg, NULL) : NULL;
    int code;
    if (!name) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "a stage name is a str, not %R", Py_TYPE(arg));
        return NULL;
    }
    code = imgpipe_stage_find(name, &info, &err);
    if (code != IMGPIPE_OK)
        return ext_raise(state_of(module), code, &err);
    return stage_tuple(&info);
}

static PyMethodDef functions[] = {
    {"_setup", setup, METH_VARARGS, "_setup(PipelineError, Error, numpy.empty, numpy.asarray, default_stream)"},
    {"version", version, METH_NOARGS, "The library's version, '0.1.0'."},
    {"version_number", version_number, METH_NOARGS, "The library's IMGPIPE_VERSION."},
    {"gpu_available", gpu_available, METH_NOARGS, "Whether a GPU can run stages here."},
    {"set_plugin_path", set_plugin_path, METH_O, "Folders searched for plugins first (':'-separated)."},
    {"stages", stage_list, METH_NOARGS, "[(name, summary, has_gpu, [(name, type, default, choices, help)])]"},
    {"stage", stage_find, METH_O, "(name, summary, has_gpu, [(name, type, default, choices, help)])"},
    {NULL, NULL, 0, NULL}};

static int add_type(PyObject *module, PyTypeObject *type, PyTypeObject **slot)
{
    *slot = type;
    return type && PyModule_AddType(module, type) == 0 ? 0 : -1;
}

static int module_exec(PyObject *module)
{
    ext_state *st = state_of(module);
    if (add_type(module, pipeline_type_create(module), &st->pipeline_type) < 0 ||
        add_type(module, device_array_type_create(module), &st->device_array_type) < 0)
        return -1;
    return PyModule_AddIntConstant(module, "VERSION", IMGPIPE_VERSION);
}

static int module_traverse(PyObject *module, visitproc visit, void *arg)
{
    ext_state *st = state_of(module);
    Py_VISIT(st->pipeline_error);
    Py_VISIT(st->error);
    Py_VISIT(st->np_empty);
    Py_VISIT(st->np_asarray);
    Py_VISIT(st->np_ndarray);
    Py_VISIT(st->default_stream);
    Py_VISIT(st->pipeline_type);
    Py_VISIT(st->device_array_type);
    return 0;
}

static int module_clear(PyObject *module)
{
    ext_state *st = state_of(module);
    Py_CLEAR(st->pipeline_error);
    Py_CLEAR(st->error);
    Py_CLEAR(st->np_empty);
    Py_CLEAR(st->np_asarray);
    Py_CLEAR(st->np_ndarray);
    Py_CLEAR(st->default_stream);
    Py_CLEAR(st->pipeline_type);
    Py_CLEAR(st->device_array_type);
    return 0;
}

static void module_free(void *module)
{
    module_clear(module);
}

static PyModuleDef_Slot slots[] = {{Py_mod_exec, module_exec}, {0, NULL}};

static struct PyModuleDef definition = {
    PyModuleDef_HEAD_INIT, "imgpipe._imgpipe", "The imgpipe C API for Python (use the imgpipe package).",
    sizeof(ext_state), functions, slots, module_traverse, module_clear, module_free};

PyMODINIT_FUNC PyInit__imgpipe(void)
{
    return PyModuleDef_Init(&definition);
}
