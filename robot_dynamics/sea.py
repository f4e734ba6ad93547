"""Series-elastic-actuated PKM plant (seed 004): the planar 3RRR SEA-PKM for ``sim_node``.

Registers the plant kind ``'sea'`` (:func:`robot_dynamics.plants.make_plant`). State: EE
position/velocity ``p, pd`` (the link side has 2 DOF; all arm angles follow from the closed-form
IK, so the loops stay closed exactly) and motor angles/velocities ``q_m, qd_m`` (3 each)::

    M_t(p) pdd + b(p, pd) = J_IK^T u,   u = K (q_m - theta_a) + D (qd_m - thetad_a)
    M_m qdd_m = tau - u - D_m qd_m

integrated with RK4 (``tau`` held over the step). ``q``/``qd`` are the model coordinates (9:
``armk_joint, armk_elbow, armk_motor``) as *measured*: with ``quantization`` > 0 [rad] the
positions are rounded to that step, and ``noise`` > 0 adds uniform noise in +-noise [rad] (seed
``seed``); velocities are then the backward difference of the measured positions over ``dt``
(what an encoder-based drive reports). ``true_q``/``true_qd`` are exact.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .errors import InputError
from .pkm.planar_sea import Planar3RRR, Planar3RRRParams, _planar_batch, _solve2, _task_space_1
from .plants import register_plant
from .sim import Plant, StepInfo

__all__ = ['SEAPlant', 'sea_params_from_model', 'sea_limbs', 'warmup']


def sea_limbs(model):
    """[(arm joint, elbow joint, motor joint)] of the three SEA limbs, in the order of the
    sidecar's ``actuators`` of type ``sea`` (``joint``, its link's child joint, ``motor_joint``)."""
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
            raise InputError(f"model '{model.name}': SEA actuator on '{arm}' (motor '{mot}'): needs "
                             f"an arm joint with one child (elbow) joint and a motor joint")
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
        raise InputError(f"model '{model.name}': the sea plant needs 3 actuators of type 'sea' in "
                         f"the sidecar, found {len(seas)}")
    vals = {k: {float(a.get(k, d)) for a in seas} for k, d in
            (('stiffness', 30.0), ('motor_inertia', 0.02), ('damping', 0.0))}
    for k, v in vals.items():
        if len(v) != 1:
            raise InputError(f"model '{model.name}': the SEAs must share {k} (got {sorted(v)})")
    root = ET.fromstring(model.urdf_xml)
    joints = {j.get('name'): j for j in root.findall('joint')}
    links = {ln.get('name'): ln for ln in root.findall('link')}

    def vec(el, tag, attr, default='0 0 0'):
        o = el.find(tag)
        return np.array([float(x) for x in ((o.get(attr) if o is not None else None) or default).split()])

    def fail(where, what):
        raise InputError(f"model '{model.name}': {where}: {what} (the planar 3RRR SEA route "
                         f"needs planar limbs, z-axis joints, uniform slender links of equal "
                         f"length and mass, base joints on one circle)")

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
            fail(f"actuator {k + 1}", f"joint '{jn}' is not in the URDF")
        j1 = joints[jn]
        if np.abs(vec(j1, 'axis', 'xyz', '1 0 0') - [0, 0, 1]).max() > 1e-12 or \
                np.abs(vec(j1, 'origin', 'rpy')).max() > 1e-12:
            fail(f"joint '{jn}'", 'axis must be z and rpy 0')
        o1 = vec(j1, 'origin', 'xyz')
        if abs(o1[2]) > 1e-12:
            fail(f"joint '{jn}'", f'origin z = {o1[2]:g}: the base joints lie in the x-y plane')
        base_pts.append(o1[:2])
        prox = j1.find('child').get('link')
        j2 = child_joint(prox)
        o2 = vec(j2, 'origin', 'xyz')
        if np.abs(o2[1:]).max() > 1e-12 or np.abs(vec(j2, 'axis', 'xyz', '1 0 0') - [0, 0, 1]).max() > 1e-12 \
                or np.abs(vec(j2, 'origin', 'rpy')).max() > 1e-12:
            fail(f"joint '{j2.get('name')}'", 'the elbow must sit on the arm link x axis, axis z, rpy 0')
        a = float(o2[0])
        dist = j2.find('child').get('link')
        j3 = child_joint(dist)
        o3 = vec(j3, 'origin', 'xyz')
        if j3.get('type') != 'fixed' or np.abs(o3[1:]).max() > 1e-12:
            fail(f"joint '{j3.get('name')}'", 'the distal tip must be a fixed frame on the link x axis')
        b = float(o3[0])
        mp, cp, Ip = inertial(prox)
        if abs(cp[0] - a / 2) > 1e-9 * a or np.abs(cp[1:]).max() > 1e-12 or abs(Ip - mp * a * a / 12) > 1e-9 * max(Ip, 1e-12):
            fail(f"link '{prox}'", f'not a uniform rod of length {a:g} (centre of mass {cp.tolist()}, izz {Ip:g})')
        md, cd, Id = inertial(dist)
        if np.abs(cd[1:]).max() > 1e-12:
            fail(f"link '{dist}'", 'centre of mass off the link x axis')
        me = md * (2.0 * cd[0] / b - 1.0)                  # point mass at the tip (EE)
        mr = md - me
        Iexp = mr * b * b / 12 + mr * (b / 2 - cd[0]) ** 2 + me * (b - cd[0]) ** 2
        if me < -1e-12 or abs(Id - Iexp) > 1e-9 * max(Id, 1e-12):
            fail(f"link '{dist}'", f'not a uniform rod of length {b:g} plus a tip mass (izz {Id:g}, '
                                    f'expected {Iexp:g})')
        a_len.append(a); b_len.append(b); m_prox.append(mp); m_dist.append(mr); m_ee.append(max(me, 0.0))
    for name, v in (('proximal length', a_len), ('distal length', b_len), ('proximal mass', m_prox),
                    ('distal mass', m_dist)):
        if max(v) - min(v) > 1e-9 * max(abs(max(v)), 1e-12):
            fail(f'limbs of {[s.get("joint") for s in seas]}', f'unequal {name}: {v}')
    if max(m_ee[:2]) > 1e-12:
        fail(f"actuator 3 ('{seas[2].get('joint')}')", 'the EE mass must sit on the last limb')
    pts = np.array(base_pts)
    r = np.linalg.norm(pts, axis=1)
    if r.max() - r.min() > 1e-9 * r.max():
        fail('base joints', f'not on one circle about the base origin (radii {r.tolist()})')
    ang = tuple(float(np.degrees(np.arctan2(y, x))) for x, y in pts)
    return Planar3RRRParams(base_radius=float(r.mean()), base_angles_deg=ang, a=a_len[0], b=b_len[0],
                            m_proximal=float(m_prox[0]), m_distal=float(m_dist[0]), m_ee=float(m_ee[2]),
                            stiffness=vals['stiffness'].pop(), motor_inertia=vals['motor_inertia'].pop(),
                            damping=vals['damping'].pop(), gravity=tuple(float(g) for g in model.gravity))


@njit(cache=True)
def _sea_derivative(A, a, b, BR, Bp, X, M, g, c, x, tau_m, out, P, TH, W, JIK, st, Mt, bb):
    """Compiled :meth:`SEAPlant.derivative`: out (10,) = d/dt x for x = (p, pd, qm, qdm) (10,),
    motor torques tau_m (3,); c = (K, D, D_m, M_m). P .. bb: work arrays of
    :func:`_task_space_1`. Returns the status (0 = ok; else the reference route raises)."""
    K, D, Dm, Mm = c[0], c[1], c[2], c[3]
    status = _task_space_1(A, a, b, BR, Bp, X, M, g, x[0:2], x[2:4], P, TH, W, JIK, st, Mt, bb)
    if status != 0:
        return status
    pd0, pd1 = x[2], x[3]
    u = np.empty(3)
    for l in range(3):
        Jpd = JIK[0, 0, l, 0] * pd0 + JIK[0, 0, l, 1] * pd1
        u[l] = K * (x[4 + l] - TH[0, 0, l, 0]) + D * (x[7 + l] - Jpd)
    r = np.empty(2)
    for i in range(2):
        r[i] = (JIK[0, 0, 0, i] * u[0] + JIK[0, 0, 1, i] * u[1] + JIK[0, 0, 2, i] * u[2]) - bb[i]
    pdd = np.empty(2)
    if not _solve2(Mt, r, pdd):
        return 4
    out[0], out[1] = pd0, pd1
    out[2], out[3] = pdd[0], pdd[1]
    for l in range(3):
        out[4 + l] = x[7 + l]
        out[7 + l] = (tau_m[l] - u[l] - Dm * x[7 + l]) / Mm
    return 0


@njit(cache=True)
def _sea_rk4(A, a, b, BR, Bp, X, M, g, c, x, tau_m, h, substeps):
    """``substeps`` RK4 steps of size h of :func:`_sea_derivative` (same arithmetic as the
    numpy route :meth:`SEAPlant._step_reference`); x (10,) updated in place. Returns the
    status (0 = ok; x is then unspecified and the caller re-runs the reference route)."""
    P = np.empty((3, 5, 2))
    TH = np.empty((3, 5, 3, 2))
    W = np.empty((3, 3, 2))
    JIK = np.empty((3, 3, 3, 2))
    st = np.empty(3, np.int64)
    Mt = np.empty((2, 2))
    bb = np.empty(2)
    k1 = np.empty(10)
    k2 = np.empty(10)
    k3 = np.empty(10)
    k4 = np.empty(10)
    xt = np.empty(10)
    for _ in range(substeps):
        s = _sea_derivative(A, a, b, BR, Bp, X, M, g, c, x, tau_m, k1, P, TH, W, JIK, st, Mt, bb)
        if s != 0:
            return s
        for i in range(10):
            xt[i] = x[i] + 0.5 * h * k1[i]
        s = _sea_derivative(A, a, b, BR, Bp, X, M, g, c, xt, tau_m, k2, P, TH, W, JIK, st, Mt, bb)
        if s != 0:
            return s
        for i in range(10):
            xt[i] = x[i] + 0.5 * h * k2[i]
        s = _sea_derivative(A, a, b, BR, Bp, X, M, g, c, xt, tau_m, k3, P, TH, W, JIK, st, Mt, bb)
        if s != 0:
            return s
        for i in range(10):
            xt[i] = x[i] + h * k3[i]
        s = _sea_derivative(A, a, b, BR, Bp, X, M, g, c, xt, tau_m, k4, P, TH, W, JIK, st, Mt, bb)
        if s != 0:
            return s
        h6 = h / 6
        for i in range(10):
            x[i] = x[i] + h6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i])
    return 0


@njit(cache=True)
def _sea_ik_rates(A, a, b, x, out):
    """Limb angles and rates of the state x (4+,) = (p, pd, ..): out (2, 3, 2) = theta, thetad (the same
    arithmetic as :func:`_planar_batch` for p, pd). Returns the status (0 = ok)."""
    for l in range(3):
        dx = x[0] - A[l, 0]
        dy = x[1] - A[l, 1]
        r2 = dx * dx + dy * dy
        c2 = (r2 - a * a - b * b) / (2 * a * b)
        if not (c2 > -1.0 + 1e-9 and c2 < 1.0 - 1e-9):
            return 1
        t2 = np.arccos(c2)
        t1 = np.arctan2(dy, dx) - np.arctan2(b * np.sin(t2), a + b * np.cos(t2))
        c1, s1 = np.cos(t1), np.sin(t1)
        c12, s12 = np.cos(t1 + t2), np.sin(t1 + t2)
        J00 = -a * s1 - b * s12
        J10 = a * c1 + b * c12
        J01 = -b * s12
        J11 = b * c12
        det = J00 * J11 - J01 * J10
        if abs(det) < 1e-12:
            return 2
        F00, F01, F10, F11 = J11 / det, -J01 / det, -J10 / det, J00 / det
        r0 = x[2]
        r1 = x[3]
        out[0, l, 0], out[0, l, 1] = t1, t2
        out[1, l, 0] = F00 * r0 + F01 * r1
        out[1, l, 1] = F10 * r0 + F11 * r1
    return 0


class SEAPlant(Plant):
    """RK4 plant of the planar 3RRR SEA-PKM (see module docstring). ``tau``: the motor torques
    (3,) in the order of ``model.actuated`` (the motor joints), or the full (9,) vector."""

    state_attrs = ('t', 'p', 'pd', 'qm', 'qdm', '_prev_meas', '_meas', 'last')

    def __init__(self, model, q0=None, dt=1e-3, params=None, quantization=0.0, noise=0.0,
                 seed=0, substeps=1):
        self.model = model
        self.params = params or sea_params_from_model(model)
        self.pkm = Planar3RRR(self.params)
        self.dt = float(dt)
        self.substeps = int(substeps)
        self.quantization = float(quantization)
        self.noise = float(noise)
        self.rng = np.random.default_rng(seed)
        names = model.joint_names
        limbs = sea_limbs(model)          # (arm, elbow, motor) per SEA, sidecar order
        self.i_arm, self.i_elb, self.i_mot = (np.array([names.index(lb[i]) for lb in limbs])
                                              for i in range(3))
        self.events = []
        pr = self.params
        self._c = np.array([pr.stiffness, pr.damping, pr.motor_damping, pr.motor_inertia])
        self._work = (np.empty((3, 5, 2)), np.empty((3, 5, 3, 2)), np.empty((3, 3, 2)),
                      np.empty((3, 3, 3, 2)), np.empty(3, np.int64), np.empty((2, 2)), np.empty(2))
        self.q0 = model.reference_q() if q0 is None else np.asarray(q0, float)
        self.reset()

    # -------------------------------------------------------------- state <-> model coordinates
    def _p_from_q(self, q):
        th = np.stack([q[self.i_arm], q[self.i_elb]], -1)
        return self.pkm.tip(th)[2]

    def reset(self, q0=None, qd0=None, t0=0.0, p0=None, motor0=None):
        """Reset from model coordinates (EE from limb 3's arm angles; motors from q0) or from
        ``p0`` (2,) with ``motor0`` (3,) (default: spring-relaxed equilibrium at rest)."""
        q0 = self.q0 if q0 is None else np.asarray(q0, float)
        self.t = float(t0)
        self.p = self._p_from_q(q0) if p0 is None else np.asarray(p0, float).copy()
        self.pd = np.zeros(2)
        th = self.pkm.ik(self.p)
        if motor0 is not None:
            self.qm = np.asarray(motor0, float).copy()
        else:
            # motors at rest such that the springs hold the link side static (u = static ID)
            P = np.zeros((5, 2))
            P[0] = self.p
            u = self.pkm.inverse_dynamics_d2(P).u
            self.qm = th[:, 0] + u / self.params.stiffness
        self.qdm = np.zeros(3)
        self._prev_meas = None
        self._measure()
        self.last = self._info(np.zeros(self.model.nq))
        return self.last

    def set_state(self, p, pd, qm, qdm, t=None):
        """Set the exact state (EE p, pd (2,); motor qm, qdm (3,))."""
        self.p, self.pd = np.array(p, float), np.array(pd, float)
        self.qm, self.qdm = np.array(qm, float), np.array(qdm, float)
        if t is not None:
            self.t = float(t)
        self._prev_meas = None
        self._measure()

    def _kernel_args(self):
        k = self.pkm
        return (k.A, self.params.a, self.params.b, k.BR, k.Bp, k.X, k.M, k.g, self._c)

    def derivative(self, x, tau_m):
        """d/dt of x = (p, pd, qm, qdm) (10,) under motor torques tau_m (3,) (compiled,
        :func:`_sea_derivative`; outside the workspace / at a singularity the numpy route
        :meth:`_derivative_reference` raises its error)."""
        x = np.ascontiguousarray(x, dtype=np.float64)
        tau_m = np.ascontiguousarray(tau_m, dtype=np.float64)
        out = np.empty(10)
        w = self._work
        if _sea_derivative(*self._kernel_args(), x, tau_m, out, *w) != 0:
            return self._derivative_reference(x, tau_m)
        return out

    def _derivative_reference(self, x, tau_m):
        """The numpy route of :meth:`derivative` (before the compiled kernel; reference for
        the tests and ``bench/bench_sea.py``)."""
        P = self.params
        p, pd, qm, qdm = x[:2], x[2:4], x[4:7], x[7:10]
        Mt, b, J, th = self.pkm.task_space_dynamics(p, pd, return_theta=True)
        Mt, b, J, th = Mt[0], b[0], J[0], th[0]
        u = P.stiffness * (qm - th[:, 0]) + P.damping * (qdm - J @ pd)
        pdd = np.linalg.solve(Mt, J.T @ u - b)
        qddm = (tau_m - u - P.motor_damping * qdm) / P.motor_inertia
        return np.concatenate([pd, pdd, qdm, qddm])

    def step(self, tau=None, dt=None):
        tau_full = self.full_tau(tau)
        tau_m = tau_full[self.i_mot]
        h = (self.dt if dt is None else float(dt)) / self.substeps
        x = np.concatenate([self.p, self.pd, self.qm, self.qdm])
        x0 = x.copy()
        if _sea_rk4(*self._kernel_args(), x, tau_m, h, self.substeps) != 0:
            return self._step_reference(tau, dt, x0)
        for _ in range(self.substeps):
            self.t += h
        return self._finish_step(x, h, tau_full)

    def _step_reference(self, tau=None, dt=None, x=None):
        """The numpy route of :meth:`step` (RK4 of :meth:`_derivative_reference`)."""
        tau_m = self.full_tau(tau)[self.i_mot]
        h = (self.dt if dt is None else float(dt)) / self.substeps
        if x is None:
            x = np.concatenate([self.p, self.pd, self.qm, self.qdm])
        for _ in range(self.substeps):
            k1 = self._derivative_reference(x, tau_m)
            k2 = self._derivative_reference(x + 0.5 * h * k1, tau_m)
            k3 = self._derivative_reference(x + 0.5 * h * k2, tau_m)
            k4 = self._derivative_reference(x + h * k3, tau_m)
            x = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            self.t += h
        return self._finish_step(x, h, self.full_tau(tau))

    def _finish_step(self, x, h, tau_full):
        self.p, self.pd, self.qm, self.qdm = x[:2], x[2:4], x[4:7], x[7:10]
        self._measure(h * self.substeps)
        self.last = self._info(tau_full)
        return self.last

    # -------------------------------------------------------------- model coordinates
    def _true_state(self):
        """Exact (q, qd) in model coordinates: one planar ID call (IK positions and rates),
        memoised on the state (a step used to evaluate it four times: sensors + StepInfo)."""
        key = (self.p.tobytes(), self.pd.tobytes(), self.qm.tobytes(), self.qdm.tobytes())
        if getattr(self, '_true_key', None) != key:
            q, qd = np.zeros(self.model.nq), np.zeros(self.model.nq)
            th = np.empty((2, 3, 2))
            x = np.concatenate([self.p, self.pd])
            if _sea_ik_rates(self.pkm.A, self.params.a, self.params.b, x, th) != 0:
                P = np.zeros((5, 2))      # the numpy route raises the error
                P[0], P[1] = self.p, self.pd
                th = self.pkm.inverse_dynamics_d2(P).theta
            q[self.i_arm], q[self.i_elb], q[self.i_mot] = th[0, :, 0], th[0, :, 1], self.qm
            qd[self.i_arm], qd[self.i_elb], qd[self.i_mot] = th[1, :, 0], th[1, :, 1], self.qdm
            self._true_key, self._true = key, (q, qd)
        return self._true

    @property
    def true_q(self):
        return self._true_state()[0].copy()

    @property
    def true_qd(self):
        return self._true_state()[1].copy()

    def _measure(self, h=None):
        """Sample the sensors once (after reset/set_state/step): quantised + noisy positions and
        their backward difference over the step ``h`` (exact velocities after a reset or when
        neither quantisation nor noise is set)."""
        q = self.true_q
        if self.quantization > 0 or self.noise > 0:
            if self.quantization > 0:
                q = np.round(q / self.quantization) * self.quantization
            if self.noise > 0:
                q = q + self.rng.uniform(-self.noise, self.noise, q.shape)
            qd = (q - self._prev_meas) / h if (h and self._prev_meas is not None) else self.true_qd
            self._prev_meas = q
        else:
            qd = self.true_qd
        self._meas = (q, qd)

    @property
    def q(self):
        """Measured positions (see the module docstring), sampled once per step."""
        return self._meas[0].copy()

    @property
    def qd(self):
        """Measured velocities: backward difference of the measured positions over the step."""
        return self._meas[1].copy()

    def hold_command(self, damping):
        """sim_node's ``hold: gravity`` for this plant: gravity is normal to the plane (no
        balancing torque needed), so the hold is ``-damping * qd_m`` on the motor joints (measured
        motor velocities): the motors brake and the spring-link oscillation is dissipated
        through them. Returns (nq,)."""
        tau = np.zeros(self.model.nq)
        tau[self.i_mot] = -float(damping) * self.qd[self.i_mot]
        return tau

    def _info(self, tau):
        n = self.model.nq
        z = np.zeros(n)
        return StepInfo(self.t, self.true_q, self.true_qd, z, tau, 0.0, 0, 0, np.inf, 0.0, 0.0,
                        0.0, z, np.zeros(0), 0, True, 0.0, 0.0, 0.0, 1, ())


def _factory(model, q0=None, dt=1e-3, route='auto', **options):
    """Plant kind ``'sea'``: ``route='planar'`` the closed-form planar 3RRR plant
    (:class:`SEAPlant`, robots of its class), ``'general'`` any SEA-PKM through the general
    2nd-order route (:class:`robot_dynamics.sea_general.GeneralSEAPlant`; options
    ``substeps`` only), ``'auto'`` the planar one when the model is in its class, else the
    general one."""
    if route not in ('auto', 'planar', 'general'):
        raise InputError(f"sea plant: route must be auto, planar or general, got {route!r}")
    if route != 'general':
        try:
            params = options.pop('params', None) or sea_params_from_model(model)
            return SEAPlant(model, q0, dt=dt, params=params, **options)
        except InputError:
            if route == 'planar':
                raise
    from .sea_general import GeneralSEAPlant
    bad = sorted(set(options) - {'substeps'})
    if bad:
        raise InputError(f"model '{model.name}': the general SEA plant has no option(s) {bad}")
    return GeneralSEAPlant(model, q0, dt=dt, **options)


register_plant('sea', _factory)


def warmup(model=None):
    """Compile (or load from the numba cache) the kernels of the SEA plant and of the SEA
    flatness controller with the argument types used at run time: the plant step
    (:func:`_sea_rk4`, :func:`_sea_derivative`, :func:`_sea_ik_rates`), the controller step
    (:func:`robot_dynamics.control.flatness_sea._flatness_step`) and the planar ID
    (:meth:`Planar3RRR.inverse_dynamics_d2` with its :func:`_preload_batch`, used by the reset,
    the feed-forward law and trajectory_node's goal path check) and the reference routes.
    ``model``: default ``urdf/planar_3rrr_sea.urdf``. Returns the plant."""
    from .control.flatness_sea import SEAFlatnessController
    from .trajectories import SinSquaredJerk
    if model is None:
        from . import data_path, load_model
        model = load_model(data_path('urdf/planar_3rrr_sea.urdf'))
    plant = SEAPlant(model, model.reference_q(), dt=1e-3)
    plant.step(np.zeros(model.nq))
    plant.step(np.zeros(3), dt=1e-3)
    x = np.concatenate([plant.p, plant.pd, plant.qm, plant.qdm])
    plant.derivative(x, np.zeros(3))
    plant._derivative_reference(x, np.zeros(3))
    plant.hold_command(0.1)
    ctrl = SEAFlatnessController(plant.params)
    yd = SinSquaredJerk(plant.p, plant.p + np.array([0.01, 0.0]), 0.3)(0.1)
    ctrl(plant.p, plant.pd, plant.qm, plant.qdm, yd, np.array([0.5, 0.0, 0.0]))
    ctrl(plant.p, plant.pd, plant.qm, plant.qdm, yd)
    ctrl._call_reference(plant.p, plant.pd, plant.qm, plant.qdm, yd)
    SEAFlatnessController(plant.params, feedforward_only=True)(plant.p, plant.pd, plant.qm,
                                                                plant.qdm, yd)
    ctrl.pkm.ik(np.tile(plant.p, (21, 1)))
    return plant
