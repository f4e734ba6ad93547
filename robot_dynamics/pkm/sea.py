"""Series-elastic-actuated PKM of ANY geometry the general 2nd-order route covers (seed 004),
built from the URDF + loops sidecar: plant and flatness-based exactly linearising law.

The link side is a PKM of :mod:`robot_dynamics.pkm.general` (serial limbs, one cut joint per
limb to the platform) whose actuated joints are the SEAs' spring-output joints; the sidecar's
``actuators`` of type ``sea`` give per SEA: ``joint`` (link side), ``motor_joint`` (a rotor
joint on its own chain from the base, not part of the PKM), ``stiffness`` K [N m/rad | N/m],
``motor_inertia`` M_m [kg m^2 | kg], ``damping`` D (spring-parallel), ``motor_damping`` D_m
(default 0). Task: the world coordinates ``x`` (delta,) of the platform frame that the general
route picks (``general_pkm(model).task``), or, for a 6-DOF platform (task ``pose``), the platform
pose ``x = T`` (4, 4) with ``xd = V`` its body-fixed twist (v, w) (linear first) and ``xdd`` ..
the twist's derivatives (the general route's pose task). Dynamics::

    M_t(x) xdd + b(x, xd) = J_IK^T u,   u = K (q_m - theta_a) + D (qd_m - thetad_a)
    M_m qdd_m = tau - u - D_m qd_m

with ``w = J_IK^T u = M_t xdd + b`` the general route's task-space force: ``b = w(xdd = 0)``,
column k of ``M_t`` = ``w(xdd = e_k) - b`` (one batched call of delta + 1 samples; exact, w is
affine in xdd). Redundant actuation by one SEA (n_a = delta + 1, e.g. the planar 3RRR): the
internal preload ``lambda = n^T u`` with ``n`` the generalised cross product of the columns of
``J_IK`` (``n_i = (-1)^i det(J_IK without row i)``; for delta = 2 the ``cross(c_1, c_2)`` of
the brief), its derivatives by the multilinearity of the determinant.

Flatness law (brief A8, three passes of the general route; equal to the planar 3RRR's
:class:`robot_dynamics.control.flatness_sea.SEAFlatnessController` on that robot)::

    u = K (q_m - theta_a),  ud = K (qd_m - J_IK xd),  xdd = M_t^-1 (J_IK^T u - b)
    xddd = M_t^-1 (J_IK^T ud + Jd_IK^T u - b1),  b1 = wd(xddd = 0)
    nu = x_d'''' + k3 (x_d''' - xddd) + k2 (x_d'' - xdd) + k1 (x_d' - xd) + k0 (x_d - x)
    [J_IK^T; n^T] udd = [wdd(nu) - Jdd_IK^T u - 2 Jd_IK^T ud; nu_l - ndd^T u - 2 nd^T ud]
    tau = u + M_m (thetadd_a + K^-1 udd) + D_m qd_m

Pose task: the same equations with ``xd = V``, ``xdd = V'``, ... (w is the force conjugate to the
body twist); the plant integrates ``T' = T V^`` on SE(3) (RK4 in the exponential coordinates of
the step's start pose: ``T = T0 exp(xi)``, ``xi' = dexp_R(xi)^-1 V``, exact), and the law's
pose error is ``e = log(T^-1 T_d)`` with the reference twist derivatives carried into the
current body frame by ``Ad(T^-1 T_d)`` (``nu = Ad V_d''' + k3 (Ad V_d'' - V'') + ... + k0 e``:
the error dynamics are the linear ones up to terms of second order in the pose error).

Measured task state: the platform frame's world pose and velocity by the tree's forward
kinematics (the joints of the limb that carries the platform body in the URDF). Units SI.
"""

from __future__ import annotations

from itertools import product
from math import factorial

import numpy as np

from robot_dynamics.errors import InputError
from robot_dynamics.pkm.recursive import PKMStructureError
from robot_dynamics.pkm.planar_sea import Planar3RRRParams

__all__ = ['SEAPKM', 'preload_direction', 'sea_limbs', 'sea_params_from_model']


def preload_direction(J):
    """n (3, n_a) and its 1st/2nd time derivatives from ``J`` (3, n_a, delta) = J_IK and its
    derivatives, n_a = delta + 1: ``n_i = (-1)^i det(J_IK with row i removed)`` (``J_IK^T n =
    0``), derivatives by the multilinearity of the determinant in the columns."""
    J = np.asarray(J, float)
    na, d = J.shape[1], J.shape[2]
    if na != d + 1:
        raise InputError(f'preload_direction: needs n_a = delta + 1, got J_IK {na} x {d}')
    n = np.zeros((3, na))
    for i in range(na):
        rows = [r for r in range(na) if r != i]
        sgn = -1.0 if i % 2 else 1.0
        for m in range(3):
            for combo in product(range(m + 1), repeat=d):
                if sum(combo) != m:
                    continue
                coef = factorial(m) / np.prod([factorial(c) for c in combo])
                B = np.stack([J[combo[k], rows, k] for k in range(d)], axis=1)
                n[m, i] += sgn * coef * np.linalg.det(B)
    return n


class SEAPKM:
    """The SEA-PKM's link side through the general route, plus the SEA data.

    ``model``: robot_dynamics Model with >= delta actuators of type ``sea`` (see the module
    docstring). Attributes: ``pkm`` (:class:`~robot_dynamics.pkm.general.GeneralPKM`),
    ``delta``, ``task``, ``K``, ``Mm``, ``D``, ``Dm`` (n_a,), ``i_link``/``i_mot`` model indices
    of the spring-output and motor joints (SEA order = ``pkm.actuated``), ``theta`` the last
    IK solution (warm start of the next call).
    """

    def __init__(self, model, platform=None, task=None):
        from robot_dynamics.pkm.general import general_pkm

        self.model = model
        p = self.pkm = general_pkm(model, platform, task)
        seas = [a for a in model.actuators.values() if a.get('type') == 'sea']
        if not seas:
            raise InputError(f"model '{model.name}': no actuators of type 'sea' in the sidecar")
        if len(seas) > p.delta + 1:
            raise PKMStructureError(
                f"model '{model.name}': {len(seas)} SEAs for {p.delta} DOF: "
                'more than one redundant SEA (preload of rank > 1) is not covered'
            )
        if [a['joint'] for a in seas] != list(p.actuated):
            raise PKMStructureError(
                f"model '{model.name}': SEA joints {[a['joint'] for a in seas]} "
                f"!= the PKM's actuated joints {p.actuated}"
            )

        def num(key, default):  # (types and signs checked at load: sidecar.ACTUATOR_NUMBERS)
            v = np.array([float(a.get(key, default)) for a in seas])
            if not np.all(np.isfinite(v)):
                raise InputError(f"model '{model.name}': SEA {key} must be finite, got {v.tolist()}")
            return v

        self.K, self.Mm = num('stiffness', 30.0), num('motor_inertia', 0.02)
        self.D, self.Dm = num('damping', 0.0), num('motor_damping', 0.0)
        if np.any(self.K <= 0) or np.any(self.Mm <= 0):
            raise InputError(f"model '{model.name}': SEA stiffness and motor_inertia must be > 0")
        self.pose = p.task == 'pose'
        self.delta, self.task, self.n_a = p.delta, ['pose'] if self.pose else list(p.task), len(seas)
        self.i_link = np.array([model.joint_index(a['joint']) for a in seas], np.int64)
        self.i_mot = np.array([model.joint_index(a['motor_joint']) for a in seas], np.int64)
        self.theta = p.theta_ref.copy()
        self._fidx = model.frame_index(p.platform)

    # ------------------------------------------------------------------ route calls
    def solve(self, X, jik_derivatives=True):
        """General route at the samples ``X`` (S, 5, delta) (task coordinates and derivatives
        1..4; pose task: use :meth:`solve_at`); returns the batched GeneralID2Result."""
        X = np.asarray(X, float)
        return self.solve_at(X[:, 0], X[:, 1:], jik_derivatives)

    def solve_at(self, x, D, jik_derivatives=True):
        """General route at ``x`` (S, delta) task coordinates, or (S, 4, 4) poses (pose task),
        and ``D`` (S, 4, delta) their derivatives 1..4 (pose: the body twist and its derivatives
        1..3), the first sample from the last solution, each next one from its predecessor
        (``warm_start``: samples at one pose cost no Newton step); returns the batched
        GeneralID2Result (``jik_derivatives=False``: without the rows of J_IK', J_IK'')."""
        from robot_dynamics.pkm.general import inverse_dynamics_d2_general

        D = np.asarray(D, float)
        r = inverse_dynamics_d2_general(
            self.pkm,
            np.asarray(x, float),
            D[:, 0],
            D[:, 1],
            D[:, 2],
            D[:, 3],
            theta_guess=self.theta,
            warm_start=True,
            jik_derivatives=jik_derivatives,
        )
        self.theta = r.theta[0, 0].copy()
        return r

    def at(self, x, xd=None):
        """The route's result (batch of one) at task coordinates ``x`` (pose task: the pose
        (4, 4)) with rates ``xd`` (default rest) and zero higher derivatives: ``u`` is then the
        static (or quasi-static) spring effort, ``theta`` the IK."""
        D = np.zeros((1, 4, self.delta))
        if xd is not None:
            D[0, 0] = xd
        return self.solve_at(np.asarray(x, float)[None], D)

    def task_dynamics(self, x, xd):
        """``(M_t (d, d), b (d,), r)`` at (x, xd) (pose task: the pose (4, 4) and body twist):
        ``w = M_t xdd + b``; ``r`` the route's result of the sample xdd = 0 (theta, theta_a,
        J_IK = r.J_IK[0], ...; batch axis 0)."""
        d = self.delta
        D = np.zeros((d + 1, 4, d))
        D[:, 0] = xd
        D[np.arange(1, d + 1), 1, np.arange(d)] = 1.0
        x = np.asarray(x, float)
        r = self.solve_at(np.broadcast_to(x, (d + 1,) + x.shape), D, jik_derivatives=False)
        b = r.w[0, 0]
        Mt = (r.w[1:, 0] - b).T
        return Mt, b, r

    def measure(self, q, qd):
        """Task coordinates ``x`` and rates ``xd`` (delta,) from model coordinates: the world
        pose and velocity of the platform frame by the tree's forward kinematics (only the
        platform limb's joints enter), ``xd`` = the world components of its (v, w); pose task:
        ``x`` the pose (4, 4), ``xd`` the body-fixed twist (R^T v, R^T w)."""
        from robot_dynamics.algorithms.kinematics import _frame_state, world_state

        p = self.pkm
        R, pos, w, v = _frame_state(self.model, world_state(self.model, q, qd), self._fidx)[:4]
        T = np.concatenate([np.c_[R, pos], [[0.0, 0.0, 0.0, 1.0]]])
        if self.pose:
            return T, np.concatenate([R.T @ v, R.T @ w])
        x = p.task_value(T[None])[0]
        return x, np.concatenate([v, w])[p.task_idx]

    def tree_q(self, theta, qm):
        """Model coordinates (nq,) from stacked limb coordinates and motor angles (n_a,)."""
        q = self.pkm.tree_q(theta, np.zeros(self.model.nq))
        q[self.i_mot] = qm
        return q


def sea_limbs(model):
    """[(arm joint, elbow joint, motor joint)] of the three SEA limbs, in the order of the
    sidecar's ``actuators`` of type ``sea`` (``joint``, its link's child joint, ``motor_joint``)."""
    model.require_one_dof('the SEA PKM model')
    import xml.etree.ElementTree as ET

    seas = [a for a in model.actuators.values() if a.get('type') == 'sea']
    root = ET.fromstring(model.urdf_xml)
    by_parent = {}
    child_of = {}
    for j in root.findall('joint'):
        by_parent.setdefault(j.find('parent').get('link'), []).append(j.get('name'))
        child_of[j.get('name')] = j.find('child').get('link')
    out = []
    for a in seas:
        arm, mot = a.get('joint'), a.get('motor_joint')
        kids = by_parent.get(child_of.get(arm), [])
        if arm not in model.joint_names or mot not in model.joint_names or len(kids) != 1:
            raise InputError(
                f"model '{model.name}': SEA actuator on '{arm}' (motor '{mot}'): needs "
                f'an arm joint with one child (elbow) joint and a motor joint'
            )
        out.append((arm, kids[0], mot))
    return out


def sea_params_from_model(model):
    """Planar3RRRParams of a planar 3RRR SEA-PKM read from its URDF + sidecar.

    SEA data from the sidecar's ``actuators`` block (three of type ``sea``: ``joint`` = the arm
    joint driven through the spring, ``motor_joint``, shared ``stiffness``, ``motor_inertia``,
    ``damping``). Geometry and masses from the URDF, limb k = the k-th SEA: base joint position
    (``joint``'s origin in the x-y plane of its parent), proximal length a (origin of the child
    joint of the arm link), distal length b (origin of the distal link's child frame), link
    masses; the EE mass from the centre of mass of the last limb's distal link. The route this
    feeds (:class:`robot_dynamics.pkm.planar_sea.Planar3RRR`: plant, flatness law, IK) is a
    planar 3RRR with uniform slender links, base joints on a circle and equal limbs: a URDF
    outside that class is refused with :class:`InputError` naming the joint or link, never
    simulated with other numbers than its own."""
    import xml.etree.ElementTree as ET

    seas = [a for a in model.actuators.values() if a.get('type') == 'sea']
    if len(seas) != 3:
        raise InputError(
            f"model '{model.name}': the sea plant needs 3 actuators of type 'sea' in the sidecar, found {len(seas)}"
        )
    names = [n for n, a in model.actuators.items() if a.get('type') == 'sea']
    vals = {
        k: {float(a.get(k, d)) for a in seas}
        for k, d in (('stiffness', 30.0), ('motor_inertia', 0.02), ('damping', 0.0))
    }
    for k, v in vals.items():
        if len(v) != 1:
            odd = next(n for n, a in zip(names, seas) if float(a.get(k, 0)) != float(seas[0].get(k, 0)))
            raise InputError(
                f"{model.loops_source}: actuators.{odd}.{k}: model '{model.name}': the SEAs must share {k} "
                f'(got {sorted(v)}; the planar 3RRR SEA route has one stiffness, motor inertia and damping)'
            )
    root = ET.fromstring(model.urdf_xml)
    joints = {j.get('name'): j for j in root.findall('joint')}
    links = {ln.get('name'): ln for ln in root.findall('link')}

    def vec(el, tag, attr, default='0 0 0'):
        o = el.find(tag)
        return np.array([float(x) for x in ((o.get(attr) if o is not None else None) or default).split()])

    def fail(where, what):
        raise InputError(
            f"model '{model.name}': {where}: {what} (the planar 3RRR SEA route "
            f'needs planar limbs, z-axis joints, uniform slender links of equal '
            f'length and mass, base joints on one circle)'
        )

    def child_joint(link):
        kids = [j for j in joints.values() if j.find('parent').get('link') == link]
        if len(kids) != 1:
            fail(f"link '{link}'", f'{len(kids)} child joints, expected 1')
        return kids[0]

    def inertial(link):
        """(mass, centre of mass (3,), izz) of ``link``."""
        ln = links[link]
        ine = ln.find('inertial')
        if ine is None:
            fail(f"link '{link}'", 'no <inertial>')
        m = float(ine.find('mass').get('value'))
        c = vec(ine, 'origin', 'xyz')
        I = ine.find('inertia')
        izz = float(I.get('izz'))
        return m, c, izz

    base_pts, a_len, b_len, m_prox, m_dist, m_ee = [], [], [], [], [], []
    for k, sea in enumerate(seas):
        jn = sea.get('joint')
        if jn not in joints:
            fail(f'actuator {k + 1}', f"joint '{jn}' is not in the URDF")
        j1 = joints[jn]
        if (
            np.abs(vec(j1, 'axis', 'xyz', '1 0 0') - [0, 0, 1]).max() > 1e-12
            or np.abs(vec(j1, 'origin', 'rpy')).max() > 1e-12
        ):
            fail(f"joint '{jn}'", 'axis must be z and rpy 0')
        o1 = vec(j1, 'origin', 'xyz')
        if abs(o1[2]) > 1e-12:
            fail(f"joint '{jn}'", f'origin z = {o1[2]:g}: the base joints lie in the x-y plane')
        base_pts.append(o1[:2])
        prox = j1.find('child').get('link')
        j2 = child_joint(prox)
        o2 = vec(j2, 'origin', 'xyz')
        if (
            np.abs(o2[1:]).max() > 1e-12
            or np.abs(vec(j2, 'axis', 'xyz', '1 0 0') - [0, 0, 1]).max() > 1e-12
            or np.abs(vec(j2, 'origin', 'rpy')).max() > 1e-12
        ):
            fail(f"joint '{j2.get('name')}'", 'the elbow must sit on the arm link x axis, axis z, rpy 0')
        a = float(o2[0])
        dist = j2.find('child').get('link')
        j3 = child_joint(dist)
        o3 = vec(j3, 'origin', 'xyz')
        if j3.get('type') != 'fixed' or np.abs(o3[1:]).max() > 1e-12:
            fail(f"joint '{j3.get('name')}'", 'the distal tip must be a fixed frame on the link x axis')
        b = float(o3[0])
        mp, cp, Ip = inertial(prox)
        if (
            abs(cp[0] - a / 2) > 1e-9 * a
            or np.abs(cp[1:]).max() > 1e-12
            or abs(Ip - mp * a * a / 12) > 1e-9 * max(Ip, 1e-12)
        ):
            fail(f"link '{prox}'", f'not a uniform rod of length {a:g} (centre of mass {cp.tolist()}, izz {Ip:g})')
        md, cd, Id = inertial(dist)
        if np.abs(cd[1:]).max() > 1e-12:
            fail(f"link '{dist}'", 'centre of mass off the link x axis')
        me = md * (2.0 * cd[0] / b - 1.0)  # point mass at the tip (EE)
        mr = md - me
        Iexp = mr * b * b / 12 + mr * (b / 2 - cd[0]) ** 2 + me * (b - cd[0]) ** 2
        if me < -1e-12 or abs(Id - Iexp) > 1e-9 * max(Id, 1e-12):
            fail(f"link '{dist}'", f'not a uniform rod of length {b:g} plus a tip mass (izz {Id:g}, expected {Iexp:g})')
        a_len.append(a)
        b_len.append(b)
        m_prox.append(mp)
        m_dist.append(mr)
        m_ee.append(max(me, 0.0))
    for name, v in (
        ('proximal length', a_len),
        ('distal length', b_len),
        ('proximal mass', m_prox),
        ('distal mass', m_dist),
    ):
        if max(v) - min(v) > 1e-9 * max(abs(max(v)), 1e-12):
            fail(f'limbs of {[s.get("joint") for s in seas]}', f'unequal {name}: {v}')
    if max(m_ee[:2]) > 1e-12:
        fail(f"actuator 3 ('{seas[2].get('joint')}')", 'the EE mass must sit on the last limb')
    pts = np.array(base_pts)
    r = np.linalg.norm(pts, axis=1)
    if r.max() - r.min() > 1e-9 * r.max():
        fail('base joints', f'not on one circle about the base origin (radii {r.tolist()})')
    ang = tuple(float(np.degrees(np.arctan2(y, x))) for x, y in pts)
    return Planar3RRRParams(
        base_radius=float(r.mean()),
        base_angles_deg=ang,
        a=a_len[0],
        b=b_len[0],
        m_proximal=float(m_prox[0]),
        m_distal=float(m_dist[0]),
        m_ee=float(m_ee[2]),
        stiffness=vals['stiffness'].pop(),
        motor_inertia=vals['motor_inertia'].pop(),
        damping=vals['damping'].pop(),
        gravity=tuple(float(g) for g in model.gravity),
    )
