"""SO(3)/SE(3) (batched), joint models and the one set of compiled small linear algebra.

Importing this package gives numba's cache of every kernel of robot_dynamics a stamp of all the
kernel sources (:mod:`robot_dynamics.spatial._kernel_cache`); every module that defines a kernel
imports it first.
"""

from robot_dynamics.spatial import _kernel_cache

_kernel_cache.install()
