"""Tree algorithms against Pinocchio (an independent implementation) at random states.

Covers every URDF of ``urdf/`` (globbed, so new robots are picked up automatically) and
random trees of :func:`randtree.random_tree_urdf` (chains and branched, up to 20 joints,
revolute / continuous / prismatic / fixed, random axes, origins and inertias). Each
quantity is compared with a FRESH ``pin.Data``. Errors are relative to
``max(1, max|reference|)``; the tolerance is 1e-10.

Pinocchio represents a ``continuous`` joint by (cos q, sin q) (nq = 2, nv = 1): see
:func:`pin_q`. Velocities, accelerations and torques map 1:1.
"""

import suite_paths
import functools
import glob
import os
import zlib

import numpy as np
import pytest

import robot_dynamics as rd
from randtree import random_tree_urdf

pin = pytest.importorskip('pinocchio')

TOL = 1e-10
URDF_DIR = os.path.join(suite_paths.ROOT, 'urdf')
URDFS = sorted(glob.glob(os.path.join(URDF_DIR, '*.urdf')))
N_RANDOM = 60
N_STATES = 3  # random states per model and quantity

CASES = [pytest.param(('file', p), id=os.path.basename(p)) for p in URDFS] + [
    pytest.param(('rand', s), id=f'rand{s}') for s in range(N_RANDOM)
]

PIN_REFS = {'world': 'WORLD', 'local': 'LOCAL', 'local_world_aligned': 'LOCAL_WORLD_ALIGNED'}

# worst relative error per quantity, reported at the end of the module (pytest -s / -rP)
WORST = {}


@functools.lru_cache(maxsize=None)
def load_pair(case):
    """(our Model, pinocchio Model) of the same URDF; random trees: seed even -> branched."""
    kind, arg = case
    if kind == 'file':
        return rd.load_model(arg), pin.buildModelFromUrdf(arg)
    xml, _ = random_tree_urdf(arg, branched=arg % 2 == 0)
    return rd.load_model(xml), pin.buildModelFromXML(xml)


def pin_q(model, q):
    """Pinocchio configuration of our q: continuous joints -> (cos q_i, sin q_i)."""
    out = []
    for qi, t in zip(q, model.joint_urdf_types):
        out.extend([np.cos(qi), np.sin(qi)] if t == 'continuous' else [qi])
    return np.array(out)


def pin_fext(fext):
    """Pinocchio external forces: universe entry + one Force per joint (linear first)."""
    return [pin.Force.Zero()] + [pin.Force(np.asarray(f, dtype=float)) for f in fext]


def relerr(ours, ref):
    """max|ours - ref| / max(1, max|ref|)."""
    ours, ref = np.asarray(ours, float), np.asarray(ref, float)
    assert ours.shape == ref.shape, (ours.shape, ref.shape)
    if ref.size == 0:
        return 0.0
    return float(np.max(np.abs(ours - ref)) / max(1.0, np.max(np.abs(ref))))


def check(name, ours, ref, tol=TOL, what=''):
    e = relerr(ours, ref)
    WORST[name] = max(WORST.get(name, 0.0), e)
    assert e <= tol, f'{name} {what}: relative error {e:.3e} > {tol:.0e}'


def states(model, seed, k=N_STATES):
    """k random (q, qd, qdd, tau, f_ext) tuples within the joint limits."""
    rng = np.random.default_rng(seed)
    n = model.nq
    for _ in range(k):
        yield (
            model.random_configuration(rng),
            rng.normal(size=n),
            rng.normal(size=n),
            rng.normal(size=n),
            rng.normal(size=(n, 6)),
        )


def seed_of(case):
    return zlib.crc32(os.path.basename(case[1]).encode()) if case[0] == 'file' else 1000 + case[1]


def body_frames(pm):
    """(name, id) of every BODY frame of the Pinocchio model (one per URDF link)."""
    return [(f.name, i) for i, f in enumerate(pm.frames) if f.type == pin.FrameType.BODY]


# ---------------------------------------------------------------------------- structure


def test_urdf_files_found():
    """The glob picks up the shipped robots (guards against a silently empty test set)."""
    names = {os.path.basename(p) for p in URDFS}
    assert {'four_bar.urdf', 'slider_crank.urdf'} <= names


@pytest.mark.parametrize('case', CASES)
def test_joint_and_frame_order_matches_pinocchio(case):
    """Same q order (urdfdom DFS, children by joint name), sizes and set of link frames."""
    model, pm = load_pair(case)
    assert [pm.names[i] for i in range(1, pm.njoints)] == model.joint_names
    assert pm.nv == model.nv
    assert pm.nq == model.nq + sum(t == 'continuous' for t in model.joint_urdf_types)
    assert sorted(n for n, _ in body_frames(pm)) == sorted(model.frame_names)
    np.testing.assert_allclose(pm.gravity.linear, model.gravity, rtol=0, atol=0)


# ---------------------------------------------------------------------------- dynamics


@pytest.mark.parametrize('case', CASES)
def test_rnea_with_external_wrenches_matches_pinocchio(case):
    """rnea(q, qd, qdd, f_ext) vs pin.rnea with the same body wrenches (joint frames)."""
    model, pm = load_pair(case)
    for q, qd, qdd, _, fext in states(model, seed_of(case)):
        ref = pin.rnea(pm, pm.createData(), pin_q(model, q), qd, qdd, pin_fext(fext))
        check('rnea+fext', rd.rnea(model, q, qd, qdd, f_ext=fext), ref)
        ref0 = pin.rnea(pm, pm.createData(), pin_q(model, q), qd, qdd)
        check('rnea', rd.rnea(model, q, qd, qdd), ref0)


@pytest.mark.parametrize('case', CASES)
def test_crba_matches_pinocchio(case):
    """M(q) vs pin.crba (upper triangle only: symmetrised); ours must be exactly symmetric."""
    model, pm = load_pair(case)
    for q, *_ in states(model, seed_of(case)):
        ref = pin.crba(pm, pm.createData(), pin_q(model, q))
        ref = np.triu(ref) + np.triu(ref, 1).T
        M = rd.crba(model, q)
        np.testing.assert_array_equal(M, M.T)
        e = np.linalg.norm(M - ref, 2) / max(1.0, np.linalg.norm(ref, 2))
        WORST['crba'] = max(WORST.get('crba', 0.0), e)
        assert e <= TOL, f'crba: relative error {e:.3e}'


@pytest.mark.parametrize('case', CASES)
def test_forward_dynamics_matches_pinocchio_aba(case):
    """forward_dynamics(q, qd, tau, f_ext) vs pin.aba (with and without external wrenches)."""
    model, pm = load_pair(case)
    for q, qd, _, tau, fext in states(model, seed_of(case)):
        ref = pin.aba(pm, pm.createData(), pin_q(model, q), qd, tau)
        check('forward_dynamics', rd.forward_dynamics(model, q, qd, tau), ref)
        ref = pin.aba(pm, pm.createData(), pin_q(model, q), qd, tau, pin_fext(fext))
        check('forward_dynamics+fext', rd.forward_dynamics(model, q, qd, tau, f_ext=fext), ref)


@pytest.mark.parametrize('case', CASES)
def test_gravity_torques_matches_pinocchio(case):
    """g(q) vs pin.computeGeneralizedGravity; nonlinear_effects vs pin.nonLinearEffects."""
    model, pm = load_pair(case)
    for q, qd, *_ in states(model, seed_of(case)):
        ref = pin.computeGeneralizedGravity(pm, pm.createData(), pin_q(model, q))
        check('gravity_torques', rd.gravity_torques(model, q), ref)
        ref = pin.nonLinearEffects(pm, pm.createData(), pin_q(model, q), qd)
        check('nonlinear_effects', rd.nonlinear_effects(model, q, qd), ref)


@pytest.mark.parametrize('case', CASES[:2] + CASES[len(URDFS) : len(URDFS) + 10])
def test_gravity_override_matches_pinocchio(case):
    """The ``gravity=`` argument of rnea / forward_dynamics vs Pinocchio with model.gravity set."""
    model, pm = load_pair(case)
    pm = pin.Model(pm)  # copy: the cached model keeps its gravity
    g = np.random.default_rng(seed_of(case)).normal(size=3) * 5
    pm.gravity = pin.Motion(g, np.zeros(3))
    for q, qd, qdd, tau, _ in states(model, seed_of(case), k=2):
        check(
            'rnea(gravity=)',
            rd.rnea(model, q, qd, qdd, gravity=g),
            pin.rnea(pm, pm.createData(), pin_q(model, q), qd, qdd),
        )
        check(
            'forward_dynamics(gravity=)',
            rd.forward_dynamics(model, q, qd, tau, gravity=g),
            pin.aba(pm, pm.createData(), pin_q(model, q), qd, tau),
        )
        check(
            'gravity_torques(gravity=)',
            rd.gravity_torques(model, q, gravity=g),
            pin.computeGeneralizedGravity(pm, pm.createData(), pin_q(model, q)),
        )


@pytest.mark.parametrize('case', CASES)
def test_energies_match_pinocchio(case):
    """Kinetic and potential energy vs pin.computeKineticEnergy / computePotentialEnergy."""
    model, pm = load_pair(case)
    for q, qd, *_ in states(model, seed_of(case)):
        d = pm.createData()
        pin.forwardKinematics(pm, d, pin_q(model, q), qd)
        check('kinetic_energy', rd.kinetic_energy(model, q, qd), pin.computeKineticEnergy(pm, d))
        d = pm.createData()
        check('potential_energy', rd.potential_energy(model, q), pin.computePotentialEnergy(pm, d, pin_q(model, q)))


# ---------------------------------------------------------------------------- kinematics


@pytest.mark.parametrize('case', CASES)
def test_forward_kinematics_of_every_body_frame_matches_pinocchio(case):
    """World placement of every URDF link vs data.oMf after updateFramePlacements."""
    model, pm = load_pair(case)
    for q, *_ in states(model, seed_of(case)):
        d = pm.createData()
        pin.forwardKinematics(pm, d, pin_q(model, q))
        pin.updateFramePlacements(pm, d)
        T = rd.forward_kinematics(model, q)
        for name, fid in body_frames(pm):
            check('forward_kinematics', T[name], d.oMf[fid].homogeneous, what=name)


@pytest.mark.parametrize('reference', list(PIN_REFS))
@pytest.mark.parametrize('case', CASES)
def test_frame_jacobian_matches_pinocchio(case, reference):
    """frame_jacobian of every link vs getFrameJacobian (WORLD / LOCAL / LWA)."""
    model, pm = load_pair(case)
    pref = getattr(pin.ReferenceFrame, PIN_REFS[reference])
    for q, *_ in states(model, seed_of(case), k=2):
        d = pm.createData()
        pin.computeJointJacobians(pm, d, pin_q(model, q))
        pin.updateFramePlacements(pm, d)
        for name, fid in body_frames(pm):
            J = rd.frame_jacobian(model, q, name, reference)
            ref = pin.getFrameJacobian(pm, d, fid, pref).reshape(6, pm.nv)  # nv = 1 -> (6,)
            check(f'frame_jacobian/{reference}', J, ref, what=name)


@pytest.mark.parametrize('reference', list(PIN_REFS))
@pytest.mark.parametrize('case', CASES)
def test_frame_jacobian_time_variation_matches_pinocchio(case, reference):
    """dJ/dt of every link vs computeJointJacobiansTimeVariation + getFrameJacobianTimeVariation."""
    model, pm = load_pair(case)
    pref = getattr(pin.ReferenceFrame, PIN_REFS[reference])
    for q, qd, *_ in states(model, seed_of(case), k=2):
        d = pm.createData()
        pin.computeJointJacobiansTimeVariation(pm, d, pin_q(model, q), qd)
        pin.updateFramePlacements(pm, d)
        for name, fid in body_frames(pm):
            dJ = rd.frame_jacobian_time_variation(model, q, qd, name, reference)
            ref = pin.getFrameJacobianTimeVariation(pm, d, fid, pref).reshape(6, pm.nv)
            check(f'frame_jacobian_time_variation/{reference}', dJ, ref, what=name)


# ---------------------------------------------------------------------------- self-consistency


@pytest.mark.parametrize('case', CASES)
def test_forward_and_inverse_dynamics_round_trip(case):
    """forward_dynamics(rnea(qdd)) == qdd and rnea(forward_dynamics(tau)) == tau (with f_ext)."""
    model, _ = load_pair(case)
    for q, qd, qdd, tau, fext in states(model, seed_of(case)):
        for F in (None, fext):
            t = rd.rnea(model, q, qd, qdd, f_ext=F)
            check('fd(rnea(qdd))', rd.forward_dynamics(model, q, qd, t, f_ext=F), qdd)
            a = rd.forward_dynamics(model, q, qd, tau, f_ext=F)
            check('rnea(fd(tau))', rd.rnea(model, q, qd, a, f_ext=F), tau)


@pytest.mark.parametrize('case', CASES[:2] + CASES[len(URDFS) : len(URDFS) + 10])
def test_batched_inputs_equal_per_sample_calls(case):
    """(N, n) inputs give the per-sample results for rnea, crba, forward_dynamics and FK."""
    model, _ = load_pair(case)
    rng = np.random.default_rng(seed_of(case))
    N, n = 5, model.nq
    Q = model.random_configuration(rng, size=N)
    QD, QDD, TAU = (rng.normal(size=(N, n)) for _ in range(3))
    FE = rng.normal(size=(N, n, 6))

    def same(batch, singles):
        np.testing.assert_allclose(batch, np.stack(singles), rtol=1e-14, atol=1e-14)

    same(rd.rnea(model, Q, QD, QDD), [rd.rnea(model, *x) for x in zip(Q, QD, QDD)])
    same(
        rd.rnea(model, Q, QD, QDD, f_ext=FE),
        [rd.rnea(model, q, qd, qdd, f_ext=f) for q, qd, qdd, f in zip(Q, QD, QDD, FE)],
    )
    same(rd.crba(model, Q), [rd.crba(model, q) for q in Q])
    same(rd.forward_dynamics(model, Q, QD, TAU), [rd.forward_dynamics(model, *x) for x in zip(Q, QD, TAU)])
    same(
        rd.forward_dynamics(model, Q, QD, TAU, f_ext=FE),
        [rd.forward_dynamics(model, q, qd, t, f_ext=f) for q, qd, t, f in zip(Q, QD, TAU, FE)],
    )
    same(rd.forward_kinematics(model, Q, as_array=True), [rd.forward_kinematics(model, q, as_array=True) for q in Q])
    Tb, Ts = rd.forward_kinematics(model, Q), [rd.forward_kinematics(model, q) for q in Q]
    assert list(Tb) == model.frame_names
    for name in Tb:
        same(Tb[name], [T[name] for T in Ts])
    same(rd.gravity_torques(model, Q), [rd.gravity_torques(model, q) for q in Q])
    same(rd.nonlinear_effects(model, Q, QD), [rd.nonlinear_effects(model, *x) for x in zip(Q, QD)])
    same(rd.kinetic_energy(model, Q, QD), [rd.kinetic_energy(model, *x) for x in zip(Q, QD)])
    same(rd.potential_energy(model, Q), [rd.potential_energy(model, q) for q in Q])
    frame = model.frame_names[-1]
    same(rd.frame_jacobian(model, Q, frame, 'local'), [rd.frame_jacobian(model, q, frame, 'local') for q in Q])
    # a single (n, 6) f_ext broadcasts over the batch
    same(
        rd.rnea(model, Q, QD, QDD, f_ext=FE[0]),
        [rd.rnea(model, q, qd, qdd, f_ext=FE[0]) for q, qd, qdd in zip(Q, QD, QDD)],
    )


def test_random_trees_cover_the_required_variety():
    """The random set really has chains and branched trees, all joint types, up to 20 joints."""
    types, sizes, branched, chains = set(), [], 0, 0
    for s in range(N_RANDOM):
        model, _ = load_pair(('rand', s))
        types.update(model.joint_urdf_types)
        sizes.append(model.nq)
        is_chain = all(p == i - 1 for i, p in enumerate(model.parents))
        chains += is_chain
        branched += not is_chain
        xml = model.urdf_xml
        types.update({'fixed'} if 'type="fixed"' in xml else set())
    assert types == {'revolute', 'continuous', 'prismatic', 'fixed'}
    assert max(sizes) >= 15 and min(sizes) <= 3 and max(sizes) <= 20
    assert branched >= 10 and chains >= 10


def teardown_module(module):
    if WORST:
        print('\nworst relative errors vs Pinocchio / round trips:')
        for k in sorted(WORST):
            print(f'  {k:45s} {WORST[k]:.2e}')
