"""Series-elastic-actuated PKM plant (seed 004): the planar 3RRR SEA-PKM for ``sim_node``.

Registers the plant kind ``'sea'`` (:func:`robot_dynamics.plants.make_plant`). State: EE
position/velocity ``p, pd`` (the link side has 2 DOF; all arm angles follow from the closed-form
IK, so the loops stay closed exactly) and motor angles/velocities ``q_m, qd_m`` (3 each)::

    M_t(p) pdd + b(p, pd) = J_IK^T u,   u = K (q_m - theta_a) + D (qd_m - thetad_a)
    M_m qdd_m = tau - u - D_m qd_m

integrated with RK4 (``tau`` held over the step). ``q``/``qd`` are the model coordinates (9:
``armk_joint, armk_elbow, armk_motor``) as *measured*: with ``quantization`` > 0 [rad] the
positions are rounded to that step, and ``noise`` > 0 adds uniform noise in +-noise [rad] (seed
``seed``); velocities are then the backward difference of the measured positions over ``dt``
(what an encoder-based drive reports). ``true_q``/``true_qd`` are exact.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from robot_dynamics.errors import InputError, RobotDynamicsError
from robot_dynamics.pkm.sea import SEAPKM, sea_limbs, sea_params_from_model
from robot_dynamics.pkm.planar_sea import Planar3RRR, _task_space_1, task_accel, task_space_buffers
from robot_dynamics.plants.registry import register_plant
from robot_dynamics.plants.rigid import Plant, StepInfo

__all__ = ['SEAPlant', 'GeneralSEAPlant']


def _step_info(t, q, qd, tau):
    """The :class:`~robot_dynamics.plants.rigid.StepInfo` of an SEA plant: the state and the applied
    tau; no constraint solve behind it (no multipliers, rank or energy diagnostics)."""
    z = np.zeros(len(q))
    return StepInfo(t, q, qd, z, tau, 0.0, 0, 0, np.inf, 0.0, 0.0, 0.0, z, np.zeros(0), 0, True, 0.0, 0.0, 0.0, 1, ())


@njit(cache=True)
def _sea_derivative(A, a, b, BR, Bp, X, M, g, c, x, tau_m, out, P, TH, W, JIK, st, Mt, bb):
    """Compiled :meth:`SEAPlant.derivative`: out (10,) = d/dt x for x = (p, pd, qm, qdm) (10,),
    motor torques tau_m (3,); c = (K, D, D_m, M_m). P .. bb: work arrays of
    :func:`_task_space_1`. Returns the status (0 = ok; else the reference route raises)."""
    K, D, Dm, Mm = c[0], c[1], c[2], c[3]
    status = _task_space_1(A, a, b, BR, Bp, X, M, g, x[0:2], x[2:4], P, TH, W, JIK, st, Mt, bb)
    if status != 0:
        return status
    pd0, pd1 = x[2], x[3]
    u = np.empty(3)
    for l in range(3):
        Jpd = JIK[0, 0, l, 0] * pd0 + JIK[0, 0, l, 1] * pd1
        u[l] = K * (x[4 + l] - TH[0, 0, l, 0]) + D * (x[7 + l] - Jpd)
    pdd = np.empty(2)
    if not task_accel(JIK[0, 0], u, bb, Mt, pdd):
        return 4
    out[0], out[1] = pd0, pd1
    out[2], out[3] = pdd[0], pdd[1]
    for l in range(3):
        out[4 + l] = x[7 + l]
        out[7 + l] = (tau_m[l] - u[l] - Dm * x[7 + l]) / Mm
    return 0


@njit(cache=True)
def _sea_rk4(A, a, b, BR, Bp, X, M, g, c, x, tau_m, h, substeps):
    """``substeps`` RK4 steps of size h of :func:`_sea_derivative` (same arithmetic as the
    numpy route :meth:`SEAPlant._step_reference`); x (10,) updated in place. Returns the
    status (0 = ok; x is then unspecified and the caller re-runs the reference route)."""
    P, TH, W, JIK, st, Mt, bb = task_space_buffers()
    k1, k2, k3, k4, xt = np.empty((5, 10))
    for _ in range(substeps):
        s = _sea_derivative(A, a, b, BR, Bp, X, M, g, c, x, tau_m, k1, P, TH, W, JIK, st, Mt, bb)
        if s != 0:
            return s
        for i in range(10):
            xt[i] = x[i] + 0.5 * h * k1[i]
        s = _sea_derivative(A, a, b, BR, Bp, X, M, g, c, xt, tau_m, k2, P, TH, W, JIK, st, Mt, bb)
        if s != 0:
            return s
        for i in range(10):
            xt[i] = x[i] + 0.5 * h * k2[i]
        s = _sea_derivative(A, a, b, BR, Bp, X, M, g, c, xt, tau_m, k3, P, TH, W, JIK, st, Mt, bb)
        if s != 0:
            return s
        for i in range(10):
            xt[i] = x[i] + h * k3[i]
        s = _sea_derivative(A, a, b, BR, Bp, X, M, g, c, xt, tau_m, k4, P, TH, W, JIK, st, Mt, bb)
        if s != 0:
            return s
        h6 = h / 6
        for i in range(10):
            x[i] = x[i] + h6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i])
    return 0


@njit(cache=True)
def _sea_ik_rates(A, a, b, x, out):
    """Limb angles and rates of the state x (4+,) = (p, pd, ..): out (2, 3, 2) = theta, thetad (the same
    arithmetic as :func:`_planar_batch` for p, pd). Returns the status (0 = ok)."""
    for l in range(3):
        dx = x[0] - A[l, 0]
        dy = x[1] - A[l, 1]
        r2 = dx * dx + dy * dy
        c2 = (r2 - a * a - b * b) / (2 * a * b)
        if not (c2 > -1.0 + 1e-9 and c2 < 1.0 - 1e-9):
            return 1
        t2 = np.arccos(c2)
        t1 = np.arctan2(dy, dx) - np.arctan2(b * np.sin(t2), a + b * np.cos(t2))
        c1, s1 = np.cos(t1), np.sin(t1)
        c12, s12 = np.cos(t1 + t2), np.sin(t1 + t2)
        J00 = -a * s1 - b * s12
        J10 = a * c1 + b * c12
        J01 = -b * s12
        J11 = b * c12
        det = J00 * J11 - J01 * J10
        if abs(det) < 1e-12:
            return 2
        F00, F01, F10, F11 = J11 / det, -J01 / det, -J10 / det, J00 / det
        r0 = x[2]
        r1 = x[3]
        out[0, l, 0], out[0, l, 1] = t1, t2
        out[1, l, 0] = F00 * r0 + F01 * r1
        out[1, l, 1] = F10 * r0 + F11 * r1
    return 0


class _TrueState:
    """``true_q``/``true_qd``: copies of the exact tree state ``_true_state()`` (cached per state)."""

    @property
    def true_q(self):
        return self._true_state()[0].copy()

    @property
    def true_qd(self):
        return self._true_state()[1].copy()

    def _set_motors(self, qm, qdm, t=None):
        """Motor positions and rates (n_a,) and, if given, the time [s]."""
        self.qm, self.qdm = np.array(qm, float), np.array(qdm, float)
        if t is not None:
            self.t = float(t)


class SEAPlant(_TrueState, Plant):
    """RK4 plant of the planar 3RRR SEA-PKM (see module docstring). ``tau``: the motor torques
    (3,) in the order of ``model.actuated`` (the motor joints), or the full (9,) vector."""

    state_attrs = ('t', 'p', 'pd', 'qm', 'qdm', '_prev_meas', '_meas', 'last')

    def __init__(self, model, q0=None, dt=1e-3, params=None, quantization=0.0, noise=0.0, seed=0, substeps=1):
        self.model = model
        self.params = params or sea_params_from_model(model)
        self.pkm = Planar3RRR(self.params)
        self.dt = float(dt)
        self.substeps = int(substeps)
        self.quantization = float(quantization)
        self.noise = float(noise)
        self.rng = np.random.default_rng(seed)
        names = model.joint_names
        limbs = sea_limbs(model)  # (arm, elbow, motor) per SEA, sidecar order
        self.i_arm, self.i_elb, self.i_mot = (np.array([names.index(lb[i]) for lb in limbs]) for i in range(3))
        self.events = []
        pr = self.params
        self._c = np.array([pr.stiffness, pr.damping, pr.motor_damping, pr.motor_inertia])
        self._work = task_space_buffers()
        self.q0 = model.reference_q() if q0 is None else np.asarray(q0, float)
        self.reset()

    # -------------------------------------------------------------- state <-> model coordinates
    def _p_from_q(self, q):
        th = np.stack([q[self.i_arm], q[self.i_elb]], -1)
        return self.pkm.tip(th)[2]

    def reset(self, q0=None, qd0=None, t0=0.0, p0=None, motor0=None):
        """Reset from model coordinates (EE from limb 3's arm angles; motors from q0) or from
        ``p0`` (2,) with ``motor0`` (3,) (default: spring-relaxed equilibrium at rest)."""
        q0 = self.q0 if q0 is None else np.asarray(q0, float)
        self.t = float(t0)
        self.p = self._p_from_q(q0) if p0 is None else np.asarray(p0, float).copy()
        self.pd = np.zeros(2)
        th = self.pkm.ik(self.p)
        if motor0 is not None:
            self.qm = np.asarray(motor0, float).copy()
        else:
            # motors at rest such that the springs hold the link side static (u = static ID)
            P = np.zeros((5, 2))
            P[0] = self.p
            u = self.pkm.inverse_dynamics_d2(P).u
            self.qm = th[:, 0] + u / self.params.stiffness
        self.qdm = np.zeros(3)
        self._prev_meas = None
        self._measure()
        self.last = self._info(np.zeros(self.model.nq))
        return self.last

    def set_state(self, p, pd, qm, qdm, t=None):
        """Set the exact state (EE p, pd (2,); motor qm, qdm (3,))."""
        self.p, self.pd = np.array(p, float), np.array(pd, float)
        self._set_motors(qm, qdm, t)
        self._prev_meas = None
        self._measure()

    def _kernel_args(self):
        k = self.pkm
        return (k.A, self.params.a, self.params.b, k.BR, k.Bp, k.X, k.M, k.g, self._c)

    def derivative(self, x, tau_m):
        """d/dt of x = (p, pd, qm, qdm) (10,) under motor torques tau_m (3,) (compiled,
        :func:`_sea_derivative`; outside the workspace / at a singularity the numpy route
        :meth:`_derivative_reference` raises its error)."""
        x = np.ascontiguousarray(x, dtype=np.float64)
        tau_m = np.ascontiguousarray(tau_m, dtype=np.float64)
        out = np.empty(10)
        w = self._work
        if _sea_derivative(*self._kernel_args(), x, tau_m, out, *w) != 0:
            return self._derivative_reference(x, tau_m)
        return out

    def _derivative_reference(self, x, tau_m):
        """The numpy route of :meth:`derivative` (before the compiled kernel; reference for
        the tests and ``bench/bench_sea.py``)."""
        P = self.params
        p, pd, qm, qdm = x[:2], x[2:4], x[4:7], x[7:10]
        Mt, b, J, th = self.pkm.task_space_dynamics(p, pd, return_theta=True)
        Mt, b, J, th = Mt[0], b[0], J[0], th[0]
        u = P.stiffness * (qm - th[:, 0]) + P.damping * (qdm - J @ pd)
        pdd = np.linalg.solve(Mt, J.T @ u - b)
        qddm = (tau_m - u - P.motor_damping * qdm) / P.motor_inertia
        return np.concatenate([pd, pdd, qdm, qddm])

    def step(self, tau=None, dt=None):
        tau_full = self.full_tau(tau)
        tau_m = tau_full[self.i_mot]
        h = (self.dt if dt is None else float(dt)) / self.substeps
        x = np.concatenate([self.p, self.pd, self.qm, self.qdm])
        x0 = x.copy()
        if _sea_rk4(*self._kernel_args(), x, tau_m, h, self.substeps) != 0:
            return self._step_reference(tau, dt, x0)
        for _ in range(self.substeps):
            self.t += h
        return self._finish_step(x, h, tau_full)

    def _step_reference(self, tau=None, dt=None, x=None):
        """The numpy route of :meth:`step` (RK4 of :meth:`_derivative_reference`)."""
        tau_m = self.full_tau(tau)[self.i_mot]
        h = (self.dt if dt is None else float(dt)) / self.substeps
        if x is None:
            x = np.concatenate([self.p, self.pd, self.qm, self.qdm])
        for _ in range(self.substeps):
            k1 = self._derivative_reference(x, tau_m)
            k2 = self._derivative_reference(x + 0.5 * h * k1, tau_m)
            k3 = self._derivative_reference(x + 0.5 * h * k2, tau_m)
            k4 = self._derivative_reference(x + h * k3, tau_m)
            x = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            self.t += h
        return self._finish_step(x, h, self.full_tau(tau))

    def _finish_step(self, x, h, tau_full):
        self.p, self.pd, self.qm, self.qdm = x[:2], x[2:4], x[4:7], x[7:10]
        self._measure(h * self.substeps)
        self.last = self._info(tau_full)
        return self.last

    # -------------------------------------------------------------- model coordinates
    def _true_state(self):
        """Exact (q, qd) in model coordinates: one planar ID call (IK positions and rates),
        memoised on the state (a step used to evaluate it four times: sensors + StepInfo)."""
        key = (self.p.tobytes(), self.pd.tobytes(), self.qm.tobytes(), self.qdm.tobytes())
        if getattr(self, '_true_key', None) != key:
            q, qd = np.zeros(self.model.nq), np.zeros(self.model.nq)
            th = np.empty((2, 3, 2))
            x = np.concatenate([self.p, self.pd])
            if _sea_ik_rates(self.pkm.A, self.params.a, self.params.b, x, th) != 0:
                P = np.zeros((5, 2))  # the numpy route raises the error
                P[0], P[1] = self.p, self.pd
                th = self.pkm.inverse_dynamics_d2(P).theta
            q[self.i_arm], q[self.i_elb], q[self.i_mot] = th[0, :, 0], th[0, :, 1], self.qm
            qd[self.i_arm], qd[self.i_elb], qd[self.i_mot] = th[1, :, 0], th[1, :, 1], self.qdm
            self._true_key, self._true = key, (q, qd)
        return self._true

    def _measure(self, h=None):
        """Sample the sensors once (after reset/set_state/step): quantised + noisy positions and
        their backward difference over the step ``h`` (exact velocities after a reset or when
        neither quantisation nor noise is set)."""
        q = self.true_q
        if self.quantization > 0 or self.noise > 0:
            if self.quantization > 0:
                q = np.round(q / self.quantization) * self.quantization
            if self.noise > 0:
                q = q + self.rng.uniform(-self.noise, self.noise, q.shape)
            qd = (q - self._prev_meas) / h if (h and self._prev_meas is not None) else self.true_qd
            self._prev_meas = q
        else:
            qd = self.true_qd
        self._meas = (q, qd)

    @property
    def q(self):
        """Measured positions (see the module docstring), sampled once per step."""
        return self._meas[0].copy()

    @property
    def qd(self):
        """Measured velocities: backward difference of the measured positions over the step."""
        return self._meas[1].copy()

    def hold_command(self, damping):
        """sim_node's ``hold: gravity`` for this plant: gravity is normal to the plane (no
        balancing torque needed), so the hold is ``-damping * qd_m`` on the motor joints (measured
        motor velocities): the motors brake and the spring-link oscillation is dissipated
        through them. Returns (nq,)."""
        tau = np.zeros(self.model.nq)
        tau[self.i_mot] = -float(damping) * self.qd[self.i_mot]
        return tau

    def _info(self, tau):
        return _step_info(self.t, self.true_q, self.true_qd, tau)


def _factory(model, q0=None, dt=1e-3, route='auto', **options):
    """Plant kind ``'sea'``: ``route='planar'`` the closed-form planar 3RRR plant
    (:class:`SEAPlant`, robots of its class), ``'general'`` any SEA-PKM through the general
    2nd-order route (:class:`GeneralSEAPlant`; options
    ``substeps`` only), ``'auto'`` the planar one when the model is in its class, else the
    general one."""
    if route not in ('auto', 'planar', 'general'):
        raise InputError(f'sea plant: route must be auto, planar or general, got {route!r}')
    if route != 'general':
        try:
            params = options.pop('params', None) or sea_params_from_model(model)
            return SEAPlant(model, q0, dt=dt, params=params, **options)
        except InputError:
            if route == 'planar':
                raise
    bad = sorted(set(options) - {'substeps'})
    if bad:
        raise InputError(f"model '{model.name}': the general SEA plant has no option(s) {bad}")
    return GeneralSEAPlant(model, q0, dt=dt, **options)


register_plant('sea', _factory)


class GeneralSEAPlant(_TrueState, Plant):
    """RK4 plant of any :class:`SEAPKM` (plant kind ``'sea'`` for robots outside the planar
    3RRR class; ``robot_dynamics.plants.sea.SEAPlant`` is the closed-form fast path of that class and
    equals this one on it). State: task ``x``, ``xd`` (delta,), motors ``qm``, ``qdm`` (n_a,).
    ``tau``: motor torques/forces in the order of ``model.actuated`` or the full (nq,) vector.
    Same interface as ``SEAPlant`` (measured ``q``/``qd`` exact here: no quantisation/noise)."""

    state_attrs = ('t', 'x', 'xd', 'qm', 'qdm', 'last')

    def __init__(self, model, q0=None, dt=1e-3, substeps=1, sea=None):
        self.model = model
        self.sea = sea or SEAPKM(model)
        self.dt, self.substeps = float(dt), int(substeps)
        self.events = []
        self.q0 = model.reference_q() if q0 is None else np.asarray(q0, float)
        self.reset()

    def reset(self, q0=None, qd0=None, t0=0.0):
        """Reset at rest from model coordinates (task from the platform limb), motors where the
        springs hold the link side static (u = least-norm static ID: zero preload)."""
        s = self.sea
        q0 = self.q0 if q0 is None else np.asarray(q0, float)
        self.t = float(t0)
        self.x = s.measure(q0, np.zeros_like(q0))[0]
        self.xd = np.zeros(s.delta)
        r = s.at(self.x)
        self.qm = r.theta_a[0, 0] + r.u[0] / s.K
        self.qdm = np.zeros(s.n_a)
        self.last = self._info(np.zeros(self.model.nq))
        return self.last

    def set_state(self, x, xd, qm, qdm, t=None):
        """``x`` (delta,) task coordinates or, pose task, the pose (4, 4); ``xd`` (delta,)."""
        self.x, self.xd = np.array(x, float), np.array(xd, float)
        self._set_motors(qm, qdm, t)
        self.last = self._info(np.zeros(self.model.nq))

    def derivative(self, z, tau_m, T0=None):
        """d/dt of z = (x, xd, qm, qdm) under motor efforts tau_m (n_a,). Pose task: z = (xi,
        V, qm, qdm) with the pose ``T0 exp(xi)`` (``T0`` (4, 4)), d/dt xi = dexp_R(xi)^-1 V."""
        s, d, na = self.sea, self.sea.delta, self.sea.n_a
        x, xd, qm, qdm = z[:d], z[d : 2 * d], z[2 * d : 2 * d + na], z[2 * d + na :]
        if T0 is not None:
            from robot_dynamics.spatial.lie import dexp_inv_se3, exp_se3

            Mt, b, r = s.task_dynamics(T0 @ exp_se3(x), xd)
            dx = dexp_inv_se3(x, side='right') @ xd
        else:
            Mt, b, r = s.task_dynamics(x, xd)
            dx = xd
        J = r.J_IK[0, 0]
        u = s.K * (qm - r.theta_a[0, 0]) + s.D * (qdm - J @ xd)
        xdd = np.linalg.solve(Mt, J.T @ u - b)
        qddm = (tau_m - u - s.Dm * qdm) / s.Mm
        return np.concatenate([dx, xdd, qdm, qddm])

    def step(self, tau=None, dt=None):
        tau_full = self.full_tau(tau)
        tau_m = tau_full[self.sea.i_mot]
        h = (self.dt if dt is None else float(dt)) / self.substeps
        d, na = self.sea.delta, self.sea.n_a
        pose = self.sea.pose
        T0 = self.x if pose else None  # pose: RK4 in exp coordinates about T0
        from robot_dynamics.spatial.lie import exp_se3

        z = np.concatenate([np.zeros(6) if pose else self.x, self.xd, self.qm, self.qdm])
        for _ in range(self.substeps):
            k1 = self.derivative(z, tau_m, T0)
            k2 = self.derivative(z + 0.5 * h * k1, tau_m, T0)
            k3 = self.derivative(z + 0.5 * h * k2, tau_m, T0)
            k4 = self.derivative(z + h * k3, tau_m, T0)
            z = z + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            self.t += h
            if pose:
                T0 = T0 @ exp_se3(z[:6])
                z[:6] = 0.0
        self.x, self.xd = (T0 if pose else z[:d]), z[d : 2 * d]
        self.qm, self.qdm = z[2 * d : 2 * d + na], z[2 * d + na :]
        self.last = self._info(tau_full)
        return self.last

    def _true_state(self):
        key = (self.x.tobytes(), self.xd.tobytes(), self.qm.tobytes(), self.qdm.tobytes())
        if getattr(self, '_true_key', None) != key:
            s = self.sea
            r = s.at(self.x, self.xd)
            q = s.tree_q(r.theta[0, 0], self.qm)
            qd = s.pkm.tree_q(r.theta[0, 1], np.zeros(self.model.nq))
            qd[s.i_mot] = self.qdm
            self._true_key, self._true = key, (q, qd)
        return self._true

    q, qd = _TrueState.true_q, _TrueState.true_qd

    def hold_command(self, damping):
        """Hold: motors brake (``-damping * qd_m``) on top of the static spring torque that
        holds the link side against gravity at the current pose (u of the static ID)."""
        s = self.sea
        try:
            u = s.at(self.x).u[0]
        except RobotDynamicsError:  # outside the workspace / singular: brake only
            u = np.zeros(s.n_a)
        tau = np.zeros(self.model.nq)
        tau[s.i_mot] = u - float(damping) * self.qdm
        return tau

    def _info(self, tau):
        q, qd = self._true_state()
        return _step_info(self.t, q.copy(), qd.copy(), tau)
