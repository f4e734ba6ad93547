"""Projection-matrix closed-chain dynamics (seed 002): projector, forward dynamics, oracles.

Independent routes: numpy SVD for the projector, the readable Python
``rd.constraint_terms``/``crba``/``nonlinear_effects`` for the compiled kernels, finite
differences for ``C qd``, the Lagrange-multiplier form (App. B) and Pinocchio's
``constraintDynamics`` for the dynamics, the closed forms of brief 002 par. 4.2.
"""

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.algorithms import _projection_kernels as PK
from robot_dynamics import projection as pj
from robot_dynamics.errors import AssemblyError, ConstraintRankError, InputError
from projection_helpers import PinClosedChain, admissible_state, model, sc_A, sc_h, sc_M, sidecar
from randtree import two_branch_urdf

ROBOTS = ['four_bar', 'five_bar', 'slider_crank']


# --------------------------------------------------------------------------- projector
def _shapes():
    rng = np.random.default_rng(1)
    out = []
    for m, n, r in [
        (2, 5, 2),
        (5, 5, 5),
        (7, 4, 4),
        (6, 5, 3),
        (3, 6, 1),
        (4, 4, 0),
        (0, 3, 0),
        (1, 2, 1),
        (9, 3, 2),
        (20, 15, 9),
        (13, 16, 13),
        (5, 12, 4),
    ]:  # n > 12: the LAPACK path
        A = rng.normal(size=(m, r)) @ rng.normal(size=(r, n)) if r else np.zeros((m, n))
        out.append((A, r))
    return out


@pytest.mark.parametrize('A,r', _shapes())
def test_pinv_abs_algebra(A, r):
    m, n = A.shape
    Ap, P, rank, s = pj.pinv_abs(A)
    assert rank == r
    assert Ap.shape == (n, m) and P.shape == (n, n) and s.shape == (min(m, n),)
    np.testing.assert_allclose(P, P.T, atol=1e-14)
    np.testing.assert_allclose(P @ P, P, atol=1e-13)
    if m:
        np.testing.assert_allclose(A @ P, 0, atol=1e-12)
    assert np.linalg.matrix_rank(P, tol=1e-8) == n - r
    np.testing.assert_allclose(P, np.eye(n) - Ap @ A, atol=1e-12)  # (15)
    # (4): P = V2 V2^T from an independent numpy SVD
    if m:
        _, s2, Vt = np.linalg.svd(A, full_matrices=True)
        V2 = Vt[r:].T
        np.testing.assert_allclose(P, V2 @ V2.T, atol=1e-12)
        np.testing.assert_allclose(s, s2, atol=1e-12)
        # Moore-Penrose conditions
        np.testing.assert_allclose(A @ Ap @ A, A, atol=1e-11)
        np.testing.assert_allclose(Ap @ A @ Ap, Ap, atol=1e-11)
        np.testing.assert_allclose(A @ Ap, (A @ Ap).T, atol=1e-12)
    else:
        np.testing.assert_array_equal(P, np.eye(n))


def test_pinv_abs_invariances():
    """P invariant under A -> T A, duplicated rows, added linear combinations of rows."""
    rng = np.random.default_rng(2)
    A = rng.normal(size=(3, 6))
    P = pj.pinv_abs(A).P
    T = rng.normal(size=(3, 3)) + 3 * np.eye(3)
    np.testing.assert_allclose(pj.pinv_abs(T @ A).P, P, atol=1e-12)
    np.testing.assert_allclose(pj.pinv_abs(np.vstack([A, A[1]])).P, P, atol=1e-12)
    np.testing.assert_allclose(pj.pinv_abs(np.vstack([A, 2 * A[0] - A[2], A])).P, P, atol=1e-12)
    assert pj.pinv_abs(np.vstack([A, A])).rank == 3


@pytest.mark.parametrize(
    'delta,expected',
    [
        (1e-8, np.eye(2)),
        (1e-7, np.eye(2)),
        (1e-5, np.array([[0.2, -0.4], [-0.4, 0.8]])),
        (1.0, np.array([[0.2, -0.4], [-0.4, 0.8]])),
    ],
)
def test_absolute_tolerance_semantics(delta, expected):
    """Brief par. 8.2: A = delta [2, 1] is dropped iff its singular value sqrt(5) delta <= eps,
    whatever sigma_max is (a relative rcond would never drop a single row)."""
    res = pj.pinv_abs(delta * np.array([[2.0, 1.0]]))  # default eps = 1e-6
    np.testing.assert_allclose(res.P, expected, atol=1e-14)
    assert res.rank == (0 if np.sqrt(5) * delta <= pj.DEFAULT_EPS else 1)
    # per-call override: a larger eps drops it, eps = 0 keeps every non-zero sigma
    assert pj.pinv_abs(delta * np.array([[2.0, 1.0]]), eps=10.0 * delta).rank == 0
    assert pj.pinv_abs(delta * np.array([[2.0, 1.0]]), eps=0.0).rank == 1
    # the guard: numpy's relative pinv keeps the row in every case
    Ad = delta * np.array([[2.0, 1.0]])
    np.testing.assert_allclose(np.eye(2) - np.linalg.pinv(Ad, rcond=1e-6) @ Ad, [[0.2, -0.4], [-0.4, 0.8]], atol=1e-9)


def test_pinv_abs_bad_input():
    with pytest.raises(InputError):
        pj.pinv_abs(np.ones(3))
    with pytest.raises(InputError):
        pj.pinv_abs([[np.nan, 1.0]])
    with pytest.raises(InputError):
        pj.pinv_abs([[1.0, 1.0]], eps=-1.0)


# --------------------------------------------------------------------------- kernels vs Python
LOOP_TYPES = [
    ('revolute', {'axis': [0.3, -0.2, 1.0]}),
    ('prismatic', {'axis': [1, 2, 0.5]}),
    ('cylindrical', {'axis': [0, 1, 1]}),
    ('weld', {}),
    ('spherical', {}),
    ('universal', {'axes': [[1, 0, 0], [0, 1, 0]]}),
    ('planar', {'axis': [0, 0, 1]}),
    ('point_on_line', {'axis': [1, 1, 0]}),
    ('point_on_plane', {'axis': [0, 1, 0]}),
]


def _spatial_model(seed):
    loops = {
        'format': 'robot_dynamics/parsers/sidecar/1',
        'loops': [
            dict(name=f'l{k}', type=t, frame_a='cut_a', frame_b='cut_b', **kw) for k, (t, kw) in enumerate(LOOP_TYPES)
        ],
    }
    return rd.load_model(two_branch_urdf(seed), loops=loops)


@pytest.mark.parametrize('name', ROBOTS + ['spatial0', 'spatial1'])
def test_kernel_terms_match_python_route(name):
    """The compiled stage (phi, A, Adot qd, M, h, T, U) equals the readable Python route."""
    m = _spatial_model(int(name[-1])) if name.startswith('spatial') else model(name)
    rng = np.random.default_rng(3)
    for _ in range(4):
        q = m.random_configuration(rng)
        qd = rng.normal(size=m.nq)
        res = pj.constrained_forward_dynamics(m, q, qd, np.zeros(m.nq))
        ct = rd.constraint_terms(m, q, qd)
        np.testing.assert_allclose(res.phi, ct.phi, atol=1e-13)
        np.testing.assert_allclose(res.A, ct.A, atol=1e-13)
        np.testing.assert_allclose(res.bias, ct.bias, atol=1e-11)
        np.testing.assert_allclose(res.M, rd.crba(m, q), atol=1e-13)
        np.testing.assert_allclose(res.h, rd.nonlinear_effects(m, q, qd), atol=1e-11)
        np.testing.assert_allclose(res.kinetic, rd.kinetic_energy(m, q, qd), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(res.potential, rd.potential_energy(m, q), rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- C qd (eq. 16)
@pytest.mark.parametrize('name', ROBOTS)
def test_Cqd_equals_finite_difference_of_P(name):
    m = model(name)
    rng = np.random.default_rng(4)
    for _ in range(3):
        q, qd = admissible_state(m, rng)
        res = pj.constrained_forward_dynamics(m, q, qd, np.zeros(m.nq))
        hstep = 1e-6
        Pp = pj.pinv_abs(rd.constraint_terms(m, q + hstep * qd).A).P
        Pm = pj.pinv_abs(rd.constraint_terms(m, q - hstep * qd).A).P
        Cqd_fd = (Pp - Pm) / (2 * hstep) @ qd
        np.testing.assert_allclose(res.Cqd, Cqd_fd, rtol=1e-6, atol=1e-7 * max(1, np.abs(Cqd_fd).max()))
        np.testing.assert_allclose(res.P @ res.Cqd, 0, atol=1e-12)  # C qd in N-perp


def test_Pdot_matrix_form_off_manifold():
    """[R] Pdot = -A+ Adot P - (A+ Adot P)^T for any qd (constant rank): FD of P vs FD of A."""
    m = model('four_bar')
    rng = np.random.default_rng(5)
    q, _ = admissible_state(m, rng)
    qd = rng.normal(size=m.nq)  # NOT admissible
    h = 1e-6
    Adot = (rd.constraint_terms(m, q + h * qd).A - rd.constraint_terms(m, q - h * qd).A) / (2 * h)
    pi = pj.pinv_abs(rd.constraint_terms(m, q).A)
    X = pi.pinv @ Adot @ pi.P
    Pdot = -X - X.T
    Pdot_fd = (
        pj.pinv_abs(rd.constraint_terms(m, q + h * qd).A).P - pj.pinv_abs(rd.constraint_terms(m, q - h * qd).A).P
    ) / (2 * h)
    np.testing.assert_allclose(Pdot, Pdot_fd, atol=1e-7)
    # and eq. (16) disagrees with Pdot qd here (it needs A qd = 0): the test can fail
    res = pj.constrained_forward_dynamics(m, q, qd, np.zeros(m.nq))
    assert np.linalg.norm(res.Cqd - Pdot_fd @ qd) > 1e-3


# --------------------------------------------------------------------------- constraint inertia
@pytest.mark.parametrize('name', ROBOTS)
def test_variants_agree_and_constraint_inertia(name):
    m = model(name)
    rng = np.random.default_rng(6)
    for _ in range(3):
        q, qd = admissible_state(m, rng)
        tau = rng.normal(size=m.nq)
        r0 = pj.constrained_forward_dynamics(m, q, qd, tau, 'Mc')
        for var, g in [('Mc_sym', None), ('Mc_gamma', None), ('Mc_gamma', 0.37)]:
            r1 = pj.constrained_forward_dynamics(m, q, qd, tau, var, gamma=g)
            np.testing.assert_allclose(r1.qdd, r0.qdd, rtol=1e-10, atol=1e-10)
            np.testing.assert_allclose(r1.F, r0.F, rtol=1e-10, atol=1e-10)
        M, P, n = r0.M, r0.P, m.nq
        Mc = M + P @ M - M @ P
        np.testing.assert_allclose(0.5 * (Mc + Mc.T), M, atol=1e-14)  # Thm 2
        np.testing.assert_allclose(qd @ Mc @ qd, qd @ M @ qd, rtol=1e-12)  # Remark 3
        Ms = P @ M @ P + (np.eye(n) - P) @ M @ (np.eye(n) - P)
        assert np.linalg.eigvalsh(Ms)[0] > 0  # Prop. 1
        # the solution really solves (22)
        np.testing.assert_allclose(Mc @ r0.qdd, P @ (tau - r0.h) + M @ r0.Cqd, atol=1e-10)
        assert r1.gamma == 0.37 and r0.gamma is None


def test_bad_variant_and_shapes():
    m = model('slider_crank')
    with pytest.raises(InputError):
        pj.constrained_forward_dynamics(m, [0.3, -0.6], [0, 0], [0, 0], variant='Mc2')
    with pytest.raises(InputError):
        pj.constrained_forward_dynamics(m, [0.3, -0.6, 0], [0, 0], [0, 0])
    with pytest.raises(InputError):
        pj.constrained_forward_dynamics(m, [0.3, np.nan], [0, 0], [0, 0])
    with pytest.raises(InputError):
        pj.constrained_forward_dynamics(m, [0.3, -0.6], [0, 0], [0, 0], 'Mc_gamma', gamma=-1.0)


# --------------------------------------------------------------------------- Lagrange / regression
Q_REG, QD_REG, F_REG = np.array([0.3, -0.6]), np.array([1.2, -2.4]), np.array([0.7, -0.4])
QDD_REG, FC_REG = np.array([-7.039071, 14.078142]), np.array([-20.376482, -10.188241])


@pytest.mark.parametrize('variant', ['Mc', 'Mc_sym', 'Mc_gamma'])
def test_slider_crank_regression_point(variant):
    """Brief 002 par. 5.2: q = (0.3, -0.6), qd = (1.2, -2.4), f = (0.7, -0.4)."""
    m = model('slider_crank')
    res = pj.constrained_forward_dynamics(m, Q_REG, QD_REG, F_REG, variant)
    np.testing.assert_allclose(res.qdd, QDD_REG, atol=6e-7)
    np.testing.assert_allclose(res.F, FC_REG, atol=6e-7)
    # closed forms (68)-(69): the open-tree terms of the URDF are the paper's
    np.testing.assert_allclose(res.M, sc_M(Q_REG), atol=1e-13)
    np.testing.assert_allclose(res.h, sc_h(Q_REG, QD_REG), atol=1e-12)
    np.testing.assert_allclose(res.A, sc_A(Q_REG), atol=1e-14)
    lag = pj.lagrange_forward_dynamics(m, Q_REG, QD_REG, F_REG)
    np.testing.assert_allclose(res.qdd, lag.qdd, rtol=1e-12)
    np.testing.assert_allclose(res.F, lag.F, rtol=1e-12)
    np.testing.assert_allclose(res.lam, lag.lam, rtol=1e-12)
    # a duplicated constraint row gives the same qdd and F
    sc = sidecar('slider_crank')
    sc['loops'] = sc['loops'] + [dict(sc['loops'][0], name='copy')]
    res2 = pj.constrained_forward_dynamics(model('slider_crank', sc), Q_REG, QD_REG, F_REG, variant)
    np.testing.assert_allclose(res2.qdd, res.qdd, rtol=1e-12)
    np.testing.assert_allclose(res2.F, res.F, rtol=1e-12)


@pytest.mark.parametrize('name,rows', [('slider_crank', None), ('four_bar', [0, 1]), ('five_bar', [0, 1])])
def test_lagrange_equivalence_full_rank(name, rows):
    """Where A (or its independent in-plane rows) has full row rank: qdd, F and lam agree
    with the Lagrange form (App. B), and F = A^T lam for both multiplier sets."""
    m = model(name)
    rng = np.random.default_rng(7)
    for _ in range(5):
        q, qd = admissible_state(m, rng, speed=2.0)
        tau = 3 * rng.normal(size=m.nq)
        res = pj.constrained_forward_dynamics(m, q, qd, tau)
        lag = pj.lagrange_forward_dynamics(m, q, qd, tau, rows=rows)
        sc = 1 + np.abs(lag.qdd).max()
        assert np.abs(res.qdd - lag.qdd).max() <= 1e-10 * sc
        assert np.abs(res.F - lag.F).max() <= 1e-10 * (1 + np.abs(lag.F).max())
        np.testing.assert_allclose(res.A.T @ res.lam, res.F, atol=1e-10 * (1 + np.abs(res.F).max()))
        np.testing.assert_allclose(res.A[lag.rows].T @ lag.lam, res.F, atol=1e-10 * (1 + np.abs(res.F).max()))
        if rows is not None:  # the identically-zero out-of-plane rows carry nothing
            np.testing.assert_allclose(res.lam[lag.rows], lag.lam, rtol=1e-9, atol=1e-9)
            np.testing.assert_allclose(res.lam[2:], 0, atol=1e-9)
    if rows is not None:
        with pytest.raises(ConstraintRankError):
            pj.lagrange_forward_dynamics(m, q, qd, tau)  # all 5 rows: singular


def _with_extra_loops(name, extra):
    sc = sidecar(name)
    sc['loops'] = sc['loops'] + extra
    return model(name, sc)


@pytest.mark.parametrize(
    'name,extra',
    [
        ('slider_crank', [dict(name='dup', type='point_on_plane', frame_a='rail', frame_b='slider', axis=[0, 2.5, 0])]),
        ('slider_crank', [dict(name='online', type='point_on_line', frame_a='rail', frame_b='slider', axis=[1, 0, 0])]),
        (
            'slider_crank',
            [
                dict(name=f'c{k}', type='point_on_plane', frame_a='rail', frame_b='slider', axis=[0, 1, 0])
                for k in range(3)
            ],
        ),  # m = 4 > n = 2
        ('four_bar', [dict(name='pt', type='spherical', frame_a='coupler_tip', frame_b='rocker_tip')]),
        (
            'five_bar',
            [
                dict(name='pt', type='point', frame_a='distal2_tip', frame_b='distal1_tip'),
                dict(name='rev2', type='revolute', frame_a='distal1_tip', frame_b='distal2_tip', axis=[0, 0, 1]),
            ],
        ),
    ],
)
def test_redundant_constraints_give_identical_dynamics(name, extra):
    """Duplicated rows / redundant loops: same qdd and F (<= 1e-10), lam min-norm with
    A^T lam = F, while the Lagrange oracle reports the singular A M^-1 A^T."""
    m0 = model(name)
    m1 = _with_extra_loops(name, extra)
    assert m1.nconstraints > m0.nconstraints
    rng = np.random.default_rng(8)
    for _ in range(3):
        q, qd = admissible_state(m0, rng, speed=2.0)
        tau = rng.normal(size=m0.nq)
        r0 = pj.constrained_forward_dynamics(m0, q, qd, tau)
        r1 = pj.constrained_forward_dynamics(m1, q, qd, tau)
        assert r1.rank == r0.rank
        sc = 1 + np.abs(r0.qdd).max()
        assert np.abs(r1.qdd - r0.qdd).max() <= 1e-10 * sc
        assert np.abs(r1.F - r0.F).max() <= 1e-10 * (1 + np.abs(r0.F).max())
        np.testing.assert_allclose(r1.A.T @ r1.lam, r1.F, atol=1e-10 * (1 + np.abs(r0.F).max()))
        # minimum norm: lam in R(A) (orthogonal to N(A^T)), so no smaller solution exists
        lam_ls = np.linalg.lstsq(r1.A.T, r1.F, rcond=1e-10)[0]
        np.testing.assert_allclose(r1.lam, lam_ls, atol=1e-8 * (1 + np.abs(lam_ls).max()))
        assert np.linalg.norm(r1.lam) < np.linalg.norm(r0.lam) + 1e-12 or name != 'slider_crank'
    with pytest.raises(ConstraintRankError):
        pj.lagrange_forward_dynamics(m1, q, qd, tau)


def test_no_constraints_is_tree_dynamics():
    m = rd.load_model(model('four_bar').source, loops=False)
    rng = np.random.default_rng(9)
    q, qd, tau = rng.normal(size=3), rng.normal(size=3), rng.normal(size=3)
    res = pj.constrained_forward_dynamics(m, q, qd, tau)
    assert res.rank == 0 and res.lam.shape == (0,) and res.sigma.shape == (0,)
    np.testing.assert_array_equal(res.P, np.eye(3))
    np.testing.assert_allclose(res.qdd, rd.forward_dynamics(m, q, qd, tau), rtol=1e-12)
    np.testing.assert_allclose(res.F, 0, atol=1e-12)


def test_singular_configuration_is_nan_free():
    """Slider-crank exactly at the branch crossing (-pi/2, pi): A = 0, rank 0, P = I; the
    constraint is dropped (F = 0) and everything is finite."""
    m = model('slider_crank')
    q = np.array([-np.pi / 2, np.pi])
    for qd in ([0.0, 0.0], [1.0, -2.0], [1.0, 0.0]):
        res = pj.constrained_forward_dynamics(m, q, qd, [0.5, 0.1])
        assert res.rank == 0 and res.sigma_min < 1e-15
        assert np.all(np.isfinite(res.qdd)) and np.all(np.isfinite(res.lam))
        np.testing.assert_allclose(res.P, np.eye(2), atol=1e-15)
        np.testing.assert_allclose(res.F, 0, atol=1e-12)
        np.testing.assert_allclose(res.qdd, rd.forward_dynamics(m, q, qd, [0.5, 0.1]), rtol=1e-12)


# --------------------------------------------------------------------------- Pinocchio
@pytest.mark.parametrize('name', ['four_bar', 'five_bar'])
def test_against_pinocchio_constraint_dynamics(name):
    """Pinocchio constraintDynamics on the SAME urdf, the loop exported as one CONTACT_3D
    between the cut frames, at random admissible states: qdd and F agree to 1e-8."""
    pytest.importorskip('pinocchio')
    m = model(name)
    pc = PinClosedChain(m)
    rng = np.random.default_rng(10)
    for _ in range(20):
        q, qd = admissible_state(m, rng, spread=0.5, speed=2.0)
        tau = 2 * rng.normal(size=m.nq)
        res = pj.constrained_forward_dynamics(m, q, qd, tau)
        qdd_p, F_p = pc.forward(q, qd, tau)
        assert np.abs(res.qdd - qdd_p).max() <= 1e-8
        assert np.abs(res.F - F_p).max() <= 1e-8


# --------------------------------------------------------------------------- assembly
@pytest.mark.parametrize('name,rank', [('four_bar', 2), ('five_bar', 2), ('slider_crank', 1)])
def test_reference_configurations_close(name, rank):
    m = model(name)
    q = m.reference_q()
    assert np.linalg.norm(rd.loop_residual(m, q)) <= 1e-12
    assert pj.constrained_forward_dynamics(m, q, np.zeros(m.nq), np.zeros(m.nq)).rank == rank


def test_five_bar_geometry():
    """The five-bar: 2 actuated base joints, 2 passive elbows (+ the passive cut joint C),
    the tool at the distal joint, A of rank 2 (in-plane rows) at the reference."""
    m = model('five_bar')
    assert m.actuated == ['motor1_joint', 'motor2_joint']
    assert m.passive == ['elbow1_joint', 'elbow2_joint'] and len(m.loops) == 1
    q = m.reference_q()
    T = rd.forward_kinematics(m, q)
    np.testing.assert_allclose(T['tool'][:3, 3], T['distal2_tip'][:3, 3], atol=1e-12)
    np.testing.assert_allclose(T['tool'][:3, 3], [0.0, 0.0, 0.9], atol=1e-12)  # x-z plane
    res = pj.constrained_forward_dynamics(m, q, np.zeros(4), np.zeros(4))
    assert res.rank == 2 and res.sigma_min > 0.1
    assert np.all(m.mass > 0)


def test_assemble_keeps_independent_and_closes():
    m = model('five_bar')
    rng = np.random.default_rng(11)
    ref = m.reference_q()
    for _ in range(5):
        qi = ref[m.independent_indices] + rng.uniform(-0.4, 0.4, 2)
        res = pj.assemble(m, qi)
        assert res.residual <= 1e-12
        np.testing.assert_array_equal(res.q[m.independent_indices], qi)
        assert np.linalg.norm(rd.loop_residual(m, res.q)) <= 1e-12
        # same assembly branch as the reference (elbows out): elbow signs kept
        assert np.sign(res.q[1]) == np.sign(ref[1]) and np.sign(res.q[3]) == np.sign(ref[3])
    # minimum-norm projection of a perturbed configuration (nothing fixed)
    q = ref + 1e-3 * rng.normal(size=4)
    res = pj.assemble(m, q_guess=q)
    assert res.residual <= 1e-12
    dq = res.q - q  # normal to the manifold up to second order (Gauss-Newton steps)
    assert np.linalg.norm(pj.pinv_abs(rd.constraint_terms(m, res.q).A).P @ dq) <= 0.1 * np.linalg.norm(dq) ** 2 / 1e-3


def test_assemble_quadratic_convergence():
    m = model('four_bar')
    q0 = m.reference_q() + np.array([0.0, 0.05, -0.04])
    res_k = []
    for k in range(1, 5):
        try:
            r = pj.assemble(m, [m.reference_q()[0]], q_guess=q0, max_iter=k, tol=1e-15, fallback=False)
            res_k.append(r.residual)
            break
        except AssemblyError as e:
            res_k.append(e.residual)
    res_k = [np.linalg.norm(rd.loop_residual(m, q0))] + res_k
    assert len(res_k) >= 4
    for a, b in zip(res_k[:2], res_k[1:3]):
        assert b <= 10.0 * a * a  # ||phi_k+1|| <= K ||phi_k||^2


@pytest.mark.parametrize(
    'name,fixed,values',
    [
        ('five_bar', ['motor1_joint', 'elbow1_joint'], [np.pi, 0.0]),  # tool 0.8 m from A2
        ('four_bar', ['crank_joint', 'coupler_joint'], [0.0, 0.0]),  # coupler pointing away
    ],
)
def test_assemble_reports_missing_assembly(name, fixed, values):
    m = model(name)
    with pytest.raises(AssemblyError, match='no closed configuration') as exc:
        pj.assemble(m, values, fixed=fixed)
    assert exc.value.residual > 1e-3
    assert isinstance(exc.value, rd.RobotDynamicsError)


def test_assemble_reports_non_convergence():
    m = model('five_bar')
    with pytest.raises(AssemblyError, match='did not converge'):
        pj.assemble(m, [0.3, 2.0], max_iter=1, fallback=False)
    # the least-squares fallback finds the assembly Newton missed
    res = pj.assemble(m, [0.3, 2.0], max_iter=1)
    assert res.residual <= 1e-12
    np.testing.assert_array_equal(res.q[m.independent_indices], [0.3, 2.0])
    with pytest.raises(InputError):
        pj.assemble(m, [0.3, 2.0, 1.0])


def test_project_velocity_modes():
    m = model('five_bar')
    rng = np.random.default_rng(12)
    q, _ = admissible_state(m, rng)
    v = rng.normal(size=4)
    A = rd.constraint_terms(m, q).A
    ve = pj.project_velocity(m, q, v)
    np.testing.assert_allclose(A @ ve, 0, atol=1e-12)
    np.testing.assert_allclose(ve, pj.pinv_abs(A).P @ v, atol=1e-13)
    vm = pj.project_velocity(m, q, v, 'mass')
    np.testing.assert_allclose(A @ vm, 0, atol=1e-12)
    # independent route (full-row-rank rows): v - M^-1 A^T (A M^-1 A^T)^-1 A v
    Ar, M = A[:2], rd.crba(m, q)
    X = np.linalg.solve(M, Ar.T)
    np.testing.assert_allclose(vm, v - X @ np.linalg.solve(Ar @ X, Ar @ v), atol=1e-12)
    # kinetic-energy minimal correction: any other admissible velocity is farther in M
    P = pj.pinv_abs(A).P
    for _ in range(5):
        w = vm + P @ rng.normal(size=4) * 0.1
        assert (w - v) @ M @ (w - v) >= (vm - v) @ M @ (vm - v) - 1e-14
    np.testing.assert_array_equal(pj.project_velocity(m, q, v, 'none'), v)
    with pytest.raises(InputError):
        pj.project_velocity(m, q, v, 'metric')


def test_kernel_projector_is_the_shared_one():
    """pinv_abs and the compiled dynamics use the same projector and default tolerance."""
    m = model('four_bar')
    rng = np.random.default_rng(13)
    q, qd = admissible_state(m, rng)
    res = pj.constrained_forward_dynamics(m, q, qd, np.zeros(3))
    pi = pj.pinv_abs(rd.constraint_terms(m, q).A)
    np.testing.assert_allclose(res.P, pi.P, atol=1e-14)
    np.testing.assert_allclose(res.Apinv, pi.pinv, atol=1e-12)
    assert res.rank == pi.rank == 2 and res.eps == pj.DEFAULT_EPS
    assert PK.VARIANT_MC == pj.VARIANTS['Mc']


def test_massless_subtree_is_reported_not_silently_wrong():
    """A joint moving only massless links makes M singular: every variant raises."""
    import robot_dynamics as rd
    from robot_dynamics.plants.rigid import ConstrainedPlant

    path = rd.data_path('urdf/four_bar.urdf')
    xml = (
        open(path)
        .read()
        .replace('<mass value="0.8"/>', '<mass value="0"/>')
        .replace(
            'ixx="1.6e-5" ixy="0" ixz="0" iyy="0.006" iyz="0" izz="0.006"',
            'ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"',
        )
    )
    m = rd.load_model(xml, loops=path.replace('.urdf', '.loops.yaml'))
    assert m.mass[m.joint_index('rocker_joint')] == 0
    q = m.reference_q()
    for variant in ('Mc', 'Mc_sym', 'Mc_gamma'):
        with pytest.raises(rd.SingularMassMatrixError, match='Prop. 2'):
            rd.constrained_forward_dynamics(m, q, np.zeros(m.nq), np.zeros(m.nq), variant=variant)
    with pytest.raises(rd.SingularMassMatrixError):
        ConstrainedPlant(m).step(np.zeros(m.nq))
