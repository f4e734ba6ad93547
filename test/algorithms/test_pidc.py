"""Projected inverse dynamics control, passive joints and constraint-force control (seed 002
par. 7). Independent routes: the forward dynamics (the torques must realise the motion), the
paper's own passive-joint form (62), brute-force least squares / KKT for the minimum norm, the
analytic error decay (Thm 4)."""

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.algorithms import projection as pj
from robot_dynamics.plants import rigid as sim
from robot_dynamics.errors import ControllabilityError
from projection_helpers import admissible_state, model

GP, GD = 100.0, 20.0


def paper_passive_form(res_dyn, fpar, act_idx):
    """Eq. (56)-(62) literally: f = (I + H) f_par, H = -(I - P) Q+ (I - B), Q = (I-B)(I-P)."""
    n = len(fpar)
    B = np.zeros((n, n))
    B[act_idx, act_idx] = 1.0
    I = np.eye(n)
    Q = (I - B) @ (I - res_dyn.P)
    H = -(I - res_dyn.P) @ pj.pinv_abs(Q).pinv @ (I - B)
    return (I + H) @ fpar


# --------------------------------------------------------------------------- PIDC tracking
def test_pidc_slider_crank_tracking_matches_analytic_decay():
    """Brief par. 5.2: G_P = 100, G_D = 20, theta_d = pi/4 + 0.5 sin t, theta(0) = pi/4 + 0.2,
    crank active, rod passive, 1 kHz ZOH: e(t) = (e0 + (ed0 + 10 e0) t) exp(-10 t)."""
    m = model('slider_crank')
    taus_62 = []

    def ctrl(t, q, qd):
        r = pj.pidc(m, q, qd, np.pi / 4 + 0.5 * np.sin(t), 0.5 * np.cos(t), -0.5 * np.sin(t), GP, GD)
        assert r.controllable and r.message == '' and r.residual <= 1e-12
        d = pj.constrained_forward_dynamics(m, q, qd, np.zeros(2))
        taus_62.append(paper_passive_form(d, d.P @ (d.h + d.M @ r.u), m.actuated_indices))
        return r.tau_actuated

    th0 = np.pi / 4 + 0.2
    log = sim.simulate(m, 1.0, controller=ctrl, dt=1e-3, q0=[th0, -2 * th0])
    e = np.pi / 4 + 0.5 * np.sin(log.t) - log.q[:, 0]
    ea = (-0.2 + (0.5 - 2.0) * log.t) * np.exp(-10 * log.t)
    assert abs(e[-1] - ea[-1]) <= 2e-5  # ZOH tolerance of the brief
    assert abs(ea[-1] - (-7.72e-5)) < 5e-7 and abs(e[-1] - (-8.58e-5)) < 1e-6
    assert np.max(np.abs(e - ea)[log.t >= 0.5]) <= 2e-5
    assert np.max(np.abs(e - ea)) <= 3e-4  # early: the ZOH lag of large e'
    taus_62 = np.array(taus_62)
    assert np.max(np.abs(taus_62[:, 1])) <= 1e-10  # passive joint torque (62)
    np.testing.assert_allclose(taus_62[:, 0], log.tau[1:, 0], atol=1e-10)
    np.testing.assert_array_equal(log.tau[:, 1], 0.0)
    assert not log.events


@pytest.mark.parametrize('name', ['five_bar', 'four_bar'])
def test_passive_joint_pidc_realises_motion(name):
    """Actuation on model.actuated only: the torque realises qdd = u exactly (forward
    dynamics), equals the paper's form (62), and (62) leaves zero passive torque."""
    m = model(name)
    rng = np.random.default_rng(30)
    for _ in range(5):
        q, qd = admissible_state(m, rng, speed=1.5)
        thdd = rng.normal(size=len(m.independent))
        r = pj.projected_inverse_dynamics(m, q, qd, thdd)
        assert r.controllable and r.residual <= 1e-10 and r.sigma_min_AS > 1e-3
        np.testing.assert_array_equal(r.tau[m.passive_indices], 0.0)
        fd = pj.constrained_forward_dynamics(m, q, qd, r.tau)
        np.testing.assert_allclose(fd.qdd, r.u, atol=1e-9 * (1 + np.abs(r.u).max()))
        np.testing.assert_allclose(fd.qdd[m.independent_indices], thdd, atol=1e-9)
        f62 = paper_passive_form(fd, fd.P @ (fd.h + fd.M @ r.u), m.actuated_indices)
        assert np.max(np.abs(f62[m.passive_indices])) <= 1e-10
        np.testing.assert_allclose(f62, r.tau, atol=1e-10 * (1 + np.abs(r.tau).max()))


def test_independent_coordinates_helper():
    m = model('five_bar')
    rng = np.random.default_rng(31)
    q, qd = admissible_state(m, rng, speed=2.0)
    ic = pj.independent_coordinates(m, q, qd)
    A = rd.constraint_terms(m, q).A
    np.testing.assert_allclose(A @ ic.Lam, 0, atol=1e-12)
    np.testing.assert_allclose(ic.Lam[m.independent_indices], np.eye(2), atol=1e-12)
    np.testing.assert_allclose(ic.Lam @ ic.thetad, qd, atol=1e-12)
    # qdd = Lam thetadd + Lamdot thetadot satisfies the acceleration constraint A qdd + Adot qd = 0
    thdd = rng.normal(size=2)
    qdd = ic.Lam @ thdd + ic.Lamdot_thetadot
    np.testing.assert_allclose(A @ qdd + rd.constraint_bias(m, q, qd), 0, atol=1e-11)
    # ... and Lamdot thetadot is d/dt(Lam) thetadot (finite difference along the motion)
    h = 1e-6
    qp = pj.assemble(m, q[m.independent_indices] + h * ic.thetad, q_guess=q + h * qd).q
    qm = pj.assemble(m, q[m.independent_indices] - h * ic.thetad, q_guess=q - h * qd).q
    Lp = pj.independent_coordinates(m, qp, np.zeros(4)).Lam
    Lm = pj.independent_coordinates(m, qm, np.zeros(4)).Lam
    np.testing.assert_allclose((Lp - Lm) / (2 * h) @ ic.thetad, ic.Lamdot_thetadot, atol=1e-5)
    assert ic.is_chart and ic.sigma_min > 0.01
    sing = pj.independent_coordinates(model('slider_crank'), [-np.pi / 2, np.pi], [0, 0])
    assert not sing.is_chart


def test_task_space_theta_five_bar_tool():
    """theta = the tool position in the mechanism plane (world x, z), given as a callable."""
    m = model('five_bar')

    def tool_xz(q, qd):
        J = rd.frame_jacobian(m, q, 'tool')[[0, 2]]
        Jd = rd.frame_jacobian_time_variation(m, q, qd, 'tool')[[0, 2]]
        p = rd.frame_placement(m, q, 'tool')[[0, 2], 3]
        return p, J, Jd @ qd

    rng = np.random.default_rng(32)
    q, qd = admissible_state(m, rng, speed=1.0)
    p, J, Jdqd = tool_xz(q, qd)
    pd_, vd, ad = p + [0.01, -0.02], np.array([0.1, 0.05]), np.array([0.3, -0.2])
    r = pj.pidc(m, q, qd, pd_, vd, ad, GP, GD, theta=tool_xz)
    assert r.controllable
    fd = pj.constrained_forward_dynamics(m, q, qd, r.tau)
    task_acc = J @ fd.qdd + Jdqd
    np.testing.assert_allclose(task_acc, ad + GD * (vd - J @ qd) + GP * (pd_ - p), atol=1e-8)
    np.testing.assert_allclose(r.e, pd_ - p, atol=1e-15)


# --------------------------------------------------------------------------- minimum norm
@pytest.mark.parametrize('name', ['slider_crank', 'four_bar', 'five_bar'])
def test_minimum_norm_against_least_squares(name):
    """Fully actuated: tau = P (h + M u) is the least-squares minimum of ||f|| subject to
    f = h + M u + A^T lam (eq. 48), f_perp = 0, and no N-perp addition makes it smaller."""
    m = model(name)
    rng = np.random.default_rng(33)
    for _ in range(3):
        q, qd = admissible_state(m, rng, speed=1.5)
        r = pj.projected_inverse_dynamics(m, q, qd, rng.normal(size=len(m.independent)), actuated='all')
        d = pj.constrained_forward_dynamics(m, q, qd, np.zeros(m.nq))
        b = d.h + d.M @ r.u
        lam = np.linalg.lstsq(d.A.T, -b, rcond=1e-12)[0]
        f_ls = b + d.A.T @ lam
        np.testing.assert_allclose(r.tau, f_ls, atol=1e-10 * (1 + np.abs(b).max()))
        np.testing.assert_allclose(r.f_perp, 0, atol=1e-10 * (1 + np.abs(b).max()))
        for _ in range(5):
            nu = d.A.T @ rng.normal(size=d.A.shape[0])
            assert np.linalg.norm(r.tau) <= np.linalg.norm(r.tau + nu) + 1e-12
        fd = pj.constrained_forward_dynamics(m, q, qd, r.tau)
        np.testing.assert_allclose(fd.qdd, r.u, atol=1e-9 * (1 + np.abs(r.u).max()))


@pytest.mark.parametrize('name', ['slider_crank', 'four_bar'])
def test_weighted_minimum_norm_kkt(name):
    """Par. 7.2: with W SPD, tau minimises tau^T W^-1 tau among all forces producing the
    motion (KKT / normal equations), and the motion does not depend on W."""
    m = model(name)
    rng = np.random.default_rng(34)
    q, qd = admissible_state(m, rng, speed=1.5)
    thdd = rng.normal(size=len(m.independent))
    d = pj.constrained_forward_dynamics(m, q, qd, np.zeros(m.nq))
    Wd = rng.uniform(0.1, 10.0, m.nq)
    X = rng.normal(size=(m.nq, m.nq))
    for W in (Wd, X @ X.T + np.eye(m.nq)):
        r = pj.projected_inverse_dynamics(m, q, qd, thdd, actuated='all', W=W)
        Wm = np.diag(W) if W.ndim == 1 else W
        Winv = np.linalg.inv(Wm)
        b = d.h + d.M @ r.u
        lam = np.linalg.lstsq(d.A @ Winv @ d.A.T, -d.A @ Winv @ b, rcond=1e-12)[0]
        f_kkt = b + d.A.T @ lam
        np.testing.assert_allclose(r.tau, f_kkt, atol=1e-9 * (1 + np.abs(b).max()))
        fd = pj.constrained_forward_dynamics(m, q, qd, r.tau)
        np.testing.assert_allclose(fd.qdd, r.u, atol=1e-9 * (1 + np.abs(r.u).max()))
        r0 = pj.projected_inverse_dynamics(m, q, qd, thdd, actuated='all')
        assert r.tau @ Winv @ r.tau <= r0.tau @ Winv @ r0.tau + 1e-12
    # passive + weighted: the slider-crank with one actuator has a unique actuation
    if name == 'slider_crank':
        a = pj.projected_inverse_dynamics(m, q, qd, thdd, W=Wd)
        b_ = pj.projected_inverse_dynamics(m, q, qd, thdd)
        np.testing.assert_allclose(a.tau, b_.tau, atol=1e-10)


# --------------------------------------------------------------------------- controllability
def test_controllability_flag_slider_crank_singularity():
    """Crank only, at the branch crossing (-pi/2, pi): rank [A; S_a] < n: reported, never
    silent; strict mode raises."""
    m = model('slider_crank')
    q = np.array([-np.pi / 2, np.pi])
    r = pj.projected_inverse_dynamics(m, q, np.zeros(2), u=np.array([1.0, -2.0]))
    assert not r.controllable and r.sigma_min_AS < 1e-12
    assert 'not controllable' in r.message and r.residual > 0.1
    np.testing.assert_array_equal(r.tau[1], 0.0)
    assert pj.controllability(m, q) < 1e-12
    with pytest.raises(ControllabilityError):
        pj.projected_inverse_dynamics(m, q, np.zeros(2), u=np.array([1.0, -2.0]), strict=True)
    with pytest.raises(ControllabilityError):
        pj.pidc(m, q, np.zeros(2), -np.pi / 2, 0.0, 0.0, GP, GD, strict=True)
    rp = pj.pidc(m, q, np.zeros(2), -np.pi / 2, 0.0, 0.0, GP, GD)
    assert not rp.controllable and 'not a valid chart' in rp.message
    # away from it: controllable; with both joints actuated: always controllable
    assert pj.controllability(m, [0.3, -0.6]) > 0.1
    assert pj.projected_inverse_dynamics(m, q, np.zeros(2), u=np.array([1.0, -2.0]), actuated='all').controllable


def test_controllability_flag_five_bar_parallel_singularity():
    """Elbows coincide (distal links overlap): with the motors locked the tool can still
    rotate about the elbow -> type-2 singularity, reported."""
    m = model('five_bar')
    E = np.array([0.0, np.sqrt(0.2**2 - 0.1**2)])
    th1, th2 = np.arctan2(E[1], E[0] + 0.1), np.arctan2(E[1], E[0] - 0.1)
    psi = 1.2
    q = np.array([th1, psi - th1, th2, psi - th2])
    assert np.linalg.norm(rd.loop_residual(m, q)) < 1e-12
    assert pj.controllability(m, q) < 1e-9
    r = pj.projected_inverse_dynamics(m, q, np.zeros(4), u=np.array([0.0, 1.0, 0.0, 1.0]))
    assert not r.controllable and r.message
    q2 = pj.assemble(m, [th1 + 0.3, th2 - 0.3], q_guess=q + [0.3, 0.2, -0.3, 0.1]).q
    assert pj.controllability(m, q2) > 1e-3


# --------------------------------------------------------------------------- force control
def test_hybrid_control_exact_force_and_motion():
    """Eq. (54) corrected (Cc = M C): with an exact model qdd = u and F = A^T lam_d; equals
    the direct form h + M u + u_F; the printed C (erratum) misses the force on a curved
    four-bar."""
    for name in ('slider_crank', 'four_bar'):
        m = model(name)
        rng = np.random.default_rng(35)
        q, qd = admissible_state(m, rng, speed=3.0 if name == 'slider_crank' else 15.0)
        lam_d = rng.normal(size=m.nconstraints) * 5
        thdd = rng.normal(size=len(m.independent))
        r = pj.hybrid_control(m, q, qd, thetadd=thdd, lam_d=lam_d)
        fd = pj.constrained_forward_dynamics(m, q, qd, r.tau)
        u = pj.projected_inverse_dynamics(m, q, qd, thdd, actuated='all').u
        np.testing.assert_allclose(fd.qdd, u, atol=1e-9 * (1 + np.abs(u).max()))
        np.testing.assert_allclose(fd.F, fd.A.T @ lam_d, atol=1e-9 * (1 + np.abs(fd.F).max()))
        np.testing.assert_allclose(fd.F, r.F_d, atol=1e-9 * (1 + np.abs(fd.F).max()))
        np.testing.assert_allclose(r.F_pred, fd.F, atol=1e-9 * (1 + np.abs(fd.F).max()))
        np.testing.assert_allclose(r.tau, fd.h + fd.M @ u + r.u_F, atol=1e-9 * (1 + np.abs(r.tau).max()))
        if name == 'slider_crank':
            lag = pj.lagrange_forward_dynamics(m, q, qd, r.tau)
            np.testing.assert_allclose(lag.lam, lam_d, rtol=1e-9)  # full rank: lam -> lam_d
        else:
            # erratum regression: the printed (51)/(54) with C instead of Cc = M C
            d = fd
            P, M, I = d.P, d.M, np.eye(m.nq)
            mu = (I - P) @ M @ np.linalg.inv(M + P @ M - M @ P)
            f_wrong = d.h + mu @ d.Cqd + (I + mu) @ P @ M @ u + r.u_F
            F_wrong = pj.constrained_forward_dynamics(m, q, qd, f_wrong).F
            assert np.linalg.norm(F_wrong - r.F_d) > 1e-4  # >> the 1e-9 agreement
            f_right = d.h + mu @ (M @ d.Cqd) + (I + mu) @ P @ M @ u + r.u_F
            np.testing.assert_allclose(f_right, r.tau, atol=1e-9 * (1 + np.abs(r.tau).max()))


@pytest.mark.parametrize('GF,converges', [(0.5, True), (1.5, False)])
def test_sampled_force_loop_with_delay(GF, converges):
    """Slider-crank, both joints actuated, lam_d = 5 N, F measured one step late (the first
    measurement is 0): G_F < 1 converges, G_F = 1.5 diverges (brief A5)."""
    m = model('slider_crank')
    th0 = np.pi / 4
    pl = sim.ConstrainedPlant(m, [th0, -2 * th0])
    dt, GI = 1e-3, 50.0
    F_meas = np.zeros(2)
    e_int = np.zeros(2)
    lam_err = []
    for k in range(1500):
        t = pl.t
        pj.constrained_forward_dynamics(m, pl.q, pl.qd, np.zeros(2))
        ic = pj.independent_coordinates(m, pl.q, pl.qd)
        e = np.pi / 4 + 0.3 * np.sin(t) - ic.theta[0]
        ed = 0.3 * np.cos(t) - ic.thetad[0]
        thdd = -0.3 * np.sin(t) + GD * ed + GP * e
        r = pj.hybrid_control(m, pl.q, pl.qd, thetadd=[thdd], lam_d=[5.0], F_meas=F_meas, GF=GF, GI=GI, e_int=e_int)
        e_int = e_int + r.e_f * dt
        info = pl.step(r.tau)
        F_meas = info.F
        lam_err.append(abs(info.lam[0] - 5.0))
        if lam_err[-1] > 1e6:
            break
    lam_err = np.array(lam_err)
    if converges:
        # residual from the delay while the motion varies (brief: < 4e-3 after 2.5 s)
        assert lam_err[-1] < 1e-3 and lam_err[:5].max() > 1.0
        assert abs(e) < 1e-4  # the motion is tracked as well
    else:
        assert lam_err[-1] > 1e3
