"""The hydraulic and series-elastic plants with their multibody on MuJoCo (backend 'mujoco').

``make_plant('hydraulic' | 'sea', model, q0, dt, backend='mujoco')``: MuJoCo integrates the
robot's multibody (:class:`~robot_dynamics.plants.mujoco_plant.MujocoPlant`: every joint of the
description, the loops as equality constraints); the package's actuator models act on it. The
plants keep the interface of their rigid-backend twins (commands, hold, extra states, limits,
initial state) so that ``sim_node`` and the controllers see no difference but the integrator.

* **Hydraulic** (:class:`HydraulicMujocoPlant`): each cylinder's chamber pressures (and spool,
  with a spool lag) are the package's ODE (:mod:`robot_dynamics.algorithms.hydraulics`: valve
  flows, chamber volumes, friction, end stops, the same parameters as
  :class:`~robot_dynamics.plants.hydraulic.HydraulicPlant`). A co-simulation at MuJoCo's step
  (0.2 ms): the cylinder force ``f = A_a p_a - A_b p_b - f_friction(x') + f_end(x, x')`` of the
  state at the start of the step acts on the cylinder's stroke joint (the rod joint of a
  revolute segment, the segment joint of a prismatic one) while MuJoCo takes its step; then the
  pressures integrate over that step (RK4, ``act_substeps`` sub-steps) with the stroke and its
  rate interpolated linearly between the two multibody states. The rigid-backend plant instead
  integrates the segment coordinates and the pressures jointly with RK4 at 1 ms; the difference
  of the two along the boom's closed loop is stated in docs/ros_interfaces.md and checked in
  ``test/plants/test_mujoco_actuated.py``.
* **Series-elastic** (:class:`SEAMujocoPlant`): the springs are linear, so they are exact as
  MuJoCo elements and integrate jointly with the multibody (RK4): per SEA of the sidecar a fixed
  tendon ``L = q_motor - q_joint`` with stiffness K and damping D (its passive force is
  ``u = K (q_m - theta) + D (qd_m - thetad)`` on the joint and ``-u`` on the motor), the motor
  damping D_m as the motor joint's damping, and the motor inertia M_m as the motor joint's
  diagonal of the mass matrix (armature added to the rotor's own inertia). The initial state
  (motors where the springs hold the link side) and the hold command are the rigid-backend
  plant's. Positions and velocities are the exact ones (no encoder quantisation or noise).
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from numba import njit

from robot_dynamics.algorithms.hydraulics import (
    chamber_rates,
    cylinder_force,
    STROKE,
    UMAX,
)
from robot_dynamics.errors import InputError, ModelError, RobotDynamicsError
from robot_dynamics.plants.mujoco_plant import MujocoPlant
from robot_dynamics.plants.registry import make_plant, register_plant

__all__ = ['HydraulicMujocoPlant', 'SEAMujocoPlant']


# ----------------------------------------------------------------------------- hydraulic
@njit(cache=True)
def _act_deriv(H, ps, pr, beta, Y, ucmd, x, xd, dY, aux):
    """d/dt of the actuator state Y = [p_a, p_b, u_spool] (3 ns) at strokes x, rates xd."""
    ns = x.shape[0]
    for k in range(ns):
        P = H[k]
        pa, pb = Y[k], Y[ns + k]
        dpa, dpb, dY[2 * ns + k], qa, qb = chamber_rates(P, ucmd[k], Y[2 * ns + k], pa, pb, x[k], xd[k], ps, pr, beta)
        dY[k], dY[ns + k] = dpa, dpb
        aux[k, 4], aux[k, 5] = qa, qb


@njit(cache=True)
def _act_rk4(H, ps, pr, beta, Y, ucmd, x0, xd0, x1, xd1, h, nsub, aux):
    """Y over the interval h in nsub RK4 steps, (x, xd) linear in time from (x0, xd0) to (x1, xd1)."""
    n = Y.shape[0]
    K = np.zeros((4, n))
    Ys = np.empty(n)
    hs = h / nsub
    for i in range(nsub):
        for s in range(4):
            c = (0.0, 0.5, 0.5, 1.0)[s]
            a = (i + c) / nsub
            x = x0 + a * (x1 - x0)
            xd = xd0 + a * (xd1 - xd0)
            if s == 0:
                Ys[:] = Y
            else:
                Ys[:] = Y + (hs if s == 3 else 0.5 * hs) * K[s - 1]
            _act_deriv(H, ps, pr, beta, Ys, ucmd, x, xd, K[s], aux)
        for j in range(n):
            Y[j] += hs / 6.0 * (K[0, j] + 2 * K[1, j] + 2 * K[2, j] + K[3, j])


_Ev = namedtuple('Ev', 't kind message')


class HydraulicMujocoPlant(MujocoPlant):
    """The hydraulic plant with its multibody on MuJoCo (see the module doc).

    ``HydraulicMujocoPlant(model, q0=None, dt=1e-3, p_b0=40e5, params=None, act_substeps=1,
    **spec_kw)``: the commands (valve voltages of the actuated joints), the valve saturation,
    the initial state (at rest, pressures in static equilibrium) and ``extra_states()`` are
    those of :class:`~robot_dynamics.plants.hydraulic.HydraulicPlant`; ``act_substeps``: RK4
    steps of the pressures per MuJoCo step. External loads: MuJoCo's (any frame, a generalized
    force held over the step).
    """

    state_attrs = MujocoPlant.state_attrs + ('Y', 'u', 'aux')
    command_interface = 'valve_voltage'

    def __init__(self, model, q0=None, dt=1e-3, p_b0=40e5, params=None, act_substeps=1, **spec_kw):
        from robot_dynamics.plants.hydraulic import HydraulicPlant

        self.hyd = HydraulicPlant(model, q0, dt=dt, p_b0=p_b0, params=params)
        self.hp, self.st, self.ns = self.hyd.hp, self.hyd.st, self.hyd.ns
        self.act_substeps = int(act_substeps)
        if self.act_substeps < 1:
            raise InputError('act_substeps must be >= 1')
        # per segment: the joint whose coordinate is the stroke (+ offset), in the model's v
        self._stroke = []
        for s in self.st.segments:
            name, off = (s.rod_joint, s.rod_offset) if s.kind == 'revolute' else (s.joint, s.offset)
            self._stroke.append((model.joint_index(name), float(off)))
        self.Y = np.zeros(3 * self.ns)
        self.u = np.zeros(self.ns)
        self.aux = np.zeros((self.ns, 6))
        super().__init__(model, q0, dt=dt, **spec_kw)
        self._sdof = np.array([self._dof_of_v(iv) for iv, _ in self._stroke], np.int64)
        self._sadr = np.array([self._qpos_of_v(iv) for iv, _ in self._stroke], np.int64)
        self._soff = np.array([o for _, o in self._stroke])
        self.reset(q0)

    def _dof_of_v(self, iv):
        for kind, iq, jv, a, d in self.map.joints:
            if jv == iv and kind not in ('free_flyer', 'spherical'):
                return d
        raise ModelError(self.model.source, f'joint {self.model.joint_names[iv]!r}', 'no MuJoCo dof')

    def _qpos_of_v(self, iv):
        for kind, iq, jv, a, d in self.map.joints:
            if jv == iv:
                return a
        raise ModelError(self.model.source, f'joint {self.model.joint_names[iv]!r}', 'no MuJoCo qpos')

    def reset(self, q0=None, qd0=None, t0=0.0, fixed=None, **kw):
        """At rest in the rigid-backend plant's initial state (joints from ``q0``, pressures in
        static equilibrium); the MuJoCo state closed as :meth:`MujocoPlant.reset` does."""
        if not hasattr(self, '_sdof'):  # (MujocoPlant.__init__'s own reset: the multibody only)
            return super().reset(self.hyd.q, None, t0, fixed)
        h = self.hyd.reset(q0, qd0, t0, **kw)
        super().reset(h.q, h.qd, t0, fixed)
        ns = self.ns
        self.Y[:] = 0.0
        self.Y[:ns], self.Y[ns : 2 * ns] = h.pa, h.pb
        self.u = np.zeros(ns)
        self._update_aux()
        self.last = self._hinfo(())
        return self.last

    def _strokes(self):
        d = self.mjd
        return d.qpos[self._sadr] + self._soff, d.qvel[self._sdof].copy()

    def _update_aux(self):
        ns, P = self.ns, self.hp.P
        x, xd = self._strokes()
        for k in range(ns):
            fp, f = cylinder_force(P[k], x[k], xd[k], self.Y[k], self.Y[ns + k])
            self.aux[k, 0], self.aux[k, 1], self.aux[k, 2], self.aux[k, 3] = x[k], xd[k], fp, f
        dY = np.zeros_like(self.Y)
        _act_deriv(P, self.hp.p_s, self.hp.p_r, self.hp.beta, self.Y, self.u, x, xd, dY, self.aux)

    def command_limits(self):
        return self.hyd.command_limits()

    def valve_input(self, tau):
        return self.hyd.valve_input(tau)

    def step(self, tau=None, dt=None):
        """Advance ``dt`` (default ``self.dt``) with the valve inputs held (see the module doc)."""
        from robot_dynamics.plants.hydraulic import HydraulicError

        mj, d, ns = self._mj, self.mjd, self.ns
        H, ps, pr, beta = self.hp.fluid
        h = self.dt if dt is None else float(dt)
        if not (h > 0.0 and math.isfinite(h)):
            raise InputError(f'dt must be a positive number, got {dt!r}')
        self.u = self.valve_input(tau)
        base = np.zeros(self.model.nv)
        if self._ext:
            base += self.external_tau()
        self._apply(base)
        fixed = d.qfrc_applied.copy()
        x, xd = self._strokes()
        hs = self.timestep
        for _ in range(max(1, int(round(h / hs)))):
            d.qfrc_applied[:] = fixed
            for k in range(ns):
                _, f = cylinder_force(H[k], x[k], xd[k], self.Y[k], self.Y[ns + k])
                d.qfrc_applied[self._sdof[k]] += f
            mj.mj_step(self.mjm, d)
            x1, xd1 = self._strokes()
            _act_rk4(H, ps, pr, beta, self.Y, self.u, x, xd, x1, xd1, hs, self.act_substeps, self.aux)
            x, xd = x1, xd1
        if not (np.all(np.isfinite(d.qpos)) and np.all(np.isfinite(d.qvel)) and np.all(np.isfinite(self.Y))):
            raise HydraulicError(f'hydraulic plant (MuJoCo) state became non-finite at t = {self.t:.4f} s')
        q, qd = self.q.copy(), self.qd.copy()
        self.map.from_mj(d.qpos, d.qvel, q, qd)
        self.q, self.qd = q, qd
        self.t += h
        self._update_aux()
        ev = []
        for k, n in enumerate(self.hp.names):
            if self.aux[k, 0] < 0 or self.aux[k, 0] > H[k, STROKE]:
                ev.append(f"cylinder '{n}' at its end stop (x = {self.aux[k, 0]:.4f} m)")
        events = tuple(_Ev(self.t, 'hydraulic_limit', m) for m in ev)
        self.events.extend(events)
        self._save()
        self.last = self._hinfo(events)
        return self.last

    def _apply(self, total):
        """``total`` (nv,) as MuJoCo's qfrc_applied (as :meth:`MujocoPlant.step`)."""
        from robot_dynamics.plants.mujoco_plant import _rot_xyzw

        d = self.mjd
        d.qfrc_applied[:] = 0.0
        for kind, iq, iv, a, dd in self.map.joints:
            if kind == 'free_flyer':
                R = _rot_xyzw(self.q[iq + 3 : iq + 7])
                d.qfrc_applied[dd : dd + 3] = R @ total[iv : iv + 3]
                d.qfrc_applied[dd + 3 : dd + 6] = total[iv + 3 : iv + 6]
            elif kind == 'spherical':
                d.qfrc_applied[dd : dd + 3] = total[iv : iv + 3]
            else:
                d.qfrc_applied[dd] = total[iv]

    def _hinfo(self, events):
        from robot_dynamics.plants.hydraulic import HydraulicStepInfo

        ns, P = self.ns, self.hp.P
        return HydraulicStepInfo(
            self.t,
            self.q.copy(),
            self.qd.copy(),
            self.aux[:, 0].copy(),
            self.aux[:, 1].copy(),
            self.Y[:ns].copy(),
            self.Y[ns : 2 * ns].copy(),
            self.aux[:, 2].copy(),
            np.clip(self.u, -P[:, UMAX], P[:, UMAX]),
            tuple(events),
        )

    @property
    def pa(self):
        return self.Y[: self.ns].copy()

    @property
    def pb(self):
        return self.Y[self.ns : 2 * self.ns].copy()

    def extra_states(self):
        """As :meth:`robot_dynamics.plants.hydraulic.HydraulicPlant.extra_states`."""
        i = self.last
        return dict(names=list(self.hp.names), x=i.x, xd=i.xd, fp=i.fp, pa=i.pa, pb=i.pb, u=i.u)


def _hydraulic(model, q0=None, dt=1e-3, **options):
    if options.get('FD') is not None:
        raise InputError("the hydraulic plant on MuJoCo takes loads as external wrenches, not 'FD'")
    options.pop('FD', None)
    return HydraulicMujocoPlant(model, q0, dt=dt, **options)


# ----------------------------------------------------------------------------- SEA
class SEAMujocoPlant(MujocoPlant):
    """The series-elastic plant with its multibody and springs on MuJoCo (see the module doc).

    ``tau``: the motor torques/forces (``model.actuated``, the motor joints) or the full vector.
    The SEA data (K, D, D_m, M_m) come from the sidecar's ``actuators`` block
    (:class:`robot_dynamics.pkm.sea.SEAPKM`).
    """

    def __init__(self, model, q0=None, dt=1e-3, **spec_kw):
        from robot_dynamics.pkm.sea import SEAPKM

        self.sea = SEAPKM(model)
        self.rigid = make_plant('sea', model, q0, dt=dt)  # initial state and hold of the twin
        super().__init__(model, self.rigid.true_q, np.zeros(model.nv), dt=dt, **spec_kw)
        s, mj = self.sea, self._mj
        # the motor joint's row of the mass matrix: M_m on the diagonal (the rotor's inertia +
        # the armature of _edit_spec), nothing off it (a rotor on the base)
        mj.mj_forward(self.mjm, self.mjd)
        M = np.zeros((self.mjm.nv, self.mjm.nv))
        mj.mj_fullM(self.mjm, self.mjd, M)
        for k, i in enumerate(s.i_mot):
            dof = self._dof(int(i))
            off = np.abs(np.delete(M[dof], dof)).max(initial=0.0)
            Mm = float(np.broadcast_to(s.Mm, (s.n_a,))[k])
            if off > 1e-9 * Mm or abs(M[dof, dof] - Mm) > 1e-9 * Mm:
                raise ModelError(
                    model.source,
                    f'joint {model.joint_names[i]!r}',
                    f'the SEA motor on MuJoCo needs a rotor on the base with inertia <= motor_inertia {Mm:g} '
                    f'(mass-matrix row: diagonal {M[dof, dof]:g}, coupling {off:g})',
                )
        self.reset()

    def _dof(self, iv):
        for kind, iq, jv, a, d in self.map.joints:
            if jv == iv and kind not in ('free_flyer', 'spherical'):
                return d
        raise ModelError(self.model.source, f'joint {self.model.joint_names[iv]!r}', 'no MuJoCo dof')

    def _edit_spec(self, spec):
        s, m = self.sea, self.model
        bc = lambda v, k: float(np.broadcast_to(v, (s.n_a,))[k])  # noqa: E731
        for k in range(s.n_a):
            mot, jnt = m.joint_names[int(s.i_mot[k])], m.joint_names[int(s.i_link[k])]
            t = spec.add_tendon(name=f'sea/{mot}')
            t.wrap_joint(mot, 1.0)
            t.wrap_joint(jnt, -1.0)
            # (MuJoCo 4: polynomial coefficients, linear first)
            t.stiffness = [bc(s.K, k), 0.0, 0.0]
            t.damping = [bc(s.D, k), 0.0, 0.0]
            t.springlength = [0.0, 0.0]
            spec.joint(mot).damping = [bc(s.Dm, k), 0.0, 0.0]
            # the motor inertia: the rotor body's own about the motor axis, plus armature
            i = int(s.i_mot[k])
            a, c = np.asarray(m.axes[i], float), np.asarray(m.com[i], float)
            I = np.asarray(m.inertia_com[i], float) + float(m.mass[i]) * (c @ c * np.eye(3) - np.outer(c, c))
            spec.joint(mot).armature = max(bc(s.Mm, k) - float(a @ I @ a), 0.0)

    def reset(self, q0=None, qd0=None, t0=0.0, fixed=None):
        """At rest in the rigid-backend plant's initial state (motors where the springs hold the
        link side), closed as :meth:`MujocoPlant.reset` does."""
        if not hasattr(self, 'rigid') or not hasattr(self, 'mjd'):
            return super().reset(q0, qd0, t0, fixed)
        self.rigid.reset(q0, t0=t0) if q0 is not None else self.rigid.reset(t0=t0)
        return super().reset(self.rigid.true_q, np.zeros(self.model.nv), t0, fixed)

    @property
    def true_q(self):
        return self.q.copy()

    @property
    def true_qd(self):
        return self.qd.copy()

    def hold_command(self, damping):
        """As the rigid-backend plant's: the motors brake (``-damping * qd_m``) on top of the
        static spring torque holding the link side against gravity at the current pose (none
        for the planar 3RRR class, whose plane is normal to gravity)."""
        from robot_dynamics.plants.sea import SEAPlant

        s = self.sea
        u = np.zeros(s.n_a)
        if not isinstance(self.rigid, SEAPlant):
            try:
                u = s.at(s.measure(self.q, self.qd)[0]).u[0]
            except RobotDynamicsError:  # outside the workspace / singular: brake only
                pass
        tau = np.zeros(self.model.nv)
        tau[s.i_mot] = u - float(damping) * self.qd[s.i_mot]
        return tau


def _sea(model, q0=None, dt=1e-3, **options):
    return SEAMujocoPlant(model, q0, dt=dt, **options)


register_plant('hydraulic', _hydraulic, backend='mujoco')
register_plant('sea', _sea, backend='mujoco')
