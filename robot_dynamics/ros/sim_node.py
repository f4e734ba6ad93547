"""sim_node: the simulated plant standing in for hardware (ros2_control-compatible topics).

A thin shell around :class:`robot_dynamics.plants.runner.SimRunner` (command hold, hold on
timeout, external loads, real-time stepping, refused steps: see there) and the plant named by
``plant`` (default 'rigid': the closed-chain projection engine, seed 002; see
:mod:`robot_dynamics.plants.registry`) on the multibody integrator named by ``backend``
(default 'rigid': the package's own; 'mujoco': MuJoCo, the actuator models unchanged). Topics, parameters and time bases: docs/ros_interfaces.md
(sim_node).

In: ``<controller>/commands`` (Float64MultiArray, order of ``joints``), ``~/external_wrench``
(WrenchStamped, exerted by the environment on the robot at ``header.frame_id``).
Out: ``joint_states`` (every one-DOF joint, passive ones included; effort = applied generalized
force; stamp = plant time on the wall clock, or the plant time itself with ``publish_clock``);
for a model with multi-DOF joints (a floating base, ball joints: :mod:`robot_dynamics.ros.wire`)
also ``multi_dof_joint_states`` (sensor_msgs/MultiDOFJointState, with every ``joint_states``
message, same stamp: the state a listener pairs with it) and ``/tf`` (tf2_msgs/TFMessage where
tf2_msgs is installed: parent link -> child link of each such joint, a floating base as
``world_frame`` -> base link; at most ``tf_rate`` per second of plant time, 0 = with every
``joint_states``),
``robot_description`` (latched), ``~/holding`` (Bool: on change, else at 20 Hz), ``~/real_time_factor`` (Float64, 1 Hz),
``/clock`` (``publish_clock``, default = ``lockstep``), ``/diagnostics``, and for a plant with
extra states (hydraulic cylinders) ONE complete state per step on ``extra_states_topic``: every
joint as on ``joint_states`` (same stamp), then per cylinder stroke/rate/piston force and
``<cyl>/p_a``, ``<cyl>/p_b`` [Pa], ``<cyl>/u`` [V] (a controller needing joints and pressures of
the same instant subscribes to this one topic); with ``control_state_topic`` every state also
on that topic (the controller's state; ``joint_states`` is then for visualisation and
``joint_states_rate`` decimates it in real time). Services ``~/reset`` (Trigger),
``~/hold`` (SetBool). ``lockstep: true``: one publish period per received command, no
wall-clock step; ``lockstep_republish`` s: re-publish an unchanged state when no command came.
``wait_for_command`` (real time, default false): a due step waits for the answer to the last
state until it comes (the command callback ticks) or the next tick (SimRunner.tick).
``start_topic`` (real time, default '' = at once): the plant clock starts with the first message
of that JointState topic (e.g. the reference) and, with ``start_with_command`` (default true),
a valid command or a publisher on the command topic (a controller that is not up yet does not
find the plant seconds into its motion), ``start_delay`` wall seconds later (default 0: the
rest of the graph finishes starting first); until then the initial state is published without
stepping, like a braked robot waiting for its reference.
"""

import time

from geometry_msgs.msg import WrenchStamped
from rclpy.clock import Clock as SteadyClock, ClockType
from rclpy.node import Node
from rclpy.time import Time
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Float64, Float64MultiArray, String
from std_srvs.srv import SetBool, Trigger

from robot_dynamics.ros.decimator import Decimator
from robot_dynamics.ros.wire import WireState
from robot_dynamics.ros._common import (
    QOS_COMMAND,
    QOS_LATCHED,
    QOS_STATE,
    QOS_TF,
    DiagnosticsPublisher,
    PublisherWatch,
    declare_params,
    extra_states_msg,
    guarded,
    load_model_param,
    multi_dof_msg,
    spin_node,
    tf_message_type,
    tf_msg,
)
from robot_dynamics.plants.runner import runner_from_params, sim_params
from robot_dynamics.parsers.visuals import with_stick_visuals


class SimNode(Node):
    """Fixed-step simulation of the closed-chain plant driven by effort commands."""

    def __init__(self):
        super().__init__('sim_node')
        self.model = m = load_model_param(self, multi_dof=True)
        self._warned = {}
        P = declare_params(self, sim_params(m))
        W = declare_params(
            self,
            {
                'world_frame': ('', "parent frame of a floating base on /tf ('' = world)", None),
                'publish_tf': (True, 'multi-DOF joints on /tf (where tf2_msgs is installed)', None),
                'tf_rate': (0.0, '/tf at most this often [Hz of plant time] (0 = with every joint_states)', (0.0, 1e6)),
            },
        )
        self.wire = WireState(m, W['world_frame'])
        self.lockstep = bool(P['lockstep'])
        self.publish_clock = bool(
            declare_params(
                self, {'publish_clock': (self.lockstep, '/clock + plant-time stamps (default = lockstep)', None)}
            )['publish_clock']
        )
        self.start_seen, self.cmd_seen = False, not bool(P['start_with_command'])
        rt = 0.0 if self.lockstep else 1.0  # the decimations are real-time economies
        self.clock_out = Decimator.from_rate(rt and P['clock_rate'])
        self.js_out = Decimator.from_rate(rt and P['joint_states_rate'])
        self.hold_out, self.last_hold = Decimator(0.05), None
        self.sim = runner_from_params(m, P, log=self._log)
        self.sim.prepare()  # the plant's kernels loaded before its clock runs
        controller = P['controller']
        self.plant = self.sim.plant
        self.pub_js = self.create_publisher(JointState, 'joint_states', QOS_STATE)
        self.pub_md = self.pub_tf = None
        if self.wire.multi:  # a floating base, ball joints: not on joint_states
            from sensor_msgs.msg import MultiDOFJointState

            self.pub_md = self.create_publisher(MultiDOFJointState, 'multi_dof_joint_states', QOS_STATE)
            self.tf_type = tf_message_type() if W['publish_tf'] else None
            if self.tf_type is not None:
                self.pub_tf = self.create_publisher(self.tf_type, '/tf', QOS_TF)
                self.tf_out = Decimator.from_rate(W['tf_rate'])
            self.get_logger().info(
                f'multi-DOF joints {[jt.name for jt in self.wire.multi]} on {self.pub_md.topic_name}'
                + (
                    f' and {self.pub_tf.topic_name} ({", ".join(f"{a} -> {b}" for a, b in self.wire.frames)})'
                    if self.pub_tf is not None
                    else ' (no /tf: ' + ('publish_tf false)' if not W['publish_tf'] else 'tf2_msgs is not installed)')
                )
            )
        self.pub_ctl = (
            self.create_publisher(JointState, P['control_state_topic'], QOS_STATE) if P['control_state_topic'] else None
        )
        self.pub_hold = self.create_publisher(Bool, '~/holding', QOS_STATE)
        self.pub_clock = self.create_publisher(Clock, '/clock', QOS_STATE) if self.publish_clock else None
        self.pub_extra = (
            self.create_publisher(JointState, P['extra_states_topic'], QOS_STATE)
            if hasattr(self.plant, 'extra_states')
            else None
        )
        self.pub_rtf = self.create_publisher(Float64, '~/real_time_factor', QOS_STATE)
        if P['publish_robot_description']:  # (one publisher: robot_state_publisher, when it runs)
            self.create_publisher(String, 'robot_description', QOS_LATCHED).publish(
                String(data=with_stick_visuals(m.urdf_xml))
            )  # RViz draws links without visuals
        self.sub_cmd = self.create_subscription(
            Float64MultiArray, f'{controller}/commands', guarded(self, self.on_command, 'command'), QOS_COMMAND
        )
        self.create_subscription(
            WrenchStamped, '~/external_wrench', guarded(self, self.on_external_wrench, 'external_wrench'), QOS_COMMAND
        )
        self.create_service(Trigger, '~/reset', guarded(self, self.on_reset, 'reset'))
        self.create_service(SetBool, '~/hold', guarded(self, self.on_hold, 'hold'))
        self.diag = DiagnosticsPublisher(self, self._diagnostics, float(P['diagnostics_rate']))
        # one owner per command topic (policy: hold while another publisher is there) and one
        # /clock (reported: every node on simulated time follows both)
        self.cmd_watch = PublisherWatch(self, {self.sub_cmd.topic_name: 1}, on_change=self._on_command_owners)
        sim_time = self.get_parameter('use_sim_time').value
        self.clock_watch = (
            PublisherWatch(self, {'/clock': 1}, on_change=lambda _: self.diag.publish())
            if (self.publish_clock or sim_time) and self.diag.pub is not None
            else None
        )
        # real time: the plant clock starts with the first message of start_topic (if set)
        self.waiting = bool(P['start_topic']) and not self.lockstep
        self.start_delay, self.start_at = float(P['start_delay']), None
        if self.waiting:
            self.create_subscription(JointState, P['start_topic'], guarded(self, self.on_start, 'start'), QOS_STATE)
        steady = SteadyClock(clock_type=ClockType.STEADY_TIME)
        if not self.lockstep:
            self.sim.start(time.monotonic())
            self.ros0 = self._now()
            self.create_timer(1.0 / self.sim.publish_rate, guarded(self, self.tick, 'tick'), clock=steady)
            self.create_timer(1.0, self.report_rtf, clock=steady)
        self.republish, self.last_cmd_wall = float(P['lockstep_republish']), time.monotonic()
        if self.lockstep and self.republish > 0:
            self.create_timer(self.republish, self.on_idle)
        self.publish()
        self.get_logger().info(
            f'{m.name}: {self.sim.rate:g} Hz integration, {self.pub_js.topic_name} at {self.sim.publish_rate:g} Hz, commands '
            f'on {self.sub_cmd.topic_name} for {self.sim.joints}, hold={self.sim.hold_mode} after {self.sim.timeout:g} s '
            f'without a valid command' + (', lock-step' if self.lockstep else '')
        )

    def _diagnostics(self):
        d = {**self.sim.diagnostics(), 'waiting_for_start': self.waiting}
        clock = self.clock_watch.problem if getattr(self, 'clock_watch', None) is not None else None
        if clock:
            d['error'] = '; '.join(e for e in (d.get('error'), clock) if e)
        return d

    def _on_command_owners(self, problem):
        """Two publishers on the command topic: hold until one remains (a second process
        commanding the joints is a fault, not an input to arbitrate)."""
        self.sim.conflict = f'{problem}: holding until one remains' if problem else None
        if self.diag.pub is not None:
            self.diag.publish()

    def _now(self):
        """Node clock [s]; in lock-step the plant time (no wall clock decides anything)."""
        return self.plant.t if self.lockstep else self.get_clock().now().nanoseconds * 1e-9

    def _log(self, level, text, key=None):
        now = time.monotonic()
        if key is None or now - self._warned.get(key, -1e9) >= 2.0:  # throttled per key
            self._warned[key] = now
            if level == 'info':  # rclpy: one severity per call site
                self.get_logger().info(text)
            else:
                self.get_logger().warning(text)

    def on_command(self, msg):
        steps, reason = self.sim.command(msg.data, self._now(), time.monotonic())
        if reason:
            return self._log('warning', f'rejected command: {reason}', 'command')
        if self.waiting and not self.cmd_seen:
            self.cmd_seen = True
            self._maybe_start('a command')
        self.last_cmd_wall = time.monotonic()
        if steps:
            self.sim.advance(steps, self._now())
            self.publish()
        elif self.sim.deferred and not self.waiting:  # real time: the step waited for this
            self.tick()

    def on_external_wrench(self, msg):
        f, t = msg.wrench.force, msg.wrench.torque
        reason = self.sim.external_wrench(msg.header.frame_id, [f.x, f.y, f.z, t.x, t.y, t.z], self._now())
        if reason:
            self._log('warning', f'rejected external_wrench: {reason}', 'wrench:' + reason[:12])  # per reason

    def on_idle(self):
        if time.monotonic() - self.last_cmd_wall >= self.republish:
            self.publish()  # same state, same stamp (controllers answer once)

    def on_reset(self, request, response):
        self.sim.reset(None if self.lockstep else time.monotonic())
        if not self.lockstep:
            self.ros0 = self.get_clock().now().nanoseconds * 1e-9
        for frame in self.sim.ext_rx:  # loads survive the reset; their age restarts
            self.sim.ext_rx[frame] = self._now()
        response.success, response.message = True, f'reset to t = 0, q = {self.plant.q.tolist()}'
        self.publish()
        return response

    def on_hold(self, request, response):
        self.sim.forced_hold = bool(request.data)
        response.success, response.message = True, f'hold forced {"on" if request.data else "off"}'
        return response

    def on_start(self, msg):
        """start_topic: its first message (and, with ``start_with_command``, a valid command)
        starts the plant clock (plant t = 0 is now)."""
        if self.waiting and not self.start_seen:
            self.start_seen = True
            self._maybe_start('the start message')

    def _maybe_start(self, what):
        if self.waiting and self.start_seen and self.cmd_seen:
            if self.start_delay > 0.0 and self.start_at is None:  # (tick starts it)
                self.start_at, self.start_what = time.monotonic() + self.start_delay, what
                return
            if self.start_at is not None and time.monotonic() < self.start_at:
                return
            self.waiting = False
            self.sim.start(time.monotonic())
            self.ros0 = self.get_clock().now().nanoseconds * 1e-9
            self.get_logger().info(f'start_topic: plant clock started with {what}')

    def tick(self):
        if self.waiting:  # start_topic: no step before its first message
            if self.start_at is not None and time.monotonic() >= self.start_at:
                return self._maybe_start(f'{self.start_what} (+ start_delay {self.start_delay:g} s)')
            if self.start_seen and not self.cmd_seen and self.count_publishers(self.sub_cmd.topic_name):
                self.cmd_seen = True  # the controller's command publisher is up
                return self._maybe_start("the controller's command publisher")
            self.sim.start(time.monotonic())
            self.ros0 = self.get_clock().now().nanoseconds * 1e-9
            return self.publish()
        if self.sim.tick(time.monotonic(), self._now()):
            self.publish()
            self.sim.published(time.monotonic())

    def report_rtf(self):
        if self.waiting:
            return
        rtf = self.sim.update_rtf(time.monotonic())
        if rtf is not None:
            self.pub_rtf.publish(Float64(data=float(rtf)))
            if rtf < 0.95:
                self._log(
                    'warning',
                    f'real-time factor {rtf:.2f}: the machine does not keep up with '
                    f'{self.sim.rate:g} Hz integration; simulated time slows down (step stays '
                    f'{1e3 / self.sim.rate:g} ms), {self.sim.slip:.2f} s behind wall time',
                    'rtf',
                )

    def publish(self):
        p, js = self.plant, JointState()
        if self.pub_clock is not None:  # simulated time: stamps = plant time
            js.header.stamp = Time(nanoseconds=int(round(p.t * 1e9))).to_msg()
            if self.clock_out.due(p.t):  # (every node on use_sim_time takes each /clock)
                self.pub_clock.publish(Clock(clock=js.header.stamp))
        elif self.lockstep:
            js.header.stamp = self.get_clock().now().to_msg()
        else:  # real time: plant time on the wall clock
            js.header.stamp = Time(nanoseconds=int(round((self.ros0 + self.sim.slip + p.t) * 1e9))).to_msg()
        js.name = self.wire.names
        js.position, js.velocity, js.effort = self.wire.joint_values(p.q, p.qd, self.sim.applied)
        if self.pub_ctl is not None:  # the controller's state: every state
            self.pub_ctl.publish(js)
        if (self.pub_extra is None and self.pub_ctl is None) or self.waiting or self.js_out.due(p.t):
            if self.pub_md is not None:  # (first: a listener pairs it with the joint_states)
                self.pub_md.publish(multi_dof_msg(self.wire, p.q, p.qd, self.sim.applied, js.header.stamp))
                if self.pub_tf is not None and self.tf_out.due(p.t):
                    self.pub_tf.publish(tf_msg(self.tf_type, self.wire, p.q, js.header.stamp))
            self.pub_js.publish(js)
        if self.pub_extra is not None:  # plant extra states hook: same stamp
            self.pub_extra.publish(extra_states_msg(self.plant.extra_states(), js.header.stamp, js))
        if self.hold_out.due(time.monotonic()) | (self.sim.holding != self.last_hold):
            self.last_hold = self.sim.holding  # the hold flag: on change, else at 20 Hz
            self.pub_hold.publish(Bool(data=self.sim.holding))


def main(args=None):
    """Entry point (console script ``sim_node``)."""
    return spin_node(SimNode, args)


if __name__ == '__main__':
    raise SystemExit(main())
