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
sin2_pose`` (:class:`robot_dynamics.trajectories.Sin2PoseMove`: the ``sin2_pick_place`` position
and a rotation ``rot_angle`` s(t) [rad] about the fixed world axis ``rot_axis``): the pose's
orientation exp(r^) (quaternion x, y, z, w; r the rotation vector, world axes, relative to the
identity), the twist's and accel's angular parts w, dw/dt [rad/s, rad/s^2]; both modes
``reference/derivatives`` (std_msgs/Float64MultiArray, rows = derivative order 0..4, columns =
coordinates, for controllers that need jerk and snap). t = 0 is the first published sample.
``mode: pkm_d2`` (seed 004, ``profile: roll`` with ``roll_min``/``roll_max`` [rad], ``roll_period``
[s], ``roll_center`` [m]: the Gough-Stewart's compiled route; or, for any PKM of the general route
(robot_dynamics.pkm.general, lower-mobility platform), ``profile`` circle | waypoints |
sin2_pick_place with the task-mode parameters in the TASK coordinates ``general_pkm(model).task``
(e.g. world x, y, z of the platform frame; default centre / start the reference configuration's,
circle plane default e1 = x, e2 = y), precomputed once at start-up on a grid of ``table_step`` s
(default 0.001 = the lock-step plant period; :class:`robot_dynamics.control.d2_feedforward.
TabulatedD2Feedforward`): the platform motion goes through the 2nd-order recursive inverse
dynamics; ``reference/joint_trajectory`` carries the actuated joints' position/velocity/
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
inverse output map (:class:`robot_dynamics.partitioning.CartesianReference`: Newton on the
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
``sync_topic`` (e.g. ``joint_states``; default '' = timer at ``rate``): publish one sample per
message of that JointState topic, at t = stamp - first stamp, with the state's stamp (for
lock-step graphs: the reference then keeps pace with the simulation however loaded the machine
is). With ``use_sim_time: true`` the profile runs on simulated time; until the simulation clock
starts, the t = 0 sample is published every 0.2 s of wall time (so a lock-step plant, which
waits for a command, can be started by a controller that waits for a reference).
"""
import numpy as np
from geometry_msgs.msg import AccelStamped, PoseStamped, TwistStamped
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from std_msgs.msg import Float64MultiArray, MultiArrayDimension
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robot_dynamics.errors import RobotDynamicsError
from robot_dynamics.lie import exp_so3, matrix_to_quat_xyzw
from robot_dynamics.nodes._common import QOS_COMMAND, QOS_STATE, declare_params, load_model_param, spin_node
from robot_dynamics.trajectories import make_profile

ORDER = 4


class TrajectoryNode(Node):
    """Publishes an analytic reference at a fixed rate."""

    def __init__(self):
        super().__init__('trajectory_node')
        self.model = m = load_model_param(self)
        dp = self._declare
        self.mode = dp('mode', 'joint').value
        kind = dp('profile', 'sinusoid' if self.mode == 'joint' else 'circle').value
        rate = float(dp('rate', 100.0).value)
        if self.mode not in ('joint', 'task', 'pkm_d2', 'boom_task', 'task_ik') or rate <= 0:
            raise ValueError(f"mode must be 'joint', 'task', 'pkm_d2', 'boom_task' or 'task_ik' and rate > 0 "
                             f"(got {self.mode!r}, {rate})")
        self.d2 = None
        if self.mode == 'pkm_d2':
            # platform motion -> 2nd-order recursive inverse dynamics (seed 004): the actuated
            # joint reference with the feed-forward u in the trajectory point's effort
            from robot_dynamics.control.d2_feedforward import D2Feedforward
            from robot_dynamics.pkm.gough_stewart import RollMotion
            if kind not in ('roll', 'circle', 'waypoints', 'sin2_pick_place'):
                raise ValueError(f"mode 'pkm_d2' supports profiles 'roll' (Gough-Stewart), 'circle', "
                                 f"'waypoints' and 'sin2_pick_place' (general route), got {kind!r}")
            if kind == 'roll':
                self.d2 = D2Feedforward(m, RollMotion(
                    theta_min=float(dp('roll_min', -0.5).value), theta_max=float(dp('roll_max', 0.5).value),
                    period=float(dp('roll_period', 1.0).value),
                    p0=np.asarray(dp('roll_center', [0.0, 0.0, 0.2]).value, float)))
            else:
                # general route (any PKM of robot_dynamics.pkm.general): the task-coordinate profile
                # (default centre / start: the platform at the sidecar's reference configuration)
                # precomputed once on a grid of table_step [s] (the lock-step plant period)
                from robot_dynamics.control.d2_feedforward import (tabulated_d2_defaults,
                                                                   tabulated_d2_from_params)
                self.d2 = tabulated_d2_from_params(m, kind, {
                    k: dp(k, v).value for k, v in tabulated_d2_defaults(m).items()})
                self.get_logger().info(f'pkm_d2 table: {self.d2.n + 1} samples of the general route '
                                       f'over {self.d2.T:.4g} s ({self.d2.kind}), task {self.d2.pkm.task}')
            self.joints = list(m.actuated) if kind == 'roll' else list(self.d2.joints)
            self.profile = self._d2_profile
            self.pub_ff = self.create_publisher(Float64MultiArray, '~/feedforward', QOS_STATE)
            from sensor_msgs.msg import JointState
            self.pub_ref = self.create_publisher(JointState, '~/reference', QOS_STATE)
            self.repeat = False
        elif self.mode == 'boom_task':
            # seed 001: A-B-C-D tool-point legs mapped to the segment joints (hydraulic boom)
            from robot_dynamics.control.vdc import BoomTaskProfile
            self.profile = BoomTaskProfile(
                m, dp('waypoints', [2.07152, 0.39253, 2.47152, 0.39253, 2.47152, 0.09253, 2.07152,
                                    0.09253]).value, axes=dp('task_axes', [0, 2]).value,
                loops=int(dp('task_loops', 2).value), leg_duration=float(dp('leg_duration', 2.0).value),
                start_delay=float(dp('start_delay', 0.0).value))
            self.joints, self.repeat, kind = self.profile.joints, False, 'A-B-C-D'
        elif self.mode == 'joint':
            self.joints = list(dp('joints', list(m.independent)).value)
            idx = [m.joint_index(j) for j in self.joints]
            n = len(idx)
            q0 = m.reference_q()[idx]
            params = dict(amplitude=dp('amplitude', [0.3] * n).value,
                          frequency=dp('frequency', [0.25] * n).value,
                          phase=dp('phase', [0.0] * n).value,
                          offset=dp('offset', q0.tolist()).value,
                          waypoints=dp('waypoints', np.tile(q0, 2).tolist()).value,
                          durations=dp('durations', [1.0]).value, n=n)
        else:
            self.joints = ['x', 'y', 'z']
            params = dict(center=dp('center', [0.0, 0.0, 0.0]).value, radius=dp('radius', 0.05).value,
                          frequency=dp('frequency', 0.25).value, e1=dp('e1', [1.0, 0.0, 0.0]).value,
                          e2=dp('e2', [0.0, 0.0, 1.0]).value, phase=dp('phase', 0.0).value)
            if kind == 'sin2_pose':             # position + rotation vector (6 columns)
                self.joints = ['x', 'y', 'z', 'rx', 'ry', 'rz']
                params.update(rot_axis=dp('rot_axis', [0.0, 0.0, 1.0]).value,
                              rot_angle=float(dp('rot_angle', 0.0).value))
        if self.d2 is None and self.mode != 'boom_task' and kind == 'goals':
            if self.mode == 'task_ik':
                raise ValueError("mode 'task_ik' supports profiles 'circle' and 'sin2_pick_place'")
            self.repeat, self.profile = False, self._goal_profile(m, dp)
        elif self.d2 is None and self.mode != 'boom_task':
            self.repeat = dp('repeat', True).value
            self.profile = make_profile(kind, **params)
        if self.mode == 'task_ik':
            # seed 000: the tool path through the inverse output map to the minimal coordinates
            from robot_dynamics.partitioning import CartesianReference
            self.profile = CartesianReference(m, self.profile, frame=dp('task_frame', 'tool').value,
                                              axes=dp('task_axes', [0, 1, 2]).value)
            self.joints = list(self.profile.coords)
            self.profile(0.0)             # an unreachable start stops the node here, with the reason
        self.world = m.root_link
        if self.mode in ('joint', 'pkm_d2', 'boom_task', 'task_ik'):
            self.pub_jt = self.create_publisher(JointTrajectory, 'reference/joint_trajectory', QOS_COMMAND)
        else:
            self.pub_pose = self.create_publisher(PoseStamped, 'reference/pose', QOS_COMMAND)
            self.pub_twist = self.create_publisher(TwistStamped, 'reference/twist', QOS_COMMAND)
            self.pub_acc = self.create_publisher(AccelStamped, 'reference/accel', QOS_COMMAND)
        self.pub_der = self.create_publisher(Float64MultiArray, 'reference/derivatives', QOS_COMMAND)
        self.t0 = None
        self.sync_topic = dp('sync_topic', '').value
        if self.sync_topic:
            # state-synchronised (lock-step graphs): one sample per new state stamp, at
            # t = stamp - first stamp, stamped like the state: the reference cannot fall behind
            from sensor_msgs.msg import JointState
            self.create_subscription(JointState, self.sync_topic, self.on_state, QOS_STATE)
            self.get_logger().info(f'{self.mode} reference ({kind}) for {self.joints}, one sample per '
                                   f'{self.sync_topic} stamp')
            return
        # start_topic: the profile clock starts at the first message there (a controller's
        # commands: the controller is live); until then the t = 0 sample is published (a
        # slow-starting controller must not find its reference already seconds into the motion)
        self.start_sub = None
        start_topic = dp('start_topic', '').value
        if start_topic:
            self.start_sub = self.create_subscription(Float64MultiArray, start_topic, self.on_start,
                                                      QOS_COMMAND)
        self.create_timer(1.0 / rate, self.tick)
        # Under simulated time (use_sim_time, e.g. a lock-step sim_node) the ROS clock only
        # advances once the plant is commanded, and the plant is only commanded once there is
        # a reference: publish the t = 0 sample on a wall-clock timer until the clock runs.
        if self.get_parameter('use_sim_time').value:
            self.prime = self.create_timer(0.2, self.prime_tick, clock=Clock(clock_type=ClockType.STEADY_TIME))
        self.get_logger().info(f'{self.mode} reference ({kind}) for {self.joints} at {rate} Hz')

    #: name -> (description, constraint) of every parameter (declared read-only with these
    #: descriptors when first read, so a bad start value stops the node with the parameter's name
    #: and a run-time `ros2 param set` is refused: the profile is built once at start)
    PARAMS = {
        'mode': ('reference kind: joint trajectory, task-space pose, PKM roll with 2nd-order ID '
                 'feed-forward, hydraulic boom A-B-C-D, task path as a minimal-coordinate trajectory',
                 ('joint', 'task', 'pkm_d2', 'boom_task', 'task_ik')),
        'profile': ('motion: sinusoid | waypoints (joint), circle | sin2_pick_place | sin2_pose | '
                    'goals (task), roll (pkm_d2)',
                    ('sinusoid', 'waypoints', 'circle', 'sin2_pick_place', 'sin2_pose', 'goals', 'roll')),
        'rot_axis': ('sin2_pose: fixed world axis of the platform rotation', None),
        'rot_angle': ('sin2_pose: rotation at s = 1 [rad] (|rot_angle| < pi)', None),
        'rate': ('samples per second [Hz] (real time)', (1e-3, 1e5)),
        'joints': ('joint names of a joint reference (default: the independent joints)', None),
        'amplitude': ('sinusoid amplitude per joint [rad | m]', None),
        'frequency': ('sinusoid / circle frequency [Hz]', None),
        'phase': ('sinusoid / circle phase [rad]', None),
        'offset': ('sinusoid offset per joint [rad | m] (default: the reference configuration)', None),
        'waypoints': ('joint waypoints (flattened rows) | boom A-B-C-D tool points (x, z pairs) [m]', None),
        'durations': ('duration of each waypoint segment [s]', None),
        'repeat': ('repeat the profile after its duration', None),
        'center': ('circle centre, world frame [m]', None),
        'radius': ('circle radius [m]', (0.0, None)),
        'e1': ('first in-plane unit vector of the circle (world)', None),
        'e2': ('second in-plane unit vector of the circle (world)', None),
        'roll_min': ('pkm_d2 roll: smallest platform roll angle [rad]', None),
        'roll_max': ('pkm_d2 roll: largest platform roll angle [rad]', None),
        'roll_period': ('pkm_d2 roll: period [s]', (1e-6, None)),
        'roll_center': ('pkm_d2 roll: platform centre (world) [m]', None),
        'task_axes': ('boom_task / task_ik: world components of the tool point', None),
        'task_frame': ('task_ik: frame whose origin follows the task path', None),
        'task_loops': ('boom_task: number of A-B-C-D loops', (1, 1000000)),
        'leg_duration': ('boom_task: duration of one leg [s]', (1e-6, None)),
        'start_delay': ('boom_task: rest before the first leg [s]', (0.0, None)),
        'start': ('goals: EE position at rest before the first goal (world) [m]', None),
        'max_speed': ('goals: peak EE speed of a move [m/s]', (1e-9, None)),
        'min_duration': ('goals: shortest move [s]', (0.0, None)),
        'goal_topic': ('goals: geometry_msgs/PointStamped goals (relative name)', None),
        'sync_topic': ('lock-step: one sample per JointState stamp on this topic (empty: timer)', None),
        'start_topic': ('real time: the profile starts with the first message here (empty: at once)', None),
    }

    def _declare(self, name, default):
        """Declare ``name`` (read-only, described, constrained: :attr:`PARAMS`); its Parameter."""
        text, cons = self.PARAMS.get(name, ('', None))
        declare_params(self, {name: (default, text, cons)})
        return self.get_parameter(name)

    def _goal_profile(self, m, dp):
        """``mode: task``, ``profile: goals`` (seed 004's SEA moves): rest at ``start`` until a
        goal (geometry_msgs/PointStamped, world frame) arrives on ``goal_topic``; each goal starts
        a sin^2-jerk move (:class:`robot_dynamics.trajectories.GoalMoves`, ``max_speed``,
        ``min_duration``) at the time of the last published sample; a goal whose path leaves the
        workspace (checked for the planar 3RRR SEA-PKM) is rejected with a warning."""
        from geometry_msgs.msg import PointStamped
        from robot_dynamics.trajectories import GoalMoves
        reachable = None
        if sum(a.get('type') == 'sea' for a in m.actuators.values()) == 3:   # the SEA-PKM
            from robot_dynamics.pkm.planar_sea import Planar3RRR
            from robot_dynamics.sea import sea_params_from_model
            pkm = Planar3RRR(sea_params_from_model(m))
            reachable = lambda pts: pkm.ik(pts[:, :2])                # noqa: E731
            pkm.ik(np.zeros((21, 2)))         # load the IK kernel now, not on the first goal
        prof = GoalMoves(dp('start', [0.0, 0.0, 0.0]).value, float(dp('max_speed', 0.4).value),
                         float(dp('min_duration', 0.3).value), reachable)
        self.t_last = 0.0
        topic = dp('goal_topic', 'goal').value
        self.create_subscription(PointStamped, topic, self.on_goal, QOS_COMMAND)
        self.get_logger().info(f'goals on {topic} (geometry_msgs/PointStamped)')
        return prof

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
        t = (ns - self.t0) * 1e-9
        dur = getattr(self.profile, 'duration', None)
        if dur and self.repeat:
            t = t % dur
        self.publish_sample(t, None, stamp=msg.header.stamp)

    def on_start(self, msg):
        if self.start_sub is not None:
            self.destroy_subscription(self.start_sub)
            self.start_sub = None
            self.get_logger().info('start topic: the profile starts')

    def prime_tick(self):
        if self.t0 is not None:
            self.prime.cancel()
            return
        self.publish_sample(0.0, self.get_clock().now())

    def tick(self):
        now = self.get_clock().now()
        if now.nanoseconds == 0:
            return                      # simulated time not started yet (see prime_tick)
        if self.t0 is None:
            if self.start_sub is not None:
                self.publish_sample(0.0, now)
                return
            self.t0 = now
        t = (now - self.t0).nanoseconds * 1e-9
        dur = getattr(self.profile, 'duration', None)
        if dur and self.repeat:
            t = t % dur
        self.publish_sample(t, now)

    def _d2_profile(self, t, order=ORDER):
        self._d2_ref = r = self.d2.reference(t)
        return r.theta_a[:order + 1]

    def publish_sample(self, t, now, stamp=None):
        self.t_last = t
        try:
            x = self.profile(t, order=ORDER)                   # (ORDER + 1, n)
        except RobotDynamicsError as exc:
            self.get_logger().error(f'reference at t = {t:.4f} s: {exc} (not published)',
                                    throttle_duration_sec=1.0)
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
            if x.shape[1] == 6:                 # + rotation vector about a fixed axis: dr/dt = w
                o = ps.pose.orientation
                o.x, o.y, o.z, o.w = map(float, matrix_to_quat_xyzw(exp_so3(x[0][3:])))
                tw.twist.angular.x, tw.twist.angular.y, tw.twist.angular.z = map(float, x[1][3:])
                ac.accel.angular.x, ac.accel.angular.y, ac.accel.angular.z = map(float, x[2][3:])
            self.pub_pose.publish(ps)
            self.pub_twist.publish(tw)
            self.pub_acc.publish(ac)
        der = Float64MultiArray()
        der.layout.dim = [MultiArrayDimension(label='derivative', size=x.shape[0], stride=x.size),
                          MultiArrayDimension(label=','.join(self.joints), size=x.shape[1], stride=x.shape[1])]
        der.data = x.ravel().tolist()
        self.pub_der.publish(der)


    def _publish_d2(self, t, x, stamp):
        from sensor_msgs.msg import JointState
        r = self._d2_ref
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
