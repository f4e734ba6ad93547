"""Planar 3RRR SEA-PKM (seed 004, assumed prototype): recursive ID vs projection method and
finite differences, sin^2-jerk profile, flatness controller in closed loop (exact tracking,
4th-order error decay, preload tracking, feed-forward only, quantisation/noise), SEA plant."""

import suite_paths
import os
from math import factorial

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.control.flatness_sea import SEAFlatnessController
from robot_dynamics.control.trajectories import SinSquaredJerk
from robot_dynamics.pkm.planar_sea import Planar3RRR, planar_3rrr_sidecar, planar_3rrr_urdf
from robot_dynamics.plants.registry import make_plant

HERE = suite_paths.TEST_DIR
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
    c = np.array([[0.01, 0.02], [0.3, -0.2], [1.0, 2.0], [5.0, -3.0], [20.0, 10.0], [-50, 80]])
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
    lam = np.stack([2 + tt + 1.5 * tt**2, 1 + 3 * tt, 3 + 0 * tt], -1)  # lambda(t) and derivatives
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
    tf = np.linspace(0.001, 0.499, 199)  # avoids the switching instants (5th derivative jumps)
    for k in range(4):  # derivatives by central differences
        fd = (prof(tf + h)[k] - prof(tf - h)[k]) / (2 * h)
        assert np.max(np.abs(fd - prof(tf)[k + 1])) < 1e-5 * np.max(np.abs(y[k + 1])) + 1e-12
    np.testing.assert_allclose(np.max(y[1, :, 0]), 2 * 0.1 / 0.5, rtol=1e-3)  # v_max = 2h/T


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
    ctrl = SEAFlatnessController(model, params=plant.params, poles=30.0)
    e, _, _ = _run(ctrl, plant, prof, 0.5, dt=5e-4)
    assert np.max(np.abs(e)) < 1e-9, np.max(np.abs(e))
    # preload lambda_d = 10 from a lambda = 0 equilibrium: lambda converges, tracking unaffected
    plant.reset(p0=np.array([-0.05, 0.0]))
    e, lam, _ = _run(ctrl, plant, prof, 0.3, dt=5e-4, lam_d=np.array([10.0, 0, 0]))
    assert np.max(np.abs(e)) < 1e-8
    pt = 30.0 * 0.3  # step response of the 2nd-order preload loop, poles at -30
    np.testing.assert_allclose(10.0 - lam[-1], 10.0 * (1 + pt) * np.exp(-pt), rtol=2e-2)


def test_closed_loop_error_decay_is_4th_order_polynomial(model):
    p = 30.0
    prof = SinSquaredJerk([-0.05, 0.0], [-0.05, 0.0], 0.5)  # hold P1
    plant = make_plant('sea', model, dt=2e-4)
    e0 = np.array([-1e-3, 0.5e-3])
    plant.reset(p0=np.array([-0.05, 0.0]) + e0)
    # start at rest in the spring equilibrium of the offset pose (e_dot = e_ddot = e_dddot = 0)
    ctrl = SEAFlatnessController(model, params=plant.params, poles=p)
    e, _, _ = _run(ctrl, plant, prof, 0.21, dt=5e-4)
    for t in (0.11, 0.21):
        k = int(round(t / 5e-4)) - 1
        pt = p * t
        ana = (1 + pt + pt**2 / 2 + pt**3 / 6) * np.exp(-pt)
        np.testing.assert_allclose(e[k] / e0, ana, rtol=1e-3)


def test_feedforward_only(model):
    prof = SinSquaredJerk([-0.05, 0.0], [0.05, 0.0], 0.5)
    plant = make_plant('sea', model, dt=2e-4)
    plant.reset(p0=np.array([-0.05, 0.0]))
    ff = SEAFlatnessController(model, params=plant.params, feedforward_only=True)
    e, _, _ = _run(ff, plant, prof, 0.3, dt=5e-4)
    assert np.max(np.abs(e)) < 1e-9


def _sensitivities(ctrl, plant, prof, t, lam_d, ia, ie, im, h=1e-7):
    """beta * d tau / d(q_meas, qd_meas) for the EE (2 x 9 each) and the preload (1 x 9 each):
    how a sensor error moves p'''' and lambda'' of the closed loop (linearised)."""
    from robot_dynamics.control.flatness_sea import sea_state_from_joints

    q, qd = plant.true_q, plant.true_qd
    P = plant.params

    def tau(q, qd):
        return ctrl(*sea_state_from_joints(P, q, qd, ia, ie, im), prof(t), lam_d)

    t0 = tau(q, qd)
    Dq = np.stack([(tau(q + h * e, qd) - t0) / h for e in np.eye(9)], 1)
    Dqd = np.stack([(tau(q, qd + h * e) - t0) / h for e in np.eye(9)], 1)
    Mt, _, J = plant.pkm.task_space_dynamics(plant.p, plant.pd)
    n = plant.pkm.inverse_dynamics_d2(np.vstack([plant.p, plant.pd, np.zeros((3, 2))])).n[0]
    beta = np.vstack([np.linalg.solve(Mt[0], J[0].T), n[None]]) * P.stiffness / P.motor_inertia
    return beta @ Dq, beta @ Dqd


def _sampled_loop(model, quant, noise, lam_d, pole=30.0, dt=1e-3, n=800, sens=False):
    """The loop as the sea_controller node runs it: every dt the controller reads the plant's
    measured joint states, tau is held over the step (ZOH). Returns |e| (n, 2), |lambda -
    lambda_d| after 0.3 s, and the max over the run of the row 1-norms of Sq, Sqd (if sens)."""
    from robot_dynamics.control.flatness_sea import sea_state_from_joints

    plant = make_plant('sea', model, dt=dt, quantization=quant, noise=noise, seed=3)
    plant.reset(p0=np.array([-0.05, 0.0]))
    prof = SinSquaredJerk([-0.05, 0.0], [0.05, 0.0], 0.5, t0=0.05)
    ctrl = SEAFlatnessController(model, params=plant.params, poles=pole, lambda_poles=pole)
    names = model.joint_names
    ia, ie, im = ([names.index(f'arm{k}_{s}') for k in (1, 2, 3)] for s in ('joint', 'elbow', 'motor'))
    e, lam_err, Sq, Sqd = [], [], [], []
    for k in range(n):
        t = plant.t
        if sens and k % 40 == 0:
            a, b = _sensitivities(ctrl, plant, prof, t, lam_d, ia, ie, im)
            Sq.append(np.abs(a).sum(1))
            Sqd.append(np.abs(b).sum(1))
        tau = ctrl(*sea_state_from_joints(plant.params, plant.q, plant.qd, ia, ie, im), prof(t), lam_d)
        plant.step(tau)
        e.append(plant.p - prof(plant.t)[0])
        if k >= 300:  # after the preload transient (lambda 0 -> lambda_d, poles at -30)
            r = plant.pkm.inverse_dynamics_d2(np.vstack([plant.p, np.zeros((4, 2))]))
            u = plant.params.stiffness * (plant.qm - r.theta[0, :, 0])
            lam_err.append(r.n[0] @ u - lam_d[0])
    out = np.abs(np.array(e)), np.abs(np.array(lam_err))
    return out + ((np.max(Sq, 0), np.max(Sqd, 0)) if sens else ())


def test_closed_loop_quantisation_and_noise_within_bounds(model):
    """1 kHz sampled loop on measured joint states: 14-bit encoders (quantisation 2 pi / 2^14)
    plus uniform noise +-1e-4 rad on all 9 joints, velocities by backward difference, preload
    set-point lambda_d = 2. Bound (docs/recursive_id_sea.md): the linearised error dynamics
    e'''' + k3 e''' + .. + k0 e = Sq eps + Sqd eps_dot give |e| <= (|g|_L1 |Sq|_1 +
    |dg/dt|_L1 |Sqd|_1) eps_max + e_zoh, g the impulse response of 1/(s+p)^4; e_zoh is the
    error of the same sampled loop with exact sensors (asserted < 1e-4 m)."""
    from math import e as E

    pole, quant, noise = 30.0, 2 * np.pi / 2**14, 1e-4
    lam_d = np.array([2.0, 0.0, 0.0])
    e0, l0 = _sampled_loop(model, 0.0, 0.0, lam_d)
    e_zoh = e0.max(0)
    assert np.all(e_zoh < 1e-4) and l0.max() < 0.05, (e_zoh, l0.max())
    e, lam_err, Sq, Sqd = _sampled_loop(model, quant, noise, lam_d, sens=True)
    eps = quant / 2 + noise
    # L1 norms: g = t^3 e^-pt / 6 -> 1/p^4, dg/dt -> 2 max g = 9 e^-3 / p^3; preload loop
    # 1/(s+p)^2: t e^-pt -> 1/p^2, its derivative -> 2/(e p)
    bound_e = (Sq[:2] * pole**-4 + Sqd[:2] * 9 / E**3 / pole**3) * eps + e_zoh
    bound_l = (Sq[2] * pole**-2 + Sqd[2] * 2 / E / pole) * eps + l0.max()
    print(
        'max |e|',
        e.max(0),
        'bound',
        bound_e,
        'e_zoh',
        e_zoh,
        '| max |lam - lam_d|',
        lam_err.max(),
        'bound',
        bound_l,
        'exact',
        l0.max(),
    )
    assert np.all(e.max(0) < bound_e), (e.max(0), bound_e)
    assert lam_err.max() < bound_l, (lam_err.max(), bound_l)
    assert np.all(bound_e < 2e-3) and bound_l < lam_d[0]  # bounds are meaningful
    assert np.all(e.max(0) > e_zoh)  # the sensor errors did act
