"""Joint models: configuration spaces, placements and motion subspaces of one joint.

Each joint model describes the motion a joint allows between its parent frame (after the fixed
placement from the description) and its child frame, with Pinocchio's conventions for the
configuration ``q`` (``nq`` numbers) and the velocity ``v`` (``nv`` numbers), so that
configurations and velocities move between the two packages unchanged:

============  ====  ====  ===============================================  =====================
joint         nq    nv    q                                                v
============  ====  ====  ===============================================  =====================
revolute      1     1     angle [rad] about the unit ``axis``              angle rate [rad/s]
prismatic     1     1     displacement [m] along the unit ``axis``         rate [m/s]
spherical     4     3     unit quaternion ``(x, y, z, w)``                 angular velocity in
                                                                           the child frame
free_flyer    7     6     position [m] (3) then unit quaternion            ``(v, w)``: linear and
                          ``(x, y, z, w)``                                 angular velocity in
                                                                           the child frame
planar        4     3     ``(x, y, cos theta, sin theta)``, motion in the  ``(vx, vy, wz)`` in
                          parent's xy plane                                the child frame
============  ====  ====  ===============================================  =====================

The configuration spaces are Lie groups (R, SO(3), SE(3), SE(2)); :meth:`JointModel.integrate`
moves ``q`` along a constant velocity for unit time, ``q (+) v`` = ``M(q) exp(v)`` (right
multiplication: the velocity is in the child frame), :meth:`JointModel.difference` is its
inverse, ``v = log(M(q0)^-1 M(q1))`` (``integrate(q0, difference(q0, q1)) == q1``), as
Pinocchio's ``integrate`` / ``difference``. :meth:`JointModel.placement` gives the joint's
transform ``M(q)`` (child frame in the parent frame); :attr:`JointModel.S` the motion subspace,
the (6, nv) matrix whose columns are the child frame's twists (linear first, in the child frame)
per unit of each velocity coordinate (Pinocchio's ``jdata.S``): the child's body twist relative
to the parent is ``S v``, with ``S`` constant for every joint here.

All functions are batched over leading axes (``q`` (..., nq), ``v`` (..., nv)) and return
float64 arrays. A quaternion is used as given (it represents the rotation of ``q / |q|``);
:meth:`JointModel.normalize` returns ``q`` with unit quaternions.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np


from robot_dynamics.errors import InputError

from robot_dynamics.spatial.lie import _exp_so3, _jl_inv_so3, _jl_so3, _log_so3
from robot_dynamics.spatial.lie import quat_xyzw_to_matrix as quat_to_matrix

__all__ = [
    'JointModel',
    'Revolute',
    'Prismatic',
    'Spherical',
    'FreeFlyer',
    'Planar',
    'joint_model',
    'quat_multiply',
    'quat_exp',
    'quat_to_matrix',
]

_PI = np.pi


# --------------------------------------------------------------------------- quaternions (x, y, z, w)
def quat_multiply(a, b):
    """Hamilton product ``a b`` of quaternions ``(x, y, z, w)``: (..., 4) x (..., 4) -> (..., 4)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    ax, ay, az, aw = np.moveaxis(a, -1, 0)
    bx, by, bz, bw = np.moveaxis(b, -1, 0)
    return np.stack(
        [
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz,
        ],
        axis=-1,
    )


def quat_exp(w):
    """Unit quaternion ``(x, y, z, w)`` of the rotation vector ``w`` (..., 3) -> (..., 4)."""
    w = np.asarray(w, float)
    t = np.linalg.norm(w, axis=-1)
    h = 0.5 * t
    # sin(t/2)/t, with its series below 1e-4 (error < 1e-17)
    small = t < 1e-4
    ts = np.where(small, 1.0, t)
    k = np.where(small, 0.5 - t * t / 48.0, np.sin(h) / ts)
    return np.concatenate([k[..., None] * w, np.cos(h)[..., None]], axis=-1)


def _quat_log(q0, q1):
    """Rotation vector of ``R(q0)^T R(q1)`` (angle in [0, pi]) (..., 3)."""
    return _log_so3(np.swapaxes(quat_to_matrix(q0), -1, -2) @ quat_to_matrix(q1))


def _random_quat(rng, shape):
    """Uniformly distributed unit quaternions (Shoemake), shape + (4,)."""
    u1, u2, u3 = (rng.uniform(size=shape) for _ in range(3))
    a, b = np.sqrt(1.0 - u1), np.sqrt(u1)
    return np.stack(
        [a * np.sin(2 * _PI * u2), a * np.cos(2 * _PI * u2), b * np.sin(2 * _PI * u3), b * np.cos(2 * _PI * u3)],
        axis=-1,
    )


def _shape(size):
    """Batch shape of a ``size`` argument (None or () for one sample, an int, a tuple)."""
    return () if size is None or size == () else tuple(np.atleast_1d(size).tolist())


def _uniform(rng, lower, upper, shape, what):
    lo, hi = np.asarray(lower, float), np.asarray(upper, float)
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        raise InputError(
            f'random configuration of a {what} joint needs finite limits, got limits [{lo}, {hi}] '
            '(uniform sampling is undefined on an unbounded interval)'
        )
    return rng.uniform(lo, hi, size=shape + lo.shape)


# --------------------------------------------------------------------------- joint models
class JointModel(ABC):
    """One joint's configuration space, placement and motion subspace (see the module docstring).

    Attributes: ``kind`` (str), ``nq``, ``nv`` (int), ``S`` ((6, nv) motion subspace, child frame,
    linear first).
    """

    kind = ''
    nq = 0
    nv = 0

    @abstractmethod
    def neutral(self):
        """The identity configuration (nq,): zero angle / displacement, unit quaternion (0, 0, 0, 1)."""

    @abstractmethod
    def integrate(self, q, v):
        """``q (+) v``: the configuration reached from ``q`` (..., nq) moving with the constant
        velocity ``v`` (..., nv) for unit time (``M(q) exp(v)``)."""

    @abstractmethod
    def difference(self, q0, q1):
        """The velocity (..., nv) that :meth:`integrate` turns ``q0`` into ``q1`` with:
        ``log(M(q0)^-1 M(q1))`` (rotation angle in [0, pi])."""

    @abstractmethod
    def placement(self, q):
        """``(R (..., 3, 3), p (..., 3))``: the child frame in the parent frame at ``q``."""

    @abstractmethod
    def random(self, rng=None, lower=None, upper=None, size=()):
        """Random configurations (size + (nq,)): uniform between the position limits ``lower``,
        ``upper`` (nq,) of the joint's translational / angular coordinates (finite; without them
        angles in [-pi, pi] rad, translations in [-1, 1] m), uniformly distributed rotations."""

    def normalize(self, q):
        """``q`` with its quaternion (if any) scaled to unit norm."""
        return np.array(q, float)

    def __eq__(self, other):
        return type(self) is type(other) and np.array_equal(getattr(self, 'axis', None), getattr(other, 'axis', None))

    def __hash__(self):
        return hash((type(self), tuple(np.ravel(getattr(self, 'axis', ())))))

    def __repr__(self):
        return f'{type(self).__name__}()'


class _Axis(JointModel):
    nq = nv = 1

    def __init__(self, axis=(0.0, 0.0, 1.0)):
        a = np.asarray(axis, float)
        n = np.linalg.norm(a)
        if a.shape != (3,) or not np.isfinite(n) or n < 1e-12:
            raise ValueError(f'{self.kind} joint: axis must be a non-zero 3-vector, got {axis!r}')
        self.axis = a / n

    def neutral(self):
        return np.zeros(1)

    def integrate(self, q, v):
        return np.asarray(q, float) + np.asarray(v, float)

    def difference(self, q0, q1):
        return np.asarray(q1, float) - np.asarray(q0, float)

    def random(self, rng=None, lower=None, upper=None, size=()):
        rng = np.random.default_rng(rng)
        lo = -self._range if lower is None else lower[0]
        hi = self._range if upper is None else upper[0]
        return _uniform(rng, [lo], [hi], _shape(size), self.kind)

    def __repr__(self):
        return f'{type(self).__name__}(axis={self.axis.tolist()})'


class Revolute(_Axis):
    """Rotation by ``q`` [rad] about the unit ``axis`` (parent = child frame at q = 0)."""

    kind = 'revolute'
    _range = _PI  # default random range [rad]

    @property
    def S(self):
        S = np.zeros((6, 1))
        S[3:, 0] = self.axis
        return S

    def placement(self, q):
        q = np.asarray(q, float)
        return _exp_so3(q[..., :1] * self.axis), np.zeros(q.shape[:-1] + (3,))


class Prismatic(_Axis):
    """Translation by ``q`` [m] along the unit ``axis``."""

    kind = 'prismatic'
    _range = 1.0  # default random range [m]

    @property
    def S(self):
        S = np.zeros((6, 1))
        S[:3, 0] = self.axis
        return S

    def placement(self, q):
        q = np.asarray(q, float)
        return np.broadcast_to(np.eye(3), q.shape[:-1] + (3, 3)).copy(), q[..., :1] * self.axis


class Spherical(JointModel):
    """Ball joint: any rotation, ``q`` a quaternion ``(x, y, z, w)``, ``v`` the angular velocity in
    the child frame (Pinocchio's ``JointModelSpherical``)."""

    kind = 'spherical'
    nq, nv = 4, 3
    S = np.vstack([np.zeros((3, 3)), np.eye(3)])

    def neutral(self):
        return np.array([0.0, 0.0, 0.0, 1.0])

    def integrate(self, q, v):
        return quat_multiply(q, quat_exp(v))

    def difference(self, q0, q1):
        return _quat_log(q0, q1)

    def placement(self, q):
        q = np.asarray(q, float)
        return quat_to_matrix(q), np.zeros(q.shape[:-1] + (3,))

    def random(self, rng=None, lower=None, upper=None, size=()):
        return _random_quat(np.random.default_rng(rng), _shape(size))

    def normalize(self, q):
        q = np.asarray(q, float)
        return q / np.linalg.norm(q, axis=-1, keepdims=True)


class FreeFlyer(JointModel):
    """Floating base: ``q = (p, quaternion (x, y, z, w))``, ``v = (v, w)`` the child frame's
    linear and angular velocity in the child frame (Pinocchio's ``JointModelFreeFlyer``)."""

    kind = 'free_flyer'
    nq, nv = 7, 6
    S = np.eye(6)

    def neutral(self):
        return np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])

    def integrate(self, q, v):
        q, v = np.asarray(q, float), np.asarray(v, float)
        R = quat_to_matrix(q[..., 3:])
        dp = np.einsum('...ij,...j->...i', _jl_so3(v[..., 3:]), v[..., :3])
        p = q[..., :3] + np.einsum('...ij,...j->...i', R, dp)
        return np.concatenate([p, quat_multiply(q[..., 3:], quat_exp(v[..., 3:]))], axis=-1)

    def difference(self, q0, q1):
        q0, q1 = np.asarray(q0, float), np.asarray(q1, float)
        R0 = quat_to_matrix(q0[..., 3:])
        w = _quat_log(q0[..., 3:], q1[..., 3:])
        dp = np.einsum('...ji,...j->...i', R0, q1[..., :3] - q0[..., :3])  # R0^T (p1 - p0)
        return np.concatenate([np.einsum('...ij,...j->...i', _jl_inv_so3(w), dp), w], axis=-1)

    def placement(self, q):
        q = np.asarray(q, float)
        return quat_to_matrix(q[..., 3:]), q[..., :3].copy()

    def random(self, rng=None, lower=None, upper=None, size=()):
        rng = np.random.default_rng(rng)
        shape = _shape(size)
        lo = -np.ones(3) if lower is None else np.asarray(lower, float)[:3]
        hi = np.ones(3) if upper is None else np.asarray(upper, float)[:3]
        return np.concatenate([_uniform(rng, lo, hi, shape, self.kind), _random_quat(rng, shape)], axis=-1)

    def normalize(self, q):
        q = np.array(q, float)
        q[..., 3:] /= np.linalg.norm(q[..., 3:], axis=-1, keepdims=True)
        return q


def _se2_V(t):
    """(a, b) of the SE(2) exponential's V = [[a, -b], [b, a]]: a = sin t / t, b = (1 - cos t) / t."""
    small = np.abs(t) < 1e-4
    ts = np.where(small, 1.0, t)
    a = np.where(small, 1.0 - t * t / 6.0, np.sin(t) / ts)
    b = np.where(small, t / 2.0 - t**3 / 24.0, (1.0 - np.cos(t)) / ts)
    return a, b


class Planar(JointModel):
    """Motion in the parent's xy plane: ``q = (x, y, cos theta, sin theta)``, ``v = (vx, vy, wz)``
    in the child frame (Pinocchio's ``JointModelPlanar``)."""

    kind = 'planar'
    nq, nv = 4, 3
    S = np.zeros((6, 3))
    S[0, 0] = S[1, 1] = S[5, 2] = 1.0

    def neutral(self):
        return np.array([0.0, 0.0, 1.0, 0.0])

    def integrate(self, q, v):
        q, v = np.asarray(q, float), np.asarray(v, float)
        c, s = q[..., 2], q[..., 3]
        a, b = _se2_V(v[..., 2])
        px = a * v[..., 0] - b * v[..., 1]
        py = b * v[..., 0] + a * v[..., 1]
        cw, sw = np.cos(v[..., 2]), np.sin(v[..., 2])
        return np.stack(
            [q[..., 0] + c * px - s * py, q[..., 1] + s * px + c * py, c * cw - s * sw, s * cw + c * sw], -1
        )

    def difference(self, q0, q1):
        q0, q1 = np.asarray(q0, float), np.asarray(q1, float)
        c0, s0, c1, s1 = q0[..., 2], q0[..., 3], q1[..., 2], q1[..., 3]
        t = np.arctan2(c0 * s1 - s0 * c1, c0 * c1 + s0 * s1)
        dx, dy = q1[..., 0] - q0[..., 0], q1[..., 1] - q0[..., 1]
        px, py = c0 * dx + s0 * dy, -s0 * dx + c0 * dy  # R0^T (p1 - p0)
        a, b = _se2_V(t)
        d = a * a + b * b  # V^-1 = [[a, b], [-b, a]] / (a^2 + b^2)
        return np.stack([(a * px + b * py) / d, (-b * px + a * py) / d, t], -1)

    def placement(self, q):
        q = np.asarray(q, float)
        n = np.hypot(q[..., 2], q[..., 3])
        c, s = q[..., 2] / n, q[..., 3] / n
        R = np.zeros(q.shape[:-1] + (3, 3))
        R[..., 0, 0], R[..., 0, 1], R[..., 1, 0], R[..., 1, 1], R[..., 2, 2] = c, -s, s, c, 1.0
        p = np.zeros(q.shape[:-1] + (3,))
        p[..., 0], p[..., 1] = q[..., 0], q[..., 1]
        return R, p

    def random(self, rng=None, lower=None, upper=None, size=()):
        rng = np.random.default_rng(rng)
        shape = _shape(size)
        lo = -np.ones(2) if lower is None else np.asarray(lower, float)[:2]
        hi = np.ones(2) if upper is None else np.asarray(upper, float)[:2]
        xy = _uniform(rng, lo, hi, shape, self.kind)
        t = rng.uniform(-_PI, _PI, size=shape)
        return np.concatenate([xy, np.stack([np.cos(t), np.sin(t)], -1)], axis=-1)

    def normalize(self, q):
        q = np.array(q, float)
        q[..., 2:] /= np.hypot(q[..., 2], q[..., 3])[..., None]
        return q


_KINDS = {
    'revolute': Revolute,
    'continuous': Revolute,
    'prismatic': Prismatic,
    'spherical': Spherical,
    'ball': Spherical,
    'free_flyer': FreeFlyer,
    'floating': FreeFlyer,
    'planar': Planar,
}


def joint_model(kind, axis=None):
    """The joint model of a kind: ``'revolute'``/``'continuous'``, ``'prismatic'`` (with ``axis``),
    ``'spherical'``/``'ball'``, ``'free_flyer'``/``'floating'``, ``'planar'``."""
    cls = _KINDS.get(kind)
    if cls is None:
        raise ValueError(f'unknown joint kind {kind!r} (known: {", ".join(sorted(_KINDS))})')
    if issubclass(cls, _Axis):
        return cls((0.0, 0.0, 1.0) if axis is None else axis)
    return cls()
