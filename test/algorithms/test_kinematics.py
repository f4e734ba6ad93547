"""Kinematics and energy identities against routes that do not share code with the library.

* Jacobians in the three references vs central finite differences of forward_kinematics;
* dJ/dt vs finite differences of J along q + t qd; frame_acceleration vs finite differences
  of frame_velocity along a trajectory;
* frame_wrench_to_joint vs the virtual-work identity tau_ext = J^T w;
* power balance d/dt (T + U) = qd . tau and dU/dq = g(q);
* the product-of-exponentials form: screw_space = world Jacobian at q = 0, and
  forward_kinematics = exp(S_1 q_1) ... exp(S_k q_k) T(0) (lie.exp_se3).

Models: every URDF of ``urdf/`` plus random trees (branched and chains).
"""

import suite_paths
import glob
import os

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.spatial import lie
from randtree import random_tree_urdf

URDF_DIR = os.path.join(suite_paths.ROOT, 'urdf')
URDFS = sorted(glob.glob(os.path.join(URDF_DIR, '*.urdf')))
REFS = ('world', 'local', 'local_world_aligned')
SEEDS = list(range(8))

_CACHE = {}


def get_model(case):
    if case not in _CACHE:
        if case.endswith('.urdf'):
            _CACHE[case] = rd.load_model(os.path.join(URDF_DIR, case))
        else:
            s = int(case[4:])
            # at least 4 joints so that the identities involve real coupling
            xml, _ = random_tree_urdf(s, n_joints=4 + s, branched=s % 2 == 0)
            _CACHE[case] = rd.load_model(xml)
    return _CACHE[case]


CASES = [os.path.basename(p) for p in URDFS] + [f'rand{s}' for s in SEEDS]


def rng_for(case):
    return np.random.default_rng(sum(map(ord, case)))


def vee(W):
    return np.array([W[2, 1] - W[1, 2], W[0, 2] - W[2, 0], W[1, 0] - W[0, 1]]) / 2


def vee6(X):
    return np.concatenate([X[:3, 3], vee(X[:3, :3])])


def fd_twists(model, q, frame, h=1e-6):
    """Jacobians (6, n) in the three references from central differences of the placement."""
    n = model.nq
    T = rd.frame_placement(model, q, frame)
    R = T[:3, :3]
    Ti = lie.inv_se3(T)
    out = {r: np.zeros((6, n)) for r in REFS}
    for i in range(n):
        e = np.zeros(n)
        e[i] = h
        dT = (rd.frame_placement(model, q + e, frame) - rd.frame_placement(model, q - e, frame)) / (2 * h)
        dp, dR = dT[:3, 3], dT[:3, :3]
        out['local_world_aligned'][:, i] = np.concatenate([dp, vee(dR @ R.T)])
        out['world'][:, i] = vee6(dT @ Ti)  # spatial twist: dT T^-1
        out['local'][:, i] = vee6(Ti @ dT)  # body twist: T^-1 dT
    return out


@pytest.mark.parametrize('case', CASES)
def test_frame_jacobian_equals_finite_differences_of_fk(case):
    """J in each reference == twist of dT/dq (dp/dq and vee(dR/dq R^T) for LWA)."""
    model = get_model(case)
    rng = rng_for(case)
    for _ in range(2):
        q = model.random_configuration(rng)
        for frame in model.frame_names:
            fd = fd_twists(model, q, frame)
            for ref in REFS:
                J = rd.frame_jacobian(model, q, frame, ref)
                err = np.abs(J - fd[ref]).max()
                assert err < 1e-7, (frame, ref, err)


@pytest.mark.parametrize('case', CASES)
def test_jacobian_time_variation_equals_finite_differences(case):
    """dJ/dt == (J(q + h qd) - J(q - h qd)) / 2h, for the three references."""
    model = get_model(case)
    rng = rng_for(case)
    h = 1e-6
    q = model.random_configuration(rng)
    qd = rng.normal(size=model.nq)
    for frame in model.frame_names:
        for ref in REFS:
            dJ = rd.frame_jacobian_time_variation(model, q, qd, frame, ref)
            fd = (
                rd.frame_jacobian(model, q + h * qd, frame, ref) - rd.frame_jacobian(model, q - h * qd, frame, ref)
            ) / (2 * h)
            np.testing.assert_allclose(dJ, fd, rtol=0, atol=1e-7, err_msg=f'{frame} {ref}')


@pytest.mark.parametrize('case', CASES)
def test_frame_acceleration_equals_derivative_of_frame_velocity(case):
    """frame_acceleration == d/dt frame_velocity along q(t) = q + qd t + qdd t^2/2."""
    model = get_model(case)
    rng = rng_for(case)
    h = 1e-5
    q, qd, qdd = model.random_configuration(rng), rng.normal(size=model.nq), rng.normal(size=model.nq)
    traj = lambda t: (q + qd * t + 0.5 * qdd * t * t, qd + qdd * t)
    for frame in model.frame_names:
        for ref in REFS:
            a = rd.frame_acceleration(model, q, qd, qdd, frame, ref)
            fd = (rd.frame_velocity(model, *traj(h), frame, ref) - rd.frame_velocity(model, *traj(-h), frame, ref)) / (
                2 * h
            )
            np.testing.assert_allclose(a, fd, rtol=0, atol=1e-7, err_msg=f'{frame} {ref}')
            # and it is J qdd + dJ qd
            J = rd.frame_jacobian(model, q, frame, ref)
            dJ = rd.frame_jacobian_time_variation(model, q, qd, frame, ref)
            np.testing.assert_allclose(a, J @ qdd + dJ @ qd, rtol=0, atol=1e-12)


@pytest.mark.parametrize('case', CASES)
def test_frame_velocity_of_lwa_is_origin_velocity(case):
    """LWA twist = (d p/dt, w) with w from dR/dt R^T, along q + t qd (finite differences)."""
    model = get_model(case)
    rng = rng_for(case)
    h = 1e-6
    q, qd = model.random_configuration(rng), rng.normal(size=model.nq)
    for frame in model.frame_names:
        Tp = rd.frame_placement(model, q + h * qd, frame)
        Tm = rd.frame_placement(model, q - h * qd, frame)
        R = rd.frame_placement(model, q, frame)[:3, :3]
        dT = (Tp - Tm) / (2 * h)
        ref = np.concatenate([dT[:3, 3], vee(dT[:3, :3] @ R.T)])
        np.testing.assert_allclose(rd.frame_velocity(model, q, qd, frame), ref, atol=1e-7)


@pytest.mark.parametrize('case', CASES)
def test_frame_wrench_to_joint_is_jacobian_transpose(case):
    """rnea with the converted wrench == rnea without it - J^T w (J in the same reference)."""
    model = get_model(case)
    rng = rng_for(case)
    n = model.nq
    q, qd, qdd = model.random_configuration(rng), rng.normal(size=n), rng.normal(size=n)
    base = rd.rnea(model, q, qd, qdd)
    for frame in model.frame_names:
        for ref in REFS:
            w = rng.normal(size=6)
            F = rd.frame_wrench_to_joint(model, q, frame, w, ref)
            assert F.shape == (n, 6)
            J = rd.frame_jacobian(model, q, frame, ref)
            np.testing.assert_allclose(
                rd.rnea(model, q, qd, qdd, f_ext=F),
                base - J.T @ w,
                rtol=0,
                atol=1e-11 * max(1, np.abs(base).max()),
                err_msg=f'{frame} {ref}',
            )


def test_frame_wrench_to_joint_accumulates_into_out():
    """Two wrenches accumulated with ``out=`` act like the sum of their J^T w."""
    model = get_model('rand5')
    rng = np.random.default_rng(7)
    q = model.random_configuration(rng)
    f1, f2 = model.frame_names[-1], model.frame_names[-2]
    w1, w2 = rng.normal(size=6), rng.normal(size=6)
    F = rd.frame_wrench_to_joint(model, q, f1, w1, 'local')
    F2 = rd.frame_wrench_to_joint(model, q, f2, w2, 'world', out=F)
    assert F2 is F
    z = np.zeros(model.nq)
    expect = -(rd.frame_jacobian(model, q, f1, 'local').T @ w1 + rd.frame_jacobian(model, q, f2, 'world').T @ w2)
    np.testing.assert_allclose(rd.rnea(model, q, z, z, f_ext=F, gravity=np.zeros(3)), expect, atol=1e-12)


@pytest.mark.parametrize('case', CASES)
def test_power_balance_along_random_motion(case):
    """d/dt (T + U) == qd . rnea(q, qd, qdd) along q(t) = q0 + qd0 t + qdd0 t^2 / 2."""
    model = get_model(case)
    rng = rng_for(case)
    n = model.nq
    q0, qd0, qdd0 = model.random_configuration(rng), rng.normal(size=n), rng.normal(size=n)
    E = lambda t: (
        rd.kinetic_energy(model, q0 + qd0 * t + 0.5 * qdd0 * t * t, qd0 + qdd0 * t)
        + rd.potential_energy(model, q0 + qd0 * t + 0.5 * qdd0 * t * t)
    )
    h = 1e-5
    dE = (E(h) - E(-h)) / (2 * h)
    power = qd0 @ rd.rnea(model, q0, qd0, qdd0)
    assert abs(dE - power) <= 1e-6 * max(1.0, abs(power)), (dE, power)


@pytest.mark.parametrize('case', CASES)
def test_potential_energy_gradient_is_gravity_torque(case):
    """dU/dq (central differences) == gravity_torques(q); kinetic energy = qd M qd / 2 >= 0."""
    model = get_model(case)
    rng = rng_for(case)
    q = model.random_configuration(rng)
    h = 1e-6
    grad = np.array(
        [
            (rd.potential_energy(model, q + h * e) - rd.potential_energy(model, q - h * e)) / (2 * h)
            for e in np.eye(model.nq)
        ]
    )
    g = rd.gravity_torques(model, q)
    # central differences of U (~1e3 J for heavy robots) carry round-off ~ |U| eps / h
    np.testing.assert_allclose(grad, g, rtol=0, atol=1e-7 * max(1.0, np.abs(g).max()))


@pytest.mark.parametrize('case', CASES)
def test_screw_space_equals_world_jacobian_at_zero(case):
    """POE: model.screw_space[j] is column j of the 'world' Jacobian at q = 0 (every frame)."""
    model = get_model(case)
    q0 = np.zeros(model.nq)
    for frame in model.frame_names:
        J = rd.frame_jacobian(model, q0, frame, 'world')
        j = model.frame_parent[model.frame_index(frame)]
        sup = model.support[j] if j >= 0 else np.array([], dtype=int)
        np.testing.assert_allclose(J[:, sup], model.screw_space[sup].T, atol=1e-14)
        rest = np.setdiff1d(np.arange(model.nq), sup)
        assert np.all(J[:, rest] == 0)


@pytest.mark.parametrize('case', CASES)
def test_forward_kinematics_is_product_of_exponentials(case):
    """T_f(q) == exp(S_1 q_1) ... exp(S_k q_k) T_f(0) over the support of the frame."""
    model = get_model(case)
    rng = rng_for(case)
    q = model.random_configuration(rng)
    T0 = rd.forward_kinematics(model, np.zeros(model.nq))
    T = rd.forward_kinematics(model, q)
    for frame in model.frame_names:
        j = model.frame_parent[model.frame_index(frame)]
        P = np.eye(4)
        for k in model.support[j] if j >= 0 else []:
            P = P @ lie.exp_se3(model.screw_space[k] * q[k])
        np.testing.assert_allclose(T[frame], P @ T0[frame], rtol=0, atol=1e-12, err_msg=frame)


@pytest.mark.parametrize('case', CASES)
def test_space_and_body_jacobian_are_related_by_the_adjoint(case):
    """space_jacobian == Ad(T) body_jacobian; LWA = blockdiag(R, R) local."""
    model = get_model(case)
    q = model.random_configuration(rng_for(case))
    for frame in model.frame_names:
        T = rd.frame_placement(model, q, frame)
        Js, Jb = rd.space_jacobian(model, q, frame), rd.body_jacobian(model, q, frame)
        np.testing.assert_allclose(Js, lie.Ad(T) @ Jb, atol=1e-12)
        R = T[:3, :3]
        Jl = rd.frame_jacobian(model, q, frame, 'local_world_aligned')
        np.testing.assert_allclose(Jl, np.vstack([R @ Jb[:3], R @ Jb[3:]]), atol=1e-12)
