"""dynamics_node: joint-space / task-space inverse-dynamics control -> actuator efforts.

On every ``/joint_states`` message it runs the core
:class:`robot_dynamics.control.DynamicsController` (``law``: 'pidc' = projected inverse
dynamics with passive joints, seed 002; 'computed_torque' for fully actuated trees) and
publishes the actuated efforts on ``/<controller>/commands`` (Float64MultiArray, order of the
``joints`` parameter) and the model-predicted wrench of every cut joint on
``~/constraint_wrench/<loop>`` (WrenchStamped, on frame_b, frame_a axes, frame_id = frame_a).

Reference (``reference`` parameter): 'joint' -> ``reference/joint_trajectory``
(JointTrajectory, first point; joint names must be the independent joints), 'task' ->
``reference/pose`` + ``reference/twist`` + ``reference/accel`` (selected ``task_axes`` of the
``task_frame`` origin). Malformed messages are rejected with a warning; nothing is published
without a valid, fresh state and reference. ``~/tracking_error`` (Float64MultiArray): [e, ed] of the controlled coordinates.
Services: ``~/enable`` (SetBool), ``~/hold``
(Trigger: track the current configuration at rest). The reference sample is extrapolated
(second order, from its own derivatives) from its header stamp to the state's stamp, so the
reference's sampling lag does not become tracking error. Gains ``kp``, ``kd`` can be changed at
run time (``ros2 param set``).
"""
import numpy as np
from geometry_msgs.msg import AccelStamped, PoseStamped, TwistStamped, WrenchStamped
from rcl_interfaces.msg import SetParametersResult
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import SetBool, Trigger
from trajectory_msgs.msg import JointTrajectory

from robot_dynamics.control import DynamicsController
from robot_dynamics.errors import RobotDynamicsError
from robot_dynamics.nodes._common import (QOS_COMMAND, QOS_STATE, JointStateParser,
                                          load_model_param, spin_node)


def _sec(stamp):
    t = stamp.sec + 1e-9 * stamp.nanosec
    return t if t > 0 else None


class DynamicsNode(Node):
    """Inverse-dynamics controller node."""

    def __init__(self):
        super().__init__('dynamics_node')
        self.model = m = load_model_param(self)
        dp = self.declare_parameter
        controller = dp('controller', 'effort_controller').value
        self.reference_mode = dp('reference', 'joint').value
        self.state_timeout = float(dp('state_timeout', 0.5).value)
        self.publish_wrenches = bool(dp('publish_wrenches', True).value)
        self.ctrl = DynamicsController(
            m, law=dp('law', 'pidc').value, kp=float(dp('kp', 100.0).value),
            kd=float(dp('kd', 20.0).value), joints=list(dp('joints', list(m.actuated)).value),
            reference=self.reference_mode, task_frame=dp('task_frame', 'tool').value,
            task_axes=list(dp('task_axes', [0, 1, 2]).value))
        self.add_on_set_parameters_callback(self.on_params)
        self.parser = JointStateParser(m)
        self.enabled = True
        self.task = {}
        self.pub_cmd = self.create_publisher(Float64MultiArray, f'/{controller}/commands', QOS_COMMAND)
        self.pub_err = self.create_publisher(Float64MultiArray, '~/tracking_error', QOS_STATE)
        self.pub_w = {lp.name: self.create_publisher(WrenchStamped, f'~/constraint_wrench/{lp.name}', QOS_STATE)
                      for lp in m.loops} if self.publish_wrenches else {}
        self.create_subscription(JointState, 'joint_states', self.on_state, QOS_STATE)
        if self.reference_mode == 'joint':
            self.create_subscription(JointTrajectory, 'reference/joint_trajectory', self.on_joint_ref, QOS_COMMAND)
        else:
            self.create_subscription(PoseStamped, 'reference/pose', lambda msg: self.on_task(0, msg), QOS_COMMAND)
            self.create_subscription(TwistStamped, 'reference/twist', lambda msg: self.on_task(1, msg), QOS_COMMAND)
            self.create_subscription(AccelStamped, 'reference/accel', lambda msg: self.on_task(2, msg), QOS_COMMAND)
        self.create_service(SetBool, '~/enable', self.on_enable)
        self.create_service(Trigger, '~/hold', self.on_hold)
        self.last_q = None
        self.get_logger().info(f'law {self.ctrl.law}, {self.reference_mode} reference on '
                               f'{self.ctrl.coords}, commands /{controller}/commands {self.ctrl.joints}')

    def on_params(self, params):
        for p in params:
            if p.name in ('kp', 'kd'):
                if not (isinstance(p.value, (int, float)) and p.value >= 0):
                    return SetParametersResult(successful=False, reason=f'{p.name} must be >= 0')
                setattr(self.ctrl, p.name, float(p.value))
        return SetParametersResult(successful=True)

    def on_joint_ref(self, msg):
        if not msg.points:
            return self._reject('reference without points')
        pt = msg.points[0]
        try:
            self.ctrl.set_reference(list(pt.positions), list(pt.velocities), list(pt.accelerations),
                                    names=list(msg.joint_names), stamp=_sec(msg.header.stamp))
        except RobotDynamicsError as exc:
            self._reject(f'reference: {exc}')

    def on_task(self, k, msg):
        vec = (msg.pose.position if k == 0 else msg.twist.linear if k == 1 else msg.accel.linear)
        self.task[k] = np.array([vec.x, vec.y, vec.z])
        if k == 0:
            axes = self.ctrl.task_axes
            zero = np.zeros(3)
            try:
                self.ctrl.set_reference(self.task[0][axes], self.task.get(1, zero)[axes],
                                        self.task.get(2, zero)[axes], stamp=_sec(msg.header.stamp))
            except RobotDynamicsError as exc:
                self._reject(f'task reference: {exc}')

    def on_enable(self, request, response):
        self.enabled = bool(request.data)
        response.success, response.message = True, f'controller {"enabled" if self.enabled else "disabled"}'
        return response

    def on_hold(self, request, response):
        if self.last_q is None:
            response.success, response.message = False, 'no joint state yet'
            return response
        q = self.last_q
        if self.reference_mode == 'task':
            x, _, _ = self.ctrl.theta(q, np.zeros_like(q))
        else:
            x = q[self.model.independent_indices]
        self.ctrl.set_reference(x)
        response.success, response.message = True, f'holding {np.round(x, 6).tolist()}'
        return response

    def _reject(self, why):
        self.get_logger().warning(f'rejected {why}', throttle_duration_sec=2.0)

    def on_state(self, msg):
        q, qd, why = self.parser.parse(msg)
        if why:
            return self._reject(f'joint_states: {why}')
        self.last_q = q
        if not self.enabled or self.ctrl.ref is None:
            return
        out = self.ctrl.compute(q, qd, stamp=_sec(msg.header.stamp))
        if not out.controllable:
            self.get_logger().warning(f'not controllable: {out.message}', throttle_duration_sec=1.0)
        if out.clipped:
            self.get_logger().warning('efforts clipped to the effort limits', throttle_duration_sec=1.0)
        if not np.all(np.isfinite(out.effort)):
            return self._reject('non-finite effort (not published)')
        self.pub_cmd.publish(Float64MultiArray(data=out.effort.tolist()))
        self.pub_err.publish(Float64MultiArray(data=np.concatenate([out.e, out.ed]).tolist()))
        if self.pub_w:
            stamp = msg.header.stamp
            for name, w in self.ctrl.predicted_wrenches(q, qd, out.tau).items():
                ws = WrenchStamped()
                ws.header.stamp = stamp
                ws.header.frame_id = next(lp.frame_a for lp in self.model.loops if lp.name == name)
                ws.wrench.force.x, ws.wrench.force.y, ws.wrench.force.z = map(float, w[:3])
                ws.wrench.torque.x, ws.wrench.torque.y, ws.wrench.torque.z = map(float, w[3:])
                self.pub_w[name].publish(ws)


def main(args=None):
    """Entry point (console script ``dynamics_node``)."""
    return spin_node(DynamicsNode, args)


if __name__ == '__main__':
    raise SystemExit(main())
