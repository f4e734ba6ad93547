"""Planar 2-DOF 3RRR PKM with three series elastic actuators (seed 004 par. 4.2, brief A9).

**All numbers are the brief's assumptions [A]** (the JKU prototype's data are not public):
horizontal plane (gravity along -z, normal to the plane: no effect), base joints A_l on a
0.25 m circle at 90, 210, 330 deg, proximal links a = 0.20 m (0.25 kg, COM a/2, Izz = m a^2/12),
distal links b = 0.20 m (0.15 kg, COM b/2), EE point mass 0.10 kg at the distal tip of limb 3,
elbow branch ``theta2 = +acos((r^2 - a^2 - b^2)/(2ab))``; SEAs ``K = 30 N m/rad``, motor
inertia ``M_m = 0.02 kg m^2``, no damping.

Task coordinates: the EE point ``p = (x, y)`` in the world (IFR). This is not a constant
selection of body-fixed twist components, so the limb kinematics use the hybrid form of A9:
``J_t(l) = dp/dtheta_(l)`` (2 x 2), ``theta^(nu) = J_t^-1 (p^(nu) - p^(nu)|theta^(nu)=0)`` with
closed-form derivatives of ``e(phi) = (cos phi, sin phi)``; the limb dynamics is the generic
recursive body-fixed Newton-Euler with its 1st/2nd derivatives (the same compiled kernel as the
Gough-Stewart route), planar bodies embedded in SE(3). The EE revolute joints are cut; they
carry no variables, so ``Fbar_(l) = F_(l) = J_t(l)^-1``.

Redundant actuation (3 SEAs, 2 DOF): ``J_IK^T u = w`` leaves one internal (preload) direction;
it is fixed by the output ``lambda = n^T u`` with ``n = c1 x c2`` (columns of J_IK, so
``n^T J_IK = 0``), brief par. 2.7:
``[J_IK^T; n^T] u = [w; lambda]`` and the time derivatives of this system give ud, udd.
"""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass

import numpy as np
from numba import njit

from robot_dynamics.errors import InputError
from robot_dynamics.pkm import _recursive_kernels as RK
from robot_dynamics.pkm.recursive import PKMSingularityError
from robot_dynamics.spatial.linalg import cross, solve

__all__ = ['Planar3RRRParams', 'Planar3RRR', 'PlanarID2', 'planar_3rrr_urdf', 'planar_3rrr_sidecar']


@dataclass(frozen=True)
class Planar3RRRParams:
    """Assumed planar 3RRR SEA-PKM of the brief (SI units)."""

    base_radius: float = 0.25
    base_angles_deg: tuple = (90.0, 210.0, 330.0)
    a: float = 0.20
    b: float = 0.20
    m_proximal: float = 0.25
    m_distal: float = 0.15
    m_ee: float = 0.10
    stiffness: float = 30.0  # N m / rad
    motor_inertia: float = 0.02  # kg m^2 (reflected)
    damping: float = 0.0  # spring-parallel damper N m s / rad (0 = none)
    motor_damping: float = 0.0  # motor-side viscous N m s / rad
    gravity: tuple = (0.0, 0.0, -9.81)

    @property
    def base_points(self):
        t = np.deg2rad(np.asarray(self.base_angles_deg, float))
        return self.base_radius * np.stack([np.cos(t), np.sin(t)], -1)


PlanarID2 = namedtuple('PlanarID2', 'u ud udd theta w J_IK n')
PlanarID2.__doc__ = """Result of :meth:`Planar3RRR.inverse_dynamics_d2` (S samples):
u, ud, udd (S, 3) spring torques [N m] and derivatives (None if ``lam`` not given: then only
w is meaningful); theta (S, 5, 3, 2) limb angles (theta1, theta2 per limb) derivatives 0..4;
w (S, 3, 2) ``J_IK^T u`` and derivatives [N]; J_IK (S, 3, 3, 2) IK Jacobian
``theta_a_dot = J_IK p_dot`` and derivatives; n (S, 3, 3) preload direction and derivatives."""


@njit(cache=True)
def _e(f, out, perp):
    """Derivatives 0..4 of e(phi) = (cos, sin) given f = (phi, phi', .., phi''''); the highest
    derivative term of order k excluded when perp < 0 is not used; returns in out (5, 2)."""
    c, s = np.cos(f[0]), np.sin(f[0])
    e0, e1 = c, s
    q0, q1 = -s, c  # e_perp
    f1, f2, f3, f4 = f[1], f[2], f[3], f[4]
    out[0, 0], out[0, 1] = e0, e1
    out[1, 0], out[1, 1] = f1 * q0, f1 * q1
    out[2, 0] = f2 * q0 - f1 * f1 * e0
    out[2, 1] = f2 * q1 - f1 * f1 * e1
    out[3, 0] = f3 * q0 - 3 * f1 * f2 * e0 - f1**3 * q0
    out[3, 1] = f3 * q1 - 3 * f1 * f2 * e1 - f1**3 * q1
    out[4, 0] = f4 * q0 - (4 * f1 * f3 + 3 * f2 * f2) * e0 - 6 * f1 * f1 * f2 * q0 + f1**4 * e0
    out[4, 1] = f4 * q1 - (4 * f1 * f3 + 3 * f2 * f2) * e1 - 6 * f1 * f1 * f2 * q1 + f1**4 * e1


@njit(cache=True)
def _planar_batch(A, a, b, BR, Bp, X, M, g, P, TH, W, JIK, status):
    """P (S, 5, 2): p .. p''''. Outputs TH (S, 5, L, 2), W (S, 3, 2), JIK (S, 3, L, 2)."""
    S = P.shape[0]
    L = A.shape[0]
    th = np.zeros((5, 2))
    f1, f12 = np.zeros((2, 5))
    E1, E12 = np.empty((2, 5, 2))
    J, Jd, Jdd, F, Fd, Fdd, T1 = np.empty((7, 2, 2))
    CR = np.empty((2, 3, 3))
    Cp = np.empty((2, 3))
    Vb = np.empty((4, 2, 6))
    Q = np.empty((3, 2))
    wk = np.empty((28, 6))
    tR = np.empty((3, 3))
    tp = np.empty(3)
    for s in range(S):
        status[s] = 0
        for k in range(3):
            W[s, k, 0] = 0.0
            W[s, k, 1] = 0.0
        for l in range(L):
            dx = P[s, 0, 0] - A[l, 0]
            dy = P[s, 0, 1] - A[l, 1]
            r2 = dx * dx + dy * dy
            c2 = (r2 - a * a - b * b) / (2 * a * b)
            if not (c2 > -1.0 + 1e-9 and c2 < 1.0 - 1e-9):
                status[s] = 1
                break
            t2 = np.arccos(c2)
            t1 = np.arctan2(dy, dx) - np.arctan2(b * np.sin(t2), a + b * np.cos(t2))
            th[0, 0], th[0, 1] = t1, t2
            for k in range(1, 5):
                th[k, 0] = 0.0
                th[k, 1] = 0.0
            for nu in range(1, 5):
                f1[:] = 0.0
                f12[:] = 0.0
                for k in range(nu):  # orders < nu known, order nu zero
                    f1[k] = th[k, 0]
                    f12[k] = th[k, 0] + th[k, 1]
                _e(f1, E1, 0)
                _e(f12, E12, 0)
                if nu == 1:
                    # J_t = [a e1p + b e12p, b e12p]
                    c1, s1 = np.cos(t1), np.sin(t1)
                    c12, s12 = np.cos(t1 + t2), np.sin(t1 + t2)
                    J[0, 0] = -a * s1 - b * s12
                    J[1, 0] = a * c1 + b * c12
                    J[0, 1] = -b * s12
                    J[1, 1] = b * c12
                    det = J[0, 0] * J[1, 1] - J[0, 1] * J[1, 0]
                    if abs(det) < 1e-12:
                        status[s] = 2
                        break
                    F[0, 0] = J[1, 1] / det
                    F[0, 1] = -J[0, 1] / det
                    F[1, 0] = -J[1, 0] / det
                    F[1, 1] = J[0, 0] / det
                r0 = P[s, nu, 0] - (a * E1[nu, 0] + b * E12[nu, 0])
                r1 = P[s, nu, 1] - (a * E1[nu, 1] + b * E12[nu, 1])
                th[nu, 0] = F[0, 0] * r0 + F[0, 1] * r1
                th[nu, 1] = F[1, 0] * r0 + F[1, 1] * r1
            if status[s] != 0:
                break
            for k in range(5):
                TH[s, k, l, 0] = th[k, 0]
                TH[s, k, l, 1] = th[k, 1]
            # J_t derivatives: columns a e_perp(phi1) + b e_perp(phi12), b e_perp(phi12)
            # d/dt e_perp = -phi' e ; d2/dt2 e_perp = -phi'' e - phi'^2 e_perp
            p1d, p12d = th[1, 0], th[1, 0] + th[1, 1]
            p1dd, p12dd = th[2, 0], th[2, 0] + th[2, 1]
            c1, s1 = np.cos(th[0, 0]), np.sin(th[0, 0])
            c12, s12 = np.cos(th[0, 0] + th[0, 1]), np.sin(th[0, 0] + th[0, 1])
            for r in range(2):
                e1r = c1 if r == 0 else s1
                q1r = -s1 if r == 0 else c1
                e12r = c12 if r == 0 else s12
                q12r = -s12 if r == 0 else c12
                Jd[r, 1] = -b * p12d * e12r
                Jd[r, 0] = -a * p1d * e1r + Jd[r, 1]
                Jdd[r, 1] = -b * (p12dd * e12r + p12d * p12d * q12r)
                Jdd[r, 0] = -a * (p1dd * e1r + p1d * p1d * q1r) + Jdd[r, 1]
            # Fd = -F Jd F ; Fdd = -F (Jdd F + 2 Jd Fd)
            for r in range(2):
                for c in range(2):
                    T1[r, c] = Jd[r, 0] * F[0, c] + Jd[r, 1] * F[1, c]
            for r in range(2):
                for c in range(2):
                    Fd[r, c] = -(F[r, 0] * T1[0, c] + F[r, 1] * T1[1, c])
            for r in range(2):
                for c in range(2):
                    T1[r, c] = (
                        Jdd[r, 0] * F[0, c] + Jdd[r, 1] * F[1, c] + 2 * (Jd[r, 0] * Fd[0, c] + Jd[r, 1] * Fd[1, c])
                    )
            for r in range(2):
                for c in range(2):
                    Fdd[r, c] = -(F[r, 0] * T1[0, c] + F[r, 1] * T1[1, c])
            # limb dynamics (generic recursive NE with derivatives)
            RK.limb_fk(BR[l], Bp[l], X[l], th[0], CR, Cp, tR, tp)
            RK.limb_fk_ne_d2(BR[l], Bp[l], X[l], M[l], g, th, CR, Cp, Vb, Q, wk, tR, tp)
            for c in range(2):
                W[s, 0, c] += F[0, c] * Q[0, 0] + F[1, c] * Q[0, 1]
                W[s, 1, c] += F[0, c] * Q[1, 0] + F[1, c] * Q[1, 1] + Fd[0, c] * Q[0, 0] + Fd[1, c] * Q[0, 1]
                W[s, 2, c] += (
                    F[0, c] * Q[2, 0]
                    + F[1, c] * Q[2, 1]
                    + 2 * (Fd[0, c] * Q[1, 0] + Fd[1, c] * Q[1, 1])
                    + Fdd[0, c] * Q[0, 0]
                    + Fdd[1, c] * Q[0, 1]
                )
                JIK[s, 0, l, c] = F[0, c]
                JIK[s, 1, l, c] = Fd[0, c]
                JIK[s, 2, l, c] = Fdd[0, c]


@njit(cache=True)
def task_space_buffers():
    """Work arrays (P, TH, W, JIK, st, Mt, bb) of :func:`_task_space_1`."""
    P, TH, W, JIK = np.empty((3, 5, 2)), np.empty((3, 5, 3, 2)), np.empty((3, 3, 2)), np.empty((3, 3, 3, 2))
    return P, TH, W, JIK, np.empty(3, np.int64), np.empty((2, 2)), np.empty(2)


@njit(cache=True)
def task_accel(J, u, bb, Mt, out):
    """out (2,) = M_t^-1 (J^T u - b): the end-effector acceleration from the spring torques u
    (3,), J (3, 2) = J_IK, M_t, b of :func:`_task_space_1`. False if M_t is singular."""
    r = np.empty(2)
    for i in range(2):
        r[i] = (J[0, i] * u[0] + J[1, i] * u[1] + J[2, i] * u[2]) - bb[i]
    return solve(Mt, r, out)


@njit(cache=True)
def _task_space_1(A, a, b, BR, Bp, X, M, g, p, pd, P, TH, W, JIK, st, Mt, bb):
    """Compiled :meth:`Planar3RRR.task_space_dynamics` for one state p, pd (2,): three
    samples (pdd = 0, e_x, e_y) of :func:`_planar_batch` into the work arrays P (3, 5, 2),
    TH (3, 5, 3, 2), W (3, 3, 2), JIK (3, 3, 3, 2), st (3,); M_t -> Mt (2, 2), b -> bb (2,).
    J_IK = JIK[0, 0], theta = TH[0, 0]. Returns the status (0 = ok, 3 = non-finite input,
    else that of _planar_batch)."""
    for i in range(2):
        if not (np.isfinite(p[i]) and np.isfinite(pd[i])):
            return 3
    for s in range(3):
        for k in range(5):
            P[s, k, 0] = 0.0
            P[s, k, 1] = 0.0
        P[s, 0, 0], P[s, 0, 1] = p[0], p[1]
        P[s, 1, 0], P[s, 1, 1] = pd[0], pd[1]
    P[1, 2, 0] = 1.0
    P[2, 2, 1] = 1.0
    _planar_batch(A, a, b, BR, Bp, X, M, g, P, TH, W, JIK, st)
    for s in range(3):
        if st[s] != 0:
            return st[s]
    for i in range(2):
        bb[i] = W[0, 0, i]
        Mt[i, 0] = W[1, 0, i] - bb[i]
        Mt[i, 1] = W[2, 0, i] - bb[i]
    return 0


@njit(cache=True)
def _preload_n(JIK, n):
    """Preload direction n (3, 3) and its derivatives from JIK (3, 3, 2) of one sample (as in
    :meth:`Planar3RRR.inverse_dynamics_d2`)."""
    c10, c11, c12 = JIK[0, :, 0], JIK[1, :, 0], JIK[2, :, 0]
    c20, c21, c22 = JIK[0, :, 1], JIK[1, :, 1], JIK[2, :, 1]
    t = np.empty(3)
    cross(c10, c20, n[0])
    cross(c11, c20, n[1])
    cross(c10, c21, t)
    for i in range(3):
        n[1, i] += t[i]
    # n2 = cross(c12, c20) + 2 cross(c11, c21) + cross(c10, c22), summed left to right
    cross(c12, c20, n[2])
    cross(c11, c21, t)
    for i in range(3):
        n[2, i] += 2 * t[i]
    cross(c10, c22, t)
    for i in range(3):
        n[2, i] += t[i]


_NUMPY_PRELOAD = False
"""True: :meth:`Planar3RRR.inverse_dynamics_d2` takes the numpy route of n and (u, ud, udd)
(:func:`_preload_reference`, the route before :func:`_preload_batch`); for the reference
timings of ``bench/bench_sea.py``."""


@njit(cache=True)
def _preload_batch(JIK, W, lam, n, u, ud, udd):
    """Compiled n and :func:`solve_preload` of :meth:`Planar3RRR.inverse_dynamics_d2`:
    JIK (S, 3, 3, 2), W (S, 3, 2), lam (S, 3) -> n (S, 3, 3), u, ud, udd (S, 3). Returns the
    index + 1 of the first sample with a singular system (0 = all solved)."""
    S = JIK.shape[0]
    A = np.empty((3, 3))
    r = np.empty(3)
    for s in range(S):
        _preload_n(JIK[s], n[s])
        for l in range(3):
            A[0, l] = JIK[s, 0, l, 0]
            A[1, l] = JIK[s, 0, l, 1]
            A[2, l] = n[s, 0, l]
        r[0], r[1], r[2] = W[s, 0, 0], W[s, 0, 1], lam[s, 0]
        if not solve(A, r, u[s]):
            return s + 1
        for i in range(2):
            r[i] = W[s, 1, i] - (JIK[s, 1, 0, i] * u[s, 0] + JIK[s, 1, 1, i] * u[s, 1] + JIK[s, 1, 2, i] * u[s, 2])
        r[2] = lam[s, 1] - (n[s, 1, 0] * u[s, 0] + n[s, 1, 1] * u[s, 1] + n[s, 1, 2] * u[s, 2])
        solve(A, r, ud[s])
        for i in range(2):
            r[i] = (
                W[s, 2, i]
                - (JIK[s, 2, 0, i] * u[s, 0] + JIK[s, 2, 1, i] * u[s, 1] + JIK[s, 2, 2, i] * u[s, 2])
                - 2 * (JIK[s, 1, 0, i] * ud[s, 0] + JIK[s, 1, 1, i] * ud[s, 1] + JIK[s, 1, 2, i] * ud[s, 2])
            )
        r[2] = (
            lam[s, 2]
            - (n[s, 2, 0] * u[s, 0] + n[s, 2, 1] * u[s, 1] + n[s, 2, 2] * u[s, 2])
            - 2 * (n[s, 1, 0] * ud[s, 0] + n[s, 1, 1] * ud[s, 1] + n[s, 1, 2] * ud[s, 2])
        )
        solve(A, r, udd[s])
    return 0


class Planar3RRR:
    """Kinematics and recursive 2nd-order inverse dynamics of the planar 3RRR (SEA-)PKM.

    ``Planar3RRR(params)``; limb ``l`` joint angles ``(theta1, theta2)`` (base, elbow), the
    actuated (spring output) joint is ``theta1``. All methods take a batch of samples.
    """

    def __init__(self, params: Planar3RRRParams = Planar3RRRParams()):
        self.params = P = params
        self.A = np.ascontiguousarray(P.base_points)
        L = 3
        self.BR = np.tile(np.eye(3), (L, 2, 1, 1))
        self.Bp = np.zeros((L, 2, 3))
        self.Bp[:, 0, :2] = self.A
        self.Bp[:, 1, 0] = P.a
        self.X = np.zeros((L, 2, 6))
        self.X[:, :, 5] = 1.0
        self.M = np.zeros((L, 2, 6, 6))
        for l in range(L):
            self.M[l, 0] = _rod_inertia(P.m_proximal, P.a, 0.0, 0.0)
            self.M[l, 1] = _rod_inertia(P.m_distal, P.b, P.m_ee if l == L - 1 else 0.0, P.b)
        self.g = np.asarray(P.gravity, float)

    def ik(self, p):
        """Closed-form IK: p (..., 2) -> theta (..., 3, 2)."""
        P = np.zeros(np.shape(p)[:-1] + (5, 2))
        P[..., 0, :] = p
        return self.inverse_dynamics_d2(P.reshape(-1, 5, 2)).theta[:, 0].reshape(np.shape(p)[:-1] + (3, 2))

    def tip(self, theta):
        """Forward kinematics of each limb: theta (..., 3, 2) -> distal tips (..., 3, 2)."""
        P = self.params
        t1, t12 = theta[..., 0], theta[..., 0] + theta[..., 1]
        return self.A + P.a * np.stack([np.cos(t1), np.sin(t1)], -1) + P.b * np.stack([np.cos(t12), np.sin(t12)], -1)

    def inverse_dynamics_d2(self, P, lam=None):
        """Recursive ID with 1st/2nd time derivatives for EE motions ``P`` (S, 5, 2) or (5, 2):
        ``p, pd, pdd, pddd, pdddd`` [m, m/s, ...] in the world (IFR). ``lam`` (S, 3) or (3,):
        preload output ``lambda = n^T u`` and its 1st/2nd derivatives (default 0).
        Returns :class:`PlanarID2`."""
        P = np.asarray(P, float)
        single = P.ndim == 2
        P = np.ascontiguousarray(P.reshape(-1, 5, 2))
        if not np.all(np.isfinite(P)):
            raise InputError('planar 3RRR: non-finite motion')
        S = P.shape[0]
        TH = np.empty((S, 5, 3, 2))
        W = np.empty((S, 3, 2))
        JIK = np.empty((S, 3, 3, 2))
        st = np.empty(S, np.int64)
        pr = self.params
        _planar_batch(self.A, pr.a, pr.b, self.BR, self.Bp, self.X, self.M, self.g, P, TH, W, JIK, st)
        bad = np.nonzero(st)[0]
        if len(bad):
            raise PKMSingularityError(
                f'planar 3RRR: {len(bad)} of {S} samples outside the '
                f'workspace or singular (first: {bad[0]}, p = '
                f'{P[bad[0], 0].tolist()})',
                bad,
                st,
            )
        lam = np.zeros((S, 3)) if lam is None else np.ascontiguousarray(np.broadcast_to(np.asarray(lam, float), (S, 3)))
        n = np.empty((S, 3, 3))
        u, ud, udd = np.empty((S, 3)), np.empty((S, 3)), np.empty((S, 3))
        if _NUMPY_PRELOAD or _preload_batch(JIK, W, lam, n, u, ud, udd) != 0:
            n, u, ud, udd = _preload_reference(JIK, W, lam)  # raises LinAlgError
        res = PlanarID2(u, ud, udd, TH, W, JIK, n)
        if single:
            res = PlanarID2(*(r[0] for r in res))
        return res

    def task_space_dynamics(self, p, pd, return_theta=False):
        """``w = M_t pdd + b``: returns M_t (S, 2, 2), b (S, 2), J_IK (S, 3, 2) for p, pd (S, 2)
        (and the limb angles theta (S, 3, 2) if ``return_theta``: saves a separate IK call)."""
        p = np.atleast_2d(p)
        pd = np.atleast_2d(pd)
        S = p.shape[0]
        P = np.zeros((S, 3, 5, 2))
        P[:, :, 0] = p[:, None]
        P[:, :, 1] = pd[:, None]
        P[:, 1, 2, 0] = 1.0
        P[:, 2, 2, 1] = 1.0
        r = self.inverse_dynamics_d2(P.reshape(-1, 5, 2))
        w = r.w[:, 0].reshape(S, 3, 2)
        b = w[:, 0]
        Mt = np.stack([w[:, 1] - b, w[:, 2] - b], -1)
        if return_theta:
            return Mt, b, r.J_IK[::3, 0], r.theta[::3, 0]
        return Mt, b, r.J_IK[::3, 0]


def _preload_reference(JIK, W, lam):
    """The numpy route of the n / (u, ud, udd) part of :meth:`Planar3RRR.inverse_dynamics_d2`
    (before :func:`_preload_batch`; reference of the tests)."""
    c1, c2 = JIK[:, :, :, 0], JIK[:, :, :, 1]
    n = np.stack(
        [
            _cross(c1[:, 0], c2[:, 0]),
            _cross(c1[:, 1], c2[:, 0]) + _cross(c1[:, 0], c2[:, 1]),
            _cross(c1[:, 2], c2[:, 0]) + 2 * _cross(c1[:, 1], c2[:, 1]) + _cross(c1[:, 0], c2[:, 2]),
        ],
        1,
    )
    u, ud, udd = solve_preload(JIK, n, W, lam)
    return n, u, ud, udd


def _cross(a, b):
    """Row-wise cross product of (S, 3) arrays (np.cross costs ~70 us per call here)."""
    return np.stack(
        [
            a[:, 1] * b[:, 2] - a[:, 2] * b[:, 1],
            a[:, 2] * b[:, 0] - a[:, 0] * b[:, 2],
            a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0],
        ],
        -1,
    )


def solve_preload(JIK, n, W, lam):
    """u, ud, udd from ``[J_IK^T; n^T] u = [w; lambda]`` and its 1st/2nd time derivatives.
    JIK (S, 3, 3, 2), n (S, 3, 3), W (S, 3, 2), lam (S, 3)."""
    A = np.concatenate([np.swapaxes(JIK[:, 0], 1, 2), n[:, 0, None, :]], 1)  # (S, 3, 3)
    JdT = np.swapaxes(JIK[:, 1], 1, 2)
    JddT = np.swapaxes(JIK[:, 2], 1, 2)
    u = np.linalg.solve(A, np.concatenate([W[:, 0], lam[:, :1]], 1)[..., None])[..., 0]
    r1 = np.concatenate(
        [W[:, 1] - np.einsum('sij,sj->si', JdT, u), (lam[:, 1] - np.einsum('si,si->s', n[:, 1], u))[:, None]], 1
    )
    ud = np.linalg.solve(A, r1[..., None])[..., 0]
    r2 = np.concatenate(
        [
            W[:, 2] - np.einsum('sij,sj->si', JddT, u) - 2 * np.einsum('sij,sj->si', JdT, ud),
            (lam[:, 2] - np.einsum('si,si->s', n[:, 2], u) - 2 * np.einsum('si,si->s', n[:, 1], ud))[:, None],
        ],
        1,
    )
    udd = np.linalg.solve(A, r2[..., None])[..., 0]
    return u, ud, udd


def _rod_inertia(m, length, m_tip, tip):
    """6x6 inertia (linear first, about the body frame origin) of a uniform planar rod along x
    from 0 to ``length`` (COM length/2, Izz_c = m length^2/12) plus a point mass at (tip, 0, 0)."""
    from robot_dynamics.spatial.lie import hat

    mt = m + m_tip
    h = np.array([m * length / 2 + m_tip * tip, 0.0, 0.0])
    Izz = m * length**2 / 3 + m_tip * tip**2
    Io = np.diag([1e-12, Izz, Izz])
    Mx = np.zeros((6, 6))
    Mx[:3, :3] = mt * np.eye(3)
    Mx[:3, 3:] = -hat(h)
    Mx[3:, :3] = hat(h)
    Mx[3:, 3:] = Io
    return Mx


def planar_3rrr_urdf(params: Planar3RRRParams = Planar3RRRParams()) -> str:
    """URDF text of the assumed planar 3RRR SEA-PKM (x-y plane, world z up). Each limb has a
    motor rotor joint ``armk_motor`` (coaxial with the arm joint, rotor inertia = M_m; only
    coupled to the arm through the SEA spring of the ``sea`` plant) and the arm joints
    ``armk_joint`` (spring output, theta1), ``armk_elbow`` (theta2); limbs 1, 2 are cut at the
    EE joint (revolute loops ``armk_tip`` - ``ee``)."""
    P = params
    A = P.base_points
    o = [
        '<?xml version="1.0"?>',
        '<!-- Planar 3RRR PKM with three series elastic actuators: ASSUMED model of the seed-004',
        '     brief (par. 4.2). Generated by robot_dynamics.pkm.planar_sea.planar_3rrr_urdf(); do',
        '     not edit. Horizontal x-y plane (gravity along -z has no effect). armk_motor: motor',
        '     rotor (inertia M_m about z); armk_joint: arm (spring output); armk_elbow: distal.',
        '     The EE point mass sits on the distal link of limb 3 (frame ee). -->',
        '<robot name="planar_3rrr_sea">',
        '  <link name="base"><visual><geometry><cylinder radius="0.26" length="0.005"/></geometry></visual></link>',
    ]
    tiny = 1e-9
    for k in range(3):
        L = f'arm{k + 1}'
        xa = f'{A[k, 0]:.17g} {A[k, 1]:.17g} 0'
        Ip = P.m_proximal * P.a**2 / 12
        o += [
            f'  <link name="{L}_rotor"><inertial><origin xyz="0 0 0"/><mass value="{tiny}"/>',
            f'    <inertia ixx="{P.motor_inertia / 2!r}" ixy="0" ixz="0" iyy="{P.motor_inertia / 2!r}" iyz="0" izz="{P.motor_inertia!r}"/></inertial>',
            '    <visual><geometry><cylinder radius="0.02" length="0.02"/></geometry></visual></link>',
            f'  <joint name="{L}_motor" type="continuous"><parent link="base"/><child link="{L}_rotor"/>',
            f'    <origin xyz="{xa}" rpy="0 0 0"/><axis xyz="0 0 1"/><limit effort="5" velocity="50"/></joint>',
            f'  <link name="{L}_proximal"><inertial><origin xyz="{P.a / 2!r} 0 0"/><mass value="{P.m_proximal!r}"/>',
            f'    <inertia ixx="{tiny}" ixy="0" ixz="0" iyy="{Ip!r}" iyz="0" izz="{Ip!r}"/></inertial>',
            f'    <visual><origin xyz="{P.a / 2!r} 0 0.02" rpy="0 1.5707963267948966 0"/><geometry><cylinder radius="0.008" length="{P.a!r}"/></geometry></visual></link>',
            f'  <joint name="{L}_joint" type="continuous"><parent link="base"/><child link="{L}_proximal"/>',
            f'    <origin xyz="{xa}" rpy="0 0 0"/><axis xyz="0 0 1"/><limit effort="5" velocity="50"/></joint>',
        ]
        md = P.m_distal + (P.m_ee if k == 2 else 0.0)
        cx = (P.m_distal * P.b / 2 + (P.m_ee * P.b if k == 2 else 0.0)) / md
        Id = P.m_distal * P.b**2 / 12 + P.m_distal * (P.b / 2 - cx) ** 2 + (P.m_ee * (P.b - cx) ** 2 if k == 2 else 0.0)
        o += [
            f'  <link name="{L}_distal"><inertial><origin xyz="{cx!r} 0 0"/><mass value="{md!r}"/>',
            f'    <inertia ixx="{tiny}" ixy="0" ixz="0" iyy="{Id!r}" iyz="0" izz="{Id!r}"/></inertial>',
            f'    <visual><origin xyz="{P.b / 2!r} 0 0.04" rpy="0 1.5707963267948966 0"/><geometry><cylinder radius="0.006" length="{P.b!r}"/></geometry></visual></link>',
            f'  <joint name="{L}_elbow" type="continuous"><parent link="{L}_proximal"/><child link="{L}_distal"/>',
            f'    <origin xyz="{P.a!r} 0 0" rpy="0 0 0"/><axis xyz="0 0 1"/></joint>',
            f'  <link name="{"ee" if k == 2 else L + "_tip"}"/>',
            f'  <joint name="{L}_tip_fixed" type="fixed"><parent link="{L}_distal"/>'
            f'<child link="{"ee" if k == 2 else L + "_tip"}"/>',
            f'    <origin xyz="{P.b!r} 0 0" rpy="0 0 0"/></joint>',
        ]
    o.append('</robot>')
    return '\n'.join(o) + '\n'


def planar_3rrr_sidecar(params: Planar3RRRParams = Planar3RRRParams(), p_ref=(-0.05, 0.0)) -> str:
    """Loop sidecar of :func:`planar_3rrr_urdf`, reference configuration = EE at ``p_ref``
    (P1 of the pick-and-place) with the motors at the spring-relaxed positions."""
    P = params
    th = Planar3RRR(P).ik(np.asarray(p_ref, float))
    lines = [
        '# Loop closures and SEAs of urdf/planar_3rrr_sea.urdf (format robot_dynamics/parsers/sidecar/1).',
        '# Generated by robot_dynamics.pkm.planar_sea.planar_3rrr_sidecar(); do not edit.',
        'format: robot_dynamics/parsers/sidecar/1',
        'description: >',
        '  Planar 3RRR PKM with three SEAs (ASSUMED model of the seed-004 brief). Limbs 1 and 2 are',
        '  cut at the EE revolute joint (5 rows each, 2 independent per loop in the plane). The',
        '  motor joints armk_motor are the actuated (commanded) coordinates; each drives its arm',
        '  joint through a torsion spring (actuators block; plant kind "sea").',
        'loops:',
    ]
    for k in (1, 2):
        lines.append(f'  - {{name: ee_joint{k}, type: revolute, frame_a: arm{k}_tip, frame_b: ee, axis: [0, 0, 1]}}')
    lines += [
        'actuated: [arm1_motor, arm2_motor, arm3_motor]',
        'independent: [arm1_motor, arm2_motor, arm3_motor]',
        'reference_configuration:',
    ]
    for k in range(3):
        lines += [
            f'  arm{k + 1}_motor: {float(th[k, 0])!r}',
            f'  arm{k + 1}_joint: {float(th[k, 0])!r}',
            f'  arm{k + 1}_elbow: {float(th[k, 1])!r}',
        ]
    lines += ['submechanisms: []', 'actuators:']
    for k in range(3):
        lines.append(
            f'  sea{k + 1}: {{type: sea, joint: arm{k + 1}_joint, motor_joint: arm{k + 1}_motor, '
            f'stiffness: {P.stiffness!r}, motor_inertia: {P.motor_inertia!r}, '
            f'damping: {P.damping!r}}}'
        )
    return '\n'.join(lines) + '\n'
