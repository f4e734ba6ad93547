"""hardware:=mock with the built-in launcher: the ros2_control contract over real topics.

There is no controller_manager here (it needs a ROS 2 installation), so the test plays it, with
exactly what ros2_control's pieces send and expect:

* a stand-in *hardware* (the package's rigid plant, stepped in wall-clock time by the test:
  1 kHz in 10-step ticks) behind a stand-in ``forward_command_controller``: it subscribes
  ``effort_controller/commands`` and checks what the real one checks (a Float64MultiArray with
  one value per entry of ``joints`` in ``config/ros2_control/five_bar_controllers.yaml``, in that
  order) and applies them;
* a stand-in ``joint_state_broadcaster`` remapped to ``measured_joint_states`` (the launch
  file's remap): only the joints with state interfaces in ``urdf/five_bar.ros2_control.xacro``
  (the actuated ones), NaN velocities (an interface the hardware does not report).

The launcher starts closure_node (instead of sim_node), kinematics_node, trajectory_node and the
controller, and says what it cannot start. Asserted: that notice; every command has the
controller's length and order and is finite; closure_node's complete /joint_states equal the
plant's full state at the same stamp (positions 1e-9); the tool tracks the circle within the
five_bar demo's 15 mm for 95 % of the samples, never diverging (when the stand-in plant kept
real time over the observed 3 s: RTF >= 0.95).
"""

import io
import threading
import time

import numpy as np
import pytest
import yaml

rclpy = pytest.importorskip('rclpy')

from builtin_interfaces.msg import Time  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402

from robot_dynamics.ros.bringup import load_bringup, observer_priority, share_dir  # noqa: E402
from robot_dynamics.tools.demos import DEMOS  # noqa: E402
from robot_dynamics.ros.launcher import Launcher  # noqa: E402
from robot_dynamics.ros._common import QOS_COMMAND, QOS_STATE  # noqa: E402
from robot_dynamics.plants.registry import make_plant  # noqa: E402
from robot_dynamics.plants.runner import SimRunner  # noqa: E402
from robot_dynamics.parsers.urdf import load_model  # noqa: E402
from ros_helpers import Probe, SpunNode, assert_no_process_left, stamp_matched_xz_error  # noqa: E402

pytestmark = pytest.mark.ros


def _stamp(t):
    return Time(sec=int(t), nanosec=int(round((t - int(t)) * 1e9)))


class StandInHardware:
    """The plant behind forward_command_controller + joint_state_broadcaster (see the module)."""

    def __init__(self, model, sim_params, joints, sensed):
        self.model, self.joints, self.sensed = model, list(joints), list(sensed)
        P = sim_params
        self.runner = SimRunner(
            model,
            make_plant('rigid', model, model.reference_q(), dt=1.0 / P['rate']),
            self.joints,
            rate=P['rate'],
            publish_rate=100.0,
            # (forward_command_controller holds its last command; the
            # stand-in holds it for 20 periods before it holds the robot)
            command_timeout_periods=20.0,
            hold='gravity',
            hold_damping=P['hold_damping'],
            max_catchup=2,
        )
        self.lock = threading.Lock()
        self.bad, self.cmds, self.states = [], 0, {}
        # its own node and executor thread, both under SCHED_FIFO where permitted, as
        # ros2_control_node's (threads inherit the creating thread's policy): at normal priority,
        # sharing the probe's executor next to the launcher's FIFO control-path nodes on two
        # cores, its 10 ms ticks and the commands came 30-80 ms late and the five-bar loop
        # oscillated into another assembly mode
        with observer_priority('realtime'):
            self.spun = SpunNode('standin_hardware')
        node = self.spun.node
        self.pub = node.create_publisher(JointState, 'measured_joint_states', QOS_STATE)
        node.create_subscription(Float64MultiArray, 'effort_controller/commands', self.on_command, QOS_COMMAND)
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def on_command(self, msg):
        data = list(msg.data)
        with self.lock:
            if len(data) != len(self.joints) or not np.all(np.isfinite(data)):
                self.bad.append(data)  # forward_command_controller would reject it
                return
            self.cmds += 1
            self.runner.command(data, time.monotonic())

    def _run(self):
        self.runner.start(time.monotonic())
        t0 = time.time()
        nxt = time.monotonic()
        while not self._stop.is_set():
            nxt += 0.01
            with self.lock:
                self.runner.tick(time.monotonic(), time.monotonic())
                p = self.runner.plant
                stamp = round(t0 + self.runner.slip + p.t, 6)  # (as sim_node: plant time on the wall clock)
                self.states[stamp] = p.q.copy()
                js = JointState(
                    name=self.sensed,
                    position=[float(p.q[self.model.joint_index(j)]) for j in self.sensed],
                    velocity=[float('nan')] * len(self.sensed),
                    effort=[float(self.runner.applied[self.model.joint_index(j)]) for j in self.sensed],
                )
            js.header.stamp = _stamp(stamp)
            self.pub.publish(js)
            self._stop.wait(max(0.0, nxt - time.monotonic()))

    def start(self):
        with observer_priority('realtime'):
            self.thread.start()

    def stop(self):
        self._stop.set()
        self.thread.join(timeout=2.0)
        self.spun.close()


def test_mock_hardware_through_the_ros2_control_contract():
    b = load_bringup('five_bar', hardware='mock')
    sim_params = load_bringup('five_bar').nodes[0].parameters
    with open(f'{share_dir()}/config/ros2_control/five_bar_controllers.yaml') as fh:
        joints = yaml.safe_load(fh)['effort_controller']['ros__parameters']['joints']
    model = load_model(b.urdf, loops=b.loops)
    import xml.etree.ElementTree as ET

    rc = ET.fromstring(open(f'{share_dir()}/urdf/five_bar.ros2_control.xacro').read())
    sensed = [
        j.get('name') for j in rc.iter('joint') if any(s.get('name') == 'position' for s in j.iter('state_interface'))
    ]
    assert sensed and len(sensed) < model.nq  # a closed chain senses only some joints
    out = io.StringIO()
    launcher = Launcher(b, out=out)
    probe = Probe(model)
    hw = StandInHardware(model, sim_params, joints, sensed)
    hw.start()
    launcher.start()
    try:
        probe.wait_for(lambda: len(probe.pose) > 20 and hw.cmds > 20, 60.0, 'mock graph commanding')
        time.sleep(3.0)  # the trajectory starts with the first command; settle 3 s
        slip0, w0 = hw.runner.slip, time.monotonic()
        time.sleep(3.0)
        t_end = time.monotonic()
        # the stand-in plant's real-time factor over the observed 3 s (it slips when the test
        # process, which also spins the probe, does not get the CPU)
        rtf = 1.0 - (hw.runner.slip - slip0) / (t_end - w0)
        with probe.lock:
            js = [m for t, m in probe.js]
            poses = [
                (m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec, m.pose.position)
                for t, m in probe.pose
                if t > t_end - 3.0
            ]
            refs = [(m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec, m.pose.position) for t, m in probe.ref]
        dead = launcher.poll()
        assert dead is None, f'node {dead} died:\n{out.getvalue()[-3000:]}'
    finally:
        hw.stop()
        probe.close()
        launcher.shutdown()
    assert_no_process_left(launcher)
    log = out.getvalue()
    assert "hardware 'mock'" in log and 'ros2 run controller_manager ros2_control_node' in log
    assert 'joint_states:=measured_joint_states' in log
    assert 'started closure_node' in log and 'started sim_node' not in log
    assert not hw.bad, hw.bad[:3]  # length/order of the controller's joints
    # closure_node: every joint, the sensed ones as measured, the others closing the loops; with
    # the stand-in plant on time (RTF >= 0.95) equal to the plant's full state at the same stamp.
    # (A stand-in starved of CPU can be driven into another assembly mode by commands computed on
    # stale states; the completion then closes the loops on the branch it continues.)
    from robot_dynamics.algorithms.constraints import loop_residual

    si = [model.joint_index(j) for j in sensed]
    matched = 0
    for m in js:
        q = hw.states.get(round(m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec, 6))
        if q is None:
            continue
        assert list(m.name) == list(model.joint_names)
        qc = np.asarray(m.position)
        np.testing.assert_allclose(qc[si], q[si], atol=1e-9)
        assert np.linalg.norm(loop_residual(model, qc)) < 1e-9
        if rtf >= 0.95:
            np.testing.assert_allclose(qc, q, atol=1e-9)
        assert np.all(np.isfinite(m.velocity))
        matched += 1
    assert matched > 200, matched
    err = stamp_matched_xz_error(poses, refs)
    xs = np.array([p.x for _, p in poses])
    print(
        f'\nmock hardware: {hw.cmds} commands, {matched} completed states matched, plant RTF '
        f'{rtf:.2f}, tool error p95 {np.percentile(err, 95) * 1e3:.2f} mm, max '
        f'{err.max() * 1e3:.2f} mm over the last 3 s'
    )
    assert len(err) > 50 and np.ptp(xs) > 0.03  # the circle (80 mm wide) is followed, poses > 16 Hz
    if rtf >= 0.95:
        # 95 % within the demo's 15 mm, never diverging (max below the circle's 80 mm): a
        # fresh-clone run had p95 ~3 mm and one 42 mm excursion with the stand-in's thread
        # sharing the test process with the probe
        assert np.percentile(err, 95) < DEMOS['five_bar'].bound, np.percentile(err, 95)
        assert err.max() < 0.08, err.max()
