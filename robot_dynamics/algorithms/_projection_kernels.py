"""Numba kernels of the projection-matrix closed-chain dynamics (private).

Use :mod:`robot_dynamics.algorithms.projection` and :mod:`robot_dynamics.plants.rigid`; these kernels evaluate, in
one compiled pass per call, everything one stage of the constrained dynamics needs:

* world kinematics of the joint frames (:func:`robot_dynamics.algorithms._tree_kernels.world_kinematics`),
* the loop-closure rows ``phi``, ``A = dphi/dq`` and ``Adot qd`` of every loop (the same row
  definitions as :func:`robot_dynamics.algorithms.constraints.constraint_terms`, which is the slow,
  readable reference the tests compare these kernels with),
* ``M`` (CRBA) and ``h`` (RNEA with qdd = 0, gravity included), kinetic and potential energy,
* the SVD of ``A`` with an ABSOLUTE rank tolerance ``eps``: ``A+``, ``P = I - A+ A``,
* the constrained forward dynamics (seed 002, eqs. 16, 22-29, 32).

The model enters as a tuple ``pack`` of arrays built once per model by
:func:`robot_dynamics.algorithms.projection._pack`::

    par (n,) int64, geo (n, 28), ine (n, 3, 3), grav (3,),
    fpar (nf,) int64 frame parent joint, fR (nf, 3, 3), fp (nf, 3) frame placement in it,
    lpf (L, 2) int64 (frame_a, frame_b) of each loop, lpr (L, 2) int64 row range of each loop,
    rkind (m,) int64 0 = position row, 1 = orientation row,
    ru (m, 3) direction n (position) or u (orientation) in frame_a, rw (m, 3) w in frame_b.
"""

import numpy as np
from numba import njit

from robot_dynamics.algorithms import _tree_kernels as K

_CACHE = True

VARIANT_MC = 0
VARIANT_MC_SYM = 1
VARIANT_MC_GAMMA = 2

VP_NONE = 0
VP_EUCLIDEAN = 1
VP_MASS = 2


@njit(cache=_CACHE)
def _cross(a, b, out):
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


@njit(cache=_CACHE)
def _frame(par, geo, Rw, pw, W, Vo, Al, Ao, fj, fRo, fpo, Rf, pf, wf, vf, alf, af, J):
    """World state of one frame (R, p, w, v, alpha, a) and its LWA Jacobian J (6, n)."""
    n = J.shape[1]
    for a in range(6):
        for c in range(n):
            J[a, c] = 0.0
    if fj < 0:
        for a in range(3):
            for b in range(3):
                Rf[a, b] = fRo[a, b]
            pf[a] = fpo[a]
            wf[a] = 0.0
            vf[a] = 0.0
            alf[a] = 0.0
            af[a] = 0.0
        return
    r0 = Rw[fj, 0, 0] * fpo[0] + Rw[fj, 0, 1] * fpo[1] + Rw[fj, 0, 2] * fpo[2]
    r1 = Rw[fj, 1, 0] * fpo[0] + Rw[fj, 1, 1] * fpo[1] + Rw[fj, 1, 2] * fpo[2]
    r2 = Rw[fj, 2, 0] * fpo[0] + Rw[fj, 2, 1] * fpo[1] + Rw[fj, 2, 2] * fpo[2]
    pf[0] = pw[fj, 0] + r0
    pf[1] = pw[fj, 1] + r1
    pf[2] = pw[fj, 2] + r2
    for a in range(3):
        for b in range(3):
            Rf[a, b] = Rw[fj, a, 0] * fRo[0, b] + Rw[fj, a, 1] * fRo[1, b] + Rw[fj, a, 2] * fRo[2, b]
    w0, w1, w2 = W[fj, 0], W[fj, 1], W[fj, 2]
    l0, l1, l2 = Al[fj, 0], Al[fj, 1], Al[fj, 2]
    x0 = w1 * r2 - w2 * r1
    x1 = w2 * r0 - w0 * r2
    x2 = w0 * r1 - w1 * r0
    wf[0], wf[1], wf[2] = w0, w1, w2
    alf[0], alf[1], alf[2] = l0, l1, l2
    vf[0] = Vo[fj, 0] + x0
    vf[1] = Vo[fj, 1] + x1
    vf[2] = Vo[fj, 2] + x2
    af[0] = Ao[fj, 0] + (l1 * r2 - l2 * r1) + (w1 * x2 - w2 * x1)
    af[1] = Ao[fj, 1] + (l2 * r0 - l0 * r2) + (w2 * x0 - w0 * x2)
    af[2] = Ao[fj, 2] + (l0 * r1 - l1 * r0) + (w0 * x1 - w1 * x0)
    j = fj
    while j >= 0:
        ax0 = Rw[j, 0, 0] * geo[j, 12] + Rw[j, 0, 1] * geo[j, 13] + Rw[j, 0, 2] * geo[j, 14]
        ax1 = Rw[j, 1, 0] * geo[j, 12] + Rw[j, 1, 1] * geo[j, 13] + Rw[j, 1, 2] * geo[j, 14]
        ax2 = Rw[j, 2, 0] * geo[j, 12] + Rw[j, 2, 1] * geo[j, 13] + Rw[j, 2, 2] * geo[j, 14]
        if geo[j, 15] == 0.0:
            d0 = pf[0] - pw[j, 0]
            d1 = pf[1] - pw[j, 1]
            d2 = pf[2] - pw[j, 2]
            J[0, j] = ax1 * d2 - ax2 * d1
            J[1, j] = ax2 * d0 - ax0 * d2
            J[2, j] = ax0 * d1 - ax1 * d0
            J[3, j] = ax0
            J[4, j] = ax1
            J[5, j] = ax2
        else:
            J[0, j] = ax0
            J[1, j] = ax1
            J[2, j] = ax2
        j = par[j]


@njit(cache=_CACHE)
def _world_kin(par, geo, q, qd, Rw, pw, W, Vo, Al, Ao):
    """World placement and motion (at qdd = 0) of every joint frame, allocation-free.

    Same quantities as :func:`robot_dynamics.algorithms._tree_kernels.world_kinematics` with qdd = 0 (the
    tests compare the loop terms built on it with the Python route): angular velocity W,
    origin velocity Vo, angular acceleration Al and classical origin acceleration Ao, all in
    world coordinates.
    """
    n = q.shape[0]
    Rl = np.empty((3, 3))
    pl = np.empty(3)
    for i in range(n):
        K._local_transform(geo, i, q[i], Rl, pl)
        lam = par[i]
        if lam < 0:
            for a in range(3):
                for b in range(3):
                    Rw[i, a, b] = Rl[a, b]
                pw[i, a] = pl[a]
            w0 = w1 = w2 = 0.0
            v0 = v1 = v2 = 0.0
            l0 = l1 = l2 = 0.0
            c0 = c1 = c2 = 0.0
            r0, r1, r2 = pl[0], pl[1], pl[2]
        else:
            for a in range(3):
                for b in range(3):
                    Rw[i, a, b] = Rw[lam, a, 0] * Rl[0, b] + Rw[lam, a, 1] * Rl[1, b] + Rw[lam, a, 2] * Rl[2, b]
            r0 = Rw[lam, 0, 0] * pl[0] + Rw[lam, 0, 1] * pl[1] + Rw[lam, 0, 2] * pl[2]
            r1 = Rw[lam, 1, 0] * pl[0] + Rw[lam, 1, 1] * pl[1] + Rw[lam, 1, 2] * pl[2]
            r2 = Rw[lam, 2, 0] * pl[0] + Rw[lam, 2, 1] * pl[1] + Rw[lam, 2, 2] * pl[2]
            pw[i, 0] = pw[lam, 0] + r0
            pw[i, 1] = pw[lam, 1] + r1
            pw[i, 2] = pw[lam, 2] + r2
            w0, w1, w2 = W[lam, 0], W[lam, 1], W[lam, 2]
            v0, v1, v2 = Vo[lam, 0], Vo[lam, 1], Vo[lam, 2]
            l0, l1, l2 = Al[lam, 0], Al[lam, 1], Al[lam, 2]
            c0, c1, c2 = Ao[lam, 0], Ao[lam, 1], Ao[lam, 2]
        ax0 = Rw[i, 0, 0] * geo[i, 12] + Rw[i, 0, 1] * geo[i, 13] + Rw[i, 0, 2] * geo[i, 14]
        ax1 = Rw[i, 1, 0] * geo[i, 12] + Rw[i, 1, 1] * geo[i, 13] + Rw[i, 1, 2] * geo[i, 14]
        ax2 = Rw[i, 2, 0] * geo[i, 12] + Rw[i, 2, 1] * geo[i, 13] + Rw[i, 2, 2] * geo[i, 14]
        # w x r, w x (w x r), alpha x r
        x0 = w1 * r2 - w2 * r1
        x1 = w2 * r0 - w0 * r2
        x2 = w0 * r1 - w1 * r0
        Vo[i, 0] = v0 + x0
        Vo[i, 1] = v1 + x1
        Vo[i, 2] = v2 + x2
        Ao[i, 0] = c0 + (l1 * r2 - l2 * r1) + (w1 * x2 - w2 * x1)
        Ao[i, 1] = c1 + (l2 * r0 - l0 * r2) + (w2 * x0 - w0 * x2)
        Ao[i, 2] = c2 + (l0 * r1 - l1 * r0) + (w0 * x1 - w1 * x0)
        W[i, 0], W[i, 1], W[i, 2] = w0, w1, w2
        Al[i, 0], Al[i, 1], Al[i, 2] = l0, l1, l2
        sd = qd[i]
        # w x a (parent's angular velocity, as in _kernels.world_kinematics)
        y0 = w1 * ax2 - w2 * ax1
        y1 = w2 * ax0 - w0 * ax2
        y2 = w0 * ax1 - w1 * ax0
        if geo[i, 15] == 0.0:
            W[i, 0] += ax0 * sd
            W[i, 1] += ax1 * sd
            W[i, 2] += ax2 * sd
            Al[i, 0] += y0 * sd
            Al[i, 1] += y1 * sd
            Al[i, 2] += y2 * sd
        else:
            Vo[i, 0] += ax0 * sd
            Vo[i, 1] += ax1 * sd
            Vo[i, 2] += ax2 * sd
            Ao[i, 0] += 2.0 * y0 * sd
            Ao[i, 1] += 2.0 * y1 * sd
            Ao[i, 2] += 2.0 * y2 * sd


@njit(cache=_CACHE)
def _constraints(par, geo, fpar, fR, fp, lpf, lpr, rkind, ru, rw, q, qd, want_A, want_bias, phi, A, bias, Rw, pw):
    """phi (m,), A (m, n) (if want_A) and Adot qd (m,) (if want_bias); fills Rw, pw.

    Row definitions: position row along n (fixed in frame_a): ``n . (p_b - p_a)``;
    orientation row: ``u . w`` (u fixed in frame_a, w in frame_b).
    """
    n = q.shape[0]
    W = np.empty((n, 3))
    Vo = np.empty((n, 3))
    Al = np.empty((n, 3))
    Ao = np.empty((n, 3))
    _world_kin(par, geo, q, qd, Rw, pw, W, Vo, Al, Ao)
    Ra = np.empty((3, 3))
    Rb = np.empty((3, 3))
    pa = np.empty(3)
    pb = np.empty(3)
    wa = np.empty(3)
    wb = np.empty(3)
    va = np.empty(3)
    vb = np.empty(3)
    ala = np.empty(3)
    alb = np.empty(3)
    aa = np.empty(3)
    ab = np.empty(3)
    Ja = np.empty((6, n))
    Jb = np.empty((6, n))
    nw = np.empty(3)
    uw = np.empty(3)
    ww = np.empty(3)
    c1 = np.empty(3)
    nd = np.empty(3)
    ndd = np.empty(3)
    c2 = np.empty(3)
    wd = np.empty(3)
    wdd = np.empty(3)
    d = np.empty(3)
    dd = np.empty(3)
    ddd = np.empty(3)
    for lp in range(lpf.shape[0]):
        fa, fb = lpf[lp, 0], lpf[lp, 1]
        _frame(par, geo, Rw, pw, W, Vo, Al, Ao, fpar[fa], fR[fa], fp[fa], Ra, pa, wa, va, ala, aa, Ja)
        _frame(par, geo, Rw, pw, W, Vo, Al, Ao, fpar[fb], fR[fb], fp[fb], Rb, pb, wb, vb, alb, ab, Jb)
        for a in range(3):
            d[a] = pb[a] - pa[a]
            dd[a] = vb[a] - va[a]
            ddd[a] = ab[a] - aa[a]
        for r in range(lpr[lp, 0], lpr[lp, 1]):
            if rkind[r] == 0:
                for a in range(3):
                    nw[a] = Ra[a, 0] * ru[r, 0] + Ra[a, 1] * ru[r, 1] + Ra[a, 2] * ru[r, 2]
                phi[r] = nw[0] * d[0] + nw[1] * d[1] + nw[2] * d[2]
                if want_A:
                    _cross(nw, d, c1)
                    for c in range(n):
                        A[r, c] = (
                            nw[0] * (Jb[0, c] - Ja[0, c])
                            + nw[1] * (Jb[1, c] - Ja[1, c])
                            + nw[2] * (Jb[2, c] - Ja[2, c])
                            + c1[0] * Ja[3, c]
                            + c1[1] * Ja[4, c]
                            + c1[2] * Ja[5, c]
                        )
                if want_bias:
                    _cross(wa, nw, nd)
                    _cross(ala, nw, c1)
                    _cross(wa, nd, c2)
                    s = 0.0
                    for a in range(3):
                        ndd[a] = c1[a] + c2[a]
                        s += ndd[a] * d[a] + 2.0 * nd[a] * dd[a] + nw[a] * ddd[a]
                    bias[r] = s
            else:
                for a in range(3):
                    uw[a] = Ra[a, 0] * ru[r, 0] + Ra[a, 1] * ru[r, 1] + Ra[a, 2] * ru[r, 2]
                    ww[a] = Rb[a, 0] * rw[r, 0] + Rb[a, 1] * rw[r, 1] + Rb[a, 2] * rw[r, 2]
                phi[r] = uw[0] * ww[0] + uw[1] * ww[1] + uw[2] * ww[2]
                if want_A:
                    _cross(uw, ww, c1)
                    for c in range(n):
                        A[r, c] = (
                            c1[0] * (Ja[3, c] - Jb[3, c])
                            + c1[1] * (Ja[4, c] - Jb[4, c])
                            + c1[2] * (Ja[5, c] - Jb[5, c])
                        )
                if want_bias:
                    _cross(wa, uw, nd)
                    _cross(wb, ww, wd)
                    _cross(ala, uw, c1)
                    _cross(wa, nd, c2)
                    for a in range(3):
                        ndd[a] = c1[a] + c2[a]
                    _cross(alb, ww, c1)
                    _cross(wb, wd, c2)
                    s = 0.0
                    for a in range(3):
                        wdd[a] = c1[a] + c2[a]
                        s += ndd[a] * ww[a] + 2.0 * nd[a] * wd[a] + uw[a] * wdd[a]
                    bias[r] = s


_finite = K._all_finite


@njit(cache=_CACHE)
def _potential(geo, grav, Rw, pw):
    """U = -g . sum_i (m_i p_i + R_i h_i) (world COM moments), zero at the world origin."""
    n = Rw.shape[0]
    U = 0.0
    for i in range(n):
        m = geo[i, 16]
        for a in range(3):
            c = m * pw[i, a] + Rw[i, a, 0] * geo[i, 17] + Rw[i, a, 1] * geo[i, 18] + Rw[i, a, 2] * geo[i, 19]
            U -= grav[a] * c
    return U


#: Below this many columns the projector uses the one-sided Jacobi SVD (no LAPACK call
#: overhead, small singular values to high relative accuracy); above it LAPACK gesdd.
JACOBI_MAX_N = 12


@njit(cache=_CACHE)
def _jacobi_svd(A):
    """One-sided (Hestenes) Jacobi SVD of A (m, n): returns (U (m,k), s (k,), Vt (k,n)),
    k = min(m, n), singular values in decreasing order (the reduced SVD)."""
    m, n = A.shape
    W = A.copy()
    V = np.eye(n)
    nrm2 = 0.0
    for k in range(m):
        for i in range(n):
            nrm2 += A[k, i] * A[k, i]
    tiny = 1e-32 * nrm2  # (eps_mach ||A||_F)^2: pairs at roundoff level are left alone
    for sweep in range(60):
        rotated = False
        for i in range(n - 1):
            for j in range(i + 1, n):
                alpha = 0.0
                beta = 0.0
                gamma = 0.0
                for k in range(m):
                    alpha += W[k, i] * W[k, i]
                    beta += W[k, j] * W[k, j]
                    gamma += W[k, i] * W[k, j]
                if abs(gamma) <= tiny or abs(gamma) <= 1e-15 * np.sqrt(alpha * beta):
                    continue
                rotated = True
                zeta = (beta - alpha) / (2.0 * gamma)
                if abs(zeta) > 1e150:
                    t = 0.5 / zeta
                else:
                    t = (1.0 if zeta >= 0.0 else -1.0) / (abs(zeta) + np.sqrt(1.0 + zeta * zeta))
                c = 1.0 / np.sqrt(1.0 + t * t)
                sn = c * t
                for k in range(m):
                    wi = W[k, i]
                    wj = W[k, j]
                    W[k, i] = c * wi - sn * wj
                    W[k, j] = sn * wi + c * wj
                for k in range(n):
                    vi = V[k, i]
                    vj = V[k, j]
                    V[k, i] = c * vi - sn * vj
                    V[k, j] = sn * vi + c * vj
        if not rotated:
            break
    sig = np.empty(n)
    for i in range(n):
        acc = 0.0
        for k in range(m):
            acc += W[k, i] * W[k, i]
        sig[i] = np.sqrt(acc)
    order = np.argsort(-sig)
    kk = min(m, n)
    U = np.zeros((m, kk))
    s = np.empty(kk)
    Vt = np.empty((kk, n))
    for r in range(kk):
        i = order[r]
        s[r] = sig[i]
        for k in range(n):
            Vt[r, k] = V[k, i]
        if sig[i] > 0.0:
            for k in range(m):
                U[k, r] = W[k, i] / sig[i]
    return U, s, Vt


@njit(cache=_CACHE)
def _svd(A):
    """Reduced SVD (U (m,k), s (k,), Vt (k,n)) of A, k = min(m, n), s decreasing."""
    m, n = A.shape
    if n <= JACOBI_MAX_N:
        return _jacobi_svd(A)
    U, s, Vt = np.linalg.svd(A, False)
    return U, s, Vt


@njit(cache=_CACHE)
def _projector(A, eps, P, Ap, s_out):
    """SVD of A (m, n) with the absolute tolerance eps -> rank; fills P (n,n), A+ (n,m), s.

    ``P = I - V1 V1^T`` and ``A+ = V1 S1^-1 U1^T`` need only the singular triplets above eps,
    so the reduced SVD suffices for every shape (m < n, m = n, m > n; m = 0 gives P = I).
    """
    m, n = A.shape
    for a in range(n):
        for b in range(n):
            P[a, b] = 1.0 if a == b else 0.0
    if m == 0:
        return 0
    U, s, Vt = _svd(A)
    k = s.shape[0]
    r = 0
    for i in range(k):
        s_out[i] = s[i]
        if s[i] > eps:
            r += 1
    for i in range(r):
        for a in range(n):
            va = Vt[i, a]
            for b in range(n):
                P[a, b] -= va * Vt[i, b]
    for a in range(n):
        for j in range(m):
            acc = 0.0
            for i in range(r):
                acc += Vt[i, a] * U[j, i] / s[i]
            Ap[a, j] = acc
    return r


@njit(cache=_CACHE)
def _is_pd(Mat, rel_tol):
    """Cholesky test of positive definiteness with pivots > rel_tol * max(diag)."""
    n = Mat.shape[0]
    scale = 0.0
    for j in range(n):
        if Mat[j, j] > scale:
            scale = Mat[j, j]
    return K.chol_factor(Mat, np.zeros((n, n)), rel_tol * max(scale, 1e-300)) < 0


@njit(cache=_CACHE)
def _solve_spd(Mat, rhs, out):
    """Cholesky solve (Mat symmetric positive definite). Returns False if not SPD."""
    n = Mat.shape[0]
    L = np.zeros((n, n))
    if K.chol_factor(Mat, L, 0.0) >= 0:
        return False
    K.chol_solve(L, rhs, out)
    return True


@njit(cache=_CACHE)
def cfd(
    par,
    geo,
    ine,
    grav,
    fpar,
    fR,
    fp,
    lpf,
    lpr,
    rkind,
    ru,
    rw,
    q,
    qd,
    tau,
    variant,
    gamma,
    eps,
    qdd,
    F,
    lam,
    P,
    s,
    M,
    h,
    phi,
    A,
    bias,
    Ap,
    Cqd,
):
    """Constrained forward dynamics at one state (seed 002, eqs. 16, 22-29, 32).

    Outputs (written in place): qdd (n,), F = tau - h - M qdd (n,), lam = A+^T F (m,),
    P (n,n), s (min(m,n),) singular values of A, M, h, phi, A, bias = Adot qd, A+ (n,m),
    Cqd = -A+ Adot qd. Returns (status, rank, kinetic energy, potential energy, gamma used);
    status 0 ok, 1 non-finite input, 2 constraint inertia matrix not invertible.
    """
    n = q.shape[0]
    m = phi.shape[0]
    for i in range(n):
        if not (np.isfinite(q[i]) and np.isfinite(qd[i]) and np.isfinite(tau[i])):
            return 1, 0, 0.0, 0.0, gamma
    Rw = np.empty((n, 3, 3))
    pw = np.empty((n, 3))
    _constraints(par, geo, fpar, fR, fp, lpf, lpr, rkind, ru, rw, q, qd, True, True, phi, A, bias, Rw, pw)
    if not (_finite(A) and _finite(bias)):
        return 1, 0, 0.0, 0.0, gamma
    U = _potential(geo, grav, Rw, pw)
    R = np.empty((n, 3, 3))
    p = np.empty((n, 3))
    mc = np.empty(n)
    hc = np.empty((n, 3))
    Ic = np.empty((n, 3, 3))
    for a in range(n):
        for b in range(n):
            M[a, b] = 0.0
    K._crba_one(par, geo, ine, q, R, p, mc, hc, Ic, M)
    V6 = np.empty((n, 6))
    A6 = np.empty((n, 6))
    F6 = np.empty((n, 6))
    fext = np.zeros((1, 6))
    zero = np.zeros(n)
    K._rnea_one(par, geo, ine, q, qd, zero, fext, False, grav, R, p, V6, A6, F6, h)
    r = _projector(A, eps, P, Ap, s)
    for a in range(n):
        acc = 0.0
        for j in range(m):
            acc -= Ap[a, j] * bias[j]
        Cqd[a] = acc
    T = 0.0
    for a in range(n):
        for b in range(n):
            T += 0.5 * qd[a] * M[a, b] * qd[b]
    # f - h, its projection, M Cqd, P M
    fh = np.empty(n)
    for a in range(n):
        fh[a] = tau[a] - h[a]
    rhs = np.empty(n)
    MC = np.empty(n)
    for a in range(n):
        acc = 0.0
        acc2 = 0.0
        for b in range(n):
            acc += P[a, b] * fh[b]
            acc2 += M[a, b] * Cqd[b]
        rhs[a] = acc
        MC[a] = acc2
    PM = np.empty((n, n))
    for a in range(n):
        for b in range(n):
            acc = 0.0
            for c in range(n):
                acc += P[a, c] * M[c, b]
            PM[a, b] = acc
    Mc = np.empty((n, n))
    g_used = gamma
    # Prop. 2: every variant needs M positive definite (z^T Mc z = z^T M z); a joint that
    # moves no inertia (massless subtree) would otherwise give a silently wrong qdd
    if not _is_pd(M, 1e-12):
        return 2, r, T, U, g_used
    if variant == VARIANT_MC:
        # (22)-(24): Mc = M + PM - MP  (MP = (PM)^T), rhs + M C qd
        for a in range(n):
            rhs[a] += MC[a]
            for b in range(n):
                Mc[a, b] = M[a, b] + PM[a, b] - PM[b, a]
        ok = True
        if r == 0 or r == n:
            ok = _solve_spd(Mc, rhs, qdd)  # Mc = M (r=0) ... or PM = 0 (r=n): Mc = M
        else:
            sol = np.linalg.solve(Mc, rhs)
            for a in range(n):
                qdd[a] = sol[a]
        if not ok:
            return 2, r, T, U, g_used
    elif variant == VARIANT_MC_SYM:
        # (26)-(28): M'c = PMP + (I-P)M(I-P) (SPD), rhs + (I - 2P) M C qd
        PMP = np.empty((n, n))
        for a in range(n):
            for b in range(n):
                acc = 0.0
                for c in range(n):
                    acc += PM[a, c] * P[c, b]
                PMP[a, b] = acc
        for a in range(n):
            for b in range(n):
                # (I-P)M(I-P) = M - PM - MP + PMP
                Mc[a, b] = 2.0 * PMP[a, b] + M[a, b] - PM[a, b] - PM[b, a]
        for a in range(n):
            acc = 0.0
            for b in range(n):
                acc += P[a, b] * MC[b]
            rhs[a] += MC[a] - 2.0 * acc
        if not _solve_spd(Mc, rhs, qdd):
            return 2, r, T, U, g_used
    else:
        # (29): M''c = PM + gamma (I - P), rhs + gamma C qd
        if not g_used > 0.0:
            g_used = np.linalg.eigvalsh(M)[n - 1]  # ||M||_2
        for a in range(n):
            rhs[a] += g_used * Cqd[a]
            for b in range(n):
                Mc[a, b] = PM[a, b] + g_used * ((1.0 if a == b else 0.0) - P[a, b])
        sol = np.linalg.solve(Mc, rhs)
        for a in range(n):
            qdd[a] = sol[a]
    for a in range(n):
        acc = fh[a]
        for b in range(n):
            acc -= M[a, b] * qdd[b]
        F[a] = acc
    for j in range(m):
        acc = 0.0
        for a in range(n):
            acc += Ap[a, j] * F[a]
        lam[j] = acc
    return 0, r, T, U, g_used


@njit(cache=_CACHE)
def cfd_qdd_s(par, geo, ine, grav, fpar, fR, fp, lpf, lpr, rkind, ru, rw, q, qd, tau, variant, gamma, eps, qdd):
    """Only qdd (allocates the other outputs).

    Returns (status, rank, the smallest singular value kept by the rank decision, 0 if none).
    """
    n = q.shape[0]
    m = rkind.shape[0]
    k = min(m, n)
    s = np.zeros(k)
    st, r, T, U, g = cfd(
        par,
        geo,
        ine,
        grav,
        fpar,
        fR,
        fp,
        lpf,
        lpr,
        rkind,
        ru,
        rw,
        q,
        qd,
        tau,
        variant,
        gamma,
        eps,
        qdd,
        np.empty(n),
        np.empty(m),
        np.empty((n, n)),
        s,
        np.empty((n, n)),
        np.empty(n),
        np.empty(m),
        np.empty((m, n)),
        np.empty(m),
        np.empty((n, m)),
        np.empty(n),
    )
    if k == 0:
        smin = np.inf
    elif r > 0:
        smin = s[r - 1]  # smallest kept singular value (structural zeros excluded)
    else:
        smin = 0.0
    return st, r, smin


@njit(cache=_CACHE)
def cfd_qdd(par, geo, ine, grav, fpar, fR, fp, lpf, lpr, rkind, ru, rw, q, qd, tau, variant, gamma, eps, qdd):
    """Only qdd. Returns (status, rank)."""
    st, r, smin = cfd_qdd_s(
        par, geo, ine, grav, fpar, fR, fp, lpf, lpr, rkind, ru, rw, q, qd, tau, variant, gamma, eps, qdd
    )
    return st, r


@njit(cache=_CACHE)
def rk4_step(
    par, geo, ine, grav, fpar, fR, fp, lpf, lpr, rkind, ru, rw, q, qd, tau, dt, variant, gamma, eps, q_out, qd_out, a0
):
    """One classical RK4 step of (q, qd)' = (qd, qdd(q, qd, tau)) with tau held (ZOH).

    a0 receives qdd at the start state. Returns (status, minimum rank over the stages).
    """
    n = q.shape[0]
    k2 = np.empty(n)
    k3 = np.empty(n)
    k4 = np.empty(n)
    qs = np.empty(n)
    vs = np.empty(n)
    st, r1 = cfd_qdd(par, geo, ine, grav, fpar, fR, fp, lpf, lpr, rkind, ru, rw, q, qd, tau, variant, gamma, eps, a0)
    if st:
        return st, r1
    h2 = 0.5 * dt
    for i in range(n):
        qs[i] = q[i] + h2 * qd[i]
        vs[i] = qd[i] + h2 * a0[i]
    v2 = vs.copy()
    st, r2 = cfd_qdd(par, geo, ine, grav, fpar, fR, fp, lpf, lpr, rkind, ru, rw, qs, vs, tau, variant, gamma, eps, k2)
    if st:
        return st, r2
    for i in range(n):
        qs[i] = q[i] + h2 * v2[i]
        vs[i] = qd[i] + h2 * k2[i]
    v3 = vs.copy()
    st, r3 = cfd_qdd(par, geo, ine, grav, fpar, fR, fp, lpf, lpr, rkind, ru, rw, qs, vs, tau, variant, gamma, eps, k3)
    if st:
        return st, r3
    for i in range(n):
        qs[i] = q[i] + dt * v3[i]
        vs[i] = qd[i] + dt * k3[i]
    v4 = vs.copy()
    st, r4 = cfd_qdd(par, geo, ine, grav, fpar, fR, fp, lpf, lpr, rkind, ru, rw, qs, vs, tau, variant, gamma, eps, k4)
    if st:
        return st, r4
    for i in range(n):
        q_out[i] = q[i] + dt / 6.0 * (qd[i] + 2.0 * v2[i] + 2.0 * v3[i] + v4[i])
        qd_out[i] = qd[i] + dt / 6.0 * (a0[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i])
    return 0, min(min(r1, r2), min(r3, r4))


# Dormand-Prince 5(4) tableau
_DP_C = np.array([0.0, 1.0 / 5, 3.0 / 10, 4.0 / 5, 8.0 / 9, 1.0, 1.0])
_DP_A = np.array(
    [
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [1.0 / 5, 0.0, 0.0, 0.0, 0.0, 0.0],
        [3.0 / 40, 9.0 / 40, 0.0, 0.0, 0.0, 0.0],
        [44.0 / 45, -56.0 / 15, 32.0 / 9, 0.0, 0.0, 0.0],
        [19372.0 / 6561, -25360.0 / 2187, 64448.0 / 6561, -212.0 / 729, 0.0, 0.0],
        [9017.0 / 3168, -355.0 / 33, 46732.0 / 5247, 49.0 / 176, -5103.0 / 18656, 0.0],
        [35.0 / 384, 0.0, 500.0 / 1113, 125.0 / 192, -2187.0 / 6784, 11.0 / 84],
    ]
)
_DP_B = np.array([35.0 / 384, 0.0, 500.0 / 1113, 125.0 / 192, -2187.0 / 6784, 11.0 / 84, 0.0])
_DP_E = np.array([71.0 / 57600, 0.0, -71.0 / 16695, 71.0 / 1920, -17253.0 / 339200, 22.0 / 525, -1.0 / 40])  # b5 - b4


@njit(cache=_CACHE)
def dopri_step(
    par,
    geo,
    ine,
    grav,
    fpar,
    fR,
    fp,
    lpf,
    lpr,
    rkind,
    ru,
    rw,
    q,
    qd,
    a0,
    tau,
    h,
    variant,
    gamma,
    eps,
    q_out,
    qd_out,
    a_out,
    err_q,
    err_v,
    dpa,
    dpb,
    dpe,
    tangent_error,
    smin_out,
):
    """One Dormand-Prince 5(4) step (FSAL: a0 = qdd at the start, a_out = qdd at the end).

    err_q, err_v receive the embedded error estimate of q and qd, projected onto the tangent
    space N(A) at the new state if ``tangent_error``; smin_out[0] is lowered to the smallest
    singular value of A met at the stages. Returns (status, min rank).
    """
    n = q.shape[0]
    KQ = np.empty((7, n))
    KV = np.empty((7, n))
    for i in range(n):
        KQ[0, i] = qd[i]
        KV[0, i] = a0[i]
    qs = np.empty(n)
    vs = np.empty(n)
    acc = np.empty(n)
    rmin = 1 << 30
    for st_ in range(1, 7):
        for i in range(n):
            sq = 0.0
            sv = 0.0
            for j in range(st_):
                sq += dpa[st_, j] * KQ[j, i]
                sv += dpa[st_, j] * KV[j, i]
            qs[i] = q[i] + h * sq
            vs[i] = qd[i] + h * sv
        st, r, sm = cfd_qdd_s(
            par, geo, ine, grav, fpar, fR, fp, lpf, lpr, rkind, ru, rw, qs, vs, tau, variant, gamma, eps, acc
        )
        if st:
            return st, r
        rmin = min(rmin, r)
        smin_out[0] = min(smin_out[0], sm)
        for i in range(n):
            KQ[st_, i] = vs[i]
            KV[st_, i] = acc[i]
    eQ = np.empty(n)
    eV = np.empty(n)
    for i in range(n):
        q_out[i] = qs[i]  # stage 7 is at the 5th-order solution (FSAL)
        qd_out[i] = vs[i]
        a_out[i] = acc[i]
        eq = 0.0
        ev = 0.0
        for j in range(7):
            eq += dpe[j] * KQ[j, i]
            ev += dpe[j] * KV[j, i]
        eQ[i] = h * eq
        eV[i] = h * ev
    # error in the tangent space N(A) at the new state: the normal components are removed by
    # the position / velocity projections that follow every accepted step
    m = rkind.shape[0]
    P = np.empty((n, n))
    if tangent_error and m > 0:
        A = np.empty((m, n))
        Rw = np.empty((n, 3, 3))
        pw = np.empty((n, 3))
        phi = np.empty(m)
        dummy = np.empty(m)
        _constraints(par, geo, fpar, fR, fp, lpf, lpr, rkind, ru, rw, qs, vs, True, False, phi, A, dummy, Rw, pw)
        _projector(A, eps, P, np.empty((n, m)), np.empty(min(m, n)))
    else:
        for a in range(n):
            for b in range(n):
                P[a, b] = 1.0 if a == b else 0.0
    for a in range(n):
        sq = 0.0
        sv = 0.0
        for b in range(n):
            sq += P[a, b] * eQ[b]
            sv += P[a, b] * eV[b]
        err_q[a] = sq
        err_v[a] = sv
    return 0, rmin


@njit(cache=_CACHE)
def nr_project(par, geo, fpar, fR, fp, lpf, lpr, rkind, ru, rw, q, free, tol, max_iter, eps, phi_out):
    """Newton-Raphson minimum-norm position projection (seed 002, eq. 39), in place on q.

    Iterates ``q <- q - A+ phi`` (columns of joints with ``free[j] == False`` zeroed, so they
    stay fixed) with the absolute-tolerance pseudo-inverse until ``||phi|| <= tol``.
    Returns (iterations, final ||phi||, rank at the last linearization, converged).
    """
    n = q.shape[0]
    m = rkind.shape[0]
    A = np.empty((m, n))
    Rw = np.empty((n, 3, 3))
    pw = np.empty((n, 3))
    P = np.empty((n, n))
    Ap = np.empty((n, m))
    s = np.empty(min(m, n))
    zero = np.zeros(n)
    dummy = np.empty(m)
    r = 0
    res = 0.0
    for it in range(max_iter + 1):
        _constraints(par, geo, fpar, fR, fp, lpf, lpr, rkind, ru, rw, q, zero, True, False, phi_out, A, dummy, Rw, pw)
        res = 0.0
        for j in range(m):
            res += phi_out[j] * phi_out[j]
        res = np.sqrt(res)
        if not np.isfinite(res):
            return it, res, r, False
        if res <= tol:
            return it, res, r, True
        if it == max_iter:
            break
        for c in range(n):
            if not free[c]:
                for j in range(m):
                    A[j, c] = 0.0
        if not _finite(A):
            return it, np.inf, r, False
        r = _projector(A, eps, P, Ap, s)
        for a in range(n):
            acc = 0.0
            for j in range(m):
                acc += Ap[a, j] * phi_out[j]
            q[a] -= acc
    return max_iter, res, r, False


@njit(cache=_CACHE)
def vel_project(par, geo, ine, fpar, fR, fp, lpf, lpr, rkind, ru, rw, q, qd, mode, eps):
    """Velocity projection onto the numerical null space N_eps(A) at q, in place on qd.

    mode 1 (euclidean): ``qd <- P qd``; mode 2 (mass): the kinetic-energy-minimal correction
    ``qd <- qd - M^-1 V1 (V1^T M^-1 V1)^-1 V1^T qd`` with V1 the right singular vectors of A
    above eps (the same rank decision as P). Returns (rank, ||A qd|| before).
    """
    n = q.shape[0]
    m = rkind.shape[0]
    if m == 0 or mode == 0:
        return 0, 0.0
    A = np.empty((m, n))
    Rw = np.empty((n, 3, 3))
    pw = np.empty((n, 3))
    phi = np.empty(m)
    dummy = np.empty(m)
    zero = np.zeros(n)
    _constraints(par, geo, fpar, fR, fp, lpf, lpr, rkind, ru, rw, q, zero, True, False, phi, A, dummy, Rw, pw)
    viol = 0.0
    for j in range(m):
        acc = 0.0
        for c in range(n):
            acc += A[j, c] * qd[c]
        viol += acc * acc
    viol = np.sqrt(viol)
    if not (_finite(A) and np.isfinite(viol)):
        return -1, np.inf
    U, s, Vt = _svd(A)
    r = 0
    for i in range(s.shape[0]):
        if s[i] > eps:
            r += 1
    if r == 0:
        return 0, viol
    # c = V1^T qd
    c = np.empty(r)
    for i in range(r):
        acc = 0.0
        for a in range(n):
            acc += Vt[i, a] * qd[a]
        c[i] = acc
    if mode == 1:
        for a in range(n):
            acc = 0.0
            for i in range(r):
                acc += Vt[i, a] * c[i]
            qd[a] -= acc
        return r, viol
    M = np.zeros((n, n))
    R = np.empty((n, 3, 3))
    p = np.empty((n, 3))
    mc = np.empty(n)
    hc = np.empty((n, 3))
    Ic = np.empty((n, 3, 3))
    K._crba_one(par, geo, ine, q, R, p, mc, hc, Ic, M)
    V1 = np.empty((n, r))
    for i in range(r):
        for a in range(n):
            V1[a, i] = Vt[i, a]
    X = np.linalg.solve(M, V1)  # M^-1 V1 (n, r)
    S = np.empty((r, r))
    for i in range(r):
        for j in range(r):
            acc = 0.0
            for a in range(n):
                acc += V1[a, i] * X[a, j]
            S[i, j] = acc
    mu = np.linalg.solve(S, c)
    for a in range(n):
        acc = 0.0
        for i in range(r):
            acc += X[a, i] * mu[i]
        qd[a] -= acc
    return r, viol


@njit(cache=_CACHE)
def end_of_step(
    par,
    geo,
    ine,
    grav,
    fpar,
    fR,
    fp,
    lpf,
    lpr,
    rkind,
    ru,
    rw,
    q,
    qd,
    tau,
    variant,
    gamma,
    eps,
    pos_proj,
    nr_tol,
    nr_max,
    vp_mode,
    a1,
    F,
    lam,
    s,
    phi,
):
    """Post-step projection and monitoring, in place on q and qd.

    NR position projection (if pos_proj and ||phi|| > nr_tol), velocity projection (vp_mode),
    then the constrained dynamics at the projected state with the held tau: a1 = qdd, F, lam,
    s = singular values of A, phi = residual. Returns (status, nr iterations, nr converged,
    ||A qd|| before the velocity projection, rank, kinetic, potential).
    """
    n = q.shape[0]
    m = rkind.shape[0]
    it = 0
    ok = True
    if pos_proj and m > 0:
        free = np.ones(n, dtype=np.bool_)
        it, res, rr, ok = nr_project(par, geo, fpar, fR, fp, lpf, lpr, rkind, ru, rw, q, free, nr_tol, nr_max, eps, phi)
    viol = 0.0
    if m > 0 and vp_mode != VP_NONE:
        rv, viol = vel_project(par, geo, ine, fpar, fR, fp, lpf, lpr, rkind, ru, rw, q, qd, vp_mode, eps)
    Aend = np.empty((m, n))
    st, r, T, U, g = cfd(
        par,
        geo,
        ine,
        grav,
        fpar,
        fR,
        fp,
        lpf,
        lpr,
        rkind,
        ru,
        rw,
        q,
        qd,
        tau,
        variant,
        gamma,
        eps,
        a1,
        F,
        lam,
        np.empty((n, n)),
        s,
        np.empty((n, n)),
        np.empty(n),
        phi,
        Aend,
        np.empty(m),
        np.empty((n, m)),
        np.empty(n),
    )
    if m > 0 and vp_mode == VP_NONE:
        for j in range(m):
            acc = 0.0
            for c in range(n):
                acc += Aend[j, c] * qd[c]
            viol += acc * acc
        viol = np.sqrt(viol)
    return st, it, ok, viol, r, T, U


@njit(cache=_CACHE)
def sim_step_rk4(
    par,
    geo,
    ine,
    grav,
    fpar,
    fR,
    fp,
    lpf,
    lpr,
    rkind,
    ru,
    rw,
    q,
    qd,
    tau,
    dt,
    variant,
    gamma,
    eps,
    pos_proj,
    nr_tol,
    nr_max,
    vp_mode,
    q_out,
    qd_out,
    a0,
    a1,
    F,
    lam,
    s,
    phi,
):
    """One simulator step in one compiled call: RK4 (tau held) + projections + monitoring.

    Returns (status, min stage rank, nr iterations, nr converged, ||A qd|| before velocity
    projection, end rank, kinetic, potential).
    """
    st, rmin = rk4_step(
        par,
        geo,
        ine,
        grav,
        fpar,
        fR,
        fp,
        lpf,
        lpr,
        rkind,
        ru,
        rw,
        q,
        qd,
        tau,
        dt,
        variant,
        gamma,
        eps,
        q_out,
        qd_out,
        a0,
    )
    if st:
        return st, rmin, 0, False, 0.0, 0, 0.0, 0.0
    st, it, ok, viol, r, T, U = end_of_step(
        par,
        geo,
        ine,
        grav,
        fpar,
        fR,
        fp,
        lpf,
        lpr,
        rkind,
        ru,
        rw,
        q_out,
        qd_out,
        tau,
        variant,
        gamma,
        eps,
        pos_proj,
        nr_tol,
        nr_max,
        vp_mode,
        a1,
        F,
        lam,
        s,
        phi,
    )
    return st, rmin, it, ok, viol, r, T, U
