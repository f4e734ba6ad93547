"""Numba kernel of the general 2nd-order PKM inverse dynamics (``pkm.general``; private).

Computes per sample exactly what :func:`robot_dynamics.pkm.general.inverse_dynamics_d2_general`
computes with numpy (its module docstring has the maths): Newton position IK on the stacked
closure + task system, theta derivatives 1..4 and the platform twist derivatives by the limb
elimination solve of ``K z = b`` (numpy: ``_KSolver``), the Jacobian derivatives (Lemma 1 by
backward suffix sums), ``G, G', G''``, the limb Newton-Euler with 1st/2nd derivatives, ``w``,
``J_IK`` and ``u, ud, udd`` (square, or least-norm for redundant actuation).

Packed limb data (``L`` limbs, padded to ``Nm`` = the longest limb; built by
``robot_dynamics.pkm.general._Packed``): ``BR`` (L, Nm, 3, 3), ``Bp`` (L, Nm, 3) reference pose
of body i in body i-1 (i = 0: world); ``X`` (L, Nm, 6) unit joint screws (linear first) in the
body frames; ``M`` (L, Nm, 6, 6) body inertias (zero for the virtual cut-joint bodies and the
padding); in the int parameter vector ``IP``: ``Nl`` (L,) joints per limb (virtual included),
``nl`` (L,) tree bodies per limb, ``off`` (L + 1,) offsets in the stacked joint vector
(``Nt = off[L]``), task components, actuated joints, nonzero-inertia flags.

The solve of ``K z = b`` (``S``, a left inverse of K: the numpy ``_KSolver`` for consistent
right-hand sides) by limb elimination with LU instead of QR: per limb ``P_l J_l = [L1; L2] U``
(partial pivoting; padded to the LU of the square ``[J_l, E_l]``, E_l the unit columns of the
non-pivot rows), the limb's constraint rows ``[-L2 L1^-1, I] P_l`` (its left null space) and the
task rows T stacked in H ((sum(6 - N_l) + delta) x 6, LU with row pivoting: the platform twist
from 6 independent rows), then ``theta_l`` from the limb LU. For a consistent b this is the
exact solution, as numpy's least squares; a Newton step with an inconsistent residual is a
different (equally convergent) step. Rank tests: ``min |U_kk| <= 1e-10 max(1, max |U_kk|)``.

Nothing of ``G = S [0; I]``, ``G'``, ``G''`` is formed: with the transpose ``S^T`` (adjoint
solves), ``w = (S^T Q)_t``, ``w' = (S^T (Q' - K'^T y0))_t``, ``w'' = (S^T (Q'' - K''^T y0 - 2
K'^T y1))_t`` (y0, y1 the first two adjoint vectors, ``_t`` the task rows), and the row of
``J_IK`` of actuated joint a and its derivatives ``r0 = S^T e_a``, ``r1 = -S^T K'^T r0``,
``r2 = -S^T (K''^T r0 + 2 K'^T r1)`` (from ``G' = -S K' G``, ``G'' = -S (K'' G + 2 K' G')``;
sparse: only the limbs they reach). The platform body's wrench is computed from V_p directly
and enters Q as ``J_p^T W`` (and derivatives) of its limb. ``u``: QR with column pivoting of
``J_IK`` (singular if ``|R_dd| <= 1e-10 |R_11|``; numpy: the singular values), square solve or
least norm differentiated exactly.

Warm start (``warm``): sample s starts from the solution of the previous one plus a predictor.
First a 4th-order Taylor step: the sample step h is fitted (Gauss-Newton, :func:`_fit_step`) to
the task's change by the previous sample's task derivatives 1..4 (pose task: the derivatives of
the 4x4 pose from T' = T V^, :func:`_pose_taylor`), and theta + sum_k theta^(k) h^k / k! (k <= 4)
starts the Newton IK; at 1 kHz along a smooth motion it is within the Newton tolerance, so the
IK costs one FK (Gough-Stewart roll: 876 of 1000 samples without a Newton step). If the fit's
relative residual exceeds 1e-6 (samples not along one smooth motion), the chord predictor
instead: one step with the previous factorisation: the chord Newton step to the new task, and, when the
task step is consistent with the previous sample's motion (``dxi = xi' h + xi'' h^2 / 2`` fits
to 5 %), the 2nd-order term ``(theta'' - G xi'') h^2 / 2``; along a trajectory sampled at 1 kHz
one Newton step per sample remains. If the IK from the predicted start fails (convergence,
singularity or joint limits), it is retried once from the previous solution itself.

Status codes (per sample): 0 ok, 1 position IK not converged, 2 singular limb Jacobian (``info``
= limb), 3 singular J_IK (actuation singularity), 4 non-finite input, 5 IK solution outside the
joint limits (``info`` = stacked joint), 7 parallel (constraint/task) singularity, 8 the
rotation part of the pose task is not orthonormal. On failure the outputs of the sample are
undefined; with the warm start, the next sample starts from the last successful solution.

Helpers (FK, limb Newton-Euler with derivatives, small 6-vector algebra) come from
:mod:`._recursive_kernels` (note: numba's cache does not see edits of that module; clear
``__pycache__`` after changing it), compiled with the same fast-math flags. The small 6-vector
and 3 x 3 helpers are called here, not inlined (:func:`robot_dynamics.spatial.linalg.not_inlined`):
this route calls them in hundreds of places, and inlining them there multiplies its compile time
while the route runs no faster.
"""

import numpy as np
from numba import njit

from robot_dynamics.spatial.linalg import (
    householder_apply,
    householder_qr,
    lu_factor,
    lu_perm,
    lu_tri_solve,
    not_inlined,
    tri_solve,
)
from robot_dynamics.spatial import linalg as _la
from robot_dynamics.pkm import _recursive_kernels as _rk
from robot_dynamics.pkm._recursive_kernels import (
    _FM,
    _body_wrench6,
    _limb_fk,
    limb_ne_d2_fast,
)

# the small helpers are called, not inlined: the general route calls them in many places, and
# inlining them there multiplies its compile time without making it faster
cross3 = not_inlined(_la.cross3)
hat = not_inlined(_la.hat)
matmul3 = not_inlined(_la.matmul3)
_ad6 = not_inlined(_rk._ad6)
_axpy6 = not_inlined(_rk._axpy6)
_dot6 = not_inlined(_rk._dot6)
_jp_col = not_inlined(_rk._jp_col)
_ld6 = not_inlined(_rk._ld6)
_st6 = not_inlined(_rk._st6)

_C = True
_RCOND = 1e-10
_TWO_PI = 2.0 * np.pi


@njit(cache=_C, fastmath=_FM, error_model='numpy')
def _zv(z, k, o):
    return z[k, o], z[k, o + 1], z[k, o + 2], z[k, o + 3], z[k, o + 4], z[k, o + 5]


@njit(cache=_C, fastmath=_FM, error_model='numpy')
def _pose_error(Rl, pl, Rp, pp, e, o):
    """e[o:o+6] = error twist of C_l^-1 C_p (numpy ``_pose_error``)."""
    d0, d1, d2 = pp[0] - pl[0], pp[1] - pl[1], pp[2] - pl[2]
    R00 = Rl[0, 0] * Rp[0, 0] + Rl[1, 0] * Rp[1, 0] + Rl[2, 0] * Rp[2, 0]
    R11 = Rl[0, 1] * Rp[0, 1] + Rl[1, 1] * Rp[1, 1] + Rl[2, 1] * Rp[2, 1]
    R22 = Rl[0, 2] * Rp[0, 2] + Rl[1, 2] * Rp[1, 2] + Rl[2, 2] * Rp[2, 2]
    R01 = Rl[0, 0] * Rp[0, 1] + Rl[1, 0] * Rp[1, 1] + Rl[2, 0] * Rp[2, 1]
    R10 = Rl[0, 1] * Rp[0, 0] + Rl[1, 1] * Rp[1, 0] + Rl[2, 1] * Rp[2, 0]
    R02 = Rl[0, 0] * Rp[0, 2] + Rl[1, 0] * Rp[1, 2] + Rl[2, 0] * Rp[2, 2]
    R20 = Rl[0, 2] * Rp[0, 0] + Rl[1, 2] * Rp[1, 0] + Rl[2, 2] * Rp[2, 0]
    R12 = Rl[0, 1] * Rp[0, 2] + Rl[1, 1] * Rp[1, 2] + Rl[2, 1] * Rp[2, 2]
    R21 = Rl[0, 2] * Rp[0, 1] + Rl[1, 2] * Rp[1, 1] + Rl[2, 2] * Rp[2, 1]
    for r in range(3):
        e[o + r] = Rl[0, r] * d0 + Rl[1, r] * d1 + Rl[2, r] * d2
    a0 = 0.5 * (R21 - R12)
    a1 = 0.5 * (R02 - R20)
    a2 = 0.5 * (R10 - R01)
    sn = np.sqrt(a0 * a0 + a1 * a1 + a2 * a2)
    cs = 0.5 * (R00 + R11 + R22 - 1.0)
    f = np.arctan2(sn, cs) / sn if sn > 1e-12 else 1.0
    e[o + 3] = a0 * f
    e[o + 4] = a1 * f
    e[o + 5] = a2 * f


@njit(cache=_C, fastmath=_FM, error_model='numpy')
def _task_value(tidx, Rref, PR, Pp, out):
    """World task coordinates of the platform pose (numpy ``GeneralPKM.task_value``)."""
    for r in range(tidx.shape[0]):
        k = tidx[r]
        if k < 3:
            out[r] = Pp[k]
        else:
            a = k - 3
            i = (a + 1) % 3
            j = (a + 2) % 3
            # M = PR Rref^T: M[j, i], M[i, i]
            mji = PR[j, 0] * Rref[i, 0] + PR[j, 1] * Rref[i, 1] + PR[j, 2] * Rref[i, 2]
            mii = PR[i, 0] * Rref[i, 0] + PR[i, 1] * Rref[i, 1] + PR[i, 2] * Rref[i, 2]
            out[r] = np.arctan2(mji, mii)


@njit(cache=_C, fastmath=_FM, error_model='numpy')
def _exp_update(PR, Pp, V, E, q):
    """(PR, Pp) <- (PR, Pp) exp(V^) (V = (v, w) linear first); scratch E (3, 3), q (3,)."""
    w0, w1, w2 = V[3], V[4], V[5]
    t2 = w0 * w0 + w1 * w1 + w2 * w2
    if t2 < 1e-16:
        A = 1.0 - t2 / 6.0
        B = 0.5 - t2 / 24.0
        C = 1.0 / 6.0 - t2 / 120.0
    else:
        t = np.sqrt(t2)
        s = np.sin(t)
        A = s / t
        B = (1.0 - np.cos(t)) / t2
        C = (t - s) / (t2 * t)
    # exp(w^) = I + A W + B W^2, p = (I + B W + C W^2) v; W^2 = w w^T - t2 I
    v0, v1, v2 = V[0], V[1], V[2]
    c0, c1, c2 = cross3(w0, w1, w2, v0, v1, v2)
    wv = w0 * v0 + w1 * v1 + w2 * v2
    q[0] = v0 + B * c0 + C * (w0 * wv - t2 * v0)
    q[1] = v1 + B * c1 + C * (w1 * wv - t2 * v1)
    q[2] = v2 + B * c2 + C * (w2 * wv - t2 * v2)
    E[0, 0] = 1.0 + B * (w0 * w0 - t2)
    E[1, 1] = 1.0 + B * (w1 * w1 - t2)
    E[2, 2] = 1.0 + B * (w2 * w2 - t2)
    E[0, 1] = -A * w2 + B * w0 * w1
    E[1, 0] = A * w2 + B * w0 * w1
    E[0, 2] = A * w1 + B * w0 * w2
    E[2, 0] = -A * w1 + B * w0 * w2
    E[1, 2] = -A * w0 + B * w1 * w2
    E[2, 1] = A * w0 + B * w1 * w2
    for r in range(3):
        Pp[r] += PR[r, 0] * q[0] + PR[r, 1] * q[1] + PR[r, 2] * q[2]
    for r in range(3):
        a0, a1, a2 = PR[r, 0], PR[r, 1], PR[r, 2]
        for c in range(3):
            PR[r, c] = a0 * E[0, c] + a1 * E[1, c] + a2 * E[2, c]


@njit(cache=_C, fastmath=_FM, error_model='numpy')
def _kfactor(L, Nl, pose, tidx, PR, Pp, CR, Cq, X, Jc, kf):
    """Limb-elimination factorisation of K (module docstring) at the FK (CR, Cq) and platform
    pose (PR, Pp): the limb Jacobians Jc (columns as rows, eq. 22), then by LU: per limb
    ``P_l J_l = [L1; L2] U`` (LUl (L, 6, 6), padded with the identity, pl (L, 6)); the
    constraint rows of the limb (left null space of J_l, ``[-L2 L1^-1, I] P_l``) and the task rows T stacked in H0 (mh, 6)
    (``hown[r]`` = limb of row r, or -1 - task row), LU of H0 in LUH, ph. Returns
    (status, limb, mh): 0, 2 (singular limb Jacobian of ``limb``) or 7 (parallel)."""
    LUl, pl, H0, LUH, ph, hown = kf
    for l in range(L):
        for i in range(Nl[l]):
            _jp_col(PR, Pp, CR[l, i], Cq[l, i], X[l, i], Jc[l, i])
    ip = np.empty(6, dtype=np.int64)
    mh = 0
    for l in range(L):
        N = Nl[l]
        A = LUl[l]
        for r in range(6):
            for c in range(N):
                A[r, c] = Jc[l, c, r]
        dmin, dmax, sg = lu_factor(A, 6, N, ip)
        lu_perm(ip[:N], 6, pl[l])
        if N > 0 and dmin <= _RCOND * max(1.0, dmax):
            return 2, l, 0
        # padded to the LU of the square [J_l, E_l] (E_l: unit columns of the non-pivot rows):
        # columns N..5 = identity, so the solves run over fixed 6 x 6 loops
        for r in range(6):
            for c in range(N, 6):
                A[r, c] = 1.0 if r == c else 0.0
        P = pl[l]
        for k in range(N, 6):
            # x = L2[k] L1^-1; row (permuted) = [-x, e_k]
            for c in range(6):
                H0[mh, c] = 0.0
            H0[mh, P[k]] = 1.0
            for j in range(N - 1, -1, -1):
                x = A[k, j]
                for m2 in range(j + 1, N):
                    x -= LUH[mh, m2] * A[m2, j]
                LUH[mh, j] = x  # scratch: x_j
                H0[mh, P[j]] = -x
            hown[mh] = l
            mh += 1
    d = tidx.shape[0]
    for r in range(d):
        k = tidx[r]
        for c in range(6):
            H0[mh, c] = 0.0
        if pose:
            H0[mh, r] = 1.0
        elif k < 3:
            for c in range(3):
                H0[mh, c] = PR[k, c]
        else:
            for c in range(3):
                H0[mh, 3 + c] = PR[k - 3, c]
        hown[mh] = -1 - r
        mh += 1
    if mh < 6:
        return 7, -1, mh
    for r in range(mh):
        for c in range(6):
            LUH[r, c] = H0[r, c]
    dmin, dmax, sg = lu_factor(LUH, mh, 6, ip)
    lu_perm(ip, mh, ph)
    if dmin <= _RCOND * max(1.0, dmax):
        return 7, -1, mh
    return 0, -1, mh


@njit(cache=_C, fastmath=_FM, error_model='numpy')
def _fsolve(L, Nl, off, kf, mh, b, z, hb, y6):
    """z (Nt + 6) = S b: the solution of ``K z = b`` for a consistent b (6 L + d) (factors
    of :func:`_kfactor`; a Newton step for an inconsistent one)."""
    LUl, pl, H0, LUH, ph, hown = kf
    Nt = off[L]
    for r in range(mh):
        o = hown[r]
        if o >= 0:
            s = 0.0
            for c in range(6):
                s += H0[r, c] * b[6 * o + c]
            hb[r] = -s
        else:
            hb[r] = b[6 * L - 1 - o]
    for k in range(6):
        y6[k] = hb[ph[k]]
    lu_tri_solve(LUH, y6, 6, False)
    for k in range(6):
        z[Nt + k] = y6[k]
    for l in range(L):
        o = off[l]
        P = pl[l]
        # [theta_l; mu] = [J_l, E_l]^-1 (V + b_l) (mu = 0 for a consistent b), fixed 6 x 6
        for k in range(6):
            y6[k] = z[Nt + P[k]] + b[6 * l + P[k]]
        lu_tri_solve(LUl[l], y6, 6, False)
        for k in range(Nl[l]):
            z[o + k] = y6[k]


@njit(cache=_C, fastmath=_FM, error_model='numpy')
def _asolve(L, Nl, off, d, kf, mh, c, y, fin, fout, t6, aV):
    """y (6 L + d) = S^T c (c (Nt + 6)), the transpose of :func:`_fsolve`. ``fin`` (L,) flags
    the limbs where c may be nonzero (others skipped); ``fout`` (L,) those where y may be."""
    LUl, pl, H0, LUH, ph, hown = kf
    Nt = off[L]
    for k in range(6):
        aV[k] = c[Nt + k]
    for r in range(d):
        y[6 * L + r] = 0.0
    for l in range(L):
        fout[l] = fin[l]
        if not fin[l]:
            for k in range(6):
                y[6 * l + k] = 0.0
            continue
        N = Nl[l]
        o = off[l]
        P = pl[l]
        # a_l = [J_l, E_l]^-T [c_l; 0] (fixed 6 x 6 loops on the padded LU)
        for k in range(6):
            t6[k] = c[o + k] if k < N else 0.0
        lu_tri_solve(LUl[l], t6, 6, True)
        for k in range(6):
            y[6 * l + P[k]] = t6[k]
            aV[P[k]] += t6[k]
    # h = P_H^T [L1^-T U^-T aV; 0]
    for k in range(6):
        t6[k] = aV[k]
    lu_tri_solve(LUH, t6, 6, True)
    for k in range(6):
        r = ph[k]
        h = t6[k]
        o = hown[r]
        if o >= 0:
            if not fout[o]:
                fout[o] = True
                for c2 in range(6):
                    y[6 * o + c2] = 0.0
            for c2 in range(6):
                y[6 * o + c2] -= h * H0[r, c2]
        else:
            y[6 * L - 1 - o] = h


@njit(cache=_C, fastmath=_FM, error_model='numpy')
def _task_mv(L, Nt, tidx, PR, Gk, z, coef, rhs):
    """rhs[task rows] -= coef (S blockdiag(R G_k, R G_k)) V (V = z[Nt:])."""
    for r in range(tidx.shape[0]):
        k = tidx[r]
        a = k if k < 3 else k - 3
        base = Nt if k < 3 else Nt + 3
        s = 0.0
        for c in range(3):
            s += (PR[a, 0] * Gk[0, c] + PR[a, 1] * Gk[1, c] + PR[a, 2] * Gk[2, c]) * z[base + c]
        rhs[6 * L + r] -= coef * s


@njit(cache=_C, fastmath=_FM, error_model='numpy')
def _kT(L, Nl, off, pose, tidx, PR, Jk, Gk, y, coef, out, fl):
    """out += coef K^(k)^T y (k >= 1: limb blocks J_l^(k)^T y_l for the flagged limbs, task
    rows (S blockdiag(R G_k, R G_k))^T y_t)."""
    Nt = off[L]
    for l in range(L):
        if not fl[l]:
            continue
        o = off[l]
        for i in range(Nl[l]):
            s = 0.0
            for c in range(6):
                s += Jk[l, i, c] * y[6 * l + c]
            out[o + i] += coef * s
    if not pose:
        for r in range(tidx.shape[0]):
            k = tidx[r]
            a = k if k < 3 else k - 3
            base = Nt if k < 3 else Nt + 3
            yr = coef * y[6 * L + r]
            for c in range(3):
                out[base + c] += yr * (PR[a, 0] * Gk[0, c] + PR[a, 1] * Gk[1, c] + PR[a, 2] * Gk[2, c])


@njit(cache=_C, fastmath=_FM, error_model='numpy')
def _jac_deriv(N, J, J1, J2, J3, th, order):
    """J^(order) (order 1..3) of the limb Jacobian J (columns as rows, (Nm, 6)) by backward
    suffix sums (Lemma 1, corrected eq. 25), the lower orders given; th (5, Nm) theta and
    derivatives."""
    z = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    dV0 = z
    dV1 = z
    dV2 = z
    for i in range(N - 1, -1, -1):
        if i < N - 1:
            j = i + 1
            t1 = th[1, j]
            Jj = _ld6(J, j)
            dV0 = _axpy6(t1, Jj, dV0)
            if order >= 2:
                J1j = _ld6(J1, j)
                dV1 = _axpy6(th[2, j], Jj, _axpy6(t1, J1j, dV1))
                if order >= 3:
                    dV2 = _axpy6(th[3, j], Jj, _axpy6(2.0 * th[2, j], J1j, _axpy6(t1, _ld6(J2, j), dV2)))
        Ji = _ld6(J, i)
        if order == 1:
            _st6(J1, i, _ad6(dV0, Ji))
            for c in range(6):
                J1[i, c] = -J1[i, c]
        elif order == 2:
            a = _axpy6(1.0, _ad6(dV1, Ji), _ad6(dV0, _ld6(J1, i)))
            for c in range(6):
                J2[i, c] = -a[c]
        else:
            a = _axpy6(1.0, _ad6(dV2, Ji), _axpy6(2.0, _ad6(dV1, _ld6(J1, i)), _ad6(dV0, _ld6(J2, i))))
            for c in range(6):
                J3[i, c] = -a[c]


@njit(cache=_C, fastmath=_FM, error_model='numpy')
def _gmat(w, wd, wdd, k, out, S3):
    """G_k (k = 1..3) of the angular task rows: G1 = w^, G2 = w^2 + wd^,
    G3 = w^3 + 2 w^ wd^ + wd^ w^ + wdd^ (S3 (4, 3, 3) scratch)."""
    W = S3[0]
    Wd = S3[1]
    W2 = S3[2]
    T = S3[3]
    hat(w, W)
    if k == 1:
        for r in range(3):
            for c in range(3):
                out[r, c] = W[r, c]
        return
    hat(wd, Wd)
    matmul3(W, W, W2)
    if k == 2:
        for r in range(3):
            for c in range(3):
                out[r, c] = W2[r, c] + Wd[r, c]
        return
    hat(wdd, out)
    matmul3(W2, W, T)
    _add3(out, T, 1.0)
    matmul3(W, Wd, T)
    _add3(out, T, 2.0)
    matmul3(Wd, W, T)
    _add3(out, T, 1.0)


@njit(cache=_C, fastmath=_FM, error_model='numpy')
def _add3(C, T, alpha):
    """C += alpha T (3 x 3)."""
    for r in range(3):
        for c in range(3):
            C[r, c] += alpha * T[r, c]


@njit(cache=_C, fastmath=_FM, error_model='numpy')
def _ls_apply(W, n, piv, V, beta, b, y, out):
    """out (m,) = Q R^-T P^T b: the solution of J^T u = b (square J) or its least-norm solution
    (J (m, n), m >= n, full column rank) from the pivoted Householder QR of J
    (:func:`robot_dynamics.spatial.linalg.householder_qr` of the rows of W = J^T (n, m):
    R[c, i] = W[i, c]). y: scratch (m,)."""
    m = V.shape[1]
    for i in range(n):
        y[i] = b[piv[i]]
    tri_solve(W, y, n, True, False, False)  # R^T is the lower triangle of W
    for i in range(n, m):
        y[i] = 0.0
    householder_apply(V, beta, n, y, False)
    for r in range(m):
        out[r] = y[r]


@njit(cache=_C, fastmath=_FM, error_model='numpy')
def _adj_chain(L, Nl, off, d, pose, tidx, PR, J1, J2, Gk, kf, mh, ya, ca, fo, fin, t6, aV, second):
    """The adjoint chain from ``ya[0] = S^T c``: ``ya[1] = -S^T K'^T ya[0]`` and, with
    ``second``, ``ya[2] = -S^T (K''^T ya[0] + 2 K'^T ya[1])`` (for c = e_a the rows of J_IK',
    J_IK''; for c = sum_a u_a e_a their products with u). ``fo[k]`` flags the limbs where
    ``ya[k]`` may be nonzero (fo[0] given); ca, fin, t6, aV scratch."""
    for j in range(ca.shape[0]):
        ca[j] = 0.0
    _kT(L, Nl, off, pose, tidx, PR, J1, Gk[0], ya[0], -1.0, ca, fo[0])
    _asolve(L, Nl, off, d, kf, mh, ca, ya[1], fo[0], fo[1], t6, aV)
    if second:
        for j in range(ca.shape[0]):
            ca[j] = 0.0
        _kT(L, Nl, off, pose, tidx, PR, J2, Gk[1], ya[0], -1.0, ca, fo[0])
        _kT(L, Nl, off, pose, tidx, PR, J1, Gk[0], ya[1], -2.0, ca, fo[1])
        for l in range(L):
            fin[l] = fo[0, l] or fo[1, l]
        _asolve(L, Nl, off, d, kf, mh, ca, ya[2], fin, fo[2], t6, aV)


@njit(cache=_C, fastmath=_FM, error_model='numpy')
def _platform_of_limb(BR, Bp, X, off, Nl, th, cs, CR, Cq, PR, Pp):
    """(PR, Pp) = the platform pose by the FK of the last limb (the one carrying the platform
    body) at the stacked coordinates th (non-pose tasks: the platform is an unknown of the IK)."""
    lp = off.shape[0] - 2
    o = off[lp]
    _limb_fk(BR[lp], Bp[lp], X[lp], th[o : o + Nl[lp]], cs, False, CR[lp], Cq[lp])
    for r in range(3):
        Pp[r] = Cq[lp, Nl[lp] - 1, r]
        for c in range(3):
            PR[r, c] = CR[lp, Nl[lp] - 1, r, c]


@njit(cache=_C, fastmath=_FM, error_model='numpy')
def _pose_taylor(R0, xp, TT):
    """TT[k] (k = 0..3): the (k+1)-th time derivative of the 3 x 4 pose [R | p] whose rotation is
    R0, from T' = T V^ (V = (v, w) the body-fixed twist, xp[i] its i-th derivative) by Leibniz:
    T^(k+1) = sum_j binom(k, j) T^(j) V^^(k-j); only the rotation block of T^(j) enters
    (T V^ = [R w^ | R v])."""
    for k in range(4):
        for r in range(3):
            for c in range(4):
                TT[k, r, c] = 0.0
        for j in range(k + 1):
            cf = 3.0 if (k == 3 and 0 < j < 3) else (2.0 if (k == 2 and j == 1) else 1.0)
            i = k - j
            v0, v1, v2 = xp[i, 0], xp[i, 1], xp[i, 2]
            w0, w1, w2 = xp[i, 3], xp[i, 4], xp[i, 5]
            for r in range(3):
                if j == 0:
                    a0, a1, a2 = R0[r, 0], R0[r, 1], R0[r, 2]
                else:
                    a0, a1, a2 = TT[j - 1, r, 0], TT[j - 1, r, 1], TT[j - 1, r, 2]
                TT[k, r, 0] += cf * (a1 * w2 - a2 * w1)
                TT[k, r, 1] += cf * (a2 * w0 - a0 * w2)
                TT[k, r, 2] += cf * (a0 * w1 - a1 * w0)
                TT[k, r, 3] += cf * (a0 * v0 + a1 * v1 + a2 * v2)


@njit(cache=_C, fastmath=_FM, error_model='numpy')
def _fit_step(P, D, m):
    """The step h with ``D ~ sum_k P[k] h^(k+1) / (k+1)!`` (k = 0..3; D, P[k] (m,)) by
    Gauss-Newton from the 1st-order (or, from rest, 2nd-order) estimate. Returns (h, relative
    residual |D - f(h)| / |D|; inf if no estimate)."""
    a1 = 0.0
    ad = 0.0
    dd = 0.0
    for r in range(m):
        a1 += P[0, r] * P[0, r]
        ad += D[r] * P[0, r]
        dd += D[r] * D[r]
    if dd == 0.0:
        return 0.0, 0.0
    if a1 > 1e-300:
        h = ad / a1
    else:
        a2 = 0.0
        ad2 = 0.0
        for r in range(m):
            a2 += P[1, r] * P[1, r]
            ad2 += D[r] * P[1, r]
        if not (a2 > 1e-300 and ad2 > 0.0):
            return 0.0, np.inf
        h = np.sqrt(2.0 * ad2 / a2)
    ee = 0.0
    for it in range(6):
        jr = 0.0
        jj = 0.0
        ee = 0.0
        for r in range(m):
            f = h * (P[0, r] + h * (P[1, r] / 2.0 + h * (P[2, r] / 6.0 + h * P[3, r] / 24.0)))
            J = P[0, r] + h * (P[1, r] + h * (P[2, r] / 2.0 + h * P[3, r] / 6.0))
            e = D[r] - f
            ee += e * e
            jr += J * e
            jj += J * J
        if not jj > 0.0:
            return h, np.inf
        h += jr / jj
    ee = 0.0
    for r in range(m):
        e = D[r] - h * (P[0, r] + h * (P[1, r] / 2.0 + h * (P[2, r] / 6.0 + h * P[3, r] / 24.0)))
        ee += e * e
    return h, np.sqrt(ee / dd)


# layout of the integer / float parameter vectors and of a row of the output (see
# robot_dynamics.pkm.general._Packed)
IP_HEAD = 9  # L, Nm, Nt, d, na, pose, max_iter, warm, jikd; then Nl, nl, off, tidx, act, heavy
FP_HEAD = 13  # tol, g (3), Rref (9); then lower (Nt), upper (Nt)


@njit(cache=_C, fastmath=_FM, error_model='numpy')
def _residual(L, Nl, pose, tidx, Rref, XIN, CR, Cq, PR, Pp, tv, b):
    """b (6 L + d) = the Newton residual [e; r]: the error twists of the limbs' last bodies
    (CR, Cq) w.r.t. the platform pose (PR, Pp), then the task rows (pose task: 0; else the task
    XIN minus the task value of the platform, angles wrapped to (-pi, pi]). tv (d,) scratch."""
    d = tidx.shape[0]
    for l in range(L):
        N = Nl[l]
        _pose_error(CR[l, N - 1], Cq[l, N - 1], PR, Pp, b, 6 * l)
    if pose:
        for r in range(d):
            b[6 * L + r] = 0.0
        return
    _task_value(tidx, Rref, PR, Pp, tv)
    for r in range(d):
        b[6 * L + r] = _task_diff(tidx[r], XIN[r], tv[r])


@njit(cache=_C, fastmath=_FM, error_model='numpy')
def _task_diff(k, x, x0):
    """x - x0 of task component k (k >= 3, an angle: wrapped to (-pi, pi])."""
    e = x - x0
    if k >= 3:
        e = e + np.pi
        e = e - _TWO_PI * np.floor(e / _TWO_PI) - np.pi
    return e


@njit(cache=_C, fastmath=_FM, error_model='numpy')
def _set_pose(R, p, R_out, p_out):
    """(R_out, p_out) = (R, p) (3 x 3, 3)."""
    for r in range(3):
        p_out[r] = p[r]
        for c in range(3):
            R_out[r, c] = R[r, c]


@njit(cache=_C, fastmath=_FM, error_model='numpy')
def _newton(lim, L, Nl, off, pose, tidx, Rref, XIN, nx, th, PR, Pp, CR, Cq, cs, Jc, kf, sn, tol, max_iter):
    """Newton IK from th (and, non-pose task, the platform pose PR, Pp) on K dz = [e; r].
    Returns (status, limb or the number of Newton steps, residual); FK (CR, Cq) is left at th.
    lim = (BR, Bp, X), kf the factor buffers of :func:`_kfactor`, sn = (b, z, hb, y6, tv, E3, tp)
    scratch."""
    BR, Bp, X = lim
    b, z, hb, y6, tv, E3, tp = sn
    Nt = off[L]
    d = tidx.shape[0]
    nr = 6 * L + d
    st = 0
    lf = -1
    res = 0.0
    for it in range(max_iter + 1):
        for l in range(L):
            o = off[l]
            _limb_fk(BR[l], Bp[l], X[l], th[o : o + Nl[l]], cs, False, CR[l], Cq[l])
        _residual(L, Nl, pose, tidx, Rref, XIN, CR, Cq, PR, Pp, tv, b)
        res = 0.0
        for r in range(nr):
            res = max(res, abs(b[r]))
        lf = it
        if res < tol or it == max_iter:
            break
        st, lf, mh = _kfactor(L, Nl, pose, tidx, PR, Pp, CR, Cq, X, Jc, kf)
        if st != 0:
            break
        _fsolve(L, Nl, off, kf, mh, b, z, hb, y6)
        for j in range(Nt):
            th[j] += z[j]
        if not pose:
            _exp_update(PR, Pp, z[Nt:], E3, tp)
    return st, lf, res


@njit(cache=_C, fastmath=_FM, error_model='numpy', nogil=True)
def general_id_d2_batch(BR, Bp, X, M, IP, FP, IN, th0, OUT, IST):
    """General 2nd-order PKM inverse dynamics over a batch of samples (module docstring).

    ``BR, Bp, X, M``: packed limb data; ``IP`` int64 parameters (``IP_HEAD``: L, Nm, Nt, d, na,
    pose, max_iter, warm, jikd (0: the rows of J_IK', J_IK'' are not formed, NaN in OUT; square
    actuation only); then Nl (L), nl (L), off (L + 1), task components tidx (d), stacked
    actuated joints act (na), heavy (L Nm)); ``FP`` float parameters (tol, gravity (3), R_ref
    (9), lower (Nt), upper (Nt)); ``IN`` (S, nx + 4 nd) per sample the task (pose: the 4x4
    platform pose, nx = 16, then the body-fixed twist and derivatives 1..3, nd = 6; else the d
    world task coordinates and their derivatives 1..4, nd = d); ``th0`` (S0, Nt) Newton starts
    (S0 = 1: the same for every sample); ``warm``: sample s > 0 starts from the previous
    successful solution plus the first-order step to its task (one chord step with the
    previous factorisation) instead.
    Outputs: ``OUT`` (S, 5 Nt + 3 na + 3 na d + 3 d + 16 + 24 + 1) per sample theta (5, Nt),
    u (3, na), J_IK (3, na, d), w (3, d), platform pose (4, 4), V_p (4, 6), IK residual;
    ``IST`` (S, 2) status and info (failing limb / joint; for a solved sample the number of
    Newton steps). Releases the GIL (``nogil``): chunks of a batch may run in parallel threads
    (``general._Packed.run``).
    """
    _id2_range(BR, Bp, X, M, IP, FP, IN, th0, OUT, IST, 0, IN.shape[0])


@njit(cache=_C, fastmath=_FM, error_model='numpy')
def _id2_range(BR, Bp, X, M, IP, FP, IN, th0, OUT, IST, s0, s1):
    """The samples ``s0 <= s < s1`` of :func:`general_id_d2_batch` (th0 row ``s0`` or 0 first)."""
    L = IP[0]
    Nm = IP[1]
    Nt = IP[2]
    d = IP[3]
    na = IP[4]
    pose = IP[5] != 0
    max_iter = IP[6]
    warm = IP[7] != 0
    jikd = IP[8] != 0 or na != d
    q0 = IP_HEAD
    Nl = IP[q0 : q0 + L]
    nl = IP[q0 + L : q0 + 2 * L]
    off = IP[q0 + 2 * L : q0 + 3 * L + 1]
    q1 = q0 + 3 * L + 1
    tidx = IP[q1 : q1 + d]
    act = IP[q1 + d : q1 + d + na]
    heavy = IP[q1 + d + na : q1 + d + na + L * Nm].reshape((L, Nm))
    tol = FP[0]
    g = FP[1:4]
    Rref = FP[4:13].reshape((3, 3))
    lower = FP[FP_HEAD : FP_HEAD + Nt]
    upper = FP[FP_HEAD + Nt : FP_HEAD + 2 * Nt]
    nd = 6 if pose else d
    nx = 16 if pose else d
    oU = 5 * Nt
    oJ = oU + 3 * na
    oW = oJ + 3 * na * d
    oC = oW + 3 * d
    oV = oC + 16
    oR = oV + 24
    nr = 6 * L + d
    nz = Nt + 6
    th = np.empty(Nt)
    th_ok = th0[s0 if th0.shape[0] > 1 else 0].copy()
    have_ok = False
    fact_ok = False
    CR = np.empty((L, Nm, 3, 3))
    Cq = np.empty((L, Nm, 3))
    PR = np.empty((3, 3))
    Pp = np.empty(3)
    PRo = np.empty((3, 3))
    xprev = np.zeros((4, d))
    xvp = np.zeros(d)
    TT = np.empty((4, 3, 4))
    TP = np.empty((4, max(12, d)))
    DT = np.empty(max(12, d))
    Ppo = np.empty(3)
    tp = np.empty(3)
    cs = np.empty((2, Nm))
    Jc = np.zeros((L, Nm, 6))
    J1 = np.zeros((L, Nm, 6))
    J2 = np.zeros((L, Nm, 6))
    J3 = np.zeros((L, Nm, 6))
    LUl = np.zeros((L, 6, 6))
    pl = np.empty((L, 6), dtype=np.int64)
    mhx = 6 * L + 6
    H0 = np.empty((mhx, 6))
    LUH = np.empty((mhx, 6))
    ph = np.empty(mhx, dtype=np.int64)
    hown = np.empty(mhx, dtype=np.int64)
    kf = (LUl, pl, H0, LUH, ph, hown)
    lim = (BR, Bp, X)
    hb = np.empty(mhx)
    y6 = np.empty(6)
    t6 = np.empty(6)
    aV = np.empty(6)
    b = np.empty(nr)
    z = np.empty((5, nz))  # z[k] = (theta^(k), V_p^(k-1)), k = 1..4; z[0] scratch
    ya = np.empty((3, nr))  # adjoint vectors
    ca = np.empty(nz)
    fin = np.ones(L, dtype=np.bool_)
    fall = np.ones(L, dtype=np.bool_)
    fo = np.empty((3, L), dtype=np.bool_)
    tv = np.empty(d)
    Gk = np.zeros((3, 3, 3))
    zero3 = np.zeros(3)
    Vb = np.empty((4, Nm, 6))
    Qv = np.empty((3, Nm))
    relR = np.empty((Nm, 3, 3))
    relp = np.empty((Nm, 3))
    Q = np.zeros((3, nz))
    JK = np.empty((3, na, d))
    JW = np.empty((d, na))  # J_IK^T: its rows are the columns QR-factored
    VQ = np.empty((d, na))
    piv = np.empty(d, dtype=np.int64)
    qb = np.empty(d)
    qr = np.empty(d)
    wv = np.empty((3, d))
    rv = np.empty(d)
    yv = np.empty((3, na))
    ys = np.empty((3, d))
    S3 = np.empty((4, 3, 3))
    E3 = np.empty((3, 3))
    tmp = np.empty(max(na, d))
    mh = 0
    for s in range(s0, s1):
        IST[s, 0] = 0
        IST[s, 1] = -1
        OUT[s, oR] = 0.0
        XIN = IN[s]
        # ---- input check
        ok = True
        for c in range(nx + 4 * nd):
            if not np.isfinite(XIN[c]):
                ok = False
        if not ok:
            IST[s, 0] = 4
            fact_ok = False
            continue
        if pose:
            dev = 0.0
            for r in range(3):
                for c in range(3):
                    acc = XIN[4 * r] * XIN[4 * c] + XIN[4 * r + 1] * XIN[4 * c + 1] + XIN[4 * r + 2] * XIN[4 * c + 2]
                    dev = max(dev, abs(acc - (1.0 if r == c else 0.0)))
            if not dev <= 1e-9:
                IST[s, 0] = 8
                fact_ok = False
                continue
            for r in range(3):
                Pp[r] = XIN[4 * r + 3]
                for c in range(3):
                    PR[r, c] = XIN[4 * r + c]
        # ---- Newton start
        predicted = False
        if warm and have_ok:
            for j in range(Nt):
                th[j] = th_ok[j]
            taylor = False
            if fact_ok:
                predicted = True
                # 4th-order Taylor predictor: the step h of this sample fitted to the task's
                # change by the previous sample's task derivatives 1..4, then theta + sum_k
                # theta^(k) h^k / k!; along a trajectory sampled at 1 kHz it lands within the
                # Newton tolerance (no Newton step, one FK). Refused (relative fit residual
                # > 1e-6: samples not along one smooth motion) -> the chord predictor below.
                if pose:
                    _pose_taylor(PRo, xprev, TT)
                    m = 12
                    for k in range(4):
                        for r in range(3):
                            for c in range(4):
                                TP[k, 4 * r + c] = TT[k, r, c]
                    for r in range(3):
                        DT[4 * r + 3] = Pp[r] - Ppo[r]
                        for c in range(3):
                            DT[4 * r + c] = PR[r, c] - PRo[r, c]
                else:
                    m = d
                    for r in range(d):
                        DT[r] = _task_diff(tidx[r], XIN[r], xvp[r])
                        for k in range(4):
                            TP[k, r] = xprev[k, r]
                hT, rel = _fit_step(TP, DT, m)
                if rel <= 1e-6:
                    taylor = True
                    f1 = hT
                    f2 = f1 * hT / 2.0
                    f3 = f2 * hT / 3.0
                    f4 = f3 * hT / 4.0
                    for j in range(Nt):
                        th[j] = th_ok[j] + f1 * z[1, j] + f2 * z[2, j] + f3 * z[3, j] + f4 * z[4, j]
                    if not pose:
                        _platform_of_limb(BR, Bp, X, off, Nl, th, cs, CR, Cq, PR, Pp)
            if fact_ok and not taylor:
                # predictor: one chord step from the previous solution (its FK and factors)
                if not pose:
                    _set_pose(PRo, Ppo, PR, Pp)
                _residual(L, Nl, pose, tidx, Rref, XIN, CR, Cq, PR, Pp, tv, b)
                _fsolve(L, Nl, off, kf, mh, b, z[0], hb, y6)
                # 2nd order: the task step dxi = xi' h + xi'' h^2 / 2 + O(h^3) of the previous
                # sample's motion gives h; add (theta'' - G xi'') h^2 / 2 (= z2 - S [0; xi''])
                # when dxi is consistent with that motion (else the 1st-order step alone)
                ob = 0 if pose else 6 * L
                a2 = 0.0
                ad = 0.0
                dd = 0.0
                for r in range(d):
                    a2 += xprev[0, r] * xprev[0, r]
                    ad += b[ob + r] * xprev[0, r]
                    dd += b[ob + r] * b[ob + r]
                if a2 > 0.0 and dd > 0.0:
                    h = ad / a2
                    fg = 0.0
                    jj = 0.0
                    for r in range(d):
                        jr = xprev[0, r] + xprev[1, r] * h
                        fg += (b[ob + r] - xprev[0, r] * h - 0.5 * xprev[1, r] * h * h) * jr
                        jj += jr * jr
                    if jj > 0.0:
                        h += fg / jj
                    fr = 0.0
                    for r in range(d):
                        e = b[ob + r] - xprev[0, r] * h - 0.5 * xprev[1, r] * h * h
                        fr += e * e
                    if fr <= 0.0025 * dd:
                        for r in range(6 * L):
                            b[r] = 0.0
                        for r in range(d):
                            b[6 * L + r] = xprev[1, r]
                        _fsolve(L, Nl, off, kf, mh, b, ca, hb, y6)
                        hh = 0.5 * h * h
                        for j in range(nz):
                            z[0, j] += hh * (z[2, j] - ca[j])
                for j in range(Nt):
                    th[j] += z[0, j]
                if not pose:
                    _exp_update(PR, Pp, z[0, Nt:], E3, tp)
            elif not pose and not taylor:
                _set_pose(PRo, Ppo, PR, Pp)
        else:
            sg = s if th0.shape[0] > 1 else 0
            for j in range(Nt):
                th[j] = th0[sg, j]
            if not pose:
                _platform_of_limb(BR, Bp, X, off, Nl, th, cs, CR, Cq, PR, Pp)
        fact_ok = False
        # ---- position IK (a warm start that used the predictor and failed, in convergence or
        # joint limits, is retried once from the previous solution itself)
        for attempt in range(2):
            sn = (b, z[0], hb, y6, tv, E3, tp)
            st, lf, res = _newton(
                lim, L, Nl, off, pose, tidx, Rref, XIN, nx, th, PR, Pp, CR, Cq, cs, Jc, kf, sn, tol, max_iter
            )
            OUT[s, oR] = res
            IST[s, 0] = 0
            if st != 0:
                IST[s, 0] = st
                IST[s, 1] = lf
            elif not res < max(tol, 1e-9):
                IST[s, 0] = 1
            else:
                IST[s, 1] = lf  # Newton steps
                for j in range(Nt):
                    if th[j] < lower[j] - 1e-12 or th[j] > upper[j] + 1e-12:
                        IST[s, 0] = 5
                        IST[s, 1] = j
                        break
            if IST[s, 0] == 0 or not predicted:
                break
            predicted = False
            for j in range(Nt):
                th[j] = th_ok[j]
            if not pose:
                _set_pose(PRo, Ppo, PR, Pp)
        if IST[s, 0] != 0:
            continue
        # ---- velocity level: K at the solution (the FK of the last Newton iteration is at th)
        st, lf, mh = _kfactor(L, Nl, pose, tidx, PR, Pp, CR, Cq, X, Jc, kf)
        if st != 0:
            IST[s, 0] = st
            IST[s, 1] = lf
            continue
        fact_ok = True
        for r in range(6 * L):
            b[r] = 0.0
        for r in range(d):
            b[6 * L + r] = XIN[nx + r]
        _fsolve(L, Nl, off, kf, mh, b, z[1], hb, y6)
        # ---- orders 2..4: K z^(nu) = [0; x^(nu)] - sum_k binom(nu-1, k) K^(k) z^(nu-k)
        for j in range(Nt):
            z[0, j] = th[j]  # z[k, :Nt] = theta^(k), k = 0..4
        for nu in range(2, 5):
            kk = nu - 1  # new derivative order of J and G_k
            for l in range(L):
                N = Nl[l]
                o = off[l]
                _jac_deriv(N, Jc[l], J1[l], J2[l], J3[l], z[:, o : o + Nm], kk)
                # limb rows: - sum_k binom(nu-1, k) J^(k) theta^(nu-k)
                acc = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
                for i in range(N):
                    acc = _axpy6((nu - 1.0) * z[nu - 1, o + i] if nu > 2 else z[1, o + i], _ld6(J1[l], i), acc)
                    if nu >= 3:
                        acc = _axpy6((nu - 1.0) * z[nu - 2, o + i] if nu > 3 else z[1, o + i], _ld6(J2[l], i), acc)
                    if nu >= 4:
                        acc = _axpy6(z[1, o + i], _ld6(J3[l], i), acc)
                for c in range(6):
                    b[6 * l + c] = -acc[c]
            for r in range(d):
                b[6 * L + r] = XIN[nx + (nu - 1) * nd + r]
            if not pose:
                _gmat(
                    z[1, Nt + 3 :],
                    z[2, Nt + 3 :] if kk >= 2 else zero3,
                    z[3, Nt + 3 :] if kk >= 3 else zero3,
                    kk,
                    Gk[kk - 1],
                    S3,
                )
                for k in range(1, nu):
                    coef = 1.0 if k == nu - 1 else float(nu - 1)  # binom(nu - 1, k), nu <= 4
                    _task_mv(L, Nt, tidx, PR, Gk[k - 1], z[nu - k], coef, b)
            _fsolve(L, Nl, off, kf, mh, b, z[nu], hb, y6)
        for k in range(5):
            for j in range(Nt):
                OUT[s, k * Nt + j] = z[k, j]
        # ---- limb Newton-Euler with 1st/2nd derivatives (tree bodies)
        for l in range(L):
            N = Nl[l]
            o = off[l]
            thl = z[:, o : o + Nm]
            # the platform body (last body of the platform limb) moves with V_p: its wrench
            # W is computed from V_p directly and enters Q as J^T W (J^T W)' (J^T W)'' (J the
            # platform Jacobian of the limb); the recursion stops at the last massive body before
            plat = l == L - 1 and nl[l] == N and heavy[l, N - 1] != 0
            nb = nl[l]
            if plat:
                nb = 0
                for i in range(N - 1):
                    if heavy[l, i]:
                        nb = i + 1
            limb_ne_d2_fast(X[l], M[l], heavy[l], g, thl, CR[l], Cq[l], Vb, Qv, relR, relp, nb)
            for k in range(3):
                for i in range(N):
                    Q[k, o + i] = Qv[k, i]
            if plat:
                av0 = -(PR[0, 0] * g[0] + PR[1, 0] * g[1] + PR[2, 0] * g[2])
                av1 = -(PR[0, 1] * g[0] + PR[1, 1] * g[1] + PR[2, 1] * g[2])
                av2 = -(PR[0, 2] * g[0] + PR[1, 2] * g[1] + PR[2, 2] * g[2])
                W0, W1, W2 = _body_wrench6(
                    M[l, N - 1], _zv(z, 1, Nt), _zv(z, 2, Nt), _zv(z, 3, Nt), _zv(z, 4, Nt), av0, av1, av2
                )
                for i in range(N):
                    j0 = _ld6(Jc[l], i)
                    j1 = _ld6(J1[l], i)
                    Q[0, o + i] += _dot6(j0, W0)
                    Q[1, o + i] += _dot6(j0, W1) + _dot6(j1, W0)
                    Q[2, o + i] += _dot6(j0, W2) + 2.0 * _dot6(j1, W1) + _dot6(_ld6(J2[l], i), W0)
        # ---- w = G^T Q, w' = G^T Q' + G'^T Q, ... by adjoint solves (G = S [0; I],
        # G' = -S K' G, G'' = -S (K'' G + 2 K' G')):
        # y0 = S^T Q, y1 = S^T (Q' - K'^T y0), y2 = S^T (Q'' - K''^T y0 - 2 K'^T y1); w^(k) = task part
        _asolve(L, Nl, off, d, kf, mh, Q[0], ya[0], fall, fo[0], t6, aV)
        for j in range(nz):
            ca[j] = Q[1, j]
        _kT(L, Nl, off, pose, tidx, PR, J1, Gk[0], ya[0], -1.0, ca, fall)
        _asolve(L, Nl, off, d, kf, mh, ca, ya[1], fall, fo[1], t6, aV)
        for j in range(nz):
            ca[j] = Q[2, j]
        _kT(L, Nl, off, pose, tidx, PR, J2, Gk[1], ya[0], -1.0, ca, fall)
        _kT(L, Nl, off, pose, tidx, PR, J1, Gk[0], ya[1], -2.0, ca, fall)
        _asolve(L, Nl, off, d, kf, mh, ca, ya[2], fall, fo[2], t6, aV)
        for k in range(3):
            for c in range(d):
                wv[k, c] = ya[k, 6 * L + c]
                OUT[s, oW + k * d + c] = ya[k, 6 * L + c]
        # ---- rows of J_IK = G_theta[act] and derivatives: r0 = S^T e_a, r1 = -S^T K'^T r0,
        # r2 = -S^T (K''^T r0 + 2 K'^T r1)
        for a in range(na):
            ja = act[a]
            la = 0
            while off[la + 1] <= ja:
                la += 1
            for j in range(nz):
                ca[j] = 0.0
            ca[ja] = 1.0
            for l in range(L):
                fin[l] = l == la
            _asolve(L, Nl, off, d, kf, mh, ca, ya[0], fin, fo[0], t6, aV)
            if not jikd:
                for c in range(d):
                    JK[0, a, c] = ya[0, 6 * L + c]
                    OUT[s, oJ + a * d + c] = ya[0, 6 * L + c]
                    OUT[s, oJ + (na + a) * d + c] = np.nan
                    OUT[s, oJ + (2 * na + a) * d + c] = np.nan
                continue
            _adj_chain(L, Nl, off, d, pose, tidx, PR, J1, J2, Gk, kf, mh, ya, ca, fo, fin, t6, aV, True)
            for k in range(3):
                for c in range(d):
                    JK[k, a, c] = ya[k, 6 * L + c]
                    OUT[s, oJ + (k * na + a) * d + c] = ya[k, 6 * L + c]
        for a in range(na):
            for c in range(d):
                JW[c, a] = JK[0, a, c]
        rq = householder_qr(JW, d, na, True, 0.0, piv, VQ, qb, qr)
        ratio = abs(qr[d - 1]) / abs(qr[0]) if rq == d else 0.0
        if not ratio > _RCOND:
            IST[s, 0] = 3
            fact_ok = False
            continue
        if na == d and not jikd:
            # without the rows of J_IK', J_IK'': their products with u, ud by adjoint chains
            # (linear in the row): J1^T u = task part of y1 = -S^T K'^T y0, y0 = S^T c_u (c_u =
            # sum_a u_a e_act(a)), J2^T u = task part of -S^T (K''^T y0 + 2 K'^T y1): 5 solves,
            # not 2 n_a
            _ls_apply(JW, d, piv, VQ, qb, wv[0], tmp, yv[0])
            for rep in range(2):
                for j in range(nz):
                    ca[j] = 0.0
                for a in range(na):
                    ca[act[a]] = yv[rep, a]
                _asolve(L, Nl, off, d, kf, mh, ca, ya[0], fall, fo[0], t6, aV)
                # rep 0: y1 (J1^T u) and y2 (J2^T u, kept in ys[0]); rep 1: y1 (J1^T ud)
                _adj_chain(L, Nl, off, d, pose, tidx, PR, J1, J2, Gk, kf, mh, ya, ca, fo, fin, t6, aV, rep == 0)
                if rep == 0:
                    # ud = J^-T (w1 - J1^T u)
                    for c in range(d):
                        rv[c] = wv[1, c] - ya[1, 6 * L + c]
                    _ls_apply(JW, d, piv, VQ, qb, rv, tmp, yv[1])
                    for c in range(d):
                        ys[0, c] = ya[2, 6 * L + c]
            # udd = J^-T (w2 - J2^T u - 2 J1^T ud) (ya[1] task part = J1^T ud, ys[0] = J2^T u)
            for c in range(d):
                rv[c] = wv[2, c] - ys[0, c] - 2.0 * ya[1, 6 * L + c]
            _ls_apply(JW, d, piv, VQ, qb, rv, tmp, yv[2])
            for k in range(3):
                for a in range(na):
                    OUT[s, oU + k * na + a] = yv[k, a]
        elif na == d:
            # A u = w with A = J_IK^T: u = J^-T w, ud = J^-T (w1 - J1^T u), ...
            _ls_apply(JW, d, piv, VQ, qb, wv[0], tmp, yv[0])
            for c in range(d):
                acc = wv[1, c]
                for a in range(na):
                    acc -= JK[1, a, c] * yv[0, a]
                rv[c] = acc
            _ls_apply(JW, d, piv, VQ, qb, rv, tmp, yv[1])
            for c in range(d):
                acc = wv[2, c]
                for a in range(na):
                    acc -= JK[2, a, c] * yv[0, a] + 2.0 * JK[1, a, c] * yv[1, a]
                rv[c] = acc
            _ls_apply(JW, d, piv, VQ, qb, rv, tmp, yv[2])
            for k in range(3):
                for a in range(na):
                    OUT[s, oU + k * na + a] = yv[k, a]
        else:
            # least norm: u = A^T y, N0 y = w, N0 = A A^T = J^T J (N0^-1 b = P R^-1 R^-T P^T b);
            # N_m = sum_i binom(m, i) J_i^T J_(m-i); y_k from N0 y_k = w_k - sum binom N_(k-j) y_j
            for k in range(3):
                for c in range(d):
                    acc = wv[k, c]
                    for kk2 in range(k):
                        m = k - kk2
                        cf = 2.0 if (k == 2 and kk2 == 1) else 1.0  # binom(k, kk2)
                        for i in range(m + 1):
                            bi = 1.0 if (i == 0 or i == m) else 2.0
                            for a in range(na):
                                t = 0.0
                                for e2 in range(d):
                                    t += JK[m - i, a, e2] * ys[kk2, e2]
                                acc -= cf * bi * JK[i, a, c] * t
                    rv[c] = acc
                # R^T R z = P^T rv (R[c, i] = JW[i, c]: R^T is the lower triangle of JW)
                for i in range(d):
                    tmp[i] = rv[piv[i]]
                tri_solve(JW, tmp, d, True, False, False)
                tri_solve(JW, tmp, d, True, True, False)
                for i in range(d):
                    ys[k, piv[i]] = tmp[i]
            for k in range(3):
                for a in range(na):
                    acc = 0.0
                    for i in range(k + 1):
                        bi = 1.0 if (i == 0 or i == k) else 2.0
                        for c in range(d):
                            acc += bi * JK[i, a, c] * ys[k - i, c]
                    OUT[s, oU + k * na + a] = acc
        # ---- outputs
        for r in range(3):
            OUT[s, oC + 4 * r + 3] = Pp[r]
            for c in range(3):
                OUT[s, oC + 4 * r + c] = PR[r, c]
        OUT[s, oC + 12] = 0.0
        OUT[s, oC + 13] = 0.0
        OUT[s, oC + 14] = 0.0
        OUT[s, oC + 15] = 1.0
        for k in range(4):
            for c in range(6):
                OUT[s, oV + 6 * k + c] = z[k + 1, Nt + c]
        for j in range(Nt):
            th_ok[j] = th[j]
        for k in range(4):
            for r in range(d):
                xprev[k, r] = XIN[nx + k * nd + r]
        if not pose:
            for r in range(d):
                xvp[r] = XIN[r]
        _set_pose(PR, Pp, PRo, Ppo)
        have_ok = True
