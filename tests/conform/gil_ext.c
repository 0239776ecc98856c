/*
 * A legacy kernel that needs the interpreter while it runs, as a Cython
 * `cdef void kernel(void* out, const void** in) with gil` does: it takes
 * the GIL and computes through Python objects.  Built as a CPython
 * extension module (ccshim_gil_ext) whose registrations() returns its
 * capsule, as legacy extensions did.  Only a process with the interpreter
 * and the module can run it: the test of `ccshim conform --python`.
 *
 *   gil_scale_v1: (f64[8]) -> f64[8], out = 3 * in[0], through PyFloat.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static void gil_scale_v1(void* out, const void** in) {
  PyGILState_STATE gil = PyGILState_Ensure();
  const double* x = in[0];
  double* y = out;
  PyObject* three = PyFloat_FromDouble(3.0);
  for (int i = 0; i < 8; i++) {
    PyObject* v = PyFloat_FromDouble(x[i]);
    PyObject* p = v && three ? PyNumber_Multiply(v, three) : NULL;
    y[i] = p ? PyFloat_AsDouble(p) : -1.0;
    Py_XDECREF(p);
    Py_XDECREF(v);
  }
  Py_XDECREF(three);
  PyGILState_Release(gil);
}

static PyObject* registrations(PyObject* self, PyObject* unused) {
  (void)self;
  (void)unused;
  PyObject* capsule = PyCapsule_New((void*)gil_scale_v1, "xla._CUSTOM_CALL_TARGET", NULL);
  if (capsule == NULL) return NULL;
  PyObject* dict = Py_BuildValue("{s:N}", "gil_scale_v1", capsule);
  return dict;
}

static PyMethodDef methods[] = {
    {"registrations", registrations, METH_NOARGS, "name -> capsule"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "ccshim_gil_ext", NULL, -1, methods};

PyMODINIT_FUNC PyInit_ccshim_gil_ext(void) { return PyModule_Create(&module); }
