"""Numba's on-disk cache of the package's compiled kernels, keyed on every kernel source.

``@njit(cache=True)`` stores a compiled function with a stamp of its own source file only. A
kernel that calls a kernel of another file (``plants._rigid_kernels`` calls
``algorithms._projection_kernels``, which calls ``algorithms._tree_kernels`` and
``spatial.linalg``) is compiled together with its callees, so after an edit or an upgrade of a
callee's file the caller's cache entry would still load, with the old callee inside it. Here
the stamp of every function defined in this package also carries a hash of the package's
numba-compiled sources: a change of any of them recompiles every kernel on first use (or in
``robot-dynamics warmup``). Functions outside the package keep numba's own stamp.

Installed once, when :mod:`robot_dynamics.spatial` is imported (every kernel module imports it
before it defines a kernel): the locator classes of ``numba.core.caching.CacheImpl`` get this
stamp, the cache locations stay numba's (``__pycache__`` beside the source, or
``NUMBA_CACHE_DIR``).
"""

from __future__ import annotations

import hashlib
import os

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_HASH = None
_INSTALLED = False


def kernel_sources_hash():
    """SHA-256 (hex) of the package's Python files that use numba, in path order (computed once)."""
    global _HASH
    if _HASH is None:
        h = hashlib.sha256()
        paths = []
        for root, dirs, files in os.walk(PACKAGE_DIR):
            dirs[:] = sorted(d for d in dirs if d != '__pycache__')
            paths += [os.path.join(root, f) for f in sorted(files) if f.endswith('.py')]
        for p in paths:
            with open(p, 'rb') as f:
                data = f.read()
            if b'numba' in data:
                h.update(os.path.relpath(p, PACKAGE_DIR).encode())
                h.update(data)
        _HASH = h.hexdigest()
    return _HASH


def _in_package(path):
    try:
        return os.path.commonpath([os.path.abspath(path), PACKAGE_DIR]) == PACKAGE_DIR
    except ValueError:
        return False


class _PackageStamp:
    """Locator mixin: the package hash joins the source stamp of the package's functions."""

    def get_source_stamp(self):
        stamp = super().get_source_stamp()
        if _in_package(self._py_file):
            return (stamp, kernel_sources_hash())
        return stamp


def install():
    """Give numba's file-backed cache locators the package-wide stamp (idempotent)."""
    global _INSTALLED
    if _INSTALLED:
        return
    from numba.core import caching

    impl = caching.CacheImpl
    swapped = []
    for cls in impl._locator_classes:
        if issubclass(cls, caching._SourceFileBackedLocatorMixin) and not issubclass(cls, _PackageStamp):
            cls = type(cls.__name__, (_PackageStamp, cls), {'__module__': __name__})
        swapped.append(cls)
    impl._locator_classes = swapped
    _INSTALLED = True
