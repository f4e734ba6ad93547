"""Tree (spanning-tree) dynamics: RNEA, CRBA, forward dynamics, gravity and bias terms.

Equations of motion of the open tree, as in Pinocchio::

    M(q) qdd + C(q, qd) qd + g(q) = tau + sum_i J_i(q)^T f_ext_i

All functions accept one sample (arrays of shape (n,)) or a batch with a leading axis
(N, n) and return (n,)/(n, n) or (N, n)/(N, n, n) respectively. Units are SI (rad, m, N, N m).
External wrenches ``f_ext`` follow Pinocchio: an array (n, 6) (or (N, n, 6)) whose row i is the
wrench (force first, then moment) applied to body i, expressed in joint frame i and taken
about its origin. Use :func:`robot_dynamics.algorithms.kinematics.frame_wrench_to_joint` to build it from
a wrench at a frame.

Loop closures are ignored here (see :mod:`robot_dynamics.algorithms.constraints` and the closed-chain
modules); these are the tree quantities every closed-chain method builds on.
"""

from __future__ import annotations

import numpy as np

from robot_dynamics.algorithms import _tree_kernels as K
from robot_dynamics.spatial.batch import as_batch, same_batch
from robot_dynamics.errors import InputError, SingularMassMatrixError

__all__ = [
    'rnea',
    'crba',
    'forward_dynamics',
    'gravity_torques',
    'nonlinear_effects',
    'kinetic_energy',
    'potential_energy',
]

_EMPTY_FEXT = np.zeros((1, 1, 6))
_F64 = np.dtype(np.float64)


def _state_batch(model, q, qd, x, x_name, f_ext):
    """(Q, QD, X, FE, has_fext, single): q, qd and x (qdd or tau) as (S, nq) batches of one
    size S (q: (S, nq), the others (S, nv)), and the external wrenches as :func:`_fext` gives them."""
    n = model.nv
    Q, single = as_batch(q, model.nq, 'q')
    QD = same_batch(Q, as_batch(qd, n, 'qd')[0], 'qd', single)
    X = same_batch(Q, as_batch(x, n, x_name)[0], x_name, single)
    FE, has = _fext(model, f_ext, Q.shape[0])
    return Q, QD, X, FE, has, single


def _plain_single(model, q, *vs):
    """(1, nq) and (1, nv) float64 views of one sample when q and every v are plain 1-D float64
    arrays of the right sizes (the common single call, checked cheaply), else None."""
    f64 = _F64
    if type(q) is not np.ndarray or q.dtype is not f64 or q.shape != model._shape_q:
        return None
    shape = model._shape_v
    for v in vs:
        if type(v) is not np.ndarray or v.dtype is not f64 or v.shape != shape:
            return None
    return (q[None], *(v[None] for v in vs))


def _fext(model, f_ext, N):
    if f_ext is None:
        return _EMPTY_FEXT, False
    F = np.asarray(f_ext, dtype=np.float64)
    n = model.nv
    if F.shape == (n, 6):
        F = F.reshape(1, n, 6)
    if F.ndim != 3 or F.shape[1:] != (n, 6) or F.shape[0] not in (1, N):
        raise InputError(f'f_ext must have shape ({n}, 6) or (N, {n}, 6), got {F.shape}')
    if F.shape[0] != N:
        F = np.broadcast_to(F, (N, n, 6))
    return np.ascontiguousarray(F), True


def _grav(model, gravity):
    if gravity is None:
        return model.gravity
    g = np.asarray(gravity, dtype=np.float64)
    if g.shape != (3,) or not np.all(np.isfinite(g)):
        raise InputError(f'gravity must be a finite (3,) vector, got {gravity!r}')
    return g


def rnea(model, q, qd, qdd, f_ext=None, gravity=None):
    """Recursive Newton-Euler inverse dynamics of the tree.

    Parameters
    ----------
    model : Model
    q : array_like, (nq,) or (N, nq)
        Joint positions [rad | m] (Pinocchio's layout: quaternions (x, y, z, w) for multi-DOF joints).
    qd, qdd : array_like, (nv,) or (N, nv)
        Velocities and accelerations (order ``model.joint_names``; a multi-DOF joint's in its
        child frame, as Pinocchio's).
    f_ext : array_like (nv, 6) or (N, nv, 6), optional
        External wrench on the body of each velocity coordinate in its joint frame (Pinocchio's
        convention; a multi-DOF joint's coordinates share its frame).
    gravity : array_like (3,), optional
        Overrides ``model.gravity`` (world frame, m/s^2).

    Returns
    -------
    tau : ndarray (n,) or (N, n)
        ``M qdd + C qd + g - sum J^T f_ext`` [N m | N].

    Example
    -------
    >>> tau = rnea(model, q, np.zeros(model.nq), np.zeros(model.nq))   # gravity torques
    """
    one = _plain_single(model, q, qd, qdd) if f_ext is None else None
    if one is not None:  # (the same kernel, without the general argument handling)
        out = np.empty((1, model.nv))
        if K.rnea_batch(model._par, model._geo, model._ine, *one, _EMPTY_FEXT, False, _grav(model, gravity), out):
            raise InputError('rnea: q, qd, qdd or f_ext contains non-finite values')
        return out[0]
    Q, QD, QDD, FE, has, single = _state_batch(model, q, qd, qdd, 'qdd', f_ext)
    out = np.empty_like(QD)
    st = K.rnea_batch(model._par, model._geo, model._ine, Q, QD, QDD, FE, has, _grav(model, gravity), out)
    if st:
        raise InputError('rnea: q, qd, qdd or f_ext contains non-finite values')
    return out[0] if single else out


def crba(model, q):
    """Composite-rigid-body algorithm: joint-space inertia matrix M(q).

    q : (nq,) or (N, nq). Returns M (nv, nv) or (N, nv, nv), symmetric positive semi-definite
    (definite unless a joint drives no inertia).
    """
    n = model.nv
    one = _plain_single(model, q)
    Q, single = (one[0], True) if one is not None else as_batch(q, model.nq, 'q')
    out = np.zeros((Q.shape[0], n, n))
    if K.crba_batch(model._par, model._geo, model._ine, Q, out):
        raise InputError('crba: q contains non-finite values')
    return out[0] if single else out


def forward_dynamics(model, q, qd, tau, f_ext=None, gravity=None, rel_tol=1e-12):
    """Tree forward dynamics ``qdd = M^-1 (tau - C qd - g + sum J^T f_ext)``.

    CRBA + RNEA bias + Cholesky, all in one compiled pass. Shapes as :func:`rnea`.

    Raises
    ------
    SingularMassMatrixError
        When a Cholesky pivot of M is not positive (relative tolerance ``rel_tol``): the named
        joint moves no inertia (e.g. it carries only massless links).
    """
    n = model.nv
    one = _plain_single(model, q, qd, tau) if f_ext is None else None
    if one is not None:
        Q, QD, TAU, FE, has, single = *one, _EMPTY_FEXT, False, True
    else:
        Q, QD, TAU, FE, has, single = _state_batch(model, q, qd, tau, 'tau', f_ext)
    out = np.empty_like(QD)
    Mw = np.empty((n, n))
    st = K.fd_batch(model._par, model._geo, model._ine, Q, QD, TAU, FE, has, _grav(model, gravity), out, Mw, rel_tol)
    if st == 1:
        raise InputError('forward_dynamics: q, qd, tau or f_ext contains non-finite values')
    if st >= 2:
        if Q.shape[0] > 1:  # the failing sample's own call names the joint
            for k in range(Q.shape[0]):
                forward_dynamics(model, Q[k], QD[k], TAU[k], FE[k] if has else None, gravity, rel_tol)
        # the factorization runs from the leaves: name the top of the subtree that moves nothing
        k = st - 2
        Mk = crba(model, Q[0])
        tol = rel_tol * max(float(np.max(np.diag(Mk))), 1e-300)
        while model.parents[k] >= 0 and Mk[model.parents[k], model.parents[k]] <= tol:
            k = int(model.parents[k])
        j = model.joint_names[k]
        raise SingularMassMatrixError(
            j,
            f"forward_dynamics: the joint-space inertia matrix of '{model.name}' is singular "
            f"at joint '{j}' (it moves no inertia along its axis, e.g. only massless links); "
            f'give its subtree mass/inertia or constrain it',
        )
    return out[0] if single else out


def gravity_torques(model, q, gravity=None):
    """Generalized gravity g(q) = rnea(q, 0, 0), shape (n,) or (N, n)."""
    Q = np.asarray(q, dtype=np.float64)
    z = np.zeros(Q.shape[:-1] + (model.nv,))
    return rnea(model, Q, z, z, gravity=gravity)


def nonlinear_effects(model, q, qd, gravity=None):
    """Bias forces h(q, qd) = C(q, qd) qd + g(q) = rnea(q, qd, 0)."""
    QD = np.asarray(qd, dtype=np.float64)
    return rnea(model, q, QD, np.zeros_like(QD), gravity=gravity)


def kinetic_energy(model, q, qd):
    """T = 1/2 qd^T M(q) qd [J], (,) or (N,)."""
    M = crba(model, q)
    QD = np.asarray(qd, dtype=np.float64)
    return 0.5 * np.einsum('...i,...ij,...j->...', QD, M, QD)


def potential_energy(model, q, gravity=None):
    """U = -sum_i m_i g . c_i (world COM positions) [J], zero at the world origin."""
    from robot_dynamics.algorithms.kinematics import joint_placements

    g = _grav(model, gravity)
    R, p = joint_placements(model, q)
    c = p + np.einsum('...nij,nj->...ni', R, model.com)
    return -np.einsum('n,...ni,i->...', model.mass, c, g)
