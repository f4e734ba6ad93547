"""Fuzzed foreign descriptions: every mutant of an SDFormat model, of a frame-pair YAML and of
four MJCF models imports and loads, or raises the package's own error (RobotDynamicsError,
naming the file; for MJCF also the element: ours, or MuJoCo's 'Element ...' or line); never
anything else. Examples (hypothesis, derandomized): SDFormat 1200,
frame-pair YAML 600, MJCF 3000 (750 each of closed_chain_mix, four_bar_connect, robotiq_2f85
and a site weld).

Mutations: a nasty value in an element's text or an attribute, a value taken from elsewhere in
the file (a name), an element deleted or duplicated, the document truncated; for the YAML,
loader_fuzz's text damage. MJCF mutants are mostly well-formed trees: attributes of bodies,
joints, geoms, inertials, sites, equalities (connect by bodies and by sites, weld, joint
coupling), actuators and the compiler set to nasty numbers, keywords or other elements' names;
elements deleted, duplicated or moved into another body, the world body or the equalities; an
equality's kind changed; a loop's anchor, site, body or joint left blank. Each MJCF mutant runs in a worker process with a time limit: a case
that exceeds it fails the test unless MuJoCo alone (MjModel.from_xml_path in a fresh process)
does not finish on the same file either, which is MuJoCo's limitation and only reported."""

import copy
import multiprocessing
import os
import random
import re
import subprocess
import sys
import traceback
import warnings
import xml.etree.ElementTree as ET

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


# ---- MJCF ---------------------------------------------------------------------------------

MJ_NUM = ['nan', 'inf', '-inf', '1e400', '-1', '0', '-0', '1e9', '-1e9', '1e300', '1e-320', '', ' ', 'x', '1 2']
MJ_NUM += ['0 0 0', '0 0 0 0', '1 nan 0', '0 ' * 11, '2', '3', '1e20 1e20 1e20', '-5 5', '5 -5', '1,2,3', 'true']
MJ_ATTRS = {
    'body': ['pos', 'quat', 'euler', 'axisangle', 'xyaxes', 'zaxis', 'name', 'childclass', 'mocap', 'gravcomp'],
    'joint': ['type', 'axis', 'pos', 'range', 'ref', 'limited', 'damping', 'armature', 'stiffness', 'frictionloss'],
    'freejoint': ['name', 'align'],
    'geom': ['type', 'size', 'fromto', 'pos', 'quat', 'mass', 'density', 'class', 'shellinertia'],
    'inertial': ['pos', 'quat', 'mass', 'diaginertia', 'fullinertia'],
    'site': ['pos', 'quat', 'euler', 'name', 'size'],
    'connect': ['body1', 'body2', 'site1', 'site2', 'anchor', 'active', 'name'],
    'weld': ['body1', 'body2', 'site1', 'site2', 'anchor', 'relpose', 'torquescale', 'active', 'name'],
    'compiler': ['angle', 'eulerseq', 'autolimits', 'inertiafromgeom', 'boundmass', 'boundinertia', 'settotalmass'],
    'option': ['gravity', 'timestep'],
    'motor': ['joint', 'gear', 'tendon'],
    'position': ['joint', 'kp'],
    'velocity': ['joint', 'kv'],
    'general': ['joint', 'gear', 'biastype', 'gainprm', 'biasprm'],
}
MJ_EQ_JOINT = ['joint1', 'joint2', 'polycoef', 'active', 'name']  # <joint> inside <equality>
MJ_WORDS = {
    'type': ['hinge', 'slide', 'ball', 'free', 'box', 'sphere', 'capsule', 'plane', 'cylinder', 'x'],
    'angle': ['degree', 'radian', 'x'],
    'eulerseq': ['zyx', 'XYZ', 'xyx', 'abc', 'xy'],
    'limited': ['true', 'false', 'auto', 'x'],
    'biastype': ['none', 'affine', 'muscle'],
}
MJ_WORDS.update({a: ['true', 'false', 'x'] for a in ('autolimits', 'active', 'mocap', 'align', 'shellinertia')})
MJ_WORDS['inertiafromgeom'] = ['true', 'false', 'auto']
MJ_REFS = {'body1', 'body2', 'site1', 'site2', 'joint1', 'joint2', 'joint', 'tendon', 'childclass', 'class', 'name'}
MJ_MOVABLE = ('body', 'joint', 'freejoint', 'geom', 'inertial', 'site', 'connect', 'weld')


def mutate_mjcf_tree(root, rng):
    """One mutation of an MJCF element tree, in place (the result stays well-formed XML)."""
    parents = {c: p for p in root.iter() for c in p}
    elems = [e for e in root.iter() if e is not root]
    names = sorted({v for e in elems for k, v in e.attrib.items() if k in ('name', 'class')}) + ['nope', '']
    known = [x for x in elems if x.tag in MJ_ATTRS]
    kind = rng.randrange(7) if known else 3
    if not elems:
        return
    if kind <= 2:  # an attribute of a body, joint, geom, equality ...: a nasty value, a name, or deleted
        eqs = [x for x in known if parents[x].tag == 'equality']  # the loops: 40 % of these mutations
        e = rng.choice(eqs if eqs and rng.random() < 0.4 else known)
        in_eq = e.tag == 'joint' and parents[e].tag == 'equality'
        a = rng.choice(MJ_EQ_JOINT if in_eq else MJ_ATTRS[e.tag])
        if rng.random() < 0.15 and a in e.attrib:
            del e.attrib[a]
        elif e in eqs and rng.random() < 0.25:  # a blank anchor, site, body or joint of a loop
            e.set(a, rng.choice(['', ' ']))
        elif a in MJ_REFS:
            e.set(a, rng.choice(names))
        else:
            e.set(a, rng.choice(MJ_WORDS[a] if a in MJ_WORDS and rng.random() < 0.7 else MJ_NUM))
    elif kind == 3:  # an element deleted
        e = rng.choice(elems)
        parents[e].remove(e)
    elif kind == 4:  # an element duplicated (same name twice, two joints on a body ...)
        e = rng.choice(elems)
        p = parents[e]
        p.insert(list(p).index(e) + 1, copy.deepcopy(e))
    elif kind == 5:  # nesting: an element moved into another body, the world body, the equalities
        e = rng.choice([x for x in elems if x.tag in MJ_MOVABLE] or elems)
        inside = set(e.iter())
        targets = [x for x in root.iter() if x.tag in ('body', 'worldbody', 'equality', 'default') and x not in inside]
        if targets:
            parents[e].remove(e)
            rng.choice(targets).append(e)
    else:  # an equality of another kind (connect, weld, joint coupling; refused: tendon, distance, flex)
        eqs = [x for x in elems if parents[x].tag == 'equality']
        if eqs:
            rng.choice(eqs).tag = rng.choice(['connect', 'weld', 'joint', 'tendon', 'distance', 'flex'])


def mutate_mjcf(text, rng):
    """1-3 tree mutations of an MJCF document; a quarter of the time text damage instead."""
    if rng.random() < 0.25:
        for _ in range(rng.randrange(1, 4)):
            text = mutate_xml(text, rng)
        return text
    root = ET.fromstring(text)
    for _ in range(rng.randrange(1, 4)):
        mutate_mjcf_tree(root, rng)
    return ET.tostring(root, encoding='unicode')


def _mjcf_worker(conn, workdir):
    """Child process: import and load each MJCF path received; send back (outcome, message)."""
    os.chdir(workdir)  # MuJoCo writes its warnings to MUJOCO_LOG.TXT in the working directory
    from robot_dynamics.parsers.mjcf import import_mjcf

    warnings.simplefilter('ignore')
    while True:
        path = conn.recv()
        try:
            load_imported(import_mjcf(path))
            out = ('loaded', '')
        except RobotDynamicsError as exc:
            where = getattr(exc, 'element', None) or getattr(exc, 'key', None)
            msg = str(exc)
            # the file, and the element (ours, or MuJoCo's 'Element ...' / parser line; an empty
            # file has none)
            named = msg.startswith(path) and bool(where or re.search(r'[Ee]lement|[Ll]ine|empty file', msg))
            out = ('refused' if named else 'unnamed', msg[:300])
        except Exception as exc:  # noqa: BLE001 - what the test looks for
            tb = traceback.extract_tb(exc.__traceback__)[-1]
            out = ('raw', f'{type(exc).__name__} at {tb.filename}:{tb.lineno}: {exc}'[:400])
        conn.send(out)


class _MjcfWorker:
    """A worker process (spawned: a clean MuJoCo) that runs one case at a time with a limit."""

    def __init__(self, workdir):
        self.workdir, self.proc = workdir, None

    def _start(self):
        ctx = multiprocessing.get_context('spawn')
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_mjcf_worker, args=(child, self.workdir), daemon=True)
        self.proc.start()

    def run(self, path, limit):
        if self.proc is None:
            self._start()
            limit += 120  # imports numba, MuJoCo and the package's kernels
        self.conn.send(path)
        if self.conn.poll(limit):
            return self.conn.recv()
        self.close()
        return None

    def close(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.join()
            self.proc = None


def _mujoco_alone_finishes(path, limit):
    code = 'import sys, mujoco\ntry:\n    mujoco.MjModel.from_xml_path(sys.argv[1])\nexcept Exception:\n    pass'
    try:
        subprocess.run(
            [sys.executable, '-c', code, path], cwd=os.path.dirname(path), timeout=limit, capture_output=True
        )
        return True
    except subprocess.TimeoutExpired:
        return False


MJCF_EXAMPLES = 750  # per model


@pytest.fixture(scope='module')
def mjcf_worker(tmp_path_factory):
    w = _MjcfWorker(str(tmp_path_factory.mktemp('mjcf_worker')))
    yield w
    w.close()


@pytest.mark.parametrize('name', ['closed_chain_mix', 'four_bar_connect', 'robotiq_2f85', 'site_weld'])
def test_mutated_mjcf_raises_only_package_errors_naming_file_and_element(name, mjcf_worker, tmp_path):
    import test_mjcf_import as T

    if name == 'site_weld':
        text = T.SITE_WELD
    else:
        with open(os.path.join(DATA, 'mjcf', f'{name}.xml'), encoding='utf-8') as fh:
            text = fh.read()
    bad, mujoco_hangs, seen = [], [], {'loaded': 0, 'refused': 0}
    limit = 30.0

    @settings(max_examples=MJCF_EXAMPLES, **COMMON)
    @given(seed=st.integers(0, 2**31 - 1))
    def run(seed):
        path = tmp_path / f'm{seed % 7}.xml'
        path.write_text(mutate_mjcf(text, random.Random(seed)), encoding='utf-8')
        label = f'{name} seed {seed}'
        out = mjcf_worker.run(str(path), limit)
        if out is None:
            if _mujoco_alone_finishes(str(path), limit):
                bad.append(f'{label}: the import did not finish in {limit:g} s; MuJoCo alone compiles the file')
            else:
                mujoco_hangs.append(label)
            return
        kind, msg = out
        if kind in seen:
            seen[kind] += 1
        else:
            bad.append(f'{label}: {kind}: {msg}')

    run()
    print(f'\n{name}: {seen}, {len(bad)} failures, MuJoCo alone does not finish: {mujoco_hangs}')
    assert not bad, f'{len(bad)} failures:\n' + '\n'.join(bad[:10])
    assert len(mujoco_hangs) <= MJCF_EXAMPLES // 100, mujoco_hangs
    assert seen['loaded'] >= MJCF_EXAMPLES // 20 and seen['refused'] >= MJCF_EXAMPLES // 10, seen
