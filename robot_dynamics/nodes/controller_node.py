"""controller_node: one generic controller node hosting any law of the core control loop.

Translates messages only; the loop (:class:`robot_dynamics.control.loop.ControlLoop`: parsing,
staleness, reference matching, limits, safe command, timing) and the law
(:func:`robot_dynamics.control.laws.make_law`) are core objects. ``law``: ``pidc`` |
``computed_torque`` (reference ``joint``: ``reference/joint_trajectory``; ``task``:
``reference/pose`` + ``reference/twist`` + ``reference/accel``, selected ``task_axes`` of the
``task_frame`` origin) | ``feedforward_pd`` = ``embedding_feedforward`` = ``d2_feedforward``
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

from robot_dynamics.control.laws import make_law
from robot_dynamics.control.loop import ControlLoop
from robot_dynamics.nodes._common import (QOS_COMMAND, QOS_STATE, DiagnosticsPublisher,
                                          declare_params, guarded, load_model_param, spin_node,
                                          stamp_sec)



class ControllerNode(Node):
    """Generic controller: ControlLoop + one law, chosen by parameters."""

    def __init__(self, name='controller_node'):
        super().__init__(name)
        self.model = m = load_model_param(self)
        self.p = p = self._params()
        self.law = self._build_law(p)
        law = self.law.name
        self.loop = ControlLoop(
            self.law, period=1.0 / p['rate'], state_timeout=p['state_timeout'],
            reference_timeout=p['reference_timeout'], max_extrapolation=p['max_extrapolation'],
            ref_wait=p['ref_wait'], sync=p['reference_sync'], max_effort=p['max_effort'] or None,
            safe=p['safe'], hold_damping=p['hold_damping'], ff_lead=p['ff_lead'],
            max_future=p['max_future'], wait_first_reference=p['wait_first_reference'])
        self.enabled, self.task, self._warned, self._last_err = True, {}, {}, -1e9
        t0 = time.monotonic()
        self.law.prepare()                   # load/compile the kernels now, not on the first state
        self.get_logger().info(f'law prepared in {time.monotonic() - t0:.2f} s')
        self.pub_cmd = self.create_publisher(Float64MultiArray, f'{p["controller"]}/commands', QOS_COMMAND)
        self.pub_err = self.create_publisher(Float64MultiArray, '~/tracking_error', QOS_STATE)
        self.pub_ff = (self.create_publisher(Float64MultiArray, '~/feedforward', QOS_STATE)
                       if self.law.needs_feedforward else None)
        self.pub_w = ({lp.name: self.create_publisher(WrenchStamped, f'~/constraint_wrench/{lp.name}', QOS_STATE)
                       for lp in m.loops} if p['publish_wrenches'] and hasattr(self.law, 'predicted_wrenches') else {})
        self.create_subscription(JointState, p['state_topic'], guarded(self, self.on_state, 'joint_states'), QOS_STATE)
        if getattr(self.law, 'reference_order', 2) > 2:
            # task reference with derivatives up to snap (sea_flatness): the stamped pose and
            # trajectory_node's reference/derivatives (rows 0..order), paired by their position
            self._pending = ({}, {})
            self.create_subscription(PoseStamped, 'reference/pose', guarded(self, self.on_pose, 'reference'), QOS_COMMAND)
            self.create_subscription(Float64MultiArray, 'reference/derivatives',
                                     guarded(self, self.on_derivs, 'reference'), QOS_COMMAND)
        elif getattr(self.law, 'reference', 'joint') == 'task':
            for k, (typ, topic) in enumerate(((PoseStamped, 'pose'), (TwistStamped, 'twist'), (AccelStamped, 'accel'))):
                self.create_subscription(typ, f'reference/{topic}', guarded(
                    self, lambda msg, k=k: self.on_task(k, msg), 'reference'), QOS_COMMAND)
        else:
            self.create_subscription(JointTrajectory, 'reference/joint_trajectory',
                                     guarded(self, self.on_joint_ref, 'reference'), QOS_COMMAND)
        if self.law.needs_feedforward and p['feedforward_topic']:
            self.create_subscription(JointState, p['feedforward_topic'], guarded(self, self.on_ff, 'feedforward'), QOS_COMMAND)
        self.create_service(SetBool, '~/enable', guarded(self, self.on_enable, 'enable'))
        self.create_service(Trigger, '~/hold', guarded(self, self.on_hold, 'hold'))
        self.add_on_set_parameters_callback(self.on_params)
        # watchdog / lock-step fallback: steady (wall) timer at the control rate; staleness is
        # judged on the node clock (simulated time in a lock-step graph: no wall-clock step)
        self.create_timer(1.0 / (p['timer_rate'] or p['rate']), guarded(self, self._answer, 'timer'),
                          clock=Clock(clock_type=ClockType.STEADY_TIME))
        self.diag = DiagnosticsPublisher(self, self.loop.diagnostics, min(p['diagnostics_rate'], 2.0))
        self.get_logger().info(f'law {law}, reference {self.law.coords}, commands '
                               f'{self.pub_cmd.topic_name} {self.law.joints}, limits '
                               f'{np.round(self.loop.effort_limit, 3).tolist()}, safe {p["safe"]}')

    def _build_law(self, p):
        kw = dict(kp=p['kp'], kd=p['kd'], joints=p['joints'] or None)
        if p['law'] in ('pidc', 'computed_torque'):
            kw.update(reference=p['reference'], task_frame=p['task_frame'], task_axes=p['task_axes'])
        elif p['law'] == 'sea_flatness':
            kw = dict(poles=p['poles'], lambda_poles=p['lambda_poles'], preload=p['preload'],
                      joints=kw['joints'])
        return make_law(self.model, p['law'], **kw)

    def _on_command(self, c):
        """Hook: a law-specific output after each (non-safe) command."""

    #: name -> (default, description, constraint) of the generic node (see declare_params)
    PARAMS = {
        'law': ('pidc', 'control law (robot_dynamics.control.laws.LAWS)', None),
        'controller': ('effort_controller', 'commands on /<controller>/commands', None),
        'joints': ([''], 'command order (default: the actuated joints)', None),
        'reference': ('joint', 'reference coordinates (pidc / computed_torque)', ('joint', 'task')),
        'task_frame': ('tool', 'frame whose origin a task reference drives', None),
        'task_axes': ([0, 1, 2], 'world components of the task reference', None),
        'kp': (100.0, 'proportional gain', (0.0, None)),
        'kd': (20.0, 'derivative gain', (0.0, None)),
        'rate': (100.0, 'control period 1/rate [Hz]: watchdog timer and overrun threshold', (1e-3, 1e5)),
        'state_timeout': (0.1, 'no valid state for that long [s] -> safe command', (1e-6, 1e3)),
        'reference_timeout': (0.5, 'reference older than that behind the state [s] -> safe command', (1e-6, 1e3)),
        'max_extrapolation': (0.05, 'longest reference extrapolation [s]', (0.0, 10.0)),
        'reference_sync': (False, 'lock-step: wait for the reference of the state stamp', None),
        'ref_wait': (0.2, 'lock-step: longest wait for that reference [s wall]', (1e-6, 1e3)),
        'max_effort': (0.0, 'effort bound per joint, with the URDF limits (0 = URDF only)', (0.0, None)),
        'safe': ('hold', 'safe command: gravity hold at the last valid state, or zero', ('hold', 'zero')),
        'hold_damping': (0.0, 'safe hold: damping on the actuated joints', (0.0, None)),
        'ff_lead': (0.0, 'feed-forward lead [s] (zero-order-hold compensation)', (0.0, 1.0)),
        'max_future': (0.5, 'reject states stamped more than that ahead of the node clock [s]', (0.0, 1e3)),
        'feedforward_topic': ('ik_node/feedforward_effort', 'feed-forward efforts (JointState); empty = in the trajectory point', None),
        'publish_wrenches': (True, 'publish ~/constraint_wrench/<loop> (pidc)', None),
        'diagnostics_rate': (2.0, '/diagnostics rate [Hz] (0 = off)', (0.0, 1e3)),
        'state_topic': ('joint_states', 'joint states topic (relative name)', None),
        'wait_first_reference': (False, 'lock-step: wait for the first reference however long', None),
        'max_state_age': (0.0, 'answer a state from the subscription only when younger [s] (0 = one period)', (0.0, 10.0)),
        'timer_rate': (0.0, 'watchdog timer rate [Hz] (0 = rate)', (0.0, 1e5)),
        'error_rate': (0.0, '~/tracking_error, ~/feedforward, ~/constraint_wrench at most this often [Hz of state time] '
                       '(0 = with every command)', (0.0, 1e5)),
        'poles': (30.0, 'sea_flatness: EE error poles [1/s]', (0.0, None)),
        'lambda_poles': (30.0, 'sea_flatness: internal-force error poles [1/s]', (0.0, None)),
        'preload': (0.0, 'sea_flatness: internal preload [N m]', None),
    }
    #: parameters that may change at run time (the others are read-only)
    RUNTIME = ('kp', 'kd')

    def _params(self, extra=None):
        spec = dict(self.PARAMS)
        for k, v in (extra or {}).items():        # a subclass's defaults / extra parameters
            spec[k] = v if isinstance(v, tuple) else (v, spec.get(k, (None, k, None))[1],
                                                      spec.get(k, (None, k, None))[2])
        p = declare_params(self, spec, runtime=self.RUNTIME)
        for k in ('kp', 'kd', 'rate', 'state_timeout', 'reference_timeout', 'max_extrapolation',
                  'ref_wait', 'max_effort', 'hold_damping', 'ff_lead', 'max_future', 'diagnostics_rate',
                  'max_state_age', 'timer_rate', 'error_rate', 'poles', 'lambda_poles', 'preload'):
            p[k] = float(p[k])
        p['joints'] = [j for j in p['joints'] if j]
        return p

    def _now(self):
        return self.get_clock().now().nanoseconds * 1e-9

    def _warn(self, text):
        """Warning throttled per kind (the text up to its second ':', e.g. 'safe command: state
        stale' and 'safe command: no reference yet' are two kinds): 1 per 2 s of wall time."""
        key, now = ':'.join(text.split(':', 2)[:2])[:60], time.monotonic()
        if now - self._warned.get(key, -1e9) >= 2.0:
            self._warned[key] = now
            self.get_logger().warning(text)

    # ------------------------------------------------------------------ inputs
    def on_state(self, msg):
        now, stamp = self._now(), stamp_sec(msg.header.stamp)
        why = self.loop.set_state(msg.name, msg.position, msg.velocity, stamp, now)
        if why:
            return self._warn(f'rejected joint_states: {why}')
        if now - stamp > (self.p['max_state_age'] or self.loop.period):
            return      # behind: newer states are queued; the newest is answered (or the timer does)
        self._answer()

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
        vec = (msg.pose.position if k == 0 else msg.twist.linear if k == 1 else msg.accel.linear)
        self.task[k] = np.array([vec.x, vec.y, vec.z])
        if k == 0:
            ax, zero = self.law.ctrl.task_axes, np.zeros(3)
            why = self.loop.set_reference(self.task[0][ax], self.task.get(1, zero)[ax],
                                          self.task.get(2, zero)[ax], stamp=stamp_sec(msg.header.stamp))
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
        self._pair(1, tuple(d[0]), d)

    def _pair(self, k, key, item):
        """Pose (k = 0: its stamp) and derivatives (k = 1) of one sample meet by their position."""
        other = self._pending[1 - k].pop(key, None)
        if other is None:
            box = self._pending[k]
            box[key] = item
            while len(box) > 64:
                box.pop(next(iter(box)))
            return
        stamp, d = (item, other) if k == 0 else (other, item)
        why = self.loop.set_reference(None, stamp=stamp, derivs=d[:, list(self.law.task_axes)])
        if why:
            return self._warn(f'rejected task reference: {why}')
        self._answer()

    # ------------------------------------------------------------------ output
    def _answer(self):
        if not self.enabled:
            return
        c = self.loop.update(self._now(), time.monotonic())
        if c is None:
            return
        self.pub_cmd.publish(Float64MultiArray(data=c.effort.tolist()))
        if c.safe:
            return self._warn(f'safe command: {c.reason}')
        if c.clipped:
            self._warn('efforts clipped to the effort limits')
        if 'not_controllable' in c.info:
            self._warn(f'not controllable: {c.info["not_controllable"]}')
        self._on_command(c)
        if c.stamp is not None and self.p['error_rate'] and 0.0 <= c.stamp - self._last_err < 1.0 / self.p['error_rate']:
            return
        self._last_err = -1e9 if c.stamp is None else c.stamp
        self.pub_err.publish(Float64MultiArray(data=np.concatenate([c.e, c.ed]).tolist()))
        if self.pub_ff is not None:
            n_ex = float(self.loop.count['extrapolated'])
            self.pub_ff.publish(Float64MultiArray(data=[c.extrapolated, n_ex, *c.sample.effort.tolist(),
                                                        *c.info['u'].tolist()]))
        if self.pub_w and 'tau' in c.info:
            for name, w in self.law.predicted_wrenches(c.state, c.info['tau']).items():
                ws = WrenchStamped()
                ws.header.stamp = self.get_clock().now().to_msg() if c.stamp is None else _stamp(c.stamp)
                ws.header.frame_id = next(lp.frame_a for lp in self.model.loops if lp.name == name)
                ws.wrench.force.x, ws.wrench.force.y, ws.wrench.force.z = map(float, w[:3])
                ws.wrench.torque.x, ws.wrench.torque.y, ws.wrench.torque.z = map(float, w[3:])
                self.pub_w[name].publish(ws)

    # ------------------------------------------------------------------ services, parameters
    def on_enable(self, request, response):
        self.enabled = bool(request.data)
        if not self.enabled:
            eff = self.law.safe_command(self.loop.state, self.loop.safe_mode, self.loop.hold_damping)
            self.pub_cmd.publish(Float64MultiArray(data=np.clip(eff, -self.loop.effort_limit,
                                                                self.loop.effort_limit).tolist()))
        response.success, response.message = True, f'controller {"enabled" if self.enabled else "disabled"}'
        return response

    def on_hold(self, request, response):
        st = self.loop.state
        if st is None or not hasattr(self.law, 'current_coordinates'):
            response.success = False
            response.message = 'no joint state yet' if st is None else f'law {self.law.name} cannot hold'
            return response
        x = self.law.current_coordinates(st.q)
        self.loop.clear_reference()
        self.loop.set_reference(x, stamp=None)
        response.success, response.message = True, f'holding {np.round(x, 6).tolist()}'
        return response

    def on_params(self, params):
        for prm in params:                   # ranges and read-only: enforced by the descriptors
            if prm.name in ('kp', 'kd'):
                setattr(self.law, prm.name, float(prm.value))
        return SetParametersResult(successful=True)


def _stamp(t):
    from builtin_interfaces.msg import Time
    sec = int(np.floor(t))
    return Time(sec=sec, nanosec=int(round((t - sec) * 1e9)) % 1_000_000_000)


def main(args=None):
    """Entry point (console scripts ``controller_node`` and ``dynamics_node``)."""
    return spin_node(ControllerNode, args)


if __name__ == '__main__':
    raise SystemExit(main())
