"""Planar 3RRR SEA-PKM (seed 004, assumed prototype): recursive ID vs projection method and
finite differences, sin^2-jerk profile, flatness controller in closed loop (exact tracking,
4th-order error decay, preload tracking, feed-forward only, quantisation/noise), SEA plant."""
import os
from math import factorial

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.control.flatness_sea import SEAFlatnessController
from robot_dynamics.pkm.planar_sea import (Planar3RRR, SinSquaredJerk, planar_3rrr_sidecar,
                                           planar_3rrr_urdf)
from robot_dynamics.plants import make_plant

HERE = os.path.dirname(os.path.abspath(__file__))
URDF = os.path.join(HERE, '..', 'urdf', 'planar_3rrr_sea.urdf')
PK = Planar3RRR()


@pytest.fixture(scope='module')
def model():
    return rd.load_model(URDF)


def test_files_match_generator():
    with open(URDF) as f:
        assert f.read() == planar_3rrr_urdf()
    with open(URDF.replace('.urdf', '.loops.yaml')) as f:
        assert f.read() == planar_3rrr_sidecar()


def _poly(t):
    c = np.array([[0.01, 0.02], [0.3, -0.2], [1., 2.], [5., -3.], [20., 10.], [-50, 80]])
    out = np.zeros((5, 2))
    for k in range(5):
        for j in range(k, 6):
            out[k] += c[j] * t ** (j - k) / factorial(j - k)
    return out


def _tree(model, th):
    q = np.zeros(model.nq)
    for k in range(3):
        q[model.joint_index(f'arm{k + 1}_joint')] = th[k, 0]
        q[model.joint_index(f'arm{k + 1}_elbow')] = th[k, 1]
    return q


def test_planar_id_vs_projection_and_fd(model):
    act = [f'arm{k}_joint' for k in (1, 2, 3)]
    for t in (0.0, 0.05):
        r = PK.inverse_dynamics_d2(_poly(t))
        q, qd, qdd = (_tree(model, r.theta[k]) for k in range(3))
        assert np.linalg.norm(rd.loop_residual(model, q)) < 1e-12
        pid = rd.projected_inverse_dynamics(model, q, qd, u=qdd, actuated=act)
        # minimum-norm actuation = preload lambda = 0
        np.testing.assert_allclose(pid.tau_actuated, r.u, atol=1e-10)
    h = 1e-3
    w = np.array([1 / 12, -2 / 3, 0, 2 / 3, -1 / 12]) / h
    tt = h * np.arange(-2, 3)
    lam = np.stack([2 + tt + 1.5 * tt ** 2, 1 + 3 * tt, 3 + 0 * tt], -1)    # lambda(t) and derivatives
    rs = PK.inverse_dynamics_d2(np.stack([_poly(t) for t in tt]), lam=lam)
    for lo, hi in ((rs.u, rs.ud), (rs.ud, rs.udd), (rs.theta[:, 3], rs.theta[:, 4])):
        err = np.max(np.abs(w @ lo.reshape(5, -1) - hi[2].ravel()))
        assert err < 1e-6 * np.max(np.abs(hi[2])), err
    assert abs(rs.n[2, 0] @ rs.u[2] - 2.0) < 1e-12


def test_sin_squared_jerk():
    prof = SinSquaredJerk([-0.05, 0.0], [0.05, 0.0], 0.5)
    ts = np.linspace(0, 0.5, 201)
    y = prof(ts)
    np.testing.assert_allclose(y[0, -1], [0.05, 0.0], atol=1e-14)
    assert np.max(np.abs(y[1:, [0, -1]])) < 1e-9
    h = 1e-5
    tf = np.linspace(0.001, 0.499, 199)     # avoids the switching instants (5th derivative jumps)
    for k in range(4):       # derivatives by central differences
        fd = (prof(tf + h)[k] - prof(tf - h)[k]) / (2 * h)
        assert np.max(np.abs(fd - prof(tf)[k + 1])) < 1e-5 * np.max(np.abs(y[k + 1])) + 1e-12
    np.testing.assert_allclose(np.max(y[1, :, 0]), 2 * 0.1 / 0.5, rtol=1e-3)   # v_max = 2h/T


def _run(ctrl, plant, prof, T, dt=2e-4, lam_d=None, every_stage=True):
    """Closed loop with the controller evaluated at every RK4 stage (continuous time)."""
    errs, lams = [], []
    x = np.concatenate([plant.p, plant.pd, plant.qm, plant.qdm])
    t = 0.0
    def f(t, x):
        tau = ctrl(x[:2], x[2:4], x[4:7], x[7:10], prof(t), lam_d)
        return plant.derivative(x, tau)
    for _ in range(int(round(T / dt))):
        k1 = f(t, x)
        k2 = f(t + dt / 2, x + dt / 2 * k1)
        k3 = f(t + dt / 2, x + dt / 2 * k2)
        k4 = f(t + dt, x + dt * k3)
        x = x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        t += dt
        errs.append(x[:2] - prof(t)[0])
        lams.append(getattr(ctrl, 'lam', 0.0))
    return np.array(errs), np.array(lams), x


def test_closed_loop_exact_tracking_and_preload(model):
    prof = SinSquaredJerk([-0.05, 0.0], [0.05, 0.0], 0.5)
    plant = make_plant('sea', model, dt=2e-4)
    plant.reset(p0=np.array([-0.05, 0.0]))
    ctrl = SEAFlatnessController(plant.params, poles=30.0)
    e, _, _ = _run(ctrl, plant, prof, 0.5, dt=5e-4)
    assert np.max(np.abs(e)) < 1e-9, np.max(np.abs(e))
    # preload lambda_d = 10 from a lambda = 0 equilibrium: lambda converges, tracking unaffected
    plant.reset(p0=np.array([-0.05, 0.0]))
    e, lam, _ = _run(ctrl, plant, prof, 0.3, dt=5e-4, lam_d=np.array([10.0, 0, 0]))
    assert np.max(np.abs(e)) < 1e-8
    pt = 30.0 * 0.3            # step response of the 2nd-order preload loop, poles at -30
    np.testing.assert_allclose(10.0 - lam[-1], 10.0 * (1 + pt) * np.exp(-pt), rtol=2e-2)


def test_closed_loop_error_decay_is_4th_order_polynomial(model):
    p = 30.0
    prof = SinSquaredJerk([-0.05, 0.0], [-0.05, 0.0], 0.5)      # hold P1
    plant = make_plant('sea', model, dt=2e-4)
    e0 = np.array([-1e-3, 0.5e-3])
    plant.reset(p0=np.array([-0.05, 0.0]) + e0)
    # start at rest in the spring equilibrium of the offset pose (e_dot = e_ddot = e_dddot = 0)
    ctrl = SEAFlatnessController(plant.params, poles=p)
    e, _, _ = _run(ctrl, plant, prof, 0.21, dt=5e-4)
    for t in (0.11, 0.21):
        k = int(round(t / 5e-4)) - 1
        pt = p * t
        ana = (1 + pt + pt ** 2 / 2 + pt ** 3 / 6) * np.exp(-pt)
        np.testing.assert_allclose(e[k] / e0, ana, rtol=1e-3)


def test_feedforward_only(model):
    prof = SinSquaredJerk([-0.05, 0.0], [0.05, 0.0], 0.5)
    plant = make_plant('sea', model, dt=2e-4)
    plant.reset(p0=np.array([-0.05, 0.0]))
    ff = SEAFlatnessController(plant.params, feedforward_only=True)
    e, _, _ = _run(ff, plant, prof, 0.3, dt=5e-4)
    assert np.max(np.abs(e)) < 1e-9
