"""6-D virtual decomposition (VDC) algebra and the Newton-Euler model of hydraulic
parallel-serial booms (seed 001, Petrovic & Mattila; conventions of brief 001).

Conventions
-----------
* 6-D velocity of frame {A} in {A}: ``V = [v; w]`` (linear first, m/s and rad/s); wrench at
  the origin of {A} in {A}: ``F = [f; m]`` (N, N m). ``x_f = e1, y_f = e2, z_r = e6``.
* ``U(R, r)`` = ``^A U_B = [[R, 0], [(r x) R, R]]`` with ``R = ^A R_B`` and ``r = ^A r_AB``:
  ``^A F = U ^B F`` and ``^B V = U^T ^A V`` (eq. 3-5); power is invariant.
* Rigid body in {A} (mass m, centre of mass c in A, inertia I_c about the COM in A's axes)::

      F* = M_A dV/dt + C_A(w) V + G_A                                   (eq. 7/49)
      M_A = [[m I, -m c x], [m c x, I_c - m (c x)(c x)]]
      C_A(w) = [[m w x, -m (w x)(c x)], [m (c x)(w x), (w x) I_c + I_c (w x) - m (c x)(w x)(c x)]]
      G_A = -[m R_A^T g; m c x R_A^T g]      (g: gravity acceleration in the world frame)

  ``C_A`` is skew-symmetric. The ``I_c (w x)`` term vanishes in ``C_A(w) V`` but not in
  ``C_A(w) V_r`` (the pitfall of the brief): we always use the full matrix.

Structure (generic, built from the URDF + sidecar by :func:`structure_from_model`): a series of
*segments* from the base to the tool, each

* **revolute** (a parallel-serial triangle): link L_j (cut frame B_cj = B_0j at the cylinder
  base pivot q_j1, x towards the passive joint q_j), joint q_j, link L_j1 merged with the rigid
  mass after it up to the next cut (B_1j, origin q_j, x towards the rod eye q_j2), cylinder case
  (B_3j, origin q_j1, x along the cylinder) and piston+rod (B_4j, origin at the piston head,
  ``r = (x + x0 - lc, 0, 0)`` in B_3j). Coordinates: q_j (rad) is the angle from the B_0j to
  the B_1j x-axis about z; ``c = x + x0`` the pin-to-pin length (x the stroke, m)::

      c   = sqrt(L^2 + L1^2 + 2 L L1 cos q)                                 (eq. 18)
      q1  = atan2(L1 sin q, L + L1 cos q),   q2 = q - q1       (sign-robust form of 19/20)
      xd  = Jx qd,  Jx = -L L1 sin q / c                                       (eq. 21)

  The segment's generalized force is ``Jx f_c`` where ``f_c`` [N] is the cylinder force
  pushing the pin joints apart (eq. 67/68).
* **prismatic** (telescopic): cut frame B_c = P_2 on the preceding link with x along the slide
  axis; body B_5 (extension + everything rigid to it) at ``r = (x, 0, 0)``; the cylinder acts
  along x between B_c's link and B_5 with force ``f_ct`` (its case/rod masses are merged with
  the two links). Generalized coordinate x (m), generalized force ``f_ct``.

Every segment has 4 body slots: revolute (B0, B1, B3, B4), prismatic (B0, B5, -, -). The
driving cut E of segment k is the driven cut B_c of segment k+1 (the tool frame D for the
last one). ``F_E`` is the wrench a segment exerts on its successor at E (the environment for
the last segment: the tool wrench ``F_D`` the manipulator applies, in D).

The numerical core is numba-compiled (``_fwd``/``_bwd``/``_body_wrenches``); the pure functions
``U``, ``M_A``, ``C_A``, ``G_A`` are the reference 6-D algebra (numpy).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from robot_dynamics.errors import RobotDynamicsError
from robot_dynamics.spatial.linalg import hat, matmul3

__all__ = [
    'StructureError',
    'SingularConfigurationError',
    'skew',
    'U',
    'UT',
    'M_A',
    'C_A',
    'G_A',
    'rz',
    'closure',
    'Structure',
    'Segment',
    'structure_from_model',
    'REV',
    'PRI',
]

REV = 0
PRI = 1


class StructureError(RobotDynamicsError):
    """The URDF/sidecar does not describe a valid VDC structure (names the element)."""


class SingularConfigurationError(RobotDynamicsError):
    """A configuration at (or beyond) a singularity of a revolute segment: toggle point
    ``|sin q_j2| < eps`` (eq. 68 undefined) or ``|sin q_j| < eps`` (eq. 21: Jx = 0)."""


# ----------------------------------------------------------------------------- 6-D algebra
def skew(a):
    """``(a x)`` (3, 3) for a (3,)."""
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def U(R, r):
    """``^A U_B`` (6, 6) = [[R, 0], [(r x) R, R]] (eq. 5); ``R = ^A R_B``, ``r = ^A r_AB``."""
    out = np.zeros((6, 6))
    out[:3, :3] = R
    out[3:, 3:] = R
    out[3:, :3] = skew(r) @ R
    return out


def UT(R, r):
    """``^A U_B^T`` (6, 6): maps ``^A V`` to ``^B V`` (eq. 3)."""
    return U(R, r).T


def rz(a):
    """Rotation about z by ``a`` (3, 3)."""
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def M_A(m, c, Ic):
    """Rigid-body mass matrix (6, 6) in {A} (symmetric positive semi-definite, constant)."""
    C = skew(c)
    M = np.zeros((6, 6))
    M[:3, :3] = m * np.eye(3)
    M[:3, 3:] = -m * C
    M[3:, :3] = m * C
    M[3:, 3:] = Ic - m * C @ C
    return M


def C_A(m, c, Ic, w):
    """Skew-symmetric Coriolis/centrifugal matrix (6, 6) C_A(w) (brief 001 par. 2.1)."""
    C, W = skew(c), skew(w)
    out = np.zeros((6, 6))
    out[:3, :3] = m * W
    out[:3, 3:] = -m * W @ C
    out[3:, :3] = m * C @ W
    out[3:, 3:] = W @ Ic + Ic @ W - m * C @ W @ C
    return out


def G_A(m, c, R_A, g):
    """Gravity wrench (6,) on the left-hand side: ``-[m R^T g; m c x R^T g]``; ``R_A`` is the
    world orientation of {A}, ``g`` (3,) the gravity acceleration in the world frame."""
    gl = R_A.T @ np.asarray(g, float)
    return -np.concatenate([m * gl, m * np.cross(c, gl)])


def closure(L, L1, q, qd=0.0, qdd=0.0):
    """Loop closure of a revolute segment (eq. 18-23 in sign-robust form), analytic rates.

    Returns dict: c, cd, cdd (pin-to-pin length [m] and rates), q1, q1d, q1dd, q2, q2d, q2dd
    [rad...], Jx = dc/dq, Jxd = d/dt Jx, k1 = dq1/dq, k1d.
    """
    s, co = math.sin(q), math.cos(q)
    c = math.sqrt(L * L + L1 * L1 + 2 * L * L1 * co)
    Jx = -L * L1 * s / c
    cd = Jx * qd
    Jxd = -L * L1 * (co * qd / c - s * cd / (c * c))
    k1 = L1 * (L1 + L * co) / (c * c)
    k1d = -L1 * L * s * qd / (c * c) - 2 * L1 * (L1 + L * co) * cd / c**3
    q1 = math.atan2(L1 * s, L + L1 * co)
    out = dict(
        c=c,
        cd=cd,
        cdd=Jx * qdd + Jxd * qd,
        q1=q1,
        q1d=k1 * qd,
        q1dd=k1 * qdd + k1d * qd,
        Jx=Jx,
        Jxd=Jxd,
        k1=k1,
        k1d=k1d,
    )
    out.update(q2=q - q1, q2d=qd - out['q1d'], q2dd=qdd - out['q1dd'])
    return out


def q_from_length(L, L1, c, sign=-1.0):
    """Inverse loop closure: q_j from the pin-to-pin length ``c`` on the branch ``sign(q)``
    (``-1``: the paper's convention q in (-pi, 0)). Raises if c is not assemblable."""
    cq = (c * c - L * L - L1 * L1) / (2 * L * L1)
    if not -1.0 <= cq <= 1.0:
        raise SingularConfigurationError(
            f'pin-to-pin length {c:.6g} m cannot be assembled with L = {L:.6g}, L1 = {L1:.6g}'
        )
    return math.copysign(math.acos(cq), sign)


# ----------------------------------------------------------------------------- numba kernels
@njit(cache=True)
def _ut(R, r, V, out):
    """out = U(R, r)^T V = [R^T (v + w x r); R^T w]."""
    t0 = V[0] + V[4] * r[2] - V[5] * r[1]
    t1 = V[1] + V[5] * r[0] - V[3] * r[2]
    t2 = V[2] + V[3] * r[1] - V[4] * r[0]
    for i in range(3):
        out[i] = R[0, i] * t0 + R[1, i] * t1 + R[2, i] * t2
        out[3 + i] = R[0, i] * V[3] + R[1, i] * V[4] + R[2, i] * V[5]


@njit(cache=True)
def _dut(Rd, R, r, rd, V, out):
    """out += (d/dt U^T) V = [Rd^T v - Rd^T (r x w) - R^T (rd x w); Rd^T w]."""
    a0 = V[0] + V[4] * r[2] - V[5] * r[1]
    a1 = V[1] + V[5] * r[0] - V[3] * r[2]
    a2 = V[2] + V[3] * r[1] - V[4] * r[0]
    b0 = V[4] * rd[2] - V[5] * rd[1]
    b1 = V[5] * rd[0] - V[3] * rd[2]
    b2 = V[3] * rd[1] - V[4] * rd[0]
    for i in range(3):
        out[i] += Rd[0, i] * a0 + Rd[1, i] * a1 + Rd[2, i] * a2 + R[0, i] * b0 + R[1, i] * b1 + R[2, i] * b2
        out[3 + i] += Rd[0, i] * V[3] + Rd[1, i] * V[4] + Rd[2, i] * V[5]


@njit(cache=True)
def _uf(R, r, F, out):
    """out = U(R, r) F = [R f; r x (R f) + R m]."""
    f0 = R[0, 0] * F[0] + R[0, 1] * F[1] + R[0, 2] * F[2]
    f1 = R[1, 0] * F[0] + R[1, 1] * F[1] + R[1, 2] * F[2]
    f2 = R[2, 0] * F[0] + R[2, 1] * F[1] + R[2, 2] * F[2]
    out[0], out[1], out[2] = f0, f1, f2
    for i in range(3):
        out[3 + i] = R[i, 0] * F[3] + R[i, 1] * F[4] + R[i, 2] * F[5]
    out[3] += r[1] * f2 - r[2] * f1
    out[4] += r[2] * f0 - r[0] * f2
    out[5] += r[0] * f1 - r[1] * f0


@njit(cache=True)
def _pmv3(p, A, v, out):
    """out = p + A @ v (3,) without a BLAS call (out may alias p, not v)."""
    for i in range(3):
        out[i] = p[i] + (A[i, 0] * v[0] + A[i, 1] * v[1] + A[i, 2] * v[2])


@njit(cache=True)
def _rz(a, R):
    c, s = math.cos(a), math.sin(a)
    R[:, :] = 0.0
    R[0, 0], R[0, 1], R[1, 0], R[1, 1], R[2, 2] = c, -s, s, c, 1.0


@njit(cache=True)
def _rzd(a, ad, R):
    c, s = math.cos(a), math.sin(a)
    R[:, :] = 0.0
    R[0, 0], R[0, 1], R[1, 0], R[1, 1] = -s * ad, -c * ad, c * ad, -s * ad


@njit(cache=True)
def fwd_buffers(ns):
    """Outputs (V, Vd, Rw, pw, clo) of :func:`_fwd` for ns segments (zeros)."""
    return np.zeros((ns, 6, 6)), np.zeros((ns, 6, 6)), np.zeros((ns, 6, 3, 3)), np.zeros((ns, 6, 3)), np.zeros((ns, 12))


@njit(cache=True)
def _fwd(kind, geo, RE, rE, Rc1, pc1, q, qdm, qdu, qddu, V0, Vd0, V, Vd, Rw, pw, clo):
    """Forward (base -> tip) velocity/acceleration recursion (eq. 24-34, 38-48).

    ``qdu``/``qddu``: the rates propagated (actual or required); the transformation-matrix
    derivatives and the closure rate coefficients use the *measured* rates ``qdm`` and the
    configuration q (brief pitfall 5). Outputs: V, Vd (ns, 6, 6) velocities of the slots
    (0..3) and of E (4) and T (5); Rw, pw (ns, 6, 3, 3)/(ns, 6, 3) world poses; clo (ns, 12)
    closure values [c, q1, q2, Jx, xd_u, xdd_u, q1d_u, q1dd_u, cd_m, q1d_m, sin q2, cos q2].
    """
    ns = kind.shape[0]
    Vc = V0.copy()
    Vdc = Vd0.copy()
    Rc = Rc1.copy()
    pc = pc1.copy()
    R = np.zeros((3, 3))
    Rd = np.zeros((3, 3))
    Id = np.eye(3)
    Z3 = np.zeros((3, 3))
    r = np.zeros(3)
    rd = np.zeros(3)
    tmp = np.zeros(3)
    for k in range(ns):
        V[k, 0, :] = Vc
        Vd[k, 0, :] = Vdc
        Rw[k, 0] = Rc
        pw[k, 0] = pc
        if kind[k] == 0:
            L, L1, _x0, lc = geo[k, 0], geo[k, 1], geo[k, 2], geo[k, 3]
            qk = q[k]
            s, co = math.sin(qk), math.cos(qk)
            c = math.sqrt(L * L + L1 * L1 + 2 * L * L1 * co)
            Jx = -L * L1 * s / c
            cdm = Jx * qdm[k]
            Jxd = -L * L1 * (co * qdm[k] / c - s * cdm / (c * c))
            k1 = L1 * (L1 + L * co) / (c * c)
            k1d = -L1 * L * s * qdm[k] / (c * c) - 2 * L1 * (L1 + L * co) * cdm / (c * c * c)
            q1 = math.atan2(L1 * s, L + L1 * co)
            q2 = qk - q1
            xdu = Jx * qdu[k]
            xddu = Jx * qddu[k] + Jxd * qdu[k]
            q1du = k1 * qdu[k]
            q1ddu = k1 * qddu[k] + k1d * qdu[k]
            q1dm = k1 * qdm[k]
            clo[k, 0], clo[k, 1], clo[k, 2], clo[k, 3] = c, q1, q2, Jx
            clo[k, 4], clo[k, 5], clo[k, 6], clo[k, 7] = xdu, xddu, q1du, q1ddu
            clo[k, 8], clo[k, 9], clo[k, 10], clo[k, 11] = cdm, q1dm, math.sin(q2), math.cos(q2)
            # B1: R = Rz(q), r = (L, 0, 0)
            _rz(qk, R)
            _rzd(qk, qdm[k], Rd)
            r[0], r[1], r[2] = L, 0.0, 0.0
            rd[:] = 0.0
            _ut(R, r, Vc, V[k, 1])
            V[k, 1, 5] += qdu[k]
            _ut(R, r, Vdc, Vd[k, 1])
            _dut(Rd, R, r, rd, Vc, Vd[k, 1])
            Vd[k, 1, 5] += qddu[k]
            matmul3(Rc, R, Rw[k, 1])
            _pmv3(pc, Rc, r, pw[k, 1])
            # B3: R = Rz(q1), r = 0
            _rz(q1, R)
            _rzd(q1, q1dm, Rd)
            r[0] = 0.0
            _ut(R, r, Vc, V[k, 2])
            V[k, 2, 5] += q1du
            _ut(R, r, Vdc, Vd[k, 2])
            _dut(Rd, R, r, rd, Vc, Vd[k, 2])
            Vd[k, 2, 5] += q1ddu
            matmul3(Rc, R, Rw[k, 2])
            pw[k, 2] = pc
            # B4: R = I, r = (c - lc, 0, 0), rd = (cd, 0, 0)
            r[0] = c - lc
            rd[0] = cdm
            _ut(Id, r, V[k, 2], V[k, 3])
            V[k, 3, 0] += xdu
            _ut(Id, r, Vd[k, 2], Vd[k, 3])
            _dut(Z3, Id, r, rd, V[k, 2], Vd[k, 3])
            Vd[k, 3, 0] += xddu
            Rw[k, 3] = Rw[k, 2]
            _pmv3(pc, Rw[k, 2], r, pw[k, 3])
            # T (slot 5): from B1, R = I, r = (L1, 0, 0)
            r[0] = L1
            _ut(Id, r, V[k, 1], V[k, 5])
            _ut(Id, r, Vd[k, 1], Vd[k, 5])
            Rw[k, 5] = Rw[k, 1]
            _pmv3(pw[k, 1], Rw[k, 1], r, pw[k, 5])
        else:
            for i in range(12):
                clo[k, i] = 0.0
            clo[k, 3] = 1.0
            clo[k, 4], clo[k, 5] = qdu[k], qddu[k]
            clo[k, 8] = qdm[k]
            clo[k, 10] = 1.0
            r[0], r[1], r[2] = q[k], 0.0, 0.0
            rd[0], rd[1], rd[2] = qdm[k], 0.0, 0.0
            _ut(Id, r, Vc, V[k, 1])
            V[k, 1, 0] += qdu[k]
            _ut(Id, r, Vdc, Vd[k, 1])
            _dut(Z3, Id, r, rd, Vc, Vd[k, 1])
            Vd[k, 1, 0] += qddu[k]
            Rw[k, 1] = Rc
            _pmv3(pc, Rc, r, pw[k, 1])
            V[k, 2, :] = 0.0
            V[k, 3, :] = 0.0
            Vd[k, 2, :] = 0.0
            Vd[k, 3, :] = 0.0
            Rw[k, 2] = Rc
            Rw[k, 3] = Rc
            pw[k, 2] = pc
            pw[k, 3] = pc
            V[k, 5] = V[k, 1]
            Vd[k, 5] = Vd[k, 1]
            Rw[k, 5] = Rw[k, 1]
            pw[k, 5] = pw[k, 1]
        # E (slot 4): constant pose in T (revolute) / B5 (prismatic)
        _ut(RE[k], rE[k], V[k, 5], V[k, 4])
        _ut(RE[k], rE[k], Vd[k, 5], Vd[k, 4])
        matmul3(Rw[k, 5], RE[k], Rw[k, 4])
        for i in range(3):
            tmp[i] = rE[k, i]
        _pmv3(pw[k, 5], Rw[k, 5], tmp, pw[k, 4])
        Vc[:] = V[k, 4]
        Vdc[:] = Vd[k, 4]
        Rc[:, :] = Rw[k, 4]
        pc[:] = pw[k, 4]


@njit(cache=True)
def _body_wrenches(Mb, mb, cb, Ib, Kb, g, V, Vd, Vm, Rw, use_gain, Fs):
    """F*_A = M_A Vd + C_A(w_measured) V + G_A [+ K_A (V - V_measured)] for every slot (eq. 8/49).

    ``V``/``Vd`` the propagated (actual or required) velocities, ``Vm`` the measured ones
    (their angular part enters C_A; with ``use_gain`` the gain term is added)."""
    ns = Mb.shape[0]
    W, C, WC, CW, CWC, WI, IW = np.zeros((7, 3, 3))
    Cmat = np.empty((6, 6))
    gl = np.zeros(3)
    for k in range(ns):
        for a in range(4):
            m = mb[k, a]
            F = Fs[k, a]
            for i in range(6):
                acc = 0.0
                for j in range(6):
                    acc += Mb[k, a, i, j] * Vd[k, a, j]
                F[i] = acc
            if use_gain:
                for i in range(6):
                    acc = 0.0
                    for j in range(6):
                        acc += Kb[k, a, i, j] * (V[k, a, j] - Vm[k, a, j])
                    F[i] += acc
            w = Vm[k, a, 3:6]
            c = cb[k, a]
            hat(w, W)
            hat(c, C)
            v = V[k, a, 0:3]
            om = V[k, a, 3:6]
            matmul3(W, C, WC)
            matmul3(C, W, CW)
            matmul3(C, WC, CWC)
            matmul3(W, Ib[k, a], WI)
            matmul3(Ib[k, a], W, IW)
            for i in range(3):
                for j in range(3):
                    Cmat[i, j] = m * W[i, j]
                    Cmat[i, 3 + j] = -m * WC[i, j]
                    Cmat[3 + i, j] = m * CW[i, j]
                    Cmat[3 + i, 3 + j] = WI[i, j] + IW[i, j] - m * CWC[i, j]
            for i in range(6):
                acc = 0.0
                for j in range(3):
                    acc += Cmat[i, j] * v[j] + Cmat[i, 3 + j] * om[j]
                F[i] += acc
            R = Rw[k, a]
            for i in range(3):
                gl[i] = R[0, i] * g[0] + R[1, i] * g[1] + R[2, i] * g[2]
            F[0] -= m * gl[0]
            F[1] -= m * gl[1]
            F[2] -= m * gl[2]
            F[3] -= m * (c[1] * gl[2] - c[2] * gl[1])
            F[4] -= m * (c[2] * gl[0] - c[0] * gl[2])
            F[5] -= m * (c[0] * gl[1] - c[1] * gl[0])


@njit(cache=True)
def _bwd(kind, geo, RE, rE, q, clo, Fs, FD, fc, FBc, FE, eps):
    """Backward (tip -> base) pass: cylinder forces (eq. 68 / prismatic 55) and driven-cut
    wrenches (eq. 69 / 56). Returns 0, or k+1 of the first segment at a toggle point."""
    ns = kind.shape[0]
    Fn = FD.copy()
    W = np.zeros(6)
    t6 = np.zeros(6)
    t6b = np.zeros(6)
    R = np.zeros((3, 3))
    r = np.zeros(3)
    Id = np.eye(3)
    bad = 0
    for kk in range(ns):
        k = ns - 1 - kk
        FE[k] = Fn
        if kind[k] == 0:
            L, L1, lc = geo[k, 0], geo[k, 1], geo[k, 3]
            c, q1, s2, c2 = clo[k, 0], clo[k, 1], clo[k, 10], clo[k, 11]
            for i in range(3):
                r[i] = rE[k, i]
            r[0] += L1
            _uf(RE[k], r, Fn, W)  # B1 U E1 F_E1
            for i in range(6):
                W[i] += Fs[k, 1, i]
            if abs(s2) < eps and bad == 0:
                bad = k + 1
            F4 = Fs[k, 3]
            fc[k] = F4[0] - W[5] / (L1 * s2) - (Fs[k, 2, 5] + F4[5] + F4[1] * (c - lc)) * c2 / (c * s2)
            # eq. 69: F_Bc = F*_B0 + U01 (F*_B1 + U1E F_E) + U23 (F*_B3 + U34 F*_B4)
            r[0], r[1], r[2] = c - lc, 0.0, 0.0
            _uf(Id, r, F4, t6)
            for i in range(6):
                t6[i] += Fs[k, 2, i]
            _rz(q1, R)
            r[0] = 0.0
            _uf(R, r, t6, t6b)
            _rz(q[k], R)
            r[0] = L
            _uf(R, r, W, t6)
            for i in range(6):
                FBc[k, i] = Fs[k, 0, i] + t6[i] + t6b[i]
        else:
            _uf(RE[k], rE[k], Fn, W)
            for i in range(6):
                W[i] += Fs[k, 1, i]
            fc[k] = W[0]
            r[0], r[1], r[2] = q[k], 0.0, 0.0
            _uf(Id, r, W, t6)
            for i in range(6):
                FBc[k, i] = Fs[k, 0, i] + t6[i]
        Fn = FBc[k].copy()
    return bad


@njit(cache=True)
def _tool_point(kind, geo, RE, rE, Rc1, pc1, axes, q, qd, V, Vd, Rw, pw, clo, p, J, acc):
    """World tool position p (d,), Jacobian J (d, ns) and Jd qd (d,) on the task ``axes`` at
    (q, qd): the forward recursion at (q, qd) and once per column with the unit rate (the
    arithmetic of :meth:`robot_dynamics.control.vdc.TaskReference.tool_point`)."""
    ns = kind.shape[0]
    d = axes.shape[0]
    z = np.zeros(ns)
    z6 = np.zeros(6)
    _fwd(kind, geo, RE, rE, Rc1, pc1, q, qd, qd, z, z6, z6, V, Vd, Rw, pw, clo)
    R = Rw[ns - 1, 4].copy()
    Vt = V[ns - 1, 4]
    a3 = np.empty(3)
    a3[0] = Vd[ns - 1, 4, 0] + (Vt[4] * Vt[2] - Vt[5] * Vt[1])
    a3[1] = Vd[ns - 1, 4, 1] + (Vt[5] * Vt[0] - Vt[3] * Vt[2])
    a3[2] = Vd[ns - 1, 4, 2] + (Vt[3] * Vt[1] - Vt[4] * Vt[0])
    for i in range(d):
        ax = axes[i]
        p[i] = pw[ns - 1, 4, ax]
        acc[i] = R[ax, 0] * a3[0] + R[ax, 1] * a3[1] + R[ax, 2] * a3[2]
    e = np.zeros(ns)
    for j in range(ns):
        e[:] = 0.0
        e[j] = 1.0
        _fwd(kind, geo, RE, rE, Rc1, pc1, q, z, e, z, z6, z6, V, Vd, Rw, pw, clo)
        for i in range(d):
            ax = axes[i]
            J[i, j] = R[ax, 0] * V[ns - 1, 4, 0] + R[ax, 1] * V[ns - 1, 4, 1] + R[ax, 2] * V[ns - 1, 4, 2]


@njit(cache=True)
def _task_reference(kind, geo, RE, rE, Rc1, pc1, axes, q0, P, tol, it, out):
    """Newton IK of the tool point P[0] from q0 (the steps of TaskReference.ik), then
    qd = J^-1 P[1], qdd = J^-1 (P[2] - Jd qd) into out (3, ns). Returns False if the IK did
    not converge in ``it`` iterations (out untouched)."""
    ns = kind.shape[0]
    d = axes.shape[0]
    V, Vd, Rw, pw, clo = fwd_buffers(ns)
    p = np.empty(d)
    J = np.empty((d, ns))
    acc = np.empty(d)
    z = np.zeros(ns)
    q = q0.copy()
    ok = False
    for _ in range(it):
        _tool_point(kind, geo, RE, rE, Rc1, pc1, axes, q, z, V, Vd, Rw, pw, clo, p, J, acc)
        dq = np.linalg.solve(J, P[0] - p)
        q = q + dq
        if np.abs(dq).max() < tol:
            ok = True
            break
    if not ok:
        return False
    _tool_point(kind, geo, RE, rE, Rc1, pc1, axes, q, z, V, Vd, Rw, pw, clo, p, J, acc)
    qd = np.linalg.solve(J, P[1])
    _tool_point(kind, geo, RE, rE, Rc1, pc1, axes, q, qd, V, Vd, Rw, pw, clo, p, J, acc)
    qdd = np.linalg.solve(J, P[2] - acc)
    for k in range(ns):
        out[0, k] = q[k]
        out[1, k] = qd[k]
        out[2, k] = qdd[k]
    return True


@njit(cache=True)
def _mass_matrix(kind, geo, RE, rE, Rc1, pc1, Mb, q, Mq):
    """Kane assembly M_q = sum_A J_A^T M_A J_A (J_A: partial velocities of every slot)."""
    ns = kind.shape[0]
    J = np.zeros((ns, ns, 6, 6))
    V, Vd, Rw, pw, clo = fwd_buffers(ns)
    z = np.zeros(ns)
    e = np.zeros(ns)
    z6 = np.zeros(6)
    for j in range(ns):
        e[:] = 0.0
        e[j] = 1.0
        _fwd(kind, geo, RE, rE, Rc1, pc1, q, z, e, z, z6, z6, V, Vd, Rw, pw, clo)
        J[j] = V
    for i in range(ns):
        for j in range(i, ns):
            acc = 0.0
            for k in range(ns):
                for a in range(4):
                    for u in range(6):
                        t = 0.0
                        for v in range(6):
                            t += Mb[k, a, u, v] * J[j, k, a, v]
                        acc += J[i, k, a, u] * t
            Mq[i, j] = acc
            Mq[j, i] = acc


# ----------------------------------------------------------------------------- structure
@dataclass
class Segment:
    """One segment (base to tip order). ``kind``: 'revolute' | 'prismatic'.

    Revolute: L, L1, x0, lc [m] (brief 001 par. 2.2), joint names ``joint`` (q_j), ``case_joint``
    (q_j1), ``rod_joint`` (piston prismatic joint, its variable = stroke x) and the URDF offsets
    ``q_vdc = q_urdf + offset``; prismatic: ``joint`` (variable x = q_urdf + offset).
    bodies: 4 tuples (mass [kg], com (3,) [m], I_c (3, 3) [kg m^2]) in the slot frames.
    RE, rE: pose of the driving cut E in T (revolute) or B5 (prismatic).
    """

    kind: str
    name: str
    joint: str
    L: float = 0.0
    L1: float = 0.0
    x0: float = 0.0
    lc: float = 0.0
    case_joint: str | None = None
    rod_joint: str | None = None
    offset: float = 0.0
    case_offset: float = 0.0
    rod_offset: float = 0.0
    sign: float = -1.0
    bodies: list = field(default_factory=list)
    RE: np.ndarray = field(default_factory=lambda: np.eye(3))
    rE: np.ndarray = field(default_factory=lambda: np.zeros(3))
    actuator: dict = field(default_factory=dict)


class Structure:
    """A serial chain of revolute (parallel-serial) and prismatic segments.

    ``segments``: list of :class:`Segment`; ``Rc1``/``pc1``: world pose of the first driven cut
    B_c1 (the base); ``gravity`` (3,) in the world. Methods take the segment coordinates
    ``q`` (ns,) (rad for revolute, m for prismatic) and their rates.
    """

    def __init__(self, segments, Rc1=None, pc1=None, gravity=(0.0, 0.0, -9.81), eps=1e-6, model=None, tool_frame=None):
        if not segments:
            raise StructureError('structure needs at least one segment')
        self.segments = list(segments)
        self.ns = ns = len(segments)
        self.model, self.tool_frame = model, tool_frame
        self.eps = float(eps)
        self.kind = np.array([REV if s.kind == 'revolute' else PRI for s in segments], np.int64)
        self.geo = np.zeros((ns, 4))
        self.RE = np.zeros((ns, 3, 3))
        self.rE = np.zeros((ns, 3))
        self.mb = np.zeros((ns, 4))
        self.cb = np.zeros((ns, 4, 3))
        self.Ib = np.zeros((ns, 4, 3, 3))
        self.Mb = np.zeros((ns, 4, 6, 6))
        for k, s in enumerate(segments):
            if s.kind not in ('revolute', 'prismatic'):
                raise StructureError(f"segment '{s.name}': kind must be 'revolute' or 'prismatic'")
            if s.kind == 'revolute':
                if not (s.L > 0 and s.L1 > 0 and s.x0 > 0 and s.lc >= 0):
                    raise StructureError(f"segment '{s.name}': need L, L1, x0 > 0 and lc >= 0")
            self.geo[k] = (s.L, s.L1, s.x0, s.lc)
            self.RE[k], self.rE[k] = s.RE, s.rE
            nb = 4 if s.kind == 'revolute' else 2
            if len(s.bodies) != nb:
                raise StructureError(f"segment '{s.name}': expected {nb} bodies, got {len(s.bodies)}")
            for a, (m, c, Ic) in enumerate(s.bodies):
                Ic = np.asarray(Ic, float)
                if m < 0 or np.linalg.eigvalsh(0.5 * (Ic + Ic.T)).min() < -1e-12:
                    raise StructureError(f"segment '{s.name}' body {a}: negative mass or inertia")
                self.mb[k, a], self.cb[k, a], self.Ib[k, a] = m, c, Ic
                self.Mb[k, a] = M_A(m, np.asarray(c, float), Ic)
        self.Rc1 = np.eye(3) if Rc1 is None else np.ascontiguousarray(Rc1, dtype=float)
        self.pc1 = np.zeros(3) if pc1 is None else np.ascontiguousarray(pc1, dtype=float)
        self.gravity = np.ascontiguousarray(gravity, dtype=float)
        self._ws()

    @property
    def chain(self):
        """The chain's geometry as the compiled recursions take it: (kind, geo, RE, rE, Rc1, pc1)."""
        return self.kind, self.geo, self.RE, self.rE, self.Rc1, self.pc1

    @property
    def inertia(self):
        """The bodies as the compiled dynamics take them: (Mb, mb, cb, Ib, gravity)."""
        return self.Mb, self.mb, self.cb, self.Ib, self.gravity

    def _ws(self):
        ns = self.ns
        self.V = np.zeros((ns, 6, 6))
        self.Vd = np.zeros((ns, 6, 6))
        self.Rw = np.zeros((ns, 6, 3, 3))
        self.pw = np.zeros((ns, 6, 3))
        self.clo = np.zeros((ns, 12))
        self.Fs = np.zeros((ns, 4, 6))
        self.fc = np.zeros(ns)
        self.FBc = np.zeros((ns, 6))
        self.FE = np.zeros((ns, 6))
        self._z6 = np.zeros(6)
        self._zK = np.zeros((ns, 4, 6, 6))

    def scaled(self, mass=1.0):
        """Copy with every body mass and inertia multiplied by ``mass`` (model mismatch)."""
        import copy

        segs = []
        for s in self.segments:
            s2 = copy.copy(s)
            s2.bodies = [(m * mass, np.asarray(c, float), np.asarray(I, float) * mass) for m, c, I in s.bodies]
            segs.append(s2)
        return Structure(segs, self.Rc1, self.pc1, self.gravity, self.eps, self.model, self.tool_frame)

    # ------------------------------------------------------------------ kinematics
    @property
    def revolute(self):
        """Boolean mask (ns,) of the revolute segments."""
        return self.kind == REV

    def check_q(self, q):
        """Validate q (ns,): finite, no toggle point (|sin q2| >= eps), Jx != 0."""
        q = np.ascontiguousarray(q, dtype=float)
        if q.shape != (self.ns,) or not np.all(np.isfinite(q)):
            raise StructureError(f'q must be {self.ns} finite values, got {q!r}')
        for k, s in enumerate(self.segments):
            if s.kind == 'revolute':
                cl = closure(s.L, s.L1, q[k])
                if abs(math.sin(q[k])) < self.eps or abs(math.sin(cl['q2'])) < self.eps:
                    raise SingularConfigurationError(
                        f"segment '{s.name}': singular configuration q = {q[k]:.6g} rad "
                        f'(sin q = {math.sin(q[k]):.2e}, sin q2 = {math.sin(cl["q2"]):.2e})'
                    )
        return q

    def stroke(self, q):
        """Cylinder strokes x (ns,) [m] (revolute: c - x0; prismatic: q)."""
        q = np.asarray(q, float)
        out = q.copy()
        for k, s in enumerate(self.segments):
            if s.kind == 'revolute':
                L, L1 = s.L, s.L1
                out[k] = math.sqrt(L * L + L1 * L1 + 2 * L * L1 * math.cos(q[k])) - s.x0
        return out

    def jx(self, q):
        """dx/dq (ns,) (eq. 21; 1 for prismatic)."""
        q = np.asarray(q, float)
        out = np.ones(self.ns)
        for k, s in enumerate(self.segments):
            if s.kind == 'revolute':
                out[k] = closure(s.L, s.L1, q[k])['Jx']
        return out

    def q_from_stroke(self, x):
        """Inverse closure: segment coordinates from strokes (branch = ``Segment.sign``)."""
        out = np.array(x, float)
        for k, s in enumerate(self.segments):
            if s.kind == 'revolute':
                out[k] = q_from_length(s.L, s.L1, x[k] + s.x0, s.sign)
        return out

    def forward(self, q, qd, qdd=None, V0=None, Vd0=None, qd_use=None):
        """Run the forward recursion; fills ``self.V, Vd, Rw, pw, clo`` (see ``_fwd``).

        ``qd_use`` (default qd) is the rate propagated, ``qd`` the measured one."""
        ns = self.ns
        q = np.ascontiguousarray(q, dtype=float)
        qd = np.ascontiguousarray(qd, dtype=float)
        qdd = np.zeros(ns) if qdd is None else np.ascontiguousarray(qdd, dtype=float)
        qu = qd if qd_use is None else np.ascontiguousarray(qd_use, dtype=float)
        V0 = self._z6 if V0 is None else np.ascontiguousarray(V0, dtype=float)
        Vd0 = self._z6 if Vd0 is None else np.ascontiguousarray(Vd0, dtype=float)
        _fwd(*self.chain, q, qd, qu, qdd, V0, Vd0, self.V, self.Vd, self.Rw, self.pw, self.clo)
        return self

    def tool_pose(self, q):
        """World pose (R (3, 3), p (3,)) of the tool frame D (= E of the last segment)."""
        self.forward(q, np.zeros(self.ns))
        return self.Rw[-1, 4].copy(), self.pw[-1, 4].copy()

    # ------------------------------------------------------------------ dynamics
    def inverse_dynamics(self, q, qd, qdd, FD=None, V0=None, Vd0=None):
        """Newton-Euler inverse dynamics (brief 001 par. 3.1).

        FD (6,): wrench the manipulator exerts on the environment at the tool frame D, in D.
        V0, Vd0 (6,): velocity/acceleration of B_c1 in B_c1 (moving base; default fixed).
        Returns dict: fc (ns,) cylinder forces [N] (eq. 68; prismatic f_ct), tau (ns,)
        generalized forces Jx fc, FBc (ns, 6) driven-cut wrenches (eq. 69), FE (ns, 6), Fs
        (ns, 4, 6) body net wrenches F*, and the kinematics (V, Vd, Rw, pw, clo copies).
        """
        self.check_q(q)
        self.forward(q, qd, qdd, V0, Vd0)
        _body_wrenches(
            self.Mb, self.mb, self.cb, self.Ib, self._zK, self.gravity, self.V, self.Vd, self.V, self.Rw, False, self.Fs
        )
        FD = self._z6 if FD is None else np.ascontiguousarray(FD, dtype=float)
        bad = _bwd(
            self.kind,
            self.geo,
            self.RE,
            self.rE,
            np.ascontiguousarray(q, float),
            self.clo,
            self.Fs,
            FD,
            self.fc,
            self.FBc,
            self.FE,
            self.eps,
        )
        if bad:
            raise SingularConfigurationError(f"segment '{self.segments[bad - 1].name}': toggle point")
        return dict(
            fc=self.fc.copy(),
            tau=self.fc * self.clo[:, 3],
            FBc=self.FBc.copy(),
            FE=self.FE.copy(),
            Fs=self.Fs.copy(),
            V=self.V.copy(),
            Vd=self.Vd.copy(),
            Rw=self.Rw.copy(),
            pw=self.pw.copy(),
            clo=self.clo.copy(),
        )

    def mass_matrix(self, q):
        """Joint-space inertia M_q (ns, ns) by the Kane assembly sum J_A^T M_A J_A."""
        Mq = np.zeros((self.ns, self.ns))
        _mass_matrix(*self.chain, self.Mb, np.ascontiguousarray(q, float), Mq)
        return Mq

    def energy(self, q, qd):
        """(kinetic, potential) energy [J] of the structure (fixed base)."""
        self.forward(q, qd)
        T = 0.0
        P = 0.0
        for k in range(self.ns):
            for a in range(4):
                V = self.V[k, a]
                T += 0.5 * V @ self.Mb[k, a] @ V
                pc = self.pw[k, a] + self.Rw[k, a] @ self.cb[k, a]
                P -= self.mb[k, a] * self.gravity @ pc
        return T, P


# ----------------------------------------------------------------------------- from URDF
def _planar_angle(R, what):
    """Angle of a rotation about z; raises if R is not a z-rotation."""
    if abs(R[2, 2] - 1.0) > 1e-9 or np.abs(R[2, :2]).max() > 1e-9:
        raise StructureError(f'{what}: rotation is not about the loop-plane normal z')
    return math.atan2(R[1, 0], R[0, 0])


def _body(model, j, Rb, pb):
    """Inertia of model body j expressed in a frame (Rb, pb) given in joint frame j."""
    m = float(model.mass[j])
    c = Rb.T @ (model.com[j] - pb)
    Ic = Rb.T @ model.inertia_com[j] @ Rb
    return (m, c, Ic)


def _frame_in(model, fname, j, what):
    fi = model.frame_index(fname)
    if int(model.frame_parent[fi]) != j:
        raise StructureError(
            f"{what}: frame '{fname}' must be attached to the body of joint "
            f"'{model.joint_names[j] if j >= 0 else 'world'}'"
        )
    return model.frame_R[fi], model.frame_p[fi]


def structure_from_model(model, tool_frame=None, eps=1e-6):
    """Build the :class:`Structure` from the URDF model and the sidecar ``actuators`` block.

    Each ``hydraulic_cylinder`` actuator (in base-to-tip order) defines one segment:

    * ``segment: revolute`` with ``joint`` (passive revolute q_j), ``case_joint`` (revolute
      q_j1, same parent body as ``joint``), ``rod_joint`` (prismatic child of ``case_joint``,
      the piston; its variable is the stroke x) and ``rod_eye`` (frame on the rod body at the
      pivot q_j2); ``eye`` (frame on the body of ``joint`` at q_j2). The loop is cut between
      ``rod_eye`` and ``eye`` (a revolute loop of the sidecar).
    * ``segment: prismatic`` with ``joint`` (prismatic, the telescopic extension).

    All revolute axes of a segment must be parallel to the z axis of their frames (planar loop).
    The body of ``joint`` (everything rigidly attached) becomes B_1j (B_5j), ``case_joint`` B_3j,
    ``rod_joint`` B_4j; B_0j is massless (the preceding link's mass is in the previous segment).
    ``tool_frame`` (default: the sidecar key ``actuators.<last>.tool_frame``) is the frame D.
    """
    model.require_one_dof('virtual decomposition control')
    acts = [(n, a) for n, a in model.actuators.items() if a.get('type') == 'hydraulic_cylinder']
    if not acts:
        raise StructureError(f"{model.loops_source}: actuators: no 'hydraulic_cylinder' entry")
    segs = []
    for name, a in acts:
        key = f'{model.loops_source}: actuators.{name}'
        kind = a.get('segment', 'revolute')
        if kind not in ('revolute', 'prismatic'):
            raise StructureError(f"{key}.segment: must be 'revolute' or 'prismatic', got {kind!r}")
        for k in ['joint', 'case_joint', 'rod_joint', 'rod_eye', 'eye'] if kind == 'revolute' else ['joint']:
            if not isinstance(a.get(k), str):
                raise StructureError(f'{key}.{k}: required joint/frame name is missing')
        try:
            J = model.joint_index(a['joint'])
        except KeyError as exc:
            raise StructureError(f'{key}.joint: {exc}') from None
        if kind == 'revolute':
            try:
                C = model.joint_index(a['case_joint'])
                P = model.joint_index(a['rod_joint'])
            except KeyError as exc:
                raise StructureError(f'{key}: {exc}') from None
            if model.joint_types[J] != 0 or model.joint_types[C] != 0 or model.joint_types[P] != 1:
                raise StructureError(f'{key}: joint and case_joint must be revolute, rod_joint prismatic')
            if model.parents[J] != model.parents[C]:
                raise StructureError(f'{key}: joint and case_joint must have the same parent body')
            if model.parents[P] != C:
                raise StructureError(f'{key}.rod_joint: must be a child of case_joint')
            for jj in (J, C):
                if abs(abs(model.axes[jj][2]) - 1) > 1e-9:
                    raise StructureError(f"{key}: axis of '{model.joint_names[jj]}' must be +-z")
            if model.axes[J][2] < 0 or model.axes[C][2] < 0:
                raise StructureError(f'{key}: use axis 0 0 1 for joint and case_joint')
            pJ, pC = model.p_fixed[J], model.p_fixed[C]
            RJ, RC = model.R_fixed[J], model.R_fixed[C]
            d = pJ - pC
            L = float(np.linalg.norm(d))
            if L < 1e-9:
                raise StructureError(f'{key}: case_joint and joint pivots coincide')
            nz = RJ[:, 2]
            if abs(nz @ RC[:, 2] - 1) > 1e-9 or abs(nz @ d) > 1e-9 * L:
                raise StructureError(
                    f'{key}: joint and case_joint axes must be parallel and the pivots in one loop plane'
                )
            ex = d / L
            R0 = np.column_stack([ex, np.cross(nz, ex), nz])  # B0 in the parent frame
            thJ = _planar_angle(R0.T @ RJ, f'{key}.joint')
            thC = _planar_angle(R0.T @ RC, f'{key}.case_joint')
            Re, pe = _frame_in(model, a['eye'], J, f'{key}.eye')
            alpha = math.atan2(pe[1], pe[0])
            L1 = float(math.hypot(pe[0], pe[1]))
            if abs(pe[2]) > 1e-9:
                raise StructureError(f'{key}.eye: must lie in the loop plane (z = 0 of joint)')
            aP = model.axes[P]
            if abs(aP[2]) > 1e-9:
                raise StructureError(f'{key}.rod_joint: axis must lie in the loop plane')
            beta = math.atan2(aP[1], aP[0])
            pP = model.p_fixed[P]
            if np.linalg.norm(np.cross(pP, aP)) > 1e-9:
                raise StructureError(f'{key}.rod_joint: origin must lie on the cylinder axis')
            Rr, pr = _frame_in(model, a['rod_eye'], P, f'{key}.rod_eye')
            RB3c = rz(beta)  # B3 in the case-joint frame
            RB4P = model.R_fixed[P].T @ RB3c  # B4 orientation in rod frame
            _planar_angle(RB4P, f'{key}.rod_joint')
            pr4 = RB4P.T @ pr  # rod eye in B4 (origin = P)
            if abs(pr4[1]) > 1e-9 or abs(pr4[2]) > 1e-9:
                raise StructureError(f'{key}.rod_eye: must lie on the cylinder axis')
            lc = float(pr4[0])
            x0 = float(pP @ aP) + lc
            seg = Segment(
                'revolute',
                name,
                a['joint'],
                L=L,
                L1=L1,
                x0=x0,
                lc=lc,
                case_joint=a['case_joint'],
                rod_joint=a['rod_joint'],
                offset=thJ + alpha,
                case_offset=thC + beta,
                rod_offset=0.0,
                sign=float(a.get('branch', -1.0)),
                actuator=dict(a),
            )
            RB1 = rz(alpha)
            seg.bodies = [
                (0.0, np.zeros(3), np.zeros((3, 3))),
                _body(model, J, RB1, np.zeros(3)),
                _body(model, C, RB3c, np.zeros(3)),
                _body(model, P, RB4P, np.zeros(3)),
            ]
            seg._RB0_parent, seg._pB0_parent = R0, pC
            seg._RT_J, seg._pT_J = RB1, RB1 @ np.array([L1, 0.0, 0.0])
        else:
            if model.joint_types[J] != 1:
                raise StructureError(f'{key}.joint: a prismatic segment needs a prismatic joint')
            RJ, pJ = model.R_fixed[J], model.p_fixed[J]
            ax = RJ @ model.axes[J]  # slide axis in the parent frame
            par = int(model.parents[J])
            zc = np.array([0.0, 0.0, 1.0])
            zc = zc - (zc @ ax) * ax
            if np.linalg.norm(zc) < 1e-6:
                raise StructureError(f'{key}.joint: slide axis must not be the parent z axis')
            zc /= np.linalg.norm(zc)
            R0 = np.column_stack([ax, np.cross(zc, ax), zc])
            RB5J = RJ.T @ R0  # B5 in the joint frame
            seg = Segment('prismatic', name, a['joint'], offset=0.0, actuator=dict(a))
            seg.bodies = [(0.0, np.zeros(3), np.zeros((3, 3))), _body(model, J, RB5J, np.zeros(3))]
            seg._RB0_parent, seg._pB0_parent = R0, pJ
            seg._RT_J, seg._pT_J = RB5J, np.zeros(3)
            seg._parent = par
        seg._J = J
        segs.append(seg)
    # E frames: the next segment's B0 (or the tool frame) expressed in T / B5
    for k, seg in enumerate(segs):
        J = seg._J
        if k + 1 < len(segs):
            nxt = segs[k + 1]
            par = int(model.parents[nxt._J])
            if par != J:
                raise StructureError(
                    f'{model.loops_source}: actuators.{nxt.name}: segment must start on the body of '
                    f"'{seg.joint}' (joint parent is "
                    f"'{model.joint_names[par] if par >= 0 else 'world'}')"
                )
            RB, pB = nxt._RB0_parent, nxt._pB0_parent
        else:
            tf = tool_frame or seg.actuator.get('tool_frame')
            if not isinstance(tf, str):
                raise StructureError(
                    f'{model.loops_source}: actuators.{seg.name}.tool_frame: the last segment needs a tool frame'
                )
            RB, pB = _frame_in(model, tf, J, f'{model.loops_source}: actuators.{seg.name}.tool_frame')
            tool_frame = tf
        seg.RE = seg._RT_J.T @ RB
        seg.rE = seg._RT_J.T @ (pB - seg._pT_J)
    first = segs[0]
    par = int(model.parents[first._J])
    if par >= 0:
        raise StructureError(
            f'{model.loops_source}: actuators.{first.name}: the first segment must start on the root link'
        )
    st = Structure(
        segs,
        Rc1=first._RB0_parent,
        pc1=first._pB0_parent,
        gravity=model.gravity,
        eps=eps,
        model=model,
        tool_frame=tool_frame,
    )
    return st


def full_q(st, q, qd=None, qdd=None):
    """URDF joint vectors (q, qd, qdd) (model.nq,) from segment coordinates (closure applied;
    joints not in the structure are 0)."""
    m = st.model
    ns = st.ns
    qd = np.zeros(ns) if qd is None else qd
    qdd = np.zeros(ns) if qdd is None else qdd
    Q, Qd, Qdd = np.zeros(m.nq), np.zeros(m.nq), np.zeros(m.nq)
    for k, s in enumerate(st.segments):
        J = m.joint_index(s.joint)
        Q[J], Qd[J], Qdd[J] = q[k] - s.offset, qd[k], qdd[k]
        if s.kind == 'revolute':
            cl = closure(s.L, s.L1, q[k], qd[k], qdd[k])
            C, P = m.joint_index(s.case_joint), m.joint_index(s.rod_joint)
            Q[C], Qd[C], Qdd[C] = cl['q1'] - s.case_offset, cl['q1d'], cl['q1dd']
            Q[P], Qd[P], Qdd[P] = cl['c'] - s.x0, cl['cd'], cl['cdd']
    return Q, Qd, Qdd


def segment_q(st, Q, Qd=None):
    """Segment coordinates (q, qd) (ns,) from URDF joint vectors."""
    m = st.model
    q = np.array([Q[m.joint_index(s.joint)] + s.offset for s in st.segments])
    qd = None if Qd is None else np.array([Qd[m.joint_index(s.joint)] for s in st.segments])
    return q, qd
