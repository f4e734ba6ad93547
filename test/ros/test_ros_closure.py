"""closure_node over a real process: fed what ros2_control's joint_state_broadcaster sends for
IRSBot-2 (only the actuated joints, NaN velocities), it publishes every joint equal to the
simulator's state (positions 1e-9); a glitch is refused (nothing published for it) and the
stream goes on."""

import io
import time

import numpy as np
from sensor_msgs.msg import JointState

from robot_dynamics.ros.bringup import Bringup, NodeSpec, load_bringup
from robot_dynamics.ros.launcher import Launcher
from robot_dynamics.ros._common import QOS_STATE

from ros_helpers import DEEP, SpunNode, assert_no_process_left
from test_closure import sensed_joints, trajectory
from projection_helpers import model


def _stamp(t):
    from builtin_interfaces.msg import Time

    return Time(sec=int(t), nanosec=int(round((t - int(t)) * 1e9)))


def test_closure_node_completes_broadcaster_states():
    b0 = load_bringup('irsbot2')
    b = Bringup(
        robot='irsbot2',
        urdf=b0.urdf,
        loops=b0.loops,
        rviz=b0.rviz,
        source=b0.source,
        nodes=[NodeSpec('closure_node', 'closure_node', {'robot_description': b0.urdf, 'loops': b0.loops})],
    )
    m = model('irsbot2')
    sensed = sensed_joints(m)
    traj = trajectory(m, steps=40)
    out = io.StringIO()
    launcher = Launcher(b, out=out)
    probe = SpunNode('closure_probe')
    node = probe.node
    got = {}
    node.create_subscription(
        JointState,
        'joint_states',
        lambda msg: got.__setitem__(round(msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec, 6), msg),
        DEEP,
    )
    pub = node.create_publisher(JointState, 'measured_joint_states', QOS_STATE)

    def send(t, q, glitch=0.0):
        js = JointState(
            name=list(sensed),
            position=[float(q[m.joint_index(j)]) + glitch for j in sensed],
            velocity=[float('nan')] * len(sensed),
        )
        js.header.stamp = _stamp(t)
        pub.publish(js)

    launcher.start()
    try:
        t_end = time.monotonic() + 60
        while not got and time.monotonic() < t_end:
            send(traj[0][0], traj[0][1])
            time.sleep(0.2)
        assert got, out.getvalue()[-2000:]
        for k, (t, q, qd) in enumerate(traj):
            send(t, q, glitch=1.0 if k == 20 else 0.0)
            time.sleep(0.01)
        time.sleep(1.0)
        assert launcher.poll() is None, out.getvalue()[-2000:]
    finally:
        probe.close()
        launcher.shutdown()
    assert_no_process_left(launcher)
    names = list(m.joint_names)
    for k, (t, q, qd) in enumerate(traj):
        msg = got.get(round(t, 6))
        if k == 20:
            assert msg is None, 'the glitch was published'
            continue
        assert msg is not None, f'no completed state for stamp {t}'
        assert list(msg.name) == names
        np.testing.assert_allclose(msg.position, q, atol=1e-9)
    assert 'state not completed' in out.getvalue()
