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

``law: embedding_feedforward`` (seed 003, task-space mode with the constraint-embedding
formulation; separate branch, the laws above are unchanged): the task reference is turned into
joints by ik_node; this law takes the feed-forward actuator forces u of the IK reference (task-space
inverse dynamics, eq. 45) from ik_node's ``feedforward`` topic (parameter ``feedforward_topic``,
default ``/ik_node/feedforward_effort``: sensor_msgs/JointState, stamp = the reference sample,
effort = u, order/names of ``model.actuated``) and the independent-joint reference from
``reference/joint_trajectory`` (p/v/a) and commands, once per NEW joint-state stamp,
``u + kp (theta - q) + kd (thetad - qd)`` on the actuated joints (which must be the independent
ones; clipped to the URDF effort limits). The end-effector load is the WrenchStamped input
``/ik_node/ee_wrench`` (force/torque on the platform, world axes, about the platform frame
origin): it enters u in ik_node, so it reaches this command with the reference. Matching:
a state is answered as soon as a reference AND a feed-forward sample with the state's stamp
have arrived (lock-step: the loop waits for the reference pipeline, no extrapolation); if none
arrives within ``ref_wait`` seconds of wall time, the latest samples are extrapolated to the
state stamp (reference 2nd order from its own derivatives, u linearly from its last two samples)
and the count of such answers is reported in ``~/feedforward``. ``ff_lead`` [s] (default 0):
the feed-forward used is u extrapolated linearly (from the previous feed-forward sample) to
stamp + ff_lead; half the control period makes the held command equal to the interval mean of
u (compensates the zero-order hold of the plant). Streams ``~/tracking_error``
([e, ed] of the actuated joints) and ``~/feedforward`` (Float64MultiArray [age of the sample
used (s), n_extrapolated, u (n_a) of the sample, u commanded (n_a, with ff_lead)]).
``~/enable`` works; ``~/hold`` is not offered.
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
from robot_dynamics.nodes._common import (ReferenceSync, QOS_COMMAND, QOS_STATE, JointStateParser,
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
        self.emb = None
        if law == 'embedding_feedforward':   # --- seed 003 branch (see the module docstring)
            return self._init_emb(controller)
        self.ctrl = DynamicsController(
            m, law=law, kp=float(dp('kp', 100.0).value),
            kd=float(dp('kd', 20.0).value), joints=list(dp('joints', list(m.actuated)).value),
            reference=self.reference_mode, task_frame=dp('task_frame', 'tool').value,
            task_axes=list(dp('task_axes', [0, 1, 2]).value))
        self.add_on_set_parameters_callback(self.on_params)
        # reference_sync (lock-step graphs): answer a state only once the reference sample with
        # the same stamp has arrived (fallback after ref_wait s of wall time: extrapolate)
        self.sync = (ReferenceSync(self, lambda: getattr(self.ctrl, 'ref_stamp', None), self._control,
                                   float(dp('ref_wait', 0.2).value))
                     if dp('reference_sync', False).value else None)
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
            return self._reject(f'reference: {exc}')
        if self.sync is not None:
            self.sync.release()

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
                return self._reject(f'task reference: {exc}')
            if self.sync is not None:
                self.sync.release()

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
        if self.emb is not None:             # --- seed 003 branch
            return self._on_state_emb(msg)
        q, qd, why = self.parser.parse(msg)
        if why:
            return self._reject(f'joint_states: {why}')
        self.last_q = q
        if not self.enabled or self.ctrl.ref is None:
            return
        if self.sync is not None and self.sync.defer(msg, q, qd):
            return                          # wait for the reference of this stamp
        self._control(msg, q, qd)

    def _control(self, msg, q, qd):
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

    # ------------------------------------------------------------------ law: embedding_feedforward (seed 003)
    def _init_emb(self, controller):
        from collections import OrderedDict

        from rclpy.clock import Clock, ClockType
        m, dp = self.model, self.declare_parameter
        if sorted(m.actuated) != sorted(m.independent):
            raise RobotDynamicsError('law embedding_feedforward: the actuated joints must be the '
                                     f'independent ones ({list(m.actuated)} vs {list(m.independent)})')
        self.emb = True
        self.kp = float(dp('kp', 1500.0).value)
        self.kd = float(dp('kd', 80.0).value)
        self.emb_wait = float(dp('ref_wait', 0.1).value)
        self.emb_lead = float(dp('ff_lead', 0.0).value)
        topic = dp('feedforward_topic', '/ik_node/feedforward_effort').value
        self.emb_idx = [m.joint_index(j) for j in m.actuated]
        self.emb_limit = np.array([float(m.effort_limit[i]) for i in self.emb_idx])
        self.emb_ref, self.emb_ff = OrderedDict(), OrderedDict()   # stamp ns -> sample
        self.emb_pending = None                                    # (ns, q, qd, wall time)
        self.emb_last = None
        self.emb_nextrap = 0
        self.add_on_set_parameters_callback(self.on_params_emb)
        self.parser = JointStateParser(m)
        self.enabled = True
        self.pub_cmd = self.create_publisher(Float64MultiArray, f'/{controller}/commands', QOS_COMMAND)
        self.pub_err = self.create_publisher(Float64MultiArray, '~/tracking_error', QOS_STATE)
        self.pub_ff = self.create_publisher(Float64MultiArray, '~/feedforward', QOS_STATE)
        self.create_subscription(JointState, 'joint_states', self.on_state, QOS_STATE)
        self.create_subscription(JointTrajectory, 'reference/joint_trajectory', self._on_ref_emb, QOS_COMMAND)
        self.create_subscription(JointState, topic, self._on_ff_emb, QOS_COMMAND)
        self.create_service(SetBool, '~/enable', self.on_enable)
        self.create_timer(0.005, self._emb_timeout, clock=Clock(clock_type=ClockType.STEADY_TIME))
        self.get_logger().info(f'law embedding_feedforward: u from {topic} + PD (kp {self.kp:g}, '
                               f'kd {self.kd:g}); commands /{controller}/commands {list(m.actuated)}')

    def on_params_emb(self, params):
        for p in params:
            if p.name in ('kp', 'kd'):
                if not (isinstance(p.value, (int, float)) and p.value >= 0):
                    return SetParametersResult(successful=False, reason=f'{p.name} must be >= 0')
                setattr(self, p.name, float(p.value))
        return SetParametersResult(successful=True)

    @staticmethod
    def _ns(stamp):
        return stamp.sec * 1_000_000_000 + stamp.nanosec

    def _emb_store(self, buf, ns, val):
        buf[ns] = val
        while len(buf) > 50:
            buf.popitem(last=False)
        self._emb_try(False)

    def _on_ref_emb(self, msg):
        if not msg.points:
            return self._reject('reference without points')
        pt, names = msg.points[0], list(msg.joint_names)
        try:
            k = [names.index(j) for j in self.model.actuated]
            arr = [np.array([seq[i] for i in k], float) for seq in (pt.positions, pt.velocities, pt.accelerations)]
        except (ValueError, IndexError):
            return self._reject(f'reference: need p/v/a of {list(self.model.actuated)}, got {names}')
        if not all(np.all(np.isfinite(a)) for a in arr):
            return self._reject('reference: non-finite values')
        self._emb_store(self.emb_ref, self._ns(msg.header.stamp), arr)

    def _on_ff_emb(self, msg):
        names = list(msg.name)
        try:
            u = np.array([msg.effort[names.index(j)] for j in self.model.actuated], float)
        except (ValueError, IndexError):
            return self._reject(f'feed-forward: need efforts of {list(self.model.actuated)}, got {names}')
        if not np.all(np.isfinite(u)):
            return self._reject('feed-forward: non-finite values')
        self._emb_store(self.emb_ff, self._ns(msg.header.stamp), u)

    def _on_state_emb(self, msg):
        q, qd, why = self.parser.parse(msg)
        if why:
            return self._reject(f'joint_states: {why}')
        ns = self._ns(msg.header.stamp)
        if ns == self.emb_last or not self.enabled:
            return                           # a re-sent state is answered once
        import time
        self.emb_pending = (ns, q, qd, time.monotonic())
        self._emb_try(False)

    def _emb_timeout(self):
        import time
        if self.emb_pending is not None and time.monotonic() - self.emb_pending[3] > self.emb_wait:
            self._emb_try(True)

    def _emb_try(self, late):
        if self.emb_pending is None:
            return
        ns, q, qd, _ = self.emb_pending
        if ns in self.emb_ref and ns in self.emb_ff:
            ref, u, age = self.emb_ref[ns], self.emb_ff[ns], 0.0
        elif late and self.emb_ref and self.emb_ff:
            nr = max(self.emb_ref, key=lambda k: (k <= ns, k if k <= ns else -k))
            p, v, a = self.emb_ref[nr]
            dt = (ns - nr) * 1e-9
            ref = (p + v * dt + 0.5 * a * dt * dt, v + a * dt, a)
            ks = sorted(self.emb_ff)
            nf = max(ks, key=lambda k: (k <= ns, k if k <= ns else -k))
            u = self.emb_ff[nf]
            i = ks.index(nf)
            if i > 0:
                u = u + (u - self.emb_ff[ks[i - 1]]) * (ns - nf) / (nf - ks[i - 1])
            age = (ns - min(nr, nf)) * 1e-9
            self.emb_nextrap += 1
            self.get_logger().warning(f'no reference for the state at {ns * 1e-9:.4f} s within '
                                      f'{self.emb_wait:g} s: extrapolated over {age:.4f} s',
                                      throttle_duration_sec=1.0)
        else:
            return
        u_ff = u
        if self.emb_lead:                    # ZOH compensation: u at stamp + ff_lead (linear)
            ks = [k for k in self.emb_ff if k < ns]
            if ks:
                k = max(ks)
                u_ff = u + (u - self.emb_ff[k]) * (self.emb_lead / ((ns - k) * 1e-9))
        self.emb_pending, self.emb_last = None, ns
        i = self.emb_idx
        e, ed = ref[0] - q[i], ref[1] - qd[i]
        tau = u_ff + self.kp * e + self.kd * ed
        if not np.all(np.isfinite(tau)):
            return self._reject('non-finite effort (not published)')
        if np.any(np.abs(tau) > self.emb_limit):
            self.get_logger().warning('efforts clipped to the effort limits', throttle_duration_sec=1.0)
            tau = np.clip(tau, -self.emb_limit, self.emb_limit)
        self.pub_cmd.publish(Float64MultiArray(data=tau.tolist()))
        self.pub_err.publish(Float64MultiArray(data=np.concatenate([e, ed]).tolist()))
        self.pub_ff.publish(Float64MultiArray(data=[age, float(self.emb_nextrap), *u.tolist(), *u_ff.tolist()]))
    # ------------------------------------------------------------------ end law: embedding_feedforward


def main(args=None):
    """Entry point (console script ``dynamics_node``)."""
    return spin_node(DynamicsNode, args)


if __name__ == '__main__':
    raise SystemExit(main())
