"""Virtual decomposition control of hydraulic parallel-serial booms (seed 001, eq. 8, 36-48,
70-77, 90-93), on the structure model of :mod:`robot_dynamics.algorithms.vdc`; the law ``vdc``
of the control loop (:class:`VDCController`).

One control step (:meth:`VDCController.step`), all quantities at the MEASURED configuration::

    qd_r  = qd_d + lam (q_d - q),  qdd_r = qdd_d + lam (qd_d - qd)          (eq. 36/37)
    V, V_r, dV_r/dt  base -> tip (dU^T/dt with the measured rates)          (eq. 24-48)
    F_r*_A = M_A dV_r/dt + C_A(w) V_r + G_A + K_A (V_r - V)                  (eq. 8)
    f_cr (eq. 76 = 68 on required wrenches), F_r,Bc (eq. 77) tip -> base
    f_pr = f_cr + f_f(xd_r)                                 (friction at the REQUIRED rate)
    u_fr = f_pr'/beta + (A_a^2/V_a + A_b^2/V_b) xd + k_x (xd_r - xd) + k_f (f_pr - f_p)  (eq. 90)
    u    = valve_inverse(u_fr)                                              (eq. 89/91)

The valve saturation +-u_max (eq. 91) is the loop's limit (``command_limit``) and the valve's.

``f_pr'`` (never specified by the paper): ``fdot='difference'`` the backward difference at the
control period (default, as the brief's run), or pass ``fpr_dot`` explicitly (oracle / analytic).
Gains: ``lam`` [1/s], ``K_A = k_scale M_A`` [1/s], ``k_f = kf_pole / beta`` [m^2... N^-1 s^-1
scaled so that beta k_f = kf_pole 1/s], ``k_x = kx_ratio k_f`` (``kx_ratio`` N s/m).
References: per segment (q_d, qd_d, qdd_d) (rad or m) from an analytic trajectory.
"""

from __future__ import annotations

import numpy as np

from robot_dynamics.algorithms.hydraulics import (
    A_A,
    A_B,
    UMAX,
    chamber_volumes,
    friction,
    hydraulic_params_from_model,
    valve_inverse,
)
from robot_dynamics.algorithms.vdc import Structure, _body_wrenches, _bwd, _fwd, _task_reference, structure_from_model
from robot_dynamics.control.loop import Law, LawOutput, Reference, State
from robot_dynamics.errors import InputError, RobotDynamicsError


class VDCController(Law):
    """VDC + pressure/flow controller of a hydraulic parallel-serial boom, and the law ``vdc`` of
    the control loop (:class:`~robot_dynamics.control.loop.ControlLoop`).

    ``model``: a :class:`~robot_dynamics.model.Model` or its
    :class:`~robot_dynamics.algorithms.vdc.Structure` (e.g. a scaled copy: model mismatch);
    ``params``: the controller's :class:`~robot_dynamics.algorithms.hydraulics.HydraulicParams`
    (default the model's; may differ from the plant's: robustness). :meth:`step` is the step on
    the segment coordinates, ``step(q, qd, pa, pb, ref, FD=None, fpr_dot=None)`` -> valve
    voltages (ns,); ``diag`` holds the last diagnostics (dict of arrays).

    As a loop law (:meth:`update`):

    * reference coordinates ``coords`` = the segment joints (URDF names, e.g. lift_joint,
      tilt_joint; positions in URDF joint coordinates), from ``reference/joint_trajectory``;
    * command ``joints`` = the cylinders' rod joints (default the model's actuated order), volts;
      ``command_limit`` = the valves' input limits (replacing the URDF effort limits);
    * extra named measurements of the state message (``extra_names``): ``<cyl>/p_a``,
      ``<cyl>/p_b`` [Pa] per cylinder, plausible in [0, 10 p_s];
    * ``safe_command`` = 0 V (valves closed), whatever the loop's ``safe`` mode;
    * f_pr' by backward difference over the time ``dt`` between the states the law computed: the
      control period ``dt`` when they are one period apart (to 1 us; lock-step and offline runs
      are then bit-identical), else their difference if within [0.2, 5] periods (skipped
      states); after a longer gap (stalled input), a stamp jump back or at the first state it
      restarts (f_pr' = 0 for one step) instead of dividing a long change by a short time;
    * tool wrench ``F_D`` (what the tool exerts on the environment, tool frame):
      :meth:`set_tool_wrench`, used while its stamp is within ``wrench_timeout`` s of the state's.
    """

    name = 'vdc'

    def __init__(
        self,
        model,
        params=None,
        lam=5.0,
        k_scale=10.0,
        kf_pole=50.0,
        kx_ratio=1e4,
        dt=1e-3,
        dp_min=1e5,
        joints=None,
        wrench_timeout=0.1,
    ):
        st = model if isinstance(model, Structure) else structure_from_model(model)
        model = st.model
        if model is None:
            raise InputError('VDCController needs a structure built from a model (structure_from_model)')
        hp = params or hydraulic_params_from_model(model, st)
        rod = {(s.rod_joint if s.kind == 'revolute' else s.joint): k for k, s in enumerate(st.segments)}
        joints = list(model.actuated) if joints is None else list(joints)
        if sorted(joints) != sorted(rod):
            raise InputError(f'vdc: joints {joints} must be the cylinder joints {sorted(rod)}')
        super().__init__(model, joints)
        self.st, self.hp = st, hp
        ns = self.ns = st.ns
        self.lam = np.broadcast_to(np.asarray(lam, float), (ns,)).copy()
        if np.any(self.lam <= 0) or k_scale <= 0 or kf_pole <= 0 or kx_ratio <= 0 or dt <= 0:
            raise InputError('VDC gains lam, k_scale, kf_pole, kx_ratio and dt must be > 0')
        self.Kb = np.ascontiguousarray(k_scale * st.Mb)
        self.kf = np.full(ns, kf_pole / hp.beta)
        self.kx = kx_ratio * self.kf
        self.period = self.dt = float(dt)
        self.dp_min = float(dp_min)
        self.wrench_timeout = float(wrench_timeout)
        # the loop law: command order, segment joints, pressures
        self.order = np.array([rod[j] for j in self.joints], dtype=np.int64)
        self.coords = _segment_joints(st)
        self.required_joints = list(self.coords)
        self._seg = np.array([model.joint_index(j) for j in self.coords], dtype=np.int64)
        self.offsets = np.array([s.offset for s in st.segments])
        self._pa = [f'{c}/p_a' for c in hp.names]
        self._pb = [f'{c}/p_b' for c in hp.names]
        self.extra_names = self._pa + self._pb
        self.extra_limits = {n: (0.0, 10.0 * hp.p_s) for n in self.extra_names}
        self.command_limit = hp.P[self.order, UMAX].astype(float)
        self.FD, self.FD_stamp = None, None
        # work arrays of the recursion
        self._V = np.zeros((ns, 6, 6))
        self._Vd = np.zeros((ns, 6, 6))
        self._Vr = np.zeros((ns, 6, 6))
        self._Vdr = np.zeros((ns, 6, 6))
        self._Rw = np.zeros((ns, 6, 3, 3))
        self._pw = np.zeros((ns, 6, 3))
        self._clo = np.zeros((ns, 12))
        self._clor = np.zeros((ns, 12))
        self._Fs = np.zeros((ns, 4, 6))
        self._fc = np.zeros(ns)
        self._FBc = np.zeros((ns, 6))
        self._FE = np.zeros((ns, 6))
        self._z6 = np.zeros(6)
        self._zn = np.zeros(ns)
        self.reset()

    def reset(self):
        """Forget the previous f_pr (the backward difference restarts at 0)."""
        self.fpr_prev = None
        self.diag = {}

    def required(self, q, qd, ref, FD=None):
        """Required quantities at (q, qd) for ref = (q_d, qd_d, qdd_d) (3, ns).

        Returns (f_pr (ns,), xd_r (ns,), xd (ns,), x (ns,)) and fills the work arrays."""
        st = self.st
        q = np.ascontiguousarray(q, dtype=float)
        qd = np.ascontiguousarray(qd, dtype=float)
        ref = np.asarray(ref, float)
        if ref.shape != (3, self.ns) or q.shape != (self.ns,) or qd.shape != (self.ns,):
            raise InputError(f'need q, qd ({self.ns},) and ref (3, {self.ns})')
        qd_r = ref[1] + self.lam * (ref[0] - q)
        qdd_r = ref[2] + self.lam * (ref[1] - qd)
        z6 = self._z6
        _fwd(*st.chain, q, qd, qd, self._zn, z6, z6, self._V, self._Vd, self._Rw, self._pw, self._clo)  # actual
        _fwd(*st.chain, q, qd, qd_r, qdd_r, z6, z6, self._Vr, self._Vdr, self._Rw, self._pw, self._clor)  # required
        _body_wrenches(
            st.Mb, st.mb, st.cb, st.Ib, self.Kb, st.gravity, self._Vr, self._Vdr, self._V, self._Rw, True, self._Fs
        )
        FD = self._z6 if FD is None else np.ascontiguousarray(FD, dtype=float)
        _bwd(st.kind, st.geo, st.RE, st.rE, q, self._clor, self._Fs, FD, self._fc, self._FBc, self._FE, st.eps)
        x = np.where(st.kind == 0, self._clo[:, 0] - st.geo[:, 2], q)
        xd = self._clo[:, 3] * qd
        xd_r = self._clor[:, 4].copy()
        P = self.hp.P
        fpr = np.array([self._fc[k] + friction(P[k], xd_r[k]) for k in range(self.ns)])
        return fpr, xd_r, xd, x

    def step(self, q, qd, pa, pb, ref, FD=None, fpr_dot=None):
        """One control step -> valve voltages u (ns,) [V] (``diag['saturated']``: beyond the
        valve's +-u_max, where the loop and the valve saturate them)."""
        fpr, xd_r, xd, x = self.required(q, qd, ref, FD)
        hp, P = self.hp, self.hp.P
        pa = np.asarray(pa, float)
        pb = np.asarray(pb, float)
        fp = P[:, A_A] * pa - P[:, A_B] * pb
        if fpr_dot is None:
            fpr_dot = np.zeros(self.ns) if self.fpr_prev is None else (fpr - self.fpr_prev) / self.dt
        self.fpr_prev = fpr
        u = np.zeros(self.ns)
        uf = np.zeros(self.ns)
        for k in range(self.ns):
            va, vb = chamber_volumes(P[k], x[k])
            uf[k] = (
                fpr_dot[k] / hp.beta
                + (P[k, A_A] ** 2 / va + P[k, A_B] ** 2 / vb) * xd[k]
                + self.kx[k] * (xd_r[k] - xd[k])
                + self.kf[k] * (fpr[k] - fp[k])
            )
            u[k] = valve_inverse(P[k], uf[k], x[k], pa[k], pb[k], hp.p_s, hp.p_r, self.dp_min)
        self.diag = dict(
            fpr=fpr,
            fp=fp,
            xd_r=xd_r,
            xd=xd,
            x=x,
            uf=uf,
            u=u,
            saturated=np.abs(u) > P[:, UMAX],
            fpr_dot=np.asarray(fpr_dot, float),
        )
        return u

    def lyapunov(self, fpr=None, fp=None):
        """Accompanying function sum_A 1/2 e_A^T M_A e_A + sum (f_pr - f_p)^2 / (2 beta k_x)
        (eq. 94-98) of the last step (e_A = V_r - V)."""
        st = self.st
        e = self._Vr[:, :4] - self._V[:, :4]
        v = 0.5 * np.einsum('kai,kaij,kaj->', e, st.Mb, e)
        d = self.diag
        fpr = d['fpr'] if fpr is None else fpr
        fp = d['fp'] if fp is None else fp
        return float(v + np.sum((fpr - fp) ** 2 / (2 * self.hp.beta * self.kx)))

    def dissipation(self):
        """sum_A e_A^T K_A e_A (the mechanical part of the Lyapunov dissipation) of the last step."""
        e = self._Vr[:, :4] - self._V[:, :4]
        return float(np.einsum('kai,kaij,kaj->', e, self.Kb, e))

    # ------------------------------------------------------------------ the loop law
    def set_tool_wrench(self, F, stamp):
        """Tool wrench F_D (6,) [force, moment] in the tool frame, measured at ``stamp`` [s]."""
        self.FD, self.FD_stamp = np.asarray(F, float).copy(), float(stamp)

    def segment_state(self, state):
        return state.q[self._seg] + self.offsets, state.qd[self._seg]

    def update(self, state, ref, dt=None):
        """Valve voltages (command order) for ``state`` (joints + chamber pressures) and ``ref``
        (segment joints); ``dt``: see the class doc (f_pr')."""
        q, qd = self.segment_state(state)
        self.st.check_q(q)
        h = self.period
        if dt is not None and abs(dt - h) < 1e-6:
            self.dt = h
        elif dt is not None and 0.2 * h <= dt <= 5.0 * h:
            self.dt = dt
        else:  # the first state, a gap (stalled input) or a reset: restart the difference
            self.fpr_prev = None
        r = np.array([ref.pos + self.offsets, ref.vel, ref.acc])
        pa = np.array([state.extra[n] for n in self._pa])
        pb = np.array([state.extra[n] for n in self._pb])
        FD = (
            self.FD if (self.FD_stamp is not None and abs(state.stamp - self.FD_stamp) <= self.wrench_timeout) else None
        )
        u = self.step(q, qd, pa, pb, r, FD=FD)
        return LawOutput(u[self.order], ref.pos + self.offsets - q, ref.vel - qd, {'segment_ref': r, 'q': q})

    def safe_command(self, state, mode, damping):
        return np.zeros(len(self.joints))

    def current_coordinates(self, q):
        return q[self._seg]

    def prepare(self):
        m = self.model
        q = m.reference_q()
        extra = {n: (60e5 if n in self._pa else 40e5) for n in self.extra_names}
        st = State(0.0, q, np.zeros(m.nq), 0.0, extra=extra)
        k = len(self.coords)
        try:
            self.update(st, Reference(0.0, q[self._seg], np.zeros(k), np.zeros(k)), None)
        except RobotDynamicsError:
            pass
        self.reset()


def quintic_legs(points, durations, t):
    """Straight-line rest-to-rest legs through ``points`` (K, d) with ``durations`` (K-1,):
    ``s(tau) = 10 tau^3 - 15 tau^4 + 6 tau^5``. Returns (4, d): position, velocity,
    acceleration, jerk at time t (hold before/after)."""
    P = np.asarray(points, float)
    T = np.asarray(durations, float)
    times = np.concatenate([[0.0], np.cumsum(T)])
    out = np.zeros((4, P.shape[1]))
    if t <= 0:
        out[0] = P[0]
        return out
    if t >= times[-1]:
        out[0] = P[-1]
        return out
    i = int(np.searchsorted(times, t, side='right') - 1)
    h = T[i]
    s = (t - times[i]) / h
    prof = (
        10 * s**3 - 15 * s**4 + 6 * s**5,
        (30 * s**2 - 60 * s**3 + 30 * s**4) / h,
        (60 * s - 180 * s**2 + 120 * s**3) / h**2,
        (60 - 360 * s + 360 * s**2) / h**3,
    )
    d = P[i + 1] - P[i]
    out[0] = P[i] + prof[0] * d
    for k in (1, 2, 3):
        out[k] = prof[k] * d
    return out


class TaskReference:
    """Tool-point reference of a structure with as many task axes as segments, mapped to
    segment coordinates analytically: Newton IK on the exact forward kinematics (warm start),
    ``qd = J^-1 pd``, ``qdd = J^-1 (pdd - Jd qd)`` (J, Jd qd from the structure recursion; no
    numerical differentiation in time). ``axes``: world axes of the task (e.g. (0, 2)).
    ``path(t) -> (4, d)`` task position/derivatives. ``__call__(t) -> (3, ns)``.
    """

    def __init__(self, structure, path, axes, q_guess):
        self.st, self.path, self.axes = structure, path, list(axes)
        if len(self.axes) != structure.ns:
            raise InputError('TaskReference needs one task axis per segment')
        self.q = np.asarray(q_guess, float).copy()
        self._axes = np.array(self.axes, dtype=np.int64)

    def tool_point(self, q, qd=None):
        """World tool position p (d,), Jacobian (d, ns) and Jd qd (d,) at (q, qd)."""
        st, ns = self.st, self.st.ns
        qd = np.zeros(ns) if qd is None else qd
        st.forward(q, qd)
        R = st.Rw[-1, 4]
        V = st.V[-1, 4]
        acc = R @ (st.Vd[-1, 4, :3] + np.cross(V[3:], V[:3]))
        p = st.pw[-1, 4][self.axes]
        J = np.zeros((3, ns))
        for j in range(ns):
            e = np.zeros(ns)
            e[j] = 1.0
            st.forward(q, np.zeros(ns), qd_use=e)
            J[:, j] = R @ st.V[-1, 4, :3]
        return p, J[self.axes], acc[self.axes]

    def ik(self, p_d, tol=1e-12, it=30):
        q = self.q
        for _ in range(it):
            p, J, _ = self.tool_point(q)
            dq = np.linalg.solve(J, p_d - p)
            q = q + dq
            if np.abs(dq).max() < tol:
                break
        else:
            raise InputError(f'IK did not converge for tool point {p_d}')
        self.q = q
        return q

    def __call__(self, t):
        P = self.path(t)
        st = self.st
        d = len(self.axes)
        if d != st.ns:
            return self.reference(t, P)
        Pa = np.ascontiguousarray(P, dtype=float)
        if Pa.ndim != 2 or Pa.shape[0] < 3 or Pa.shape[1] != d or not np.isfinite(Pa[:3]).all():
            return self.reference(t, P)
        out = np.empty((3, st.ns))
        # the steps of ik() + the J^-1 maps below, in one compiled call (same arithmetic)
        if not _task_reference(
            *st.chain, self._axes, np.ascontiguousarray(self.q, dtype=float), Pa[:3], 1e-12, 30, out
        ):
            raise InputError(f'IK did not converge for tool point {P[0]}')
        self.q = out[0].copy()
        return out

    def reference(self, t, P=None):
        """The numpy route of :meth:`__call__` (tool_point, ik and np.linalg.solve)."""
        P = self.path(t) if P is None else P
        q = self.ik(P[0])
        _, J, _ = self.tool_point(q)
        qd = np.linalg.solve(J, P[1])
        _, J, a0 = self.tool_point(q, qd)
        qdd = np.linalg.solve(J, P[2] - a0)
        return np.array([q, qd, qdd])


def _segment_joints(st):
    return [s.joint for s in st.segments]


class BoomTaskProfile:
    """The seed 001 A-B-C-D task as a joint reference (what ``trajectory_node mode: boom_task``
    publishes): quintic rest-to-rest legs of the tool point (world ``axes``, e.g. x, z) from the
    tool point at ``q_start`` (URDF joint vector, default the model's reference configuration)
    through ``waypoints`` (K, 2) ``loops`` times and back to the first waypoint, each leg
    ``leg_duration`` s, starting after ``start_delay`` s (:func:`quintic_legs`), mapped to the
    segment joints analytically by :class:`TaskReference` (never differentiated in time).

    ``joints``: the segment joints (URDF names); ``__call__(t, order=2)`` -> (3, ns) positions (URDF
    joint coordinates, i.e. segment coordinates minus the segment offsets), velocities,
    accelerations; ``path(t)`` -> (4, d) the tool point and its derivatives."""

    def __init__(self, model, waypoints, axes=(0, 2), loops=2, leg_duration=2.0, start_delay=0.0, q_start=None):
        from robot_dynamics.algorithms.vdc import segment_q, structure_from_model

        self.st = st = structure_from_model(model)
        self.axes = list(axes)
        wp = np.asarray(waypoints, float).reshape(-1, len(self.axes))
        if len(wp) < 1 or len(self.axes) != st.ns or int(loops) < 0 or float(leg_duration) <= 0:
            raise InputError(
                'boom task: waypoints (flat list of points in task_axes), one task axis '
                'per segment, task_loops >= 0, leg_duration > 0'
            )
        q0 = segment_q(st, model.reference_q() if q_start is None else np.asarray(q_start, float))[0]
        st.check_q(q0)
        p0 = st.tool_pose(q0)[1][self.axes]
        self.points = [p0] + [w for _ in range(int(loops)) for w in wp] + [wp[0]]
        self.durations = [float(leg_duration)] * (len(self.points) - 1)
        self.delay = float(start_delay)
        self.duration = self.delay + sum(self.durations)
        self.joints = _segment_joints(st)
        self.offsets = np.array([s.offset for s in st.segments])
        self.task = TaskReference(st, self.path, self.axes, q0)

    def path(self, t):
        return quintic_legs(self.points, self.durations, t - self.delay)

    def __call__(self, t, order=2):
        r = self.task(t)
        r[0] -= self.offsets
        return r
