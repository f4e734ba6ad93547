"""Forward kinematics, frame Jacobians and their time derivatives (tree, Lie-group form).

Frames are the URDF links (including the massless cut frames of loops). Twists are ordered
linear first (Pinocchio). The three reference frames follow Pinocchio's ``ReferenceFrame``:

* ``"local"``: the frame's own axes, velocity of its origin: ``(R^T v_o, R^T w)``;
* ``"local_world_aligned"``: origin velocity and angular velocity in world axes ``(v_o, w)``;
* ``"world"``: the spatial twist at the world origin in world axes ``(v_o + p x w, w)``.

``frame_jacobian(model, q, f, ref) @ qd`` is the twist of frame ``f`` in ``ref``;
``frame_jacobian_time_variation`` is the exact time derivative ``dJ/dt`` of that matrix, so
that ``d/dt (J qd) = J qdd + dJ qd`` (for ``"local_world_aligned"`` the linear part is then the
classical acceleration of the frame origin).
"""

from __future__ import annotations

import numpy as np

from robot_dynamics.algorithms import _tree_kernels as K
from robot_dynamics.spatial.batch import as_batch, as_float, cross
from robot_dynamics.errors import InputError
from robot_dynamics.model import REVOLUTE

__all__ = [
    'joint_placements',
    'forward_kinematics',
    'frame_placement',
    'frame_jacobian',
    'frame_jacobian_time_variation',
    'frame_velocity',
    'frame_acceleration',
    'space_jacobian',
    'body_jacobian',
    'frame_wrench_to_joint',
    'world_state',
    'REFERENCES',
]

REFERENCES = ('world', 'local', 'local_world_aligned')


def _ref(reference):
    r = str(reference).lower()
    aliases = {'lwa': 'local_world_aligned', 'space': 'world', 'body': 'local'}
    r = aliases.get(r, r)
    if r not in REFERENCES:
        raise InputError(f'reference must be one of {REFERENCES}, got {reference!r}')
    return r


def joint_placements(model, q):
    """World placement of every joint frame: R (…, n, 3, 3), p (…, n, 3)."""
    Q, single = as_batch(q, model.nq, 'q')
    if not np.all(np.isfinite(Q)):
        raise InputError('q contains non-finite values')
    N, n = Q.shape[0], model.nv
    Rw = np.empty((N, n, 3, 3))
    pw = np.empty((N, n, 3))
    K.fk_batch(model._par, model._geo, Q, Rw, pw)
    return (Rw[0], pw[0]) if single else (Rw, pw)


def _frames_from_joints(model, Rw, pw, idx):
    """World (R, p) of frames idx given joint placements with a leading batch axis."""
    par = model.frame_parent[idx]
    N = Rw.shape[0]
    R = np.empty((N, len(idx), 3, 3))
    p = np.empty((N, len(idx), 3))
    world = par < 0
    if np.any(world):
        R[:, world] = model.frame_R[idx[world]]
        p[:, world] = model.frame_p[idx[world]]
    if np.any(~world):
        jp = par[~world]
        Rj, pj = Rw[:, jp], pw[:, jp]
        R[:, ~world] = np.einsum('kfij,fjl->kfil', Rj, model.frame_R[idx[~world]])
        p[:, ~world] = pj + np.einsum('kfij,fj->kfi', Rj, model.frame_p[idx[~world]])
    return R, p


def forward_kinematics(model, q, frames=None, as_array=False):
    """World placement of every frame (URDF link) as 4x4 homogeneous matrices.

    Parameters
    ----------
    q : (n,) or (N, n)
    frames : list of frame names, optional (default: all frames, ``model.frame_names``)
    as_array : bool
        Return an array (…, nf, 4, 4) in the order of ``frames`` instead of a dict.

    Returns
    -------
    dict name -> (4, 4) [or (N, 4, 4)], or the stacked array.
    """
    Q, single = as_batch(q, model.nq, 'q')
    names = list(model.frame_names) if frames is None else list(frames)
    idx = np.array([model.frame_index(f) for f in names], dtype=np.int64)
    Rw, pw = joint_placements(model, Q)
    R, p = _frames_from_joints(model, Rw, pw, idx)
    T = np.zeros(R.shape[:2] + (4, 4))
    T[..., :3, :3] = R
    T[..., :3, 3] = p
    T[..., 3, 3] = 1.0
    if single:
        T = T[0]
    if as_array:
        return T
    return {nm: T[..., k, :, :] for k, nm in enumerate(names)}


def frame_placement(model, q, frame):
    """World placement (4, 4) [or (N, 4, 4)] of one frame."""
    return forward_kinematics(model, q, [frame], as_array=True)[..., 0, :, :]


def world_state(model, q, qd=None, qdd=None):
    """World-frame motion of every joint frame for one sample.

    Returns a dict with R (n,3,3), p (n,3), w (n,3) angular velocity, v (n,3) origin
    velocity, alpha (n,3) angular acceleration, a (n,3) classical origin acceleration, and
    ``axis`` (n,3) the joint axes in world coordinates. ``qd``/``qdd`` default to zero.
    """
    n = model.nv
    q = as_float(q, 'q')
    if q.shape != (model.nq,):
        raise InputError(f'q must have shape ({model.nq},), got {q.shape}')
    qd = np.zeros(n) if qd is None else as_float(qd, 'qd')
    qdd = np.zeros(n) if qdd is None else as_float(qdd, 'qdd')
    if qd.shape != (n,) or qdd.shape != (n,):
        raise InputError(f'qd and qdd must have shape ({n},)')
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(qd)) and np.all(np.isfinite(qdd))):
        raise InputError('q, qd or qdd contains non-finite values')
    Rw, pw = np.empty((n, 3, 3)), np.empty((n, 3))
    W, Vo, Al, Ao = (np.zeros((n, 3)) for _ in range(4))
    K.world_kinematics(model._par, model._geo, q, qd, qdd, Rw, pw, W, Vo, Al, Ao)
    axis = np.einsum('nij,nj->ni', Rw, model.axes)
    return dict(R=Rw, p=pw, w=W, v=Vo, alpha=Al, a=Ao, axis=axis)


def _frame_pose(model, st, fidx):
    """World (R, p) of frame fidx from a world_state dict (no velocities)."""
    j = model.frame_parent[fidx]
    if j < 0:
        return model.frame_R[fidx], model.frame_p[fidx]
    Rj = st['R'][j]
    return Rj @ model.frame_R[fidx], st['p'][j] + Rj @ model.frame_p[fidx]


def _frame_state(model, st, fidx):
    """World (R, p, w, v, alpha, a) of frame fidx from a world_state dict."""
    j = model.frame_parent[fidx]
    Ro, po = model.frame_R[fidx], model.frame_p[fidx]
    if j < 0:
        z = np.zeros(3)
        return Ro, po, z, z, z, z
    Rj, pj = st['R'][j], st['p'][j]
    r = Rj @ po
    w, al = st['w'][j], st['alpha'][j]
    v = st['v'][j] + cross(w, r)
    a = st['a'][j] + cross(al, r) + cross(w, cross(w, r))
    return Rj @ Ro, pj + r, w, v, al, a


def _lwa_columns(model, st, fidx, p_f, v_f=None):
    """LWA Jacobian (6, n) of frame fidx and, if v_f is given, its time derivative."""
    n = model.nv
    J = np.zeros((6, n))
    dJ = np.zeros((6, n)) if v_f is not None else None
    j = model.frame_parent[fidx]
    if j < 0:
        return J, dJ
    sup = model.support[j]
    ax = st['axis'][sup]
    rev = model.joint_types[sup] == REVOLUTE
    d = p_f - st['p'][sup]
    J[:3, sup] = np.where(rev[:, None], cross(ax, d), ax).T
    J[3:, sup] = np.where(rev[:, None], ax, 0.0).T
    if v_f is not None:
        g = model.group_last[sup]  # a multi-DOF joint's axes move with its child frame
        wxa = cross(st['w'][g], ax)
        dlin_rev = cross(wxa, d) + cross(ax, v_f - st['v'][g])
        dJ[:3, sup] = np.where(rev[:, None], dlin_rev, wxa).T
        dJ[3:, sup] = np.where(rev[:, None], wxa, 0.0).T
    return J, dJ


def frame_jacobian(model, q, frame, reference='local_world_aligned'):
    """Geometric Jacobian (6, n) of ``frame`` in ``reference`` (linear rows first).

    ``reference``: ``"world"``, ``"local"`` or ``"local_world_aligned"`` (see module doc).
    Batched q (N, n) returns (N, 6, n).
    """
    ref = _ref(reference)
    q = as_float(q, 'q')
    if q.ndim == 2:
        return np.stack([frame_jacobian(model, qk, frame, ref) for qk in q])
    fidx = model.frame_index(frame)
    st = world_state(model, q)
    R, p, *_ = _frame_state(model, st, fidx)
    J, _ = _lwa_columns(model, st, fidx, p)
    return _convert(J, R, p, ref)


def _convert(J, R, p, ref):
    if ref == 'local_world_aligned':
        return J
    if ref == 'local':
        return np.vstack([R.T @ J[:3], R.T @ J[3:]])
    out = J.copy()
    out[:3] += cross(p, J[3:].T).T
    return out


def frame_jacobian_time_variation(model, q, qd, frame, reference='local_world_aligned'):
    """Exact time derivative dJ/dt (6, n) of :func:`frame_jacobian` along (q, qd)."""
    ref = _ref(reference)
    fidx = model.frame_index(frame)
    st = world_state(model, q, qd)
    R, p, w, v, _, _ = _frame_state(model, st, fidx)
    J, dJ = _lwa_columns(model, st, fidx, p, v)
    if ref == 'local_world_aligned':
        return dJ
    if ref == 'local':
        Jl = _convert(J, R, p, 'local')
        wl = R.T @ w
        W = np.array([[0, -wl[2], wl[1]], [wl[2], 0, -wl[0]], [-wl[1], wl[0], 0]])
        return np.vstack([R.T @ dJ[:3] - W @ Jl[:3], R.T @ dJ[3:] - W @ Jl[3:]])
    # world: d/dt (J_lin + p x J_ang) = dJ_lin + v x J_ang + p x dJ_ang
    out = dJ.copy()
    out[:3] += cross(v, J[3:].T).T + cross(p, dJ[3:].T).T
    return out


def space_jacobian(model, q, frame):
    """Space Jacobian (POE): the ``"world"`` frame Jacobian, columns = current joint screws."""
    return frame_jacobian(model, q, frame, 'world')


def body_jacobian(model, q, frame):
    """Body Jacobian: the ``"local"`` frame Jacobian."""
    return frame_jacobian(model, q, frame, 'local')


def frame_velocity(model, q, qd, frame, reference='local_world_aligned'):
    """Twist (6,) of ``frame`` in ``reference`` (linear first)."""
    return frame_jacobian(model, q, frame, reference) @ np.asarray(qd, dtype=np.float64)


def frame_acceleration(model, q, qd, qdd, frame, reference='local_world_aligned'):
    """``d/dt`` of :func:`frame_velocity` (6,): ``J qdd + dJ qd``.

    For ``"local_world_aligned"`` the linear part is the classical acceleration of the origin.
    """
    fidx = model.frame_index(frame)
    st = world_state(model, q, qd, qdd)
    R, p, w, v, al, a = _frame_state(model, st, fidx)
    ref = _ref(reference)
    if ref == 'local_world_aligned':
        return np.concatenate([a, al])
    if ref == 'world':
        return np.concatenate([a + cross(v, w) + cross(p, al), al])
    # local: d/dt (R^T v, R^T w) = R^T a - (R^T w) x (R^T v), R^T alpha
    wl, vl = R.T @ w, R.T @ v
    return np.concatenate([R.T @ a - cross(wl, vl), R.T @ al])


def frame_wrench_to_joint(model, q, frame, wrench, reference='local_world_aligned', out=None):
    """External-wrench array (n, 6) for :func:`~robot_dynamics.algorithms.dynamics.rnea` from a wrench on a frame.

    ``wrench`` (6,) = (force, moment) acting on the body of ``frame``; for ``"local"`` and
    ``"local_world_aligned"`` the moment is about the frame origin (in the frame's / world
    axes), for ``"world"`` about the world origin. Accumulates into ``out`` if given.
    """
    ref = _ref(reference)
    w = np.asarray(wrench, dtype=np.float64)
    if w.shape != (6,) or not np.all(np.isfinite(w)):
        raise InputError(f'wrench must be a finite (6,) vector, got shape {w.shape}')
    F = np.zeros((model.nv, 6)) if out is None else out
    fidx = model.frame_index(frame)
    j = model.frame_parent[fidx]
    if j < 0:
        return F  # acts on the fixed base: no joint effect
    st = world_state(model, q)
    Rf, pf, *_ = _frame_state(model, st, fidx)
    f, m = w[:3], w[3:]
    if ref == 'local':
        f, m = Rf @ f, Rf @ m
    if ref != 'world':  # moment about frame origin -> world origin
        m = m + cross(pf, f)
    Rj, pj = st['R'][j], st['p'][j]
    F[j, :3] += Rj.T @ f
    F[j, 3:] += Rj.T @ (m - cross(pj, f))
    return F
