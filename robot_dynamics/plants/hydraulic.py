"""The full third-order hydraulic boom plant (Petrović & Mattila).

The mechanical part is the Newton-Euler model of :mod:`robot_dynamics.algorithms.vdc`:
``M_q(q) q'' = Jx * f_c - h(q, q', F_D) + tau_ext`` with ``M_q`` from the Kane assembly, h from
the inverse dynamics at q'' = 0 (eq. 68) and tau_ext the external loads off the tool body.
:class:`HydraulicPlant` integrates the state ``(q, q', p_a, p_b[, u_spool])`` with RK4 (default
1 ms, configurable sub-steps) holding the valve command; it implements
:class:`robot_dynamics.plants.rigid.Plant` and registers as plant ``'hydraulic'``
(``make_plant('hydraulic', model, q0, dt)``). External loads (``set_external_wrench``): on the
tool body they enter the recursion as the tool wrench F_D, elsewhere as a generalized force on
the segment coordinates (see :class:`HydraulicPlant`).
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from numba import njit

from robot_dynamics.plants.registry import register_plant
from robot_dynamics.plants.rigid import Plant
from robot_dynamics.algorithms.vdc import (
    _body_wrenches,
    _bwd,
    _fwd,
    _mass_matrix,
    full_q,
    fwd_buffers,
    structure_from_model,
)
from robot_dynamics.algorithms.hydraulics import (  # noqa: F401
    chamber_rates,
    cylinder_force,
    A_A,
    A_B,
    STROKE,
    VA0,
    VB0,
    CP1,
    CP2,
    CN1,
    CN2,
    UMAX,
    TAUV,
    FC,
    FV,
    VS,
    KEND,
    DEND,
    PMIN,
    PMAX,
    NPAR,
    HydraulicError,
    HydraulicParams,
    _num,
    hydraulic_params_from_model,
    _v,
    friction,
    flows,
    chamber_volumes,
    voltage_term,
    valve_inverse,
)

__all__ = ['HydraulicPlant', 'HydraulicStepInfo']


# ----------------------------------------------------------------------------- plant
@njit(cache=True)
def _deriv(kind, geo, RE, rE, Rc1, pc1, Mb, mb, cb, Ib, g, H, ps, pr, beta, X, ucmd, FD, eps, dX, aux):
    """State derivative. X = [q, qd, pa, pb, us] (5 ns). aux (ns, 6) = [x, xd, fp, fc, qa, qb].
    Returns 0 or (segment + 1) at a toggle point. (No generalized external force: see
    :func:`_deriv_ext`.)"""
    return _deriv_ext(
        kind,
        geo,
        RE,
        rE,
        Rc1,
        pc1,
        Mb,
        mb,
        cb,
        Ib,
        g,
        H,
        ps,
        pr,
        beta,
        X,
        ucmd,
        FD,
        np.zeros(kind.shape[0]),
        eps,
        dX,
        aux,
    )


@njit(cache=True)
def _deriv_ext(kind, geo, RE, rE, Rc1, pc1, Mb, mb, cb, Ib, g, H, ps, pr, beta, X, ucmd, FD, tau_ext, eps, dX, aux):
    """:func:`_deriv` with a generalized external force ``tau_ext`` (ns,) on the segment
    coordinates (added to the right-hand side ``Jx f_c - h(q, q', F_D)``)."""
    ns = kind.shape[0]
    q = X[0:ns].copy()
    qd = X[ns : 2 * ns].copy()
    z = np.zeros(ns)
    z6 = np.zeros(6)
    V, Vd, Rw, pw, clo = fwd_buffers(ns)
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
        fp, fcyl = cylinder_force(P, x, xd, pa, pb)
        rhs[k] = Jx * fcyl - Jx * fc[k] + tau_ext[k]
        # valve + chambers
        dpa, dpb, dX[4 * ns + k], qa, qb = chamber_rates(P, ucmd[k], X[4 * ns + k], pa, pb, x, xd, ps, pr, beta)
        dX[2 * ns + k] = dpa
        dX[3 * ns + k] = dpb
        aux[k, 0], aux[k, 1], aux[k, 2], aux[k, 3], aux[k, 4], aux[k, 5] = x, xd, fp, fcyl, qa, qb
    qdd = np.linalg.solve(Mq, rhs)
    for k in range(ns):
        dX[k] = qd[k]
        dX[ns + k] = qdd[k]
    return bad


@njit(cache=True)
def _rk4(kind, geo, RE, rE, Rc1, pc1, Mb, mb, cb, Ib, g, H, ps, pr, beta, X, ucmd, FD, tau_ext, eps, h, nsub, aux):
    n = X.shape[0]
    K = np.zeros((4, n))  # the stages' derivatives k1 .. k4
    Xs = np.empty(n)
    bad = 0
    for _ in range(nsub):
        b = 0
        for s in range(4):
            if s == 0:
                Xs[:] = X
            else:
                Xs[:] = X + (h if s == 3 else 0.5 * h) * K[s - 1]
            b += _deriv_ext(
                kind, geo, RE, rE, Rc1, pc1, Mb, mb, cb, Ib, g, H, ps, pr, beta, Xs, ucmd, FD, tau_ext, eps, K[s], aux
            )
        if b and not bad:
            bad = b
        for i in range(n):
            X[i] += h / 6.0 * (K[0, i] + 2 * K[1, i] + 2 * K[2, i] + K[3, i])
    # aux at the end state
    _deriv_ext(kind, geo, RE, rE, Rc1, pc1, Mb, mb, cb, Ib, g, H, ps, pr, beta, X, ucmd, FD, tau_ext, eps, K[0], aux)
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
    tool frame D, in D (the VDC convention of :mod:`robot_dynamics.algorithms.vdc`).

    External loads, :meth:`~robot_dynamics.plants.rigid.Plant.set_external_wrench` (wrench exerted **by
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
      :func:`~robot_dynamics.algorithms.vdc.full_q`, ``J_f`` our URDF frame Jacobian) is added to the
      right-hand side, evaluated at the start of the step.

    :meth:`applied_loads` returns ``(F_D,eff, tau_s)`` of the last step. :meth:`reset` puts the
    pressures in static equilibrium with the loads applied at that time.
    """

    state_attrs = ('t', 'X', 'u', '_FD_eff', '_tau_ext', 'aux', 'last')

    supports_external_wrench = True

    def __init__(self, model, q0=None, dt=1e-3, substeps=1, FD=None, p_b0=40e5, params=None, structure=None):
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
            raise HydraulicError(
                f'sidecar actuated joints {model.actuated} must be the rod/prismatic '
                f'joints of the cylinders {list(act)}'
            )
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
        from robot_dynamics.algorithms.vdc import segment_q

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
        self.X[:ns], self.X[ns : 2 * ns], self.X[2 * ns : 3 * ns], self.X[3 * ns : 4 * ns] = q, qd, pa, pb
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
        from robot_dynamics.algorithms.kinematics import frame_placement
        from robot_dynamics.plants.rigid import external_generalized_force, wrench_to_local

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
        _deriv_ext(*st.chain, *st.inertia, *hp.fluid, self.X, self.u, self._FD_eff, self._tau_ext, st.eps, dX, self.aux)
        self.dX = dX

    @property
    def qs(self):
        """Segment coordinates (ns,)."""
        return self.X[: self.ns].copy()

    @property
    def qds(self):
        return self.X[self.ns : 2 * self.ns].copy()

    @property
    def pa(self):
        return self.X[2 * self.ns : 3 * self.ns].copy()

    @property
    def pb(self):
        return self.X[3 * self.ns : 4 * self.ns].copy()

    @property
    def q(self):
        return full_q(self.st, self.qs, self.qds)[0]

    @property
    def qd(self):
        return full_q(self.st, self.qs, self.qds)[1]

    def _full_q(self, qs, qds):
        """:func:`~robot_dynamics.algorithms.vdc.full_q` (q, qd) without the per-call name look-ups."""
        m = self.model
        lut = self.__dict__.get('_fq')
        if lut is None:
            lut = self._fq = [
                (
                    k,
                    s,
                    m.joint_index(s.joint),
                    m.joint_index(s.case_joint) if s.kind == 'revolute' else -1,
                    m.joint_index(s.rod_joint) if s.kind == 'revolute' else -1,
                )
                for k, s in enumerate(self.st.segments)
            ]
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
        Q, Qd = self._full_q(self.X[:ns], self.X[ns : 2 * ns])
        return HydraulicStepInfo(
            self.t,
            Q,
            Qd,
            self.aux[:, 0].copy(),
            self.aux[:, 1].copy(),
            self.pa,
            self.pb,
            self.aux[:, 2].copy(),
            np.clip(self.u, -self.hp.P[:, UMAX], self.hp.P[:, UMAX]),
            tuple(events),
        )

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
        loads = (self._FD_eff, self._tau_ext)
        bad = _rk4(*st.chain, *st.inertia, *hp.fluid, self.X, self.u, *loads, st.eps, h, self.substeps, self.aux)
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
