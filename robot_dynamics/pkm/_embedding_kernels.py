"""Numba kernels of the constraint embedding (private; used by :mod:`.embedding`).

One limb is passed as the packed tuple ``kp`` built once per model by
:func:`robot_dynamics.pkm.embedding.PKM._pack` (everything constant per limb)::

    0 par (n,) int64, 1 geo (n, 28), 2 ine (n, 3, 3), 3 grav (3,)     (limb tree, _kernels layout)
    4 fpar (nf,) int64, 5 fR (nf, 3, 3), 6 fp (nf, 3)                  frame 0 = platform frame,
                                                                       1 + 2 l / 2 + 2 l = cut
                                                                       frames a / b of loop l
    7 LI (nL, 6) int64: npos, nrot, first row, kind (0 Newton, 1 linear, 2 nothing), ny, nq
    8 LD (nL, 3, 3) position directions, 9 LR (nL, 3, 2, 3) orientation pairs (loop frames)
    10 LY, 11 LQ, 12 LS (nL, w) int64: dependent / independent joints, selected rows of G_y
    13 LK (nL, w, w), 14 Ly0 (nL, w), 15 Lq0 (nL, w): linear resolver y = y0 + K (q - q0)
    16 Ltol (nL,): per-loop Newton tolerance (0: the global one), 17 Lmax (nL,) int64
    18 qi (d,) int64 independent joints, 19 qcol (n,) int64 column of a joint in qi (-1)
    20 S (d, 6) float: limb task rows over the platform twist (v, w) (LWA, linear first);
       rows of the identity select x, y, z, rx, ry, rz; 21 D (d, dp)

Platform pose buffers ``p`` are (12,): position (3,) then the rotation matrix row-major (9,).
Targets are (12,) in the same layout. The pose error is ``e = (p* - p, log(R* R^T))`` (world
axes, (6,)); the limb task error is ``S e``.

The arithmetic is the one of the former pure-Python evaluator (same rows, same order, LU with
partial pivoting like LAPACK's gesv), so iteration counts and results agree to rounding.
Status codes: 0 ok, 1 outer loop did not converge, 2 singular L_t, 3 inner loop closure did
not converge, 4 singular G_y.
"""

import math

import numpy as np
from numba import njit

from robot_dynamics.algorithms._tree_kernels import (
    _rnea_one,
    frame_state,
    mass_matrix,
    rnea_buffers,
    world_buffers,
    world_kinematics,
)
from robot_dynamics.algorithms._projection_kernels import loop_row
from robot_dynamics.spatial.linalg import dot3, lu_factor, lu_solve, matmul, matvec

_C = True


# --------------------------------------------------------------------------- small algebra
@njit(cache=_C)
def _lu(A):
    """LU (:func:`robot_dynamics.spatial.linalg.lu_factor`) of a copy of the square A. Returns
    (LU, piv, sign of det A, ok); ok False (sign 0) if a pivot is 0 or not finite."""
    k = A.shape[0]
    LU = A.copy()
    piv = np.empty(k, dtype=np.int64)
    dmin, dmax, sign = lu_factor(LU, k, k, piv)
    ok = dmin > 0.0 and dmax < np.inf
    return LU, piv, sign if ok else 0.0, ok


@njit(cache=_C)
def _lu_solve(LU, piv, b):
    """x = A^-1 b (a new array) from the factors of :func:`_lu`."""
    x = b.copy()
    lu_solve(LU, piv, x)
    return x


@njit(cache=_C)
def _absmax(x):
    m = 0.0
    for v in x:
        if not np.isfinite(v):
            return np.inf
        if abs(v) > m:
            m = abs(v)
    return m


# --------------------------------------------------------------------------- kinematics
@njit(cache=_C)
def nrows(kp):
    LI = kp[7]
    m = 0
    for l in range(LI.shape[0]):
        m += LI[l, 0] + LI[l, 1]
    return m


@njit(cache=_C)
def terms(kp, th, thd, vel, p, J, acc0, phi, A, bias):
    """Platform position p (3,), LWA Jacobian J (6, n), Jdot thd (6,) (vel), closure
    phi (m,), A (m, n), bias = Adot thd (m,) (vel) of the limb at (th, thd)."""
    par, geo, fpar, fR, fp = kp[0], kp[1], kp[4], kp[5], kp[6]
    n = th.shape[0]
    Rw, pw, W, Vo, Al, Ao = world_buffers(n)
    world_kinematics(par, geo, th, thd, np.zeros(n), Rw, pw, W, Vo, Al, Ao)
    FR = np.empty((2, 3, 3))
    FS = np.empty((2, 5, 3))
    FJ = np.empty((2, 6, n))
    t = np.empty((9, 3))
    frame_state(par, geo, Rw, pw, W, Vo, Al, Ao, fpar[0], fR[0], fp[0], FR[0], FS[0], J)
    for a in range(3):
        p[a] = FS[0, 0, a]
        for b in range(3):
            p[3 + 3 * a + b] = FR[0, a, b]
    if vel:
        for a in range(3):
            acc0[a] = FS[0, 4, a]
            acc0[3 + a] = FS[0, 3, a]
    LI, LD, LR = kp[7], kp[8], kp[9]
    for l in range(LI.shape[0]):
        npos, nrot, r = LI[l, 0], LI[l, 1], LI[l, 2]
        for k in range(2):
            f = 1 + 2 * l + k
            frame_state(par, geo, Rw, pw, W, Vo, Al, Ao, fpar[f], fR[f], fp[f], FR[k], FS[k], FJ[k])
        for i in range(npos):
            loop_row(0, LD[l, i], LD[l, i], FR, FS, FJ, True, vel, r, phi, A, bias, t)
            r += 1
        for i in range(nrot):
            loop_row(1, LR[l, i, 0], LR[l, i, 1], FR, FS, FJ, True, vel, r, phi, A, bias, t)
            r += 1


@njit(cache=_C)
def _workspace(kp, n):
    """Buffers (p, J, acc0, phi, A, bias) of :func:`terms` for a limb of n joints."""
    m = nrows(kp)
    return np.empty(12), np.empty((6, n)), np.empty(6), np.empty(m), np.empty((m, n)), np.empty(m)


@njit(cache=_C)
def _gy(kp, l, A):
    LY, LS = kp[10], kp[12]
    ny = kp[7][l, 4]
    G = np.empty((ny, ny))
    for a in range(ny):
        for b in range(ny):
            G[a, b] = A[LS[l, a], LY[l, b]]
    return G


@njit(cache=_C)
def build_H(kp, A, H):
    """H (n, d): theta_dot = H q_dot (columns ordered as qi). Returns False if a G_y is
    singular."""
    LI, LY, LQ, LS, LK = kp[7], kp[10], kp[11], kp[12], kp[13]
    qi, qcol = kp[18], kp[19]
    H[:, :] = 0.0
    for c in range(qi.shape[0]):
        H[qi[c], c] = 1.0
    for l in range(LI.shape[0]):
        kind, ny, nq = LI[l, 3], LI[l, 4], LI[l, 5]
        if kind == 1:
            for a in range(ny):
                for b in range(nq):
                    H[LY[l, a], qcol[LQ[l, b]]] = LK[l, a, b]
        elif kind == 0:
            LU, piv, s, ok = _lu(_gy(kp, l, A))
            if not ok:
                return False
            col = np.empty(ny)
            for b in range(nq):
                for a in range(ny):
                    col[a] = A[LS[l, a], LQ[l, b]]
                x = _lu_solve(LU, piv, col)
                for a in range(ny):
                    H[LY[l, a], qcol[LQ[l, b]]] = -x[a]
    return True


@njit(cache=_C)
def hdot_qd(kp, A, bias, out):
    """Hdot q_dot (n,) = [-G_y^-1 Gdot theta_dot; 0] per Newton loop. False if G_y singular."""
    LI, LY, LS = kp[7], kp[10], kp[12]
    out[:] = 0.0
    for l in range(LI.shape[0]):
        if LI[l, 3] == 0:
            ny = LI[l, 4]
            LU, piv, s, ok = _lu(_gy(kp, l, A))
            if not ok:
                return False
            rhs = np.empty(ny)
            for a in range(ny):
                rhs[a] = bias[LS[l, a]]
            x = _lu_solve(LU, piv, rhs)
            for a in range(ny):
                out[LY[l, a]] = -x[a]
    return True


@njit(cache=_C)
def pose_err(target, p, e):
    """Pose error e (6,) = (p* - p, log(R* R^T)) in world axes of a pose p (12,) w.r.t. the
    target (12,) (log: rotation vector, |angle| <= pi)."""
    for a in range(3):
        e[a] = target[a] - p[a]
    E = np.empty((3, 3))
    for a in range(3):
        for b in range(3):
            acc = 0.0
            for k in range(3):
                acc += target[3 + 3 * a + k] * p[3 + 3 * b + k]
            E[a, b] = acc
    c = 0.5 * (E[0, 0] + E[1, 1] + E[2, 2] - 1.0)
    c = min(1.0, max(-1.0, c))
    th = math.acos(c)
    v0 = 0.5 * (E[2, 1] - E[1, 2])
    v1 = 0.5 * (E[0, 2] - E[2, 0])
    v2 = 0.5 * (E[1, 0] - E[0, 1])
    if th < 1e-6:
        f = 1.0 + th * th / 6.0
    elif th < math.pi - 1e-6:
        f = th / math.sin(th)
    else:  # angle ~ pi: axis from the symmetric part
        B = np.empty(3)
        for a in range(3):
            B[a] = math.sqrt(max(0.0, 0.5 * (E[a, a] + 1.0)))
        k = 0
        for a in range(3):
            if B[a] > B[k]:
                k = a
        ax = np.empty(3)
        for a in range(3):
            ax[a] = 0.5 * (E[a, k] + E[k, a]) / (2.0 * B[k]) if a != k else B[k]
        vv = np.array([v0, v1, v2])
        if dot3(ax, vv) < 0.0:
            for a in range(3):
                ax[a] = -ax[a]
        for a in range(3):
            e[3 + a] = th * ax[a]
        return
    e[3] = f * v0
    e[4] = f * v1
    e[5] = f * v2


@njit(cache=_C)
def _task_rows(kp, J, H, e6, Lt, dx):
    """Lt = S J H (d, d), dx = S e6 (d,) with S = kp[20] (d, 6)."""
    S = kp[20]
    n, d = H.shape
    SJ = np.empty(n)
    for i in range(S.shape[0]):
        acc = 0.0
        for r in range(6):
            acc += S[i, r] * e6[r]
        dx[i] = acc
        for k in range(n):
            a2 = 0.0
            for r in range(6):
                if S[i, r] != 0.0:
                    a2 += S[i, r] * J[r, k]
            SJ[k] = a2
        for c in range(d):
            s = 0.0
            for k in range(n):
                s += SJ[k] * H[k, c]
            Lt[i, c] = s


@njit(cache=_C)
def _linear(kp, th):
    LI, LY, LQ, LK, Ly0, Lq0 = kp[7], kp[10], kp[11], kp[13], kp[14], kp[15]
    for l in range(LI.shape[0]):
        if LI[l, 3] == 1:
            for a in range(LI[l, 4]):
                s = Ly0[l, a]
                for b in range(LI[l, 5]):
                    s += LK[l, a, b] * (th[LQ[l, b]] - Lq0[l, b])
                th[LY[l, a]] = s


@njit(cache=_C)
def resolve(kp, th, tol, kmax):
    """Close every loop of the limb at fixed independent joints (reconstructed Alg. 2), in
    place. Returns (status, iterations, residual)."""
    st, its, res, fresh = _resolve_ws(kp, th, tol, kmax, _workspace(kp, th.shape[0]))
    return st, its, res


@njit(cache=_C)
def _resolve_ws(kp, th, tol, kmax, ws):
    """:func:`resolve` on caller buffers. The 4th value is True when the buffers hold
    ``terms`` at the returned th (the converged iterate), so the caller need not recompute.
    ws: the buffers of :func:`_workspace`."""
    p, J, acc0, phi, A, bias = ws
    LI, LY, LS, Ltol = kp[7], kp[10], kp[12], kp[16]
    _linear(kp, th)
    nl = LI.shape[0]
    anyn = False
    for l in range(nl):
        if LI[l, 3] == 0:
            anyn = True
    if not anyn:
        return 0, 0, 0.0, False
    n = th.shape[0]
    z = np.zeros(n)
    for k in range(kmax + 1):
        terms(kp, th, z, False, p, J, acc0, phi, A, bias)
        done = True
        for l in range(nl):
            if LI[l, 3] != 0:
                continue
            r0, nr, ny = LI[l, 2], LI[l, 0] + LI[l, 1], LI[l, 4]
            tl = Ltol[l] if Ltol[l] > 0 else tol
            if _absmax(phi[r0 : r0 + nr]) > tl:
                done = False
                LU, piv, s, ok = _lu(_gy(kp, l, A))
                if not ok:
                    return 4, k, _absmax(phi), False
                rhs = np.empty(ny)
                for a in range(ny):
                    rhs[a] = phi[LS[l, a]]
                x = _lu_solve(LU, piv, rhs)
                for a in range(ny):
                    th[LY[l, a]] -= x[a]
        if done:
            return 0, k, _absmax(phi), True
    return 3, kmax, _absmax(phi), False


@njit(cache=_C)
def limb_ik(kp, target3, seed, compound, tol, max_outer, max_inner, th, inner):
    """IK of one limb (nested Alg. 1 + inner Newton, or compound Alg. 3 with eq. 33), from
    ``seed`` into ``th``; ``inner[k]`` = inner iterations of outer step k.
    Returns (status, outer iterations, task error, closure residual, inner residual)."""
    ws = _workspace(kp, seed.shape[0])
    return _limb_ik_ws(kp, target3, seed, compound, tol, max_outer, max_inner, th, inner, ws)


@njit(cache=_C)
def _limb_ik_ws(kp, target3, seed, compound, tol, max_outer, max_inner, th, inner, ws):
    """:func:`limb_ik` on caller buffers; on success they hold ``terms`` at the solution.
    The terms of the converged inner loop closure are those of the next outer iterate (the
    same th): they are reused instead of evaluated twice (identical numbers)."""
    p, J, acc0, phi, A, bias = ws
    LI, LY, LQ, LS = kp[7], kp[10], kp[11], kp[12]
    qi, qcol = kp[18], kp[19]
    n = seed.shape[0]
    d = qi.shape[0]
    m = nrows(kp)
    e6 = np.empty(6)
    for i in range(n):
        th[i] = seed[i]
    H = np.empty((n, d))
    Lt = np.empty((d, d))
    dx = np.empty(d)
    z = np.zeros(n)
    dxm, gmax = np.inf, np.inf
    fresh = False
    for k in range(max_outer + 1):
        if not fresh:
            terms(kp, th, z, False, p, J, acc0, phi, A, bias)
        fresh = False
        pose_err(target3, p, e6)  # corrected sign (erratum 1)
        S = kp[20]
        for i in range(d):
            acc = 0.0
            for r in range(6):
                acc += S[i, r] * e6[r]
            dx[i] = acc
        dxm = _absmax(dx)
        gmax = _absmax(phi) if m else 0.0
        if dxm <= tol and (not compound or gmax <= tol):
            return 0, k, dxm, gmax, 0.0
        if k == max_outer:
            break
        if not build_H(kp, A, H):
            return 4, k, dxm, gmax, gmax
        _task_rows(kp, J, H, e6, Lt, dx)
        LU, piv, s, ok = _lu(Lt)
        if not ok:
            return 2, k, dxm, gmax, 0.0
        dq = _lu_solve(LU, piv, dx)
        if not compound:
            for i in range(n):
                s2 = 0.0
                for c in range(d):
                    s2 += H[i, c] * dq[c]
                th[i] += s2  # predictor on the tangent space
            st, its, res, fresh = _resolve_ws(kp, th, tol, max_inner, ws)
            if st != 0:
                return st, k, dxm, gmax, res
            inner[k] = its
        else:
            for c in range(d):
                th[qi[c]] += dq[c]
            _linear(kp, th)  # combined step of eq. (33)
            for l in range(LI.shape[0]):
                if LI[l, 3] != 0:
                    continue
                ny, nq = LI[l, 4], LI[l, 5]
                LU2, piv2, s2, ok2 = _lu(_gy(kp, l, A))
                if not ok2:
                    return 4, k, dxm, gmax, gmax
                rhs = np.empty(ny)
                for a in range(ny):
                    v = phi[LS[l, a]]
                    for b in range(nq):
                        v += A[LS[l, a], LQ[l, b]] * dq[qcol[LQ[l, b]]]
                    rhs[a] = v
                x = _lu_solve(LU2, piv2, rhs)
                for a in range(ny):
                    th[LY[l, a]] -= x[a]
            inner[k] = 1
        fin = True
        for i in range(n):
            if not np.isfinite(th[i]):
                fin = False
        if not fin:
            break
    return 1, max_outer, dxm, gmax, 0.0


@njit(cache=_C)
def _cond(F):
    s = np.linalg.svd(F)[1]
    if s[-1] == 0.0:
        return np.inf
    return s[0] / s[-1]


@njit(cache=_C)
def limb_post(kp, th, target3, sig, F):
    """At a limb solution: branch signature sig (1 + nL,) = sign det L_t, sign det G_y per
    Newton loop (NaN otherwise), F = L_t^-1 D_t. Returns (ok, cond F, task error,
    closure residual)."""
    n = th.shape[0]
    ws = _workspace(kp, n)
    terms(kp, th, np.zeros(n), False, *ws)
    d = kp[18].shape[0]
    return _limb_post_ws(kp, th, target3, sig, F, ws, np.empty((n, d)), np.empty((d, d)))


@njit(cache=_C)
def _limb_post_ws(kp, th, target3, sig, F, ws, H, Lt):
    """:func:`limb_post` with the terms (ws of :func:`_workspace`) at th given; fills H and L_t too."""
    p, J, acc0, phi, A, bias = ws
    LI = kp[7]
    d = kp[18].shape[0]
    m = nrows(kp)
    dx = np.empty(d)
    e6 = np.empty(6)
    pose_err(target3, p, e6)
    sig[:] = np.nan
    for l in range(LI.shape[0]):
        if LI[l, 3] == 0:
            LU, piv, s, ok = _lu(_gy(kp, l, A))
            sig[1 + l] = s
    if not build_H(kp, A, H):
        return False, np.inf, np.inf, _absmax(phi)
    _task_rows(kp, J, H, e6, Lt, dx)
    LU, piv, s, ok = _lu(Lt)
    sig[0] = s
    if not ok:
        return False, np.inf, _absmax(dx), _absmax(phi) if m else 0.0
    D = kp[21]
    for c in range(D.shape[1]):
        F[:, c] = _lu_solve(LU, piv, np.ascontiguousarray(D[:, c]))
    return True, _cond(F), _absmax(dx), _absmax(phi) if m else 0.0


@njit(cache=_C)
def limb_solve(kp, target3, seed, compound, tol, max_outer, max_inner, th, inner, sig, F, out):
    """limb_ik + limb_post. out = [outer, task error, closure residual, inner residual,
    cond F]. Returns the status (5: L_t singular at the solution)."""
    n = seed.shape[0]
    d = kp[18].shape[0]
    return limb_solve_hl(
        kp,
        target3,
        seed,
        compound,
        tol,
        max_outer,
        max_inner,
        th,
        inner,
        sig,
        F,
        out,
        np.empty((n, d)),
        np.empty((d, d)),
    )


@njit(cache=_C)
def limb_solve_hl(kp, target3, seed, compound, tol, max_outer, max_inner, th, inner, sig, F, out, H, Lt):
    """:func:`limb_solve` that also returns H (n, d) and L_t (d, d) at the solution (for
    :func:`limb_motion_hl`: the position-level half of the velocity IK at the same th)."""
    ws = _workspace(kp, seed.shape[0])
    st, k, dxm, gmax, res = _limb_ik_ws(kp, target3, seed, compound, tol, max_outer, max_inner, th, inner, ws)
    out[0], out[1], out[2], out[3] = k, dxm, gmax, res
    if st != 0:
        return st
    # the buffers hold the terms at th (limb_ik returns right after evaluating them)
    ok, c, tres, lres = _limb_post_ws(kp, th, target3, sig, F, ws, H, Lt)
    out[1], out[2], out[4] = tres, lres, c
    return 0 if ok else 5


@njit(cache=_C)
def limb_motion(kp, th, xd, xdd, thd, thdd, H, F, Lt):
    """Velocity/acceleration IK of one limb (eqs. 17-30, corrected eq. 29). Returns
    (ok, cond F)."""
    n = th.shape[0]
    d = kp[18].shape[0]
    p, J, acc0, phi, A, bias = _workspace(kp, n)
    dx = np.empty(d)
    terms(kp, th, np.zeros(n), False, p, J, acc0, phi, A, bias)
    if not build_H(kp, A, H):
        return False, np.inf
    _task_rows(kp, J, H, np.zeros(6), Lt, dx)
    LU, piv, s, ok = _lu(Lt)
    if not ok:
        return False, np.inf
    D = kp[21]
    for c in range(D.shape[1]):
        F[:, c] = _lu_solve(LU, piv, np.ascontiguousarray(D[:, c]))
    if not _limb_motion_vel(kp, th, xd, xdd, thd, thdd, H, F, LU, piv):
        return False, np.inf
    return True, _cond(F)


@njit(cache=_C)
def limb_motion_hl(kp, th, xd, xdd, thd, thdd, H, F, Lt):
    """:func:`limb_motion` with H, F and L_t at th given (from :func:`limb_solve_hl` at the
    same th: identical numbers). Returns ok."""
    LU, piv, s, ok = _lu(Lt)
    if not ok:
        return False
    return _limb_motion_vel(kp, th, xd, xdd, thd, thdd, H, F, LU, piv)


@njit(cache=_C)
def _limb_motion_vel(kp, th, xd, xdd, thd, thdd, H, F, LU, piv):
    """Velocity-level half of :func:`limb_motion` (LU: factors of L_t)."""
    n = th.shape[0]
    d = kp[18].shape[0]
    m = nrows(kp)
    D = kp[21]
    p, J, acc0, phi, A, bias = _workspace(kp, n)
    qd = np.empty(d)
    for i in range(d):
        acc = 0.0
        for c in range(D.shape[1]):
            acc += F[i, c] * xd[c]
        qd[i] = acc
    for i in range(n):
        thd[i] = 0.0
        for c in range(d):
            thd[i] += H[i, c] * qd[c]
    terms(kp, th, thd, True, p, J, acc0, phi, A, bias)
    Hdqd = np.zeros(n)
    if m:
        if not hdot_qd(kp, A, bias, Hdqd):
            return False
    ltd = np.empty(d)
    S = kp[20]
    for i in range(d):
        s2 = 0.0
        for r in range(6):
            if S[i, r] != 0.0:
                s3 = acc0[r]
                for k in range(n):
                    s3 += J[r, k] * Hdqd[k]
                s2 += S[i, r] * s3
        ltd[i] = s2  # P_t (Jdot H + J Hdot) qd
    qdd = _lu_solve(LU, piv, ltd)
    for i in range(d):
        acc = 0.0
        for c in range(D.shape[1]):
            acc += F[i, c] * xdd[c]
        qdd[i] = acc - qdd[i]  # corrected eq. (29)
    for i in range(n):
        s3 = Hdqd[i]
        for c in range(d):
            s3 += H[i, c] * qdd[c]
        thdd[i] = s3
    return True


@njit(cache=_C)
def limb_dynamics(kp, th, thd, thdd, thdd0, HF, Q, b, g, Mt):
    """Adds the limb's (HF)^T tau of the three RNEA passes (full, without task acceleration,
    gravity) to Q, b, g and (HF)^T M_l (HF) to Mt (limb RNEA / CRBA, eqs. 39-45)."""
    par, geo, ine, grav = kp[0], kp[1], kp[2], kp[3]
    n = th.shape[0]
    R, pp, V, Aa, Fo = rnea_buffers(n)
    fext = np.zeros((n, 6))
    z = np.zeros(n)
    tau = np.empty(n)
    nt = HF.shape[1]
    t = np.empty(nt)
    for pas in range(3):
        if pas == 0:
            _rnea_one(par, geo, ine, th, thd, thdd, fext, False, grav, R, pp, V, Aa, Fo, tau)
            out = Q
        elif pas == 1:
            _rnea_one(par, geo, ine, th, thd, thdd0, fext, False, grav, R, pp, V, Aa, Fo, tau)
            out = b
        else:
            _rnea_one(par, geo, ine, th, z, z, fext, False, grav, R, pp, V, Aa, Fo, tau)
            out = g
        matvec(HF, tau, t, n, nt, True)
        for c in range(nt):
            out[c] += t[c]
    M = np.empty((n, n))
    mass_matrix(par, geo, ine, th, M)
    MH = np.empty((n, nt))
    matmul(M, HF, MH, False)
    T = np.empty((nt, nt))
    matmul(HF, MH, T, True)
    for a in range(nt):
        for c in range(nt):
            Mt[a, c] += T[a, c]


@njit(cache=_C)
def limb_dynamics_hf(kp, th, thd, thdd, H, F, xdd, Q, b, g, Mt):
    """:func:`limb_dynamics` with ``HF = H F`` and ``thdd0 = thdd - HF xdd`` formed here."""
    n, d = H.shape
    nt = F.shape[1]
    HF = np.empty((n, nt))
    matmul(H, F, HF, False)
    thdd0 = np.empty(n)
    matvec(HF, xdd, thdd0, n, nt, False)
    for i in range(n):
        thdd0[i] = thdd[i] - thdd0[i]
    limb_dynamics(kp, th, thd, thdd, thdd0, HF, Q, b, g, Mt)


@njit(cache=_C)
def task_finish(Mt, Q, W, JIK, u, ev):
    """Symmetrises M_t in place, u = J_IK^-T (Q - W) (square J_IK, LAPACK gesv as numpy),
    ev = eigenvalues of M_t (ascending, LAPACK syevd as numpy)."""
    nt = Mt.shape[0]
    S = np.empty((nt, nt))
    for a in range(nt):
        for c in range(nt):
            S[a, c] = 0.5 * (Mt[a, c] + Mt[c, a])
    for a in range(nt):
        for c in range(nt):
            Mt[a, c] = S[a, c]
    na = JIK.shape[0]
    JT = np.empty((nt, na))
    for a in range(na):
        for c in range(nt):
            JT[c, a] = JIK[a, c]
    r = np.empty(nt)
    for a in range(nt):
        r[a] = Q[a] - W[a]
    x = np.linalg.solve(JT, r)
    for a in range(na):
        u[a] = x[a]
    e = np.linalg.eigvalsh(S)
    for a in range(nt):
        ev[a] = e[a]
