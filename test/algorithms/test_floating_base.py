"""Floating-base robots written by others (the URDFs of ``example-robot-data``) against Pinocchio.

Every floating-base URDF of the package that Pinocchio loads with a free-flyer root is loaded
with ``root_joint='free_flyer'``; RNEA, CRBA, forward dynamics, frame Jacobians and their time
variation are compared with Pinocchio's at random states on the manifold (random unit
quaternions), each joint's q and v slices mapped by name, so nothing depends on both packages
ordering joints alike.
"""

import inspect
import warnings
from os.path import join

import numpy as np
import pinocchio as pin
import pytest

import example_robot_data.robots_loader as RL

import robot_dynamics as rd


def _floating_urdfs():
    out = {}
    for name, cls in sorted(inspect.getmembers(RL, inspect.isclass)):
        if not (name.endswith('Loader') and getattr(cls, 'free_flyer', False) and getattr(cls, 'urdf_filename', '')):
            continue
        rel = join(cls.path, cls.urdf_subpath, cls.urdf_filename)
        path = join(cls.model_path or RL.getModelPath(rel), rel)
        out.setdefault(path, name[: -len('Loader')])
    return {v: k for k, v in out.items()}


URDFS = _floating_urdfs()


def test_at_least_five_floating_base_robots_humanoids_and_quadrupeds():
    assert len(URDFS) >= 5
    for kind in ('Talos', 'ICub', 'Solo12', 'ANYmal', 'Go1'):
        assert any(n.startswith(kind) for n in URDFS), kind


def _pair(path):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', rd.ModelWarning)  # inertias as published
        m = rd.load_model(path, loops=False, root_joint='free_flyer')
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
    assert (m.nq, m.nv) == (pm.nq, pm.nv)
    pq, pv = np.empty(m.nq, int), np.empty(m.nv, int)
    for jt in m.joints:
        pj = pm.joints[pm.getJointId(jt.name)]
        assert (pj.nq, pj.nv) == (jt.nq, jt.nv), jt
        pq[jt.q_slice] = np.arange(pj.idx_q, pj.idx_q + pj.nq)
        pv[jt.v_slice] = np.arange(pj.idx_v, pj.idx_v + pj.nv)
    return m, pm, pq, pv


def _to_pin(x, perm):
    y = np.empty_like(x)
    y[perm] = x
    return y


def _rel(x, y):
    return np.abs(x - y).max() / max(1.0, np.abs(y).max())


@pytest.mark.parametrize('robot', sorted(URDFS))
def test_tree_dynamics_match_pinocchio(robot):
    m, pm, pq, pv = _pair(URDFS[robot])
    pd = pm.createData()
    assert m.joints[0].name == 'root_joint' and m.joints[0].kind == 'free_flyer'
    rng = np.random.default_rng(7)
    for _ in range(3):
        q = m.random_configuration(rng)
        assert abs(np.linalg.norm(q[3:7]) - 1.0) < 1e-15
        v, a, tau = (rng.standard_normal(m.nv) for _ in range(3))
        qp, vp, ap, tp = _to_pin(q, pq), _to_pin(v, pv), _to_pin(a, pv), _to_pin(tau, pv)
        assert _rel(rd.rnea(m, q, v, a), pin.rnea(pm, pd, qp, vp, ap)[pv]) <= 1e-10
        Mp = pin.crba(pm, pd, qp)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        M = rd.crba(m, q)
        assert _rel(M, Mp[np.ix_(pv, pv)]) <= 1e-10
        # forward dynamics, where M is positive definite, in effort space: both solutions'
        # normwise backward errors (the residual of M qdd = tau - h over ||M|| ||qdd|| + ||tau - h||)
        # and their difference in that measure (M of a humanoid with finger links reaches
        # cond 1e12 at random poses, with |qdd| up to 1e10: joint space carries cond * eps there)
        try:
            qdd = rd.forward_dynamics(m, q, v, tau)
        except rd.SingularMassMatrixError as exc:
            assert np.linalg.eigvalsh(M).min() <= 1e-12 * np.abs(M).max(), exc
            continue
        qdd_p = pin.aba(pm, pd, qp, vp, tp)[pv]
        b = tau - rd.rnea(m, q, v, np.zeros(m.nv))
        scale = np.abs(M).sum(axis=1).max() * np.abs(qdd).max() + np.abs(b).max()
        assert np.abs(M @ qdd - b).max() <= 1e-14 * scale
        assert np.abs(M @ (qdd - qdd_p)).max() <= 1e-12 * scale
        if np.linalg.cond(M) < 1e6:  # well conditioned: the accelerations themselves
            assert _rel(qdd, qdd_p) <= 1e-10


@pytest.mark.parametrize('robot', sorted(URDFS))
def test_frame_jacobians_and_their_time_variation_match_pinocchio(robot):
    m, pm, pq, pv = _pair(URDFS[robot])
    pd = pm.createData()
    rng = np.random.default_rng(3)
    q = m.random_configuration(rng)
    v = rng.standard_normal(m.nv)
    qp, vp = _to_pin(q, pq), _to_pin(v, pv)
    pin.computeJointJacobians(pm, pd, qp)
    pin.computeJointJacobiansTimeVariation(pm, pd, qp, vp)
    pin.updateFramePlacements(pm, pd)
    # the leaves (feet, hands, head) and a link of the base
    leaves = [f for f in m.frame_names if f not in {m.frame_names[0]}][-6:] + [m.root_link]
    for frame in leaves:
        fid = pm.getFrameId(frame, pin.BODY)
        for ref, pref in (('local_world_aligned', pin.LOCAL_WORLD_ALIGNED), ('local', pin.LOCAL)):
            J = rd.frame_jacobian(m, q, frame, ref)
            Jp = pin.getFrameJacobian(pm, pd, fid, pref)[:, pv]
            assert _rel(J, Jp) <= 1e-10, (frame, ref)
            dJ = rd.frame_jacobian_time_variation(m, q, v, frame, ref)
            dJp = pin.getFrameJacobianTimeVariation(pm, pd, fid, pref)[:, pv]
            assert _rel(dJ, dJp) <= 1e-10, (frame, ref)
        T = rd.frame_placement(m, q, frame)
        assert _rel(T[:3, :3], pd.oMf[fid].rotation) <= 1e-12
        assert _rel(T[:3, 3], pd.oMf[fid].translation) <= 1e-12


def test_free_flyer_integrate_and_difference_match_pinocchio():
    path = URDFS['Solo12']
    m, pm, pq, pv = _pair(path)
    rng = np.random.default_rng(5)
    for _ in range(5):
        q0, q1 = m.random_configuration(rng), m.random_configuration(rng)
        v = rng.standard_normal(m.nv)
        assert _rel(m.integrate(q0, v), pin.integrate(pm, _to_pin(q0, pq), _to_pin(v, pv))[pq]) <= 1e-12
        assert _rel(m.difference(q0, q1), pin.difference(pm, _to_pin(q0, pq), _to_pin(q1, pq))[pv]) <= 1e-10
    assert np.array_equal(m.neutral()[m.q_index('root_joint')], [0, 0, 0, 0, 0, 0, 1])
    assert m.v_index('root_joint') == slice(0, 6)


def test_root_joint_from_the_sidecar_and_a_one_dof_method_refuses(tmp_path):
    path = URDFS['Solo12']
    side = tmp_path / 'solo.loops.yaml'
    side.write_text('format: robot_dynamics/parsers/sidecar/1\nroot_joint: free_flyer\n')
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', rd.ModelWarning)
        m = rd.load_model(path, loops=str(side))
    assert (m.nq, m.nv) == (19, 18) and m.joints[0].kind == 'free_flyer'
    assert 'root_joint/x' not in m.actuated and len(m.actuated) == 12
    with pytest.raises(rd.ModelError, match="joint 'root_joint'.*needs one-DOF joints"):
        m.require_one_dof('constraint embedding')
    bad = tmp_path / 'bad.loops.yaml'
    bad.write_text('format: robot_dynamics/parsers/sidecar/1\nroot_joint: flying\n')
    with pytest.raises(rd.LoopSpecError, match='root_joint'):
        rd.load_model(path, loops=str(bad))
