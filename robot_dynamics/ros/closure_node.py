"""closure_node: completes the joint states of a closed-chain robot that senses only some joints.

A thin shell around :class:`robot_dynamics.algorithms.closure.ClosureCompleter`: subscribes
``measured_joint_states`` (sensor_msgs/JointState with whatever joints are sensed, e.g. what
ros2_control's ``joint_state_broadcaster`` publishes for the actuated joints, remapped there;
NaN for missing interfaces), solves the loop closure for the other joints, fills their
velocities from the constraint Jacobian (missing sensed velocities: backward differences) and
publishes the complete ``joint_states`` (every joint, same stamp; effort: the sensed efforts,
0 elsewhere) for the controllers, robot_state_publisher and RViz. A completion that would jump
(branch switch, glitch), a singular configuration or too few sensors is refused: nothing is
published for that message, a throttled warning says why, ``/diagnostics`` counts it.
Service ``~/reset`` (Trigger): restart from the reference configuration (its branch).
"""

import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger

from robot_dynamics.algorithms.closure import ClosureCompleter
from robot_dynamics.ros._common import (
    QOS_STATE,
    DiagnosticsPublisher,
    declare_params,
    guarded,
    load_model_param,
    spin_node,
    stamp_sec,
)


class ClosureNode(Node):
    def __init__(self):
        super().__init__('closure_node')
        self.model = m = load_model_param(self)
        P = declare_params(
            self,
            {
                'input_topic': ('measured_joint_states', 'sensed joint states (relative name)', None),
                'output_topic': ('joint_states', 'complete joint states (relative name)', None),
                'max_jump': (0.3, 'largest change of an unsensed joint per message [rad | m]', (1e-9, 1e3)),
                'tol': (1e-11, 'closure tolerance [m | -]', (1e-16, 1e-3)),
                'sing_tol': (1e-6, 'smallest singular value of the unsensed columns of A', (1e-16, 1.0)),
                'max_gap': (0.1, 'longest stamp gap for velocity differences [s]', (1e-6, 10.0)),
                'diagnostics_rate': (1.0, '/diagnostics rate [Hz] (0 = off)', (0.0, 1e3)),
            },
        )
        self.cc = ClosureCompleter(
            m, tol=P['tol'], max_jump=P['max_jump'], sing_tol=P['sing_tol'], max_gap=P['max_gap']
        )
        self.pub = self.create_publisher(JointState, P['output_topic'], QOS_STATE)
        self.create_subscription(
            JointState, P['input_topic'], guarded(self, self.on_state, 'measured state'), QOS_STATE
        )
        self.create_service(Trigger, '~/reset', guarded(self, self.on_reset, 'reset'))
        self.diag = DiagnosticsPublisher(self, self.diagnostics, P['diagnostics_rate'])
        self._last_warn = -1e9
        self.get_logger().info(f'completing {m.nq} joints of {m.name} from {P["input_topic"]} -> {P["output_topic"]}')

    def on_state(self, msg):
        c = self.cc.complete(msg.name, msg.position, msg.velocity, stamp_sec(msg.header.stamp))
        if not c.ok:
            now = self.get_clock().now().nanoseconds * 1e-9
            if now - self._last_warn > 2.0:
                self._last_warn = now
                self.get_logger().warning(f'state not completed: {c.reason}')
            return
        m, out = self.model, JointState()
        out.header = msg.header
        out.name = list(m.joint_names)
        out.position, out.velocity = c.q.tolist(), c.qd.tolist()
        eff = np.zeros(m.nq)
        if len(msg.effort) == len(msg.name):
            for n, e in zip(msg.name, msg.effort):
                i = m._joint_index.get(n)
                if i is not None and np.isfinite(e):
                    eff[i] = e
        out.effort = eff.tolist()
        self.pub.publish(out)

    def on_reset(self, request, response):
        self.cc.reset()
        response.success, response.message = True, 'completion restarts from the reference configuration'
        return response

    def diagnostics(self):
        return {
            **self.cc.count,
            'safe': False,
            'reason': self.cc.last_reason or 'ok',
            'last_refusal': self.cc.last_reason,
        }


def main(args=None):
    """Entry point (console script ``closure_node``)."""
    return spin_node(ClosureNode, args)


if __name__ == '__main__':
    raise SystemExit(main())
