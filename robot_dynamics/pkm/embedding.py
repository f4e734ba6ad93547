"""Constraint embedding for PKM with hybrid limbs (seed 003, Mueller), corrected.

General: any PKM described by a URDF spanning tree + loops sidecar whose ``submechanisms``
declare the limbs. Each limb becomes its own tree model (:class:`Limb`) that contains the
platform; its intra-limb loops are resolved locally (Newton, or a closed-form linear resolver
declared in the sidecar), so each hybrid limb is a serial chain in a few independent
coordinates ``q_(l)``. No global constraint system is ever formed.

Sidecar (format robot_dynamics/parsers/sidecar/1), one entry per limb in ``submechanisms``::

    - name: limb2
      joints: [l2_j1, ...]            # URDF tree joints of the limb (parents inside or world)
      loops: [l2_R7, l2_U8]           # intra-limb cut joints (must be edge-disjoint: hybrid limb)
      dependent: [l2_j2, ...]         # optional: y of every loop (default: pivoted QR of G)
      platform_joint: l2_U6           # a cut loop (revolute/universal/spherical) joining the limb
                                      # to the platform: becomes 1-3 massless virtual revolute
                                      # joints '<loop>_1', ... of the limb tree; or a list of
                                      # URDF joints (the platform is in this limb's URDF subtree)
      platform_frame: tool            # the platform frame F_p as seen from this limb
      resolver: {l2_R7: {type: linear, matrix: [[-1], [1]]}, l2_U8: {type: newton}}
      redundant: {l2_U8: 0}           # optional: number of redundant rows of an intra-limb loop
                                      # (checked against the rank at the reference; e.g. 1 for
                                      # the 4-universal-joint parallelogram of a Delta limb)
      parameters: {task: [x, z], limb_task: [x, y, z]}

Task components (all of the platform frame F_p = ``platform_frame``, world axes):

* ``x``, ``y``, ``z``: position of the origin of F_p [m]; velocity component = linear velocity
  v of that origin (LWA twist), acceleration = its classical acceleration;
* ``rx``, ``ry``, ``rz``: components of the rotation vector r of ``R_p R_ref^T`` [rad] (world
  axes, relative to the platform orientation R_ref in the reference configuration; the
  target orientation is ``R* = exp(r^) R_ref`` with r = 0 for the components not in ``task``);
  velocity component = world angular velocity w_x, w_y, w_z [rad/s] (not dr/dt), acceleration
  = dw/dt. For a platform rotating about a fixed world axis (planar phi = ``rz``) r is the
  rotation angle and ``dr/dt = w`` exactly; for general 3-D rotations the task velocity is the
  twist, the task position the rotation vector;
* in ``limb_task`` only: ``{lin: [ux, uy, uz]}`` / ``{rot: [ux, uy, uz]}``, the translation
  along / rotation about a world direction (e.g. the rotation of a Delta platform about the hip
  axis u_i that one separated parallelogram limb allows), held at the reference.

``limb_task``: the delta_p(l) components the separated limb controls (= the limb DOF
delta_l); ``task`` the PKM task coordinates x (delta_p of them, the same for every limb, names
only); non-task components are held at their value in the reference configuration (the PKM
workspace W, e.g. y = 0 for IRSBot-2). D_t(l) is the 0/1 selection of ``task`` inside
``limb_task``. The limb task error is ``S (p* - p, log(R* R^T))`` with S the rows of the
components over the twist (v, w) (for rotations a first-order consistent error: Newton steps
with the Jacobian rows of w converge, the solution is exact).

Conventions: SI units, angles in rad. Twists/Jacobians are in the ``local_world_aligned``
reference of :mod:`robot_dynamics.algorithms.kinematics` (linear rows first, ``(v, w)``), so for
translational tasks ``V_t = x_dot`` (world axes); for a purely translating platform (IRSBot-2)
this equals the paper's body-fixed ``P_p V_t``. Generalized forces are joint torques [N m] /
forces [N]; task forces are forces [N] on the platform origin and moments [N m] (for the
rotational components) in world axes. The inertia of the platform body is
carried by exactly one limb (the one whose URDF subtree contains it; virtual joints are
massless), so it is counted once (brief erratum 17).

Algorithms (see docs/constraint_embedding.md for the equations and the corrections):

* loop resolution: ``H_l = [-G_y^-1 G_q; I]`` per loop (eq. 18), ``Hdot qd`` via the exact
  closure bias ``-G_y^-1 Gdot theta_dot`` (eq. 19 in product form);
* limb IK: nested scheme (Alg. 1 with the corrected sign ``dx = x* - x``, inner Newton per loop =
  the reconstructed Alg. 2) or the corrected compound scheme (Alg. 3 with the constraint
  correction of eq. 33); continuation from a seed; branch tracking by the signs of det(L_t) and
  det(G_y): a switch raises :class:`BranchSwitchError`, non-convergence :class:`IKError`;
* velocity/acceleration IK: ``F = L_t^-1 D_t``, ``theta_dot = H F V_t``, corrected eq. (29):
  ``q_ddot = F V_t_dot - L_t^-1 Ldot_t q_dot``;
* task-space EOM ``M_t V_t_dot + b_t = J_IK^T u + W_t^EE`` with ``M_t = sum (HF)^T M_l (HF)``,
  ``b_t = C_t V_t + W_t^grav`` evaluated by the limb RNEA (the Newton-Euler form of eqs. 39-45);
  inverse dynamics ``u = J_IK^-T (M_t V_t_dot + b_t - W_t^EE)``, forward dynamics, FK from the
  actuated joints (Newton on the same equations).
"""

from __future__ import annotations

import math
from collections import namedtuple
from dataclasses import dataclass, field

import numpy as np

from robot_dynamics.algorithms.constraints import constraint_terms
from robot_dynamics.errors import InputError, RobotDynamicsError
from robot_dynamics.algorithms.kinematics import forward_kinematics
from robot_dynamics.spatial.lie import exp_so3, log_so3, quat_xyzw_to_matrix
from robot_dynamics.model import REVOLUTE, Model
from robot_dynamics.pkm import _embedding_kernels as _K
from robot_dynamics.pkm.general import pkm_cache

__all__ = [
    'inverse_dynamics_d2_task',
    'PKMError',
    'PKMSpecError',
    'IKError',
    'BranchSwitchError',
    'SingularityError',
    'PKM',
    'Limb',
    'get_pkm',
    'IKSolution',
    'TaskMotion',
    'TaskDynamics',
    'solve_ik',
    'task_motion',
    'task_dynamics',
    'inverse_dynamics',
    'forward_dynamics',
    'forward_kinematics_pkm',
    'IKTracker',
    'task_reference',
]


# --------------------------------------------------------------------------- errors
class PKMError(RobotDynamicsError):
    """Base class of the constraint-embedding errors."""


class PKMSpecError(PKMError):
    """The limb decomposition in the sidecar is unusable (names the limb/key)."""


class IKError(PKMError):
    """The IK did not converge (unreachable target, too large a step, singularity).

    Attributes: ``limb`` (name), ``iterations``, ``residual`` (task error [m]),
    ``loop_residual`` (max closure residual)."""

    def __init__(self, message, limb=None, iterations=None, residual=None, loop_residual=None):
        self.limb = limb
        self.iterations = iterations
        self.residual = residual
        self.loop_residual = loop_residual
        super().__init__(message)


class BranchSwitchError(IKError):
    """The IK converged on another assembly mode (sign of det L_t or det G_y flipped)."""


class SingularityError(PKMError):
    """An input (L_t) or output (J_IK) singularity: the requested quantity is undefined."""


_COMP = {'x': 0, 'y': 1, 'z': 2, 'rx': 3, 'ry': 4, 'rz': 5}
_ROT = ('rx', 'ry', 'rz')


def _comp_row(c, key):
    """Row (6,) over the LWA platform twist (v, w) of one limb-task component: a name of
    ``_COMP`` or a mapping ``{lin: [ux, uy, uz]}`` / ``{rot: [ux, uy, uz]}`` (a world direction:
    translation along / rotation about it; normalised)."""
    s = np.zeros(6)
    if isinstance(c, str) and c in _COMP:
        s[_COMP[c]] = 1.0
        return s
    if isinstance(c, dict) and len(c) == 1 and next(iter(c)) in ('lin', 'rot'):
        kind, u = next(iter(c.items()))
        try:
            u = np.asarray(u, float).reshape(3)
        except (TypeError, ValueError):
            u = np.full(3, np.nan)
        nu = float(np.linalg.norm(u)) if np.all(np.isfinite(u)) else 0.0
        if nu > 1e-12:
            s[(0 if kind == 'lin' else 3) : (3 if kind == 'lin' else 6)] = u / nu
            return s
    raise PKMSpecError(
        f'{key}: task component {c!r} not supported (x, y, z, rx, ry, rz, or '
        f'{{lin: [ux, uy, uz]}} / {{rot: [ux, uy, uz]}} with a non-zero world '
        f'direction)'
    )


def _rot(axis, t):
    k = np.asarray(axis, float)
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + math.sin(t) * K + (1 - math.cos(t)) * K @ K


_CT = namedtuple('_CT', 'phi A bias')


# --------------------------------------------------------------------------- data
@dataclass
class LoopCE:
    """One intra-limb loop: constraint rows of the limb model, dependent/independent joints
    (limb-local indices), the rows kept for G_y (rank-revealing selection) and the resolver."""

    name: str
    rows: np.ndarray  # all rows of this loop in the limb constraint vector
    sel: np.ndarray  # selected independent rows (len = len(y))
    y: np.ndarray  # dependent joints (limb-local)
    q: np.ndarray  # independent joints of the loop (limb-local)
    kind: str = 'newton'  # 'newton' | 'linear'
    K: np.ndarray | None = None  # linear resolver: y = y0 + K (q - q0)
    y0: np.ndarray | None = None
    q0: np.ndarray | None = None
    tol: float | None = None
    max_iter: int | None = None


@dataclass
class Limb:
    """A limb as its own tree model (platform included).

    ``model``: limb tree (:class:`Model`); ``gidx`` (n_l,): index of each limb joint in the
    global model (-1 for a virtual joint of the platform joint); ``frame``: platform frame name;
    ``task_rows`` (delta_p(l), 6): rows S over the platform twist (v, w) (LWA, linear
    first) of the components controlled by the limb (limb_task); ``D`` (delta_p(l), delta_p): D_t(l); ``qi``/``yi``: independent/dependent limb joints;
    ``act`` limb-local indices of the actuated joints; ``virtual``: (loop, limb-side frame,
    platform-side frame, axes in the limb-side frame) or None.
    """

    name: str
    model: Model
    gidx: np.ndarray
    frame: str
    fidx: int
    task_rows: np.ndarray
    D: np.ndarray
    loops: list
    qi: np.ndarray
    yi: np.ndarray
    act: np.ndarray
    act_names: list
    virtual: tuple | None = None
    ref: np.ndarray | None = None
    signs: dict = field(default_factory=dict)

    @property
    def nq(self):
        return self.model.nq


IKSolution = namedtuple('IKSolution', 'x theta q outer inner task_residual loop_residual cond_F signs')
IKSolution.__doc__ = """Result of :func:`solve_ik`.

x (delta_p,) task coordinates [m | rad] (order ``PKM.task``); theta: list of limb configurations (n_l,) [rad];
q (n,): global URDF configuration (every joint, passive included); outer: outer iterations per
limb; inner: list per limb of the inner (loop) iteration counts of every outer step;
task_residual: max |S (p* - p, log(R* R^T))| over limbs [m | rad]; loop_residual: max closure residual of all limbs
(position rows m, orientation rows -); cond_F: condition number of F_(l) per limb;
signs: branch signature per limb (signs of det L_t and det G_y)."""

TaskMotion = namedtuple('TaskMotion', 'theta thetad thetadd H F Lt J_IK q qd qdd cond_F cond_J_IK')
TaskMotion.__doc__ = """Velocity/acceleration IK (per limb lists, global arrays).

theta, thetad, thetadd: lists (n_l,) per limb; H: list (n_l, delta_l); F: list
(delta_l, delta_p); Lt: list (delta_p(l), delta_l); J_IK (n_act, delta_p) [rad/m];
q, qd, qdd (n,) global; cond_F (per limb), cond_J_IK."""

TaskDynamics = namedtuple('TaskDynamics', 'u M_t b_t g_t C_t_V_t W_t_ee J_IK motion reflected_mass cond_M_t cond_J_IK')
TaskDynamics.__doc__ = """Task-space dynamics at a task state.

u (n_act,) actuator forces [N m | N] (order model.actuated); M_t (delta_p, delta_p) [kg];
b_t = C_t V_t + W_t^grav, g_t = W_t^grav, C_t_V_t (delta_p,) [N]; W_t_ee (delta_p,) task force
of the end-effector wrench; J_IK (n_act, delta_p); motion: :class:`TaskMotion`;
reflected_mass: eigenvalues of M_t [kg]; cond_M_t, cond_J_IK."""


# --------------------------------------------------------------------------- set-up
class PKM:
    """Limb decomposition of a PKM model (built once, cached on the model by :func:`get_pkm`).

    Parameters: ``model`` (global :class:`Model` with a sidecar declaring the limbs),
    ``tol`` (IK tolerance, m / closure units), ``max_outer``, ``max_inner``, ``scheme``
    ('nested' | 'compound').
    """

    def __init__(self, model, tol=1e-10, max_outer=20, max_inner=20, scheme='nested'):
        model.require_one_dof('constraint embedding (PKM)')
        self.model = model
        self.tol, self.max_outer, self.max_inner, self.scheme = tol, max_outer, max_inner, scheme
        src = model.loops_source or model.source
        subs = [s for s in (model.submechanisms or []) if 'platform_frame' in s]
        if not subs:
            raise PKMSpecError(
                f"{src}: submechanisms: no limb (an entry with 'platform_frame') "
                f'is declared; the constraint embedding needs the limbs'
            )
        task = None
        self.limbs = []
        used = set()
        for i, sm in enumerate(subs):
            key = f'{src}: submechanisms[{sm["name"]}]'
            par = sm.get('parameters') or {}
            t = list(par.get('task', []))
            lt = list(par.get('limb_task', t))
            for c in t:
                if not isinstance(c, str) or c not in _COMP:
                    raise PKMSpecError(
                        f'{key}.parameters.task: task component {c!r} not supported (x, y, z, rx, ry, rz)'
                    )
            for c in lt:
                _comp_row(c, f'{key}.parameters.limb_task')
            if len(set(t)) != len(t):
                raise PKMSpecError(f'{key}.parameters.task: repeated component in {t}')
            if not t or any(c not in lt for c in t):
                raise PKMSpecError(
                    f"{key}.parameters: 'task' must be a non-empty subset of 'limb_task', got task={t}, limb_task={lt}"
                )
            if task is None:
                task = t
            elif t != task:
                raise PKMSpecError(f"{key}.parameters.task: {t} differs from the first limb's {task}")
            limb = self._build_limb(sm, key, lt, t)
            overlap = used & set(int(g) for g in limb.gidx if g >= 0)
            if overlap:
                raise PKMSpecError(
                    f'{key}.joints: joints shared with another limb: {[model.joint_names[g] for g in sorted(overlap)]}'
                )
            used |= set(int(g) for g in limb.gidx if g >= 0)
            self.limbs.append(limb)
        self.task = task
        self.ntask = len(task)
        self.platform_frame = self.limbs[0].frame
        act = list(model.actuated)
        self.act_map = []  # (limb index, limb-local joint) per actuated joint
        for a in act:
            for li, lb in enumerate(self.limbs):
                if a in lb.act_names:
                    self.act_map.append((li, int(lb.model.joint_index(a))))
                    break
            else:
                raise PKMSpecError(f"{src}: actuated joint '{a}' belongs to no limb")
        for lb in self.limbs:
            lb.kp = self._pack(lb)
        self.pose_ref = self._platform_pos(self.limbs[0], self.limbs[0].ref)
        self.x_ref_full = self.pose_ref[:3].copy()
        self.R_ref = self.pose_ref[3:].reshape(3, 3).copy()
        self.x_ref = np.array([self.x_ref_full[_COMP[c]] if c not in _ROT else 0.0 for c in task])
        for lb in self.limbs:
            # positions always; orientations when the limb controls rotations (its rotational
            # rows compare its platform frame's orientation with R* built from limb 1's)
            d = self._platform_pos(lb, lb.ref) - self.pose_ref
            if not np.any(lb.task_rows[:, 3:]):
                d = d[:3]
            if np.linalg.norm(d) > 1e-8:
                raise PKMSpecError(
                    f"{src}: limb '{lb.name}': its platform frame '{lb.frame}' "
                    f"differs from the first limb's in the reference configuration "
                    f'by {np.linalg.norm(d):.3g} (position [m] / rotation matrix '
                    f'entries; not assembled)'
                )
            try:
                lb.signs = self._signature(lb, lb.ref)
            except SingularityError as exc:
                raise SingularityError(
                    f'{src}: submechanisms[{lb.name}]: at the reference configuration: {exc}'
                ) from None

    # ----------------------------------------------------------------- limb model
    def _build_limb(self, sm, key, limb_task, task):
        M = self.model
        joints = sm.get('joints')
        if not joints:
            raise PKMSpecError(f'{key}.joints: a limb needs its list of tree joints')
        g = sorted(M.joint_index(j) for j in joints)
        gset = set(g)
        for j in g:
            p = int(M.parents[j])
            if p >= 0 and p not in gset:
                raise PKMSpecError(
                    f"{key}.joints: the parent joint '{M.joint_names[p]}' of "
                    f"'{M.joint_names[j]}' is not in the limb (a limb must be a "
                    f'subtree hanging from the world)'
                )
        loc = {j: k for k, j in enumerate(g)}
        names = [M.joint_names[j] for j in g]
        parents = [loc[int(M.parents[j])] if M.parents[j] >= 0 else -1 for j in g]
        arr = {
            k: [getattr(M, k)[j] for j in g]
            for k in (
                'joint_types',
                'axes',
                'R_fixed',
                'p_fixed',
                'mass',
                'com',
                'inertia_com',
                'lower',
                'upper',
                'velocity_limit',
                'effort_limit',
            )
        }
        utypes = [M.joint_urdf_types[j] for j in g]
        fnames, fpar, fR, fp = [], [], [], []
        for f, nm in enumerate(M.frame_names):
            pj = int(M.frame_parent[f])
            if pj < 0 or pj in gset:
                fnames.append(nm)
                fpar.append(loc[pj] if pj >= 0 else -1)
                fR.append(M.frame_R[f])
                fp.append(M.frame_p[f])
        virtual = None
        pjs = sm.get('platform_joint')
        if isinstance(pjs, str):
            lps = {lp.name: lp for lp in M.loops}
            if pjs not in lps:
                raise PKMSpecError(
                    f"{key}.platform_joint: '{pjs}' is neither a loop of the sidecar nor a list of joints"
                )
            lp = lps[pjs]
            pa = int(M.frame_parent[M.frame_index(lp.frame_a)])
            pb = int(M.frame_parent[M.frame_index(lp.frame_b)])
            if pa in gset or (pa < 0 and pb not in gset):
                side, other, first = lp.frame_a, lp.frame_b, True
            elif pb in gset or pb < 0:
                side, other, first = lp.frame_b, lp.frame_a, False
            else:
                raise PKMSpecError(f"{key}.platform_joint: neither cut frame of '{pjs}' is on the limb")
            if lp.type == 'revolute':
                axes = [lp.axis]
            elif lp.type == 'universal':
                axes = [lp.axes[0], lp.axes[1]] if first else [lp.axes[1], lp.axes[0]]
            elif lp.type in ('spherical', 'point', 'point3d'):
                axes = list(np.eye(3))
            else:
                raise PKMSpecError(
                    f"{key}.platform_joint: loop type '{lp.type}' cannot be a "
                    f'platform joint (revolute, universal, spherical)'
                )
            s = M.frame_index(side)
            ps = int(M.frame_parent[s])
            P = int(M.frame_parent[M.frame_index(other)])
            if P < 0 or P in gset:
                raise PKMSpecError(
                    f"{key}.platform_joint: the platform side of '{pjs}' must be a moving body outside the limb"
                )
            vnames = [f'{pjs}_{k + 1}' for k in range(len(axes))]
            for k, ax in enumerate(axes):
                names.append(vnames[k])
                parents.append((loc[ps] if ps >= 0 else -1) if k == 0 else len(names) - 2)
                arr['joint_types'].append(REVOLUTE)
                arr['axes'].append(np.asarray(ax, float))
                arr['R_fixed'].append(M.frame_R[s] if k == 0 else np.eye(3))
                arr['p_fixed'].append(M.frame_p[s] if k == 0 else np.zeros(3))
                arr['mass'].append(0.0)
                arr['com'].append(np.zeros(3))
                arr['inertia_com'].append(np.zeros((3, 3)))
                arr['lower'].append(-np.inf)
                arr['upper'].append(np.inf)
                arr['velocity_limit'].append(np.inf)
                arr['effort_limit'].append(0.0)
                utypes.append('continuous')
            o = M.frame_index(other)
            Ro, po = M.frame_R[o], M.frame_p[o]
            last = len(names) - 1
            for f, nm in enumerate(M.frame_names):
                if int(M.frame_parent[f]) == P:
                    fnames.append(nm)
                    fpar.append(last)
                    fR.append(Ro.T @ M.frame_R[f])
                    fp.append(Ro.T @ (M.frame_p[f] - po))
            virtual = (pjs, side, other, [np.asarray(a, float) for a in axes], lp.type)
        elif pjs is not None:
            if not isinstance(pjs, list) or any(j not in names for j in pjs):
                raise PKMSpecError(
                    f'{key}.platform_joint: must be a loop name or a list of joints of the limb, got {pjs!r}'
                )
        nl = len(names)
        lm = Model(
            name=f'{M.name}:{sm["name"]}',
            source=M.source,
            joint_names=names,
            parents=np.array(parents, dtype=np.int64),
            joint_types=np.array(arr['joint_types'], dtype=np.int64),
            joint_urdf_types=utypes,
            axes=np.array(arr['axes']).reshape(nl, 3),
            R_fixed=np.array(arr['R_fixed']).reshape(nl, 3, 3),
            p_fixed=np.array(arr['p_fixed']).reshape(nl, 3),
            mass=np.array(arr['mass'], float),
            com=np.array(arr['com']).reshape(nl, 3),
            inertia_com=np.array(arr['inertia_com']).reshape(nl, 3, 3),
            lower=np.array(arr['lower'], float),
            upper=np.array(arr['upper'], float),
            velocity_limit=np.array(arr['velocity_limit'], float),
            effort_limit=np.array(arr['effort_limit'], float),
            frame_names=fnames,
            frame_parent=np.array(fpar, dtype=np.int64),
            frame_R=np.array(fR).reshape(-1, 3, 3),
            frame_p=np.array(fp).reshape(-1, 3),
            root_link=M.root_link,
            gravity=M.gravity.copy(),
        )
        frame = sm.get('platform_frame')
        if frame not in set(fnames):
            raise PKMSpecError(f"{key}.platform_frame: '{frame}' is not a frame of the limb tree")
        lps = {lp.name: lp for lp in M.loops}
        lm.loops = []
        for ln in sm.get('loops', []) or []:
            lp = lps[ln]
            if lp.coupling is not None:
                raise PKMSpecError(
                    f"{key}.loops: loop '{ln}' is a joint coupling; constraint embedding takes cut-joint loops only"
                )
            for fr in (lp.frame_a, lp.frame_b):
                if fr not in set(fnames):
                    raise PKMSpecError(
                        f"{key}.loops: cut frame '{fr}' of loop '{ln}' is not on "
                        f'the limb tree (an inter-limb loop must be the '
                        f'platform_joint)'
                    )
            lm.loops.append(lp)
        gidx = np.array(g + [-1] * (nl - len(g)), dtype=np.int64)
        act_names = [j for j in M.actuated if j in set(names)]
        ref = self._limb_config(lm, gidx, virtual, M.reference_q())
        if virtual is not None:  # virtual angles of the (possibly rotated) cut frames
            ref[-len(virtual[3]) :] = self._virtual_angles(virtual, M.reference_q())
        loops, dep = self._partition(sm, key, lm, ref, act_names)
        qi = np.array([k for k in range(nl) if k not in set(dep)], dtype=np.int64)
        yi = np.array(sorted(dep), dtype=np.int64)
        D = np.zeros((len(limb_task), len(task)))
        for c, comp in enumerate(task):
            D[[isinstance(v, str) and v == comp for v in limb_task].index(True), c] = 1.0
        limb = Limb(
            name=sm['name'],
            model=lm,
            gidx=gidx,
            frame=frame,
            fidx=lm.frame_index(frame),
            task_rows=np.array([_comp_row(c, f'{key}.parameters.limb_task') for c in limb_task]).reshape(-1, 6),
            D=D,
            loops=loops,
            qi=qi,
            yi=yi,
            act=np.array([lm.joint_index(a) for a in act_names], dtype=np.int64),
            act_names=act_names,
            virtual=virtual,
            ref=ref,
        )
        if len(qi) != len(limb_task):
            raise PKMSpecError(
                f'{key}: the limb has delta_l = {len(qi)} independent coordinates '
                f'but controls {len(limb_task)} task components (limb_task); the '
                f'embedding needs non-redundant limbs (delta_p(l) = delta_l)'
            )
        res = self._loop_max(limb, ref)
        if res > 1e-8:
            raise PKMSpecError(
                f'{key}: the reference configuration violates the closure of the '
                f'limb loops (max residual {res:.3g}); give a closed '
                f'reference_configuration'
            )
        return limb

    @staticmethod
    def _limb_config(lm, gidx, virtual, qg):
        """Limb configuration from a global configuration (virtual joints from the cut)."""
        th = np.zeros(lm.nq)
        m = gidx >= 0
        th[m] = qg[gidx[m]]
        return th

    def limb_config(self, limb, qg):
        """Limb configuration (n_l,) from a global URDF configuration ``qg`` (n,); the virtual
        platform-joint angles are recovered from the relative orientation of the cut frames."""
        th = self._limb_config(limb.model, limb.gidx, limb.virtual, qg)
        if limb.virtual is not None:
            th[-len(limb.virtual[3]) :] = self._virtual_angles(limb.virtual, qg)
        return th

    def _virtual_angles(self, virtual, qg):
        """Angles of the virtual platform joints from the relative orientation of the cut
        frames at the global configuration qg."""
        _, side, other, axes, typ = virtual
        T = forward_kinematics(self.model, qg, [side, other], as_array=True)
        R = T[0, :3, :3].T @ T[1, :3, :3]
        nv = len(axes)
        if typ == 'revolute':
            k = axes[0]
            e = np.eye(3)[int(np.argmin(np.abs(k)))]
            e = e - (e @ k) * k
            e /= np.linalg.norm(e)
            ang = [math.atan2(k @ np.cross(e, R @ e), e @ (R @ e))]
        elif typ == 'universal':
            a1, a2 = axes
            v = R @ a2
            t1 = math.atan2(a1 @ np.cross(a2, v), a2 @ v)
            w = R.T @ a1
            t2 = -math.atan2(a2 @ np.cross(a1, w), a1 @ w)
            ang = [t1, t2]
        else:  # R = Rx(a) Ry(b) Rz(c)
            ang = [math.atan2(-R[1, 2], R[2, 2]), math.asin(max(-1, min(1, R[0, 2]))), math.atan2(-R[0, 1], R[0, 0])]
        return np.array(ang[:nv])

    def _partition(self, sm, key, lm, ref, act_names):
        """Per loop: joints (limb-local), dependent/independent split, row selection, resolver."""
        ct = constraint_terms(lm, ref)
        dep_names = sm.get('dependent')
        res_spec = sm.get('resolver') or {}
        if not isinstance(res_spec, dict):
            raise PKMSpecError(f'{key}.resolver: must be a mapping loop -> {{type: ...}}')
        loops, r0, seen, dep_all = [], 0, set(), []
        act = set(lm.joint_index(a) for a in act_names)
        for lp in lm.loops:
            rows = np.arange(r0, r0 + lp.nrows)
            r0 += lp.nrows
            sa = (
                set(lm.support[lm.frame_parent[lm.frame_index(lp.frame_a)]])
                if lm.frame_parent[lm.frame_index(lp.frame_a)] >= 0
                else set()
            )
            sb = (
                set(lm.support[lm.frame_parent[lm.frame_index(lp.frame_b)]])
                if lm.frame_parent[lm.frame_index(lp.frame_b)] >= 0
                else set()
            )
            lj = sorted(sa ^ sb)
            if seen & set(lj):
                raise PKMSpecError(
                    f"{key}.loops: loop '{lp.name}' shares joints with another "
                    f'loop of the limb (not a hybrid limb: loops must be '
                    f'edge-disjoint)'
                )
            seen |= set(lj)
            G = ct.A[rows][:, lj]
            sv = np.linalg.svd(G, compute_uv=False)
            rank = int(np.sum(sv > 1e-9 * max(1.0, sv[0]))) if len(sv) else 0
            red = (sm.get('redundant') or {}).get(lp.name)
            if red is not None and lp.nrows - rank != red:
                raise PKMSpecError(
                    f'{key}.redundant.{lp.name}: declared {red} redundant rows, '
                    f'but the {lp.nrows} rows of the loop have rank {rank} over '
                    f'its joints {[lm.joint_names[k] for k in lj]} at the reference '
                    f'configuration ({lp.nrows - rank} redundant): check the '
                    f'geometry (e.g. a parallelogram with unequal sides)'
                )
            if dep_names is not None:
                y = [k for k in lj if lm.joint_names[k] in set(dep_names)]
                if len(y) != rank:
                    raise PKMSpecError(
                        f"{key}.dependent: loop '{lp.name}' has {rank} independent "
                        f'constraints but {len(y)} dependent joints were declared '
                        f'({[lm.joint_names[k] for k in y]})'
                    )
            else:  # pivoted QR on G, actuated joints last (they stay independent)
                import scipy.linalg as sla

                cand = [k for k in lj if k not in act] + [k for k in lj if k in act]
                _, _, piv = sla.qr(ct.A[rows][:, cand], pivoting=True)
                y = sorted(cand[p] for p in piv[:rank])
            q = [k for k in lj if k not in set(y)]
            Gy = ct.A[rows][:, y]
            import scipy.linalg as sla

            _, _, piv = sla.qr(Gy.T, pivoting=True)
            sel = rows[np.sort(piv[: len(y)])]
            if len(y) and np.linalg.cond(ct.A[sel][:, y]) > 1e8:
                raise PKMSpecError(
                    f"{key}: loop '{lp.name}': G_y is singular at the reference "
                    f'configuration for the dependent joints '
                    f'{[lm.joint_names[k] for k in y]}; choose another partition'
                )
            L = LoopCE(name=lp.name, rows=rows, sel=sel, y=np.array(y, dtype=np.int64), q=np.array(q, dtype=np.int64))
            spec = res_spec.get(lp.name, {'type': 'newton'})
            kind = spec.get('type', 'newton') if isinstance(spec, dict) else None
            if kind == 'linear':
                K = np.asarray(spec.get('matrix'), float)
                if K.shape != (len(y), len(q)):
                    raise PKMSpecError(
                        f'{key}.resolver.{lp.name}.matrix: shape {K.shape}, '
                        f'expected ({len(y)}, {len(q)}) (dependent x independent '
                        f'joints of the loop: {[lm.joint_names[k] for k in y]} x '
                        f'{[lm.joint_names[k] for k in q]})'
                    )
                L.kind, L.K, L.y0, L.q0 = 'linear', K, ref[y].copy(), ref[q].copy()
                rng = np.random.default_rng(0)
                for _ in range(3):  # the resolver must close the loop exactly
                    th = ref.copy()
                    th[q] += rng.uniform(-0.3, 0.3, len(q))
                    th[y] = L.y0 + K @ (th[q] - L.q0)
                    e = np.abs(constraint_terms(lm, th, jacobian=False).phi[rows]).max()
                    if e > 1e-9:
                        raise PKMSpecError(
                            f'{key}.resolver.{lp.name}: the linear resolver does not close the loop (residual {e:.3g})'
                        )
            elif kind == 'newton':
                L.tol = float(spec.get('tol', 0)) or None
                L.max_iter = int(spec.get('max_iter', 0)) or None
            else:
                raise PKMSpecError(f"{key}.resolver.{lp.name}: type must be 'newton' or 'linear'")
            loops.append(L)
            dep_all += y
        if r0 != len(ct.phi):
            raise PKMSpecError(f'{key}: internal row bookkeeping')
        return loops, dep_all

    # ----------------------------------------------------------------- kinematics
    @staticmethod
    def _pack(limb):
        """Everything constant per limb, packed for the numba kernels (see
        :mod:`robot_dynamics.pkm._embedding_kernels` for the layout)."""
        lm = limb.model
        n = lm.nq
        frames = [limb.fidx]
        for lp in lm.loops:
            frames += [lm.frame_index(lp.frame_a), lm.frame_index(lp.frame_b)]
        fpar = np.ascontiguousarray(lm.frame_parent[frames], dtype=np.int64)
        fR = np.ascontiguousarray(lm.frame_R[frames], dtype=float)
        fp = np.ascontiguousarray(lm.frame_p[frames], dtype=float)
        nL = len(lm.loops)
        w = max([1] + [max(len(L.y), len(L.q)) for L in limb.loops])
        LI = np.zeros((nL, 6), dtype=np.int64)
        LD, LR = np.zeros((nL, 3, 3)), np.zeros((nL, 3, 2, 3))
        LY, LQ, LS = (np.zeros((nL, w), dtype=np.int64) for _ in range(3))
        LK, Ly0, Lq0 = np.zeros((nL, w, w)), np.zeros((nL, w)), np.zeros((nL, w))
        Ltol, Lmax = np.zeros(nL), np.zeros(nL, dtype=np.int64)
        r0 = 0
        for l, (lp, L) in enumerate(zip(lm.loops, limb.loops)):
            npos, nrot = len(lp.pos_dirs), len(lp.rot_pairs)
            kind = (1 if L.kind == 'linear' else 0) if len(L.y) else 2
            LI[l] = (npos, nrot, r0, kind, len(L.y), len(L.q))
            r0 += npos + nrot
            LD[l, :npos] = lp.pos_dirs
            LR[l, :nrot] = lp.rot_pairs
            LY[l, : len(L.y)], LQ[l, : len(L.q)], LS[l, : len(L.sel)] = L.y, L.q, L.sel
            if L.kind == 'linear':
                LK[l, : len(L.y), : len(L.q)], Ly0[l, : len(L.y)], Lq0[l, : len(L.q)] = L.K, L.y0, L.q0
            Ltol[l] = L.tol or 0.0
        qcol = -np.ones(n, dtype=np.int64)
        qcol[limb.qi] = np.arange(len(limb.qi))
        return (
            lm._par,
            lm._geo,
            lm._ine,
            np.ascontiguousarray(lm.gravity, dtype=float),
            fpar,
            fR,
            fp,
            LI,
            LD,
            LR,
            LY,
            LQ,
            LS,
            LK,
            Ly0,
            Lq0,
            Ltol,
            Lmax,
            np.ascontiguousarray(limb.qi, dtype=np.int64),
            qcol,
            np.ascontiguousarray(limb.task_rows, dtype=float),
            np.ascontiguousarray(limb.D, dtype=float),
        )

    def _platform_pos(self, limb, th):
        return self._terms(limb, th)[0]

    @staticmethod
    def _loop_max(limb, th):
        if not limb.model.loops:
            return 0.0
        return float(np.abs(constraint_terms(limb.model, th, jacobian=False).phi).max())

    @staticmethod
    def _terms(limb, th, thd=None):
        """Platform pose p (12,) (position [m], rotation matrix row-major), LWA Jacobian J (6, n_l), ``Jdot thd`` (6,) (None without
        thd) and the closure terms (phi, A, bias) of the limb (None without loops).

        Compiled (numba) re-implementation of
        :func:`robot_dynamics.algorithms.constraints.constraint_terms` for the few frames of a limb;
        test_embedding checks it against the generic code."""
        n = limb.model.nq
        m = limb.kp[7][:, :2].sum() if len(limb.model.loops) else 0
        th = np.ascontiguousarray(th, dtype=float)
        vel = thd is not None
        thd = np.zeros(n) if thd is None else np.ascontiguousarray(thd, dtype=float)
        p, J, acc0 = np.empty(12), np.empty((6, n)), np.empty(6)
        phi, A, bias = np.empty(m), np.empty((m, n)), np.empty(m)
        _K.terms(limb.kp, th, thd, vel, p, J, acc0, phi, A, bias)
        ct = _CT(phi, A, bias if vel else None) if m else None
        return p, J, (acc0 if vel else None), ct

    @staticmethod
    def _H(limb, ct, n):
        """H (n_l, delta_l): theta_dot = H q_dot; columns ordered as limb.qi."""
        H = np.empty((n, len(limb.qi)))
        A = ct.A if ct is not None else np.zeros((0, n))
        if not _K.build_H(limb.kp, A, H):
            raise SingularityError(f"limb '{limb.name}': G_y is singular (lost assembly)")
        return H

    @staticmethod
    def _Hdot_qd(limb, ct, n):
        """Hdot q_dot (n_l,) = [-G_y^-1 (Gdot theta_dot); 0] per Newton loop (0 for linear)."""
        out = np.zeros(n)
        if ct is not None and not _K.hdot_qd(limb.kp, ct.A, ct.bias, out):
            raise SingularityError(f"limb '{limb.name}': G_y is singular (lost assembly)")
        return out

    def _post(self, limb, th, t3=None):
        """Branch signature (dict), F, cond F, task error, closure residual at a limb config."""
        t3 = self.pose_ref if t3 is None else t3
        sig = np.empty(1 + len(limb.loops))
        F = np.empty((len(limb.qi), limb.D.shape[1]))
        ok, c, tres, lres = _K.limb_post(
            limb.kp, np.ascontiguousarray(th, dtype=float), np.ascontiguousarray(t3, dtype=float), sig, F
        )
        if not ok:
            raise SingularityError(f"limb '{limb.name}': L_t or G_y is singular (input singularity)")
        return self._sigdict(limb, sig), F, c, tres, lres

    @staticmethod
    def _sigdict(limb, sig):
        s = {'L_t': float(sig[0])}
        for l, L in enumerate(limb.loops):
            if L.kind == 'newton' and len(L.y):
                s[L.name] = float(sig[1 + l])
        return s

    def _signature(self, limb, th):
        return self._post(limb, th, self._platform_pos(limb, th))[0]

    # ----------------------------------------------------------------- limb IK
    def _resolve(self, limb, th):
        """Close every loop of the limb at fixed q (reconstructed Alg. 2), in place. Returns
        the inner iteration count (max over loops)."""
        st, its, res = _K.resolve(limb.kp, th, self.tol, self.max_inner)
        if st:
            self._raise(limb, st, its, np.nan, res, res)
        return its

    def _raise(self, limb, st, k, dx, gmax, res):
        if st == 3:
            raise IKError(
                f"limb '{limb.name}': loop closure did not converge in "
                f'{self.max_inner} Newton iterations (residual {res:.3g}); singular '
                f'G_y or lost assembly',
                limb=limb.name,
                iterations=k,
                loop_residual=float(res),
            )
        if st == 2 or st == 5:
            raise SingularityError(f"limb '{limb.name}': L_t is singular (input singularity)")
        if st == 4:
            raise SingularityError(f"limb '{limb.name}': G_y is singular (lost assembly)")
        raise IKError(
            f"limb '{limb.name}': IK did not converge in {self.max_outer} outer "
            f'iterations (task error {dx:.3g} m, closure {gmax:.3g}); '
            f'target unreachable or step too large',
            limb=limb.name,
            iterations=self.max_outer,
            residual=float(dx),
            loop_residual=float(gmax),
        )

    def _scheme(self, scheme):
        scheme = scheme or self.scheme
        if scheme not in ('nested', 'compound'):
            raise InputError(f"scheme must be 'nested' or 'compound', got {scheme!r}")
        return scheme == 'compound'

    def _limb_solve(self, limb, target3, seed, scheme, HL=None):
        n, d = limb.model.nq, len(limb.qi)
        th = np.empty(n)
        inner = np.zeros(self.max_outer + 1, dtype=np.int64)
        sig = np.empty(1 + len(limb.loops))
        F = np.empty((d, limb.D.shape[1]))
        out = np.zeros(5)
        H, Lt = (np.empty((n, d)), np.empty((d, d))) if HL is None else HL
        st = _K.limb_solve_hl(
            limb.kp,
            target3,
            np.ascontiguousarray(seed, dtype=float),
            self._scheme(scheme),
            float(self.tol),
            int(self.max_outer),
            int(self.max_inner),
            th,
            inner,
            sig,
            F,
            out,
            H,
            Lt,
        )
        if st:
            self._raise(limb, st, int(out[0]), out[1], out[2], out[3])
        k = int(out[0])
        return th, k, inner[:k].tolist(), sig, F, out

    def limb_ik(self, limb, target3, seed, scheme=None):
        """IK of one limb: platform pose ``target3`` (12,) = world position [m] and rotation
        matrix (row-major) of the platform frame, as built by :meth:`target3` (components
        not controlled by the limb are ignored), from the admissible ``seed`` (n_l,). Returns
        (theta, outer iterations, inner counts)."""
        th, k, inner, _, _, _ = self._limb_solve(limb, np.ascontiguousarray(target3, dtype=float), seed, scheme)
        return th, k, inner

    # ----------------------------------------------------------------- PKM IK
    def target3(self, x):
        """Platform target pose (12,) of the task coordinates ``x`` (delta_p,): world position
        [m] (tasked components from x, the others from the reference configuration) and the
        rotation matrix ``R* = exp(r^) R_ref`` (row-major), where r (3,) [rad] holds the
        tasked rotation-vector components rx, ry, rz of x (world axes, relative to the
        reference orientation) and 0 for the others."""
        x = np.asarray(x, float)
        if x.shape != (self.ntask,) or not np.isfinite(x).all():
            raise InputError(f'task target must be {self.ntask} finite numbers ({self.task}), got {x!r}')
        t = self.pose_ref.copy()
        ti = self.__dict__.get('_tidx')
        if ti is None:
            ti = self._tidx = (
                np.array([_COMP[c] for c in self.task if c not in _ROT], np.int64),
                np.array([i for i, c in enumerate(self.task) if c not in _ROT], np.int64),
                np.array([_COMP[c] - 3 for c in self.task if c in _ROT], np.int64),
                np.array([i for i, c in enumerate(self.task) if c in _ROT], np.int64),
            )
        t[ti[0]] = x[ti[1]]
        if len(ti[2]):
            r = np.zeros(3)
            r[ti[2]] = x[ti[3]]
            t[3:] = (exp_so3(r) @ self.R_ref).ravel()
        return t

    def solve_ik(self, x, seed=None, scheme=None, check_branch=True):
        """IK of the PKM: all limbs at task target ``x`` (delta_p,) [m | rad] (components
        ``self.task``; rotations as rotation-vector components, see the module docstring).

        ``seed``: an :class:`IKSolution`, a list of limb configurations, a global configuration
        (n,), or None (reference configuration). Branch tracking compares the signs of det L_t
        and det G_y with the seed's (with the reference's when seed is None).
        """
        t3 = self.target3(x)
        if seed is None:
            seeds = [lb.ref for lb in self.limbs]
            sig0 = [lb.signs for lb in self.limbs]
        elif isinstance(seed, IKSolution):
            seeds, sig0 = seed.theta, seed.signs
        else:
            seed = seed if isinstance(seed, list) else np.asarray(seed, float)
            if isinstance(seed, np.ndarray) and seed.shape == (self.model.nq,):
                seeds = [self.limb_config(lb, seed) for lb in self.limbs]
            elif isinstance(seed, list) and len(seed) == len(self.limbs):
                seeds = [np.asarray(s, float) for s in seed]
            else:
                raise InputError(
                    'seed must be an IKSolution, a list of limb configurations or '
                    f'a global configuration ({self.model.nq},)'
                )
            sig0 = [self._signature(lb, s) for lb, s in zip(self.limbs, seeds)]
        thetas, outer, inner, conds, sigs = [], [], [], [], []
        tres = lres = 0.0
        cache = self.__dict__.setdefault('_pos_cache', {})
        for li, (lb, s, sg) in enumerate(zip(self.limbs, seeds, sig0)):
            n, d = lb.model.nq, len(lb.qi)
            HL = (np.empty((n, d)), np.empty((d, d)))
            cache.pop(li, None)
            th, k, inn, sv, F, out = self._limb_solve(lb, t3, s, scheme, HL)
            # H, F, L_t at the solution: task_motion at this theta reuses them (the position
            # half of the velocity IK, identical numbers)
            cache[li] = (th, th.tobytes(), HL[0], HL[1], F, float(out[4]))
            sig = self._sigdict(lb, sv)
            if check_branch:
                flips = [n for n, v in sig.items() if sg.get(n, v) != v]
                if flips:
                    raise BranchSwitchError(
                        f"limb '{lb.name}': the IK converged on another assembly mode (sign of "
                        f'det {", det ".join(flips)} flipped w.r.t. the seed); refusing the jump',
                        limb=lb.name,
                        iterations=k,
                    )
            thetas.append(th)
            outer.append(k)
            inner.append(inn)
            conds.append(float(out[4]))
            sigs.append(sig)
            tres = max(tres, float(out[1]))
            lres = max(lres, float(out[2]))
        q = self.global_q(thetas)
        return IKSolution(np.asarray(x, float).copy(), thetas, q, outer, inner, tres, lres, conds, sigs)

    def global_q(self, thetas, which=None):
        """Global URDF vector (n,) from limb vectors (joint values or their derivatives)."""
        q = np.zeros(self.model.nq)
        for lb, th in zip(self.limbs, thetas):
            src, dst = lb.__dict__.get('_gmap') or lb.__dict__.setdefault(
                '_gmap', (np.flatnonzero(lb.gidx >= 0), lb.gidx[lb.gidx >= 0])
            )
            q[dst] = th[src]
        return q

    # ----------------------------------------------------------------- motion
    def task_motion(self, sol, xd, xdd=None):
        """Velocity and acceleration IK at an IK solution (eqs. 17-30, corrected eq. 29)."""
        xd = np.ascontiguousarray(xd, dtype=float)
        xdd = np.zeros(self.ntask) if xdd is None else np.ascontiguousarray(xdd, dtype=float)
        if xd.shape != (self.ntask,) or xdd.shape != (self.ntask,):
            raise InputError(f'xd and xdd must have shape ({self.ntask},)')
        th_l, thd_l, thdd_l, H_l, F_l, Lt_l, conds = [], [], [], [], [], [], []
        nt = self.ntask
        cache = self.__dict__.get('_pos_cache') or {}
        for li, (lb, th) in enumerate(zip(self.limbs, sol.theta)):
            n, d = lb.model.nq, len(lb.qi)
            thd, thdd = np.empty(n), np.empty(n)
            hit = cache.get(li)
            if hit is not None and hit[0] is th and hit[1] == th.tobytes():
                del cache[li]  # used once: the arrays go to the TaskMotion
                H, Lt, F, c = hit[2], hit[3], hit[4], hit[5]
                ok = _K.limb_motion_hl(lb.kp, th, xd, xdd, thd, thdd, H, F, Lt)
            else:
                H, F, Lt = np.empty((n, d)), np.empty((d, nt)), np.empty((d, d))
                ok, c = _K.limb_motion(lb.kp, np.ascontiguousarray(th, dtype=float), xd, xdd, thd, thdd, H, F, Lt)
            if not ok:
                raise SingularityError(f"limb '{lb.name}': L_t or G_y is singular (input singularity)")
            th_l.append(th)
            thd_l.append(thd)
            thdd_l.append(thdd)
            H_l.append(H)
            F_l.append(F)
            Lt_l.append(Lt)
            conds.append(float(c))
        J_IK = np.empty((len(self.act_map), nt))
        for r, (li, j) in enumerate(self.act_map):
            J_IK[r] = H_l[li][j] @ F_l[li]
        if J_IK.shape[0] == J_IK.shape[1] and np.isfinite(J_IK).all():
            cj = float(_K._cond(J_IK))  # s_max / s_min of the LAPACK SVD (np.linalg.cond)
        else:
            cj = float(np.linalg.cond(J_IK))
        return TaskMotion(
            th_l,
            thd_l,
            thdd_l,
            H_l,
            F_l,
            Lt_l,
            J_IK,
            self.global_q(th_l),
            self.global_q(thd_l),
            self.global_q(thdd_l),
            conds,
            cj,
        )

    # ----------------------------------------------------------------- dynamics
    def task_dynamics(self, sol, xd, xdd=None, wrench=None, motion=None):
        """Task-space EOM and inverse dynamics (eqs. 39-45, Newton-Euler evaluation).

        ``xd``, ``xdd`` (delta_p,): task velocity / acceleration = the task components of the
        platform twist (v, w) [m/s | rad/s] and of its derivative (LWA, world axes).
        ``wrench`` (6,): end-effector wrench (force, moment) [N, N m] acting on the platform,
        moment about the platform frame origin, world axes. Raises :class:`SingularityError`
        when J_IK is singular (output singularity).
        """
        mo = self.task_motion(sol, xd, xdd) if motion is None else motion
        nt = self.ntask
        M_t = np.zeros((nt, nt))
        Q = np.zeros(nt)
        b = np.zeros(nt)
        g = np.zeros(nt)
        xdd_ = np.zeros(nt) if xdd is None else np.ascontiguousarray(xdd, dtype=float)
        for li, lb in enumerate(self.limbs):
            _K.limb_dynamics_hf(
                lb.kp, mo.theta[li], mo.thetad[li], mo.thetadd[li], mo.H[li], mo.F[li], xdd_, Q, b, g, M_t
            )
        W_ee = np.zeros(nt)
        if wrench is not None:
            w = np.asarray(wrench, float)
            if w.shape != (6,) or not np.all(np.isfinite(w)):
                raise InputError('wrench must be 6 finite numbers (force, moment)')
            lb = self.limbs[0]
            p, J, _, _ = self._terms(lb, mo.theta[0])
            W_ee = (J @ mo.H[0] @ mo.F[0]).T @ w
        J_IK = mo.J_IK
        cj = mo.cond_J_IK
        if not np.isfinite(cj) or cj > 1e12:
            raise SingularityError(
                f'J_IK is singular (cond {cj:.3g}): output singularity, the actuator forces are undefined'
            )
        if J_IK.shape[0] == J_IK.shape[1] and np.isfinite(M_t).all():
            u = np.empty(J_IK.shape[0])
            ev = np.empty(nt)
            _K.task_finish(M_t, Q, W_ee, np.ascontiguousarray(J_IK, dtype=float), u, ev)
        else:
            M_t = 0.5 * (M_t + M_t.T)
            if J_IK.shape[0] == J_IK.shape[1]:
                u = np.linalg.solve(J_IK.T, Q - W_ee)
            else:  # redundant actuation: minimum norm
                u = np.linalg.pinv(J_IK.T) @ (Q - W_ee)
            ev = np.linalg.eigvalsh(M_t)
        return TaskDynamics(u, M_t, b, g, b - g, W_ee, J_IK, mo, ev, float(ev[-1] / ev[0]) if ev[0] > 0 else np.inf, cj)

    def forward_kinematics(self, q_act, seed=None, tol=1e-10, max_iter=30):
        """Task coordinates from the actuated joints: Newton on the IK equations,
        ``x <- x + J_IK^-1 (q_act* - q_act(IK(x)))`` until the actuator error is <= ``tol``
        [rad | m] (the IK itself converges to ``self.tol``). Returns the :class:`IKSolution`."""
        q_act = np.asarray(q_act, float)
        sol = seed if isinstance(seed, IKSolution) else self.solve_ik(self.x_ref)
        x = sol.x.copy()
        for k in range(max_iter):
            qa = np.array([sol.theta[li][j] for li, j in self.act_map])
            r = q_act - qa
            if np.abs(r).max() <= tol:
                return sol
            J = self.task_motion(sol, np.zeros(self.ntask)).J_IK
            x = x + np.linalg.solve(J, r)
            sol = self.solve_ik(x, seed=sol)
        raise IKError(
            f'forward kinematics did not converge in {max_iter} iterations (actuator error {np.abs(r).max():.3g})',
            iterations=max_iter,
            residual=float(np.abs(r).max()),
        )

    def forward_dynamics(self, q_act, qd_act, u, wrench=None, seed=None):
        """Task acceleration from actuator forces: ``V_t_dot = M_t^-1 (W_t^EE + J_IK^T u - b_t)``.
        Returns (x, xd, xdd, IKSolution)."""
        sol = self.forward_kinematics(q_act, seed)
        J = self.task_motion(sol, np.zeros(self.ntask)).J_IK
        xd = np.linalg.solve(J, np.asarray(qd_act, float))
        td = self.task_dynamics(sol, xd, None, wrench)
        xdd = np.linalg.solve(td.M_t, td.W_t_ee + J.T @ np.asarray(u, float) - td.b_t)
        return sol.x, xd, xdd, sol


# --------------------------------------------------------------------------- public API
def get_pkm(model, **kw):
    """The :class:`PKM` of ``model`` (built on first use and cached on the model; keyword
    arguments override the solver settings of the cached object)."""
    cache = pkm_cache(model)
    pk = cache.get('embedding')
    if pk is None:
        pk = cache['embedding'] = PKM(model)
    for k, v in kw.items():
        if k not in ('tol', 'max_outer', 'max_inner', 'scheme'):
            raise InputError(f'unknown PKM setting {k!r}')
        setattr(pk, k, v)
    return pk


def solve_ik(model, target, seed=None, scheme=None):
    """PKM inverse kinematics (constraint embedding): task target (delta_p,) [m | rad] ->
    IKSolution."""
    return get_pkm(model).solve_ik(target, seed, scheme)


def task_motion(model, sol, xd, xdd=None):
    """Velocity/acceleration IK at an :class:`IKSolution`: :class:`TaskMotion`."""
    return get_pkm(model).task_motion(sol, xd, xdd)


def task_dynamics(model, x, xd, xdd=None, wrench=None, seed=None):
    """IK + task-space EOM at (x, xd, xdd): :class:`TaskDynamics`."""
    pk = get_pkm(model)
    sol = x if isinstance(x, IKSolution) else pk.solve_ik(x, seed)
    return pk.task_dynamics(sol, xd, xdd, wrench)


def inverse_dynamics(model, x, xd, xdd, wrench=None, seed=None):
    """Actuator forces u (n_act,) [N m | N] for the task motion (x, xd, xdd) (eq. 45).
    ``x`` may be an :class:`IKSolution` (then ``seed`` is ignored)."""
    return task_dynamics(model, x, xd, xdd, wrench, seed).u


def inverse_dynamics_d2_task(model, x, xd, xdd, xddd, xdddd, theta_guess=None):
    """Actuator forces and their 1st/2nd time derivatives ``(u, ud, udd)`` (each (n_act,) or
    (S, n_act), order ``model.actuated``) for a motion given in the embedding's task
    coordinates (``get_pkm(model).task``: world components of its ``platform_frame``, m / rad)
    with derivatives 1..4, through the general 2nd-order route (seed 004,
    :func:`robot_dynamics.pkm.general.inverse_dynamics_d2_general`) on the same platform
    frame and task. For robots whose limbs are serial chains (the route's scope) and whose
    angular task components rotate about one fixed axis; u equals :func:`inverse_dynamics` (the
    embedding's eq. 45) at the same (x, xd, xdd). Raises
    :class:`~robot_dynamics.pkm.recursive.PKMStructureError` naming why a robot does not
    qualify (e.g. hybrid limbs: loops inside a limb, as the IRSBot-2)."""
    from robot_dynamics.pkm.general import general_pkm, inverse_dynamics_d2_general
    from robot_dynamics.pkm.recursive import PKMStructureError

    pk = get_pkm(model)
    if len(pk.task) >= 6:
        raise PKMStructureError(
            f"model '{model.name}': a 6-DOF rotation-vector task is not the "
            "general route's pose task; use robot_dynamics.pkm.inverse_dynamics_d2"
        )
    gp = general_pkm(model, platform=pk.platform_frame, task=list(pk.task))
    if list(gp.actuated) != list(model.actuated):
        raise PKMStructureError(f"model '{model.name}': actuated joints differ between the routes")
    r = inverse_dynamics_d2_general(gp, x, xd, xdd, xddd, xdddd, theta_guess=theta_guess)
    return r.u, r.ud, r.udd


def forward_dynamics(model, q_act, qd_act, u, wrench=None, seed=None):
    """Task acceleration from the actuated joint state and actuator forces:
    returns (x, xd, xdd, IKSolution)."""
    return get_pkm(model).forward_dynamics(q_act, qd_act, u, wrench, seed)


def forward_kinematics_pkm(model, q_act, seed=None):
    """Task coordinates (and the full IK solution) from the actuated joint values."""
    return get_pkm(model).forward_kinematics(q_act, seed)


def task_reference(pkm, position, quat_xyzw=None, twist=None, accel=None):
    """Task vectors of one platform reference sample (message-independent part of ik_node).

    ``pkm``: a :class:`PKM` (or a model, via :func:`get_pkm`); ``position`` (3,) [m]: origin of
    the platform frame, world axes; ``quat_xyzw`` (4,): its orientation, ROS order (x, y, z, w),
    world frame (None: the reference orientation R_ref); ``twist`` (6,): (v, w) [m/s, rad/s],
    linear velocity of the platform origin and world angular velocity (LWA, world axes);
    ``accel`` (6,): its time derivative (classical linear acceleration [m/s^2], dw/dt
    [rad/s^2]). None for twist/accel: zero.

    Returns ``(x, xd, xdd)``, each (ntask,) in the order of ``pkm.task``: x, y, z from the
    position / linear parts; rx, ry, rz from the rotation vector ``log(R R_ref^T)`` (principal
    logarithm, |r| <= pi; world axes) and from the angular parts of twist / accel (the task
    velocity is the twist, see the module docstring). Raises :class:`InputError` for a wrong
    shape, a non-finite value or a zero quaternion.
    """
    if not isinstance(pkm, PKM):
        pkm = get_pkm(pkm)

    def vec(v, n, what):
        a = np.zeros(n) if v is None else np.asarray(v, float)
        if a.shape != (n,) or not np.all(np.isfinite(a)):
            raise InputError(f'task reference: {what} must be {n} finite numbers, got {v!r}')
        return a

    p = vec(position, 3, 'position')
    tw, ac = vec(twist, 6, 'twist (v, w)'), vec(accel, 6, 'accel (dv/dt, dw/dt)')
    r = np.zeros(3)
    if quat_xyzw is not None:
        q = vec(quat_xyzw, 4, 'orientation quaternion (x, y, z, w)')
        if np.linalg.norm(q) < 1e-12:
            raise InputError('task reference: orientation quaternion has zero norm')
        if any(c in _ROT for c in pkm.task):
            r = log_so3(quat_xyzw_to_matrix(q) @ pkm.R_ref.T)
    full = np.concatenate([p, r])
    i = np.array([_COMP[c] for c in pkm.task])
    return full[i], tw[i], ac[i]


class IKTracker:
    """Continuation along a trajectory: keeps the last valid solution as the seed.

    ``step(x, xd, xdd)`` returns (IKSolution, TaskMotion); on failure it raises and keeps the
    last valid solution (``last``). ``kappa_warn``: threshold on cond(F_(l)) above which
    ``near_singular`` is set (input singularity ahead). ``reset()`` returns to the reference.
    """

    def __init__(self, model, scheme=None, kappa_warn=30.0, **kw):
        self.pkm = get_pkm(model, **kw)
        self.scheme = scheme
        self.kappa_warn = kappa_warn
        self.reset()

    def reset(self):
        self.last = self.pkm.solve_ik(self.pkm.x_ref, None, self.scheme)
        self.near_singular = False
        return self.last

    def step(self, x, xd=None, xdd=None):
        sol = self.pkm.solve_ik(x, self.last, self.scheme)
        mo = self.pkm.task_motion(sol, np.zeros(self.pkm.ntask) if xd is None else xd, xdd)
        self.last = sol
        self.near_singular = max(sol.cond_F) > self.kappa_warn
        return sol, mo

    @property
    def diagnostic_labels(self):
        """Labels of :meth:`diagnostics`: outer iterations per limb, max inner iterations, task
        residual [m], loop residual, cond(F_(l)) per limb, cond(J_IK), near_singular."""
        lbs = self.pkm.limbs
        return (
            [f'outer_{lb.name}' for lb in lbs]
            + ['inner_max', 'task_residual', 'loop_residual']
            + [f'cond_F_{lb.name}' for lb in lbs]
            + ['cond_J_IK', 'near_singular']
        )

    def diagnostics(self, sol, mo):
        """Values (list of float) of :attr:`diagnostic_labels` for one :meth:`step` result."""
        return (
            [float(k) for k in sol.outer]
            + [float(max((max(s) if s else 0) for s in sol.inner)), sol.task_residual, sol.loop_residual]
            + list(sol.cond_F)
            + [mo.cond_J_IK, float(self.near_singular)]
        )


def warmup(model=None):
    """Compile (or load from the numba cache) the constraint-embedding kernels with the
    argument types used at run time (IK tracking step, velocity/acceleration IK, task
    dynamics with and without an end-effector wrench, a seeded IK, one limb IK).
    ``model``: a PKM :class:`~robot_dynamics.model.Model` (default ``urdf/irsbot2.urdf``)."""
    if model is None:
        from robot_dynamics.parsers.data import data_path
        from robot_dynamics.parsers.urdf import load_model

        model = load_model(data_path('urdf/irsbot2.urdf'))
    pk = get_pkm(model)
    tr = IKTracker(model)
    z = np.zeros(pk.ntask)
    sol, mo = tr.step(pk.x_ref, z, z)  # limb_solve_hl, limb_motion_hl, _cond
    pk.task_motion(sol, z, z)  # the generic limb_motion (no cached H, F)
    pk.task_dynamics(sol, z, z, motion=mo)  # limb_dynamics_hf, task_finish
    pk.task_dynamics(sol, z, z, wrench=np.zeros(6), motion=mo)
    pk.solve_ik(pk.x_ref, seed=sol.q)
    lb = pk.limbs[0]
    pk.limb_ik(lb, pk.target3(pk.x_ref), lb.ref)
    pk._resolve(lb, lb.ref.copy())
    return pk
