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

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from std_msgs.msg import Float64, Float64MultiArray  # noqa: E402

import robot_dynamics as rd  # noqa: E402
from robot_dynamics.control import hold_command  # noqa: E402
from robot_dynamics.tools.demos import DEMOS, scalar_error  # noqa: E402
from ros_helpers import run_graph, stamp_matched_xz_error  # noqa: E402

pytestmark = pytest.mark.ros


def _js_q(model, msg):
    names = list(msg.name)
    q = np.array([msg.position[names.index(j)] for j in model.joint_names])
    qd = np.array([msg.velocity[names.index(j)] for j in model.joint_names])
    return q, qd


def test_irsbot2_tracks_in_wall_clock_time():
    """IRSBot-2 (16 joints, 5 loops): trajectory -> ik_node -> controller -> sim_node in real time.
    Always (any load): the graph runs in wall time (> 100 stamp-matched samples in 5 s), the
    circle is followed (x range > 40 mm of its 60 mm) and every sample is finite. Tracking, only
    when the simulated plant kept real time over the observed 5 s (every real-time factor report
    >= 0.95): 95 % of the samples within 3x the demo's 5 mm and the maximum below the circle's
    60 mm diameter (never diverges). A plant that slips runs the wall-clock reference faster than
    its own physics (RTF 0.6: 1.7x the speed, 2.8x the acceleration) and no tracking bound is
    meaningful: a CI run with RTF 0.58-0.84 had p95 42 mm, max 47 mm, recovering to 1 mm.
    Measured max 0.7-1.5 mm idle, 11.6 mm once in a full-suite run."""

    def setup(probe):
        probe.subscribe('rtf', Float64, '/sim_node/real_time_factor')

    def body(launcher, probe, model, out):
        time.sleep(5.0)
        t_end = time.monotonic()
        with probe.lock:
            poses = [
                (m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec, m.pose.position) for t, m in probe.pose[-250:]
            ]
            refs = [(m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec, m.pose.position) for t, m in probe.ref[-500:]]
            rtf = [m.data for t, m in probe.rtf if t > t_end - 5.0]  # the observed window
        err = stamp_matched_xz_error(poses, refs)
        kept_up = bool(rtf) and min(rtf) >= 0.95
        print(
            f'\nirsbot2 real time: {len(err)} matched, max {err.max() * 1e3:.3f} mm, '
            f'p95 {np.percentile(err, 95) * 1e3:.3f} mm, RTF {np.round(rtf, 2).tolist()}'
            + ('' if kept_up else ': the plant did not keep real time, tracking not judged')
        )
        assert len(err) > 100 and np.all(np.isfinite(err))
        xs = np.array([p.x for _, p in poses])
        assert np.ptp(xs) > 0.04  # the circle (0.06 m wide) is followed
        if kept_up:
            # 95 % within 3x the demo's bound; no divergence: max below the circle's diameter
            assert np.percentile(err, 95) < 3 * DEMOS['irsbot2'].bound, np.percentile(err, 95)
            assert err.max() < 0.06, err.max()

    run_graph('irsbot2', body, setup=setup, timing='realtime', timeout=90.0)


# irsbot2_t1's real-time graph (1 kHz plant, 500 Hz controller, 250 Hz constraint-embedding IK,
# all under SCHED_FIFO) needs a machine on which sim_node's plant step (measured in-process by
# _plant_step_seconds) takes at most this long. On a 2-core machine 3x slower than the CI machine
# of the measurements below (bench_rigid_step five_bar 161 us against 52.5 us) the step took
# 250 us: the reference chain fell behind the plant clock without end (the controller on its safe
# command, the plant on hold) and the FIFO control path filled both cores, starving the probe.
T1_PLANT_STEP_LIMIT = 150e-6


# start-up deadline of a real-time graph (its nodes' imports, cached kernels and DDS discovery
# next to whatever else runs on the machine), separate from the measured motion that follows
GRAPH_START_DEADLINE = 120.0
# [s] state-to-command latency (p99) the hydraulic valve loop tolerates: 5 plant steps of 1 ms
LATENCY_TOLERATED = 5e-3


def _plant_step_seconds(robot):
    """Median wall time [s] of one step of ``robot``'s sim_node plant under its hold command
    (5 passes of 200 steps after 50 warm-up steps), in this process."""
    from robot_dynamics.ros.bringup import load_bringup
    from robot_dynamics.plants.runner import runner_from_params, sim_params

    b = load_bringup(robot)
    spec = next(s for s in b.nodes if s.executable == 'sim_node')
    model = rd.load_model(b.urdf, loops=b.loops)
    P = {k: v[0] for k, v in sim_params(model).items()}
    P.update(spec.parameters)
    runner = runner_from_params(model, P)
    tau = runner.hold_effort()
    for _ in range(50):
        runner.plant.step(tau)
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(200):
            runner.plant.step(tau)
        times.append((time.perf_counter() - t0) / 200)
    return float(np.median(times))


def test_irsbot2_t1_tracks_in_wall_clock_time_on_the_plant_clock():
    """IRSBot-2 on T1 (10 G peaks, 2.4 m/s): trajectory (0.3 s preview) -> ik_node -> controller
    (500 Hz) -> sim_node in wall-clock time on the plant clock (sim_node waits for each period's
    command, so a loaded machine slows simulated time instead of running the reference away from
    the plant). Over 2 s of plant time after t = 0.3 s (six T1 strokes): > 50 stamp-matched poses,
    all finite, the tool inside the stroke's span (never diverges).

    When the reference chain kept pace with the plant clock (the controller never found its
    reference stale): the 0.25 m stroke covered, p95 of the tool error within the demo's 5 mm and
    its maximum within 3x (the issue's bound under load). Measured max 0.99-2.8 mm idle, 1.0-2.3 mm
    next to two CPU hogs, once 11.5 mm (p95 3.1 mm).

    When it did not (a machine too slow for ik_node's 250 Hz constraint-embedding IK: on a 3x
    slower CI machine the plant clock slowed to RTF 0.6-0.9, the reference still fell behind it
    and the control path under SCHED_FIFO filled both cores): the graph fails safe, as asserted:
    the controller reports the stale reference and sim_node holds; and it must be the machine
    (real-time factor reports below 0.95), never a chain that falls behind a plant that keeps real
    time (samples held in arrival order did that: a 0.1 s "gap" around a state, the safe hold at
    10 G, 386 mm). On a machine too slow for the graph at all (T1_PLANT_STEP_LIMIT) the test is
    skipped with the measured step (lock-step T1 over the graph: test_ros_irsbot2_t1.py)."""
    step = _plant_step_seconds('irsbot2_t1')
    if step > T1_PLANT_STEP_LIMIT:
        pytest.skip(
            f'this machine is too slow for irsbot2_t1 in real time: its plant step takes '
            f'{step * 1e6:.0f} us (> {T1_PLANT_STEP_LIMIT * 1e6:.0f} us, see T1_PLANT_STEP_LIMIT); '
            'T1 over the graph is tested in lock-step in test_ros_irsbot2_t1.py'
        )
    seen = {}

    def setup(probe):
        probe.subscribe('diag', DiagnosticArray, '/diagnostics')
        probe.subscribe('rtf', Float64, '/sim_node/real_time_factor')
        seen['probe'] = probe

    def body(launcher, probe, model, out):
        # the tool pose by forward kinematics of sim_node's joint states, in the test: the
        # control path runs under SCHED_FIFO, and on a machine it saturates, kinematics_node
        # (an observer at normal priority) published its first pose after 53 s
        from types import SimpleNamespace
        from robot_dynamics.algorithms.kinematics import frame_placement

        def plant_t():
            with probe.lock:
                return max((m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for _, m in probe.js[-5:]), default=0.0)

        probe.wait_logged(lambda: plant_t() > 2.4, 90.0, '2.4 s of plant time', out, ('js', 'ref'))
        with probe.lock:
            states = [(m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec, m) for t, m in probe.js]
            refs = [(m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec, m.pose.position) for t, m in probe.ref]
            stale = [
                kv.value
                for _, m in probe.diag
                for st in m.status
                if 'dynamics_node' in st.name
                for kv in st.values
                if kv.key == 'stale_reference'
            ]
            rtf = [m.data for _, m in probe.rtf]
        poses = []
        for t, m in states:
            if 0.3 <= t <= 2.3:
                x, y, z = frame_placement(model, _js_q(model, m)[0], 'tool')[:3, 3]
                poses.append((t, SimpleNamespace(x=x, y=y, z=z)))
        err = stamp_matched_xz_error(poses, refs)
        kept_pace = bool(stale) and stale[-1] == '0'
        print(
            f'\nirsbot2_t1 real time: {len(err)} matched, max {err.max() * 1e3:.3f} mm, '
            f'p95 {np.percentile(err, 95) * 1e3:.3f} mm, stale references {stale[-1:]}, RTF '
            f'{np.round(rtf, 2).tolist()}'
            + ('' if kept_pace else ': the reference chain did not keep pace with the plant clock, tracking not judged')
        )
        assert len(err) > 50 and np.all(np.isfinite(err))
        xs = [p.x for _, p in poses]
        rx = [r.x for _, r in refs]
        assert min(rx) - 0.05 < min(xs) and max(xs) < max(rx) + 0.05, (min(xs), max(xs), min(rx), max(rx))
        if kept_pace:
            assert np.ptp(xs) > 0.2  # T1's 0.25 m stroke
            bound = DEMOS['irsbot2_t1'].bound
            assert np.percentile(err, 95) < bound, np.percentile(err, 95)
            assert err.max() < 3 * bound, err.max()
        else:
            log = out.getvalue()
            assert 'reference stale' in log and 'hold' in log, log[-3000:]
            assert rtf and min(rtf) < 0.95, rtf  # the machine, not the chain

    # ready: the plant's joint states flow (the tracking error flows only while the reference is
    # fresh)
    run_graph(
        'irsbot2_t1', body, setup=setup, timing='realtime', timeout=120.0, ready=lambda: len(seen['probe'].js) > 10
    )


def test_series_parallel_3dof_tracks_in_wall_clock_time():
    """Inertia-partitioning controller at 200 Hz in real time (compiled model terms: 62 us per
    step). Bound: the demo's 5e-3 (rad | m) on e after 3 s (measured 1.5e-4 to 1.1e-3, idle and
    next to a CPU hog, since trajectory_node starts the profile with the controller's first
    command: start_topic), judged when the plant kept real time over the observed window (every
    real-time factor report >= 0.95; with another graph beside it the plant ran at RTF 0.87-0.92
    and e reached 3.3e-2: a slipping plant runs the wall-clock reference faster than its own
    physics). Always: > 50 samples, all finite, RTF >= 0.5."""
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
            rtf = [m.data for t, m in probe.rtf if t > t0 + 3.0]  # the observed window
        e = [scalar_error(spec, m.data, m.layout.dim[0].label) for _, m in d]
        kept_up = bool(rtf) and min(rtf) >= 0.95
        print(
            f'\nseries_parallel_3dof real time: {len(e)} samples, max e {max(e):.2e}, RTF '
            f'{np.round(rtf, 2).tolist()}'
            + ('' if kept_up else ': the plant did not keep real time, tracking not judged')
        )
        assert len(e) > 50 and np.all(np.isfinite(e))
        assert rtf and min(rtf) >= 0.5, rtf
        if kept_up:
            assert max(e) < spec.bound, max(e)

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
            with probe.lock:  # every state published before the freeze is in
                js_last = [m for _, m in probe.js[-5:]]  # by now (the probe may lag under load)
                cmds = [(t, np.array(m.data)) for t, m in probe.cmd if t > t_stop]
        finally:
            os.kill(sim.pid, signal.SIGCONT)
        # the hold at the controller's last state: one of the last states published before the
        # freeze (once, 2 of 3 runs matched an earlier state than the probe's last; a possible
        # cause, not proven: SIGSTOP between delivering the last state to the probe and to the
        # controller)
        holds = [hold_command(model, *_js_q(model, m), 0.0)[model.actuated_indices] for m in js_last]
        safe = [(t, c) for t, c in cmds if any(np.allclose(c, h, rtol=1e-6, atol=1e-6) for h in holds)]
        assert safe, (holds, cmds[-3:])
        hold = safe[0][1]
        delay = safe[0][0] - t_stop
        print(f'\nfirst safe command {delay * 1e3:.0f} ms after the plant froze; hold {hold}')
        assert delay < 0.1 + 0.02 + 0.3, delay
        assert all(np.allclose(c, hold, rtol=1e-6, atol=1e-6) for t, c in cmds if t > safe[0][0])
        assert 'state stale' in out.getvalue()
        n = len(probe.err)
        probe.wait_for(lambda: len(probe.err) > n + 20, 10.0, 'control resuming')

    run_graph('five_bar', body, setup=setup, timing='realtime')


def test_hydraulic_boom_tracks_the_task_in_wall_clock_time():
    """hydraulic_boom (the config's default timing: realtime): sim_node (1 kHz RK4) ->
    trajectory_node (boom_task, 200 Hz) -> vdc_controller (controller_node + law vdc, one
    hydraulic state message per step) in wall-clock time, one A-B-C-D loop, 7 s observed.
    Always (any load): the controller answers in real time (>= 300 diagnostics samples of 100 Hz
    over 7 s) and every command is finite and inside the valve limits (+-10 V), whatever the
    plant does. Tracking, only when the plant kept up (every reported real-time factor >= 0.95):
    the valve loop tolerates only ~5-8 plant steps of state -> command delay
    (docs/hydraulic_vdc.md: offline 40 mm at 5 steps, unstable at 8), so on a machine that
    cannot give the graph its ~1.9 cores it diverges and no tracking bound is meaningful; when
    it kept up: the tool error's maximum below 0.1 m (the 0.3-0.4 m legs: never diverges),
    chamber pressures (controller diagnostics, 100 Hz) inside (0, p_s + 10 %), and, when the
    controller kept up too (answered >= 95 % of the states, its /diagnostics counters; state-to-command
    latency p99 within LATENCY_TOLERATED) and the plant ran at full speed (every RTF report >= 0.98), the tool
    error's 95th percentile below 3x the demo's 10 mm. Measured numbers: docs/hydraulic_vdc.md."""
    spec = DEMOS['hydraulic_boom']

    def setup(probe):
        probe.subscribe('diag', Float64MultiArray, spec.topic)
        probe.subscribe('rtf', Float64, '/sim_node/real_time_factor')
        probe.subscribe('cmd', Float64MultiArray, '/valve_controller/commands')
        probe.subscribe('loop', DiagnosticArray, '/diagnostics')

    def body(launcher, probe, model, out):
        probe.wait_for(lambda: len(probe.diag) > 10, 60.0, 'vdc_controller diagnostics')
        with probe.lock:
            t0 = probe.diag[0][0]
        probe.wait_for(lambda: probe.diag[-1][0] > t0 + 8.0, 30.0, '8 s of control')
        with probe.lock:
            d = [m for t, m in probe.diag if t > t0 + 1.0]
            rtf = [m.data for t, m in probe.rtf if t > t0 + 1.0]  # after the start-up
            cmds = np.array([m.data for t, m in probe.cmd])
            loop = [
                {kv.key: kv.value for kv in st.values}
                for _, m in probe.loop
                for st in m.status
                if 'vdc_controller' in st.name
            ]
        labels = d[-1].layout.dim[0].label.split(',')
        e = np.array([scalar_error(spec, m.data, m.layout.dim[0].label) for m in d])
        ip = [labels.index(f'{c}/{k}') for c in ('lift_cyl', 'tilt_cyl') for k in ('p_a', 'p_b')]
        P = np.array([[m.data[i] for i in ip] for m in d])
        kept_up = bool(rtf) and min(rtf) >= 0.95
        # the share of the plant's states the controller answered (its own counters, last report)
        answered = (
            1.0 - float(loop[-1]['skipped_states']) / max(float(loop[-1]['states']), 1.0) if loop else float('nan')
        )
        # the controller's state-to-command latency (state age at the command + compute), p99 of its
        # window: the valve loop tolerates ~5 plant steps (docs/hydraulic_vdc.md)
        lat99 = float(loop[-1].get('latency_p99', 'nan')) if loop else float('nan')
        print(
            f'\nhydraulic_boom real time: {len(e)} samples, max e {e.max() * 1e3:.2f} mm, p95 '
            f'{np.percentile(e, 95) * 1e3:.2f} mm, p [{P.min() / 1e5:.1f}, {P.max() / 1e5:.1f}] bar, '
            f'RTF {np.round(rtf, 2).tolist()}, states answered {answered:.1%}, state-to-command '
            f'latency p99 {lat99 * 1e3:.2f} ms'
            + ('' if kept_up else ': the plant did not keep up, tracking not judged')
        )
        assert len(e) > 300, len(e)
        assert len(cmds) > 100 and np.all(np.isfinite(cmds)) and np.abs(cmds).max() <= 10.0
        if kept_up:
            # the tracking bound only when the controller kept up too: with the plant at RTF
            # >= 0.97 the controller answered 75 % of the states in a CI run and the tool error's
            # p95 reached 42 mm (the valve loop and skipped states: docs/control_loop.md); the boom
            # must still never diverge
            # and the plant ran at full speed throughout (an RTF report of 0.95 averages over a
            # second that may hide tens of milliseconds without a step: the valve loop's delay)
            full_speed = answered >= 0.95 and lat99 <= LATENCY_TOLERATED and min(rtf) >= 0.98
            if full_speed:
                assert np.percentile(e, 95) < 3 * spec.bound, np.percentile(e, 95)
            # never diverges: within 0.1 m at full speed (measured 28-39 mm at RTF 0.99-1.0); a
            # one-second RTF report of 0.97 can hide stalls after which the tool lags by 104 mm
            # (169 mm at 0.93), so below full speed the bound is 0.3 m
            assert e.max() < (0.1 if full_speed else 0.3), e.max()
            assert P.min() > 0.0 and P.max() < 1.1 * 185e5, (P.min(), P.max())

    run_graph(
        'hydraulic_boom',
        body,
        ready=lambda: True,
        setup=setup,
        timing='realtime',
        overrides={'trajectory_node': {'task_loops': 1}},
    )


def test_vdc_controller_closes_the_valves_on_stale_input_in_real_time():
    """hydraulic_boom in real time: sim_node frozen -> the loop's staleness check (vdc_controller's
    watchdog timer; the state's age on the wall clock, although the node clock is the plant's
    /clock, which stops with the plant) publishes 0 V and keeps the valves closed
    (the delay, state_timeout + two periods, is asserted in test_ros_faults.py)."""

    def setup(probe):
        probe.subscribe('cmd', Float64MultiArray, '/valve_controller/commands')

    def body(launcher, probe, model, out):
        probe.wait_logged(lambda: len(probe.cmd) > 200, GRAPH_START_DEADLINE, 'valve commands', out, ('cmd',))
        sim = launcher.procs['sim_node']
        with probe.lock:
            n0 = len(probe.cmd)
        os.kill(sim.pid, signal.SIGSTOP)
        try:
            # the probe may be behind the 1 kHz command stream (arrival times at the probe are
            # not the controller's): wait until it received the valves-closed command and has
            # drained its queue; the timing of the safe command (state_timeout + 2 periods) is
            # asserted where it is measurable, test_ros_faults.py (vdc_controller) and
            # test_control_loop.py
            is_zero = lambda c: max(abs(v) for v in c) == 0.0  # noqa: E731

            def closed():  # the newest 100 commands received are all 0 V
                with probe.lock:
                    tail = [m.data for _, m in probe.cmd[n0:][-100:]]
                return len(tail) == 100 and all(is_zero(c) for c in tail)

            probe.wait_for(closed, 20.0, '0 V for 100 commands in a row')
            time.sleep(1.0)
            with probe.lock:
                cmds = [list(m.data) for _, m in probe.cmd[n0:]]
        finally:
            os.kill(sim.pid, signal.SIGCONT)
        # and it stays closed: nothing but 0 V after that (no state, no command from anything
        # but the staleness check). Earlier 0 V commands may come from before the freeze (a
        # controller starved by a CPU hog declares its input stale too), and states published
        # before the freeze may still be answered: which received command answered what is not
        # observable at a lagging probe
        last_live = max((i for i, c in enumerate(cmds) if not is_zero(c)), default=-1)
        # the 0 V commands come from the watchdog timer (timer_rate 200 Hz; on the plant clock no
        # reference arrives while the plant is frozen): 1 s at >= 100 Hz on a loaded machine
        assert len(cmds) - last_live - 1 >= 100 + 100, (len(cmds), last_live)
        # the controller's log line travels through its output pipe to the launcher
        probe.wait_logged(
            lambda: 'state stale' in out.getvalue(), 5.0, "the controller's 'state stale' log", out, ('cmd',)
        )

    run_graph(
        'hydraulic_boom',
        body,
        ready=lambda: True,
        setup=setup,
        timing='realtime',
        overrides={'trajectory_node': {'task_loops': 1}},
    )


def test_planar_3rrr_sea_moves_between_goals_in_wall_clock_time():
    """SEA-PKM in real time: compiled plant (75-87 us per 1 ms step), trajectory_node turning
    goals on /goal into sin^2-jerk moves (100 Hz samples with derivatives up to snap) and
    sea_controller = the law sea_flatness in the control loop (30 us), each state answered with
    the sample carried to its stamp by its 4th-order Taylor series. Goals +-5 cm (when the plant kept real time): 95 % of the EE
    error samples below the demo's 10 mm bound and all below the 0.1 m move (never diverges),
    back below 0.1 mm at rest; real-time factor >= 0.5. Then the plant is frozen (SIGSTOP): the
    loop's safe command (-hold_damping x motor velocity of the last state), and from then on
    nothing else. Its delay (state_timeout + two periods) is asserted where it is measurable,
    test_ros_faults.py (sea_controller) and test_control_loop.py: at this probe the arrival time
    is the probe's, which may lag the controller (in one fresh-clone run no command had arrived
    0.7 s after the freeze), so here the probe waits up to 10 s for it."""
    from geometry_msgs.msg import PointStamped

    spec = DEMOS['planar_3rrr_sea']

    def setup(probe):
        probe.subscribe('serr', Float64MultiArray, '/sea_controller/tracking_error')
        probe.subscribe('rtf', Float64, '/sim_node/real_time_factor')
        probe.subscribe('cmd', Float64MultiArray, '/effort_controller/commands')

    def body(launcher, probe, model, out):
        from robot_dynamics.ros._common import QOS_COMMAND

        pub = probe.node.create_publisher(PointStamped, spec.goal_topic, QOS_COMMAND)
        # start-up, not measured: the goal input matched and the loop running (states and
        # tracking errors flowing); on a loaded slow machine the four nodes' start (imports,
        # cached kernels, DDS discovery) took more than 30 s, hence its own deadline
        probe.wait_logged(
            lambda: pub.get_subscription_count() > 0 and len(probe.js) > 100 and len(probe.serr) > 100,
            GRAPH_START_DEADLINE,
            'trajectory_node goal input, joint states, control',
            out,
            ('js', 'serr', 'cmd', 'rtf'),
        )

        def goal(x, y):
            m = PointStamped()
            m.point.x, m.point.y = x, y
            pub.publish(m)

        t0 = time.monotonic()
        for g, wait in (((0.05, 0.0), 1.5), ((-0.05, 0.0), 2.5)):  # a 0.5 s move, then rest
            goal(*g)
            time.sleep(wait)
        with probe.lock:
            e = [(t, np.hypot(*m.data[:2])) for t, m in probe.serr if t > t0]
            rtf = [m.data for _, m in probe.rtf]
            window = [m.data for t, m in probe.rtf if t > t0 + 1.0]  # 1 Hz reports of the moves
        err = np.array([v for _, v in e])
        rest = [v for _, v in e[-50:]]  # the last samples received
        kept_up = bool(window) and min(window) >= 0.95
        print(
            f'\nSEA real time: {len(err)} samples, max {err.max() * 1e3:.3f} mm, p95 '
            f'{np.percentile(err, 95) * 1e3:.3f} mm, rest {max(rest):.1e} m, RTF {np.round(window, 2).tolist()}'
            + ('' if kept_up else ': the plant did not keep real time, tracking not judged')
        )
        # >= 75 Hz of error samples over the 4 s (idle ~800 Hz); back at rest below 0.1 mm; the
        # demo's bound for 95 % when the plant kept real time (a plant that slips runs the
        # wall-clock goal moves faster than its own physics: a 3x slower machine, RTF 0.73-0.90,
        # p95 15-30 mm, max 27 mm, at rest 1e-10 m)
        assert len(err) > 300, len(err)
        if kept_up:
            assert np.percentile(err, 95) < spec.bound, np.percentile(err, 95)
        assert err.max() < 0.1, err.max()  # never diverges (0.1 m = the move)
        assert max(rest) < 1e-4, max(rest)
        assert rtf and min(rtf[-2:]) >= 0.5, rtf
        # stale input: the loop's safe command, with the plant frozen in the middle of a move (at
        # rest the live command and the safe one are both ~0: they could not be told apart)
        goal(0.0, 0.05)
        time.sleep(0.25)
        sim = launcher.procs['sim_node']
        os.kill(sim.pid, signal.SIGSTOP)
        t_stop = time.monotonic()
        try:
            time.sleep(0.3)  # the last states published before the freeze are in
            with probe.lock:
                js_last = probe.js[-1][1]
            q, qd = _js_q(model, js_last)
            safe_cmd = -0.2 * qd[[model.joint_index(f'arm{k}_motor') for k in (1, 2, 3)]]
            assert np.abs(safe_cmd).max() > 1e-3, safe_cmd  # moving: a distinct command
            is_safe = lambda c: np.allclose(c, safe_cmd, rtol=1e-9, atol=1e-12)  # noqa: E731

            def safe_tail():  # the newest 50 commands received are all the safe one
                with probe.lock:
                    tail = [np.array(m.data) for t, m in probe.cmd if t > t_stop][-50:]
                return len(tail) == 50 and all(is_safe(c) for c in tail)

            probe.wait_for(safe_tail, 10.0, 'the safe command 50 times in a row')
            time.sleep(0.5)
            with probe.lock:
                cmds = [(t, np.array(m.data)) for t, m in probe.cmd if t > t_stop]
        finally:
            os.kill(sim.pid, signal.SIGCONT)
        first = next(t for t, c in cmds if is_safe(c))
        live = [c for t, c in cmds if t < first]
        print(
            f'first safe command received {(first - t_stop) * 1e3:.0f} ms after the plant froze '
            f'({len(live)} live commands received before it), safe {np.round(safe_cmd, 4).tolist()}'
        )
        # measured 102-103 ms (state_timeout 0.1 s); 2 s: the probe's own lag on a loaded machine
        assert first - t_stop < 2.0, first - t_stop
        # and nothing but the safe command after it (no state, nothing else to answer)
        assert all(is_safe(c) for t, c in cmds if t > first)
        assert 'state stale' in out.getvalue()

    run_graph('planar_3rrr_sea', body, ready=lambda: True, setup=setup, timing='realtime')
