"""sea_controller: flatness-based controller of the planar 3RRR SEA-PKM (seed 004, brief A8).

Thin node around :class:`robot_dynamics.control.flatness_sea.SEAFlatnessController`.

Inputs: ``/joint_states`` with the link-side joints (``armk_joint``, ``armk_elbow``) *and* the
motor-side joints ``armk_motor`` (k = 1..3): the model treats the motor rotors as separate
actuated joints, so a single JointState carries both sides (a real drive would publish the
motor encoders under these names). EE position/velocity = mean of the three limbs' forward
kinematics (:func:`~robot_dynamics.control.flatness_sea.sea_state_from_joints`).
Point-to-point goals: ``~/goal`` (geometry_msgs/PointStamped, x/y in the world frame of the
URDF, z ignored). Each goal starts a rest-to-rest sin^2-jerk move
(:class:`~robot_dynamics.pkm.planar_sea.SinSquaredJerk`, derivatives up to snap) from the
current reference to the goal, duration ``max(min_duration, 2 |d| / max_speed)``; a goal whose
path leaves the workspace is rejected with a warning.

Outputs: ``/<controller>/commands`` (Float64MultiArray, motor torques [N m] in the order of
``joints``, default the motor joints), ``~/reference`` (PointStamped, desired EE position,
stamped with the time it was evaluated at: in event-driven mode the stamp of the joint state
it answers), ``~/tracking_error`` (Float64MultiArray [ex, ey, lambda, lambda_d]) and
``~/diagnostics`` (Float64MultiArray, labels in ``layout.dim[0].label``: rate_hz (control
steps per wall-clock second), compute_ms, holding, state_age_s, clipped, rejected_goals,
moving, realtime_factor (controller time per wall time)) every 0.1 s of controller time.

Triggering and time (``event_driven``):

* ``false`` (default, real time): a timer at ``rate`` Hz evaluates the law on the latest joint
  state; the reference clock is the node clock (wall time, or the simulated time of ``/clock``
  with the standard parameter ``use_sim_time: true``).
* ``true`` (lock-step with ``sim_node lockstep: true``, config/planar_3rrr_sea.yaml): one
  command per received joint state, computed in the subscription callback; the reference clock
  is the joint state's header stamp (the plant time with sim_node ``publish_clock``), so the
  graph reproduces the sampled 1 kHz loop of the core test exactly, however slowly it runs.
  A state with the stamp already answered (sim_node ``lockstep_republish``) is ignored; a stamp
  going backwards (sim_node ``~/reset``) restarts the reference at rest where the robot is.
  There is no staleness in this mode: without states there is nothing to answer and a
  lock-step plant does not advance.

Stale input -> hold: if no valid joint state arrived for ``state_timeout`` s, the node stops
sending commands (an exact-linearising law fed with stale states would drive the motors
open-loop) and reports ``holding = 1``; the plant/drive then applies its own command-timeout
hold (sim_node: damping on the motor joints, see docs/recursive_id_sea.md). When states return,
the current motion is dropped and the reference restarts at rest at the measured EE position
(no jump); a new goal is needed to move again.

Parameters: ``controller`` (effort_controller), ``joints``, ``rate`` (1000), ``poles`` (EE
error poles at -poles, 30), ``lambda_poles`` (30), ``preload`` (lambda set-point, 0),
``max_speed`` (m/s, 0.4), ``min_duration`` (s, 0.3), ``state_timeout`` (s, 0.1),
``max_effort`` (N m clip, default the motor joints' URDF effort limits), ``event_driven``
(false).
"""
import time

import numpy as np
from geometry_msgs.msg import PointStamped
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from robot_dynamics.control.flatness_sea import SEAFlatnessController, sea_state_from_joints
from robot_dynamics.nodes._common import (QOS_COMMAND, QOS_STATE, JointStateParser,
                                          load_model_param, spin_node)
from robot_dynamics.pkm.planar_sea import SinSquaredJerk
from robot_dynamics.sea import sea_params_from_model

DIAG = ('rate_hz', 'compute_ms', 'holding', 'state_age_s', 'clipped', 'rejected_goals', 'moving',
        'realtime_factor')


def _ns(stamp):
    return stamp.sec * 1_000_000_000 + stamp.nanosec


class SEAController(Node):
    """Flatness controller: joint state + analytic reference -> torques (timer- or
    event-driven, see the module docstring)."""

    def __init__(self):
        super().__init__('sea_controller')
        self.model = m = load_model_param(self)
        dp = self.declare_parameter
        controller = dp('controller', 'effort_controller').value
        self.joints = list(dp('joints', list(m.actuated)).value)
        self.rate = float(dp('rate', 1000.0).value)
        poles = float(dp('poles', 30.0).value)
        lpoles = float(dp('lambda_poles', 30.0).value)
        self.preload = float(dp('preload', 0.0).value)
        self.vmax = float(dp('max_speed', 0.4).value)
        self.tmin = float(dp('min_duration', 0.3).value)
        self.timeout = float(dp('state_timeout', 0.1).value)
        self.event_driven = bool(dp('event_driven', False).value)
        self.params = sea_params_from_model(m)
        names = list(m.joint_names)
        self.ia, self.ie, self.im = ([names.index(f'arm{k}_{s}') for k in (1, 2, 3)]
                                     for s in ('joint', 'elbow', 'motor'))
        self.cmd_idx = [self.im.index(names.index(j)) for j in self.joints]
        lim = [float(m.effort_limit[m.joint_index(j)]) for j in self.joints]
        self.max_effort = np.asarray(dp('max_effort', lim).value, float)
        self.ctrl = SEAFlatnessController(self.params, poles=poles, lambda_poles=lpoles)
        self.parser = JointStateParser(m, required=[names[i] for i in self.ia + self.ie + self.im])
        self.state = None          # (q, qd, receive time)
        self.profile = None
        self.t0 = self.get_clock().now().nanoseconds   # timer mode: reference clock origin
        self.stamp0 = None         # event mode: first stamp (reference clock origin)
        self.last_stamp = None     # event mode: last answered stamp [ns]
        self.t_ctrl = 0.0          # controller time of the last control step [s]
        self.holding = True
        self.clipped = 0
        self.rejected_goals = 0
        self.ticks, self.busy, self.last_diag = 0, 0.0, time.monotonic()
        self.next_diag, self.t_diag = 0.0, 0.0
        self.pub_cmd = self.create_publisher(Float64MultiArray, f'/{controller}/commands', QOS_COMMAND)
        self.pub_ref = self.create_publisher(PointStamped, '~/reference', QOS_STATE)
        self.pub_err = self.create_publisher(Float64MultiArray, '~/tracking_error', QOS_STATE)
        self.pub_diag = self.create_publisher(Float64MultiArray, '~/diagnostics', QOS_STATE)
        self.create_subscription(JointState, '/joint_states', self.on_state, QOS_STATE)
        self.create_subscription(PointStamped, '~/goal', self.on_goal, QOS_COMMAND)
        if not self.event_driven:
            self.create_timer(1.0 / self.rate, self.tick)
        mode = 'one command per joint state' if self.event_driven else f'timer at {self.rate:g} Hz'
        self.get_logger().info(f'{m.name}: flatness SEA control, {mode} (poles -{poles:g}), '
                               f'commands on /{controller}/commands for {self.joints}')

    def now(self):
        """Reference clock [s]: event mode, the last joint-state stamp; else the node clock."""
        if self.event_driven:
            return self.t_ctrl
        return (self.get_clock().now().nanoseconds - self.t0) * 1e-9

    # ------------------------------------------------------------------ inputs
    def on_state(self, msg):
        q, qd, why = self.parser.parse(msg)
        if q is None:
            self.get_logger().warning(f'rejected joint state: {why}', throttle_duration_sec=2.0)
            return
        self.state = (q, qd, time.monotonic())
        if self.event_driven:
            ns = _ns(msg.header.stamp)
            if ns == self.last_stamp:
                return                    # republished state already answered
            if self.last_stamp is None or ns < self.last_stamp:
                if self.last_stamp is not None:
                    self.get_logger().warning('joint-state stamp went backwards (plant reset): '
                                              'reference restarts at rest')
                self.stamp0, self.holding = ns, True
                self.next_diag = self.t_diag = 0.0
            self.last_stamp = ns
            self.t_ctrl = (ns - self.stamp0) * 1e-9
            self.tick(msg.header.stamp)

    def _measured(self):
        q, qd, _ = self.state
        return sea_state_from_joints(self.params, q, qd, self.ia, self.ie, self.im)

    def _rest_at(self, p):
        self.profile = SinSquaredJerk(p, p, 1e-3, t0=self.t_ctrl)

    def on_goal(self, msg):
        goal = np.array([msg.point.x, msg.point.y])
        if not np.all(np.isfinite(goal)) or self.profile is None:
            self.rejected_goals += 1
            self.get_logger().warning('goal rejected: non-finite, or no joint state yet')
            return
        t = self.now()
        start = self.profile(t)[0]
        T = max(self.tmin, 2.0 * float(np.linalg.norm(goal - start)) / self.vmax)
        prof = SinSquaredJerk(start, goal, T, t0=t)
        try:     # the whole path must stay in the workspace
            self.ctrl.pkm.ik(prof(t + np.linspace(0, T, 21))[0])
        except Exception as exc:  # noqa: BLE001 - PKMSingularityError / InputError
            self.rejected_goals += 1
            self.get_logger().warning(f'goal {goal.tolist()} rejected: {exc}')
            return
        self.profile = prof
        self.get_logger().info(f'goal {goal.tolist()}: sin^2-jerk move of {T:.3f} s')

    # ------------------------------------------------------------------ control
    def tick(self, stamp=None):
        """One control step (timer callback, or from on_state with the state's stamp)."""
        t_start = time.monotonic()
        self.ticks += 1
        if not self.event_driven:
            self.t_ctrl = self.now()
        age = np.inf if self.state is None else t_start - self.state[2]
        if age > self.timeout:
            if not self.holding and self.state is not None:
                self.get_logger().warning(f'joint states stale ({age:.3f} s): hold, commands stopped')
            self.holding = True
        else:
            p, pd, qm, qdm = self._measured()
            if self.holding or self.profile is None:
                self._rest_at(p)          # (re)start at rest where the robot is
                self.holding = False
            t = self.t_ctrl
            yd = self.profile(t)
            lam_d = np.array([self.preload, 0.0, 0.0])
            try:
                tau = self.ctrl(p, pd, qm, qdm, yd, lam_d)
            except Exception as exc:  # noqa: BLE001 - singular / outside workspace
                self.get_logger().error(f'controller failed: {exc}: hold', throttle_duration_sec=1.0)
                self.holding = True
                tau = None
            if tau is not None:
                tau = tau[self.cmd_idx]
                if np.any(np.abs(tau) > self.max_effort):
                    self.clipped += 1
                    tau = np.clip(tau, -self.max_effort, self.max_effort)
                self.pub_cmd.publish(Float64MultiArray(data=tau.tolist()))
                if stamp is None:
                    stamp = self.get_clock().now().to_msg()
                ref = PointStamped()
                ref.header.stamp, ref.header.frame_id = stamp, self.model.root_link
                ref.point.x, ref.point.y = float(yd[0, 0]), float(yd[0, 1])
                self.pub_ref.publish(ref)
                e = p - yd[0]
                self.pub_err.publish(Float64MultiArray(data=[float(e[0]), float(e[1]),
                                                             float(self.ctrl.lam), self.preload]))
        self.busy += time.monotonic() - t_start
        dt = t_start - self.last_diag
        due = (self.t_ctrl >= self.next_diag) if self.event_driven else (dt >= 0.1)
        if due and dt > 0:
            moving = float(self.profile is not None and self.t_ctrl < self.profile.t0 + self.profile.T)
            d = Float64MultiArray(data=[self.ticks / dt, 1e3 * self.busy / max(self.ticks, 1),
                                        float(self.holding), float(min(age, 1e9)),
                                        float(self.clipped), float(self.rejected_goals), moving,
                                        (self.t_ctrl - self.t_diag) / dt])
            d.layout.dim.append(MultiArrayDimension(label=','.join(DIAG), size=len(DIAG), stride=len(DIAG)))
            self.pub_diag.publish(d)
            self.ticks, self.busy, self.last_diag = 0, 0.0, t_start
            self.next_diag, self.t_diag = self.t_ctrl + 0.1, self.t_ctrl


def main(args=None):
    """Entry point (console script ``sea_controller``)."""
    return spin_node(SEAController, args)


if __name__ == '__main__':
    raise SystemExit(main())
