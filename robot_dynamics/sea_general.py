"""Series-elastic-actuated PKM of ANY geometry the general 2nd-order route covers (seed 004),
built from the URDF + loops sidecar: plant and flatness-based exactly linearising law.

The link side is a PKM of :mod:`robot_dynamics.pkm.general` (serial limbs, one cut joint per
limb to the platform) whose actuated joints are the SEAs' spring-output joints; the sidecar's
``actuators`` of type ``sea`` give per SEA: ``joint`` (link side), ``motor_joint`` (a rotor
joint on its own chain from the base, not part of the PKM), ``stiffness`` K [N m/rad | N/m],
``motor_inertia`` M_m [kg m^2 | kg], ``damping`` D (spring-parallel), ``motor_damping`` D_m
(default 0). Task: the world coordinates ``x`` (delta,) of the platform frame that the general
route picks (``general_pkm(model).task``), or, for a 6-DOF platform (task ``pose``), the platform
pose ``x = T`` (4, 4) with ``xd = V`` its body-fixed twist (v, w) (linear first) and ``xdd`` ..
the twist's derivatives (the general route's pose task). Dynamics::

    M_t(x) xdd + b(x, xd) = J_IK^T u,   u = K (q_m - theta_a) + D (qd_m - thetad_a)
    M_m qdd_m = tau - u - D_m qd_m

with ``w = J_IK^T u = M_t xdd + b`` the general route's task-space force: ``b = w(xdd = 0)``,
column k of ``M_t`` = ``w(xdd = e_k) - b`` (one batched call of delta + 1 samples; exact, w is
affine in xdd). Redundant actuation by one SEA (n_a = delta + 1, e.g. the planar 3RRR): the
internal preload ``lambda = n^T u`` with ``n`` the generalised cross product of the columns of
``J_IK`` (``n_i = (-1)^i det(J_IK without row i)``; for delta = 2 the ``cross(c_1, c_2)`` of
the brief), its derivatives by the multilinearity of the determinant.

Flatness law (brief A8, three passes of the general route; equal to the planar 3RRR's
:class:`robot_dynamics.control.flatness_sea.SEAFlatnessController` on that robot)::

    u = K (q_m - theta_a),  ud = K (qd_m - J_IK xd),  xdd = M_t^-1 (J_IK^T u - b)
    xddd = M_t^-1 (J_IK^T ud + Jd_IK^T u - b1),  b1 = wd(xddd = 0)
    nu = x_d'''' + k3 (x_d''' - xddd) + k2 (x_d'' - xdd) + k1 (x_d' - xd) + k0 (x_d - x)
    [J_IK^T; n^T] udd = [wdd(nu) - Jdd_IK^T u - 2 Jd_IK^T ud; nu_l - ndd^T u - 2 nd^T ud]
    tau = u + M_m (thetadd_a + K^-1 udd) + D_m qd_m

Pose task: the same equations with ``xd = V``, ``xdd = V'``, ... (w is the force conjugate to the
body twist); the plant integrates ``T' = T V^`` on SE(3) (RK4 in the exponential coordinates of
the step's start pose: ``T = T0 exp(xi)``, ``xi' = dexp_R(xi)^-1 V``, exact), and the law's
pose error is ``e = log(T^-1 T_d)`` with the reference twist derivatives carried into the
current body frame by ``Ad(T^-1 T_d)`` (``nu = Ad V_d''' + k3 (Ad V_d'' - V'') + ... + k0 e``:
the error dynamics are the linear ones up to terms of second order in the pose error).

Measured task state: the platform frame's world pose and velocity by the tree's forward
kinematics (the joints of the limb that carries the platform body in the URDF). Units SI.
"""
from __future__ import annotations

from itertools import product
from math import factorial

import numpy as np

from .errors import InputError, RobotDynamicsError
from .pkm.recursive import PKMStructureError
from .sim import Plant, StepInfo

__all__ = ['SEAPKM', 'GeneralSEAPlant', 'GeneralSEAFlatness', 'preload_direction']


def preload_direction(J):
    """n (3, n_a) and its 1st/2nd time derivatives from ``J`` (3, n_a, delta) = J_IK and its
    derivatives, n_a = delta + 1: ``n_i = (-1)^i det(J_IK with row i removed)`` (``J_IK^T n =
    0``), derivatives by the multilinearity of the determinant in the columns."""
    J = np.asarray(J, float)
    na, d = J.shape[1], J.shape[2]
    if na != d + 1:
        raise InputError(f'preload_direction: needs n_a = delta + 1, got J_IK {na} x {d}')
    n = np.zeros((3, na))
    for i in range(na):
        rows = [r for r in range(na) if r != i]
        sgn = -1.0 if i % 2 else 1.0
        for m in range(3):
            for combo in product(range(m + 1), repeat=d):
                if sum(combo) != m:
                    continue
                coef = factorial(m) / np.prod([factorial(c) for c in combo])
                B = np.stack([J[combo[k], rows, k] for k in range(d)], axis=1)
                n[m, i] += sgn * coef * np.linalg.det(B)
    return n


class SEAPKM:
    """The SEA-PKM's link side through the general route, plus the SEA data.

    ``model``: robot_dynamics Model with >= delta actuators of type ``sea`` (see the module
    docstring). Attributes: ``pkm`` (:class:`~robot_dynamics.pkm.general.GeneralPKM`),
    ``delta``, ``task``, ``K``, ``Mm``, ``D``, ``Dm`` (n_a,), ``i_link``/``i_mot`` model indices
    of the spring-output and motor joints (SEA order = ``pkm.actuated``), ``theta`` the last
    IK solution (warm start of the next call).
    """

    def __init__(self, model, platform=None, task=None):
        from .pkm.general import general_pkm
        self.model = model
        p = self.pkm = general_pkm(model, platform, task)
        seas = [a for a in model.actuators.values() if a.get('type') == 'sea']
        if not seas:
            raise InputError(f"model '{model.name}': no actuators of type 'sea' in the sidecar")
        if len(seas) > p.delta + 1:
            raise PKMStructureError(f"model '{model.name}': {len(seas)} SEAs for {p.delta} DOF: "
                                    "more than one redundant SEA (preload of rank > 1) is not covered")
        if [a['joint'] for a in seas] != list(p.actuated):
            raise PKMStructureError(f"model '{model.name}': SEA joints {[a['joint'] for a in seas]} "
                                    f"!= the PKM's actuated joints {p.actuated}")

        def num(key, default):
            v = np.array([float(a.get(key, default)) for a in seas])
            if not np.all(np.isfinite(v)):
                raise InputError(f"model '{model.name}': SEA {key} must be finite, got {v.tolist()}")
            return v
        self.K, self.Mm = num('stiffness', 30.0), num('motor_inertia', 0.02)
        self.D, self.Dm = num('damping', 0.0), num('motor_damping', 0.0)
        if np.any(self.K <= 0) or np.any(self.Mm <= 0):
            raise InputError(f"model '{model.name}': SEA stiffness and motor_inertia must be > 0")
        self.pose = p.task == 'pose'
        self.delta, self.task, self.n_a = p.delta, ['pose'] if self.pose else list(p.task), len(seas)
        self.i_link = np.array([model.joint_index(a['joint']) for a in seas], np.int64)
        self.i_mot = np.array([model.joint_index(a['motor_joint']) for a in seas], np.int64)
        self.theta = p.theta_ref.copy()
        self._fidx = model.frame_index(p.platform)

    # ------------------------------------------------------------------ route calls
    def solve(self, X, jik_derivatives=True):
        """General route at the samples ``X`` (S, 5, delta) (task coordinates and derivatives
        1..4; pose task: use :meth:`solve_at`); returns the batched GeneralID2Result."""
        X = np.asarray(X, float)
        return self.solve_at(X[:, 0], X[:, 1:], jik_derivatives)

    def solve_at(self, x, D, jik_derivatives=True):
        """General route at ``x`` (S, delta) task coordinates, or (S, 4, 4) poses (pose task),
        and ``D`` (S, 4, delta) their derivatives 1..4 (pose: the body twist and its derivatives
        1..3), the first sample from the last solution, each next one from its predecessor
        (``warm_start``: samples at one pose cost no Newton step); returns the batched
        GeneralID2Result (``jik_derivatives=False``: without the rows of J_IK', J_IK'')."""
        from .pkm.general import inverse_dynamics_d2_general
        D = np.asarray(D, float)
        r = inverse_dynamics_d2_general(self.pkm, np.asarray(x, float), D[:, 0], D[:, 1], D[:, 2],
                                        D[:, 3], theta_guess=self.theta, warm_start=True,
                                        jik_derivatives=jik_derivatives)
        self.theta = r.theta[0, 0].copy()
        return r

    def at(self, x, xd=None):
        """The route's result (batch of one) at task coordinates ``x`` (pose task: the pose
        (4, 4)) with rates ``xd`` (default rest) and zero higher derivatives: ``u`` is then the
        static (or quasi-static) spring effort, ``theta`` the IK."""
        D = np.zeros((1, 4, self.delta))
        if xd is not None:
            D[0, 0] = xd
        return self.solve_at(np.asarray(x, float)[None], D)

    def task_dynamics(self, x, xd):
        """``(M_t (d, d), b (d,), r)`` at (x, xd) (pose task: the pose (4, 4) and body twist):
        ``w = M_t xdd + b``; ``r`` the route's result of the sample xdd = 0 (theta, theta_a,
        J_IK = r.J_IK[0], ...; batch axis 0)."""
        d = self.delta
        D = np.zeros((d + 1, 4, d))
        D[:, 0] = xd
        D[np.arange(1, d + 1), 1, np.arange(d)] = 1.0
        x = np.asarray(x, float)
        r = self.solve_at(np.broadcast_to(x, (d + 1,) + x.shape), D, jik_derivatives=False)
        b = r.w[0, 0]
        Mt = (r.w[1:, 0] - b).T
        return Mt, b, r

    def measure(self, q, qd):
        """Task coordinates ``x`` and rates ``xd`` (delta,) from model coordinates: the world
        pose and velocity of the platform frame by the tree's forward kinematics (only the
        platform limb's joints enter), ``xd`` = the world components of its (v, w); pose task:
        ``x`` the pose (4, 4), ``xd`` the body-fixed twist (R^T v, R^T w)."""
        from .kinematics import _frame_state, world_state
        p = self.pkm
        R, pos, w, v = _frame_state(self.model, world_state(self.model, q, qd), self._fidx)[:4]
        T = np.concatenate([np.c_[R, pos], [[0.0, 0.0, 0.0, 1.0]]])
        if self.pose:
            return T, np.concatenate([R.T @ v, R.T @ w])
        x = p.task_value(T[None])[0]
        return x, np.concatenate([v, w])[p.task_idx]

    def tree_q(self, theta, qm):
        """Model coordinates (nq,) from stacked limb coordinates and motor angles (n_a,)."""
        q = self.pkm.tree_q(theta, np.zeros(self.model.nq))
        q[self.i_mot] = qm
        return q


class GeneralSEAPlant(Plant):
    """RK4 plant of any :class:`SEAPKM` (plant kind ``'sea'`` for robots outside the planar
    3RRR class; ``robot_dynamics.sea.SEAPlant`` is the closed-form fast path of that class and
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
        self.qm, self.qdm = np.array(qm, float), np.array(qdm, float)
        if t is not None:
            self.t = float(t)
        self.last = self._info(np.zeros(self.model.nq))

    def derivative(self, z, tau_m, T0=None):
        """d/dt of z = (x, xd, qm, qdm) under motor efforts tau_m (n_a,). Pose task: z = (xi,
        V, qm, qdm) with the pose ``T0 exp(xi)`` (``T0`` (4, 4)), d/dt xi = dexp_R(xi)^-1 V."""
        s, d, na = self.sea, self.sea.delta, self.sea.n_a
        x, xd, qm, qdm = z[:d], z[d:2 * d], z[2 * d:2 * d + na], z[2 * d + na:]
        if T0 is not None:
            from .lie import dexp_inv_se3, exp_se3
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
        T0 = self.x if pose else None              # pose: RK4 in exp coordinates about T0
        from .lie import exp_se3
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
        self.x, self.xd = (T0 if pose else z[:d]), z[d:2 * d]
        self.qm, self.qdm = z[2 * d:2 * d + na], z[2 * d + na:]
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

    @property
    def q(self):
        return self._true_state()[0].copy()

    @property
    def qd(self):
        return self._true_state()[1].copy()

    true_q, true_qd = q, qd

    def hold_command(self, damping):
        """Hold: motors brake (``-damping * qd_m``) on top of the static spring torque that
        holds the link side against gravity at the current pose (u of the static ID)."""
        s = self.sea
        try:
            u = s.at(self.x).u[0]
        except RobotDynamicsError:        # outside the workspace / singular: brake only
            u = np.zeros(s.n_a)
        tau = np.zeros(self.model.nq)
        tau[s.i_mot] = u - float(damping) * self.qdm
        return tau

    def _info(self, tau):
        n = self.model.nq
        z = np.zeros(n)
        q, qd = self._true_state()
        return StepInfo(self.t, q.copy(), qd.copy(), z, tau, 0.0, 0, 0, np.inf, 0.0, 0.0,
                        0.0, z, np.zeros(0), 0, True, 0.0, 0.0, 0.0, 1, ())


class GeneralSEAFlatness:
    """``tau = law(x, xd, qm, qdm, yd, lam_d)``: the flatness-based exactly linearising SEA law
    (module docstring) for any :class:`SEAPKM` with undamped springs. yd (5, delta): desired
    task coordinates .. snap; lam_d (3,): preload set-point and derivatives (redundant SEA
    only). Attributes after a call: ``u``, ``ud``, ``lam`` (nan without a redundant SEA) and
    the tracking errors ``e``, ``ed`` (delta,) (pose task: log(T^-1 T_d) and Ad(T^-1 T_d) V_d -
    V, body frame)."""

    def __init__(self, sea: SEAPKM, poles=30.0, lambda_poles=30.0):
        from .control.flatness_sea import pole_gains
        if np.any(sea.D != 0):
            raise InputError(f"model '{sea.model.name}': the exact linearisation assumes undamped "
                             "springs (SEA damping = 0)")
        self.sea = sea
        self.k = pole_gains(float(poles), 4)
        self.kl = pole_gains(float(lambda_poles), 2)
        self.u = self.ud = self.e = self.ed = None
        self.lam = float('nan')

    def __call__(self, x, xd, qm, qdm, yd, lam_d=None):
        """yd: (5, delta) desired task coordinates and derivatives 1..4, or, pose task, the
        pair ``(T_d (4, 4), V_d (4, 6))`` (desired pose, body twist and derivatives 1..3);
        x, xd: (delta,) or the pose (4, 4) and body twist (6,)."""
        s, d = self.sea, self.sea.delta
        xd = np.asarray(xd, float).reshape(d)
        qm, qdm = np.asarray(qm, float), np.asarray(qdm, float)
        if s.pose:
            from .lie import Ad, inv_se3, log_se3
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
        nu = (yd[4] + k3 * (yd[3] - xddd) + k2 * (yd[2] - xdd) + k1 * (yd[1] - xd)
              + k0 * e)
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
            udd = np.linalg.solve(np.vstack([JJ[0].T, n[0]]),
                                  np.concatenate([rhs, [nul - n[2] @ u - 2 * n[1] @ ud]]))
        self.u, self.ud, self.lam, self.e, self.ed = u, ud, lam, e, yd[1] - xd
        return u + s.Mm * (r3.theta_a[0, 2] + udd / s.K) + s.Dm * qdm
