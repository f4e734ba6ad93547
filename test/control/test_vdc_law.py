"""The seed 001 VDC law on the one control loop, without ROS (robot_dynamics.control.vdc.VDCController
in robot_dynamics.control.loop.ControlLoop): equal to its step called directly, the
A-B-C-D task reference as a joint reference (BoomTaskProfile) equal to the task mapping, the
chamber pressures parsed as named measurements of the state message, and the safe command
0 V (valves closed) on stale, NaN, missing or implausible input."""

import numpy as np
import pytest

from robot_dynamics.control.laws import LAWS, make_law
from robot_dynamics.control.loop import ControlLoop
from robot_dynamics.control.vdc import BoomTaskProfile, TaskReference, VDCController, quintic_legs
from robot_dynamics.plants.registry import make_plant
from robot_dynamics.algorithms.vdc import segment_q

from boom_offline import ABCD, boom_model, lockstep_boom, state_entries


@pytest.fixture(scope='module')
def boom():
    return boom_model()


def _loop(law, **kw):
    return ControlLoop(law, period=1e-3, safe='zero', state_timeout=0.1, reference_timeout=0.1, **kw)


def test_profile_equals_task_reference(boom):
    prof = BoomTaskProfile(boom, ABCD, loops=1)
    st = prof.st
    q0 = segment_q(st, boom.reference_q())[0]
    pts = [st.tool_pose(q0)[1][[0, 2]]] + list(np.reshape(ABCD, (-1, 2))) + [ABCD[:2]]
    task = TaskReference(st, lambda t: quintic_legs(pts, [2.0] * 5, t), (0, 2), q0)
    for t in np.arange(0.0, 10.5, 0.0371):
        r = task(t)
        x = prof(t)
        assert np.abs(x[0] + prof.offsets - r[0]).max() < 1e-12
        assert np.abs(x[1:] - r[1:]).max() < 1e-12
    assert prof.joints == ['lift_joint', 'tilt_joint']


def test_law_in_the_loop_equals_the_vdc_controller_called_directly(boom):
    """Closed loop (plant + loop + law) over the approach and the first leg; at every step the
    controller called directly with the same measurements and reference gives the same volts."""
    law = make_law(boom, 'vdc', dt=1e-3)
    assert isinstance(law, VDCController) and 'vdc' in LAWS
    loop = _loop(law)
    ref_ctrl = VDCController(law.st, law.hp, dt=1e-3)
    plant = make_plant('hydraulic', boom, boom.reference_q(), dt=1e-3)
    prof = BoomTaskProfile(boom, ABCD, loops=1)
    idx = [boom.joint_index(j) for j in boom.actuated]
    worst = 0.0
    for k in range(3000):
        s = k * 1e-3
        names, pos, vel = state_entries(boom, plant)
        assert loop.set_state(names, pos, vel, s, s) is None
        x = prof(s)
        loop.set_reference(x[0], x[1], x[2], stamp=s, names=prof.joints)
        c = loop.update(s)
        assert not c.safe and c.extrapolated == 0.0
        q, qd = segment_q(law.st, plant.q, plant.qd)
        u = ref_ctrl.step(q, qd, plant.pa, plant.pb, np.array([x[0] + prof.offsets, x[1], x[2]]))
        worst = max(worst, np.abs(c.effort - u).max())
        tau = np.zeros(boom.nq)
        tau[idx] = c.effort
        plant.step(tau)
    assert worst <= 1e-12, worst
    tool = law.st.tool_pose(segment_q(law.st, plant.q)[0])[1][[0, 2]]
    assert np.linalg.norm(tool - prof.path(plant.t)[0]) < 4e-3  # tracking (offline: 3.15 mm max)


def test_lockstep_twin_tracks_the_task(boom):
    """The offline twin of the lock-step graph (test_ros_realtime compares the graph with it):
    tracking within the nominal bound, pressures inside (p_r, p_s), volts inside the limits."""
    states, pres, cmds = lockstep_boom(4.0, boom)
    prof = BoomTaskProfile(boom, ABCD, loops=1)
    st = prof.st
    err = [
        np.linalg.norm(st.tool_pose(segment_q(st, q)[0])[1][[0, 2]] - prof.path(ns * 1e-9)[0])
        for ns, q in states.items()
        if ns * 1e-9 > 2.0
    ]
    P = np.array([np.r_[a, b] for a, b in pres])
    print(f'\nlock-step twin: max {max(err) * 1e3:.3f} mm, p [{P.min() / 1e5:.1f}, {P.max() / 1e5:.1f}] bar')
    assert max(err) < 4e-3
    hp = VDCController(boom).hp
    assert P.min() > hp.p_r and P.max() < hp.p_s and np.abs(cmds).max() < 10.0


def _state(boom, law, p=None, stamp=0.0, drop=None):
    plant = make_plant('hydraulic', boom, boom.reference_q(), dt=1e-3)
    names, pos, vel = state_entries(boom, plant)
    for n, v in (p or {}).items():
        pos[names.index(n)] = v
    if drop:
        k = names.index(drop)
        del names[k], pos[k], vel[k]
    return names, pos, vel


@pytest.mark.parametrize('bad', ['nan', 'negative', 'huge', 'missing'])
def test_bad_pressure_is_rejected_and_the_valves_close(boom, bad):
    law = VDCController(boom)
    loop = _loop(law)
    names, pos, vel = _state(boom, law)
    loop.set_state(names, pos, vel, 0.0, 0.0)
    loop.set_reference(*[np.zeros(2)] * 3, stamp=0.0, names=law.coords)
    assert not loop.update(0.0).safe
    p = {
        'nan': {'lift_cyl/p_a': float('nan')},
        'negative': {'tilt_cyl/p_b': -1e5},
        'huge': {'lift_cyl/p_b': 1e10},
        'missing': {},
    }[bad]
    names, pos, vel = _state(boom, law, p, drop='tilt_cyl/p_a' if bad == 'missing' else None)
    why = loop.set_state(names, pos, vel, 0.001, 0.001)
    assert why and ('tilt_cyl/p_a' in why if bad == 'missing' else True), why
    assert loop.count['rejected_states'] == 1
    assert loop.update(0.05) is None  # nothing new to answer yet
    c = loop.update(0.2)  # no valid state for > state_timeout
    assert c.safe and 'state stale' in c.reason and np.all(c.effort == 0.0)


def test_stale_reference_and_no_reference_give_zero_volts(boom):
    law = VDCController(boom)
    loop = _loop(law)
    names, pos, vel = _state(boom, law)
    loop.set_state(names, pos, vel, 0.0, 0.0)
    c = loop.update(0.0)
    assert c.safe and c.reason == 'no reference yet' and np.all(c.effort == 0.0)
    loop.set_reference(*[np.zeros(2)] * 3, stamp=0.0, names=law.coords)
    loop.set_state(names, pos, vel, 0.5, 0.5)
    c = loop.update(0.5)
    assert c.safe and 'reference stale' in c.reason and np.all(c.effort == 0.0)
    # the loop's 'hold' mode means 0 V for this law too (volts, not forces)
    assert np.all(law.safe_command(loop.state, 'hold', 0.0) == 0.0)


def test_valve_limits_and_lockstep_waits_for_the_first_reference(boom):
    law = VDCController(boom)
    loop = ControlLoop(law, period=1e-3, sync=True, ref_wait=0.01, wait_first_reference=True)
    assert np.allclose(loop.effort_limit, 10.0)  # valve input limits, not URDF forces
    names, pos, vel = _state(boom, law)
    loop.set_state(names, pos, vel, 0.0, 0.0)
    assert loop.update(0.0, wall=0.0) is None and loop.update(0.0, wall=5.0) is None
    loop.set_reference(np.array([0.3, 0.3]), np.zeros(2), np.zeros(2), stamp=0.0, names=law.coords)
    c = loop.update(0.0, wall=5.0)
    assert c is not None and not c.safe and np.abs(c.effort).max() <= 10.0
