"""Joint-space and task-space inverse-dynamics control of trees and closed chains: the laws
``pidc`` and ``computed_torque`` of the control loop (:mod:`robot_dynamics.control.loop`).

:class:`DynamicsController` is one law, chosen by ``law``:

* ``'pidc'`` — projected inverse dynamics control (seed 002 eq. 45-47, passive joints eq.
  55-64, :func:`robot_dynamics.algorithms.projection.pidc`): PD on the independent coordinates (joint
  reference) or on task coordinates (``reference='task'``: selected world components of a
  frame origin), minimum-norm efforts on the actuated joints only. The controllability
  condition ``rank [A; S_a] = n`` is evaluated every call and reported
  (``info['not_controllable']``).
* ``'computed_torque'`` — ``tau = M (qdd_d + Kd ed + Kp e) + h`` for fully actuated trees.

The law neither clips nor extrapolates: the loop matches the reference to the state's stamp and
applies the effort limits.
"""

from __future__ import annotations

import numpy as np

from robot_dynamics.algorithms.dynamics import crba, nonlinear_effects
from robot_dynamics.algorithms.kinematics import _frame_state, _lwa_columns, world_state
from robot_dynamics.algorithms.projection import constrained_forward_dynamics, pidc
from robot_dynamics.control.loop import Law, LawOutput
from robot_dynamics.errors import InputError

__all__ = ['DynamicsController', 'task_coordinates', 'cut_wrenches']


def task_coordinates(model, frame, axes):
    """Callable ``theta(q, qd) -> (x (k,), J (k, n), Jdot qd (k,))`` for :func:`pidc`.

    x = selected world components ``axes`` of the origin of ``frame`` [m].
    """
    fidx = model.frame_index(frame)
    axes = np.asarray(axes, dtype=np.int64)

    def theta(q, qd):
        st = world_state(model, q, qd)
        R, p, w, v, al, a = _frame_state(model, st, fidx)
        J, _ = _lwa_columns(model, st, fidx, p)
        return p[axes], J[:3][axes], a[axes]

    return theta


def cut_wrenches(model, q, lam):
    """Constraint wrench of each cut joint from the row multipliers ``lam`` (m,).

    Sign convention of the projection module: ``M qdd + h = tau - A^T lam``. Returns
    dict loop -> (6,) wrench (force, moment) exerted on frame_b by frame_a, about frame_b's
    origin, expressed in frame_a axes. A coupling loop has no cut: its entry is absent (its
    multiplier acts in joint space, ``-lam`` on the coupled joint).
    """
    from robot_dynamics.algorithms.kinematics import forward_kinematics

    out, r = {}, 0
    names = [f for lp in model.loops for f in (lp.frame_a, lp.frame_b)]
    T = forward_kinematics(model, q, names) if names else {}
    for lp in model.loops:
        if lp.coupling is not None:
            r += 1
            continue
        Ra, Rb = T[lp.frame_a][:3, :3], T[lp.frame_b][:3, :3]
        f = np.zeros(3)
        tq = np.zeros(3)
        for nl in lp.pos_dirs:
            f -= lam[r] * (Ra @ nl)
            r += 1
        for ul, wl in lp.rot_pairs:
            tq += lam[r] * np.cross(Ra @ ul, Rb @ wl)
            r += 1
        out[lp.name] = np.concatenate([Ra.T @ f, Ra.T @ tq])
    return out


class DynamicsController(Law):
    """``pidc`` / ``computed_torque`` law for one robot (see the module docstring).

    Reference coordinates ``coords``: the independent joints (``reference='joint'``, pidc), all
    joints (computed_torque) or ``<task_frame>.<x|y|z>`` (``reference='task'``, components
    ``task_axes`` of the origin of ``task_frame``). Command ``joints``: a permutation of the
    actuated joints (default their model order). ``info``: ``tau`` (nq,) the generalized force,
    ``not_controllable`` (the diagnostic, when the rank condition fails)."""

    def __init__(
        self,
        model,
        law='pidc',
        kp=100.0,
        kd=20.0,
        joints=None,
        reference='joint',
        task_frame='tool',
        task_axes=(0, 1, 2),
    ):
        if law not in ('pidc', 'computed_torque'):
            raise InputError(f"law must be 'pidc' or 'computed_torque', got {law!r}")
        if reference not in ('joint', 'task'):
            raise InputError(f"reference must be 'joint' or 'task', got {reference!r}")
        if law == 'computed_torque' and (model.loops or model.passive):
            raise InputError("law 'computed_torque' needs a fully actuated tree; use 'pidc'")
        super().__init__(model, joints)
        if sorted(self.cmd_idx.tolist()) != sorted(model.actuated_indices.tolist()):
            raise InputError(f'joints {self.joints} must be a permutation of the actuated joints {model.actuated}')
        self.name, self.reference = law, reference
        self.kp, self.kd = float(kp), float(kd)
        self.task_axes = np.asarray(task_axes, dtype=np.int64)
        if reference == 'task':
            if task_frame is None:
                raise InputError("reference 'task' needs task_frame")
            self.theta = task_coordinates(model, task_frame, task_axes)
            self.coords = [f'{task_frame}.{"xyz"[a]}' for a in task_axes]
        else:
            self.theta = 'independent' if law == 'pidc' else 'all'
            self.coords = list(model.independent if law == 'pidc' else model.joint_names)

    def update(self, state, ref, dt=None):
        """Efforts for ``state`` tracking ``ref`` (pos, vel, acc of ``coords``)."""
        m, q, qd = self.model, state.q, state.qd
        if self.name == 'computed_torque':
            e, ed = ref.pos - q, ref.vel - qd
            tau = crba(m, q) @ (ref.acc + self.kd * ed + self.kp * e) + nonlinear_effects(m, q, qd)
            info = {'tau': tau}
        else:
            res = pidc(m, q, qd, ref.pos, ref.vel, ref.acc, self.kp, self.kd, theta=self.theta)
            tau, e, ed = res.tau, res.e, res.ed
            info = {'tau': tau} if res.controllable else {'tau': tau, 'not_controllable': res.message}
        return LawOutput(tau[self.cmd_idx], e, ed, info)

    def current_coordinates(self, q):
        """The reference coordinates at configuration q (to hold the current pose)."""
        if self.reference == 'task':
            return self.theta(q, np.zeros_like(q))[0]
        return q[[self.model.joint_index(c) for c in self.coords]]

    def predicted_wrenches(self, q, qd, tau):
        """Cut-joint wrenches predicted by the model under ``tau`` (see :func:`cut_wrenches`)."""
        if not self.model.loops:
            return {}
        res = constrained_forward_dynamics(self.model, q, qd, tau)
        return cut_wrenches(self.model, q, res.lam)
