"""Every part of a loop sidecar is validated, method sections included: a property test.

Each sidecar of the package and of the test data (``urdf/*.loops.yaml``,
``test/data/*.loops.yaml``) is mutated at one key path at a time (a nasty value: wrong type,
None, NaN, +-inf, negative, zero, a huge integer, an empty list or mapping, an unknown name;
the key deleted; an unknown key added; a number negated or zeroed), loaded with its URDF, and
then every method object that the unmutated sidecar builds is built from the mutant
(inertia partitioning, the loop map, the constraint embedding, the general and the recursive
PKM routes, the virtual decomposition structure, the hydraulic parameters, the SEA models).

The property: nothing but the package's own errors (:class:`rd.RobotDynamicsError`) comes
out, and each names where the problem is:

* a :class:`rd.LoopSpecError` names the sidecar file and a key path (``"<file>: <key>: ..."``);
* a :class:`rd.ModelError` (a sidecar that changes the tree: ``root_joint``) names the URDF;
* the refusal of a method (the mutant is valid data but not a mechanism that method handles:
  an open loop at the reference configuration, a limb without a cut joint ...) names the
  sidecar file or the model, and the element at fault.

Deterministic (``derandomize=True``); 280 examples per sidecar, 22 sidecars (6160 in all).
"""

import copy
import functools
import glob
import math
import os
import re
import warnings

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import robot_dynamics as rd

import loader_fuzz

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = 280


def _pairs():
    """{sidecar path: its URDF}: ``<stem>.urdf`` beside it, else the ``urdf/<name>.urdf`` its
    first comment line names."""
    out = {}
    for s in sorted(glob.glob(os.path.join(ROOT, 'urdf', '*.loops.yaml'))) + sorted(
        glob.glob(os.path.join(ROOT, 'test', 'data', '*.loops.yaml'))
    ):
        u = s[: -len('.loops.yaml')] + '.urdf'
        if not os.path.exists(u):
            with open(s) as fh:
                u = os.path.join(ROOT, re.search(r'urdf/\w+\.urdf', fh.readline()).group(0))
        out[s] = u
    return out


PAIRS = _pairs()


def _builders():
    from robot_dynamics.algorithms import hydraulics, partitioning, vdc
    from robot_dynamics.pkm import embedding, general, recursive, sea

    return {
        'inertia partitioning': partitioning.PartitionedModel,
        'loop map': partitioning.make_loop_map,
        'constraint embedding': embedding.PKM,
        'general PKM route': general.general_pkm,
        'recursive PKM route': recursive.limbs_from_model,
        'virtual decomposition': vdc.structure_from_model,
        'hydraulic parameters': hydraulics.hydraulic_params_from_model,
        'SEA PKM': sea.SEAPKM,
        'planar SEA parameters': sea.sea_params_from_model,
        'SEA limbs': sea.sea_limbs,
    }


NASTY = [
    None,
    True,
    0,
    -1,
    0.0,
    -2.5,
    1e-300,
    1e300,
    10**400,
    math.nan,
    math.inf,
    -math.inf,
    '',
    'x',
    'no_such_name',
    [],
    {},
    [[]],
    [None],
    [1, 2],
    [0, 0, 0],
    [1, 2, 3],
    [math.nan, 0, 1],
    {'a': 1},
    {'': None},
    [[1, 2], [3]],
]


@functools.lru_cache(maxsize=None)
def _base(sidecar):
    """(parsed sidecar, URDF, the method builders the unmutated sidecar passes, names, paths)."""
    with open(sidecar) as fh:
        data = yaml.safe_load(fh)
    urdf = PAIRS[sidecar]
    model = rd.load_model(urdf, loops=(data, sidecar))
    enabled = []
    for name, build in _builders().items():
        try:
            build(model)
        except rd.RobotDynamicsError:
            continue
        enabled.append(name)
    names = sorted(set(model.joint_names) | set(model.frame_names) | {lp.name for lp in model.loops})
    return data, urdf, tuple(enabled), tuple(names), tuple(p for p in loader_fuzz._paths(data) if p)


KINDS = ('value', 'name', 'delete', 'unknown_key', 'negate', 'zero')


def _mutate(data, path, kind, value, name):
    d = copy.deepcopy(data)
    parent = d
    for k in path[:-1]:
        parent = parent[k]
    last, old = path[-1], parent[path[-1]]
    if kind == 'delete':
        del parent[last]
    elif kind == 'unknown_key' and isinstance(old, dict):
        old['zz_unknown'] = value
    elif kind == 'name':
        parent[last] = name
    elif kind in ('negate', 'zero') and isinstance(old, (int, float)) and not isinstance(old, bool):
        parent[last] = -old if kind == 'negate' else 0 * old
    else:
        parent[last] = copy.deepcopy(value)
    return d


def _check(sidecar, data, urdf, enabled):
    """Load the mutant and build the enabled methods; the property of the module docstring."""
    model = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore', rd.ModelWarning)
            model = rd.load_model(urdf, loops=(data, sidecar))
        for name in enabled:
            _builders()[name](model)
    except rd.LoopSpecError as exc:
        assert exc.source == sidecar and exc.key, exc
        assert str(exc).startswith(f'{sidecar}: {exc.key}: '), exc
        return 'LoopSpecError'
    except rd.ModelError as exc:
        assert str(exc).startswith(f'{urdf}: '), exc
        return 'ModelError'
    except rd.RobotDynamicsError as exc:
        msg = str(exc)
        assert model is not None, msg
        assert os.path.basename(sidecar) in msg or f'{model.name}' in msg, (type(exc).__name__, msg)
        return type(exc).__name__
    return 'loaded'


def _property(sidecar):
    data0, urdf, enabled, names, paths = _base(sidecar)

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(
        st.sampled_from(paths),
        st.sampled_from(KINDS),
        st.sampled_from(NASTY),
        st.sampled_from(names),
    )
    def prop(path, kind, value, name):
        data = _mutate(data0, path, kind, value, name)
        try:
            _check(sidecar, data, urdf, enabled)
        except AssertionError:
            raise
        except Exception as exc:  # a raw exception: name the file and the key path
            key = ''.join(f'[{k}]' if isinstance(k, int) else f'.{k}' for k in path).lstrip('.')
            raise AssertionError(
                f'{os.path.relpath(sidecar, ROOT)}: {key} ({kind}, {value!r:.40}, {name!r}): '
                f'raw {type(exc).__name__}: {exc}'
            ) from exc

    return prop


def test_every_sidecar_is_fuzzed_and_enables_methods():
    assert len(PAIRS) >= 20
    enabled = {m for s in PAIRS for m in _base(s)[2]}
    # each method family is reached by at least one sidecar
    for m in ('constraint embedding', 'general PKM route', 'virtual decomposition', 'hydraulic parameters', 'SEA PKM'):
        assert m in enabled, (m, enabled)
    assert sum(len(_base(s)[4]) for s in PAIRS) >= 1000  # key paths


@pytest.mark.parametrize('sidecar', sorted(PAIRS), ids=lambda s: os.path.relpath(s, ROOT))
def test_mutated_sidecars_raise_only_package_errors_naming_file_and_key(sidecar):
    _property(sidecar)()
