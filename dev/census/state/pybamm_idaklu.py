"""PyBaMM 26.10.1.1's kernel state for `ccshim conform` (census.py port).

pybammsolvers' three kernels (src/pybammsolvers/idaklu_source/IdakluJax.cpp:
cpu_idaklu_f64, cpu_idaklu_jvp_f64, cpu_idaklu_vjp_f64) find, by the index
in their first operand, the IdakluJax object PyBaMM's IDAKLUJax made
(pybamm/solvers/idaklu_jax.py), and call the Python callbacks registered on
it, which run the solver.  So a process can run them only after Python has
made that object.  Imported in each side's process with that side's build
first on its path, this module makes one (index 0, the first) with
callbacks of its own, of the shapes PyBaMM's have: eval(t, inputs) gives
the outputs at each time, n_t x n_vars; jvp(t, inputs, t_dot, inputs_dot)
the same shape; vjp(y_bar, n0, n1, invar, t, inputs) a scalar, the
derivative with respect to input invar.  Its registrations() are the
kernels as that build registers them: the legacy ones, or the handlers
`ccshim port` wrote.
"""

# casadi's import loads libcasadi, which a source build's idaklu links (as
# PyBaMM's import loads it first)
import casadi  # noqa: F401
import numpy as np
from pybammsolvers import idaklu

N_VARS = 2  # outputs per time; the manifest's signatures follow these
# conform gives NaN, +-Inf and -0 in every other run: numpy's warnings about
# them are not the kernels' output
np.seterr(all="ignore")


def _y(t, inputs):
    return np.stack([np.sin(t) * inputs[0], np.exp(-inputs[1] * t)], axis=1)


def _eval(t, inputs):
    return np.ascontiguousarray(_y(t, inputs))


def _jvp(t, inputs, t_dot, inputs_dot):
    dy = np.stack([np.cos(t) * inputs[0] * t_dot + np.sin(t) * inputs_dot[0],
                   -np.exp(-inputs[1] * t) * (inputs_dot[1] * t + inputs[1] * t_dot)], axis=1)
    return np.ascontiguousarray(dy)


def _vjp(y_bar, n0, n1, invar, t, inputs):
    y_bar = np.asarray(y_bar).reshape(len(t), N_VARS)
    if invar == 0:
        dy = np.stack([np.sin(t), np.zeros_like(t)], axis=1)
    else:
        dy = np.stack([np.zeros_like(t), -t * np.exp(-inputs[1] * t)], axis=1)
    return np.array([np.sum(y_bar * dy)])


SOLVER = idaklu.create_idaklu_jax()
SOLVER.register_callbacks(_eval, _jvp, _vjp)


def registrations():
    assert SOLVER.get_index() == 0, "made after another IdakluJax object"
    return idaklu.registrations()
