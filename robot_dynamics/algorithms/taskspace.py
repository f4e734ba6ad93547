"""Task-space references of closed-chain robots: position IK and its derivatives.

A task is a selection of world components (``axes``, e.g. ``[0, 2]`` for x and z) of the
origin of one frame. With the loop closures ``phi(q) = 0`` the stacked system is::

    r(q)  = [ phi(q) ; S (p(q) - x) ]               = 0      (position)
    K(q)  = [ A(q)   ; S J_v(q) ]                             (m + k, n)
    K qd  = [ 0      ; S xd ]                                 (velocity)
    K qdd = [ -Adot qd ; S (xdd - Jdot_v qd) ]                (acceleration)

with ``J_v`` the linear (world-aligned) rows of the frame Jacobian. Newton steps and the
velocity/acceleration solutions use the absolute-tolerance pseudo-inverse of the projection
module (seed 002), so redundant loop rows are harmless. A pose that cannot be reached, or a
singular ``K`` (input/output singularity), raises :class:`TaskSpaceError` instead of returning
a jumped-through solution.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from robot_dynamics.algorithms.constraints import constraint_terms
from robot_dynamics.errors import RobotDynamicsError
from robot_dynamics.algorithms.kinematics import _frame_state, _lwa_columns, world_state
from robot_dynamics.algorithms.projection import pinv_abs

__all__ = ['TaskSpaceError', 'TaskReference', 'task_ik', 'task_reference_to_joint']


class TaskSpaceError(RobotDynamicsError):
    """Unreachable task-space target or singular task/constraint Jacobian."""


TaskReference = namedtuple('TaskReference', 'q qd qdd sigma_min iterations')
TaskReference.__doc__ = """Joint-space reference from a task-space one: q, qd, qdd (n,), the
smallest singular value of K = [A; S J_v] (distance to a singularity) and Newton iterations."""


def _stack(model, q, frame, axes, qd=None):
    st = world_state(model, q, qd)
    fidx = model.frame_index(frame)
    R, p, w, v, al, a = _frame_state(model, st, fidx)
    J, _ = _lwa_columns(model, st, fidx, p)
    ct = constraint_terms(model, q, qd)
    return ct, p[axes], J[:3][axes], a[axes]


def task_ik(model, frame, axes, x, q_guess, tol=1e-11, max_iter=30, eps=1e-9, sigma_tol=1e-6):
    """Solve ``phi(q) = 0`` and ``S p_frame(q) = x`` by Newton from ``q_guess``.

    Returns (q, sigma_min(K), iterations). Raises TaskSpaceError when it does not converge
    (unreachable target) or when K is singular at the solution (``sigma_min < sigma_tol``).
    """
    axes = np.asarray(axes, dtype=np.int64)
    x = np.asarray(x, dtype=np.float64)
    q = np.array(q_guess, dtype=np.float64)
    if x.shape != axes.shape or not np.all(np.isfinite(x)):
        raise TaskSpaceError(f'task target must be {len(axes)} finite values, got {x!r}')
    res = np.inf
    for it in range(max_iter + 1):
        ct, p, Jv, _ = _stack(model, q, frame, axes)
        r = np.concatenate([ct.phi, p - x])
        res = float(np.linalg.norm(r))
        K = np.vstack([ct.A, Jv])
        if res <= tol:
            smin = _sigma_min_task(K)
            if smin < sigma_tol:
                raise TaskSpaceError(
                    f"{model.name}: frame '{frame}' at {x.tolist()} is at a "
                    f'singular configuration (sigma_min([A; S J]) = {smin:.2e})'
                )
            return q, smin, it
        q = q - pinv_abs(K, eps).pinv @ r
    raise TaskSpaceError(
        f"{model.name}: task target {x.tolist()} for frame '{frame}' not "
        f'reached from the previous solution (residual {res:.2e} after '
        f'{max_iter} Newton steps): unreachable or across a singularity'
    )


def _sigma_min_task(K):
    """Smallest singular value of K among its non-structural rows (zero rows ignored)."""
    rows = np.linalg.norm(K, axis=1) > 1e-12
    s = np.linalg.svd(K[rows], compute_uv=False)
    n = K.shape[1]
    return float(s[min(len(s), n) - 1]) if len(s) >= n else 0.0


def task_reference_to_joint(model, frame, axes, x, xd, xdd, q_guess, **kw):
    """Joint-space reference (q, qd, qdd of ALL joints) for a task-space one.

    ``x, xd, xdd`` (k,): position [m], velocity, acceleration of the selected world
    components ``axes`` of ``frame``'s origin. ``q_guess``: previous solution (continuation).
    Returns :class:`TaskReference`.
    """
    axes = np.asarray(axes, dtype=np.int64)
    q, smin, it = task_ik(model, frame, axes, x, q_guess, **kw)
    ct, _, Jv, _ = _stack(model, q, frame, axes)
    K = np.vstack([ct.A, Jv])
    Kp = pinv_abs(K, kw.get('eps', 1e-9)).pinv
    m = len(ct.phi)
    qd = Kp @ np.concatenate([np.zeros(m), np.asarray(xd, float)])
    ct2, _, _, a0 = _stack(model, q, frame, axes, qd)
    qdd = Kp @ np.concatenate([-ct2.bias, np.asarray(xdd, float) - a0])
    return TaskReference(q, qd, qdd, smin, it)
