"""Inertia partitioning in minimal coordinates (seed 000, Dastranj & Mattila).

Every rigid body ``i`` of the robot contributes a *local generalized inertia*
``Gamma_i(theta) = J_iᵀ M_i J_i`` (eq. 14), ``J_i`` (6, k) being the body Jacobian of its
reference frame {B_i} **in the minimal (independent) coordinates** ``theta`` (k,) and ``M_i``
(6, 6) its spatial inertia in {B_i}; ``Gamma = sum_i Gamma_i`` (eq. 15). Closed loops are
handled through a *loop map* ``q = g(theta)`` from the minimal coordinates to every joint of
the URDF spanning tree (``q`` (n,)), with ``G = dq/dtheta`` (n, k) and
``H = d2q/dtheta2`` (n, k, k):

    J_i(theta) = J_i^tree(g(theta)) G(theta)

* :class:`TriangleLoopMap`: closed form of a sidecar submechanism with
  ``resolver: isosceles_triangle`` (the paper's elbow triangle, eq. 38-40:
  ``zeta = 2 asin(c / 2 L0) - pi``, ``zeta' = 2 / sqrt(4 L0² - c²)``,
  ``zeta'' = 2 c (4 L0² - c²)^(-3/2)``, ``c = l0 + delta``; each base angle ``-zeta / 2``);
* :class:`NumericLoopMap`: any other loops: Newton assembly (seed 002 engine) and implicit
  differentiation ``A G = 0``, ``A H[:, :, m] = -Phi''(G, G_m)`` (second derivatives of the
  closure from the exact bias ``Adot qd`` of :func:`robot_dynamics.constraint_terms`, by
  polarisation);
* :class:`TreeLoopMap`: no loops, ``theta = q``.

Derivatives ``dGamma[m] = dGamma/dtheta_m`` are analytic: for the tree Jacobian in the local
frame, ``dJ_{:,l}/dq_j = ad(J_{:,l}) J_{:,j}`` for ``l`` upstream of ``j`` (zero otherwise),
and the chain rule through ``G`` and ``H`` (brief 000, A2).

Conventions: twists and wrenches **linear first** (``(v, w)``, ``(f, tau)``, Pinocchio, the
package convention; the paper orders angular first), body frames = URDF joint (child link)
frames, SI units, gravity ``model.gravity`` in the world frame. Generalized forces are in the
units of the minimal coordinates (N·m for angles, N for strokes).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

import numpy as np

from robot_dynamics.errors import InputError, RobotDynamicsError, UnknownNameError
from robot_dynamics.model import REVOLUTE

__all__ = [
    'PartitioningError',
    'LoopMapDomainError',
    'Body',
    'LoopMapResult',
    'TreeLoopMap',
    'TriangleLoopMap',
    'NumericLoopMap',
    'make_loop_map',
    'PartitionedModel',
    'PartitionTerms',
    'spatial_inertia',
    'christoffel',
    'coriolis_vector',
    'triangle_zeta',
    'model_with_body',
    'OutputMap',
    'OutputMapError',
    'CartesianReference',
]


class PartitioningError(RobotDynamicsError):
    """A model, loop map or reconfiguration request the partitioning layer cannot handle."""


class LoopMapDomainError(PartitioningError):
    """A minimal coordinate outside the admissible range of a loop map (e.g. the cylinder
    stroke beyond the dead centre of the triangle). ``joint``, ``value``, ``bounds``."""

    def __init__(self, joint, value, bounds, message):
        self.joint, self.value, self.bounds = joint, value, bounds
        super().__init__(message)


def _hat(w):
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def _ad(V):
    """Lie bracket matrix of a linear-first twist (same as :func:`robot_dynamics.spatial.lie.ad`)."""
    A = np.zeros((6, 6))
    W = _hat(V[3:])
    A[:3, :3] = W
    A[3:, 3:] = W
    A[:3, 3:] = _hat(V[:3])
    return A


def _Ad_inv(R, p):
    """Ad(T^-1) for T = (R, p), linear first: maps a twist in the parent to the child."""
    Rt = R.T
    A = np.zeros((6, 6))
    A[:3, :3] = Rt
    A[3:, 3:] = Rt
    A[:3, 3:] = -Rt @ _hat(p)
    return A


def _rot(axis, angle):
    a = np.asarray(axis, float)
    K = _hat(a)
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * (K @ K)


def spatial_inertia(mass, com, inertia_com):
    """Spatial inertia (6, 6) about the frame origin, linear first.

    ``mass`` [kg], ``com`` (3,) [m] in the frame, ``inertia_com`` (3, 3) [kg m²] about the COM,
    axes parallel to the frame. ``[[m I, -m [c]], [m [c], I_C - m [c][c]]]`` (the paper's
    eq. 12 with the blocks reordered for linear-first twists); ``½ Vᵀ M V`` is the kinetic energy.
    """
    c = np.asarray(com, float)
    C = _hat(c)
    M = np.zeros((6, 6))
    M[:3, :3] = mass * np.eye(3)
    M[:3, 3:] = -mass * C
    M[3:, :3] = mass * C
    M[3:, 3:] = np.asarray(inertia_com, float) - mass * C @ C
    return M


# ----------------------------------------------------------------------------- loop maps
@dataclass
class LoopMapResult:
    """Loop map at theta: ``q`` (n,) all tree joints, ``G = dq/dtheta`` (n, k),
    ``H[:, a, b] = d2q/dtheta_a dtheta_b`` (n, k, k)."""

    q: np.ndarray
    G: np.ndarray
    H: np.ndarray


class TreeLoopMap:
    """Identity map of a robot without loops: theta = q (all movable joints)."""

    kind = 'tree'

    def __init__(self, model):
        self.model = model
        self.independent = list(model.joint_names)
        self.idx = np.arange(model.nq)

    def evaluate(self, theta, q_guess=None):
        n = self.model.nq
        return LoopMapResult(np.array(theta, float), np.eye(n), np.zeros((n, n, n)))

    def margin(self, theta):
        """Distance to the nearest loop singularity (inf: none)."""
        return np.inf


def triangle_zeta(delta, L0, l0):
    """Closed-form triangle loop map (eq. 39-40, brief 000 par. 2.5).

    ``c = l0 + delta`` (cylinder length, m), apex supplement ``zeta = 2 asin(c / 2 L0) - pi``
    (rad, in (-pi, 0)), ``zeta' = 2 / sqrt(4 L0² - c²)`` (rad/m),
    ``zeta'' = 2 c (4 L0² - c²)^(-3/2)`` (rad/m²). Requires ``0 < c < 2 L0``
    (:class:`LoopMapDomainError` otherwise). Returns (zeta, zeta', zeta'').
    """
    c = l0 + float(delta)
    if not (np.isfinite(c) and 0.0 < c < 2.0 * L0):
        raise LoopMapDomainError(
            'delta',
            float(delta),
            (-l0, 2.0 * L0 - l0),
            f'triangle loop map: stroke delta = {float(delta)!r} m gives cylinder length '
            f'c = {c!r} m outside the admissible (0, 2 L0) = (0, {2 * L0}) m, i.e. delta in '
            f"({-l0}, {2 * L0 - l0}) m; delta = {2 * L0 - l0} m is the dead centre (zeta' -> inf)",
        )
    s = 4.0 * L0 * L0 - c * c
    return 2.0 * math.asin(c / (2.0 * L0)) - math.pi, 2.0 / math.sqrt(s), 2.0 * c * s**-1.5


class TriangleLoopMap:
    """Closed-form map of the sidecar's ``isosceles_triangle`` submechanisms.

    Every loop of the model must be covered by such a submechanism. Parameters (sidecar
    ``submechanisms[i].parameters``): ``L0``, ``l0`` [m], ``stroke_joint`` (independent
    prismatic), ``apex_joint`` (= ``apex_sign`` · zeta), ``base_angle_joints`` (each
    = sign · (-zeta / 2)), ``base_angle_signs``. The map is checked against the loop closure
    at construction (:class:`PartitioningError` if the declared signs do not close the loop).
    """

    kind = 'closed_form'

    def __init__(self, model, check=True):
        self.model = model
        self.independent = list(model.independent)
        self.idx = model.independent_indices
        self.triangles = []
        covered = set()
        for k, sm in enumerate(model.submechanisms):
            if sm.get('resolver') != 'isosceles_triangle':
                continue
            p = sm.get('parameters') or {}
            key = f"submechanisms[{k}] '{sm['name']}'"
            try:
                L0, l0 = float(p['L0']), float(p['l0'])
                s = model.joint_index(p['stroke_joint'])
                a = model.joint_index(p['apex_joint'])
                bj = [model.joint_index(j) for j in p.get('base_angle_joints', [])]
            except KeyError as exc:
                raise PartitioningError(
                    f'{model.loops_source}: {key}: parameters need {exc} (L0, l0, stroke_joint, apex_joint)'
                ) from None
            bs = [float(x) for x in p.get('base_angle_signs', [1.0] * len(bj))]
            if p['stroke_joint'] not in self.independent:
                raise PartitioningError(
                    f"{model.loops_source}: {key}: stroke_joint '{p['stroke_joint']}' must be an independent coordinate"
                )
            if len(bs) != len(bj) or not (L0 > 0 and l0 > 0):
                raise PartitioningError(f'{model.loops_source}: {key}: invalid parameters')
            self.triangles.append(
                dict(
                    name=sm['name'],
                    L0=L0,
                    l0=l0,
                    stroke=s,
                    col=self.independent.index(p['stroke_joint']),
                    apex=a,
                    apex_sign=float(p.get('apex_sign', 1.0)),
                    base=bj,
                    base_signs=bs,
                    stroke_name=p['stroke_joint'],
                )
            )
            covered.update(sm.get('loops', []))
        missing = [lp.name for lp in model.loops if lp.name not in covered]
        if missing or not self.triangles:
            raise PartitioningError(
                f'{model.loops_source}: submechanisms: {model.name}: loops {missing or "(none declared)"} have no '
                'closed-form resolver (a submechanism with resolver: isosceles_triangle); use NumericLoopMap'
            )
        self._ar = np.arange(len(self.idx))
        self._rows = [
            [(t['apex'], t['apex_sign'])] + [(b, -0.5 * sg) for b, sg in zip(t['base'], t['base_signs'])]
            for t in self.triangles
        ]
        dep = {t['apex'] for t in self.triangles} | {b for t in self.triangles for b in t['base']}
        free = set(range(model.nq)) - dep - set(self.idx.tolist())
        if free:
            raise PartitioningError(
                f'{model.name}: joints {[model.joint_names[i] for i in sorted(free)]}'
                f' are neither independent nor resolved by a triangle'
            )
        if check:
            from robot_dynamics.algorithms.constraints import loop_residual

            ref = model.reference_q()[self.idx]
            r = np.abs(loop_residual(model, self.evaluate(ref).q)).max()
            if r > 1e-9:
                raise PartitioningError(
                    f'{model.loops_source}: the declared isosceles_triangle map '
                    f'does not close the loops at the reference configuration '
                    f'(residual {r:.3g}); check apex_sign/base_angle_signs'
                )

    def evaluate(self, theta, q_guess=None):
        theta = np.asarray(theta, float)
        n, k = self.model.nq, len(self.idx)
        q = np.zeros(n)
        G = np.zeros((n, k))
        H = np.zeros((n, k, k))
        q[self.idx] = theta
        G[self.idx, self._ar] = 1.0
        for t, rows in zip(self.triangles, self._rows):
            c = t['col']
            d = float(theta[c])
            try:
                z, z1, z2 = triangle_zeta(d, t['L0'], t['l0'])
            except LoopMapDomainError as exc:
                raise LoopMapDomainError(
                    t['stroke_name'], exc.value, exc.bounds, f"joint '{t['stroke_name']}' ({t['name']}): {exc}"
                ) from None
            for j, sgn in rows:
                q[j] = sgn * z
                G[j, c] = sgn * z1
                H[j, c, c] = sgn * z2
        return LoopMapResult(q, G, H)

    def margin(self, theta):
        """Smallest distance [m] of a stroke to the dead centre ``2 L0 - l0`` (or to c = 0)."""
        theta = np.asarray(theta, float)
        return min(
            min(2 * t['L0'] - t['l0'] - float(theta[t['col']]), float(theta[t['col']]) + t['l0'])
            for t in self.triangles
        )


class NumericLoopMap:
    """Loop map of arbitrary loops: Newton assembly + implicit differentiation.

    ``q`` solves ``phi(q) = 0`` with the independent joints fixed (seed 002
    :func:`robot_dynamics.assemble`, warm-started from ``q_guess`` or the last solution);
    ``G``: ``A_u G_u = -A_theta`` (least squares on the rank-deficient rows of planar loops);
    ``H``: ``A_u H_u[:, a, b] = -B(G_a, G_b)`` with ``B`` the symmetric bilinear form of the
    closure's second derivative, from the exact bias ``Adot(v) v`` by polarisation.
    ``rank_tol`` [units of A]: relative rank tolerance of the dependent block; a rank-deficient
    block (a loop singularity) raises :class:`LoopMapDomainError`.
    """

    kind = 'numeric'

    def __init__(self, model, rank_tol=1e-9, tol=1e-12):
        self.model = model
        self.independent = list(model.independent)
        self.idx = model.independent_indices
        self.dep = np.array([i for i in range(model.nq) if i not in set(self.idx.tolist())], dtype=np.int64)
        self.rank_tol, self.tol = rank_tol, tol
        self._last = model.reference_q()
        self._free = np.ones(model.nq, dtype=np.bool_)
        self._free[self.idx] = False
        self._idx = np.ascontiguousarray(self.idx, dtype=np.int64)
        self._margin = None  # (theta, sigma_min) of the last evaluation

    def _solve_dep(self, A):
        Au = A[:, self.dep]
        U, s, Vt = np.linalg.svd(Au, full_matrices=False)
        r = int(np.sum(s > self.rank_tol * max(s[0], 1e-300)))
        if r < len(self.dep):
            raise LoopMapDomainError(
                None,
                None,
                None,
                f'{self.model.name}: loop singularity (rank {r} < {len(self.dep)} dependent joints); sigma = {s}',
            )
        return lambda b: Vt[:r].T @ ((U[:, :r].T @ b) / s[:r])

    def evaluate(self, theta, q_guess=None):
        """Compiled path (:func:`robot_dynamics.algorithms._partitioning_kernels.numeric_loop_map`: Newton
        assembly, A, the closure biases and the dependent-block SVD in one call); the reference
        numpy route :meth:`evaluate_reference` handles the cases it does not (Newton failure:
        least-squares fallback / :class:`~robot_dynamics.AssemblyError`; loop singularity)."""
        from robot_dynamics.algorithms import _partitioning_kernels as PK
        from robot_dynamics.algorithms.projection import _eps, _kin_pack, _pack

        theta = np.asarray(theta, float)
        n, k = self.model.nq, len(self.idx)
        guess = self._last.copy() if q_guess is None else np.array(q_guess, float)
        if guess.shape != (n,) or theta.shape != (k,):
            return self.evaluate_reference(theta, q_guess)
        guess[self.idx] = theta
        if not np.all(np.isfinite(guess)):
            return self.evaluate_reference(theta, q_guess)
        G = np.empty((n, k))
        H = np.empty((n, k, k))
        nd = len(self.dep)
        s = np.zeros(min(self.model.nconstraints, nd))
        q = guess.copy()
        st, _ = PK.numeric_loop_map(
            _kin_pack(_pack(self.model)),
            q,
            self._free,
            self._idx,
            self.dep,
            float(self.tol),
            50,
            _eps(None),
            float(self.rank_tol),
            G,
            H,
            s,
        )
        if st != 0 or nd == 0:
            return self.evaluate_reference(theta, q_guess)
        self._last = q.copy()
        self._margin = (theta.copy(), float(s[nd - 1]))
        return LoopMapResult(q, G, H)

    def evaluate_reference(self, theta, q_guess=None):
        """The numpy route of :meth:`evaluate` (seed 002 :func:`~robot_dynamics.assemble`,
        :func:`~robot_dynamics.constraint_terms`); the tests compare both."""
        from robot_dynamics.algorithms.constraints import constraint_terms
        from robot_dynamics.algorithms.projection import assemble

        theta = np.asarray(theta, float)
        n, k = self.model.nq, len(self.idx)
        self._margin = None
        guess = self._last.copy() if q_guess is None else np.array(q_guess, float)
        guess[self.idx] = theta
        q = assemble(self.model, q_guess=guess, fixed=list(self.independent), tol=self.tol).q
        self._last = q.copy()
        A = constraint_terms(self.model, q).A
        solve = self._solve_dep(A)
        G = np.zeros((n, k))
        G[self.idx, np.arange(k)] = 1.0
        for c in range(k):
            G[self.dep, c] = solve(-A[:, self.idx[c]])

        def bias(v):
            return constraint_terms(self.model, q, v, jacobian=False).bias

        Bd = [bias(G[:, a]) for a in range(k)]
        H = np.zeros((n, k, k))
        for a in range(k):
            H[self.dep, a, a] = solve(-Bd[a])
            for b in range(a + 1, k):
                Bab = 0.5 * (bias(G[:, a] + G[:, b]) - Bd[a] - Bd[b])
                H[self.dep, a, b] = H[self.dep, b, a] = solve(-Bab)
        return LoopMapResult(q, G, H)

    def margin(self, theta):
        """Smallest singular value of the dependent block of A at theta (0 = singular)."""
        from robot_dynamics.algorithms.constraints import constraint_terms

        theta = np.asarray(theta, float)
        c = self._margin
        if c is not None and c[0].shape == theta.shape and np.array_equal(c[0], theta):
            return c[1]  # evaluated at this theta: Newton would not move q
        q = self.evaluate(theta).q
        c = self._margin
        if c is not None and np.array_equal(c[0], theta):
            return c[1]
        return float(np.linalg.svd(constraint_terms(self.model, q).A[:, self.dep], compute_uv=False)[len(self.dep) - 1])


def make_loop_map(model, kind='auto'):
    """Loop map of ``model``: 'tree' (no loops), 'closed_form' (sidecar triangle resolvers),
    'numeric', or 'auto' (closed form where the sidecar declares one for every loop, else
    numeric)."""
    model.require_one_dof('the loop maps of inertia partitioning')
    if kind == 'auto':
        if not model.loops:
            return TreeLoopMap(model)
        if any(sm.get('resolver') == 'isosceles_triangle' for sm in model.submechanisms):
            return TriangleLoopMap(model)
        return NumericLoopMap(model)
    maps = {'tree': TreeLoopMap, 'closed_form': TriangleLoopMap, 'numeric': NumericLoopMap}
    if kind not in maps:
        raise PartitioningError(f'loop map kind must be one of {["auto", *maps]}, got {kind!r}')
    if kind == 'tree' and model.loops:
        raise PartitioningError(f"{model.name} has loops: a 'tree' loop map would ignore them")
    return maps[kind](model)


# ----------------------------------------------------------------------------- bodies
@dataclass
class Body:
    """One rigid body of the partition (one ``Gamma_i``).

    ``joint``: index of the tree joint that moves it (its frame is attached to that joint
    frame); ``R`` (3, 3), ``p`` (3,): constant placement of the body reference frame {B_i} in
    the joint frame; ``mass`` [kg], ``com`` (3,) [m] in {B_i}, ``inertia_com`` (3, 3) [kg m²]
    about the COM with axes of {B_i}.
    """

    name: str
    joint: int
    mass: float
    com: np.ndarray
    inertia_com: np.ndarray
    R: np.ndarray = field(default_factory=lambda: np.eye(3))
    p: np.ndarray = field(default_factory=lambda: np.zeros(3))

    @property
    def M(self):
        """Spatial inertia (6, 6) in {B_i}, linear first."""
        return spatial_inertia(self.mass, self.com, self.inertia_com)


@dataclass
class PartitionTerms:
    """Partitioned model at (theta, thetad). k = number of (unlocked) minimal coordinates.

    q (n,): all tree joints; G (n, k), H (n, k, k): loop map; J (nb, 6, k): body Jacobians of
    {B_i} (local, linear first); dJ (nb, 6, k, k): ``dJ[..., m] = dJ/dtheta_m``;
    Gamma_i (nb, k, k); Gamma (k, k); dGamma (k, k, k): ``dGamma[m] = dGamma/dtheta_m``;
    Qg (k,): generalized gravity force; potential [J]; R, p: world placement of each body
    frame (nb, 3, 3), (nb, 3); bodies: names.
    """

    theta: np.ndarray
    q: np.ndarray
    G: np.ndarray
    H: np.ndarray
    J: np.ndarray
    dJ: np.ndarray
    Gamma_i: np.ndarray
    Gamma: np.ndarray
    dGamma: np.ndarray
    Qg: np.ndarray
    potential: float
    R: np.ndarray
    p: np.ndarray
    bodies: list

    def Gamma_dot(self, thetad):
        """``sum_m dGamma[m] thetad_m`` (eq. 20), (k, k)."""
        return np.einsum('mab,m->ab', self.dGamma, thetad)

    def grad_quadratic(self, a, b=None):
        """``(grad_theta (aᵀ Gamma b))_m = aᵀ dGamma[m] b``, (k,)."""
        return np.einsum('a,mab,b->m', a, self.dGamma, a if b is None else b)


def christoffel(dGamma, thetad):
    """Christoffel Coriolis matrix ``C_ab = sum_k ½(dG_ab/dq_k + dG_ak/dq_b - dG_bk/dq_a) qd_k``
    (k, k) from ``dGamma[m] = dGamma/dtheta_m``; ``Gamma_dot - 2 C`` is skew-symmetric."""
    T1 = np.einsum('kab,k->ab', dGamma, thetad)
    T2 = np.einsum('bak,k->ab', dGamma, thetad)
    T3 = np.einsum('abk,k->ab', dGamma, thetad)
    return 0.5 * (T1 + T2 - T3)


def coriolis_vector(dGamma, thetad):
    """``Gamma_dot qd - ½ grad(qdᵀ Gamma qd)`` (eq. 34), (k,)."""
    return np.einsum('mab,m,b->a', dGamma, thetad, thetad) - 0.5 * np.einsum('a,mab,b->m', thetad, dGamma, thetad)


class PartitionedModel:
    """Partitioned-inertia model of a robot in minimal coordinates (reconfigurable).

    Parameters
    ----------
    model : Model (URDF spanning tree + loops sidecar)
    loop_map : 'auto' | 'closed_form' | 'numeric' | 'tree' | a loop-map object
    neglect_bodies : link names whose bodies are left out (e.g. the paper's massless cylinder)

    Bodies are the URDF bodies (one per movable joint, fixed links merged, body frame = joint
    frame) with non-zero mass, plus any added with :meth:`add_body`. The coordinates are
    ``loop_map.independent`` minus the locked ones (:meth:`lock`).

    Reconfiguration (paper eq. 21-24): :meth:`add_body` / :meth:`add_payload`,
    :meth:`remove_body`, :meth:`set_body_params`, :meth:`lock` / :meth:`unlock`. Only the
    affected ``Gamma_i`` change; the controller built on this object follows automatically.
    """

    def __init__(self, model, loop_map='auto', neglect_bodies=()):
        model.require_one_dof('inertia partitioning')
        self.model = model
        self.loop_map = make_loop_map(model, loop_map) if isinstance(loop_map, str) else loop_map
        self.all_coords = list(self.loop_map.independent)
        self.gravity = np.array(model.gravity, float)
        # the link name of each joint's body (the URDF child link)
        self._joint_link = {}
        for f, par in zip(model.frame_names, model.frame_parent):
            if (
                par >= 0
                and np.allclose(model.frame_R[model.frame_index(f)], np.eye(3))
                and np.allclose(model.frame_p[model.frame_index(f)], 0)
                and par not in self._joint_link
            ):
                self._joint_link[int(par)] = f
        neglect = set(neglect_bodies)
        names = set(self._joint_link.values())
        bad = neglect - names
        if bad:
            raise UnknownNameError(
                f'neglect_bodies: {sorted(bad)} are not body links of {model.name} (bodies: {sorted(names)})'
            )
        self.bodies = []
        for i in range(model.nq):
            nm = self._joint_link.get(i, model.joint_names[i])
            if model.mass[i] > 0 and nm not in neglect:
                self.bodies.append(Body(nm, i, float(model.mass[i]), model.com[i].copy(), model.inertia_com[i].copy()))
        self.locked = {}  # coordinate name -> locked value
        self._prepare()

    # ------------------------------------------------------------------ reconfiguration
    def _prepare(self):
        m = self.model
        self.free = [c for c in self.all_coords if c not in self.locked]
        self.sel = np.array([self.all_coords.index(c) for c in self.free], dtype=np.int64)
        n = m.nq
        self._Ml = [b.M for b in self.bodies]
        # support masks: upstream[l, j] for every body's joint path
        self._sup = []
        for b in self.bodies:
            s = np.zeros(n, bool)
            if b.joint >= 0:
                s[m.support[b.joint]] = True
            self._sup.append(s)
        # packed constants of the compiled evaluation (_partitioning_kernels.partition_terms)
        nb = len(self.bodies)
        bsup = -np.ones((nb, n), dtype=np.int64)
        for b_i, s in enumerate(self._sup):
            f = np.flatnonzero(s)
            bsup[b_i, : len(f)] = f
        self._kpack = (
            m._par,
            m._geo,
            np.ascontiguousarray(m.screw_local, dtype=float),
            np.array([b.joint for b in self.bodies], dtype=np.int64).reshape(nb),
            np.array([b.R for b in self.bodies], dtype=float).reshape(nb, 3, 3),
            np.array([b.p for b in self.bodies], dtype=float).reshape(nb, 3),
            np.array(self._Ml, dtype=float).reshape(nb, 6, 6),
            np.array([b.mass for b in self.bodies], dtype=float).reshape(nb),
            np.array([b.com for b in self.bodies], dtype=float).reshape(nb, 3),
            bsup,
            np.ascontiguousarray(self.gravity, dtype=float),
        )
        self._names = self.body_names()
        self._sel_all = len(self.sel) == len(self.all_coords) and np.array_equal(
            self.sel, np.arange(len(self.all_coords))
        )

    @property
    def coords(self):
        """Names of the active minimal coordinates (order of theta)."""
        return list(self.free)

    @property
    def k(self):
        return len(self.free)

    def body_names(self):
        return [b.name for b in self.bodies]

    def _body(self, name):
        for b in self.bodies:
            if b.name == name:
                return b
        raise UnknownNameError(f"no body '{name}' in the partition (bodies: {self.body_names()})")

    def add_body(self, name, frame, mass, com=(0, 0, 0), inertia_com=None):
        """Attach a rigid body (e.g. a payload) to URDF frame ``frame``; its reference frame is
        that frame. ``Gamma += J_frameᵀ M_body J_frame`` (and its gravity). Returns the Body."""
        if name in self.body_names():
            raise PartitioningError(f"a body named '{name}' already exists")
        f = self.model.frame_index(frame)
        j = int(self.model.frame_parent[f])
        if j < 0:
            raise PartitioningError(f"frame '{frame}' is fixed to the world: the body would not move")
        if not (np.isfinite(mass) and mass >= 0):
            raise InputError(f'body mass must be finite and >= 0, got {mass!r}')
        I = np.zeros((3, 3)) if inertia_com is None else np.asarray(inertia_com, float)
        if I.shape != (3, 3) or not np.allclose(I, I.T) or np.linalg.eigvalsh(I).min() < -1e-12:
            raise InputError(f'inertia_com must be a symmetric PSD 3x3 matrix, got {I!r}')
        b = Body(
            name,
            j,
            float(mass),
            np.asarray(com, float).reshape(3),
            I,
            self.model.frame_R[f].copy(),
            self.model.frame_p[f].copy(),
        )
        self.bodies.append(b)
        self._prepare()
        return b

    def add_payload(self, mass, inertia_com=None, com=(0, 0, 0), frame='tool', name='payload'):
        """:meth:`add_body` for a payload at the tool frame (replaces an existing one)."""
        if name in self.body_names():
            self.remove_body(name)
        return self.add_body(name, frame, mass, com, inertia_com)

    def remove_body(self, name):
        """Remove body ``name`` (its Gamma_i and gravity disappear)."""
        self.bodies.remove(self._body(name))
        self._prepare()

    def set_body_params(self, name, mass=None, com=None, inertia_com=None):
        """Change one body's inertial parameters; only its ``Gamma_i`` changes."""
        b = self._body(name)
        if mass is not None:
            if not (np.isfinite(mass) and mass >= 0):
                raise InputError(f'body mass must be finite and >= 0, got {mass!r}')
            b.mass = float(mass)
        if com is not None:
            b.com = np.asarray(com, float).reshape(3)
        if inertia_com is not None:
            b.inertia_com = np.asarray(inertia_com, float).reshape(3, 3)
        self._prepare()

    def lock(self, values):
        """Lock minimal coordinates ``{name: value}`` (eq. 22-24: ``Gamma_new = P Gamma Pᵀ``)."""
        for c, v in dict(values).items():
            if c not in self.all_coords:
                raise UnknownNameError(f"'{c}' is not a minimal coordinate ({self.all_coords})")
            self.locked[c] = float(v)
        if not [c for c in self.all_coords if c not in self.locked]:
            raise PartitioningError('cannot lock every coordinate')
        self._prepare()

    def unlock(self, names=None):
        """Unlock ``names`` (default: all)."""
        for c in list(self.locked) if names is None else names:
            self.locked.pop(c, None)
        self._prepare()

    def copy(self):
        """Independent copy (bodies and locks), sharing the constant Model."""
        return copy.deepcopy(self)

    def full_theta(self, theta):
        """Full minimal coordinates (all, locked ones at their lock value) from the active ones."""
        if not self.locked:
            return np.array(theta, float).reshape(len(self.all_coords))
        th = np.empty(len(self.all_coords))
        for c, v in self.locked.items():
            th[self.all_coords.index(c)] = v
        th[self.sel] = theta
        return th

    def theta_of(self, q):
        """Active minimal coordinates from a full tree configuration q (n,)."""
        return np.asarray(q, float)[self.loop_map.idx][self.sel]

    # ------------------------------------------------------------------ evaluation
    def _tree(self, q):
        """World placement, local Jacobian (6, n) and its derivative (6, n, n) of every body."""
        m = self.model
        n = m.nq
        Rj = np.empty((n, 3, 3))
        pj = np.empty((n, 3))
        Jj = np.zeros((n, 6, n))
        for i in range(n):
            par = m.parents[i]
            if m.joint_types[i] == REVOLUTE:
                Rl = m.R_fixed[i] @ _rot(m.axes[i], q[i])
                pl = m.p_fixed[i]
            else:
                Rl = m.R_fixed[i]
                pl = m.p_fixed[i] + m.R_fixed[i] @ m.axes[i] * q[i]
            if par < 0:
                Rj[i], pj[i] = Rl, pl
            else:
                Rj[i] = Rj[par] @ Rl
                pj[i] = pj[par] + Rj[par] @ pl
                Jj[i] = _Ad_inv(Rl, pl) @ Jj[par]
            Jj[i][:, i] += m.screw_local[i]
        nb = len(self.bodies)
        R = np.empty((nb, 3, 3))
        p = np.empty((nb, 3))
        J = np.empty((nb, 6, n))
        dJ = np.zeros((nb, 6, n, n))
        for b_i, b in enumerate(self.bodies):
            j = b.joint
            R[b_i] = Rj[j] @ b.R
            p[b_i] = pj[j] + Rj[j] @ b.p
            J[b_i] = _Ad_inv(b.R, b.p) @ Jj[j]
            sup = np.flatnonzero(self._sup[b_i])
            for a, l in enumerate(sup):  # l upstream of jj: ad(J_l) J_jj
                adl = _ad(J[b_i][:, l])
                for jj in sup[a + 1 :]:
                    dJ[b_i][:, l, jj] = adl @ J[b_i][:, jj]
        return R, p, J, dJ

    def terms(self, theta, q_guess=None):
        """:class:`PartitionTerms` at the active minimal coordinates ``theta`` (k,).

        ``q_guess``: full tree configuration used to warm-start a numeric loop map.
        Raises :class:`LoopMapDomainError` outside the loop map's admissible range.
        """
        theta = np.asarray(theta, float).reshape(-1)
        if theta.shape != (self.k,) or not np.isfinite(theta).all():
            raise InputError(f'theta must be {self.k} finite values ({self.free}), got {theta}')
        lm = self.loop_map.evaluate(self.full_theta(theta), q_guess)
        if self._sel_all:
            G, H = lm.G, lm.H
        else:
            G = np.ascontiguousarray(lm.G[:, self.sel])
            H = np.ascontiguousarray(lm.H[:, self.sel][:, :, self.sel])
        return self._terms_compiled(theta, lm.q, G, H)

    def _terms_compiled(self, theta, q, G, H):
        from robot_dynamics.algorithms._partitioning_kernels import partition_terms

        nb, k = len(self.bodies), self.k
        R = np.empty((nb, 3, 3))
        p = np.empty((nb, 3))
        J = np.empty((nb, 6, k))
        dJ = np.empty((nb, 6, k, k))
        Gi = np.empty((nb, k, k))
        Gam = np.empty((k, k))
        dG = np.empty((k, k, k))
        Qg = np.empty(k)
        V = partition_terms(
            *self._kpack,
            np.ascontiguousarray(q, dtype=float),
            np.ascontiguousarray(G, dtype=float),
            np.ascontiguousarray(H, dtype=float),
            R,
            p,
            J,
            dJ,
            Gi,
            Gam,
            dG,
            Qg,
        )
        return PartitionTerms(theta, q, G, H, J, dJ, Gi, Gam, dG, Qg, V, R, p, list(self._names))

    def terms_reference(self, theta, q_guess=None):
        """The numpy route of :meth:`terms` (tree Jacobians and einsum contractions), kept as
        the readable reference the tests compare the compiled evaluation with."""
        theta = np.asarray(theta, float).reshape(-1)
        if theta.shape != (self.k,) or not np.all(np.isfinite(theta)):
            raise InputError(f'theta must be {self.k} finite values ({self.free}), got {theta}')
        lm = self.loop_map.evaluate(self.full_theta(theta), q_guess)
        G = lm.G[:, self.sel]
        H = lm.H[:, self.sel][:, :, self.sel]
        R, p, Jt, dJt = self._tree(lm.q)
        nb, k = len(self.bodies), self.k
        J = np.einsum('bin,nk->bik', Jt, G)
        # dJ/dtheta_m = sum_j dJt[:, :, j] G[j, m] @ G + Jt @ H[:, :, m]
        dJ = np.einsum('binj,nk,jm->bikm', dJt, G, G) + np.einsum('bin,nkm->bikm', Jt, H)
        Gi = np.empty((nb, k, k))
        dG = np.zeros((k, k, k))
        Qg = np.zeros(k)
        V = 0.0
        for b_i, b in enumerate(self.bodies):
            MJ = self._Ml[b_i] @ J[b_i]
            Gi[b_i] = J[b_i].T @ MJ
            X = np.einsum('ikm,il->mkl', dJ[b_i], MJ)
            dG += X + X.transpose(0, 2, 1)
            f = b.mass * (R[b_i].T @ self.gravity)
            Qg += J[b_i].T @ np.concatenate([f, np.cross(b.com, f)])
            V -= b.mass * self.gravity @ (p[b_i] + R[b_i] @ b.com)
        return PartitionTerms(
            theta, lm.q, G, H, J, dJ, Gi, Gi.sum(0) if nb else np.zeros((k, k)), dG, Qg, V, R, p, self.body_names()
        )

    def frame_jacobian(self, terms, frame):
        """Body Jacobian (6, k) of any URDF frame in the minimal coordinates (local, linear
        first)."""
        from robot_dynamics.algorithms.kinematics import frame_jacobian

        return frame_jacobian(self.model, terms.q, frame, 'local') @ terms.G

    def wrench_force(self, terms, frame, wrench, reference='local'):
        """Generalized force (k,) of a wrench ``(f, tau)`` [N, N·m] applied at the origin of
        ``frame`` (eq. 16, ``Jᵀ W``). ``reference``: 'local' (wrench in frame axes, about its
        origin), 'local_world_aligned' (world axes, about the frame origin) or 'world'."""
        from robot_dynamics.algorithms.kinematics import frame_jacobian

        Jm = frame_jacobian(self.model, terms.q, frame, reference) @ terms.G
        return Jm.T @ np.asarray(wrench, float)

    def forward_dynamics(self, theta, thetad, Q):
        """Minimal-coordinate forward dynamics (eq. 18): ``thetadd`` (k,) for the actuator /
        external generalized force ``Q`` (k,) (gravity is added here). Cholesky of Gamma."""
        t = self.terms(theta)
        rhs = np.asarray(Q, float) + t.Qg - coriolis_vector(t.dGamma, thetad)
        L = np.linalg.cholesky(t.Gamma)
        return np.linalg.solve(L.T, np.linalg.solve(L, rhs)), t

    def inverse_dynamics(self, theta, thetad, thetadd):
        """Actuator generalized force ``Gamma thetadd + C thetad - Qg`` (k,) (eq. 19)."""
        t = self.terms(theta)
        return t.Gamma @ thetadd + coriolis_vector(t.dGamma, thetad) - t.Qg

    def energy(self, theta, thetad):
        """(kinetic, potential) [J]."""
        t = self.terms(theta)
        return 0.5 * thetad @ t.Gamma @ thetad, t.potential


def model_with_body(model, frame, mass, com=(0, 0, 0), inertia_com=None):
    """A copy of ``model`` with a rigid body (e.g. a payload) merged into the body carrying
    URDF frame ``frame`` (``com`` [m] in the frame, ``inertia_com`` [kg m²] about the COM in
    frame axes). Used to reconfigure a *plant* the way :meth:`PartitionedModel.add_body`
    reconfigures the controller model."""
    import dataclasses

    f = model.frame_index(frame)
    j = int(model.frame_parent[f])
    if j < 0:
        raise PartitioningError(f"frame '{frame}' is fixed to the world")
    Rf, pf = model.frame_R[f], model.frame_p[f]
    c2 = pf + Rf @ np.asarray(com, float)
    I2 = Rf @ (np.zeros((3, 3)) if inertia_com is None else np.asarray(inertia_com, float)) @ Rf.T
    m1, c1, I1 = model.mass[j], model.com[j], model.inertia_com[j]
    mt = m1 + mass
    ct = (m1 * c1 + mass * c2) / mt

    def shift(m, c, I):
        d = c - ct
        return I + m * (d @ d * np.eye(3) - np.outer(d, d))

    mass_a, com_a, in_a = model.mass.copy(), model.com.copy(), model.inertia_com.copy()
    mass_a[j], com_a[j], in_a[j] = mt, ct, shift(m1, c1, I1) + shift(mass, c2, I2)
    return dataclasses.replace(model, mass=mass_a, com=com_a, inertia_com=in_a)


class OutputMapError(PartitioningError):
    """A task-space target the output map cannot be inverted at.

    ``reason``: 'unreachable' (Newton found no closed configuration with the frame origin at the
    target: out of reach, or the loop cannot close on the way), 'singular' (the output Jacobian
    ``J_x`` is rank deficient there: stretched/folded arm, frame origin on a joint axis, loop
    dead centre) or 'limits' (the solution leaves the URDF limits of a minimal coordinate);
    ``target`` (d,) [m], ``theta`` (k,): the last iterate."""

    def __init__(self, reason, target, theta, message):
        self.reason, self.target, self.theta = reason, target, theta
        super().__init__(message)


class OutputMap:
    """Output map of seed 000 (the paper's eq. 42, generalised to any partitioned robot): the
    world position of the origin of URDF frame ``frame``, ``x = y(theta)``, as a function of
    the minimal coordinates ``theta`` (the loop map's independent joints, all of them: locks of
    a :class:`PartitionedModel` do not apply here), through the loop map ``q = g(theta)``.

    Frames and units: ``x`` [m] are the world components ``axes`` (default (0, 1, 2) = x, y, z of
    the model's root frame) of the frame origin; ``theta`` in the joints' units (rad, m).
    Shapes: ``theta`` (k,), ``x`` (d,) with ``d = len(axes)``; the inverse needs ``d == k``.

    * :meth:`forward` ``(theta, thetad)`` -> ``x`` (d,), ``J_x = dx/dtheta`` (d, k) and the bias
      ``Jdot_x thetad`` (d,) [m/s²] (classical acceleration of the origin at ``thetadd = 0``,
      i.e. with ``q̇ = G thetad``, ``q̈ = H(thetad, thetad)`` through the loop map);
    * :meth:`inverse` ``(x)`` -> ``theta``: Newton on the forward map, each iterate closed by the
      loop map, step halving when a step leaves the loop map's domain;
    * :meth:`reference` ``(x, xd, xdd)`` -> (3, k) = ``theta_d``, ``thetad_d = J_x⁻¹ xd``,
      ``thetadd_d = J_x⁻¹ (xdd - Jdot_x thetad_d)`` (no differentiation in time).

    ``tol`` [m]: Newton stops at ``max |x - y(theta)| < tol`` (the numeric loop map closes to
    ~1e-12, which bounds what is attainable); ``singular_tol``: relative smallest singular value
    of ``J_x`` below which a target is singular; ``check_limits``: URDF limits of the minimal
    coordinates. Raises :class:`OutputMapError` (unreachable / singular / limits) and
    :class:`~robot_dynamics.errors.InputError` for malformed input. The solver warm-starts from
    the last solution (a continuous path stays on one branch); ``theta_guess`` overrides it.
    ``model``: a Model or a :class:`PartitionedModel` (its model is used; the loop map is a new
    one of ``loop_map`` kind so its warm start is not shared).
    """

    def __init__(
        self,
        model,
        frame='tool',
        axes=(0, 1, 2),
        loop_map='auto',
        tol=1e-11,
        max_iter=50,
        singular_tol=1e-9,
        check_limits=True,
    ):
        if isinstance(model, PartitionedModel):
            model = model.model
        self.model = model
        self.frame = frame
        self._fidx = model.frame_index(frame)  # UnknownNameError for a bad frame
        self._J_at = None  # (theta, J_x) of the last forward call
        self._fjoint = int(model.frame_parent[self._fidx])
        if self._fjoint < 0:
            raise PartitioningError(f"frame '{frame}' is fixed to the world: no output map")
        self.loop_map = make_loop_map(model, loop_map) if isinstance(loop_map, str) else loop_map
        self.coords = list(self.loop_map.independent)
        self.k = len(self.coords)
        ax = [int(a) for a in axes]
        if not ax or len(set(ax)) != len(ax) or any(a not in (0, 1, 2) for a in ax):
            raise InputError(f'axes must be distinct world components in (0, 1, 2), got {list(axes)}')
        self.axes = ax
        self.d = len(ax)
        self.tol, self.max_iter, self.singular_tol = float(tol), int(max_iter), float(singular_tol)
        idx = self.loop_map.idx
        self.lower = np.asarray(model.lower, float)[idx] if check_limits else np.full(self.k, -np.inf)
        self.upper = np.asarray(model.upper, float)[idx] if check_limits else np.full(self.k, np.inf)
        self.theta = model.reference_q()[idx].astype(float)
        self._q = model.reference_q()  # warm start of the loop map (closed q)

    def _theta(self, theta, name='theta'):
        th = np.asarray(theta, float).reshape(-1)
        if th.shape != (self.k,) or not np.all(np.isfinite(th)):
            raise InputError(f'{name} must be {self.k} finite values ({self.coords}), got {theta!r}')
        return th

    def forward(self, theta, thetad=None, q_guess=None):
        """``x`` (d,) [m], ``J_x`` (d, k), ``Jdot_x thetad`` (d,) [m/s²] (zero without
        ``thetad``) at ``theta`` (k,); world components ``axes`` of the frame origin."""
        from robot_dynamics.algorithms.kinematics import _frame_state, _lwa_columns, world_state

        th = self._theta(theta)
        lm = self.loop_map.evaluate(th, q_guess if q_guess is not None else self._q)
        self._q = lm.q
        if thetad is None:
            st = world_state(self.model, lm.q)
        else:  # q̇ = G thd, q̈ = H(thd, thd): the origin's acceleration = Jdot thd
            thd = self._theta(thetad, 'thetad')
            st = world_state(self.model, lm.q, lm.G @ thd, np.einsum('nab,a,b->n', lm.H, thd, thd))
        _, p, _, _, _, acc = _frame_state(self.model, st, self._fidx)  # origin, its acceleration
        Jq, _ = _lwa_columns(self.model, st, self._fidx, p)
        J = (Jq[:3] @ lm.G)[self.axes]
        self._J_at = (th.copy(), J)
        return p[self.axes], J, acc[self.axes]

    def _check_square(self):
        if self.d != self.k:
            raise InputError(
                f'the inverse output map needs as many task axes as minimal '
                f'coordinates ({self.k}: {self.coords}), got axes {self.axes}'
            )

    def _solve(self, J, r, x_d, th):
        s = np.linalg.svd(J, compute_uv=False)
        if s[-1] <= self.singular_tol * max(s[0], 1.0):
            raise OutputMapError(
                'singular',
                x_d,
                th.copy(),
                f"output map of '{self.frame}' singular at theta = {th.tolist()} "
                f'(singular values of J_x {s.tolist()}): no unique minimal-coordinate '
                f'reference for target {np.asarray(x_d).tolist()} m (stretched or '
                f'folded arm, frame origin on a joint axis, or a loop dead centre)',
            )
        return np.linalg.solve(J, r)

    def inverse(self, x, theta_guess=None):
        """Minimal coordinates (k,) with the frame origin at ``x`` (d,) [m, world]: Newton on
        :meth:`forward` from ``theta_guess`` (default: the last solution, initially the
        sidecar's reference configuration) to ``|x - y(theta)| < tol`` m."""
        self._check_square()
        x_d = np.asarray(x, float).reshape(-1)
        if x_d.shape != (self.d,) or not np.all(np.isfinite(x_d)):
            raise InputError(f'target x must be {self.d} finite values [m], got {x!r}')
        th = self._theta(self.theta if theta_guess is None else theta_guess, 'theta_guess').copy()
        q_keep = self._q
        try:
            return self._newton(x_d, th)
        except OutputMapError:
            self._q = q_keep  # a failed target does not move the warm start
            raise

    def _newton(self, x_d, th):
        from robot_dynamics.errors import AssemblyError

        try:
            xc, J, _ = self.forward(th)
        except (LoopMapDomainError, AssemblyError) as exc:
            raise OutputMapError(
                'unreachable', x_d, th, f'output map: the loop does not close at the start guess {th.tolist()}: {exc}'
            ) from None
        r = x_d - xc
        for _ in range(self.max_iter):
            if np.abs(r).max() < self.tol:
                break
            step = self._solve(J, r, x_d, th)
            lam, moved = 1.0, False
            for _ in range(12):  # step halving: stay inside the loop map's domain
                try:
                    xn, Jn, _ = self.forward(th + lam * step)
                except (LoopMapDomainError, AssemblyError):
                    lam *= 0.5
                    continue
                rn = x_d - xn
                if np.abs(rn).max() < np.abs(r).max() or lam < 1e-3:
                    moved = True
                    break
                lam *= 0.5
            if not moved:
                break
            th, xc, J, r = th + lam * step, xn, Jn, rn
        if not np.abs(r).max() < self.tol:
            raise OutputMapError(
                'unreachable',
                x_d,
                th,
                f"output map: no closed configuration puts '{self.frame}' at "
                f'{x_d.tolist()} m (Newton stopped {np.abs(r).max():.3g} m away, '
                f'at theta = {th.tolist()}): target out of reach or beyond the '
                f"loop's range",
            )
        self._solve(J, r, x_d, th)  # singular at the solution: no unique reference
        bad = [
            (c, v, lo, hi)
            for c, v, lo, hi in zip(self.coords, th, self.lower, self.upper)
            if not lo - 1e-12 <= v <= hi + 1e-12
        ]
        if bad:
            c, v, lo, hi = bad[0]
            raise OutputMapError(
                'limits',
                x_d,
                th,
                f"output map: target {x_d.tolist()} m needs '{c}' = {v:.6g}, outside its limits [{lo:.6g}, {hi:.6g}]",
            )
        self.theta = th.copy()
        return th

    def reference(self, x, xd, xdd, theta_guess=None):
        """Minimal-coordinate reference (3, k) = (theta_d, thetad_d, thetadd_d) of a task-space
        sample: position ``x`` [m], velocity ``xd`` [m/s], acceleration ``xdd`` [m/s²] (d,),
        world components ``axes`` of the frame origin."""
        th = self.inverse(x, theta_guess)
        v = np.asarray(xd, float).reshape(-1)
        a = np.asarray(xdd, float).reshape(-1)
        if v.shape != (self.d,) or a.shape != (self.d,) or not (np.all(np.isfinite(v)) and np.all(np.isfinite(a))):
            raise InputError(f'xd, xdd must be {self.d} finite values, got {xd!r}, {xdd!r}')
        c = self._J_at  # J_x at the solution (inverse's last forward call)
        J = c[1] if c is not None and np.array_equal(c[0], th) else self.forward(th)[1]
        thd = self._solve(J, v, x, th)
        _, _, b = self.forward(th, thd)
        return np.array([th, thd, self._solve(J, a - b, x, th)])


class CartesianReference:
    """A task-space path of a frame origin as a minimal-coordinate reference (what
    ``trajectory_node mode: task_ik`` publishes for the ip_controller).

    ``path(t, order=2)``: any profile of :mod:`robot_dynamics.control.trajectories` (e.g. ``Circle``,
    ``Sin2PickPlace``) giving (order + 1, 3) world positions [m], velocities, accelerations of
    the frame origin; the components ``axes`` are used. ``__call__(t, order=2)`` -> (3, k):
    ``theta_d``, ``thetad_d``, ``thetadd_d`` of the minimal coordinates ``coords`` (the model's
    independent joints) through :meth:`OutputMap.reference` (warm-started along the path; only
    orders 0..2 exist). ``theta0``: start guess (default the sidecar's reference configuration).
    """

    def __init__(self, model, path, frame='tool', axes=(0, 1, 2), loop_map='auto', theta0=None):
        self.map = OutputMap(model, frame, axes, loop_map)
        self.map._check_square()
        self.path = path
        self.coords = self.map.coords
        if theta0 is not None:
            self.map.theta = self.map._theta(theta0, 'theta0').copy()

    def __call__(self, t, order=2):
        P = np.asarray(self.path(t, order=2), float).reshape(3, -1)
        if P.shape[1] != 3:
            raise InputError(f'the path must give (3, 3) world positions/derivatives, got {P.shape}')
        ax = self.map.axes
        return self.map.reference(P[0, ax], P[1, ax], P[2, ax])
