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

Limb IK: Newton-Raphson (:func:`limb_ik`) for any limb, or the closed form of a decoupled
R R P R R R (U - P - S) limb (:func:`limb_ik_cf`, geometry pack ``IKG_*`` detected by
``robot_dynamics.pkm.recursive.decoupled_ik_geometry``).

Status codes (:func:`pkm_id_d2_batch`): 0 ok, 1 IK did not converge (Newton) / no IK solution
(closed form), 2 singular limb Jacobian J_t (closed form: a U or S at a singular
configuration), 3 singular J_IK, 4 non-finite input, 6 closed-form IK branch ambiguous (the
warm start does not single out one of the two U or S branches). (5, IK solution outside the
URDF joint limits, is set by the Python wrapper.)

All kernels are compiled with the fast-math flags ``contract, reassoc, arcp`` (FMA contraction
and reassociation; the NaN/inf semantics, and with them the input checks, are kept).
"""

import numpy as np
from numba import njit

from robot_dynamics.spatial.linalg import (
    cross3,
    dot3,
    lu_factor,
    lu_inverse,
    lu_solve,
    lu_solve_T,
    matvec3_tuple,
    rodrigues,
)

_C = True
_FM = {'contract', 'reassoc', 'arcp'}  # FMA contraction, reassociation; NaN/inf semantics kept


@njit(cache=_C, fastmath=_FM, error_model='numpy', inline='always')
def ad_mul(V, Y, out):
    """out = ad_V Y (linear first)."""
    _put6(out, _ad6(V, Y))


@njit(cache=_C, fastmath=_FM, error_model='numpy', inline='always')
def adT_mul(V, W, out):
    """out = ad_V^T W = (-w x f, -v x f - w x t)."""
    _put6(out, _adT6(V, W))


@njit(cache=_C, fastmath=_FM, error_model='numpy', inline='always')
def Ad_mul(R, p, Y, out):
    """out = Ad_(R,p) Y."""
    _put6(out, _Ad6(R, p, Y))


@njit(cache=_C, fastmath=_FM, error_model='numpy', inline='always')
def AdT_mul(R, p, W, out):
    """out = Ad_(R,p)^T W = (R^T f, R^T (t - p x f))."""
    _put6(out, _AdT6(R, p, W))


@njit(cache=_C, fastmath=_FM, error_model='numpy', inline='always')
def _put6(out, x):
    """out (6,) = the 6-tuple x."""
    for r in range(6):
        out[r] = x[r]


@njit(cache=_C, fastmath=_FM, error_model='numpy', inline='always')
def _rel(R1, p1, R2, p2, R, p):
    """(R, p) = (R1, p1)^-1 (R2, p2)."""
    d0, d1, d2 = p2[0] - p1[0], p2[1] - p1[1], p2[2] - p1[2]
    for r in range(3):
        for c in range(3):
            R[r, c] = R1[0, r] * R2[0, c] + R1[1, r] * R2[1, c] + R1[2, r] * R2[2, c]
        p[r] = R1[0, r] * d0 + R1[1, r] * d1 + R1[2, r] * d2


@njit(cache=_C, fastmath=_FM, error_model='numpy', inline='always')
def limb_fk(BR, Bp, X, th, CR, Cp, tR, tp):
    """World poses C_i (CR (N, 3, 3), Cp (N, 3)) of the N bodies of one limb (joint screws
    revolute, |w| = 1, or prismatic, w = 0). tR (3, 3), tp (3,): unused (kept for the callers)."""
    _limb_fk(BR, Bp, X, th, tR, False, CR, Cp)


@njit(cache=_C, fastmath=_FM, error_model='numpy', inline='always')
def limb_fk_cs(BR, Bp, X, th, cs, CR, Cp, tR, tp):
    """:func:`limb_fk` with cos/sin of the revolute joint angles given in cs (2, N)."""
    _limb_fk(BR, Bp, X, th, cs, True, CR, Cp)


@njit(cache=_C, fastmath=_FM, error_model='numpy')
def _limb_fk(BR, Bp, X, th, cs, use_cs, CR, Cp):
    """C_i = C_{i-1} B_i exp(X_i th_i), in scalar registers. exp of a revolute screw
    X = (v, w), |w| = 1: (I + s w~ + (1 - c) w~^2, (I th + (1 - c) w~ + (th - s) w~^2) v); of a
    prismatic one (w = 0): (I, v th). cos/sin from ``cs`` (2, N) if ``use_cs``."""
    r00 = 1.0
    r01 = 0.0
    r02 = 0.0
    r10 = 0.0
    r11 = 1.0
    r12 = 0.0
    r20 = 0.0
    r21 = 0.0
    r22 = 1.0
    p0 = 0.0
    p1 = 0.0
    p2 = 0.0
    for i in range(th.shape[0]):
        B = BR[i]
        b = Bp[i]
        # C_{i-1} B_i
        n00 = r00 * B[0, 0] + r01 * B[1, 0] + r02 * B[2, 0]
        n01 = r00 * B[0, 1] + r01 * B[1, 1] + r02 * B[2, 1]
        n02 = r00 * B[0, 2] + r01 * B[1, 2] + r02 * B[2, 2]
        n10 = r10 * B[0, 0] + r11 * B[1, 0] + r12 * B[2, 0]
        n11 = r10 * B[0, 1] + r11 * B[1, 1] + r12 * B[2, 1]
        n12 = r10 * B[0, 2] + r11 * B[1, 2] + r12 * B[2, 2]
        n20 = r20 * B[0, 0] + r21 * B[1, 0] + r22 * B[2, 0]
        n21 = r20 * B[0, 1] + r21 * B[1, 1] + r22 * B[2, 1]
        n22 = r20 * B[0, 2] + r21 * B[1, 2] + r22 * B[2, 2]
        q0 = p0 + r00 * b[0] + r01 * b[1] + r02 * b[2]
        q1 = p1 + r10 * b[0] + r11 * b[1] + r12 * b[2]
        q2 = p2 + r20 * b[0] + r21 * b[1] + r22 * b[2]
        x = X[i]
        w0 = x[3]
        w1 = x[4]
        w2 = x[5]
        t = th[i]
        if w0 * w0 + w1 * w1 + w2 * w2 < 0.5:
            r00, r01, r02 = n00, n01, n02
            r10, r11, r12 = n10, n11, n12
            r20, r21, r22 = n20, n21, n22
            f0 = x[0] * t
            f1 = x[1] * t
            f2 = x[2] * t
        else:
            if use_cs:
                c = cs[0, i]
                s = cs[1, i]
            else:
                c = np.cos(t)
                s = np.sin(t)
            u = 1.0 - c
            e00, e01, e02, e10, e11, e12, e20, e21, e22 = rodrigues(w0, w1, w2, c, s)
            v0 = x[0]
            v1 = x[1]
            v2 = x[2]
            a0, a1, a2 = cross3(w0, w1, w2, v0, v1, v2)
            g0, g1, g2 = cross3(w0, w1, w2, a0, a1, a2)
            f0 = t * v0 + u * a0 + (t - s) * g0
            f1 = t * v1 + u * a1 + (t - s) * g1
            f2 = t * v2 + u * a2 + (t - s) * g2
            r00 = n00 * e00 + n01 * e10 + n02 * e20
            r01 = n00 * e01 + n01 * e11 + n02 * e21
            r02 = n00 * e02 + n01 * e12 + n02 * e22
            r10 = n10 * e00 + n11 * e10 + n12 * e20
            r11 = n10 * e01 + n11 * e11 + n12 * e21
            r12 = n10 * e02 + n11 * e12 + n12 * e22
            r20 = n20 * e00 + n21 * e10 + n22 * e20
            r21 = n20 * e01 + n21 * e11 + n22 * e21
            r22 = n20 * e02 + n21 * e12 + n22 * e22
        p0 = q0 + n00 * f0 + n01 * f1 + n02 * f2
        p1 = q1 + n10 * f0 + n11 * f1 + n12 * f2
        p2 = q2 + n20 * f0 + n21 * f1 + n22 * f2
        C = CR[i]
        C[0, 0] = r00
        C[0, 1] = r01
        C[0, 2] = r02
        C[1, 0] = r10
        C[1, 1] = r11
        C[1, 2] = r12
        C[2, 0] = r20
        C[2, 1] = r21
        C[2, 2] = r22
        Cp[i, 0] = p0
        Cp[i, 1] = p1
        Cp[i, 2] = p2


@njit(cache=_C, fastmath=_FM, error_model='numpy')
def lu_ok(A, piv):
    """LU (:func:`robot_dynamics.spatial.linalg.lu_factor`) of the square A in place; False if
    singular: a pivot <= 1e-13 max |A_ij|."""
    n = A.shape[0]
    scale = 0.0
    for r in range(n):
        for c in range(n):
            scale = max(scale, abs(A[r, c]))
    if scale == 0.0:
        return False
    dmin, dmax, sign = lu_factor(A, n, n, piv)
    return dmin > 1e-13 * scale


@njit(cache=_C, fastmath=_FM, error_model='numpy')
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
        ad_mul(x, V, t1)  # ad_X V
        for r in range(6):
            Vd[r] = A1[r] - d1 * t1[r] + x[r] * d2
        ad_mul(x, Vd, t2)  # ad_X Vd
        ad_mul(x, t1, t3)  # ad_X^2 V
        for r in range(6):
            Vdd[r] = A2[r] + x[r] * d3 - (d2 * t1[r] + 2.0 * d1 * t2[r]) - d1 * d1 * t3[r]
        # Vddd = A Vddd_{i-1} + X th4 - ad_X (th3 V + 3 th2 Vd + 3 th1 Vdd)
        #        - 3 th1 ad_X^2 (th2 V + th1 Vd) - th1^3 ad_X^3 V
        for r in range(6):
            wk[7, r] = d3 * V[r] + 3.0 * d2 * Vd[r] + 3.0 * d1 * Vdd[r]
            wk[8, r] = d2 * V[r] + d1 * Vd[r]
        ad_mul(x, wk[7], wk[9])
        ad_mul(x, wk[8], wk[10])
        ad_mul(x, wk[10], wk[11])  # ad_X^2 (th2 V + th1 Vd)
        ad_mul(x, t3, wk[12])  # ad_X^3 V
        for r in range(6):
            Vddd[r] = A3[r] + x[r] * d4 - wk[9, r] - 3.0 * d1 * wk[11, r] - d1 * d1 * d1 * wk[12, r]
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
            _rel(CR[i + 1], Cp[i + 1], CR[i], Cp[i], tR, tp)  # C_{i+1,i}
            adT_mul(x, W, t1)  # aT W
            adT_mul(x, Wd, t2)  # aT Wd
            adT_mul(x, t1, t3)  # aT aT W
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


@njit(cache=_C, fastmath=_FM, error_model='numpy', inline='always')
def _ld6(A, i):
    return A[i, 0], A[i, 1], A[i, 2], A[i, 3], A[i, 4], A[i, 5]


@njit(cache=_C, fastmath=_FM, error_model='numpy', inline='always')
def _st6(A, i, x):
    A[i, 0] = x[0]
    A[i, 1] = x[1]
    A[i, 2] = x[2]
    A[i, 3] = x[3]
    A[i, 4] = x[4]
    A[i, 5] = x[5]


@njit(cache=_C, fastmath=_FM, error_model='numpy', inline='always')
def _axpy6(a, x, y):
    """a x + y (6-tuples)."""
    return (a * x[0] + y[0], a * x[1] + y[1], a * x[2] + y[2], a * x[3] + y[3], a * x[4] + y[4], a * x[5] + y[5])


@njit(cache=_C, fastmath=_FM, error_model='numpy', inline='always')
def _sc6(a, x):
    return a * x[0], a * x[1], a * x[2], a * x[3], a * x[4], a * x[5]


@njit(cache=_C, fastmath=_FM, error_model='numpy', inline='always')
def _dot6(x, y):
    return x[0] * y[0] + x[1] * y[1] + x[2] * y[2] + x[3] * y[3] + x[4] * y[4] + x[5] * y[5]


@njit(cache=_C, fastmath=_FM, error_model='numpy', inline='always')
def _ad6(V, Y):
    """ad_V Y (6-tuples, linear first)."""
    c0, c1, c2 = cross3(V[3], V[4], V[5], Y[0], Y[1], Y[2])
    d0, d1, d2 = cross3(V[0], V[1], V[2], Y[3], Y[4], Y[5])
    e0, e1, e2 = cross3(V[3], V[4], V[5], Y[3], Y[4], Y[5])
    return c0 + d0, c1 + d1, c2 + d2, e0, e1, e2


@njit(cache=_C, fastmath=_FM, error_model='numpy', inline='always')
def _adT6(V, W):
    """ad_V^T W = (-w x f, -v x f - w x t) (6-tuples)."""
    c0, c1, c2 = cross3(V[3], V[4], V[5], W[0], W[1], W[2])
    d0, d1, d2 = cross3(V[0], V[1], V[2], W[0], W[1], W[2])
    e0, e1, e2 = cross3(V[3], V[4], V[5], W[3], W[4], W[5])
    return -c0, -c1, -c2, -d0 - e0, -d1 - e1, -d2 - e2


@njit(cache=_C, fastmath=_FM, error_model='numpy', inline='always')
def _Ad6(R, p, Y):
    """Ad_(R,p) Y (6-tuple)."""
    a0 = R[0, 0] * Y[3] + R[0, 1] * Y[4] + R[0, 2] * Y[5]
    a1 = R[1, 0] * Y[3] + R[1, 1] * Y[4] + R[1, 2] * Y[5]
    a2 = R[2, 0] * Y[3] + R[2, 1] * Y[4] + R[2, 2] * Y[5]
    c0, c1, c2 = cross3(p[0], p[1], p[2], a0, a1, a2)
    return (
        R[0, 0] * Y[0] + R[0, 1] * Y[1] + R[0, 2] * Y[2] + c0,
        R[1, 0] * Y[0] + R[1, 1] * Y[1] + R[1, 2] * Y[2] + c1,
        R[2, 0] * Y[0] + R[2, 1] * Y[1] + R[2, 2] * Y[2] + c2,
        a0,
        a1,
        a2,
    )


@njit(cache=_C, fastmath=_FM, error_model='numpy', inline='always')
def _AdT6(R, p, W):
    """Ad_(R,p)^T W = (R^T f, R^T (t - p x f)) (6-tuple)."""
    c0, c1, c2 = cross3(p[0], p[1], p[2], W[0], W[1], W[2])
    t0, t1, t2 = W[3] - c0, W[4] - c1, W[5] - c2
    return (
        R[0, 0] * W[0] + R[1, 0] * W[1] + R[2, 0] * W[2],
        R[0, 1] * W[0] + R[1, 1] * W[1] + R[2, 1] * W[2],
        R[0, 2] * W[0] + R[1, 2] * W[1] + R[2, 2] * W[2],
        R[0, 0] * t0 + R[1, 0] * t1 + R[2, 0] * t2,
        R[0, 1] * t0 + R[1, 1] * t1 + R[2, 1] * t2,
        R[0, 2] * t0 + R[1, 2] * t1 + R[2, 2] * t2,
    )


@njit(cache=_C, fastmath=_FM, error_model='numpy', inline='always')
def _mv6(Mi, v):
    """Mi v (Mi (6, 6), v 6-tuple)."""
    return _dot6(Mi[0], v), _dot6(Mi[1], v), _dot6(Mi[2], v), _dot6(Mi[3], v), _dot6(Mi[4], v), _dot6(Mi[5], v)


@njit(cache=_C, fastmath=_FM, error_model='numpy')
def _body_wrench6(Mi, V, Vd, Vdd, Vddd, av0, av1, av2):
    """Newton-Euler wrench of one body and its 1st/2nd time derivatives (body frame, 6-tuples):
    ``W = M (Vd + a) - ad_V^T M V``, ``Wd``, ``Wdd`` its derivatives, with the gravity option
    G1 acceleration a = (av, 0), av = -R^T g; ad1 = -ad_V a = (-w x av, 0),
    ad2 = -ad_Vd a + ad_V ad_V a = (-wd x av + w x (w x av), 0) (zero angular parts)."""
    k0, k1, k2 = cross3(V[3], V[4], V[5], av0, av1, av2)
    h0, h1, h2 = cross3(Vd[3], Vd[4], Vd[5], av0, av1, av2)
    m0, m1, m2 = cross3(V[3], V[4], V[5], k0, k1, k2)
    ga = (av0, av1, av2, 0.0, 0.0, 0.0)
    g1 = (-k0, -k1, -k2, 0.0, 0.0, 0.0)
    g2 = (m0 - h0, m1 - h1, m2 - h2, 0.0, 0.0, 0.0)
    MV0 = _mv6(Mi, V)
    MV1 = _mv6(Mi, Vd)
    MV2 = _mv6(Mi, Vdd)
    P0 = _mv6(Mi, _axpy6(1.0, ga, Vd))
    P1 = _mv6(Mi, _axpy6(1.0, g1, Vdd))
    P2 = _mv6(Mi, _axpy6(1.0, g2, Vddd))
    a = _adT6(V, MV0)
    b1 = _adT6(V, MV1)
    b2 = _adT6(Vd, MV0)
    c1 = _adT6(V, MV2)
    c2 = _adT6(Vdd, MV0)
    c3 = _adT6(Vd, MV1)
    W = (P0[0] - a[0], P0[1] - a[1], P0[2] - a[2], P0[3] - a[3], P0[4] - a[4], P0[5] - a[5])
    Wd = (
        P1[0] - b1[0] - b2[0],
        P1[1] - b1[1] - b2[1],
        P1[2] - b1[2] - b2[2],
        P1[3] - b1[3] - b2[3],
        P1[4] - b1[4] - b2[4],
        P1[5] - b1[5] - b2[5],
    )
    Wdd = (
        P2[0] - c1[0] - c2[0] - 2.0 * c3[0],
        P2[1] - c1[1] - c2[1] - 2.0 * c3[1],
        P2[2] - c1[2] - c2[2] - 2.0 * c3[2],
        P2[3] - c1[3] - c2[3] - 2.0 * c3[3],
        P2[4] - c1[4] - c2[4] - 2.0 * c3[4],
        P2[5] - c1[5] - c2[5] - 2.0 * c3[5],
    )
    return W, Wd, Wdd


@njit(cache=_C, fastmath=_FM, error_model='numpy')
def limb_ne_d2_fast(X, M, heavy, g, th, CR, Cp, Vb, Q, relR, relp, nb):
    """:func:`limb_fk_ne_d2` (same results) restricted to the first ``nb`` bodies, for the batch
    kernel: the bodies nb..N-1 must be massless (their Q is 0 and their twists are not
    computed); ``heavy`` (N,) bool marks the bodies with a nonzero inertia; the relative poses
    C_{i,i-1} of the forward pass are kept in relR (N, 3, 3), relp (N, 3) for the backward
    pass; gravity enters as in G1 (:func:`_body_wrench6`). Twists and wrenches are 6-tuples
    (registers); Vb (4, N, 6) receives V .. Vddd of bodies 0..nb-1."""
    N = th.shape[1]
    for i in range(nb, N):
        Q[0, i] = 0.0
        Q[1, i] = 0.0
        Q[2, i] = 0.0
    z = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    V = z
    Vd = z
    Vdd = z
    Vddd = z
    # ---- forward: V_i^(k) = Ad(C_{i,i-1}) V_{i-1}^(k) + ...
    for i in range(nb):
        x = _ld6(X, i)
        d1, d2, d3, d4 = th[1, i], th[2, i], th[3, i], th[4, i]
        if i == 0:
            V = _sc6(d1, x)
            Vd = _sc6(d2, x)
            Vdd = _sc6(d3, x)
            Vddd = _sc6(d4, x)
        else:
            _rel(CR[i], Cp[i], CR[i - 1], Cp[i - 1], relR[i], relp[i])
            Ri = relR[i]
            pi = relp[i]
            if i == 1:
                # V_0^(k) = X_0 theta_0^(k+1): one adjoint
                y = _Ad6(Ri, pi, _ld6(X, 0))
                A0 = _sc6(th[1, 0], y)
                A1 = _sc6(th[2, 0], y)
                A2 = _sc6(th[3, 0], y)
                A3 = _sc6(th[4, 0], y)
            else:
                A0 = _Ad6(Ri, pi, V)
                A1 = _Ad6(Ri, pi, Vd)
                A2 = _Ad6(Ri, pi, Vdd)
                A3 = _Ad6(Ri, pi, Vddd)
            V = _axpy6(d1, x, A0)
            t1 = _ad6(x, V)  # ad_X V
            Vd = _axpy6(d2, x, _axpy6(-d1, t1, A1))
            t2 = _ad6(x, Vd)  # ad_X Vd
            t3 = _ad6(x, t1)  # ad_X^2 V
            Vdd = _axpy6(d3, x, _axpy6(-d2, t1, _axpy6(-2.0 * d1, t2, _axpy6(-d1 * d1, t3, A2))))
            # Vddd = A Vddd_{i-1} + X th4 - ad_X (th3 V + 3 th2 Vd + 3 th1 Vdd)
            #        - 3 th1 ad_X^2 (th2 V + th1 Vd) - th1^3 ad_X^3 V
            w7 = _axpy6(d3, V, _axpy6(3.0 * d2, Vd, _sc6(3.0 * d1, Vdd)))
            w8 = _axpy6(d2, V, _sc6(d1, Vd))
            w9 = _ad6(x, w7)
            w11 = _ad6(x, _ad6(x, w8))
            w12 = _ad6(x, t3)
            Vddd = _axpy6(d4, x, _axpy6(-1.0, w9, _axpy6(-3.0 * d1, w11, _axpy6(-d1 * d1 * d1, w12, A3))))
        _st6(Vb[0], i, V)
        _st6(Vb[1], i, Vd)
        _st6(Vb[2], i, Vdd)
        _st6(Vb[3], i, Vddd)
    # ---- backward Newton-Euler and derivatives
    W = z
    Wd = z
    Wdd = z
    for i in range(nb - 1, -1, -1):
        # transport the wrench of body i+1 (and its derivatives) into frame i
        if i < nb - 1:
            x = _ld6(X, i + 1)
            d1, d2 = th[1, i + 1], th[2, i + 1]
            t1 = _adT6(x, W)  # aT W
            t2 = _adT6(x, Wd)  # aT Wd
            t3 = _adT6(x, t1)  # aT aT W
            s1 = _axpy6(-d1, t1, Wd)
            s2 = _axpy6(-2.0 * d1, t2, _axpy6(d1 * d1, t3, _axpy6(-d2, t1, Wdd)))
            if i == 0 and not heavy[0]:
                # Q_0 = X_0^T Ad^T (W, s1, s2) = (Ad X_0)^T (W, s1, s2): no full transport
                y = _Ad6(relR[1], relp[1], _ld6(X, 0))
                Q[0, 0] = _dot6(y, W)
                Q[1, 0] = _dot6(y, s1)
                Q[2, 0] = _dot6(y, s2)
                break
            W = _AdT6(relR[i + 1], relp[i + 1], W)
            Wd = _AdT6(relR[i + 1], relp[i + 1], s1)
            Wdd = _AdT6(relR[i + 1], relp[i + 1], s2)
        if heavy[i]:
            av0 = -(CR[i, 0, 0] * g[0] + CR[i, 1, 0] * g[1] + CR[i, 2, 0] * g[2])
            av1 = -(CR[i, 0, 1] * g[0] + CR[i, 1, 1] * g[1] + CR[i, 2, 1] * g[2])
            av2 = -(CR[i, 0, 2] * g[0] + CR[i, 1, 2] * g[1] + CR[i, 2, 2] * g[2])
            B0, B1, B2 = _body_wrench6(
                M[i], _ld6(Vb[0], i), _ld6(Vb[1], i), _ld6(Vb[2], i), _ld6(Vb[3], i), av0, av1, av2
            )
            W = _axpy6(1.0, B0, W)
            Wd = _axpy6(1.0, B1, Wd)
            Wdd = _axpy6(1.0, B2, Wdd)
        x = _ld6(X, i)
        Q[0, i] = _dot6(x, W)
        Q[1, i] = _dot6(x, Wd)
        Q[2, i] = _dot6(x, Wdd)


@njit(cache=_C, fastmath=_FM, error_model='numpy')
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


@njit(cache=_C, fastmath=_FM, error_model='numpy')
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
        if not lu_ok(J, piv):
            return -2
        lu_solve(J, piv, e)
        for i in range(N):
            th[i] += e[i]
    return -1


# ---------------------------------------------------------------------------------------------
# Closed-form (geometric) IK of a decoupled R R P R R R limb (U - P - S type)
#
# Geometry pack ``G`` (IKG_SIZE,) of one limb, world frame at the reference configuration
# (theta = 0), filled by ``robot_dynamics.pkm.recursive.decoupled_ik_geometry``:
IKG_A = 0  # U centre a (intersection of the axes of joints 1, 2)
IKG_CL = 3  # S centre (common point of the axes of joints 4..6) in the last body frame
IKG_PC = 6  # c0 - a (S centre minus U centre at the reference)
IKG_N = 9  # prismatic screw (linear part, world)
IKG_W0 = 12  # unit axes of joints 1, 2, 4, 5, 6 (world, reference)
IKG_W1 = 15
IKG_W3 = 18
IKG_W4 = 21
IKG_W5 = 24
IKG_R5 = 27  # unit vector normal to w5 (in the plane of w4, w5)
IKG_M5 = 30  # MR^T w5, MR^T r5 (MR: rotation of the last body at the reference)
IKG_MR = 33
IKG_C01 = 36  # w0 x w1, w3 x w4
IKG_C34 = 39
IKG_NN = 42  # n.n, n.(c0 - a), |c0 - a|^2, w0.w1, w3.w4
IKG_NB = 43
IKG_PP = 44
IKG_K01 = 45
IKG_K34 = 46
IKG_SIZE = 47

# relative tolerances of the closed form: branches that coincide to _CF_SING (rad, or relative
# for the prismatic root) are a singular configuration (status 2); a negative discriminant
# beyond _CF_REACH (relative) means no solution (status 1)
_CF_SING = 1e-9
_CF_REACH = 1e-12
_TWO_PI = 2.0 * np.pi


@njit(cache=_C, fastmath=_FM, error_model='numpy', inline='always')
def _g3(G, o):
    return G[o], G[o + 1], G[o + 2]


@njit(cache=_C, fastmath=_FM, error_model='numpy', inline='always')
def _rot(w, c, s, x):
    """exp(w^ th) x for a unit w, c = cos th, s = sin th (Rodrigues)."""
    k0, k1, k2 = cross3(w[0], w[1], w[2], x[0], x[1], x[2])
    f = (1.0 - c) * (w[0] * x[0] + w[1] * x[1] + w[2] * x[2])
    return (c * x[0] + s * k0 + f * w[0], c * x[1] + s * k1 + f * w[1], c * x[2] + s * k2 + f * w[2])


@njit(cache=_C, fastmath=_FM, error_model='numpy', inline='always')
def _sp1(w, u, v):
    """Paden-Kahan subproblem 1: th with exp(w^ th) u = v (unit w, w.u = w.v). Returns
    (cos th, sin th, ok); ok False if undetermined: |u_perp| <= _CF_SING |u| or
    |v_perp| <= _CF_SING |v| (u or v along the axis)."""
    wu = dot3(w, u)
    wv = dot3(w, v)
    a0, a1, a2 = u[0] - wu * w[0], u[1] - wu * w[1], u[2] - wu * w[2]
    b0, b1, b2 = v[0] - wv * w[0], v[1] - wv * w[1], v[2] - wv * w[2]
    x = a0 * b0 + a1 * b1 + a2 * b2
    c0, c1, c2 = cross3(a0, a1, a2, b0, b1, b2)
    y = w[0] * c0 + w[1] * c1 + w[2] * c2
    na = a0 * a0 + a1 * a1 + a2 * a2
    nb = b0 * b0 + b1 * b1 + b2 * b2
    e2 = _CF_SING * _CF_SING
    if not (na > e2 * dot3(u, u) and nb > e2 * dot3(v, v)):
        return 1.0, 0.0, False
    f = 1.0 / np.sqrt(x * x + y * y)
    return x * f, y * f, True


@njit(cache=_C, fastmath=_FM, error_model='numpy', inline='always')
def _unwrap(a, ref):
    """a + 2 pi k nearest to ref."""
    return a + _TWO_PI * np.floor((ref - a) * (1.0 / _TWO_PI) + 0.5)


@njit(cache=_C, fastmath=_FM, error_model='numpy', inline='always')
def _sp2(w0, w1, cr, k, u, v):
    """Paden-Kahan subproblem 2 (exp(w0^ t0) exp(w1^ t1) u = v, unit axes through one point,
    k = w0.w1, cr = w0 x w1, |u| = |v|): z = exp(w1^ t1) u = al w0 + be w1 + gam cr. Returns
    (al, be, gam^2 |cr|^2), the last as |w0 x v|^2 - be^2 (1 - k^2) (the squared distance of z
    from the plane of w0, w1; no cancellation against |v|^2 near a singular configuration)."""
    den = 1.0 / (k * k - 1.0)
    w0v = dot3(w0, v)
    w1u = dot3(w1, u)
    al = (k * w1u - w0v) * den
    be = (k * w0v - w1u) * den
    x0, x1, x2 = cross3(w0[0], w0[1], w0[2], v[0], v[1], v[2])
    return al, be, x0 * x0 + x1 * x1 + x2 * x2 - be * be * (1.0 - k * k)


@njit(cache=_C, fastmath=_FM, error_model='numpy', inline='always')
def _sp2_branch(wa, wb, cr, al, be, sg, u, v):
    """One branch of subproblem 2 (:func:`_sp2`), sg = +-gam: z = al wa + be wb + sg (wa x wb),
    then (cos, sin) of ta with exp(wa^ ta) z = v and of tb with exp(wb^ tb) u = z
    (:func:`_sp1`). Returns (cos ta, sin ta, cos tb, sin tb, ok)."""
    z = (
        al * wa[0] + be * wb[0] + sg * cr[0],
        al * wa[1] + be * wb[1] + sg * cr[1],
        al * wa[2] + be * wb[2] + sg * cr[2],
    )
    kb, eb, okb = _sp1(wb, u, z)
    ka, ea, oka = _sp1(wa, z, v)
    return ka, ea, kb, eb, okb and oka


@njit(cache=_C, fastmath=_FM, error_model='numpy', inline='always')
def _s_branch(w3, w4, w5, r5, cr, al, be, sg, v, y):
    """One branch (sg = +-gam) of the S angles t3, t4, t5 of :func:`limb_ik_cf`: subproblem 2 on
    w3, w4 (:func:`_sp2_branch`), then subproblem 1 for t5 on r5. Returns ((cos, sin) of t3, t4,
    t5 as a 6-tuple, ok)."""
    k3, e3, k4, e4, ok = _sp2_branch(w3, w4, cr, al, be, sg, w5, v)
    yy = _rot(w4, k4, -e4, _rot(w3, k3, -e3, y))
    k5, e5, ok5 = _sp1(w5, r5, yy)
    return (k3, e3, k4, e4, k5, e5), ok and ok5


@njit(cache=_C, fastmath=_FM, error_model='numpy', inline='always')
def _pick_branch(x0, x1, warm):
    """Of the two candidates x0, x1 ((cos, sin) of up to three angles as 6-tuples; pad with
    (1, 0)) the one nearest the warm start (the max over the angles of the squared chord
    :func:`_chord2`). Returns (status, candidate): 0; 2 if they coincide to _CF_SING (singular
    configuration); 6 if the warm start is not nearer one of them by half their separation
    (ambiguous)."""
    best = _chord_max(x0, warm)
    pick = x0
    d1 = _chord_max(x1, warm)
    if d1 < best:
        best = d1
        pick = x1
    sep = _chord_max(x1, x0)
    if sep <= _CF_SING * _CF_SING:
        return 2, pick
    if 4.0 * best >= sep:
        return 6, pick
    return 0, pick


@njit(cache=_C, fastmath=_FM, error_model='numpy', inline='always')
def _chord_max(a, b):
    """max over the three (cos, sin) pairs of the 6-tuples a, b of :func:`_chord2`."""
    return max(_chord2(a[0], a[1], b[0], b[1]), _chord2(a[2], a[3], b[2], b[3]), _chord2(a[4], a[5], b[4], b[5]))


@njit(cache=_C, fastmath=_FM, error_model='numpy', inline='always')
def _chord2(c, s, cw, sw):
    """|e^(i a) - e^(i b)|^2 from cos/sin."""
    return (c - cw) * (c - cw) + (s - sw) * (s - sw)


@njit(cache=_C, fastmath=_FM, error_model='numpy')
def limb_ik_cf(G, PR, Pp, th, cs):
    """Closed-form IK of one decoupled R R P R R R limb (U - P - S): C_N(theta) = (PR, Pp).

    POE at the reference (world): C_N = e^(S1 t1) ... e^(S6 t6) C_N(0). The S centre c (fixed in
    the platform) gives the leg vector d = c - a; the prismatic coordinate t3 solves
    |c0 - a + n t3| = |d| (two roots); the U angles t1, t2 rotate c0 - a + n t3 onto d
    (Paden-Kahan subproblem 2, two branches); the S angles t4, t5, t6 solve
    e^(w4 t4) e^(w5 t5) e^(w6 t6) = R_U^T PR MR^T (subproblem 2 on w6, two branches, then
    subproblem 1 for t6 on a vector normal to w6).

    Branch rule: ``th`` (N,) is the warm start, ``cs`` (2, N) its cosines/sines on entry (the
    entries of the revolute joints; the prismatic one, index 2, is not used). Each of
    the three choices (prismatic root, U branch, S branch) takes the candidate nearest to the
    warm start, distances in metres for the root and, for U and S, the max over the joints of
    the chord ``|e^(i t) - e^(i t_warm)|`` (~ the angle difference modulo 2 pi); the angles are
    returned unwrapped to the 2 pi multiple nearest the warm start.

    Returns 0 (``th``, ``cs`` overwritten with the solution and its cosines/sines), 1 no
    solution (pose outside the limb's workspace), 2 singular configuration (the two candidates
    of a choice coincide to 1e-9, or an angle is undetermined: U or S axes aligned, zero leg
    length), 6 ambiguous branch (the warm start is at least half the separation of the two
    candidates away from the nearest one: reported, never a silent branch jump). ``th`` and
    ``cs`` are left unchanged unless 0 is returned.
    """
    a = _g3(G, IKG_A)
    cl = _g3(G, IKG_CL)
    pc = _g3(G, IKG_PC)
    n = _g3(G, IKG_N)
    # ---- S centre and leg vector
    x0, x1, x2 = matvec3_tuple(PR, cl)
    d0 = x0 + Pp[0] - a[0]
    d1 = x1 + Pp[1] - a[1]
    d2 = x2 + Pp[2] - a[2]
    d = (d0, d1, d2)
    dd = d0 * d0 + d1 * d1 + d2 * d2
    # ---- prismatic: nn t^2 + 2 nb t + pp - dd = 0
    nn = G[IKG_NN]
    nb = G[IKG_NB]
    pp = G[IKG_PP]
    disc = nb * nb - nn * (pp - dd)
    scale = nb * nb + nn * (pp + dd)
    if disc < -_CF_REACH * scale:
        return 1
    sq = np.sqrt(max(disc, 0.0))
    if sq <= _CF_SING * np.sqrt(scale):
        return 2
    ra = (-nb + sq) / nn
    rb = (-nb - sq) / nn
    t2 = ra if abs(th[2] - ra) <= abs(th[2] - rb) else rb
    if abs(th[2] - t2) >= 0.5 * abs(ra - rb):
        return 6
    p = (pc[0] + n[0] * t2, pc[1] + n[1] * t2, pc[2] + n[2] * t2)
    # ---- U: e^(w0 t0) e^(w1 t1) p = d
    w0 = _g3(G, IKG_W0)
    w1 = _g3(G, IKG_W1)
    cr = _g3(G, IKG_C01)
    al, be, g2 = _sp2(w0, w1, cr, G[IKG_K01], p, d)
    if g2 < -_CF_REACH * dd:
        return 1
    gam = np.sqrt(max(g2, 0.0) / dot3(cr, cr))
    k0, e0, k1, e1, ok = _sp2_branch(w0, w1, cr, al, be, gam, p, d)
    if not ok:
        return 2
    j0, f0, j1, f1, ok = _sp2_branch(w0, w1, cr, al, be, -gam, p, d)
    if not ok:
        return 2
    warm = (cs[0, 0], cs[1, 0], cs[0, 1], cs[1, 1], 1.0, 0.0)
    st, x = _pick_branch((k0, e0, k1, e1, 1.0, 0.0), (j0, f0, j1, f1, 1.0, 0.0), warm)
    if st:
        return st
    c0, s0, c1, s1 = x[0], x[1], x[2], x[3]
    # ---- S: e^(w3 t3) e^(w4 t4) e^(w5 t5) = R_U^T PR MR^T
    m5 = _g3(G, IKG_M5)
    mr = _g3(G, IKG_MR)
    v = _rot(w1, c1, -s1, _rot(w0, c0, -s0, matvec3_tuple(PR, m5)))
    y = _rot(w1, c1, -s1, _rot(w0, c0, -s0, matvec3_tuple(PR, mr)))
    w3 = _g3(G, IKG_W3)
    w4 = _g3(G, IKG_W4)
    w5 = _g3(G, IKG_W5)
    r5 = _g3(G, IKG_R5)
    cr = _g3(G, IKG_C34)
    al, be, g2 = _sp2(w3, w4, cr, G[IKG_K34], w5, v)
    if g2 < -_CF_REACH:
        return 1
    gam = np.sqrt(max(g2, 0.0) / dot3(cr, cr))
    x0, ok = _s_branch(w3, w4, w5, r5, cr, al, be, gam, v, y)
    if not ok:
        return 2
    x1, ok = _s_branch(w3, w4, w5, r5, cr, al, be, -gam, v, y)
    if not ok:
        return 2
    st, x = _pick_branch(x0, x1, (cs[0, 3], cs[1, 3], cs[0, 4], cs[1, 4], cs[0, 5], cs[1, 5]))
    if st:
        return st
    c3, s3, c4, s4, c5, s5 = x
    th[0] = _unwrap(np.arctan2(s0, c0), th[0])
    th[1] = _unwrap(np.arctan2(s1, c1), th[1])
    th[2] = t2
    th[3] = _unwrap(np.arctan2(s3, c3), th[3])
    th[4] = _unwrap(np.arctan2(s4, c4), th[4])
    th[5] = _unwrap(np.arctan2(s5, c5), th[5])
    cs[0, 0], cs[1, 0], cs[0, 1], cs[1, 1] = c0, s0, c1, s1
    cs[0, 3], cs[1, 3], cs[0, 4], cs[1, 4], cs[0, 5], cs[1, 5] = c3, s3, c4, s4, c5, s5
    return 0


@njit(cache=_C, fastmath=_FM, error_model='numpy')
def limb_ik_cf_th(G, PR, Pp, th):
    """:func:`limb_ik_cf` with the warm start's cosines/sines computed from ``th``."""
    N = th.shape[0]
    cs = np.empty((2, N))
    for i in range(N):
        cs[0, i] = np.cos(th[i])
        cs[1, i] = np.sin(th[i])
    return limb_ik_cf(G, PR, Pp, th, cs)


@njit(cache=_C, fastmath=_FM, error_model='numpy', inline='always')
def _jp_col(RN, pN, Ri, pi, x, out):
    """out = Ad_{C_N^-1 C_i} x (column i of J_p, eq. 22) from the world poses."""
    w0 = Ri[0, 0] * x[3] + Ri[0, 1] * x[4] + Ri[0, 2] * x[5]
    w1 = Ri[1, 0] * x[3] + Ri[1, 1] * x[4] + Ri[1, 2] * x[5]
    w2 = Ri[2, 0] * x[3] + Ri[2, 1] * x[4] + Ri[2, 2] * x[5]
    c0, c1, c2 = cross3(pi[0] - pN[0], pi[1] - pN[1], pi[2] - pN[2], w0, w1, w2)
    v0 = Ri[0, 0] * x[0] + Ri[0, 1] * x[1] + Ri[0, 2] * x[2] + c0
    v1 = Ri[1, 0] * x[0] + Ri[1, 1] * x[1] + Ri[1, 2] * x[2] + c1
    v2 = Ri[2, 0] * x[0] + Ri[2, 1] * x[1] + Ri[2, 2] * x[2] + c2
    for r in range(3):
        out[r] = RN[0, r] * v0 + RN[1, r] * v1 + RN[2, r] * v2
        out[3 + r] = RN[0, r] * w0 + RN[1, r] * w1 + RN[2, r] * w2


@njit(cache=_C, fastmath=_FM, error_model='numpy', inline='always')
def _inv3_cols(A, out):
    """out = A^-1 for A with columns A[0], A[1], A[2] (rows of the (3, 3) ``A``) by the
    adjugate; False if |det| <= 1e-13 |a0| |a1| |a2| (singular)."""
    x0, x1, x2 = cross3(A[1, 0], A[1, 1], A[1, 2], A[2, 0], A[2, 1], A[2, 2])
    y0, y1, y2 = cross3(A[2, 0], A[2, 1], A[2, 2], A[0, 0], A[0, 1], A[0, 2])
    z0, z1, z2 = cross3(A[0, 0], A[0, 1], A[0, 2], A[1, 0], A[1, 1], A[1, 2])
    det = A[0, 0] * x0 + A[0, 1] * x1 + A[0, 2] * x2
    nrm = 1.0
    for k in range(3):
        nrm *= np.sqrt(A[k, 0] * A[k, 0] + A[k, 1] * A[k, 1] + A[k, 2] * A[k, 2])
    if not abs(det) > 1e-13 * nrm:
        return False
    f = 1.0 / det
    out[0, 0], out[0, 1], out[0, 2] = x0 * f, x1 * f, x2 * f
    out[1, 0], out[1, 1], out[1, 2] = y0 * f, y1 * f, y2 * f
    out[2, 0], out[2, 1], out[2, 2] = z0 * f, z1 * f, z2 * f
    return True


@njit(cache=_C, fastmath=_FM, error_model='numpy')
def inv_jt_ups(Jp, cl, F, wk3):
    """F = J_t^-1 of a decoupled U-P-S limb without LU: with the twists referred to the S
    centre ``cl`` (platform frame) J_t is block lower triangular, [[A, 0], [B, D]] (A: S-centre
    velocities of joints 1-3, B their angular velocities, D the S axes), so
    ``F = [[A^-1, 0], [-D^-1 B A^-1, D^-1]] [[I, -c~], [0, I]]`` (two 3x3 adjugate inverses).
    Jp (6, 6) holds the columns of J_t as rows. False if A or D is singular (|det| <= 1e-13
    times the product of its column norms). Scratch wk3 (4, 3, 3)."""
    A = wk3[0]
    P = wk3[1]
    Di = wk3[2]
    Qm = wk3[3]
    c0, c1, c2 = cl[0], cl[1], cl[2]
    for i in range(3):
        x0, x1, x2 = cross3(Jp[i, 3], Jp[i, 4], Jp[i, 5], c0, c1, c2)
        A[i, 0] = Jp[i, 0] + x0
        A[i, 1] = Jp[i, 1] + x1
        A[i, 2] = Jp[i, 2] + x2
    if not _inv3_cols(A, P):
        return False
    for i in range(3):
        for r in range(3):
            A[i, r] = Jp[3 + i, 3 + r]
    if not _inv3_cols(A, Di):
        return False
    # Qm = -D^-1 B P, B[:, i] = Jp[i, 3:]
    for r in range(3):
        for k in range(3):
            A[r, k] = Jp[0, 3 + r] * P[0, k] + Jp[1, 3 + r] * P[1, k] + Jp[2, 3 + r] * P[2, k]
    for r in range(3):
        for k in range(3):
            Qm[r, k] = -(Di[r, 0] * A[0, k] + Di[r, 1] * A[1, k] + Di[r, 2] * A[2, k])
    for r in range(3):
        F[r, 0], F[r, 1], F[r, 2] = P[r, 0], P[r, 1], P[r, 2]
        F[r, 3], F[r, 4], F[r, 5] = cross3(c0, c1, c2, P[r, 0], P[r, 1], P[r, 2])
        F[3 + r, 0], F[3 + r, 1], F[3 + r, 2] = Qm[r, 0], Qm[r, 1], Qm[r, 2]
        y0, y1, y2 = cross3(Qm[r, 0], Qm[r, 1], Qm[r, 2], c0, c1, c2)
        F[3 + r, 3] = Di[r, 0] - y0
        F[3 + r, 4] = Di[r, 1] - y1
        F[3 + r, 5] = Di[r, 2] - y2
    return True


@njit(cache=_C, fastmath=_FM, error_model='numpy', inline='always')
def _matvec(F, v, out):
    """out = F v (F (n, 6))."""
    for i in range(F.shape[0]):
        acc = 0.0
        for c in range(6):
            acc += F[i, c] * v[c]
        out[i] = acc


@njit(cache=_C, fastmath=_FM, error_model='numpy')
def _ik_orders_2_4(Jp, F, VTs, thl, Jd, Jdd, DV0, DV1, b):
    """Orders 2..4 of the limb IK (eq. 15 with the E2 brackets): Lemma 1 as backward suffix sums
    DV_i = sum_{j>i} J_j thd_j, DVd_i, DVdd_i; Jd_i = -ad(DV_i) J_i,
    Jdd_i = -ad(DVd_i) J_i - ad(DV_i) Jd_i, Jddd_i = -ad(DVdd_i) J_i - 2 ad(DVd_i) Jd_i
    - ad(DV_i) Jdd_i; theta^(nu) = F (V_t^(nu-1) - c^nu), c^2 = Jd thd,
    c^3 = Jdd thd + 2 Jd thdd, c^4 = Jddd thd + 3 Jdd thdd + 3 Jd thddd (E1). Fills thl[2..4],
    Jd, Jdd (rows = columns of the matrices), DV0, DV1. 6-tuples in registers."""
    N = Jp.shape[0]
    for nu in range(2, 5):
        acc = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        c = _ld6(VTs, nu - 1)
        for i in range(N - 1, -1, -1):
            p = _ld6(Jp, i)
            d1 = thl[1, i]
            if nu == 2:
                _st6(DV0, i, acc)
                t = _ad6(acc, p)
                _st6(Jd, i, _sc6(-1.0, t))
                acc = _axpy6(d1, p, acc)
                c = _axpy6(d1, t, c)
            elif nu == 3:
                q = _ld6(Jd, i)
                _st6(DV1, i, acc)
                t1 = _ad6(acc, p)
                t2 = _ad6(_ld6(DV0, i), q)
                h = _axpy6(-1.0, t1, _sc6(-1.0, t2))
                _st6(Jdd, i, h)
                acc = _axpy6(d1, q, _axpy6(thl[2, i], p, acc))
                c = _axpy6(-d1, h, _axpy6(-2.0 * thl[2, i], q, c))
            else:
                q = _ld6(Jd, i)
                h = _ld6(Jdd, i)
                t1 = _ad6(acc, p)
                t2 = _ad6(_ld6(DV1, i), q)
                t3 = _ad6(_ld6(DV0, i), h)
                # - Jddd_i thd_i = (t1 + 2 t2 + t3) thd_i
                c = _axpy6(d1, t1, _axpy6(2.0 * d1, t2, _axpy6(d1, t3, c)))
                c = _axpy6(-3.0 * thl[2, i], h, _axpy6(-3.0 * thl[3, i], q, c))
                acc = _axpy6(d1, h, _axpy6(2.0 * thl[2, i], q, _axpy6(thl[3, i], p, acc)))
        _matvec(F, c, thl[nu])


@njit(cache=_C, fastmath=_FM, error_model='numpy', inline='always')
def _FTv(F, q):
    """F^T q (F (6, 6) of a limb with N = 6, q 6-tuple) as a 6-tuple."""
    return _mv6(F.T, q)


@njit(cache=_C, fastmath=_FM, error_model='numpy', inline='always')
def _JTv(J, a):
    """(J^T a)_i = J[i] . a for the (6, 6) array J whose rows are the columns of the matrix."""
    return (
        _dot6(_ld6(J, 0), a),
        _dot6(_ld6(J, 1), a),
        _dot6(_ld6(J, 2), a),
        _dot6(_ld6(J, 3), a),
        _dot6(_ld6(J, 4), a),
        _dot6(_ld6(J, 5), a),
    )


@njit(cache=_C, fastmath=_FM, error_model='numpy')
def pkm_id_d2_batch(
    BR, Bp, X, M, act, g, PR, Pp, VT, th_guess, tol, max_iter, TH, U, WT, JIK, status, ik_mode, ik_geom
):
    """Recursive PKM inverse dynamics with 1st/2nd time derivatives over a batch of samples.

    Inputs: limb data (module docstring); act (L,) actuated joint index per limb; g (3,);
    PR (S, 3, 3), Pp (S, 3) platform poses; VT (S, 4, 6) V_t, Vd_t, Vdd_t, Vddd_t (body-fixed,
    platform frame, P_t = D_t = I); th_guess (L, N) IK start of the first sample (later samples
    start from the previous solution); tol, max_iter: Newton IK; ik_mode (L,) int64 per limb:
    0 Newton IK (:func:`limb_ik`) and LU inverse of J_t; 1 decoupled U-P-S limb with the
    geometry ik_geom[l] (L, IKG_SIZE): closed-form IK (:func:`limb_ik_cf`) and block inverse of
    J_t (:func:`inv_jt_ups`); 2 the same limb with the Newton IK forced (benchmarks, tests).
    Outputs: TH (S, 5, L, N) limb joint derivatives 0..4;
    U (S, 3, L) u, ud, udd (limb order); WT (S, 3, 6) w, wd, wdd; JIK (S, 3, L, 6) J_IK and its
    first two derivatives; status (S,): 0 ok, 1 IK did not converge / no IK solution, 2 singular
    limb Jacobian J_t (or, closed form, a U or S at a singular configuration), 3 singular J_IK,
    4 non-finite input, 6 closed-form IK branch ambiguous (the warm start does not single out
    a branch; see :func:`limb_ik_cf`). On failure the outputs of the sample are undefined and
    the warm start of the next sample is the last successful solution of each closed-form limb.

    F = J_t^-1 (N = 6) is formed once per limb and sample (LU inverse, or block inverse for the
    decoupled limbs); ``F^T Q`` and its derivatives and the rows ``F[act]`` of F, Fd, Fdd are
    matrix-vector products (``a' = F^T (Q' - Jd^T a)``, ...; Fd, Fdd are never formed). The
    limb NE recursion stops at the last massive body before the platform body; the platform
    body's own wrench (V = V_t) enters w directly.
    """
    S = PR.shape[0]
    L = BR.shape[0]
    N = BR.shape[1]
    th = th_guess.copy()
    cs = np.empty((L, 2, N))  # cos/sin of th (closed-form limbs)
    for l in range(L):
        for i in range(N):
            cs[l, 0, i] = np.cos(th[l, i])
            cs[l, 1, i] = np.sin(th[l, i])
    CR = np.empty((N, 3, 3))
    Cp = np.empty((N, 3))
    J = np.empty((N, N))
    Jp = np.empty((N, 6))  # column i of J_p stored as row i
    Jd = np.empty((N, 6))
    Jdd = np.empty((N, 6))
    DV0 = np.empty((N, 6))
    DV1 = np.empty((N, 6))
    LU = np.empty((6, N))
    piv = np.empty(N, dtype=np.int64)
    b = np.empty(6)
    F = np.empty((N, 6))
    tR = np.empty((3, 3))
    tp = np.empty(3)
    Vb = np.empty((4, N, 6))
    Qv = np.empty((3, N))
    e6 = np.empty(6)
    thl = np.empty((5, N))
    JI = np.empty((L, L))
    pivL = np.empty(L, dtype=np.int64)
    # bodies after the last massive one carry no wrench: the NE recursion stops there. The
    # last body of every limb moves with the platform (V_{N-1} = V_t): its wrench and
    # derivatives are computed from VT directly and, as F^T J_t^T = I, enter w, wd, wdd as they
    # are (the limb's NE recursion runs over bodies 0..nbody-1 < N-1 only)
    nbody = np.zeros(L, dtype=np.int64)
    heavy = np.zeros((L, N), dtype=np.bool_)
    for l in range(L):
        for i in range(N):
            for r in range(6):
                for c in range(6):
                    if M[l, i, r, c] != 0.0:
                        heavy[l, i] = True
            if heavy[l, i] and i < N - 1:
                nbody[l] = i + 1
    relR = np.empty((N, 3, 3))
    relp = np.empty((N, 3))
    wk3 = np.empty((4, 3, 3))
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
            if heavy[l, N - 1]:
                av0 = -(PR[s, 0, 0] * g[0] + PR[s, 1, 0] * g[1] + PR[s, 2, 0] * g[2])
                av1 = -(PR[s, 0, 1] * g[0] + PR[s, 1, 1] * g[1] + PR[s, 2, 1] * g[2])
                av2 = -(PR[s, 0, 2] * g[0] + PR[s, 1, 2] * g[1] + PR[s, 2, 2] * g[2])
                B0, B1, B2 = _body_wrench6(
                    M[l, N - 1], _ld6(VT[s], 0), _ld6(VT[s], 1), _ld6(VT[s], 2), _ld6(VT[s], 3), av0, av1, av2
                )
                for c in range(6):
                    WT[s, 0, c] += B0[c]
                    WT[s, 1, c] += B1[c]
                    WT[s, 2, c] += B2[c]
        for l in range(L):
            # ---- order 0: IK (closed form or Newton), FK, J_p (eq. 22)
            if ik_mode[l] == 1:
                st = limb_ik_cf(ik_geom[l], PR[s], Pp[s], th[l], cs[l])
                if st != 0:
                    status[s] = st
                    break
                limb_fk_cs(BR[l], Bp[l], X[l], th[l], cs[l], CR, Cp, tR, tp)
            else:
                # CR, Cp are left at the converged th by limb_ik
                it = limb_ik(BR[l], Bp[l], X[l], PR[s], Pp[s], th[l], CR, Cp, J, piv, tol, max_iter, tR, tp, e6)
                if it < 0:
                    status[s] = 1 if it == -1 else 2
                    break
            for i in range(N):
                _jp_col(CR[N - 1], Cp[N - 1], CR[i], Cp[i], X[l, i], Jp[i])
            # F = J_t^-1 (D_t = P_t = I)
            if ik_mode[l] != 0:
                if not inv_jt_ups(Jp, ik_geom[l, IKG_CL : IKG_CL + 3], F, wk3):
                    status[s] = 2
                    break
            else:
                for i in range(N):
                    for r in range(6):
                        LU[r, i] = Jp[i, r]
                if not lu_ok(LU, piv):
                    status[s] = 2
                    break
                lu_inverse(LU, piv, F)
            for i in range(N):
                thl[0, i] = th[l, i]
            # ---- order 1: thd = F V_t (eq. 6)
            _matvec(F, VT[s, 0], b)
            for i in range(N):
                thl[1, i] = b[i]
            # ---- orders 2..4 (eq. 15 with E2 brackets, Lemma 1, E1)
            _ik_orders_2_4(Jp, F, VT[s], thl, Jd, Jdd, DV0, DV1, b)
            for k in range(5):
                for i in range(N):
                    TH[s, k, l, i] = thl[k, i]
            # ---- backward Newton-Euler and derivatives
            limb_ne_d2_fast(X[l], M[l], heavy[l], g, thl, CR, Cp, Vb, Qv, relR, relp, nbody[l])
            # ---- assembly (eqs. 14, 19, 20): a = F^T Q, a' = F^T Q' + Fd^T Q
            # = F^T (Q' - Jd^T a), a'' = F^T (Q'' - Jdd^T a - 2 Jd^T a') (Fd = -F Jd F, E3)
            a0 = _FTv(F, _ld6(Qv, 0))
            j1 = _JTv(Jd, a0)
            a1 = _FTv(F, _axpy6(-1.0, j1, _ld6(Qv, 1)))
            j2 = _axpy6(2.0, _JTv(Jd, a1), _JTv(Jdd, a0))
            a2 = _FTv(F, _axpy6(-1.0, j2, _ld6(Qv, 2)))
            for c in range(6):
                WT[s, 0, c] += a0[c]
                WT[s, 1, c] += a1[c]
                WT[s, 2, c] += a2[c]
            # rows act of F, Fd = -F Jd F, Fdd = -F (Jdd F + 2 Jd Fd) (E3), as columns:
            # r0 = F^T e_act, r1 = -F^T Jd^T r0, r2 = -F^T (Jdd^T r0 + 2 Jd^T r1)
            r0 = _ld6(F, act[l])
            r1 = _sc6(-1.0, _FTv(F, _JTv(Jd, r0)))
            r2 = _sc6(-1.0, _FTv(F, _axpy6(2.0, _JTv(Jd, r1), _JTv(Jdd, r0))))
            _st6(JIK[s, 0], l, r0)
            _st6(JIK[s, 1], l, r1)
            _st6(JIK[s, 2], l, r2)
        if status[s] != 0:
            continue
        # ---- u = J_IK^-T w; ud, udd
        for r in range(L):
            for c in range(L):
                JI[r, c] = JIK[s, 0, r, c]
        if L != 6 or not lu_ok(JI, pivL):
            status[s] = 3
            continue
        for k in range(3):  # solved in place on the rows U[s, k]
            for r in range(L):
                acc = WT[s, k, r]
                for c in range(L):
                    if k == 1:
                        acc -= JIK[s, 1, c, r] * U[s, 0, c]
                    elif k == 2:
                        acc -= JIK[s, 2, c, r] * U[s, 0, c] + 2.0 * JIK[s, 1, c, r] * U[s, 1, c]
                U[s, k, r] = acc
            lu_solve_T(JI, pivL, U[s, k])
