"""Seed 001 VDC algebra and the Newton-Euler structure model, each checked against an
independent route: Kane virtual power (eq. 68), global wrench balance (eq. 69), the seed 002
projection engine on the URDF closed chain, finite differences, energy balance, the VPF
telescoping identity (C.8 summed over the chain)."""

import numpy as np
import pytest

import robot_dynamics as rd
import robot_dynamics.spatial.lie  # noqa: F401
from robot_dynamics.control.vdc import VDCController
from robot_dynamics.plants.hydraulic import hydraulic_params_from_model
from robot_dynamics.algorithms.projection import projected_inverse_dynamics
from robot_dynamics.algorithms.vdc import (
    C_A,
    M_A,
    U,
    SingularConfigurationError,
    StructureError,
    closure,
    full_q,
    rz,
    skew,
    structure_from_model,
)

ROBOTS = ['hydraulic_boom', 'hydraulic_boom_telescopic']


@pytest.fixture(scope='module', params=ROBOTS)
def boom(request):
    m = rd.load_model(rd.data_path(f'urdf/{request.param}.urdf'))
    return m, structure_from_model(m)


def _state(rng, st):
    q = np.where(st.kind == 0, rng.uniform(-1.9, -1.0, st.ns), rng.uniform(0.1, 0.9, st.ns))
    return q, rng.normal(size=st.ns), rng.normal(size=st.ns)


def _rot(rng):
    Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    return Q * np.sign(np.linalg.det(Q))


def test_6d_algebra():
    rng = np.random.default_rng(1)
    R1, R2, r1, r2 = _rot(rng), _rot(rng), rng.normal(size=3), rng.normal(size=3)
    # composition U_AB U_BC = U_AC, power invariance
    assert np.abs(U(R1, r1) @ U(R2, r2) - U(R1 @ R2, r1 + R1 @ r2)).max() < 1e-14
    V, F = rng.normal(size=6), rng.normal(size=6)
    assert abs((U(R1, r1).T @ V) @ F - V @ (U(R1, r1) @ F)) < 1e-13
    m, c, Ic = 3.0, rng.normal(size=3), np.diag([0.3, 0.5, 0.7])
    M = M_A(m, c, Ic)
    assert np.allclose(M, M.T) and np.linalg.eigvalsh(M).min() > 0
    w = rng.normal(size=3)
    C = C_A(m, c, Ic, w)
    assert np.abs(C + C.T).max() < 1e-13
    # M Vd + C V equals Newton-Euler about the COM transported to A
    V, Vd = rng.normal(size=6), rng.normal(size=6)
    v, om, a, al = V[:3], V[3:], Vd[:3], Vd[3:]
    # body-frame derivative: Vd is d/dt of the A-frame components; COM acceleration in A axes
    ac = a + np.cross(om, v) + np.cross(al, c) + np.cross(om, np.cross(om, c))
    f = m * ac
    mc = Ic @ al + np.cross(om, Ic @ om)
    ref = np.concatenate([f, mc + np.cross(c, f)])
    assert np.abs(M @ Vd + C_A(m, c, Ic, om) @ V - ref).max() < 1e-12
    # pitfall: C_A V_r differs from the textbook omega x I omega form for V_r != V
    Vr = rng.normal(size=6)
    textbook = np.concatenate([m * np.cross(w, Vr[:3] - np.cross(c, Vr[3:])), np.cross(w, Ic @ Vr[3:])])
    assert np.abs(C_A(m, np.zeros(3), Ic, w) @ Vr - textbook).max() > 1e-3
    assert np.abs(skew(w) @ c - np.cross(w, c)).max() < 1e-15
    assert np.abs(rz(0.3) - rd.lie.exp_so3(np.array([0, 0, 0.3]))).max() < 1e-15


def test_closure_against_paper_form_fd_and_urdf(boom):
    m, st = boom
    rng = np.random.default_rng(2)
    for s in st.segments:
        if s.kind != 'revolute':
            continue
        for q in rng.uniform(-2.5, -0.3, 20):
            cl = closure(s.L, s.L1, q, 0.7, -0.4)
            c = cl['c']
            q1p = -np.arccos((s.L1**2 - c**2 - s.L**2) / (-2 * c * s.L))  # eq. 19
            q2p = -np.arccos((s.L**2 - c**2 - s.L1**2) / (-2 * c * s.L1))  # eq. 20
            assert abs(cl['q1'] - q1p) < 1e-12 and abs(cl['q2'] - q2p) < 1e-12
            h = 1e-6
            f = lambda t: closure(s.L, s.L1, q + 0.7 * t - 0.2 * t * t)  # noqa: E731
            for k, kd, kdd in (('c', 'cd', 'cdd'), ('q1', 'q1d', 'q1dd'), ('q2', 'q2d', 'q2dd')):
                d1 = (f(h)[k] - f(-h)[k]) / (2 * h)
                h2 = 1e-4
                d2 = (f(h2)[k] - 2 * f(0)[k] + f(-h2)[k]) / h2**2
                assert abs(d1 - cl[kd]) < 1e-8 and abs(d2 - cl[kdd]) < 1e-6
            assert abs(rd.vdc.q_from_length(s.L, s.L1, c) - q) < 1e-12
    # the URDF closed chain closes at full_q for random states (independent geometry)
    for _ in range(10):
        q, _, _ = _state(rng, st)
        Q, _, _ = full_q(st, q)
        assert np.abs(rd.loop_residual(m, Q)).max() < 1e-12


def test_velocity_recursion_matches_urdf_kinematics(boom):
    m, st = boom
    rng = np.random.default_rng(3)
    for _ in range(5):
        q, qd, qdd = _state(rng, st)
        st.forward(q, qd, qdd)
        R, p = st.tool_pose(q)
        Q, Qd, Qdd = full_q(st, q, qd, qdd)
        T = rd.frame_placement(m, Q, st.tool_frame)
        assert np.abs(T[:3, :3] - R).max() < 1e-12 and np.abs(T[:3, 3] - p).max() < 1e-12
        st.forward(q, qd, qdd)
        Vw = rd.frame_velocity(m, Q, Qd, st.tool_frame)  # local-world-aligned
        Rw = st.Rw[-1, 4]
        assert np.abs(Rw @ st.V[-1, 4, :3] - Vw[:3]).max() < 1e-12
        assert np.abs(Rw @ st.V[-1, 4, 3:] - Vw[3:]).max() < 1e-12
        Aw = rd.frame_acceleration(m, Q, Qd, Qdd, st.tool_frame)
        assert np.abs(Rw @ st.Vd[-1, 4, 3:] - Aw[3:]).max() < 1e-11
        # loop closure of velocities: T_1 V = T_2 V (rod-eye frame of the piston)
        for k, s in enumerate(st.segments):
            if s.kind == 'revolute':
                q2d = st.clo[k, 2]
                VT2 = U(rz(q2d), np.array([s.lc, 0, 0])).T @ st.V[k, 3]
                VT2[5] += qd[k] - closure(s.L, s.L1, q[k], qd[k])['q1d']
                assert np.abs(VT2 - st.V[k, 5]).max() < 1e-12


def test_eq68_matches_kane_virtual_power_moving_base(boom):
    m, st = boom
    rng = np.random.default_rng(4)
    worst = 0.0
    for _ in range(20):
        q, qd, qdd = _state(rng, st)
        FD = rng.normal(size=6) * 500
        V0, Vd0 = rng.normal(size=6), rng.normal(size=6) * 3
        r = st.inverse_dynamics(q, qd, qdd, FD, V0, Vd0)
        tau = np.zeros(st.ns)
        for j in range(st.ns):
            e = np.zeros(st.ns)
            e[j] = 1.0
            st.forward(q, np.zeros(st.ns), qd_use=e)  # partial velocities dV/dqd_j
            tau[j] = np.einsum('kai,kai->', st.V[:, :4], r['Fs']) + st.V[-1, 4] @ FD
        fc_kane = tau / st.jx(q)
        worst = max(worst, np.abs(fc_kane - r['fc']).max() / np.abs(r['fc']).max())
    assert worst < 1e-10, worst


def test_eq69_matches_global_wrench_balance(boom):
    m, st = boom
    rng = np.random.default_rng(5)
    for _ in range(10):
        q, qd, qdd = _state(rng, st)
        FD = rng.normal(size=6) * 500
        V0, Vd0 = rng.normal(size=6), rng.normal(size=6)
        r = st.inverse_dynamics(q, qd, qdd, FD, V0, Vd0)
        Rc, pc = st.Rc1, st.pc1
        tot = np.zeros(6)
        for k in range(st.ns):
            for a in range(4):
                tot += U(Rc.T @ r['Rw'][k, a], Rc.T @ (r['pw'][k, a] - pc)) @ r['Fs'][k, a]
        tot += U(Rc.T @ r['Rw'][-1, 4], Rc.T @ (r['pw'][-1, 4] - pc)) @ FD
        assert np.abs(tot - r['FBc'][0]).max() < 1e-10 * np.abs(tot).max()


def test_eq68_matches_projection_engine(boom):
    """The seed 002 engine on the URDF (cut loops, passive joints) gives the same forces."""
    m, st = boom
    rng = np.random.default_rng(6)
    for _ in range(8):
        q, qd, qdd = _state(rng, st)
        r = st.inverse_dynamics(q, qd, qdd)
        Q, Qd, Qdd = full_q(st, q, qd, qdd)
        p = projected_inverse_dynamics(m, Q, Qd, u=Qdd)
        assert p.controllable
        act = [s.rod_joint if s.kind == 'revolute' else s.joint for s in st.segments]
        f_proj = np.array([p.tau_actuated[m.actuated.index(j)] for j in act])
        assert np.abs(f_proj - r['fc']).max() < 1e-8 * np.abs(r['fc']).max()


def test_energy_balance(boom):
    m, st = boom
    rng = np.random.default_rng(7)
    a, w, ph = rng.uniform(0.05, 0.15, st.ns), rng.uniform(1, 3, st.ns), rng.uniform(0, 6, st.ns)
    q0 = np.where(st.kind == 0, -1.4, 0.5)
    FD = rng.normal(size=6) * 100
    qf = lambda t: q0 + a * np.sin(w * t + ph)  # noqa: E731
    qdf = lambda t: a * w * np.cos(w * t + ph)  # noqa: E731
    qddf = lambda t: -a * w * w * np.sin(w * t + ph)  # noqa: E731
    h = 1e-5
    for t in (0.1, 0.7, 1.3):
        E = lambda s: sum(st.energy(qf(s), qdf(s)))  # noqa: E731
        dE = (E(t + h) - E(t - h)) / (2 * h)
        r = st.inverse_dynamics(qf(t), qdf(t), qddf(t), FD)
        st.forward(qf(t), qdf(t))
        power = r['fc'] @ (st.jx(qf(t)) * qdf(t)) - st.V[-1, 4] @ FD
        assert abs(dE - power) < 1e-6 * max(1.0, abs(power)), (dE, power)


def test_vpf_telescoping_identity(boom):
    """sum_A e_A^T (F_r*_A - F*_A) = sum_j dxd_j df_cj + p_Bc1 - p_D (C.8 summed, p_Bc1 = 0)."""
    m, st = boom
    rng = np.random.default_rng(8)
    ctrl = VDCController(st, hydraulic_params_from_model(m, st))
    for _ in range(10):
        q, qd, qdd = _state(rng, st)
        FD, FrD = rng.normal(size=6) * 300, rng.normal(size=6) * 300
        r = st.inverse_dynamics(q, qd, qdd, FD)
        ref = np.array([q + rng.normal(size=st.ns) * 0.01, rng.normal(size=st.ns), rng.normal(size=st.ns)])
        ctrl.required(q, qd, ref, FrD)
        Frs, fcr = ctrl._Fs.copy(), ctrl._fc.copy()
        e = ctrl._Vr[:, :4] - ctrl._V[:, :4]
        lhs = np.einsum('kai,kai->', e, Frs - r['Fs'])
        dxd = ctrl._clor[:, 4] - st.jx(q) * qd
        pD = (ctrl._Vr[-1, 4] - ctrl._V[-1, 4]) @ (FrD - FD)
        rhs = dxd @ (fcr - r['fc']) - pD
        assert abs(lhs - rhs) < 1e-9 * max(1.0, abs(lhs)), (lhs, rhs)


def test_modularity_tip_side_independent_of_base_inertia(boom):
    m, st = boom
    st2 = st.scaled(1.0)
    st2.Mb[0] *= 1.7
    st2.mb[0] *= 1.7
    st2.Ib[0] *= 1.7
    q, qd, qdd = _state(np.random.default_rng(9), st)
    a, b = st.inverse_dynamics(q, qd, qdd), st2.inverse_dynamics(q, qd, qdd)
    assert np.array_equal(a['fc'][1:], b['fc'][1:]) and a['fc'][0] != b['fc'][0]


def test_guards_and_errors(boom):
    m, st = boom
    q = np.where(st.kind == 0, -1.4, 0.3)
    q[0] = 0.0  # sin q = 0: Jx = 0
    with pytest.raises(SingularConfigurationError, match='lift_cyl'):
        st.inverse_dynamics(q, np.zeros(st.ns), np.zeros(st.ns))
    with pytest.raises(SingularConfigurationError):
        rd.vdc.q_from_length(1.0, 0.5, 2.0)
    import copy

    m2 = copy.copy(m)
    m2.actuators = {k: dict(v) for k, v in m.actuators.items()}
    del m2.actuators['lift_cyl']['case_joint']
    with pytest.raises(StructureError, match='lift_cyl.case_joint'):
        structure_from_model(m2)
    m2.actuators['lift_cyl']['case_joint'] = 'tilt_case_joint'
    with pytest.raises(StructureError, match='same parent'):
        structure_from_model(m2)
    assert issubclass(StructureError, rd.RobotDynamicsError)
