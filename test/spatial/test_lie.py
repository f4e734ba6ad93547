"""Tests for robot_dynamics.spatial.lie (SO(3)/SE(3) utilities, linear-first twists)."""

from fractions import Fraction
from math import factorial

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robot_dynamics.spatial import lie

PI = np.pi
#: Rotation angles that exercise the series/closed-form switch and the pi branch.
SPECIAL_ANGLES = [
    0.0,
    1e-12,
    1e-8,
    1e-5,
    1e-3,
    0.3,
    0.5 - 1e-12,
    0.5,
    0.5 + 1e-12,
    1.0,
    PI / 2 - 1e-9,
    PI / 2,
    PI / 2 + 1e-9,
    2.0,
    3.0,
    PI - 1e-6,
    PI - 1e-9,
    PI,
]
BELOW_PI = [a for a in SPECIAL_ANGLES if a < PI]

SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
HSET = settings(deadline=None, max_examples=50)


# --------------------------------------------------------------------------- #
# helpers
# --------------------------------------------------------------------------- #


def unit(rng, *shape):
    x = rng.normal(size=shape + (3,))
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def rotvec(rng, angle, *shape):
    return np.asarray(angle)[..., None] * unit(rng, *shape)


def twist(rng, angle=None, *shape):
    if angle is None:
        angle = rng.uniform(0.0, PI, size=shape)
    return np.concatenate([rng.normal(size=shape + (3,)), rotvec(rng, angle, *shape)], axis=-1)


def rand_T(rng, *shape):
    return lie.exp_se3(twist(rng, None, *shape))


def Rx(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def Ry(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def Rz(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def dexp_series(V, nterms=40):
    """sum_k ad(V)^k / (k+1)!  (reference left Jacobian of SE(3))."""
    A = lie.ad(V)
    S = term = np.eye(6)
    for k in range(1, nterms):
        term = term @ A / (k + 1)
        S = S + term
    return S


# --------------------------------------------------------------------------- #
# hat / vee
# --------------------------------------------------------------------------- #


def test_hat_vee_roundtrip_and_cross():
    rng = np.random.default_rng(0)
    w, x = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    W = lie.hat(w)
    assert W.shape == (5, 3, 3)
    np.testing.assert_array_equal(W, -np.swapaxes(W, -1, -2))
    np.testing.assert_allclose(np.einsum('nij,nj->ni', W, x), np.cross(w, x), atol=1e-15)
    np.testing.assert_array_equal(lie.vee(W), w)


def test_hat6_vee6_roundtrip():
    rng = np.random.default_rng(1)
    V = rng.normal(size=(2, 3, 6))
    X = lie.hat6(V)
    assert X.shape == (2, 3, 4, 4)
    np.testing.assert_array_equal(X[..., 3, :], 0.0)
    np.testing.assert_array_equal(X[..., :3, 3], V[..., :3])  # linear part first
    np.testing.assert_array_equal(lie.vee6(X), V)


# --------------------------------------------------------------------------- #
# exp / log
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize('angle', BELOW_PI)
def test_log_exp_so3_special_angles(angle):
    rng = np.random.default_rng(2)
    w = rotvec(rng, np.full(20, angle), 20)
    w2 = lie.log_so3(lie.exp_so3(w))
    err = np.linalg.norm(w2 - w, axis=-1)
    assert np.all(err <= 2e-15 * angle), err.max() / max(angle, 1e-300)  # relative accuracy


@pytest.mark.parametrize('angle', [0.0, 1e-12, 1e-8, 1e-5])
def test_so3_relative_accuracy_near_zero(angle):
    rng = np.random.default_rng(3)
    w = rotvec(rng, np.full(10, angle))
    W = lie.hat(w)
    t2 = angle**2  # Taylor coefficients, truncation O(angle^6) relative
    R_ref = np.eye(3) + (1 - t2 / 6 + t2**2 / 120) * W + (0.5 - t2 / 24 + t2**2 / 720) * (W @ W)
    R = lie.exp_so3(w)
    np.testing.assert_allclose(R - np.eye(3), R_ref - np.eye(3), rtol=1e-15, atol=1e-300)
    w2 = lie.log_so3(R)
    assert np.all(np.linalg.norm(w2 - w, axis=-1) <= 1e-15 * angle)


@pytest.mark.parametrize('angle', [PI - 1e-6, PI - 1e-9, PI - 1e-13, PI])
def test_log_so3_near_pi(angle):
    rng = np.random.default_rng(4)
    w = rotvec(rng, np.full(20, angle))
    R = lie.exp_so3(w)
    w2 = lie.log_so3(R)
    np.testing.assert_allclose(lie.exp_so3(w2), R, atol=2e-15)
    np.testing.assert_allclose(np.linalg.norm(w2, axis=-1), angle, atol=2e-15)
    # the vector equals +-w (sign is ambiguous only at pi)
    err = np.minimum(np.linalg.norm(w2 - w, axis=-1), np.linalg.norm(w2 + w, axis=-1))
    assert err.max() < 3e-15
    if angle < PI - 1e-10:
        assert np.linalg.norm(w2 - w, axis=-1).max() < 3e-15


def test_exp_so3_against_scipy():
    from scipy.spatial.transform import Rotation

    rng = np.random.default_rng(5)
    w = rotvec(rng, rng.uniform(0, 2 * PI, size=50), 50)
    np.testing.assert_allclose(lie.exp_so3(w), Rotation.from_rotvec(w).as_matrix(), atol=1e-14)


@HSET
@given(SEEDS)
def test_log_so3_angle_range_and_exp_log(seed):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(8, 3)) * rng.uniform(0, 10)  # any angle, also > pi
    R = lie.exp_so3(w)
    w2 = lie.log_so3(R)
    assert np.all(np.linalg.norm(w2, axis=-1) <= PI + 1e-15)
    np.testing.assert_allclose(lie.exp_so3(w2), R, atol=1e-14)


@pytest.mark.parametrize('angle', SPECIAL_ANGLES)
def test_exp_log_se3_special_angles(angle):
    rng = np.random.default_rng(6)
    V = twist(rng, np.full(20, angle), 20)
    T = lie.exp_se3(V)
    np.testing.assert_array_equal(T[..., 3, :], np.broadcast_to([0, 0, 0, 1.0], (20, 4)))
    V2 = lie.log_se3(T)
    np.testing.assert_allclose(lie.exp_se3(V2), T, atol=1e-14)
    if angle < PI:
        np.testing.assert_allclose(V2, V, rtol=0, atol=1e-14)
        if angle <= 1e-5:  # relative accuracy of the rotation part near 0
            assert np.all(np.linalg.norm(V2[:, 3:] - V[:, 3:], axis=-1) <= 1e-15 * angle)


@HSET
@given(SEEDS)
def test_exp_log_se3_random(seed):
    rng = np.random.default_rng(seed)
    V = twist(rng, rng.uniform(0.0, PI - 1e-3, size=6), 6)
    V[:, :3] *= rng.uniform(0.0, 10.0)
    np.testing.assert_allclose(lie.log_se3(lie.exp_se3(V)), V, rtol=0, atol=1e-12)
    T = rand_T(rng, 6)
    np.testing.assert_allclose(lie.exp_se3(lie.log_se3(T)), T, atol=1e-14)


def test_exp_se3_formula_and_group_inverse():
    rng = np.random.default_rng(7)
    V = twist(rng, None, 10)
    T = lie.exp_se3(V)
    np.testing.assert_allclose(T[:, :3, :3], lie.exp_so3(V[:, 3:]), atol=0)
    np.testing.assert_allclose(
        T[:, :3, 3], np.einsum('nij,nj->ni', lie.left_jacobian_so3(V[:, 3:]), V[:, :3]), atol=1e-15
    )
    np.testing.assert_allclose(lie.exp_se3(-V), lie.inv_se3(T), atol=1e-14)
    np.testing.assert_allclose(T @ lie.inv_se3(T), np.broadcast_to(np.eye(4), T.shape), atol=1e-14)
    # pure translation
    np.testing.assert_allclose(lie.exp_se3([1.0, 2.0, 3.0, 0, 0, 0]), lie.transform(np.eye(3), [1.0, 2.0, 3.0]), atol=0)


# --------------------------------------------------------------------------- #
# batching
# --------------------------------------------------------------------------- #


def _inputs(rng, kind, shape):
    if kind == '3':
        return rng.normal(size=shape + (3,))
    if kind == '6':
        return twist(rng, None, *shape)
    if kind == 'R':
        return lie.exp_so3(rotvec(rng, rng.uniform(0, PI, size=shape), *shape))
    if kind == 'T':
        return rand_T(rng, *shape)
    if kind == 'q':
        return rng.normal(size=shape + (4,))
    if kind == 'W':
        return rng.normal(size=shape + (3, 3))
    if kind == 'X':
        return rng.normal(size=shape + (4, 4))
    raise AssertionError(kind)


BATCHED = [
    ('hat', lie.hat, '3'),
    ('vee', lie.vee, 'W'),
    ('hat6', lie.hat6, '6'),
    ('vee6', lie.vee6, 'X'),
    ('exp_so3', lie.exp_so3, '3'),
    ('log_so3', lie.log_so3, 'R'),
    ('exp_se3', lie.exp_se3, '6'),
    ('log_se3', lie.log_se3, 'T'),
    ('left_jacobian_so3', lie.left_jacobian_so3, '3'),
    ('left_jacobian_inv_so3', lie.left_jacobian_inv_so3, '3'),
    ('right_jacobian_so3', lie.right_jacobian_so3, '3'),
    ('right_jacobian_inv_so3', lie.right_jacobian_inv_so3, '3'),
    ('dexp_se3_left', lambda V: lie.dexp_se3(V, side='left'), '6'),
    ('dexp_se3_right', lambda V: lie.dexp_se3(V, side='right'), '6'),
    ('dexp_inv_se3_left', lambda V: lie.dexp_inv_se3(V, side='left'), '6'),
    ('dexp_inv_se3_right', lambda V: lie.dexp_inv_se3(V, side='right'), '6'),
    ('Ad', lie.Ad, 'T'),
    ('Ad_inv', lie.Ad_inv, 'T'),
    ('ad', lie.ad, '6'),
    ('ad_star', lie.ad_star, '6'),
    ('inv_se3', lie.inv_se3, 'T'),
    ('rpy_to_matrix', lie.rpy_to_matrix, '3'),
    ('matrix_to_rpy', lie.matrix_to_rpy, 'R'),
    ('quat_xyzw_to_matrix', lie.quat_xyzw_to_matrix, 'q'),
    ('matrix_to_quat_xyzw', lie.matrix_to_quat_xyzw, 'R'),
]


@pytest.mark.parametrize('name,fn,kind', BATCHED, ids=[b[0] for b in BATCHED])
def test_batched_equals_per_sample(name, fn, kind):
    rng = np.random.default_rng(8)
    x = _inputs(rng, kind, (3, 4))
    if kind in ('3', '6'):
        x[0, 0] = 0.0  # include a zero sample
    out = fn(x)
    assert out.shape[:2] == (3, 4)
    for i in range(3):
        for j in range(4):
            np.testing.assert_array_equal(out[i, j], fn(x[i, j]))
    # empty batch keeps its shape
    assert fn(x[:0]).shape == (0,) + out.shape[1:]


def test_transform_batched_broadcast():
    rng = np.random.default_rng(9)
    R = _inputs(rng, 'R', (5,))
    p = rng.normal(size=(2, 1, 3))
    T = lie.transform(R, p)
    assert T.shape == (2, 5, 4, 4)
    for i in range(2):
        for j in range(5):
            np.testing.assert_array_equal(T[i, j], lie.transform(R[j], p[i, 0]))
    np.testing.assert_array_equal(T[1, 3, :3, :3], R[3])
    np.testing.assert_array_equal(T[1, 3, :3, 3], p[1, 0])
    np.testing.assert_array_equal(T[1, 3, 3], [0, 0, 0, 1])


# --------------------------------------------------------------------------- #
# adjoint identities
# --------------------------------------------------------------------------- #


@HSET
@given(SEEDS)
def test_adjoint_identities(seed):
    rng = np.random.default_rng(seed)
    T1, T2 = rand_T(rng, 4), rand_T(rng, 4)
    V, U = twist(rng, None, 4), twist(rng, None, 4)
    mv = lambda A, x: np.einsum('nij,nj->ni', A, x)  # noqa: E731

    # Ad is a homomorphism
    np.testing.assert_allclose(lie.Ad(T1 @ T2), lie.Ad(T1) @ lie.Ad(T2), atol=1e-12)
    # hat6(Ad(T) V) = T hat6(V) T^-1
    np.testing.assert_allclose(lie.hat6(mv(lie.Ad(T1), V)), T1 @ lie.hat6(V) @ lie.inv_se3(T1), atol=1e-12)
    # Ad_inv = Ad(T^-1) = Ad(T)^-1
    np.testing.assert_allclose(lie.Ad_inv(T1), lie.Ad(lie.inv_se3(T1)), atol=1e-13)
    np.testing.assert_allclose(lie.Ad_inv(T1) @ lie.Ad(T1), np.broadcast_to(np.eye(6), (4, 6, 6)), atol=1e-13)
    # Ad(T) ad(V) Ad(T)^-1 = ad(Ad(T) V)
    np.testing.assert_allclose(lie.Ad(T1) @ lie.ad(V) @ lie.Ad_inv(T1), lie.ad(mv(lie.Ad(T1), V)), atol=1e-12)
    # ad(V) U = -ad(U) V = vee6([hat6(V), hat6(U)])
    np.testing.assert_allclose(mv(lie.ad(V), U), -mv(lie.ad(U), V), atol=1e-13)
    XV, XU = lie.hat6(V), lie.hat6(U)
    np.testing.assert_allclose(mv(lie.ad(V), U), lie.vee6(XV @ XU - XU @ XV), atol=1e-13)
    # ad_star = -ad^T; power is invariant under (Ad, Ad_inv^T)
    np.testing.assert_array_equal(lie.ad_star(V), -np.swapaxes(lie.ad(V), -1, -2))
    F = rng.normal(size=(4, 6))
    np.testing.assert_allclose(
        np.sum(mv(np.swapaxes(lie.Ad_inv(T1), -1, -2), F) * mv(lie.Ad(T1), V), axis=-1),
        np.sum(F * V, axis=-1),
        atol=1e-12,
    )
    # ad_star(V) F = (w x f, v x f + w x tau)
    v, w, f, tau = V[:, :3], V[:, 3:], F[:, :3], F[:, 3:]
    np.testing.assert_allclose(
        mv(lie.ad_star(V), F), np.concatenate([np.cross(w, f), np.cross(v, f) + np.cross(w, tau)], axis=-1), atol=1e-13
    )
    # Ad(exp(V)) = expm(ad(V)); checked through J_left = Ad(exp V) J_right
    np.testing.assert_allclose(lie.dexp_se3(V, 'left'), lie.Ad(lie.exp_se3(V)) @ lie.dexp_se3(V, 'right'), atol=1e-12)


def test_Ad_block_structure():
    rng = np.random.default_rng(10)
    T = rand_T(rng)
    R, p = T[:3, :3], T[:3, 3]
    A = lie.Ad(T)
    np.testing.assert_array_equal(A[:3, :3], R)
    np.testing.assert_array_equal(A[3:, 3:], R)
    np.testing.assert_array_equal(A[3:, :3], 0.0)
    np.testing.assert_allclose(A[:3, 3:], lie.hat(p) @ R, atol=1e-15)


# --------------------------------------------------------------------------- #
# Jacobians
# --------------------------------------------------------------------------- #

JAC_ANGLES = [0.0, 1e-8, 1e-3, 0.5 - 1e-9, 0.5 + 1e-9, 1.0, 2.0, 3.0, PI - 1e-6, PI, 4.0, 6.0]
H = 1e-6


def _fd_so3(w, side):
    """Central finite-difference Jacobian of exp_so3, trivialised on `side`."""
    R = lie.exp_so3(w)
    J = np.empty((3, 3))
    for i in range(3):
        e = np.zeros(3)
        e[i] = H
        dR = (lie.exp_so3(w + e) - lie.exp_so3(w - e)) / (2 * H)
        J[:, i] = lie.vee(dR @ R.T if side == 'left' else R.T @ dR)
    return J


def _fd_se3(V, side):
    T = lie.exp_se3(V)
    Ti = lie.inv_se3(T)
    J = np.empty((6, 6))
    for i in range(6):
        e = np.zeros(6)
        e[i] = H
        dT = (lie.exp_se3(V + e) - lie.exp_se3(V - e)) / (2 * H)
        J[:, i] = lie.vee6(dT @ Ti if side == 'left' else Ti @ dT)
    return J


@pytest.mark.parametrize('angle', JAC_ANGLES)
def test_so3_jacobians_finite_difference(angle):
    rng = np.random.default_rng(11)
    for w in rotvec(rng, np.full(3, angle), 3):
        Jl, Jr = lie.left_jacobian_so3(w), lie.right_jacobian_so3(w)
        np.testing.assert_allclose(Jl, _fd_so3(w, 'left'), atol=1e-8)
        np.testing.assert_allclose(Jr, _fd_so3(w, 'right'), atol=1e-8)
        np.testing.assert_allclose(Jr, Jl.T, atol=1e-15)
        np.testing.assert_allclose(Jl, lie.exp_so3(w) @ Jr, atol=1e-14)
        np.testing.assert_allclose(lie.left_jacobian_inv_so3(w) @ Jl, np.eye(3), atol=1e-12)
        np.testing.assert_allclose(lie.right_jacobian_inv_so3(w) @ Jr, np.eye(3), atol=1e-12)


@pytest.mark.parametrize('angle', JAC_ANGLES)
@pytest.mark.parametrize('side', ['left', 'right'])
def test_dexp_se3_finite_difference(angle, side):
    rng = np.random.default_rng(12)
    for V in twist(rng, np.full(3, angle), 3):
        J = lie.dexp_se3(V, side=side)
        np.testing.assert_allclose(J, _fd_se3(V, side), atol=1e-8 * max(1.0, np.abs(V).max()))
        np.testing.assert_allclose(lie.dexp_inv_se3(V, side=side) @ J, np.eye(6), atol=1e-12)
        np.testing.assert_allclose(J @ lie.dexp_inv_se3(V, side=side), np.eye(6), atol=1e-12)


@pytest.mark.parametrize('angle', [0.0, 1e-8, 1e-4, 0.1, 0.5 - 1e-12, 0.5, 0.5 + 1e-12, 1.0, 3.0])
def test_dexp_se3_matches_series(angle):
    """J_left = sum ad^k/(k+1)!; this pins the formula across the series threshold."""
    rng = np.random.default_rng(13)
    for V in twist(rng, np.full(4, angle), 4):
        np.testing.assert_allclose(lie.dexp_se3(V), dexp_series(V), rtol=0, atol=3e-15)
        np.testing.assert_allclose(lie.dexp_se3(V, 'right'), dexp_series(-V), rtol=0, atol=3e-15)
    # the default side is 'left'
    np.testing.assert_array_equal(lie.dexp_se3(V), lie.dexp_se3(V, side='left'))
    np.testing.assert_array_equal(lie.dexp_inv_se3(V), lie.dexp_inv_se3(V, side='left'))


def _exact_series(t, coeff, nterms=40):
    """sum_n coeff(n) t^(2n) in exact rational arithmetic, rounded to float."""
    x = Fraction(float(t)) ** 2
    return float(sum(coeff(n) * x**n for n in range(nterms)))


EXACT_COEFS = {  # name: exact Taylor coefficient of the function in t^2
    '_coef_A': lambda n: Fraction((-1) ** n, factorial(2 * n + 1)),
    '_coef_B': lambda n: Fraction((-1) ** n, factorial(2 * n + 2)),
    '_coef_C': lambda n: Fraction((-1) ** n, factorial(2 * n + 3)),
    '_coef_E': lambda n: Fraction((-1) ** n, factorial(2 * n + 4)),
    '_coef_F': lambda n: Fraction((-1) ** n * (n + 1), factorial(2 * n + 5)),
    '_coef_H': lambda n: Fraction((-1) ** n * 2 * (n + 1), factorial(2 * n + 3)),
}
T0 = lie._SERIES_THRESHOLD
COEF_ANGLES = [0.0, 1e-8, 1e-3, 0.1, 0.5, 1.0, 1.9, T0 * (1 - 1e-15), T0, T0 * (1 + 1e-15), 2.5, 3.0, PI, 4.0, 6.0]


@pytest.mark.parametrize('name', sorted(EXACT_COEFS))
def test_coefficients_against_exact_series(name):
    """Series and closed forms agree with the exact value to ~1e-15 on both sides
    of the switching angle (relative accuracy, no cancellation loss)."""
    f = getattr(lie, name)
    t = np.array(COEF_ANGLES)
    ref = np.array([_exact_series(ti, EXACT_COEFS[name], nterms=60) for ti in t])
    np.testing.assert_allclose(f(t), ref, rtol=2e-15, atol=0)


def test_coef_D_against_cot_formula():
    t = np.array([0.5, 1.0, 1.9, 2.0, 2.1, 3.0, PI, 5.0])
    ref = 1.0 / t**2 - 1.0 / (2 * t * np.tan(t / 2))  # cancels badly for small t
    np.testing.assert_allclose(lie._coef_D(t), ref, rtol=1e-12)
    np.testing.assert_allclose(lie._coef_D(np.array([0.0, 1e-9])), 1 / 12, rtol=1e-15)


def test_dexp_bad_side():
    with pytest.raises(ValueError, match='side'):
        lie.dexp_se3(np.zeros(6), side='body')
    with pytest.raises(ValueError, match='side'):
        lie.dexp_inv_se3(np.zeros(6), side='spatial')


# --------------------------------------------------------------------------- #
# roll-pitch-yaw and quaternions
# --------------------------------------------------------------------------- #


def test_rpy_known_values():
    np.testing.assert_allclose(lie.rpy_to_matrix([PI / 2, 0, 0]), [[1, 0, 0], [0, 0, -1], [0, 1, 0]], atol=1e-16)
    np.testing.assert_allclose(lie.rpy_to_matrix([0, 0, PI / 2]), [[0, -1, 0], [1, 0, 0], [0, 0, 1]], atol=1e-16)
    np.testing.assert_allclose(lie.rpy_to_matrix([0, PI / 2, 0]), [[0, 0, 1], [0, 1, 0], [-1, 0, 0]], atol=1e-16)
    r, p, y = 0.1, -0.2, 0.3
    np.testing.assert_allclose(lie.rpy_to_matrix([r, p, y]), Rz(y) @ Ry(p) @ Rx(r), atol=1e-15)
    np.testing.assert_allclose(lie.matrix_to_rpy(Rz(y) @ Ry(p) @ Rx(r)), [r, p, y], atol=1e-15)
    # URDF: <origin rpy="1.5707963 0 0"/> maps the child y axis onto the parent z axis
    np.testing.assert_allclose(lie.rpy_to_matrix([PI / 2, 0, 0]) @ [0, 1, 0], [0, 0, 1], atol=1e-16)


def test_rpy_against_transforms3d():
    t3e = pytest.importorskip('transforms3d.euler')
    rng = np.random.default_rng(14)
    for rpy in rng.uniform(-PI, PI, size=(10, 3)):
        np.testing.assert_allclose(lie.rpy_to_matrix(rpy), t3e.euler2mat(*rpy, axes='sxyz'), atol=1e-15)


@HSET
@given(SEEDS)
def test_rpy_roundtrip(seed):
    rng = np.random.default_rng(seed)
    # away from gimbal lock (|pitch| = pi/2, where the angles are ill-conditioned)
    rpy = rng.uniform([-PI, -PI / 2 + 1e-3, -PI], [PI, PI / 2 - 1e-3, PI], size=(16, 3))
    rpy2 = lie.matrix_to_rpy(lie.rpy_to_matrix(rpy))
    np.testing.assert_allclose(rpy2, rpy, atol=1e-12)
    R = lie.exp_so3(rotvec(rng, rng.uniform(0, PI, size=16), 16))
    rpy3 = lie.matrix_to_rpy(R)
    assert np.all(np.abs(rpy3[:, 1]) <= PI / 2) and np.all(np.abs(rpy3) <= PI)
    np.testing.assert_allclose(lie.rpy_to_matrix(rpy3), R, atol=1e-14)


@pytest.mark.parametrize('pitch', [PI / 2, -PI / 2, PI / 2 - 1e-7, -PI / 2 + 1e-9, PI / 2 - 1e-12])
def test_rpy_gimbal_lock(pitch):
    rng = np.random.default_rng(15)
    for r, y in rng.uniform(-PI, PI, size=(5, 2)):
        R = lie.rpy_to_matrix([r, pitch, y])
        rpy = lie.matrix_to_rpy(R)
        np.testing.assert_allclose(lie.rpy_to_matrix(rpy), R, atol=2e-15)
        np.testing.assert_allclose(rpy[1], pitch, atol=1e-8)


def _quat_hand(q):
    """Reference quaternion (x, y, z, w) -> matrix, one sample."""
    x, y, z, w = np.asarray(q) / np.linalg.norm(q)
    return np.array(
        [
            [w * w + x * x - y * y - z * z, 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), w * w - x * x + y * y - z * z, 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), w * w - x * x - y * y + z * z],
        ]
    )


def test_quaternion_known_values():
    s = np.sqrt(0.5)
    np.testing.assert_allclose(lie.quat_xyzw_to_matrix([0, 0, s, s]), Rz(PI / 2), atol=1e-15)
    np.testing.assert_allclose(lie.quat_xyzw_to_matrix([0, 0, 0, 1]), np.eye(3), atol=0)
    np.testing.assert_allclose(lie.matrix_to_quat_xyzw(Rx(PI / 2)), [s, 0, 0, s], atol=1e-15)
    np.testing.assert_allclose(lie.matrix_to_quat_xyzw(Ry(PI)), [0, 1, 0, 0], atol=1e-15)
    # non-unit input is normalised
    np.testing.assert_allclose(lie.quat_xyzw_to_matrix([0, 0, 2, 2]), Rz(PI / 2), atol=1e-15)


@HSET
@given(SEEDS)
def test_quaternion_roundtrip_and_reference(seed):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(12, 4))
    q[0] = [1e-9, 0.3, -0.4, 1e-13]  # w ~ 0 (angle ~ pi): sign still determined
    q[1] = [0.0, 0.0, 0.0, 1.0]
    q[2] = [0.0, 0.6, 0.8, 0.0]  # w = 0: sign of the vector part is arbitrary
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    R = lie.quat_xyzw_to_matrix(q)
    q2 = lie.matrix_to_quat_xyzw(R)
    assert np.all(q2[:, 3] >= 0)
    np.testing.assert_allclose(np.linalg.norm(q2, axis=-1), 1.0, atol=1e-15)
    canon = q * np.where(q[:, 3:] < 0, -1.0, 1.0)
    np.testing.assert_allclose(np.minimum(np.abs(q2 - q).max(axis=-1), np.abs(q2 + q).max(axis=-1)), 0.0, atol=1e-14)
    np.testing.assert_allclose(q2[3:], canon[3:], atol=1e-14)
    np.testing.assert_allclose(q2[0], canon[0], atol=1e-14)
    try:
        from transforms3d import quaternions as t3q
    except ImportError:
        t3q = None
    for qi, Ri, q2i in zip(q, R, q2):
        np.testing.assert_allclose(Ri, _quat_hand(qi), atol=1e-15)
        if t3q is not None:  # transforms3d uses (w, x, y, z)
            np.testing.assert_allclose(Ri, t3q.quat2mat(np.roll(qi, 1)), atol=1e-15)
            ref = np.roll(t3q.mat2quat(Ri), -1)
            ref = ref * (-1.0 if ref[3] < 0 else 1.0)
            if qi[3] != 0.0:
                np.testing.assert_allclose(q2i, ref, atol=1e-13)


def test_quaternion_matches_exp_so3():
    rng = np.random.default_rng(16)
    w = rotvec(rng, rng.uniform(0, PI, size=20), 20)
    th = np.linalg.norm(w, axis=-1, keepdims=True)
    q = np.concatenate([np.sin(th / 2) * w / th, np.cos(th / 2)], axis=-1)
    np.testing.assert_allclose(lie.quat_xyzw_to_matrix(q), lie.exp_so3(w), atol=1e-15)
    np.testing.assert_allclose(lie.matrix_to_quat_xyzw(lie.exp_so3(w)), q, atol=1e-15)


# --------------------------------------------------------------------------- #
# input checking
# --------------------------------------------------------------------------- #

TRAILING = {'3': (3,), '6': (6,), 'R': (3, 3), 'T': (4, 4), 'q': (4,), 'W': (3, 3), 'X': (4, 4)}
BAD_SHAPES = {
    (3,): [(4,), (3, 1), ()],
    (6,): [(3,), (6, 1), (2, 3)],
    (4,): [(3,), (4, 1)],
    (3, 3): [(3,), (3, 4), (9,)],
    (4, 4): [(4,), (3, 4), (16,)],
}


@pytest.mark.parametrize('name,fn,kind', BATCHED, ids=[b[0] for b in BATCHED])
def test_bad_input_raises(name, fn, kind):
    trailing = TRAILING[kind]
    for shape in BAD_SHAPES[trailing]:
        with pytest.raises(ValueError, match='shape'):
            fn(np.zeros(shape))
    x = _inputs(np.random.default_rng(17), kind, (2,))
    for bad in (np.nan, np.inf, -np.inf):
        y = x.copy()
        y[(1,) + (0,) * len(trailing)] = bad
        with pytest.raises(ValueError, match='non-finite'):
            fn(y)
    with pytest.raises(ValueError):
        fn(x.astype(complex))
    with pytest.raises(ValueError):
        fn('abc')


def test_transform_bad_inputs():
    with pytest.raises(ValueError, match='shape'):
        lie.transform(np.eye(3), np.zeros(4))
    with pytest.raises(ValueError, match='shape'):
        lie.transform(np.eye(4), np.zeros(3))
    with pytest.raises(ValueError, match='broadcast'):
        lie.transform(np.zeros((2, 3, 3)), np.zeros((3, 3)))
    with pytest.raises(ValueError, match='non-finite'):
        lie.transform(np.eye(3), [0, np.nan, 0])


def test_zero_quaternion_raises():
    with pytest.raises(ValueError, match='zero'):
        lie.quat_xyzw_to_matrix([0, 0, 0, 0])


def test_list_and_int_input_accepted():
    np.testing.assert_array_equal(lie.hat([1, 2, 3]), lie.hat(np.array([1.0, 2.0, 3.0])))
    assert lie.exp_so3([0, 0, 0]).dtype == np.float64


# --------------------------------------------------------------------------- #
# Pinocchio oracle (documents the convention match; skipped if pin is absent)
# --------------------------------------------------------------------------- #


def test_matches_pinocchio():
    pin = pytest.importorskip('pinocchio')
    rng = np.random.default_rng(18)
    for angle in [0.0, 1e-6, 0.7, 2.0, 3.1]:
        V = twist(rng, angle)
        U = twist(rng, None)
        M = pin.exp6(pin.Motion(V))
        T = M.homogeneous
        np.testing.assert_allclose(lie.exp_se3(V), T, atol=1e-14)
        np.testing.assert_allclose(lie.log_se3(T), pin.log6(M).vector, atol=1e-13)
        np.testing.assert_allclose(lie.Ad(T), M.action, atol=1e-14)
        np.testing.assert_allclose(lie.Ad_inv(T), M.actionInverse, atol=1e-14)
        np.testing.assert_allclose(lie.dexp_se3(V, 'right'), pin.Jexp6(pin.Motion(V)), atol=1e-13)
        np.testing.assert_allclose(lie.dexp_inv_se3(V, 'right'), pin.Jlog6(M), atol=1e-12)
        np.testing.assert_allclose(lie.right_jacobian_so3(V[3:]), pin.Jexp3(V[3:]), atol=1e-14)
        np.testing.assert_allclose(lie.ad(V) @ U, pin.Motion(V).cross(pin.Motion(U)).vector, atol=1e-14)
        np.testing.assert_allclose(lie.ad_star(V) @ U, pin.Motion(V).cross(pin.Force(U)).vector, atol=1e-14)
        np.testing.assert_allclose(lie.exp_so3(V[3:]), pin.exp3(V[3:]), atol=1e-15)
        R = lie.exp_so3(V[3:])
        np.testing.assert_allclose(lie.log_so3(R), pin.log3(R), atol=1e-13)
        q = pin.Quaternion(R).coeffs()  # Eigen coeffs() are (x, y, z, w)
        q = q * (-1.0 if q[3] < 0 else 1.0)
        np.testing.assert_allclose(lie.matrix_to_quat_xyzw(R), q, atol=1e-14)
        np.testing.assert_allclose(lie.matrix_to_rpy(R), pin.rpy.matrixToRpy(R), atol=1e-12)
        np.testing.assert_allclose(
            lie.rpy_to_matrix(lie.matrix_to_rpy(R)), pin.rpy.rpyToMatrix(lie.matrix_to_rpy(R)), atol=1e-15
        )
