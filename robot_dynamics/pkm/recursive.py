"""Recursive Lie-group 2nd-order time derivatives of the inverse dynamics of fully parallel PKM
(seed 004: Mueller, Kumar, Kordik, RA-L 2023), with the errata of the brief corrected.

For a kinematically non-redundant PKM with ``L = 6`` structurally identical serial limbs of
``N = 6`` one-DOF joints each (6-UPS Gough-Stewart platform: U = 2R, P actuated, S = 3R) and the
platform pose as task coordinates (``P_t = D_t = I``)::

    u   = J_IK^-T  sum_l F_l^T Q_l                                      (eq. 14)
    ud  = J_IK^-T (sum_l (F_l^T Qd_l + Fd_l^T Q_l) - Jd_IK^T u)           (eq. 19)
    udd = J_IK^-T (sum_l (F_l^T Qdd_l + 2 Fd_l^T Qd_l + Fdd_l^T Q_l)
                   - Jdd_IK^T u - 2 Jd_IK^T ud)                          (eq. 20)

with, per limb: the IK of ``C_N(theta) = C_p`` -- closed form for a decoupled U-P-S limb
(:func:`decoupled_ik_geometry`: S centre -> leg vector -> prismatic coordinate, U angles by
Paden-Kahan subproblem 2, S angles by subproblems 2 + 1; each two-fold choice follows the warm
start), Newton otherwise; the body-fixed platform Jacobian
``J_p = [Ad_{C_p^-1 C_i} X_i]`` (eq. 22); its derivatives from Lemma 1 written as the backward
suffix sums ``DV_i = DV_{i+1} + J_{p,i+1} thd_{i+1}`` (brief par. 2.6, immune to E5/E10)
``Jd_i = -ad(DV_i) J_i``, ``Jdd_i = -ad(DVd_i) J_i - ad(DV_i) Jd_i``,
``Jddd_i = -ad(DVdd_i) J_i - 2 ad(DVd_i) Jd_i - ad(DV_i) Jdd_i`` (= corrected eq. 25, E4);
higher-order IK ``theta^(nu) = J_t^-1 (V_t^(nu-1) - c^nu)`` with
``c^4 = Jddd thd + 3 Jdd thdd + 3 Jd thddd`` (E1, E2); ``Fd = -F Jd F``,
``Fdd = -F (Jdd F + 2 Jd Fd)`` (E3); the forward twist recursion to 3rd order and the backward
Newton-Euler recursion with its 1st and 2nd derivatives over all N bodies (loop range E8),
gravity as option G1 (gravity-free kinematics, gravity only in the ``M_i`` terms: exact for any
inertia, E9/E10). The cut-joint bodies of limbs 1..L-1 are massless, so their ``Q`` entries
vanish and ``sum F^T Q = sum Fbar^T Qbar`` (E7).

All limbs are evaluated together in one compiled call (limb axis), and a batch of time samples
is accepted (leading axis; the IK of each sample is warm-started from the previous one: the
closed form picks the branch nearest to it, Newton starts there).

Frames and units (as the rest of the package): twists linear first ``(v, w)`` in m/s, rad/s;
the task twist ``V_t`` and its derivatives are **body-fixed in the platform frame** (the
platform link of the URDF); ``Vd_t = d/dt V_t`` of the body-fixed coordinates (not the classical
acceleration: they differ by ``w x v``, brief Q8). ``u`` in N (prismatic) or N m (revolute), in
the order of ``model.actuated``.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from robot_dynamics.errors import InputError, PKMSingularityError, PKMStructureError  # noqa: F401 (public here too)
from robot_dynamics.pkm import _recursive_kernels as RK
from robot_dynamics.pkm.general import GeneralPKM, general_pkm, inverse_dynamics_d2_general, pkm_cache

__all__ = [
    'PKMStructureError',
    'PKMSingularityError',
    'PKMLimbs',
    'limbs_from_model',
    'decoupled_ik_geometry',
    'inverse_dynamics_d2',
    'inverse_dynamics_d2_full',
    'ID2Result',
    'ID2Data',
    'task_space_dynamics',
    'limb_to_tree',
]


class PKMLimbs:
    """Limb data of a PKM in the POE form of the paper (eq. 21), all limbs of equal length N.

    Attributes: ``BR`` (L, N, 3, 3), ``Bp`` (L, N, 3) reference pose of body i in body i-1
    (i = 0: in the world); ``X`` (L, N, 6) joint screws in the body frames (linear first);
    ``M`` (L, N, 6, 6) body inertias in the body frames (kg, kg m, kg m^2); the last body
    frame of every limb is the platform frame. ``act`` (L,) index of the actuated joint in each
    limb; ``tree_index`` (L, N) index in the model's q of each limb joint (-1 for cut joints);
    ``limb_names`` (L,); ``order`` (L,) limb of each actuated joint of ``model.actuated``;
    ``platform`` frame name; ``gravity`` (3,). IK of each limb (:func:`decoupled_ik_geometry`,
    detected from ``BR, Bp, X``): ``ik_mode`` (L,) 1 closed form / 0 Newton, ``ik_geom``
    (L, IKG_SIZE) its geometry, ``ik_info`` (L,) why a limb is (not) closed-form.
    """

    def __init__(self, BR, Bp, X, M, act, tree_index, limb_names, order, platform, gravity, model_name=''):
        self.BR = np.ascontiguousarray(BR, float)
        self.Bp = np.ascontiguousarray(Bp, float)
        self.X = np.ascontiguousarray(X, float)
        self.M = np.ascontiguousarray(M, float)
        self.act = np.ascontiguousarray(act, np.int64)
        self.tree_index = np.asarray(tree_index, np.int64)
        self.limb_names = list(limb_names)
        self.order = np.asarray(order, np.int64)
        self.platform = platform
        self.gravity = np.asarray(gravity, float)
        self.model_name = model_name
        self.L, self.N = self.X.shape[:2]
        self.th_ref = np.zeros((self.L, self.N))
        self.lower = self.upper = None
        self.joint_label = None  # (L*N) names of the limb joints, limb by limb (with the limits)
        self.ik_mode, self.ik_geom, self.ik_info = decoupled_ik_geometry(self.BR, self.Bp, self.X)

    def __repr__(self):
        return (
            f'PKMLimbs({self.model_name!r}: {self.L} limbs x {self.N} joints, platform '
            f'{self.platform!r}, limbs {self.limb_names})'
        )


def _limb_decoupled(BR, Bp, X, tol):
    """Geometry pack of the closed-form IK of one limb (see :func:`decoupled_ik_geometry`), or
    ``(None, reason)``."""
    N = X.shape[0]
    if N != 6:
        return None, f'{N} joints (closed form needs R R P R R R)'
    C = np.eye(4)
    ws, vs = [], []
    Ps = [np.zeros(3)]
    for i in range(N):
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = BR[i], Bp[i]
        C = C @ T
        R, p = C[:3, :3], C[:3, 3]
        w = R @ X[i, 3:]
        ws.append(w)
        vs.append(R @ X[i, :3] + np.cross(p, w))
        Ps.append(p)
    MR, Mp = C[:3, :3], C[:3, 3]
    L = 1.0 + max(np.linalg.norm(q) for q in Ps)  # length scale of the tolerances
    kind = []
    for i in range(N):
        nw = np.linalg.norm(ws[i])
        if abs(nw - 1.0) <= 1e-9 and abs(ws[i] @ vs[i]) <= tol * L:
            kind.append('R')
        elif nw <= 1e-12 and np.linalg.norm(vs[i]) > 1e-9:
            kind.append('P')
        else:
            kind.append('?')
    if ''.join(kind) != 'RRPRRR':
        return None, f'joint types {"".join(kind)} (closed form needs RRPRRR)'
    w = [wi / max(np.linalg.norm(wi), 1e-300) for wi in ws]
    q = [np.cross(w[i], vs[i]) for i in range(N)]  # a point on each axis

    def meet(idx):
        A = sum(np.eye(3) - np.outer(w[i], w[i]) for i in idx)
        b = sum((np.eye(3) - np.outer(w[i], w[i])) @ q[i] for i in idx)
        x = np.linalg.solve(A, b)
        res = max(np.linalg.norm((np.eye(3) - np.outer(w[i], w[i])) @ (x - q[i])) for i in idx)
        return x, res

    for i, j, what in ((0, 1, 'U axes 1, 2'), (3, 4, 'S axes 4, 5'), (4, 5, 'S axes 5, 6')):
        if np.linalg.norm(np.cross(w[i], w[j])) <= 1e-6:
            return None, f'{what} parallel'
    a, ra = meet((0, 1))
    if ra > tol * L:
        return None, f'U axes 1, 2 do not intersect (distance {2 * ra:.3g} m)'
    c0, rc = meet((3, 4, 5))
    if rc > tol * L:
        return None, f'S axes 4, 5, 6 do not meet in one point (residual {rc:.3g} m)'
    n = vs[2]
    pc = c0 - a
    r5 = w[4] - (w[4] @ w[5]) * w[5]
    r5 /= np.linalg.norm(r5)
    G = np.zeros(RK.IKG_SIZE)
    G[RK.IKG_A : RK.IKG_A + 3] = a
    G[RK.IKG_CL : RK.IKG_CL + 3] = MR.T @ (c0 - Mp)
    G[RK.IKG_PC : RK.IKG_PC + 3] = pc
    G[RK.IKG_N : RK.IKG_N + 3] = n
    for o, v in (
        (RK.IKG_W0, w[0]),
        (RK.IKG_W1, w[1]),
        (RK.IKG_W3, w[3]),
        (RK.IKG_W4, w[4]),
        (RK.IKG_W5, w[5]),
        (RK.IKG_R5, r5),
        (RK.IKG_M5, MR.T @ w[5]),
        (RK.IKG_MR, MR.T @ r5),
        (RK.IKG_C01, np.cross(w[0], w[1])),
        (RK.IKG_C34, np.cross(w[3], w[4])),
    ):
        G[o : o + 3] = v
    G[RK.IKG_NN] = n @ n
    G[RK.IKG_NB] = n @ pc
    G[RK.IKG_PP] = pc @ pc
    G[RK.IKG_K01] = w[0] @ w[1]
    G[RK.IKG_K34] = w[3] @ w[4]
    return G, 'closed form (U-P-S decoupled)'


def decoupled_ik_geometry(BR, Bp, X, tol=1e-9):
    """Detect, per limb, the decoupled R R P R R R (U - P - S) structure that has a closed-form
    IK, from the joint screws at the reference configuration (theta = 0):

    joints 1, 2 revolute (zero pitch) with intersecting, non-parallel axes (U centre a);
    joint 3 prismatic (usually along the line from a to the S centre c0, as in a UPS leg; any
    direction is accepted: the closed form solves ``|c0 - a + n t3| = |c - a|``); joints 4, 5, 6
    revolute with axes through one point c0 (4 not parallel to 5, 5 not parallel to 6).
    Distances are tested to ``tol`` times (1 + the largest body-origin distance of the limb).

    Returns ``(ik_mode (L,) int64, ik_geom (L, IKG_SIZE), ik_info (L,) str)``: mode 1 and the
    geometry pack of :func:`_recursive_kernels.limb_ik_cf` for the decoupled limbs, 0 (Newton
    IK) and the reason otherwise.
    """
    BR, Bp, X = np.asarray(BR, float), np.asarray(Bp, float), np.asarray(X, float)
    L = X.shape[0]
    mode = np.zeros(L, np.int64)
    geom = np.zeros((L, RK.IKG_SIZE))
    info = []
    for l in range(L):
        G, why = _limb_decoupled(BR[l], Bp[l], X[l], tol)
        info.append(why)
        if G is not None:
            mode[l] = 1
            geom[l] = G
    return mode, geom, info


def limbs_from_model(model, platform=None):
    """The limb data (:class:`PKMLimbs`) of a 6-limb PKM of a robot_dynamics Model, for the
    compiled route.

    The limbs are those of :func:`robot_dynamics.pkm.general.general_pkm` (the reader of the
    loops sidecar: disjoint serial chains from the root, one carrying the ``platform`` frame,
    every other one ending at a cut joint to it, whose cut frames are ``frame_a`` (limb side)
    and ``frame_b`` (on the platform); the cut joint becomes virtual joints about the axes of
    ``frame_a``, 0 at the reference configuration of the sidecar, which must be closed). The
    compiled route needs 6 limbs of 6 joints covering every joint of the model, ``spherical``
    (or ``point``) cut joints (R(x) R(y) R(z)) and one actuated joint per limb; anything else
    raises :class:`PKMStructureError`. The result is cached on the model.
    """
    model.require_one_dof('the recursive 2nd-order inverse dynamics (PKM limbs)')
    key = ('limbs_from_model', platform)
    cache = pkm_cache(model)
    if key in cache:
        return cache[key]
    p = general_pkm(model, platform)
    name = model.name
    where = f"{model.loops_source or model.source}: model '{name}'"  # file and model in each refusal
    for lb in p.limbs[:-1]:
        if lb.cut not in ('spherical', 'point', 'point3d'):
            raise PKMStructureError(
                f"{where}: loop '{lb.name}' is '{lb.cut}'; the recursive "
                '2nd-order ID supports spherical cut joints (UPS-type limbs)'
            )
    if sum(lb.n for lb in p.limbs) != model.nq:
        raise PKMStructureError(
            f'{where}: the limbs do not cover every joint (SEA rotor joints: the compiled route takes rigid PKM only)'
        )
    Ns = {lb.N for lb in p.limbs}
    if len(Ns) != 1:
        raise PKMStructureError(
            f'{where}: limbs of different length {sorted(Ns)}; the limbs must be structurally identical'
        )
    N = Ns.pop()
    L = len(p.limbs)
    if N != 6 or L != 6:
        raise PKMStructureError(
            f'{where}: {L} limbs x {N} joints; the spatial route needs '
            '6 limbs of 6 joints (delta_p = 6, kinematically non-redundant)'
        )
    BR = np.zeros((L, N, 3, 3))
    Bp = np.zeros((L, N, 3))
    X = np.zeros((L, N, 6))
    M = np.zeros((L, N, 6, 6))
    act = np.zeros(L, np.int64)
    tree_index = -np.ones((L, N), np.int64)
    for l, lb in enumerate(p.limbs):
        if len(lb.act) != 1:
            raise PKMStructureError(f"{where}: limb '{lb.name}' has {len(lb.act)} actuated joints (need exactly 1)")
        act[l] = lb.act[0]
        BR[l], Bp[l], X[l] = lb.B[:, :3, :3], lb.B[:, :3, 3], lb.X
        M[l, : len(lb.M)] = lb.M
        tree_index[l, : lb.n] = lb.tree
    order = np.array([[l for l in range(L) if tree_index[l, act[l]] == j][0] for j in model.actuated_indices])
    out = PKMLimbs(BR, Bp, X, M, act, tree_index, [lb.name for lb in p.limbs], order, p.platform, model.gravity, name)
    out.lower, out.upper = p.lower.reshape(L, N), p.upper.reshape(L, N)
    out.joint_label = list(p.joint_label)
    cache[key] = out
    return out


ID2Result = namedtuple('ID2Result', 'u ud udd theta theta_a J_IK w status')
ID2Result.__doc__ = """Result of :func:`inverse_dynamics_d2_full` (S = samples; squeezed for a
single sample):

u, ud, udd (S, 6): actuator forces and their 1st/2nd time derivatives, ``model.actuated`` order
theta (S, 5, L, N): limb joint coordinates and derivatives 0..4 (limb order, cut joints included)
theta_a (S, 5, 6): actuated joint coordinates and derivatives 0..4 (``model.actuated`` order)
J_IK (S, 3, 6, 6): IK Jacobian ``theta_a_dot = J_IK V_t`` and its 1st/2nd time derivatives
w (S, 3, 6): ``J_IK^T u`` and its derivatives (task-space generalized force, platform frame)
status (S,) int: 0 everywhere (failures raise :class:`PKMSingularityError`)."""


def _batch(x, shape, name):
    a = np.asarray(x, dtype=np.float64)
    if a.shape == shape:
        return a[None], True
    if a.ndim == len(shape) + 1 and a.shape[1:] == shape:
        return a, False
    raise InputError(f'{name} must have shape {shape} or (S, {", ".join(map(str, shape))}), got {a.shape}')


def inverse_dynamics_d2_full(
    model, x, xd, xdd, xddd, xdddd, *, platform=None, gravity=None, theta_guess=None, tol=1e-13, max_iter=30, ik='auto'
):
    """Recursive inverse dynamics of a PKM with its 1st and 2nd time derivatives (seed 004).

    ``model``: a :class:`robot_dynamics.Model` of a 6-limb PKM (spanning tree + spherical cut
    joints, e.g. ``urdf/gough_stewart.urdf``) or a :class:`PKMLimbs`.
    ``x`` (4, 4) or (S, 4, 4): platform pose in the world (homogeneous matrix of the
    ``platform`` frame); ``xd, xdd, xddd, xdddd`` (6,) or (S, 6): body-fixed platform twist
    ``V_t = (v, w)`` [m/s, rad/s] and its 1st, 2nd, 3rd time derivatives (the motion up to snap).
    ``gravity`` (3,) world gravity (default the model's). ``theta_guess`` (L, N) IK start of the
    first sample (default: the reference configuration, all limb angles 0 there).
    ``ik``: ``'auto'`` (default) closed-form IK for the limbs detected as decoupled U-P-S
    (``limbs.ik_mode``, :func:`decoupled_ik_geometry`), Newton (``tol``, ``max_iter``) for the
    others; ``'newton'`` Newton for every limb. Either way every choice of the IK follows the
    warm start (``theta_guess``, then the previous sample).

    Returns :class:`ID2Result`. Raises :class:`PKMSingularityError` if the IK fails or a
    Jacobian is singular, :class:`~robot_dynamics.errors.InputError` on bad shapes/values.
    """
    limbs = model if isinstance(model, PKMLimbs) else limbs_from_model(model, platform)
    X, single = _batch(x, (4, 4), 'x')
    Vs = [_batch(v, (6,), nm)[0] for v, nm in ((xd, 'xd'), (xdd, 'xdd'), (xddd, 'xddd'), (xdddd, 'xdddd'))]
    S = X.shape[0]
    for v, nm in zip(Vs, ('xd', 'xdd', 'xddd', 'xdddd')):
        if v.shape[0] != S:
            raise InputError(f'{nm} has {v.shape[0]} samples, x has {S}')
    if not np.all(np.isfinite(X)):
        raise InputError('x contains non-finite values')
    VT = np.ascontiguousarray(np.stack(Vs, axis=1))
    if not np.all(np.isfinite(VT)):
        raise InputError('the task derivatives contain non-finite values')
    R = np.ascontiguousarray(X[:, :3, :3])
    if np.max(np.abs(np.einsum('sji,sjk->sik', R, R) - np.eye(3))) > 1e-9:
        raise InputError('x: the rotation part is not orthonormal')
    p = np.ascontiguousarray(X[:, :3, 3])
    g = limbs.gravity if gravity is None else np.asarray(gravity, float).reshape(3)
    L, N = limbs.L, limbs.N
    if ik == 'auto':
        mode = limbs.ik_mode
    elif ik == 'newton':
        mode = np.where(limbs.ik_mode == 1, 2, 0).astype(np.int64)
    else:
        raise InputError(f"ik must be 'auto' or 'newton', got {ik!r}")
    th0 = limbs.th_ref if theta_guess is None else np.asarray(theta_guess, float).reshape(L, N)
    TH = np.empty((S, 5, L, N))
    U = np.empty((S, 3, L))
    WT = np.empty((S, 3, 6))
    JIK = np.empty((S, 3, L, 6))
    st = np.empty(S, np.int64)
    RK.pkm_id_d2_batch(
        limbs.BR,
        limbs.Bp,
        limbs.X,
        limbs.M,
        limbs.act,
        g,
        R,
        p,
        VT,
        np.ascontiguousarray(th0),
        tol,
        max_iter,
        TH,
        U,
        WT,
        JIK,
        st,
        mode,
        limbs.ik_geom,
    )
    if limbs.lower is not None:
        out = np.any((TH[:, 0] < limbs.lower - 1e-12) | (TH[:, 0] > limbs.upper + 1e-12), axis=(1, 2))
        st[(st == 0) & out] = 5
    bad = np.nonzero(st)[0]
    if len(bad):
        what = {
            1: 'IK did not converge (pose outside the workspace?)',
            2: 'singular limb Jacobian',
            3: 'singular IK Jacobian J_IK (parallel singularity)',
            4: 'non-finite input',
            5: 'IK solution outside the URDF joint limits',
            6: 'closed-form IK branch ambiguous (warm start between two U or S branches, '
            'near a singular configuration?)',
        }
        detail = what[int(st[bad[0]])]
        if st[bad[0]] == 5:
            detail += ' (' + _outside_limits(limbs, TH[bad[0], 0]) + ')'
        raise PKMSingularityError(
            f'{limbs.model_name}: {len(bad)} of {S} samples failed, first sample {bad[0]}: {detail}',
            bad,
            st,
        )
    o = limbs.order
    u = U[:, :, o]
    th_a = TH[:, :, o, limbs.act[o]]
    J = JIK[:, :, o, :]
    res = ID2Result(u[:, 0], u[:, 1], u[:, 2], TH, th_a, J, WT, st)
    if single:
        res = ID2Result(*(r[0] for r in res))
    return res


class ID2Data:
    """Workspace of the compiled route for one sample at a time (the Model/Data split: the
    constant :class:`PKMLimbs` and preallocated buffers), for a controller or a reference
    generator calling it every period: ``data(x, xd, xdd, xddd, xdddd)`` returns ``(u, ud,
    udd)`` (3, n_a) [N | N m, per s, per s^2] in the order of ``model.actuated``, the same
    numbers as :func:`inverse_dynamics_d2_full` for that sample (tested), with the Python
    overhead of the batch entry cut (measured: 107 -> ~30 us per call on the Gough-Stewart;
    the kernel alone is 18 us). Arguments as there (``x`` (4, 4), the body-fixed task
    derivatives (6,) each); the IK is warm-started from the previous call's solution
    (``theta`` (L, N), reset with :meth:`reset`). After a call, ``theta_a`` (5, n_a) holds the
    actuated joint motion (position .. 4th derivative). Raises :class:`PKMSingularityError`
    (IK failure, singular Jacobians, joint limits) and
    :class:`~robot_dynamics.errors.InputError` (shapes, non-finite input, a rotation part that
    is not orthonormal) like the batch entry; the returned array is reused by the next call.
    """

    def __init__(self, model, platform=None, gravity=None, tol=1e-13, max_iter=30):
        self.limbs = L = model if isinstance(model, PKMLimbs) else limbs_from_model(model, platform)
        self.g = L.gravity if gravity is None else np.asarray(gravity, float).reshape(3)
        self.tol, self.max_iter = float(tol), int(max_iter)
        self.R, self.p, self.VT = np.empty((1, 3, 3)), np.empty((1, 3)), np.empty((1, 4, 6))
        self.TH, self.U = np.empty((1, 5, L.L, L.N)), np.empty((1, 3, L.L))
        self.WT, self.JIK, self.st = np.empty((1, 3, 6)), np.empty((1, 3, L.L, 6)), np.empty(1, np.int64)
        self._o, self._act = L.order, L.act[L.order]
        self._lo = None if L.lower is None else L.lower - 1e-12
        self._hi = None if L.upper is None else L.upper + 1e-12
        self._eye = np.eye(3)
        self.reset()

    def reset(self, theta=None):
        """IK warm start: ``theta`` (L, N) or the reference configuration."""
        L = self.limbs
        self.theta = np.ascontiguousarray(
            L.th_ref if theta is None else np.asarray(theta, float).reshape(L.L, L.N)
        ).copy()

    def __call__(self, x, xd, xdd, xddd, xdddd):
        L = self.limbs
        try:
            X = np.asarray(x, float).reshape(4, 4)
            self.VT[0, 0], self.VT[0, 1], self.VT[0, 2], self.VT[0, 3] = xd, xdd, xddd, xdddd
        except ValueError:
            raise InputError('ID2Data: x must be (4, 4) and the task derivatives (6,) each') from None
        R = self.R[0]
        R[...] = X[:3, :3]
        self.p[0] = X[:3, 3]
        if not np.abs(R @ R.T - self._eye).max() <= 1e-9:
            if not np.all(np.isfinite(R)):
                raise InputError('x contains non-finite values')
            raise InputError('x: the rotation part is not orthonormal')
        RK.pkm_id_d2_batch(
            L.BR,
            L.Bp,
            L.X,
            L.M,
            L.act,
            self.g,
            self.R,
            self.p,
            self.VT,
            self.theta,
            self.tol,
            self.max_iter,
            self.TH,
            self.U,
            self.WT,
            self.JIK,
            self.st,
            L.ik_mode,
            L.ik_geom,
        )
        st = int(self.st[0])
        th = self.TH[0, 0]
        if st == 0 and self._lo is not None and ((th < self._lo).any() or (th > self._hi).any()):
            st = 5
        if st:
            if st == 4:
                raise InputError('x or the task derivatives contain non-finite values')
            extra = f': IK solution outside the URDF joint limits ({_outside_limits(L, th)})' if st == 5 else ''
            raise PKMSingularityError(
                f'{L.model_name}: the sample failed (status {st}, see PKMSingularityError.status){extra}',
                np.array([0]),
                np.array([st]),
            )
        self.theta[...] = th
        self.theta_a = self.TH[0][:, self._o, self._act]
        return self.U[0][:, self._o]


def _outside_limits(limbs, th):
    """``"joint 'X' = v, outside its limits [lo, hi] ..."`` for the first limb joint of the IK
    solution ``th`` (L, N) [rad | m] outside the URDF limits of :class:`PKMLimbs` ``limbs``."""
    out = (th < limbs.lower - 1e-12) | (th > limbs.upper + 1e-12)
    l, k = (int(i) for i in np.argwhere(out)[0])
    name = limbs.joint_label[l * limbs.N + k] if limbs.joint_label else f'{limbs.limb_names[l]}[{k}]'
    return (
        f"joint '{name}' = {th[l, k]:.6g}, outside its limits [{limbs.lower[l, k]:.6g}, {limbs.upper[l, k]:.6g}] "
        '(the URDF <limit lower/upper> of the joint: the pose needs the joint beyond them)'
    )


def inverse_dynamics_d2(model, x, xd, xdd, xddd, xdddd, *, route='auto', **kw):
    """``(u, ud, udd)``: the actuator forces of the PKM for the platform motion up to snap, and
    their 1st and 2nd time derivatives, (n_a,) each or (S, n_a) for a batch.

    ``route``: ``'auto'`` (default) the compiled 6-limb x 6-joint route
    (:func:`inverse_dynamics_d2_full`, same arguments) when the model fits it, otherwise the
    general numpy route :func:`robot_dynamics.pkm.general.inverse_dynamics_d2_general` (any
    number of serial limbs of any length, several cut-joint types, lower-mobility platforms
    with world task coordinates ``x`` (delta,), redundant actuation with least-norm ``u``; see
    its docstring for the arguments); ``'compiled'`` / ``'general'`` force one of them (the
    general route gives the same numbers on the Gough-Stewart platform, to round-off).
    Order of ``u``: ``model.actuated`` (compiled) or ``general_pkm(model).actuated``."""
    if route not in ('auto', 'compiled', 'general'):
        raise InputError(f"route must be 'auto', 'compiled' or 'general', got {route!r}")

    if route != 'general' and not isinstance(model, GeneralPKM) and 'task' not in kw:
        cache = {} if isinstance(model, PKMLimbs) else pkm_cache(model)
        key = ('_compiled_refused', kw.get('platform'))
        if route == 'auto' and key in cache:
            lim = None  # known not to fit the compiled route
        else:
            try:
                lim = model if isinstance(model, PKMLimbs) else limbs_from_model(model, kw.get('platform'))
            except PKMStructureError:
                if route == 'compiled':
                    raise
                cache[key] = True
                lim = None
        if lim is not None:
            r = inverse_dynamics_d2_full(lim, x, xd, xdd, xddd, xdddd, **kw)
            return r.u, r.ud, r.udd
    gkw = {k: v for k, v in kw.items() if k in ('platform', 'task', 'gravity', 'theta_guess', 'tol', 'max_iter')}
    bad = set(kw) - set(gkw)
    if bad:
        raise InputError(f'the general route takes no {sorted(bad)}')
    r = inverse_dynamics_d2_general(model, x, xd, xdd, xddd, xdddd, **gkw)
    return r.u, r.ud, r.udd


def task_space_dynamics(model, x, xd, *, platform=None, gravity=None):
    """Task-space mass matrix and bias (brief A7): ``w = M_t Vd_t + b`` with ``w = J_IK^T u``.

    ``x`` (4, 4), ``xd`` (6,) body-fixed platform twist. Returns ``(M_t (6, 6), b (6,), J_IK
    (6, 6))``; forward dynamics: ``Vd_t = M_t^-1 (J_IK^T u - b)``. Computed from 7 evaluations
    of the recursive ID (batched in one compiled call).
    """
    xd = np.asarray(xd, float).reshape(6)
    X = np.broadcast_to(np.asarray(x, float), (7, 4, 4))
    V = np.broadcast_to(xd, (7, 6))
    Vd = np.zeros((7, 6))
    Vd[1:] = np.eye(6)
    Z = np.zeros((7, 6))
    r = inverse_dynamics_d2_full(model, X, V, Vd, Z, Z, platform=platform, gravity=gravity)
    b = r.w[0, 0]
    Mt = (r.w[1:, 0] - b).T
    return Mt, b, r.J_IK[0, 0]


def limb_to_tree(limbs, theta, model_nq):
    """Map limb coordinates ``theta`` (..., L, N) to the model's tree coordinates (..., nq)
    (cut-joint entries dropped)."""
    theta = np.asarray(theta, float)
    out = np.zeros(theta.shape[:-2] + (model_nq,))
    m = limbs.tree_index >= 0
    out[..., limbs.tree_index[m]] = theta[..., m]
    return out
