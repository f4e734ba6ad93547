"""Numba kernels of the projection-matrix closed-chain dynamics (private).

Use :mod:`robot_dynamics.algorithms.projection` and :mod:`robot_dynamics.plants.rigid`; these kernels evaluate, in
one compiled pass per call, everything one stage of the constrained dynamics needs:

* world kinematics of the joint frames (:func:`robot_dynamics.algorithms._tree_kernels.world_kinematics`),
* the loop-closure rows ``phi``, ``A = dphi/dq`` and ``Adot qd`` of every loop (the same row
  definitions as :func:`robot_dynamics.algorithms.constraints.constraint_terms`, which is the slow,
  readable reference the tests compare these kernels with),
* ``M`` (CRBA) and ``h`` (RNEA with qdd = 0, gravity included), kinetic and potential energy,
* the SVD of ``A`` with an ABSOLUTE rank tolerance ``eps``: ``A+``, ``P = I - A+ A``,
* the constrained forward dynamics (seed 002, eqs. 16, 22-29, 32); for variant 'Mc', wherever
  A (m, n) is certified to have full row rank m at eps (:func:`schur_cfd`), by the Schur
  complement of the KKT system on the tree-sparse L^T D L factors of M instead of the SVD
  (the same qdd, F, lam, P, A+, sigma; ``VARIANT_MC_SVD`` always takes the SVD).

The model enters as a tuple ``pack`` of arrays built once per model by
:func:`robot_dynamics.algorithms.projection._pack`::

    par (n,) int64, geo (n, 28), ine (n, 3, 3), grav (3,),
    fpar (nf,) int64 frame parent joint, fR (nf, 3, 3), fp (nf, 3) frame placement in it,
    lpf (L, 2) int64 (frame_a, frame_b) of each loop, lpr (L, 2) int64 row range of each loop,
    rkind (m,) int64 0 = position row, 1 = orientation row, 2 = joint coupling row,
    ru (m, 3) direction n (position) or u (orientation) in frame_a, rw (m, 3) w in frame_b;
    a coupling row ``q_j - (multiplier q_i + offset)`` (a loop of this one row) stores
    ru = (v_j, v_i, q_j) and rw = (q_i, multiplier, offset) (indices as floats).
"""

import numpy as np
from numba import njit, prange

from robot_dynamics.algorithms import _tree_kernels as K
from robot_dynamics.spatial.linalg import (
    cross,
    dot3,
    is_pd,
    matmul,
    matvec,
    matvec3,
    chol_factor,
    chol_solve,
    householder_qr,
    ltdl_factor,
    ltdl_solve_l,
    ltdl_solve_lt,
    solve_spd,
    svd,
    svd_projector,
    svd_rank,
    upper_tri_inverse,
    urv,
    urv_pinv_apply,
)

_CACHE = True

VARIANT_MC = 0
VARIANT_MC_SYM = 1
VARIANT_MC_GAMMA = 2
VARIANT_MC_SVD = 3  # 'Mc' through the SVD projector at every call (the reference of schur_cfd)

VP_NONE = 0
VP_EUCLIDEAN = 1
VP_MASS = 2


@njit(cache=_CACHE)
def loop_row(kind, u, w, FR, FS, FJ, want_A, want_bias, r, phi, A, bias, t):
    """Row r of one loop from the world states of its cut frames a, b (0, 1): FR (2, 3, 3),
    FS (2, 5, 3) and FJ (2, 6, n) of :func:`robot_dynamics.algorithms._tree_kernels.frame_state`.

    kind 0, position row along u (fixed in frame a): ``phi = u . (p_b - p_a)``; kind 1,
    orientation row: ``phi = u . w`` (u fixed in frame a, w in frame b). Writes phi[r],
    A[r] = dphi/dq (if want_A) and bias[r] = Adot qd (if want_bias); t (9, 3) scratch.
    """
    n = A.shape[1]
    Sa, Sb, Ja, Jb = FS[0], FS[1], FJ[0], FJ[1]
    wa, ala = Sa[1], Sa[3]
    nw, ww, c1, nd, ndd, c2, wd, wdd, d = t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8]
    matvec3(FR[0], u, nw)
    if kind == 0:
        for a in range(3):
            d[a] = Sb[0, a] - Sa[0, a]
        phi[r] = dot3(nw, d)
        if want_A:
            cross(nw, d, c1)
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
            cross(wa, nw, nd)
            cross(ala, nw, c1)
            cross(wa, nd, c2)
            s = 0.0
            for a in range(3):
                ndd[a] = c1[a] + c2[a]
                s += ndd[a] * d[a] + 2.0 * nd[a] * (Sb[2, a] - Sa[2, a]) + nw[a] * (Sb[4, a] - Sa[4, a])
            bias[r] = s
        return
    wb, alb = Sb[1], Sb[3]
    matvec3(FR[1], w, ww)
    phi[r] = dot3(nw, ww)
    if want_A:
        cross(nw, ww, c1)
        for c in range(n):
            A[r, c] = c1[0] * (Ja[3, c] - Jb[3, c]) + c1[1] * (Ja[4, c] - Jb[4, c]) + c1[2] * (Ja[5, c] - Jb[5, c])
    if want_bias:
        cross(wa, nw, nd)
        cross(wb, ww, wd)
        cross(ala, nw, c1)
        cross(wa, nd, c2)
        for a in range(3):
            ndd[a] = c1[a] + c2[a]
        cross(alb, ww, c1)
        cross(wb, wd, c2)
        s = 0.0
        for a in range(3):
            wdd[a] = c1[a] + c2[a]
            s += ndd[a] * ww[a] + 2.0 * nd[a] * wd[a] + nw[a] * wdd[a]
        bias[r] = s


@njit(cache=_CACHE)
def _constraints(kin, q, qd, want_A, want_bias, phi, A, bias, Rw, pw):
    """phi (m,), A (m, n) (if want_A) and Adot qd (m,) (if want_bias); fills Rw, pw.

    Row definitions (:func:`loop_row`): position row along n (fixed in frame_a):
    ``n . (p_b - p_a)``; orientation row: ``u . w`` (u fixed in frame_a, w in frame_b);
    coupling row: ``q_j - (multiplier q_i + offset)``, A row ``e_j - multiplier e_i``, bias 0.
    """
    n = kin[1].shape[0]
    Rx, px, W, Vo, Al, Ao = K.world_buffers(n)
    K.world_kinematics(kin[0], kin[1], q, qd, np.zeros(n), Rw, pw, W, Vo, Al, Ao)
    _loop_rows(kin, q, want_A, want_bias, phi, A, bias, Rw, pw, W, Vo, Al, Ao)


@njit(cache=_CACHE)
def _loop_rows(kin, q, want_A, want_bias, phi, A, bias, Rw, pw, W, Vo, Al, Ao):
    """The rows of :func:`_constraints` from the world kinematics of the joints at (q, qd)
    (:func:`robot_dynamics.algorithms._tree_kernels.world_kinematics`)."""
    par, geo, fpar, fR, fp, lpf, lpr, rkind, ru, rw = kin
    n = geo.shape[0]
    FR = np.empty((2, 3, 3))
    FS = np.empty((2, 5, 3))
    FJ = np.empty((2, 6, n))
    t = np.empty((9, 3))
    for lp in range(lpf.shape[0]):
        r0 = lpr[lp, 0]
        if rkind[r0] == 2:  # joint coupling: constant Jacobian row, zero bias
            mult = rw[r0, 1]
            phi[r0] = q[int(ru[r0, 2])] - (mult * q[int(rw[r0, 0])] + rw[r0, 2])
            if want_A:
                for c in range(n):
                    A[r0, c] = 0.0
                A[r0, int(ru[r0, 0])] += 1.0
                A[r0, int(ru[r0, 1])] -= mult
            if want_bias:
                bias[r0] = 0.0
            continue
        for k in range(2):
            f = lpf[lp, k]
            K.frame_state(par, geo, Rw, pw, W, Vo, Al, Ao, fpar[f], fR[f], fp[f], FR[k], FS[k], FJ[k])
        for r in range(lpr[lp, 0], lpr[lp, 1]):
            loop_row(rkind[r], ru[r], rw[r], FR, FS, FJ, want_A, want_bias, r, phi, A, bias, t)


_finite = K._all_finite


@njit(cache=_CACHE)
def kin_pack(pk):
    """The kinematic part (par, geo, fpar, fR, fp, lpf, lpr, rkind, ru, rw) of the model pack pk."""
    return (pk[0], pk[1]) + pk[4:]


@njit(cache=_CACHE)
def velocity_violation(A, qd):
    """||A qd|| (A (m, n), qd (n,))."""
    viol = 0.0
    for j in range(A.shape[0]):
        acc = 0.0
        for c in range(A.shape[1]):
            acc += A[j, c] * qd[c]
        viol += acc * acc
    return np.sqrt(viol)


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


#: The URV route (:func:`urv_certified`) is used when its dropped part rho <= CERT_REL * s_lb.
CERT_REL = 1e-12


@njit(cache=_CACHE)
def urv_certified(A, eps, Q, Qb, Rbi, piv):
    """:func:`robot_dynamics.spatial.linalg.urv` of A (m, n) (fills Q, Qb, Rbi, piv) and whether it
    is certified to give the SVD's results at the absolute tolerance eps. Returns (certified, r).

    With ``rho = ||R22||_F`` (the dropped part, e.g. the roundoff of the dependent rows of
    IRSBot-2) and ``s_lb = 1 / ||Rb^-1||_F <= sigma_r``, the SVD's rank decision at eps is
    provably r when ``s_lb - rho > eps`` and ``rho <= eps``; certified means moreover
    ``rho <= CERT_REL s_lb``: the row space, hence P, A+ and what is built on them, equal the
    SVD's to ~1e-12 relative. Next to a singular configuration (sigma near eps) it is not.
    """
    r, rho, s_lb = urv(A, Q, Qb, Rbi, piv)
    return (s_lb - rho > eps) and (rho <= eps) and (rho <= CERT_REL * s_lb), r


@njit(cache=_CACHE)
def state_terms(pk, q, qd, tau, want_A, phi, A, bias, M, h):
    """The terms of the constrained dynamics at (q, qd) (tau only checked): phi (m,), A (m, n)
    (if want_A; else A is given), bias = Adot qd (m,), M (n, n), h (n,) (RNEA at qdd = 0,
    gravity included). Returns (status, kinetic energy, potential energy); status 1 if q, qd,
    tau, A or bias is not finite (the outputs are then incomplete)."""
    par, geo, ine, grav = pk[0], pk[1], pk[2], pk[3]
    kin = kin_pack(pk)
    n = geo.shape[0]
    if not _finite(q):
        return 1, 0.0, 0.0
    for i in range(n):
        if not (np.isfinite(qd[i]) and np.isfinite(tau[i])):
            return 1, 0.0, 0.0
    # the local placements once, for the world kinematics, CRBA and RNEA
    R = np.empty((n, 3, 3))
    p = np.empty((n, 3))
    K.local_transforms(geo, q, R, p)
    Rw, pw, W, Vo, Al, Ao = K.world_buffers(n)
    zero = np.zeros(n)
    K._world_kinematics(par, geo, q, qd, zero, Rw, pw, W, Vo, Al, Ao, R, p, True)
    _loop_rows(kin, q, want_A, True, phi, A, bias, Rw, pw, W, Vo, Al, Ao)
    if not (_finite(A) and _finite(bias)):
        return 1, 0.0, 0.0
    U = _potential(geo, grav, Rw, pw)
    for a in range(n):
        for b in range(n):
            M[a, b] = 0.0
    K._crba_core(par, geo, ine, q, R, p, np.empty(n), np.empty((n, 3)), np.empty((n, 3, 3)), M, True)
    V, Acc, Fb = np.empty((n, 6)), np.empty((n, 6)), np.empty((n, 6))
    K._rnea_core(par, geo, ine, q, qd, zero, np.zeros((1, 6)), False, grav, R, p, V, Acc, Fb, h, True)
    T = 0.0
    for a in range(n):
        for b in range(n):
            T += 0.5 * qd[a] * M[a, b] * qd[b]
    return 0, T, U


@njit(cache=_CACHE)
def cfd_solve(variant, gamma, eps, M, h, A, bias, tau, qdd, F, lam, P, s, Ap, Cqd):
    """The constrained forward dynamics from the terms of :func:`state_terms` (seed 002, eqs.
    16, 22-29, 32): the SVD of A at the absolute tolerance eps (P, A+, s), Cqd = -A+ Adot qd,
    qdd by the variant, F = tau - h - M qdd, lam = A+^T F. Returns (status, rank, gamma used);
    status 0 ok, 2 constraint inertia matrix not invertible."""
    n = M.shape[0]
    m = A.shape[0]
    r = svd_projector(A, eps, P, Ap, s)
    matvec(Ap, bias, Cqd, n, m, False)
    for a in range(n):
        Cqd[a] = -Cqd[a]
    # f - h, its projection, M Cqd, P M
    fh = np.empty(n)
    for a in range(n):
        fh[a] = tau[a] - h[a]
    rhs = np.empty(n)
    MC = np.empty(n)
    matvec(P, fh, rhs, n, n, False)
    matvec(M, Cqd, MC, n, n, False)
    PM = np.empty((n, n))
    matmul(P, M, PM, False)
    Mc = np.empty((n, n))
    g_used = gamma
    # Prop. 2: every variant needs M positive definite (z^T Mc z = z^T M z); a joint that
    # moves no inertia (massless subtree) would otherwise give a silently wrong qdd
    if not is_pd(M, 1e-12):
        return 2, r, g_used
    if variant == VARIANT_MC or variant == VARIANT_MC_SVD:
        # (22)-(24): Mc = M + PM - MP  (MP = (PM)^T), rhs + M C qd
        for a in range(n):
            rhs[a] += MC[a]
            for b in range(n):
                Mc[a, b] = M[a, b] + PM[a, b] - PM[b, a]
        ok = True
        if r == 0 or r == n:
            ok = solve_spd(Mc, rhs, qdd)  # Mc = M (r=0) ... or PM = 0 (r=n): Mc = M
        else:
            sol = np.linalg.solve(Mc, rhs)
            for a in range(n):
                qdd[a] = sol[a]
        if not ok:
            return 2, r, g_used
    elif variant == VARIANT_MC_SYM:
        # (26)-(28): M'c = PMP + (I-P)M(I-P) (SPD), rhs + (I - 2P) M C qd
        PMP = np.empty((n, n))
        matmul(PM, P, PMP, False)
        for a in range(n):
            for b in range(n):
                # (I-P)M(I-P) = M - PM - MP + PMP
                Mc[a, b] = 2.0 * PMP[a, b] + M[a, b] - PM[a, b] - PM[b, a]
        PMC = np.empty(n)
        matvec(P, MC, PMC, n, n, False)
        for a in range(n):
            rhs[a] += MC[a] - 2.0 * PMC[a]
        if not solve_spd(Mc, rhs, qdd):
            return 2, r, g_used
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
    constraint_forces(M, tau, h, qdd, F)
    matvec(Ap, F, lam, n, m, True)
    return 0, r, g_used


@njit(cache=_CACHE)
def constraint_forces(M, tau, h, qdd, F):
    """F (n,) = tau - h - M qdd: the generalized constraint force (eq. 32)."""
    n = M.shape[0]
    for a in range(n):
        acc = tau[a] - h[a]
        for b in range(n):
            acc -= M[a, b] * qdd[b]
        F[a] = acc


#: Slack of the full-row-rank certificate of :func:`schur_cfd`, relative to ||A||_F: it covers
#: the roundoff of the QR of A^T and of the SVD whose rank decision it stands for.
CERT_FULL_ROW = 1e-12

WANT_QDD = 0  # schur_cfd: qdd only
WANT_SMIN = 1  # qdd and the singular values s
WANT_ALL = 2  # qdd, F, lam, P, A+, s, C qd


@njit(cache=_CACHE)
def schur_cfd(par, eps, M, h, A, bias, tau, want, qdd, F, lam, P, s, Ap, Cqd):
    """Constrained forward dynamics (variant Mc) when A (m, n) has full row rank m at the
    absolute tolerance eps, by the Schur complement of the KKT system on the tree-sparse
    L^T D L factors of M (:func:`robot_dynamics.spatial.linalg.ltdl_factor`, ``par`` (n,) the
    parent of each velocity coordinate)::

        (A M^-1 A^T) lam_L = A M^-1 (tau - h) + bias,   qdd = M^-1 (tau - h - A^T lam_L)

    with ``M^-1 = L^-1 D^-1 L^-T`` and ``Z = A L^-1`` (rows ``L^-T a_j``, supported on the
    ancestors of the loop's joints): ``A M^-1 A^T = Z D^-1 Z^T``. Cost O(n d^2) for the factors
    (tree depth d), O(m n d) for Z, O(m^2 n) for the Schur complement.

    With rank A = m the projection method's qdd is this one: ``(I - P) qdd = C qd`` is
    ``A qdd = -bias`` and ``P M qdd = P (tau - h)`` is ``M qdd = tau - h - A^T lam_L``.

    Certificate: the Householder QR ``A^T = Q1 R`` (R (m, m)) gives ``s_lb = 1 / ||R^-1||_F
    <= sigma_min(A)``; the SVD's rank decision at eps is m when ``s_lb > eps + CERT_FULL_ROW
    ||A||_F``. M must pass the pivot test ``D_k > 1e-12 max diag M`` of its L^T D L factors and
    A M^-1 A^T its Cholesky.

    Outputs (in place, as :func:`cfd`): qdd (n,) always; ``want >= WANT_SMIN``: s (m,) the
    singular values of A (those of R, decreasing); ``want == WANT_ALL``: F = tau - h - M qdd
    (n,), with ``Q1^T = R^-T A``: P = I - Q1 Q1^T (n, n), A+ = Q1 R^-T (n, m), lam = (A+)^T F
    (m,), Cqd = -A+ bias (n,). Returns 0 (done, rank m) or -1 (not certified, or a factorization
    failed: nothing is final, the caller takes the SVD route, which decides rank and M > 0).
    """
    n = M.shape[0]
    m = A.shape[0]
    if m > n:
        return -1
    W = np.empty((m, n))  # row j: column j of A^T; after the QR, R[k, j] = W[j, k] (k <= j)
    nrm2 = 0.0
    for j in range(m):
        for c in range(n):
            W[j, c] = A[j, c]
            nrm2 += A[j, c] * A[j, c]
    V = np.empty((m, n))
    beta = np.empty(m)
    rdiag = np.empty(m)
    piv = np.empty(m, dtype=np.int64)
    householder_qr(W, m, n, False, -1.0, piv, V, beta, rdiag)
    R = np.zeros((m, m))
    for j in range(m):
        for k in range(j + 1):
            R[k, j] = W[j, k]
    Ri = np.empty((m, m))
    fro = upper_tri_inverse(R, Ri, m)
    if m > 0 and not (fro < np.inf and 1.0 / np.sqrt(fro) > eps + CERT_FULL_ROW * np.sqrt(nrm2)):
        return -1
    L = np.empty((n, n))
    scale = 0.0
    for a in range(n):
        for b in range(n):
            L[a, b] = M[a, b]
        if M[a, a] > scale:
            scale = M[a, a]
    if ltdl_factor(L, par, 1e-12 * max(scale, 1e-300)) >= 0:
        return -1
    # M^-1 = L^-1 D^-1 L^-T: z0 = L^-T (tau - h), Z = A L^-1 (rows L^-T a_j, tree-sparse)
    z0 = np.empty(n)
    dinv = np.empty(n)
    for a in range(n):
        z0[a] = tau[a] - h[a]
        dinv[a] = 1.0 / L[a, a]
    ltdl_solve_lt(L, par, z0)
    if m > 0:
        Z = np.empty((m, n))
        for j in range(m):
            for c in range(n):
                Z[j, c] = A[j, c]
            ltdl_solve_lt(L, par, Z[j])
        G = np.empty((m, m))  # A M^-1 A^T = Z D^-1 Z^T, lower triangle
        rhs = np.empty(m)  # A M^-1 (tau - h) + bias
        zd = np.empty(n)
        for i in range(m):
            for c in range(n):
                zd[c] = Z[i, c] * dinv[c]
            for j in range(i + 1):
                acc = 0.0
                for c in range(n):
                    acc += zd[c] * Z[j, c]
                G[i, j] = acc
            acc = bias[i]
            for c in range(n):
                acc += zd[c] * z0[c]
            rhs[i] = acc
        if chol_factor(G, G, 0.0) >= 0:
            return -1
        chol_solve(G, rhs, rhs)
        for j in range(m):
            lj = rhs[j]
            for c in range(n):
                z0[c] -= Z[j, c] * lj
    # qdd = M^-1 (tau - h - A^T lam_L) = L^-1 D^-1 (z0 - Z^T lam_L)
    for a in range(n):
        qdd[a] = z0[a] * dinv[a]
    ltdl_solve_l(L, par, qdd)
    if want >= WANT_SMIN and m > 0:
        U_, sv, Vt_ = svd(R)  # the singular values of R are those of A
        for i in range(m):
            s[i] = sv[i]
    if want == WANT_ALL:
        # Q1^T = R^-T A (m, n) (A^T = Q1 R): P = I - Q1 Q1^T, A+ = Q1 R^-T, lam = R^-1 Q1^T F
        Y = np.empty((m, n))
        for k in range(m):
            for c in range(n):
                acc = 0.0
                for j in range(k + 1):
                    acc += Ri[j, k] * A[j, c]
                Y[k, c] = acc
        for a in range(n):
            for b in range(a + 1):  # P symmetric
                acc = 1.0 if a == b else 0.0
                for k in range(m):
                    acc -= Y[k, a] * Y[k, b]
                P[a, b] = acc
                P[b, a] = acc
            for j in range(m):
                acc = 0.0
                for k in range(j, m):
                    acc += Y[k, a] * Ri[j, k]
                Ap[a, j] = acc
        constraint_forces(M, tau, h, qdd, F)
        matvec(Ap, F, lam, n, m, True)  # (A+)^T F
        matvec(Ap, bias, Cqd, n, m, False)
        for a in range(n):
            Cqd[a] = -Cqd[a]
    return 0


@njit(cache=_CACHE)
def cfd(pk, q, qd, tau, variant, gamma, eps, qdd, F, lam, P, s, M, h, phi, A, bias, Ap, Cqd):
    """Constrained forward dynamics at one state (seed 002, eqs. 16, 22-29, 32):
    :func:`state_terms` then, for variant Mc, :func:`schur_cfd` where A has certified full row
    rank, else :func:`cfd_solve` (the SVD route).

    Outputs (written in place): qdd (n,), F = tau - h - M qdd (n,), lam = A+^T F (m,),
    P (n,n), s (min(m,n),) singular values of A, M, h, phi, A, bias = Adot qd, A+ (n,m),
    Cqd = -A+ Adot qd. Returns (status, rank, kinetic energy, potential energy, gamma used);
    status 0 ok, 1 non-finite input, 2 constraint inertia matrix not invertible.
    """
    st, T, U = state_terms(pk, q, qd, tau, True, phi, A, bias, M, h)
    if st:
        return st, 0, 0.0, 0.0, gamma
    if variant == VARIANT_MC and schur_cfd(pk[0], eps, M, h, A, bias, tau, WANT_ALL, qdd, F, lam, P, s, Ap, Cqd) == 0:
        return 0, A.shape[0], T, U, gamma
    st, r, g_used = cfd_solve(variant, gamma, eps, M, h, A, bias, tau, qdd, F, lam, P, s, Ap, Cqd)
    return st, r, T, U, g_used


@njit(cache=_CACHE)
def cfd_new(pk, q, qd, tau, variant, gamma, eps):
    """:func:`cfd` into new arrays. Returns (status, rank, kinetic, potential, gamma used,
    (qdd, F, lam, P, s, M, h, phi, A, bias, A+, Cqd))."""
    n = pk[1].shape[0]
    m = pk[9].shape[0]
    out = (
        np.empty(n),
        np.empty(n),
        np.empty(m),
        np.empty((n, n)),
        np.zeros(min(m, n)),
        np.empty((n, n)),
        np.empty(n),
        np.empty(m),
        np.empty((m, n)),
        np.empty(m),
        np.empty((n, m)),
        np.empty(n),
    )
    st, r, T, U, g = cfd(pk, q, qd, tau, variant, gamma, eps, *out)
    return st, r, T, U, g, out


@njit(cache=_CACHE)
def _cfd_qdd(pk, q, qd, tau, variant, gamma, eps, qdd, want_s):
    """qdd (and, if want_s, the smallest kept singular value) at one state; the other outputs
    are scratch. Returns (status, rank, smin)."""
    n = pk[1].shape[0]
    m = pk[9].shape[0]
    k = min(m, n)
    s = np.zeros(k)
    M, h, bias = np.empty((n, n)), np.empty(n), np.empty(m)
    F, lam, phi, A = np.empty(n), np.empty(m), np.empty(m), np.empty((m, n))
    st, T, U = state_terms(pk, q, qd, tau, True, phi, A, bias, M, h)
    if st:
        return st, 0, 0.0
    e0 = np.empty((0, 0))
    want = WANT_SMIN if want_s else WANT_QDD
    if variant == VARIANT_MC and schur_cfd(pk[0], eps, M, h, A, bias, tau, want, qdd, F, lam, e0, s, e0, F) == 0:
        r = m
    else:
        P, Ap, Cqd = np.empty((n, n)), np.empty((n, m)), np.empty(n)
        st, r, g = cfd_solve(variant, gamma, eps, M, h, A, bias, tau, qdd, F, lam, P, s, Ap, Cqd)
    if k == 0:
        smin = np.inf
    elif r > 0:
        smin = s[r - 1]  # smallest kept singular value (structural zeros excluded)
    else:
        smin = 0.0
    return st, r, smin


@njit(cache=_CACHE)
def cfd_qdd_s(pk, q, qd, tau, variant, gamma, eps, qdd):
    """Only qdd (allocates the other outputs).

    Returns (status, rank, the smallest singular value kept by the rank decision, 0 if none).
    """
    return _cfd_qdd(pk, q, qd, tau, variant, gamma, eps, qdd, True)


@njit(cache=_CACHE)
def cfd_qdd(pk, q, qd, tau, variant, gamma, eps, qdd):
    """Only qdd. Returns (status, rank)."""
    st, r, smin = _cfd_qdd(pk, q, qd, tau, variant, gamma, eps, qdd, False)
    return st, r


@njit(cache=_CACHE)
def cfd_batch(pk, Q, QD, TAU, variant, gamma, eps, QDD, rank):
    """qdd of N states: Q (N, nq), QD, TAU (N, n) -> QDD (N, n), rank (N,) int64 (as
    :func:`cfd_qdd`, sample after sample). Returns (status, first failing sample or -1)."""
    for k in range(Q.shape[0]):
        st, r = cfd_qdd(pk, Q[k], QD[k], TAU[k], variant, gamma, eps, QDD[k])
        rank[k] = r
        if st:
            return st, k
    return 0, -1


@njit(cache=_CACHE, parallel=True)
def cfd_batch_parallel(pk, Q, QD, TAU, variant, gamma, eps, QDD, rank, status):
    """:func:`cfd_batch` with the samples spread over numba's threads (``prange``): status (N,)
    int64 receives each sample's status (0 ok, 1 non-finite input, 2 M not positive
    definite)."""
    for k in prange(Q.shape[0]):
        st, r = cfd_qdd(pk, Q[k], QD[k], TAU[k], variant, gamma, eps, QDD[k])
        rank[k] = r
        status[k] = st


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
    pk,
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
    n = pk[1].shape[0]
    KQ = np.empty((7, n))
    KV = np.empty((7, n))
    for i in range(n):
        KQ[0, i] = qd[i]
        KV[0, i] = a0[i]
    qs = np.empty(q.shape[0])
    us = np.empty(n)
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
            us[i] = sq
            vs[i] = qd[i] + h * sv
        K.integrate(pk[1], q, us, h, qs)
        st, r, sm = cfd_qdd_s(pk, qs, vs, tau, variant, gamma, eps, acc)
        if st:
            return st, r
        rmin = min(rmin, r)
        smin_out[0] = min(smin_out[0], sm)
        for i in range(n):
            KQ[st_, i] = vs[i]
            KV[st_, i] = acc[i]
    eQ = np.empty(n)
    eV = np.empty(n)
    for i in range(q.shape[0]):
        q_out[i] = qs[i]  # stage 7 is at the 5th-order solution (FSAL)
    for i in range(n):
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
    m = pk[9].shape[0]
    P = np.empty((n, n))
    if tangent_error and m > 0:
        A = np.empty((m, n))
        Rw = np.empty((n, 3, 3))
        pw = np.empty((n, 3))
        phi = np.empty(m)
        dummy = np.empty(m)
        _constraints(kin_pack(pk), qs, vs, True, False, phi, A, dummy, Rw, pw)
        svd_projector(A, eps, P, np.empty((n, m)), np.empty(min(m, n)))
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
def nr_project(kin, q, free, tol, max_iter, eps, fast, phi_out):
    """Newton-Raphson minimum-norm position projection (seed 002, eq. 39), in place on q.

    Iterates ``q <- q (+) (-A+ phi)`` (columns of joints with ``free[j] == False`` zeroed, so they
    stay fixed) with the absolute-tolerance pseudo-inverse until ``||phi|| <= tol``; ``fast``:
    A+ from the URV factors where :func:`urv_certified` (else the SVD, per iteration).
    Returns (iterations, final ||phi||, rank at the last linearization, converged).
    """
    n = kin[1].shape[0]
    m = kin[7].shape[0]
    k = min(m, n)
    A = np.empty((m, n))
    Rw = np.empty((n, 3, 3))
    pw = np.empty((n, 3))
    P = np.empty((n, n))
    Ap = np.empty((n, m))
    s = np.empty(k)
    Q = np.empty((n, n))
    Qb = np.empty((m, k))
    Rbi = np.empty((k, k))
    piv = np.empty(m, dtype=np.int64)
    dq = np.empty(n)
    zero = np.zeros(n)
    dummy = np.empty(m)
    r = 0
    res = 0.0
    for it in range(max_iter + 1):
        _constraints(kin, q, zero, True, False, phi_out, A, dummy, Rw, pw)
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
        ok = False
        if fast:
            ok, r = urv_certified(A, eps, Q, Qb, Rbi, piv)
            if ok:
                urv_pinv_apply(Q, Qb, Rbi, piv, r, phi_out, dq)
        if not ok:
            r = svd_projector(A, eps, P, Ap, s)
            matvec(Ap, phi_out, dq, n, m, False)
        K.integrate(kin[1], q, dq, -1.0, q)
    return max_iter, res, r, False


@njit(cache=_CACHE)
def vel_project(pk, q, qd, mode, eps):
    """Velocity projection onto the numerical null space N_eps(A) at q, in place on qd.

    mode 1 (euclidean): ``qd <- P qd``; mode 2 (mass): the kinetic-energy-minimal correction
    ``qd <- qd - M^-1 V1 (V1^T M^-1 V1)^-1 V1^T qd`` with V1 the right singular vectors of A
    above eps (the same rank decision as P). Returns (rank, ||A qd|| before).
    """
    n = pk[1].shape[0]
    m = pk[9].shape[0]
    if m == 0 or mode == 0:
        return 0, 0.0
    A = np.empty((m, n))
    phi = np.empty(m)
    _constraints(kin_pack(pk), q, np.zeros(n), True, False, phi, A, np.empty(m), np.empty((n, 3, 3)), np.empty((n, 3)))
    viol = velocity_violation(A, qd)
    if not (_finite(A) and np.isfinite(viol)):
        return -1, np.inf
    U, s, Vt = svd(A)
    r = svd_rank(s, eps)
    if r == 0:
        return 0, viol
    # c = V1^T qd
    c = np.empty(r)
    matvec(Vt, qd, c, r, n, False)
    if mode == 1:
        dq = np.empty(n)
        matvec(Vt, c, dq, r, n, True)
        for a in range(n):
            qd[a] -= dq[a]
        return r, viol
    M = np.empty((n, n))
    K.mass_matrix(pk[0], pk[1], pk[2], q, M)
    V1 = np.empty((n, r))
    for i in range(r):
        for a in range(n):
            V1[a, i] = Vt[i, a]
    X = np.linalg.solve(M, V1)  # M^-1 V1 (n, r)
    S = np.empty((r, r))
    matmul(V1, X, S, True)
    mu = np.linalg.solve(S, c)
    dq = np.empty(n)
    matvec(X, mu, dq, n, r, False)
    for a in range(n):
        qd[a] -= dq[a]
    return r, viol


# --------------------------------------------------------------------------- true closure rows
CLOSURE_NONE = 0  # no orientation row (spherical, point_on_line, point_on_plane)
CLOSURE_LOG = 1  # weld, prismatic: log(R) (3,)
CLOSURE_AXIS = 2  # revolute, cylindrical, planar: theta (k x R k) / |k x R k| on (t1, t2)
CLOSURE_UNIVERSAL = 3  # asin(a1 . R a2)


@njit(cache=_CACHE)
def _log_so3(R, w):
    """Rotation vector w (3,) of R (3, 3), angle in [0, pi] (robust up to and at pi)."""
    s0 = 0.5 * (R[2, 1] - R[1, 2])
    s1 = 0.5 * (R[0, 2] - R[2, 0])
    s2 = 0.5 * (R[1, 0] - R[0, 1])
    c = 0.5 * (R[0, 0] + R[1, 1] + R[2, 2] - 1.0)
    sn = np.sqrt(s0 * s0 + s1 * s1 + s2 * s2)
    t = np.arctan2(sn, c)
    if c > 0.0:
        f = t / sn if sn > 0.0 else 1.0
        w[0], w[1], w[2] = f * s0, f * s1, f * s2
        return t
    k = 0
    for a in range(1, 3):
        if R[a, a] > R[k, k]:
            k = a
    nrm = 0.0
    for a in range(3):
        w[a] = 0.5 * (R[a, k] + R[k, a]) - (c if a == k else 0.0)
        nrm += w[a] * w[a]
    nrm = np.sqrt(nrm)
    sgn = 1.0 if w[0] * s0 + w[1] * s1 + w[2] * s2 >= 0.0 else -1.0
    for a in range(3):
        w[a] = sgn * t * w[a] / nrm if nrm > 0.0 else 0.0
    return t


@njit(cache=_CACHE)
def _jl_inv_so3(w, t, out):
    """Inverse left Jacobian of SO(3) at the rotation vector w of angle t: I - W/2 + D W^2."""
    if t < 1e-4:
        D = 1.0 / 12.0 + t * t / 720.0
    else:
        D = 1.0 / (t * t) - np.cos(0.5 * t) / (2.0 * t * np.sin(0.5 * t))
    W = np.zeros((3, 3))
    W[0, 1], W[0, 2], W[1, 0], W[1, 2], W[2, 0], W[2, 1] = -w[2], w[1], w[2], -w[0], -w[1], w[0]
    for a in range(3):
        for b in range(3):
            W2 = W[a, 0] * W[0, b] + W[a, 1] * W[1, b] + W[a, 2] * W[2, b]
            out[a, b] = (1.0 if a == b else 0.0) - 0.5 * W[a, b] + D * W2


@njit(cache=_CACHE)
def closure_rows(kin, q, kind, lrows, basis, want_J, r, J):
    """True closure rows r (m,) and (want_J) their Jacobian J (m, n) on the velocity coordinates.

    ``kin`` is the closure pack of :func:`robot_dynamics.algorithms.projection._closure_pack`
    (per loop its position or coupling rows, then the nine rows ``e_i . R e_j`` of ``R = R_a^T R_b`` when
    the loop constrains a rotation); per loop ``kind`` (CLOSURE_*), ``lrows`` (first pack row,
    number of position rows, first rotation pack row or -1, first output row) and ``basis``
    (3, 3): (t1, t2, k) for CLOSURE_AXIS, (a1, a2, -) for CLOSURE_UNIVERSAL. Same rows as
    :func:`robot_dynamics.algorithms.constraints.orientation_closure`.
    """
    n = kin[1].shape[0]
    mk = kin[7].shape[0]
    phi = np.empty(mk)
    A = np.empty((mk, n)) if want_J else np.empty((0, n))
    _constraints(kin, q, np.zeros(n), want_J, False, phi, A, np.empty(mk), np.empty((n, 3, 3)), np.empty((n, 3)))
    R = np.empty((3, 3))
    D = np.zeros((3, n))
    E = np.zeros((3, 3))
    e = np.zeros(3)
    for lp in range(kind.shape[0]):
        r0, npos, rot, o = lrows[lp, 0], lrows[lp, 1], lrows[lp, 2], lrows[lp, 3]
        for j in range(npos):
            r[o + j] = phi[r0 + j]
            if want_J:
                for c in range(n):
                    J[o + j, c] = A[r0 + j, c]
        o += npos
        if rot < 0 or kind[lp] == CLOSURE_NONE:
            continue
        for a in range(3):
            for b in range(3):
                R[a, b] = phi[rot + 3 * a + b]
        if want_J:
            # D = C^T rows / 2, c_ij = e_i x R e_j: (c_ij)_0 = R_2j [i=1] - R_1j [i=2], ...
            for c in range(n):
                d0 = 0.0
                d1 = 0.0
                d2 = 0.0
                for j in range(3):
                    a0 = A[rot + j, c]
                    a1 = A[rot + 3 + j, c]
                    a2 = A[rot + 6 + j, c]
                    d0 += R[2, j] * a1 - R[1, j] * a2
                    d1 += R[0, j] * a2 - R[2, j] * a0
                    d2 += R[1, j] * a0 - R[0, j] * a1
                D[0, c], D[1, c], D[2, c] = 0.5 * d0, 0.5 * d1, 0.5 * d2
        k = kind[lp]
        nr = 0
        if k == CLOSURE_LOG:
            t = _log_so3(R, e)
            nr = 3
            if want_J:
                _jl_inv_so3(e, t, E)
        elif k == CLOSURE_UNIVERSAL:
            a1, a2 = basis[lp, 0], basis[lp, 1]
            v = np.empty(3)
            matvec3(R, a2, v)
            cc = min(max(dot3(a1, v), -1.0), 1.0)
            e[0] = np.arcsin(cc)
            nr = 1
            if want_J:
                f = 1.0 / max(np.sqrt(1.0 - cc * cc), 1e-12)
                E[0, 0] = f * (v[1] * a1[2] - v[2] * a1[1])
                E[0, 1] = f * (v[2] * a1[0] - v[0] * a1[2])
                E[0, 2] = f * (v[0] * a1[1] - v[1] * a1[0])
        else:  # CLOSURE_AXIS
            t1, t2, ax = basis[lp, 0], basis[lp, 1], basis[lp, 2]
            v = np.empty(3)
            matvec3(R, ax, v)
            sv = np.empty(3)
            cross(ax, v, sv)
            s = np.sqrt(dot3(sv, sv))
            cc = dot3(ax, v)
            th = np.arctan2(s, cc)
            g = th / s if s > 1e-300 else 1.0
            e[0] = g * dot3(t1, sv)
            e[1] = g * dot3(t2, sv)
            nr = 2
            if want_J:
                K = np.zeros((3, 3))
                K[0, 1], K[0, 2], K[1, 0], K[1, 2], K[2, 0], K[2, 1] = -ax[2], ax[1], ax[2], -ax[0], -ax[1], ax[0]
                dedv = np.empty((3, 3))
                svK = np.zeros(3)
                for b in range(3):
                    svK[b] = sv[0] * K[0, b] + sv[1] * K[1, b] + sv[2] * K[2, b]
                f = (cc - g) / (s * s) if s > 1e-9 else 0.0
                for a in range(3):
                    for b in range(3):
                        dedv[a, b] = g * K[a, b] + (sv[a] * (f * svK[b] - ax[b]) if s > 1e-9 else 0.0)
                # dv = omega x v = -hat(v) omega
                Vm = np.zeros((3, 3))
                Vm[0, 1], Vm[0, 2], Vm[1, 0], Vm[1, 2], Vm[2, 0], Vm[2, 1] = v[2], -v[1], -v[2], v[0], v[1], -v[0]
                for row in range(2):
                    tv = t1 if row == 0 else t2
                    for b in range(3):
                        acc = 0.0
                        for a in range(3):
                            for cidx in range(3):
                                acc += tv[a] * dedv[a, cidx] * Vm[cidx, b]
                        E[row, b] = acc
        for j in range(nr):
            r[o + j] = e[j]
            if want_J:
                # omega_rel = R_a^T (w_b - w_a) = -D v
                for c in range(n):
                    J[o + j, c] = -(E[j, 0] * D[0, c] + E[j, 1] * D[1, c] + E[j, 2] * D[2, c])
