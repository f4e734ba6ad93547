"""Loop-closure constraints of the cut joints declared in the sidecar.

For the stacked rows of all loops (see :mod:`robot_dynamics.parsers.sidecar` for the rows of each type)::

    phi(q) = 0                  position residual, (m,)
    A(q) = d phi / d q          constraint Jacobian, (m, n) (may be redundant / rank deficient)
    A qdd + Adot qd = 0         acceleration level; ``constraint_bias`` returns Adot qd

A position row along ``n`` (fixed in frame_a) is ``phi = n . (p_b - p_a)``; an orientation row
with ``u`` fixed in frame_a and ``w`` fixed in frame_b is ``phi = u . w``. ``A`` is the exact
gradient of ``phi`` everywhere (not only on the constraint manifold), so Newton iterations on
``phi`` converge quadratically, and ``Adot qd`` is the exact second time derivative of ``phi``
at ``qdd = 0``. Units: position rows in m, orientation rows dimensionless.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from robot_dynamics.spatial.batch import cross
from robot_dynamics.errors import InputError
from robot_dynamics.algorithms.kinematics import _frame_pose, _frame_state, _lwa_columns, world_state

__all__ = [
    'ConstraintTerms',
    'constraint_terms',
    'loop_residual',
    'constraint_jacobian',
    'constraint_bias',
    'loop_errors',
    'constraint_row_names',
]

ConstraintTerms = namedtuple('ConstraintTerms', 'phi A bias')
ConstraintTerms.__doc__ = """phi (m,), A (m, n), bias = Adot qd (m,) (None if qd not given)."""


def constraint_row_names(model):
    """Names ``<loop>/<row>`` of the m stacked constraint rows."""
    return [r for lp in model.loops for r in lp.row_names]


def _frame_full(model, st, name, with_vel):
    fidx = model.frame_index(name)
    R, p, w, v, al, a = _frame_state(model, st, fidx)
    J, _ = _lwa_columns(model, st, fidx, p)
    return R, p, w, v, al, a, J


def constraint_terms(model, q, qd=None, jacobian=True):
    """Residual, Jacobian and (if ``qd`` is given) bias ``Adot qd`` of all loops at once.

    Parameters: q (n,), qd (n,) optional. Returns :class:`ConstraintTerms`.
    For a tree (no loops) the arrays have m = 0 rows.
    """
    n = model.nv
    m = model.nconstraints
    st = world_state(model, q, qd)
    phi = np.zeros(m)
    A = np.zeros((m, n)) if jacobian else None
    bias = np.zeros(m) if qd is not None else None
    r = 0
    if not jacobian and bias is None:  # the residual only: cut-frame placements
        for lp in model.loops:
            Ra, pa = _frame_pose(model, st, model.frame_index(lp.frame_a))
            Rb, pb = _frame_pose(model, st, model.frame_index(lp.frame_b))
            d = pb - pa
            for nl in lp.pos_dirs:
                phi[r] = (Ra @ nl) @ d
                r += 1
            for ul, wl in lp.rot_pairs:
                phi[r] = (Ra @ ul) @ (Rb @ wl)
                r += 1
        return ConstraintTerms(phi, None, None)
    for lp in model.loops:
        Ra, pa, wa, va, ala, aa, Ja = _frame_full(model, st, lp.frame_a, qd is not None)
        Rb, pb, wb, vb, alb, ab, Jb = _frame_full(model, st, lp.frame_b, qd is not None)
        d = pb - pa
        dd = vb - va
        ddd = ab - aa
        for nl in lp.pos_dirs:
            nw = Ra @ nl
            phi[r] = nw @ d
            if jacobian:
                A[r] = nw @ (Jb[:3] - Ja[:3]) + cross(nw, d) @ Ja[3:]
            if bias is not None:
                nd = cross(wa, nw)
                ndd = cross(ala, nw) + cross(wa, nd)
                bias[r] = ndd @ d + 2.0 * nd @ dd + nw @ ddd
            r += 1
        for ul, wl in lp.rot_pairs:
            uw, ww = Ra @ ul, Rb @ wl
            phi[r] = uw @ ww
            if jacobian:
                A[r] = cross(uw, ww) @ (Ja[3:] - Jb[3:])
            if bias is not None:
                ud = cross(wa, uw)
                wd = cross(wb, ww)
                udd = cross(ala, uw) + cross(wa, ud)
                wdd = cross(alb, ww) + cross(wb, wd)
                bias[r] = udd @ ww + 2.0 * ud @ wd + uw @ wdd
            r += 1
    return ConstraintTerms(phi, A, bias)


def loop_residual(model, q):
    """Stacked closure residual phi(q), (m,). Batched q (N, n) -> (N, m)."""
    q = np.asarray(q, dtype=np.float64)
    if q.ndim == 2:
        return np.stack([loop_residual(model, qk) for qk in q])
    return constraint_terms(model, q, jacobian=False).phi


def constraint_jacobian(model, q):
    """Constraint Jacobian A(q) = d phi/dq, (m, n)."""
    return constraint_terms(model, q).A


def constraint_bias(model, q, qd):
    """Acceleration bias ``Adot(q, qd) qd`` (m,): the closure acceleration at qdd = 0."""
    if qd is None:
        raise InputError('constraint_bias needs qd')
    return constraint_terms(model, q, qd, jacobian=False).bias


def loop_errors(model, q):
    """Per-loop closure error over the rows the loop constrains.

    Returns dict loop name -> (position error [m], orientation error [-]): the Euclidean
    norms of the loop's position rows and of its orientation rows (``u . w`` ~ the
    misalignment angle for small errors). Directions the cut joint leaves free (e.g. the
    rotation about a revolute cut's axis) do not count.
    """
    phi = constraint_terms(model, q, jacobian=False).phi
    out, r = {}, 0
    for lp in model.loops:
        k, m = len(lp.pos_dirs), lp.nrows
        out[lp.name] = (float(np.linalg.norm(phi[r : r + k])), float(np.linalg.norm(phi[r + k : r + m])))
        r += m
    return out
