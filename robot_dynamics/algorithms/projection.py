"""Closed-chain dynamics and control by the projection-matrix formulation (seed 002, Aghili).

Model: the open (cut) tree of the URDF with generalized coordinates ``q`` (n,) and the stacked
loop closures of the sidecar ``phi(q) = 0`` (m,), ``A = dphi/dq`` (m, n), possibly redundant
(m > n allowed) or rank deficient (singular configurations, planar loops cut by a spatial
joint). Equations of motion, sign convention of seed 002 eq. (19)::

    M(q) qdd + h(q, qd) = f - F,     F = A^T lam,     phi(q) = 0

``f`` (n,) is the generalized input force, ``h`` the Coriolis/centrifugal/gravity vector, and
``F`` the generalized constraint force, i.e. what the system exerts ON the constraint (the
reaction acting on the system is ``-F``). Units are SI (N or N m per joint).

Everything rests on one projector. :func:`pinv_abs` takes the SVD of ``A`` and treats
singular values ``<= eps`` as zero, ``eps`` being ABSOLUTE (in the units of A: m for position
rows, rad for orientation rows). :data:`DEFAULT_EPS` applies unless a call overrides it; the
same ``eps`` is used for ``P``, for ``A+`` in ``C qd``, for the minimum-norm multipliers, for
Newton-Raphson assembly and for velocity projection.

* ``P = I - A+ A`` (eq. 4, 15): orthogonal projector onto the admissible velocities N(A).
* ``C qd = -A+ Adot qd`` (eq. 16), the only form of ``Pdot`` ever used.
* Forward dynamics (eq. 22): ``Mc qdd = P (f - h) + M C qd`` with ``Mc = M + PM - MP``;
  variants ``'Mc_sym'`` (eq. 26-28, SPD) and ``'Mc_gamma'`` (eq. 29), same qdd. Where A has
  full row rank m (every singular value certified above ``eps``) the default ``'Mc'`` takes the
  Schur complement of the KKT system on the tree-sparse ``L^T D L`` factors of ``M``
  (``(A M^-1 A^T) lam = A M^-1 (f - h) + Adot qd``, ``qdd = M^-1 (f - h - A^T lam)``, the same
  qdd, F, lam, P, A+ and sigma; O(n d^2 + m n d + m^2 n) for tree depth d instead of the SVD
  and the O(n^3) products and LU of ``Mc``); ``'Mc_svd'`` always takes the SVD route.
* ``F = f - h - M qdd`` (equivalent to eq. 32), ``lam = (A+)^T F`` (minimum norm, Remark 4).
* PIDC (eq. 45-48), the weighted form (par. 7.2), passive joints (eq. 55-64), constraint-force
  and hybrid control (eq. 51-54 with the corrected ``Cc = M C``).

See docs/projection.md for the errata of the paper corrected here.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from robot_dynamics.algorithms import _projection_kernels as PK
from robot_dynamics.spatial.linalg import svd_projector
from robot_dynamics.algorithms.constraints import describe_idle_motions, idle_motions_of
from robot_dynamics.errors import (
    AssemblyError,
    ConstraintRankError,
    ControllabilityError,
    InputError,
    SingularMassMatrixError,
)

__all__ = [
    'DEFAULT_EPS',
    'VARIANTS',
    'pinv_abs',
    'PInv',
    'ConstrainedDynamics',
    'constrained_forward_dynamics',
    'constrained_forward_dynamics_batch',
    'lagrange_forward_dynamics',
    'LagrangeDynamics',
    'assemble',
    'AssemblyResult',
    'project_velocity',
    'independent_coordinates',
    'IndependentCoordinates',
    'projected_inverse_dynamics',
    'pidc',
    'PIDCResult',
    'controllability',
    'hybrid_control',
    'HybridResult',
    'constraint_force_control',
    'hold_command',
]

#: Default ABSOLUTE rank tolerance on the singular values of A (units of A: m / rad).
#: Singular values <= DEFAULT_EPS are treated as zero (the constraint direction is dropped).
#: Seed 002 par. 6.2: small enough not to drop genuine constraints, large enough that
#: ``C qd = -A+ Adot qd`` does not blow up like drift/sigma next to a singularity.
DEFAULT_EPS = 1e-6

#: Forward-dynamics variants (same qdd): 'Mc' (eq. 22-24; where A has certified full row rank
#: the Schur complement on the L^T D L factors of M, else the SVD route), 'Mc_svd' (eq. 22-24
#: through the SVD projector at every call), 'Mc_sym' (eq. 26-28) and 'Mc_gamma' (eq. 29).
VARIANTS = {
    'Mc': PK.VARIANT_MC,
    'Mc_svd': PK.VARIANT_MC_SVD,
    'Mc_sym': PK.VARIANT_MC_SYM,
    'Mc_gamma': PK.VARIANT_MC_GAMMA,
}

PInv = namedtuple('PInv', 'pinv P rank sigma')
PInv.__doc__ = """Result of :func:`pinv_abs`: A+ (n, m), P = I - A+ A (n, n), rank r, sigma
(min(m, n),) singular values of A in decreasing order."""


def _eps(eps):
    e = DEFAULT_EPS if eps is None else float(eps)
    if not (np.isfinite(e) and e >= 0.0):
        raise InputError(f'rank tolerance eps must be a finite number >= 0, got {eps!r}')
    return e


def pinv_abs(A, eps=None):
    """Moore-Penrose pseudo-inverse and null-space projector with an ABSOLUTE rank tolerance.

    Parameters
    ----------
    A : array_like (m, n)
        Any shape: m < n, m = n, m > n and m = 0 (no constraints: P = I) are all valid.
    eps : float, optional
        Singular values ``<= eps`` count as zero (absolute, in the units of A; default
        :data:`DEFAULT_EPS`). Never relative to sigma_max, unlike ``np.linalg.pinv(rcond=)``,
        which would never truncate a single-row A.

    Returns
    -------
    PInv(pinv, P, rank, sigma)
        ``pinv = V1 Sigma^-1 U1^T`` (n, m), ``P = I - V1 V1^T = V2 V2^T`` (n, n) the orthogonal
        projector onto the numerical null space of A, ``rank`` = number of sigma > eps,
        ``sigma`` (min(m, n),) all singular values (full SVD, ``full_matrices=True``).

    Example
    -------
    >>> pinv_abs([[2e-7, 1e-7]]).P        # below eps: the row is dropped, P = I
    array([[1., 0.],
           [0., 1.]])
    """
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2:
        raise InputError(f'A must be a 2-D array (m, n), got shape {A.shape}')
    if not np.isfinite(A.sum()):
        raise InputError('A contains non-finite values')
    m, n = A.shape
    P = np.empty((n, n))
    Ap = np.zeros((n, m))
    s = np.zeros(min(m, n))
    r = svd_projector(np.ascontiguousarray(A), _eps(eps), P, Ap, s)
    return PInv(Ap, P, int(r), s)


# --------------------------------------------------------------------------- model pack
def _pack(model):
    """Packed model arrays for the kernels (cached on the model; rebuilt if loops change)."""
    key = (id(model.loops), len(model.loops), np.asarray(model.gravity, float).tobytes())
    cached = model.__dict__.get('_rd_projection_pack')
    if cached is not None and cached[0] == key:
        return cached[1]
    m = model.nconstraints
    lpf = np.zeros((len(model.loops), 2), dtype=np.int64)
    lpr = np.zeros((len(model.loops), 2), dtype=np.int64)
    rkind = np.zeros(m, dtype=np.int64)
    ru = np.zeros((m, 3))
    rw = np.zeros((m, 3))
    r = 0
    for k, lp in enumerate(model.loops):
        lpf[k] = model.frame_index(lp.frame_a), model.frame_index(lp.frame_b)
        lpr[k, 0] = r
        if lp.coupling is not None:  # kind 2: ru = (v_j, v_i, q_j), rw = (q_i, multiplier, offset)
            jj, ji = model.joint(lp.coupling[0]), model.joint(lp.coupling[1])
            rkind[r] = 2
            ru[r] = jj.idx_v, ji.idx_v, jj.idx_q
            rw[r] = ji.idx_q, lp.coupling[2], lp.coupling[3]
            r += 1
        for nl in lp.pos_dirs:
            rkind[r] = 0
            ru[r] = nl
            r += 1
        for ul, wl in lp.rot_pairs:
            rkind[r] = 1
            ru[r] = ul
            rw[r] = wl
            r += 1
        lpr[k, 1] = r
    pack = (
        model._par,
        model._geo,
        model._ine,
        np.ascontiguousarray(model.gravity, dtype=float),
        np.ascontiguousarray(model.frame_parent, dtype=np.int64),
        np.ascontiguousarray(model.frame_R, dtype=float),
        np.ascontiguousarray(model.frame_p, dtype=float),
        lpf,
        lpr,
        rkind,
        ru,
        rw,
    )
    model.__dict__['_rd_projection_pack'] = (key, pack)
    return pack


def _kin_pack(pack):
    """The subset of the pack used by the pure-kinematics kernels (no inertia/gravity)."""
    return (pack[0], pack[1]) + pack[4:]


def _vec(x, n, name, check=True):
    a = np.asarray(x, dtype=np.float64)
    if a.shape != (n,):
        raise InputError(f'{name} must have shape ({n},), got {a.shape}')
    if check and not np.isfinite(a @ a):
        raise InputError(f'{name} contains non-finite values')
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


def _variant(variant):
    try:
        return VARIANTS[variant]
    except KeyError:
        raise InputError(f'variant must be one of {sorted(VARIANTS)}, got {variant!r}') from None


# --------------------------------------------------------------------------- forward dynamics
_CD_FIELDS = 'qdd F lam rank sigma P Cqd M h phi A bias Apinv kinetic potential gamma variant eps'


class ConstrainedDynamics(namedtuple('ConstrainedDynamics', _CD_FIELDS)):
    """Result of :func:`constrained_forward_dynamics` (all at the given state).

    qdd (n,)        joint accelerations [rad/s^2 | m/s^2]
    F (n,)          generalized constraint force, ``M qdd + h = f - F``, ``F in R(A^T)``
    lam (m,)        minimum-norm multipliers ``(A+)^T F`` (``A^T lam = F`` whenever F in R(A^T);
                    unique only if rank A = m)
    rank            numerical rank of A at tolerance ``eps``
    sigma (min(m,n),) singular values of A (decreasing)
    P (n, n)        projector onto N(A);  Cqd (n,) ``= -A+ Adot qd`` (eq. 16)
    M (n, n), h (n,) tree inertia and bias (gravity included) ; phi (m,), A (m, n),
    bias (m,) ``= Adot qd`` ; Apinv (n, m) ; kinetic, potential [J] ; gamma (Mc_gamma only)
    """

    __slots__ = ()

    @property
    def sigma_min(self):
        """Smallest singular value of A kept by the rank decision, ``sigma[rank - 1]`` (0 if
        rank = 0, inf without constraints). Structurally zero rows (the out-of-plane rows of
        a planar loop) do not count; it tends to eps when a singularity is approached."""
        if len(self.sigma) == 0:
            return np.inf
        return float(self.sigma[self.rank - 1]) if self.rank > 0 else 0.0

    @property
    def energy(self):
        """Total mechanical energy T + U [J]."""
        return self.kinetic + self.potential


def _cfd_raw(model, pack, q, qd, tau, variant_code, gamma, eps):
    st, r, T, U, g, out = PK.cfd_new(pack, q, qd, tau, variant_code, gamma, eps)
    if st == 1:
        raise InputError('constrained_forward_dynamics: q, qd or tau contains non-finite values')
    if st == 2:
        raise SingularMassMatrixError(
            None,
            f"constrained_forward_dynamics: the inertia matrix of '{model.name}' (or its "
            f'constraint inertia matrix) is not positive definite at q = {q}: the '
            f'projection method needs M > 0 (seed 002, Prop. 2); a joint that moves only '
            f'massless links makes M singular: give those links a (small) mass',
        )
    return out, int(r), T, U, g


def constrained_forward_dynamics(model, q, qd, tau, variant='Mc', gamma=None, eps=None):
    """Forward dynamics of the closed-chain system by the projection method (seed 002).

    Valid for redundant loop rows and through Jacobian singularities: directions with
    singular value ``<= eps`` are dropped from the constraint.

    Parameters
    ----------
    model : Model (URDF tree + loops sidecar)
    q, qd : (n,) state of the cut tree (should satisfy phi(q) = 0, A qd = 0)
    tau : (n,) generalized input force ``f`` (zero on passive joints, by the caller)
    variant : 'Mc' (eq. 22-24: where rank A = m is certified, the Schur complement on the
        L^T D L factors of M, else the SVD projector and the LU of Mc), 'Mc_svd' (eq. 22-24,
        always the SVD route), 'Mc_sym' (eq. 26-28, SPD, Cholesky) or 'Mc_gamma' (eq. 29).
        All give the same qdd.
    gamma : float, optional
        'Mc_gamma' only, in inertia units; default ``||M||_2``.
    eps : float, optional
        Absolute rank tolerance (default :data:`DEFAULT_EPS`).

    Returns
    -------
    ConstrainedDynamics
        ``.qdd``, ``.F`` (sign: ``M qdd + h = tau - F``), ``.lam``, ``.rank``, ``.sigma``, ``.P``
        and the intermediate terms.

    Example
    -------
    >>> res = constrained_forward_dynamics(model, q, qd, np.zeros(model.nv))
    >>> res.qdd, res.F, res.lam
    """
    n = model.nv
    q = _vec(q, model.nq, 'q', False)  # finiteness is checked by the kernel (status 1)
    qd = _vec(qd, n, 'qd', False)
    tau = _vec(tau, n, 'tau', False)
    code = _variant(variant)
    g = 0.0 if gamma is None else float(gamma)
    if code == PK.VARIANT_MC_GAMMA and gamma is not None and not g > 0.0:
        raise InputError(f'gamma must be > 0, got {gamma!r}')
    e = _eps(eps)
    out, r, T, U, g = _cfd_raw(model, _pack(model), q, qd, tau, code, g, e)
    qdd, F, lam, P, s, M, h, phi, A, bias, Ap, Cqd = out
    return ConstrainedDynamics(
        qdd, F, lam, r, s, P, Cqd, M, h, phi, A, bias, Ap, T, U, g if code == PK.VARIANT_MC_GAMMA else None, variant, e
    )


def constrained_forward_dynamics_batch(model, q, qd, tau, variant='Mc', gamma=None, eps=None, threads=True):
    """Joint accelerations of N states in one compiled call (sample after sample, the same
    kernel as the simulator's stages): qdd of :func:`constrained_forward_dynamics` only.

    Parameters
    ----------
    q : (N, nq) or (nq,);  qd, tau : (N, n) or (n,)
        States of the cut tree and generalized input forces [SI], batch axis first.
    variant, gamma, eps : as :func:`constrained_forward_dynamics`.
    threads : bool
        Spread the samples over numba's threads (``numba.get_num_threads()``, default the
        machine's cores; ``NUMBA_NUM_THREADS`` sets it) when N > 1 (default), or compute them
        one after the other in the calling thread (False). Same results bit for bit.

    Returns
    -------
    qdd : (N, n) or (n,) joint accelerations [rad/s^2 | m/s^2].

    Raises
    ------
    InputError
        Wrong shapes, or a non-finite q, qd or tau (the sample is named).
    SingularMassMatrixError
        M (or the constraint inertia matrix) is not positive definite at a sample (named).
    """
    n = model.nv
    Q = np.asarray(q, dtype=np.float64)
    single = Q.ndim == 1
    Q, QD, TAU = (np.ascontiguousarray(np.atleast_2d(np.asarray(x, dtype=np.float64))) for x in (q, qd, tau))
    N = Q.shape[0]
    for x, w, name in ((Q, model.nq, 'q'), (QD, n, 'qd'), (TAU, n, 'tau')):
        if x.ndim != 2 or x.shape != (N, w):
            raise InputError(f'{name} must have shape ({N}, {w}) (or ({w},) for one state), got {np.shape(x)}')
    code = _variant(variant)
    g = 0.0 if gamma is None else float(gamma)
    if code == PK.VARIANT_MC_GAMMA and gamma is not None and not g > 0.0:
        raise InputError(f'gamma must be > 0, got {gamma!r}')
    out = np.empty((N, n))
    rank = np.empty(N, dtype=np.int64)
    if threads and N > 1:
        status = np.zeros(N, dtype=np.int64)
        PK.cfd_batch_parallel(_pack(model), Q, QD, TAU, code, g, _eps(eps), out, rank, status)
        bad = np.flatnonzero(status)
        st, k = (int(status[bad[0]]), int(bad[0])) if bad.size else (0, -1)
    else:
        st, k = PK.cfd_batch(_pack(model), Q, QD, TAU, code, g, _eps(eps), out, rank)
    if st == 1:
        raise InputError(f'constrained_forward_dynamics_batch: q, qd or tau of sample {k} contains non-finite values')
    if st == 2:
        raise SingularMassMatrixError(
            None,
            f"constrained_forward_dynamics_batch: the inertia matrix of '{model.name}' (or its constraint "
            f'inertia matrix) is not positive definite at sample {k}, q = {Q[k]} (seed 002, Prop. 2)',
        )
    return out[0] if single else out


def _terms(model, q, qd, eps):
    """All state-dependent terms (M, h, A, P, A+, C qd, ...) at (q, qd), tau = 0."""
    return constrained_forward_dynamics(model, q, qd, np.zeros(model.nv), 'Mc', None, eps)


LagrangeDynamics = namedtuple('LagrangeDynamics', 'qdd F lam rows')
LagrangeDynamics.__doc__ = """Result of :func:`lagrange_forward_dynamics`: qdd (n,), F = A_r^T lam
(n,), lam (len(rows),) the unique multipliers of the selected rows, rows (index array)."""


def lagrange_forward_dynamics(model, q, qd, tau, rows=None, rcond=1e-10):
    """Classical Lagrange-multiplier forward dynamics (seed 002 App. B, eq. 74-75): TEST ORACLE.

    ``lam = (A M^-1 A^T)^-1 [A M^-1 (f - h) + Adot qd]``, ``qdd = M^-1 (f - h - A^T lam)``
    (eq. 75 without the spurious ``+cdot``, erratum). Computed from the readable Python
    routes (:func:`~robot_dynamics.algorithms.constraints.constraint_terms`, ``crba``,
    ``nonlinear_effects``), independently of the compiled projection kernels.

    Parameters
    ----------
    rows : index array or None
        Constraint rows to use (default all). A must have full row rank on them: e.g. the
        in-plane rows of a planar loop cut by a revolute joint.
    rcond : float
        Relative tolerance on the eigenvalues of ``A M^-1 A^T``.

    Raises
    ------
    ConstraintRankError
        If ``A M^-1 A^T`` is singular (redundant rows, singular configuration).
    """
    from robot_dynamics.algorithms.constraints import constraint_terms
    from robot_dynamics.algorithms.dynamics import crba, nonlinear_effects

    n = model.nv
    q = _vec(q, model.nq, 'q')
    qd = _vec(qd, n, 'qd')
    f = _vec(tau, n, 'tau')
    ct = constraint_terms(model, q, qd)
    idx = np.arange(len(ct.phi)) if rows is None else np.asarray(rows, dtype=np.int64)
    A, b = ct.A[idx], ct.bias[idx]
    M = crba(model, q)
    h = nonlinear_effects(model, q, qd)
    Minv_AT = np.linalg.solve(M, A.T)
    Minv_fh = np.linalg.solve(M, f - h)
    S = A @ Minv_AT
    ev = np.linalg.eigvalsh(0.5 * (S + S.T)) if len(idx) else np.ones(1)
    if len(idx) and not ev[0] > rcond * max(ev[-1], 1e-300):
        raise ConstraintRankError(
            f"lagrange_forward_dynamics: A M^-1 A^T of '{model.name}' is singular "
            f'(eigenvalues {ev}); A has redundant or degenerate rows - use the projection '
            f'method (constrained_forward_dynamics)'
        )
    lam = np.linalg.solve(S, A @ Minv_fh + b) if len(idx) else np.zeros(0)
    qdd = Minv_fh - Minv_AT @ lam
    return LagrangeDynamics(qdd, A.T @ lam, lam, idx)


# --------------------------------------------------------------------------- assembly
AssemblyResult = namedtuple('AssemblyResult', 'q iterations residual rank')
AssemblyResult.__doc__ = """Result of :func:`assemble`: q (nq,) closed configuration, iterations
(Newton and least-squares steps taken), residual: the true closure residual ||r(q)|| [m | rad]
(:func:`~robot_dynamics.algorithms.constraints.closure_residual`), rank of A restricted to the
free joints."""


def _joint_mask(model, joints, default):
    """Boolean (n,) mask from None / 'independent' / 'actuated' / names / indices."""
    if joints is None:
        joints = default
    if isinstance(joints, str):
        cache = model.__dict__.setdefault('_rd_joint_masks', {})
        key = (joints, tuple(model.independent), tuple(model.actuated))
        hit = cache.get(key)
        if hit is not None:
            return hit[0].copy(), hit[1]
        res = _joint_mask_uncached(model, joints)
        cache[key] = (res[0].copy(), res[1])
        return res
    return _joint_mask_uncached(model, joints)


def _joint_mask_uncached(model, joints):
    n = model.nv
    if isinstance(joints, str):
        if joints == 'independent':
            idx = model.independent_indices
        elif joints == 'actuated':
            idx = model.actuated_indices
        elif joints == 'none':
            idx = np.zeros(0, dtype=np.int64)
        elif joints == 'all':
            idx = np.arange(n)
        else:
            idx = np.array([model.joint_index(joints)])
    else:
        idx = np.array(
            [j if isinstance(j, (int, np.integer)) else model.joint_index(j) for j in joints], dtype=np.int64
        )
    mask = np.zeros(n, dtype=bool)
    if len(idx):
        if np.any((idx < 0) | (idx >= n)):
            raise InputError(f'joint index out of range 0..{n - 1}: {idx}')
        mask[idx] = True
    return mask, idx


_CLOSURE_KIND = {
    'weld': PK.CLOSURE_LOG,
    'weld6d': PK.CLOSURE_LOG,
    'prismatic': PK.CLOSURE_LOG,
    'revolute': PK.CLOSURE_AXIS,
    'cylindrical': PK.CLOSURE_AXIS,
    'planar': PK.CLOSURE_AXIS,
    'universal': PK.CLOSURE_UNIVERSAL,
}


def _closure_pack(model):
    """Arrays of :func:`~robot_dynamics.algorithms._projection_kernels.closure_rows`: the
    true closure rows of every loop in one compiled pass.

    Kinematic pack rows per loop: its position (or coupling) rows, then (if it constrains the rotation) the
    nine rows ``e_i . (R e_j)`` (pairs (e_i in frame_a, e_j in frame_b)), i.e. the entries of
    the relative rotation ``R = R_a^T R_b``; their Jacobian rows are ``(e_i x R e_j) . D``
    with ``D = R_a^T (J_a - J_b)`` the angular Jacobians (3, n) in frame_a coordinates,
    recovered as ``D = C^T rows / 2`` (``C^T C = 2 I`` for the nine ``c_ij = e_i x R e_j``).
    Returns (kin, kind (L,), lrows (L, 4), basis (L, 3, 3)); cached on the model.
    """
    key = id(model.loops), len(model.loops)
    cached = model.__dict__.get('_rd_closure_pack')
    if cached is not None and cached[0] == key:
        return cached[1]
    L = len(model.loops)
    rk, ru, rw, lpr = [], [], [], []
    kind = np.zeros(L, dtype=np.int64)
    lrows = np.zeros((L, 4), dtype=np.int64)
    basis = np.zeros((L, 3, 3))
    eye = np.eye(3)
    base = _kin_pack(_pack(model))
    b_lpr, b_rk, b_ru, b_rw = base[6], base[7], base[8], base[9]
    out = 0
    for i, lp in enumerate(model.loops):
        r0 = len(rk)
        for br in range(b_lpr[i, 0], b_lpr[i, 1]):  # position and coupling rows as in phi
            if b_rk[br] != 1:
                rk.append(int(b_rk[br]))
                ru.append(b_ru[br])
                rw.append(b_rw[br])
        rot = -1
        if len(lp.rot_pairs):
            kind[i] = _CLOSURE_KIND[lp.type]
            rot = len(rk)
            for a in range(3):
                for b in range(3):
                    rk.append(1)
                    ru.append(eye[a])
                    rw.append(eye[b])
            if kind[i] == PK.CLOSURE_AXIS:  # (t1, t2, k) from the rows (t1, k), (t2, k)
                basis[i] = lp.rot_pairs[0, 0], lp.rot_pairs[1, 0], lp.rot_pairs[0, 1]
            elif kind[i] == PK.CLOSURE_UNIVERSAL:
                basis[i, :2] = lp.rot_pairs[0]
        lrows[i] = r0, (rot if rot >= 0 else len(rk)) - r0, rot, out
        out += lp.nrows
        lpr.append((r0, len(rk)))
    m = len(rk)
    kin = base[:5] + (
        base[5],
        np.array(lpr, dtype=np.int64).reshape(-1, 2),
        np.array(rk, dtype=np.int64),
        np.array(ru, dtype=float).reshape(m, 3),
        np.array(rw, dtype=float).reshape(m, 3),
    )
    res = (kin, kind, lrows, basis)
    model.__dict__['_rd_closure_pack'] = (key, res)
    return res


def _closure_terms(model, q, jacobian=True):
    """True closure rows r (m,) [m | rad] (:func:`robot_dynamics.algorithms.constraints.closure_residual`,
    compiled) and, with ``jacobian``, their Jacobian J (m, nv) with respect to the velocity
    coordinates (``r(q (+) dv) = r + J dv + O(dv^2)``)."""
    kin, kind, lrows, basis = _closure_pack(model)
    m = model.nconstraints
    r = np.empty(m)
    J = np.empty((m, model.nv)) if jacobian else np.empty((0, model.nv))
    PK.closure_rows(kin, np.ascontiguousarray(q, dtype=np.float64), kind, lrows, basis, jacobian, r, J)
    return r, (J if jacobian else None)


def _closure_norm(model, q):
    """||true closure rows|| at q (= ||phi|| when no loop constrains a rotation)."""
    return float(np.linalg.norm(_closure_terms(model, q, False)[0]))


def _worst_loop(model, q):
    from robot_dynamics.algorithms.constraints import closure_errors

    errs = closure_errors(model, q)
    if not errs:
        return ''
    name = max(errs, key=lambda k: max(errs[k]))
    ep, eo = errs[name]
    return f"loop '{name}': position error {ep:.3e} m, orientation error {eo:.3e} rad"


def _lm(model, q, free, tol, max_iter):
    """Levenberg-Marquardt on the true closure rows over the free velocity coordinates.

    Steps ``dv`` (nv,) (zero on the fixed coordinates) applied on the manifold
    (``q <- model.integrate(q, dv)``); damping updated by the gain ratio (Nielsen).
    Returns (q, ||r||, iterations, stationary): ``stationary`` when the gradient or the step
    vanished before ``||r|| <= tol`` (a local minimum / saddle of the closure error).
    """
    r, J = _closure_terms(model, q)
    cost = 0.5 * float(r @ r)
    nf = int(free.sum())
    if nf == 0:  # every joint held: nothing to move
        return q, np.sqrt(2.0 * cost), 0, True
    Jf = J[:, free]
    H = Jf.T @ Jf
    mu = 1e-3 * max(float(np.max(np.diag(H))) if H.size else 1.0, 1e-12)
    nu = 2.0
    it = 0
    for it in range(1, max_iter + 1):
        if np.sqrt(2.0 * cost) <= tol:
            return q, np.sqrt(2.0 * cost), it - 1, False
        g = Jf.T @ r
        if float(np.max(np.abs(g))) <= 1e-10 * np.sqrt(2.0 * cost):
            return q, np.sqrt(2.0 * cost), it - 1, True
        dx = np.linalg.solve(H + mu * np.eye(nf), -g)
        if float(np.linalg.norm(dx)) <= 1e-15 * (1.0 + float(np.linalg.norm(q))):
            return q, np.sqrt(2.0 * cost), it - 1, True
        dv = np.zeros(model.nv)
        dv[free] = dx
        qn = model.integrate(q, dv)
        rn, Jn = _closure_terms(model, qn)
        cn = 0.5 * float(rn @ rn)
        pred = 0.5 * float(dx @ (mu * dx - g))
        rho = (cost - cn) / pred if pred > 0.0 else -1.0
        if np.isfinite(cn) and rho > 0.0:
            if cost - cn <= 1e-10 * cost:  # creeping: a non-zero minimum (or saddle) of the error
                return qn, np.sqrt(2.0 * cn), it, True
            q, r, J, cost = qn, rn, Jn, cn
            Jf = J[:, free]
            H = Jf.T @ Jf
            mu *= max(1.0 / 3.0, 1.0 - (2.0 * rho - 1.0) ** 3)
            nu = 2.0
        else:
            mu *= nu
            nu *= 2.0
            if mu > 1e16 * max(float(np.max(np.diag(H))), 1.0):
                return q, np.sqrt(2.0 * cost), it, True
    return q, np.sqrt(2.0 * cost), it, False


def _perturbation_scale(model):
    """Per velocity coordinate: 1 for rotations [rad], a length of the model [m] for
    translations (the median distance between consecutive joint frames, at least 0.01 m)."""
    d = np.linalg.norm(model.p_fixed, axis=1)
    d = d[d > 0]
    L = max(float(np.median(d)) if len(d) else 0.1, 0.01)
    return np.where(model.joint_types == 0, 1.0, L)


def assemble(
    model,
    q_independent=None,
    q_guess=None,
    *,
    fixed=None,
    tol=1e-12,
    max_iter=50,
    eps=None,
    fallback=True,
    starts=64,
    seed=0,
):
    """Close the loops from a guess: Newton-Raphson, then damped least squares from several starts.

    1. Newton-Raphson with the absolute-tolerance projector (seed 002 eq. 39) on the loop rows
       ``phi``: ``q <- q (+) (-A_free+ phi(q))``, ``A_free`` being A with the columns of the
       fixed joints zeroed (so they keep their values); with nothing fixed this is the
       paper's minimum-norm position projection.
    2. If that fails, or ends where ``phi`` vanishes but the loops are not closed (the false
       zeros of the ``u . w`` rows: flipped cut frames, see
       :mod:`robot_dynamics.algorithms.constraints`), Levenberg-Marquardt on the true closure
       rows (:func:`~robot_dynamics.algorithms.constraints.closure_residual`: rotation-log
       rows, zero only at the closed loop) over the free joints, on the configuration
       manifold (``model.integrate``, so floating bases and ball joints are handled), from the
       guess, then from random perturbations of its free joints (scales growing from 0.05 to
       1.5 rad, translations scaled by the model's length), then from random configurations
       of the free joints (``model.random_configuration``), ``starts`` in all, deterministic
       (``seed``); each least-squares result is polished by Newton-Raphson. The first start
       that closes the loops wins (the guess first: the result stays near it when it can).

    A result is returned only when its true closure residual is ``<= tol``.

    Parameters
    ----------
    q_independent : (k,) optional
        Values of the fixed joints (default fixed set: ``model.independent``). They
        overwrite the corresponding entries of the start guess.
    q_guess : (nq,) optional
        Start configuration (default ``model.reference_q()``); it selects the assembly
        branch (elbow up/down, ...).
    fixed : None, 'independent', 'actuated', 'none' or a list of joint names / indices
        Joints held fixed. Default: 'independent' when ``q_independent`` is given, else
        'none' (projection of ``q_guess`` onto the closure manifold).
    tol : float
        Convergence threshold on the true closure residual ``||r||`` (m / rad).
    max_iter : int
        Newton-Raphson iterations of step 1.
    fallback : bool
        Run step 2 (else only Newton-Raphson from the guess).
    starts : int
        Number of step-2 starts (the guess included).
    seed : int
        Seed of the start perturbations.

    Returns
    -------
    AssemblyResult(q, iterations, residual, rank)
        ``residual`` is the true closure residual ``||r(q)|| <= tol``; ``iterations`` counts
        all Newton and least-squares steps; ``rank`` is that of A on the free joints.

    Raises
    ------
    AssemblyError
        No start reached a closed configuration. The message lists the attempts and the
        smallest true closure residual reached (and at which loop); ``AssemblyError.q`` is that
        configuration and ``.residual`` that residual. When every least-squares run stopped at
        a stationary point of the closure error with a non-zero residual, the fixed joints are
        probably outside the workspace (a local minimum is no proof: the message says so).
    """
    pack = _pack(model)
    default = 'independent' if q_independent is not None else 'none'
    mask, idx = _joint_mask(model, fixed, default)
    q = model.reference_q() if q_guess is None else _vec(q_guess, model.nq, 'q_guess').copy()
    if q_independent is not None:
        qi = np.asarray(q_independent, dtype=np.float64).reshape(-1)
        if qi.shape != (len(idx),):
            raise InputError(
                f'q_independent must have shape ({len(idx)},) for the fixed joints '
                f'{[model.joint_names[i] for i in idx]}, got {qi.shape}'
            )
        if np.any(model.q_of_v[idx] < 0):
            raise InputError(
                'q_independent sets one-DOF joints only; a multi-DOF joint is fixed at q_guess: '
                f'{[model.joint_names[i] for i in idx if model.q_of_v[i] < 0]}'
            )
        q[model.q_of_v[idx]] = qi
    if not np.all(np.isfinite(q)):
        raise InputError('assemble: start configuration contains non-finite values')
    if model.multi_dof:
        q = model.normalize(q)
    free = ~mask
    q0 = q.copy()
    one = model.q_of_v[idx][model.q_of_v[idx] >= 0]
    held = [jt for jt in model.joints if mask[jt.v_slice].any()]

    def hold(x):
        """x with the fixed joints at their start values exactly (a least-squares step leaves
        them at round-off level, not at zero)."""
        x[one] = q0[one]
        for jt in held:
            if jt.nv > 1 and mask[jt.v_slice].all():
                x[jt.q_slice] = q0[jt.q_slice]
        return x

    e = _eps(eps)
    phi = np.empty(model.nconstraints)
    it, res, r, ok = PK.nr_project(_kin_pack(pack), q, free, float(tol), int(max_iter), e, False, phi)
    q = hold(q)
    true_res = _closure_norm(model, q) if np.all(np.isfinite(q)) else np.inf
    if ok and true_res <= tol:
        return AssemblyResult(q, int(it), true_res, int(r))
    fixed_at = (
        'fixed joints '
        + ', '.join(
            f'{model.joint_names[i]} = {q0[model.q_of_v[i]]:.6g}' if model.q_of_v[i] >= 0 else model.joint_names[i]
            for i in idx
        )
        if len(idx)
        else 'nothing fixed'
    )
    false_zero = bool(ok)  # phi vanished but the loops are not closed
    if not np.isfinite(true_res):
        true_res = np.inf
    best_q, best = q.copy(), true_res
    if not fallback:
        what = (
            f'Newton-Raphson converged on phi (||phi|| = {res:.3e}) to a configuration that does not '
            f'close the loops (true closure residual {true_res:.3e}: a false zero of the orientation '
            'rows, a flipped cut frame)'
            if false_zero
            else f'Newton-Raphson did not converge in {max_iter} iterations (||phi|| = {res:.3e} > tol = {tol:g})'
        )
        raise AssemblyError(
            f"assemble: loops of '{model.name}' not closed ({fixed_at}): {what}; "
            'try another q_guess, or fallback=True (damped least squares from several starts)',
            q=best_q,
            residual=best,
            iterations=int(it),
        )
    rng = np.random.default_rng(seed)
    scale = _perturbation_scale(model)[free]
    nstarts = max(int(starts), 1)
    sigmas = np.geomspace(0.05, 1.5, 6)
    npert = min(nstarts - 1, len(sigmas))
    total = int(it)
    n_stationary = 0
    for k in range(nstarts):
        if k == 0:
            qs = q0.copy()
        elif k <= npert:  # a perturbation of the guess
            dv = np.zeros(model.nv)
            dv[free] = sigmas[k - 1] * scale * rng.standard_normal(int(free.sum()))
            qs = model.integrate(q0, dv)
        else:  # a random configuration of the free joints (another assembly branch)
            qs = model.random_configuration(rng)
            for jt in held:
                qs[jt.q_slice] = q0[jt.q_slice]
        qs, lres, lit, stationary = _lm(model, qs, free, max(tol, 1e-10), 200)
        total += lit
        n_stationary += bool(stationary)
        if lres < best:
            best_q, best = qs.copy(), lres
        if lres > 1e-6:
            continue
        it2, res2, r2, ok2 = PK.nr_project(_kin_pack(pack), qs, free, float(tol), 10, e, False, phi)
        qs = hold(qs)
        total += int(it2)
        tr = _closure_norm(model, qs) if ok2 else np.inf
        if ok2 and tr <= tol:
            return AssemblyResult(qs, total, tr, int(r2))
        if tr < best:
            best_q, best = qs.copy(), tr
    where = _worst_loop(model, best_q)
    raise AssemblyError(
        f"assemble: no closed configuration of '{model.name}' found ({fixed_at}): tried "
        f'Newton-Raphson ({int(it)} iterations, '
        + ('converged to a false zero of the orientation rows' if false_zero else f'||phi|| = {res:.3e}')
        + f') and Levenberg-Marquardt on the true closure residual from the guess, {npert} '
        f'perturbations of it (seed {seed}, scales {sigmas[0]:.2g}..{sigmas[npert - 1] if npert else 0:.2g} rad) and '
        f'{nstarts - 1 - npert} random configurations of the free joints, '
        f'{n_stationary} of {nstarts} stopping at a stationary point of the closure error; the '
        f'smallest true closure residual reached is {best:.3e} > tol = {tol:g} ({where}); the '
        'fixed joints may put the loops out of reach (a local minimum is not a proof), else try '
        'another q_guess or more starts',
        q=best_q,
        residual=best,
        iterations=total,
    )


_VP = {'none': PK.VP_NONE, 'euclidean': PK.VP_EUCLIDEAN, 'mass': PK.VP_MASS}


def project_velocity(model, q, qd, mode='euclidean', eps=None):
    """Project qd onto the admissible velocities N(A(q)) (numerical null space at ``eps``).

    mode 'euclidean': ``P qd`` (minimum Euclidean change); 'mass': the kinetic-energy-minimal
    correction ``qd - M^-1 V1 (V1^T M^-1 V1)^-1 V1^T qd`` (V1: the rank-r right singular
    vectors of A); 'none': unchanged. Returns the projected qd (n,).
    """
    n = model.nv
    if mode not in _VP:
        raise InputError(f'velocity projection mode must be one of {sorted(_VP)}, got {mode!r}')
    q = _vec(q, model.nq, 'q')
    v = _vec(qd, n, 'qd').copy()
    pack = _pack(model)
    PK.vel_project(pack, q, v, _VP[mode], _eps(eps))
    return v


# --------------------------------------------------------------------------- independent coords
IndependentCoordinates = namedtuple(
    'IndependentCoordinates', 'theta thetad Lam Lamdot_thetadot sigma_min is_chart indices'
)
IndependentCoordinates.__doc__ = """Result of :func:`independent_coordinates` (seed 002 A3).

theta (k,), thetad (k,) the independent coordinates and rates; Lam (n, k) with
``qd = Lam thetad``, ``A Lam = 0``, ``J_theta Lam = I``; Lamdot_thetadot (n,) the joint
acceleration for ``thetadd = 0`` (so ``qdd = Lam thetadd + Lamdot_thetadot``); sigma_min the
smallest singular value of ``K = [A; J_theta]``; is_chart ``sigma_min > eps`` (theta is a
valid local chart, brief pitfall 14); indices the joint indices of theta (None for a
callable theta)."""


def _theta_spec(model, theta, q, qd):
    """(theta, thetad, J_theta (k,n), Jdot_theta qd (k,), indices) for joint or callable theta."""
    n = model.nv
    if callable(theta):
        th, J, Jdqd = theta(q, qd)
        J = np.atleast_2d(np.asarray(J, dtype=float))
        return (np.atleast_1d(np.asarray(th, float)), J @ qd, J, np.atleast_1d(np.asarray(Jdqd, float)), None)
    _, idx = _joint_mask(model, theta, 'independent')
    J = np.zeros((len(idx), n))
    J[np.arange(len(idx)), idx] = 1.0
    return q[model.q_of_v[idx]].copy(), qd[idx].copy(), J, np.zeros(len(idx)), idx


def independent_coordinates(model, q, qd, theta='independent', eps=None, terms=None):
    """Lambda and Lambdadot thetadot for independent coordinates theta (seed 002 A3, eq. 40-43).

    ``theta`` is 'independent' (``model.independent``), 'actuated', a list of joint names or
    indices, or a callable ``theta(q, qd) -> (theta (k,), J_theta (k, n), Jdot_theta qd (k,))``
    (task coordinates, e.g. a tool position). With ``K = [A; J_theta]``::

        Lam = K+ [0; I_k],   Lamdot_thetadot = K+ [-Adot qd; -Jdot_theta qd]

    (absolute-tolerance pseudo-inverse; K must have full column rank n, which for
    ``theta = actuated joints`` is exactly the passive-joint controllability condition (64)).
    """
    n = model.nv
    q = _vec(q, model.nq, 'q')
    qd = _vec(qd, n, 'qd')
    e = _eps(eps)
    d = _terms(model, q, qd, e) if terms is None else terms
    th, thd, J, Jdqd, idx = _theta_spec(model, theta, q, qd)
    k = len(th)
    Kmat = np.vstack([d.A, J])
    pi = pinv_abs(Kmat, e)
    m = d.A.shape[0]
    rhs = np.zeros((m + k, k))
    rhs[m:] = np.eye(k)
    Lam = pi.pinv @ rhs
    Ldt = pi.pinv @ np.concatenate([-d.bias, -Jdqd])
    smin = float(pi.sigma[n - 1]) if len(pi.sigma) >= n else 0.0
    return IndependentCoordinates(th, thd, Lam, Ldt, smin, smin > e, idx)


# --------------------------------------------------------------------------- PIDC
class PIDCResult(
    namedtuple('PIDCResult', 'tau tau_actuated u f_par f_perp rank sigma_min_AS controllable residual message e ed')
):
    """Result of :func:`projected_inverse_dynamics` / :func:`pidc`.

    tau (n,)          generalized force to apply (zero on passive joints) [N m | N]
    tau_actuated (p,) the same, on the actuated joints only (order of ``actuated``)
    u (n,)            desired joint acceleration (``Lamdot thetadot + Lam v``)
    f_par (n,)        ``P tau`` (the potent part, eq. 5); f_perp ``(I - P) tau`` (impotent)
    rank              rank of A (eps)
    sigma_min_AS      smallest singular value of ``[A; S_a]`` (controllability, eq. 64)
    controllable      ``sigma_min_AS > eps`` and the actuators span the potent forces
    residual          norm of the potent force the actuators cannot produce (0 if
                      controllable; in W-coordinates when weighted)
    message           '' or a human-readable diagnostic (never silent on failure)
    e, ed (k,)        tracking errors (pidc only, else None)
    """

    __slots__ = ()


def _sqrtW(W, n):
    if W is None:
        return None, None, None
    Wm = np.asarray(W, dtype=float)
    if Wm.shape == (n,):
        if not np.all(Wm > 0):
            raise InputError('W must be positive')
        s = np.sqrt(Wm)
        return np.diag(s), np.diag(1.0 / s), np.diag(1.0 / Wm)
    if Wm.shape != (n, n) or not np.allclose(Wm, Wm.T):
        raise InputError(f'W must be (n,) positive or (n, n) symmetric positive definite, got shape {Wm.shape}')
    w, V = np.linalg.eigh(Wm)
    if not w[0] > 0:
        raise InputError('W must be positive definite')
    return (V * np.sqrt(w)) @ V.T, (V / np.sqrt(w)) @ V.T, (V / w) @ V.T


def _actuation(d, b, W, act_idx, eps, n):
    """Minimum (weighted) norm generalized force f = S_a^T u_a with P_W W^-1/2 (f - b) = 0.

    Returns (tau, residual, rank(G), n - rank_W): with W = I and all joints actuated this is
    eq. (45)/(48) ``f = P b``; with passive joints it equals eq. (62) ``(I + H) f_par``.
    """
    Wh, Wmh, Winv = _sqrtW(W, n)
    if Wh is None:
        PW, rW = d.P, d.rank
        bW = b
    else:
        piW = pinv_abs(d.A @ Wmh, eps)
        PW, rW = piW.P, piW.rank
        bW = Wmh @ b
    fpar_W = PW @ bW
    p = len(act_idx)
    if p == n and np.array_equal(act_idx, np.arange(n)):
        f = fpar_W if Wh is None else Wh @ fpar_W
        return f, 0.0, n - rW, n - rW
    G = PW[:, act_idx] if Wh is None else PW @ Wmh[:, act_idx]
    if Winv is None:
        pi = pinv_abs(G, eps)
        ua = pi.pinv @ fpar_W
        rG = pi.rank
    else:
        Wa = Winv[np.ix_(act_idx, act_idx)]
        L = np.linalg.cholesky(Wa)
        Gt = np.linalg.solve(L, G.T).T  # G L^-T
        pi = pinv_abs(Gt, eps)
        ua = np.linalg.solve(L.T, pi.pinv @ fpar_W)
        rG = pi.rank
    residual = float(np.linalg.norm(G @ ua - fpar_W))
    f = np.zeros(n)
    f[act_idx] = ua
    return f, residual, rG, n - rW


def controllability(model, q, actuated='model', eps=None):
    """``sigma_min([A; S_a])`` at q (seed 002 eq. 64): > eps iff locking the actuated joints
    leaves no admissible motion, i.e. the passive-joint PIDC can realise any motion."""
    n = model.nv
    q = _vec(q, model.nq, 'q')
    _, idx = _joint_mask(model, 'actuated' if actuated == 'model' else actuated, 'actuated')
    d = _terms(model, q, np.zeros(n), _eps(eps))
    S = np.zeros((len(idx), n))
    S[np.arange(len(idx)), idx] = 1.0
    s = pinv_abs(np.vstack([d.A, S])).sigma
    return float(s[n - 1]) if len(s) >= n else 0.0


def projected_inverse_dynamics(
    model,
    q,
    qd,
    thetadd=None,
    *,
    u=None,
    theta='independent',
    W=None,
    actuated='model',
    eps=None,
    strict=False,
    terms=None,
):
    """Minimum-(weighted-)norm actuation realising a desired motion (seed 002 eq. 45-48, 55-64).

    The desired motion is given either in independent coordinates, ``thetadd`` (k,) with
    ``u = Lamdot thetadot + Lam thetadd`` (:func:`independent_coordinates`), or directly as a
    constraint-consistent joint acceleration ``u`` (n,). Then ``b = h + M u`` and

    * all joints actuated, W = None: ``tau = P b`` (eq. 45 with f_perp = 0, the minimum
      Euclidean norm of all forces producing the motion, eq. 48);
    * W (n,) or (n, n) SPD: minimises ``tau^T W^-1 tau`` (par. 7.2):
      ``tau = W^1/2 P_W W^-1/2 b`` with ``P_W`` the projector of ``A W^-1/2``;
    * passive joints (``actuated`` = 'model' uses ``model.actuated``): ``tau = S_a^T u_a`` with
      the minimum-norm ``u_a`` such that ``P S_a^T u_a = P b`` (equal to eq. 62); exact iff
      ``rank [A; S_a] = n`` (eq. 64). Otherwise the least-squares ``u_a`` is returned with
      ``controllable=False``, the unrealisable ``residual`` and a ``message``, or
      :class:`ControllabilityError` with ``strict=True``.

    Returns :class:`PIDCResult`. ``tau`` is in the sign convention ``M qdd + h = tau - F``.
    """
    n = model.nv
    q = _vec(q, model.nq, 'q')
    qd = _vec(qd, n, 'qd')
    e = _eps(eps)
    d = _terms(model, q, qd, e) if terms is None else terms
    if u is None:
        if thetadd is None:
            raise InputError('projected_inverse_dynamics needs thetadd or u')
        ic = independent_coordinates(model, q, qd, theta, e, terms=d)
        u = ic.Lamdot_thetadot + ic.Lam @ np.atleast_1d(np.asarray(thetadd, float))
    else:
        u = _vec(u, n, 'u')
    return _pidc_from_u(model, d, u, W, actuated, e, strict, None, None)


def _pidc_from_u(model, d, u, W, actuated, e, strict, err, errd):
    n = model.nv
    if isinstance(actuated, str) and actuated == 'model':
        actuated = 'actuated'
    _, idx = _joint_mask(model, actuated, 'actuated')
    b = d.h + d.M @ u
    tau, residual, rG, dof = _actuation(d, b, W, idx, e, n)
    S = np.zeros((len(idx), n))
    S[np.arange(len(idx)), idx] = 1.0
    sv = pinv_abs(np.vstack([d.A, S]), e).sigma
    smin = float(sv[n - 1]) if len(sv) >= n else 0.0
    ok = bool(smin > e and rG == dof)
    msg = ''
    if not ok:
        names = [model.joint_names[i] for i in idx]
        msg = (
            f"passive-joint PIDC of '{model.name}': not controllable with actuated joints "
            f'{names} (sigma_min([A; S_a]) = {smin:.3e} <= eps = {e:g} or the actuators '
            f'span {rG} of {dof} admissible directions); the motion is realised only in '
            f'the least-squares sense, unrealisable potent force = {residual:.3e}'
        )
        idle = idle_motions_of(model, d.A, idx)
        if idle:
            msg += (
                f'; {len(idle)} idle motion(s) (free with the actuated joints still, no effort on them): '
                + '; '.join(describe_idle_motions(idle))
            )
        if strict:
            raise ControllabilityError(msg)
    fpar = d.P @ tau
    return PIDCResult(tau, tau[idx].copy(), u, fpar, tau - fpar, d.rank, smin, ok, residual, msg, err, errd)


def _gain(G, k):
    G = np.asarray(G, dtype=float)
    if G.ndim == 0:
        return np.eye(k) * float(G)
    if G.shape == (k,):
        return np.diag(G)
    if G.shape == (k, k):
        return G
    raise InputError(f'gain must be a scalar, ({k},) or ({k}, {k}), got {G.shape}')


def pidc(
    model,
    q,
    qd,
    theta_d,
    thetad_d,
    thetadd_d,
    GP,
    GD,
    *,
    theta='independent',
    W=None,
    actuated='model',
    eps=None,
    strict=False,
):
    """Projected inverse dynamics control (seed 002 eq. 45-47, passive joints eq. 55-64).

    ``e = theta_d - theta``, ``u = Lamdot thetadot + Lam (thetadd_d + GD ed + GP e)`` (eq. 46),
    then :func:`projected_inverse_dynamics` with that ``u``. With an exact model and a
    controllable actuation the closed loop is ``e'' + GD e' + GP e = 0`` (Thm 4).

    GP, GD: scalar, (k,) or (k, k) gains [1/s^2, 1/s]. ``theta`` as in
    :func:`independent_coordinates` (default ``model.independent``; e.g. 'actuated').
    Returns :class:`PIDCResult` with ``e`` and ``ed`` filled.
    """
    n = model.nv
    q = _vec(q, model.nq, 'q')
    qd = _vec(qd, n, 'qd')
    e_ = _eps(eps)
    d = _terms(model, q, qd, e_)
    ic = independent_coordinates(model, q, qd, theta, e_, terms=d)
    k = len(ic.theta)
    err = np.atleast_1d(np.asarray(theta_d, float)) - ic.theta
    errd = np.atleast_1d(np.asarray(thetad_d, float)) - ic.thetad
    v = np.atleast_1d(np.asarray(thetadd_d, float)) + _gain(GD, k) @ errd + _gain(GP, k) @ err
    u = ic.Lamdot_thetadot + ic.Lam @ v
    res = _pidc_from_u(model, d, u, W, actuated, e_, strict, err, errd)
    if not ic.is_chart:
        msg = f'theta is not a valid chart here (sigma_min([A; J_theta]) = {ic.sigma_min:.3e})' + (
            '; ' + res.message if res.message else ''
        )
        res = res._replace(controllable=False, message=msg)
        if strict:
            raise ControllabilityError(msg)
    return res


# --------------------------------------------------------------------------- force control
HybridResult = namedtuple('HybridResult', 'tau f_par f_perp u_F F_d e_f qdd_pred F_pred')
HybridResult.__doc__ = """Result of :func:`hybrid_control`: tau (n,) the force to apply
(all joints actuated), f_par = P tau, f_perp = (I-P) tau, u_F (n,) force command (eq. 52),
F_d (n,) desired constraint force (in N(A)-perp), e_f (n,) force error used, qdd_pred (n,) and
F_pred (n,) the predicted acceleration and constraint force with this tau (exact model)."""


def hybrid_control(
    model,
    q,
    qd,
    *,
    u=None,
    thetadd=None,
    theta='independent',
    F_d=None,
    lam_d=None,
    F_meas=None,
    GF=0.0,
    GI=0.0,
    e_int=None,
    eps=None,
):
    """Hybrid motion / constraint-force control (seed 002 eq. 51-54, corrected).

    ``tau = h + mu Cc qd + (I + mu) P M u + u_F`` (eq. 54 with ``Cc = M C``, erratum; the
    paper prints ``C``), ``mu = (I - P) M Mc^-1``, ``u_F = F_d + GF e_f + GI int e_f`` (eq. 52),
    ``e_f = F_d - F_meas`` (zero when ``F_meas`` is None), ``F_d = A^T lam_d`` projected on
    N(A)-perp. With an exact model, ``qdd = u`` and ``F = u_F``: motion and force decouple.

    The motion part is ``u`` (n,) or ``thetadd`` (k,) as in :func:`projected_inverse_dynamics`;
    with neither, ``thetadd = 0``. ``e_int`` (n,) is the integral of ``e_f`` kept by the caller
    (sampled loops with a one-step-delayed ``F_meas`` need ``GF < 1``, brief A5). All joints
    must be actuated (with passive joints f_perp is used up by eq. 62, par. 7.4).
    """
    n = model.nv
    q = _vec(q, model.nq, 'q')
    qd = _vec(qd, n, 'qd')
    e = _eps(eps)
    d = _terms(model, q, qd, e)
    if u is None:
        ic = independent_coordinates(model, q, qd, theta, e, terms=d)
        td = np.zeros(len(ic.theta)) if thetadd is None else np.atleast_1d(np.asarray(thetadd, float))
        u = ic.Lamdot_thetadot + ic.Lam @ td
    else:
        u = _vec(u, n, 'u')
    I_P = np.eye(n) - d.P
    if lam_d is not None:
        Fd = d.A.T @ np.asarray(lam_d, dtype=float)
    elif F_d is not None:
        Fd = _vec(F_d, n, 'F_d')
    else:
        Fd = np.zeros(n)
    Fd = I_P @ Fd
    ef = np.zeros(n) if F_meas is None else Fd - I_P @ _vec(F_meas, n, 'F_meas')
    ei = np.zeros(n) if e_int is None else I_P @ _vec(e_int, n, 'e_int')
    uF = Fd + float(GF) * ef + float(GI) * ei
    M, P = d.M, d.P
    PMu = P @ (M @ u)
    MCqd = M @ d.Cqd
    Mc = M + P @ M - M @ P
    y = np.linalg.solve(Mc, MCqd + PMu)  # Mc^-1 (Cc qd + P M u)
    tau = d.h + PMu + I_P @ (M @ y) + uF  # = h + mu Cc qd + (I + mu) P M u + u_F
    fpar = P @ tau
    return HybridResult(tau, fpar, tau - fpar, uF, Fd, ef, y, tau - d.h - M @ y)


def constraint_force_control(model, q, qd, F_d=None, lam_d=None, **kw):
    """Constraint-force control with no motion command (``thetadd = 0``): see
    :func:`hybrid_control` (same keywords)."""
    return hybrid_control(model, q, qd, F_d=F_d, lam_d=lam_d, **kw)


def hold_command(model, q, qd, damping=0.0):
    """Generalized force (n,) that balances gravity statically with the actuated joints only
    (minimum norm, passive-joint aware), minus ``damping`` * actuated joint velocities."""
    n = model.nv
    res = projected_inverse_dynamics(model, q, np.zeros(n), u=np.zeros(n))
    tau = res.tau.copy()
    idx = model.actuated_indices
    tau[idx] -= damping * np.asarray(qd, float)[idx]
    return tau
