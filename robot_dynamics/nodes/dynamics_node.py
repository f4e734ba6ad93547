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

``law: d2_feedforward`` (seed 004, separate branch, the laws above are unchanged): the reference
is generated in the node from an analytic platform motion (``motion: roll``, the brief's
:class:`~robot_dynamics.pkm.gough_stewart.RollMotion` with ``roll_min``, ``roll_max`` [rad],
``roll_period`` [s], ``roll_center`` [m]); on every NEW joint-state stamp (a stamp is answered
once: lock-step with ``sim_node lockstep: true``) at t = stamp - first stamp, the 2nd-order
recursive ID (:class:`robot_dynamics.control.d2_feedforward.D2Feedforward`) gives u, ud, udd and
the actuated joint motion; command ``u + kp (theta_a - q_a) + kd (thetad_a - qd_a)`` (clipped to
the URDF effort limits). Streams ``~/feedforward`` (Float64MultiArray [t, u (n_a), ud (n_a),
udd (n_a)], order of ``model.actuated``), ``~/reference`` (sensor_msgs/JointState, the tree
coordinates and rates of the reference motion, same stamp as the state answered) and
``~/tracking_error`` ([e, ed] of the actuated joints). ``~/enable`` works; ``~/hold`` is not
offered in this branch.
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
from robot_dynamics.control.d2_feedforward import D2Feedforward
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
        law = dp('law', 'pidc').value
        self.d2 = None
        if law == 'd2_feedforward':          # --- seed 004 branch (see the module docstring)
            return self._init_d2(controller)
        self.ctrl = DynamicsController(
            m, law=law, kp=float(dp('kp', 100.0).value),
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
        if self.d2 is not None:              # --- seed 004 branch
            return self._on_state_d2(msg)
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

    # ------------------------------------------------------------------ law: d2_feedforward (seed 004)
    def _init_d2(self, controller):
        from robot_dynamics.pkm.gough_stewart import RollMotion
        m, dp = self.model, self.declare_parameter
        motion = dp('motion', 'roll').value
        if motion != 'roll':
            raise RobotDynamicsError(f"law d2_feedforward: motion must be 'roll', got {motion!r}")
        roll = RollMotion(theta_min=float(dp('roll_min', -0.5).value),
                          theta_max=float(dp('roll_max', 0.5).value),
                          period=float(dp('roll_period', 1.0).value),
                          p0=np.asarray(dp('roll_center', [0.0, 0.0, 0.2]).value, float))
        self.d2 = D2Feedforward(m, roll, kp=float(dp('kp', 2000.0).value), kd=float(dp('kd', 100.0).value))
        self.d2_limit = np.array([float(m.effort_limit[i]) for i in self.d2.idx_a])
        self.d2_stamp0 = self.d2_last = None
        self.parser = JointStateParser(m)
        self.enabled = True
        self.pub_cmd = self.create_publisher(Float64MultiArray, f'/{controller}/commands', QOS_COMMAND)
        self.pub_err = self.create_publisher(Float64MultiArray, '~/tracking_error', QOS_STATE)
        self.pub_ff = self.create_publisher(Float64MultiArray, '~/feedforward', QOS_STATE)
        self.pub_ref = self.create_publisher(JointState, '~/reference', QOS_STATE)
        self.create_subscription(JointState, 'joint_states', self.on_state, QOS_STATE)
        self.create_service(SetBool, '~/enable', self.on_enable)
        self.get_logger().info(f'law d2_feedforward: roll {roll.theta_min:g}..{roll.theta_max:g} rad, '
                               f'period {roll.period:g} s; commands /{controller}/commands {list(m.actuated)}')

    def _on_state_d2(self, msg):
        q, qd, why = self.parser.parse(msg)
        if why:
            return self._reject(f'joint_states: {why}')
        ns = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        if ns == self.d2_last or not self.enabled:
            return                           # a re-sent state is answered once
        if self.d2_last is None or ns < self.d2_last:
            self.d2_stamp0 = ns              # first state, or the plant was reset
        self.d2_last = ns
        t = (ns - self.d2_stamp0) * 1e-9
        try:
            tau, ref, e, ed = self.d2(t, q, qd)
        except RobotDynamicsError as exc:
            return self._reject(f'd2 feed-forward at t = {t:.4f} s: {exc} (nothing published)')
        if np.any(np.abs(tau) > self.d2_limit):
            self.get_logger().warning('efforts clipped to the effort limits', throttle_duration_sec=1.0)
            tau = np.clip(tau, -self.d2_limit, self.d2_limit)
        self.pub_cmd.publish(Float64MultiArray(data=tau.tolist()))
        self.pub_err.publish(Float64MultiArray(data=np.concatenate([e, ed]).tolist()))
        self.pub_ff.publish(Float64MultiArray(data=[t, *ref.u.tolist(), *ref.ud.tolist(), *ref.udd.tolist()]))
        js = JointState()
        js.header.stamp = msg.header.stamp
        js.name = list(self.model.joint_names)
        js.position, js.velocity = ref.q.tolist(), ref.qd.tolist()
        self.pub_ref.publish(js)
    # ------------------------------------------------------------------ end law: d2_feedforward


def main(args=None):
    """Entry point (console script ``dynamics_node``)."""
    return spin_node(DynamicsNode, args)


if __name__ == '__main__':
    raise SystemExit(main())
