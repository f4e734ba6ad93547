"""kinematics_node: URDF-driven kinematics of the closed mechanism from /joint_states.

Subscribes ``joint_states`` (sensor_msgs/JointState, every joint by name; for a model with
multi-DOF joints, a floating base or ball joints, every one-DOF joint, paired by stamp with the
``multi_dof_joint_states`` message that sim_node publishes for the same state, see
:mod:`robot_dynamics.ros.wire`; poses are then in ``world_frame``, default ``world``). Publishes, for
each frame in the ``frames`` parameter, ``~/<frame>/pose`` (geometry_msgs/PoseStamped) and
``~/<frame>/twist`` (geometry_msgs/TwistStamped: origin velocity and angular velocity in the
world axes; a character of the frame name that a topic name does not take, e.g. '-', becomes
'_'), the closure error of every loop on ``~/loop_residual`` (std_msgs/Float64MultiArray,
[position error m, orientation error] per loop, layout labels = loop names) and
``~/markers`` (visualization_msgs/MarkerArray: both cut frames of each loop as spheres and
the residual as a line, green when closed, red when the error exceeds ``residual_warn``; at
most ``marker_rate`` times per second of state stamps, 30 Hz by default: RViz needs no more,
and a MarkerArray per 1 kHz state costs more CPU than the kinematics). ``rate`` (default 0 =
every state): poses, twists and residuals at most this often per second of state stamps.
"""

import re

import rclpy  # noqa: F401 - imported for the node runtime
from geometry_msgs.msg import Point, PoseStamped, TwistStamped
from rclpy.node import Node
from sensor_msgs.msg import JointState, MultiDOFJointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension
from visualization_msgs.msg import Marker, MarkerArray

import robot_dynamics as rd
from robot_dynamics.ros.decimator import Decimator
from robot_dynamics.ros.wire import WireState
from robot_dynamics.spatial.lie import matrix_to_quat_xyzw
from robot_dynamics.ros._common import (
    QOS_STATE,
    JointStateParser,
    declare_params,
    guarded,
    load_model_param,
    parse_multi_dof,
    spin_node,
    stamp_sec,
)


def topic_part(frame):
    """``frame`` as a topic name token: every character other than a letter, a digit or '_'
    becomes '_' (link names of SDFormat models have '-', which ROS topic names do not take)."""
    return re.sub(r'[^A-Za-z0-9_]', '_', frame)


class KinematicsNode(Node):
    """Poses, twists and loop residuals of configured frames."""

    def __init__(self):
        super().__init__('kinematics_node')
        self.model = load_model_param(self, multi_dof=True)
        m = self.model
        default = [f for f in ('tool', 'tool0', 'ee', 'end_effector') if f in m.frame_names][:1] or [m.frame_names[-1]]
        P = declare_params(
            self,
            {
                'frames': (default, 'frames whose pose and twist are published', None),
                'residual_warn': (1e-6, 'loop closure error shown red above [m | -]', (0.0, 1e3)),
                'marker_rate': (
                    30.0,
                    'cut-frame markers for RViz at most this often, by state stamp [Hz] (0: every state)',
                    (0.0, 1e5),
                ),
                'rate': (
                    0.0,
                    'poses, twists, loop residuals at most this often, by state stamp [Hz] (0: every state)',
                    (0.0, 1e5),
                ),
                'world_frame': ('', "frame of the poses with a floating base ('' = world)", None),
            },
        )
        self.out = Decimator.from_rate(P['rate'])
        self.frames = list(P['frames'])
        for f in self.frames:
            m.frame_index(f)  # raises KeyError if unknown
        self.residual_warn = P['residual_warn']
        self.marker_out = Decimator.from_rate(P['marker_rate'])
        self.wire = WireState(m, P['world_frame'])
        self.world = self.wire.world  # (the URDF root link without a floating base)
        self.parser = JointStateParser(m)
        self._js = self._md = None  # multi-DOF: the latest of each, paired by stamp
        self.pub_pose = {
            f: self.create_publisher(PoseStamped, f'~/{topic_part(f)}/pose', QOS_STATE) for f in self.frames
        }
        self.pub_twist = {
            f: self.create_publisher(TwistStamped, f'~/{topic_part(f)}/twist', QOS_STATE) for f in self.frames
        }
        self.pub_res = self.create_publisher(Float64MultiArray, '~/loop_residual', QOS_STATE)
        self.pub_mk = self.create_publisher(MarkerArray, '~/markers', QOS_STATE)
        self.create_subscription(
            JointState, 'joint_states', guarded(self, self.on_joint_states, 'joint_states'), QOS_STATE
        )
        if self.wire.multi:
            self.create_subscription(
                MultiDOFJointState,
                'multi_dof_joint_states',
                guarded(self, self.on_multi_dof, 'multi_dof_joint_states'),
                QOS_STATE,
            )
        self.rejected = 0

    def on_joint_states(self, msg):
        if self.wire.multi:
            self._js = msg
            return self._pair()
        self.on_state(msg)

    def on_multi_dof(self, msg):
        self._md = msg
        self._pair()

    def _pair(self):
        """The joint_states and multi_dof_joint_states messages of one state (same stamp)."""
        js, md = self._js, self._md
        if js is not None and md is not None and js.header.stamp == md.header.stamp:
            self._js = self._md = None
            self.on_state(js, md)

    def _reject(self, why):
        self.rejected += 1
        self.get_logger().warning(f'rejected joint_states: {why}', throttle_duration_sec=2.0)

    def on_state(self, msg, md=None):
        if not self.out.due(stamp_sec(msg.header.stamp)):
            return  # decimated (rate)
        q, qd, why = self.parser.parse(msg)
        if why:
            return self._reject(why)
        if md is not None:
            tr, tw, why = parse_multi_dof(self.wire, md)
            if why:
                return self._reject(f'multi_dof_joint_states: {why}')
            w = self.wire
            q, qd = w.assemble(q[w.q_idx], qd[w.v_idx], tr, tw)
        m = self.model
        stamp = msg.header.stamp
        T = rd.forward_kinematics(m, q, self.frames)
        for f in self.frames:
            ps = PoseStamped()
            ps.header.stamp, ps.header.frame_id = stamp, self.world
            p, quat = T[f][:3, 3], matrix_to_quat_xyzw(T[f][:3, :3])
            ps.pose.position.x, ps.pose.position.y, ps.pose.position.z = map(float, p)
            (ps.pose.orientation.x, ps.pose.orientation.y, ps.pose.orientation.z, ps.pose.orientation.w) = map(
                float, quat
            )
            self.pub_pose[f].publish(ps)
            V = rd.frame_velocity(m, q, qd, f, 'local_world_aligned')
            ts = TwistStamped()
            ts.header.stamp, ts.header.frame_id = stamp, self.world
            ts.twist.linear.x, ts.twist.linear.y, ts.twist.linear.z = map(float, V[:3])
            ts.twist.angular.x, ts.twist.angular.y, ts.twist.angular.z = map(float, V[3:])
            self.pub_twist[f].publish(ts)
        if m.loops:
            errs = rd.loop_errors(m, q)
            arr = Float64MultiArray()
            arr.layout.dim = [
                MultiArrayDimension(label=','.join(errs), size=len(errs), stride=2 * len(errs)),
                MultiArrayDimension(label='position_m,orientation_rad', size=2, stride=2),
            ]
            arr.data = [float(v) for e in errs.values() for v in e]
            self.pub_res.publish(arr)
            if self.marker_out.due(stamp_sec(stamp)):  # (a clock reset: due)
                self.pub_mk.publish(self._markers(q, errs, stamp))

    def _markers(self, q, errs, stamp):
        m = self.model
        names = [f for lp in m.loops for f in (lp.frame_a, lp.frame_b)]
        T = rd.forward_kinematics(m, q, names)
        out = MarkerArray()
        for k, lp in enumerate(m.loops):
            bad = max(errs[lp.name]) > self.residual_warn
            for s, f in enumerate((lp.frame_a, lp.frame_b)):
                mk = Marker()
                mk.header.stamp, mk.header.frame_id = stamp, self.world
                mk.ns, mk.id, mk.type, mk.action = 'cut_frames', 2 * k + s, Marker.SPHERE, Marker.ADD
                p = T[f][:3, 3]
                mk.pose.position.x, mk.pose.position.y, mk.pose.position.z = map(float, p)
                mk.pose.orientation.w = 1.0
                mk.scale.x = mk.scale.y = mk.scale.z = 0.02
                mk.color.r, mk.color.g, mk.color.b, mk.color.a = (1.0, 0.1, 0.1, 0.9) if bad else (0.1, 0.8, 0.2, 0.9)
                out.markers.append(mk)
            ln = Marker()
            ln.header.stamp, ln.header.frame_id = stamp, self.world
            ln.ns, ln.id, ln.type, ln.action = 'residual', k, Marker.LINE_STRIP, Marker.ADD
            ln.pose.orientation.w = 1.0
            ln.scale.x = 0.005
            ln.color.r, ln.color.g, ln.color.b, ln.color.a = 1.0, 0.2, 0.2, 1.0
            for f in (lp.frame_a, lp.frame_b):
                p = T[f][:3, 3]
                ln.points.append(Point(x=float(p[0]), y=float(p[1]), z=float(p[2])))
            ln.text = f'{lp.name}: {errs[lp.name][0]:.2e} m'
            out.markers.append(ln)
        return out


def main(args=None):
    """Entry point (console script ``kinematics_node``)."""
    return spin_node(KinematicsNode, args)


if __name__ == '__main__':
    raise SystemExit(main())
