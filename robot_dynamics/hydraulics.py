"""Hydraulic cylinders, servo valves and the full third-order hydraulic boom plant (seed 001).

Per cylinder (stroke x in [0, s] m, piston side a, rod side b, SI units, pressures in Pa)::

    V_a = V_a0 + A_a x,  V_b = V_b0 + A_b (s - x)       (dead volumes V_a0, V_b0; paper: 0)
    p_a' = beta / V_a (Q_a - A_a x'),  p_b' = beta / V_b (Q_b + A_b x')          (eq. 80/81)
    Q_a = c_p1 v(p_s - p_a) u S(u) + c_n1 v(p_a - p_r) u S(-u)                   (eq. 82)
    Q_b = -c_n2 v(p_b - p_r) u S(u) - c_p2 v(p_s - p_b) u S(-u)                  (eq. 83)
    v(dp) = sign(dp) sqrt|dp|,  S(u) = [u > 0];   Q: flow INTO the chamber [m^3/s]
    f_p = A_a p_a - A_b p_b  (piston force, pushes the pins apart);  f_c = f_p - f_f(x') + f_end
    f_f(x') = F_c tanh(x'/v_s) + b x'      (odd, monotone: the proof's condition C.13)

The valve coefficient per control edge is ``c = Q_N / (u_max sqrt(dp_N))`` (rated flow Q_N at
dp_N per notch, symmetric edges). ``u`` [V] is saturated to +-u_max; an optional first-order
spool lag ``tau_v`` (plant only, outside the proof). Generalised voltage term (eq. 86 with
dead volumes): ``u_f = A_a Q_a / V_a - A_b Q_b / V_b`` [N/(Pa s)], so
``f_p' = beta (u_f - (A_a^2/V_a + A_b^2/V_b) x')`` (eq. 87); :func:`valve_inverse` is eq. 89.

Limits: the valve input saturates; pressures are held inside [p_min, p_max] (cavitation and
relief: the pressure rate is zeroed when it would leave the band); the stroke ends are stiff
spring-dampers ``f_end`` (k_end, d_end); chamber volumes are floored at 1e-3 A s.

The mechanical part is the Newton-Euler model of :mod:`robot_dynamics.vdc`:
``M_q(q) q'' = Jx * f_c - h(q, q', F_D) + tau_ext`` with ``M_q`` from the Kane assembly, h from
the inverse dynamics at q'' = 0 (eq. 68) and tau_ext the external loads off the tool body.
:class:`HydraulicPlant` integrates the state ``(q, q', p_a, p_b[, u_spool])`` with RK4 (default
1 ms, configurable sub-steps) holding the valve command; it implements
:class:`robot_dynamics.sim.Plant` and registers as plant ``'hydraulic'``
(``make_plant('hydraulic', model, q0, dt)``). External loads (``set_external_wrench``): on the
tool body they enter the recursion as the tool wrench F_D, elsewhere as a generalized force on
the segment coordinates (see :class:`HydraulicPlant`).
"""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from numba import njit

from .errors import RobotDynamicsError
from .plants import register_plant
from .sim import Plant
from .vdc import _body_wrenches, _bwd, _fwd, _mass_matrix, full_q, structure_from_model

__all__ = ['HydraulicError', 'HydraulicParams', 'hydraulic_params_from_model', 'friction',
           'flows', 'voltage_term', 'valve_inverse', 'HydraulicPlant', 'HydraulicStepInfo']

# per-cylinder parameter columns
A_A, A_B, STROKE, VA0, VB0, CP1, CP2, CN1, CN2, UMAX, TAUV, FC, FV, VS, KEND, DEND, PMIN, PMAX = range(18)
NPAR = 18


class HydraulicError(RobotDynamicsError):
    """Invalid hydraulic parameters, or a state outside the model's validity (names the cylinder)."""


class HydraulicParams:
    """Hydraulic data of all cylinders (segment order). ``P`` (ns, 18) float array (columns
    A_A ... PMAX of this module), ``names`` (ns,), ``p_s``, ``p_r``, ``beta`` [Pa]."""

    def __init__(self, names, P, p_s, p_r, beta):
        self.names, self.P = list(names), np.ascontiguousarray(P, dtype=float)
        self.p_s, self.p_r, self.beta = float(p_s), float(p_r), float(beta)
        if not (self.p_s > self.p_r >= 0 and self.beta > 0):
            raise HydraulicError(f'need p_s > p_r >= 0 and beta > 0 (p_s={p_s}, p_r={p_r}, beta={beta})')
        for k, n in enumerate(self.names):
            r = self.P[k]
            if not np.all(np.isfinite(r)):
                raise HydraulicError(f"cylinder '{n}': non-finite parameter")
            if not (r[A_A] > 0 and r[A_B] > 0 and r[STROKE] > 0 and r[UMAX] > 0):
                raise HydraulicError(f"cylinder '{n}': areas, stroke and max input must be > 0")
            if min(r[CP1], r[CP2], r[CN1], r[CN2]) <= 0:
                raise HydraulicError(f"cylinder '{n}': valve coefficients must be > 0")
            if r[FC] < 0 or r[FV] < 0 or r[VS] <= 0:
                raise HydraulicError(f"cylinder '{n}': friction must be monotone (coulomb, "
                                     'viscous >= 0, velocity_scale > 0)')
            if r[VA0] < 0 or r[VB0] < 0 or r[TAUV] < 0:
                raise HydraulicError(f"cylinder '{n}': dead volumes and spool lag must be >= 0")

    def copy(self):
        return HydraulicParams(self.names, self.P.copy(), self.p_s, self.p_r, self.beta)


def _num(a, key, name, default=None):
    v = a.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise HydraulicError(f"actuators.{name}.{key}: expected a finite number, got {v!r}")
    return float(v)


def hydraulic_params_from_model(model, structure=None):
    """Read the cylinder/valve/friction data of the sidecar ``actuators`` block (segment order)
    and the ``hydraulic_supply`` entry (supply_pressure, return_pressure, bulk_modulus)."""
    st = structure or structure_from_model(model)
    sup = [a for a in model.actuators.values() if a.get('type') == 'hydraulic_supply']
    if len(sup) != 1:
        raise HydraulicError(f'{model.loops_source}: actuators: need exactly one hydraulic_supply entry')
    sup = sup[0]
    P = np.zeros((st.ns, NPAR))
    for k, s in enumerate(st.segments):
        a, n = s.actuator, s.name
        bore, rod = _num(a, 'bore', n), _num(a, 'rod', n)
        if not bore > rod > 0:
            raise HydraulicError(f'actuators.{n}: need bore > rod > 0')
        P[k, A_A] = math.pi / 4 * bore ** 2
        P[k, A_B] = math.pi / 4 * (bore ** 2 - rod ** 2)
        P[k, STROKE] = _num(a, 'stroke', n)
        P[k, VA0] = _num(a, 'dead_volume_a', n, 0.0)
        P[k, VB0] = _num(a, 'dead_volume_b', n, 0.0)
        v = a.get('valve')
        if not isinstance(v, dict):
            raise HydraulicError(f'actuators.{n}.valve: mapping required')
        umax = _num(v, 'max_input', n + '.valve', 10.0)
        c = _num(v, 'nominal_flow', n + '.valve') / (umax * math.sqrt(_num(v, 'nominal_pressure_drop', n + '.valve')))
        P[k, CP1:CN2 + 1] = c
        P[k, UMAX] = umax
        P[k, TAUV] = _num(v, 'spool_time_constant', n + '.valve', 0.0)
        f = a.get('friction', {}) or {}
        P[k, FC] = _num(f, 'coulomb', n + '.friction', 0.0)
        P[k, FV] = _num(f, 'viscous', n + '.friction', 0.0)
        P[k, VS] = _num(f, 'velocity_scale', n + '.friction', 0.005)
        P[k, KEND] = _num(a, 'end_stiffness', n, 1e8)
        P[k, DEND] = _num(a, 'end_damping', n, 1e5)
    p_s = _num(sup, 'supply_pressure', 'supply')
    P[:, PMIN] = _num(sup, 'min_pressure', 'supply', 0.0)
    P[:, PMAX] = _num(sup, 'max_pressure', 'supply', 1.2 * p_s)
    return HydraulicParams([s.name for s in st.segments], P, p_s, _num(sup, 'return_pressure', 'supply'),
                           _num(sup, 'bulk_modulus', 'supply'))


# ----------------------------------------------------------------------------- scalar laws
@njit(cache=True)
def _v(dp):
    return math.copysign(math.sqrt(abs(dp)), dp)


@njit(cache=True)
def friction(P, xd):
    """f_f(x') [N] = F_c tanh(x'/v_s) + b x' (P: one row of the parameter array)."""
    return P[FC] * math.tanh(xd / P[VS]) + P[FV] * xd


@njit(cache=True)
def flows(P, u, pa, pb, ps, pr):
    """(Q_a, Q_b) [m^3/s] into the chambers for valve input u [V] (eq. 82/83, no saturation)."""
    if u > 0:
        return P[CP1] * _v(ps - pa) * u, -P[CN2] * _v(pb - pr) * u
    return P[CN1] * _v(pa - pr) * u, -P[CP2] * _v(ps - pb) * u


@njit(cache=True)
def _volumes(P, x):
    s = P[STROKE]
    va = max(P[VA0] + P[A_A] * x, 1e-3 * P[A_A] * s)
    vb = max(P[VB0] + P[A_B] * (s - x), 1e-3 * P[A_B] * s)
    return va, vb


@njit(cache=True)
def voltage_term(P, u, x, pa, pb, ps, pr):
    """u_f = A_a Q_a / V_a - A_b Q_b / V_b (eq. 86 with dead volumes)."""
    qa, qb = flows(P, u, pa, pb, ps, pr)
    va, vb = _volumes(P, x)
    return P[A_A] * qa / va - P[A_B] * qb / vb


@njit(cache=True)
def valve_inverse(P, uf, x, pa, pb, ps, pr, dp_min):
    """Valve input u [V] with voltage_term(u) = uf (eq. 89); the square-root arguments are
    floored at ``dp_min`` [Pa] (guard outside Assumption 5). Not saturated."""
    va, vb = _volumes(P, x)
    if uf > 0:
        den = (P[A_A] * P[CP1] * math.sqrt(max(ps - pa, dp_min)) / va
               + P[A_B] * P[CN2] * math.sqrt(max(pb - pr, dp_min)) / vb)
    else:
        den = (P[A_B] * P[CP2] * math.sqrt(max(ps - pb, dp_min)) / vb
               + P[A_A] * P[CN1] * math.sqrt(max(pa - pr, dp_min)) / va)
    return uf / den


# ----------------------------------------------------------------------------- plant
@njit(cache=True)
def _deriv(kind, geo, RE, rE, Rc1, pc1, Mb, mb, cb, Ib, g, H, ps, pr, beta, X, ucmd, FD, eps,
           dX, aux):
    """State derivative. X = [q, qd, pa, pb, us] (5 ns). aux (ns, 6) = [x, xd, fp, fc, qa, qb].
    Returns 0 or (segment + 1) at a toggle point. (No generalized external force: see
    :func:`_deriv_ext`.)"""
    return _deriv_ext(kind, geo, RE, rE, Rc1, pc1, Mb, mb, cb, Ib, g, H, ps, pr, beta, X, ucmd,
                      FD, np.zeros(kind.shape[0]), eps, dX, aux)


@njit(cache=True)
def _deriv_ext(kind, geo, RE, rE, Rc1, pc1, Mb, mb, cb, Ib, g, H, ps, pr, beta, X, ucmd, FD,
               tau_ext, eps, dX, aux):
    """:func:`_deriv` with a generalized external force ``tau_ext`` (ns,) on the segment
    coordinates (added to the right-hand side ``Jx f_c - h(q, q', F_D)``)."""
    ns = kind.shape[0]
    q = X[0:ns].copy()
    qd = X[ns:2 * ns].copy()
    z = np.zeros(ns)
    z6 = np.zeros(6)
    V = np.zeros((ns, 6, 6))
    Vd = np.zeros((ns, 6, 6))
    Rw = np.zeros((ns, 6, 3, 3))
    pw = np.zeros((ns, 6, 3))
    clo = np.zeros((ns, 12))
    Fs = np.zeros((ns, 4, 6))
    fc = np.zeros(ns)
    FBc = np.zeros((ns, 6))
    FE = np.zeros((ns, 6))
    K = np.zeros((ns, 4, 6, 6))
    _fwd(kind, geo, RE, rE, Rc1, pc1, q, qd, qd, z, z6, z6, V, Vd, Rw, pw, clo)
    _body_wrenches(Mb, mb, cb, Ib, K, g, V, Vd, V, Rw, False, Fs)
    bad = _bwd(kind, geo, RE, rE, q, clo, Fs, FD, fc, FBc, FE, eps)
    Mq = np.zeros((ns, ns))
    _mass_matrix(kind, geo, RE, rE, Rc1, pc1, Mb, q, Mq)
    rhs = np.zeros(ns)
    for k in range(ns):
        P = H[k]
        Jx = clo[k, 3]
        x = clo[k, 0] - geo[k, 2] if kind[k] == 0 else q[k]
        xd = Jx * qd[k]
        pa = X[2 * ns + k]
        pb = X[3 * ns + k]
        fp = P[A_A] * pa - P[A_B] * pb
        fend = 0.0
        if x < 0.0:
            fend = -P[KEND] * x - P[DEND] * min(xd, 0.0)
        elif x > P[STROKE]:
            fend = -P[KEND] * (x - P[STROKE]) - P[DEND] * max(xd, 0.0)
        fcyl = fp - friction(P, xd) + fend
        rhs[k] = Jx * fcyl - Jx * fc[k] + tau_ext[k]
        # valve + chambers
        umax = P[UMAX]
        uc = min(max(ucmd[k], -umax), umax)
        if P[TAUV] > 0:
            u = X[4 * ns + k]
            dX[4 * ns + k] = (uc - u) / P[TAUV]
        else:
            u = uc
            dX[4 * ns + k] = 0.0
        qa, qb = flows(P, u, pa, pb, ps, pr)
        va, vb = _volumes(P, x)
        dpa = beta / va * (qa - P[A_A] * xd)
        dpb = beta / vb * (qb + P[A_B] * xd)
        if (pa >= P[PMAX] and dpa > 0) or (pa <= P[PMIN] and dpa < 0):
            dpa = 0.0
        if (pb >= P[PMAX] and dpb > 0) or (pb <= P[PMIN] and dpb < 0):
            dpb = 0.0
        dX[2 * ns + k] = dpa
        dX[3 * ns + k] = dpb
        aux[k, 0], aux[k, 1], aux[k, 2], aux[k, 3], aux[k, 4], aux[k, 5] = x, xd, fp, fcyl, qa, qb
    qdd = np.linalg.solve(Mq, rhs)
    for k in range(ns):
        dX[k] = qd[k]
        dX[ns + k] = qdd[k]
    return bad


@njit(cache=True)
def _rk4(kind, geo, RE, rE, Rc1, pc1, Mb, mb, cb, Ib, g, H, ps, pr, beta, X, ucmd, FD, tau_ext,
         eps, h, nsub, aux):
    n = X.shape[0]
    k1 = np.zeros(n)
    k2 = np.zeros(n)
    k3 = np.zeros(n)
    k4 = np.zeros(n)
    bad = 0
    for _ in range(nsub):
        b = _deriv_ext(kind, geo, RE, rE, Rc1, pc1, Mb, mb, cb, Ib, g, H, ps, pr, beta, X, ucmd, FD, tau_ext, eps, k1, aux)
        b += _deriv_ext(kind, geo, RE, rE, Rc1, pc1, Mb, mb, cb, Ib, g, H, ps, pr, beta, X + 0.5 * h * k1, ucmd, FD, tau_ext, eps, k2, aux)
        b += _deriv_ext(kind, geo, RE, rE, Rc1, pc1, Mb, mb, cb, Ib, g, H, ps, pr, beta, X + 0.5 * h * k2, ucmd, FD, tau_ext, eps, k3, aux)
        b += _deriv_ext(kind, geo, RE, rE, Rc1, pc1, Mb, mb, cb, Ib, g, H, ps, pr, beta, X + h * k3, ucmd, FD, tau_ext, eps, k4, aux)
        if b and not bad:
            bad = b
        for i in range(n):
            X[i] += h / 6.0 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i])
    # aux at the end state
    _deriv_ext(kind, geo, RE, rE, Rc1, pc1, Mb, mb, cb, Ib, g, H, ps, pr, beta, X, ucmd, FD, tau_ext, eps, k1, aux)
    return bad


HydraulicStepInfo = namedtuple('HydraulicStepInfo', 't q qd x xd pa pb fp u events')
HydraulicStepInfo.__doc__ = """After a step: t [s]; q, qd (model.nq,) URDF joints (closure applied);
x, xd (ns,) strokes [m, m/s]; pa, pb (ns,) [Pa]; fp (ns,) piston forces [N]; u (ns,) applied
(saturated) valve inputs [V]; events: tuple of strings (limit hits, toggle points)."""


_Ev = namedtuple('Ev', 't kind message')


class HydraulicPlant(Plant):
    """Hydraulic parallel-serial boom plant (see the module doc).

    ``HydraulicPlant(model, q0=None, dt=1e-3, substeps=1, FD=None, p_b0=40e5, params=None,
    structure=None)``: ``q0`` URDF joint vector (default the sidecar reference) or segment
    coordinates (ns,); initial pressures: ``p_b = p_b0`` and ``p_a`` from static equilibrium
    (``f_p = f_c`` at rest). ``step(tau, dt)``: ``tau`` = valve voltages of the actuated joints
    (model.actuated order, one per cylinder) or the full (nq,) vector (values at the actuated
    indices are used); None = valves closed. The plant raises :class:`HydraulicError` if the
    state becomes non-finite.

    ``FD`` (constructor): constant wrench the manipulator exerts **on the environment** at the
    tool frame D, in D (the VDC convention of :mod:`robot_dynamics.vdc`).

    External loads, :meth:`~robot_dynamics.sim.Plant.set_external_wrench` (wrench exerted **by
    the environment on the robot**, any URDF frame, references 'local' | 'local_world_aligned'
    | 'world'). Two routes, both held over a step (ZOH):

    * a frame on the tool's rigid body (same parent joint as the tool frame D, e.g. ``tool``,
      ``jib``): the wrench is moved to D (``F_D = U(^D R_f, ^D r_Df) F_f``) and enters the
      Newton-Euler recursion as the tool wrench: ``F_D,eff = FD - F_D`` (the manipulator
      exerts minus the load on its environment). A load given in the frame's own axes
      ('local') is thus exact (it turns with the tool); a world-axes load is rotated into D at
      the start of each step.
    * any other frame (a link of a segment or a cylinder): the generalized force on the segment
      coordinates ``tau_s = G^T J_f(Q)^T w`` (``G = dQ/dq_s`` from the loop closure
      :func:`~robot_dynamics.vdc.full_q`, ``J_f`` our URDF frame Jacobian) is added to the
      right-hand side, evaluated at the start of the step.

    :meth:`applied_loads` returns ``(F_D,eff, tau_s)`` of the last step. :meth:`reset` puts the
    pressures in static equilibrium with the loads applied at that time.
    """

    state_attrs = ('t', 'X', 'u', '_FD_eff', '_tau_ext', 'aux', 'last')

    supports_external_wrench = True

    def __init__(self, model, q0=None, dt=1e-3, substeps=1, FD=None, p_b0=40e5, params=None,
                 structure=None):
        self.model = model
        self.st = st = structure or structure_from_model(model)
        self.hp = params or hydraulic_params_from_model(model, st)
        self.ns = ns = st.ns
        self.dt, self.substeps = float(dt), int(substeps)
        if not (self.dt > 0 and self.substeps >= 1):
            raise HydraulicError('need dt > 0 and substeps >= 1')
        self.FD = np.zeros(6) if FD is None else np.ascontiguousarray(FD, dtype=float)
        self.p_b0 = float(p_b0)
        act = {}
        for k, s in enumerate(st.segments):
            act[s.rod_joint if s.kind == 'revolute' else s.joint] = k
        missing = [j for j in model.actuated if j not in act]
        if missing or len(model.actuated) != ns:
            raise HydraulicError(f'sidecar actuated joints {model.actuated} must be the rod/prismatic '
                                 f'joints of the cylinders {list(act)}')
        self.act_seg = np.array([act[j] for j in model.actuated])
        # frames rigidly attached to the tool frame D (same parent joint): their loads use FD
        self._ext = {}
        self._tool_fidx = model.frame_index(st.tool_frame)
        jD = int(model.frame_parent[self._tool_fidx])
        RD, pD = model.frame_R[self._tool_fidx], model.frame_p[self._tool_fidx]
        self._tool_body = {}
        for f, name in enumerate(model.frame_names):
            if jD >= 0 and int(model.frame_parent[f]) == jD:
                # ^D R_f, ^D r_Df (constant: same rigid body)
                self._tool_body[name] = (RD.T @ model.frame_R[f], RD.T @ (model.frame_p[f] - pD))
        self._FD_eff, self._tau_ext = self.FD.copy(), np.zeros(ns)
        self.events = []
        self.X = np.zeros(5 * ns)
        self.aux = np.zeros((ns, 6))
        self.u = np.zeros(ns)
        self._q0 = q0
        self.reset(q0)

    def _seg_q(self, q0):
        from .vdc import segment_q
        if q0 is None:
            q0 = self.model.reference_q()
        q0 = np.asarray(q0, float)
        if q0.shape == (self.ns,):
            return q0.copy()
        if q0.shape != (self.model.nq,):
            raise HydraulicError(f'q0 must have shape ({self.ns},) or ({self.model.nq},)')
        return segment_q(self.st, q0)[0]

    def reset(self, q0=None, qd0=None, t0=0.0, pa0=None, pb0=None):
        """Reset to segment (or URDF) coordinates q0 at rest (or qd0 (ns,)), pressures static."""
        ns, st, hp = self.ns, self.st, self.hp
        q = self._seg_q(self._q0 if q0 is None else q0)
        st.check_q(q)
        qd = np.zeros(ns) if qd0 is None else np.asarray(qd0, float)
        FD, tau_ext = self._loads(q)
        r = st.inverse_dynamics(q, qd, np.zeros(ns), FD)
        jx = st.jx(q)
        xd = jx * qd
        pb = np.full(ns, self.p_b0) if pb0 is None else np.asarray(pb0, float)
        # Jx fc = tau(q, qd, FD) - tau_ext  (generalized external force of non-tool loads)
        fc = r['fc'] - tau_ext / jx
        fp = np.array([fc[k] + friction(hp.P[k], xd[k]) for k in range(ns)])
        pa = (fp + hp.P[:, A_B] * pb) / hp.P[:, A_A] if pa0 is None else np.asarray(pa0, float)
        self.X[:] = 0.0
        self.X[:ns], self.X[ns:2 * ns], self.X[2 * ns:3 * ns], self.X[3 * ns:4 * ns] = q, qd, pa, pb
        self.t = float(t0)
        self.u = np.zeros(ns)
        self._FD_eff, self._tau_ext = FD, tau_ext
        self._aux()
        self.last = self._info(())
        return self.last

    # ------------------------------------------------------------------ external loads
    def _loads(self, qs=None, generic=False):
        """(F_D,eff (6,), tau_s (ns,)) of the external loads at segment coordinates qs (default:
        the current state). ``generic=True`` maps every load (tool body included) by the
        Jacobian route (a cross-check of the two routes; see the class doc)."""
        from .kinematics import frame_placement
        from .sim import external_generalized_force, wrench_to_local
        FD = self.FD.copy()
        tau = np.zeros(self.ns)
        if not self._ext:
            return FD, tau
        qs = self.qs if qs is None else np.asarray(qs, float)
        Q = None
        other = {}
        for f, (w, ref) in self._ext.items():
            if f not in self._tool_body or generic:
                other[f] = (w, ref)
                continue
            RDf, rDf = self._tool_body[f]
            if ref == 'local':
                Ff = w
            else:
                if Q is None:
                    Q = full_q(self.st, qs)[0]
                T = frame_placement(self.model, Q, f)
                Ff = wrench_to_local(T[:3, :3], T[:3, 3], w, ref)
            fD = RDf @ Ff[:3]
            FD[:3] -= fD
            FD[3:] -= np.cross(rDf, fD) + RDf @ Ff[3:]
        if other:
            ns = self.ns
            Q = full_q(self.st, qs)[0]
            G = np.stack([full_q(self.st, qs, np.eye(ns)[k])[1] for k in range(ns)], axis=1)
            tau += G.T @ external_generalized_force(self.model, Q, other)
        return FD, tau

    def applied_loads(self):
        """(F_D,eff (6,), tau_s (ns,)) held over the last step (see the class doc)."""
        return self._FD_eff.copy(), self._tau_ext.copy()

    def _aux(self):
        st, hp = self.st, self.hp
        dX = np.zeros_like(self.X)
        _deriv_ext(st.kind, st.geo, st.RE, st.rE, st.Rc1, st.pc1, st.Mb, st.mb, st.cb, st.Ib,
                   st.gravity, hp.P, hp.p_s, hp.p_r, hp.beta, self.X, self.u, self._FD_eff,
                   self._tau_ext, st.eps, dX, self.aux)
        self.dX = dX

    @property
    def qs(self):
        """Segment coordinates (ns,)."""
        return self.X[:self.ns].copy()

    @property
    def qds(self):
        return self.X[self.ns:2 * self.ns].copy()

    @property
    def pa(self):
        return self.X[2 * self.ns:3 * self.ns].copy()

    @property
    def pb(self):
        return self.X[3 * self.ns:4 * self.ns].copy()

    @property
    def q(self):
        return full_q(self.st, self.qs, self.qds)[0]

    @property
    def qd(self):
        return full_q(self.st, self.qs, self.qds)[1]

    def _full_q(self, qs, qds):
        """:func:`~robot_dynamics.vdc.full_q` (q, qd) without the per-call name look-ups."""
        m = self.model
        lut = self.__dict__.get('_fq')
        if lut is None:
            lut = self._fq = [(k, s, m.joint_index(s.joint),
                               m.joint_index(s.case_joint) if s.kind == 'revolute' else -1,
                               m.joint_index(s.rod_joint) if s.kind == 'revolute' else -1)
                              for k, s in enumerate(self.st.segments)]
        Q, Qd = np.zeros(m.nq), np.zeros(m.nq)
        for k, s, J, C, P in lut:
            q, qd = float(qs[k]), float(qds[k])
            Q[J], Qd[J] = q - s.offset, qd
            if C >= 0:
                L, L1 = s.L, s.L1
                sn, co = math.sin(q), math.cos(q)
                c = math.sqrt(L * L + L1 * L1 + 2 * L * L1 * co)
                k1 = L1 * (L1 + L * co) / (c * c)
                Q[C], Qd[C] = math.atan2(L1 * sn, L + L1 * co) - s.case_offset, k1 * qd
                Q[P], Qd[P] = c - s.x0, (-L * L1 * sn / c) * qd
        return Q, Qd

    def _info(self, events):
        ns = self.ns
        Q, Qd = self._full_q(self.X[:ns], self.X[ns:2 * ns])
        return HydraulicStepInfo(self.t, Q, Qd, self.aux[:, 0].copy(), self.aux[:, 1].copy(),
                                 self.pa, self.pb, self.aux[:, 2].copy(),
                                 np.clip(self.u, -self.hp.P[:, UMAX], self.hp.P[:, UMAX]), tuple(events))

    command_interface = 'valve_voltage'

    def command_limits(self):
        """Bound (nq,) on the command of each joint: the valve saturation ``max_input`` [V] of
        each actuated joint's cylinder (the joints without a valve: unbounded)."""
        lim = np.full(self.model.nq, np.inf)
        lim[self.model.actuated_indices] = self.hp.P[self.act_seg, UMAX]
        return lim

    def valve_input(self, tau):
        """Map tau (actuated (p,) or full (nq,)) to the per-segment valve voltages (ns,)."""
        if tau is None:
            return np.zeros(self.ns)
        t = np.asarray(tau, float).reshape(-1)
        if t.shape == (self.ns,) and self.ns != self.model.nq and np.isfinite(t).all():
            u = np.zeros(self.ns)
            u[self.act_seg] = t
            return u
        if t.shape == (self.model.nq,):
            t = t[self.model.actuated_indices]
        t = self.full_tau(t)[self.model.actuated_indices]
        u = np.zeros(self.ns)
        u[self.act_seg] = t
        return u

    def step(self, tau=None, dt=None):
        """Advance one period (dt, default self.dt) with the valve inputs held (ZOH)."""
        st, hp = self.st, self.hp
        h = (self.dt if dt is None else float(dt)) / self.substeps
        self.u = self.valve_input(tau)
        self._FD_eff, self._tau_ext = self._loads()
        bad = _rk4(st.kind, st.geo, st.RE, st.rE, st.Rc1, st.pc1, st.Mb, st.mb, st.cb, st.Ib,
                   st.gravity, hp.P, hp.p_s, hp.p_r, hp.beta, self.X, self.u, self._FD_eff,
                   self._tau_ext, st.eps, h, self.substeps, self.aux)
        self.t += h * self.substeps
        if not np.all(np.isfinite(self.X)):
            raise HydraulicError(f'hydraulic plant state became non-finite at t = {self.t:.4f} s')
        ev = []
        if bad:
            ev.append(f"toggle point of segment '{st.segments[bad - 1].name}'")
        x = self.aux[:, 0]
        for k, n in enumerate(hp.names):
            if x[k] < 0 or x[k] > hp.P[k, STROKE]:
                ev.append(f"cylinder '{n}' at its end stop (x = {x[k]:.4f} m)")
        events = tuple(_Ev(self.t, 'hydraulic_limit', m) for m in ev)
        self.events.extend(events)
        self.last = self._info(events)
        return self.last

    def extra_states(self):
        """Cylinder states for sim_node: dict ``names`` (ns,), ``x``, ``xd`` [m, m/s],
        ``fp`` [N], ``pa``, ``pb`` [Pa], ``u`` [V] (applied, saturated)."""
        i = self.last
        return dict(names=list(self.hp.names), x=i.x, xd=i.xd, fp=i.fp, pa=i.pa, pb=i.pb, u=i.u)


def _factory(model, q0=None, dt=1e-3, **options):
    return HydraulicPlant(model, q0, dt=dt, **options)


register_plant('hydraulic', _factory)


def warmup(model=None):
    """Compile (or load from the numba cache) the kernels of the hydraulic boom with the
    argument types used at run time: the plant step (:func:`_rk4` and the recursion kernels of
    :mod:`robot_dynamics.vdc`), the VDC controller step and the compiled task reference
    (:func:`robot_dynamics.vdc._task_reference`). ``model``: default
    ``urdf/hydraulic_boom.urdf``."""
    from .control.vdc import TaskReference, VDCController, quintic_legs
    if model is None:
        from . import data_path, load_model
        model = load_model(data_path('urdf/hydraulic_boom.urdf'))
    pl = HydraulicPlant(model)
    st = pl.st
    q0 = pl.qs
    ctrl = VDCController(st, pl.hp)
    ref = np.array([q0, np.zeros(pl.ns), np.zeros(pl.ns)])
    pl.step(ctrl.step(pl.qs, pl.qds, pl.pa, pl.pb, ref))
    if pl.ns >= 1 and pl.ns <= 3:
        axes = [0, 2, 1][:pl.ns]
        p0 = st.tool_pose(q0)[1][axes]
        TaskReference(st, lambda t: quintic_legs([p0, p0], [1.0], t), axes, q0)(0.5)
