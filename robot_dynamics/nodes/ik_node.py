"""ik_node: constraint-embedding inverse kinematics (seed 003) task -> every joint.

Subscribes the task reference ``reference/pose`` (PoseStamped), ``reference/twist``
(TwistStamped), ``reference/accel`` (AccelStamped) as published by trajectory_node in task mode
(the components of the PKM task: x, y, z from the position / linear parts, rx, ry, rz from the
rotation vector of R R_ref^T of the pose's orientation quaternion and from the angular parts of
twist and accel, :func:`robot_dynamics.pkm.embedding.task_reference`), and ``~/ee_wrench`` (WrenchStamped, force/torque on the platform,
world axes, about the platform frame origin) for the feed-forward. A sample is processed when
its three parts carry the same header stamp.

Publishes, per sample:

* ``reference/joint_trajectory`` (JointTrajectory, one point, the model's ``independent``
  joints: positions/velocities/accelerations) - the joint reference of dynamics_node
  (law 'pidc', reference 'joint');
* ``~/joint_trajectory`` (JointTrajectory, ALL URDF joints, passive ones included, p/v/a) for a
  ros2_control joint_trajectory_controller;
* ``~/joint_states`` (JointState, all joints, positions and velocities);
* ``~/feedforward`` (Float64MultiArray, actuated joints in sidecar order): the actuator forces
  of the task-space inverse dynamics (eq. 45) for the reference motion and the latest wrench;
* ``~/feedforward_effort`` (sensor_msgs/JointState, header = the reference sample's header,
  names = the actuated joints, position/velocity = their IK reference, effort = the same u):
  the stamped feed-forward consumed by dynamics_node ``law: embedding_feedforward``;
* ``~/diagnostics`` (Float64MultiArray, labelled: outer iterations per limb, max inner
  iterations, task residual [m], loop residual, cond(F_(l)) per limb, cond(J_IK), near_singular).

Service ``~/reset_seed`` (Trigger): back to the reference assembly mode. On failure (unreachable
target, branch switch, non-convergence, singularity) the node keeps the last valid reference,
logs the error and publishes nothing for that sample.
Parameters: ``robot_description``, ``loops``, ``scheme`` (nested | compound), ``tol`` (1e-10),
``max_outer`` (20), ``kappa_warn`` (30: cond(F) above which a near-singularity is reported),
``aux_rate`` (0 = every sample: the auxiliary topics ``~/joint_trajectory``, ``~/joint_states``,
``~/feedforward``, ``~/diagnostics`` at most this often in sample time; the controller's
``reference/joint_trajectory`` and ``~/feedforward_effort`` always go with every sample).
"""
import numpy as np
from geometry_msgs.msg import AccelStamped, PoseStamped, TwistStamped, WrenchStamped
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robot_dynamics.decimator import Decimator
from robot_dynamics.errors import RobotDynamicsError
from robot_dynamics.nodes._common import (QOS_COMMAND, QOS_STATE, declare_params, guarded,
                                          load_model_param, spin_node, stamp_sec)
from robot_dynamics.pkm.embedding import IKTracker, task_reference


def _stamp(h):
    return (h.stamp.sec, h.stamp.nanosec)


class IKNode(Node):
    """Constraint-embedding IK node."""

    def __init__(self):
        super().__init__('ik_node')
        self.model = m = load_model_param(self)
        P = declare_params(self, {
            'scheme': ('nested', 'constraint-embedding IK scheme', ('nested', 'compound')),
            'kappa_warn': (30.0, 'warn above this condition number of the task Jacobian', (1.0, None)),
            'tol': (1e-10, 'IK tolerance', (1e-16, 1.0)),
            'max_outer': (20, 'outer Newton iterations at most', (1, 10000)),
            'aux_rate': (0.0, '~/joint_trajectory, ~/joint_states, ~/feedforward, ~/diagnostics at most '
                         'this often [Hz of sample time] (0 = every sample; the controller topics '
                         'always go with every sample)', (0.0, 1e6))})
        self.aux_out = Decimator.from_rate(P['aux_rate'])
        self.tracker = IKTracker(m, scheme=P['scheme'], kappa_warn=float(P['kappa_warn']),
                                 tol=float(P['tol']), max_outer=int(P['max_outer']))
        pk = self.tracker.pkm
        self.act_idx = m.actuated_indices
        self.ind_idx = m.independent_indices
        self.parts = {}
        self.wrench = None
        self.pub_ref = self.create_publisher(JointTrajectory, 'reference/joint_trajectory', QOS_COMMAND)
        self.pub_jt = self.create_publisher(JointTrajectory, '~/joint_trajectory', QOS_COMMAND)
        self.pub_js = self.create_publisher(JointState, '~/joint_states', QOS_STATE)
        self.pub_ff = self.create_publisher(Float64MultiArray, '~/feedforward', QOS_STATE)
        self.pub_ffe = self.create_publisher(JointState, '~/feedforward_effort', QOS_COMMAND)
        self.pub_diag = self.create_publisher(Float64MultiArray, '~/diagnostics', QOS_STATE)
        self.create_subscription(PoseStamped, 'reference/pose', guarded(self, lambda msg: self.on_part(0, msg), 'reference'), QOS_COMMAND)
        self.create_subscription(TwistStamped, 'reference/twist', guarded(self, lambda msg: self.on_part(1, msg), 'reference'), QOS_COMMAND)
        self.create_subscription(AccelStamped, 'reference/accel', guarded(self, lambda msg: self.on_part(2, msg), 'reference'), QOS_COMMAND)
        self.create_subscription(WrenchStamped, '~/ee_wrench', guarded(self, self.on_wrench, 'ee_wrench'), QOS_COMMAND)
        self.create_service(Trigger, '~/reset_seed', guarded(self, self.on_reset, 'reset_seed'))
        nl = len(pk.limbs)
        self.labels = ([f'outer_{lb.name}' for lb in pk.limbs] + ['inner_max', 'task_residual',
                       'loop_residual'] + [f'cond_F_{lb.name}' for lb in pk.limbs]
                       + ['cond_J_IK', 'near_singular'])
        self.n_fail = 0
        self.get_logger().info(f'constraint-embedding IK: {nl} limbs, task {pk.task} of frame '
                               f"'{pk.platform_frame}', publishes {m.nq} joints")

    def on_wrench(self, msg):
        w = np.array([msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z,
                      msg.wrench.torque.x, msg.wrench.torque.y, msg.wrench.torque.z])
        if np.all(np.isfinite(w)):
            if self.wrench is None or not np.array_equal(w, self.wrench):
                self.get_logger().info(f'ee_wrench: force {np.round(w[:3], 6).tolist()} N, moment '
                                       f'{np.round(w[3:], 6).tolist()} N m', throttle_duration_sec=1.0)
            self.wrench = w
        else:
            self.get_logger().warn('non-finite ee_wrench rejected', throttle_duration_sec=1.0)

    def on_reset(self, request, response):
        self.tracker.reset()
        response.success, response.message = True, 'seed reset to the reference assembly mode'
        return response

    def on_part(self, k, msg):
        if k == 0:
            p, o = msg.pose.position, msg.pose.orientation
            v = [p.x, p.y, p.z, o.x, o.y, o.z, o.w]
        else:
            a = msg.twist if k == 1 else msg.accel
            v = [a.linear.x, a.linear.y, a.linear.z, a.angular.x, a.angular.y, a.angular.z]
        self.parts[k] = (_stamp(msg.header), np.array(v), msg.header)
        if len(self.parts) == 3 and len({p[0] for p in self.parts.values()}) == 1:
            pose, tw, ac = (self.parts[i][1] for i in range(3))
            header = self.parts[0][2]
            self.parts = {}
            try:
                x, xd, xdd = task_reference(self.tracker.pkm, pose[:3], pose[3:], tw, ac)
            except RobotDynamicsError as exc:
                self.get_logger().warn(f'task reference rejected: {exc}', throttle_duration_sec=1.0)
                return
            self.process(header, x, xd, xdd)

    def process(self, header, x, xd, xdd):
        if not (np.all(np.isfinite(x)) and np.all(np.isfinite(xd)) and np.all(np.isfinite(xdd))):
            self.get_logger().warn('non-finite task reference rejected', throttle_duration_sec=1.0)
            return
        pk = self.tracker.pkm
        try:
            sol, mo = self.tracker.step(x, xd, xdd)
            td = pk.task_dynamics(sol, xd, xdd, self.wrench, motion=mo)
        except RobotDynamicsError as exc:            # keep the last valid reference
            self.n_fail += 1
            self.get_logger().error(f'IK failed, keeping the last valid reference: {exc}',
                                    throttle_duration_sec=1.0)
            return
        m = self.model
        names = list(m.joint_names)
        i = self.ind_idx
        pti = JointTrajectoryPoint(positions=mo.q[i].tolist(), velocities=mo.qd[i].tolist(),
                                   accelerations=mo.qdd[i].tolist())
        self.pub_ref.publish(JointTrajectory(header=header, joint_names=list(m.independent),
                                             points=[pti]))
        a = self.act_idx
        self.pub_ffe.publish(JointState(header=header, name=list(m.actuated), position=mo.q[a].tolist(),
                                        velocity=mo.qd[a].tolist(), effort=td.u.tolist()))
        if not self.aux_out.due(stamp_sec(header.stamp)):
            return                     # the auxiliary topics are decimated (aux_rate)
        pt = JointTrajectoryPoint(positions=mo.q.tolist(), velocities=mo.qd.tolist(),
                                  accelerations=mo.qdd.tolist())
        self.pub_jt.publish(JointTrajectory(header=header, joint_names=names, points=[pt]))
        self.pub_js.publish(JointState(header=header, name=names, position=mo.q.tolist(),
                                       velocity=mo.qd.tolist()))
        ff = Float64MultiArray(data=td.u.tolist())
        ff.layout.dim.append(MultiArrayDimension(label=','.join(m.actuated), size=len(td.u), stride=len(td.u)))
        self.pub_ff.publish(ff)
        d = ([float(k) for k in sol.outer] + [float(max((max(s) if s else 0) for s in sol.inner)),
             sol.task_residual, sol.loop_residual] + list(sol.cond_F)
             + [mo.cond_J_IK, float(self.tracker.near_singular)])
        dm = Float64MultiArray(data=d)
        dm.layout.dim.append(MultiArrayDimension(label=','.join(self.labels), size=len(d), stride=len(d)))
        self.pub_diag.publish(dm)
        if self.tracker.near_singular:
            self.get_logger().warn(f'near input singularity: cond(F) = {max(sol.cond_F):.1f}',
                                   throttle_duration_sec=1.0)


def main(args=None):
    spin_node(IKNode, args)


if __name__ == '__main__':
    main()
