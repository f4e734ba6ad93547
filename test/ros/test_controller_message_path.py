"""The way of one ``joint_states`` message through controller_node, measured: the subscription
callback (as the executor calls it, the callback guard included) runs functions of
ros/controller_node.py, control/loop.py, the law's module and the numerical modules the law calls
(algorithms/, pkm/, spatial/, the model), plus the message helpers of ros/_common.py; the node
calls into the loop once per message (one round trip), and the command it publishes is the
loop's. The node runs in this process (no graph, nothing spun)."""

import os
import sys

import numpy as np
import pytest
import rclpy
from builtin_interfaces.msg import Time
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

import robot_dynamics as rd

PKG = os.path.dirname(os.path.abspath(rd.__file__))
NUMERICAL = ('algorithms/', 'pkm/', 'spatial/', 'model.py')
#: ros/_common.py functions a message may run: the callback guard and message conversion
COMMON = {'run', 'stamp_sec', 'time_msg', 'wrench_stamped'}


def _time(t):
    sec = int(t)
    return Time(sec=sec, nanosec=int(round((t - sec) * 1e9)))


class Trace:
    """sys.setprofile hook: the robot_dynamics functions called (file relative to the package,
    function name) and the calls from controller_node.py into loop.py."""

    def __init__(self):
        self.calls, self.node_to_loop = set(), []

    def __call__(self, frame, event, arg):
        if event != 'call':
            return
        f = frame.f_code.co_filename
        if not f.startswith(PKG + os.sep):
            return
        rel = os.path.relpath(f, PKG).replace(os.sep, '/')
        self.calls.add((rel, frame.f_code.co_name))
        back = frame.f_back
        if rel == 'control/loop.py' and back is not None and back.f_code.co_filename.endswith('ros/controller_node.py'):
            self.node_to_loop.append(frame.f_code.co_name)

    def run(self, fn, *args):
        sys.setprofile(self)
        try:
            fn(*args)
        finally:
            sys.setprofile(None)


@pytest.fixture
def node():
    from robot_dynamics.ros.controller_node import ControllerNode

    args = ['--ros-args', '-p', f'robot_description:={rd.data_path("urdf/five_bar.urdf")}', '-p', 'rate:=100.0']
    rclpy.init(args=args)
    n = ControllerNode()
    try:
        yield n
    finally:
        n.destroy_node()
        rclpy.shutdown()


def test_one_joint_state_message_passes_the_node_the_loop_and_the_law(node):
    m, law = node.model, node.law
    state_cb = next(s.callback for s in node.subscriptions if s.topic_name.endswith('/joint_states'))
    ref_cb = next(s.callback for s in node.subscriptions if s.topic_name.endswith('reference/joint_trajectory'))
    sent = []
    node.pub_cmd.publish = lambda msg: sent.append(list(msg.data))
    q0 = m.reference_q()

    def message(t):
        msg = JointState(name=list(m.joint_names), position=q0.tolist(), velocity=[0.0] * m.nq)
        msg.header.stamp = _time(t)
        return msg

    x0 = law.current_coordinates(q0)

    def now():
        return node.get_clock().now().nanoseconds * 1e-9

    def reference(t):
        ref = JointTrajectory(joint_names=list(law.coords))
        ref.header.stamp = _time(t)
        ref.points = [
            JointTrajectoryPoint(positions=(x0 + 0.01).tolist(), velocities=[0.0] * 2, accelerations=[0.0] * 2)
        ]
        ref_cb(ref)

    for _ in range(3):  # first messages: lazy imports, caches
        reference(now() - 1e-3)
        state_cb(message(now()))
    reference(now() - 1e-3)
    n_sent = len(sent)
    trace = Trace()
    stamp = now()
    trace.run(state_cb, message(stamp))
    assert len(sent) == n_sent + 1, 'one command per message'
    c = node.loop.last_command
    assert not c.safe and c.stamp == pytest.approx(stamp) and sent[-1] == c.effort.tolist()
    files = {f for f, _ in trace.calls}
    law_module = type(law).__module__.removeprefix('robot_dynamics.').replace('.', '/') + '.py'
    assert law_module == 'control/computed_torque.py'
    allowed = {'ros/controller_node.py', 'control/loop.py', law_module, 'ros/_common.py'}
    print(f'\nfiles of one joint_states message: {sorted(files)}')
    assert {'ros/controller_node.py', 'control/loop.py', law_module} <= files
    assert all(f in allowed or f.startswith(NUMERICAL) for f in files), sorted(files)
    assert {fn for f, fn in trace.calls if f == 'ros/_common.py'} <= COMMON
    assert trace.node_to_loop == ['on_state'], trace.node_to_loop  # one round trip node -> loop


def test_a_state_older_than_max_state_age_is_stored_and_answered_by_the_timer(node):
    """The loop, not the node, decides: a late state gets no command from its message; the
    watchdog's update answers the newest state."""
    m = node.model
    state_cb = next(s.callback for s in node.subscriptions if s.topic_name.endswith('/joint_states'))
    sent = []
    node.pub_cmd.publish = lambda msg: sent.append(list(msg.data))
    assert node.loop.hold_here() == (False, 'no joint state yet')
    now = node.get_clock().now().nanoseconds * 1e-9
    msg = JointState(name=list(m.joint_names), position=m.reference_q().tolist(), velocity=[0.0] * m.nq)
    msg.header.stamp = _time(now - 0.05)  # 5 periods old
    state_cb(msg)
    assert sent == [] and node.loop.state is not None
    assert node.loop.hold_here()[0]
    node._answer()  # the watchdog timer's call
    assert len(sent) == 1 and not node.loop.last_command.safe
    assert np.allclose(node.loop.last_command.e, 0.0, atol=1e-9)
