"""A closed chain with a floating base and ball-jointed rods (test/data/biped_rods.*): the pelvis
on a free-flyer, each knee driven by a rod with a spherical joint on the pelvis and a spherical
loop on the shin, written in the package's own format (URDF + sidecar ``root_joint`` and
``joint_types``).

Independent routes: Pinocchio's ``constraintDynamics`` on the same mechanism (its model built
joint by joint with ``JointModelFreeFlyer`` / ``JointModelSpherical`` from our placements and
inertias, the loops as 3-D rigid constraints), Lagrange multipliers, and a passive simulation
that keeps the loops closed, the quaternions of unit norm and its energy.
"""

import os

import numpy as np
import pinocchio as pin
import pytest

import robot_dynamics as rd
from robot_dynamics.algorithms import projection as pj

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'data')


@pytest.fixture(scope='module')
def model():
    return rd.load_model(os.path.join(DATA, 'biped_rods.urdf'))


def _pin_model(m):
    """Pinocchio model of m: one Pinocchio joint per joint of m, in the same order (so q and v
    coincide), the same placements, inertias and cut frames."""
    pm = pin.Model()
    pm.gravity = pin.Motion(np.r_[m.gravity, 0, 0, 0])
    pin_of = {}
    for jt in m.joints:
        head, last = jt.idx_v, jt.idx_v + jt.nv - 1
        par = int(m.parents[head])
        parent = 0 if par < 0 else pin_of[m.joint_names[par].split('/')[0]]
        if jt.kind == 'free_flyer':
            jm = pin.JointModelFreeFlyer()
        elif jt.kind == 'spherical':
            jm = pin.JointModelSpherical()
        else:
            jm = pin.JointModelRevoluteUnaligned(*m.axes[head])
        jid = pm.addJoint(parent, jm, pin.SE3(m.R_fixed[head], m.p_fixed[head]), jt.name)
        pm.appendBodyToJoint(jid, pin.Inertia(m.mass[last], m.com[last], m.inertia_com[last]), pin.SE3.Identity())
        pin_of[jt.name] = jid
    cms = pin.StdVec_RigidConstraintModel()
    for lp in m.loops:
        sides = []
        for f in (lp.frame_a, lp.frame_b):
            k = m.frame_index(f)
            sides += [pin_of[m.joint_names[m.frame_parent[k]].split('/')[0]], pin.SE3(m.frame_R[k], m.frame_p[k])]
        cms.append(pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, pm, *sides, pin.ReferenceFrame.LOCAL))
    pd = pm.createData()
    cds = pin.StdVec_RigidConstraintData()
    for c in cms:
        cds.append(c.createData())
    pin.initConstraintDynamics(pm, pd, cms, cds)
    return pm, pd, cms, cds


def _states(m, n, seed=1):
    rng = np.random.default_rng(seed)
    closed = pj.assemble(m, q_guess=m.reference_q(), fixed='none').q
    out = []
    for _ in range(n):
        q = closed.copy()
        q[m.q_index('root_joint')] = m.joints[0].model.random(rng)
        for j in ('left_hip', 'right_hip'):
            q[m.q_index(j)] += rng.uniform(-0.25, 0.25)
        q = pj.assemble(m, q[m.q_of_v[m.independent_indices]], q_guess=q, fixed='independent').q
        qd = pj.project_velocity(m, q, rng.standard_normal(m.nv))
        out.append((q, qd, rng.standard_normal(m.nv)))
    return out


def test_the_model_has_a_free_flyer_and_ball_joints(model):
    assert (model.nq, model.nv) == (19, 16)
    kinds = {j.name: j.kind for j in model.joints}
    assert kinds['root_joint'] == 'free_flyer' and kinds['left_rod_ball'] == 'spherical'
    assert model.q_index('left_rod_ball') == slice(9, 13) and model.v_index('left_rod_ball') == slice(8, 11)
    assert model.passive == [n for n in model.joint_names if n not in ('left_hip', 'right_hip')]


def test_assembly_closes_the_loops_and_keeps_unit_quaternions(model):
    for q, qd, _ in _states(model, 4):
        assert max(max(e) for e in rd.loop_errors(model, q).values()) <= 1e-10
        for jt in model.multi_dof:
            quat = q[jt.q_slice][-4:]
            assert abs(np.linalg.norm(quat) - 1.0) <= 1e-14
        assert np.abs(rd.constraint_jacobian(model, q) @ qd).max() <= 1e-10


def test_constrained_forward_dynamics_equals_pinocchio_constraint_dynamics(model):
    pm, pd, cms, cds = _pin_model(model)
    prox = pin.ProximalSettings(1e-14, 1e-12, 200)
    for q, qd, tau in _states(model, 5):
        res = rd.constrained_forward_dynamics(model, q, qd, tau)
        a_pin = pin.constraintDynamics(pm, pd, q, qd, tau, cms, cds, prox)
        assert np.abs(res.qdd - a_pin).max() <= 1e-9 * max(1.0, np.abs(a_pin).max())
        # the unconstrained tree too: Pinocchio's ABA on the same model
        assert np.allclose(rd.forward_dynamics(model, q, qd, tau), pin.aba(pm, pd, q, qd, tau), rtol=0, atol=1e-9)
        # and Lagrange multipliers: [M A^T; A 0] [qdd; -lam] = [tau - h; -Adot qd]
        lag = rd.lagrange_forward_dynamics(model, q, qd, tau)
        assert np.abs(res.qdd - lag.qdd).max() <= 1e-9 * max(1.0, np.abs(lag.qdd).max())


def test_projected_inverse_dynamics_with_an_unactuated_floating_base_recovers_the_hip_torques(model):
    # a motion produced by hip torques alone (base, knees and rods passive) is realisable, and
    # the inverse dynamics distributes the effort through the closures back onto the hips
    rng = np.random.default_rng(6)
    for q, qd, _ in _states(model, 3, seed=6):
        tau = np.zeros(model.nv)
        tau[model.actuated_indices] = 5.0 * rng.standard_normal(2)
        qdd = rd.constrained_forward_dynamics(model, q, qd, tau).qdd
        res = rd.projected_inverse_dynamics(model, q, qd, u=qdd)
        assert not res.controllable  # 2 actuators cannot steer the 6-DOF base
        assert res.residual <= 1e-10
        assert np.abs(res.tau - tau).max() <= 1e-10 * max(1.0, np.abs(tau).max())


def test_constraint_rows_match_finite_differences_on_the_manifold(model):
    ((q, qd, _),) = _states(model, 1, seed=4)
    t = rd.constraint_terms(model, q, qd)
    h = 1e-6
    fd = np.empty_like(t.A)
    for k in range(model.nv):
        e = np.zeros(model.nv)
        e[k] = h
        fd[:, k] = (
            rd.constraint_terms(model, model.integrate(q, e), jacobian=False).phi
            - rd.constraint_terms(model, model.integrate(q, -e), jacobian=False).phi
        ) / (2 * h)
    assert np.abs(fd - t.A).max() <= 1e-8
    # Adot qd: d/dt (A qd) along the motion at fixed qd
    Ap = rd.constraint_jacobian(model, model.integrate(q, h * qd))
    Am = rd.constraint_jacobian(model, model.integrate(q, -h * qd))
    assert np.abs((Ap - Am) @ qd / (2 * h) - t.bias).max() <= 1e-7


def test_five_second_passive_simulation_keeps_closure_unit_quaternions_and_energy(model):
    ((q0, qd0, _),) = _states(model, 1, seed=2)
    plant = rd.ConstrainedPlant(model, q0, 0.2 * qd0, dt=1e-3)
    E0 = None
    worst_phi, worst_quat, worst_dE, T_max = 0.0, 0.0, 0.0, 0.0
    for k in range(5000):
        info = plant.step(np.zeros(model.nv))
        q, qd = plant.q, plant.qd
        worst_phi = max(worst_phi, info.phi_norm)
        for jt in model.multi_dof:
            worst_quat = max(worst_quat, abs(np.linalg.norm(q[jt.q_slice][-4:]) - 1.0))
        T = rd.kinetic_energy(model, q, qd)
        T_max = max(T_max, T)
        E = T + rd.potential_energy(model, q)
        E0 = E if E0 is None else E0
        worst_dE = max(worst_dE, abs(E - E0))
    assert worst_phi <= 1e-9
    assert worst_quat <= 1e-12
    # free fall with the legs swinging (13 kJ of kinetic energy at the end): the energy is kept to
    # the integrator's and the projections' error
    assert worst_dE <= 1e-6 * T_max, (worst_dE, T_max)
    assert plant.q[2] < q0[2] - 100.0  # the pelvis fell ~ g t^2 / 2 = 122 m


def _refusals():
    from robot_dynamics.algorithms import partitioning, rnea_derivatives, vdc
    from robot_dynamics.pkm import embedding, general, recursive

    z = np.zeros(16)
    return {
        'rnea_time_derivatives': lambda m: rnea_derivatives.rnea_time_derivatives(m, m.neutral(), z, z, z),
        'inertia partitioning': lambda m: partitioning.PartitionedModel(m),
        'constraint embedding': lambda m: embedding.PKM(m),
        'general PKM route': lambda m: general.general_pkm(m),
        'recursive 2nd-order': lambda m: recursive.limbs_from_model(m),
        'virtual decomposition': lambda m: vdc.structure_from_model(m),
    }


@pytest.mark.parametrize('method', sorted(_refusals()))
def test_methods_for_one_dof_joints_refuse_naming_the_joint(model, method):
    with pytest.raises(rd.ModelError) as exc:
        _refusals()[method](model)
    msg = str(exc.value)
    assert method in msg and "joint 'root_joint'" in msg and 'free_flyer' in msg and 'left_rod_ball' in msg, msg


def test_the_compiled_lie_group_integration_equals_the_joint_models(model):
    # the simulator's and the projections' kernel (free-flyer, spherical) against Model.integrate,
    # whose joint models test/algorithms/test_floating_base.py checks against pin.integrate;
    # a planar root too
    from robot_dynamics.algorithms import _tree_kernels as K

    planar = rd.load_model(rd.data_path('urdf/four_bar.urdf'), root_joint='planar')
    rng = np.random.default_rng(8)
    for m in (model, planar):
        for _ in range(5):
            q = m.random_configuration(rng)
            v = rng.standard_normal(m.nv)
            h = rng.uniform(-1.0, 1.0)
            out = np.empty(m.nq)
            K.integrate(m._geo, q, v, h, out)
            assert np.abs(out - m.integrate(q, h * v)).max() <= 1e-12
