"""Fuzzed foreign descriptions: every mutant of an SDFormat model and of a frame-pair YAML imports
and loads, or raises the package's own error (RobotDynamicsError, naming the file); never
anything else. (MJCF mutants are not fuzzed here: some make MuJoCo's own compiler, which the
MJCF importer calls, run without end.) Mutations (seeded through hypothesis, derandomized): a nasty value in an
element's text or an attribute, a value taken from elsewhere in the file (a name), an element
deleted or duplicated, the document truncated; for the YAML, loader_fuzz's text damage."""

import os
import random
import copy
import re
import traceback
import warnings

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from robot_dynamics.errors import RobotDynamicsError
from robot_dynamics.parsers.framepairs import import_framepairs
from robot_dynamics.parsers.importing import load_imported
from robot_dynamics.parsers.sdf import import_sdf

import loader_fuzz as F
from suite_paths import DATA

NASTY = ['', 'nan', 'inf', '-1', '0', '1e400', 'x', '1 2', '0 0 0 0 0 0 0', '-0.5 nan 1', 'world', '&amp;', '1,2,3']
_ATTR = re.compile(r'(\w+)="([^"]*)"')
_TEXT = re.compile(r'>([^<>]+)</')
_ELEM = re.compile(r'<(\w+)\b[^>]*?(/>|>[^<]*</\1>)')


def mutate_xml(text, rng):
    """One random mutation of an XML document (text level: may leave it malformed)."""
    kind = rng.randrange(6)
    if kind <= 1:
        hits = list((_ATTR if kind == 0 else _TEXT).finditer(text))
        if hits:
            m = rng.choice(hits)
            g = 2 if kind == 0 else 1
            return text[: m.start(g)] + rng.choice(NASTY) + text[m.end(g) :]
    if kind == 2:  # a value from elsewhere in the file (often a name where a number goes)
        vals = [m.group(2) for m in _ATTR.finditer(text)] + [m.group(1) for m in _TEXT.finditer(text)]
        hits = list(_TEXT.finditer(text))
        if vals and hits:
            m = rng.choice(hits)
            return text[: m.start(1)] + rng.choice(vals) + text[m.end(1) :]
    elems = list(_ELEM.finditer(text))
    if kind == 3 and elems:
        m = rng.choice(elems)
        return text[: m.start()] + text[m.end() :]
    if kind == 4 and elems:
        m = rng.choice(elems)
        return text[: m.end()] + m.group(0) + text[m.end() :]
    return text[: rng.randrange(len(text))] if text else text


def _sdf_model():
    import test_sdf_frames as T

    return T.MODEL


def _run(label, thunk, bad, seen):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        try:
            thunk()
            seen['loaded'] += 1
        except RobotDynamicsError as exc:
            assert str(exc), label
            seen['refused'] += 1
        except Exception as exc:  # noqa: BLE001 - what the test looks for
            tb = traceback.extract_tb(exc.__traceback__)[-1]
            bad.append(f'{label}: {type(exc).__name__} at {tb.filename}:{tb.lineno}: {exc}'[:400])


def _fuzz(tmp_path, text, suffix, importer, seed, bad, seen):
    rng = random.Random(seed)
    for _ in range(rng.randrange(1, 4)):
        text = mutate_xml(text, rng)
    path = tmp_path / f'm{seed % 7}{suffix}'
    path.write_text(text, encoding='utf-8')

    def go():
        load_imported(importer(str(path)))

    _run(f'{suffix} seed {seed}', go, bad, seen)


COMMON = dict(deadline=None, derandomize=True, suppress_health_check=list(HealthCheck), database=None)


@pytest.mark.parametrize('name', ['sdf_demo'])
def test_mutated_foreign_descriptions_raise_only_package_errors(name, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(name)
    text, suffix, importer, n = _sdf_model(), '.sdf', import_sdf, 1200
    bad = []

    @settings(max_examples=n, **COMMON)
    @given(seed=st.integers(0, 2**31 - 1))
    def run(seed):
        _fuzz(tmp, text, suffix, importer, seed, bad, seen)

    seen = {'loaded': 0, 'refused': 0}
    run()
    print(f'\n{name}: {seen}, {len(bad)} raw exceptions')
    assert not bad, f'{len(bad)} raw exceptions:\n' + '\n'.join(bad[:10])
    # the mutants exercise both sides: some still load, many are refused
    assert seen['loaded'] >= n // 10 and seen['refused'] >= n // 10, seen


def test_mutated_frame_pair_yaml_raises_only_package_errors(tmp_path):
    import test_framepairs_import as T

    urdf, text = os.path.join(DATA, 'biped_rods.urdf'), T.BIPED_YAML
    data = yaml.safe_load(text)
    names = ['left_shin_pin', 'right_rod_tip', 'left_hip', 'pelvis', 'left_rod_ball', '3D', '6D', 'SPHERICAL']
    bad = []

    @settings(max_examples=600, **COMMON)
    @given(seed=st.integers(0, 2**31 - 1))
    def run(seed):
        rng = random.Random(seed)
        if rng.random() < 0.5:  # damaged text
            t = text
            for _ in range(rng.randrange(1, 4)):
                t = F.mutate_yaml_text(t, rng)
        else:  # a well-formed document with wrong values (names, types, shapes)
            d = copy.deepcopy(data)
            for _ in range(rng.randrange(1, 3)):
                d = F.mutate_sidecar(d, rng, names)
            t = yaml.safe_dump(d)
        p = tmp_path / 'pairs.yaml'
        p.write_text(t, encoding='utf-8')
        _run(
            f'frame pairs seed {seed}',
            lambda: load_imported(import_framepairs(urdf, str(p), root_joint='free_flyer')),
            bad,
            seen,
        )

    seen = {'loaded': 0, 'refused': 0}
    run()
    print(f'\nframe pairs: {seen}, {len(bad)} raw exceptions')
    assert not bad, f'{len(bad)} raw exceptions:\n' + '\n'.join(bad[:10])
    assert seen['loaded'] >= 5 and seen['refused'] >= 300, seen
