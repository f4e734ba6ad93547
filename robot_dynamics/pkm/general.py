"""General route of the 2nd-order inverse dynamics (seed 004) for ANY PKM with serial limbs,
read from the URDF spanning tree + loops sidecar (plain numpy, batch axis over time samples).

Scope: ``L >= 2`` serial limbs of any lengths (1-DOF revolute/prismatic URDF joints) from the
world to one platform body; every limb but the one that carries the platform body in the URDF
tree ends at exactly one cut joint to the platform, of sidecar type ``spherical``/``point``/
``point3d``, ``universal``, ``revolute``, ``prismatic``, ``cylindrical``, ``planar``,
``point_on_line``, ``point_on_plane`` or ``weld``. A cut joint becomes 0..5 massless virtual
1-DOF joints at the end of its limb (spherical: R(x) R(y) R(z) about the axes of ``frame_a``;
universal: R(a1) R(a2); revolute: R(k); prismatic: P(k); cylindrical: P(k) R(k); planar:
P(t1) P(t2) R(k); point_on_line: P(k) R(x) R(y) R(z); point_on_plane: P(t1) P(t2) R(x) R(y)
R(z)), all zero at the sidecar's reference configuration. SEA models (actuators of type
``sea``): the link-side spring-output ``joint`` of each SEA is the actuated joint and the
motor-rotor chains (``motor_joint``) are not part of the PKM (``u`` = spring forces).

Formulation (``delta`` = mobility of the platform, detected at the reference configuration):
all limbs must reach the same platform frame ``C_p``; with ``J_p(l)`` the body-fixed platform
Jacobian of limb ``l`` (eq. 22, columns ``Ad_{C_p^-1 C_i} X_i``), the unknowns
``z = (theta_dot of all limb joints, V_p)`` (V_p = body-fixed platform twist, linear first)
solve the stacked, consistent system::

    K z = [0; xdot],    K = [[blockdiag J_p(l), -1_6 per limb], [0, T]]

``T`` (delta x 6) are the task rows. Tasks: ``delta = 6``: ``T = I``, the task is the platform
pose (``x`` a 4x4 homogeneous matrix, ``xd .. xdddd`` the body-fixed twist and its
derivatives, exactly as the compiled 6x6 route); ``delta < 6``: world components of the
platform frame, chosen automatically in the order x, y, z, rx, ry, rz as the first ``delta``
that parametrise the platform's motion (e.g. planar: (x, y, phi), translational 3-DOF: (x, y,
z), 3RRR point platform: (x, y)); ``T = S blockdiag(R, R)``; an angular component ``rk`` is
the rotation angle about the world axis k from the reference orientation (only for platforms
whose rotations are about that single axis; for a lower-mobility platform that rotates in 3D,
e.g. a 3-RPS, the task is the position of a platform point off the platform plane, its
rotation then follows from the closure). ``K`` has full column rank away from singularities; it is solved by its
pseudo-inverse (least squares = exact here), so limbs with ``N_l < 6`` (planar or
lower-mobility limbs) need no constant selector ``P_t``.

Higher orders: differentiating ``K z = [0; xdot]`` gives, for nu = 2..4,
``K z^(nu) = [0; x^(nu)] - sum_k binom(nu-1, k) K^(k) z^(nu-k)`` (= eqs. 15-18 with the
errata E1/E2 corrected), ``J_p^(k)`` from Lemma 1 by backward suffix sums (corrected eq. 25),
``T^(k) = S blockdiag(R G_k, R G_k)``, ``G_1 = w^, G_2 = w^2 + wd^, G_3 = w^3 + 2 w^ wd^ +
wd^ w^ + wdd^`` (w = body angular velocity of the platform). Position level: Newton on the
same system (``J_p Dtheta - DV = log(C_l^-1 C_p)``, task residual), batched over samples.

Dynamics: ``G = K^+ [0; I]`` (``theta_dot = G_theta xdot``), ``Gd = -K^+ Kd G``,
``Gdd = -K^+ (Kdd G + 2 Kd Gd)``; the recursive body-fixed Newton-Euler of each limb with its
1st/2nd derivatives over the tree bodies (virtual bodies are massless: their generalized
forces vanish, erratum E7), gravity option G1 of the brief (exact for any inertia);
``w = G_theta^T Q`` (eq. 14) and derivatives; ``J_IK`` = actuated rows of ``G_theta``::

    J_IK^T u = w,  J_IK^T ud = wd - Jd_IK^T u,  J_IK^T udd = wdd - Jdd_IK^T u - 2 Jd_IK^T ud

Redundant actuation (n_a > delta): ``u`` is the least-norm solution at every instant,
``u = A^T y``, ``A A^T y = w`` with ``A = J_IK^T``, differentiated exactly (so ``ud``, ``udd``
are the derivatives of the least-norm ``u``; equal to the preload route with ``lambda = 0``).

Units SI; twists linear first ``(v, w)``; ``u`` in N / N m in the order of
:attr:`GeneralPKM.actuated`. Cost: one SVD of ``K`` ((6L + delta) x (sum N_l + 6)) per sample
and Newton iteration; speed is secondary here (the compiled 6x6 route is the fast path).
"""

from __future__ import annotations

from collections import namedtuple
from math import comb

import numpy as np

from robot_dynamics.errors import InputError
from robot_dynamics.spatial.lie import _Ad, _ad, _hat, _inv_se3, exp_se3  # (unchecked, batched; linear-first twists)
from robot_dynamics.errors import PKMSingularityError, PKMStructureError

__all__ = [
    'GeneralPKM',
    'general_pkm',
    'inverse_dynamics_d2_general',
    'GeneralID2Result',
    'GeneralID2Data',
    'TASK_COMPONENTS',
    'pkm_cache',
]

TASK_COMPONENTS = ('x', 'y', 'z', 'rx', 'ry', 'rz')
#: virtual joints of each supported cut-joint type, in frame_a axes through its origin:
#: R/P = revolute/prismatic about/along x, y, z ('Rx'...), k = the loop axis, t1/t2 its normals,
#: a1/a2 the universal axes
_CUT_JOINTS = {
    'spherical': ('Rx', 'Ry', 'Rz'),
    'point': ('Rx', 'Ry', 'Rz'),
    'point3d': ('Rx', 'Ry', 'Rz'),
    'universal': ('Ra1', 'Ra2'),
    'revolute': ('Rk',),
    'prismatic': ('Pk',),
    'cylindrical': ('Pk', 'Rk'),
    'planar': ('Pt1', 'Pt2', 'Rk'),
    'point_on_line': ('Pk', 'Rx', 'Ry', 'Rz'),
    'point_on_plane': ('Pt1', 'Pt2', 'Rx', 'Ry', 'Rz'),
    'weld': (),
    'weld6d': (),
}


def _T(R, p):
    C = np.eye(4)
    C[:3, :3], C[:3, 3] = R, p
    return C


def _mv(A, x):
    return np.einsum('...ij,...j->...i', A, x)


def _pose_error(Cl, Cp):
    """Error twist of Cl^-1 Cp (S, 6), first-order equal to its log (Newton residual):
    (R_l^T (p_p - p_l), vee of the rotation log; 0.5 vee(R - R^T) scaled by angle / sin)."""
    Rl = Cl[:, :3, :3]
    R = np.swapaxes(Rl, 1, 2) @ Cp[:, :3, :3]
    v = np.einsum('sji,sj->si', Rl, Cp[:, :3, 3] - Cl[:, :3, 3])
    a = 0.5 * np.stack([R[:, 2, 1] - R[:, 1, 2], R[:, 0, 2] - R[:, 2, 0], R[:, 1, 0] - R[:, 0, 1]], -1)
    sn = np.linalg.norm(a, axis=-1)
    cs = 0.5 * (R[:, 0, 0] + R[:, 1, 1] + R[:, 2, 2] - 1.0)
    ang = np.arctan2(sn, cs)
    f = np.where(sn > 1e-12, ang / np.where(sn > 1e-12, sn, 1.0), 1.0)
    return np.concatenate([v, a * f[:, None]], -1)


def _exp_unit(X, th):
    """exp(hat(X) th) (S, 4, 4) of a unit joint screw X = (v, w) (6,) (|w| = 1: revolute or
    helical; w = 0: prismatic), th (S,)."""
    S = th.shape[0]
    C = np.zeros((S, 4, 4))
    C[:, 3, 3] = 1.0
    v, w = X[:3], X[3:]
    if np.dot(w, w) < 0.25:
        C[:, 0, 0] = C[:, 1, 1] = C[:, 2, 2] = 1.0
        C[:, :3, 3] = th[:, None] * v
        return C
    W = _hat(w)
    W2 = W @ W
    s, c = np.sin(th)[:, None, None], np.cos(th)[:, None, None]
    C[:, :3, :3] = np.eye(3) + s * W + (1 - c) * W2
    C[:, :3, 3] = th[:, None] * v + (1 - c[:, 0]) * (W @ v) + (th[:, None] - s[:, 0]) * (W2 @ v)
    return C


class _Limb:
    """One serial limb: B (N, 4, 4) reference placements, X (N, 6) screws, M (n, 6, 6) inertias
    of the tree bodies (the first n joints are URDF joints, the rest virtual), tree (n,) model
    joint indices, act (list) local indices of the actuated joints, cut the type of the loop
    that joins it to the platform (None for the platform's own limb)."""

    def __init__(self, name, B, X, M, tree, act, cut=None):
        self.name, self.B, self.X, self.M = name, np.asarray(B), np.asarray(X), np.asarray(M)
        self.tree, self.act, self.cut = np.asarray(tree, np.int64), list(act), cut
        self.N, self.n = len(self.X), len(self.tree)
        self.adX = _ad(self.X)


class GeneralPKM:
    """Limb data of a PKM for :func:`inverse_dynamics_d2_general` (built by :func:`general_pkm`).

    Attributes: ``limbs`` (list, platform limb last), ``offsets`` (L + 1,) of each limb in the
    stacked joint vector (``Ntot = offsets[-1]``), ``delta`` platform mobility, ``task``
    component names (``'pose'`` when delta = 6: body-fixed), ``task_idx`` their indices in
    (x, y, z, rx, ry, rz), ``R_ref`` (3, 3) platform orientation at the reference
    configuration (origin of angular task components), ``actuated`` joint names (order of u),
    ``act_index`` their stacked indices, ``platform`` frame name, ``gravity`` (3,), ``theta_ref``
    (Ntot,) limb coordinates at the reference configuration, ``x_ref`` the task at the reference
    configuration (4x4 pose if delta = 6, else (delta,)), ``lower``/``upper`` (Ntot,) URDF joint
    limits (+-inf for virtual joints), ``rotor_joints`` excluded SEA motor joints, ``model_name``."""

    def __repr__(self):
        return (
            f'GeneralPKM({self.model_name!r}: {len(self.limbs)} limbs '
            f'{[lb.N for lb in self.limbs]} joints, platform {self.platform!r}, '
            f'delta {self.delta}, task {self.task}, actuated {self.actuated})'
        )

    def describe(self):
        return (
            f'{len(self.limbs)} serial limb(s) of {[lb.N for lb in self.limbs]} joints '
            f"(cut joints as virtual joints) to the platform '{self.platform}', "
            f'{self.delta} DOF, task {self.task}, {len(self.actuated)} actuated'
            + (' (redundant: least-norm u)' if len(self.actuated) > self.delta else '')
        )

    def tree_q(self, theta, q_fill):
        """Model coordinates (..., nq) from stacked limb coordinates ``theta`` (..., Ntot): the
        tree joints of every limb; the other entries (SEA rotors) from ``q_fill`` (nq,)."""
        theta = np.asarray(theta, float)
        q = np.array(np.broadcast_to(np.asarray(q_fill, float), theta.shape[:-1] + (len(q_fill),)))
        for lb, o in zip(self.limbs, self.offsets):
            q[..., lb.tree] = theta[..., o : o + lb.n]
        return q

    # ------------------------------------------------------------------ kinematics
    def fk(self, th):
        """Per limb the body poses (S, N, 4, 4) for stacked limb coordinates th (S, Ntot)."""
        out = []
        S = th.shape[0]
        for lb, o in zip(self.limbs, self.offsets):
            C = np.broadcast_to(np.eye(4), (S, 4, 4))
            Cs = np.empty((S, lb.N, 4, 4))
            for i in range(lb.N):
                C = C @ lb.B[i] @ _exp_unit(lb.X[i], th[:, o + i])
                Cs[:, i] = C
            out.append(Cs)
        return out

    def jacobians(self, Cs, Cref):
        """Per limb ``J (S, 6, N)``, columns ``Ad(Cref^-1 C_i) X_i``."""
        Ci = _inv_se3(Cref)
        return [np.einsum('sijk,ik->sji', _Ad(Ci[:, None] @ C), lb.X) for lb, C in zip(self.limbs, Cs)]

    def task_value(self, Cp):
        """World task coordinates (S, delta) of platform poses Cp (S, 4, 4) (delta < 6)."""
        vals = []
        M = Cp[:, :3, :3] @ self.R_ref.T
        for k in self.task_idx:
            if k < 3:
                vals.append(Cp[:, k, 3])
            else:
                a = k - 3
                i, j = (a + 1) % 3, (a + 2) % 3
                vals.append(np.arctan2(M[:, j, i], M[:, i, i]))
        return np.stack(vals, -1)

    def task_rows(self, R):
        """T (S, delta, 6) = S blockdiag(R, R)."""
        S = R.shape[0]
        T = np.zeros((S, self.delta, 6))
        for r, k in enumerate(self.task_idx):
            if k < 3:
                T[:, r, :3] = R[:, k]
            else:
                T[:, r, 3:] = R[:, k - 3]
        return T

    def assemble_K(self, Js, T):
        S = Js[0].shape[0]
        L = len(self.limbs)
        K = np.zeros((S, 6 * L + self.delta, self.offsets[-1] + 6))
        for l, J in enumerate(Js):
            o = self.offsets[l]
            K[:, 6 * l : 6 * l + 6, o : o + J.shape[2]] = J
            K[:, 6 * l : 6 * l + 6, -6:] = -np.eye(6)
        K[:, 6 * L :, -6:] = T
        return K


def _limb_chains(model, name):
    """Root-to-leaf chains of the URDF tree (lists of joint indices); branching -> error."""
    chains = []
    for j in range(model.nq):
        if model.parents[j] < 0:
            c = [j]
            while model.children[c[-1]]:
                kids = model.children[c[-1]]
                if len(kids) > 1:
                    raise PKMStructureError(
                        f"model '{name}': joint '{model.joint_names[c[-1]]}' has {len(kids)} child "
                        f'joints {[model.joint_names[k] for k in kids]}; the general route needs '
                        'serial limbs (no branching inside a limb)'
                    )
                c.append(kids[0])
            chains.append(c)
    return chains


def _inertia6(m, c, I_o):
    M = np.zeros((6, 6))
    M[:3, :3] = m * np.eye(3)
    M[:3, 3:] = -m * _hat(np.asarray(c))
    M[3:, :3] = m * _hat(np.asarray(c))
    M[3:, 3:] = I_o
    return M


def _virtual(lp, Ta, Tb):
    """Virtual joint screws (6,) (linear first, frame_a axes, through its origin) of a cut joint;
    Ta, Tb: world poses of frame_a, frame_b at the reference (for the universal's 2nd axis)."""
    from robot_dynamics.parsers.sidecar import _basis

    code = _CUT_JOINTS.get(lp.type)
    if code is None:
        raise PKMStructureError(
            f"loop '{lp.name}' of type '{lp.type}' is not supported as a "
            f'limb-to-platform cut joint (supported: {sorted(_CUT_JOINTS)})'
        )
    dirs = {'x': np.eye(3)[0], 'y': np.eye(3)[1], 'z': np.eye(3)[2]}
    if lp.axis is not None:
        k = np.asarray(lp.axis, float) / np.linalg.norm(lp.axis)
        dirs['k'] = k
        dirs['t1'], dirs['t2'] = _basis(k)
    if lp.axes is not None:
        a1, a2 = (np.asarray(a, float) for a in lp.axes)
        dirs['a1'] = a1 / np.linalg.norm(a1)
        a2 = Ta[:3, :3].T @ Tb[:3, :3] @ a2  # 2nd axis: given in frame_b
        dirs['a2'] = a2 / np.linalg.norm(a2)
    out = []
    for c in code:
        e = dirs[c[1:]]
        out.append(np.r_[np.zeros(3), e] if c[0] == 'R' else np.r_[e, np.zeros(3)])
    return out


def _swapped(lp, Ta, Tb):
    """The same cut joint with frame_a and frame_b exchanged (axis re-expressed in the new
    frame_a at the reference; universal axes swapped: the first is given in frame_a)."""
    import dataclasses

    axis = None if lp.axis is None else Tb[:3, :3].T @ Ta[:3, :3] @ np.asarray(lp.axis, float)
    axes = None if lp.axes is None else np.array([lp.axes[1], lp.axes[0]], float)
    return dataclasses.replace(lp, frame_a=lp.frame_b, frame_b=lp.frame_a, axis=axis, axes=axes)


def pkm_cache(model):
    """The one cache of what is built from a model's PKM description (the limbs of
    :func:`general_pkm` and :func:`robot_dynamics.pkm.recursive.limbs_from_model`, the
    constraint-embedding :class:`robot_dynamics.pkm.embedding.PKM`, route decisions): a dict
    on the model."""
    return model.__dict__.setdefault('_pkm_cache', {})


def general_pkm(model, platform=None, task=None, tol=1e-9):
    """Build (and cache on the model) the :class:`GeneralPKM` of a robot_dynamics Model.

    ``platform``: platform frame (default: on the one body every loop cuts, the loops' frame
    there if they all use the same one, else the frame ``platform`` or that body's link; a loop
    whose ``frame_a`` is on the platform is used with its sides exchanged).
    ``task``: list of world components of the platform frame (subset of x, y, z, rx, ry, rz) for
    a lower-mobility platform (default: automatic, see the module docstring); ignored when the
    platform has 6 DOF (task = body-fixed pose). Raises :class:`PKMStructureError` (naming the
    model, limb, loop or joint) for what is outside the route.
    """
    model.require_one_dof('the general PKM route')
    key = ('general_pkm', platform, None if task is None else tuple(task))
    cache = pkm_cache(model)
    if key in cache:
        return cache[key]
    from robot_dynamics.algorithms.constraints import loop_errors
    from robot_dynamics.algorithms.kinematics import forward_kinematics

    name = model.name
    where = f"{model.loops_source or model.source}: model '{name}'"  # file and model in each refusal
    if not model.loops:
        raise PKMStructureError(f'{where}: no loops in the sidecar, not a PKM')
    body = lambda f: int(model.frame_parent[model.frame_index(f)])  # noqa: E731
    if platform is None:
        common = set.intersection(*({body(lp.frame_a), body(lp.frame_b)} for lp in model.loops))
        common.discard(-1)
        fbb = {body(lp.frame_b) for lp in model.loops}
        if len(common) > 1 and len(fbb) == 1 and fbb <= common:
            common = fbb  # ambiguous (one loop): the frame_b side
        if len(common) != 1:
            raise PKMStructureError(
                f'{where}: no single body is cut by every loop (the '
                'platform): loops inside limbs (hybrid limbs) are outside the '
                'general route; otherwise pass platform=<frame name>'
            )
        jp = common.pop()
        fr = {lp.frame_b if body(lp.frame_b) == jp else lp.frame_a for lp in model.loops}
        if len(fr) == 1:
            platform = fr.pop()
        else:
            cands = [f for i, f in enumerate(model.frame_names) if model.frame_parent[i] == jp]
            platform = 'platform' if 'platform' in cands else cands[0]
    fp = model.frame_index(platform)
    jP = int(model.frame_parent[fp])
    if jP < 0:
        raise PKMStructureError(f"{where}: platform '{platform}' is fixed to the world")
    q_ref = model.reference_q()
    Tw = forward_kinematics(model, q_ref, as_array=True)
    loop_err = loop_errors(model, q_ref)
    T_p = Tw[fp]
    seas = [a for a in model.actuators.values() if a.get('type') == 'sea']
    rotor = {a.get('motor_joint') for a in seas} - {None}
    if seas:
        actuated = [a['joint'] for a in seas]
    else:
        actuated = list(model.actuated)
    act_set = {model.joint_index(j) for j in actuated}
    cut_of = {}  # body joint index -> loop (limb side)
    for lp in model.loops:
        fa, fb = model.frame_index(lp.frame_a), model.frame_index(lp.frame_b)
        ja, jb = int(model.frame_parent[fa]), int(model.frame_parent[fb])
        if jb != jP and ja == jP:  # platform side written as frame_a: swap the sides
            lp = _swapped(lp, Tw[fa], Tw[fb])
            fa, fb, ja, jb = fb, fa, jb, ja
        if jb != jP:
            raise PKMStructureError(
                f"{where}: loop '{lp.name}' does not end on the platform "
                f"'{platform}' (a loop inside a limb: hybrid limbs are outside "
                'the general route)'
            )
        if ja < 0:
            raise PKMStructureError(f"{where}: loop '{lp.name}': limb side is the world")
        if ja in cut_of:
            raise PKMStructureError(
                f"{where}: loops '{cut_of[ja].name}' and '{lp.name}' cut "
                'the same body; each limb needs exactly one cut joint'
            )
        cut_of[ja] = lp
    limbs, plat_limb = [], None
    for c in _limb_chains(model, name):
        jn = [model.joint_names[j] for j in c]
        if all(j in rotor for j in jn):
            continue
        cuts = [j for j in c if j in cut_of]
        if jP in c:
            if c[-1] != jP:
                raise PKMStructureError(
                    f"{where}: the platform body (joint '{model.joint_names[jP]}') "
                    f'is not the last body of its limb {jn}'
                )
            if cuts:
                raise PKMStructureError(f"{where}: loop '{cut_of[cuts[0]].name}' cuts the platform's own limb")
            plat_limb = ('platform_limb', c, None)
            continue
        if len(cuts) != 1 or cuts[0] != c[-1]:
            raise PKMStructureError(
                f'{where}: limb {jn} '
                + (
                    'is not connected to the platform by a loop'
                    if not cuts
                    else 'is cut at a body that is not its last one'
                )
                + ' (every limb must end at exactly one cut joint to the platform)'
            )
        lp = cut_of[c[-1]]
        limbs.append((lp.name, c, lp))
    if plat_limb is None:
        raise PKMStructureError(f"{where}: no limb carries the platform '{platform}'")
    limbs.append(plat_limb)
    out = []
    for lname, c, lp in limbs:
        B = [_T(model.R_fixed[j], model.p_fixed[j]) for j in c]
        X = [model.screw_local[j].copy() for j in c]
        M = [_inertia6(model.mass[j], model.com[j], model.inertia_origin[j]) for j in c]
        act = [i for i, j in enumerate(c) if j in act_set]
        if lp is not None:
            fa, fb = model.frame_index(lp.frame_a), model.frame_index(lp.frame_b)
            Ta, Tb = Tw[fa], Tw[fb]
            gap = max(loop_err[lp.name])
            if gap > 1e-8:
                raise PKMStructureError(
                    f"{where}: loop '{lp.name}' is open by {gap:.3g} at "
                    "the sidecar's reference configuration (must be closed)"
                )
            try:
                vs = _virtual(lp, Ta, Tb)
            except PKMStructureError as exc:
                raise PKMStructureError(f'{where}: {exc}') from None
            for k, Xv in enumerate(vs):
                B.append(_T(model.frame_R[fa], model.frame_p[fa]) if k == 0 else np.eye(4))
                X.append(Xv)
            Tend = Ta if vs else Tw[fa] @ np.linalg.inv(_T(model.frame_R[fa], model.frame_p[fa]))
            Tr = np.linalg.inv(Tend) @ T_p
        else:
            Tr = _T(model.frame_R[fp], model.frame_p[fp])
        Ti = np.linalg.inv(Tr)
        B[-1] = B[-1] @ Tr
        X[-1] = _Ad(Ti) @ X[-1]
        if len(M) == len(X):  # last body is a tree body: re-base its inertia
            AdT = _Ad(Tr)
            M[-1] = AdT.T @ M[-1] @ AdT
        out.append(_Limb(lname, np.array(B), np.array(X), np.array(M), c, act, None if lp is None else lp.type))
    p = GeneralPKM()
    p.model_name, p.platform, p.limbs = name, platform, out
    p.offsets = np.cumsum([0] + [lb.N for lb in out])
    p.gravity = np.asarray(model.gravity, float)
    p.rotor_joints = sorted(rotor)
    th_ref = np.zeros(p.offsets[-1])
    for lb, o in zip(out, p.offsets):
        th_ref[o : o + lb.n] = q_ref[lb.tree]
    p.theta_ref = th_ref
    p.lower = np.full(p.offsets[-1], -np.inf)
    p.upper = np.full(p.offsets[-1], np.inf)
    p.joint_label = []
    for lb, o in zip(out, p.offsets):
        p.lower[o : o + lb.n] = model.lower[lb.tree]
        p.upper[o : o + lb.n] = model.upper[lb.tree]
        p.joint_label += [model.joint_names[j] for j in lb.tree]
        p.joint_label += [f'{lb.name}/virtual{k}' for k in range(lb.N - lb.n)]
    all_tree = {int(j) for lb in out for j in lb.tree}
    stray = [model.joint_names[j] for j in range(model.nq) if j not in all_tree and model.joint_names[j] not in rotor]
    if stray:
        raise PKMStructureError(f'{where}: joints {stray} belong to no limb')
    stacked = {int(lb.tree[i]) + 0: o + i for lb, o in zip(out, p.offsets) for i in range(lb.n)}
    for j in actuated:
        if model.joint_index(j) not in stacked:
            raise PKMStructureError(f"{where}: actuated joint '{j}' is not in a limb")
    p.actuated = actuated
    p.act_index = np.array([stacked[model.joint_index(j)] for j in actuated], np.int64)
    # closure of every limb at the reference configuration and mobility
    Cs = p.fk(th_ref[None])
    Cp = Cs[-1][:, -1]
    if np.linalg.norm(Cp[0] - T_p) > 1e-8:
        raise PKMStructureError(f'{where}: internal error: platform limb FK != platform frame')
    Js = p.jacobians(Cs, Cp)
    p.delta = 6
    p.task, p.task_idx = 'pose', np.arange(6)
    K0 = p.assemble_K(Js, np.zeros((1, 6, 6)))[0, : 6 * len(out)]
    sv, Vt = np.linalg.svd(K0)[1:]
    rank = int(np.sum(sv > tol * max(1.0, sv[0])))
    delta = K0.shape[1] - rank
    if delta == 0:
        raise PKMStructureError(f'{where}: the platform cannot move (0 DOF at the reference)')
    Nsp = Vt[rank:].T  # (Ntot + 6, delta) null space
    Rp = Cp[0, :3, :3]
    Vw = np.vstack([Rp @ Nsp[-6:-3], Rp @ Nsp[-3:]])  # world-aligned platform twists
    if delta > 6:
        raise PKMStructureError(
            f'{where}: {delta} DOF > 6: the limbs have internal '
            'mobility (kinematically redundant limbs are outside the route)'
        )
    p.R_ref = Rp.copy()
    if delta < 6:
        if task is None:
            sel = []
            for k in range(6):
                if np.linalg.matrix_rank(Vw[sel + [k]], 1e-8) == len(sel) + 1:
                    sel.append(k)
                if len(sel) == delta:
                    break
        else:
            bad = [c for c in task if c not in TASK_COMPONENTS]
            if bad or len(task) != delta:
                raise PKMStructureError(f'{where}: task {task}: need {delta} components of {TASK_COMPONENTS}')
            sel = [TASK_COMPONENTS.index(c) for c in task]
        if len(sel) != delta or np.linalg.matrix_rank(Vw[sel], 1e-8) != delta:
            raise PKMStructureError(
                f'{where}: the world components {[TASK_COMPONENTS[k] for k in sel]} '
                f"do not parametrise the platform's {delta}-DOF motion"
            )
        wrank = np.linalg.matrix_rank(Vw[3:], 1e-8)
        if any(k >= 3 for k in sel):
            axes = [k - 3 for k in sel if k >= 3]
            other = [a for a in range(3) if a not in axes]
            if wrank > 1 or np.max(np.abs(Vw[3 + np.array(other)]), initial=0) > 1e-8:
                raise PKMStructureError(
                    f'{where}: the {delta}-DOF platform rotates about more than one world '
                    'axis; angular task coordinates are only supported for a fixed rotation axis '
                    '(planar motion). Lower-mobility platforms with 3D rotation (e.g. 3-RPS) are '
                    'outside the general route'
                )
        p.delta = delta
        p.task_idx = np.array(sel, np.int64)
        p.task = [TASK_COMPONENTS[k] for k in sel]
    p.x_ref = Cp[0].copy() if p.task == 'pose' else p.task_value(Cp)[0]
    if len(actuated) < p.delta:
        raise PKMStructureError(f'{where}: {len(actuated)} actuated joints for {p.delta} DOF (under-actuated)')
    cache[key] = p
    return p


GeneralID2Result = namedtuple('GeneralID2Result', 'u ud udd theta theta_a J_IK w Cp Vp')
GeneralID2Result.__doc__ = """Result of :func:`inverse_dynamics_d2_general` (S samples; squeezed for
a single sample):

u, ud, udd (S, n_a): actuator forces [N | N m] and 1st/2nd time derivatives (order ``actuated``)
theta (S, 5, Ntot): stacked limb coordinates (virtual cut joints included) and derivatives 0..4
theta_a (S, 5, n_a): actuated joint coordinates and derivatives 0..4
J_IK (S, 3, n_a, delta): ``theta_a_dot = J_IK x_dot`` and its 1st/2nd time derivatives
w (S, 3, delta): ``J_IK^T u`` (task-space generalized force) and derivatives
Cp (S, 4, 4): platform pose; Vp (S, 4, 6): body-fixed platform twist (v, w) and derivatives 1..3"""


def _jac_derivs(J, thd, order):
    """J^(1..order) (list of (S, 6, N)) of J (S, 6, N) by backward suffix sums (Lemma 1,
    corrected eq. 25). thd: list [theta', theta'', theta'''] (S, N) (>= order entries)."""
    S, _, N = J.shape
    out = [np.zeros_like(J) for _ in range(order)]
    dV = [np.zeros((S, 6)) for _ in range(order)]  # DV, DVd, DVdd of body i
    for i in range(N - 1, -1, -1):
        if i < N - 1:
            j = i + 1
            Jk = [J[:, :, j]] + [o[:, :, j] for o in out]
            # DV^(m) += sum_{k=0..m} binom(m, k) J^(k)_{j} theta^(m-k+1)_j
            for m in range(order):
                dV[m] = dV[m] + sum(comb(m, k) * Jk[k] * thd[m - k][:, j, None] for k in range(m + 1))
        a = [_ad(d) for d in dV]
        Ji = J[:, :, i]
        if order >= 1:
            J1 = -_mv(a[0], Ji)
            out[0][:, :, i] = J1
        if order >= 2:
            J2 = -_mv(a[1], Ji) - _mv(a[0], J1)
            out[1][:, :, i] = J2
        if order >= 3:
            out[2][:, :, i] = -_mv(a[2], Ji) - 2 * _mv(a[1], J1) - _mv(a[0], J2)
    return out


def _G_mats(w, wd, wdd):
    W, Wd, Wdd = _hat(w), _hat(wd), _hat(wdd)
    G1 = W
    G2 = W @ W + Wd
    G3 = W @ W @ W + 2 * W @ Wd + Wd @ W + Wdd
    return [G1, G2, G3]


def _Kk(p, Jks, R, Gk):
    """K^(k) for k >= 1: blockdiag(J^(k)) and the task rows S blockdiag(R G_k, R G_k)."""
    S = R.shape[0]
    L = len(p.limbs)
    K = np.zeros((S, 6 * L + p.delta, p.offsets[-1] + 6))
    for l, J in enumerate(Jks):
        o = p.offsets[l]
        K[:, 6 * l : 6 * l + 6, o : o + J.shape[2]] = J
    if p.task != 'pose':
        K[:, 6 * L :, -6:] = p.task_rows(R @ Gk)
    return K


class _KSolver:
    """Solves ``K z = b`` (consistent right-hand sides) by limb elimination: per limb the QR
    factorisation ``J_l = [Q1 Q2] [R1; 0]`` (6 x N_l); the platform twist from the stacked
    ``Q2_l^T (V_p + b_l) = 0`` and task rows ``T V_p = b_t`` (QR least squares, 6 unknowns),
    then ``theta_l = R1^-1 Q1^T (V_p + b_l)``. Equal to ``K^+ b`` for consistent b. Raises
    :class:`PKMSingularityError` when a limb Jacobian or the platform system is rank deficient."""

    def __init__(self, p, Js, T, rcond=1e-10):
        self.p = p
        self.Q1, self.Q2, self.R1 = [], [], []
        for lb, J in zip(p.limbs, Js):
            n = J.shape[2]
            if n > 6:
                raise PKMStructureError(
                    f"model '{p.model_name}': limb '{lb.name}' has {n} > 6 joints (kinematically redundant limb)"
                )
            Q, R = np.linalg.qr(J, mode='complete')
            d = np.abs(np.diagonal(R[:, :n, :n], axis1=1, axis2=2))
            bad = d.min(axis=1, initial=np.inf) <= rcond * np.maximum(1.0, d.max(axis=1, initial=1.0))
            _raise_where(bad, 2, f"{p.model_name}: limb '{lb.name}': singular limb Jacobian")
            self.Q1.append(Q[:, :, :n])
            self.Q2.append(Q[:, :, n:])
            self.R1.append(R[:, :n, :n])
        H = np.concatenate([np.swapaxes(q, 1, 2) for q in self.Q2] + [T], 1)
        Qh, Rh = np.linalg.qr(H)
        d = np.abs(np.diagonal(Rh, axis1=1, axis2=2))
        bad = d.min(axis=1) <= rcond * np.maximum(1.0, d.max(axis=1))
        _raise_where(bad, 7, f'{p.model_name}: parallel (constraint/task) singularity')
        self.Qh, self.Rh = Qh, Rh

    def solve(self, b):
        """b (S, 6L + delta) or (S, 6L + delta, k) -> z (S, Ntot + 6 [, k])."""
        vec = b.ndim == 2
        if vec:
            b = b[..., None]
        L = len(self.p.limbs)
        bl = [b[:, 6 * l : 6 * l + 6] for l in range(L)]
        rhs = np.concatenate([-np.swapaxes(q, 1, 2) @ x for q, x in zip(self.Q2, bl)] + [b[:, 6 * L :]], 1)
        V = np.linalg.solve(self.Rh, np.swapaxes(self.Qh, 1, 2) @ rhs)
        parts = [
            np.linalg.solve(R, np.swapaxes(q, 1, 2) @ (V + x)) if R.shape[1] else np.zeros((b.shape[0], 0, b.shape[2]))
            for R, q, x in zip(self.R1, self.Q1, bl)
        ]
        z = np.concatenate(parts + [V], 1)
        return z[..., 0] if vec else z


def _ne_limb(lb, th, Cs, g):
    """Body-fixed Newton-Euler with 1st/2nd time derivatives over the tree bodies of a limb.
    th: list of 5 arrays (S, N) (theta .. theta''''); Cs (S, N, 4, 4) body poses.
    Returns Q, Qd, Qdd (S, n)."""
    S = th[0].shape[0]
    n = lb.n
    if n == 0:
        z = np.zeros((S, 0))
        return z, z, z
    V = [np.zeros((S, 6)) for _ in range(4)]
    A = []
    Vs = []
    for i in range(n):
        Ci_rel = _inv_se3(lb.B[i] @ _exp_unit(lb.X[i], th[0][:, i]))
        Ai = _Ad(Ci_rel)
        A.append(Ai)
        X, aX = lb.X[i], lb.adX[i]
        t1, t2, t3, t4 = (th[k][:, i, None] for k in range(1, 5))
        V0 = _mv(Ai, V[0]) + X * t1
        V1 = _mv(Ai, V[1]) - t1 * (V0 @ aX.T) + X * t2
        V2 = _mv(Ai, V[2]) + X * t3 - (t2 * V0 + 2 * t1 * V1) @ aX.T - t1**2 * (V0 @ (aX @ aX).T)
        V3 = (
            _mv(Ai, V[3])
            + X * t4
            - (t3 * V0 + 3 * t2 * V1 + 3 * t1 * V2) @ aX.T
            - 3 * t1 * ((t2 * V0 + t1 * V1) @ (aX @ aX).T)
            - t1**3 * (V0 @ (aX @ aX @ aX).T)
        )
        V = [V0, V1, V2, V3]
        Vs.append(V)
    Q = np.empty((3, S, n))
    W = [np.zeros((S, 6)) for _ in range(3)]
    for i in range(n - 1, -1, -1):
        V0, V1, V2, V3 = Vs[i]
        M = lb.M[i]
        R = Cs[:, i, :3, :3]
        a0 = np.zeros((S, 6))
        a0[:, :3] = -np.einsum('sji,j->si', R, g)
        a1 = -_mv(_ad(V0), a0)
        a2 = -_mv(_ad(V1), a0) + _mv(_ad(V0), _mv(_ad(V0), a0))
        MV0, MV1, MV2 = V0 @ M.T, V1 @ M.T, V2 @ M.T
        adT = lambda V_, x: np.einsum('sji,sj->si', _ad(V_), x)  # noqa: E731  ad(V)^T x
        Wb0 = (V1 + a0) @ M.T - adT(V0, MV0)
        Wb1 = (V2 + a1) @ M.T - adT(V0, MV1) - adT(V1, MV0)
        Wb2 = (V3 + a2) @ M.T - adT(V0, MV2) - 2 * adT(V1, MV1) - adT(V2, MV0)
        if i < n - 1:
            Aj = A[i + 1]
            aXT = lb.adX[i + 1].T
            d1 = th[1][:, i + 1, None]
            d2 = th[2][:, i + 1, None]
            AT = lambda x: np.einsum('sji,sj->si', Aj, x)  # noqa: E731
            t0 = AT(W[0])
            t1_ = AT(W[1] - d1 * (W[0] @ aXT.T))
            t2_ = AT(W[2] - 2 * d1 * (W[1] @ aXT.T) + d1**2 * (W[0] @ (aXT @ aXT).T) - d2 * (W[0] @ aXT.T))
            W = [Wb0 + t0, Wb1 + t1_, Wb2 + t2_]
        else:
            W = [Wb0, Wb1, Wb2]
        for k in range(3):
            Q[k, :, i] = W[k] @ lb.X[i]
    return Q[0], Q[1], Q[2]


def _batch(a, shape, name, S=None, finite=True):
    a = np.asarray(a, float)
    if a.shape == shape:
        a = a[None]
    elif not (a.ndim == len(shape) + 1 and a.shape[1:] == shape):
        raise InputError(f'{name} must have shape {shape} or (S, {", ".join(map(str, shape))}), got {a.shape}')
    if S is not None and a.shape[0] != S:
        raise InputError(f'{name} has {a.shape[0]} samples, expected {S}')
    if finite and not np.all(np.isfinite(a)):
        raise InputError(f'{name} contains non-finite values')
    return a


def inverse_dynamics_d2_general(
    model,
    x,
    xd,
    xdd,
    xddd,
    xdddd,
    *,
    platform=None,
    task=None,
    gravity=None,
    theta_guess=None,
    tol=1e-12,
    max_iter=50,
    route='compiled',
    warm_start=False,
    threads=1,
    jik_derivatives=True,
):
    """2nd-order inverse dynamics of a general PKM (module docstring): ``u, ud, udd``.

    ``model``: Model (or a :class:`GeneralPKM`). ``delta = 6``: ``x`` (4, 4) or (S, 4, 4) platform
    pose in the world, ``xd .. xdddd`` (6,) or (S, 6) body-fixed platform twist ``(v, w)`` [m/s,
    rad/s] and derivatives 1..3. ``delta < 6``: ``x`` (delta,) or (S, delta) world task
    coordinates (``pkm.task``: m, rad), ``xd .. xdddd`` their time derivatives 1..4.
    ``gravity`` (3,) world gravity [m/s^2] (default the model's). ``theta_guess`` (Ntot,) or
    (S, Ntot) Newton start of the position IK (default the reference configuration; each
    sample is solved from it, batched: a sample far from the start may converge to another
    assembly mode, so pass e.g. the previous solution ``theta[:, 0]`` of a neighbouring sample
    for large motions). Stacked limb coordinates: limb order ``pkm.limbs``, offsets
    ``pkm.offsets``, names ``pkm.joint_label``. ``route``: ``'compiled'`` (default) the numba
    kernel (:mod:`._general_kernels`, per sample, same numbers to round-off) or ``'numpy'`` (the
    batched numpy code, the test oracle). ``warm_start`` (compiled route): each sample after the
    first starts its Newton IK from the previous sample's solution (for a trajectory: fewer
    iterations, and the assembly branch is followed) instead of from ``theta_guess``.
    ``threads`` (compiled route): solve a batch in up to that many parallel threads (chunks of
    >= 32 samples; warm-started chunks are joined so that the result is the sequential one:
    ``_Packed._join``); default 1, the caller's thread only. ``jik_derivatives=False``
    (compiled route, square actuation): the rows of J_IK', J_IK'' are not formed (``J_IK[..., 1:,
    :, :]`` is NaN); ``ud, udd`` take the products J_IK'^T u, J_IK''^T u, J_IK'^T ud from 5
    adjoint solves instead of 3 n_a (same numbers to round-off, faster).
    Returns :class:`GeneralID2Result`; raises :class:`PKMSingularityError` (IK failure,
    singular K or J_IK, joint limits; ``status`` codes as :mod:`._general_kernels`) or
    InputError.
    """
    if route not in ('compiled', 'numpy'):
        raise InputError(f"route must be 'compiled' or 'numpy', got {route!r}")
    p = model if isinstance(model, GeneralPKM) else general_pkm(model, platform, task)
    d = p.delta
    pose = p.task == 'pose'
    comp = route == 'compiled'  # (the kernel checks finiteness and orthonormality)
    X = _batch(x, (4, 4) if pose else (d,), 'x', finite=not comp)
    single = np.ndim(x) == (2 if pose else 1)
    S = X.shape[0]
    nd = 6 if pose else d
    D = [_batch(v, (nd,), nm, S, not comp) for v, nm in ((xd, 'xd'), (xdd, 'xdd'), (xddd, 'xddd'), (xdddd, 'xdddd'))]
    g = p.gravity if gravity is None else np.asarray(gravity, float).reshape(3)
    L, Nt = len(p.limbs), p.offsets[-1]
    if comp:
        if theta_guess is None:
            th = p.theta_ref[None]
        else:
            th = np.asarray(theta_guess, float)
            th = th.reshape(1, Nt) if th.ndim == 1 else np.broadcast_to(th, (S, Nt))
        return _id2_compiled(p, X, D, g, th, bool(warm_start), tol, max_iter, single, threads, jik_derivatives)
    th = np.array(np.broadcast_to(p.theta_ref if theta_guess is None else np.asarray(theta_guess, float), (S, Nt)))
    # ---------------------------------------------------------------- position IK (Newton)
    if pose:
        if np.max(np.abs(np.einsum('sji,sjk->sik', X[:, :3, :3], X[:, :3, :3]) - np.eye(3))) > 1e-9:
            raise InputError('x: the rotation part is not orthonormal')
        Cp = X.copy()
    else:
        Cp = p.fk(th)[-1][:, -1]
    for it in range(max_iter + 1):
        Cs = p.fk(th)
        e = np.concatenate([_pose_error(C[:, -1], Cp) for C in Cs], -1)
        if pose:
            r = np.zeros((S, 6))
        else:
            r = X - p.task_value(Cp)
            for c, k in enumerate(p.task_idx):
                if k >= 3:
                    r[:, c] = (r[:, c] + np.pi) % (2 * np.pi) - np.pi
        res = np.max(np.abs(np.concatenate([e, r], -1)), -1)
        if np.all(res < tol) or it == max_iter:
            break
        Js = p.jacobians(Cs, Cp)
        ks = _KSolver(p, Js, np.broadcast_to(np.eye(6), (S, 6, 6)) if pose else p.task_rows(Cp[:, :3, :3]))
        dz = ks.solve(np.concatenate([e, r], -1))
        th = th + dz[:, :Nt]
        if not pose:  # the pose task fixes the platform
            Cp = Cp @ exp_se3(dz[:, Nt:])
    if np.any(res >= max(tol, 1e-9)):
        idx = np.nonzero(res >= max(tol, 1e-9))[0]
        raise PKMSingularityError(
            f'{p.model_name}: position IK did not converge at {len(idx)} of {S} '
            f'samples (first {idx[0]}, residual {res[idx[0]]:.3g}): pose outside '
            'the workspace or singular',
            idx,
            np.where(res >= max(tol, 1e-9), 1, 0),
        )
    out_lim = np.any((th < p.lower - 1e-12) | (th > p.upper + 1e-12), axis=1)
    if np.any(out_lim):
        idx = np.nonzero(out_lim)[0]
        s0 = idx[0]
        j = int(np.nonzero((th[s0] < p.lower - 1e-12) | (th[s0] > p.upper + 1e-12))[0][0])
        raise PKMSingularityError(
            f'{p.model_name}: IK solution outside the URDF joint limits at {len(idx)} of {S} samples '
            f'(first {s0}: {_outside_limits(p, j, th[s0, j])})',
            idx,
            np.where(out_lim, 5, 0),
        )
    # ---------------------------------------------------------------- velocity level
    Cs = p.fk(th)
    Js = p.jacobians(Cs, Cp)
    R = Cp[:, :3, :3]
    T0 = np.broadcast_to(np.eye(6), (S, 6, 6)) if pose else p.task_rows(R)
    ks = _KSolver(p, Js, T0)
    B = np.zeros((6 * L + d, d))
    B[6 * L :] = np.eye(d)
    G = ks.solve(np.broadcast_to(B, (S,) + B.shape))  # (S, Nt + 6, d)
    z = [None, _mv(G, D[0])]  # z^(1) = (theta', V_p)
    TH = [th] + [None] * 4
    TH[1] = z[1][:, :Nt]
    VP = [z[1][:, Nt:]]
    for nu in range(2, 5):
        thd = TH[1:nu]  # known theta^(1..nu-1)
        Jd = [_jac_derivs(J, [t[:, o : o + J.shape[2]] for t in thd], nu - 1) for J, o in zip(Js, p.offsets)]
        Gk = None if pose else _G_mats(*(VP[k][:, 3:] if k < len(VP) else np.zeros((S, 3)) for k in range(3)))
        rhs = np.zeros((S, 6 * L + d))
        rhs[:, 6 * L :] = D[nu - 1]
        for k in range(1, nu):
            Kk = _Kk(p, [jd[k - 1] for jd in Jd], R, None if pose else Gk[k - 1])
            rhs -= comb(nu - 1, k) * _mv(Kk, z[nu - k])
        znu = ks.solve(rhs)
        z.append(znu)
        TH[nu] = znu[:, :Nt]
        VP.append(znu[:, Nt:])
    # ---------------------------------------------------------------- G derivatives
    Jd = [_jac_derivs(J, [t[:, o : o + J.shape[2]] for t in TH[1:3]], 2) for J, o in zip(Js, p.offsets)]
    Gk = None if pose else _G_mats(VP[0][:, 3:], VP[1][:, 3:], np.zeros((S, 3)))
    K1 = _Kk(p, [j[0] for j in Jd], R, None if pose else Gk[0])
    K2 = _Kk(p, [j[1] for j in Jd], R, None if pose else Gk[1])
    G1 = -ks.solve(K1 @ G)
    G2 = -ks.solve(K2 @ G + 2 * K1 @ G1)
    # ---------------------------------------------------------------- dynamics
    Q = np.zeros((3, S, Nt))
    for lb, o, C in zip(p.limbs, p.offsets, Cs):
        ths = [t[:, o : o + lb.N] for t in TH]
        q0, q1, q2 = _ne_limb(lb, ths, C, g)
        Q[0, :, o : o + lb.n], Q[1, :, o : o + lb.n], Q[2, :, o : o + lb.n] = q0, q1, q2
    Gt, G1t, G2t = G[:, :Nt], G1[:, :Nt], G2[:, :Nt]
    tT = lambda A, v: np.einsum('sji,sj->si', A, v)  # noqa: E731
    w0 = tT(Gt, Q[0])
    w1 = tT(Gt, Q[1]) + tT(G1t, Q[0])
    w2 = tT(Gt, Q[2]) + 2 * tT(G1t, Q[1]) + tT(G2t, Q[0])
    ai = p.act_index
    J0, J1, J2 = Gt[:, ai], G1t[:, ai], G2t[:, ai]  # (S, n_a, d)
    A0, A1, A2 = (np.swapaxes(J, 1, 2) for J in (J0, J1, J2))  # A = J_IK^T (S, d, n_a)
    sv = np.linalg.svd(A0, compute_uv=False)
    bad = sv[:, -1] <= 1e-10 * sv[:, 0]
    _raise_where(bad, 3, f'{p.model_name}: singular IK Jacobian J_IK (actuation singularity)')
    sol = lambda A, b: np.linalg.solve(A, b[..., None])[..., 0]  # noqa: E731
    if len(ai) == d:
        u = sol(A0, w0)
        ud = sol(A0, w1 - _mv(A1, u))
        udd = sol(A0, w2 - _mv(A2, u) - 2 * _mv(A1, ud))
    else:  # least norm: u = A^T y, (A A^T) y = w
        AT = lambda A, v: np.einsum('sji,sj->si', A, v)  # noqa: E731
        N0 = A0 @ J0
        N1 = A1 @ J0 + A0 @ J1
        N2 = A2 @ J0 + 2 * A1 @ J1 + A0 @ J2
        y0 = sol(N0, w0)
        y1 = sol(N0, w1 - _mv(N1, y0))
        y2 = sol(N0, w2 - _mv(N2, y0) - 2 * _mv(N1, y1))
        u = AT(A0, y0)
        ud = AT(A1, y0) + AT(A0, y1)
        udd = AT(A2, y0) + 2 * AT(A1, y1) + AT(A0, y2)
    THs = np.stack(TH, 1)
    res = GeneralID2Result(
        u, ud, udd, THs, THs[:, :, ai], np.stack([J0, J1, J2], 1), np.stack([w0, w1, w2], 1), Cp, np.stack(VP, 1)
    )
    if single:
        res = GeneralID2Result(*(r[0] for r in res))
    return res


# ---------------------------------------------------------------------------- compiled route
_MIN_CHUNK = 32  # samples per parallel chunk at least (threads > 1)
_POOL = [None]


def _pool(n):
    """The worker threads of parallel batches (created on first use, grown to ``n``)."""
    if _POOL[0] is None or _POOL[0]._max_workers < n:
        from concurrent.futures import ThreadPoolExecutor

        _POOL[0] = ThreadPoolExecutor(max_workers=n, thread_name_prefix='rd-id2')
    return _POOL[0]


class _Packed:
    """Padded arrays of a :class:`GeneralPKM` for :mod:`._general_kernels` (built once, cached
    on the GeneralPKM as ``_packed``): limb data BR, Bp, X, M and the parameter vectors IP, FP
    (layout: ``general_id_d2_batch``)."""

    def __init__(self, p):
        from robot_dynamics.pkm._general_kernels import FP_HEAD, IP_HEAD

        L = len(p.limbs)
        Nm = max(lb.N for lb in p.limbs)
        self.BR = np.zeros((L, Nm, 3, 3))
        self.Bp = np.zeros((L, Nm, 3))
        self.X = np.zeros((L, Nm, 6))
        self.M = np.zeros((L, Nm, 6, 6))
        for l, lb in enumerate(p.limbs):
            self.BR[l, : lb.N] = lb.B[:, :3, :3]
            self.Bp[l, : lb.N] = lb.B[:, :3, 3]
            self.X[l, : lb.N] = lb.X
            self.M[l, : lb.n] = lb.M[: lb.n]
        heavy = np.any(self.M != 0.0, axis=(2, 3))
        self.pose = p.task == 'pose'
        self.d, self.na, self.Nt = p.delta, len(p.act_index), int(p.offsets[-1])
        self.nd = 6 if self.pose else p.delta
        self.nx = 16 if self.pose else p.delta
        self.act = np.asarray(p.act_index, np.int64)
        head = np.array([L, Nm, self.Nt, self.d, self.na, self.pose, 0, 0, 1], np.int64)
        assert len(head) == IP_HEAD
        self.IP = np.concatenate(
            [
                head,
                [lb.N for lb in p.limbs],
                [lb.n for lb in p.limbs],
                p.offsets,
                p.task_idx,
                p.act_index,
                heavy.ravel(),
            ]
        ).astype(np.int64)
        self.FP = np.concatenate([[0.0], p.gravity, p.R_ref.ravel(), p.lower, p.upper]).astype(float)
        assert len(self.FP) == FP_HEAD + 2 * self.Nt
        Nt, na, d = self.Nt, self.na, self.d
        o = np.cumsum([0, 5 * Nt, 3 * na, 3 * na * d, 3 * d, 16, 24, 1])
        self._slices = [
            (slice(o[k], o[k + 1]), sh)
            for k, sh in enumerate([(5, Nt), (3, na), (3, na, d), (3, d), (4, 4), (4, 6), ()])
        ]
        self.nout = int(o[-1])
        self._key = None
        from robot_dynamics.pkm._general_kernels import general_id_d2_batch

        self._kernel = general_id_d2_batch

    def params(self, g, tol, max_iter, warm, jikd=True):
        """(IP, FP) with the call's gravity, tolerance, iteration limit, warm-start flag and
        whether the rows of J_IK', J_IK'' are computed (the last ones are reused: do not modify
        them)."""
        key = (float(g[0]), float(g[1]), float(g[2]), float(tol), int(max_iter), bool(warm), bool(jikd))
        if key != self._key:
            IP, FP = self.IP.copy(), self.FP.copy()
            IP[6], IP[7], IP[8] = key[4], key[5], key[6]
            FP[0], FP[1:4] = key[3], key[:3]
            self._key, self._par = key, (IP, FP)
        return self._par

    def views(self, OUT):
        """theta, u (3, na), J_IK, w, Cp, Vp, residual: views of the kernel output (S, nout)."""
        S = OUT.shape[0]
        return [OUT[:, sl].reshape((S,) + sh) for sl, sh in self._slices]

    def run(self, IP, FP, IN, th0, OUT, IST, threads=1):
        """The kernel on the batch IN (S, .) (outputs OUT, IST); ``threads`` > 1 splits it into
        up to that many chunks of >= ``_MIN_CHUNK`` samples solved in parallel threads (the
        kernel releases the GIL) and, warm-started, joins them (:meth:`_join`)."""
        S = IN.shape[0]
        nc = 1 if threads <= 1 else max(1, min(int(threads), S // _MIN_CHUNK))
        if nc == 1:
            self._kernel(self.BR, self.Bp, self.X, self.M, IP, FP, IN, th0, OUT, IST)
            return
        bounds = np.linspace(0, S, nc + 1).round().astype(np.int64)

        def chunk(c):
            a, b = bounds[c], bounds[c + 1]
            self._kernel(
                self.BR, self.Bp, self.X, self.M, IP, FP, IN[a:b], th0[a:b] if len(th0) > 1 else th0, OUT[a:b], IST[a:b]
            )

        futures = [_pool(nc - 1).submit(chunk, c) for c in range(1, nc)]
        chunk(0)
        for f in futures:
            f.result()
        if IP[7]:
            self._join(IP, FP, IN, OUT, IST, bounds)

    def _join(self, IP, FP, IN, OUT, IST, bounds):
        """Warm-started chunks: the first sample of chunk c started from ``th0``, not from the
        previous chunk's last solution as one sequential pass would. Solve that sample again
        from the last solution before it; if the status or theta (to 1e-8 relative) differ
        (another assembly branch, or a failure only one start has), the chunk is solved again
        sequentially from that solution. The result is then the sequential pass's, up to the
        Newton tolerance."""
        Nt = self.Nt
        o1 = np.empty((1, self.nout))
        i1 = np.empty((1, 2), np.int64)
        for c in range(1, len(bounds) - 1):
            a, b = int(bounds[c]), int(bounds[c + 1])
            ok = np.nonzero(IST[bounds[0] : a, 0] == 0)[0]
            if len(ok) == 0:
                continue  # as sequentially: no solution yet, start from th0
            tp = OUT[ok[-1], :Nt][None].copy()
            self._kernel(self.BR, self.Bp, self.X, self.M, IP, FP, IN[a : a + 1], tp, o1, i1)
            same = i1[0, 0] == IST[a, 0]
            if same and i1[0, 0] == 0:
                th = OUT[a, :Nt]
                same = np.max(np.abs(o1[0, :Nt] - th)) <= 1e-8 * (1.0 + np.max(np.abs(th)))
            if not same:
                self._kernel(self.BR, self.Bp, self.X, self.M, IP, FP, IN[a:b], tp, OUT[a:b], IST[a:b])


def _packed(p):
    pk = p.__dict__.get('_packed')
    if pk is None:
        pk = p._packed = _Packed(p)
    return pk


def _raise_status(p, status, info, resid, theta):
    """The PKMSingularityError / InputError of the kernel's status codes (the texts of the numpy
    route; the first failure kind in the numpy route's order)."""
    S = len(status)
    if np.any(status == 4):
        raise InputError('x or the task derivatives contain non-finite values')
    if np.any(status == 8):
        raise InputError('x: the rotation part is not orthonormal')
    for code in (2, 7, 1, 5, 3):
        bad = status == code
        if not np.any(bad):
            continue
        idx = np.nonzero(bad)[0]
        s0 = idx[0]
        st = np.where(bad, code, 0)
        if code == 2:
            lb = p.limbs[int(info[s0])]
            msg = f"{p.model_name}: limb '{lb.name}': singular limb Jacobian at {len(idx)} of {S} samples (first {s0})"
        elif code == 7:
            msg = f'{p.model_name}: parallel (constraint/task) singularity at {len(idx)} of {S} samples (first {s0})'
        elif code == 1:
            msg = (
                f'{p.model_name}: position IK did not converge at {len(idx)} of {S} samples '
                f'(first {s0}, residual {resid[s0]:.3g}): pose outside the workspace or singular'
            )
        elif code == 5:
            j = int(info[s0])
            msg = (
                f'{p.model_name}: IK solution outside the URDF joint limits at {len(idx)} of {S} '
                f'samples (first {s0}: {_outside_limits(p, j, theta[s0, j])})'
            )
        else:
            msg = f'{p.model_name}: singular IK Jacobian J_IK (actuation singularity) at {len(idx)} samples, first {s0}'
        raise PKMSingularityError(msg, idx, st)
    raise PKMSingularityError(
        f'{p.model_name}: the kernel failed (status {sorted(set(status.tolist()))})', np.nonzero(status)[0], status
    )


def _outside_limits(p, j, value):
    """``"joint 'X' = v, outside its limits [lo, hi] ..."``: the refusal of an IK solution
    ``value`` [rad | m] of stacked joint ``j`` of the PKM ``p`` by its URDF limits."""
    return (
        f"joint '{p.joint_label[j]}' = {value:.6g}, outside its limits [{p.lower[j]:.6g}, {p.upper[j]:.6g}] "
        '(the URDF <limit lower/upper> of the joint: the pose needs the joint beyond them)'
    )


def _raise_where(bad, code, what):
    """Raise :class:`PKMSingularityError` ``"<what> at N of S samples (first i)"`` with status
    ``code`` at the samples where the boolean (S,) array ``bad`` is set; nothing if none is."""
    if np.any(bad):
        idx = np.nonzero(bad)[0]
        raise PKMSingularityError(
            f'{what} at {len(idx)} of {len(bad)} samples (first {idx[0]})', idx, np.where(bad, code, 0)
        )


def _id2_compiled(p, X, D, g, th, warm, tol, max_iter, single, threads=1, jikd=True):
    pk = _packed(p)
    S = X.shape[0]
    IN = np.concatenate([X.reshape(S, -1)] + D, 1)
    th0 = np.ascontiguousarray(th[:1] if warm else th, float)
    OUT = np.empty((S, pk.nout))
    IST = np.empty((S, 2), np.int64)
    pk.run(*pk.params(g, tol, max_iter, warm, jikd), IN, th0, OUT, IST, threads)
    if (IST[0, 0] != 0) if S == 1 else IST[:, 0].any():
        TH, U, JIK, WT, CP, VP, resid = pk.views(OUT)
        _raise_status(p, IST[:, 0], IST[:, 1], resid, TH[:, 0])
    if single:  # (the views of the one row: fewer array operations per call)
        TH, U, JIK, WT, CP, VP = (OUT[0, sl].reshape(sh) for sl, sh in pk._slices[:6])
        return GeneralID2Result(U[0], U[1], U[2], TH, TH[:, pk.act], JIK, WT, CP, VP)
    TH, U, JIK, WT, CP, VP, resid = pk.views(OUT)
    return GeneralID2Result(U[:, 0], U[:, 1], U[:, 2], TH, TH[:, :, pk.act], JIK, WT, CP, VP)


class GeneralID2Data:
    """Workspace of the compiled general route (the Model/Data split): the packed
    :class:`GeneralPKM` and preallocated buffers, for a controller or a reference generator
    calling it every period. ``data(x, xd, xdd, xddd, xdddd)`` returns ``(u, ud, udd)``
    (3, n_a) for one sample (arguments as one sample of :func:`inverse_dynamics_d2_general`:
    ``x`` (4, 4) pose and body-fixed twist derivatives (6,) if ``pkm.task == 'pose'``, else the
    task coordinates (delta,) and their derivatives 1..4), the Newton IK warm-started from the
    previous successful call (``theta`` (Ntot,), reset with :meth:`reset`); after a call,
    ``theta_all`` (5, Ntot) holds the limb coordinates and derivatives 0..4 and ``theta_a``
    (5, n_a) the actuated ones. :meth:`batch` runs S samples in one kernel call, each
    warm-started from the previous one (the first from ``theta``) and returns a
    :class:`GeneralID2Result`. Raises :class:`PKMSingularityError` / InputError as
    :func:`inverse_dynamics_d2_general`; the returned array is reused by the next call. A call
    does not form the rows of J_IK', J_IK'' (``jik_derivatives=False`` there).
    """

    def __init__(self, model, platform=None, task=None, gravity=None, tol=1e-12, max_iter=50):
        self.pkm = p = model if isinstance(model, GeneralPKM) else general_pkm(model, platform, task)
        self._pk = pk = _packed(p)
        self.g = np.asarray(p.gravity if gravity is None else np.asarray(gravity, float).reshape(3), float)
        self.tol, self.max_iter = float(tol), int(max_iter)
        self._IP, self._FP = pk.params(self.g, self.tol, self.max_iter, False, False)
        self._IN = np.zeros((1, pk.nx + 4 * pk.nd))
        self._x = self._IN[0, : pk.nx].reshape((4, 4) if pk.pose else (pk.d,))
        self._D = self._IN[0, pk.nx :].reshape(4, pk.nd)
        self._OUT = np.empty((1, pk.nout))
        self._IST = np.zeros((1, 2), np.int64)
        self._views = [v[0] for v in pk.views(self._OUT)]
        self.reset()

    def reset(self, theta=None):
        """IK warm start: ``theta`` (Ntot,) or the reference configuration."""
        p = self.pkm
        self.theta = np.array(p.theta_ref if theta is None else np.asarray(theta, float).reshape(p.offsets[-1]), float)[
            None
        ]

    @property
    def theta_all(self):
        return self._views[0]

    @property
    def theta_a(self):
        return self._views[0][:, self._pk.act]

    def __call__(self, x, xd, xdd, xddd, xdddd):
        D = self._D
        try:
            self._x[...] = x
            D[0], D[1], D[2], D[3] = xd, xdd, xddd, xdddd
        except ValueError:
            pk = self._pk
            raise InputError(
                'GeneralID2Data: x must be '
                + ('(4, 4)' if pk.pose else f'({pk.d},)')
                + f' and the task derivatives ({pk.nd},) each'
            ) from None
        self._pk.run(self._IP, self._FP, self._IN, self.theta, self._OUT, self._IST)
        if self._IST[0, 0]:
            v = self._views
            _raise_status(self.pkm, self._IST[:, 0], self._IST[:, 1], v[6][None], v[0][None, 0])
        th = self._views[0][0]
        self.theta[0] = th
        return self._views[1]

    def batch(self, x, xd, xdd, xddd, xdddd, threads=1, jik_derivatives=True):
        """S samples (shapes as :func:`inverse_dynamics_d2_general`), warm-started in sequence
        from ``theta``; ``theta`` becomes the last sample's solution. ``threads``: as
        :func:`inverse_dynamics_d2_general` (the same result as one sequential pass);
        ``jik_derivatives``: as there."""
        p, pk = self.pkm, self._pk
        X = _batch(x, (4, 4) if pk.pose else (pk.d,), 'x')
        S = X.shape[0]
        D = [_batch(v, (pk.nd,), nm, S) for v, nm in ((xd, 'xd'), (xdd, 'xdd'), (xddd, 'xddd'), (xdddd, 'xdddd'))]
        r = _id2_compiled(p, X, D, self.g, self.theta, True, self.tol, self.max_iter, False, threads, jik_derivatives)
        self.theta[0] = r.theta[-1, 0]
        return r


def warmup(model=None):
    """Compile (or load from the numba cache) the general-route kernel with the argument types
    used at run time (batch entry cold and warm-started, :class:`GeneralID2Data`). ``model``: a
    PKM Model of the general route (default, or if it is outside the route, ``urdf/five_bar``);
    the kernel has one signature for every robot. Returns the GeneralPKM used."""
    from robot_dynamics.parsers.data import data_path
    from robot_dynamics.parsers.urdf import load_model

    p = None
    if model is not None:
        try:
            p = general_pkm(model)
        except PKMStructureError:
            p = None
    if p is None:
        p = general_pkm(load_model(data_path('urdf/five_bar.urdf')))
    z = np.zeros(6 if p.task == 'pose' else p.delta)
    x = p.x_ref
    try:
        inverse_dynamics_d2_general(p, x, z, z, z, z)
        inverse_dynamics_d2_general(p, np.stack([x, x]), *([np.stack([z, z])] * 4), warm_start=True)
        data = GeneralID2Data(p)
        data(x, z, z, z, z)
        data.batch(np.stack([x, x]), *([np.stack([z, z])] * 4))
    except PKMSingularityError:  # e.g. an actuation singularity at the reference: compiled anyway
        pass
    return p
