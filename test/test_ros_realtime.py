"""Wall-clock (timing: realtime) graphs as real processes: robots that used to run only in
lock-step now run in real time, and stale input gives the safe command, never the last one.

Bounds are for a loaded CI machine (2 cores shared with the test runner); each is justified
where it is asserted. The numbers measured on an idle machine are in docs/control_loop.md.
"""
import os
import signal
import time

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')

from std_msgs.msg import Float64, Float64MultiArray  # noqa: E402

import robot_dynamics as rd  # noqa: E402
from robot_dynamics.control import hold_command  # noqa: E402
from robot_dynamics.demos import DEMOS, scalar_error  # noqa: E402
from ros_helpers import run_graph, stamp_matched_xz_error  # noqa: E402

pytestmark = pytest.mark.ros


def _js_q(model, msg):
    names = list(msg.name)
    q = np.array([msg.position[names.index(j)] for j in model.joint_names])
    qd = np.array([msg.velocity[names.index(j)] for j in model.joint_names])
    return q, qd


def test_irsbot2_tracks_in_wall_clock_time():
    """IRSBot-2 (16 joints, 5 loops): trajectory -> ik_node -> controller -> sim_node in real time.
    Bounds: 95 % of the samples within 3x the demo's 5 mm (the issue's aim under load) and the
    maximum below the circle's 60 mm diameter (never diverges). Measured max 0.7-1.5 mm idle,
    11.6 mm once in a full-suite run, up to 139 mm once next to two CPU hogs (a stalled plant:
    its stamps jump ahead with the wall clock, the reference with them). Real-time factor >= 0.5
    (measured 0.99-1.00 idle; it only says the plant really runs in wall time)."""
    def setup(probe):
        probe.subscribe('rtf', Float64, '/sim_node/real_time_factor')

    def body(launcher, probe, model, out):
        time.sleep(5.0)
        with probe.lock:
            poses = [(m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec, m.pose.position)
                     for t, m in probe.pose[-250:]]
            refs = [(m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec, m.pose.position)
                    for t, m in probe.ref[-500:]]
            rtf = [m.data for _, m in probe.rtf]
        err = stamp_matched_xz_error(poses, refs)
        print(f'\nirsbot2 real time: {len(err)} matched, max {err.max() * 1e3:.3f} mm, '
              f'RTF {np.round(rtf, 2).tolist()}')
        assert len(err) > 100
        # 95 % within 3x the demo's bound; no divergence: max below the circle's diameter (60 mm)
        assert np.percentile(err, 95) < 3 * DEMOS['irsbot2'].bound, np.percentile(err, 95)
        assert err.max() < 0.06, err.max()
        assert rtf and min(rtf[-3:]) >= 0.5, rtf
        xs = np.array([p.x for _, p in poses])
        assert np.ptp(xs) > 0.04                     # the circle (0.06 m wide) is followed
    run_graph('irsbot2', body, setup=setup, timing='realtime', timeout=90.0)


def test_series_parallel_3dof_tracks_in_wall_clock_time():
    """Inertia-partitioning controller at 200 Hz in real time (compiled model terms: 62 us per
    step). Bound: the demo's 5e-3 (rad | m) on e after 3 s (measured 0.7e-3 idle, 1.9e-3 in a
    full-suite run)."""
    spec = DEMOS['series_parallel_3dof']

    def setup(probe):
        probe.subscribe('diag', Float64MultiArray, spec.topic)
        probe.subscribe('rtf', Float64, '/sim_node/real_time_factor')

    def body(launcher, probe, model, out):
        probe.wait_for(lambda: len(probe.diag) > 10, 30.0, 'ip_controller diagnostics')
        with probe.lock:
            t0 = probe.diag[0][0]
        probe.wait_for(lambda: probe.diag[-1][0] > t0 + 6.0, 30.0, '6 s of control')
        with probe.lock:
            d = [(t, m) for t, m in probe.diag if t > t0 + 3.0]
            rtf = [m.data for _, m in probe.rtf]
        e = [scalar_error(spec, m.data, m.layout.dim[0].label) for _, m in d]
        print(f'\nseries_parallel_3dof real time: {len(e)} samples, max e {max(e):.2e}, RTF {rtf[-3:]}')
        assert len(e) > 50 and max(e) < spec.bound, max(e)
        assert rtf and min(rtf[-3:]) >= 0.5, rtf
    run_graph('series_parallel_3dof', body, ready=lambda: True, setup=setup, timing='realtime')


def test_stale_state_gives_the_safe_command_not_the_last_one():
    """five_bar in real time: sim_node frozen (SIGSTOP) -> the controller's next commands are the
    safe command (static gravity hold at the last state it had), within state_timeout (0.1 s) +
    two periods (0.02 s) + a scheduling margin of 0.3 s for the loaded CI machine; control
    resumes when the plant does."""
    def setup(probe):
        probe.subscribe('cmd', Float64MultiArray, '/effort_controller/commands')

    def body(launcher, probe, model, out):
        time.sleep(2.0)
        sim = launcher.procs['sim_node']
        os.kill(sim.pid, signal.SIGSTOP)
        t_stop = time.monotonic()
        try:
            time.sleep(0.7)
            with probe.lock:                      # every state published before the freeze is in
                js_last = probe.js[-1][1]         # by now (the probe may lag under load)
                cmds = [(t, np.array(m.data)) for t, m in probe.cmd if t > t_stop]
        finally:
            os.kill(sim.pid, signal.SIGCONT)
        q, qd = _js_q(model, js_last)
        hold = hold_command(model, q, qd, 0.0)[model.actuated_indices]
        safe = [(t, c) for t, c in cmds if np.allclose(c, hold, rtol=1e-6, atol=1e-6)]
        assert safe, (hold, cmds[-3:])
        delay = safe[0][0] - t_stop
        print(f'\nfirst safe command {delay * 1e3:.0f} ms after the plant froze; hold {hold}')
        assert delay < 0.1 + 0.02 + 0.3, delay
        assert all(np.allclose(c, hold, rtol=1e-6, atol=1e-6) for t, c in cmds if t > safe[0][0])
        assert 'state stale' in out.getvalue()
        n = len(probe.err)
        probe.wait_for(lambda: len(probe.err) > n + 20, 10.0, 'control resuming')
    run_graph('five_bar', body, setup=setup, timing='realtime')


def test_vdc_controller_closes_the_valves_on_stale_input_in_real_time():
    """hydraulic_boom in real time: sim_node frozen -> vdc_controller's watchdog (node clock =
    wall time) publishes 0 V within state_timeout (0.1 s) + its tick (0.05 s) + 0.3 s margin."""
    def setup(probe):
        probe.subscribe('cmd', Float64MultiArray, '/valve_controller/commands')

    def body(launcher, probe, model, out):
        probe.wait_for(lambda: len(probe.cmd) > 200, 60.0, 'valve commands')
        sim = launcher.procs['sim_node']
        os.kill(sim.pid, signal.SIGSTOP)
        t_stop = time.monotonic()
        try:
            time.sleep(1.0)
            with probe.lock:
                cmds = [(t, list(m.data)) for t, m in probe.cmd if t > t_stop]
        finally:
            os.kill(sim.pid, signal.SIGCONT)
        zero = [t for t, c in cmds if max(abs(v) for v in c) == 0.0]
        assert zero, cmds[-3:]
        assert zero[0] - t_stop < 0.1 + 0.05 + 0.3, zero[0] - t_stop
        late = [c for t, c in cmds if t > zero[0]]
        assert all(max(abs(v) for v in c) == 0.0 for c in late), late[:3]
        assert 'no valid joint/cylinder state' in out.getvalue()
    run_graph('hydraulic_boom', body, ready=lambda: True, setup=setup, timing='realtime',
              overrides={'vdc_controller': {'task_loops': 1}})


def _lockstep_boom_states(t_end, hog):
    """/joint_states of the lock-step boom graph up to plant time t_end: stamp ns -> positions."""
    import subprocess
    import sys
    out = {}

    def body(launcher, probe, model, log):
        def t_plant():
            with probe.lock:
                return max((m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for _, m in probe.js[-5:]),
                           default=0.0)
        probe.wait_for(lambda: t_plant() >= t_end, 90.0, f'plant time {t_end} s (lock-step)')
        with probe.lock:
            for _, m in probe.js:
                ns = m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec
                if ns <= t_end * 1e9:
                    out[ns] = np.array(m.position)
    procs = [subprocess.Popen([sys.executable, '-c', 'while 1: pass'])] if hog else []
    try:
        run_graph('hydraulic_boom', body, ready=lambda: True, timing='lockstep',
                  overrides={'vdc_controller': {'task_loops': 1}})
    finally:
        for p in procs:
            p.kill()
    return out


def test_lockstep_hydraulic_graph_is_deterministic_next_to_a_cpu_hog():
    """Lock-step: no wall-clock timer injects a plant step (vdc_controller's watchdog runs on
    simulated time), so two runs, one next to a CPU hog, publish identical joint states at every
    common stamp (1e-12) over the first 2.5 s of plant time (approach leg and the first leg)."""
    a = _lockstep_boom_states(2.5, hog=False)
    b = _lockstep_boom_states(2.5, hog=True)
    common = sorted(set(a) & set(b))
    # the probe may match the graph after the plant started (DDS discovery under load) and may
    # miss a few messages (publisher depth 10): >= 300 common stamps of the 2500
    assert len(common) >= 300, (len(common), len(a), len(b))
    diff = max(np.abs(a[k] - b[k]).max() for k in common)
    moved = max(np.abs(a[k] - a[common[0]]).max() for k in common)
    print(f'\n{len(common)} common stamps, max difference {diff:.1e}, motion {moved:.3f}')
    assert moved > 1e-3                                 # the boom really moved
    assert diff < 1e-12, diff


@pytest.mark.xfail(strict=False, reason='SEA on the control loop is not robust in real time yet (the '
                   'exactly linearising law diverges during moves in most runs; docs/recursive_id_sea.md, '
                   '"ROS graph"); the config defaults to lock-step')
def test_planar_3rrr_sea_moves_between_goals_in_wall_clock_time():
    """SEA-PKM in real time: compiled plant (75-87 us per 1 ms step), trajectory_node turning
    goals on /goal into sin^2-jerk moves (100 Hz samples with derivatives up to snap) and
    sea_controller = the law sea_flatness in the control loop (30 us), each state answered with
    the sample carried to its stamp by its 4th-order Taylor series. Goals +-5 cm: 95 % of the EE
    error samples below the demo's 10 mm bound and all below the 0.1 m move (never diverges),
    back below 0.1 mm at rest; real-time factor >= 0.5. Then the plant is frozen (SIGSTOP): the
    loop's safe command (-hold_damping x motor velocity of the last state) within state_timeout
    (0.1 s) + two periods + a 0.3 s scheduling margin, never the last torque."""
    from geometry_msgs.msg import PointStamped
    spec = DEMOS['planar_3rrr_sea']

    def setup(probe):
        probe.subscribe('serr', Float64MultiArray, '/sea_controller/tracking_error')
        probe.subscribe('rtf', Float64, '/sim_node/real_time_factor')
        probe.subscribe('cmd', Float64MultiArray, '/effort_controller/commands')

    def body(launcher, probe, model, out):
        from robot_dynamics.nodes._common import QOS_COMMAND
        pub = probe.node.create_publisher(PointStamped, spec.goal_topic, QOS_COMMAND)
        probe.wait_for(lambda: pub.get_subscription_count() > 0 and len(probe.js) > 100
                       and len(probe.serr) > 100, 30.0, 'trajectory_node goal input, joint states, control')

        def goal(x, y):
            m = PointStamped()
            m.point.x, m.point.y = x, y
            pub.publish(m)
        t0 = time.monotonic()
        for g, wait in (((0.05, 0.0), 1.5), ((-0.05, 0.0), 2.5)):   # a 0.5 s move, then rest
            goal(*g)
            time.sleep(wait)
        with probe.lock:
            e = [(t, np.hypot(*m.data[:2])) for t, m in probe.serr if t > t0]
            rtf = [m.data for _, m in probe.rtf]
        err = np.array([v for _, v in e])
        rest = [v for _, v in e[-50:]]                       # the last samples received
        print(f'\nSEA real time: {len(err)} samples, max {err.max() * 1e3:.3f} mm, p95 '
              f'{np.percentile(err, 95) * 1e3:.3f} mm, rest {max(rest):.1e} m, RTF {rtf[-3:]}')
        # >= 75 Hz of error samples over the 4 s (idle ~800 Hz); the demo's bound for 95 %; back at
        # rest below 0.1 mm
        assert len(err) > 300 and np.percentile(err, 95) < spec.bound, (len(err), np.percentile(err, 95))
        assert err.max() < 0.1, err.max()                   # never diverges (0.1 m = the move)
        assert max(rest) < 1e-4, max(rest)
        assert rtf and min(rtf[-2:]) >= 0.5, rtf
        # stale input: the loop's safe command
        sim = launcher.procs['sim_node']
        os.kill(sim.pid, signal.SIGSTOP)
        t_stop = time.monotonic()
        try:
            time.sleep(0.7)
            with probe.lock:
                js_last = probe.js[-1][1]
                cmds = [(t, np.array(m.data)) for t, m in probe.cmd if t > t_stop]
        finally:
            os.kill(sim.pid, signal.SIGCONT)
        q, qd = _js_q(model, js_last)
        safe_cmd = -0.2 * qd[[model.joint_index(f'arm{k}_motor') for k in (1, 2, 3)]]
        safe = [(t, c) for t, c in cmds if np.allclose(c, safe_cmd, rtol=1e-9, atol=1e-12)]
        assert safe, (safe_cmd, cmds[-3:])
        print(f'first safe command {(safe[0][0] - t_stop) * 1e3:.0f} ms after the plant froze')
        assert safe[0][0] - t_stop < 0.1 + 0.008 + 0.3, safe[0][0] - t_stop     # 2 periods at 250 Hz
        assert all(np.allclose(c, safe_cmd, rtol=1e-9, atol=1e-12) for t, c in cmds if t > safe[0][0])
        assert 'state stale' in out.getvalue()
    run_graph('planar_3rrr_sea', body, ready=lambda: True, setup=setup, timing='realtime')
