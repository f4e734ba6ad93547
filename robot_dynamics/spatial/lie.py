"""SO(3) / SE(3) Lie-group utilities in pure NumPy, batched over leading axes.

Conventions
-----------
* **Batching.** Every function accepts arrays with an arbitrary leading shape
  ``(...)`` followed by the trailing shape given in its docstring (``(..., 3)``,
  ``(..., 3, 3)``, ``(..., 6)``, ``(..., 4, 4)``, ``(..., 6, 6)``); the result keeps
  the leading shape.  A single sample (no leading axes) works too.  Results are
  ``float64``.  No Python loop runs over the batch.
* **Input checking.** A wrong trailing shape, a non-real dtype or a non-finite
  entry (NaN / inf) raises ``ValueError``.  Orthogonality of rotation matrices
  and the bottom row ``[0, 0, 0, 1]`` of homogeneous matrices are *not* checked
  (the bottom row is ignored).
* **Skew matrices.** ``hat(w) @ x == cross(w, x)``.  ``vee`` returns the vector of
  the skew-symmetric part, ``vee(W) = vee((W - W^T) / 2)``, so it is the exact
  inverse of ``hat`` and the orthogonal projection onto so(3) otherwise.
* **Twists and wrenches are 6-vectors ordered LINEAR FIRST**, as in Pinocchio:
  twist ``V = (v, w)`` (linear velocity, angular velocity), wrench
  ``F = (f, tau)`` (force, torque).
* **SE(3) elements are 4x4 homogeneous matrices** ``T = [[R, p], [0, 1]]``.
  ``hat6(V) = [[hat(w), v], [0, 0]]`` is the se(3) matrix of a twist.
* **exp / log** are the group exponential and its principal inverse:
  ``exp_se3((v, w)) = [[exp_so3(w), Jl(w) @ v], [0, 1]]`` with ``Jl`` the SO(3)
  left Jacobian.  ``log_so3`` returns a rotation vector of angle in ``[0, pi]``;
  at exactly ``pi`` the sign of the axis is arbitrary (both are valid logs).
* **Adjoints** (all acting on linear-first 6-vectors)::

      Ad(T)      = [[R, hat(p) R], [0, R]]          Ad(T) V = vee6(T hat6(V) T^-1)
      ad(V)      = [[hat(w), hat(v)], [0, hat(w)]]  ad(V) W = [V, W] (Lie bracket)
      ad_star(V) = -ad(V)^T = [[hat(w), 0], [hat(v), hat(w)]]   (acts on wrenches)

  ``ad(V) @ W`` equals Pinocchio's ``V.cross(W)`` for motions and
  ``ad_star(V) @ F`` equals ``V.cross(F)`` for forces.
* **Jacobians of exp (dexp).**  For a curve ``w(t)`` / ``V(t)``::

      vee (d/dt exp(w)  exp(w)^-1)  = left_jacobian_so3(w)  @ w_dot
      vee (exp(w)^-1  d/dt exp(w))  = right_jacobian_so3(w) @ w_dot
      vee6(d/dt exp(V)  exp(V)^-1)  = dexp_se3(V, side='left')  @ V_dot
      vee6(exp(V)^-1  d/dt exp(V))  = dexp_se3(V, side='right') @ V_dot

  i.e. the *left* Jacobian gives the spatial (world-frame, right-trivialised)
  velocity and the *right* Jacobian the body-frame (left-trivialised) velocity.
  Series forms: ``J_left(V) = sum_k ad(V)^k / (k+1)!``, ``J_right(V) = J_left(-V)``
  and ``J_left(V) = Ad(exp(V)) J_right(V)``.  The default of ``dexp_se3`` /
  ``dexp_inv_se3`` is ``side='left'``.  Pinocchio's ``Jexp3`` / ``Jexp6`` are the
  *right* Jacobians, and its ``Jlog3`` / ``Jlog6`` the right inverses.
  The Jacobians are singular at rotation angles ``2 pi k`` (k != 0); the
  inverse Jacobians are only meaningful for angles ``< 2 pi``.
* **Roll-pitch-yaw** follows URDF: ``R = Rz(yaw) @ Ry(pitch) @ Rx(roll)`` with
  ``rpy = (roll, pitch, yaw)``.  ``matrix_to_rpy`` returns pitch in
  ``[-pi/2, pi/2]`` and roll, yaw in ``[-pi, pi]``; at gimbal lock yaw is 0.
* **Quaternions** use ROS order ``(x, y, z, w)``; ``matrix_to_quat_xyzw`` returns
  unit quaternions with ``w >= 0``.

Numerics
--------
The coefficient functions of the closed forms (``sin t / t``,
``(1 - cos t) / t^2``, ...) are evaluated by truncated Taylor series (Horner in
``t^2``) below ``_SERIES_THRESHOLD`` and by cancellation-free closed forms above,
so exp, log and the Jacobians are accurate to a few ulps for every angle,
including 0.  ``log_so3`` takes the angle from
``atan2(|vee(R - R^T)| / 2, (tr R - 1) / 2)``; below pi/2 the axis comes from the
antisymmetric part, above pi/2 from the largest column of the symmetric part
(with the sign fixed by the antisymmetric part), which stays accurate up to and
including an angle of exactly pi.
"""

from math import factorial

import numpy as np

__all__ = [
    'hat',
    'vee',
    'hat6',
    'vee6',
    'exp_so3',
    'log_so3',
    'exp_se3',
    'log_se3',
    'left_jacobian_so3',
    'left_jacobian_inv_so3',
    'right_jacobian_so3',
    'right_jacobian_inv_so3',
    'dexp_se3',
    'dexp_inv_se3',
    'Ad',
    'Ad_inv',
    'ad',
    'ad_star',
    'inv_se3',
    'rpy_to_matrix',
    'matrix_to_rpy',
    'quat_xyzw_to_matrix',
    'matrix_to_quat_xyzw',
    'transform',
]

# --------------------------------------------------------------------------- #
# Input checking
# --------------------------------------------------------------------------- #


def _check(x, trailing, func, arg):
    """Return ``x`` as a float64 array after checking trailing shape and finiteness.

    Raises ``ValueError`` for a wrong trailing shape, a non-real dtype or a
    non-finite entry.
    """
    expected = '(..., ' + ', '.join(str(n) for n in trailing) + ')'
    if np.iscomplexobj(x):
        raise ValueError(f'{func}: {arg} must be real, got a complex array')
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f'{func}: {arg} must be a real array of shape {expected}: {exc}') from exc
    k = len(trailing)
    if a.ndim < k or a.shape[a.ndim - k :] != tuple(trailing):
        raise ValueError(f'{func}: {arg} must have shape {expected}, got {a.shape}')
    if not np.all(np.isfinite(a)):
        raise ValueError(f'{func}: {arg} contains non-finite values (NaN or inf)')
    return a


# --------------------------------------------------------------------------- #
# Scalar coefficient functions (elementwise over arrays of angles t >= 0)
# --------------------------------------------------------------------------- #

#: Below this angle the coefficient functions use their Taylor series (Horner in
#: t^2), above it their closed forms.  Every series below is that of an entire
#: function with factorial decay; with ``_NTERMS`` terms the truncation error at
#: the threshold is < 1e-18 relative, and above the threshold the cancellation in
#: the closed forms costs at most ~1e-15 relative (worst: ``_coef_F``).
_SERIES_THRESHOLD = 2.0
_NTERMS = 14


def _taylor(coeff):
    return np.array([coeff(n) for n in range(_NTERMS)], dtype=np.float64)


# Taylor coefficients in t^2 of:
_SER_A = _taylor(lambda n: (-1) ** n / factorial(2 * n + 1))  # sin t / t
_SER_B = _taylor(lambda n: (-1) ** n / factorial(2 * n + 2))  # (1 - cos t) / t^2
_SER_C = _taylor(lambda n: (-1) ** n / factorial(2 * n + 3))  # (t - sin t) / t^3
_SER_E = _taylor(lambda n: (-1) ** n / factorial(2 * n + 4))  # (t^2 + 2 cos t - 2) / (2 t^4)
_SER_F = _taylor(lambda n: (-1) ** n * (n + 1) / factorial(2 * n + 5))  # (2t - 3 sin t + t cos t) / (2 t^5)
_SER_H = _taylor(lambda n: (-1) ** n * 2 * (n + 1) / factorial(2 * n + 3))  # (sin t - t cos t) / t^3


def _coef(t, closed, series):
    """Evaluate a coefficient function: Taylor series for small t, closed form else."""
    small = t < _SERIES_THRESHOLD
    t_safe = np.where(small, 1.0, t)  # keep the closed form away from 0 (no warnings)
    return np.where(small, np.polynomial.polynomial.polyval(t * t, series), closed(t_safe))


def _half_sin_sq(t):
    """2 sin^2(t/2) = 1 - cos t without cancellation."""
    s = np.sin(0.5 * t)
    return 2.0 * s * s


def _coef_A(t):
    """sin t / t."""
    return _coef(t, lambda s: np.sin(s) / s, _SER_A)


def _coef_B(t):
    """(1 - cos t) / t^2."""
    return _coef(t, lambda s: _half_sin_sq(s) / (s * s), _SER_B)


def _coef_C(t):
    """(t - sin t) / t^3."""
    return _coef(t, lambda s: (s - np.sin(s)) / s**3, _SER_C)


def _coef_D(t):
    """(1 - t sin t / (2 (1 - cos t))) / t^2 = 1/t^2 - cot(t/2) / (2t).

    Evaluated as ``H(t/2) / (4 A(t/2))`` with ``H(x) = (sin x - x cos x) / x^3``,
    which is free of cancellation; singular at t = 2 pi k, k != 0.
    """
    half = 0.5 * t
    return _coef_H(half) / (4.0 * _coef_A(half))


def _coef_H(t):
    """(sin t - t cos t) / t^3."""
    return _coef(t, lambda s: (np.sin(s) - s * np.cos(s)) / s**3, _SER_H)


def _coef_E(t):
    """(t^2 + 2 cos t - 2) / (2 t^4)."""
    return _coef(t, lambda s: (s * s - 2.0 * _half_sin_sq(s)) / (2.0 * s**4), _SER_E)


def _coef_F(t):
    """(2 t - 3 sin t + t cos t) / (2 t^5)."""
    return _coef(t, lambda s: (2.0 * s - 3.0 * np.sin(s) + s * np.cos(s)) / (2.0 * s**5), _SER_F)


def _ex(c):
    """Append two unit axes so a (...) coefficient broadcasts against (..., n, n)."""
    return c[..., None, None]


# --------------------------------------------------------------------------- #
# hat / vee
# --------------------------------------------------------------------------- #


def _hat(w):
    W = np.zeros(w.shape + (3,))
    x, y, z = w[..., 0], w[..., 1], w[..., 2]
    W[..., 0, 1] = -z
    W[..., 0, 2] = y
    W[..., 1, 0] = z
    W[..., 1, 2] = -x
    W[..., 2, 0] = -y
    W[..., 2, 1] = x
    return W


def _vee(W):
    return 0.5 * np.stack(
        [W[..., 2, 1] - W[..., 1, 2], W[..., 0, 2] - W[..., 2, 0], W[..., 1, 0] - W[..., 0, 1]], axis=-1
    )


def hat(w):
    """Skew-symmetric matrix of a 3-vector.

    ``w``: (..., 3) -> (..., 3, 3) with ``hat(w) @ x == np.cross(w, x)``.
    """
    return _hat(_check(w, (3,), 'hat', 'w'))


def vee(W):
    """Inverse of :func:`hat`.

    ``W``: (..., 3, 3) -> (..., 3).  Uses the skew-symmetric part of ``W``,
    ``vee(W) = (W[2,1] - W[1,2], W[0,2] - W[2,0], W[1,0] - W[0,1]) / 2``.
    """
    return _vee(_check(W, (3, 3), 'vee', 'W'))


def _hat6(V):
    X = np.zeros(V.shape[:-1] + (4, 4))
    X[..., :3, :3] = _hat(V[..., 3:])
    X[..., :3, 3] = V[..., :3]
    return X


def hat6(V):
    """se(3) matrix of a twist.

    ``V = (v, w)``: (..., 6) -> (..., 4, 4) ``[[hat(w), v], [0, 0]]``.
    """
    return _hat6(_check(V, (6,), 'hat6', 'V'))


def vee6(X):
    """Inverse of :func:`hat6`.

    ``X``: (..., 4, 4) -> (..., 6) ``(X[:3, 3], vee(X[:3, :3]))`` (linear first).
    The bottom row of ``X`` is ignored.
    """
    X = _check(X, (4, 4), 'vee6', 'X')
    return np.concatenate([X[..., :3, 3], _vee(X[..., :3, :3])], axis=-1)


# --------------------------------------------------------------------------- #
# SO(3)
# --------------------------------------------------------------------------- #


def _exp_so3(w):
    t = np.linalg.norm(w, axis=-1)
    W = _hat(w)
    return np.eye(3) + _ex(_coef_A(t)) * W + _ex(_coef_B(t)) * (W @ W)


def exp_so3(w):
    """Rotation matrix of a rotation vector (Rodrigues' formula).

    ``w``: (..., 3) -> (..., 3, 3), ``exp(hat(w))``.
    """
    return _exp_so3(_check(w, (3,), 'exp_so3', 'w'))


def _log_so3(R):
    s = _vee(R)  # sin(t) * axis
    c = 0.5 * (np.trace(R, axis1=-2, axis2=-1) - 1.0)  # cos(t)
    sn = np.linalg.norm(s, axis=-1)
    t = np.arctan2(sn, c)  # angle in [0, pi]

    # Small / moderate angles: w = t * s / sin(t).
    w_small = s / _coef_A(np.minimum(t, 0.5 * np.pi))[..., None]

    # Large angles: (R + R^T)/2 - cos(t) I = (1 - cos t) a a^T; take its largest column.
    M = 0.5 * (R + np.swapaxes(R, -1, -2)) - c[..., None, None] * np.eye(3)
    k = np.argmax(np.diagonal(M, axis1=-2, axis2=-1), axis=-1)
    col = np.take_along_axis(M, k[..., None, None], axis=-1)[..., 0]
    nrm = np.linalg.norm(col, axis=-1)
    axis = col / np.where(nrm > 0.0, nrm, 1.0)[..., None]
    sign = np.where(np.sum(axis * s, axis=-1) < 0.0, -1.0, 1.0)
    w_large = (sign * t)[..., None] * axis

    return np.where((c > 0.0)[..., None], w_small, w_large)


def log_so3(R):
    """Rotation vector of a rotation matrix (principal logarithm).

    ``R``: (..., 3, 3) -> (..., 3) with angle ``|w|`` in ``[0, pi]``.  Accurate
    near angle 0 and up to (and at) pi; at exactly pi the axis sign is arbitrary.
    ``R`` is assumed orthonormal (not checked).
    """
    return _log_so3(_check(R, (3, 3), 'log_so3', 'R'))


def _jl_so3(w):
    t = np.linalg.norm(w, axis=-1)
    W = _hat(w)
    return np.eye(3) + _ex(_coef_B(t)) * W + _ex(_coef_C(t)) * (W @ W)


def _jl_inv_so3(w):
    t = np.linalg.norm(w, axis=-1)
    W = _hat(w)
    return np.eye(3) - 0.5 * W + _ex(_coef_D(t)) * (W @ W)


def left_jacobian_so3(w):
    """Left Jacobian of SO(3) (dexp, world side).

    ``w``: (..., 3) -> (..., 3, 3),
    ``Jl(w) = I + (1 - cos t)/t^2 hat(w) + (t - sin t)/t^3 hat(w)^2``, so that
    ``vee(d/dt exp(w) exp(w)^T) = Jl(w) @ w_dot``.
    """
    return _jl_so3(_check(w, (3,), 'left_jacobian_so3', 'w'))


def left_jacobian_inv_so3(w):
    """Inverse of :func:`left_jacobian_so3`.

    ``w``: (..., 3) -> (..., 3, 3),
    ``Jl^-1(w) = I - hat(w)/2 + (1/t^2 - cot(t/2)/(2t)) hat(w)^2``.
    Singular at angles 2 pi k, k != 0.
    """
    return _jl_inv_so3(_check(w, (3,), 'left_jacobian_inv_so3', 'w'))


def right_jacobian_so3(w):
    """Right Jacobian of SO(3) (dexp, body side): ``Jr(w) = Jl(-w) = Jl(w)^T``.

    ``w``: (..., 3) -> (..., 3, 3), ``vee(exp(w)^T d/dt exp(w)) = Jr(w) @ w_dot``.
    Equals Pinocchio's ``Jexp3``.
    """
    return _jl_so3(-_check(w, (3,), 'right_jacobian_so3', 'w'))


def right_jacobian_inv_so3(w):
    """Inverse of :func:`right_jacobian_so3`: ``Jr^-1(w) = Jl^-1(-w)``.

    ``w``: (..., 3) -> (..., 3, 3).  Equals Pinocchio's ``Jlog3(exp3(w))`` for
    angles < pi.
    """
    return _jl_inv_so3(-_check(w, (3,), 'right_jacobian_inv_so3', 'w'))


# --------------------------------------------------------------------------- #
# SE(3)
# --------------------------------------------------------------------------- #


def _exp_se3(V):
    v, w = V[..., :3], V[..., 3:]
    T = np.zeros(V.shape[:-1] + (4, 4))
    T[..., :3, :3] = _exp_so3(w)
    T[..., :3, 3] = np.einsum('...ij,...j->...i', _jl_so3(w), v)
    T[..., 3, 3] = 1.0
    return T


def exp_se3(V):
    """Exponential of a twist.

    ``V = (v, w)``: (..., 6) -> (..., 4, 4), ``[[exp_so3(w), Jl(w) v], [0, 1]]``.
    """
    return _exp_se3(_check(V, (6,), 'exp_se3', 'V'))


def log_se3(T):
    """Logarithm of a homogeneous transform.

    ``T``: (..., 4, 4) -> (..., 6) twist ``(v, w)`` with ``w = log_so3(R)`` (angle in
    ``[0, pi]``) and ``v = Jl(w)^-1 p``.  The bottom row of ``T`` is ignored.
    """
    T = _check(T, (4, 4), 'log_se3', 'T')
    w = _log_so3(T[..., :3, :3])
    v = np.einsum('...ij,...j->...i', _jl_inv_so3(w), T[..., :3, 3])
    return np.concatenate([v, w], axis=-1)


def _q_block(v, w):
    """Upper-right 3x3 block of the SE(3) left Jacobian (Barfoot's Q(v, w))."""
    t = np.linalg.norm(w, axis=-1)
    P, W = _hat(v), _hat(w)
    WP, PW = W @ P, P @ W
    WPW = WP @ W
    WW = W @ W
    return (
        0.5 * P
        + _ex(_coef_C(t)) * (WP + PW + WPW)
        + _ex(_coef_E(t)) * (W @ WP + PW @ W - 3.0 * WPW)
        + _ex(_coef_F(t)) * (WPW @ W + WW @ PW)
    )


def _side_sign(side, func):
    if side == 'left':
        return 1.0
    if side == 'right':
        return -1.0
    raise ValueError(f"{func}: side must be 'left' or 'right', got {side!r}")


def dexp_se3(V, side='left'):
    """6x6 Jacobian of the SE(3) exponential in linear-first coordinates.

    ``V = (v, w)``: (..., 6) -> (..., 6, 6).

    * ``side='left'`` (default): ``vee6(d/dt exp(V) exp(V)^-1) = J @ V_dot``
      (spatial velocity); ``J = [[Jl(w), Q(v, w)], [0, Jl(w)]] =
      sum_k ad(V)^k / (k+1)!``.
    * ``side='right'``: ``vee6(exp(V)^-1 d/dt exp(V)) = J @ V_dot`` (body
      velocity); ``J_right(V) = J_left(-V)``.  Equals Pinocchio's ``Jexp6``.
    """
    V = _check(V, (6,), 'dexp_se3', 'V') * _side_sign(side, 'dexp_se3')
    v, w = V[..., :3], V[..., 3:]
    Jl = _jl_so3(w)
    return _upper_block6(Jl, _q_block(v, w))


def dexp_inv_se3(V, side='left'):
    """Inverse of :func:`dexp_se3` (same ``side`` convention).

    ``V = (v, w)``: (..., 6) -> (..., 6, 6),
    ``[[Jl^-1, -Jl^-1 Q Jl^-1], [0, Jl^-1]]`` evaluated at ``V`` (left) or ``-V``
    (right).  The right one equals Pinocchio's ``Jlog6(exp6(V))`` for angles < pi.
    """
    V = _check(V, (6,), 'dexp_inv_se3', 'V') * _side_sign(side, 'dexp_inv_se3')
    v, w = V[..., :3], V[..., 3:]
    Ji = _jl_inv_so3(w)
    return _upper_block6(Ji, -Ji @ _q_block(v, w) @ Ji)


def _upper_block6(D, U):
    """``[[D, U], [0, D]]`` (..., 6, 6) from the 3 x 3 blocks D, U (..., 3, 3)."""
    J = np.zeros(D.shape[:-2] + (6, 6))
    J[..., :3, :3] = D
    J[..., 3:, 3:] = D
    J[..., :3, 3:] = U
    return J


def Ad(T):
    """Adjoint matrix of a transform, acting on linear-first twists.

    ``T``: (..., 4, 4) -> (..., 6, 6), ``[[R, hat(p) R], [0, R]]``; satisfies
    ``hat6(Ad(T) @ V) = T hat6(V) T^-1``.  Wrenches transform with ``Ad_inv(T).T``.
    """
    return _Ad(_check(T, (4, 4), 'Ad', 'T'))


def _Ad(T):
    R, p = T[..., :3, :3], T[..., :3, 3]
    A = np.zeros(T.shape[:-2] + (6, 6))
    A[..., :3, :3] = R
    A[..., 3:, 3:] = R
    A[..., :3, 3:] = _hat(p) @ R
    return A


def Ad_inv(T):
    """Adjoint of the inverse transform, ``Ad(T^-1)``, without any matrix inverse.

    ``T``: (..., 4, 4) -> (..., 6, 6), ``[[R^T, -R^T hat(p)], [0, R^T]]``.
    """
    T = _check(T, (4, 4), 'Ad_inv', 'T')
    Rt, p = np.swapaxes(T[..., :3, :3], -1, -2), T[..., :3, 3]
    A = np.zeros(T.shape[:-2] + (6, 6))
    A[..., :3, :3] = Rt
    A[..., 3:, 3:] = Rt
    A[..., :3, 3:] = -Rt @ _hat(p)
    return A


def _ad(V):
    A = np.zeros(V.shape[:-1] + (6, 6))
    W = _hat(V[..., 3:])
    A[..., :3, :3] = W
    A[..., 3:, 3:] = W
    A[..., :3, 3:] = _hat(V[..., :3])
    return A


def ad(V):
    """Small adjoint (Lie bracket) of a twist.

    ``V = (v, w)``: (..., 6) -> (..., 6, 6), ``[[hat(w), hat(v)], [0, hat(w)]]``;
    ``ad(V) @ U = vee6(hat6(V) hat6(U) - hat6(U) hat6(V))`` (Pinocchio ``V.cross(U)``).
    """
    return _ad(_check(V, (6,), 'ad', 'V'))


def ad_star(V):
    """Dual (coadjoint) small adjoint acting on linear-first wrenches.

    ``V = (v, w)``: (..., 6) -> (..., 6, 6), ``-ad(V)^T =
    [[hat(w), 0], [hat(v), hat(w)]]``; ``ad_star(V) @ (f, tau) =
    (w x f, v x f + w x tau)`` (Pinocchio ``V.cross(F)`` for a force ``F``).
    """
    return -np.swapaxes(_ad(_check(V, (6,), 'ad_star', 'V')), -1, -2)


def inv_se3(T):
    """Inverse of a homogeneous transform, ``[[R^T, -R^T p], [0, 1]]``.

    ``T``: (..., 4, 4) -> (..., 4, 4).  The bottom row of ``T`` is ignored.
    """
    return _inv_se3(_check(T, (4, 4), 'inv_se3', 'T'))


def _inv_se3(T):
    Rt = np.swapaxes(T[..., :3, :3], -1, -2)
    out = np.zeros(T.shape)
    out[..., :3, :3] = Rt
    out[..., :3, 3] = -np.einsum('...ij,...j->...i', Rt, T[..., :3, 3])
    out[..., 3, 3] = 1.0
    return out


def transform(R, p):
    """Homogeneous transform ``[[R, p], [0, 1]]``.

    ``R``: (..., 3, 3), ``p``: (..., 3) -> (..., 4, 4); the leading shapes broadcast.
    """
    R = _check(R, (3, 3), 'transform', 'R')
    p = _check(p, (3,), 'transform', 'p')
    try:
        lead = np.broadcast_shapes(R.shape[:-2], p.shape[:-1])
    except ValueError as exc:
        raise ValueError(f'transform: leading shapes of R {R.shape} and p {p.shape} do not broadcast') from exc
    T = np.zeros(lead + (4, 4))
    T[..., :3, :3] = R
    T[..., :3, 3] = p
    T[..., 3, 3] = 1.0
    return T


# --------------------------------------------------------------------------- #
# Roll-pitch-yaw and quaternions
# --------------------------------------------------------------------------- #


def rpy_to_matrix(rpy):
    """Rotation matrix from URDF roll-pitch-yaw.

    ``rpy = (roll, pitch, yaw)``: (..., 3) -> (..., 3, 3),
    ``R = Rz(yaw) @ Ry(pitch) @ Rx(roll)`` (fixed axes X, then Y, then Z).
    """
    rpy = _check(rpy, (3,), 'rpy_to_matrix', 'rpy')
    cr, cp, cy = np.cos(rpy[..., 0]), np.cos(rpy[..., 1]), np.cos(rpy[..., 2])
    sr, sp, sy = np.sin(rpy[..., 0]), np.sin(rpy[..., 1]), np.sin(rpy[..., 2])
    R = np.empty(rpy.shape + (3,))
    R[..., 0, 0] = cy * cp
    R[..., 0, 1] = cy * sp * sr - sy * cr
    R[..., 0, 2] = cy * sp * cr + sy * sr
    R[..., 1, 0] = sy * cp
    R[..., 1, 1] = sy * sp * sr + cy * cr
    R[..., 1, 2] = sy * sp * cr - cy * sr
    R[..., 2, 0] = -sp
    R[..., 2, 1] = cp * sr
    R[..., 2, 2] = cp * cr
    return R


def matrix_to_rpy(R):
    """URDF roll-pitch-yaw of a rotation matrix (inverse of :func:`rpy_to_matrix`).

    ``R``: (..., 3, 3) -> (..., 3) ``(roll, pitch, yaw)`` with pitch in
    ``[-pi/2, pi/2]``, roll and yaw in ``[-pi, pi]``.  Roll is computed after
    removing the yaw, so ``rpy_to_matrix(matrix_to_rpy(R))`` reproduces ``R`` to
    rounding even near gimbal lock (pitch = +-pi/2, where yaw = 0 is chosen).
    """
    R = _check(R, (3, 3), 'matrix_to_rpy', 'R')
    yaw = np.arctan2(R[..., 1, 0], R[..., 0, 0])
    cy, sy = np.cos(yaw), np.sin(yaw)
    pitch = np.arctan2(-R[..., 2, 0], np.hypot(R[..., 0, 0], R[..., 1, 0]))
    # Row 1 of Rz(-yaw) R = Ry(pitch) Rx(roll) is (0, cos roll, -sin roll).
    roll = np.arctan2(sy * R[..., 0, 2] - cy * R[..., 1, 2], cy * R[..., 1, 1] - sy * R[..., 0, 1])
    return np.stack([roll, pitch, yaw], axis=-1)


def quat_xyzw_to_matrix(q):
    """Rotation matrix of a quaternion in ROS order ``(x, y, z, w)``.

    ``q``: (..., 4) -> (..., 3, 3).  ``q`` is normalised first; a zero quaternion
    raises ``ValueError``.
    """
    q = _check(q, (4,), 'quat_xyzw_to_matrix', 'q')
    n = np.linalg.norm(q, axis=-1)
    if np.any(n < np.finfo(np.float64).tiny):
        raise ValueError('quat_xyzw_to_matrix: q has zero norm')
    x, y, z, w = np.moveaxis(q / n[..., None], -1, 0)
    R = np.empty(q.shape[:-1] + (3, 3))
    R[..., 0, 0] = 1.0 - 2.0 * (y * y + z * z)
    R[..., 0, 1] = 2.0 * (x * y - z * w)
    R[..., 0, 2] = 2.0 * (x * z + y * w)
    R[..., 1, 0] = 2.0 * (x * y + z * w)
    R[..., 1, 1] = 1.0 - 2.0 * (x * x + z * z)
    R[..., 1, 2] = 2.0 * (y * z - x * w)
    R[..., 2, 0] = 2.0 * (x * z - y * w)
    R[..., 2, 1] = 2.0 * (y * z + x * w)
    R[..., 2, 2] = 1.0 - 2.0 * (x * x + y * y)
    return R


def matrix_to_quat_xyzw(R):
    """Unit quaternion ``(x, y, z, w)`` of a rotation matrix, with ``w >= 0``.

    ``R``: (..., 3, 3) -> (..., 4).  Shepperd's method: the symmetric matrix
    ``K = 4 q q^T`` is built from ``R`` and its largest-diagonal column is
    normalised, which is accurate for every angle.
    """
    R = _check(R, (3, 3), 'matrix_to_quat_xyzw', 'R')
    r = {(i, j): R[..., i, j] for i in range(3) for j in range(3)}
    K = np.empty(R.shape[:-2] + (4, 4))
    K[..., 0, 0] = 1.0 + r[0, 0] - r[1, 1] - r[2, 2]
    K[..., 1, 1] = 1.0 - r[0, 0] + r[1, 1] - r[2, 2]
    K[..., 2, 2] = 1.0 - r[0, 0] - r[1, 1] + r[2, 2]
    K[..., 3, 3] = 1.0 + r[0, 0] + r[1, 1] + r[2, 2]
    K[..., 0, 1] = K[..., 1, 0] = r[0, 1] + r[1, 0]
    K[..., 0, 2] = K[..., 2, 0] = r[0, 2] + r[2, 0]
    K[..., 1, 2] = K[..., 2, 1] = r[1, 2] + r[2, 1]
    K[..., 0, 3] = K[..., 3, 0] = r[2, 1] - r[1, 2]
    K[..., 1, 3] = K[..., 3, 1] = r[0, 2] - r[2, 0]
    K[..., 2, 3] = K[..., 3, 2] = r[1, 0] - r[0, 1]
    k = np.argmax(np.diagonal(K, axis1=-2, axis2=-1), axis=-1)
    q = np.take_along_axis(K, k[..., None, None], axis=-1)[..., 0]
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    return q * np.where(q[..., 3:] < 0.0, -1.0, 1.0)
