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

The orientation rows vanish at the closed loop but also at some wrong relative rotations: a
weld's rows ``(y_a . z_b, z_a . x_b, x_a . y_b)`` vanish for the 120 deg rotations about
``(1, 1, 1)`` and for some 180 deg flips, a revolute cut's rows ``(t1 . k_b, t2 . k_b)`` when
the two axes are anti-parallel. They stay the local constraint (their Jacobian and bias are
exact and smooth), and :func:`closure_residual` / :func:`closure_errors` measure the true
closure on the relative rotation ``R = R_a^T R_b`` (zero only at the closed loop):

=========================================  ===============================================
type                                       orientation closure rows [rad]
=========================================  ===============================================
weld, prismatic                            ``log(R)`` (3,), norm = rotation angle in [0, pi]
revolute, cylindrical, planar              ``theta (k x k_b) / |k x k_b|`` on (t1, t2),
                                           ``k_b = R k``, norm ``theta = angle(k, k_b)``
                                           in [0, pi] (anti-parallel axes: pi)
universal                                  ``asin(a1 . R a2)`` (0 when a1 is normal to a2)
spherical, point_on_line, point_on_plane   none
=========================================  ===============================================

The position rows are the rows of ``phi`` (no false zeros: the directions are fixed in
frame_a), and so is a coupling row. The closure rows have the layout (and row names) of ``phi``.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from robot_dynamics.spatial.batch import cross
from robot_dynamics.spatial.lie import _jl_inv_so3, _log_so3, hat
from robot_dynamics.errors import InputError
from robot_dynamics.algorithms.kinematics import _frame_pose, _frame_state, _lwa_columns, world_state

__all__ = [
    'ConstraintTerms',
    'constraint_terms',
    'loop_residual',
    'constraint_jacobian',
    'constraint_bias',
    'loop_errors',
    'closure_residual',
    'closure_errors',
    'ClosureError',
    'orientation_closure',
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


ClosureError = namedtuple('ClosureError', 'position orientation')
ClosureError.__doc__ = """Closure error of one loop: ``position`` [m], the norm of its position rows;
``orientation`` [rad], the angle of the constrained relative rotation (:func:`orientation_closure`),
zero only when the loop is closed."""


def _axis_basis(lp):
    """(t1, t2, k) of an axis-type loop (frame_a coordinates), from its orientation rows."""
    return lp.rot_pairs[0, 0], lp.rot_pairs[1, 0], lp.rot_pairs[0, 1]


def orientation_closure(lp, R, jacobian=False):
    """True orientation closure rows of loop ``lp`` from its relative rotation.

    Parameters
    ----------
    lp : Loop
    R : (3, 3) ``R_a^T R_b``, the rotation of frame_b in frame_a.
    jacobian : bool
        Also return ``E = de / domega`` (k, 3), omega (3,) the angular velocity of frame_b
        relative to frame_a in frame_a coordinates (``Rdot = hat(omega) R``).

    Returns
    -------
    e : (k,) [rad], k = ``len(lp.rot_pairs)`` (see the module table); ``|e|`` is the
        orientation error of :func:`closure_errors`.
    E : (k, 3) [rad / rad] (only with ``jacobian``).
    """
    k = len(lp.rot_pairs)
    if k == 0:
        return (np.zeros(0), np.zeros((0, 3))) if jacobian else np.zeros(0)
    if lp.type in ('weld', 'weld6d', 'prismatic'):
        e = _log_so3(R)
        return (e, _jl_inv_so3(e)) if jacobian else e
    if lp.type == 'universal':
        a1, a2 = lp.rot_pairs[0]
        v = R @ a2
        c = float(np.clip(a1 @ v, -1.0, 1.0))
        e = np.array([np.arcsin(c)])
        if not jacobian:
            return e
        # dc = a1 . (omega x v) = (v x a1) . omega
        return e, (cross(v, a1) / max(np.sqrt(1.0 - c * c), 1e-12))[None, :]
    # revolute, cylindrical, planar: the axis k of frame_a against the same axis of frame_b
    t1, t2, ax = _axis_basis(lp)
    v = R @ ax
    sv = cross(ax, v)
    s = float(np.sqrt(sv @ sv))
    c = float(ax @ v)
    th = float(np.arctan2(s, c))
    g = th / s if s > 1e-300 else 1.0
    ev = g * sv
    e = np.array([t1 @ ev, t2 @ ev])
    if not jacobian:
        return e
    K = hat(ax)
    if s > 1e-9:
        # de/dv = g K + sv (((c - g) / s^2) sv^T K - k^T)
        dedv = g * K + np.outer(sv, ((c - g) / (s * s)) * (sv @ K) - ax)
    else:
        dedv = g * K
    dedw = dedv @ hat(-v)  # dv = omega x v = -hat(v) omega
    return e, np.stack([t1 @ dedw, t2 @ dedw])


def _loop_poses(model, q):
    """(loop, R_a, p_a, R_b, p_b) of every loop (world placements of the cut frames; None for
    a coupling loop, which has no cut frames)."""
    st = world_state(model, q)
    for lp in model.loops:
        if lp.coupling is not None:
            yield lp, None, None, None, None
            continue
        Ra, pa = _frame_pose(model, st, model.frame_index(lp.frame_a))
        Rb, pb = _frame_pose(model, st, model.frame_index(lp.frame_b))
        yield lp, Ra, pa, Rb, pb


def closure_residual(model, q):
    """True closure rows (m,) [m | rad]: the position rows of ``phi``, the orientation closure
    rows of :func:`orientation_closure` (zero only at the closed loop) and the coupling rows of
    ``phi``, stacked in the row order of ``phi``. Batched q (N, nq) -> (N, m)."""
    q = np.asarray(q, dtype=np.float64)
    if q.ndim == 2:
        return np.stack([closure_residual(model, qk) for qk in q])
    out = []
    for lp, Ra, pa, Rb, pb in _loop_poses(model, q):
        if lp.coupling is not None:
            out.append(np.array([_coupling_row(model, lp, q, None)]))
            continue
        out.append(lp.pos_dirs @ (Ra.T @ (pb - pa)))
        out.append(orientation_closure(lp, Ra.T @ Rb))
    return np.concatenate(out) if out else np.zeros(0)


def closure_errors(model, q):
    """Per-loop true closure error, zero only at the closed loop.

    Returns dict loop name -> :class:`ClosureError` ``(position [m], orientation [rad])``:
    the norm of the loop's position rows (the distance between the cut-frame origins along
    the constrained directions) and the angle of the constrained relative rotation
    ``R = R_a^T R_b`` (weld, prismatic: ``|log R|``; revolute, cylindrical, planar: the angle
    between the cut axis of frame_a and that of frame_b, pi for anti-parallel axes;
    universal: ``|asin(a1 . R a2)|``; 0 for the types that leave the rotation free).
    Directions the cut joint leaves free do not count. A coupling loop's error ``|phi|`` is a
    position error [m] if the coupled joint is prismatic, an orientation error [rad] if
    revolute. Computes the cut-frame placements only.
    """
    out = {}
    for lp, Ra, pa, Rb, pb in _loop_poses(model, q):
        if lp.coupling is not None:
            err = abs(_coupling_row(model, lp, q, None))
            prismatic = model.joint(lp.coupling[0]).kind == 'prismatic'
            out[lp.name] = ClosureError(err if prismatic else 0.0, 0.0 if prismatic else err)
            continue
        ep = float(np.linalg.norm(lp.pos_dirs @ (Ra.T @ (pb - pa))))
        eo = float(np.linalg.norm(orientation_closure(lp, Ra.T @ Rb)))
        out[lp.name] = ClosureError(ep, eo)
    return out


def loop_errors(model, q):
    """Per-loop closure error: the same as :func:`closure_errors`.

    Returns dict loop name -> :class:`ClosureError` ``(position [m], orientation [rad])``
    (a tuple: ``ep, eo = loop_errors(model, q)[name]``), zero only when the loop is closed
    (unlike the norms of the ``u . w`` rows of ``phi``, which also vanish at some wrong
    rotations, see the module docstring).
    """
    return closure_errors(model, q)


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
