"""controller_node: one generic controller node hosting any law of the core control loop.

Translates messages only; the loop (:class:`robot_dynamics.control.loop.ControlLoop`: parsing,
staleness, reference matching, limits, safe command, timing) and the law
(:func:`robot_dynamics.control.laws.make_law`) are core objects. A ``joint_states`` message
takes one call: :meth:`ControlLoop.on_state` (which calls the law) returns the command this
node publishes. ``law``: ``pidc`` |
``computed_torque`` (reference ``joint``: ``reference/joint_trajectory``; ``task``:
``reference/pose`` + ``reference/twist`` + ``reference/accel``, paired by stamp, selected
``task_axes`` of the ``task_frame`` origin) | ``feedforward_pd`` = ``embedding_feedforward`` = ``d2_feedforward``
(``reference/joint_trajectory`` of the actuated joints; the feed-forward efforts either in the
trajectory point's ``effort`` or as ``sensor_msgs/JointState`` efforts on ``feedforward_topic``,
matched by stamp) | ``sea_flatness`` (``poles``, ``lambda_poles``, ``preload``; EE reference
with derivatives up to snap: ``reference/pose`` for the stamp and trajectory_node's
``reference/derivatives`` rows 0..4, paired by their position row). Parameters and topics: docs/ros_interfaces.md.

Input ``joint_states`` (parameter ``state_topic``; extra named measurements a law needs, e.g.
chamber pressures, are entries of the same message): a state older on arrival than
``max_state_age`` (default 0 = one period; the node fell behind) is stored but not answered;
the newest state is answered (at the latest by the timer: ``timer_rate``, default 0 = ``rate``;
it is also the staleness watchdog). Outputs
``/<controller>/commands`` (Float64MultiArray, order of ``joints``), ``~/tracking_error``
([e, ed]), ``~/feedforward`` (feed-forward laws: [age of the sample, samples extrapolated,
u (p), u commanded (p)]), ``~/constraint_wrench/<loop>`` (pidc, ``publish_wrenches``),
``/diagnostics`` (diagnostic_msgs/DiagnosticArray at ``diagnostics_rate``). Services
``~/enable`` (SetBool; disabling publishes the safe command once), ``~/hold`` (Trigger: hold
the current coordinates).
"""

import time

import numpy as np
from geometry_msgs.msg import AccelStamped, PoseStamped, TwistStamped, WrenchStamped
from rcl_interfaces.msg import SetParametersResult
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import SetBool, Trigger
from trajectory_msgs.msg import JointTrajectory

from robot_dynamics.control.loop import ControlLoop, SamplePairing, StampedParts
from robot_dynamics.control.params import (
    CONTROLLER_PARAMS,
    FLOATS,
    GAINS,
    RUNTIME,
    controller_spec,
    make_law_from_params,
)
from robot_dynamics.ros.decimator import Decimator
from robot_dynamics.ros._common import (
    QOS_COMMAND,
    QOS_REFERENCE,
    QOS_STATE,
    DiagnosticsPublisher,
    PublisherWatch,
    declare_params,
    guarded,
    labelled_array,
    load_model_param,
    spin_node,
    stamp_sec,
    time_msg,
    warn_throttled,
    wrench_stamped,
)


class ControllerNode(Node):
    """Generic controller: ControlLoop + one law, chosen by parameters."""

    def __init__(self, name='controller_node'):
        super().__init__(name)
        self.model = m = load_model_param(self)
        self.p = p = self._params()
        self.law = self._build_law(p)
        law = self.law.name
        self.loop = ControlLoop.from_params(self.law, p)
        self.task, self._warned = StampedParts(3), {}
        t0 = time.monotonic()
        self.law.prepare()  # load/compile the kernels now, not on the first state
        self.get_logger().info(f'law prepared in {time.monotonic() - t0:.2f} s')
        self.pub_cmd = self.create_publisher(Float64MultiArray, f'{p["controller"]}/commands', QOS_COMMAND)
        self.pub_err = self.create_publisher(Float64MultiArray, '~/tracking_error', QOS_STATE)
        self.pub_ff = (
            self.create_publisher(Float64MultiArray, '~/feedforward', QOS_STATE) if self.law.needs_feedforward else None
        )
        self.frames = {lp.name: lp.frame_a for lp in m.loops}
        self.pub_w = (
            {
                lp.name: self.create_publisher(WrenchStamped, f'~/constraint_wrench/{lp.name}', QOS_STATE)
                for lp in m.loops
            }
            if p['publish_wrenches'] and hasattr(self.law, 'predicted_wrenches')
            else {}
        )
        if self.LABELLED_DIAGNOSTICS:  # the law's info labels / values on ~/diagnostics
            self.pub_diag = self.create_publisher(Float64MultiArray, '~/diagnostics', QOS_STATE)
            self.diag_out = Decimator(1.0 / max(float(p['diagnostics_rate']), 1e-3))
        self.create_subscription(JointState, p['state_topic'], guarded(self, self.on_state, 'joint_states'), QOS_STATE)
        if self.law.reference_order > 2:
            # task reference with derivatives up to snap (sea_flatness): the stamped pose and
            # trajectory_node's reference/derivatives (rows 0..order), paired by their position
            self._pending = SamplePairing()
            self.create_subscription(
                PoseStamped, 'reference/pose', guarded(self, self.on_pose, 'reference'), QOS_REFERENCE
            )
            self.create_subscription(
                Float64MultiArray, 'reference/derivatives', guarded(self, self.on_derivs, 'reference'), QOS_REFERENCE
            )
        elif self.law.reference == 'task':
            for k, (typ, topic) in enumerate(((PoseStamped, 'pose'), (TwistStamped, 'twist'), (AccelStamped, 'accel'))):
                self.create_subscription(
                    typ,
                    f'reference/{topic}',
                    guarded(self, lambda msg, k=k: self.on_task(k, msg), 'reference'),
                    QOS_REFERENCE,
                )
        else:
            self.create_subscription(
                JointTrajectory,
                'reference/joint_trajectory',
                guarded(self, self.on_joint_ref, 'reference'),
                QOS_REFERENCE,
            )
        if self.law.needs_feedforward and p['feedforward_topic']:
            self.create_subscription(
                JointState, p['feedforward_topic'], guarded(self, self.on_ff, 'feedforward'), QOS_REFERENCE
            )
        self.create_service(SetBool, '~/enable', guarded(self, self.on_enable, 'enable'))
        self.create_service(Trigger, '~/hold', guarded(self, self.on_hold, 'hold'))
        self.add_on_set_parameters_callback(self.on_params)
        # watchdog / lock-step fallback: steady (wall) timer at the control rate; staleness is
        # judged on the wall clock in real time (also on the plant clock: /clock stops with the
        # plant) and on the node clock in lock-step (simulated time: no wall-clock step)
        self.create_timer(
            1.0 / (p['timer_rate'] or p['rate']),
            guarded(self, self._answer, 'timer'),
            clock=Clock(clock_type=ClockType.STEADY_TIME),
        )
        self.diag = DiagnosticsPublisher(self, self._diagnostics, min(p['diagnostics_rate'], 2.0))
        # one owner per command topic (this node) and one /clock: another publisher is reported
        # at ERROR (the plant holds while its command topic has two publishers)
        watched = {self.pub_cmd.topic_name: 1}
        if self.get_parameter('use_sim_time').value:
            watched['/clock'] = 1
        self.watch = PublisherWatch(self, watched, on_change=lambda _: self.diag.pub and self.diag.publish())
        self.get_logger().info(
            f'law {law}, reference {self.law.coords}, commands '
            f'{self.pub_cmd.topic_name} {self.law.joints}, limits '
            f'{np.round(self.loop.effort_limit, 3).tolist()}, safe {p["safe"]}'
        )

    def _diagnostics(self):
        d = self.loop.diagnostics()
        if getattr(self, 'watch', None) is not None and self.watch.problem:
            d['error'] = self.watch.problem
        return d

    def _build_law(self, p):
        return make_law_from_params(self.model, p)

    def _on_command(self, c):
        """A law-specific output after each (non-safe) command: with ``LABELLED_DIAGNOSTICS``,
        the law's ``info`` labels and values on ``~/diagnostics`` (Float64MultiArray, labels in
        ``layout.dim[0].label``) at ``diagnostics_rate`` Hz of state time."""
        if self.LABELLED_DIAGNOSTICS and self.diag_out.due(c.stamp):
            self.pub_diag.publish(labelled_array(c.info['labels'], c.info['values']))

    LABELLED_DIAGNOSTICS = False
    PARAMS = CONTROLLER_PARAMS
    RUNTIME = RUNTIME

    def _params(self, extra=None):
        p = declare_params(self, controller_spec(extra), runtime=self.RUNTIME)
        p.update({k: float(p[k]) for k in FLOATS})
        p['joints'] = [j for j in p['joints'] if j]
        return p

    def _now(self):
        return self.get_clock().now().nanoseconds * 1e-9

    def _warn(self, text):
        warn_throttled(self, self._warned, text)

    # ------------------------------------------------------------------ inputs
    def on_state(self, msg):
        c, why = self.loop.on_state(
            msg.name, msg.position, msg.velocity, stamp_sec(msg.header.stamp), self._now(), time.monotonic()
        )
        if why:
            self._warn(why)
        if c is not None:
            self._send(c)

    def on_joint_ref(self, msg):
        if not msg.points:
            return self._warn('rejected reference: no points')
        pt, stamp, names = msg.points[0], stamp_sec(msg.header.stamp), list(msg.joint_names)
        why = self.loop.set_reference(pt.positions, pt.velocities, pt.accelerations, stamp=stamp, names=names)
        if not why and self.law.needs_feedforward and len(pt.effort) == len(names):
            why = self.loop.set_feedforward(pt.effort, stamp=stamp, names=names)
        if why:
            return self._warn(f'rejected reference: {why}')
        self._answer()

    def on_ff(self, msg):
        why = self.loop.set_feedforward(msg.effort, stamp=stamp_sec(msg.header.stamp), names=list(msg.name))
        if why:
            return self._warn(f'rejected feed-forward: {why}')
        self._answer()

    def on_task(self, k, msg):
        vec = msg.pose.position if k == 0 else msg.twist.linear if k == 1 else msg.accel.linear
        st = msg.header.stamp
        sample = self.task.add(k, (st.sec, st.nanosec), np.array([vec.x, vec.y, vec.z]))
        if sample is None:  # the pose, twist and accel of one stamp, paired
            return
        ax = self.law.task_axes
        why = self.loop.set_reference(sample[0][ax], sample[1][ax], sample[2][ax], stamp=stamp_sec(st))
        if why:
            return self._warn(f'rejected task reference: {why}')
        self._answer()

    def on_pose(self, msg):
        x = msg.pose.position
        self._pair(0, (x.x, x.y, x.z), stamp_sec(msg.header.stamp))

    def on_derivs(self, msg):
        d = np.asarray(msg.data, float)
        n = msg.layout.dim[1].size if len(msg.layout.dim) > 1 else 3
        if n < 1 or d.size % n or d.size < n:
            return self._warn(f'rejected reference/derivatives: {d.size} values, {n} columns')
        d = d.reshape(-1, n)
        self._pair(1, tuple(d[0][:3]), d)  # key: the position (the pose's)

    def _pair(self, k, key, item):
        got = self._pending.add(k, key, item)
        if got is None:
            return
        stamp, d = got
        why = self.loop.set_reference(None, stamp=stamp, derivs=d[:, list(self.law.task_axes)])
        if why:
            return self._warn(f'rejected task reference: {why}')
        self._answer()

    # ------------------------------------------------------------------ output
    def _answer(self):
        c = self.loop.update(self._now(), time.monotonic())
        if c is not None:
            self._send(c)

    def _send(self, c):
        """Publish a command of the loop, and its auxiliary outputs when they are due."""
        self.pub_cmd.publish(Float64MultiArray(data=c.effort.tolist()))
        if c.repeated:
            return
        if c.safe:
            return self._warn(f'safe command: {c.reason}')
        if c.clipped:
            self._warn('efforts clipped to the effort limits')
        if 'not_controllable' in c.info:
            self._warn(f'not controllable: {c.info["not_controllable"]}')
        self._on_command(c)
        if not c.report:
            return
        self.pub_err.publish(Float64MultiArray(data=np.concatenate([c.e, c.ed]).tolist()))
        if self.pub_ff is not None:
            n_ex = float(self.loop.count['extrapolated'])
            self.pub_ff.publish(
                Float64MultiArray(data=[c.extrapolated, n_ex, *c.sample.effort.tolist(), *c.info['u'].tolist()])
            )
        if self.pub_w and 'tau' in c.info:
            stamp = time_msg(c.stamp)
            for name, w in self.law.predicted_wrenches(c.state.q, c.state.qd, c.info['tau']).items():
                self.pub_w[name].publish(wrench_stamped(self.frames[name], w, stamp))

    # ------------------------------------------------------------------ services, parameters
    def on_enable(self, request, response):
        self.loop.active = bool(request.data)
        if not self.loop.active:
            self.pub_cmd.publish(Float64MultiArray(data=self.loop.safe_effort().tolist()))
        response.success, response.message = True, f'controller {"enabled" if self.loop.active else "disabled"}'
        return response

    def on_hold(self, request, response):
        response.success, response.message = self.loop.hold_here()
        return response

    def gain_step_refused(self, params):
        """None, or why a run-time change of a gain (:data:`GAINS`) is refused: beyond
        ``max_gain_change`` times its running value (from zero: times its start value)."""
        f = self.p['max_gain_change']
        for prm in params:
            if prm.name not in GAINS or not isinstance(prm.value, (int, float)):
                continue
            cur, new = float(self.get_parameter(prm.name).value), float(prm.value)
            base = cur if cur > 0 else float(self.p.get(prm.name, 0.0))
            if new == cur or (base > 0 and base / f <= new <= base * f):
                continue
            return (
                f'{prm.name} = {new:g} refused: a running gain changes by at most a factor '
                f'max_gain_change = {f:g} per step ({base / f:g} .. {base * f:g} from {cur:g})'
            )
        return None

    def on_params(self, params):
        why = self.gain_step_refused(params)  # ranges and read-only: enforced by the descriptors
        if why:
            return SetParametersResult(successful=False, reason=why)
        for prm in params:
            if prm.name in ('kp', 'kd'):
                setattr(self.law, prm.name, float(prm.value))
        return SetParametersResult(successful=True)


def main(args=None):
    """Entry point (console scripts ``controller_node`` and ``dynamics_node``)."""
    return spin_node(ControllerNode, args)


if __name__ == '__main__':
    raise SystemExit(main())
