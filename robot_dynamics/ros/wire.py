"""The robot state on the wire (ROS-free; the nodes build the messages from these numbers).

``/joint_states`` (sensor_msgs/JointState) carries every one-DOF joint (revolute, prismatic) by
name: its coordinate of q, its velocity and its generalized force. A joint with several degrees
of freedom (a ``free_flyer`` floating base, a ``spherical`` ball joint, a ``planar`` joint; see
:mod:`robot_dynamics.spatial.joints`) goes on the multi-DOF topics instead, as the transform of
its child link in its parent link (``world_frame`` for a joint on the world: a floating base is
``world`` -> base link, as robot_state_publisher users expect it on ``/tf``):

* the transform: translation and unit quaternion ``(x, y, z, w)`` (ROS order), the joint's fixed
  placement from the description composed with its configuration; for a joint whose fixed
  placement is the identity (a floating base) these are ``q[idx_q:idx_q + 7]`` themselves;
* the twist: the joint's velocity coordinates as a twist of the child link relative to the
  parent, in the child link's axes (Pinocchio's joint velocity ``v``: linear then angular for a
  free-flyer; a ball joint has its angular part only, a planar joint ``(vx, vy, wz)``);
* the wrench: the joint's generalized force on the same axes (zero for a passive joint).

:class:`WireState` maps (q, v, tau) to these numbers and back (:meth:`WireState.assemble`): a
node that listens to both topics rebuilds the same q the simulator integrated.
"""

from __future__ import annotations

import numpy as np

from robot_dynamics.spatial.joints import quat_multiply
from robot_dynamics.spatial.lie import matrix_to_quat_xyzw, quat_xyzw_to_matrix

__all__ = ['WireState', 'default_world_frame']

#: the twist / wrench components (linear x y z, angular x y z) that each kind's v fills
_COMPONENTS = {'free_flyer': (0, 1, 2, 3, 4, 5), 'spherical': (3, 4, 5), 'planar': (0, 1, 5)}


def default_world_frame(model):
    """The name of the world frame: ``'world'`` when a multi-DOF joint hangs on the world (a
    floating base moves the URDF root link), else the URDF root link (fixed to the world)."""
    return 'world' if any(model.parents[jt.idx_v] < 0 for jt in model.multi_dof) else model.root_link


def _link_of(model, joint_index):
    """The link (frame) whose frame is joint ``joint_index``'s joint frame (identity placement)."""
    eye = np.eye(3)
    for k in np.flatnonzero(model.frame_parent == joint_index):
        if np.allclose(model.frame_R[k], eye, atol=1e-12) and np.allclose(model.frame_p[k], 0.0, atol=1e-12):
            return model.frame_names[k]
    raise ValueError(f'no link carries the frame of joint {model.joint_names[joint_index]!r}')


class WireState:
    """Which numbers of the state go on which topic (see the module doc).

    ``names``: the one-DOF joints on ``/joint_states`` (model order); ``multi``: the multi-DOF
    joints (:class:`robot_dynamics.model.Joint`), ``frames``: their (parent link, child link)."""

    def __init__(self, model, world_frame=''):
        m = self.model = model
        one = [jt for jt in m.joints if jt.nv == 1]
        self.names = [jt.name for jt in one]
        self.q_idx = np.array([jt.idx_q for jt in one], dtype=np.int64)
        self.v_idx = np.array([jt.idx_v for jt in one], dtype=np.int64)
        self.multi = list(m.multi_dof)
        self.world = world_frame or default_world_frame(m)
        self.frames, self._fixed = [], []
        for jt in self.multi:
            pj = int(m.parents[jt.idx_v])
            parent = self.world if pj < 0 else _link_of(m, pj)
            self.frames.append((parent, _link_of(m, jt.idx_v + jt.nv - 1)))
            R, p = np.asarray(m.R_fixed[jt.idx_v], float), np.asarray(m.p_fixed[jt.idx_v], float)
            ident = np.allclose(R, np.eye(3), atol=1e-15) and not np.any(p)
            self._fixed.append(None if ident else (R, p, matrix_to_quat_xyzw(R)))

    @property
    def one_dof_only(self):
        return not self.multi

    def joint_values(self, q, v, tau):
        """(positions, velocities, efforts) of the one-DOF joints, lists in :attr:`names` order."""
        q, v, tau = np.asarray(q, float), np.asarray(v, float), np.asarray(tau, float)
        if not self.multi:
            return q.tolist(), v.tolist(), tau.tolist()
        return q[self.q_idx].tolist(), v[self.v_idx].tolist(), tau[self.v_idx].tolist()

    def transforms(self, q):
        """[(translation (3,), quaternion (x, y, z, w) (4,))] of each multi-DOF joint: the child
        link in the parent link."""
        q = np.asarray(q, float)
        out = []
        for jt, fx in zip(self.multi, self._fixed):
            qj = q[jt.q_slice]
            if jt.kind == 'free_flyer':
                p, quat = qj[:3], qj[3:7]
            elif jt.kind == 'spherical':
                p, quat = np.zeros(3), qj
            else:  # planar: rotation about z by theta, (cos, sin) = qj[2:4]
                th = np.arctan2(qj[3], qj[2])
                p, quat = np.array([qj[0], qj[1], 0.0]), np.array([0.0, 0.0, np.sin(th / 2), np.cos(th / 2)])
            quat = quat / np.linalg.norm(quat)
            if fx is not None:
                R0, p0, q0 = fx
                p, quat = p0 + R0 @ p, quat_multiply(q0, quat)
            out.append((np.asarray(p, float), np.asarray(quat, float)))
        return out

    def _six(self, x):
        out = []
        for jt in self.multi:
            w = np.zeros(6)
            w[list(_COMPONENTS[jt.kind])] = np.asarray(x, float)[jt.v_slice]
            out.append(w)
        return out

    def twists(self, v):
        """[(6,) linear-first twist] of each multi-DOF joint (its velocity, child axes)."""
        return self._six(v)

    def wrenches(self, tau):
        """[(6,) force-first wrench] of each multi-DOF joint (its generalized force, child axes)."""
        return self._six(tau)

    def assemble(self, positions, velocities, transforms, twists=None):
        """(q (nq,), v (nv,)) from the one-DOF joints' ``positions`` / ``velocities`` (in
        :attr:`names` order; velocities may be None) and the multi-DOF joints' ``transforms``
        [(translation, quaternion (x, y, z, w))] / ``twists`` [(6,)] (None: zero)."""
        m = self.model
        q, v = m.neutral(), np.zeros(m.nv)
        q[self.q_idx] = positions
        if velocities is not None:
            v[self.v_idx] = velocities
        for k, (jt, fx) in enumerate(zip(self.multi, self._fixed)):
            p, quat = np.asarray(transforms[k][0], float), np.asarray(transforms[k][1], float)
            if fx is not None:  # undo the fixed placement
                R0, p0, q0 = fx
                p = R0.T @ (p - p0)
                quat = quat_multiply(q0 * np.array([-1.0, -1.0, -1.0, 1.0]), quat)
            if jt.kind == 'free_flyer':
                qj = np.concatenate([p, quat])
            elif jt.kind == 'spherical':
                qj = quat
            else:
                R = quat_xyzw_to_matrix(quat)
                th = np.arctan2(R[1, 0], R[0, 0])
                qj = np.array([p[0], p[1], np.cos(th), np.sin(th)])
            q[jt.q_slice] = qj
            if twists is not None:
                v[jt.v_slice] = np.asarray(twists[k], float)[list(_COMPONENTS[jt.kind])]
        return q, v
