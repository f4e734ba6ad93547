"""Time derivatives of the tree's inverse dynamics: tau, d tau/dt, d^2 tau/dt^2 along a motion.

``rnea_time_derivatives(model, q, qd, qdd, qddd, qdddd)`` returns ``tau(t)`` of
:func:`robot_dynamics.rnea` and its first and second time derivatives at the instant where the
joint motion has the given derivatives (q .. q''''; order 1 needs q''' only). It is the serial
(tree) counterpart of the PKM route's u, u', u'' (seed 004: the 2nd-order recursive inverse
dynamics feeds the SEA flatness law and the d2 feed-forward), O(n) in the joints.

Method: the body-frame Newton-Euler recursion of ``robot_dynamics.algorithms._tree_kernels._rnea_one``, carried
out on truncated Taylor jets (each scalar x carries x, x', x'' in one array; products by
Leibniz's rule, sin/cos of a joint angle by their derivative recursions). No finite
differences, no symbolic expansion: d^k tau/dt^k is exact to rounding.

Checked (``test/algorithms/test_rnea_derivatives.py``) against Pinocchio: d tau/dt = (d tau/d q) q' +
(d tau/d qd) q'' + M q''' (``computeRNEADerivatives``, analytic), and d^2 tau/dt^2 against
central differences of that exact d tau/dt along the motion; and against 4th-order central
differences of our own :func:`rnea` along a quartic joint motion.

Shapes: q .. q'''' (n,) or (S, n) (a batch of S instants, evaluated together); returns
(order + 1, n) or (order + 1, S, n): ``[tau, tau', tau'']`` [N m | N, per s, per s^2].
Frames/conventions: as :func:`robot_dynamics.rnea` (joint order ``model.joint_names``, gravity
``model.gravity`` unless given).
"""

from __future__ import annotations

from math import comb

import numpy as np

from robot_dynamics.spatial.batch import as_batch, same_batch
from robot_dynamics.errors import InputError

__all__ = ['rnea_time_derivatives']


def _mul(a, b):
    """Jet product (Leibniz): a, b (..., K+1, S) -> (..., K+1, S), entry k = d^k(ab)/dt^k."""
    K = a.shape[-2] - 1
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    for k in range(K + 1):
        acc = a[..., 0, :] * b[..., k, :]
        for j in range(1, k + 1):
            acc = acc + comb(k, j) * a[..., j, :] * b[..., k - j, :]
        out[..., k, :] = acc
    return out


def _sincos(x):
    """sin and cos jets of the jet x (K+1, S)."""
    K = x.shape[0] - 1
    s, c = np.empty_like(x), np.empty_like(x)
    s[0], c[0] = np.sin(x[0]), np.cos(x[0])
    for k in range(1, K + 1):  # s' = c x',  c' = -s x'  (Leibniz on the (k-1)-th)
        s[k] = sum(comb(k - 1, j) * c[j] * x[k - j] for j in range(k))
        c[k] = -sum(comb(k - 1, j) * s[j] * x[k - j] for j in range(k))
    return s, c


def _cross(a, b):
    """Jet cross product of 3-vectors a, b (3, K+1, S)."""
    i, j = [1, 2, 0], [2, 0, 1]
    return _mul(a[i], b[j]) - _mul(a[j], b[i])


def _rt(R, u):
    """R^T u for a jet matrix R (3, 3, K+1, S) and jet vector u (3, K+1, S)."""
    return _mul(R, u[:, None]).sum(axis=0)


def _r(R, u):
    """R u."""
    return _mul(R, u[None, :]).sum(axis=1)


def rnea_time_derivatives(model, q, qd, qdd, qddd, qdddd=None, order=2, gravity=None):
    """[tau, d tau/dt, d^2 tau/dt^2] of the tree inverse dynamics along a joint motion.

    Parameters
    ----------
    model : Model
    q, qd, qdd, qddd, qdddd : array_like (n,) or (S, n)
        Joint positions [rad | m] and their time derivatives 1..4 (``qdddd`` only for
        ``order`` 2), order ``model.joint_names``.
    order : 1 or 2
    gravity : array_like (3,), optional (default ``model.gravity``, world frame)

    Returns
    -------
    ndarray (order + 1, n) or (order + 1, S, n)
        Row 0 equals :func:`robot_dynamics.rnea` (no external wrenches).
    """
    model.require_one_dof('rnea_time_derivatives')
    if order not in (1, 2):
        raise InputError(f'order must be 1 or 2, got {order!r}')
    if order == 2 and qdddd is None:
        raise InputError('order 2 needs qdddd (the 4th time derivative of q)')
    n = model.nq
    Q, single = as_batch(q, n, 'q')
    derivs = [Q] + [
        same_batch(Q, as_batch(x, n, name)[0], name, single)
        for x, name in ((qd, 'qd'), (qdd, 'qdd'), (qddd, 'qddd'), (qdddd, 'qdddd'))[: order + 2]
    ]
    D = np.stack(derivs)  # (order + 3, S, n): q, q', ..., q^(order+2)
    if not np.all(np.isfinite(D)):
        raise InputError('rnea_time_derivatives: non-finite joint motion')
    K, S = order, Q.shape[0]
    g = np.asarray(model.gravity if gravity is None else gravity, float)
    geo, par, ine = model._geo, model._par, model._ine
    qj = lambda i, s: D[s : s + K + 1, :, i]  # noqa: E731  jet of the s-th derivative of q_i
    V = np.zeros((n, 6, K + 1, S))  # body velocity (linear, angular) jets
    A = np.zeros((n, 6, K + 1, S))  # body acceleration jets
    F = np.zeros((n, 6, K + 1, S))
    Rs, ps = [], []
    zero = np.zeros((3, K + 1, S))
    grav = np.zeros((3, K + 1, S))
    grav[:, 0, :] = -g[:, None]  # base acceleration = -gravity (constant)
    for i in range(n):
        Ff = geo[i, 0:9].reshape(3, 3)
        p0 = geo[i, 9:12]
        ax = geo[i, 12:15]
        rev = geo[i, 15] == 0.0
        R = np.zeros((3, 3, K + 1, S))
        p = np.zeros((3, K + 1, S))
        if rev:
            s, c = _sincos(qj(i, 0))
            t = -c
            t[0] += 1.0  # 1 - cos
            a0, a1, a2 = ax
            J = [
                [c + t * a0 * a0, t * a0 * a1 - s * a2, t * a0 * a2 + s * a1],
                [t * a0 * a1 + s * a2, c + t * a1 * a1, t * a1 * a2 - s * a0],
                [t * a0 * a2 - s * a1, t * a1 * a2 + s * a0, c + t * a2 * a2],
            ]
            for r in range(3):
                for col in range(3):
                    R[r, col] = Ff[r, 0] * J[0][col] + Ff[r, 1] * J[1][col] + Ff[r, 2] * J[2][col]
            p[:, 0, :] = p0[:, None]
        else:
            R[:, :, 0, :] = Ff[:, :, None]
            p[:, 0, :] = p0[:, None]
            p += (Ff @ ax)[:, None, None] * qj(i, 0)[None]
        Rs.append(R)
        ps.append(p)
        lam = par[i]
        if lam < 0:
            vl, wl, bl, al = zero, zero, grav, zero
        else:
            vl, wl, bl, al = V[lam, :3], V[lam, 3:], A[lam, :3], A[lam, 3:]
        u = vl + _cross(wl, p)
        cc = bl + _cross(al, p)
        v, w, b, e = _rt(R, u), _rt(R, wl), _rt(R, cc), _rt(R, al)
        axj = ax[:, None, None]
        sd, sdd = qj(i, 1)[None], qj(i, 2)[None]
        sv = axj * sd  # joint velocity screw part (3, K+1, S)
        if rev:
            w = w + sv
            b = b + _cross(v, sv)
            e = e + _cross(w, sv) + axj * sdd
        else:
            v = v + sv
            b = b + _cross(w, sv) + axj * sdd
        V[i, :3], V[i, 3:], A[i, :3], A[i, 3:] = v, w, b, e
        m = geo[i, 16]
        h = np.broadcast_to(geo[i, 17:20][:, None, None], (3, K + 1, S)).copy()
        h[:, 1:, :] = 0.0  # constant first moment
        I = ine[i]
        lin = m * v - _cross(h, w)
        ang = _cross(h, v) + np.einsum('rc,ckS->rkS', I, w)
        f = m * b - _cross(h, e) + _cross(w, lin)
        nn = _cross(h, b) + np.einsum('rc,ckS->rkS', I, e) + _cross(v, lin) + _cross(w, ang)
        F[i, :3], F[i, 3:] = f, nn
    tau = np.zeros((K + 1, S, n))
    for i in range(n - 1, -1, -1):
        ax = geo[i, 12:15]
        part = F[i, 3:] if geo[i, 15] == 0.0 else F[i, :3]
        tau[:, :, i] = np.tensordot(ax, part, axes=(0, 0))
        lam = par[i]
        if lam >= 0:
            gf, tf = _r(Rs[i], F[i, :3]), _r(Rs[i], F[i, 3:])
            F[lam, :3] += gf
            F[lam, 3:] += tf + _cross(ps[i], gf)
    return tau[:, 0, :] if single else tau
