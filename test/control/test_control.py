"""Core of dynamics_node: the DynamicsController law, hold command, cut-joint wrenches (no ROS)."""

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.control import DynamicsController, hold_command, task_coordinates
from robot_dynamics.control.computed_torque import cut_wrenches
from robot_dynamics.control.loop import ControlLoop, Reference, State
from robot_dynamics.plants.rigid import ConstrainedPlant


@pytest.fixture(scope='module')
def five_bar():
    return rd.load_model(rd.data_path('urdf/five_bar.urdf'))


def test_hold_command_balances_gravity_with_actuators_only(five_bar):
    m = five_bar
    q = m.reference_q()
    tau = hold_command(m, q, np.zeros(m.nq))
    assert np.all(tau[m.passive_indices] == 0)
    # the held mechanism does not accelerate
    res = rd.constrained_forward_dynamics(m, q, np.zeros(m.nq), tau)
    assert np.abs(res.qdd).max() < 1e-9
    # damping acts against the actuated velocities
    qd = rd.project_velocity(m, q, np.ones(m.nq))
    tau_d = hold_command(m, q, qd, damping=2.0)
    assert np.allclose(tau_d[m.actuated_indices], tau[m.actuated_indices] - 2.0 * qd[m.actuated_indices])


def test_task_coordinates_match_kinematics(five_bar):
    m = five_bar
    q = m.reference_q()
    qd = np.random.default_rng(1).normal(size=m.nq)
    x, J, Jdqd = task_coordinates(m, 'tool', [0, 2])(q, qd)
    p = rd.forward_kinematics(m, q)['tool'][:3, 3]
    assert np.allclose(x, p[[0, 2]])
    JJ = rd.frame_jacobian(m, q, 'tool', 'local_world_aligned')[:3][[0, 2]]
    assert np.allclose(J, JJ)
    a = rd.frame_acceleration(m, q, qd, np.zeros(m.nq), 'tool', 'local_world_aligned')[:3][[0, 2]]
    assert np.allclose(Jdqd, a)


def test_cut_wrench_reproduces_the_generalized_constraint_force(five_bar):
    """-A^T lam equals the cut wrench applied to frame_b (and its reaction on frame_a)."""
    m = five_bar
    rng = np.random.default_rng(3)
    q = m.reference_q()
    qd = rd.project_velocity(m, q, rng.normal(size=m.nq))
    tau = rng.normal(size=m.nq)
    res = rd.constrained_forward_dynamics(m, q, qd, tau)
    w = cut_wrenches(m, q, res.lam)['distal_joint']
    lp = m.loops[0]
    T = rd.forward_kinematics(m, q)
    Ra = T[lp.frame_a][:3, :3]
    f_w, t_w = Ra @ w[:3], Ra @ w[3:]
    Jb = rd.frame_jacobian(m, q, lp.frame_b, 'local_world_aligned')
    Ja = rd.frame_jacobian(m, q, lp.frame_a, 'local_world_aligned')
    gen = Jb.T @ np.concatenate([f_w, t_w]) - Ja.T @ np.concatenate([f_w, t_w])
    assert np.allclose(gen, -res.F, atol=1e-9 * max(1, np.abs(res.F).max()))


def test_task_space_pidc_closed_loop_decays_analytically(five_bar):
    """Exact model, 1 kHz: task error obeys e'' + kd e' + kp e = 0 (from 14 mm)."""
    m = five_bar
    c = DynamicsController(m, reference='task', task_frame='tool', task_axes=[0, 2], kp=100.0, kd=20.0)
    plant = ConstrainedPlant(m, dt=1e-3)
    x0 = task_coordinates(m, 'tool', [0, 2])(plant.q, plant.qd)[0]
    ref = Reference(None, x0 + np.array([0.01, -0.01]), np.zeros(2), np.zeros(2))
    errs = []
    for k in range(1000):
        out = c.update(State(plant.t, plant.q, plant.qd, plant.t), ref)
        assert 'not_controllable' not in out.info
        plant.step(out.info['tau'])
        errs.append(np.linalg.norm(out.e))
    t = np.arange(1000) * 1e-3
    analytic = np.hypot(0.01, 0.01) * np.exp(-10 * t) * (1 + 10 * t)
    assert np.abs(np.array(errs) - analytic).max() < 2e-4
    assert errs[-1] < 1e-5


def test_computed_torque_on_a_tree_and_input_checks():
    m = rd.load_model(rd.data_path('urdf/arm7.urdf'))
    c = DynamicsController(m, law='computed_torque', kp=25.0, kd=10.0)
    q = m.reference_q()
    out = c.update(State(0.0, q, np.zeros(m.nq), 0.0), Reference(None, q + 0.01, np.zeros(m.nq), np.ones(m.nq)))
    tau = rd.crba(m, q) @ (np.ones(m.nq) + 25.0 * 0.01) + rd.nonlinear_effects(m, q, np.zeros(m.nq))
    assert np.allclose(out.info['tau'], tau) and np.allclose(out.effort, tau[c.cmd_idx])
    assert ControlLoop(c).set_reference([np.nan] * m.nq) is not None  # the loop checks references
    with pytest.raises(rd.InputError):
        DynamicsController(rd.load_model(rd.data_path('urdf/four_bar.urdf')), law='computed_torque')
    with pytest.raises(rd.InputError):
        DynamicsController(m, joints=['joint_1'])  # not all actuated joints
