"""Fuzzed model files: every mutant of the shipped URDFs and loop sidecars loads or raises the
package's own error (RobotDynamicsError naming file and element/key), never anything else.
Hypothesis (derandomized) draws the seeds of the mutators in test/loader_fuzz.py: 2500 URDF
texts, 2500 sidecar mappings and 600 sidecar texts."""

import copy
import random
import time
import traceback
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import robot_dynamics as rd
from robot_dynamics.errors import RobotDynamicsError
from robot_dynamics.parsers.sidecar import attach_loops

import loader_fuzz as F

N_URDF, N_SIDECAR, N_YAML = 2500, 2500, 600
COMMON = dict(deadline=None, derandomize=True, suppress_health_check=list(HealthCheck), database=None)


def _escapes(cases):
    """Run (label, thunk) cases; return the non-package exceptions."""
    bad = []
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        for label, thunk in cases:
            try:
                thunk()
            except RobotDynamicsError as exc:
                assert str(exc), label
            except Exception as exc:  # noqa: BLE001 - what the test looks for
                tb = traceback.extract_tb(exc.__traceback__)[-1]
                bad.append(f'{label}: {type(exc).__name__} at {tb.filename}:{tb.lineno}: {exc}'[:300])
    return bad


def test_mutated_urdfs_raise_only_model_errors():
    robots = F.robots()
    texts = {u: open(u, encoding='utf-8').read() for u, _ in robots}
    bad = []
    t0 = time.monotonic()

    @settings(max_examples=N_URDF, **COMMON)
    @given(seed=st.integers(0, 2**31 - 1))
    def run(seed):
        rng = random.Random(seed)
        urdf, _ = robots[rng.randrange(len(robots))]
        text = texts[urdf]
        for _ in range(rng.randrange(1, 4)):
            text = F.mutate_urdf(text, rng)
        bad.extend(_escapes([(f'urdf seed {seed} ({urdf})', lambda: rd.load_model(text, loops=False))]))

    run()
    assert not bad, '\n'.join(bad[:10])
    assert time.monotonic() - t0 < 90


def test_mutated_sidecars_raise_only_loop_spec_errors(tmp_path):
    robots = [(u, s) for u, s in F.robots() if s]
    models = {u: rd.load_model(u, loops=False) for u, _ in robots}
    data = {u: F.load_yaml(s) for u, s in robots}
    texts = {u: open(s, encoding='utf-8').read() for u, s in robots}
    names = {u: list(m.frame_names) + list(m.joint_names) for u, m in models.items()}
    bad = []
    t0 = time.monotonic()

    def dict_case(seed):
        rng = random.Random(seed)
        urdf, _ = robots[rng.randrange(len(robots))]
        d = data[urdf]
        for _ in range(rng.randrange(1, 4)):
            d = F.mutate_sidecar(d, rng, names[urdf])
        return f'sidecar seed {seed} ({urdf})', lambda: attach_loops(copy.copy(models[urdf]), d)

    def text_case(seed):
        rng = random.Random(seed)
        urdf, _ = robots[rng.randrange(len(robots))]
        path = tmp_path / f'm{seed % 7}.loops.yaml'
        path.write_text(F.mutate_yaml_text(texts[urdf], rng), encoding='utf-8', errors='surrogateescape')
        return f'yaml text seed {seed} ({urdf})', lambda: attach_loops(copy.copy(models[urdf]), str(path))

    @settings(max_examples=N_SIDECAR, **COMMON)
    @given(seed=st.integers(0, 2**31 - 1))
    def run_dicts(seed):
        bad.extend(_escapes([dict_case(seed)]))

    @settings(max_examples=N_YAML, **COMMON)
    @given(seed=st.integers(0, 2**31 - 1))
    def run_texts(seed):
        bad.extend(_escapes([text_case(seed)]))

    run_dicts()
    run_texts()
    assert not bad, '\n'.join(bad[:10])
    assert time.monotonic() - t0 < 90


def test_shipped_sidecars_pass_the_semantic_checks():
    """Unmutated files load (the checks do not reject what the package ships)."""
    for urdf, side in F.robots():
        m = rd.load_model(urdf)
        assert (not side) or m.loops_source == side


def _sidecar(robot, **changes):
    d = F.load_yaml(f'{F.URDF_DIR}/{robot}.loops.yaml')
    d.update(changes)
    return d


def _load_error(robot, d):
    with pytest.raises(RobotDynamicsError) as ei:
        rd.load_model(f'{F.URDF_DIR}/{robot}.urdf', loops=d)
    return str(ei.value)


def test_loop_frames_on_one_body_are_rejected():
    m = rd.load_model(f'{F.URDF_DIR}/four_bar.urdf')
    lp = m.loops[0]
    body = m.frame_parent[m.frame_index(lp.frame_a)]
    other = next(f for f in m.frame_names if f != lp.frame_a and m.frame_parent[m.frame_index(f)] == body)
    d = _sidecar('four_bar')
    d['loops'][0]['frame_b'] = other
    msg = _load_error('four_bar', d)
    assert 'loops[0]' in msg and 'both fixed to' in msg and other in msg


def test_open_reference_configuration_is_rejected():
    d = _sidecar('five_bar')
    d['reference_configuration'] = dict(d['reference_configuration'])
    d['reference_configuration']['elbow1_joint'] += 0.2  # opens the loop by centimetres
    msg = _load_error('five_bar', d)
    assert 'reference_configuration' in msg and 'does not close loop' in msg and ' m,' in msg
    partial = _sidecar('five_bar', reference_configuration={'motor1_joint': 2.3, 'motor2_joint': 0.8})
    rd.load_model(f'{F.URDF_DIR}/five_bar.urdf', loops=partial)  # a guess: not judged


@pytest.mark.parametrize(
    'robot, key, value, words',
    [
        ('five_bar', 'independent', ['motor1_joint'], 'do not determine the configuration'),
        ('five_bar', 'independent', ['motor1_joint', 'motor2_joint', 'elbow1_joint'], '3 independent joint(s)'),
        ('hydraulic_boom', 'independent', ['lift_joint', 'lift_case_joint'], 'do not determine the configuration'),
    ],
)
def test_dof_and_actuation_rank_are_checked(robot, key, value, words):
    msg = _load_error(robot, _sidecar(robot, **{key: value}))
    assert f': {key}: ' in msg and words in msg, msg


def test_idle_motions_load_with_a_warning_naming_them():
    """Actuated joints that leave a motion free (here the boom's lift cylinder rod and the lift joint
    move together, the tilt stays undriven) are a fact, not an error: the model loads, the warning
    and model.idle_motions name the motion, which keeps the loops closed with the actuated
    joints still (A d = 0, d_a = 0, checked independently by finite differences of the residual)."""
    d = _sidecar('hydraulic_boom', actuated=['lift_rod_joint', 'lift_joint'])
    with pytest.warns(rd.ModelWarning, match='idle motion') as rec:
        m = rd.load_model(f'{F.URDF_DIR}/hydraulic_boom.urdf', loops=d)
    msg = str(rec[0].message)
    assert ': actuated: ' in msg and 'tilt_joint' in msg
    assert len(m.idle_motions) >= 1
    q = m.reference_q()
    for mo in m.idle_motions:
        assert mo.joints[0][0] in msg
        d_ = mo.direction
        assert np.abs(d_[[m.joint_index(j) for j in m.actuated]]).max() < 1e-12
        h = 1e-6
        dphi = (rd.loop_residual(m, q + h * d_) - rd.loop_residual(m, q - h * d_)) / (2 * h)
        assert np.abs(dphi).max() < 1e-8, dphi
        assert np.abs(d_).max() == 1.0


def test_numbers_are_urdf_numbers():
    text = open(f'{F.URDF_DIR}/four_bar.urdf', encoding='utf-8').read()
    for bad in ('0_8', '１', '0x1'):
        with pytest.raises(RobotDynamicsError, match='mass value'):
            rd.load_model(text.replace('<mass value="', f'<mass value="{bad}', 1), loops=False)


def test_long_chain_loads_in_linear_time():
    def chain(n):
        s = ['<robot name="c"><link name="l0"/>']
        for i in range(1, n + 1):
            s.append(
                f'<link name="l{i}"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" '
                f'izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link><joint name="j{i}" '
                f'type="revolute"><parent link="l{i - 1}"/><child link="l{i}"/><origin '
                f'xyz="0 0 0.1"/><axis xyz="0 0 1"/></joint>'
            )
        return ''.join(s) + '</robot>'

    rd.load_model(chain(10))
    # CPU time of this process, not wall time: a loaded machine stretches the wall clock
    times = {}
    for n in (500, 2000, 10000):
        text = chain(n)
        t0 = time.process_time()
        m = rd.load_model(text)
        times[n] = time.process_time() - t0
        assert m.nq == n and list(m.support[n - 1]) == list(range(n))
    # 4x the links: about 4x the time (quadratic would be 16x); generous for a loaded machine
    assert times[2000] < 8 * times[500] + 0.5, times
    # 10 000 links: about 0.5 s here (urdfdom-py alone, the parser before, took 2-2.5 s)
    assert times[10000] < 2.0, times
