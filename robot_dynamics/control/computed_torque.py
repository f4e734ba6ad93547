"""Joint-space and task-space inverse-dynamics control of trees and closed chains.

:class:`DynamicsController` is what ``dynamics_node`` runs. Laws:

* ``'pidc'`` — projected inverse dynamics control (seed 002 eq. 45-47, passive joints eq.
  55-64, :func:`robot_dynamics.algorithms.projection.pidc`): PD on the independent coordinates (joint
  reference) or on task coordinates (``reference='task'``: selected world components of a
  frame origin), minimum-norm efforts on the actuated joints only. The controllability
  condition ``rank [A; S_a] = n`` is evaluated every call and reported.
* ``'computed_torque'`` — ``tau = M (qdd_d + Kd ed + Kp e) + h`` for fully actuated trees.

Efforts are clipped to ``max_effort`` (per actuated joint); clipping is reported.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from robot_dynamics.algorithms.dynamics import crba, nonlinear_effects
from robot_dynamics.errors import InputError
from robot_dynamics.algorithms.kinematics import _frame_state, _lwa_columns, world_state
from robot_dynamics.algorithms.projection import constrained_forward_dynamics, pidc

__all__ = ['DynamicsController', 'ControlOutput', 'task_coordinates', 'cut_wrenches']

ControlOutput = namedtuple('ControlOutput', 'effort tau e ed controllable message clipped')
ControlOutput.__doc__ = """effort (p,) actuated efforts in command order; tau (n,) generalized
force; e, ed tracking errors; controllable (bool); message ('' or a diagnostic); clipped (bool)."""


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
    origin, expressed in frame_a axes.
    """
    from robot_dynamics.algorithms.kinematics import forward_kinematics

    out, r = {}, 0
    names = [f for lp in model.loops for f in (lp.frame_a, lp.frame_b)]
    T = forward_kinematics(model, q, names) if names else {}
    for lp in model.loops:
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


class DynamicsController:
    """Inverse-dynamics controller for one robot (joint or task reference)."""

    def __init__(
        self,
        model,
        law='pidc',
        kp=100.0,
        kd=20.0,
        joints=None,
        reference='joint',
        task_frame=None,
        task_axes=(0, 1, 2),
        max_effort=None,
    ):
        if law not in ('pidc', 'computed_torque'):
            raise InputError(f"law must be 'pidc' or 'computed_torque', got {law!r}")
        if reference not in ('joint', 'task'):
            raise InputError(f"reference must be 'joint' or 'task', got {reference!r}")
        if law == 'computed_torque' and (model.loops or model.passive):
            raise InputError("law 'computed_torque' needs a fully actuated tree; use 'pidc'")
        self.model, self.law, self.reference = model, law, reference
        self.kp, self.kd = kp, kd
        self.joints = list(model.actuated if joints is None else joints)
        self.cmd_idx = np.array([model.joint_index(j) for j in self.joints], dtype=np.int64)
        if sorted(self.cmd_idx.tolist()) != sorted(model.actuated_indices.tolist()):
            raise InputError(f'joints {self.joints} must be a permutation of the actuated joints {model.actuated}')
        self.task_axes = np.asarray(task_axes, dtype=np.int64)
        if reference == 'task':
            if task_frame is None:
                raise InputError("reference 'task' needs task_frame")
            self.theta = task_coordinates(model, task_frame, task_axes)
            self.coords = [f'{task_frame}.{"xyz"[a]}' for a in task_axes]
        else:
            self.theta = 'independent' if law == 'pidc' else 'all'
            self.coords = list(model.independent if law == 'pidc' else model.joint_names)
        lim = (
            model.effort_limit[self.cmd_idx]
            if max_effort is None
            else np.broadcast_to(np.asarray(max_effort, float), self.cmd_idx.shape)
        )
        self.max_effort = np.where(np.isfinite(lim) & (lim > 0), lim, np.inf)
        self.ref = None

    def set_reference(self, pos, vel=None, acc=None, names=None, stamp=None):
        """Desired coordinates (k,) and derivatives; ``names`` reorders a joint reference.

        ``stamp`` [s]: the time the reference sample belongs to; :meth:`compute` then
        extrapolates it to the state's time (second order, at most ``max_extrapolation``).
        """
        k = len(self.coords)
        pos = np.asarray(pos, float)
        vel = np.zeros(k) if vel is None or len(vel) == 0 else np.asarray(vel, float)
        acc = np.zeros(k) if acc is None or len(acc) == 0 else np.asarray(acc, float)
        if names is not None:
            names = list(names)
            if sorted(names) != sorted(self.coords):
                raise InputError(f'reference joints {names} must be {self.coords}')
            order = [names.index(c) for c in self.coords]
            pos, vel, acc = pos[order], vel[order], acc[order]
        for a in (pos, vel, acc):
            if a.shape != (k,) or not np.all(np.isfinite(a)):
                raise InputError(f'reference must be {k} finite values for {self.coords}')
        self.ref = (pos, vel, acc)
        self.ref_stamp = stamp

    max_extrapolation = 0.05

    def compute(self, q, qd, stamp=None):
        """Efforts for the state (q, qd) measured at ``stamp`` [s] (optional).

        Raises InputError without a reference.
        """
        if self.ref is None:
            raise InputError('no reference received yet')
        xd, vd, ad = self.ref
        if stamp is not None and getattr(self, 'ref_stamp', None) is not None:
            dt = float(np.clip(stamp - self.ref_stamp, 0.0, self.max_extrapolation))
            xd, vd = xd + vd * dt + 0.5 * ad * dt * dt, vd + ad * dt
        m = self.model
        if self.law == 'computed_torque':
            e, ed = xd - q, vd - qd
            tau = crba(m, q) @ (ad + self.kd * ed + self.kp * e) + nonlinear_effects(m, q, qd)
            ok, msg = True, ''
        else:
            res = pidc(m, q, qd, xd, vd, ad, self.kp, self.kd, theta=self.theta)
            tau, e, ed, ok, msg = res.tau, res.e, res.ed, res.controllable, res.message
        eff = tau[self.cmd_idx]
        clipped = bool(np.any(np.abs(eff) > self.max_effort))
        eff = np.clip(eff, -self.max_effort, self.max_effort)
        return ControlOutput(eff, tau, e, ed, ok, msg, clipped)

    def predicted_wrenches(self, q, qd, tau):
        """Cut-joint wrenches predicted by the model under ``tau`` (see :func:`cut_wrenches`)."""
        if not self.model.loops:
            return {}
        res = constrained_forward_dynamics(self.model, q, qd, tau)
        return cut_wrenches(self.model, q, res.lam)
