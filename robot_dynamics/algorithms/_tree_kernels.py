"""Numba kernels of the tree recursions (private; use the functions of the public modules).

The model is passed as two packed arrays (few arguments keep the dispatch cheap):

* ``par`` (n,) int64: parent joint index (-1 = world), ``par[i] < i``
* ``geo`` (n, 28) float64 per joint: [0:9] R_fixed (row-major), [9:12] p_fixed, [12:15] axis,
  [15] type (0 revolute, 1 prismatic), [16] mass, [17:20] first moment h = m c,
  [20:28] unused/reserved ... and the inertia about the joint origin is in ``ine`` (n, 3, 3).

All spatial vectors are linear-first, expressed in the body (joint) frame for the dynamics
kernels and in the world frame for :func:`world_kinematics`. Batched kernels take 2-D (N, n)
inputs and loop over samples. Status codes: 0 ok, 1 non-finite input, 2 + k singular pivot k.
"""

import numpy as np
from numba import njit

_CACHE = True


@njit(cache=_CACHE, fastmath=False)
def _local_transform(geo, i, qi, R, p):
    """R, p (written in place) = placement of joint i in its parent frame at q_i."""
    ax0, ax1, ax2 = geo[i, 12], geo[i, 13], geo[i, 14]
    if geo[i, 15] == 0.0:
        s, c = np.sin(qi), np.cos(qi)
        t = 1.0 - c
        J00 = c + t * ax0 * ax0
        J01 = t * ax0 * ax1 - s * ax2
        J02 = t * ax0 * ax2 + s * ax1
        J10 = t * ax0 * ax1 + s * ax2
        J11 = c + t * ax1 * ax1
        J12 = t * ax1 * ax2 - s * ax0
        J20 = t * ax0 * ax2 - s * ax1
        J21 = t * ax1 * ax2 + s * ax0
        J22 = c + t * ax2 * ax2
        for r in range(3):
            f0, f1, f2 = geo[i, 3 * r], geo[i, 3 * r + 1], geo[i, 3 * r + 2]
            R[r, 0] = f0 * J00 + f1 * J10 + f2 * J20
            R[r, 1] = f0 * J01 + f1 * J11 + f2 * J21
            R[r, 2] = f0 * J02 + f1 * J12 + f2 * J22
            p[r] = geo[i, 9 + r]
    else:
        for r in range(3):
            f0, f1, f2 = geo[i, 3 * r], geo[i, 3 * r + 1], geo[i, 3 * r + 2]
            R[r, 0] = f0
            R[r, 1] = f1
            R[r, 2] = f2
            p[r] = geo[i, 9 + r] + (f0 * ax0 + f1 * ax1 + f2 * ax2) * qi


@njit(cache=_CACHE)
def _rnea_one(par, geo, ine, q, qd, qdd, fext, has_fext, grav, R, p, V, A, F, tau):
    n = q.shape[0]
    for i in range(n):
        _local_transform(geo, i, q[i], R[i], p[i])
        lam = par[i]
        if lam < 0:
            wl0 = wl1 = wl2 = 0.0
            vl0 = vl1 = vl2 = 0.0
            al0 = al1 = al2 = 0.0  # angular acceleration of the parent
            bl0, bl1, bl2 = -grav[0], -grav[1], -grav[2]  # linear: gravity as base accel.
        else:
            vl0, vl1, vl2 = V[lam, 0], V[lam, 1], V[lam, 2]
            wl0, wl1, wl2 = V[lam, 3], V[lam, 4], V[lam, 5]
            bl0, bl1, bl2 = A[lam, 0], A[lam, 1], A[lam, 2]
            al0, al1, al2 = A[lam, 3], A[lam, 4], A[lam, 5]
        p0, p1, p2 = p[i, 0], p[i, 1], p[i, 2]
        # v_parent + w_parent x p ;  a_parent + alpha_parent x p
        u0 = vl0 + wl1 * p2 - wl2 * p1
        u1 = vl1 + wl2 * p0 - wl0 * p2
        u2 = vl2 + wl0 * p1 - wl1 * p0
        c0 = bl0 + al1 * p2 - al2 * p1
        c1 = bl1 + al2 * p0 - al0 * p2
        c2 = bl2 + al0 * p1 - al1 * p0
        Ri = R[i]
        v0 = Ri[0, 0] * u0 + Ri[1, 0] * u1 + Ri[2, 0] * u2
        v1 = Ri[0, 1] * u0 + Ri[1, 1] * u1 + Ri[2, 1] * u2
        v2 = Ri[0, 2] * u0 + Ri[1, 2] * u1 + Ri[2, 2] * u2
        w0 = Ri[0, 0] * wl0 + Ri[1, 0] * wl1 + Ri[2, 0] * wl2
        w1 = Ri[0, 1] * wl0 + Ri[1, 1] * wl1 + Ri[2, 1] * wl2
        w2 = Ri[0, 2] * wl0 + Ri[1, 2] * wl1 + Ri[2, 2] * wl2
        b0 = Ri[0, 0] * c0 + Ri[1, 0] * c1 + Ri[2, 0] * c2
        b1 = Ri[0, 1] * c0 + Ri[1, 1] * c1 + Ri[2, 1] * c2
        b2 = Ri[0, 2] * c0 + Ri[1, 2] * c1 + Ri[2, 2] * c2
        e0 = Ri[0, 0] * al0 + Ri[1, 0] * al1 + Ri[2, 0] * al2
        e1 = Ri[0, 1] * al0 + Ri[1, 1] * al1 + Ri[2, 1] * al2
        e2 = Ri[0, 2] * al0 + Ri[1, 2] * al1 + Ri[2, 2] * al2
        ax0, ax1, ax2 = geo[i, 12], geo[i, 13], geo[i, 14]
        sd, sdd = qd[i], qdd[i]
        if geo[i, 15] == 0.0:
            w0 += ax0 * sd
            w1 += ax1 * sd
            w2 += ax2 * sd
            s0, s1, s2 = ax0 * sd, ax1 * sd, ax2 * sd
            # + v x (a qd) on the linear part, w x (a qd) on the angular part
            b0 += v1 * s2 - v2 * s1
            b1 += v2 * s0 - v0 * s2
            b2 += v0 * s1 - v1 * s0
            e0 += w1 * s2 - w2 * s1 + ax0 * sdd
            e1 += w2 * s0 - w0 * s2 + ax1 * sdd
            e2 += w0 * s1 - w1 * s0 + ax2 * sdd
        else:
            v0 += ax0 * sd
            v1 += ax1 * sd
            v2 += ax2 * sd
            s0, s1, s2 = ax0 * sd, ax1 * sd, ax2 * sd
            b0 += w1 * s2 - w2 * s1 + ax0 * sdd
            b1 += w2 * s0 - w0 * s2 + ax1 * sdd
            b2 += w0 * s1 - w1 * s0 + ax2 * sdd
        V[i, 0], V[i, 1], V[i, 2], V[i, 3], V[i, 4], V[i, 5] = v0, v1, v2, w0, w1, w2
        A[i, 0], A[i, 1], A[i, 2], A[i, 3], A[i, 4], A[i, 5] = b0, b1, b2, e0, e1, e2
        m = geo[i, 16]
        h0, h1, h2 = geo[i, 17], geo[i, 18], geo[i, 19]
        I = ine[i]
        # momentum: [m v - h x w ; h x v + I w]
        l0 = m * v0 - (h1 * w2 - h2 * w1)
        l1 = m * v1 - (h2 * w0 - h0 * w2)
        l2 = m * v2 - (h0 * w1 - h1 * w0)
        k0 = h1 * v2 - h2 * v1 + I[0, 0] * w0 + I[0, 1] * w1 + I[0, 2] * w2
        k1 = h2 * v0 - h0 * v2 + I[1, 0] * w0 + I[1, 1] * w1 + I[1, 2] * w2
        k2 = h0 * v1 - h1 * v0 + I[2, 0] * w0 + I[2, 1] * w1 + I[2, 2] * w2
        # I a
        f0 = m * b0 - (h1 * e2 - h2 * e1)
        f1 = m * b1 - (h2 * e0 - h0 * e2)
        f2 = m * b2 - (h0 * e1 - h1 * e0)
        n0 = h1 * b2 - h2 * b1 + I[0, 0] * e0 + I[0, 1] * e1 + I[0, 2] * e2
        n1 = h2 * b0 - h0 * b2 + I[1, 0] * e0 + I[1, 1] * e1 + I[1, 2] * e2
        n2 = h0 * b1 - h1 * b0 + I[2, 0] * e0 + I[2, 1] * e1 + I[2, 2] * e2
        # + v x* (I v) = [w x l ; v x l + w x k]
        f0 += w1 * l2 - w2 * l1
        f1 += w2 * l0 - w0 * l2
        f2 += w0 * l1 - w1 * l0
        n0 += v1 * l2 - v2 * l1 + w1 * k2 - w2 * k1
        n1 += v2 * l0 - v0 * l2 + w2 * k0 - w0 * k2
        n2 += v0 * l1 - v1 * l0 + w0 * k1 - w1 * k0
        if has_fext:
            f0 -= fext[i, 0]
            f1 -= fext[i, 1]
            f2 -= fext[i, 2]
            n0 -= fext[i, 3]
            n1 -= fext[i, 4]
            n2 -= fext[i, 5]
        F[i, 0], F[i, 1], F[i, 2], F[i, 3], F[i, 4], F[i, 5] = f0, f1, f2, n0, n1, n2
    for i in range(n - 1, -1, -1):
        ax0, ax1, ax2 = geo[i, 12], geo[i, 13], geo[i, 14]
        if geo[i, 15] == 0.0:
            tau[i] = ax0 * F[i, 3] + ax1 * F[i, 4] + ax2 * F[i, 5]
        else:
            tau[i] = ax0 * F[i, 0] + ax1 * F[i, 1] + ax2 * F[i, 2]
        lam = par[i]
        if lam >= 0:
            Ri = R[i]
            g0 = Ri[0, 0] * F[i, 0] + Ri[0, 1] * F[i, 1] + Ri[0, 2] * F[i, 2]
            g1 = Ri[1, 0] * F[i, 0] + Ri[1, 1] * F[i, 1] + Ri[1, 2] * F[i, 2]
            g2 = Ri[2, 0] * F[i, 0] + Ri[2, 1] * F[i, 1] + Ri[2, 2] * F[i, 2]
            t0 = Ri[0, 0] * F[i, 3] + Ri[0, 1] * F[i, 4] + Ri[0, 2] * F[i, 5]
            t1 = Ri[1, 0] * F[i, 3] + Ri[1, 1] * F[i, 4] + Ri[1, 2] * F[i, 5]
            t2 = Ri[2, 0] * F[i, 3] + Ri[2, 1] * F[i, 4] + Ri[2, 2] * F[i, 5]
            p0, p1, p2 = p[i, 0], p[i, 1], p[i, 2]
            F[lam, 0] += g0
            F[lam, 1] += g1
            F[lam, 2] += g2
            F[lam, 3] += t0 + p1 * g2 - p2 * g1
            F[lam, 4] += t1 + p2 * g0 - p0 * g2
            F[lam, 5] += t2 + p0 * g1 - p1 * g0


@njit(cache=_CACHE)
def _all_finite(x):
    for v in x.flat:
        if not np.isfinite(v):
            return False
    return True


@njit(cache=_CACHE)
def rnea_batch(par, geo, ine, Q, QD, QDD, FEXT, has_fext, grav, out):
    """out[k] = RNEA(Q[k], QD[k], QDD[k], FEXT[k]) for every sample k. Returns a status."""
    if not (_all_finite(Q) and _all_finite(QD) and _all_finite(QDD)):
        return 1
    if has_fext and not _all_finite(FEXT):
        return 1
    N, n = Q.shape
    R = np.empty((n, 3, 3))
    p = np.empty((n, 3))
    V = np.empty((n, 6))
    A = np.empty((n, 6))
    F = np.empty((n, 6))
    for k in range(N):
        _rnea_one(par, geo, ine, Q[k], QD[k], QDD[k], FEXT[k if has_fext else 0], has_fext, grav, R, p, V, A, F, out[k])
    return 0


@njit(cache=_CACHE)
def _crba_one(par, geo, ine, q, R, p, mc, hc, Ic, M):
    n = q.shape[0]
    for i in range(n):
        _local_transform(geo, i, q[i], R[i], p[i])
        mc[i] = geo[i, 16]
        hc[i, 0], hc[i, 1], hc[i, 2] = geo[i, 17], geo[i, 18], geo[i, 19]
        for r in range(3):
            for c in range(3):
                Ic[i, r, c] = ine[i, r, c]
    for i in range(n - 1, -1, -1):
        ax0, ax1, ax2 = geo[i, 12], geo[i, 13], geo[i, 14]
        m = mc[i]
        h0, h1, h2 = hc[i, 0], hc[i, 1], hc[i, 2]
        I = Ic[i]
        if geo[i, 15] == 0.0:
            F0 = ax1 * h2 - ax2 * h1
            F1 = ax2 * h0 - ax0 * h2
            F2 = ax0 * h1 - ax1 * h0
            F3 = I[0, 0] * ax0 + I[0, 1] * ax1 + I[0, 2] * ax2
            F4 = I[1, 0] * ax0 + I[1, 1] * ax1 + I[1, 2] * ax2
            F5 = I[2, 0] * ax0 + I[2, 1] * ax1 + I[2, 2] * ax2
            M[i, i] = ax0 * F3 + ax1 * F4 + ax2 * F5
        else:
            F0, F1, F2 = m * ax0, m * ax1, m * ax2
            F3 = h1 * ax2 - h2 * ax1
            F4 = h2 * ax0 - h0 * ax2
            F5 = h0 * ax1 - h1 * ax0
            M[i, i] = ax0 * F0 + ax1 * F1 + ax2 * F2
        j = i
        while par[j] >= 0:
            Rj = R[j]
            g0 = Rj[0, 0] * F0 + Rj[0, 1] * F1 + Rj[0, 2] * F2
            g1 = Rj[1, 0] * F0 + Rj[1, 1] * F1 + Rj[1, 2] * F2
            g2 = Rj[2, 0] * F0 + Rj[2, 1] * F1 + Rj[2, 2] * F2
            t0 = Rj[0, 0] * F3 + Rj[0, 1] * F4 + Rj[0, 2] * F5
            t1 = Rj[1, 0] * F3 + Rj[1, 1] * F4 + Rj[1, 2] * F5
            t2 = Rj[2, 0] * F3 + Rj[2, 1] * F4 + Rj[2, 2] * F5
            p0, p1, p2 = p[j, 0], p[j, 1], p[j, 2]
            F0, F1, F2 = g0, g1, g2
            F3 = t0 + p1 * g2 - p2 * g1
            F4 = t1 + p2 * g0 - p0 * g2
            F5 = t2 + p0 * g1 - p1 * g0
            j = par[j]
            bx0, bx1, bx2 = geo[j, 12], geo[j, 13], geo[j, 14]
            if geo[j, 15] == 0.0:
                val = bx0 * F3 + bx1 * F4 + bx2 * F5
            else:
                val = bx0 * F0 + bx1 * F1 + bx2 * F2
            M[i, j] = val
            M[j, i] = val
        lam = par[i]
        if lam >= 0:
            Ri = R[i]
            p0, p1, p2 = p[i, 0], p[i, 1], p[i, 2]
            r0 = Ri[0, 0] * h0 + Ri[0, 1] * h1 + Ri[0, 2] * h2
            r1 = Ri[1, 0] * h0 + Ri[1, 1] * h1 + Ri[1, 2] * h2
            r2 = Ri[2, 0] * h0 + Ri[2, 1] * h1 + Ri[2, 2] * h2
            mc[lam] += m
            hc[lam, 0] += r0 + m * p0
            hc[lam, 1] += r1 + m * p1
            hc[lam, 2] += r2 + m * p2
            # R I R^T
            T = np.empty((3, 3))
            for a in range(3):
                for b in range(3):
                    T[a, b] = Ri[a, 0] * I[0, b] + Ri[a, 1] * I[1, b] + Ri[a, 2] * I[2, b]
            pp = p0 * p0 + p1 * p1 + p2 * p2
            pr = p0 * r0 + p1 * r1 + p2 * r2
            pv = (p0, p1, p2)
            rv = (r0, r1, r2)
            for a in range(3):
                for b in range(3):
                    val = T[a, 0] * Ri[b, 0] + T[a, 1] * Ri[b, 1] + T[a, 2] * Ri[b, 2]
                    val += -m * pv[a] * pv[b] - rv[a] * pv[b] - pv[a] * rv[b]
                    if a == b:
                        val += m * pp + 2.0 * pr
                    Ic[lam, a, b] += val


@njit(cache=_CACHE)
def crba_batch(par, geo, ine, Q, out):
    """out[k] = joint-space inertia matrix M(Q[k]). Returns a status."""
    if not _all_finite(Q):
        return 1
    N, n = Q.shape
    R = np.empty((n, 3, 3))
    p = np.empty((n, 3))
    mc = np.empty(n)
    hc = np.empty((n, 3))
    Ic = np.empty((n, 3, 3))
    for k in range(N):
        _crba_one(par, geo, ine, Q[k], R, p, mc, hc, Ic, out[k])
    return 0


@njit(cache=_CACHE)
def fd_batch(par, geo, ine, Q, QD, TAU, FEXT, has_fext, grav, out, Mout, rel_tol):
    """Tree forward dynamics qdd = M^-1 (tau - b) by CRBA + RNEA bias + Cholesky.

    Returns 0, 1 (non-finite input) or 2 + k (pivot k not positive: joint k drives no
    inertia), and writes M (overwritten by its Cholesky factor) into Mout[k].
    """
    if not (_all_finite(Q) and _all_finite(QD) and _all_finite(TAU)):
        return 1
    if has_fext and not _all_finite(FEXT):
        return 1
    N, n = Q.shape
    R = np.empty((n, 3, 3))
    p = np.empty((n, 3))
    V = np.empty((n, 6))
    A = np.empty((n, 6))
    F = np.empty((n, 6))
    mc = np.empty(n)
    hc = np.empty((n, 3))
    Ic = np.empty((n, 3, 3))
    zero = np.zeros(n)
    b = np.empty(n)
    for k in range(N):
        L = Mout[k]
        _crba_one(par, geo, ine, Q[k], R, p, mc, hc, Ic, L)
        _rnea_one(par, geo, ine, Q[k], QD[k], zero, FEXT[k if has_fext else 0], has_fext, grav, R, p, V, A, F, b)
        scale = 0.0
        for i in range(n):
            if L[i, i] > scale:
                scale = L[i, i]
        j = chol_factor(L, L, rel_tol * max(scale, 1e-300))  # in place
        if j >= 0:
            return 2 + j
        for i in range(n):
            b[i] = TAU[k, i] - b[i]
        chol_solve(L, b, out[k])
    return 0


@njit(cache=_CACHE)
def chol_factor(Mat, L, tol):
    """Lower Cholesky factor of symmetric Mat into L (L may be Mat itself: in place).

    Returns -1, or the index of the first pivot that is not > tol (Mat not positive definite
    at that tolerance). Only the lower triangle of Mat is read.
    """
    n = Mat.shape[0]
    for j in range(n):
        s = Mat[j, j]
        for c in range(j):
            s -= L[j, c] * L[j, c]
        if not s > tol:
            return j
        d = np.sqrt(s)
        L[j, j] = d
        for r in range(j + 1, n):
            s2 = Mat[r, j]
            for c in range(j):
                s2 -= L[r, c] * L[j, c]
            L[r, j] = s2 / d
    return -1


@njit(cache=_CACHE)
def chol_solve(L, rhs, out):
    """Solve L L^T out = rhs (forward and back substitution with the factor of chol_factor)."""
    n = L.shape[0]
    for i in range(n):
        s = rhs[i]
        for c in range(i):
            s -= L[i, c] * out[c]
        out[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        s = out[i]
        for r in range(i + 1, n):
            s -= L[r, i] * out[r]
        out[i] = s / L[i, i]


@njit(cache=_CACHE)
def world_kinematics(par, geo, q, qd, qdd, Rw, pw, W, Vo, Al, Ao):
    """World-frame placement and motion of every joint frame (one sample).

    Writes Rw (n,3,3), pw (n,3), angular velocity W (n,3), origin velocity Vo (n,3),
    angular acceleration Al (n,3) and classical origin acceleration Ao (n,3), all in world
    coordinates (no gravity).
    """
    n = q.shape[0]
    Rl = np.empty((3, 3))
    pl = np.empty(3)
    for i in range(n):
        _local_transform(geo, i, q[i], Rl, pl)
        lam = par[i]
        if lam < 0:
            for a in range(3):
                for b in range(3):
                    Rw[i, a, b] = Rl[a, b]
                pw[i, a] = pl[a]
            wl = np.zeros(3)
            vl = np.zeros(3)
            al = np.zeros(3)
            aol = np.zeros(3)
            r = pl.copy()
        else:
            for a in range(3):
                for b in range(3):
                    Rw[i, a, b] = Rw[lam, a, 0] * Rl[0, b] + Rw[lam, a, 1] * Rl[1, b] + Rw[lam, a, 2] * Rl[2, b]
            r = np.empty(3)
            for a in range(3):
                r[a] = Rw[lam, a, 0] * pl[0] + Rw[lam, a, 1] * pl[1] + Rw[lam, a, 2] * pl[2]
                pw[i, a] = pw[lam, a] + r[a]
            wl = W[lam].copy()
            vl = Vo[lam].copy()
            al = Al[lam].copy()
            aol = Ao[lam].copy()
        ax = np.empty(3)
        for a in range(3):
            ax[a] = Rw[i, a, 0] * geo[i, 12] + Rw[i, a, 1] * geo[i, 13] + Rw[i, a, 2] * geo[i, 14]
        wxr = np.cross(wl, r)
        wxwxr = np.cross(wl, wxr)
        axr = np.cross(al, r)
        wxa = np.cross(wl, ax)
        sd, sdd = qd[i], qdd[i]
        for a in range(3):
            Vo[i, a] = vl[a] + wxr[a]
            W[i, a] = wl[a]
            Al[i, a] = al[a]
            Ao[i, a] = aol[a] + axr[a] + wxwxr[a]
        if geo[i, 15] == 0.0:
            for a in range(3):
                W[i, a] += ax[a] * sd
                Al[i, a] += wxa[a] * sd + ax[a] * sdd
        else:
            for a in range(3):
                Vo[i, a] += ax[a] * sd
                Ao[i, a] += 2.0 * wxa[a] * sd + ax[a] * sdd


@njit(cache=_CACHE)
def fk_batch(par, geo, Q, Rw, pw):
    """World placement of every joint frame for every sample: Rw (N,n,3,3), pw (N,n,3)."""
    N, n = Q.shape
    Rl = np.empty((3, 3))
    pl = np.empty(3)
    for k in range(N):
        for i in range(n):
            _local_transform(geo, i, Q[k, i], Rl, pl)
            lam = par[i]
            if lam < 0:
                for a in range(3):
                    for b in range(3):
                        Rw[k, i, a, b] = Rl[a, b]
                    pw[k, i, a] = pl[a]
            else:
                for a in range(3):
                    for b in range(3):
                        Rw[k, i, a, b] = (
                            Rw[k, lam, a, 0] * Rl[0, b] + Rw[k, lam, a, 1] * Rl[1, b] + Rw[k, lam, a, 2] * Rl[2, b]
                        )
                    pw[k, i, a] = pw[k, lam, a] + (
                        Rw[k, lam, a, 0] * pl[0] + Rw[k, lam, a, 1] * pl[1] + Rw[k, lam, a, 2] * pl[2]
                    )
