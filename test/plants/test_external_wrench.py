"""External loads on the simulated plants (``Plant.set_external_wrench``).

Convention: the wrench (force, moment) is exerted by the environment ON the robot body carrying
the frame, force at the frame origin, moment about it, in the frame's axes ('local'), in world
axes ('local_world_aligned') or as a spatial wrench about the world origin ('world').

Oracles: virtual power by central finite differences of the frame placement, and the
independent route of our RNEA with Pinocchio-convention ``f_ext``
(:func:`~robot_dynamics.algorithms.kinematics.frame_wrench_to_joint`); static equilibrium of the four-bar /
five-bar held by the projected gravity + load compensation built from the RNEA route; the
hydraulic plant's two load routes (Newton-Euler tool wrench F_D vs the generalized force of the
URDF Jacobian) against each other and against the seed 002 constrained forward dynamics; the
steady cylinder forces under a tool load against the static balance by virtual power.
"""

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import robot_dynamics as rd
from robot_dynamics.control.vdc import VDCController
from robot_dynamics.errors import InputError, UnknownNameError
from robot_dynamics.plants.hydraulic import A_A, A_B, HydraulicPlant, _deriv_ext, friction
from robot_dynamics.algorithms.kinematics import frame_wrench_to_joint
from robot_dynamics.algorithms.projection import constrained_forward_dynamics, projected_inverse_dynamics
from robot_dynamics.plants.rigid import ConstrainedPlant, external_generalized_force
from robot_dynamics.plants.registry import make_plant
from robot_dynamics.algorithms.vdc import full_q
from projection_helpers import admissible_state, model

REFS = ('local', 'local_world_aligned', 'world')


def _to_lwa(T, w, ref):
    """(force, moment about the frame origin) in world axes."""
    R, p = T[:3, :3], T[:3, 3]
    f, m = np.asarray(w[:3]), np.asarray(w[3:])
    if ref == 'local':
        return R @ f, R @ m
    if ref == 'world':
        return f, m - np.cross(p, f)
    return f, m


def _virtual_power_fd(m, q, frame, w, ref, h=1e-6):
    """tau_i = f . dp/dq_i + m . dtheta/dq_i by central differences of the frame placement."""
    T0 = rd.frame_placement(m, q, frame)
    f, mo = _to_lwa(T0, w, ref)
    tau = np.zeros(m.nq)
    for i in range(m.nq):
        e = np.zeros(m.nq)
        e[i] = h
        Tp, Tm = rd.frame_placement(m, q + e, frame), rd.frame_placement(m, q - e, frame)
        dp = (Tp[:3, 3] - Tm[:3, 3]) / (2 * h)
        dth = Rotation.from_matrix(Tp[:3, :3] @ Tm[:3, :3].T).as_rotvec() / (2 * h)
        tau[i] = f @ dp + mo @ dth
    return tau


@pytest.mark.parametrize('name', ['arm7', 'five_bar', 'hydraulic_boom'])
def test_jacobian_transpose_is_the_virtual_power_of_the_wrench(name):
    """J_f^T w (our frame Jacobians) = finite differences of the frame placement (virtual
    power) = -(rnea(q, 0, 0, f_ext) - rnea(q, 0, 0)) with f_ext from frame_wrench_to_joint."""
    m = model(name)
    rng = np.random.default_rng(7)
    frames = [f for k, f in enumerate(m.frame_names) if m.frame_parent[k] >= 0]
    z = np.zeros(m.nq)
    g = rd.rnea(m, m.reference_q(), z, z)
    for trial in range(3):
        q = m.reference_q() + rng.uniform(-0.3, 0.3, m.nq)
        g = rd.rnea(m, q, z, z)
        for frame in frames[trial::3]:
            for ref in REFS:
                w = rng.normal(size=6) * [200.0, 200.0, 200.0, 30.0, 30.0, 30.0]
                tau = external_generalized_force(m, q, {frame: (w, ref)})
                scale = max(1.0, np.abs(tau).max())
                fd = _virtual_power_fd(m, q, frame, w, ref)
                assert np.abs(tau - fd).max() < 1e-6 * scale, (frame, ref, tau, fd)
                fe = frame_wrench_to_joint(m, q, frame, w, ref)
                tau_rnea = g - rd.rnea(m, q, z, z, f_ext=fe)
                assert np.abs(tau - tau_rnea).max() < 1e-10 * scale, (frame, ref)
    # a frame on the fixed base takes no load
    assert not np.any(external_generalized_force(m, q, {'world': (np.ones(6), 'local')}))


def test_rigid_plant_adds_the_load_before_the_projection():
    """step() with a load = step() with tau + J^T w and no load (same state, same constraint
    forces); loads are validated, replaced per frame, removed by zero / None, kept by reset."""
    m = model('five_bar')
    rng = np.random.default_rng(3)
    q, qd = admissible_state(m, rng)
    w = np.array([12.0, -30.0, 4.0, 0.5, -0.2, 1.5])
    a = ConstrainedPlant(m, q, qd, dt=1e-3)
    b = ConstrainedPlant(m, q, qd, dt=1e-3)
    assert a.set_external_wrench('tool', w) == 'tool'
    assert set(a.external_wrenches) == {'tool'}
    tau = np.array([0.3, -0.2])
    for _ in range(20):
        extra = external_generalized_force(m, b.q, {'tool': (w, 'local')})
        assert np.array_equal(a.external_tau(), extra)
        full = np.zeros(m.nq)
        full[m.actuated_indices] = tau
        ia, ib = a.step(tau), b.step(full + extra)
        assert np.abs(ia.q - ib.q).max() < 1e-14 and np.abs(ia.F - ib.F).max() < 1e-10
        assert np.allclose(ia.tau, ib.tau, atol=1e-14)
    # constraint forces react to the load: it is not simply added after the projection
    assert np.abs(ia.F).max() > 1.0
    a.set_external_wrench('tool', 2 * w)  # replaces the load of 'tool'
    assert np.array_equal(a.external_wrenches['tool'][0], 2 * w)
    a.reset(q, qd)
    assert 'tool' in a.external_wrenches  # survives reset
    a.set_external_wrench('tool', np.zeros(6))  # zero removes
    assert a.external_wrenches == {}
    a.set_external_wrench('distal1', w, 'local_world_aligned')
    a.clear_external_wrench()
    assert a.external_wrenches == {}
    with pytest.raises(UnknownNameError):
        a.set_external_wrench('no_such_link', w)
    with pytest.raises(InputError):
        a.set_external_wrench('tool', [1.0, np.nan, 0, 0, 0, 0])
    with pytest.raises(InputError):
        a.set_external_wrench('tool', [1.0, 2.0])
    with pytest.raises(InputError):
        a.set_external_wrench('tool', w, 'sideways')
    assert a.external_wrenches == {}


@pytest.mark.parametrize(
    'name, frame, ref',
    [
        ('four_bar', 'coupler', 'local'),
        ('four_bar', 'rocker_tip', 'world'),
        ('five_bar', 'tool', 'local_world_aligned'),
        ('five_bar', 'distal2', 'local'),
    ],
)
def test_static_equilibrium_with_load_compensation(name, frame, ref):
    """Holding the closed chain with tau = S_a^T u_a, P S_a^T u_a = P (g - J^T w), with the
    load term built from the RNEA f_ext route, keeps it still (the plant uses J^T w); without
    the load compensation it moves."""
    m = model(name)
    q0 = rd.assemble(m, m.reference_q()[m.independent_indices], q_guess=m.reference_q()).q
    z = np.zeros(m.nq)
    w = np.array([3.0, -5.0, 0.0, 0.0, 0.0, 0.4])
    b = rd.rnea(m, q0, z, z, f_ext=frame_wrench_to_joint(m, q0, frame, w, ref))  # g - J^T w
    A = rd.constraint_terms(m, q0).A
    P = np.eye(m.nq) - np.linalg.pinv(A) @ A
    act = m.actuated_indices
    ua = np.linalg.lstsq(P[:, act], P @ b, rcond=None)[0]
    assert np.abs(P[:, act] @ ua - P @ b).max() < 1e-10  # realisable (controllable)
    u_grav = projected_inverse_dynamics(m, q0, z, u=z).tau_actuated
    assert np.abs(ua - u_grav).max() > 0.05  # the load matters
    for u, still in ((ua, True), (u_grav, False)):
        pl = ConstrainedPlant(m, q0, dt=1e-3)
        pl.set_external_wrench(frame, w, ref)
        for _ in range(1000):
            info = pl.step(u)
        dq = np.abs(pl.q - q0).max()
        if still:
            assert dq < 1e-9 and np.abs(pl.qd).max() < 1e-9 and not info.events, dq
        else:
            assert dq > 1e-3, dq


# --------------------------------------------------------------------------- hydraulic plant
@pytest.fixture(scope='module')
def boom():
    return model('hydraulic_boom')


def _qdd(pl, FD, tau_ext, u=None):
    st, hp = pl.st, pl.hp
    dX, aux = np.zeros_like(pl.X), np.zeros((pl.ns, 6))
    _deriv_ext(
        st.kind,
        st.geo,
        st.RE,
        st.rE,
        st.Rc1,
        st.pc1,
        st.Mb,
        st.mb,
        st.cb,
        st.Ib,
        st.gravity,
        hp.P,
        hp.p_s,
        hp.p_r,
        hp.beta,
        pl.X,
        np.zeros(pl.ns) if u is None else u,
        FD,
        tau_ext,
        st.eps,
        dX,
        aux,
    )
    return dX[pl.ns : 2 * pl.ns], aux


def test_hydraulic_load_routes_agree_with_each_other_and_the_projection_engine(boom):
    """Loads on the tool body enter the Newton-Euler recursion as F_D; the same load mapped
    by the URDF Jacobian (G^T J^T w on the segment coordinates) gives the same q''; and q''
    equals the seed 002 constrained forward dynamics of the URDF chain with the cylinder forces
    and J^T w applied (loads on any frame, including the lift boom and a cylinder rod)."""
    m = boom
    pl = HydraulicPlant(m)
    st = pl.st
    assert set(pl._tool_body) == {'tool', 'jib', 'tilt_eye'}
    rng = np.random.default_rng(5)
    for trial in range(4):
        pl.X[:2] = rng.uniform(-1.7, -1.1, 2)
        pl.X[2:4] = rng.normal(size=2) * 0.3
        pl.X[4:8] = rng.uniform(30e5, 150e5, 4)
        for frame in ('tool', 'jib', 'tilt_eye', 'boom', 'lift_rod', 'tilt_case'):
            for ref in REFS:
                w = rng.normal(size=6) * [500.0, 500.0, 500.0, 80.0, 80.0, 80.0]
                pl.clear_external_wrench()
                pl.set_external_wrench(frame, w, ref)
                FD, tau = pl._loads()
                FDg, taug = pl._loads(generic=True)
                on_tool = frame in pl._tool_body
                assert np.any(FD != 0) == on_tool and np.any(tau != 0) == (not on_tool)
                qdd, aux = _qdd(pl, FD, tau)
                qddg, _ = _qdd(pl, FDg, taug)
                assert np.abs(qdd - qddg).max() < 1e-9 * max(1.0, np.abs(qdd).max())
                Q, Qd, _ = full_q(st, pl.qs, pl.qds)
                tq = np.zeros(m.nq)
                for k, s in enumerate(st.segments):
                    tq[m.joint_index(s.rod_joint)] = aux[k, 3]
                tq += external_generalized_force(m, Q, {frame: (w, ref)})
                cd = constrained_forward_dynamics(m, Q, Qd, tq)
                ref_qdd = np.array([cd.qdd[m.joint_index(s.joint)] for s in st.segments])
                assert np.abs(qdd - ref_qdd).max() < 1e-7 * max(1.0, np.abs(ref_qdd).max())
    # the load changes q'' (it is felt), and the constructor FD is the opposite convention
    pl.clear_external_wrench()
    w = np.array([0.0, -800.0, 0.0, 0.0, 0.0, 0.0])
    pl.set_external_wrench('tool', w)
    assert np.allclose(pl._loads()[0], -w)
    pl2 = HydraulicPlant(m, FD=-w)
    pl2.X[:] = pl.X
    assert np.abs(_qdd(pl, *pl._loads())[0] - _qdd(pl2, *pl2._loads())[0]).max() < 1e-12


def _hold(m, load, told, T=5.0):
    """VDC holding the reference configuration; returns the plant after T s."""
    pl = HydraulicPlant(m)
    st, hp = pl.st, pl.hp
    q0 = pl.qs.copy()
    ref = np.array([q0, np.zeros(2), np.zeros(2)])
    ctrl = VDCController(st, hp)
    if load is not None:
        pl.set_external_wrench('tool', load)
    FD = -np.asarray(load) if (load is not None and told) else None
    for _ in range(int(round(T / 1e-3))):
        pl.step(ctrl.step(pl.qs, pl.qds, pl.pa, pl.pb, ref, FD=FD))
    return pl, q0


def _static_cylinder_forces(pl, q, w):
    """Static balance by virtual power, independent of the Newton-Euler recursion: Jx fc =
    g_s(q) - G^T J_tool^T w (g_s: gravity in segment coordinates, from the recursion at rest
    without load)."""
    st = pl.st
    g = st.inverse_dynamics(q, np.zeros(2), np.zeros(2))['tau']
    Q = full_q(st, q)[0]
    G = np.stack([full_q(st, q, np.eye(2)[k])[1] for k in range(2)], axis=1)
    tau_w = G.T @ external_generalized_force(pl.model, Q, {'tool': (w, 'local')})
    return (g - tau_w) / st.jx(q)


def test_tool_load_changes_steady_cylinder_forces_by_the_static_balance(boom):
    """A 500 N load, downward at the start (in the tool frame's axes), held by the VDC at the
    reference configuration: the steady piston force A_a p_a - A_b p_b changes by the amount
    the static balance predicts (to 1e-3 relative), whether the controller is told (it holds
    q0) or not (it settles with an offset: the balance then holds at the offset
    configuration)."""
    m = boom
    pl0, q0 = _hold(m, None, False)
    R = pl0.st.tool_pose(q0)[0]
    w = np.r_[R.T @ np.array([0.0, 0.0, -500.0]), 0.0, 0.0, 0.0]

    def fp(p):  # piston force A_a p_a - A_b p_b (minus the small residual friction)
        f = p.hp.P[:, A_A] * p.pa - p.hp.P[:, A_B] * p.pb
        return f - np.array([friction(p.hp.P[k], p.last.xd[k]) for k in range(p.ns)])

    f0 = _static_cylinder_forces(pl0, q0, np.zeros(6))
    assert np.abs(fp(pl0) - f0).max() < 1e-3 * np.abs(f0).max()
    for told in (True, False):
        pl, _ = _hold(m, w, told)
        # steady (untold: the offset creeps in with a ~0.5 s time constant, no integral action)
        assert np.abs(pl.qds).max() < 5e-6
        f1 = _static_cylinder_forces(pl, pl.qs, w)
        d_pred, d_meas = f1 - f0, fp(pl) - fp(pl0)
        print(
            f'told={told}: offset {np.abs(pl.qs - q0).max():.2e} rad, delta f_p measured '
            f'{d_meas} N, predicted {d_pred} N, delta p_a {(pl.pa - pl0.pa) / 1e5} bar, '
            f'delta p_b {(pl.pb - pl0.pb) / 1e5} bar'
        )
        assert np.abs(d_pred[0]) > 1500.0  # significant (about 2 kN)
        assert np.abs(d_meas - d_pred).max() < 1e-3 * np.abs(d_pred).max()
        if told:
            assert np.abs(pl.qs - q0).max() < 1e-6
        else:
            assert np.abs(pl.qs - q0).max() > 1e-3  # offset without compensation
        assert np.all(pl.pa > pl.hp.p_r) and np.all(pl.pa < pl.hp.p_s)


def test_plants_without_load_input_and_hydraulic_reset_balance(boom):
    """reset() puts the pressures in static equilibrium with the applied load (the plant then
    stays at rest with closed valves); a plant without an external-load input refuses loads."""
    m = boom
    pl = HydraulicPlant(m)
    q0 = pl.qs.copy()
    pl.set_external_wrench('boom', [0.0, -300.0, 0.0, 0.0, 0.0, 20.0])  # generalized route
    pl.set_external_wrench('tool', [200.0, -400.0, 0.0, 0.0, 0.0, 0.0])  # F_D route
    pl.reset()
    for _ in range(300):
        pl.step(None)
    assert np.abs(pl.qs - q0).max() < 1e-9 and np.abs(pl.qds).max() < 1e-8
    sea = make_plant('sea', model('planar_3rrr_sea'), None)
    assert not sea.supports_external_wrench
    with pytest.raises(InputError, match='no external-load input'):
        sea.set_external_wrench('world', np.ones(6))
