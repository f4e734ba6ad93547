"""Numba kernels of the recursive 2nd-order PKM inverse dynamics (seed 004; private).

Conventions (as the rest of the package): twists ``V = (v, w)`` and wrenches ``W = (f, t)``
linear first, body-fixed (expressed in the body frame). Poses are (R (3, 3), p (3,)).
``Ad_C Y = (R y_v + p x R y_w, R y_w)``, ``ad_V Y = (w x y_v + v x y_w, w x y_w)``,
``ad_V^T W = (-w x f, -v x f - w x t)``.

Limb data, all limbs structurally identical (``L`` limbs of ``N`` 1-DOF joints each, the last
body frame being the platform frame of every limb):

* ``BR`` (L, N, 3, 3), ``Bp`` (L, N, 3): pose of body i relative to body i-1 at theta = 0;
* ``X`` (L, N, 6): joint screw of body i in its own frame;
* ``M`` (L, N, 6, 6): body inertia in its own frame (zero for the massless bodies, i.e. the
  cut-joint bodies of limbs 1..L-1, so that Q of the cut joints is identically 0 and
  ``sum F^T Q`` equals the paper's ``sum Fbar^T Qbar``, erratum E7).

Status codes: 0 ok, 1 IK did not converge, 2 singular limb Jacobian J_t, 3 singular J_IK,
4 non-finite input.
"""
import numpy as np
from numba import njit

_C = True


@njit(cache=_C, inline='always')
def _cross(a0, a1, a2, b0, b1, b2):
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@njit(cache=_C)
def ad_mul(V, Y, out):
    """out = ad_V Y (linear first)."""
    c0, c1, c2 = _cross(V[3], V[4], V[5], Y[0], Y[1], Y[2])
    d0, d1, d2 = _cross(V[0], V[1], V[2], Y[3], Y[4], Y[5])
    e0, e1, e2 = _cross(V[3], V[4], V[5], Y[3], Y[4], Y[5])
    out[0] = c0 + d0
    out[1] = c1 + d1
    out[2] = c2 + d2
    out[3] = e0
    out[4] = e1
    out[5] = e2


@njit(cache=_C)
def adT_mul(V, W, out):
    """out = ad_V^T W = (-w x f, -v x f - w x t)."""
    c0, c1, c2 = _cross(V[3], V[4], V[5], W[0], W[1], W[2])
    d0, d1, d2 = _cross(V[0], V[1], V[2], W[0], W[1], W[2])
    e0, e1, e2 = _cross(V[3], V[4], V[5], W[3], W[4], W[5])
    out[0] = -c0
    out[1] = -c1
    out[2] = -c2
    out[3] = -d0 - e0
    out[4] = -d1 - e1
    out[5] = -d2 - e2


@njit(cache=_C)
def Ad_mul(R, p, Y, out):
    """out = Ad_(R,p) Y."""
    a0 = R[0, 0] * Y[3] + R[0, 1] * Y[4] + R[0, 2] * Y[5]
    a1 = R[1, 0] * Y[3] + R[1, 1] * Y[4] + R[1, 2] * Y[5]
    a2 = R[2, 0] * Y[3] + R[2, 1] * Y[4] + R[2, 2] * Y[5]
    b0 = R[0, 0] * Y[0] + R[0, 1] * Y[1] + R[0, 2] * Y[2]
    b1 = R[1, 0] * Y[0] + R[1, 1] * Y[1] + R[1, 2] * Y[2]
    b2 = R[2, 0] * Y[0] + R[2, 1] * Y[1] + R[2, 2] * Y[2]
    c0, c1, c2 = _cross(p[0], p[1], p[2], a0, a1, a2)
    out[0] = b0 + c0
    out[1] = b1 + c1
    out[2] = b2 + c2
    out[3] = a0
    out[4] = a1
    out[5] = a2


@njit(cache=_C)
def AdT_mul(R, p, W, out):
    """out = Ad_(R,p)^T W = (R^T f, R^T (t - p x f))."""
    c0, c1, c2 = _cross(p[0], p[1], p[2], W[0], W[1], W[2])
    t0, t1, t2 = W[3] - c0, W[4] - c1, W[5] - c2
    f0, f1, f2 = W[0], W[1], W[2]
    for r in range(3):
        out[r] = R[0, r] * f0 + R[1, r] * f1 + R[2, r] * f2
        out[3 + r] = R[0, r] * t0 + R[1, r] * t1 + R[2, r] * t2


@njit(cache=_C)
def screw_exp(X, th, R, p):
    """(R, p) = exp(X^ th) for a revolute (|w| = 1) or prismatic (w = 0) screw X = (v, w)."""
    w0, w1, w2 = X[3], X[4], X[5]
    nw = w0 * w0 + w1 * w1 + w2 * w2
    if nw < 0.5:
        for r in range(3):
            for c in range(3):
                R[r, c] = 1.0 if r == c else 0.0
            p[r] = X[r] * th
        return
    s, c = np.sin(th), np.cos(th)
    t = 1.0 - c
    R[0, 0] = c + t * w0 * w0
    R[0, 1] = t * w0 * w1 - s * w2
    R[0, 2] = t * w0 * w2 + s * w1
    R[1, 0] = t * w0 * w1 + s * w2
    R[1, 1] = c + t * w1 * w1
    R[1, 2] = t * w1 * w2 - s * w0
    R[2, 0] = t * w0 * w2 - s * w1
    R[2, 1] = t * w1 * w2 + s * w0
    R[2, 2] = c + t * w2 * w2
    # p = (I th + (1 - c) w~ + (th - s) w~^2) v
    v0, v1, v2 = X[0], X[1], X[2]
    a0, a1, a2 = _cross(w0, w1, w2, v0, v1, v2)
    b0, b1, b2 = _cross(w0, w1, w2, a0, a1, a2)
    p[0] = th * v0 + t * a0 + (th - s) * b0
    p[1] = th * v1 + t * a1 + (th - s) * b1
    p[2] = th * v2 + t * a2 + (th - s) * b2


@njit(cache=_C)
def _compose(R1, p1, R2, p2, R, p):
    """(R, p) = (R1, p1) (R2, p2)."""
    for r in range(3):
        for c in range(3):
            R[r, c] = R1[r, 0] * R2[0, c] + R1[r, 1] * R2[1, c] + R1[r, 2] * R2[2, c]
        p[r] = p1[r] + R1[r, 0] * p2[0] + R1[r, 1] * p2[1] + R1[r, 2] * p2[2]


@njit(cache=_C)
def _rel(R1, p1, R2, p2, R, p):
    """(R, p) = (R1, p1)^-1 (R2, p2)."""
    d0, d1, d2 = p2[0] - p1[0], p2[1] - p1[1], p2[2] - p1[2]
    for r in range(3):
        for c in range(3):
            R[r, c] = R1[0, r] * R2[0, c] + R1[1, r] * R2[1, c] + R1[2, r] * R2[2, c]
        p[r] = R1[0, r] * d0 + R1[1, r] * d1 + R1[2, r] * d2


@njit(cache=_C)
def limb_fk(BR, Bp, X, th, CR, Cp, tR, tp):
    """World poses C_i (CR (N, 3, 3), Cp (N, 3)) of the N bodies of one limb."""
    N = th.shape[0]
    for i in range(N):
        screw_exp(X[i], th[i], tR, tp)
        if i == 0:
            _compose(BR[0], Bp[0], tR, tp, CR[0], Cp[0])
        else:
            _compose(CR[i - 1], Cp[i - 1], BR[i], Bp[i], CR[i], Cp[i])
            # CR[i] currently = C_{i-1} B_i; multiply by exp
            for r in range(3):
                a0, a1, a2 = CR[i, r, 0], CR[i, r, 1], CR[i, r, 2]
                for c in range(3):
                    CR[i, r, c] = a0 * tR[0, c] + a1 * tR[1, c] + a2 * tR[2, c]
                Cp[i, r] = Cp[i, r] + a0 * tp[0] + a1 * tp[1] + a2 * tp[2]


@njit(cache=_C)
def lu_factor(A, piv):
    """In-place LU with partial pivoting of the square A; False if singular."""
    n = A.shape[0]
    scale = 0.0
    for r in range(n):
        for c in range(n):
            scale = max(scale, abs(A[r, c]))
    if scale == 0.0:
        return False
    for k in range(n):
        m = k
        best = abs(A[k, k])
        for r in range(k + 1, n):
            if abs(A[r, k]) > best:
                best = abs(A[r, k])
                m = r
        if best <= 1e-13 * scale:
            return False
        piv[k] = m
        if m != k:
            for c in range(n):
                tmp = A[k, c]
                A[k, c] = A[m, c]
                A[m, c] = tmp
        inv = 1.0 / A[k, k]
        for r in range(k + 1, n):
            f = A[r, k] * inv
            A[r, k] = f
            for c in range(k + 1, n):
                A[r, c] -= f * A[k, c]
    return True


@njit(cache=_C)
def lu_solve(LU, piv, b):
    """Solve in place (LU from :func:`lu_factor`)."""
    n = LU.shape[0]
    for k in range(n):
        m = piv[k]
        if m != k:
            tmp = b[k]
            b[k] = b[m]
            b[m] = tmp
    for r in range(n):
        s = b[r]
        for c in range(r):
            s -= LU[r, c] * b[c]
        b[r] = s
    for r in range(n - 1, -1, -1):
        s = b[r]
        for c in range(r + 1, n):
            s -= LU[r, c] * b[c]
        b[r] = s / LU[r, r]


@njit(cache=_C)
def lu_solve_T(LU, piv, b):
    """Solve A^T x = b in place (LU of A from :func:`lu_factor`)."""
    n = LU.shape[0]
    # A = P^T L U  ->  A^T = U^T L^T P ; solve U^T y = b, L^T z = y, x = P^T z
    for r in range(n):
        s = b[r]
        for c in range(r):
            s -= LU[c, r] * b[c]
        b[r] = s / LU[r, r]
    for r in range(n - 1, -1, -1):
        s = b[r]
        for c in range(r + 1, n):
            s -= LU[c, r] * b[c]
        b[r] = s
    for k in range(n - 1, -1, -1):
        m = piv[k]
        if m != k:
            tmp = b[k]
            b[k] = b[m]
            b[m] = tmp


@njit(cache=_C)
def limb_fk_ne_d2(BR, Bp, X, M, g, th, CR, Cp, Vb, Q, wk, tR, tp):
    """Forward twist recursion to 3rd order and backward Newton-Euler with its 1st and 2nd time
    derivatives for one serial limb (brief A3 forward part, A4 option G1, A5 with the loop
    range of erratum E8: all N bodies, W_{N+1} = 0).

    th (5, N): theta .. theta'''' ; CR, Cp: world poses from :func:`limb_fk` (gravity
    direction only); g (3,) gravity in the world. Output Vb (4, N, 6): V, Vd, Vdd, Vddd of
    every body (gravity-free, body frame); Q (3, N): Q, Qd, Qdd. Scratch: wk (28, 6), tR (3, 3),
    tp (3,).
    """
    N = th.shape[1]
    A0 = wk[0]
    A1 = wk[1]
    A2 = wk[2]
    A3 = wk[3]
    t1 = wk[4]
    t2 = wk[5]
    t3 = wk[6]
    # ---- forward: V_i^(k) = Ad(C_{i,i-1}) V_{i-1}^(k) + ...
    for i in range(N):
        x = X[i]
        d1, d2, d3, d4 = th[1, i], th[2, i], th[3, i], th[4, i]
        if i == 0:
            for r in range(6):
                A0[r] = 0.0
                A1[r] = 0.0
                A2[r] = 0.0
                A3[r] = 0.0
        else:
            _rel(CR[i], Cp[i], CR[i - 1], Cp[i - 1], tR, tp)
            Ad_mul(tR, tp, Vb[0, i - 1], A0)
            Ad_mul(tR, tp, Vb[1, i - 1], A1)
            Ad_mul(tR, tp, Vb[2, i - 1], A2)
            Ad_mul(tR, tp, Vb[3, i - 1], A3)
        V = Vb[0, i]
        Vd = Vb[1, i]
        Vdd = Vb[2, i]
        Vddd = Vb[3, i]
        for r in range(6):
            V[r] = A0[r] + x[r] * d1
        ad_mul(x, V, t1)                       # ad_X V
        for r in range(6):
            Vd[r] = A1[r] - d1 * t1[r] + x[r] * d2
        ad_mul(x, Vd, t2)                      # ad_X Vd
        ad_mul(x, t1, t3)                      # ad_X^2 V
        for r in range(6):
            Vdd[r] = A2[r] + x[r] * d3 - (d2 * t1[r] + 2.0 * d1 * t2[r]) - d1 * d1 * t3[r]
        # Vddd = A Vddd_{i-1} + X th4 - ad_X (th3 V + 3 th2 Vd + 3 th1 Vdd)
        #        - 3 th1 ad_X^2 (th2 V + th1 Vd) - th1^3 ad_X^3 V
        for r in range(6):
            wk[7, r] = d3 * V[r] + 3.0 * d2 * Vd[r] + 3.0 * d1 * Vdd[r]
            wk[8, r] = d2 * V[r] + d1 * Vd[r]
        ad_mul(x, wk[7], wk[9])
        ad_mul(x, wk[8], wk[10])
        ad_mul(x, wk[10], wk[11])              # ad_X^2 (th2 V + th1 Vd)
        ad_mul(x, t3, wk[12])                  # ad_X^3 V
        for r in range(6):
            Vddd[r] = (A3[r] + x[r] * d4 - wk[9, r] - 3.0 * d1 * wk[11, r]
                       - d1 * d1 * d1 * wk[12, r])
    # ---- backward Newton-Euler with derivatives
    W = wk[13]
    Wd = wk[14]
    Wdd = wk[15]
    for r in range(6):
        W[r] = 0.0
        Wd[r] = 0.0
        Wdd[r] = 0.0
    a = wk[16]
    ad1 = wk[17]
    ad2 = wk[18]
    MV = wk[19:23]
    s = wk[23]
    s2 = wk[24]
    for i in range(N - 1, -1, -1):
        # transport the wrench of body i+1 (and its derivatives) into frame i
        if i < N - 1:
            x = X[i + 1]
            d1, d2 = th[1, i + 1], th[2, i + 1]
            _rel(CR[i + 1], Cp[i + 1], CR[i], Cp[i], tR, tp)      # C_{i+1,i}
            adT_mul(x, W, t1)                  # aT W
            adT_mul(x, Wd, t2)                 # aT Wd
            adT_mul(x, t1, t3)                 # aT aT W
            for r in range(6):
                s[r] = Wd[r] - d1 * t1[r]
                s2[r] = Wdd[r] - 2.0 * d1 * t2[r] + d1 * d1 * t3[r] - d2 * t1[r]
            AdT_mul(tR, tp, W, A0)
            AdT_mul(tR, tp, s, A1)
            AdT_mul(tR, tp, s2, A2)
            for r in range(6):
                W[r] = A0[r]
                Wd[r] = A1[r]
                Wdd[r] = A2[r]
        Mi = M[i]
        mass = 0.0
        for r in range(6):
            for c in range(6):
                mass += abs(Mi[r, c])
        if mass > 0.0:
            V = Vb[0, i]
            Vd = Vb[1, i]
            Vdd = Vb[2, i]
            Vddd = Vb[3, i]
            # gravity G1: a = (-R^T g, 0), ad = -ad_V a, add = -ad_Vd a + ad_V ad_V a
            for r in range(3):
                a[r] = -(CR[i, 0, r] * g[0] + CR[i, 1, r] * g[1] + CR[i, 2, r] * g[2])
                a[3 + r] = 0.0
            ad_mul(V, a, t1)
            ad_mul(Vd, a, t2)
            ad_mul(V, t1, t3)
            for r in range(6):
                ad1[r] = -t1[r]
                ad2[r] = -t2[r] + t3[r]
            # M times V, Vd, Vdd, Vddd + gravity terms
            for k in range(4):
                for r in range(6):
                    acc = 0.0
                    for c in range(6):
                        acc += Mi[r, c] * Vb[k, i, c]
                    MV[k, r] = acc
            for r in range(6):
                acc1 = 0.0
                acc2 = 0.0
                acc3 = 0.0
                for c in range(6):
                    acc1 += Mi[r, c] * a[c]
                    acc2 += Mi[r, c] * ad1[c]
                    acc3 += Mi[r, c] * ad2[c]
                W[r] += MV[1, r] + acc1
                Wd[r] += MV[2, r] + acc2
                Wdd[r] += MV[3, r] + acc3
            # - ad_V^T M V
            adT_mul(V, MV[0], t1)
            for r in range(6):
                W[r] -= t1[r]
            # - ad_V^T M Vd - ad_Vd^T M V
            adT_mul(V, MV[1], t1)
            adT_mul(Vd, MV[0], t2)
            for r in range(6):
                Wd[r] -= t1[r] + t2[r]
            # - ad_V^T M Vdd - ad_Vdd^T M V - 2 ad_Vd^T M Vd
            adT_mul(V, MV[2], t1)
            adT_mul(Vdd, MV[0], t2)
            adT_mul(Vd, MV[1], t3)
            for r in range(6):
                Wdd[r] -= t1[r] + t2[r] + 2.0 * t3[r]
        x = X[i]
        q0 = 0.0
        q1 = 0.0
        q2 = 0.0
        for r in range(6):
            q0 += x[r] * W[r]
            q1 += x[r] * Wd[r]
            q2 += x[r] * Wdd[r]
        Q[0, i] = q0
        Q[1, i] = q1
        Q[2, i] = q2


@njit(cache=_C)
def _log_so3(R, out):
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    c = 0.5 * (tr - 1.0)
    c = min(1.0, max(-1.0, c))
    ang = np.arccos(c)
    v0 = 0.5 * (R[2, 1] - R[1, 2])
    v1 = 0.5 * (R[0, 2] - R[2, 0])
    v2 = 0.5 * (R[1, 0] - R[0, 1])
    f = 1.0 if ang < 1e-8 else ang / np.sin(ang)
    out[0] = f * v0
    out[1] = f * v1
    out[2] = f * v2


@njit(cache=_C)
def limb_ik(BR, Bp, X, PR, Pp, th, CR, Cp, J, piv, tol, max_iter, tR, tp, e):
    """Newton-Raphson IK of one limb: C_N(theta) = (PR, Pp), warm-started from ``th`` (updated in
    place). Returns the number of iterations, or -1 (no convergence) / -2 (singular).
    Scratch: tR (3, 3), tp (3,), e (6,)."""
    N = th.shape[0]
    for it in range(max_iter + 1):
        limb_fk(BR, Bp, X, th, CR, Cp, tR, tp)
        _rel(CR[N - 1], Cp[N - 1], PR, Pp, tR, tp)
        e[0], e[1], e[2] = tp[0], tp[1], tp[2]
        _log_so3(tR, e[3:])
        err = 0.0
        for r in range(6):
            err = max(err, abs(e[r]))
        if err <= tol:
            return it
        if it == max_iter:
            break
        for i in range(N):
            _rel(CR[N - 1], Cp[N - 1], CR[i], Cp[i], tR, tp)
            Ad_mul(tR, tp, X[i], J[:, i])
        if not lu_factor(J, piv):
            return -2
        lu_solve(J, piv, e)
        for i in range(N):
            th[i] += e[i]
    return -1


@njit(cache=_C)
def pkm_id_d2_batch(BR, Bp, X, M, act, g, PR, Pp, VT, th_guess, tol, max_iter,
                    TH, U, WT, JIK, status):
    """Recursive PKM inverse dynamics with 1st/2nd time derivatives over a batch of samples.

    Inputs: limb data (module docstring); act (L,) actuated joint index per limb; g (3,);
    PR (S, 3, 3), Pp (S, 3) platform poses; VT (S, 4, 6) V_t, Vd_t, Vdd_t, Vddd_t (body-fixed,
    platform frame, P_t = D_t = I); th_guess (L, N) IK start of the first sample (later samples
    start from the previous solution). Outputs: TH (S, 5, L, N) limb joint derivatives 0..4;
    U (S, 3, L) u, ud, udd (limb order); WT (S, 3, 6) w, wd, wdd; JIK (S, 3, L, 6) J_IK and its
    first two derivatives; status (S,).
    """
    S = PR.shape[0]
    L = BR.shape[0]
    N = BR.shape[1]
    th = th_guess.copy()
    CR = np.empty((N, 3, 3))
    Cp = np.empty((N, 3))
    J = np.empty((N, N))
    Jp = np.empty((N, 6))        # column i of J_p stored as row i
    Jd = np.empty((N, 6))
    Jdd = np.empty((N, 6))
    Jddd = np.empty((N, 6))
    LU = np.empty((6, N))
    piv = np.empty(N, dtype=np.int64)
    F = np.empty((N, 6))
    Fd = np.empty((N, 6))
    Fdd = np.empty((N, 6))
    T1 = np.empty((N, 6))
    dV = np.empty((3, 6))
    b = np.empty(6)
    t1 = np.empty(6)
    t2 = np.empty(6)
    t3 = np.empty(6)
    tR = np.empty((3, 3))
    tp = np.empty(3)
    Vb = np.empty((4, N, 6))
    Qv = np.empty((3, N))
    wk = np.empty((28, 6))
    e6 = np.empty(6)
    thl = np.empty((5, N))
    JI = np.empty((L, L))
    pivL = np.empty(L, dtype=np.int64)
    rhs = np.empty(L)
    for s in range(S):
        status[s] = 0
        ok = True
        for r in range(4):
            for c in range(6):
                if not np.isfinite(VT[s, r, c]):
                    ok = False
        for r in range(3):
            if not np.isfinite(Pp[s, r]):
                ok = False
            for c in range(3):
                if not np.isfinite(PR[s, r, c]):
                    ok = False
        if not ok:
            status[s] = 4
            continue
        for k in range(3):
            for c in range(6):
                WT[s, k, c] = 0.0
        for l in range(L):
            # ---- order 0: IK (Newton), FK, J_p (eq. 22)
            it = limb_ik(BR[l], Bp[l], X[l], PR[s], Pp[s], th[l], CR, Cp, J, piv, tol, max_iter,
                         tR, tp, e6)
            if it < 0:
                status[s] = 1 if it == -1 else 2
                break
            limb_fk(BR[l], Bp[l], X[l], th[l], CR, Cp, tR, tp)
            for i in range(N):
                _rel(CR[N - 1], Cp[N - 1], CR[i], Cp[i], tR, tp)
                Ad_mul(tR, tp, X[l, i], Jp[i])
                for r in range(6):
                    LU[r, i] = Jp[i, r]
            if not lu_factor(LU, piv):
                status[s] = 2
                break
            # F = J_t^-1 (D_t = P_t = I): row j of F (as F[:, j] stored F[j] = column j of F^T)
            # we store F as (N, 6): F[i, :] = row i of J_t^-1
            for c in range(6):
                for r in range(6):
                    b[r] = 1.0 if r == c else 0.0
                lu_solve(LU, piv, b)
                for r in range(N):
                    F[r, c] = b[r]
            for i in range(N):
                thl[0, i] = th[l, i]
            # ---- order 1: thd = F V_t (eq. 6)
            for i in range(N):
                acc = 0.0
                for c in range(6):
                    acc += F[i, c] * VT[s, 0, c]
                thl[1, i] = acc
            # ---- orders 2..4: suffix sums for Delta V and its derivatives, Lemma 1
            for k in range(3):
                for r in range(6):
                    dV[k, r] = 0.0
            for order in range(2, 5):
                # derivatives of J_p up to order-1 use Delta V^(0..order-2)
                for r in range(6):
                    dV[0, r] = 0.0
                    dV[1, r] = 0.0
                    dV[2, r] = 0.0
                for i in range(N - 1, -1, -1):
                    if i < N - 1:
                        j = i + 1
                        for r in range(6):
                            dV[0, r] += Jp[j, r] * thl[1, j]
                            if order >= 3:
                                dV[1, r] += Jd[j, r] * thl[1, j] + Jp[j, r] * thl[2, j]
                            if order >= 4:
                                dV[2, r] += (Jdd[j, r] * thl[1, j] + 2.0 * Jd[j, r] * thl[2, j]
                                             + Jp[j, r] * thl[3, j])
                    if order == 2:
                        ad_mul(dV[0], Jp[i], t1)
                        for r in range(6):
                            Jd[i, r] = -t1[r]
                    elif order == 3:
                        ad_mul(dV[1], Jp[i], t1)
                        ad_mul(dV[0], Jd[i], t2)
                        for r in range(6):
                            Jdd[i, r] = -t1[r] - t2[r]
                    else:
                        ad_mul(dV[2], Jp[i], t1)
                        ad_mul(dV[1], Jd[i], t2)
                        ad_mul(dV[0], Jdd[i], t3)
                        for r in range(6):
                            Jddd[i, r] = -t1[r] - 2.0 * t2[r] - t3[r]
                # c^nu (eq. 16, coefficients 1 | 1 2 | 1 3 3, erratum E1)
                for r in range(6):
                    acc = VT[s, order - 1, r]
                    for i in range(N):
                        if order == 2:
                            acc -= Jd[i, r] * thl[1, i]
                        elif order == 3:
                            acc -= Jdd[i, r] * thl[1, i] + 2.0 * Jd[i, r] * thl[2, i]
                        else:
                            acc -= (Jddd[i, r] * thl[1, i] + 3.0 * Jdd[i, r] * thl[2, i]
                                    + 3.0 * Jd[i, r] * thl[3, i])
                    b[r] = acc
                lu_solve(LU, piv, b)                      # eq. 15 with E2 brackets
                for i in range(N):
                    thl[order, i] = b[i]
            for k in range(5):
                for i in range(N):
                    TH[s, k, l, i] = thl[k, i]
            # ---- backward Newton-Euler and derivatives
            limb_fk_ne_d2(BR[l], Bp[l], X[l], M[l], g, thl, CR, Cp, Vb, Qv, wk, tR, tp)
            # ---- Fd = -F Jd F, Fdd = 2 Fd J Fd - F Jdd F   (J_t = J_p, rows i <-> columns)
            # T1 = Jd F  (6 x 6): (Jd F)[r, c] = sum_i Jd[i, r] F[i, c]
            for r in range(6):
                for c in range(6):
                    acc = 0.0
                    for i in range(N):
                        acc += Jd[i, r] * F[i, c]
                    T1[r, c] = acc
            for r in range(N):
                for c in range(6):
                    acc = 0.0
                    for k in range(6):
                        acc += F[r, k] * T1[k, c]
                    Fd[r, c] = -acc
            # Fdd = -F (Jdd F + 2 Jd Fd)  (LU-friendly form of brief par. 2.4)
            for r in range(6):
                for c in range(6):
                    acc = 0.0
                    for i in range(N):
                        acc += Jdd[i, r] * F[i, c] + 2.0 * Jd[i, r] * Fd[i, c]
                    T1[r, c] = acc
            for r in range(N):
                for c in range(6):
                    acc = 0.0
                    for k in range(6):
                        acc += F[r, k] * T1[k, c]
                    Fdd[r, c] = -acc
            # ---- assembly (eqs. 14, 19, 20)
            for c in range(6):
                a0 = 0.0
                a1 = 0.0
                a2 = 0.0
                for i in range(N):
                    a0 += F[i, c] * Qv[0, i]
                    a1 += F[i, c] * Qv[1, i] + Fd[i, c] * Qv[0, i]
                    a2 += F[i, c] * Qv[2, i] + 2.0 * Fd[i, c] * Qv[1, i] + Fdd[i, c] * Qv[0, i]
                WT[s, 0, c] += a0
                WT[s, 1, c] += a1
                WT[s, 2, c] += a2
                JIK[s, 0, l, c] = F[act[l], c]
                JIK[s, 1, l, c] = Fd[act[l], c]
                JIK[s, 2, l, c] = Fdd[act[l], c]
        if status[s] != 0:
            continue
        # ---- u = J_IK^-T w; ud, udd
        for r in range(L):
            for c in range(L):
                JI[r, c] = JIK[s, 0, r, c]
        if L != 6 or not lu_factor(JI, pivL):
            status[s] = 3
            continue
        for r in range(L):
            rhs[r] = WT[s, 0, r]
        lu_solve_T(JI, pivL, rhs)
        for r in range(L):
            U[s, 0, r] = rhs[r]
        for r in range(L):
            acc = WT[s, 1, r]
            for c in range(L):
                acc -= JIK[s, 1, c, r] * U[s, 0, c]
            rhs[r] = acc
        lu_solve_T(JI, pivL, rhs)
        for r in range(L):
            U[s, 1, r] = rhs[r]
        for r in range(L):
            acc = WT[s, 2, r]
            for c in range(L):
                acc -= JIK[s, 2, c, r] * U[s, 0, c] + 2.0 * JIK[s, 1, c, r] * U[s, 1, c]
            rhs[r] = acc
        lu_solve_T(JI, pivL, rhs)
        for r in range(L):
            U[s, 2, r] = rhs[r]
