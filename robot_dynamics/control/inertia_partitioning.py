"""Modular inertia-partitioning controller (seed 000, Dastranj & Mattila, eq. 25-29) and PD+.

One :class:`DofModule` per minimal coordinate (the paper's "module = one degree of freedom").
Module ``j`` computes row ``j`` of

* law ``'paper'`` (eq. 28/29)::

      Q_a[j] = (Gamma thdd_d + Gamma_dot thd_d)[j] - ½ thd_dᵀ dGamma[j] thd_d - Qg[j]
               - kp[j] e[j] - kv[j] ed[j]

* law ``'pdplus'`` (Paden & Panja)::

      Q_a[j] = (Gamma thdd_d + C(theta, thd) thd_d)[j] - Qg[j] - kp[j] e[j] - kv[j] ed[j]

with ``e = theta - theta_d``, ``ed = thd - thd_d``, every model term at the **actual**
``theta`` and ``Gamma_dot = sum_k dGamma[k] thd_k`` with the **actual** ``thd`` (brief 000,
pitfall 6), ``C`` the Christoffel matrix. Each module needs the full state (Gamma couples the
DoFs): modular, not decentralised. ``Qg`` is the generalized gravity force of the partitioned
model; ``Q_ext`` (k,) (e.g. a measured wrench through :meth:`PartitionedModel.wrench_force`)
may be passed and is compensated like gravity.

Stability diagnostics (brief 000 A7, [ERRATUM] of the paper's eq. 35): with
``V = ½ edᵀ Gamma ed + ½ eᵀ Kp e``, the closed loop of the exact model gives

* ``'pdplus'``: ``Vdot = -edᵀ Kv ed`` (exactly);
* ``'paper'``:  ``Vdot = -edᵀ (Kv + ½ Gamma_dot_d - N_d) ed``, ``Gamma_dot_d = sum_k dGamma[k]
  thd_d,k``, ``(N_d)_ab = sum_k dGamma_bk/dtheta_a thd_d,k``; it is ``<= 0`` for every ``ed``
  only if ``S = Kv + ½ Gamma_dot_d - sym(N_d)`` is positive semidefinite, reported as
  ``lyapunov_margin = lambda_min(S)`` (negative: the paper's argument does not hold at this
  state).

Gains: ``kp`` [N·m/rad or N/m], ``kv`` [N·m·s/rad or N·s/m], per coordinate.

:class:`IPController` is also the law ``inertia_partitioning`` of the control loop
(:mod:`robot_dynamics.control.loop`): :meth:`IPController.update` runs the step on the measured
minimal coordinates, holds locked DoFs by their brake emulation and lets an unlocked DoF
re-join its reference along a quintic blend (:class:`ReferenceRejoin`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robot_dynamics.algorithms._partitioning_kernels import ip_law
from robot_dynamics.algorithms.partitioning import PartitionedModel, christoffel
from robot_dynamics.control.loop import Law, LawOutput
from robot_dynamics.control.trajectories import DecayingOffset
from robot_dynamics.errors import InputError

__all__ = [
    'LAWS',
    'DofModule',
    'IPController',
    'IPOutput',
    'lyapunov',
    'vdot_paper_matrix',
    'rmse',
    'brief_trajectory',
    'fk_paper',
    'simulate_tracking',
    'TrackingRun',
    'TABLE_III_RMSE',
]

LAWS = ('paper', 'pdplus')


def vdot_paper_matrix(dGamma, thd_d, kv):
    """``Kv + ½ Gamma_dot_d - N_d`` (k, k): ``Vdot = -edᵀ (this) ed`` under the paper's law."""
    Gd = np.einsum('kab,k->ab', dGamma, thd_d)
    Nd = np.einsum('abk,k->ab', dGamma, thd_d)
    return np.diag(kv) + 0.5 * Gd - Nd


def lyapunov(Gamma, kp, e, ed):
    """``V = ½ edᵀ Gamma ed + ½ eᵀ Kp e`` (eq. 30) [J]."""
    return 0.5 * ed @ Gamma @ ed + 0.5 * e @ (kp * e)


def rmse(x, xd):
    """Per-axis RMS error ``sqrt(mean((x - xd)²))`` over uniformly sampled rows (N, d) -> (d,)."""
    x, xd = np.asarray(x, float), np.asarray(xd, float)
    if x.shape != xd.shape or x.ndim != 2 or len(x) == 0:
        raise InputError(f'rmse needs two (N, d) arrays of equal shape, got {x.shape}, {xd.shape}')
    return np.sqrt(np.mean((x - xd) ** 2, axis=0))


class DofModule:
    """The controller module of one minimal coordinate (paper eq. 25-28).

    ``index`` is the row in the active coordinates; ``kp``, ``kv`` its gains.
    """

    def __init__(self, name, index, kp, kv):
        self.name, self.index, self.kp, self.kv = name, int(index), float(kp), float(kv)

    def model_force(self, law, terms, Gdot, C, thd_d, thdd_d, Qext):
        """Model-based part ``Q_m[j]`` (eq. 25; PD+ row for law 'pdplus')."""
        j = self.index
        if law == 'paper':
            q = terms.Gamma[j] @ thdd_d + Gdot[j] @ thd_d - 0.5 * thd_d @ terms.dGamma[j] @ thd_d
        else:
            q = terms.Gamma[j] @ thdd_d + C[j] @ thd_d
        return q - terms.Qg[j] - Qext[j]

    def correction(self, e, ed):
        """Decoupled PD ``Q_c[j] = -kp e[j] - kv ed[j]`` (eq. 27)."""
        return -self.kp * e[self.index] - self.kv * ed[self.index]

    def __call__(self, law, terms, Gdot, C, e, ed, thd_d, thdd_d, Qext):
        """``Q_a[j] = Q_m[j] + Q_c[j]`` (eq. 28)."""
        return self.model_force(law, terms, Gdot, C, thd_d, thdd_d, Qext) + self.correction(e, ed)


@dataclass
class IPOutput:
    """One controller step (k = active coordinates).

    Q (k,): actuator generalized forces [N·m | N]; e, ed (k,); V [J]; Vdot [W]: the exact
    closed-loop Vdot of the active law (corrected expression for 'paper'); lyapunov_margin:
    lambda_min of the Vdot matrix's symmetric part (>= 0: V non-increasing for every ed);
    cond: cond(Gamma); loop_margin: loop map margin (m to the dead centre for the triangle);
    terms: the :class:`~robot_dynamics.algorithms.partitioning.PartitionTerms`.
    """

    Q: np.ndarray
    e: np.ndarray
    ed: np.ndarray
    V: float
    Vdot: float
    lyapunov_margin: float
    cond: float
    loop_margin: float
    terms: object


class IPController(Law):
    """Modular controller on a :class:`PartitionedModel` (law 'paper' or 'pdplus'), and the law
    ``inertia_partitioning`` of the control loop.

    ``model``: a :class:`~robot_dynamics.model.Model` (partitioned here with ``loop_map`` and
    ``neglect_bodies``) or a :class:`PartitionedModel`. ``kp``, ``kv``: scalars or dicts
    {coordinate: gain} (default 20, Table II). The modules are rebuilt from the partitioned
    model's active coordinates at every call, so reconfiguring the model (payload, locked DoFs,
    body parameters) needs no change here. :meth:`compute` returns an :class:`IPOutput` in the
    active coordinates; :meth:`actuator_efforts` expands to all minimal coordinates (locked ones
    get ``lock_effort``).

    As a loop law (:meth:`update`): reference coordinates ``coords`` and command ``joints`` are
    the minimal coordinates (``joints`` = their command order); an unlocked DoF re-joins its
    reference over ``unlock_blend_time`` s (``rejoin``, :class:`ReferenceRejoin`). ``info``:
    the diagnostics (``labels`` / ``values``: e, ed, V, Vdot, lyapunov_margin, cond,
    loop_margin).
    """

    name = 'inertia_partitioning'

    def __init__(
        self,
        model,
        law='paper',
        kp=20.0,
        kv=20.0,
        joints=None,
        loop_map='auto',
        neglect_bodies=(),
        unlock_blend_time=2.0,
    ):
        if law not in LAWS:
            raise InputError(f'law must be one of {LAWS}, got {law!r}')
        pm = model if isinstance(model, PartitionedModel) else PartitionedModel(model, loop_map, list(neglect_bodies))
        joints = list(pm.all_coords) if joints is None else list(joints)
        if sorted(joints) != sorted(pm.all_coords):
            raise InputError(f'joints {joints} must be the minimal coordinates {pm.all_coords}')
        super().__init__(pm.model, joints)
        self.pm, self.law = pm, law
        self.coords = list(pm.all_coords)
        self.gains = {}
        self.set_gains(kp, kv)
        self.rejoin = ReferenceRejoin(pm.all_coords, float(unlock_blend_time))
        self._order = [pm.all_coords.index(j) for j in self.joints]

    def set_gains(self, kp=None, kv=None):
        """Gains: scalar (all coordinates) or {name: value}; must be > 0."""
        for which, g in (('kp', kp), ('kv', kv)):
            if g is None:
                continue
            items = g.items() if isinstance(g, dict) else [(c, g) for c in self.pm.all_coords]
            for c, v in items:
                if c not in self.pm.all_coords:
                    raise InputError(f"{which}: unknown coordinate '{c}' ({self.pm.all_coords})")
                if not (np.isfinite(v) and v > 0):
                    raise InputError(f'{which}[{c}] must be finite and > 0, got {v!r}')
                self.gains.setdefault(c, {})[which] = float(v)

    @property
    def modules(self):
        """One :class:`DofModule` per active coordinate."""
        return [DofModule(c, j, self.gains[c]['kp'], self.gains[c]['kv']) for j, c in enumerate(self.pm.coords)]

    def compute(self, theta, thd, theta_d, thd_d, thdd_d, Q_ext=None, q_guess=None):
        """One control step; all arrays (k,) in the active coordinates ``pm.coords``."""
        k = self.pm.k
        arr = [np.ascontiguousarray(x, dtype=float).reshape(-1) for x in (theta, thd, theta_d, thd_d, thdd_d)]
        for nm, x in zip(('theta', 'thd', 'theta_d', 'thd_d', 'thdd_d'), arr):
            if x.shape != (k,) or not np.isfinite(x).all():
                raise InputError(f'{nm} must be {k} finite values ({self.pm.coords}), got {x}')
        theta, thd, theta_d, thd_d, thdd_d = arr
        Qext = np.zeros(k) if Q_ext is None else np.ascontiguousarray(Q_ext, dtype=float).reshape(k)
        t = self.pm.terms(theta, q_guess)
        e, ed = theta - theta_d, thd - thd_d
        # the rows of every DofModule (module j = row j of the law) in one compiled call,
        # the same arithmetic as DofModule.__call__ / vector_law
        coords = self.pm.coords
        g = self.gains
        kp = np.array([g[c]['kp'] for c in coords])
        kv = np.array([g[c]['kv'] for c in coords])
        Q = np.empty(k)
        out = np.empty(4)
        ip_law(self.law == 'paper', t.Gamma, t.dGamma, t.Qg, thd, e, ed, thd_d, thdd_d, Qext, kp, kv, Q, out)
        return IPOutput(
            Q,
            e,
            ed,
            float(out[0]),
            float(out[1]),
            float(out[2]),
            float(out[3]),
            float(self.pm.loop_map.margin(self.pm.full_theta(theta))),
            t,
        )

    def vector_law(self, theta, thd, theta_d, thd_d, thdd_d, Q_ext=None):
        """The stacked law (eq. 29 / PD+) in matrix form, for cross-checking the modules."""
        t = self.pm.terms(theta)
        k = self.pm.k
        Qext = np.zeros(k) if Q_ext is None else np.asarray(Q_ext, float)
        kp = np.array([self.gains[c]['kp'] for c in self.pm.coords])
        kv = np.array([self.gains[c]['kv'] for c in self.pm.coords])
        e, ed = theta - theta_d, thd - thd_d
        if self.law == 'paper':
            Qm = t.Gamma @ thdd_d + t.Gamma_dot(thd) @ thd_d - 0.5 * t.grad_quadratic(thd_d)
        else:
            Qm = t.Gamma @ thdd_d + christoffel(t.dGamma, thd) @ thd_d
        return Qm - t.Qg - Qext - kp * e - kv * ed

    def lock_efforts(self, theta_all, thd_all, q_guess=None):
        """Brake emulation of the locked coordinates: {name: effort} = gravity of the full
        (unlocked) model + PD (the coordinate's gains) to the lock value; ``theta_all``,
        ``thd_all`` (len(pm.all_coords),). Empty when nothing is locked."""
        if not self.pm.locked:
            return {}
        full = self.pm.copy()
        full.unlock()
        Qg = full.terms(theta_all, q_guess).Qg
        out = {}
        for c, value in self.pm.locked.items():
            j = self.pm.all_coords.index(c)
            g = self.gains[c]
            out[c] = -Qg[j] - g['kp'] * (theta_all[j] - value) - g['kv'] * thd_all[j]
        return out

    def actuator_efforts(self, out, lock_effort=None):
        """Expand ``out.Q`` to all minimal coordinates ``pm.all_coords``; locked coordinates get
        ``lock_effort`` ({name: value}, default 0: a locked DoF is held by its brake)."""
        Q = np.zeros(len(self.pm.all_coords))
        Q[self.pm.sel] = out.Q
        for c in self.pm.locked:
            Q[self.pm.all_coords.index(c)] = (lock_effort or {}).get(c, 0.0)
        return Q

    def update(self, state, ref, dt=None):
        """The loop law: efforts of the minimal coordinates (command order) at ``state``."""
        q, qd, pm = state.q, state.qd, self.pm
        th_all, thd_all = q[pm.loop_map.idx], qd[pm.loop_map.idx]
        r0, r1, r2 = self.rejoin(state.stamp, th_all, thd_all, ref.pos, ref.vel, ref.acc)
        sel = pm.sel
        out = self.compute(th_all[sel], thd_all[sel], r0[sel], r1[sel], r2[sel], q_guess=q)
        Q = self.actuator_efforts(out, self.lock_efforts(th_all, thd_all, q_guess=q))
        labels = (
            [f'e_{c}' for c in pm.coords]
            + [f'ed_{c}' for c in pm.coords]
            + ['V', 'Vdot', 'lyapunov_margin', 'cond', 'loop_margin']
        )
        values = np.concatenate([out.e, out.ed, [out.V, out.Vdot, out.lyapunov_margin, out.cond, out.loop_margin]])
        return LawOutput(Q[self._order], out.e, out.ed, {'labels': labels, 'values': values})

    def current_coordinates(self, q):
        return q[self.pm.loop_map.idx]


class ReferenceRejoin:
    """Smooth re-entry of coordinates that leave a lock (or any hold) onto their reference.

    :meth:`mark` the coordinates as they are released; at the next :meth:`__call__` their
    position and velocity offsets to the reference, (theta - r0, thd - r1), become a
    :class:`~robot_dynamics.control.trajectories.DecayingOffset` started at that time: the shaped
    reference equals the state there (no step for a stiff PD to turn into a jump) and equals the
    reference from ``t + duration`` on, with continuous velocity and acceleration. Coordinates
    that were not released are untouched. ``duration`` <= 0 disables the shaping.
    """

    def __init__(self, coords, duration=2.0):
        self.coords = list(coords)
        self.duration = float(duration)
        self.pending = set()
        self.blend = None

    def mark(self, names):
        """Coordinates released since the last call."""
        self.pending |= set(names)

    def __call__(self, t, theta, thd, r0, r1, r2):
        """Shaped reference (r0, r1, r2), all arrays over ``coords``; ``t`` [s]."""
        if self.pending and self.duration > 0:
            mask = np.array([c in self.pending for c in self.coords])
            self.blend = DecayingOffset(
                np.where(mask, theta - r0, 0.0), np.where(mask, thd - r1, 0.0), self.duration, t
            )
        self.pending = set()
        if self.blend is None:
            return r0, r1, r2
        if t >= self.blend.t_end:
            self.blend = None
            return r0, r1, r2
        d0, d1, d2 = self.blend(t)
        return r0 + d0, r1 + d1, r2 + d2


# ----------------------------------------------------------------------------- example helpers
#: [ASSUMPTION] brief 000 par. 4.4: q_d(t) = q_c + a sin(2 pi t / T) on (phi, theta, delta).
BRIEF_CENTER = (0.0, 0.3, 0.12)
BRIEF_AMPLITUDE = (0.5, 0.2, 0.06)
BRIEF_PERIOD = 10.0
#: Paper Table III: Cartesian tracking RMSE x, y, z [m].
TABLE_III_RMSE = (0.002, 0.003, 0.014)


def brief_trajectory(center=BRIEF_CENTER, amplitude=BRIEF_AMPLITUDE, period=BRIEF_PERIOD):
    """The assumed reference of brief 000 (C-infinity sinusoid): a
    :class:`robot_dynamics.control.trajectories.Sinusoid`; ``traj(t)`` -> (3, 3) = (q_d, qd_d, qdd_d)."""
    from robot_dynamics.control.trajectories import Sinusoid

    return Sinusoid(amplitude, 1.0 / period, 0.0, center)


def fk_paper(phi, theta, zeta, L=2.0):
    """End-effector position of eq. (42) [m] (ignores the base offset p_B1F1, as the paper):
    ``x = L cos(phi)(cos(theta) + cos(theta - zeta))``, ``y = ... sin(phi) ...``,
    ``z = L (sin(theta) + sin(theta - zeta))``. Broadcasts; returns (..., 3)."""
    r = L * (np.cos(theta) + np.cos(theta - zeta))
    return np.stack([r * np.cos(phi), r * np.sin(phi), L * (np.sin(theta) + np.sin(theta - zeta))], -1)


@dataclass
class TrackingRun:
    """Result of :func:`simulate_tracking` (one row per control step, uniform sampling).

    t (N,); theta, theta_d (N, k); Q (N, k); V, Vdot, lyapunov_margin, cond, loop_margin (N,);
    x, x_d (N, 3): eq. (42) positions of actual and desired (both through eq. 42);
    rmse (3,): per-axis Cartesian RMSE [m]; max_phi: largest loop residual of the plant.
    """

    t: np.ndarray
    theta: np.ndarray
    theta_d: np.ndarray
    Q: np.ndarray
    V: np.ndarray
    Vdot: np.ndarray
    lyapunov_margin: np.ndarray
    cond: np.ndarray
    loop_margin: np.ndarray
    x: np.ndarray
    x_d: np.ndarray
    rmse: np.ndarray
    max_phi: float


def simulate_tracking(
    ctrl,
    T=20.0,
    dt=1e-3,
    plant_model=None,
    traj=None,
    e0=(0.0, 0.0, 0.0),
    events=(),
    integrator='rk4',
    zeta_joint='elbow_zeta',
):
    """Closed loop of ``ctrl`` with the **projection-method plant** of the spanning tree (seed
    002 :class:`robot_dynamics.ConstrainedPlant`, an independent dynamics route), the control
    held over each step of ``dt`` (ZOH).

    plant_model: the plant's Model (default the controller's; pass a modified one for a
    model mismatch); traj: callable t -> (3, k) (default :func:`brief_trajectory`); e0 (k,):
    initial error theta(0) - theta_d(0); events: [(t_event, fn(ctrl, plant) -> plant | None)]
    applied once when t >= t_event (e.g. add a payload to both). Cartesian positions through
    eq. (42) with ``zeta`` read from the plant's ``zeta_joint``.
    """
    from robot_dynamics.plants.rigid import ConstrainedPlant

    pm = ctrl.pm
    model = pm.model if plant_model is None else plant_model
    traj = brief_trajectory() if traj is None else traj
    r0 = traj(0.0)
    lm = pm.loop_map.evaluate(pm.full_theta(r0[0] + np.asarray(e0, float)))
    plant = ConstrainedPlant(model, lm.q, lm.G[:, pm.sel] @ r0[1], dt=dt, integrator=integrator)
    zi = model.joint_index(zeta_joint)
    pending = sorted(events, key=lambda ev: ev[0])
    N = int(round(T / dt))
    rows = []
    max_phi = 0.0
    for _ in range(N + 1):
        t = plant.t
        while pending and t >= pending[0][0] - 1e-12:
            res = pending.pop(0)[1](ctrl, plant)
            plant = res if res is not None else plant
        q, qd = plant.q.copy(), plant.qd.copy()
        idx = pm.loop_map.idx[pm.sel]
        r = traj(t)
        out = ctrl.compute(q[idx], qd[idx], r[0], r[1], r[2], q_guess=q)
        rows.append(
            (
                t,
                q[idx],
                r[0],
                out.Q,
                out.V,
                out.Vdot,
                out.lyapunov_margin,
                out.cond,
                out.loop_margin,
                q[pm.loop_map.idx],
                q[zi],
            )
        )
        if len(rows) > N:
            break
        info = plant.step(ctrl.actuator_efforts(out), dt)
        max_phi = max(max_phi, float(info.phi_norm))
    cols = list(zip(*rows))
    th_full = np.array(cols[9])
    zeta = np.array(cols[10])
    # desired zeta from the loop map (closed form or numeric) at theta_d
    th_d = np.array(cols[2])
    ci = [pm.all_coords.index(c) for c in pm.coords]
    zd = []
    for k in range(len(th_d)):
        full = th_full[k].copy()
        full[ci] = th_d[k]
        zd.append(pm.loop_map.evaluate(full, None).q[zi])
    x = fk_paper(th_full[:, 0], th_full[:, 1], zeta)
    full_d = th_full.copy()
    full_d[:, ci] = th_d
    x_d = fk_paper(full_d[:, 0], full_d[:, 1], np.array(zd))
    return TrackingRun(
        np.array(cols[0]),
        np.array(cols[1]),
        th_d,
        np.array(cols[3]),
        np.array(cols[4]),
        np.array(cols[5]),
        np.array(cols[6]),
        np.array(cols[7]),
        np.array(cols[8]),
        x,
        x_d,
        rmse(x, x_d),
        max_phi,
    )
