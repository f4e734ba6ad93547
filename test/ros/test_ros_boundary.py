"""Fault injection at the hardware boundary, over real processes (the way a robot's integrator
tries it): what sits between a controller and the joints enforces the description.

* a stray second publisher of 500 N m (25x the four-bar crank's URDF effort limit of 20 N m) at
  100 Hz on the plant's command topic: no applied effort ever exceeds the limit, sim_node and
  the controller report the two publishers at ERROR on /diagnostics within a second, the plant
  holds until one publisher remains and then follows the controller again;
* gains: ``kp = 1e308`` is refused with the range in the reason, a step beyond
  ``max_gain_change`` is refused, a bounded step is taken;
* the command timeout: the plant holds at most 3 periods of its command rate after the last
  command (plus one publish period and a scheduling margin);
* a stray ``/clock`` publisher next to a lock-step graph is reported at ERROR by sim_node;
* Ctrl-C: 20 start/stop cycles (real time and lock-step), every node exits 0 before the
  launcher's sigterm_timeout, no traceback, no escalation to SIGTERM;
* lock-step: a command lost at start-up is sent again when the plant re-publishes its state.
"""

import io
import os
import signal
import threading
import time

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rosgraph_msgs.msg import Clock
from std_msgs.msg import Float64MultiArray

import robot_dynamics as rd
from robot_dynamics.ros.bringup import load_bringup
from robot_dynamics.ros.launcher import Launcher
from robot_dynamics.ros._common import QOS_COMMAND, QOS_STATE

from ros_helpers import DEEP, Probe, assert_no_process_left, run_graph, set_params

pytestmark = pytest.mark.ros


def _diag(probe):
    """Record /diagnostics into ``probe.diag`` as (arrival, node name, level, message, values)."""
    probe.diag = []

    def rec(msg):
        with probe.lock:
            for st in msg.status:
                probe.diag.append(
                    (
                        time.monotonic(),
                        st.name.split(':')[0],
                        st.level,
                        st.message,
                        {kv.key: kv.value for kv in st.values},
                    )
                )

    probe.node.create_subscription(DiagnosticArray, '/diagnostics', rec, DEEP)


def _errors(probe, node, since, text):
    with probe.lock:
        return [
            (t, msg)
            for t, name, lvl, msg, _ in probe.diag
            if t > since and name == node and lvl == DiagnosticStatus.ERROR and text in msg
        ]


def test_stray_command_publisher_is_clipped_reported_and_held_and_gains_are_bounded():
    limit = 20.0  # urdf/four_bar.urdf crank_joint effort

    def setup(probe):
        _diag(probe)
        probe.subscribe('cmds', Float64MultiArray, '/effort_controller/commands')

    def body(launcher, probe, model, out):
        crank = model.joint_names.index('crank_joint')
        assert model.effort_limit[crank] == limit
        stray = probe.node.create_publisher(Float64MultiArray, '/effort_controller/commands', QOS_COMMAND)
        stop = threading.Event()

        def flood():  # 100 Hz of 25x the limit
            while not stop.is_set():
                stray.publish(Float64MultiArray(data=[25.0 * limit]))
                time.sleep(0.01)

        t0 = time.monotonic()
        th = threading.Thread(target=flood, daemon=True)
        th.start()
        try:
            probe.wait_for(
                lambda: _errors(probe, '/sim_node', t0, '2 publishers on /effort_controller/commands'),
                5.0,
                'sim_node ERROR: two publishers',
            )
            t_sim = _errors(probe, '/sim_node', t0, '2 publishers')[0][0] - t0
            probe.wait_for(
                lambda: _errors(probe, '/dynamics_node', t0, '2 publishers'), 5.0, 'dynamics_node ERROR: two publishers'
            )
            t_ctl = _errors(probe, '/dynamics_node', t0, '2 publishers')[0][0] - t0
            # reported within a second of the stray publisher's discovery (discovery itself on a
            # loaded 2-core machine: a margin)
            assert t_sim < 1.5 and t_ctl < 1.5, (t_sim, t_ctl)
            time.sleep(2.0)  # the stray keeps flooding meanwhile
            with probe.lock:
                hold = [m.data for t, m in probe.hold if t > t0 + t_sim + 0.3]
                js = [m for t, m in probe.js if t > t0]
            assert hold and all(hold), 'the plant does not hold while two publishers command it'
        finally:
            stop.set()
            th.join()
        # the applied effort (joint_states.effort = what the plant integrates) never exceeded the
        # limit, with the stray's 500 N m on the topic all the while
        eff = np.array([m.effort[list(m.name).index('crank_joint')] for m in js])
        assert len(eff) > 100 and np.abs(eff).max() <= limit + 1e-9, np.abs(eff).max()
        with probe.lock:
            strays = sum(1 for t, m in probe.cmds if t > t0 and m.data[0] == 25.0 * limit)
        assert strays > 100  # the stray really was on the topic
        # one publisher again: the plant follows the controller (the hold ends) and the ERROR clears
        probe.node.destroy_publisher(stray)
        t1 = time.monotonic()
        probe.wait_for(
            lambda: any(t > t1 and not m.data for t, m in list(probe.hold)),
            10.0,
            'the plant leaving the hold once the stray publisher is gone',
        )
        probe.wait_for(
            lambda: any(
                t > t1 + 0.5 and name == '/sim_node' and lvl != DiagnosticStatus.ERROR
                for t, name, lvl, _, _ in list(probe.diag)
            ),
            10.0,
            'sim_node not in ERROR',
        )
        assert 'holding until one remains' in out.getvalue() or 'publishers on' in out.getvalue()
        # gains: out of range refused with the range, a large step refused, a bounded step taken
        res = set_params(probe.node, '/dynamics_node', {'kp': 1e308, 'kd': 1e308})
        for k in ('kp', 'kd'):
            assert not res[k].successful and 'range' in res[k].reason.lower(), res[k]
        res = set_params(probe.node, '/dynamics_node', {'kp': 1000.0})
        assert not res['kp'].successful and 'max_gain_change' in res['kp'].reason, res['kp']
        assert set_params(probe.node, '/dynamics_node', {'kp': 150.0})['kp'].successful
        assert set_params(probe.node, '/dynamics_node', {'kp': 280.0})['kp'].successful
        # the command timeout: <= 3 periods of the 100 Hz command rate after the last command
        with probe.lock:
            vals = [v for t, name, _, _, v in probe.diag if name == '/sim_node']
        assert float(vals[-1]['command_timeout']) == pytest.approx(3 / 100.0)
        t_off = probe.call_enable(False)  # the controller stops commanding
        probe.wait_for(lambda: any(t > t_off and m.data for t, m in list(probe.hold)), 5.0, 'hold')
        with probe.lock:
            last_cmd = max(t for t, m in probe.cmds)
            t_hold = min(t for t, m in probe.hold if t > t_off and m.data)
        # at the plant (its own clock): 3 periods + at most one publish period (its tick)
        t2 = time.monotonic()
        probe.wait_for(
            lambda: any(
                t > t2 and name == '/sim_node' and v.get('hold_after', 'nan') != 'nan'
                for t, name, _, _, v in list(probe.diag)
            ),
            5.0,
            'hold_after',
        )
        with probe.lock:
            after = float([v for t, name, _, _, v in probe.diag if name == '/sim_node'][-1]['hold_after'])
        assert 3 / 100.0 <= after <= 3 / 100.0 + 1 / 100.0 + 1e-3, after
        # at the probe: one DDS hop each way more (and the probe's own scheduling)
        assert t_hold - last_cmd <= 3 / 100.0 + 1 / 100.0 + 0.25, t_hold - last_cmd

    run_graph('four_bar', body, setup=setup, timing='realtime')


def test_a_stray_clock_publisher_is_reported():
    """A second /clock next to a lock-step graph (every node on simulated time would follow
    both): sim_node reports it at ERROR within a second."""
    seen = {}

    def setup(probe):
        _diag(probe)
        seen['probe'] = probe

    def body(launcher, probe, model, out):
        pub = probe.node.create_publisher(Clock, '/clock', QOS_STATE)
        t0 = time.monotonic()
        probe.wait_logged(
            lambda: _errors(probe, '/sim_node', t0, 'publishers on /clock'),
            5.0,
            'sim_node ERROR: two /clock publishers',
            out,
        )
        assert _errors(probe, '/sim_node', t0, '/clock')[0][0] - t0 < 1.5
        probe.node.destroy_publisher(pub)

    run_graph(
        'five_bar',
        body,
        setup=setup,
        timing='lockstep',
        ready=lambda: any(name == '/sim_node' for _, name, _, _, _ in list(seen['probe'].diag)),
    )


@pytest.mark.parametrize('timing', ['realtime', 'lockstep'])
def test_ctrl_c_stops_every_node_cleanly(timing):
    """10 cycles per timing (20 in all): start five_bar's graph, wait until the controller
    commands, SIGINT to every node (what Ctrl-C in the launcher's terminal sends): each exits
    with code 0 before the launcher's ``sigterm_timeout`` (5 s, as ros2 launch) would escalate to
    SIGTERM, no traceback, no 'fatal', nothing left running (the slowest exit is printed)."""
    b = load_bringup('five_bar', timing=timing)
    model = rd.load_model(b.urdf)
    slowest = 0.0
    for cycle in range(10):
        out = io.StringIO()
        launcher = Launcher(b, out=out)
        probe = Probe(model)
        probe.subscribe('cmds', Float64MultiArray, '/effort_controller/commands')
        launcher.start()
        try:
            probe.wait_logged(lambda: len(probe.cmds) > 20, 60.0, f'cycle {cycle}: commands', out)
            t0 = time.monotonic()
            for p in launcher.procs.values():  # Ctrl-C: SIGINT to every node
                os.killpg(p.pid, signal.SIGINT)
            while time.monotonic() - t0 < 10.0 and any(p.poll() is None for p in launcher.procs.values()):
                time.sleep(0.01)
            took = time.monotonic() - t0  # the last node's exit
        finally:
            probe.close()
            launcher.shutdown(timeout=5.0)
        log = out.getvalue()
        codes = {n: p.returncode for n, p in launcher.procs.items()}
        assert all(c == 0 for c in codes.values()), (cycle, codes, log[-3000:])
        slowest = max(slowest, took)
        assert took < launcher.sigterm_timeout, (cycle, took)
        for bad in ('Traceback', 'fatal', 'terminate called', 'still running'):
            assert bad not in log, (cycle, bad, log[-3000:])
        assert_no_process_left(launcher)
    print(f'\nCtrl-C ({timing}): 10 of 10 cycles exited with code 0, the slowest graph in {slowest:.2f} s')


def test_lockstep_command_lost_at_start_is_sent_again_when_the_plant_repeats_its_state():
    """Lock-step: the controller answers a state once. If that command is lost (published before
    the plant's subscription had matched the controller's publisher, as happened at start-up in
    1 of 30 lock-step Ctrl-C cycles: the graph then waited for ever), the plant re-publishes the
    same state (``lockstep_republish``) and the controller sends the same command again. Played
    here: five_bar's lock-step graph without sim_node; the test publishes /clock and the state at
    t = 0 until the controller has answered (its ~/tracking_error), then, as the plant that got
    no command, the same state again: the same command arrives again, without a new answer."""
    from sensor_msgs.msg import JointState

    b = load_bringup('five_bar', timing='lockstep')
    model = rd.load_model(b.urdf, loops=b.loops)
    import dataclasses

    out = io.StringIO()
    launcher = Launcher(dataclasses.replace(b, nodes=[s for s in b.nodes if s.executable != 'sim_node']), out=out)
    probe = Probe(model)
    probe.subscribe('cmds', Float64MultiArray, '/effort_controller/commands')
    probe.subscribe('answered', Float64MultiArray, '/dynamics_node/tracking_error')
    n = probe.node
    clock = n.create_publisher(Clock, '/clock', QOS_STATE)
    states = n.create_publisher(JointState, '/joint_states', QOS_STATE)
    state = JointState(
        name=list(model.joint_names),
        position=model.reference_q().tolist(),
        velocity=[0.0] * model.nq,
        effort=[0.0] * model.nq,
    )

    def publish_state():
        clock.publish(Clock())  # t = 0 (stamps zero)
        states.publish(state)

    launcher.start()
    try:
        # the graph's endpoints and ours matched first (a message sent before that is lost: what
        # the test plays for the plant, never for its own probe)
        probe.wait_for(
            lambda: states.get_subscription_count() >= 3
            and clock.get_subscription_count() >= 3
            and n.count_publishers('/effort_controller/commands') >= 1
            and n.count_publishers('/dynamics_node/tracking_error') >= 1,
            60.0,
            'graph matched',
        )
        time.sleep(1.0)
        t_end = time.monotonic() + 60.0
        while not (probe.answered and probe.cmds) and time.monotonic() < t_end:
            publish_state()  # until the controller answers t = 0
            time.sleep(0.2)
        assert probe.answered and probe.cmds, out.getvalue()[-3000:]
        time.sleep(0.5)
        with probe.lock:
            first, answers = len(probe.cmds), len(probe.answered)
        for _ in range(3):  # the plant's re-publications
            publish_state()
            time.sleep(0.5)
        dead = launcher.poll()
    finally:
        probe.close()
        launcher.shutdown()
    assert dead is None, out.getvalue()[-3000:]
    with probe.lock:
        cmds = [list(m.data) for _, m in probe.cmds]
        assert len(probe.answered) == answers  # no new answer: the same command sent again
    assert len(cmds) >= first + 3, (first, len(cmds), out.getvalue()[-2000:])
    assert all(c == cmds[0] for c in cmds) and len(cmds[0]) == 2 and np.all(np.isfinite(cmds[0]))
    assert 'its command was lost' in out.getvalue()
    print(f'\nlock-step: the command for t = 0 sent {len(cmds) - first} more times: {cmds[0]}')
