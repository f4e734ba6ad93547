"""Flatness-based exactly linearising controller of the planar 3RRR SEA-PKM (seed 004, brief A8).

SEA model: ``u = K (q_m - theta_a)`` (+ optional spring-parallel damper), ``M_m qdd_m = tau - u
(- D_m qd_m)``; link side ``M_t pdd + b = J_IK^T u`` (task-space form of the recursive ID).
The flat output is the EE position p (relative degree 4 per coordinate) and the preload
``lambda = n^T u`` (relative degree 2). One evaluation::

    theta = IK(p); u = K (q_m - theta_a); ud = K (qd_m - J_IK pd)
    pdd  = M_t^-1 (J_IK^T u - b)                                  (A7)
    pddd = M_t^-1 (J_IK^T ud + Jd_IK^T u - b1),  b1 = wd(pddd = 0)
    nu   = p_d'''' + k3 (p_d''' - pddd) + k2 (p_d'' - pdd) + k1 (p_d' - pd) + k0 (p_d - p)
    nu_l = lam_d'' + kl1 (lam_d' - lamd) + kl0 (lam_d - lam)
    [J_IK^T; n^T] udd = [wdd(nu) - Jdd_IK^T u - 2 Jd_IK^T ud; nu_l - ndd^T u - 2 nd^T ud]
    tau  = u + M_m (thetadd_a + K^-1 udd) + D_m qd_m

Gains: all poles at ``-p`` (``k3 = 4p, k2 = 6p^2, k1 = 4p^3, k0 = p^4``); the error then obeys
``e'''' + k3 e''' + k2 e'' + k1 e' + k0 e = 0``. With ``feedforward_only=True`` the law is
``tau = u_d + M_m (thetadd_a,d + K^-1 udd_d) + Kp (q_m,d - q_m) + Kd (qd_m,d - qd_m)``.
Units: N m, rad, m, s. Undamped springs only (``damping = 0``) for the exact linearisation.

The law ``sea_flatness`` of the control loop (:mod:`robot_dynamics.control.loop`), two routes:
:class:`SEAFlatnessController` (the closed-form planar 3RRR, compiled) and
:class:`GeneralSEAFlatness` (any SEA-PKM through the general 2nd-order route);
:func:`make_sea_flatness_law` picks one.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from robot_dynamics.errors import InputError, RobotDynamicsError
from robot_dynamics.pkm.sea import SEAPKM, preload_direction
from robot_dynamics.control.loop import Law, LawOutput
from robot_dynamics.spatial.linalg import solve
from robot_dynamics.pkm.planar_sea import (
    Planar3RRR,
    Planar3RRRParams,
    _planar_batch,
    _preload_n,
    _task_space_1,
    solve_preload,
    task_accel,
    task_space_buffers,
)

__all__ = [
    'SEAFlatnessController',
    'GeneralSEAFlatness',
    'make_sea_flatness_law',
    'pole_gains',
    'sea_state_from_joints',
]


def reference_derivs(ref, k):
    """yd (5, k): a loop Reference's task coordinates .. snap (rows 0..4 of ``derivs``; rows it
    lacks, e.g. a hold reference without ``derivs``, are zero)."""
    yd = np.zeros((5, k))
    if ref.derivs is not None:
        n = min(5, len(ref.derivs))
        yd[:n] = ref.derivs[:n]
    else:
        yd[0], yd[1], yd[2] = ref.pos, ref.vel, ref.acc
    return yd


def pole_gains(p, order=4):
    """Gains placing all ``order`` poles at ``-p``: binomial coefficients times powers of p,
    returned lowest first (k0, k1, ..)."""
    from math import comb

    return np.array([comb(order, k) * p ** (order - k) for k in range(order)])


def sea_state_from_joints(params, q, qd, i_arm, i_elb, i_mot):
    """Controller inputs from (measured) joint states: ``p, pd, q_m, qd_m``.

    q, qd (n,): positions/velocities of all joints (as on ``/joint_states``); i_arm, i_elb,
    i_mot: indices of ``armk_joint``, ``armk_elbow``, ``armk_motor`` (k = 1..3). The EE position
    and velocity are the means of the three limbs' distal-tip forward kinematics (averaging
    the three limbs divides independent encoder errors by about sqrt(3))."""
    P = params
    q, qd = np.asarray(q, float), np.asarray(qd, float)
    t1, t12 = q[i_arm], q[i_arm] + q[i_elb]
    w1, w12 = qd[i_arm], qd[i_arm] + qd[i_elb]
    c1, s1, c12, s12 = np.cos(t1), np.sin(t1), np.cos(t12), np.sin(t12)
    A = P.base_points
    p = np.array([np.mean(A[:, 0] + P.a * c1 + P.b * c12), np.mean(A[:, 1] + P.a * s1 + P.b * s12)])
    pd = np.array([np.mean(-P.a * w1 * s1 - P.b * w12 * s12), np.mean(P.a * w1 * c1 + P.b * w12 * c12)])
    return p, pd, q[i_mot].copy(), qd[i_mot].copy()


@njit(cache=True)
def _flatness_step(A, a, b, BR, Bp, X, M, g, c, p, pd, q_m, qd_m, yd, lam_d, tau, aux):
    """Compiled :meth:`SEAFlatnessController.__call__` (exact linearisation, the same three
    passes of the planar ID as the numpy route :meth:`SEAFlatnessController._call_reference`).
    c = (K, M_m, D_m, k0, k1, k2, k3, kl0, kl1); tau (3,) out; aux (7,) out: u, ud, lam.
    Returns the status (0 = ok; else the reference route raises its error)."""
    K, Mm, Dm = c[0], c[1], c[2]
    k0, k1, k2, k3, kl0, kl1 = c[3], c[4], c[5], c[6], c[7], c[8]
    for i in range(5):
        for j in range(2):
            if not np.isfinite(yd[i, j]):
                return 3
    P, TH, W, JIK, st, Mt, bb = task_space_buffers()
    # pass 1: theta, J_IK, b, M_t
    status = _task_space_1(A, a, b, BR, Bp, X, M, g, p, pd, P, TH, W, JIK, st, Mt, bb)
    if status != 0:
        return status
    u = np.empty(3)
    ud = np.empty(3)
    for l in range(3):
        u[l] = K * (q_m[l] - TH[0, 0, l, 0])
        ud[l] = K * (qd_m[l] - (JIK[0, 0, l, 0] * pd[0] + JIK[0, 0, l, 1] * pd[1]))
    pdd = np.empty(2)
    if not task_accel(JIK[0, 0], u, bb, Mt, pdd):
        return 4
    J = JIK[0, 0].copy()
    # pass 2: b1 = wd(pddd = 0) and Jd_IK at (p, pd, pdd)
    S2 = np.zeros((1, 5, 2))
    for i in range(2):
        S2[0, 0, i], S2[0, 1, i], S2[0, 2, i] = p[i], pd[i], pdd[i]
    TH2 = np.empty((1, 5, 3, 2))
    W2 = np.empty((1, 3, 2))
    JIK2 = np.empty((1, 3, 3, 2))
    st2 = np.empty(1, np.int64)
    _planar_batch(A, a, b, BR, Bp, X, M, g, S2, TH2, W2, JIK2, st2)
    if st2[0] != 0:
        return st2[0]
    r = np.empty(2)
    for i in range(2):
        r[i] = (
            (J[0, i] * ud[0] + J[1, i] * ud[1] + J[2, i] * ud[2])
            + (JIK2[0, 1, 0, i] * u[0] + JIK2[0, 1, 1, i] * u[1] + JIK2[0, 1, 2, i] * u[2])
            - W2[0, 1, i]
        )
    pddd = np.empty(2)
    if not solve(Mt, r, pddd):
        return 4
    nu = np.empty(2)
    for i in range(2):
        nu[i] = (
            yd[4, i]
            + k3 * (yd[3, i] - pddd[i])
            + k2 * (yd[2, i] - pdd[i])
            + k1 * (yd[1, i] - pd[i])
            + k0 * (yd[0, i] - p[i])
        )
    # pass 3: wdd(nu), J_IK derivatives, n derivatives, thetadd_a
    for i in range(2):
        S2[0, 3, i], S2[0, 4, i] = pddd[i], nu[i]
    _planar_batch(A, a, b, BR, Bp, X, M, g, S2, TH2, W2, JIK2, st2)
    if st2[0] != 0:
        return st2[0]
    n = np.empty((3, 3))
    _preload_n(JIK2[0], n)
    lam = n[0, 0] * u[0] + n[0, 1] * u[1] + n[0, 2] * u[2]
    lamd = (n[1, 0] * u[0] + n[1, 1] * u[1] + n[1, 2] * u[2]) + (n[0, 0] * ud[0] + n[0, 1] * ud[1] + n[0, 2] * ud[2])
    nul = lam_d[2] + kl1 * (lam_d[1] - lamd) + kl0 * (lam_d[0] - lam)
    Am = np.empty((3, 3))
    rhs = np.empty(3)
    for l in range(3):
        Am[0, l] = JIK2[0, 0, l, 0]
        Am[1, l] = JIK2[0, 0, l, 1]
        Am[2, l] = n[0, l]
    for i in range(2):
        rhs[i] = (
            W2[0, 2, i]
            - (JIK2[0, 2, 0, i] * u[0] + JIK2[0, 2, 1, i] * u[1] + JIK2[0, 2, 2, i] * u[2])
            - 2 * (JIK2[0, 1, 0, i] * ud[0] + JIK2[0, 1, 1, i] * ud[1] + JIK2[0, 1, 2, i] * ud[2])
        )
    rhs[2] = (
        nul
        - (n[2, 0] * u[0] + n[2, 1] * u[1] + n[2, 2] * u[2])
        - 2 * (n[1, 0] * ud[0] + n[1, 1] * ud[1] + n[1, 2] * ud[2])
    )
    udd = np.empty(3)
    if not solve(Am, rhs, udd):
        return 4
    for l in range(3):
        tau[l] = u[l] + Mm * (TH2[0, 2, l, 0] + udd[l] / K) + Dm * qd_m[l]
        aux[l] = u[l]
        aux[3 + l] = ud[l]
    aux[6] = lam
    return 0


class _SeaLaw(Law):
    """What the two routes of the law ``sea_flatness`` share: the task reference with
    derivatives up to snap, the constant preload set-point ``preload`` (lambda_d' = lambda_d'' =
    0) and the diagnostics (``info``: ``lambda`` (measured preload), ``lambda_d``, and
    ``labels``/``values`` for a labelled diagnostics topic; e = reference - measured)."""

    name = 'sea_flatness'
    reference = 'task'
    reference_order = 4

    @property
    def preload(self):
        return float(self.lam_d[0])

    @preload.setter
    def preload(self, v):
        self.lam_d = np.array([float(v), 0.0, 0.0])

    def _motor_out(self, motors):
        """Positions in ``motors`` (joint indices of the SEA motors) of the command joints."""
        try:
            return np.array([motors.index(i) for i in self.cmd_idx], dtype=np.int64)
        except ValueError:
            names = self.model.joint_names
            raise InputError(
                f'sea_flatness: joints {self.joints} must be motor joints {[names[i] for i in motors]}'
            ) from None

    def _output(self, tau, e, ed, lam, with_lambda=True):
        labels = [f'e_{c}' for c in self.coords] + [f'ed_{c}' for c in self.coords]
        values = [*e, *ed]
        if with_lambda:
            labels += ['lambda', 'lambda_d']
            values += [lam, self.preload]
        info = {'lambda': lam, 'lambda_d': self.preload, 'labels': labels, 'values': values}
        return LawOutput(tau[self._out], e, ed, info)


class SEAFlatnessController(_SeaLaw):
    """``tau = controller(p, pd, q_m, qd_m, yd, lam_d)`` for the planar 3RRR SEA-PKM, and the law
    ``sea_flatness`` of the control loop on robots of that class.

    ``model``: the robot (URDF + sidecar); ``params``: its :class:`Planar3RRRParams` (default
    read from the model, :func:`robot_dynamics.plants.sea.sea_params_from_model`).
    :meth:`__call__`: p, pd (2,): EE position/velocity (from the link-side encoders via the PKM
    FK, or measured); q_m, qd_m (3,): motor angles/velocities; yd (5, 2): desired EE position ..
    snap; lam_d (3,): preload set-point and its 1st/2nd derivatives (default 0). Returns tau (3,)
    [N m]. Attributes after a call: ``u``, ``ud`` (measured spring torque and rate), ``lam``.

    As a loop law (:meth:`update`): state = the link-side joints ``armk_joint``, ``armk_elbow``
    and the motor joints ``armk_motor`` (k = 1..3) of one ``/joint_states`` (all required); EE
    position/velocity = mean of the three limbs' forward kinematics
    (:func:`sea_state_from_joints`). Reference coordinates ``coords = ['x', 'y']`` (world frame;
    ``task_axes`` (0, 1) of a 3-D task reference): the EE position with its derivatives up to
    snap in ``Reference.derivs`` (rows 0..4; missing rows, e.g. a hold reference without
    ``derivs``, are zero). Command joints: the motor joints (``joints``, default the model's
    actuated joints), torques [N m]. ``preload``: the set-point of lambda = n^T u [N m].

    Safe command (stale or missing state/reference, law error): gravity is normal to the plane,
    so ``'hold'`` is ``-hold_damping * qd_m`` on the motor joints (motors brake, the spring-link
    oscillation is dissipated through them: the same as sim_node's plant hold for this robot)
    and ``'zero'`` is no torque. An exactly linearising law is never fed stale input.
    """

    def __init__(
        self,
        model,
        poles=30.0,
        lambda_poles=30.0,
        preload=0.0,
        joints=None,
        params: Planar3RRRParams | None = None,
        feedforward_only=False,
        kp=0.0,
        kd=0.0,
    ):
        from robot_dynamics.plants.sea import sea_limbs, sea_params_from_model

        super().__init__(model, joints)
        names = list(model.joint_names)
        limbs = sea_limbs(model)  # (arm, elbow, motor) per SEA, sidecar order
        self.ia, self.ie, self.im = ([names.index(lb[i]) for lb in limbs] for i in range(3))
        self._out = self._motor_out(self.im)
        params = params or sea_params_from_model(model)
        if params.damping != 0.0:
            raise InputError(
                'SEAFlatnessController: the exact linearisation assumes undamped springs (params.damping = 0)'
            )
        self.params = params
        self.pkm = Planar3RRR(params)
        self.k = pole_gains(float(poles), 4)
        self.kl = pole_gains(float(lambda_poles), 2)
        self.ff = bool(feedforward_only)
        self.kp, self.kd = float(kp), float(kd)
        self.K = params.stiffness
        self.Mm = params.motor_inertia
        self._c = np.array([self.K, self.Mm, params.motor_damping, *self.k, *self.kl])
        self._lam0 = np.zeros(3)
        self.coords = ['x', 'y']
        self.task_axes = (0, 1)
        self.required_joints = [names[i] for i in self.ia + self.ie + self.im]
        self.preload = float(preload)
        self._A, self._a, self._b = np.array(params.base_points, float), float(params.a), float(params.b)

    def _inputs(self, p, pd, q_m, qd_m, yd, lam_d):
        """The arguments of :meth:`__call__` as contiguous float arrays of their shapes."""
        f = np.float64
        shaped = [np.ascontiguousarray(x, f).reshape(n) for x, n in zip((p, pd, q_m, qd_m, yd), (2, 2, 3, 3, (5, 2)))]
        return (*shaped, self._lam0 if lam_d is None else np.ascontiguousarray(lam_d, f).reshape(3))

    def __call__(self, p, pd, q_m, qd_m, yd, lam_d=None):
        if self.ff:
            return self._call_reference(p, pd, q_m, qd_m, yd, lam_d)
        p, pd, q_m, qd_m, yd, lam_d = self._inputs(p, pd, q_m, qd_m, yd, lam_d)
        tau = np.empty(3)
        aux = np.empty(7)
        k = self.pkm
        if (
            _flatness_step(
                k.A,
                self.params.a,
                self.params.b,
                k.BR,
                k.Bp,
                k.X,
                k.M,
                k.g,
                self._c,
                p,
                pd,
                q_m,
                qd_m,
                yd,
                lam_d,
                tau,
                aux,
            )
            != 0
        ):
            return self._call_reference(p, pd, q_m, qd_m, yd, lam_d)  # raises its error
        self.u, self.ud, self.lam = aux[:3], aux[3:6], float(aux[6])
        return tau

    def _call_reference(self, p, pd, q_m, qd_m, yd, lam_d=None):
        """The numpy route of :meth:`__call__` (before the compiled :func:`_flatness_step`;
        used for ``feedforward_only`` and as the reference of the tests and the benchmark)."""
        P = self.params
        p, pd, q_m, qd_m, yd, lam_d = self._inputs(p, pd, q_m, qd_m, yd, lam_d)
        if self.ff:
            r = self.pkm.inverse_dynamics_d2(yd, lam_d)
            tha = r.theta[:, :, 0]
            qmd = tha[0] + r.u / self.K
            qdmd = tha[1] + r.ud / self.K
            return (
                r.u
                + self.Mm * (tha[2] + r.udd / self.K)
                + self.kp * (qmd - q_m)
                + self.kd * (qdmd - qd_m)
                + P.motor_damping * qd_m
            )
        # pass 1: theta, J_IK, bias b and M_t (3 samples, one compiled call)
        Mt, b, J, th = self.pkm.task_space_dynamics(p, pd, return_theta=True)
        Mt, b, J, th = Mt[0], b[0], J[0], th[0]
        u = self.K * (q_m - th[:, 0])
        ud = self.K * (qd_m - J @ pd)
        pdd = np.linalg.solve(Mt, J.T @ u - b)
        # pass 2: b1 = wd(pddd = 0) and Jd_IK at (p, pd, pdd)
        S2 = np.zeros((5, 2))
        S2[0], S2[1], S2[2] = p, pd, pdd
        r2 = self.pkm.inverse_dynamics_d2(S2)
        pddd = np.linalg.solve(Mt, J.T @ ud + r2.J_IK[1].T @ u - r2.w[1])
        k0, k1, k2, k3 = self.k
        nu = yd[4] + k3 * (yd[3] - pddd) + k2 * (yd[2] - pdd) + k1 * (yd[1] - pd) + k0 * (yd[0] - p)
        # pass 3: wdd(nu), J_IK derivatives, n derivatives, thetadd_a
        S2[3], S2[4] = pddd, nu
        r3 = self.pkm.inverse_dynamics_d2(S2)
        n = r3.n
        lam = n[0] @ u
        lamd = n[1] @ u + n[0] @ ud
        nul = lam_d[2] + self.kl[1] * (lam_d[1] - lamd) + self.kl[0] * (lam_d[0] - lam)
        A = np.vstack([r3.J_IK[0].T, n[0]])
        rhs = np.concatenate([r3.w[2] - r3.J_IK[2].T @ u - 2 * r3.J_IK[1].T @ ud, [nul - n[2] @ u - 2 * n[1] @ ud]])
        udd = np.linalg.solve(A, rhs)
        self.u, self.ud, self.lam = u, ud, lam
        return u + self.Mm * (r3.theta[2, :, 0] + udd / self.K) + P.motor_damping * qd_m

    def measured(self, state):
        """(p, pd, q_m, qd_m) of a loop :class:`~robot_dynamics.control.loop.State`: what
        :func:`sea_state_from_joints` computes, with the constant geometry cached (per state)."""
        q, qd, a, b = state.q, state.qd, self._a, self._b
        t1 = q[self.ia]
        t12 = t1 + q[self.ie]
        w1 = qd[self.ia]
        w12 = w1 + qd[self.ie]
        c1, s1, c12, s12 = np.cos(t1), np.sin(t1), np.cos(t12), np.sin(t12)
        A = self._A
        p = np.array([(A[:, 0] + a * c1 + b * c12).sum() / 3.0, (A[:, 1] + a * s1 + b * s12).sum() / 3.0])
        pd = np.array([(-a * w1 * s1 - b * w12 * s12).sum() / 3.0, (a * w1 * c1 + b * w12 * c12).sum() / 3.0])
        return p, pd, q[self.im], qd[self.im]

    def desired(self, ref):
        """yd (5, 2): the reference's EE position .. snap (:func:`reference_derivs`)."""
        return reference_derivs(ref, 2)

    def update(self, state, ref, dt=None):
        """Motor torques (command order) for ``state`` and the EE reference ``ref``."""
        p, pd, qm, qdm = self.measured(state)
        yd = self.desired(ref)
        tau = self(p, pd, qm, qdm, yd, self.lam_d)
        return self._output(tau, yd[0] - p, yd[1] - pd, float(self.lam))

    def current_coordinates(self, q):
        """The EE position at joint configuration q (to hold the current pose)."""
        return sea_state_from_joints(self.params, q, np.zeros_like(q), self.ia, self.ie, self.im)[0]

    def safe_command(self, state, mode, damping):
        if mode == 'hold' and state is not None:
            eff = -float(damping) * state.qd[self.cmd_idx]
            if np.all(np.isfinite(eff)):
                return eff
        return np.zeros(len(self.joints))


def make_sea_flatness_law(model, route='auto', **kw):
    """The ``sea_flatness`` law of a model: ``route='planar'`` the closed-form planar 3RRR law
    (:class:`SEAFlatnessController`, robots of its class only), ``'general'`` the general route
    (:class:`GeneralSEAFlatness`, any SEA-PKM), ``'auto'`` the planar one when the model is
    in its class (read by :func:`robot_dynamics.plants.sea.sea_params_from_model`), else the general."""
    if route not in ('auto', 'planar', 'general'):
        raise InputError(f'sea_flatness: route must be auto, planar or general, got {route!r}')
    if route == 'general':
        return GeneralSEAFlatness(model, **kw)
    from robot_dynamics.pkm.sea import sea_params_from_model

    try:
        sea_params_from_model(model)  # the planar class (InputError naming why not)
        return SEAFlatnessController(model, **kw)
    except InputError:
        if route == 'planar':
            raise
        return GeneralSEAFlatness(model, **kw)


class GeneralSEAFlatness(_SeaLaw):
    """``tau = law(x, xd, qm, qdm, yd, lam_d)``: the flatness-based exactly linearising SEA law
    (module docstring) for any :class:`SEAPKM` with undamped springs (three passes of the general
    2nd-order route; equal to :class:`SEAFlatnessController` on the planar 3RRR to round-off,
    tested), and the law ``sea_flatness`` of the control loop on any SEA-PKM.

    ``model``: the robot or its :class:`SEAPKM`. :meth:`__call__`: yd (5, delta): desired task
    coordinates .. snap; lam_d (3,): preload set-point and derivatives (redundant SEA only).
    Attributes after a call: ``u``, ``ud``, ``lam`` (nan without a redundant SEA) and the
    tracking errors ``e``, ``ed`` (delta,) (pose task: log(T^-1 T_d) and Ad(T^-1 T_d) V_d - V,
    body frame).

    As a loop law (:meth:`update`): state = every link-side tree joint of the platform limb
    (measured task state) and the SEA motor joints; reference coordinates ``coords`` = the
    route's task (world components of the platform frame, e.g. ``['x', 'z']``), ``task_axes``
    their indices in a 3-D task reference (positional tasks only), rows 0..4 of
    ``Reference.derivs``. Command joints: the motor joints. ``preload``: lambda set-point
    (redundant SEA only). Safe command ``'hold'``: the static spring effort of the current pose
    (u of the static ID, holds gravity) minus ``hold_damping * qd_m``; ``'zero'``: no effort.
    6-DOF platform (pose task): ``coords`` x, y, z, rx, ry, rz; reference rows as
    trajectory_node's pose profiles publish them
    (:class:`robot_dynamics.control.trajectories.PoseRows`: row 0 position + rotation vector,
    rows 1..4 the body-fixed twist and its derivatives); errors ``e = log(T^-1 T_d)`` (body
    frame, m and rad), ``ed = Ad(T^-1 T_d) V_d - V``."""

    def __init__(self, model, poles=30.0, lambda_poles=30.0, preload=0.0, joints=None):
        sea = model if isinstance(model, SEAPKM) else SEAPKM(model)
        model = sea.model
        if np.any(sea.D != 0):
            raise InputError(
                f"model '{model.name}': the exact linearisation assumes undamped springs (SEA damping = 0)"
            )
        super().__init__(model, joints)
        self.sea = sea
        self.k = pole_gains(float(poles), 4)
        self.kl = pole_gains(float(lambda_poles), 2)
        self.u = self.ud = self.e = self.ed = None
        self.lam = float('nan')
        mot = [int(i) for i in sea.i_mot]
        self._out = self._motor_out(mot)
        idx = list(sea.pkm.task_idx)
        if sea.pose:
            self.coords, idx = ['x', 'y', 'z', 'rx', 'ry', 'rz'], list(range(6))
        elif any(k >= 3 for k in idx):
            raise InputError(
                f'sea_flatness: task {sea.task} has an angular component; the law takes positional task references only'
            )
        else:
            self.coords = list(sea.task)
        self.task_axes = tuple(int(k) for k in idx)
        lb = sea.pkm.limbs[-1]
        self.required_joints = [model.joint_names[int(j)] for j in lb.tree] + [model.joint_names[i] for i in mot]
        self.preload = float(preload)

    def __call__(self, x, xd, qm, qdm, yd, lam_d=None):
        """yd: (5, delta) desired task coordinates and derivatives 1..4, or, pose task, the
        pair ``(T_d (4, 4), V_d (4, 6))`` (desired pose, body twist and derivatives 1..3);
        x, xd: (delta,) or the pose (4, 4) and body twist (6,)."""
        s, d = self.sea, self.sea.delta
        xd = np.asarray(xd, float).reshape(d)
        qm, qdm = np.asarray(qm, float), np.asarray(qdm, float)
        if s.pose:
            from robot_dynamics.spatial.lie import Ad, inv_se3, log_se3

            x = np.asarray(x, float).reshape(4, 4)
            Td, Vd = (np.asarray(a, float) for a in yd)
            E = inv_se3(x) @ Td.reshape(4, 4)
            # reference in the current body frame: pose error e and Ad(E) V_d^(k)
            yd = np.concatenate([log_se3(E)[None], Vd.reshape(4, 6) @ Ad(E).T])
            e = yd[0]
        else:
            x = np.asarray(x, float).reshape(d)
            yd = np.asarray(yd, float).reshape(5, d)
            e = yd[0] - x
        lam_d = np.zeros(3) if lam_d is None else np.asarray(lam_d, float).reshape(3)
        if not (np.all(np.isfinite(yd)) and np.all(np.isfinite(lam_d))):
            raise InputError('sea_flatness: non-finite reference')
        # pass 1: theta, J_IK, M_t, b
        Mt, b, r1 = s.task_dynamics(x, xd)
        J = r1.J_IK[0, 0]
        u = s.K * (qm - r1.theta_a[0, 0])
        ud = s.K * (qdm - J @ xd)
        xdd = np.linalg.solve(Mt, J.T @ u - b)
        # pass 2: b1 = wd(xddd = 0) and Jd_IK at (x, xd, xdd)
        D = np.zeros((1, 4, d))
        D[0, 0], D[0, 1] = xd, xdd
        r2 = s.solve_at(x[None], D)
        xddd = np.linalg.solve(Mt, J.T @ ud + r2.J_IK[0, 1].T @ u - r2.w[0, 1])
        k0, k1, k2, k3 = self.k
        nu = yd[4] + k3 * (yd[3] - xddd) + k2 * (yd[2] - xdd) + k1 * (yd[1] - xd) + k0 * e
        # pass 3: wdd(nu), J_IK derivatives, thetadd_a
        D[0, 2], D[0, 3] = xddd, nu
        r3 = s.solve_at(x[None], D)
        JJ, W = r3.J_IK[0], r3.w[0]
        rhs = W[2] - JJ[2].T @ u - 2 * JJ[1].T @ ud
        if s.n_a == d:
            udd = np.linalg.solve(JJ[0].T, rhs)
            lam = float('nan')
        else:
            n = preload_direction(JJ)
            lam = float(n[0] @ u)
            lamd = n[1] @ u + n[0] @ ud
            nul = lam_d[2] + self.kl[1] * (lam_d[1] - lamd) + self.kl[0] * (lam_d[0] - lam)
            udd = np.linalg.solve(np.vstack([JJ[0].T, n[0]]), np.concatenate([rhs, [nul - n[2] @ u - 2 * n[1] @ ud]]))
        self.u, self.ud, self.lam, self.e, self.ed = u, ud, lam, e, yd[1] - xd
        return u + s.Mm * (r3.theta_a[0, 2] + udd / s.K) + s.Dm * qdm

    def update(self, state, ref, dt=None):
        """Motor efforts (command order) for ``state`` and the task reference ``ref``."""
        s = self.sea
        x, xd = s.measure(state.q, state.qd)
        yd = reference_derivs(ref, len(self.coords))
        if s.pose:  # (pose, body twist and derivatives)
            from robot_dynamics.control.trajectories import pose_matrix

            yd = (pose_matrix(yd[0, :3], yd[0, 3:]), yd[1:5])
        tau = self(x, xd, state.q[s.i_mot], state.qd[s.i_mot], yd, self.lam_d)
        return self._output(tau, self.e, self.ed, float(self.lam), s.n_a > s.delta)

    def current_coordinates(self, q):
        x = self.sea.measure(q, np.zeros_like(q))[0]
        if self.sea.pose:  # position + rotation vector (the reference's row 0)
            from robot_dynamics.spatial.lie import log_so3

            return np.concatenate([x[:3, 3], log_so3(x[:3, :3])])
        return x

    def safe_command(self, state, mode, damping):
        if mode == 'hold' and state is not None:
            s = self.sea
            try:
                u = s.at(s.measure(state.q, state.qd)[0]).u[0]
            except RobotDynamicsError:  # outside the workspace / singular: brake only
                u = np.zeros(s.n_a)
            eff = (u - float(damping) * state.qd[s.i_mot])[self._out]
            if np.all(np.isfinite(eff)):
                return eff
        return np.zeros(len(self.joints))


_ = solve_preload  # re-exported helper used by the feed-forward path through PlanarID2
