"""Simulator step of the projection engine (private; the stepping of :class:`robot_dynamics.plants.rigid.ConstrainedPlant`).

One step in one compiled call (:func:`sim_step_rk4`): RK4 with tau held, Newton-Raphson
minimum-norm position projection, velocity projection, the end-of-step dynamics and monitor,
on the constrained dynamics of :mod:`robot_dynamics.algorithms._projection_kernels`. The model
enters as the tuple ``pk`` of :func:`robot_dynamics.algorithms.projection._pack`.

Two routes (argument ``fast``), the same mathematics:

* reference: the SVD of A at every evaluation (:func:`~robot_dynamics.algorithms._projection_kernels.cfd`,
  any variant and velocity projection);
* fast (the real-time path of sim_node; variant 'Mc' and Euclidean or no velocity projection):
  the SVD of A replaced, wherever it is *certified* to give the same rank decision
  (:func:`~robot_dynamics.algorithms._projection_kernels.urv_certified`), by the complete
  orthogonal (URV) decomposition of :func:`robot_dynamics.spatial.linalg.urv` built from two
  Householder QR factorizations (~10x cheaper than LAPACK's gesdd at these sizes)::

    A^T Pi = Q [R11 R12; 0 R22],   B = [R11 R12]^T = Qb Rb
    A ~= Pi Qb Rb Q1^T,   A+ = Q1 Rb^-1 Qb^T Pi^T,   N(A) = span Q2,   P = Q2 Q2^T

  Otherwise (next to a singular configuration, sigma near eps) the evaluation falls back to the
  SVD route, so the eps semantics of seed 002 are untouched.

  Before that, each RK4 stage takes the Schur complement of the KKT system on the tree-sparse
  L^T D L factors of M wherever A has certified full row rank
  (:func:`robot_dynamics.algorithms._projection_kernels.schur_cfd`).

The fast constrained forward dynamics (:func:`cfd_fast`) use the null-space form of eq. (22):
with Z = Q2, ``qdd = C qd + Z z``, ``(Z^T M Z) z = Z^T (f - h - M C qd)``. It is the unique
solution of ``Mc qdd = P (f - h) + M C qd`` (Mc = M + PM - MP): ``P C qd = 0`` gives
``(M - MP) qdd = M C qd`` and the remaining ``P M qdd = P (f - h)`` is the reduced equation. Cost
O(n^2 (n-r)) instead of the O(n^3) products and LU of Mc.

Singular values reported at the end of a fast step (``s``, for the monitor's sigma_min) are
those of Rb (the nonzero singular values of the rank-r part of A) from the eigenvalues of
Rb^T Rb, zeros after r; accurate to ~1e-15 ||A||^2 / sigma absolute where certified (sigma > eps).
"""

import numpy as np
from numba import njit

from robot_dynamics.algorithms import _projection_kernels as PK
from robot_dynamics.algorithms import _tree_kernels as K
from robot_dynamics.spatial.linalg import (
    is_pd,
    matmul,
    matvec,
    solve_spd,
    upper_tri_inverse,
    urv_pinv_apply,
    urv_pinvT_apply,
)

_CACHE = True


@njit(cache=_CACHE)
def cfd_fast(pk, q, qd, tau, eps, want_s, qdd, F, lam, s, phi, A, Q, Qb, Rbi, piv, r_in):
    """Constrained forward dynamics (variant Mc) at one state, fast route (module doc).

    Outputs in place: qdd, F, lam, s (singular values if want_s), phi, A, and the URV
    factors (Q, Qb, Rbi, piv) when certified. ``r_in >= 0``: A and the certified factors of
    A(q) (rank r_in) are given (only the velocity terms are computed). Returns (status, rank,
    kinetic, potential, certified); status as :func:`robot_dynamics.algorithms._projection_kernels.cfd`
    (on a failed certificate its SVD route is taken, certified False).
    """
    n = pk[1].shape[0]
    m = phi.shape[0]
    M = np.empty((n, n))
    h = np.empty(n)
    bias = np.empty(m)
    st, T, U = PK.state_terms(pk, q, qd, tau, r_in < 0, phi, A, bias, M, h)
    if st:
        return st, 0, T, U, False
    st, r, cert = _fast_solve(eps, want_s, M, h, A, bias, tau, qdd, F, lam, s, Q, Qb, Rbi, piv, r_in)
    return st, r, T, U, cert


@njit(cache=_CACHE)
def _fast_solve(eps, want_s, M, h, A, bias, tau, qdd, F, lam, s, Q, Qb, Rbi, piv, r_in):
    """:func:`cfd_fast` from the terms of :func:`robot_dynamics.algorithms._projection_kernels.state_terms`.
    Returns (status, rank, certified)."""
    n = M.shape[0]
    m = A.shape[0]
    if r_in >= 0:
        ok, r = True, r_in
    else:
        ok, r = PK.urv_certified(A, eps, Q, Qb, Rbi, piv)
    if not ok:
        P, Ap, Cqd = np.empty((n, n)), np.empty((n, m)), np.empty(n)
        st, r, g = PK.cfd_solve(PK.VARIANT_MC, 0.0, eps, M, h, A, bias, tau, qdd, F, lam, P, s, Ap, Cqd)
        return st, r, False
    if not is_pd(M, 1e-12):
        return 2, r, True
    Cqd = np.empty(n)
    urv_pinv_apply(Q, Qb, Rbi, piv, r, bias, Cqd)
    for a in range(n):
        Cqd[a] = -Cqd[a]
    nz = n - r
    # g = f - h - M Cqd
    g = np.empty(n)
    PK.constraint_forces(M, tau, h, Cqd, g)
    for a in range(n):
        qdd[a] = Cqd[a]
    if nz > 0:
        Z = np.empty((n, nz))  # the null-space basis Q2
        for a in range(n):
            for c in range(nz):
                Z[a, c] = Q[a, r + c]
        MZ = np.empty((n, nz))
        matmul(M, Z, MZ, False)
        S = np.empty((nz, nz))
        matmul(Z, MZ, S, True)
        rz = np.empty(nz)
        matvec(Z, g, rz, n, nz, True)
        z = np.empty(nz)
        if not solve_spd(S, rz, z):
            return 2, r, True
        dq = np.empty(n)
        matvec(Z, z, dq, n, nz, False)
        for a in range(n):
            qdd[a] += dq[a]
    PK.constraint_forces(M, tau, h, qdd, F)
    urv_pinvT_apply(Q, Qb, Rbi, piv, r, F, lam)
    if want_s:
        for i in range(s.shape[0]):
            s[i] = 0.0
        Rb = np.empty((r, r))  # Rb^T Rb = G: its eigenvalues are the squared singular values
        upper_tri_inverse(Rbi, Rb, r)
        G = np.empty((r, r))
        matmul(Rb, Rb, G, True)
        ev = np.linalg.eigvalsh(G)
        for i in range(r):
            s[i] = np.sqrt(max(ev[r - 1 - i], 0.0))
    return 0, r, True


@njit(cache=_CACHE)
def _stage(pk, q, qd, tau, variant, gamma, eps, fast, qdd):
    """qdd at one state, fast or reference route. Returns (status, rank)."""
    if not fast:
        return PK.cfd_qdd(pk, q, qd, tau, variant, gamma, eps, qdd)
    n = pk[1].shape[0]
    m = pk[9].shape[0]
    k = min(m, n)
    F, lam, s, phi = np.empty(n), np.empty(m), np.zeros(k), np.empty(m)
    A, M, h, bias = np.empty((m, n)), np.empty((n, n)), np.empty(n), np.empty(m)
    st, T, U = PK.state_terms(pk, q, qd, tau, True, phi, A, bias, M, h)
    if st:
        return st, 0
    # where full row rank is certified: the Schur complement on the L^T D L factors of M
    e0 = np.empty((0, 0))
    if PK.schur_cfd(pk[0], eps, M, h, A, bias, tau, PK.WANT_QDD, qdd, F, lam, e0, s, e0, F) == 0:
        return 0, m
    Q, Qb, Rbi, piv = np.empty((n, n)), np.empty((m, k)), np.empty((k, k)), np.empty(m, np.int64)
    st, r, ok = _fast_solve(eps, False, M, h, A, bias, tau, qdd, F, lam, s, Q, Qb, Rbi, piv, -1)
    return st, r


@njit(cache=_CACHE)
def rk4_step(pk, q, qd, tau, dt, variant, gamma, eps, fast, q_out, qd_out, a0):
    """One classical RK4 step of (q, qd)' = (qd, qdd(q, qd, tau)) with tau held (ZOH).

    a0 receives qdd at the start state. Returns (status, minimum rank over the stages).
    """
    n = pk[1].shape[0]
    V = np.empty((4, n))  # qd and qdd at the four stages
    Kv = np.empty((4, n))
    qs = np.empty(q.shape[0])
    st, rmin = _stage(pk, q, qd, tau, variant, gamma, eps, fast, a0)
    if st:
        return st, rmin
    for i in range(n):
        V[0, i] = qd[i]
        Kv[0, i] = a0[i]
    for k in range(3):
        h = dt if k == 2 else 0.5 * dt
        K.integrate(pk[1], q, V[k], h, qs)
        for i in range(n):
            V[k + 1, i] = qd[i] + h * Kv[k, i]
        st, r = _stage(pk, qs, V[k + 1], tau, variant, gamma, eps, fast, Kv[k + 1])
        if st:
            return st, r
        rmin = min(rmin, r)
    dv = np.empty(n)
    for i in range(n):
        dv[i] = qd[i] + 2.0 * V[1, i] + 2.0 * V[2, i] + V[3, i]
    K.integrate(pk[1], q, dv, dt / 6.0, q_out)
    for i in range(n):
        qd_out[i] = qd[i] + dt / 6.0 * (a0[i] + 2.0 * Kv[1, i] + 2.0 * Kv[2, i] + Kv[3, i])
    return 0, rmin


@njit(cache=_CACHE)
def end_of_step(pk, q, qd, tau, variant, gamma, eps, fast, pos_proj, nr_tol, nr_max, vp_mode, a1, F, lam, s, phi):
    """Post-step projection and monitoring, in place on q and qd.

    NR position projection (if pos_proj and ||phi|| > nr_tol), velocity projection (vp_mode),
    then the constrained dynamics at the projected state with the held tau: a1 = qdd, F, lam,
    s = singular values of A, phi = residual. ``fast`` (variant Mc, vp_mode none or
    Euclidean): the velocity projection uses the URV factors of A(q) when they are certified
    (``qd <- Q2 Q2^T qd``), and the end-of-step dynamics reuse them. Returns (status, nr
    iterations, nr converged, ||A qd|| before the velocity projection, rank, kinetic, potential).
    """
    kin = PK.kin_pack(pk)
    n = pk[1].shape[0]
    m = pk[9].shape[0]
    it = 0
    ok = True
    if pos_proj and m > 0:
        it, res, rr, ok = PK.nr_project(kin, q, np.ones(n, dtype=np.bool_), nr_tol, nr_max, eps, fast, phi)
    viol = 0.0
    k = min(m, n)
    Q = np.empty((n, n))
    Qb = np.empty((m, k))
    Rbi = np.empty((k, k))
    piv = np.empty(m, dtype=np.int64)
    A = np.empty((m, n))
    r_in = -1
    if m > 0 and vp_mode != PK.VP_NONE:
        if not fast:
            rv, viol = PK.vel_project(pk, q, qd, vp_mode, eps)
        else:
            # ||A qd|| before, then qd <- P qd with the certified factors of A(q), which the
            # end-of-step dynamics reuse (A does not depend on qd)
            Rw, pw = np.empty((n, 3, 3)), np.empty((n, 3))
            PK._constraints(kin, q, np.zeros(n), True, False, phi, A, np.empty(m), Rw, pw)
            viol = PK.velocity_violation(A, qd)
            if not (PK._finite(A) and np.isfinite(viol)):
                viol = np.inf
            else:
                cert, r = PK.urv_certified(A, eps, Q, Qb, Rbi, piv)
                if cert:
                    w, dq = np.empty(r), np.empty(n)
                    matvec(Q, qd, w, n, r, True)
                    matvec(Q, w, dq, n, r, False)
                    for a in range(n):
                        qd[a] -= dq[a]
                    r_in = r
                else:
                    PK.vel_project(pk, q, qd, vp_mode, eps)
    if fast:
        st, r, T, U, cert = cfd_fast(pk, q, qd, tau, eps, True, a1, F, lam, s, phi, A, Q, Qb, Rbi, piv, r_in)
    else:
        P, M, h, bias, Ap, Cqd = (
            np.empty((n, n)),
            np.empty((n, n)),
            np.empty(n),
            np.empty(m),
            np.empty((n, m)),
            np.empty(n),
        )
        st, r, T, U, g = PK.cfd(pk, q, qd, tau, variant, gamma, eps, a1, F, lam, P, s, M, h, phi, A, bias, Ap, Cqd)
    if m > 0 and vp_mode == PK.VP_NONE:
        viol = PK.velocity_violation(A, qd)
    return st, it, ok, viol, r, T, U


@njit(cache=_CACHE)
def sim_step_rk4(
    pk,
    q,
    qd,
    tau,
    dt,
    variant,
    gamma,
    eps,
    fast,
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
    """One simulator step in one compiled call: :func:`rk4_step` (tau held) then
    :func:`end_of_step` at the new state.

    Returns (status, min stage rank, nr iterations, nr converged, ||A qd|| before velocity
    projection, end rank, kinetic, potential).
    """
    st, rmin = rk4_step(pk, q, qd, tau, dt, variant, gamma, eps, fast, q_out, qd_out, a0)
    if st:
        return st, rmin, 0, False, 0.0, 0, 0.0, 0.0
    st, it, ok, viol, r, T, U = end_of_step(
        pk, q_out, qd_out, tau, variant, gamma, eps, fast, pos_proj, nr_tol, nr_max, vp_mode, a1, F, lam, s, phi
    )
    return st, rmin, it, ok, viol, r, T, U
