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

A ``coupling`` loop (joint ``j`` follows joint ``i``) has the single row
``phi = q_j - (multiplier q_i + offset)`` (rad or m, as joint j), with the constant Jacobian row
``e_j - multiplier e_i`` and ``Adot qd = 0``.
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
    'IdleMotion',
    'idle_motions',
    'describe_idle_motions',
    'idle_motions_of',
]

ConstraintTerms = namedtuple('ConstraintTerms', 'phi A bias')
IdleMotion = namedtuple('IdleMotion', 'direction joints')
IdleMotion.__doc__ = """One motion the loops and the actuated joints leave free: ``direction`` (n,) a
joint-velocity direction (its largest entry 1), ``joints`` the list of (velocity-coordinate name,
component) pairs it moves, largest first."""
#: relative singular-value threshold of the idle-motion null space (as the loader's rank checks)
IDLE_RANK_TOL = 1e-9
ConstraintTerms.__doc__ = """phi (m,), A (m, n), bias = Adot qd (m,) (None if qd not given)."""


def constraint_row_names(model):
    """Names ``<loop>/<row>`` of the m stacked constraint rows."""
    return [r for lp in model.loops for r in lp.row_names]


def _frame_full(model, st, name, with_vel):
    fidx = model.frame_index(name)
    R, p, w, v, al, a = _frame_state(model, st, fidx)
    J, _ = _lwa_columns(model, st, fidx, p)
    return R, p, w, v, al, a, J


def _coupling_row(model, lp, q, A_row):
    """Residual of a coupling loop at q (nq,); writes its Jacobian row into A_row (n,) if given."""
    joint, ref, mult, offset = lp.coupling
    jj, ji = model.joint(joint), model.joint(ref)
    if A_row is not None:
        A_row[jj.idx_v] += 1.0
        A_row[ji.idx_v] -= mult
    return float(q[jj.idx_q] - (mult * q[ji.idx_q] + offset))


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
            if lp.coupling is not None:
                phi[r] = _coupling_row(model, lp, q, None)
                r += 1
                continue
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
        if lp.coupling is not None:
            phi[r] = _coupling_row(model, lp, q, A[r] if jacobian else None)
            if bias is not None:
                bias[r] = 0.0
            r += 1
            continue
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
    rotation about a revolute cut's axis) do not count. A coupling loop's error ``|phi|`` is a
    position error [m] if the coupled joint is prismatic, an orientation error [rad] if revolute.
    """
    phi = constraint_terms(model, q, jacobian=False).phi
    out, r = {}, 0
    for lp in model.loops:
        k, m = len(lp.pos_dirs), lp.nrows
        if lp.coupling is not None:  # [m] for a prismatic joint, [rad] for a revolute one
            k = int(model.joint(lp.coupling[0]).kind == 'prismatic')
        out[lp.name] = (float(np.linalg.norm(phi[r : r + k])), float(np.linalg.norm(phi[r + k : r + m])))
        r += m
    return out


def idle_motions(model, q=None, actuated=None, tol=IDLE_RANK_TOL):
    """Idle motions at ``q``: the joint velocities that keep every loop closed while every actuated
    joint stands still, i.e. the null space of ``[A(q); S_a]`` (A the (m, n) constraint Jacobian,
    S_a the rows of the identity that select the actuated velocity coordinates).

    A rod with spherical ends that spins about its own axis, a floating base, or a mechanism
    degree of freedom that no actuator drives is such a motion. They are facts of the
    description, not errors: forward dynamics and simulation treat them as free (zero
    generalised force), inverse dynamics puts no effort on them.

    Parameters: q (nq,) default ``model.reference_q()``; actuated: joint names (default
    ``model.actuated``); tol: relative singular-value threshold. Returns a list of
    :class:`IdleMotion`, one per dimension of the null space. The basis is sparse where the
    motions are independent: reduced so that each motion has a unit component on a pivot
    coordinate of its own and none on the others' pivots (two spinning rods give one motion
    each, not a mix).
    """
    q = model.reference_q() if q is None else np.asarray(q, dtype=np.float64)
    n = model.nv
    acts = model.actuated if actuated is None else list(actuated)
    idx = []
    for j in acts:
        if j in model._joint_index:
            idx.append(model.joint_index(j))
        else:  # a multi-DOF joint: every velocity coordinate of it
            sl = model.v_index(j)
            idx.extend(range(sl.start, sl.stop))
    A = constraint_terms(model, q).A if model.loops else np.zeros((0, n))
    return idle_motions_of(model, A, idx, tol)


def idle_motions_of(model, A, idx, tol=IDLE_RANK_TOL):
    """:func:`idle_motions` from the constraint Jacobian ``A`` (m, n) and the actuated velocity
    coordinates ``idx`` (indices into v)."""
    n = model.nv
    idx = list(idx)
    M = np.vstack([A, np.eye(n)[idx]]) if idx else A
    if M.shape[0] == 0:
        N = np.eye(n)
    else:
        _, s, Vt = np.linalg.svd(M)
        r = int((s > tol * max(1.0, float(s.max()) if s.size else 0.0)).sum())
        N = Vt[r:].T  # (n, k)
    k = N.shape[1]
    if k == 0:
        return []
    # reduced basis: pivots by QR with column pivoting of N^T (the best-conditioned k coordinates)
    from scipy.linalg import qr

    _, _, piv = qr(N.T, pivoting=True)
    piv = piv[:k]
    B = N @ np.linalg.inv(N[piv, :])  # (n, k): B[piv] = I
    out = []
    for c in range(k):
        d = B[:, c] / np.abs(B[:, c]).max()
        d[np.abs(d) < 1e-10] = 0.0
        order = np.argsort(-np.abs(d))
        out.append(IdleMotion(d, [(model.joint_names[i], float(d[i])) for i in order if d[i] != 0.0]))
    return out


def describe_idle_motions(motions, most=6):
    """One line per idle motion: the coordinates it moves with their components."""
    lines = []
    for i, mo in enumerate(motions):
        parts = ', '.join(f'{j} {v:+.3g}' for j, v in mo.joints[:most])
        more = f' (+{len(mo.joints) - most} more)' if len(mo.joints) > most else ''
        lines.append(f'idle motion {i + 1}: {parts}{more}')
    return lines
