"""Numba kernels of the inertia partitioning (private; used by :mod:`robot_dynamics.algorithms.partitioning`
and :mod:`robot_dynamics.control.inertia_partitioning`).

* :func:`partition_terms`: tree kinematics of every body frame, body Jacobians in the minimal
  coordinates ``J = J_tree G``, their derivatives ``dJ[..., m]`` (analytic: ``ad(J_l) J_j``
  for ``l`` upstream of ``j`` through ``G``, plus ``J_tree H``), ``Gamma_i``, ``Gamma``,
  ``dGamma``, the generalized gravity force and the potential, in one pass. Same arithmetic as
  the former numpy code of :meth:`PartitionedModel.terms` (order of the sums aside).
* :func:`numeric_loop_map`: the numeric loop map of any loops: Newton assembly (the seed 002
  kernel :func:`robot_dynamics.algorithms._projection_kernels.nr_project`, as :func:`robot_dynamics.assemble`),
  ``A`` and the closure biases ``Adot(v) v`` from the compiled constraint rows, the SVD solve of
  the dependent block (LAPACK, as numpy), ``G`` and ``H`` by implicit differentiation and
  polarisation.
* :func:`ip_law`: the per-coordinate rows of the inertia-partitioning / PD+ laws and the
  Lyapunov diagnostics.

Model arrays: ``par``/``geo`` of :mod:`robot_dynamics.algorithms._tree_kernels`; bodies: ``bj`` (nb,) joint,
``bR`` (nb, 3, 3)/``bp`` (nb, 3) placement in the joint frame, ``bM`` (nb, 6, 6) spatial
inertia (linear first), ``bm`` (nb,) mass, ``bc`` (nb, 3) COM, ``bsup`` (nb, n) int64 support
joints (ascending, padded with -1).
"""

import numpy as np
from numba import njit

from robot_dynamics.algorithms import _tree_kernels as K
from robot_dynamics.algorithms import _projection_kernels as PK
from robot_dynamics.spatial.linalg import matmul3, matvec3_tuple, svd_pinv_apply

_C = True


@njit(cache=_C, inline='always')
def _inv_adjoint_col(R, p, S, D, c):
    """Column c of D (6, .) = Ad(T^-1) column c of S (6, .), T = (R, p): the twist (v, w) in
    the frame T, ``(R^T (v - p x w), R^T w)`` (linear first)."""
    v0, v1, v2 = S[0, c], S[1, c], S[2, c]
    w0, w1, w2 = S[3, c], S[4, c], S[5, c]
    u0 = v0 - (p[1] * w2 - p[2] * w1)
    u1 = v1 - (p[2] * w0 - p[0] * w2)
    u2 = v2 - (p[0] * w1 - p[1] * w0)
    for a in range(3):
        D[a, c] = R[0, a] * u0 + R[1, a] * u1 + R[2, a] * u2
        D[3 + a, c] = R[0, a] * w0 + R[1, a] * w1 + R[2, a] * w2


@njit(cache=_C)
def partition_terms(par, geo, sl, bj, bR, bp, bM, bm, bc, bsup, grav, q, G, H, R, p, J, dJ, Gi, Gam, dG, Qg):
    """Fills R (nb, 3, 3), p (nb, 3), J (nb, 6, k), dJ (nb, 6, k, k), Gi (nb, k, k),
    Gam (k, k), dG (k, k, k), Qg (k,); returns the potential energy [J]."""
    n = q.shape[0]
    k = G.shape[1]
    nb = bj.shape[0]
    Rj = np.empty((n, 3, 3))
    pj = np.empty((n, 3))
    Jj = np.zeros((n, 6, n))
    Rl = np.empty((3, 3))
    pl = np.empty(3)
    for i in range(n):
        K._world_place(par, geo, i, q, Rl, pl, Rj, pj)
        lam = par[i]
        if lam >= 0:
            # Jj[i] = Ad(T_l^-1) Jj[lam]: w' = Rl^T w, v' = Rl^T (v - pl x w)
            for c in range(lam + 1):
                _inv_adjoint_col(Rl, pl, Jj[lam], Jj[i], c)
        for a in range(6):
            Jj[i, a, i] += sl[i, a]
    Jb = np.empty((6, n))
    MJ = np.empty((6, k))
    adv = np.empty(6)
    f = np.empty(3)
    for a in range(k):
        Qg[a] = 0.0
        for b in range(k):
            Gam[a, b] = 0.0
            for m in range(k):
                dG[m, a, b] = 0.0
    V = 0.0
    for bi in range(nb):
        j = bj[bi]
        Rb, pb = bR[bi], bp[bi]
        matmul3(Rj[j], Rb, R[bi])
        x0, x1, x2 = matvec3_tuple(Rj[j], pb)
        p[bi, 0], p[bi, 1], p[bi, 2] = pj[j, 0] + x0, pj[j, 1] + x1, pj[j, 2] + x2
        # tree Jacobian of the body frame (6, n): Ad(T_b^-1) Jj[j]
        for c in range(n):
            _inv_adjoint_col(Rb, pb, Jj[j], Jb, c)
        # J = Jb G ; dJ = sum_(l < jj in support) ad(Jb_l) Jb_jj G_l G_jj^T + Jb H
        for a in range(6):
            for c in range(k):
                s = 0.0
                for r in range(n):
                    s += Jb[a, r] * G[r, c]
                J[bi, a, c] = s
                for m in range(k):
                    s2 = 0.0
                    for r in range(n):
                        s2 += Jb[a, r] * H[r, c, m]
                    dJ[bi, a, c, m] = s2
        sup = bsup[bi]
        ns = 0
        while ns < n and sup[ns] >= 0:
            ns += 1
        for x in range(ns):
            l = sup[x]
            v0, v1, v2 = Jb[0, l], Jb[1, l], Jb[2, l]
            w0, w1, w2 = Jb[3, l], Jb[4, l], Jb[5, l]
            for y in range(x + 1, ns):
                jj = sup[y]
                x0, x1, x2 = Jb[0, jj], Jb[1, jj], Jb[2, jj]
                y0, y1, y2 = Jb[3, jj], Jb[4, jj], Jb[5, jj]
                # ad(V) X = (w x xv + v x xw, w x xw)
                adv[0] = (w1 * x2 - w2 * x1) + (v1 * y2 - v2 * y1)
                adv[1] = (w2 * x0 - w0 * x2) + (v2 * y0 - v0 * y2)
                adv[2] = (w0 * x1 - w1 * x0) + (v0 * y1 - v1 * y0)
                adv[3] = w1 * y2 - w2 * y1
                adv[4] = w2 * y0 - w0 * y2
                adv[5] = w0 * y1 - w1 * y0
                for c in range(k):
                    gl = G[l, c]
                    if gl == 0.0:
                        continue
                    for m in range(k):
                        gg = gl * G[jj, m]
                        if gg == 0.0:
                            continue
                        for a in range(6):
                            dJ[bi, a, c, m] += adv[a] * gg
        M = bM[bi]
        for a in range(6):
            for c in range(k):
                s = 0.0
                for r in range(6):
                    s += M[a, r] * J[bi, r, c]
                MJ[a, c] = s
        for a in range(k):
            for b in range(k):
                s = 0.0
                for r in range(6):
                    s += J[bi, r, a] * MJ[r, b]
                Gi[bi, a, b] = s
                Gam[a, b] += s
        # dGamma[m] += X[m] + X[m]^T,  X[m, a, b] = sum_r dJ[r, a, m] MJ[r, b]
        for m in range(k):
            for a in range(k):
                for b in range(k):
                    s = 0.0
                    for r in range(6):
                        s += dJ[bi, r, a, m] * MJ[r, b]
                    dG[m, a, b] += s
                    dG[m, b, a] += s
        # gravity: f = m R^T g (body axes), wrench (f, c x f)
        mass = bm[bi]
        c0, c1, c2 = bc[bi, 0], bc[bi, 1], bc[bi, 2]
        for a in range(3):
            f[a] = mass * (R[bi, 0, a] * grav[0] + R[bi, 1, a] * grav[1] + R[bi, 2, a] * grav[2])
        t0 = c1 * f[2] - c2 * f[1]
        t1 = c2 * f[0] - c0 * f[2]
        t2 = c0 * f[1] - c1 * f[0]
        for a in range(k):
            Qg[a] += (
                J[bi, 0, a] * f[0]
                + J[bi, 1, a] * f[1]
                + J[bi, 2, a] * f[2]
                + J[bi, 3, a] * t0
                + J[bi, 4, a] * t1
                + J[bi, 5, a] * t2
            )
        s = 0.0
        for a in range(3):
            s += grav[a] * (p[bi, a] + R[bi, a, 0] * c0 + R[bi, a, 1] * c1 + R[bi, a, 2] * c2)
        V -= mass * s
    return V


@njit(cache=_C)
def numeric_loop_map(kin, q, free, idx, dep, tol, max_iter, eps, rank_tol, G, H, s_out):
    """Numeric loop map at the independent values already in ``q`` (the start guess, in
    place): Newton assembly with the joints ``~free`` fixed, then ``G`` (n, k) and ``H``
    (n, k, k). ``s_out`` (min(m, nd),): singular values of the dependent block.

    Returns (status, rank): 0 ok, 1 Newton did not converge (q is the last iterate),
    2 rank-deficient dependent block (loop singularity; G, H not filled)."""
    n = q.shape[0]
    m = kin[7].shape[0]
    k = idx.shape[0]
    nd = dep.shape[0]
    phi = np.empty(m)
    it, res, rr, ok = PK.nr_project(kin, q, free, tol, max_iter, eps, False, phi)
    if not ok:
        return 1, rr
    A = np.empty((m, n))
    bias = np.empty(m)
    Rw = np.empty((n, 3, 3))
    pw = np.empty((n, 3))
    zero = np.zeros(n)
    PK._constraints(kin, q, zero, True, False, phi, A, bias, Rw, pw)
    Au = np.empty((m, nd))
    for i in range(m):
        for c in range(nd):
            Au[i, c] = A[i, dep[c]]
    U, s, Vt = np.linalg.svd(Au, False)
    big = s[0] if s[0] > 1e-300 else 1e-300
    r = 0
    for i in range(s.shape[0]):
        s_out[i] = s[i]
        if s[i] > rank_tol * big:
            r += 1
    if r < nd:
        return 2, r
    G[:, :] = 0.0
    H[:, :, :] = 0.0
    b = np.empty(m)
    x = np.empty(nd)
    for c in range(k):
        G[idx[c], c] = 1.0
        for i in range(m):
            b[i] = -A[i, idx[c]]
        svd_pinv_apply(U, s, Vt, r, b, x)
        for a in range(nd):
            G[dep[a], c] = x[a]
    Bd = np.empty((k, m))
    v = np.empty(n)
    for a in range(k):
        for i in range(n):
            v[i] = G[i, a]
        PK._constraints(kin, q, v, False, True, phi, A, bias, Rw, pw)
        for i in range(m):
            Bd[a, i] = bias[i]
    for a in range(k):
        for i in range(m):
            b[i] = -Bd[a, i]
        svd_pinv_apply(U, s, Vt, r, b, x)
        for c in range(nd):
            H[dep[c], a, a] = x[c]
        for bb in range(a + 1, k):
            for i in range(n):
                v[i] = G[i, a] + G[i, bb]
            PK._constraints(kin, q, v, False, True, phi, A, bias, Rw, pw)
            for i in range(m):
                b[i] = -(0.5 * (bias[i] - Bd[a, i] - Bd[bb, i]))
            svd_pinv_apply(U, s, Vt, r, b, x)
            for c in range(nd):
                H[dep[c], a, bb] = x[c]
                H[dep[c], bb, a] = x[c]
    return 0, r


@njit(cache=_C)
def ip_law(paper, Gam, dG, Qg, thd, e, ed, thd_d, thdd_d, Qext, kp, kv, Q, out):
    """Rows of the law ('paper' when ``paper``, else PD+) into Q (k,); out (4,) = [V, Vdot,
    lambda_min(sym S), cond Gamma] (see :mod:`robot_dynamics.control.inertia_partitioning`)."""
    k = Gam.shape[0]
    Gd = np.zeros((k, k))  # sum_m dG[m] thd_m  (Gamma_dot at the actual rate)
    for m in range(k):
        for a in range(k):
            for b in range(k):
                Gd[a, b] += dG[m, a, b] * thd[m]
    for j in range(k):
        s = 0.0
        for b in range(k):
            s += Gam[j, b] * thdd_d[b]
        if paper:
            s2 = 0.0
            for b in range(k):
                s2 += Gd[j, b] * thd_d[b]
            s3 = 0.0
            for a in range(k):
                t = 0.0
                for b in range(k):
                    t += dG[j, a, b] * thd_d[b]
                s3 += thd_d[a] * t
            qm = s + s2 - 0.5 * s3
        else:
            # Christoffel row j: C_jb = 1/2 sum_m (dG[m, j, b] + dG[b, j, m] - dG[j, b, m]) thd_m
            s2 = 0.0
            for b in range(k):
                c = 0.0
                for m in range(k):
                    c += (dG[m, j, b] + dG[b, j, m] - dG[j, b, m]) * thd[m]
                s2 += 0.5 * c * thd_d[b]
            qm = s + s2
        Q[j] = (qm - Qg[j] - Qext[j]) + (-kp[j] * e[j] - kv[j] * ed[j])
    S = np.zeros((k, k))
    for a in range(k):
        S[a, a] = kv[a]
    if paper:
        for a in range(k):
            for b in range(k):
                g = 0.0
                nn = 0.0
                for m in range(k):
                    g += dG[m, a, b] * thd_d[m]
                    nn += dG[a, b, m] * thd_d[m]
                S[a, b] += 0.5 * g - nn
    V = 0.0
    for a in range(k):
        t = 0.0
        for b in range(k):
            t += Gam[a, b] * ed[b]
        V += 0.5 * ed[a] * t
    Vp = 0.0
    for a in range(k):
        Vp += e[a] * (kp[a] * e[a])
    out[0] = V + 0.5 * Vp
    vd = 0.0
    for a in range(k):
        t = 0.0
        for b in range(k):
            t += S[a, b] * ed[b]
        vd += ed[a] * t
    out[1] = -vd
    Ss = 0.5 * (S + S.T)
    out[2] = np.linalg.eigvalsh(Ss)[0]
    ev = np.linalg.eigvalsh(Gam)
    out[3] = ev[k - 1] / ev[0]
