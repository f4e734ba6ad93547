"""trajectory_node: analytic reference (joint space or task space) with derivatives up to snap.

Parameters: ``mode`` ('joint' | 'task'), ``profile`` ('sinusoid' | 'waypoints' | 'circle'),
``rate`` [Hz], ``joints`` (joint mode, default: the model's independent joints),
``amplitude``/``frequency``/``phase``/``offset`` (sinusoid; offset default: the sidecar's
reference configuration), ``waypoints`` (flat list K*n) / ``durations`` / ``repeat``
(waypoints), ``center``/``radius``/``frequency``/``e1``/``e2`` (circle, world frame).

Publishes (relative names): joint mode ``reference/joint_trajectory``
(trajectory_msgs/JointTrajectory, one point with positions, velocities, accelerations);
task mode ``reference/pose`` (PoseStamped, position only, orientation identity),
``reference/twist`` (TwistStamped) and ``reference/accel`` (AccelStamped); task mode, ``profile:
sin2_pose`` (:class:`robot_dynamics.control.trajectories.Sin2PoseMove`: the ``sin2_pick_place`` position
and a rotation ``rot_angle`` s(t) [rad] about the fixed world axis ``rot_axis``): the pose's
orientation exp(r^) (quaternion x, y, z, w; r the rotation vector, world axes, relative to the
identity), the twist's and accel's angular parts w, dw/dt [rad/s, rad/s^2]; both modes
``reference/derivatives`` (std_msgs/Float64MultiArray, rows = derivative order 0..4, columns =
coordinates, for controllers that need jerk and snap); task mode, ``profile: roll | pose_move``
(a 6-DOF platform pose, parameters as in ``pkm_d2``; :class:`robot_dynamics.control.trajectories.PoseRows`):
the pose with its orientation on ``reference/pose``, ``reference/derivatives`` row 0 = position
+ rotation vector, rows 1..4 = the BODY-FIXED twist (v, w) and its derivatives (twist/accel
carry the body twist and its rate). t = 0 is the first published sample.
``mode: pkm_d2`` (seed 004; any PKM of the general route robot_dynamics.pkm.general): a 6-DOF
platform (e.g. the Gough-Stewart) takes the pose profiles ``roll`` (``roll_min``/``roll_max``
[rad], ``roll_period`` [s], ``roll_center`` [m], ``roll_axis`` (platform frame);
:class:`robot_dynamics.control.trajectories.RollProfile`) and ``pose_move`` (rest-to-rest through
``pose_waypoints`` from ``pose_start``, 6 values per pose = position [m] + rotation vector [rad],
``durations`` [s], ``pose_path`` line | screw; :class:`robot_dynamics.control.trajectories.
PoseSegments`); a lower-mobility platform takes ``profile`` circle | waypoints | sin2_pick_place
with the task-mode parameters in the TASK coordinates ``general_pkm(model).task`` (e.g. world
x, y, z of the platform frame; default centre / start the reference configuration's, circle
plane default e1 = x, e2 = y). Either is precomputed once at start-up on a grid of
``table_step`` s (default 0.001 = the lock-step plant period; :class:`robot_dynamics.control.
d2_feedforward.TabulatedD2Feedforward`): the platform motion goes through the 2nd-order
recursive inverse dynamics; ``reference/joint_trajectory`` carries the actuated joints' position/velocity/
acceleration and the feed-forward u in the point's ``effort``; ``~/feedforward``
(Float64MultiArray [t, u, u', u'']) and ``~/reference`` (JointState: all tree coordinates and
rates of the reference motion) with the same stamp.
``mode: boom_task`` (seed 001, hydraulic boom): the A-B-C-D task, quintic tool-point legs from
the tool point of the reference configuration through ``waypoints`` (flat [x0, z0, ...] in the
world ``task_axes``) ``task_loops`` times and back to the first waypoint, ``leg_duration`` s
each, after ``start_delay`` s, mapped analytically to the segment joints
(:class:`robot_dynamics.control.vdc.BoomTaskProfile`): ``reference/joint_trajectory`` of the
segment joints (positions, velocities, accelerations; ``reference/derivatives`` rows 0..2).
``mode: task_ik`` (seed 000, any robot with a loop map): a task-space path of the origin of
``task_frame`` (default ``tool``; ``profile`` circle | sin2_pick_place with the task-mode
parameters ``center``/``radius``/``e1``/``e2``/``frequency``/``phase``, world frame, ``task_axes``
default [0, 1, 2]) mapped to the minimal coordinates (the sidecar's independent joints) by the
inverse output map (:class:`robot_dynamics.algorithms.partitioning.CartesianReference`: Newton on the
forward map closed by the loop map, ``thetad = J⁻¹ xd``, ``thetadd = J⁻¹ (xdd - Jdot thetad)``):
``reference/joint_trajectory`` of those joints (positions, velocities, accelerations;
``reference/derivatives`` rows 0..2), e.g. for ``ip_controller``. A path sample the map cannot
invert (unreachable, singular, outside the joint limits) is logged and not published; the
t = 0 sample is checked at start.
``start_topic`` (timer mode, default '' = off; a std_msgs/Float64MultiArray topic such as a
controller's commands): the profile's t = 0 is the first tick after the first message there
(until then the t = 0 sample is published), so the motion starts when the controller is live,
not when this node is.
``profile: goals`` (task mode; seed 004's SEA moves): rest at ``start`` [m] until a goal
(geometry_msgs/PointStamped, world frame) arrives on ``goal_topic`` (default ``goal``); each
goal starts a rest-to-rest sin^2-jerk move (derivatives up to snap) of duration
``max(min_duration, 2 |d| / max_speed)`` at the time of the last published sample; a goal whose
path leaves the workspace is rejected with a warning.
``lead`` (timer mode, default 0 s): each tick publishes the sample of ``now + lead``, stamped
``now + lead`` (a preview of a motion known in advance: the controller's loop then holds samples
on both sides of every state and interpolates the feed-forward between them, whatever the
reference chain's delay up to ``lead``).
``sync_topic`` (e.g. ``joint_states``; default '' = timer at ``rate``): publish one sample per
message of that JointState topic, at t = stamp - first stamp, with the state's stamp (for
lock-step graphs: the reference then keeps pace with the simulation however loaded the machine
is). With ``use_sim_time: true`` the profile runs on simulated time; until the simulation clock
starts, the t = 0 sample is published every 0.2 s of wall time (so a lock-step plant, which
waits for a command, can be started by a controller that waits for a reference).
"""

import math

from geometry_msgs.msg import AccelStamped, PoseStamped, TwistStamped
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.time import Time
from std_msgs.msg import Float64MultiArray, MultiArrayDimension
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robot_dynamics.errors import RobotDynamicsError
from robot_dynamics.spatial.lie import exp_so3, matrix_to_quat_xyzw
from robot_dynamics.ros._common import (
    QOS_COMMAND,
    QOS_REFERENCE,
    QOS_STATE,
    declare_params,
    load_model_param,
    spin_node,
)
from robot_dynamics.control.reference_source import ORDER, PARAMS, build_reference, preview_samples


class TrajectoryNode(Node):
    """Publishes an analytic reference at a fixed rate (or one sample per state); the profile
    of every mode is built by the core (:func:`robot_dynamics.control.reference_source.build_reference`)."""

    def __init__(self):
        super().__init__('trajectory_node')
        self.model = m = load_model_param(self)
        dp = self._declare
        rate = float(dp('rate', 100.0).value)
        if rate <= 0:
            raise ValueError(f'rate must be > 0 (got {rate})')
        src = build_reference(m, lambda name, default: dp(name, default).value)  # the core
        self.mode, kind, self.joints, self.profile = src.mode, src.kind, src.joints, src.profile
        self.repeat, self.d2, self.t_last = src.repeat, src.d2, 0.0
        if src.info:
            self.get_logger().info(src.info)
        if self.d2 is not None:
            self.pub_ff = self.create_publisher(Float64MultiArray, '~/feedforward', QOS_STATE)
            from sensor_msgs.msg import JointState

            self.pub_ref = self.create_publisher(JointState, '~/reference', QOS_STATE)
        if src.goals is not None:
            from geometry_msgs.msg import PointStamped

            self.create_subscription(PointStamped, src.goal_topic, self.on_goal, QOS_COMMAND)
            self.get_logger().info(f'goals on {src.goal_topic} (geometry_msgs/PointStamped)')
        self.world = m.root_link
        if self.mode in ('joint', 'pkm_d2', 'boom_task', 'task_ik'):
            self.pub_jt = self.create_publisher(JointTrajectory, 'reference/joint_trajectory', QOS_REFERENCE)
        else:
            self.pub_pose = self.create_publisher(PoseStamped, 'reference/pose', QOS_REFERENCE)
            self.pub_twist = self.create_publisher(TwistStamped, 'reference/twist', QOS_REFERENCE)
            self.pub_acc = self.create_publisher(AccelStamped, 'reference/accel', QOS_REFERENCE)
        self.pub_der = self.create_publisher(Float64MultiArray, 'reference/derivatives', QOS_REFERENCE)
        self.t0, self._next_k = None, 0
        self.rate = rate
        self.lead_ns = int(round(float(dp('lead', 0.0).value) * 1e9))
        self.sync_topic = dp('sync_topic', '').value
        if self.sync_topic:
            # state-synchronised (lock-step graphs): one sample per new state stamp, at
            # t = stamp - first stamp, stamped like the state: the reference cannot fall behind
            from sensor_msgs.msg import JointState

            self.create_subscription(JointState, self.sync_topic, self.on_state, QOS_STATE)
            self.get_logger().info(
                f'{self.mode} reference ({kind}) for {self.joints}, one sample per {self.sync_topic} stamp'
            )
            return
        # start_topic: the profile clock starts at the first message there (a controller's
        # commands: the controller is live); until then the t = 0 sample is published (a
        # slow-starting controller must not find its reference already seconds into the motion)
        self.start_sub = None
        start_topic = dp('start_topic', '').value
        if start_topic:
            self.start_sub = self.create_subscription(Float64MultiArray, start_topic, self.on_start, QOS_COMMAND)
        self.create_timer(1.0 / rate, self.tick)
        # Under simulated time (use_sim_time, e.g. a lock-step sim_node) the ROS clock only
        # advances once the plant is commanded, and the plant is only commanded once there is
        # a reference: publish the t = 0 sample on a wall-clock timer until the clock runs.
        if self.get_parameter('use_sim_time').value:
            self.prime = self.create_timer(0.2, self.prime_tick, clock=Clock(clock_type=ClockType.STEADY_TIME))
        self.get_logger().info(f'{self.mode} reference ({kind}) for {self.joints} at {rate} Hz')

    PARAMS = PARAMS

    def _declare(self, name, default):
        """Declare ``name`` (read-only, described, constrained: :attr:`PARAMS`); its Parameter."""
        text, cons = self.PARAMS.get(name, ('', None))
        declare_params(self, {name: (default, text, cons)})
        return self.get_parameter(name)

    def on_goal(self, msg):
        g = [msg.point.x, msg.point.y, msg.point.z]
        try:
            T = self.profile.goal(self.t_last, g)
        except RobotDynamicsError as exc:
            return self.get_logger().warning(str(exc))
        self.get_logger().info(f'goal {g}: sin^2-jerk move of {T:.3f} s from t = {self.t_last:.3f} s')

    def on_state(self, msg):
        # every state is answered, a repeated stamp too (a lock-step plant re-sends its state
        # while it waits: the first samples may have been published before anyone listened)
        ns = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        if self.t0 is None:
            self.t0 = ns
            self._fill_preview()
        self._publish_at(ns + self.lead_ns)

    def _fill_preview(self):
        """``lead`` (state-synchronised): the samples from t = 0 up to the first one a state
        publishes (t = lead)."""
        for k in range(math.ceil(self.lead_ns * 1e-9 * self.rate - 1e-9)):
            self._publish_at(self._grid_ns(k))

    def _publish_until(self, ns):
        """``lead`` (the preview): every grid sample not published yet up to clock time ``ns``
        (:func:`~robot_dynamics.control.reference_source.preview_samples`), in order."""
        ks = preview_samples(self._next_k, self.t0, ns - self.lead_ns, self.lead_ns, self.rate * 1e-9)
        for k in ks:
            self._publish_at(self._grid_ns(k))
        self._next_k = max(self._next_k, ks.stop)

    def _grid_ns(self, k):
        """Clock time [ns] of preview sample ``k`` (t0 + k / rate)."""
        return self.t0 + int(round(k / self.rate * 1e9))

    def _publish_at(self, ns):
        """The sample of clock time ``ns`` [ns] (profile time ns - t0, wrapped for a repeated
        profile), stamped ``ns``."""
        t = (ns - self.t0) * 1e-9
        dur = getattr(self.profile, 'duration', None)
        if dur and self.repeat:
            t = t % dur
        self.publish_sample(t, None, stamp=Time(nanoseconds=ns).to_msg())

    def on_start(self, msg):
        if self.start_sub is not None:
            self.destroy_subscription(self.start_sub)
            self.start_sub = None
            self.get_logger().info('start topic: the profile starts')

    def prime_tick(self):
        if self.get_clock().now().nanoseconds > 0:  # the clock runs: tick() takes over
            self.prime.cancel()
            return
        if self.lead_ns and self.start_sub is None:
            # the preview of the motion's start while the plant clock waits at 0: the chain
            # behind (ik_node, the controller) has the samples of [0, lead] before the plant
            # starts, instead of all of them at once at its first step (T1: a 25-sample burst
            # through ik_node left the controller's first states without a reference, a 60 mm
            # start transient). The profile's t = 0 is the plant's; repeated until the clock
            # runs (a subscriber matched late gets them too)
            self.t0, self._next_k = 0, 0
            self._publish_until(self.lead_ns)
            return
        self.publish_sample(0.0, self.get_clock().now())

    def tick(self):
        now = self.get_clock().now()
        if now.nanoseconds == 0:
            return  # simulated time not started yet (see prime_tick)
        if self.t0 is None:
            if self.start_sub is not None:
                self.publish_sample(0.0, now)
                return
            self.t0, self._next_k = now.nanoseconds, 0
        if self.lead_ns:  # the preview: every grid sample up to clock + lead (t0 = 0 and
            # the samples of [0, lead] already out when prime_tick sent them before the clock ran)
            self._publish_until(now.nanoseconds + self.lead_ns)
        else:
            self._publish_at(now.nanoseconds)

    def publish_sample(self, t, now, stamp=None):
        self.t_last = t
        try:
            x = self.profile(t, order=ORDER)  # (ORDER + 1, n)
        except RobotDynamicsError as exc:
            self.get_logger().error(f'reference at t = {t:.4f} s: {exc} (not published)', throttle_duration_sec=1.0)
            return
        stamp = now.to_msg() if stamp is None else stamp
        if self.d2 is not None:
            self._publish_d2(t, x, stamp)
        elif self.mode in ('joint', 'boom_task', 'task_ik'):
            msg = JointTrajectory()
            msg.header.stamp = stamp
            msg.joint_names = self.joints
            pt = JointTrajectoryPoint()
            pt.positions, pt.velocities, pt.accelerations = (x[0].tolist(), x[1].tolist(), x[2].tolist())
            msg.points = [pt]
            self.pub_jt.publish(msg)
        else:
            ps = PoseStamped()
            ps.header.stamp, ps.header.frame_id = stamp, self.world
            ps.pose.position.x, ps.pose.position.y, ps.pose.position.z = map(float, x[0][:3])
            ps.pose.orientation.w = 1.0
            tw = TwistStamped()
            tw.header = ps.header
            tw.twist.linear.x, tw.twist.linear.y, tw.twist.linear.z = map(float, x[1][:3])
            ac = AccelStamped()
            ac.header = ps.header
            ac.accel.linear.x, ac.accel.linear.y, ac.accel.linear.z = map(float, x[2][:3])
            if x.shape[1] == 6:  # + rotation vector about a fixed axis: dr/dt = w
                o = ps.pose.orientation
                o.x, o.y, o.z, o.w = map(float, matrix_to_quat_xyzw(exp_so3(x[0][3:])))
                tw.twist.angular.x, tw.twist.angular.y, tw.twist.angular.z = map(float, x[1][3:])
                ac.accel.angular.x, ac.accel.angular.y, ac.accel.angular.z = map(float, x[2][3:])
            self.pub_pose.publish(ps)
            self.pub_twist.publish(tw)
            self.pub_acc.publish(ac)
        der = Float64MultiArray()
        der.layout.dim = [
            MultiArrayDimension(label='derivative', size=x.shape[0], stride=x.size),
            MultiArrayDimension(label=','.join(self.joints), size=x.shape[1], stride=x.shape[1]),
        ]
        der.data = x.ravel().tolist()
        self.pub_der.publish(der)

    def _publish_d2(self, t, x, stamp):
        from sensor_msgs.msg import JointState

        r = self.d2.last
        msg = JointTrajectory()
        msg.header.stamp = stamp
        msg.joint_names = self.joints
        pt = JointTrajectoryPoint()
        pt.positions, pt.velocities, pt.accelerations = (x[0].tolist(), x[1].tolist(), x[2].tolist())
        pt.effort = r.u.tolist()
        msg.points = [pt]
        self.pub_jt.publish(msg)
        self.pub_ff.publish(Float64MultiArray(data=[t, *r.u.tolist(), *r.ud.tolist(), *r.udd.tolist()]))
        js = JointState()
        js.header.stamp = stamp
        js.name = list(self.model.joint_names)
        js.position, js.velocity = r.q.tolist(), r.qd.tolist()
        self.pub_ref.publish(js)


def main(args=None):
    """Entry point (console script ``trajectory_node``)."""
    return spin_node(TrajectoryNode, args)


if __name__ == '__main__':
    raise SystemExit(main())
