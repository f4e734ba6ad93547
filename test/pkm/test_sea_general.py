"""SEA-PKM of any geometry through the general 2nd-order route (robot_dynamics.pkm.sea):
plant and flatness law built from URDF + sidecar, checked against independent routes:

* on the planar 3RRR SEA-PKM: = the closed-form planar plant (SEAPlant) and law
  (SEAFlatnessController) of robot_dynamics.pkm.planar_sea, to round-off;
* on test/data/five_bar_sea (a five-bar driven through two SEAs, vertical plane, gravity in the
  plane; written only as URDF + sidecar, outside the planar class): the plant's link-side
  accelerations = the projection engine's constrained forward dynamics of the same URDF with
  the spring efforts applied (seed 002, independent route); the law tracks a rest-to-rest move
  in closed loop with the plant within the 1 kHz ZOH error bound;
* on test/data/gough_stewart_sea (the 6-UPS platform with its six legs driven through linear
  springs; 6-DOF pose task, URDF + sidecar only): the plant's twist derivative = the projection
  engine's, its SE(3) integration and measurement consistent, and the law tracks a 6-DOF pose
  move in closed loop;
* the preload direction's derivatives against central differences of a smooth J_IK(t).
"""

import suite_paths
import os

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.control.flatness_sea import (
    GeneralSeaFlatnessLaw,
    SEAFlatnessController,
    SeaFlatnessLaw,
    sea_state_from_joints,
)
from robot_dynamics.control.laws import make_law
from robot_dynamics.control.loop import Reference, State
from robot_dynamics.errors import InputError
from robot_dynamics.control.trajectories import SinSquaredJerk
from robot_dynamics.plants.registry import make_plant
from robot_dynamics.plants.sea import SEAPlant
from robot_dynamics.control.flatness_sea import GeneralSEAFlatness
from robot_dynamics.plants.sea import GeneralSEAPlant
from robot_dynamics.pkm.sea import SEAPKM, preload_direction

HERE = suite_paths.TEST_DIR
FIVE_BAR_SEA = os.path.join(HERE, 'data', 'five_bar_sea.urdf')
GS_SEA = os.path.join(HERE, 'data', 'gough_stewart_sea.urdf')


@pytest.fixture(scope='module')
def rrr():
    return rd.load_model(rd.data_path('urdf/planar_3rrr_sea.urdf'))


@pytest.fixture(scope='module')
def fbs():
    return rd.load_model(FIVE_BAR_SEA)


def test_general_plant_equals_planar_plant(rrr):
    ref, gen = SEAPlant(rrr, dt=1e-3), GeneralSEAPlant(rrr, dt=1e-3)
    assert np.abs(gen.x - ref.p).max() < 1e-12 and np.abs(gen.qm - ref.qm).max() < 1e-12
    tau = np.array([0.3, -0.2, 0.1])
    for _ in range(30):
        ref.step(tau)
        gen.step(tau)
    assert np.abs(gen.x - ref.p).max() < 1e-11
    assert np.abs(gen.xd - ref.pd).max() < 1e-10
    assert np.abs(gen.qm - ref.qm).max() < 1e-10
    assert np.abs(gen.q - ref.true_q).max() < 1e-10
    assert np.abs(gen.xd).max() > 1e-3  # it moved


def test_general_law_equals_planar_law(rrr):
    plant = SEAPlant(rrr, dt=1e-3)
    for _ in range(20):
        plant.step(np.array([0.3, -0.2, 0.1]))
    P = plant.params
    s = SEAPKM(rrr)
    planar = SEAFlatnessController(P, poles=25.0, lambda_poles=40.0)
    gen = GeneralSEAFlatness(s, poles=25.0, lambda_poles=40.0)
    q, qd = plant.true_q, plant.true_qd
    x, xd = s.measure(q, qd)
    p, pd, qm, qdm = sea_state_from_joints(P, q, qd, plant.i_arm, plant.i_elb, plant.i_mot)
    assert np.abs(x - p).max() < 1e-14 and np.abs(xd - pd).max() < 1e-13
    rng = np.random.default_rng(3)
    for _ in range(3):
        yd = rng.normal(scale=[[0.01], [0.1], [1.0], [5.0], [20.0]], size=(5, 2))
        yd[0] += p
        lam_d = rng.normal(size=3)
        t1, t2 = planar(p, pd, qm, qdm, yd, lam_d), gen(x, xd, qm, qdm, yd, lam_d)
        assert np.abs(t1 - t2).max() < 1e-10 * max(1.0, np.abs(t1).max())
        assert abs(planar.lam - gen.lam) < 1e-10


def test_preload_direction_derivatives_by_central_differences():
    rng = np.random.default_rng(0)
    for d in (1, 2, 3):
        C = rng.normal(size=(4, d + 1, d))  # J(t) = C0 + C1 t + C2 t^2 + C3 t^3

        def J(t):
            return sum(C[k] * t**k for k in range(4))

        def Jd(t):
            return sum(k * C[k] * t ** (k - 1) for k in range(1, 4))

        def Jdd(t):
            return sum(k * (k - 1) * C[k] * t ** (k - 2) for k in range(2, 4))

        t, h = 0.3, 1e-4
        n = preload_direction(np.stack([J(t), Jd(t), Jdd(t)]))
        assert np.abs(J(t).T @ n[0]).max() < 1e-12  # null vector of J_IK^T
        n0 = lambda s: preload_direction(np.stack([J(s), Jd(s), Jdd(s)]))[0]  # noqa: E731
        fd1 = (n0(t - 2 * h) - 8 * n0(t - h) + 8 * n0(t + h) - n0(t + 2 * h)) / (12 * h)
        fd2 = (-n0(t - 2 * h) + 16 * n0(t - h) - 30 * n0(t) + 16 * n0(t + h) - n0(t + 2 * h)) / (12 * h * h)
        assert np.abs(n[1] - fd1).max() < 1e-8 * max(1, np.abs(n[1]).max())
        assert np.abs(n[2] - fd2).max() < 1e-5 * max(1, np.abs(n[2]).max())
    with pytest.raises(InputError, match='n_a = delta'):
        preload_direction(np.zeros((3, 2, 2)))


def test_five_bar_sea_plant_equals_projection_engine(fbs):
    """The general SEA plant's link side against the constrained forward dynamics (seed 002)
    of the same URDF with the spring efforts u on the link-side SEA joints."""
    plant = make_plant('sea', fbs, dt=1e-3)
    assert isinstance(plant, GeneralSEAPlant)
    s = plant.sea
    assert s.task == ['x', 'z'] and s.n_a == s.delta == 2
    plant.set_state(plant.x, [0.2, -0.1], plant.qm + [0.02, -0.03], [0.5, -0.4])
    q, qd = plant.q, plant.qd
    z = np.concatenate([plant.x, plant.xd, plant.qm, plant.qdm])
    tau_m = np.array([0.7, -0.4])
    dz = plant.derivative(z, tau_m)
    u = s.K * (plant.qm - q[s.i_link])
    tau = np.zeros(fbs.nq)
    tau[s.i_link] = u
    res = rd.constrained_forward_dynamics(fbs, q, qd, tau)
    # task acceleration of the platform frame from the projection engine's qdd
    h = 1e-6
    x_of = lambda qq, qqd: s.measure(qq, qqd)  # noqa: E731
    xd_p = x_of(q + h * qd + 0.5 * h * h * res.qdd, qd + h * res.qdd)[1]
    xd_m = x_of(q - h * qd + 0.5 * h * h * res.qdd, qd - h * res.qdd)[1]
    xdd_proj = (xd_p - xd_m) / (2 * h)
    assert np.abs(dz[2:4] - xdd_proj).max() < 1e-6 * max(1.0, np.abs(xdd_proj).max())
    # and exactly: the route's theta'' at (x, xd, xdd) = the projection engine's qdd
    X = np.zeros((1, 5, 2))
    X[0, 0], X[0, 1], X[0, 2] = plant.x, plant.xd, dz[2:4]
    r = s.solve(X)
    qdd_gen = s.pkm.tree_q(r.theta[0, 2], np.zeros(fbs.nq))
    link = [fbs.joint_index(j) for j in ('motor1_joint', 'elbow1_joint', 'motor2_joint', 'elbow2_joint')]
    assert np.abs(qdd_gen[link] - res.qdd[link]).max() < 1e-8 * max(1.0, np.abs(res.qdd[link]).max())
    assert np.allclose(dz[6:], (tau_m - u) / s.Mm, atol=1e-12)


@pytest.fixture(scope='module')
def gss():
    return rd.load_model(GS_SEA)


def test_gough_stewart_sea_plant_equals_projection_engine(gss):
    """6-DOF SEA platform (pose task): the plant's body-twist derivative V' (exponential
    coordinates about the current pose) against the constrained forward dynamics (seed 002) of
    the same URDF with the spring forces on the legs; the SE(3) state and its measurement from
    the published joints agree; the static hold keeps the platform where it is."""
    from robot_dynamics.spatial.lie import exp_se3, inv_se3, log_se3

    plant = make_plant('sea', gss, dt=1e-3)
    assert isinstance(plant, GeneralSEAPlant)
    s = plant.sea
    assert s.pose and s.task == ['pose'] and s.n_a == s.delta == 6
    T = plant.x @ exp_se3(np.array([0.004, -0.003, 0.01, 0.05, -0.04, 0.03]))
    V = np.array([0.03, -0.02, 0.05, 0.4, -0.3, 0.2])
    qm = s.at(T).theta_a[0, 0] + np.array([1, -2, 3, -1, 2, -3]) * 1e-3
    plant.set_state(T, V, qm, np.linspace(-0.1, 0.1, 6))
    q, qd = plant.q, plant.qd
    Tm, Vm = s.measure(q, qd)
    assert np.abs(Tm - T).max() < 1e-12 and np.abs(Vm - V).max() < 1e-12
    z = np.concatenate([np.zeros(6), V, plant.qm, plant.qdm])
    tau_m = np.array([3.0, -2.0, 1.0, 0.5, -1.5, 2.5])
    dz = plant.derivative(z, tau_m, plant.x)
    assert np.abs(dz[:6] - V).max() < 1e-15  # xi' = V at xi = 0
    u = s.K * (plant.qm - q[s.i_link])
    tau = np.zeros(gss.nq)
    tau[s.i_link] = u
    res = rd.constrained_forward_dynamics(gss, q, qd, tau)
    # V' of the platform by central differences of the measured body twist along qdd
    h = 1e-6
    Vp = s.measure(q + h * qd + 0.5 * h * h * res.qdd, qd + h * res.qdd)[1]
    Vmi = s.measure(q - h * qd + 0.5 * h * h * res.qdd, qd - h * res.qdd)[1]
    assert np.abs(dz[6:12] - (Vp - Vmi) / (2 * h)).max() < 1e-6 * max(1.0, np.abs(dz[6:12]).max())
    # exactly: the route's theta'' at (T, V, V') = the projection engine's qdd (link joints)
    D = np.zeros((1, 4, 6))
    D[0, 0], D[0, 1] = V, dz[6:12]
    r = s.solve_at(T[None], D)
    qdd_gen = s.pkm.tree_q(r.theta[0, 2], np.zeros(gss.nq))
    link = [i for i in range(gss.nq) if i not in set(s.i_mot.tolist())]
    assert np.abs(qdd_gen[link] - res.qdd[link]).max() < 1e-8 * max(1.0, np.abs(res.qdd[link]).max())
    assert np.allclose(dz[18:], (tau_m - u) / s.Mm, atol=1e-12)
    # one step with these efforts: the pose stays on SE(3) and moved by V dt + V' dt^2 / 2 + O(dt^3)
    T0, Vdot = plant.x.copy(), dz[6:12]
    full = np.zeros(gss.nq)
    full[s.i_mot] = tau_m
    plant.step(full)
    R = plant.x[:3, :3]
    assert np.abs(R.T @ R - np.eye(3)).max() < 1e-14
    assert np.abs(log_se3(inv_se3(T0) @ plant.x) - 1e-3 * V - 0.5e-6 * Vdot).max() < 2e-6
    # static hold at rest: no drift
    plant.set_state(T, np.zeros(6), s.at(T).theta_a[0, 0] + s.at(T).u[0] / s.K, np.zeros(6))
    for _ in range(20):
        plant.step(plant.hold_command(0.0))
    assert np.abs(plant.x - T).max() < 1e-12 and np.abs(plant.xd).max() < 1e-10


def test_gough_stewart_sea_law_tracks_a_pose_move(gss):
    """1 kHz sampled loop (ZOH), GeneralSEAFlatness on the 6-DOF SEA platform following a
    rest-to-rest pose move (10/5/10 mm and 0.05/0.03/0.04 rad in 0.5 s, PoseSegments): the pose
    error (log of T^-1 T_d, mixed m and rad) stays < 3e-4 during the move (measured 1.1e-4) and
    < 2e-5 at rest 0.2 s after it (poles -30; measured 6.5e-6)."""
    from robot_dynamics.spatial.lie import inv_se3, log_se3
    from robot_dynamics.control.trajectories import pose_move_profile

    plant = make_plant('sea', gss, dt=1e-3)
    s = plant.sea
    law = GeneralSEAFlatness(s, poles=30.0)
    start = np.r_[plant.x[:3, 3], 0.0, 0.0, 0.0]
    prof = pose_move_profile(start, start + np.r_[0.01, -0.005, 0.01, 0.05, -0.03, 0.04], [0.5])
    errs = []
    for k in range(700):
        X, V = prof(k * 1e-3, 4)
        tau = np.zeros(gss.nq)
        tau[s.i_mot] = law(plant.x, plant.xd, plant.qm, plant.qdm, (X, V))
        plant.step(tau)
        errs.append(np.abs(log_se3(inv_se3(plant.x) @ prof((k + 1) * 1e-3, 4)[0])).max())
    assert max(errs) < 3e-4, max(errs)
    assert errs[-1] < 2e-5, errs[-1]
    with pytest.raises(InputError, match='non-finite'):
        law(plant.x, plant.xd, plant.qm, plant.qdm, (X, V * np.nan))


def _run(model, law, plant, goal_offset, T=0.5, n=800, norm=False):
    """1 kHz sampled loop (ZOH) on a sin^2-jerk move: (max error: largest component, or the
    Euclidean norm with ``norm``, last LawOutput)."""
    x0 = law.current_coordinates(plant.q)
    prof = SinSquaredJerk(x0, x0 + goal_offset, T, 0.05)
    emax, out = 0.0, None
    for _ in range(n):
        t = plant.t
        yd = prof(t)
        ref = Reference(t, yd[0], yd[1], yd[2], None)
        ref.derivs = yd
        out = law.compute(State(t, plant.q, plant.qd, t), ref)
        plant.step(out.effort)
        emax = max(emax, np.linalg.norm(out.e) if norm else np.abs(out.e).max())
    return emax, out


def test_five_bar_sea_law_tracks_in_closed_loop(fbs):
    """1 kHz sampled loop (ZOH) on a 36 mm / 0.5 s sin^2-jerk move in the vertical plane: the
    error stays within the ZOH bound of the planar robot's core test (1e-4 m) and decays to
    < 5e-6 m at rest 0.3 s after the move (poles -30)."""
    law = make_law(fbs, 'sea_flatness', poles=30.0, lambda_poles=30.0)
    assert isinstance(law, GeneralSeaFlatnessLaw)
    assert law.coords == ['x', 'z'] and law.task_axes == (0, 2)
    plant = make_plant('sea', fbs, dt=1e-3)
    emax, out = _run(fbs, law, plant, np.array([0.03, 0.02]))
    assert emax < 1e-4
    assert np.abs(out.e).max() < 5e-6
    assert np.isnan(out.info['lambda'])
    assert out.info['labels'] == ['e_x', 'e_z', 'ed_x', 'ed_z']


def test_general_law_tracks_planar_robot_with_preload(rrr):
    law = make_law(rrr, 'sea_flatness', poles=30.0, lambda_poles=30.0, preload=0.5, route='general')
    assert isinstance(law, GeneralSeaFlatnessLaw)
    assert isinstance(make_law(rrr, 'sea_flatness'), SeaFlatnessLaw)  # auto: the planar fast path
    emax, out = _run(rrr, law, make_plant('sea', rrr, dt=1e-3), np.array([0.03, 0.02]))
    assert emax < 1e-4 and np.abs(out.e).max() < 5e-6
    assert abs(out.info['lambda'] - 0.5) < 1e-3


def test_routes_and_safe_command(fbs, rrr):
    with pytest.raises(InputError, match='3 actuators of type'):
        make_law(fbs, 'sea_flatness', route='planar')
    with pytest.raises(InputError, match='3 actuators of type'):
        make_plant('sea', fbs, route='planar')
    with pytest.raises(InputError, match='no option'):
        make_plant('sea', fbs, noise=1e-3)
    assert isinstance(make_plant('sea', rrr, route='general'), GeneralSEAPlant)
    law = make_law(fbs, 'sea_flatness')
    plant = make_plant('sea', fbs, dt=1e-3)
    st = State(0.0, plant.q, plant.qd, 0.0)
    hold = law.safe_command(st, 'hold', 0.2)
    # at rest the hold is the static spring effort: the plant stays where it is
    for _ in range(50):
        plant.step(law.safe_command(State(plant.t, plant.q, plant.qd, plant.t), 'hold', 0.2))
    assert np.abs(plant.xd).max() < 1e-9 and np.abs(hold).max() > 0.1
    assert np.all(law.safe_command(st, 'zero', 0.2) == 0)
