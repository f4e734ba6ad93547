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
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robot_dynamics.control.loop import StampedParts
from robot_dynamics.ros.decimator import Decimator
from robot_dynamics.errors import RobotDynamicsError
from robot_dynamics.ros._common import (
    QOS_COMMAND,
    QOS_REFERENCE,
    QOS_STATE,
    declare_params,
    guarded,
    labelled_array,
    load_model_param,
    spin_node,
    stamp_sec,
    task_part_vec,
    wrench_vec,
)
from robot_dynamics.pkm.embedding import IKTracker, task_reference


class IKNode(Node):
    """Constraint-embedding IK node."""

    def __init__(self):
        super().__init__('ik_node')
        self.model = m = load_model_param(self)
        P = declare_params(
            self,
            {
                'scheme': ('nested', 'constraint-embedding IK scheme', ('nested', 'compound')),
                'kappa_warn': (30.0, 'warn above this condition number of the task Jacobian', (1.0, 1e16)),
                'tol': (1e-10, 'IK tolerance', (1e-16, 1.0)),
                'max_outer': (20, 'outer Newton iterations at most', (1, 10000)),
                'aux_rate': (
                    0.0,
                    '~/joint_trajectory, ~/joint_states, ~/feedforward, ~/diagnostics at most '
                    'this often [Hz of sample time] (0 = every sample; the controller topics '
                    'always go with every sample)',
                    (0.0, 1e6),
                ),
            },
        )
        self.aux_out = Decimator.from_rate(P['aux_rate'])
        self.tracker = IKTracker(
            m, scheme=P['scheme'], kappa_warn=float(P['kappa_warn']), tol=float(P['tol']), max_outer=int(P['max_outer'])
        )
        self.parts = StampedParts(3)
        self.wrench = None
        self.pub_ref = self.create_publisher(JointTrajectory, 'reference/joint_trajectory', QOS_REFERENCE)
        self.pub_jt = self.create_publisher(JointTrajectory, '~/joint_trajectory', QOS_COMMAND)
        self.pub_js = self.create_publisher(JointState, '~/joint_states', QOS_STATE)
        self.pub_ff = self.create_publisher(Float64MultiArray, '~/feedforward', QOS_STATE)
        self.pub_ffe = self.create_publisher(JointState, '~/feedforward_effort', QOS_REFERENCE)
        self.pub_diag = self.create_publisher(Float64MultiArray, '~/diagnostics', QOS_STATE)
        for k, (typ, topic) in enumerate(
            ((PoseStamped, 'reference/pose'), (TwistStamped, 'reference/twist'), (AccelStamped, 'reference/accel'))
        ):
            self.create_subscription(
                typ, topic, guarded(self, lambda msg, k=k: self.on_part(k, msg), 'reference'), QOS_REFERENCE
            )
        self.create_subscription(WrenchStamped, '~/ee_wrench', guarded(self, self.on_wrench, 'ee_wrench'), QOS_COMMAND)
        self.create_service(Trigger, '~/reset_seed', guarded(self, self.on_reset, 'reset_seed'))
        self.labels = self.tracker.diagnostic_labels
        self.n_fail = 0
        pk = self.tracker.pkm
        self.get_logger().info(
            f'constraint-embedding IK: {len(pk.limbs)} limbs, task {pk.task} of frame '
            f"'{pk.platform_frame}', publishes {m.nq} joints"
        )

    def on_wrench(self, msg):
        w = wrench_vec(msg)
        if not np.all(np.isfinite(w)):
            self.get_logger().warn('non-finite ee_wrench rejected', throttle_duration_sec=1.0)
            return
        if self.wrench is None or not np.array_equal(w, self.wrench):
            self.get_logger().info(
                f'ee_wrench: force {np.round(w[:3], 6).tolist()} N, moment {np.round(w[3:], 6).tolist()} N m',
                throttle_duration_sec=1.0,
            )
        self.wrench = w

    def on_reset(self, request, response):
        self.tracker.reset()
        response.success, response.message = True, 'seed reset to the reference assembly mode'
        return response

    def on_part(self, k, msg):
        h = msg.header
        sample = self.parts.add(k, (h.stamp.sec, h.stamp.nanosec), (task_part_vec(msg), h))
        if sample is None:
            return
        (pose, header), (tw, _), (ac, _) = sample
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
        except RobotDynamicsError as exc:  # keep the last valid reference
            self.n_fail += 1
            self.get_logger().error(f'IK failed, keeping the last valid reference: {exc}', throttle_duration_sec=1.0)
            return
        m, i, a = self.model, self.model.independent_indices, self.model.actuated_indices
        pti = JointTrajectoryPoint(
            positions=mo.q[i].tolist(), velocities=mo.qd[i].tolist(), accelerations=mo.qdd[i].tolist()
        )
        self.pub_ref.publish(JointTrajectory(header=header, joint_names=list(m.independent), points=[pti]))
        self.pub_ffe.publish(
            JointState(
                header=header,
                name=list(m.actuated),
                position=mo.q[a].tolist(),
                velocity=mo.qd[a].tolist(),
                effort=td.u.tolist(),
            )
        )
        if not self.aux_out.due(stamp_sec(header.stamp)):
            return  # the auxiliary topics are decimated (aux_rate)
        names = list(m.joint_names)
        pt = JointTrajectoryPoint(positions=mo.q.tolist(), velocities=mo.qd.tolist(), accelerations=mo.qdd.tolist())
        self.pub_jt.publish(JointTrajectory(header=header, joint_names=names, points=[pt]))
        self.pub_js.publish(JointState(header=header, name=names, position=mo.q.tolist(), velocity=mo.qd.tolist()))
        self.pub_ff.publish(labelled_array(list(m.actuated), td.u))
        self.pub_diag.publish(labelled_array(self.labels, self.tracker.diagnostics(sol, mo)))
        if self.tracker.near_singular:
            self.get_logger().warn(
                f'near input singularity: cond(F) = {max(sol.cond_F):.1f}', throttle_duration_sec=1.0
            )


def main(args=None):
    spin_node(IKNode, args)


if __name__ == '__main__':
    main()
