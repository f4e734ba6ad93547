"""Tool load over ROS on the seed 001 hydraulic boom graph (config/hydraulic_boom.yaml, lock-step,
one loop, approach + legs observed as in test_ros_hydraulic.py).

A constant 500 N tool load (downward at the start configuration, constant in the tool frame's
axes) is published by the test on ``/sim_node/external_wrench`` (wrench ON the robot, frame_id
``tool``) and, in the first test, also on the controller's ``/tool_wrench`` (the wrench the tool
exerts on the environment: the opposite sign), re-sent every 50 ms of wall time (the controller
holds its last tool wrench: ``wrench_timeout`` raised for the run). Start-up gate (see
``_run_graph``): both nodes have the load before the first control step (the plant's log line
gives the plant time it was applied from: 0).

* load told to both: the A-B-C-D bounds of the nominal run still hold (max < 4 mm, RMS < 2 mm;
  offline with the same load 3.005 mm / 1.509 mm, the nominal values), and the plant feels the
  load: at the rest points of the quintic legs the measured piston force (controller
  diagnostics, from the published chamber pressures) minus friction matches the static balance
  WITH the load at the published configuration (within 15.8 N, offline and here: the inertia
  term 10 ms from the rest point) and differs from the no-load balance by >= 2055 N on the lift
  cylinder.
* load on the plant only: the controller (no integral action) does not compensate it: the TCP
  error over the observed leg stays above 20 mm (offline 33.0-43.3 mm; nominal < 4 mm), the
  piston force again matches the loaded static balance (offline within 12 N). Rejected inputs
  (NaN, unknown and empty frame) are warned about, and with ``external_wrench_timeout`` the load
  is dropped once the test stops re-sending it.

Numbers: docs/hydraulic_vdc.md, "Tool load".
"""

import dataclasses
import io
import os
import re
import signal
import threading
import time

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')

from geometry_msgs.msg import WrenchStamped  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402

import robot_dynamics as rd  # noqa: E402
from robot_dynamics.ros.bringup import load_bringup  # noqa: E402
from robot_dynamics.control.vdc import quintic_legs  # noqa: E402
from robot_dynamics.plants.hydraulic import friction, hydraulic_params_from_model  # noqa: E402
from robot_dynamics.ros.launcher import Launcher  # noqa: E402
from robot_dynamics.ros._common import QOS_COMMAND  # noqa: E402
from robot_dynamics.algorithms.vdc import segment_q, structure_from_model  # noqa: E402
from ros_helpers import Probe, assert_no_process_left  # noqa: E402

pytestmark = pytest.mark.ros

LOAD = 500.0  # N, downward at the start configuration (about a 51 kg payload)
APPLIED = re.compile(r"external wrench on 'tool' applied from plant t = ([0-9.]+) s")


def _stamp(m):
    return m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec


class LoadPublisher:
    """Re-sends the load every ``period`` s of wall time (stamped with the last state's stamp)."""

    def __init__(self, probe, targets, period=0.05):
        self.probe, self.targets, self.period = probe, targets, period
        self.pubs = {topic: probe.node.create_publisher(WrenchStamped, topic, QOS_COMMAND) for topic, _ in targets}
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def msg(self, frame, w):
        m = WrenchStamped()
        with self.probe.lock:
            if self.probe.js:
                m.header.stamp = self.probe.js[-1][1].header.stamp
        m.header.frame_id = frame
        (
            m.wrench.force.x,
            m.wrench.force.y,
            m.wrench.force.z,
            m.wrench.torque.x,
            m.wrench.torque.y,
            m.wrench.torque.z,
        ) = (float(v) for v in w)
        return m

    def _run(self):
        while not self._stop.is_set():
            for topic, w in self.targets:
                self.pubs[topic].publish(self.msg('tool', w))
            self._stop.wait(self.period)

    def start(self):
        self.thread.start()

    def stop(self):
        self._stop.set()
        self.thread.join(timeout=2.0)


def _run_graph(tell_controller, t_end, sim_params=None, extra=None):
    """Run the graph with the tool load; returns what the checks need.

    Start-up gate (deterministic timing): sim_node starts alone (lock-step: it does not advance
    without commands, plant time stays 0) until it logged the load; with ``tell_controller`` it
    is then paused (SIGSTOP) while trajectory_node and vdc_controller start, until the test's ``/tool_wrench``
    publisher has matched the controller's subscription (+ 0.5 s of re-sends), and resumed: both
    nodes have the load before the first control step."""
    overrides = {
        'trajectory_node': {'task_loops': 1},
        'vdc_controller': {'wrench_timeout': 1.0e3},
        'sim_node': dict(sim_params or {}),
    }
    b = load_bringup('hydraulic_boom', overrides=overrides, timing='lockstep')
    specs = {s.name: s for s in b.nodes}
    cfg = specs['trajectory_node'].parameters
    out = io.StringIO()
    launch_sim = Launcher(dataclasses.replace(b, nodes=[specs['sim_node']]), out=out)
    launch_ctrl = Launcher(dataclasses.replace(b, nodes=[specs['trajectory_node'], specs['vdc_controller']]), out=out)
    model = rd.load_model(b.urdf)
    st = structure_from_model(model)
    hp = hydraulic_params_from_model(model, st)
    q_ref0 = segment_q(st, model.reference_q())[0]
    R0 = st.tool_pose(q_ref0)[0]
    w = np.r_[R0.T @ np.array([0.0, 0.0, -LOAD]), 0.0, 0.0, 0.0]  # on the robot, tool axes
    probe = Probe(model)
    probe.subscribe('diag', Float64MultiArray, '/vdc_controller/diagnostics')
    targets = [('/sim_node/external_wrench', w)]
    if tell_controller:
        targets.append(('/tool_wrench', -w))  # what the tool exerts on the environment
    loads = LoadPublisher(probe, targets)
    loads.start()
    stopped = None
    try:
        launch_sim.start()
        probe.wait_for(lambda: APPLIED.search(out.getvalue()), 60.0, 'sim_node applying the load')
        if tell_controller:
            stopped = launch_sim.procs['sim_node'].pid
            os.kill(stopped, signal.SIGSTOP)
            launch_ctrl.start()
            probe.wait_for(
                lambda: loads.pubs['/tool_wrench'].get_subscription_count() > 0,
                60.0,
                'vdc_controller subscribing tool_wrench',
            )
            time.sleep(0.5)
            os.kill(stopped, signal.SIGCONT)
            stopped = None
        else:
            launch_ctrl.start()
        probe.wait_for(lambda: len(probe.diag) > 5, 60.0, 'vdc_controller diagnostics')
        labels = probe.diag[-1][1].layout.dim[0].label.split(',')
        col = {n: i for i, n in enumerate(labels)}

        def t_ctrl():
            with probe.lock:
                return probe.diag[-1][1].data[col['t']]

        # lock-step, three nodes per step (sim -> trajectory_node -> controller): 0.12-0.2x real
        # time on the loaded 2-core machine
        probe.wait_for(lambda: t_ctrl() >= t_end + 0.3, 100.0, 'the A-B-C-D legs (lock-step)')
        for la in (launch_sim, launch_ctrl):
            dead = la.poll()
            assert dead is None, f'node {dead} died:\n{out.getvalue()[-3000:]}'
        with probe.lock:
            D = np.array([m.data for _, m in probe.diag])
            js = {round(_stamp(m), 6): m for _, m in probe.js}
        res = dict(D=D, col=col, js=js, out=out, model=model, st=st, hp=hp, w=w, cfg=cfg, q_ref0=q_ref0)
        if extra is not None:
            extra(probe, loads, res)
        for la in (launch_sim, launch_ctrl):
            dead = la.poll()
            assert dead is None, f'node {dead} died:\n{out.getvalue()[-3000:]}'
    finally:
        if stopped is not None:
            os.kill(stopped, signal.SIGCONT)
        loads.stop()
        probe.close()
        launch_ctrl.shutdown()
        launch_sim.shutdown()
    assert_no_process_left(launch_sim)
    assert_no_process_left(launch_ctrl)
    return res


def _tracking(r, t_lo, t_hi):
    """TCP error recomputed from /joint_states (matched by stamp) against the re-generated task."""
    D, col, js, model, st, cfg = r['D'], r['col'], r['js'], r['model'], r['st'], r['cfg']
    p0 = st.tool_pose(r['q_ref0'])[1][[0, 2]]
    wp = np.asarray(cfg['waypoints'], float).reshape(-1, 2)
    pts = [p0] + list(wp) + [wp[0]]
    err, err_node = [], []
    for row in D:
        t = row[col['t']]
        m = js.get(round(row[col['stamp']], 6))
        if m is None or not t_lo < t < t_hi:
            continue
        Q = np.array([m.position[list(m.name).index(j)] for j in model.joint_names])
        tcp = st.tool_pose(segment_q(st, Q)[0])[1][[0, 2]]
        ref = quintic_legs(pts, [2.0] * (len(pts) - 1), t)[0]
        err.append(np.linalg.norm(tcp - ref))
        err_node.append(row[col['e_tcp']])
    err = np.array(err)
    assert np.allclose(err, err_node, atol=1e-9)
    return err


def _felt(r, t_rest):
    """At the rest points of the quintic legs: measured piston force - friction vs the static
    balance with and without the load at the published configuration. Returns the worst
    |measured - loaded balance| and the smallest lift-cylinder |measured - unloaded balance|."""
    D, col, js, model, st, hp, w = r['D'], r['col'], r['js'], r['model'], r['st'], r['hp'], r['w']
    names = hp.names
    worst, felt, n = 0.0, np.inf, 0
    for row in D:
        t = row[col['t']]
        m = js.get(round(row[col['stamp']], 6))
        if m is None or min(abs(t - tr) for tr in t_rest) > 0.0105:
            continue
        Q = np.array([m.position[list(m.name).index(j)] for j in model.joint_names])
        Qd = np.array([m.velocity[list(m.name).index(j)] for j in model.joint_names])
        q, qd = segment_q(st, Q, Qd)
        xd = st.jx(q) * qd
        fp = np.array([row[col[f'{c}/f_p']] for c in names])
        fc = fp - np.array([friction(hp.P[k], xd[k]) for k in range(st.ns)])
        z = np.zeros(st.ns)
        with_load = st.inverse_dynamics(q, qd, z, -w)['fc']  # F_D = -(load on the robot)
        no_load = st.inverse_dynamics(q, qd, z)['fc']
        worst = max(worst, float(np.abs(fc - with_load).max()))
        felt = min(felt, float(abs(fc[0] - no_load[0])))
        n += 1
    assert n >= len(t_rest), n  # 100 Hz diagnostics: up to 3 samples per rest point
    return worst, felt


def test_tool_load_told_to_plant_and_controller_keeps_the_abcd_bounds():
    r = _run_graph(True, 6.0)
    out = r['out'].getvalue()
    m = APPLIED.search(out)
    assert m, out[-3000:]
    t_applied = float(m.group(1))
    assert t_applied == 0.0, t_applied  # the start-up gate: applied before the first step
    assert not any(
        k in out for k in ('rejected external_wrench', 'rejected tool_wrench', "external wrench on 'tool' dropped")
    ), out[-3000:]
    err = _tracking(r, 2.0, 6.0)
    assert len(err) > 250, len(err)
    emax, erms = err.max(), np.sqrt(np.mean(err**2))
    worst, felt = _felt(r, (2.0, 4.0, 6.0))
    print(
        f'ROS lock-step A-B-C-D with a {LOAD:g} N tool load (plant from t = {t_applied:.3f} s, '
        f'controller told): max {emax * 1e3:.3f} mm, rms {erms * 1e3:.3f} mm ({len(err)} '
        f'samples); rest points: |f_p - f_f - loaded balance| <= {worst:.1f} N, lift '
        f'f_p - unloaded balance >= {felt:.0f} N'
    )
    # the nominal bounds of test_ros_hydraulic.py / test_hydraulics.py (offline with the same
    # load and timing: 3.005 mm max, 1.51 mm RMS, identical to the nominal run)
    assert emax < 4.0e-3 and erms < 2.0e-3, (emax, erms)
    D, col = r['D'], r['col']
    U = D[:, [col[f'{c}/u'] for c in r['hp'].names]]
    assert np.abs(U).max() < 10.0
    assert not D[:, [col[f'{c}/saturated'] for c in r['hp'].names]].any()
    # the plant feels the load (offline: within 15.8 N of the loaded balance, >= 2055 N from
    # the unloaded one on the lift cylinder)
    assert worst < 50.0 and felt > 1500.0, (worst, felt)


def test_tool_load_on_the_plant_only_is_felt_and_not_compensated():
    seen = {}

    def extra(probe, loads, r):
        out = r['out']
        pub = loads.pubs['/sim_node/external_wrench']
        bad = [loads.msg('tool', [np.nan, 0, 0, 0, 0, 0]), loads.msg('no_such_link', r['w']), loads.msg('', r['w'])]
        for b in bad:
            pub.publish(b)
        probe.wait_for(
            lambda: all(
                k in out.getvalue()
                for k in (
                    "rejected external_wrench: NaN/inf in the wrench on 'tool'",
                    "rejected external_wrench: unknown frame 'no_such_link'",
                    'rejected external_wrench: empty header.frame_id',
                )
            ),
            10.0,
            'warnings about the malformed loads',
        )
        seen['dropped_before_stop'] = 'dropped' in out.getvalue()
        loads.stop()  # no more messages: the load goes stale
        probe.wait_for(
            lambda: "external wrench on 'tool' dropped" in out.getvalue(),
            20.0,
            'the stale load to be dropped (external_wrench_timeout)',
        )

    r = _run_graph(False, 4.0, sim_params={'external_wrench_timeout': 2.0}, extra=extra)
    out = r['out'].getvalue()
    m = APPLIED.search(out)
    assert m, out[-3000:]
    t_applied = float(m.group(1))
    assert t_applied == 0.0, t_applied
    assert not seen['dropped_before_stop']
    assert 'rejected external_wrench' in out
    err = _tracking(r, 2.0, 4.0)
    assert len(err) > 120, len(err)
    worst, felt = _felt(r, (2.0, 4.0))
    print(
        f'ROS lock-step, {LOAD:g} N tool load on the plant only (from t = {t_applied:.3f} s): '
        f'TCP error {err.min() * 1e3:.2f}-{err.max() * 1e3:.2f} mm ({len(err)} samples); rest '
        f'points: |f_p - f_f - loaded balance| <= {worst:.1f} N, lift f_p - unloaded balance '
        f'>= {felt:.0f} N'
    )
    # offline: 33.0-43.3 mm over this window (nominal run < 4 mm): the controller, not told,
    # leaves a static offset; bounded (no divergence)
    assert err.min() > 20e-3 and err.max() < 60e-3, (err.min(), err.max())
    # offline: within 12.1 N of the loaded balance (the quintic's residual acceleration 10 ms
    # from the rest point), >= 2236 N from the unloaded one on the lift cylinder
    assert worst < 50.0 and felt > 1500.0, (worst, felt)
