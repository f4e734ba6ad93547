"""Control laws hosted by :class:`robot_dynamics.control.loop.ControlLoop` (no ROS).

A law is one small object: ``compute(state, reference) -> LawOutput`` (efforts in the order of
its ``joints``); everything else (parsing, staleness, matching, limits, safe command, timing)
is the loop's. :func:`make_law` builds one by name from keyword parameters (what the generic
``controller_node`` does with its ROS parameters).

* ``pidc`` (seed 002): projected inverse dynamics control with passive joints, joint reference on
  the independent joints or task reference on selected world components of a frame origin
  (:class:`~robot_dynamics.control.computed_torque.DynamicsController`).
* ``computed_torque``: ``M (qdd_d + kd ed + kp e) + h`` for fully actuated trees.
* ``feedforward_pd`` (aliases ``embedding_feedforward``, seed 003, and ``d2_feedforward``, seed
  004): ``u + kp (theta_d - theta) + kd (thetad_d - thetad)`` on the actuated joints, where the
  feed-forward ``u`` travels with the reference (ik_node's constraint-embedding task-space
  inverse dynamics, or trajectory_node's 2nd-order recursive inverse dynamics of the reference
  motion) and theta are the actuated joints.
* ``inertia_partitioning`` (seed 000): the modular inertia-partitioning controller on the
  minimal coordinates (:class:`InertiaPartitioningLaw`).
* ``vdc`` (seed 001): virtual decomposition + pressure/flow control of a hydraulic boom, valve
  volts from the segment joints and the chamber pressures (:class:`~robot_dynamics.control.vdc.VdcLaw`).
* ``sea_flatness`` (seed 004): the flatness-based exactly linearising SEA law on the EE task
  reference with derivatives up to snap
  (:class:`~robot_dynamics.control.flatness_sea.SeaFlatnessLaw`).
"""

from __future__ import annotations

import numpy as np

from robot_dynamics.errors import InputError
from robot_dynamics.control.computed_torque import DynamicsController
from robot_dynamics.control.loop import Law, LawOutput

__all__ = ['ProjectedIDLaw', 'FeedforwardPDLaw', 'InertiaPartitioningLaw', 'make_law', 'LAWS']


class ProjectedIDLaw(Law):
    """``pidc`` / ``computed_torque`` (see the module docstring). Reference coordinates: the
    independent joints (``reference='joint'``, pidc), all joints (computed_torque) or
    ``<task_frame>.<x|y|z>`` (``reference='task'``)."""

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
        super().__init__(model, joints)
        self.name = law
        self.ctrl = DynamicsController(
            model,
            law=law,
            kp=kp,
            kd=kd,
            joints=self.joints,
            reference=reference,
            task_frame=task_frame,
            task_axes=task_axes,
        )
        self.coords = list(self.ctrl.coords)
        self.reference = reference

    @property
    def kp(self):
        return self.ctrl.kp

    @kp.setter
    def kp(self, v):
        self.ctrl.kp = float(v)

    @property
    def kd(self):
        return self.ctrl.kd

    @kd.setter
    def kd(self, v):
        self.ctrl.kd = float(v)

    def compute(self, state, ref):
        self.ctrl.ref, self.ctrl.ref_stamp = (ref.pos, ref.vel, ref.acc), None
        out = self.ctrl.compute(state.q, state.qd)
        info = {'tau': out.tau}
        if not out.controllable:
            info['not_controllable'] = out.message
        return LawOutput(out.tau[self.cmd_idx], out.e, out.ed, info)

    def current_coordinates(self, q):
        """The reference coordinates at configuration q (to hold the current pose)."""
        if self.reference == 'task':
            x, _, _ = self.ctrl.theta(q, np.zeros_like(q))
            return x
        return q[[self.model.joint_index(c) for c in self.coords]]

    def predicted_wrenches(self, state, tau):
        return self.ctrl.predicted_wrenches(state.q, state.qd, tau)


class FeedforwardPDLaw(Law):
    """``u + kp (theta_d - theta) + kd (thetad_d - thetad)`` on the actuated joints; ``u`` is the
    reference's feed-forward effort. Reference coordinates = the actuated joints."""

    needs_feedforward = True

    def __init__(self, model, kp=1500.0, kd=80.0, joints=None, name='feedforward_pd'):
        super().__init__(model, joints)
        self.name = name
        if float(kp) < 0 or float(kd) < 0:
            raise InputError(f'{name}: kp and kd must be >= 0')
        self.kp, self.kd = float(kp), float(kd)
        self.coords = list(self.joints)

    def compute(self, state, ref):
        i = self.cmd_idx
        e, ed = ref.pos - state.q[i], ref.vel - state.qd[i]
        return LawOutput(ref.effort + self.kp * e + self.kd * ed, e, ed, {'u': ref.effort})


class InertiaPartitioningLaw(Law):
    """``inertia_partitioning`` (seed 000): the modular controller
    (:class:`~robot_dynamics.control.inertia_partitioning.IPController`, ``variant`` 'paper' =
    eq. 28/29 or 'pdplus') on the minimal coordinates, with locked DoFs held by their brake
    emulation and an unlocked DoF re-joining its reference along a quintic blend
    (:class:`~robot_dynamics.control.inertia_partitioning.ReferenceRejoin`). Reference
    coordinates and command joints: the minimal coordinates (``joints`` = their command order).
    ``info``: the diagnostics (``labels`` / ``values``: e, ed, V, Vdot, lyapunov_margin, cond,
    loop_margin)."""

    name = 'inertia_partitioning'

    def __init__(
        self,
        model,
        variant='paper',
        kp=20.0,
        kv=20.0,
        joints=None,
        loop_map='auto',
        neglect_bodies=(),
        unlock_blend_time=2.0,
    ):
        from robot_dynamics.algorithms.partitioning import PartitionedModel
        from robot_dynamics.control.inertia_partitioning import LAWS as IP_LAWS, IPController, ReferenceRejoin

        if variant not in IP_LAWS:
            raise InputError(f'inertia_partitioning: variant must be one of {IP_LAWS}, got {variant!r}')
        self.pm = PartitionedModel(model, loop_map, neglect_bodies=list(neglect_bodies))
        joints = list(self.pm.all_coords) if joints is None else list(joints)
        if sorted(joints) != sorted(self.pm.all_coords):
            raise InputError(f'joints {joints} must be the minimal coordinates {self.pm.all_coords}')
        super().__init__(model, joints)
        self.coords = list(self.pm.all_coords)
        self.ctrl = IPController(self.pm, variant, float(kp), float(kv))
        self.rejoin = ReferenceRejoin(self.pm.all_coords, float(unlock_blend_time))
        self._order = [self.pm.all_coords.index(j) for j in self.joints]

    def compute(self, state, ref):
        q, qd = state.q, state.qd
        th_all, thd_all = q[self.pm.loop_map.idx], qd[self.pm.loop_map.idx]
        r0, r1, r2 = self.rejoin(state.stamp, th_all, thd_all, ref.pos, ref.vel, ref.acc)
        sel = self.pm.sel
        out = self.ctrl.compute(th_all[sel], thd_all[sel], r0[sel], r1[sel], r2[sel], q_guess=q)
        lock_eff = self.ctrl.lock_efforts(th_all, thd_all, q_guess=q)
        Q = self.ctrl.actuator_efforts(out, lock_eff)
        labels = (
            [f'e_{c}' for c in self.pm.coords]
            + [f'ed_{c}' for c in self.pm.coords]
            + ['V', 'Vdot', 'lyapunov_margin', 'cond', 'loop_margin']
        )
        values = np.concatenate([out.e, out.ed, [out.V, out.Vdot, out.lyapunov_margin, out.cond, out.loop_margin]])
        return LawOutput(np.asarray(Q)[self._order], out.e, out.ed, {'labels': labels, 'values': values})

    def current_coordinates(self, q):
        return q[self.pm.loop_map.idx]


LAWS = (
    'pidc',
    'computed_torque',
    'feedforward_pd',
    'embedding_feedforward',
    'd2_feedforward',
    'inertia_partitioning',
    'vdc',
    'sea_flatness',
)


def make_law(model, law, **p):
    """Build a law by name (``LAWS``) from keyword parameters (unknown ones are an error)."""

    def take(*names):
        return {k: p.pop(k) for k in names if k in p}

    if law in ('pidc', 'computed_torque'):
        obj = ProjectedIDLaw(model, law=law, **take('kp', 'kd', 'joints', 'reference', 'task_frame', 'task_axes'))
    elif law in ('feedforward_pd', 'embedding_feedforward', 'd2_feedforward'):
        obj = FeedforwardPDLaw(model, name=law, **take('kp', 'kd', 'joints'))
    elif law == 'inertia_partitioning':
        kw = take('variant', 'kp', 'joints', 'loop_map', 'neglect_bodies', 'unlock_blend_time')
        if 'kd' in p:
            kw['kv'] = p.pop('kd')
        kw.update(take('kv'))
        obj = InertiaPartitioningLaw(model, **kw)
    elif law == 'vdc':
        from robot_dynamics.control.vdc import VdcLaw

        obj = VdcLaw(
            model, **take('joints', 'lam', 'k_scale', 'kf_pole', 'kx_ratio', 'dt', 'dp_min', 'wrench_timeout', 'params')
        )
    elif law == 'sea_flatness':  # seed 004: control/flatness_sea.py
        from robot_dynamics.control.flatness_sea import make_sea_flatness_law

        obj = make_sea_flatness_law(model, **take('poles', 'lambda_poles', 'preload', 'joints', 'route'))
    else:
        raise InputError(f'unknown law {law!r} (known: {", ".join(LAWS)})')
    if p:
        raise InputError(f'law {law}: unknown parameter(s) {sorted(p)}')
    return obj
