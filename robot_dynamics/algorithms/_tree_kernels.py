"""Numba kernels of the tree recursions (private; use the functions of the public modules).

The model is passed as two packed arrays (few arguments keep the dispatch cheap):

* ``par`` (n,) int64: parent joint index (-1 = world), ``par[i] < i``
* ``geo`` (n, 28) float64 per velocity coordinate (a one-DOF "sub-joint"): [0:9] R_fixed
  (row-major), [9:12] p_fixed, [12:15] axis, [15] type (0 revolute, 1 prismatic), [16] mass,
  [17:20] first moment h = m c, [20] index in q (one-DOF joint: its coordinate; multi-DOF joint:
  the first of its coordinates), [21] the joint it belongs to (0 one-DOF, 1 free-flyer,
  2 spherical, 3 planar), [22] its position among that joint's velocity coordinates, [23] the
  index of that joint's first velocity coordinate, [24:28] unused; the inertia about the joint
  origin is in ``ine`` (n, 3, 3).

A multi-DOF joint is a chain of one-DOF sub-joints (free-flyer: prismatic x, y, z then revolute
x, y, z; spherical: revolute x, y, z; planar: prismatic x, y, revolute z), all in the joint's
child frame: the first carries the placement ``M(q)`` of the joint (from its quaternion / angle
coordinates in q), the others the identity, and only the last one carries the body. Velocities
are then the joint's (child-frame) velocity coordinates, as in Pinocchio. The chain's bias
acceleration holds the products of its own coordinates, ``E = sum_{j<k} (s_j x s_k) v_j v_k``,
which the joint does not have (its motion subspace is constant): :func:`_vel_product` removes
them (``qdd_sub = qdd - E`` wherever an acceleration is formed).

``q`` has ``nq`` entries (Pinocchio's layout), velocities and accelerations ``n`` (= nv, the rows
of ``geo``).

All spatial vectors are linear-first, expressed in the body (joint) frame for the dynamics
kernels and in the world frame for :func:`world_kinematics`. Batched kernels take 2-D (N, n)
inputs and loop over samples. Status codes: 0 ok, 1 non-finite input, 2 + k singular pivot k.
"""

import numpy as np
from numba import njit

from robot_dynamics.spatial.linalg import (
    cross3,
    ltdl_factor,
    ltdl_solve,
    matmul3,
    matTvec3_tuple,
    matvec3_tuple,
    rodrigues,
)

_CACHE = True


@njit(cache=_CACHE, fastmath=False)
def _local_transform(geo, i, q, R, p):
    """R, p (written in place) = placement of sub-joint i in its parent frame at q (nq,)."""
    g = geo[i, 21]
    if g == 0.0:
        qi = q[int(geo[i, 20])]
        ax0, ax1, ax2 = geo[i, 12], geo[i, 13], geo[i, 14]
        if geo[i, 15] == 0.0:
            J00, J01, J02, J10, J11, J12, J20, J21, J22 = rodrigues(ax0, ax1, ax2, np.cos(qi), np.sin(qi))
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
        return
    if geo[i, 22] != 0.0:  # a later coordinate of a multi-DOF joint: the same frame
        for r in range(3):
            for c in range(3):
                R[r, c] = 1.0 if r == c else 0.0
            p[r] = 0.0
        return
    J00, J01, J02, J10, J11, J12, J20, J21, J22, t0, t1, t2 = _joint_placement(g, q, int(geo[i, 20]))
    for r in range(3):
        f0, f1, f2 = geo[i, 3 * r], geo[i, 3 * r + 1], geo[i, 3 * r + 2]
        R[r, 0] = f0 * J00 + f1 * J10 + f2 * J20
        R[r, 1] = f0 * J01 + f1 * J11 + f2 * J21
        R[r, 2] = f0 * J02 + f1 * J12 + f2 * J22
        p[r] = geo[i, 9 + r] + f0 * t0 + f1 * t1 + f2 * t2


@njit(cache=_CACHE)
def _joint_placement(g, q, k):
    """The placement M(q) (R row-major, then t: 12 scalars) of a multi-DOF joint of kind g
    (1 free-flyer, 2 spherical, 3 planar) whose coordinates start at q[k]; quaternions (x, y, z,
    w) and (cos, sin) pairs are normalized here."""
    if g == 3.0:
        c, s = q[k + 2], q[k + 3]
        r = np.sqrt(c * c + s * s)
        c, s = c / r, s / r
        return c, -s, 0.0, s, c, 0.0, 0.0, 0.0, 1.0, q[k], q[k + 1], 0.0
    o = k + 3 if g == 1.0 else k
    x, y, z, w = q[o], q[o + 1], q[o + 2], q[o + 3]
    r = 1.0 / np.sqrt(x * x + y * y + z * z + w * w)
    x, y, z, w = x * r, y * r, z * r, w * r
    if g == 1.0:
        t0, t1, t2 = q[k], q[k + 1], q[k + 2]
    else:
        t0 = t1 = t2 = 0.0
    return (
        1.0 - 2.0 * (y * y + z * z),
        2.0 * (x * y - z * w),
        2.0 * (x * z + y * w),
        2.0 * (x * y + z * w),
        1.0 - 2.0 * (x * x + z * z),
        2.0 * (y * z - x * w),
        2.0 * (x * z - y * w),
        2.0 * (y * z + x * w),
        1.0 - 2.0 * (x * x + y * y),
        t0,
        t1,
        t2,
    )


@njit(cache=_CACHE)
def _vel_product(geo, qd, i):
    """E_i: the chain's velocity-product acceleration of sub-joint i, in its joint's velocity
    coordinates (0 for a one-DOF joint; see the module docstring)."""
    g = geo[i, 21]
    if g == 0.0:
        return 0.0
    h = int(geo[i, 23])
    c = int(geo[i, 22])
    if g == 1.0:
        if c < 3:
            v0, v1, v2 = qd[h], qd[h + 1], qd[h + 2]
            w0, w1, w2 = qd[h + 3], qd[h + 4], qd[h + 5]
            if c == 0:
                return v1 * w2 - v2 * w1
            if c == 1:
                return v2 * w0 - v0 * w2
            return v0 * w1 - v1 * w0
        h += 3
        c -= 3
    elif g == 3.0:
        if c == 0:
            return qd[h + 1] * qd[h + 2]
        if c == 1:
            return -qd[h] * qd[h + 2]
        return 0.0
    w0, w1, w2 = qd[h], qd[h + 1], qd[h + 2]
    if c == 0:
        return w1 * w2
    if c == 1:
        return -w0 * w2
    return w0 * w1


@njit(cache=_CACHE, inline='always')
def _force_to_parent(R, p, f0, f1, f2, n0, n1, n2):
    """The wrench (f, n) of a joint frame expressed in its parent frame, the frame placed at
    (R, p) in it: ``(R f, R n + p x R f)`` (6 scalars)."""
    g0, g1, g2 = matvec3_tuple(R, (f0, f1, f2))
    t0, t1, t2 = matvec3_tuple(R, (n0, n1, n2))
    return g0, g1, g2, t0 + p[1] * g2 - p[2] * g1, t1 + p[2] * g0 - p[0] * g2, t2 + p[0] * g1 - p[1] * g0


@njit(cache=_CACHE, inline='always')
def _inertia_mul(m, h0, h1, h2, I, v0, v1, v2, w0, w1, w2):
    """The spatial inertia (mass m, first moment h = m c, inertia I (3, 3) about the frame
    origin) times the twist (v, w): ``(m v - h x w, h x v + I w)`` (6 scalars)."""
    return (
        m * v0 - (h1 * w2 - h2 * w1),
        m * v1 - (h2 * w0 - h0 * w2),
        m * v2 - (h0 * w1 - h1 * w0),
        h1 * v2 - h2 * v1 + I[0, 0] * w0 + I[0, 1] * w1 + I[0, 2] * w2,
        h2 * v0 - h0 * v2 + I[1, 0] * w0 + I[1, 1] * w1 + I[1, 2] * w2,
        h0 * v1 - h1 * v0 + I[2, 0] * w0 + I[2, 1] * w1 + I[2, 2] * w2,
    )


@njit(cache=_CACHE)
def local_transforms(geo, q, R, p):
    """R (n, 3, 3), p (n, 3) = the placement of every sub-joint in its parent frame at q (nq,)."""
    for i in range(geo.shape[0]):
        _local_transform(geo, i, q, R[i], p[i])


@njit(cache=_CACHE)
def _rnea_one(par, geo, ine, q, qd, qdd, fext, has_fext, grav, R, p, V, A, F, tau):
    _rnea_core(par, geo, ine, q, qd, qdd, fext, has_fext, grav, R, p, V, A, F, tau, False)


@njit(cache=_CACHE)
def _rnea_core(par, geo, ine, q, qd, qdd, fext, has_fext, grav, R, p, V, A, F, tau, local):
    """RNEA at one state into tau (n,); R, p (written unless ``local``: then they hold the local
    placements at q, :func:`local_transforms`), V, A, F scratch."""
    n = geo.shape[0]
    for i in range(n):
        if not local:
            _local_transform(geo, i, q, R[i], p[i])
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
        v0, v1, v2 = matTvec3_tuple(Ri, (u0, u1, u2))
        w0, w1, w2 = matTvec3_tuple(Ri, (wl0, wl1, wl2))
        b0, b1, b2 = matTvec3_tuple(Ri, (c0, c1, c2))
        e0, e1, e2 = matTvec3_tuple(Ri, (al0, al1, al2))
        ax0, ax1, ax2 = geo[i, 12], geo[i, 13], geo[i, 14]
        sd, sdd = qd[i], qdd[i] - _vel_product(geo, qd, i)
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
        # momentum I v, then I a
        l0, l1, l2, k0, k1, k2 = _inertia_mul(m, h0, h1, h2, I, v0, v1, v2, w0, w1, w2)
        f0, f1, f2, n0, n1, n2 = _inertia_mul(m, h0, h1, h2, I, b0, b1, b2, e0, e1, e2)
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
        if lam >= 0 and geo[i, 22] != 0.0:  # the same frame as the parent coordinate's
            for a in range(6):
                F[lam, a] += F[i, a]
        elif lam >= 0:
            x = _force_to_parent(R[i], p[i], F[i, 0], F[i, 1], F[i, 2], F[i, 3], F[i, 4], F[i, 5])
            for a in range(6):
                F[lam, a] += x[a]


@njit(cache=_CACHE)
def _all_finite(x):
    for v in x.flat:
        if not np.isfinite(v):
            return False
    return True


@njit(cache=_CACHE)
def _inputs_finite(Q, QD, Y, FEXT, has_fext):
    """Q, QD, Y (and FEXT if has_fext) all finite."""
    if not (_all_finite(Q) and _all_finite(QD) and _all_finite(Y)):
        return False
    return not has_fext or _all_finite(FEXT)


@njit(cache=_CACHE)
def rnea_buffers(n):
    """Scratch (R, p, V, A, F) of :func:`_rnea_one` for n joints."""
    return np.empty((n, 3, 3)), np.empty((n, 3)), np.empty((n, 6)), np.empty((n, 6)), np.empty((n, 6))


@njit(cache=_CACHE)
def rnea_batch(par, geo, ine, Q, QD, QDD, FEXT, has_fext, grav, out):
    """out[k] = RNEA(Q[k], QD[k], QDD[k], FEXT[k]) for every sample k. Returns a status."""
    if not _inputs_finite(Q, QD, QDD, FEXT, has_fext):
        return 1
    N, n = Q.shape[0], geo.shape[0]
    R, p, V, A, F = rnea_buffers(n)
    for k in range(N):
        _rnea_one(par, geo, ine, Q[k], QD[k], QDD[k], FEXT[k if has_fext else 0], has_fext, grav, R, p, V, A, F, out[k])
    return 0


@njit(cache=_CACHE)
def _crba_one(par, geo, ine, q, R, p, mc, hc, Ic, M):
    _crba_core(par, geo, ine, q, R, p, mc, hc, Ic, M, False)


@njit(cache=_CACHE)
def _crba_core(par, geo, ine, q, R, p, mc, hc, Ic, M, local):
    """CRBA at one state into M (the entries of ancestor pairs; the others are not written);
    R, p as :func:`_rnea_core`, mc, hc, Ic scratch."""
    n = geo.shape[0]
    T = np.empty((3, 3))
    for i in range(n):
        if not local:
            _local_transform(geo, i, q, R[i], p[i])
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
            if geo[j, 22] == 0.0:  # (a later coordinate of a multi-DOF joint: the same frame)
                F0, F1, F2, F3, F4, F5 = _force_to_parent(R[j], p[j], F0, F1, F2, F3, F4, F5)
            j = par[j]
            bx0, bx1, bx2 = geo[j, 12], geo[j, 13], geo[j, 14]
            if geo[j, 15] == 0.0:
                val = bx0 * F3 + bx1 * F4 + bx2 * F5
            else:
                val = bx0 * F0 + bx1 * F1 + bx2 * F2
            M[i, j] = val
            M[j, i] = val
        lam = par[i]
        if lam >= 0 and geo[i, 22] != 0.0:  # the same frame as the parent coordinate's
            mc[lam] += m
            hc[lam, 0] += h0
            hc[lam, 1] += h1
            hc[lam, 2] += h2
            for a in range(3):
                for b in range(3):
                    Ic[lam, a, b] += I[a, b]
        elif lam >= 0:
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
    N, n = Q.shape[0], geo.shape[0]
    R = np.empty((n, 3, 3))
    p = np.empty((n, 3))
    mc = np.empty(n)
    hc = np.empty((n, 3))
    Ic = np.empty((n, 3, 3))
    for k in range(N):
        _crba_one(par, geo, ine, Q[k], R, p, mc, hc, Ic, out[k])
    return 0


@njit(cache=_CACHE)
def mass_matrix(par, geo, ine, q, M):
    """M (n, n) = the joint-space inertia matrix at q (one sample, CRBA)."""
    n = geo.shape[0]
    for a in range(n):
        for b in range(n):
            M[a, b] = 0.0
    _crba_one(
        par, geo, ine, q, np.empty((n, 3, 3)), np.empty((n, 3)), np.empty(n), np.empty((n, 3)), np.empty((n, 3, 3)), M
    )


@njit(cache=_CACHE)
def mass_and_bias(par, geo, ine, grav, q, qd, M, h):
    """M (n, n) = the inertia matrix and h (n,) = RNEA(q, qd, qdd = 0) with gravity (no
    external forces) at one state."""
    n = geo.shape[0]
    mass_matrix(par, geo, ine, q, M)
    R, p, V, A, F = rnea_buffers(n)
    _rnea_one(par, geo, ine, q, qd, np.zeros(n), np.zeros((1, 6)), False, grav, R, p, V, A, F, h)


@njit(cache=_CACHE)
def fd_batch(par, geo, ine, Q, QD, TAU, FEXT, has_fext, grav, out, L, rel_tol):
    """Tree forward dynamics qdd = M^-1 (tau - b) by CRBA + RNEA bias + the tree-sparse L^T D L
    factorization of M (:func:`robot_dynamics.spatial.linalg.ltdl_factor`, O(n d^2)).

    ``L`` (n, n): scratch for M and its factors, sample after sample (only the entries of
    ancestor pairs are written and read, so it needs no zeroing). Returns 0, 1 (non-finite
    input) or 2 + k (pivot k not positive: joint k drives no inertia).
    """
    if not _inputs_finite(Q, QD, TAU, FEXT, has_fext):
        return 1
    N, n = Q.shape[0], geo.shape[0]
    R, p, V, A, F = rnea_buffers(n)
    mc = np.empty(n)
    hc = np.empty((n, 3))
    Ic = np.empty((n, 3, 3))
    zero = np.zeros(n)
    b = np.empty(n)
    for k in range(N):
        _crba_one(par, geo, ine, Q[k], R, p, mc, hc, Ic, L)
        _rnea_one(par, geo, ine, Q[k], QD[k], zero, FEXT[k if has_fext else 0], has_fext, grav, R, p, V, A, F, b)
        scale = 0.0
        for i in range(n):
            if L[i, i] > scale:
                scale = L[i, i]
        j = ltdl_factor(L, par, rel_tol * max(scale, 1e-300))  # in place
        if j >= 0:
            return 2 + j
        for i in range(n):
            b[i] = TAU[k, i] - b[i]
        ltdl_solve(L, par, b, out[k])
    return 0


@njit(cache=_CACHE)
def world_buffers(n):
    """Outputs (Rw, pw, W, Vo, Al, Ao) of :func:`world_kinematics` for n joints."""
    return np.empty((n, 3, 3)), np.empty((n, 3)), np.empty((n, 3)), np.empty((n, 3)), np.empty((n, 3)), np.empty((n, 3))


@njit(cache=_CACHE)
def _world_place(par, geo, i, q, Rl, pl, Rw, pw):
    """World placement Rw[i], pw[i] of joint i at q (nq,) from its parent's (Rl (3, 3), pl (3,):
    scratch, left holding the local placement). Returns r = pw[i] - pw[parent] (world axes)."""
    _local_transform(geo, i, q, Rl, pl)
    return _world_place_from(par, i, Rl, pl, Rw, pw)


@njit(cache=_CACHE)
def _world_place_from(par, i, Rl, pl, Rw, pw):
    """World placement Rw[i], pw[i] of joint i from its local placement (Rl, pl) and its
    parent's. Returns r = pw[i] - pw[parent] (world axes)."""
    lam = par[i]
    if lam < 0:
        for a in range(3):
            for b in range(3):
                Rw[i, a, b] = Rl[a, b]
            pw[i, a] = pl[a]
        return pl[0], pl[1], pl[2]
    matmul3(Rw[lam], Rl, Rw[i])
    r0 = Rw[lam, 0, 0] * pl[0] + Rw[lam, 0, 1] * pl[1] + Rw[lam, 0, 2] * pl[2]
    r1 = Rw[lam, 1, 0] * pl[0] + Rw[lam, 1, 1] * pl[1] + Rw[lam, 1, 2] * pl[2]
    r2 = Rw[lam, 2, 0] * pl[0] + Rw[lam, 2, 1] * pl[1] + Rw[lam, 2, 2] * pl[2]
    pw[i, 0] = pw[lam, 0] + r0
    pw[i, 1] = pw[lam, 1] + r1
    pw[i, 2] = pw[lam, 2] + r2
    return r0, r1, r2


@njit(cache=_CACHE)
def world_kinematics(par, geo, q, qd, qdd, Rw, pw, W, Vo, Al, Ao):
    """World-frame placement and motion of every joint frame (one sample), allocation-free.

    Writes Rw (n,3,3), pw (n,3), angular velocity W (n,3), origin velocity Vo (n,3),
    angular acceleration Al (n,3) and classical origin acceleration Ao (n,3), all in world
    coordinates (no gravity).
    """
    _world_kinematics(par, geo, q, qd, qdd, Rw, pw, W, Vo, Al, Ao, np.empty((1, 3, 3)), np.empty((1, 3)), False)


@njit(cache=_CACHE)
def _world_kinematics(par, geo, q, qd, qdd, Rw, pw, W, Vo, Al, Ao, R, p, local):
    """:func:`world_kinematics`; ``local``: from the local placements R (n, 3, 3), p (n, 3) of
    :func:`local_transforms` at q, else R[0], p[0] are scratch."""
    n = geo.shape[0]
    for i in range(n):
        if local:
            r0, r1, r2 = _world_place_from(par, i, R[i], p[i], Rw, pw)
        else:
            r0, r1, r2 = _world_place(par, geo, i, q, R[0], p[0], Rw, pw)
        lam = par[i]
        if lam < 0:
            w0 = w1 = w2 = 0.0
            v0 = v1 = v2 = 0.0
            l0 = l1 = l2 = 0.0
            c0 = c1 = c2 = 0.0
        else:
            w0, w1, w2 = W[lam, 0], W[lam, 1], W[lam, 2]
            v0, v1, v2 = Vo[lam, 0], Vo[lam, 1], Vo[lam, 2]
            l0, l1, l2 = Al[lam, 0], Al[lam, 1], Al[lam, 2]
            c0, c1, c2 = Ao[lam, 0], Ao[lam, 1], Ao[lam, 2]
        ax0 = Rw[i, 0, 0] * geo[i, 12] + Rw[i, 0, 1] * geo[i, 13] + Rw[i, 0, 2] * geo[i, 14]
        ax1 = Rw[i, 1, 0] * geo[i, 12] + Rw[i, 1, 1] * geo[i, 13] + Rw[i, 1, 2] * geo[i, 14]
        ax2 = Rw[i, 2, 0] * geo[i, 12] + Rw[i, 2, 1] * geo[i, 13] + Rw[i, 2, 2] * geo[i, 14]
        # w x r, alpha x r, w x (w x r), w x a (the parent's w)
        x0, x1, x2 = cross3(w0, w1, w2, r0, r1, r2)
        e0, e1, e2 = cross3(l0, l1, l2, r0, r1, r2)
        f0, f1, f2 = cross3(w0, w1, w2, x0, x1, x2)
        y0, y1, y2 = cross3(w0, w1, w2, ax0, ax1, ax2)
        Vo[i, 0] = v0 + x0
        Vo[i, 1] = v1 + x1
        Vo[i, 2] = v2 + x2
        Ao[i, 0] = c0 + e0 + f0
        Ao[i, 1] = c1 + e1 + f1
        Ao[i, 2] = c2 + e2 + f2
        W[i, 0], W[i, 1], W[i, 2] = w0, w1, w2
        Al[i, 0], Al[i, 1], Al[i, 2] = l0, l1, l2
        sd, sdd = qd[i], qdd[i] - _vel_product(geo, qd, i)
        if geo[i, 15] == 0.0:
            W[i, 0] += ax0 * sd
            W[i, 1] += ax1 * sd
            W[i, 2] += ax2 * sd
            Al[i, 0] += y0 * sd + ax0 * sdd
            Al[i, 1] += y1 * sd + ax1 * sdd
            Al[i, 2] += y2 * sd + ax2 * sdd
        else:
            Vo[i, 0] += ax0 * sd
            Vo[i, 1] += ax1 * sd
            Vo[i, 2] += ax2 * sd
            Ao[i, 0] += 2.0 * y0 * sd + ax0 * sdd
            Ao[i, 1] += 2.0 * y1 * sd + ax1 * sdd
            Ao[i, 2] += 2.0 * y2 * sd + ax2 * sdd


@njit(cache=_CACHE)
def fk_batch(par, geo, Q, Rw, pw):
    """World placement of every joint frame for every sample: Rw (N,n,3,3), pw (N,n,3)."""
    N, n = Q.shape[0], geo.shape[0]
    Rl = np.empty((3, 3))
    pl = np.empty(3)
    for k in range(N):
        for i in range(n):
            _world_place(par, geo, i, Q[k], Rl, pl, Rw[k], pw[k])


@njit(cache=_CACHE)
def frame_state(par, geo, Rw, pw, W, Vo, Al, Ao, fj, fRo, fpo, Rf, Sf, J):
    """World state of a frame placed at (fRo (3, 3), fpo (3,)) in joint frame fj (-1: the
    world), from the joint states of :func:`world_kinematics`: Rf (3, 3); Sf (5, 3) rows:
    origin position, angular velocity, origin velocity, angular acceleration, classical
    origin acceleration; J (6, n) its Jacobian in the local world aligned reference (linear rows
    first, zero outside the frame's support).
    """
    n = J.shape[1]
    for a in range(6):
        for c in range(n):
            J[a, c] = 0.0
    if fj < 0:
        for a in range(3):
            for b in range(3):
                Rf[a, b] = fRo[a, b]
            Sf[0, a] = fpo[a]
            for k in range(1, 5):
                Sf[k, a] = 0.0
        return
    r0 = Rw[fj, 0, 0] * fpo[0] + Rw[fj, 0, 1] * fpo[1] + Rw[fj, 0, 2] * fpo[2]
    r1 = Rw[fj, 1, 0] * fpo[0] + Rw[fj, 1, 1] * fpo[1] + Rw[fj, 1, 2] * fpo[2]
    r2 = Rw[fj, 2, 0] * fpo[0] + Rw[fj, 2, 1] * fpo[1] + Rw[fj, 2, 2] * fpo[2]
    matmul3(Rw[fj], fRo, Rf)
    w0, w1, w2 = W[fj, 0], W[fj, 1], W[fj, 2]
    l0, l1, l2 = Al[fj, 0], Al[fj, 1], Al[fj, 2]
    x0, x1, x2 = cross3(w0, w1, w2, r0, r1, r2)
    e0, e1, e2 = cross3(l0, l1, l2, r0, r1, r2)
    f0, f1, f2 = cross3(w0, w1, w2, x0, x1, x2)
    Sf[0, 0], Sf[0, 1], Sf[0, 2] = pw[fj, 0] + r0, pw[fj, 1] + r1, pw[fj, 2] + r2
    Sf[1, 0], Sf[1, 1], Sf[1, 2] = w0, w1, w2
    Sf[2, 0], Sf[2, 1], Sf[2, 2] = Vo[fj, 0] + x0, Vo[fj, 1] + x1, Vo[fj, 2] + x2
    Sf[3, 0], Sf[3, 1], Sf[3, 2] = l0, l1, l2
    Sf[4, 0], Sf[4, 1], Sf[4, 2] = Ao[fj, 0] + e0 + f0, Ao[fj, 1] + e1 + f1, Ao[fj, 2] + e2 + f2
    j = fj
    while j >= 0:
        ax0 = Rw[j, 0, 0] * geo[j, 12] + Rw[j, 0, 1] * geo[j, 13] + Rw[j, 0, 2] * geo[j, 14]
        ax1 = Rw[j, 1, 0] * geo[j, 12] + Rw[j, 1, 1] * geo[j, 13] + Rw[j, 1, 2] * geo[j, 14]
        ax2 = Rw[j, 2, 0] * geo[j, 12] + Rw[j, 2, 1] * geo[j, 13] + Rw[j, 2, 2] * geo[j, 14]
        if geo[j, 15] == 0.0:
            J[0, j], J[1, j], J[2, j] = cross3(
                ax0, ax1, ax2, Sf[0, 0] - pw[j, 0], Sf[0, 1] - pw[j, 1], Sf[0, 2] - pw[j, 2]
            )
            J[3, j] = ax0
            J[4, j] = ax1
            J[5, j] = ax2
        else:
            J[0, j] = ax0
            J[1, j] = ax1
            J[2, j] = ax2
        j = par[j]


@njit(cache=_CACHE)
def _quat_mul_exp(q, o, w0, w1, w2, out):
    """out[o:o+4] = the unit quaternion (x, y, z, w) of q[o:o+4] times exp(w) (rotation vector w;
    right multiplication: w in the child frame). out may be q."""
    t = np.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
    if t < 1e-4:
        k = 0.5 - t * t / 48.0
    else:
        k = np.sin(0.5 * t) / t
    bx, by, bz, bw = k * w0, k * w1, k * w2, np.cos(0.5 * t)
    ax, ay, az, aw = q[o], q[o + 1], q[o + 2], q[o + 3]
    x = aw * bx + ax * bw + ay * bz - az * by
    y = aw * by - ax * bz + ay * bw + az * bx
    z = aw * bz + ax * by - ay * bx + az * bw
    w = aw * bw - ax * bx - ay * by - az * bz
    r = 1.0 / np.sqrt(x * x + y * y + z * z + w * w)
    out[o], out[o + 1], out[o + 2], out[o + 3] = x * r, y * r, z * r, w * r


@njit(cache=_CACHE)
def integrate(geo, q, v, h, out):
    """out (nq,) = q (+) h v: the configuration reached from q along the velocity v (nv,) in time
    h, on the joints' Lie groups (as :meth:`robot_dynamics.model.Model.integrate`, Pinocchio's
    ``integrate``); quaternions come out of unit norm. out may be q."""
    n = geo.shape[0]
    i = 0
    while i < n:
        g = geo[i, 21]
        k = int(geo[i, 20])
        if g == 0.0:
            out[k] = q[k] + h * v[i]
            i += 1
        elif g == 2.0:
            _quat_mul_exp(q, k, h * v[i], h * v[i + 1], h * v[i + 2], out)
            i += 3
        elif g == 1.0:
            u0, u1, u2 = h * v[i], h * v[i + 1], h * v[i + 2]
            w0, w1, w2 = h * v[i + 3], h * v[i + 4], h * v[i + 5]
            # p += R(q) J_l(w) u  (the SE(3) exponential's translation, in the child frame)
            t2 = w0 * w0 + w1 * w1 + w2 * w2
            t = np.sqrt(t2)
            if t < 1e-4:
                a, b = 0.5 - t2 / 24.0, 1.0 / 6.0 - t2 / 120.0
            else:
                a, b = (1.0 - np.cos(t)) / t2, (t - np.sin(t)) / (t2 * t)
            c0, c1, c2 = cross3(w0, w1, w2, u0, u1, u2)
            d0, d1, d2 = cross3(w0, w1, w2, c0, c1, c2)
            e0, e1, e2 = u0 + a * c0 + b * d0, u1 + a * c1 + b * d1, u2 + a * c2 + b * d2
            R00, R01, R02, R10, R11, R12, R20, R21, R22, _, _, _ = _joint_placement(2.0, q, k + 3)
            p0 = q[k] + R00 * e0 + R01 * e1 + R02 * e2
            p1 = q[k + 1] + R10 * e0 + R11 * e1 + R12 * e2
            p2 = q[k + 2] + R20 * e0 + R21 * e1 + R22 * e2
            _quat_mul_exp(q, k + 3, w0, w1, w2, out)
            out[k], out[k + 1], out[k + 2] = p0, p1, p2
            i += 6
        else:  # planar: SE(2)
            u0, u1, t = h * v[i], h * v[i + 1], h * v[i + 2]
            if abs(t) < 1e-4:
                a, b = 1.0 - t * t / 6.0, t / 2.0 - t**3 / 24.0
            else:
                a, b = np.sin(t) / t, (1.0 - np.cos(t)) / t
            px, py = a * u0 - b * u1, b * u0 + a * u1
            c, s = q[k + 2], q[k + 3]
            r = np.sqrt(c * c + s * s)
            c, s = c / r, s / r
            cw, sw = np.cos(t), np.sin(t)
            out[k], out[k + 1] = q[k] + c * px - s * py, q[k + 1] + s * px + c * py
            out[k + 2], out[k + 3] = c * cw - s * sw, s * cw + c * sw
            i += 3
