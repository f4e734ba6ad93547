"""The on-disk kernel cache is keyed on every kernel source of the package
(robot_dynamics/spatial/_kernel_cache.py): a kernel compiled with callees from other files is
never loaded from the cache after any of them changed. Checked in fresh processes on a private
NUMBA_CACHE_DIR through numba's own counters (dispatcher.stats.cache_hits / cache_misses)."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PROBE = r"""
import json, sys
import numpy as np
from robot_dynamics.spatial import _kernel_cache
if sys.argv[1] != '-':
    _kernel_cache._HASH = sys.argv[1]  # as if a kernel source had changed
from robot_dynamics.spatial import linalg
linalg.cross(np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 0.0]), np.empty(3))
st = linalg.cross.stats
print(json.dumps([sum(st.cache_hits.values()), sum(st.cache_misses.values()), _kernel_cache.kernel_sources_hash()]))
"""


def _run(tmp_path, stamp):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    out = subprocess.run(
        [sys.executable, '-c', PROBE, stamp], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_changed_kernel_source_recompiles_every_kernel(tmp_path):
    hits, misses, h = _run(tmp_path, '-')
    assert (hits, misses) == (0, 1) and len(h) == 64  # first use: compiled and stored
    assert _run(tmp_path, '-')[:2] == [1, 0]  # same sources: loaded from the cache
    assert _run(tmp_path, '0' * 64)[:2] == [0, 1]  # another package hash: compiled again
    assert _run(tmp_path, '0' * 64)[:2] == [1, 0]


def test_the_hash_covers_the_kernel_files_only():
    from robot_dynamics.spatial import _kernel_cache as kc

    h = kc.kernel_sources_hash()
    assert h == kc.kernel_sources_hash() and len(h) == 64
    # the locators numba uses for this package's files carry it; others keep numba's stamp
    from numba.core import caching

    from robot_dynamics.spatial import linalg

    loc = next(
        c.from_function(linalg.cross.py_func, linalg.__file__)
        for c in caching.CacheImpl._locator_classes
        if c.from_function(linalg.cross.py_func, linalg.__file__) is not None
    )
    stamp = loc.get_source_stamp()
    assert isinstance(stamp, tuple) and stamp[1] == h
    assert all(
        issubclass(c, kc._PackageStamp)
        for c in caching.CacheImpl._locator_classes
        if hasattr(c, '_py_file') or issubclass(c, caching._SourceFileBackedLocatorMixin)
    )
