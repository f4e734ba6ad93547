"""Constraint embedding (seed 003) for robots described by URDF + sidecar only, with
orientation task components and limbs whose parallelogram loop closes through the platform.

Robots (no Python model code, only data files):
* ``rpr``: planar 3-RPR (test/data/planar_3rpr.*), prismatic actuation, task (x, y, rz = phi),
  loaded with gravity in the mechanism plane (0, -9.81, 0) so that gravity enters the ID;
* ``delta``: Delta robot with parallelogram (4 universal joints) distal links
  (test/data/delta_parallelogram.*), task (x, y, z), each limb's parallelogram loop closes
  through the platform (4 rows, rank 3, declared ``redundant: 1``), limb task rows include
  the rotation about the hip axis u_i ({rot: u_i});
* ``gs``: the 6-UPS Gough-Stewart platform (urdf/gough_stewart.urdf) with the limb sidecar
  test/data/gough_stewart_embedding.loops.yaml: full SE(3) task (x, y, z, rx, ry, rz).

Oracles (independent of the embedding route): the projection engine (seed 002) on the GLOBAL
URDF tree with every cut constraint (projected inverse dynamics), the closure residual of every
cut of the global model, forward kinematics / frame Jacobian of the global model, central
differences of the IK.
"""

import numpy as np
import pytest
import yaml

import robot_dynamics as rd
from robot_dynamics.algorithms import projection as P
from robot_dynamics.algorithms.constraints import constraint_terms
from robot_dynamics.errors import LoopSpecError
from robot_dynamics.algorithms.kinematics import frame_jacobian
from robot_dynamics.pkm import embedding as E

DATA = {
    'rpr': ('test/data/planar_3rpr.urdf', 'test/data/planar_3rpr.loops.yaml', (0, -9.81, 0)),
    'delta': ('test/data/delta_parallelogram.urdf', 'test/data/delta_parallelogram.loops.yaml', None),
    'gs': ('urdf/gough_stewart.urdf', 'test/data/gough_stewart_embedding.loops.yaml', None),
}
# amplitudes of the smooth test trajectory x(t) = x_ref + a sin(w t + c) per task component
AMP = {'rpr': [0.05, 0.04, 0.3], 'delta': [0.06, 0.05, 0.08], 'gs': [0.03, 0.02, 0.04, 0.08, 0.06, 0.15]}


def _load(which):
    u, lp, g = DATA[which]
    return rd.load_model(rd.data_path(u), loops=rd.data_path(lp), gravity=g)


@pytest.fixture(scope='module')
def models():
    return {}


def _model(models, which):
    """Cached model; its PKM solves the IK to 1e-11 (each limb meets the target to tol: the
    cut rows BETWEEN limbs, closed only through the common target, inherit up to ~2 tol)."""
    if which not in models:
        models[which] = _load(which)
        E.get_pkm(models[which], tol=1e-11)
    return models[which]


def _traj(pk, which, t):
    """Smooth task trajectory (x, xd, xdd) [m, rad; /s; /s^2]; rotational components are
    rotation-vector components (rx, ry, rz); for gs the rotation axis is not fixed, so its
    (xd, xdd) are used only as a twist state, not as derivatives of x."""
    a = np.array(AMP[which])
    k = np.arange(len(a))
    w = 2 * np.pi * (1.0 + 0.3 * k)
    c = 0.7 * k
    return (pk.x_ref + a * np.sin(w * t + c), a * w * np.cos(w * t + c), -a * w * w * np.sin(w * t + c))


def _rotvec(R):
    c = np.clip((np.trace(R) - 1) / 2, -1, 1)
    th = np.arccos(c)
    v = 0.5 * np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    return v if th < 1e-9 else v * th / np.sin(th)


def _twist6(pk, xd):
    """The platform twist (v, w) (LWA) that the task velocity xd stands for."""
    t = np.zeros(6)
    for c, v in zip(pk.task, xd):
        t[E._COMP[c]] = v
    return t


@pytest.mark.parametrize('which', ['rpr', 'delta', 'gs'])
def test_ik_closes_every_loop_and_meets_the_pose(which, models):
    """Along the smooth trajectory (continuation): every cut row of the GLOBAL model closed to
    <= 1e-10, the platform frame at the commanded position, its orientation R = exp(r^) R_ref
    with r the commanded rotation-vector components (0 where not commanded)."""
    m = _model(models, which)
    pk = E.get_pkm(m)
    sol = None
    worst = 0.0
    for t in np.linspace(0.0, 0.5, 9):
        x = _traj(pk, which, t)[0]
        sol = pk.solve_ik(x, seed=sol)
        assert sol.task_residual <= 1e-10 and sol.loop_residual <= 1e-10
        res = np.abs(constraint_terms(m, sol.q, jacobian=False).phi).max()
        worst = max(worst, res)
        assert res <= 1e-10
        T = rd.forward_kinematics(m, sol.q)[pk.platform_frame]
        r = np.zeros(3)
        for c, v in zip(pk.task, x):
            if c in ('x', 'y', 'z'):
                assert abs(T[E._COMP[c], 3] - v) <= 1e-10
            else:
                r[E._COMP[c] - 3] = v
        assert np.abs(_rotvec(T[:3, :3] @ pk.R_ref.T) - r).max() <= 1e-9
        if which == 'rpr':  # rz is the planar angle phi itself
            assert abs(np.arctan2(T[1, 0], T[0, 0]) - x[2]) <= 1e-10
    print(f'{which}: max global closure residual after IK = {worst:.2e}, outer {sol.outer}')


@pytest.mark.parametrize('which', ['rpr', 'delta', 'gs'])
def test_inverse_dynamics_equals_projection_engine(which, models):
    """u of eq. (45) with orientation task components / nested parallelogram closures ==
    the seed-002 projected inverse dynamics of the global tree at the same (q, qd, qdd),
    rel. 1e-8, along the smooth trajectory, with an end-effector wrench on every other
    sample. The global joint motion satisfies the global closure at velocity/acceleration
    level and the platform twist is the commanded one."""
    m = _model(models, which)
    pk = E.get_pkm(m)
    rng = np.random.default_rng(11)
    sol = None
    worst = 0.0
    for k, t in enumerate(np.linspace(0.0, 0.5, 6)):
        x, xd, xdd = _traj(pk, which, t)
        sol = pk.solve_ik(x, seed=sol)
        w = rng.normal(size=6) * (k % 2) * [20, 20, 20, 2, 2, 2]
        td = pk.task_dynamics(sol, xd, xdd, wrench=w)
        mo = td.motion
        ct = constraint_terms(m, mo.q, mo.qd)
        assert np.abs(ct.A @ mo.qd).max() <= 1e-9
        assert np.abs(ct.A @ mo.qdd + ct.bias).max() <= 1e-8
        Jp = frame_jacobian(m, mo.q, pk.platform_frame)  # LWA, (v, w)
        assert np.abs(Jp @ mo.qd - _twist6(pk, xd)).max() <= 1e-9
        tau_w = Jp.T @ w
        r = P.projected_inverse_dynamics(m, mo.q, mo.qd, u=mo.qdd)
        assert r.controllable
        if k % 2:  # the wrench: fold J^T w into b = h + M qdd (projected ID has no f_ext)
            d = P._terms(m, mo.q, mo.qd, P._eps(None))
            b = rd.rnea(m, mo.q, mo.qd, mo.qdd) - tau_w
            f, resid, _, _ = P._actuation(d, b, None, m.actuated_indices, P._eps(None), m.nq)
            ua = f[m.actuated_indices]
            assert resid < 1e-8
        else:
            ua = r.tau_actuated
        err = np.abs(td.u - ua).max() / np.abs(ua).max()
        worst = max(worst, err)
        assert err <= 1e-8, (t, td.u, ua)
    print(f'{which}: max rel |u_embedding - u_projection| = {worst:.2e}')


@pytest.mark.parametrize('which', ['rpr', 'delta'])
def test_velocity_acceleration_ik_vs_finite_differences(which, models):
    """theta_dot, theta_ddot of the embedding (H F V_t, corrected eq. 29) against central
    differences of the IK along x(t) (for rz of the planar robot x_dot = omega_z exactly);
    J_IK against differences of the actuator coordinates."""
    m = _model(models, which)
    pk = E.get_pkm(m)
    x, xd, xdd = _traj(pk, which, 0.1)
    sol = pk.solve_ik(x)
    mo = pk.task_motion(sol, xd, xdd)

    def th(t):
        return np.concatenate(pk.solve_ik(x + xd * t + 0.5 * xdd * t * t, seed=sol).theta)

    h1, h2 = 1e-6, 1e-3
    thd_fd = (th(h1) - th(-h1)) / (2 * h1)
    thdd_fd = (th(h2) - 2 * th(0.0) + th(-h2)) / h2**2
    thd, thdd = np.concatenate(mo.thetad), np.concatenate(mo.thetadd)
    assert np.abs(thd - thd_fd).max() < 1e-6 * max(1, np.abs(thd).max())
    assert np.abs(thdd - thdd_fd).max() < 1e-3 * max(1, np.abs(thdd).max())
    act = m.actuated_indices
    Jfd = np.zeros_like(mo.J_IK)
    for c in range(pk.ntask):
        dx = np.zeros(pk.ntask)
        dx[c] = h1
        Jfd[:, c] = (pk.solve_ik(x + dx, seed=sol).q[act] - pk.solve_ik(x - dx, seed=sol).q[act]) / (2 * h1)
    assert np.allclose(mo.J_IK, Jfd, atol=1e-6)


@pytest.mark.parametrize('which', ['rpr', 'delta', 'gs'])
def test_forward_dynamics_round_trip(which, models):
    """Forward kinematics from the actuated joints (Newton with J_IK; for rotations a
    quasi-Newton step on the rotation vector, the converged x is exact) and forward dynamics
    V_t_dot = M_t^-1 (J_IK^T u - b_t) invert the IK and the inverse dynamics."""
    m = _model(models, which)
    pk = E.get_pkm(m)
    x, xd, xdd = _traj(pk, which, 0.2)
    sol = pk.solve_ik(x)
    td = pk.task_dynamics(sol, xd, xdd)
    act = m.actuated_indices
    x1, xd1, xdd1, _ = E.forward_dynamics(m, sol.q[act], td.motion.qd[act], td.u)
    assert np.allclose(x1, x, atol=1e-9) and np.allclose(xd1, xd, atol=1e-8)
    assert np.allclose(xdd1, xdd, atol=1e-6 * max(1, np.abs(xdd).max()))


def test_delta_parallelogram_structure(models):
    """Each Delta limb: the parallelogram loop (4 universal rows, rank 3) closes through the
    platform; the separated limb has 4 DOF (3 translations + rotation about u_i), so
    delta_l = 4 = delta_p(l); the assembled platform does not rotate."""
    m = _model(models, 'delta')
    pk = E.get_pkm(m)
    for lb in pk.limbs:
        assert len(lb.qi) == 4 and lb.D.shape == (4, 3)
        (L,) = lb.loops
        assert len(L.rows) == 4 and len(L.y) == 3 and len(L.sel) == 3
    u = [lb.task_rows[3, 3:] for lb in pk.limbs]
    assert np.allclose(u[0], [0, 1, 0]) and abs(u[1] @ u[0] + 0.5) < 1e-12
    sol = pk.solve_ik(pk.x_ref + [0.05, -0.04, 0.06])
    R = rd.forward_kinematics(m, sol.q)['tool'][:3, :3]
    assert np.abs(R - np.eye(3)).max() < 1e-9


def _sidecar(which):
    with open(rd.data_path(DATA[which][1])) as fh:
        return yaml.safe_load(fh)


def test_spec_errors_new_keys():
    urdf = rd.data_path(DATA['delta'][0])
    sp = _sidecar('delta')
    bad = yaml.safe_load(yaml.safe_dump(sp))
    bad['submechanisms'][1]['redundant'] = {'l2_par': 0}  # the loop has 1 redundant row
    with pytest.raises(E.PKMSpecError, match=r'submechanisms\[limb2\]\.redundant\.l2_par'):
        E.PKM(rd.load_model(urdf, loops=bad))
    bad = yaml.safe_load(yaml.safe_dump(sp))
    bad['submechanisms'][0]['redundant'] = {'l2_par': 1}  # not a loop of this limb
    with pytest.raises(LoopSpecError, match=r'submechanisms\[0\]\.redundant\.l2_par'):
        rd.load_model(urdf, loops=bad)
    bad = yaml.safe_load(yaml.safe_dump(sp))
    bad['submechanisms'][0]['redundant'] = {'l1_par': -1}
    with pytest.raises(LoopSpecError, match='non-negative integer'):
        rd.load_model(urdf, loops=bad)
    bad = yaml.safe_load(yaml.safe_dump(sp))
    bad['submechanisms'][2]['parameters']['limb_task'][3] = {'rot': [0, 0, 0]}
    with pytest.raises(E.PKMSpecError, match=r'submechanisms\[limb3\]\.parameters\.limb_task'):
        E.PKM(rd.load_model(urdf, loops=bad))
    bad = yaml.safe_load(yaml.safe_dump(sp))
    del bad['submechanisms'][0]['parameters']['limb_task'][3]  # limb 1 then has 4 DOF, 3 rows
    with pytest.raises(E.PKMSpecError, match='non-redundant'):
        E.PKM(rd.load_model(urdf, loops=bad))
    urdf = rd.data_path(DATA['rpr'][0])
    bad = _sidecar('rpr')
    for sm in bad['submechanisms']:
        sm['parameters'] = {'task': ['x', 'y', 'phi'], 'limb_task': ['x', 'y', 'phi']}
    with pytest.raises(E.PKMSpecError, match=r"parameters\.task: task component 'phi'"):
        E.PKM(rd.load_model(urdf, loops=bad))


def test_check_reports_embedding():
    from robot_dynamics.tools.check import check_robot

    for which in ('rpr', 'delta'):
        rep = check_robot(rd.data_path(DATA[which][0]))  # sidecar found by name
        (row,) = [r for r in rep.methods if r[0].startswith('constraint embedding')]
        assert row[1], row
        assert ('rz' in row[2]) == (which == 'rpr')


@pytest.mark.parametrize('which', ['rpr', 'delta', 'gs'])
def test_task_reference_of_a_pose_sample_round_trips_through_the_ik(which, models):
    """task_reference (the message-independent part of ik_node): the IK solution's platform
    pose (position, orientation as a ROS quaternion x, y, z, w) maps back to the task target x
    (rx, ry, rz = rotation vector of R R_ref^T), and the twist (v, w) / accel (6,) to their task
    components in the order of pkm.task; bad input raises the package's InputError."""
    from robot_dynamics.spatial.lie import matrix_to_quat_xyzw

    m = _model(models, which)
    pk = E.get_pkm(m)
    sol = None
    for t in (0.05, 0.2, 0.4):
        x, xd, xdd = _traj(pk, which, t)
        sol = pk.solve_ik(x, seed=sol)
        T = rd.forward_kinematics(m, sol.q)[pk.platform_frame]
        tw, ac = _twist6(pk, xd), _twist6(pk, xdd)
        tw[[i for i in range(6) if tw[i] == 0.0]] = 7.0  # components outside the task: ignored
        x2, xd2, xdd2 = E.task_reference(pk, T[:3, 3], matrix_to_quat_xyzw(T[:3, :3]), tw, ac)
        assert np.abs(x2 - x).max() <= 1e-9, (x2, x)
        assert np.array_equal(xd2, xd) and np.array_equal(xdd2, xdd)
    # the quaternion's sign and norm do not matter; None = the reference orientation
    q = -3.0 * matrix_to_quat_xyzw(T[:3, :3])
    assert np.abs(E.task_reference(m, T[:3, 3], q)[0] - x).max() <= 1e-9
    x0, xd0, xdd0 = E.task_reference(pk, pk.x_ref_full)
    assert np.allclose(x0, pk.x_ref, atol=1e-15) and not xd0.any() and not xdd0.any()
    for bad in (
        dict(position=[0.0, 0.0]),
        dict(quat_xyzw=[0.0, 0.0, 0.0, 0.0]),
        dict(quat_xyzw=[0.0, 0.0, 0.0, np.nan]),
        dict(twist=np.zeros(3)),
        dict(accel=[np.inf] + [0.0] * 5),
    ):
        args = {'position': pk.x_ref_full, **bad}
        with pytest.raises(rd.InputError):
            E.task_reference(pk, **args)


def test_task_reference_planar_angle_is_rz():
    """3-RPR (R_ref = I): a platform rotated by phi about world z gives rz = phi exactly (also
    for |phi| near pi), the angular parts of twist / accel give the rz rate / acceleration."""
    from robot_dynamics.spatial.lie import exp_so3, matrix_to_quat_xyzw

    m = _load('rpr')
    pk = E.get_pkm(m)
    assert pk.task == ['x', 'y', 'rz'] and np.allclose(pk.R_ref, np.eye(3))
    for phi in (-3.0, -0.4, 0.0, 1e-7, 0.3, 3.1):
        q = matrix_to_quat_xyzw(exp_so3(np.array([0.0, 0.0, phi])))
        x, xd, xdd = E.task_reference(pk, [0.1, -0.2, 0.0], q, [1, 2, 3, 4, 5, 6], [-1, -2, -3, -4, -5, -6])
        assert np.allclose(x, [0.1, -0.2, phi], rtol=0, atol=1e-12), (phi, x)
        assert xd.tolist() == [1, 2, 6] and xdd.tolist() == [-1, -2, -6]
