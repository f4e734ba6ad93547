"""Loop-closure constraints: closure of the shipped mechanisms, exact derivatives, the
slider-crank closed forms of seed 002 (section 4.2) and every cut-joint type of
:mod:`robot_dynamics.parsers.sidecar` on random spatial trees.

Independent routes: central finite differences of ``loop_residual`` / ``constraint_jacobian``
(A is the exact gradient of phi everywhere, also off the constraint manifold; ``Adot qd`` is
the second time derivative of phi along q + t qd), analytic formulas, and the relative-twist
structure of each joint type (which relative motions of frame_b w.r.t. frame_a are free).
"""

import suite_paths
import glob
import os

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.spatial import lie
from randtree import random_tree_urdf, two_branch_urdf

URDF_DIR = os.path.join(suite_paths.ROOT, 'urdf')
# robots with a loop sidecar next to the URDF (new mechanisms are picked up automatically)
LOOP_URDFS = sorted(
    p for p in glob.glob(os.path.join(URDF_DIR, '*.urdf')) if os.path.isfile(p[: -len('.urdf')] + '.loops.yaml')
)
LOOP_IDS = [os.path.basename(p) for p in LOOP_URDFS]

_MODELS = {}


def file_model(path):
    if path not in _MODELS:
        _MODELS[path] = rd.load_model(path)
    return _MODELS[path]


def fd_jacobian(f, q, h=1e-6):
    """Central-difference Jacobian of f at q."""
    cols = []
    for e in np.eye(len(q)):
        cols.append((f(q + h * e) - f(q - h * e)) / (2 * h))
    return np.array(cols).T


def check_derivatives(model, q, qd):
    """A == d phi/dq, Adot qd == d/dt(A) qd == d^2/dt^2 phi along q + t qd (finite differences)."""
    ct = rd.constraint_terms(model, q, qd)
    m = model.nconstraints
    assert ct.phi.shape == (m,) and ct.A.shape == (m, model.nq) and ct.bias.shape == (m,)
    phi = lambda x: rd.loop_residual(model, x)
    np.testing.assert_allclose(ct.A, fd_jacobian(phi, q), rtol=0, atol=1e-8)
    np.testing.assert_allclose(rd.constraint_jacobian(model, q), ct.A, rtol=0, atol=0)
    h = 1e-6
    dA = (rd.constraint_jacobian(model, q + h * qd) - rd.constraint_jacobian(model, q - h * qd)) / (2 * h)
    np.testing.assert_allclose(ct.bias, dA @ qd, rtol=0, atol=1e-7)
    h = 1e-3  # 5-point stencil, O(h^4)
    d2phi = (-phi(q + 2 * h * qd) + 16 * phi(q + h * qd) - 30 * phi(q) + 16 * phi(q - h * qd) - phi(q - 2 * h * qd)) / (
        12 * h**2
    )
    np.testing.assert_allclose(ct.bias, d2phi, rtol=0, atol=1e-7)
    np.testing.assert_allclose(rd.constraint_bias(model, q, qd), ct.bias, rtol=0, atol=0)


# ---------------------------------------------------------------------------- shipped robots


def test_loop_robots_found():
    """The glob finds the shipped closed-chain robots."""
    assert {'four_bar.urdf', 'slider_crank.urdf'} <= set(LOOP_IDS)


@pytest.mark.parametrize('path', LOOP_URDFS, ids=LOOP_IDS)
def test_reference_configuration_closes_the_loops(path):
    """At model.reference_q() every pair of cut frames coincides in the constrained rows."""
    model = file_model(path)
    assert model.loops and model.nconstraints == len(rd.constraint_row_names(model))
    q = model.reference_q()
    phi = rd.loop_residual(model, q)
    assert np.abs(phi).max() <= 1e-9, phi
    errs = rd.loop_errors(model, q)
    assert set(errs) == {lp.name for lp in model.loops}
    for name, (ep, er) in errs.items():
        assert ep <= 1e-9 and er <= 1e-9, (name, ep, er)
    # and a random configuration does not close them (the residual is not trivially zero)
    qr = model.random_configuration(np.random.default_rng(0))
    assert np.abs(rd.loop_residual(model, qr)).max() > 1e-3


@pytest.mark.parametrize('path', LOOP_URDFS, ids=LOOP_IDS)
def test_constraint_derivatives_match_finite_differences(path):
    """A, Adot qd vs finite differences at random q (off the manifold) and at reference_q."""
    model = file_model(path)
    rng = np.random.default_rng(1)
    qs = [model.reference_q()] + [model.random_configuration(rng) for _ in range(4)]
    for q in qs:
        check_derivatives(model, q, rng.normal(size=model.nq))


@pytest.mark.parametrize('path', LOOP_URDFS, ids=LOOP_IDS)
def test_batched_loop_residual_equals_per_sample(path):
    """loop_residual on (N, n) returns the per-sample residuals (N, m)."""
    model = file_model(path)
    Q = model.random_configuration(np.random.default_rng(3), size=4)
    out = rd.loop_residual(model, Q)
    assert out.shape == (4, model.nconstraints)
    np.testing.assert_array_equal(out, np.stack([rd.loop_residual(model, q) for q in Q]))


def test_four_bar_reference_closes_the_revolute_cut_in_position_and_axis():
    """Four-bar: the cut points coincide and the z axes of the cut frames are parallel."""
    model = file_model(os.path.join(URDF_DIR, 'four_bar.urdf'))
    T = rd.forward_kinematics(model, model.reference_q())
    Ta, Tb = T['coupler_tip'], T['rocker_tip']
    np.testing.assert_allclose(Ta[:3, 3], Tb[:3, 3], atol=1e-9)
    np.testing.assert_allclose(Ta[:3, 2], Tb[:3, 2], atol=1e-12)
    # planar mechanism: 5 rows, of which 2 are independent
    A = rd.constraint_jacobian(model, model.reference_q())
    assert A.shape == (5, 3) and np.linalg.matrix_rank(A, tol=1e-9) == 2


# ---------------------------------------------------------------------------- slider-crank


def test_slider_crank_matches_seed_002_closed_forms():
    """phi, A, Adot qd, M and h (eq. 66-69) of urdf/slider_crank.urdf with m = l = 1, g = 9.81."""
    model = file_model(os.path.join(URDF_DIR, 'slider_crank.urdf'))
    assert model.joint_names == ['crank_joint', 'rod_joint']
    assert model.nconstraints == 1
    m, l, g = 1.0, 1.0, 9.81
    assert np.isclose(np.linalg.norm(model.gravity), g)
    rng = np.random.default_rng(2)
    for _ in range(10):
        q1, q2 = rng.uniform(-np.pi, np.pi, 2)
        qd1, qd2 = rng.normal(size=2)
        q, qd = np.array([q1, q2]), np.array([qd1, qd2])
        s1, c1, s2, c2 = np.sin(q1), np.cos(q1), np.sin(q2), np.cos(q2)
        s12, c12 = np.sin(q1 + q2), np.cos(q1 + q2)
        ct = rd.constraint_terms(model, q, qd)
        np.testing.assert_allclose(ct.phi, [l * (s1 + s12)], atol=1e-14)
        np.testing.assert_allclose(ct.A, [[l * (c1 + c12), l * c12]], atol=1e-14)
        np.testing.assert_allclose(ct.bias, [-l * (s1 * qd1**2 + s12 * (qd1 + qd2) ** 2)], atol=1e-13)
        M = m * l**2 * np.array([[3 + 2 * c2, 1 + c2], [1 + c2, 1]])
        np.testing.assert_allclose(rd.crba(model, q), M, atol=1e-13)
        h = np.array(
            [
                -m * l**2 * s2 * (qd2**2 + 2 * qd1 * qd2) + m * l * g * (c12 + 2 * c1),
                m * l**2 * s2 * qd1**2 + m * l * g * c12,
            ]
        )
        np.testing.assert_allclose(rd.nonlinear_effects(model, q, qd), h, atol=1e-12)


def test_slider_crank_branch_one_is_the_reference_and_closes():
    """Branch I (q2 = -2 q1) satisfies phi = 0; A = l c1 [2, 1] there (seed 002)."""
    model = file_model(os.path.join(URDF_DIR, 'slider_crank.urdf'))
    q = model.reference_q()
    assert np.isclose(q[1], -2 * q[0])
    for th in np.linspace(-3, 3, 7):
        qq = np.array([th, -2 * th])
        assert abs(rd.loop_residual(model, qq)[0]) < 1e-14
        np.testing.assert_allclose(rd.constraint_jacobian(model, qq), [[2 * np.cos(th), np.cos(th)]], atol=1e-14)


def test_tree_without_loops_has_zero_rows():
    """A plain tree: m = 0 constraint rows, empty arrays of the right shapes."""
    xml, n = random_tree_urdf(4)
    model = rd.load_model(xml)
    ct = rd.constraint_terms(model, np.zeros(model.nq), np.zeros(model.nq))
    assert ct.phi.shape == (0,) and ct.A.shape == (0, model.nq) and ct.bias.shape == (0,)
    assert rd.loop_errors(model, np.zeros(model.nq)) == {}


# ---------------------------------------------------------------------------- every loop type


def _unit(v):
    return v / np.linalg.norm(v)


def _complement(k):
    """Any orthonormal (t1, t2) with (t1, t2, k) right-handed (independent of loops._basis)."""
    t1 = _unit(np.cross(k, np.random.default_rng(99).normal(size=3)))
    return t1, np.cross(k, t1)


E3 = np.eye(3)
Z3 = np.zeros(3)


def free_twists(ltype, axis=None, axes=None):
    """Relative twists (linear first, frame_a axes, at the common origin) the cut leaves free."""
    lin = lambda v: np.concatenate([v, Z3])
    ang = lambda v: np.concatenate([Z3, v])
    rot3 = [ang(e) for e in E3]
    k = axis
    if ltype in ('weld', 'weld6d'):
        return []
    if ltype in ('spherical', 'point', 'point3d'):
        return rot3
    if ltype == 'universal':
        return [ang(axes[0]), ang(axes[1])]
    t1, t2 = _complement(k)
    return {
        'revolute': [ang(k)],
        'prismatic': [lin(k)],
        'cylindrical': [lin(k), ang(k)],
        'planar': [lin(t1), lin(t2), ang(k)],
        'point_on_line': [lin(k)] + rot3,
        'point_on_plane': [lin(t1), lin(t2)] + rot3,
    }[ltype]


LOOP_TYPES = [
    'weld',
    'weld6d',
    'revolute',
    'prismatic',
    'cylindrical',
    'universal',
    'spherical',
    'point',
    'point3d',
    'planar',
    'point_on_line',
    'point_on_plane',
]
EXPECTED_ROWS = {
    'weld': 6,
    'weld6d': 6,
    'revolute': 5,
    'prismatic': 5,
    'cylindrical': 4,
    'universal': 4,
    'spherical': 3,
    'point': 3,
    'point3d': 3,
    'planar': 3,
    'point_on_line': 2,
    'point_on_plane': 1,
}


def test_every_loop_type_is_covered():
    """This file tests every cut-joint type the sidecar accepts (the joint-space ``coupling``:
    test_coupling.py)."""
    from robot_dynamics.parsers.sidecar import LOOP_TYPES as ALL

    assert set(ALL) - {'coupling'} == set(LOOP_TYPES)


def loop_spec(ltype, axis, axes):
    lp = {'name': 'cut', 'type': ltype, 'frame_a': 'cut_a', 'frame_b': 'cut_b'}
    if ltype == 'universal':
        lp['axes'] = [axes[0].tolist(), axes[1].tolist()]
    elif ltype not in ('weld', 'weld6d', 'spherical', 'point', 'point3d'):
        lp['axis'] = axis.tolist()
    return {'format': 'robot_dynamics/parsers/sidecar/1', 'loops': [lp]}


def model_with_cut_b_at(seed, spec, q, T_target):
    """Two-branch tree ``seed`` whose cut_b sits at the world pose T_target when q is applied."""
    open_model = rd.load_model(two_branch_urdf(seed), loops=spec)
    # cut_b has the identity origin in the last body of branch B in open_model
    X = lie.inv_se3(rd.frame_placement(open_model, q, 'cut_b')) @ T_target
    origin = (X[:3, 3], lie.matrix_to_rpy(X[:3, :3]))
    return rd.load_model(two_branch_urdf(seed, cut_b_origin=origin), loops=spec)


def closed_model(ltype, seed, displacement=True):
    """(model, q0, axis, axes): two-branch tree whose loop of ``ltype`` is closed at q0.

    cut_b is placed at T_a(q0) D, D = identity or a random finite motion generated by the
    twists the joint leaves free (so the loop is still closed).
    """
    rng = np.random.default_rng(seed)
    axis = _unit(rng.normal(size=3))
    a1 = _unit(rng.normal(size=3))
    axes = np.array([a1, _unit(np.cross(a1, rng.normal(size=3)))])
    spec = loop_spec(ltype, axis, axes)
    model = rd.load_model(two_branch_urdf(seed), loops=spec)
    q0 = model.random_configuration(rng)
    D = np.eye(4)
    if displacement:
        for xi in free_twists(ltype, axis, axes):
            D = D @ lie.exp_se3(xi * rng.uniform(-1.5, 1.5))
    Ta = rd.frame_placement(model, q0, 'cut_a')
    return model_with_cut_b_at(seed, spec, q0, Ta @ D), q0, axis, axes


@pytest.mark.parametrize('ltype', LOOP_TYPES)
def test_loop_type_row_count_and_names(ltype):
    """Each type has 6 - (free DOF) rows, one name per row."""
    model, *_ = closed_model(ltype, seed=10)
    (lp,) = model.loops
    assert lp.nrows == EXPECTED_ROWS[ltype] == 6 - len(free_twists(ltype, lp.axis, lp.axes))
    assert len(lp.row_names) == lp.nrows == model.nconstraints
    assert rd.constraint_row_names(model) == list(lp.row_names)


@pytest.mark.parametrize('seed', [20, 21, 22])
@pytest.mark.parametrize('ltype', LOOP_TYPES)
def test_loop_type_residual_vanishes_when_closed(ltype, seed):
    """phi = 0 with coincident cut frames and after any finite motion the joint allows."""
    for displaced in (False, True):
        model, q0, *_ = closed_model(ltype, seed, displacement=displaced)
        T = rd.forward_kinematics(model, q0)
        if not displaced:
            np.testing.assert_allclose(T['cut_b'], T['cut_a'], atol=1e-12)
        assert np.abs(rd.loop_residual(model, q0)).max() < 1e-12
        ep, er = rd.loop_errors(model, q0)['cut']
        assert ep < 1e-12 and er < 1e-12


@pytest.mark.parametrize('ltype', LOOP_TYPES)
def test_loop_type_residual_detects_every_constrained_motion(ltype):
    """A small relative motion outside the free set opens the loop (phi != 0)."""
    model, q0, axis, axes = closed_model(ltype, seed=30, displacement=False)
    F = np.array(free_twists(ltype, axis, axes)).reshape(-1, 6)
    cons = np.linalg.svd(F)[2][len(F) :] if len(F) else np.eye(6)  # complement of the free set
    assert cons.shape == (6 - len(F), 6)
    spec = loop_spec(ltype, axis, axes)
    Ta = rd.frame_placement(model, q0, 'cut_a')
    for xi in cons:
        m2 = model_with_cut_b_at(30, spec, q0, Ta @ lie.exp_se3(1e-3 * xi))
        assert np.abs(rd.loop_residual(m2, q0)).max() > 1e-5, xi


@pytest.mark.parametrize('ltype', LOOP_TYPES)
def test_loop_type_jacobian_and_bias_match_finite_differences(ltype):
    """A = d phi/dq and Adot qd = d^2 phi/dt^2, at the closed q0 and at random (open) q."""
    model, q0, *_ = closed_model(ltype, seed=40)
    rng = np.random.default_rng(41)
    for q in [q0] + [model.random_configuration(rng) for _ in range(3)]:
        check_derivatives(model, q, rng.normal(size=model.nq))


@pytest.mark.parametrize('ltype', LOOP_TYPES)
def test_loop_type_null_space_is_the_free_relative_motion(ltype):
    """At a closed configuration A = C Jrel (Jrel: relative twist of cut_b w.r.t. cut_a in
    cut_a axes, rank 6), and the null space of C is exactly the motion the joint allows."""
    model, q0, axis, axes = closed_model(ltype, seed=50, displacement=False)
    A = rd.constraint_jacobian(model, q0)
    Jrel = rd.frame_jacobian(model, q0, 'cut_b', 'local') - rd.frame_jacobian(model, q0, 'cut_a', 'local')
    assert np.linalg.matrix_rank(Jrel, tol=1e-8) == 6  # generic tree: spans se(3)
    C = A @ np.linalg.pinv(Jrel)
    np.testing.assert_allclose(C @ Jrel, A, atol=1e-10)  # A sees only relative motion
    F = free_twists(ltype, axis, axes)
    if F:
        np.testing.assert_allclose(C @ np.array(F).T, 0, atol=1e-10)
    assert np.linalg.matrix_rank(C, tol=1e-8) == 6 - len(F)
    assert np.linalg.matrix_rank(A, tol=1e-8) == model.nconstraints
    # dimension of the closed mechanism's velocity space
    _, s, _ = np.linalg.svd(A)
    assert model.nq - np.sum(s > 1e-8) == model.nq - 6 + len(F)


@pytest.mark.parametrize('ltype', LOOP_TYPES)
def test_loop_type_stays_regular_after_a_free_displacement(ltype):
    """After a finite allowed motion the loop is still closed with independent rows."""
    model, q0, *_ = closed_model(ltype, seed=60, displacement=True)
    assert np.abs(rd.loop_residual(model, q0)).max() < 1e-12
    assert np.linalg.matrix_rank(rd.constraint_jacobian(model, q0), tol=1e-8) == model.nconstraints
