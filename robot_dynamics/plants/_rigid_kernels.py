"""Fast simulator step of the projection engine (private; the real-time path of sim_node).

Same mathematics as :func:`robot_dynamics.algorithms._projection_kernels.sim_step_rk4` (RK4 with tau
held, Newton-Raphson minimum-norm position projection, Euclidean velocity projection, the
end-of-step dynamics and monitor), with the SVD of A replaced, wherever it is *certified* to
give the same rank decision, by a complete orthogonal (URV) decomposition built from two
Householder QR factorizations (~10x cheaper than LAPACK's gesdd at these sizes):

    A^T Pi = Q [R11 R12; 0 R22]            (QR with column pivoting: rows of A, r steps)
    B = [R11 R12]^T = Qb Rb                 (thin QR, B is m x r)
    A ~= Pi Qb Rb Q1^T,   A+ = Q1 Rb^-1 Qb^T Pi^T,   N(A) = span Q2,   P = Q2 Q2^T

Certificate (per evaluation): with ``rho = ||R22||_F`` (the dropped part, e.g. the roundoff of
the dependent rows of IRSBot-2) and ``s_lb = 1 / ||Rb^-1||_F <= sigma_r``, the SVD's rank
decision at the absolute tolerance eps is provably r when ``s_lb - rho > eps`` and
``rho <= eps``; the factorization is used only when moreover ``rho <= 1e-12 s_lb`` (then the
row space, hence P, A+, qdd, F and lam, equal the SVD's to ~1e-12 relative). Otherwise (next to
a singular configuration, sigma near eps) the evaluation falls back to the SVD route of
:mod:`robot_dynamics.algorithms._projection_kernels`, so the eps semantics of seed 002 are untouched.

The constrained forward dynamics use the null-space form of eq. (22): with Z = Q2,
``qdd = C qd + Z z``, ``(Z^T M Z) z = Z^T (f - h - M C qd)``. It is the unique solution of
``Mc qdd = P (f - h) + M C qd`` (Mc = M + PM - MP): ``P C qd = 0`` gives ``(M - MP) qdd =
M C qd`` and the remaining ``P M qdd = P (f - h)`` is the reduced equation. Cost O(n^2 (n-r))
instead of the O(n^3) products and LU of Mc. Only the variant 'Mc' and the Euclidean (or no)
velocity projection have a fast form; :class:`robot_dynamics.plants.rigid.ConstrainedPlant` uses the
reference kernels for the others (``kernel='reference'`` forces them).

Singular values reported at the end of a step (``s``, for the monitor's sigma_min) are those
of Rb (the nonzero singular values of the rank-r part of A) from the eigenvalues of Rb^T Rb,
zeros after r; accurate to ~1e-15 ||A||^2 / sigma absolute where certified (sigma > eps).
"""

import numpy as np
from numba import njit

from robot_dynamics.algorithms import _tree_kernels as K
from robot_dynamics.algorithms import _projection_kernels as PK

_CACHE = True

#: rho <= CERT_REL * s_lb for the factorization to be used (see the module doc)
CERT_REL = 1e-12


@njit(cache=_CACHE)
def _urv(A, eps, Q, Qb, Rbi, piv):
    """URV factorization of A (m, n) (module doc). Fills Q (n, n) (Q1 = Q[:, :r] spans the
    row space, Q[:, r:] the null space), Qb[:, :r] (m, r), Rbi[:r, :r] = Rb^-1 (upper
    triangular), piv (m,) the row order. Returns (certified, r).

    Row-major throughout: the rows of A (columns of A^T) are the contiguous vectors the
    Householder reflectors act on; Q is accumulated as Q^T (its rows contiguous)."""
    m, n = A.shape
    W = A.copy()  # row j = column j of A^T Pi (after the swaps)
    for i in range(m):
        piv[i] = i
    tot = 0.0
    for i in range(m):
        for a in range(n):
            tot += W[i, a] * W[i, a]
    drop = 1e-14 * np.sqrt(tot) + 1e-300
    kk = min(m, n)
    V = np.zeros((kk, n))  # Householder vector k in V[k, k:]
    beta = np.zeros(kk)
    r = 0
    for k in range(kk):
        best = -1.0
        jb = k
        for j in range(k, m):
            s = 0.0
            for a in range(k, n):
                s += W[j, a] * W[j, a]
            if s > best:
                best = s
                jb = j
        if np.sqrt(best) <= drop:
            break
        if jb != k:
            for a in range(n):
                t = W[k, a]
                W[k, a] = W[jb, a]
                W[jb, a] = t
            t2 = piv[k]
            piv[k] = piv[jb]
            piv[jb] = t2
        nrm = np.sqrt(best)
        alpha = -nrm if W[k, k] >= 0.0 else nrm
        for a in range(k, n):
            V[k, a] = W[k, a]
        V[k, k] -= alpha
        vv = 0.0
        for a in range(k, n):
            vv += V[k, a] * V[k, a]
        b = 2.0 / vv if vv > 0.0 else 0.0
        beta[k] = b
        for j in range(k + 1, m):
            s = 0.0
            for a in range(k, n):
                s += V[k, a] * W[j, a]
            s *= b
            for a in range(k, n):
                W[j, a] -= s * V[k, a]
        W[k, k] = alpha
        for a in range(k + 1, n):
            W[k, a] = 0.0
        r += 1
    rho2 = 0.0
    for j in range(r, m):
        for a in range(r, n):
            rho2 += W[j, a] * W[j, a]
    rho = np.sqrt(rho2)
    # Q = H_0 ... H_{r-1}, accumulated backward as QT = Q^T (QT <- QT H_k, rows contiguous)
    QT = np.empty((n, n))
    for a in range(n):
        for c in range(n):
            QT[a, c] = 1.0 if a == c else 0.0
    for k in range(r - 1, -1, -1):
        b = beta[k]
        for c in range(k, n):
            s = 0.0
            for a in range(k, n):
                s += QT[c, a] * V[k, a]
            s *= b
            for a in range(k, n):
                QT[c, a] -= s * V[k, a]
    for a in range(n):
        for c in range(n):
            Q[a, c] = QT[c, a]
    if r == 0:
        return rho <= eps, 0
    # thin QR of B = R1^T (m, r), B[i, c] = W[i, c] for i >= c (W's row i holds column i of
    # R1 = [R11 R12] in its first r entries); worked on as Bt = B^T (r, m), rows contiguous
    Bt = np.zeros((r, m))
    for i in range(m):
        for c in range(min(i + 1, r)):
            Bt[c, i] = W[i, c]
    Vb = np.zeros((r, m))
    bb = np.zeros(r)
    for k in range(r):
        s = 0.0
        for i in range(k, m):
            s += Bt[k, i] * Bt[k, i]
        nrm = np.sqrt(s)
        alpha = -nrm if Bt[k, k] >= 0.0 else nrm
        for i in range(k, m):
            Vb[k, i] = Bt[k, i]
        Vb[k, k] -= alpha
        vv = 0.0
        for i in range(k, m):
            vv += Vb[k, i] * Vb[k, i]
        b = 2.0 / vv if vv > 0.0 else 0.0
        bb[k] = b
        for j in range(k + 1, r):
            s = 0.0
            for i in range(k, m):
                s += Vb[k, i] * Bt[j, i]
            s *= b
            for i in range(k, m):
                Bt[j, i] -= s * Vb[k, i]
        Bt[k, k] = alpha
    # Qb = Hb_0 ... Hb_{r-1} [I_r; 0] (m, r), accumulated as QbT (r, m)
    QbT = np.zeros((r, m))
    for c in range(r):
        QbT[c, c] = 1.0
    for k in range(r - 1, -1, -1):
        b = bb[k]
        for c in range(k, r):
            s = 0.0
            for i in range(k, m):
                s += QbT[c, i] * Vb[k, i]
            s *= b
            for i in range(k, m):
                QbT[c, i] -= s * Vb[k, i]
    for i in range(m):
        for c in range(r):
            Qb[i, c] = QbT[c, i]
    # Rb (upper triangular, Rb[i, j] = Bt[j, i] for i <= j) -> Rb^-1, ||Rb^-1||_F
    fro = 0.0
    for j in range(r):
        if Bt[j, j] == 0.0:
            return False, r
        for i in range(j + 1, r):
            Rbi[i, j] = 0.0
        Rbi[j, j] = 1.0 / Bt[j, j]
        for i in range(j - 1, -1, -1):
            s = 0.0
            for c in range(i + 1, j + 1):
                s += Bt[c, i] * Rbi[c, j]
            Rbi[i, j] = -s / Bt[i, i]
        for i in range(j + 1):
            fro += Rbi[i, j] * Rbi[i, j]
    s_lb = 1.0 / np.sqrt(fro)
    ok = (s_lb - rho > eps) and (rho <= eps) and (rho <= CERT_REL * s_lb)
    return ok, r


@njit(cache=_CACHE)
def _pinv_apply(Q, Qb, Rbi, piv, r, b, out):
    """out (n,) = A+ b (b (m,)) with the factors of :func:`_urv`."""
    m = b.shape[0]
    n = Q.shape[0]
    y = np.zeros(r)
    for c in range(r):
        s = 0.0
        for i in range(m):
            s += Qb[i, c] * b[piv[i]]
        y[c] = s
    w = np.zeros(r)
    for i in range(r):
        s = 0.0
        for c in range(i, r):
            s += Rbi[i, c] * y[c]
        w[i] = s
    for a in range(n):
        s = 0.0
        for c in range(r):
            s += Q[a, c] * w[c]
        out[a] = s


@njit(cache=_CACHE)
def _pinvT_apply(Q, Qb, Rbi, piv, r, F, out):
    """out (m,) = (A+)^T F (F (n,)) with the factors of :func:`_urv`."""
    m = out.shape[0]
    n = Q.shape[0]
    u = np.zeros(r)
    for c in range(r):
        s = 0.0
        for a in range(n):
            s += Q[a, c] * F[a]
        u[c] = s
    v = np.zeros(r)
    for c in range(r):
        s = 0.0
        for i in range(c + 1):
            s += Rbi[i, c] * u[i]
        v[c] = s
    for i in range(m):
        s = 0.0
        for c in range(r):
            s += Qb[i, c] * v[c]
        out[piv[i]] = s


@njit(cache=_CACHE)
def cfd_fast(
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
    eps,
    want_s,
    qdd,
    F,
    lam,
    s,
    phi,
    A,
    Q,
    Qb,
    Rbi,
    piv,
    r_in,
):
    """Constrained forward dynamics (variant Mc) at one state, fast route (module doc).

    Outputs in place: qdd, F, lam, s (singular values if want_s), phi, A, and the URV
    factors (Q, Qb, Rbi, piv) when certified. ``r_in >= 0``: A and the certified factors of
    A(q) (rank r_in) are given (only the velocity terms are computed). Returns (status, rank,
    kinetic, potential, certified); status as :func:`robot_dynamics.algorithms._projection_kernels.cfd`
    (on a failed certificate that kernel is called and its outputs returned, certified False).
    """
    n = q.shape[0]
    m = phi.shape[0]
    for i in range(n):
        if not (np.isfinite(q[i]) and np.isfinite(qd[i]) and np.isfinite(tau[i])):
            return 1, 0, 0.0, 0.0, False
    Rw = np.empty((n, 3, 3))
    pw = np.empty((n, 3))
    bias = np.empty(m)
    PK._constraints(par, geo, fpar, fR, fp, lpf, lpr, rkind, ru, rw, q, qd, r_in < 0, True, phi, A, bias, Rw, pw)
    if not (PK._finite(A) and PK._finite(bias)):
        return 1, 0, 0.0, 0.0, False
    if r_in >= 0:
        ok, r = True, r_in
    else:
        ok, r = _urv(A, eps, Q, Qb, Rbi, piv)
    if not ok:
        st, r2, T, U, g = PK.cfd(
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
            PK.VARIANT_MC,
            0.0,
            eps,
            qdd,
            F,
            lam,
            np.empty((n, n)),
            s,
            np.empty((n, n)),
            np.empty(n),
            phi,
            A,
            np.empty(m),
            np.empty((n, m)),
            np.empty(n),
        )
        return st, r2, T, U, False
    U = PK._potential(geo, grav, Rw, pw)
    M = np.zeros((n, n))
    R = np.empty((n, 3, 3))
    p = np.empty((n, 3))
    mc = np.empty(n)
    hc = np.empty((n, 3))
    Ic = np.empty((n, 3, 3))
    K._crba_one(par, geo, ine, q, R, p, mc, hc, Ic, M)
    h = np.empty(n)
    V6 = np.empty((n, 6))
    A6 = np.empty((n, 6))
    F6 = np.empty((n, 6))
    fext = np.zeros((1, 6))
    zero = np.zeros(n)
    K._rnea_one(par, geo, ine, q, qd, zero, fext, False, grav, R, p, V6, A6, F6, h)
    T = 0.0
    for a in range(n):
        acc = 0.0
        for b in range(n):
            acc += M[a, b] * qd[b]
        T += 0.5 * qd[a] * acc
    if not PK._is_pd(M, 1e-12):
        return 2, r, T, U, True
    Cqd = np.empty(n)
    _pinv_apply(Q, Qb, Rbi, piv, r, bias, Cqd)
    for a in range(n):
        Cqd[a] = -Cqd[a]
    nz = n - r
    # g = f - h - M Cqd
    g = np.empty(n)
    for a in range(n):
        acc = tau[a] - h[a]
        for b in range(n):
            acc -= M[a, b] * Cqd[b]
        g[a] = acc
    for a in range(n):
        qdd[a] = Cqd[a]
    if nz > 0:
        MZ = np.empty((n, nz))
        for a in range(n):
            for c in range(nz):
                acc = 0.0
                for b in range(n):
                    acc += M[a, b] * Q[b, r + c]
                MZ[a, c] = acc
        S = np.empty((nz, nz))
        rz = np.empty(nz)
        for c in range(nz):
            acc = 0.0
            for a in range(n):
                acc += Q[a, r + c] * g[a]
            rz[c] = acc
            for d in range(c, nz):
                acc = 0.0
                for a in range(n):
                    acc += Q[a, r + c] * MZ[a, d]
                S[c, d] = acc
                S[d, c] = acc
        z = np.empty(nz)
        if not PK._solve_spd(S, rz, z):
            return 2, r, T, U, True
        for a in range(n):
            acc = 0.0
            for c in range(nz):
                acc += Q[a, r + c] * z[c]
            qdd[a] += acc
    for a in range(n):
        acc = tau[a] - h[a]
        for b in range(n):
            acc -= M[a, b] * qdd[b]
        F[a] = acc
    _pinvT_apply(Q, Qb, Rbi, piv, r, F, lam)
    if want_s:
        for i in range(s.shape[0]):
            s[i] = 0.0
        G = np.empty((r, r))  # Rb^T Rb = (Rb^-1)^-1 ... from Rbi: eig of (Rbi Rbi^T)^-1
        Rb = np.empty((r, r))
        for i in range(r):
            for j in range(r):
                Rb[i, j] = 0.0
        for j in range(r):  # invert the upper-triangular Rbi back to Rb
            Rb[j, j] = 1.0 / Rbi[j, j]
            for i in range(j - 1, -1, -1):
                acc = 0.0
                for c in range(i + 1, j + 1):
                    acc += Rbi[i, c] * Rb[c, j]
                Rb[i, j] = -acc / Rbi[i, i]
        for i in range(r):
            for j in range(r):
                acc = 0.0
                for c in range(r):
                    acc += Rb[c, i] * Rb[c, j]
                G[i, j] = acc
        ev = np.linalg.eigvalsh(G)
        for i in range(r):
            s[i] = np.sqrt(max(ev[r - 1 - i], 0.0))
    return 0, r, T, U, True


@njit(cache=_CACHE)
def cfd_qdd_fast(par, geo, ine, grav, fpar, fR, fp, lpf, lpr, rkind, ru, rw, q, qd, tau, eps, qdd):
    """Only qdd (fast route, module doc). Returns (status, rank)."""
    n = q.shape[0]
    m = rkind.shape[0]
    k = min(m, n)
    st, r, T, U, ok = cfd_fast(
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
        eps,
        False,
        qdd,
        np.empty(n),
        np.empty(m),
        np.zeros(k),
        np.empty(m),
        np.empty((m, n)),
        np.empty((n, n)),
        np.empty((m, k)),
        np.empty((k, k)),
        np.empty(m, dtype=np.int64),
        -1,
    )
    return st, r


@njit(cache=_CACHE)
def nr_project_fast(par, geo, fpar, fR, fp, lpf, lpr, rkind, ru, rw, q, tol, max_iter, eps, phi_out):
    """:func:`robot_dynamics.algorithms._projection_kernels.nr_project` (all joints free) with A+ from
    the certified URV factors (SVD fallback per iteration). Returns the same tuple."""
    n = q.shape[0]
    m = rkind.shape[0]
    k = min(m, n)
    A = np.empty((m, n))
    Rw = np.empty((n, 3, 3))
    pw = np.empty((n, 3))
    Q = np.empty((n, n))
    Qb = np.empty((m, k))
    Rbi = np.empty((k, k))
    piv = np.empty(m, dtype=np.int64)
    P = np.empty((n, n))
    Ap = np.empty((n, m))
    s = np.empty(k)
    dq = np.empty(n)
    zero = np.zeros(n)
    dummy = np.empty(m)
    r = 0
    res = 0.0
    for it in range(max_iter + 1):
        PK._constraints(
            par, geo, fpar, fR, fp, lpf, lpr, rkind, ru, rw, q, zero, True, False, phi_out, A, dummy, Rw, pw
        )
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
        if not PK._finite(A):
            return it, np.inf, r, False
        ok, r = _urv(A, eps, Q, Qb, Rbi, piv)
        if ok:
            _pinv_apply(Q, Qb, Rbi, piv, r, phi_out, dq)
            for a in range(n):
                q[a] -= dq[a]
        else:
            r = PK._projector(A, eps, P, Ap, s)
            for a in range(n):
                acc = 0.0
                for j in range(m):
                    acc += Ap[a, j] * phi_out[j]
                q[a] -= acc
    return max_iter, res, r, False


@njit(cache=_CACHE)
def rk4_step_fast(par, geo, ine, grav, fpar, fR, fp, lpf, lpr, rkind, ru, rw, q, qd, tau, dt, eps, q_out, qd_out, a0):
    """:func:`robot_dynamics.algorithms._projection_kernels.rk4_step` (variant Mc) on the fast route."""
    n = q.shape[0]
    k2 = np.empty(n)
    k3 = np.empty(n)
    k4 = np.empty(n)
    qs = np.empty(n)
    vs = np.empty(n)
    st, r1 = cfd_qdd_fast(par, geo, ine, grav, fpar, fR, fp, lpf, lpr, rkind, ru, rw, q, qd, tau, eps, a0)
    if st:
        return st, r1
    h2 = 0.5 * dt
    for i in range(n):
        qs[i] = q[i] + h2 * qd[i]
        vs[i] = qd[i] + h2 * a0[i]
    v2 = vs.copy()
    st, r2 = cfd_qdd_fast(par, geo, ine, grav, fpar, fR, fp, lpf, lpr, rkind, ru, rw, qs, vs, tau, eps, k2)
    if st:
        return st, r2
    for i in range(n):
        qs[i] = q[i] + h2 * v2[i]
        vs[i] = qd[i] + h2 * k2[i]
    v3 = vs.copy()
    st, r3 = cfd_qdd_fast(par, geo, ine, grav, fpar, fR, fp, lpf, lpr, rkind, ru, rw, qs, vs, tau, eps, k3)
    if st:
        return st, r3
    for i in range(n):
        qs[i] = q[i] + dt * v3[i]
        vs[i] = qd[i] + dt * k3[i]
    v4 = vs.copy()
    st, r4 = cfd_qdd_fast(par, geo, ine, grav, fpar, fR, fp, lpf, lpr, rkind, ru, rw, qs, vs, tau, eps, k4)
    if st:
        return st, r4
    for i in range(n):
        q_out[i] = q[i] + dt / 6.0 * (qd[i] + 2.0 * v2[i] + 2.0 * v3[i] + v4[i])
        qd_out[i] = qd[i] + dt / 6.0 * (a0[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i])
    return 0, min(min(r1, r2), min(r3, r4))


@njit(cache=_CACHE)
def end_of_step_fast(
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
    """:func:`robot_dynamics.algorithms._projection_kernels.end_of_step` (variant Mc, vp_mode none or
    Euclidean) on the fast route: the velocity projection uses the URV factors of the final
    evaluation when they are certified (``qd <- Q2 Q2^T qd``). Same return tuple."""
    n = q.shape[0]
    m = rkind.shape[0]
    it = 0
    ok = True
    if pos_proj and m > 0:
        it, res, rr, ok = nr_project_fast(par, geo, fpar, fR, fp, lpf, lpr, rkind, ru, rw, q, nr_tol, nr_max, eps, phi)
    viol = 0.0
    k = min(m, n)
    Q = np.empty((n, n))
    Qb = np.empty((m, k))
    Rbi = np.empty((k, k))
    piv = np.empty(m, dtype=np.int64)
    A = np.empty((m, n))
    r_in = -1
    if m > 0 and vp_mode != PK.VP_NONE:
        # ||A qd|| before, then qd <- P qd with the certified factors of A(q), which the
        # end-of-step dynamics reuse (A does not depend on qd)
        Rw = np.empty((n, 3, 3))
        pw = np.empty((n, 3))
        zero = np.zeros(n)
        dummy = np.empty(m)
        PK._constraints(par, geo, fpar, fR, fp, lpf, lpr, rkind, ru, rw, q, zero, True, False, phi, A, dummy, Rw, pw)
        for j in range(m):
            acc = 0.0
            for c in range(n):
                acc += A[j, c] * qd[c]
            viol += acc * acc
        viol = np.sqrt(viol)
        if not (PK._finite(A) and np.isfinite(viol)):
            viol = np.inf
        else:
            cert, r = _urv(A, eps, Q, Qb, Rbi, piv)
            if cert:
                w = np.empty(r)
                for c in range(r):
                    acc = 0.0
                    for a in range(n):
                        acc += Q[a, c] * qd[a]
                    w[c] = acc
                for a in range(n):
                    acc = 0.0
                    for c in range(r):
                        acc += Q[a, c] * w[c]
                    qd[a] -= acc
                r_in = r
            else:
                PK.vel_project(par, geo, ine, fpar, fR, fp, lpf, lpr, rkind, ru, rw, q, qd, vp_mode, eps)
    st, r, T, U, cert = cfd_fast(
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
        eps,
        True,
        a1,
        F,
        lam,
        s,
        phi,
        A,
        Q,
        Qb,
        Rbi,
        piv,
        r_in,
    )
    if m > 0 and vp_mode == PK.VP_NONE:
        for j in range(m):
            acc = 0.0
            for c in range(n):
                acc += A[j, c] * qd[c]
            viol += acc * acc
        viol = np.sqrt(viol)
    return st, it, ok, viol, r, T, U


@njit(cache=_CACHE)
def sim_step_rk4_fast(
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
    """:func:`robot_dynamics.algorithms._projection_kernels.sim_step_rk4` (variant Mc, vp_mode none or
    Euclidean) on the fast route, one compiled call. Same return tuple."""
    st, rmin = rk4_step_fast(
        par, geo, ine, grav, fpar, fR, fp, lpf, lpr, rkind, ru, rw, q, qd, tau, dt, eps, q_out, qd_out, a0
    )
    if st:
        return st, rmin, 0, False, 0.0, 0, 0.0, 0.0
    st, it, ok, viol, r, T, U = end_of_step_fast(
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
