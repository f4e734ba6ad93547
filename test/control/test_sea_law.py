"""The SEA flatness law (seed 004) in the core control loop, without ROS: SEAFlatnessController
through ControlLoop equals its own step called directly (1e-12), the loop's safe command on
stale input, the 4th-order extrapolation of a reference with derivatives up to snap, and the
goal profile that trajectory_node runs (GoalMoves)."""

import suite_paths
import os
from math import factorial

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.control.flatness_sea import SEAFlatnessController, sea_state_from_joints
from robot_dynamics.control.laws import LAWS, make_law
from robot_dynamics.control.loop import ControlLoop, Reference
from robot_dynamics.errors import InputError
from robot_dynamics.pkm.planar_sea import Planar3RRR
from robot_dynamics.control.trajectories import SinSquaredJerk
from robot_dynamics.plants.registry import make_plant
from robot_dynamics.control.trajectories import GoalMoves

URDF = os.path.join(suite_paths.TEST_DIR, '..', 'urdf', 'planar_3rrr_sea.urdf')
P1, P2 = np.array([-0.05, 0.0]), np.array([0.05, 0.0])


@pytest.fixture(scope='module')
def model():
    return rd.load_model(URDF)


def _loop(model, **kw):
    law = make_law(model, 'sea_flatness', poles=30.0, lambda_poles=30.0, preload=2.0)
    return law, ControlLoop(law, period=1e-3, **kw)


def test_law_through_the_loop_equals_the_controller_in_closed_loop(model):
    """1 kHz closed loop on the SEA plant (ZOH), the reference sample of each state's stamp
    (lock-step): the loop's commands equal SEAFlatnessController's to 1e-12, and the tracking
    error is the core test's (e_zoh < 1e-4 m for the 0.1 m / 0.5 s move)."""
    assert 'sea_flatness' in LAWS
    law, loop = _loop(model, sync=True)
    assert law.joints == ['arm1_motor', 'arm2_motor', 'arm3_motor']
    plant = make_plant('sea', model, dt=1e-3)
    plant.reset(p0=P1)
    prof = SinSquaredJerk(P1, P2, 0.5, t0=0.05)
    ctrl = SEAFlatnessController(model, params=plant.params, poles=30.0, lambda_poles=30.0)
    lam_d = np.array([2.0, 0.0, 0.0])
    names = list(model.joint_names)
    ia, ie, im = ([names.index(f'arm{k}_{s}') for k in (1, 2, 3)] for s in ('joint', 'elbow', 'motor'))
    diff, err = 0.0, []
    for _ in range(700):
        t = plant.t
        q, qd = plant.q, plant.qd
        yd = prof(t)
        # trajectory_node's reference/derivatives: 3 columns x, y, z (z dropped by the node)
        assert loop.set_reference(None, stamp=t, derivs=yd) is None
        assert loop.set_state(names, q, qd, stamp=t, now=t) is None
        c = loop.update(t)
        assert c is not None and not c.safe, c.reason if c else None
        tau = ctrl(*sea_state_from_joints(plant.params, q, qd, ia, ie, im), yd, lam_d)
        diff = max(diff, float(np.abs(c.effort - tau).max()))
        assert abs(c.info['lambda'] - ctrl.lam) < 1e-12
        np.testing.assert_allclose(c.e, yd[0] - sea_state_from_joints(plant.params, q, qd, ia, ie, im)[0], atol=1e-15)
        plant.step(c.effort)
        err.append(np.hypot(*(plant.p - prof(plant.t)[0])))
    print(f'max |tau_loop - tau_direct| {diff:.1e}, max |e| {max(err):.2e} m')
    assert diff <= 1e-12
    assert max(err) < 1e-4
    assert loop.count['safe_commands'] == 0 and loop.count['extrapolated'] == 0


def test_taylor_extrapolation_of_derivatives_up_to_snap(model):
    """A sample with derivatives up to snap is carried to the state stamp by its own 4th-order
    Taylor series (every row consistently: pos/vel/acc are rows 0..2 of the result)."""
    law, loop = _loop(model, max_extrapolation=0.01)
    D = np.array([[0.01, -0.02], [0.3, 0.1], [2.0, -1.0], [10.0, 5.0], [100.0, -50.0]])
    loop.set_reference(None, stamp=1.0, derivs=D)
    ref = loop._ref_plain.at(1.004, 0.01)
    dt = 0.004
    want = [sum(D[j + i] * dt**i / factorial(i) for i in range(5 - j)) for j in range(5)]
    np.testing.assert_allclose(ref.derivs, want, rtol=1e-14, atol=1e-16)
    np.testing.assert_array_equal(ref.pos, ref.derivs[0])
    np.testing.assert_array_equal(ref.acc, ref.derivs[2])
    np.testing.assert_allclose(law.desired(ref), want, atol=1e-16)
    # clipped at max_extrapolation
    np.testing.assert_allclose(
        loop._ref_plain.at(1.5, 0.01).derivs[0], sum(D[i] * 0.01**i / factorial(i) for i in range(5)), rtol=1e-14
    )
    # named columns (trajectory_node's x, y, z) are reordered to the law's coords
    assert (
        loop.set_reference(None, stamp=2.0, derivs=np.c_[np.zeros(5), D[:, 1], D[:, 0]], names=['z', 'y', 'x']) is None
    )
    np.testing.assert_array_equal(loop._ref_plain.derivs, D)
    assert loop.set_reference(None, stamp=3.0, derivs=np.full((5, 2), np.nan)) is not None
    # a hold reference without derivatives: jerk and snap zero
    yd = law.desired(Reference(0.0, P1, np.zeros(2), np.zeros(2)))
    np.testing.assert_array_equal(yd, np.vstack([P1, np.zeros((4, 2))]))


def test_stale_state_and_reference_give_the_sea_safe_command(model):
    """Stale state -> the safe command at the next update (never the last torque): 'hold' =
    -hold_damping * motor velocity, 'zero' = 0; a stale or missing reference likewise."""
    plant = make_plant('sea', model, dt=1e-3)
    plant.reset(p0=P1)
    names = list(model.joint_names)
    im = [names.index(f'arm{k}_motor') for k in (1, 2, 3)]
    qd = plant.qd.copy()
    qd[im] = [0.5, -1.0, 2.0]
    for safe, want in (('hold', -0.2 * qd[im]), ('zero', np.zeros(3))):
        law, loop = _loop(model, safe=safe, hold_damping=0.2, state_timeout=0.1, reference_timeout=0.05)
        loop.set_state(names, plant.q, qd, stamp=0.0, now=0.0)
        c = loop.update(0.0)
        assert c.safe and c.reason == 'no reference yet'
        np.testing.assert_allclose(c.effort, want, atol=1e-15)
        loop.set_reference(None, stamp=0.001, derivs=np.vstack([P1, np.zeros((4, 2))]))
        loop.set_state(names, plant.q, qd, stamp=0.001, now=0.001)
        c = loop.update(0.001)
        assert not c.safe and np.any(c.effort != want)
        c = loop.update(0.2)  # no state for 0.199 s
        assert c.safe and c.reason.startswith('state stale'), c.reason
        np.testing.assert_allclose(c.effort, want, atol=1e-15)
        loop.set_state(names, plant.q, qd, stamp=0.3, now=0.3)  # reference 0.299 s old
        c = loop.update(0.3)
        assert c.safe and c.reason.startswith('reference stale'), c.reason
        np.testing.assert_allclose(c.effort, want, atol=1e-15)
    # the law's own safe command and a malformed motor joint list
    assert np.all(law.safe_command(None, 'hold', 0.2) == 0)
    with pytest.raises(InputError):
        make_law(model, 'sea_flatness', joints=['arm1_joint'])


def test_goal_moves_profile(model):
    """trajectory_node's goal profile: rest at start, one sin^2-jerk move per goal from where the
    reference is, duration max(min_duration, 2 |d| / max_speed); unreachable goals rejected."""
    pkm = Planar3RRR()
    g = GoalMoves([-0.05, 0.0, 0.0], 0.4, 0.3, reachable=lambda pts: pkm.ik(pts[:, :2]))
    np.testing.assert_array_equal(g(5.0, order=4), np.vstack([[-0.05, 0.0, 0.0], np.zeros((4, 3))]))
    T = g.goal(1.0, [0.05, 0.0, 0.0])
    assert T == pytest.approx(0.5)
    ref = SinSquaredJerk([-0.05, 0.0, 0.0], [0.05, 0.0, 0.0], 0.5, t0=1.0)
    for t in (0.5, 1.0, 1.1, 1.25, 1.4999, 2.0):
        np.testing.assert_array_equal(g(t, order=4), ref(t))
    assert g(1.2, order=2).shape == (3, 3)
    T2 = g.goal(1.1, [0.05, 0.01, 0.0])  # mid-move: starts from the current reference
    np.testing.assert_allclose(g(1.1, order=0)[0], ref(1.1)[0])
    assert T2 == pytest.approx(max(0.3, 2 * np.linalg.norm([0.05, 0.01, 0.0] - ref(1.1)[0]) / 0.4))
    with pytest.raises(InputError):
        g.goal(3.0, [5.0, 0.0, 0.0])  # outside the workspace
    with pytest.raises(InputError):
        g.goal(3.0, [np.nan, 0.0, 0.0])
    np.testing.assert_allclose(g(4.0, order=0)[0], [0.05, 0.01, 0.0])  # the last move kept
    assert g.goals == 2
