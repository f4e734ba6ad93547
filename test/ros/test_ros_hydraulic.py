"""Real ROS 2 graph of the seed 001 hydraulic boom: sim_node (plant 'hydraulic', lock-step) +
trajectory_node (mode boom_task: the A-B-C-D task as a segment-joint reference) + vdc_controller
(controller_node + law vdc, one hydraulic state message per step) started by the built-in launcher from
config/hydraulic_boom.yaml (one loop instead of two; the approach and two legs are observed). The test process
observes /joint_states, /hydraulics/cylinder_states, /valve_controller/commands and the
controller diagnostics. Asserts the tracking bounds over real topics (tool point recomputed here
from /joint_states and the task re-generated here), the passive joints published and the
loops closed, cylinder states consistent with the joints and pressures inside [p_r, p_s],
no valve command while the lock-step plant is paused (SIGSTOP: simulated time stands still),
a malformed hydraulic state (NaN pressure) rejected with a warning, and a clean shutdown. Bounds: docs/hydraulic_vdc.md.

Determinism: two lock-step runs of the graph, one next to a CPU hog, publish the same joint states,
equal to the offline closed loop (test/boom_offline.py)."""

import os
import signal
import time

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')

from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402

import robot_dynamics as rd  # noqa: E402
from robot_dynamics.ros.bringup import load_bringup  # noqa: E402
from robot_dynamics.control.vdc import quintic_legs  # noqa: E402
from robot_dynamics.plants.hydraulic import hydraulic_params_from_model  # noqa: E402
from robot_dynamics.ros._common import QOS_STATE  # noqa: E402
from robot_dynamics.algorithms.vdc import segment_q, structure_from_model  # noqa: E402
from ros_helpers import run_graph  # noqa: E402

pytestmark = pytest.mark.ros

# approach leg p0 -> A and the legs A -> B, B -> C (2 s each): the graph runs in lock-step, so it
# reproduces the offline closed loop of test_hydraulics exactly (the full loop measured 3.150 mm
# max there and here); the observed window is cut to keep the test well under 40 s
T_END = 6.0


def _stamp(m):
    return m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec


OVERRIDES = {'trajectory_node': {'task_loops': 1}}


def test_hydraulic_boom_graph_tracks_abcd_and_closes_valves_on_stale_input():
    b = load_bringup('hydraulic_boom', overrides=OVERRIDES, timing='lockstep')
    cfg = {s.name: s.parameters for s in b.nodes}['trajectory_node']

    def setup(probe):
        probe.subscribe('diag', Float64MultiArray, '/vdc_controller/diagnostics')

    def body(launcher, probe, model, out):
        st = structure_from_model(model)
        hp = hydraulic_params_from_model(model, st)
        probe.wait_for(lambda: len(probe.diag) > 5, 60.0, 'vdc_controller diagnostics')
        labels = probe.diag[-1][1].layout.dim[0].label.split(',')
        col = {n: i for i, n in enumerate(labels)}

        def t_ctrl():
            with probe.lock:
                return probe.diag[-1][1].data[col['t']]

        probe.wait_for(lambda: t_ctrl() >= T_END - 0.5, 45.0, 'the A-B-C-D legs (lock-step)')
        # the 1 kHz cylinder states and commands are recorded only from here on (the probe shares
        # the two cores with the lock-step loop)
        probe.subscribe('cyl', JointState, '/hydraulics/cylinder_states')
        probe.subscribe('cmd', Float64MultiArray, '/valve_controller/commands')
        probe.wait_for(lambda: t_ctrl() >= T_END + 0.3, 20.0, 'the A-B-C-D legs (lock-step)')
        dead = launcher.poll()
        assert dead is None, f'node {dead} died:\n{out.getvalue()[-3000:]}'
        with probe.lock:
            D = np.array([m.data for _, m in probe.diag])
            js = {round(_stamp(m), 6): m for _, m in probe.js}
            cyl = [m for _, m in probe.cyl]
            cmds = np.array([m.data for _, m in probe.cmd])

        # --- tracking over real topics. The tool point is recomputed from /joint_states (matched
        # by stamp) and the task re-generated from the config, independently of the node.
        q_ref0 = segment_q(st, model.reference_q())[0]
        p0 = st.tool_pose(q_ref0)[1][[0, 2]]
        wp = np.asarray(cfg['waypoints'], float).reshape(-1, 2)
        pts = [p0] + list(wp) + [wp[0]]
        err, err_node = [], []
        for row in D:
            t = row[col['t']]
            m = js.get(round(row[col['stamp']], 6))
            if m is None or not 2.0 < t < T_END:
                continue
            Q = np.array([m.position[list(m.name).index(j)] for j in model.joint_names])
            tcp = st.tool_pose(segment_q(st, Q)[0])[1][[0, 2]]
            ref = quintic_legs(pts, [2.0] * (len(pts) - 1), t)[0]
            assert np.abs(ref - row[[col['ref_x'], col['ref_z']]]).max() < 1e-9
            err.append(np.linalg.norm(tcp - ref))
            err_node.append(row[col['e_tcp']])
        err = np.array(err)
        assert len(err) > 250, len(err)  # 100 Hz diagnostics over 4 s, few misses
        assert np.allclose(err, err_node, atol=1e-9)
        emax, erms = err.max(), np.sqrt(np.mean(err**2))
        print(f'ROS lock-step A-B-C-D: max {emax * 1e3:.3f} mm, rms {erms * 1e3:.3f} mm ({len(err)} samples)')
        # lock-step reproduces the offline closed loop (test_hydraulics: 3.150 mm max, 1.53 mm
        # RMS while moving); same bounds as the offline test
        assert emax < 4.0e-3 and erms < 2.0e-3, (emax, erms)
        U = D[:, [col[f'{c}/u'] for c in hp.names]]
        assert np.abs(U).max() < 10.0 and np.abs(cmds).max() < 10.0 and np.all(np.isfinite(cmds))
        assert not D[:, [col[f'{c}/saturated'] for c in hp.names]].any()
        assert D[:, col['step_us']].max() > 0

        # --- passive joints published, loops closed; cylinder states consistent, same stamps
        last = probe.js[-1][1]
        assert set(last.name) == set(model.joint_names) and set(model.passive) <= set(last.name)
        Q = np.array([last.position[list(last.name).index(j)] for j in model.joint_names])
        assert np.abs(rd.loop_residual(model, Q)).max() < 1e-9
        names = hp.names
        # one complete hydraulic state per step: every joint as on /joint_states, then the cylinders
        assert list(cyl[-1].name) == list(model.joint_names) + names + [
            f'{c}/{k}' for c in names for k in ('p_a', 'p_b', 'u')
        ]
        nq = model.nq
        matched = 0
        for m in cyl[-1000:]:  # (the probe may miss samples of either topic)
            j = js.get(round(_stamp(m), 6))
            if j is None:
                continue
            matched += 1
            Qj = np.array([j.position[list(j.name).index(n)] for n in model.joint_names])
            x = st.stroke(segment_q(st, Qj)[0])
            assert np.abs(np.array(m.position[nq : nq + 2]) - x).max() < 1e-9
            assert list(m.position[:nq]) == list(j.position)  # the same joint state
            p = np.array(m.position[nq + 2 :])[[0, 1, 3, 4]]
            assert np.all(p > hp.p_r) and np.all(p < hp.p_s)
        assert matched > 20, matched  # (measured 58 of 1000 in a fresh-clone CI run: a lagging probe)

        # --- lock-step: a paused plant stops simulated time, so no watchdog (node clock =
        # simulated time) and no wall-clock timer may inject a valve command (each command is a
        # plant step); the stale-input watchdog is tested in real time (test_ros_realtime.py)
        # (judged by counts, not by arrival times: the probe may lag the graph under load, so
        # commands sent before the freeze may still arrive; once they are drained, nothing more
        # may come while the plant stays paused)
        sim = launcher.procs['sim_node']
        os.kill(sim.pid, signal.SIGSTOP)
        try:
            # (a quiet 0.5 s was not enough in a fresh-clone run: the probe, next to two pytest
            # workers' graphs, stalled longer and then received 1012 queued commands; 2 s)
            def drained():
                with probe.lock:
                    return not probe.cmd or time.monotonic() - probe.cmd[-1][0] > 2.0

            probe.wait_for(drained, 30.0, 'the command stream drained after the freeze')
            with probe.lock:
                n_cmd = len(probe.cmd)
            time.sleep(1.5)
            with probe.lock:
                late = [m.data for _, m in probe.cmd[n_cmd:]]
        finally:
            os.kill(sim.pid, signal.SIGCONT)
        assert late == [], late[:5]
        n_diag = len(probe.diag)
        probe.wait_for(lambda: len(probe.diag) > n_diag + 10, 10.0, 'control resuming')

        # --- malformed hydraulic state (NaN pressure): rejected by the loop, warning
        pub = probe.node.create_publisher(JointState, 'hydraulics/cylinder_states', QOS_STATE)
        bad = JointState(name=list(cyl[-1].name), position=list(cyl[-1].position), velocity=list(cyl[-1].velocity))
        bad.position[list(bad.name).index('lift_cyl/p_a')] = float('nan')
        pub.publish(bad)
        probe.wait_for(
            lambda: "non-finite measurement 'lift_cyl/p_a'" in out.getvalue(),
            5.0,
            'warning about the malformed hydraulic state',
        )

    run_graph('hydraulic_boom', body, ready=lambda: True, overrides=OVERRIDES, setup=setup, timing='lockstep')


def _lockstep_boom_states(t_end, hog):
    """/joint_states of the lock-step boom graph up to plant time t_end: stamp ns -> positions."""
    import subprocess
    import sys

    out = {}

    def body(launcher, probe, model, log):
        def t_plant():
            with probe.lock:
                return max((m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for _, m in probe.js[-5:]), default=0.0)

        probe.wait_for(lambda: t_plant() >= t_end, 90.0, f'plant time {t_end} s (lock-step)')
        with probe.lock:
            for _, m in probe.js:
                ns = m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec
                if ns <= t_end * 1e9:
                    out[ns] = np.array(m.position)

    procs = [subprocess.Popen([sys.executable, '-c', 'while 1: pass'])] if hog else []
    try:
        run_graph(
            'hydraulic_boom',
            body,
            ready=lambda: True,
            timing='lockstep',
            overrides={'trajectory_node': {'task_loops': 1}},
        )
    finally:
        for p in procs:
            p.kill()
    return out


def test_lockstep_hydraulic_graph_is_deterministic_next_to_a_cpu_hog():
    """Lock-step (sim_node -> trajectory_node mode boom_task with sync_topic -> vdc_controller =
    controller_node + law vdc with reference_sync and wait_first_reference): no wall-clock timer
    injects a plant step (the controller's watchdog runs on simulated time, the plant does not
    start before the first reference), so two runs, one next to a CPU hog, publish the same joint
    states at every common stamp, and both equal the offline closed loop of the same plant, law,
    loop and reference (test/boom_offline.py) to 1e-9 over the first 2.5 s of plant time
    (approach leg and the first leg). Measured: the runs are bit-identical to each other and to
    the offline loop (the Newton IK of the reference is warm-started from the previous sample in
    both, so the only possible difference is a repeated t = 0 sample, < 1e-12)."""
    from boom_offline import lockstep_boom

    a = _lockstep_boom_states(2.5, hog=False)
    b = _lockstep_boom_states(2.5, hog=True)
    ref, _, _ = lockstep_boom(2.5)
    common = sorted(set(a) & set(b) & set(ref))
    # the probe may match the graph after the plant started (DDS discovery under load) and may
    # miss a few messages (publisher depth 10): >= 300 common stamps of the 2500
    assert len(common) >= 300, (len(common), len(a), len(b))
    diff = max(np.abs(a[k] - b[k]).max() for k in common)
    off = max(max(np.abs(a[k] - ref[k]).max(), np.abs(b[k] - ref[k]).max()) for k in common)
    moved = max(np.abs(a[k] - a[common[0]]).max() for k in common)
    print(
        f'\n{len(common)} common stamps, max difference {diff:.1e} between the runs, {off:.1e} '
        f'to the offline loop, motion {moved:.3f}'
    )
    assert moved > 1e-3  # the boom really moved
    assert diff < 1e-9, diff
    assert off < 1e-9, off
