"""Constraint embedding (seed 003), general parts: checked against independent routes.

* the lean limb closure/Jacobian evaluator against robot_dynamics.algorithms.constraints/kinematics;
* inverse dynamics against the projection engine (seed 002) on the GLOBAL tree with all cut
  constraints (IRSBot-2: 22 rows, rank 14), and the same on the five-bar (second mechanism);
* velocity/acceleration IK and J_IK against finite differences of the IK;
* power balance u . qd_act = d(T + V)/dt with the energies of the global tree;
* forward dynamics / forward kinematics round trips; spec errors.
"""

import numpy as np
import pytest
import yaml

import robot_dynamics as rd
from robot_dynamics.algorithms import projection as P
from robot_dynamics.algorithms.constraints import constraint_terms
from robot_dynamics.algorithms.kinematics import frame_jacobian, frame_jacobian_time_variation
from robot_dynamics.pkm import embedding as E
from robot_dynamics.pkm import irsbot2 as I

FIVE = ('urdf/five_bar.urdf', 'test/data/five_bar_embedding.loops.yaml')


@pytest.fixture(scope='module')
def irs():
    return rd.load_model(rd.data_path('urdf/irsbot2.urdf'))


@pytest.fixture(scope='module')
def five():
    return rd.load_model(rd.data_path(FIVE[0]), loops=FIVE[1])


def test_limb_decomposition(irs):
    pk = E.get_pkm(irs)
    l1, l2 = pk.limbs
    assert irs.nq == 16 and irs.nconstraints == 22
    A = constraint_terms(irs, np.zeros(16)).A
    assert np.linalg.matrix_rank(A, 1e-9) == 14  # 8 redundant rows (brief erratum 13)
    assert [l1.model.joint_names[k] for k in l1.qi] == ['l1_j1', 'l1_j6_1', 'l1_j6_2']
    assert [l2.model.joint_names[k] for k in l2.qi] == ['l2_j1', 'l2_U6_1', 'l2_U6_2']
    assert l1.nq == l2.nq == 9 and len(l2.yi) == 6
    assert [L.kind for L in l1.loops] == ['linear', 'newton']
    # the virtual U6 joints of limb 2 are massless; the platform mass is only in limb 1
    assert np.all(l2.model.mass[-2:] == 0) and l1.model.mass.sum() - l2.model.mass.sum() > 1.9


def test_lean_closure_matches_generic_code(irs):
    pk = E.get_pkm(irs)
    rng = np.random.default_rng(3)
    for lb in pk.limbs:
        for _ in range(3):
            th, thd = rng.uniform(-0.5, 0.5, lb.nq), rng.normal(size=lb.nq)
            p, J, acc0, ct = pk._terms(lb, th, thd)
            ref = constraint_terms(lb.model, th, thd)
            assert np.allclose(ct.phi, ref.phi, atol=1e-14)
            assert np.allclose(ct.A, ref.A, atol=1e-13)
            assert np.allclose(ct.bias, ref.bias, atol=1e-12)
            assert np.allclose(J, frame_jacobian(lb.model, th, lb.frame), atol=1e-13)
            Jd = frame_jacobian_time_variation(lb.model, th, thd, lb.frame)
            assert np.allclose(acc0, Jd @ thd, atol=1e-12)


def test_orthogonal_complement(irs):
    pk = E.get_pkm(irs)
    sol = pk.solve_ik(pk.x_ref + [0.05, 0.03])
    for lb, th in zip(pk.limbs, sol.theta):
        _, _, _, ct = pk._terms(lb, th)
        H = pk._H(lb, ct, lb.nq)
        assert np.abs(ct.A @ H).max() < 1e-12  # G H = 0 (all 9 rows)
        assert np.linalg.matrix_rank(H) == len(lb.qi)
        # Hdot qd against a central difference of H along theta_dot = H qd
        qd = np.array([0.3, -0.7, 0.4])
        thd = H @ qd
        _, _, _, ctv = pk._terms(lb, th, thd)
        Hdqd = pk._Hdot_qd(lb, ctv, lb.nq)
        h = 1e-6
        Hp = pk._H(lb, pk._terms(lb, th + h * thd)[3], lb.nq)
        Hm = pk._H(lb, pk._terms(lb, th - h * thd)[3], lb.nq)
        assert np.allclose((Hp - Hm) / (2 * h) @ qd, Hdqd, atol=1e-7)


def _ik_fd(pk, sol, xd, xdd, h1=1e-6, h2=1e-3):
    """theta_dot, theta_ddot by central differences of the IK along x(t) = x + xd t + xdd t^2/2
    (h2 large enough that the IK tolerance 1e-10 / h2^2 stays below the truncation error)."""

    def th(t):
        return np.concatenate(pk.solve_ik(sol.x + xd * t + 0.5 * xdd * t * t, seed=sol).theta)

    return (th(h1) - th(-h1)) / (2 * h1), (th(h2) - 2 * th(0.0) + th(-h2)) / h2**2


@pytest.mark.parametrize('which', ['irs', 'five'])
def test_velocity_acceleration_ik_vs_finite_differences(which, request):
    m = request.getfixturevalue(which)
    pk = E.get_pkm(m)
    x = pk.x_ref + ([0.08, 0.06] if which == 'irs' else [0.02, -0.03])
    xd, xdd = np.array([0.4, -0.3]), np.array([3.0, 2.0])
    sol = pk.solve_ik(x)
    mo = pk.task_motion(sol, xd, xdd)
    thd_fd, thdd_fd = _ik_fd(pk, sol, xd, xdd)
    thd, thdd = np.concatenate(mo.thetad), np.concatenate(mo.thetadd)
    assert np.abs(thd - thd_fd).max() < 1e-6 * max(1, np.abs(thd).max())
    assert np.abs(thdd - thdd_fd).max() < 1e-3 * max(1, np.abs(thdd).max())
    # J_IK against finite differences of the actuator angles over the task coordinates
    h = 1e-6
    Jfd = np.zeros_like(mo.J_IK)
    act = [m.joint_index(a) for a in m.actuated]
    for c in range(2):
        dx = np.zeros(2)
        dx[c] = h
        Jfd[:, c] = (pk.solve_ik(x + dx, seed=sol).q[act] - pk.solve_ik(x - dx, seed=sol).q[act]) / (2 * h)
    assert np.allclose(mo.J_IK, Jfd, atol=1e-6)
    # the global joint rates satisfy the global closure A qd = 0, A qdd + Adot qd = 0
    ct = constraint_terms(m, mo.q, mo.qd)
    assert np.abs(ct.phi).max() < 2e-10  # each limb meets the target to tol = 1e-10
    assert np.abs(ct.A @ mo.qd).max() < 1e-9
    assert np.abs(ct.A @ mo.qdd + ct.bias).max() < 1e-8


@pytest.mark.parametrize('which', ['irs', 'five'])
def test_inverse_dynamics_equals_projection_engine(which, request):
    """u of eq. (45) == seed-002 projected inverse dynamics on the global tree (all cuts)."""
    m = request.getfixturevalue(which)
    pk = E.get_pkm(m)
    rng = np.random.default_rng(7)
    sol = None
    for k in range(4):
        x = pk.x_ref + (rng.uniform([-0.1, -0.05], [0.1, 0.1]) if which == 'irs' else rng.uniform(-0.03, 0.03, 2))
        xd, xdd = rng.normal(size=2), rng.normal(size=2) * 5
        sol = pk.solve_ik(x, seed=sol)
        w = rng.normal(size=6) * (k % 2)
        td = pk.task_dynamics(sol, xd, xdd, wrench=w)
        mo = td.motion
        fext = None
        if k % 2:  # the same wrench on the platform body of the global tree
            from robot_dynamics.algorithms.kinematics import frame_wrench_to_joint

            fext = frame_wrench_to_joint(m, mo.q, pk.platform_frame, w)
            # projected ID has no f_ext: fold the wrench into the desired motion's bias
        d = P._terms(m, mo.q, mo.qd, P._eps(None))
        if fext is not None:
            Jw = frame_jacobian(m, mo.q, pk.platform_frame)
            tau_w = Jw.T @ w
        else:
            tau_w = np.zeros(m.nq)
        b = rd.rnea(m, mo.q, mo.qd, mo.qdd) - tau_w
        f, resid, _, _ = P._actuation(d, b, None, m.actuated_indices, P._eps(None), m.nq)
        if fext is None:
            r = P.projected_inverse_dynamics(m, mo.q, mo.qd, u=mo.qdd)
            assert r.controllable and (r.rank == (14 if which == 'irs' else 2))
            assert np.allclose(r.tau_actuated, f[m.actuated_indices], rtol=1e-12, atol=1e-9)
        ua = f[m.actuated_indices]
        assert resid < 1e-8
        assert np.abs(td.u - ua).max() <= 1e-8 * np.abs(ua).max()


def test_task_eom_consistency(irs):
    pk = E.get_pkm(irs)
    sol = pk.solve_ik(pk.x_ref + [0.05, 0.1])
    xd = np.array([0.5, -0.2])
    t0 = pk.task_dynamics(sol, xd, np.zeros(2))
    assert np.allclose(t0.M_t, t0.M_t.T) and np.all(t0.reflected_mass > 0)
    for xdd in (np.array([1.0, 0.0]), np.array([-2.0, 3.0])):
        t1 = pk.task_dynamics(sol, xd, xdd)
        # J_IK^T u = M_t xdd + b_t
        assert np.allclose(t1.J_IK.T @ t1.u, t1.M_t @ xdd + t1.b_t, rtol=1e-10, atol=1e-9)


def test_power_balance_along_T1(irs):
    """sum u_i qd_act,i = d(T + V)/dt, energies of the global tree, central differences."""
    pk = E.get_pkm(irs)
    act = irs.actuated_indices
    h = 5e-5
    sol = pk.solve_ik(I.trajectory(0.05)[0])
    for t in (0.05, 0.13, 0.21):

        def energy(tt, s):
            x, xd, xdd = I.trajectory(tt)
            s = pk.solve_ik(x, seed=s)
            mo = pk.task_motion(s, xd, xdd)
            return rd.kinetic_energy(irs, mo.q, mo.qd) + rd.potential_energy(irs, mo.q), s

        ep, _ = energy(t + h, sol)
        em, _ = energy(t - h, sol)
        x, xd, xdd = I.trajectory(t)
        sol = pk.solve_ik(x, seed=sol)
        td = pk.task_dynamics(sol, xd, xdd)
        power = td.u @ td.motion.qd[act]
        assert abs(power - (ep - em) / (2 * h)) < 1e-5 * max(1.0, abs(power))


def test_static_torques_equal_potential_gradient(irs):
    """u_static = J_IK^-T grad_x V(x) (V through the IK, finite differences)."""
    pk = E.get_pkm(irs)
    x = pk.x_ref + [0.04, 0.07]
    sol = pk.solve_ik(x)
    td = pk.task_dynamics(sol, np.zeros(2), np.zeros(2))
    h = 1e-6
    gV = np.array(
        [
            (
                rd.potential_energy(irs, pk.solve_ik(x + h * e, seed=sol).q)
                - rd.potential_energy(irs, pk.solve_ik(x - h * e, seed=sol).q)
            )
            / (2 * h)
            for e in np.eye(2)
        ]
    )
    assert np.allclose(td.g_t, gV, rtol=1e-6)
    assert np.allclose(td.u, np.linalg.solve(td.J_IK.T, gV), rtol=1e-6)


@pytest.mark.parametrize('which', ['irs', 'five'])
def test_forward_kinematics_and_dynamics_round_trip(which, request):
    m = request.getfixturevalue(which)
    pk = E.get_pkm(m)
    x = pk.x_ref + ([0.07, 0.04] if which == 'irs' else [0.02, 0.01])
    xd, xdd = np.array([0.2, -0.1]), np.array([1.5, -0.5])
    sol = pk.solve_ik(x)
    td = pk.task_dynamics(sol, xd, xdd)
    act = m.actuated_indices
    qa, qda = sol.q[act], td.motion.qd[act]
    assert np.allclose(E.forward_kinematics_pkm(m, qa).x, x, atol=1e-9)
    x1, xd1, xdd1, _ = E.forward_dynamics(m, qa, qda, td.u)
    assert np.allclose(x1, x, atol=1e-9) and np.allclose(xd1, xd, atol=1e-8)
    assert np.allclose(xdd1, xdd, atol=1e-6)
    # public wrapper
    assert np.allclose(E.inverse_dynamics(m, x, xd, xdd), td.u, rtol=1e-10)


def test_five_bar_ik_closes_global_loop(five):
    pk = E.get_pkm(five)
    sol = pk.solve_ik(pk.x_ref + [0.03, -0.02])
    assert max(sol.outer) <= 6
    assert np.abs(constraint_terms(five, sol.q).phi[:2]).max() < 1e-10  # in-plane rows
    tool = rd.forward_kinematics(five, sol.q)['tool'][:3, 3]
    assert np.allclose(tool[[0, 2]], sol.x, atol=1e-10)


def _spec(path):
    with open(rd.data_path(path)) as fh:
        return yaml.safe_load(fh)


def test_spec_errors():
    urdf = rd.data_path('urdf/irsbot2.urdf')
    sp = _spec('urdf/irsbot2.loops.yaml')
    bad = yaml.safe_load(yaml.safe_dump(sp))
    bad['reference_configuration'] = {'l1_j4_1': 0.1}  # seed violates g = 0
    with pytest.raises(E.PKMSpecError, match='reference configuration violates'):
        E.PKM(rd.load_model(urdf, loops=bad))
    bad = yaml.safe_load(yaml.safe_dump(sp))
    bad['submechanisms'][0]['dependent'] = ['l1_j2', 'l1_j3', 'l1_j4_1']
    with pytest.raises(E.PKMSpecError, match='dependent'):
        E.PKM(rd.load_model(urdf, loops=bad))
    bad = yaml.safe_load(yaml.safe_dump(sp))
    bad['submechanisms'][0]['resolver']['l1_R7']['matrix'] = [[1.0], [1.0]]
    with pytest.raises(E.PKMSpecError, match='does not close the loop'):
        E.PKM(rd.load_model(urdf, loops=bad))
    bad = yaml.safe_load(yaml.safe_dump(sp))
    bad['submechanisms'][1]['loops'] = ['l2_R7', 'l2_U8', 'l2_U6']
    with pytest.raises(E.PKMSpecError, match='edge-disjoint'):
        E.PKM(rd.load_model(urdf, loops=bad))
    # automatic partition (pivoted QR) gives an equivalent, working decomposition
    auto = yaml.safe_load(yaml.safe_dump(sp))
    for sm in auto['submechanisms']:
        del sm['dependent']
        sm['resolver'] = {}
    pa = E.PKM(rd.load_model(urdf, loops=auto))
    pk = E.get_pkm(rd.load_model(urdf))
    x = pk.x_ref + [0.05, 0.02]
    assert np.allclose(pa.solve_ik(x).q, pk.solve_ik(x).q, atol=1e-9)


@pytest.mark.parametrize('compound', [False, True])
def test_limb_solve_reuses_terms_exactly(irs, compound):
    """limb_solve reuses the terms of the converged loop closure / of the solution: the same
    iterates and outputs, bit for bit, as limb_ik followed by limb_post (which re-evaluates
    the terms), along T1 for both limbs and both schemes."""
    from robot_dynamics.pkm import _embedding_kernels as K

    pk = E.get_pkm(irs)
    seeds = [lb.ref.copy() for lb in pk.limbs]
    for t in np.arange(1, 40) * 5e-3:
        t3 = pk.target3(I.trajectory(t)[0])
        for li, lb in enumerate(pk.limbs):
            n, d = lb.nq, len(lb.qi)
            th1, th2 = np.empty(n), np.empty(n)
            in1, in2 = np.zeros(pk.max_outer + 1, np.int64), np.zeros(pk.max_outer + 1, np.int64)
            s1, s2 = np.empty(1 + len(lb.loops)), np.empty(1 + len(lb.loops))
            F1, F2 = np.empty((d, lb.D.shape[1])), np.empty((d, lb.D.shape[1]))
            out = np.zeros(5)
            st = K.limb_solve(lb.kp, t3, seeds[li], compound, pk.tol, pk.max_outer, pk.max_inner, th1, in1, s1, F1, out)
            r = K.limb_ik(lb.kp, t3, seeds[li], compound, pk.tol, pk.max_outer, pk.max_inner, th2, in2)
            ok, c, tres, lres = K.limb_post(lb.kp, th2, t3, s2, F2)
            assert st == 0 and r[0] == 0 and ok
            assert np.array_equal(th1, th2) and np.array_equal(in1, in2)
            assert np.array_equal(s1, s2, equal_nan=True) and np.array_equal(F1, F2)
            assert out[0] == r[1] and out[3] == r[4]
            assert (out[1], out[2], out[4]) == (tres, lres, c)
            seeds[li] = th1
