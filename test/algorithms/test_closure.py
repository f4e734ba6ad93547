"""Passive-joint completer (robot_dynamics.algorithms.closure): from the sensed joints only, every robot's
complete state equals the simulator's to 1e-9; missing velocities are estimated; too few
sensors, singular configurations and jumps (branch switches, glitches) are refused."""

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.algorithms.closure import ClosureCompleter
from robot_dynamics.errors import InputError
from robot_dynamics.plants.rigid import ConstrainedPlant

from projection_helpers import model

ROBOTS = [
    'four_bar',
    'five_bar',
    'slider_crank',
    'series_parallel_3dof',
    'hydraulic_boom',
    'irsbot2',
    'gough_stewart',
    'planar_3rrr_sea',
]


def sensed_joints(m):
    """What a real robot of this kind measures: its actuated joints (the SEA robot: motor and
    link-side encoders)."""
    sea = [a['joint'] for a in m.actuators.values() if a.get('type') == 'sea']
    return list(dict.fromkeys(list(m.actuated) + sea))


def trajectory(m, steps=60, dt=2e-3, seed=0):
    """(t, q, qd) samples of the rigid plant driven by a smooth random actuator torque."""
    plant = ConstrainedPlant(m, m.reference_q(), dt=dt)
    rng = np.random.default_rng(seed)
    amp = 20.0 * np.diag(rd.crba(m, m.reference_q()))  # ~20 rad/s^2 (m/s^2) per joint
    a = rng.normal(size=(2, m.nq))
    out = []
    for k in range(steps):
        tau = np.zeros(m.nq)
        tau[m.actuated_indices] = (amp * (a[0] * np.sin(8 * k * dt) + a[1]))[m.actuated_indices]
        hold = rd.control.hold_command(m, plant.q, plant.qd, 0.0)
        plant.step(hold + tau)
        out.append((plant.t, plant.q.copy(), plant.qd.copy()))
    return out


@pytest.mark.parametrize('name', ROBOTS)
def test_completion_equals_the_simulated_state(name):
    m = model(name)
    sensed = sensed_joints(m)
    cc = ClosureCompleter(m)
    names = list(m.joint_names)
    idx = [m.joint_index(j) for j in sensed]
    worst_q = worst_qd = 0.0
    for t, q, qd in trajectory(m):
        c = cc.complete(sensed, q[idx], qd[idx], stamp=t)
        assert c.ok, c.reason
        worst_q = max(worst_q, np.abs(c.q - q).max())
        worst_qd = max(worst_qd, np.abs(c.qd - qd).max())
    assert worst_q < 1e-9 and worst_qd < 1e-9 * max(1.0, np.abs(qd).max()), (worst_q, worst_qd)
    assert len(sensed) < m.nq and np.abs(q - m.reference_q()).max() > 1e-3  # it moved
    # the broadcaster's message: NaN for the passive joints and for missing velocities
    cc.reset()
    pos = [float('nan')] * m.nq
    err = []
    for t, q, qd in trajectory(m):
        for j in sensed:
            pos[names.index(j)] = q[m.joint_index(j)]
        c = cc.complete(names, pos, [float('nan')] * m.nq, stamp=t)
        assert c.ok and set(c.estimated) == set(sensed)
        np.testing.assert_allclose(c.q, q, atol=1e-9)
        err.append(np.abs(c.qd - qd).max())
    # backward differences over 2 ms: O(dt * qdd) (not exact: that is why it is documented)
    assert np.median(err[1:]) < 0.05 * max(1.0, np.abs(qd).max()), np.median(err[1:])


def test_too_few_sensors_singular_and_jumps_are_refused():
    m = model('five_bar')
    cc = ClosureCompleter(m, max_jump=0.2)
    q = m.reference_q()
    c = cc.complete(['motor1_joint'], [q[0]])
    assert not c.ok and 'do not determine' in c.reason
    i1, i2 = m.joint_index('motor1_joint'), m.joint_index('motor2_joint')
    c = cc.complete(['motor1_joint', 'motor2_joint'], [q[i1], q[i2]])
    assert c.ok and np.abs(c.q - q).max() < 1e-9
    c = cc.complete(['motor1_joint', 'motor2_joint'], [q[i1] + 0.4, q[i2]])  # a glitch
    assert not c.ok and 'jump' in c.reason and cc.count['refused'] == 2
    for k in range(1, 9):  # the same move, gradual
        c = cc.complete(['motor1_joint', 'motor2_joint'], [q[i1] + 0.05 * k, q[i2]])
        assert c.ok, c.reason
    c = cc.complete(['motor1_joint', 'motor2_joint'], [q[i1] + 5.0, q[i2] + 5.0])  # out of reach
    assert not c.ok
    assert cc.complete(['motor1_joint', 'motor2_joint'], [np.nan, q[i2]]).ok is False
    with pytest.raises(InputError):
        ClosureCompleter(m, max_jump=0.0)
    with pytest.raises(InputError, match='no loops'):
        ClosureCompleter(rd.load_model(rd.data_path('urdf/arm7.urdf')))
