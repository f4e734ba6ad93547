"""The constant robot model (URDF spanning tree + loop-closure sidecar).

A :class:`Model` is built once by :func:`robot_dynamics.load_model` and never changes
while algorithms run (Pinocchio's Model/Data split: algorithms are free functions
``rnea(model, q, ...)`` that allocate or reuse their own workspaces).

Kinematic conventions (Lie-group / product-of-exponentials form, as in the seeds):

* Every movable joint ``i`` owns a *joint frame*, equal to the URDF child link frame of that
  joint. Its placement in the parent joint frame at ``q_i = 0`` is ``(R_fixed[i], p_fixed[i])``
  (URDF joint origin composed with any fixed joints in between); the parent of a root-level
  joint is the world (index -1), which is the URDF root link frame.
* The joint motion is ``exp(S_i q_i)`` applied on the right, with the joint screw in the joint
  frame ``S_i = (0, a_i)`` for a revolute/continuous joint and ``(a_i, 0)`` for a prismatic one
  (twists are ordered linear first, as in Pinocchio), ``a_i`` the unit URDF axis.
* ``screw_space[i]`` is the same screw in the world frame at ``q = 0`` (the POE space screw).
* Body ``i`` is the rigid body moved by joint ``i`` (its child link and every link attached to
  it by fixed joints); its inertia is stored in joint frame ``i``: ``mass[i]``, ``com[i]`` and the
  rotational inertia about the centre of mass ``inertia_com[i]`` (3x3).
* Every URDF link (and therefore every cut frame of a loop) is a *frame*: ``frame_parent[k]``
  (joint index, -1 for the world) and the constant placement ``(frame_R[k], frame_p[k])``
  in that joint frame.

Joints with several degrees of freedom (a ``free_flyer`` floating base, ``spherical`` ball
joints, ``planar`` joints: :mod:`robot_dynamics.spatial.joints`) follow Pinocchio's conventions
for q and v, so ``nq`` may exceed ``nv``. Every per-joint array above is then per *velocity
coordinate*: such a joint is stored as a chain of one-DOF coordinates in its child frame
(free-flyer: prismatic x, y, z then revolute x, y, z; spherical: revolute x, y, z; planar:
prismatic x, y then revolute z), named ``<joint>/<coordinate>``, whose placement at q comes from
the joint's quaternion (or angle) in q; :attr:`Model.joints` lists the joints themselves with their
slices of q and v (:meth:`Model.q_index`, :meth:`Model.v_index`).

Units are SI; angles in rad.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from robot_dynamics.errors import ModelError, UnknownNameError
from robot_dynamics.spatial import joints as _jm

REVOLUTE = 0
PRISMATIC = 1

#: code of each joint kind in the packed kernel arrays (0: a one-DOF joint)
GROUP_CODE = {'free_flyer': 1, 'spherical': 2, 'planar': 3}
#: the one-DOF coordinates a multi-DOF joint is stored as: (name suffix, type, axis)
SUB_JOINTS = {
    'free_flyer': (('x', 1, 0), ('y', 1, 1), ('z', 1, 2), ('rx', 0, 0), ('ry', 0, 1), ('rz', 0, 2)),
    'spherical': (('rx', 0, 0), ('ry', 0, 1), ('rz', 0, 2)),
    'planar': (('x', 1, 0), ('y', 1, 1), ('rz', 0, 2)),
}


@dataclass(frozen=True)
class Joint:
    """One joint of the tree: ``name``, ``kind`` ('revolute', 'prismatic', 'free_flyer',
    'spherical', 'planar'), its coordinates ``q[idx_q:idx_q + nq]`` and velocity coordinates
    ``v[idx_v:idx_v + nv]``, and its :class:`robot_dynamics.spatial.joints.JointModel`."""

    name: str
    kind: str
    idx_q: int
    nq: int
    idx_v: int
    nv: int
    model: object = None

    @property
    def q_slice(self) -> slice:
        return slice(self.idx_q, self.idx_q + self.nq)

    @property
    def v_slice(self) -> slice:
        return slice(self.idx_v, self.idx_v + self.nv)


@dataclass
class Loop:
    """One loop-closure (cut) joint from the sidecar.

    ``type`` is one of :data:`robot_dynamics.parsers.sidecar.LOOP_TYPES`; ``frame_a``/``frame_b`` are
    frame (link) names that coincide when the loop is closed; ``axis`` (3,) is expressed in
    ``frame_a`` (revolute/prismatic axis, planar/point_on_plane normal, point_on_line
    direction); for a universal joint ``axes`` holds the first axis in ``frame_a`` and the second
    in ``frame_b``. ``pos_dirs`` (k, 3) and ``rot_pairs`` (r, 2, 3) are the constrained
    directions derived from the type (see :mod:`robot_dynamics.algorithms.constraints`).

    A ``coupling`` loop is a joint-space constraint with one row,
    ``q_joint - (multiplier q_reference + offset) = 0`` (URDF ``<mimic>``, MuJoCo's joint
    equality, a gear pair); ``coupling`` holds ``(joint, reference_joint, multiplier, offset)``
    (both one-DOF joints; units rad or m as the joints, ``multiplier`` in joint units per
    reference-joint unit), ``pos_dirs``/``rot_pairs`` are empty and ``frame_a``/``frame_b`` are
    the child links of the two joints.
    """

    name: str
    type: str
    frame_a: str
    frame_b: str
    axis: np.ndarray | None = None
    axes: np.ndarray | None = None
    pos_dirs: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    rot_pairs: np.ndarray = field(default_factory=lambda: np.zeros((0, 2, 3)))
    row_names: tuple = ()
    coupling: tuple | None = None

    @property
    def nrows(self) -> int:
        """Number of scalar constraint rows of this loop."""
        return len(self.pos_dirs) + len(self.rot_pairs) + (self.coupling is not None)


@dataclass
class Model:
    """Constant model of a robot: spanning tree from the URDF, loops from the sidecar.

    Attributes (n = ``nv``, the number of velocity coordinates; = ``len(q)`` = ``nq`` without
    multi-DOF joints, see the module docstring):

    name, source (URDF path or ``'<string>'``), loops_source (sidecar path or None)
    joint_names (n,) order of qd, qdd and tau (and of q without multi-DOF joints)
    joints: list of :class:`Joint` (one per joint, with its slices of q and v)
    parents (n,) int: parent joint index, -1 for the world; parents[i] < i
    joint_types (n,) int: REVOLUTE (0, also continuous) or PRISMATIC (1)
    joint_urdf_types (n,) str: 'revolute' | 'continuous' | 'prismatic' (a multi-DOF joint's kind)
    axes (n, 3): unit joint axes in the joint frames
    R_fixed (n, 3, 3), p_fixed (n, 3): joint frame placement in the parent joint frame at q = 0
    mass (n,), com (n, 3), inertia_com (n, 3, 3): body inertias in the joint frames
    lower, upper, velocity_limit, effort_limit (n,): URDF limits (+-inf / inf when absent)
    frame_names (nf,), frame_parent (nf,), frame_R (nf, 3, 3), frame_p (nf, 3)
    root_link: name of the URDF root link (fixed to the world)
    gravity (3,): gravity acceleration in the world frame, default (0, 0, -9.81)
    mimic: dict joint -> (source joint, multiplier, offset) of the URDF ``<mimic>`` elements (each
        is also a ``coupling`` loop ``mimic_<joint>`` unless loaded with ``mimic='ignore'``)
    loops: list of :class:`Loop`; actuated, passive, independent: joint-name lists
    submechanisms: list of dicts; actuators: dict; reference_configuration: dict joint -> value
    idle_motions: the motions the loops and the actuated joints leave free at the complete
        reference configuration, found at load (list of
        :class:`robot_dynamics.algorithms.constraints.IdleMotion`; empty when none or when the
        sidecar declares no ``actuated`` or no complete reference configuration)
    """

    name: str
    source: str
    joint_names: list
    parents: np.ndarray
    joint_types: np.ndarray
    joint_urdf_types: list
    axes: np.ndarray
    R_fixed: np.ndarray
    p_fixed: np.ndarray
    mass: np.ndarray
    com: np.ndarray
    inertia_com: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    velocity_limit: np.ndarray
    effort_limit: np.ndarray
    frame_names: list
    frame_parent: np.ndarray
    frame_R: np.ndarray
    frame_p: np.ndarray
    root_link: str
    gravity: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, -9.81]))
    mimic: dict = field(default_factory=dict)
    loops: list = field(default_factory=list)
    actuated: list = field(default_factory=list)
    passive: list = field(default_factory=list)
    independent: list = field(default_factory=list)
    submechanisms: list = field(default_factory=list)
    actuators: dict = field(default_factory=dict)
    reference_configuration: dict = field(default_factory=dict)
    loops_source: str | None = None
    urdf_xml: str = ''
    joints: list = None
    idle_motions: list = field(default_factory=list)

    def __post_init__(self):
        self._joint_index = {n: i for i, n in enumerate(self.joint_names)}
        if self.joints is None:
            self.joints = [
                Joint(nm, 'revolute' if t == REVOLUTE else 'prismatic', i, 1, i, 1, None)
                for i, (nm, t) in enumerate(zip(self.joint_names, self.joint_types.tolist()))
            ]
        self.joints = list(self.joints)
        cache = {}  # one joint model per (kind, axis): a long chain repeats a few axes
        axes = self.axes.tolist()
        for k, jt in enumerate(self.joints):
            if jt.model is None:
                key = (jt.kind, *axes[jt.idx_v])
                jm = cache.get(key)
                if jm is None:
                    jm = cache[key] = _jm.joint_model(jt.kind, self.axes[jt.idx_v])
                self.joints[k] = Joint(jt.name, jt.kind, jt.idx_q, jt.nq, jt.idx_v, jt.nv, jm)
        self._joint_by_name = {jt.name: jt for jt in self.joints}
        self._nq = self.joints[-1].idx_q + self.joints[-1].nq if self.joints else 0
        self._nv = len(self.joint_names)
        self._shape_q, self._shape_v = (self._nq,), (self._nv,)  # (the single-call fast paths)
        self.multi_dof = [jt for jt in self.joints if jt.nv > 1]
        for jt in self.multi_dof:
            self._joint_index.setdefault(jt.name, jt.idx_v)
        self._frame_index = {n: i for i, n in enumerate(self.frame_names)}
        n = len(self.joint_names)
        # first moment h = m c and inertia about the joint-frame origin, used by the kernels
        self.first_moment = self.mass[:, None] * self.com
        c = self.com
        cc = np.einsum('ni,ni->n', c, c)
        self.inertia_origin = self.inertia_com + self.mass[:, None, None] * (
            cc[:, None, None] * np.eye(3) - np.einsum('ni,nj->nij', c, c)
        )
        # screw of each joint in its own frame (linear first)
        S = np.zeros((n, 6))
        rev = self.joint_types == REVOLUTE
        S[rev, 3:] = self.axes[rev]
        S[~rev, :3] = self.axes[~rev]
        self.screw_local = S
        # subtree / support bookkeeping
        self.children = [[] for _ in range(n)]
        for i, p in enumerate(self.parents.tolist()):
            if p >= 0:
                self.children[p].append(i)
        self.support = _Support(self.parents)
        # the home (q = 0) world placement of every joint frame -> POE space screws
        Rw = np.zeros((n, 3, 3))
        pw = np.zeros((n, 3))
        parents = self.parents.tolist()
        for i in range(n):
            p = parents[i]
            if p < 0:
                Rw[i], pw[i] = self.R_fixed[i], self.p_fixed[i]
            else:
                Rw[i] = Rw[p] @ self.R_fixed[i]
                pw[i] = pw[p] + Rw[p] @ self.p_fixed[i]
        self.home_R, self.home_p = Rw, pw
        aw = np.einsum('nij,nj->ni', Rw, self.axes)
        Ss = np.zeros((n, 6))
        Ss[rev, 3:] = aw[rev]
        Ss[rev, :3] = np.cross(pw[rev], aw[rev])  # v = -w x p = p x w
        Ss[~rev, :3] = aw[~rev]
        self.screw_space = Ss
        # packed arrays for the numba kernels (see robot_dynamics.algorithms._tree_kernels)
        geo = np.zeros((n, 28))
        geo[:, 0:9] = self.R_fixed.reshape(n, 9)
        geo[:, 9:12] = self.p_fixed
        geo[:, 12:15] = self.axes
        geo[:, 15] = self.joint_types
        geo[:, 16] = self.mass
        geo[:, 17:20] = self.first_moment
        geo[:, 20] = np.arange(n)
        self.group_last = np.arange(n)  # per velocity coordinate: the last one of its joint
        for jt in self.joints:
            geo[jt.v_slice, 20] = jt.idx_q
            if jt.nv > 1:
                geo[jt.v_slice, 21] = GROUP_CODE[jt.kind]
                geo[jt.v_slice, 22] = np.arange(jt.nv)
                geo[jt.v_slice, 23] = jt.idx_v
                self.group_last[jt.v_slice] = jt.idx_v + jt.nv - 1
        self._geo = np.ascontiguousarray(geo)
        #: per velocity coordinate: its index in q (one-DOF joints), -1 inside a multi-DOF joint
        self.q_of_v = np.where(geo[:, 21] == 0, geo[:, 20], -1).astype(np.int64)
        self._par = np.ascontiguousarray(self.parents, dtype=np.int64)
        self._ine = np.ascontiguousarray(self.inertia_origin)

    # ------------------------------------------------------------------ sizes / lookup
    @property
    def nq(self) -> int:
        """Number of configuration coordinates (Pinocchio's ``nq``; = ``nv`` without multi-DOF joints)."""
        return self._nq

    @property
    def nv(self) -> int:
        """Number of velocity coordinates (= ``len(joint_names)``)."""
        return self._nv

    def joint(self, name) -> Joint:
        """The :class:`Joint` called ``name``."""
        try:
            return self._joint_by_name[name]
        except KeyError:
            raise UnknownNameError(
                f"model '{self.name}' has no joint '{name}'; joints: {[j.name for j in self.joints]}"
            ) from None

    def q_index(self, name) -> slice:
        """Slice of q holding joint ``name``'s configuration (as Pinocchio's ``idx_q``, ``nq``)."""
        return self.joint(name).q_slice

    def v_index(self, name) -> slice:
        """Slice of v (velocities, accelerations, efforts) of joint ``name``."""
        return self.joint(name).v_slice

    def default_actuated(self) -> list:
        """The actuated coordinates when the sidecar does not say: every one-DOF joint (a floating
        base and ball joints are passive)."""
        return [jt.name for jt in self.joints if jt.nv == 1]

    def require_one_dof(self, method):
        """Raise :class:`ModelError` naming the multi-DOF joints if ``method`` needs one-DOF joints."""
        if self.multi_dof:
            jt = self.multi_dof[0]
            raise ModelError(
                self.source,
                f"joint '{jt.name}'",
                f'{method} needs one-DOF joints (revolute/prismatic); this {jt.kind} joint has nv = {jt.nv}'
                + (f' (multi-DOF joints: {[j.name for j in self.multi_dof]})' if len(self.multi_dof) > 1 else ''),
            )

    def integrate(self, q, v):
        """``q (+) v``: the configuration reached from q (..., nq) along v (..., nv) in unit time."""
        q, v = np.asarray(q, float), np.asarray(v, float)
        if not self.multi_dof:
            return q + v
        out = np.empty(np.broadcast_shapes(q.shape[:-1], v.shape[:-1]) + (self.nq,))
        for jt in self.joints:
            out[..., jt.q_slice] = jt.model.integrate(q[..., jt.q_slice], v[..., jt.v_slice])
        return out

    def difference(self, q0, q1):
        """``q1 (-) q0``: the velocity (..., nv) that moves q0 to q1 in unit time."""
        q0, q1 = np.asarray(q0, float), np.asarray(q1, float)
        if not self.multi_dof:
            return q1 - q0
        out = np.empty(np.broadcast_shapes(q0.shape[:-1], q1.shape[:-1]) + (self.nv,))
        for jt in self.joints:
            out[..., jt.v_slice] = jt.model.difference(q0[..., jt.q_slice], q1[..., jt.q_slice])
        return out

    def normalize(self, q):
        """q with unit quaternions (and unit (cos, sin) pairs)."""
        q = np.array(q, float)
        for jt in self.multi_dof:
            q[..., jt.q_slice] = jt.model.normalize(q[..., jt.q_slice])
        return q

    @property
    def nframes(self) -> int:
        """Number of frames (every URDF link)."""
        return len(self.frame_names)

    def joint_index(self, name: str) -> int:
        """Index of joint ``name`` in q."""
        try:
            return self._joint_index[name]
        except KeyError:
            raise UnknownNameError(
                f"model '{self.name}' has no movable joint '{name}'; joints: {self.joint_names}"
            ) from None

    def frame_index(self, name) -> int:
        """Index of frame ``name`` (a URDF link name); ints pass through."""
        if isinstance(name, (int, np.integer)):
            if not 0 <= name < self.nframes:
                raise UnknownNameError(f'frame index {name} out of range 0..{self.nframes - 1}')
            return int(name)
        try:
            return self._frame_index[name]
        except KeyError:
            raise UnknownNameError(f"model '{self.name}' has no frame '{name}'; frames: {self.frame_names}") from None

    @property
    def actuated_indices(self) -> np.ndarray:
        """Indices in q of the actuated joints, in the sidecar order."""
        return np.array([self._joint_index[j] for j in self.actuated], dtype=np.int64)

    @property
    def passive_indices(self) -> np.ndarray:
        """Indices in q of the passive joints, in q order."""
        return np.array([self._joint_index[j] for j in self.passive], dtype=np.int64)

    @property
    def independent_indices(self) -> np.ndarray:
        """Indices in q of the independent (minimal) coordinates, in the sidecar order."""
        return np.array([self._joint_index[j] for j in self.independent], dtype=np.int64)

    @property
    def nconstraints(self) -> int:
        """Total number of loop-closure rows (possibly redundant)."""
        return sum(lp.nrows for lp in self.loops)

    def _q_of_v(self, x):
        """Per-velocity-coordinate values x (..., nv) placed at the one-DOF joints' q indices."""
        one = self.q_of_v >= 0
        out = np.zeros(x.shape[:-1] + (self.nq,))
        out[..., self.q_of_v[one]] = x[..., one]
        return out

    def neutral(self) -> np.ndarray:
        """Zero configuration clipped into the joint limits (multi-DOF joints: the identity)."""
        q0 = np.clip(np.zeros(self.nv), self.lower, self.upper)
        if not self.multi_dof:
            return q0
        q = self._q_of_v(q0)
        for jt in self.multi_dof:
            q[jt.q_slice] = jt.model.neutral()
        return q

    def reference_q(self) -> np.ndarray:
        """Configuration from the sidecar's ``reference_configuration`` (others: neutral)."""
        q = self.neutral()
        for j, v in self.reference_configuration.items():
            jt = self._joint_by_name.get(j)
            q[jt.q_slice if jt is not None else self._joint_index[j]] = v
        return q

    def random_configuration(self, rng=None, size=None) -> np.ndarray:
        """Uniform random q within limits (unbounded joints: [-pi, pi], prismatic: [-1, 1];
        multi-DOF joints: uniformly distributed rotations, positions in [-1, 1] m)."""
        rng = np.random.default_rng(rng)
        lo = np.where(np.isfinite(self.lower), self.lower, np.where(self.joint_types == REVOLUTE, -np.pi, -1.0))
        hi = np.where(np.isfinite(self.upper), self.upper, np.where(self.joint_types == REVOLUTE, np.pi, 1.0))
        shape = (self.nv,) if size is None else (size, self.nv)
        x = lo + (hi - lo) * rng.random(shape)
        if not self.multi_dof:
            return x
        q = self._q_of_v(x)
        for jt in self.multi_dof:
            q[..., jt.q_slice] = jt.model.random(rng, size=() if size is None else size)
        return q

    def __repr__(self):
        return (
            f'Model(name={self.name!r}, nq={self.nq}, nv={self.nv}, frames={self.nframes}, '
            f'loops={[lp.name for lp in self.loops]}, actuated={self.actuated})'
        )


class _Support:
    """``model.support[i]``: the joints from the root to joint i (int64 array, root first),
    built on first use and cached (a chain's supports hold n^2/2 entries in total, so they are
    not all built at load)."""

    def __init__(self, parents):
        self._parents = parents.tolist()
        self._cache = {}

    def __len__(self):
        return len(self._parents)

    def __getitem__(self, i):
        i = int(i)
        if i < 0:
            i += len(self._parents)
        if not 0 <= i < len(self._parents):
            raise IndexError(i)
        out = self._cache.get(i)
        if out is None:
            s, j = [], i
            while j >= 0:
                s.append(j)
                j = self._parents[j]
            out = self._cache[i] = np.array(s[::-1], dtype=np.int64)
        return out

    def __iter__(self):
        return (self[i] for i in range(len(self._parents)))
