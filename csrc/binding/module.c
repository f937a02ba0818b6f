/*
 * The module msprings._core: its multi-phase initialisation (the NumPy C API imported,
 * System, DivergenceError, INTEGRATORS and the options added, the fork hook registered),
 * its state's life, and the module-level functions (threads, version, vector path).
 */
#include "binding.h"

static struct PyModuleDef core_module;

module_state* mspy_state_of_type(PyTypeObject* type) {
    PyObject* module = PyType_GetModuleByDef(type, &core_module);
    return module == NULL ? NULL : (module_state*)PyModule_GetState(module);
}

static PyObject* core_version(PyObject* module, PyObject* Py_UNUSED(ignored)) {
    (void)module;
    return PyUnicode_FromString(MS_VERSION);
}

static PyObject* core_avx2(PyObject* module, PyObject* Py_UNUSED(ignored)) {
    (void)module;
    return PyBool_FromLong(ms_avx2_supported());
}

static PyObject* core_vector_path(PyObject* module, PyObject* Py_UNUSED(ignored)) {
    (void)module;
    return PyUnicode_FromString(ms_vector_path());
}

static PyObject* core_batch_path(PyObject* module, PyObject* Py_UNUSED(ignored)) {
    (void)module;
    return PyUnicode_FromString(ms_batch_path());
}

static PyObject* core_thread_layer(PyObject* module, PyObject* Py_UNUSED(ignored)) {
    (void)module;
    return PyUnicode_FromString(ms_thread_layer());
}

static PyObject* core_set_num_threads(PyObject* module, PyObject* value) {
    long long number = 0;
    if (mspy_parse_integer(value, "n", 0, MSPY_THREADS_MAX, &number) < 0) return NULL;
    ((module_state*)PyModule_GetState(module))->num_threads = (int)number;
    Py_RETURN_NONE;
}

static PyObject* core_get_num_threads(PyObject* module, PyObject* Py_UNUSED(ignored)) {
    return PyLong_FromLong(ms_resolve_threads(((module_state*)PyModule_GetState(module))->num_threads));
}

static PyObject* core_after_fork(PyObject* module, PyObject* Py_UNUSED(ignored)) {
    ((module_state*)PyModule_GetState(module))->process = ms_process_id();
    Py_RETURN_NONE;
}

static PyMethodDef core_methods[] = {
    {"set_num_threads", core_set_num_threads, METH_O,
     "set_num_threads(n)\n--\n\nWorker threads of every system whose threads is 0 (0: all online cores)."},
    {"get_num_threads", core_get_num_threads, METH_NOARGS,
     "get_num_threads()\n--\n\nWorker threads that a system whose threads is 0 uses."},
    {"_after_fork", core_after_fork, METH_NOARGS,
     "_after_fork()\n--\n\nTakes note of the process id in a forked child (registered with os.register_at_fork)."},
    {"version", core_version, METH_NOARGS, "version()\n--\n\nVersion of the C core."},
    {"avx2", core_avx2, METH_NOARGS,
     "avx2()\n--\n\nTrue if steps use the AVX2 vector path on this processor."},
    {"vector_path", core_vector_path, METH_NOARGS,
     "vector_path()\n--\n\nThe vector path steps use: 'avx2', 'sse2', 'neon' or 'plain' (all give the same bits)."},
    {"batch_path", core_batch_path, METH_NOARGS,
     "batch_path()\n--\n\nThe vector path of the batched ensemble kernel (tiny members of the Euler methods, "
     "one member per lane): 'avx512', 'avx2' or as vector_path(); the environment variable MSPRINGS_BATCH_PATH, "
     "read when an ensemble's step call begins, caps it at 'avx2' or the build's path (all give the same bits)."},
    {"thread_layer", core_thread_layer, METH_NOARGS,
     "thread_layer()\n--\n\nThe threads the core was built on: 'posix' or 'win32'."},
    {NULL, NULL, 0, NULL}};

/* A forked child takes note of its own process id (no-op where os cannot fork). */
static int register_after_fork(PyObject* module) {
    PyObject* os = PyImport_ImportModule("os");
    if (os == NULL) return -1;
    int result = 0;
    PyObject* hook = PyObject_GetAttrString(module, "_after_fork");
    PyObject* register_at_fork = PyObject_HasAttrString(os, "register_at_fork")
                                     ? PyObject_GetAttrString(os, "register_at_fork") : NULL;
    if (hook == NULL) {
        result = -1;
    } else if (register_at_fork != NULL) {
        PyObject* args = PyTuple_New(0);
        PyObject* kwargs = Py_BuildValue("{sO}", "after_in_child", hook);
        PyObject* done = args != NULL && kwargs != NULL ? PyObject_Call(register_at_fork, args, kwargs) : NULL;
        if (done == NULL) result = -1;
        Py_XDECREF(done);
        Py_XDECREF(args);
        Py_XDECREF(kwargs);
    }
    Py_XDECREF(register_at_fork);
    Py_XDECREF(hook);
    Py_DECREF(os);
    return result;
}

static int core_exec(PyObject* module) {
    int result = -1;
    PyObject* integrators = NULL;
    if (PyArray_ImportNumPyAPI() < 0) goto done;
    module_state* st = (module_state*)PyModule_GetState(module);
    st->process = ms_process_id();
    if (register_after_fork(module) < 0) goto done;
    st->system_type = mspy_system_type(module, st);
    if (st->system_type == NULL) goto done;
    if (PyModule_AddObjectRef(module, "System", st->system_type) < 0) goto done;
    st->ensemble_type = mspy_ensemble_type(module);
    if (st->ensemble_type == NULL) goto done;
    if (PyModule_AddObjectRef(module, "Ensemble", st->ensemble_type) < 0) goto done;
    st->divergence_error = PyErr_NewExceptionWithDoc(
        "msprings.DivergenceError",
        "The motion blew up: a position or velocity became non-finite.  The step call is undone: the system "
        "is as it was before the call.  Attributes: step (the step that blew up, counted as System.steps "
        "counts), time (s, the time that step would have reached), call_step (which step of the call: 1 is "
        "its first); System.step adds dt (s) and critical_dt (s, the integrator's stable limit for the "
        "system, or None).",
        PyExc_FloatingPointError, NULL);
    if (st->divergence_error == NULL) goto done;
    if (PyModule_AddObjectRef(module, "DivergenceError", st->divergence_error) < 0) goto done;
    if ((integrators = PyTuple_New(MS_INTEGRATOR_COUNT)) == NULL) goto done;
    for (int i = 0; i < MS_INTEGRATOR_COUNT; ++i) {
        PyObject* name = PyUnicode_FromString(ms_integrator_name(i));
        if (name == NULL) goto done;
        PyTuple_SET_ITEM(integrators, i, name);
    }
    if (PyModule_AddObjectRef(module, "INTEGRATORS", integrators) < 0) goto done;
    result = mspy_add_options(module);
done:
    Py_XDECREF(integrators);
    return result;
}

static int core_traverse(PyObject* module, visitproc visit, void* arg) {
    module_state* st = (module_state*)PyModule_GetState(module);
    Py_VISIT(st->system_type);
    Py_VISIT(st->ensemble_type);
    Py_VISIT(st->divergence_error);
    return 0;
}

static int core_clear(PyObject* module) {
    module_state* st = (module_state*)PyModule_GetState(module);
    Py_CLEAR(st->system_type);
    Py_CLEAR(st->ensemble_type);
    Py_CLEAR(st->divergence_error);
    return 0;
}

static void core_free(void* module) {
    core_clear((PyObject*)module);
    module_state* st = (module_state*)PyModule_GetState((PyObject*)module);
    PyMem_Free(st->getset);
    st->getset = NULL;
}

static PyModuleDef_Slot core_slots[] = {{Py_mod_exec, core_exec}, {0, NULL}};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "msprings._core",
    .m_doc = "The C core of msprings: mass-spring systems stepped in C, state shared with NumPy.",
    .m_size = sizeof(module_state),
    .m_methods = core_methods,
    .m_slots = core_slots,
    .m_traverse = core_traverse,
    .m_clear = core_clear,
    .m_free = core_free,
};

PyMODINIT_FUNC PyInit__core(void) { return PyModuleDef_Init(&core_module); }
