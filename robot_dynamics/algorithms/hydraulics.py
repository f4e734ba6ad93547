"""Hydraulic cylinders and servo valves: the actuator model of a hydraulic boom (Petrović &
Mattila), shared by the plant (:mod:`robot_dynamics.plants.hydraulic`) and the VDC law
(:mod:`robot_dynamics.control.vdc`).
Hydraulic cylinders, servo valves and the full third-order hydraulic boom plant (seed 001).

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
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from robot_dynamics.errors import RobotDynamicsError
from robot_dynamics.algorithms.vdc import structure_from_model

__all__ = [
    'HydraulicError',
    'HydraulicParams',
    'hydraulic_params_from_model',
    'friction',
    'flows',
    'chamber_volumes',
    'cylinder_force',
    'chamber_rates',
    'voltage_term',
    'valve_inverse',
]

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
                raise HydraulicError(
                    f'actuators.{n}: non-finite derived parameter (areas, valve coefficient): sizes out of range'
                )
            if not (r[A_A] > 0 and r[A_B] > 0 and r[STROKE] > 0 and r[UMAX] > 0):
                raise HydraulicError(f'actuators.{n}: areas, stroke and max input must be > 0')
            if min(r[CP1], r[CP2], r[CN1], r[CN2]) <= 0:
                raise HydraulicError(f'actuators.{n}.valve: valve coefficients must be > 0')
            if r[FC] < 0 or r[FV] < 0 or r[VS] <= 0:
                raise HydraulicError(
                    f'actuators.{n}.friction: friction must be monotone (coulomb, viscous >= 0, velocity_scale > 0)'
                )
            if r[VA0] < 0 or r[VB0] < 0 or r[TAUV] < 0:
                raise HydraulicError(f'actuators.{n}: dead volumes and spool lag must be >= 0')

    def copy(self):
        return HydraulicParams(self.names, self.P.copy(), self.p_s, self.p_r, self.beta)

    @property
    def fluid(self):
        """The cylinders and the supply as the compiled plant takes them: (P, p_s, p_r, beta)."""
        return self.P, self.p_s, self.p_r, self.beta


def _num(a, key, name, default=None):
    v = a.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise HydraulicError(f'actuators.{name}.{key}: expected a finite number, got {v!r}')
    return float(v)


def hydraulic_params_from_model(model, structure=None):
    """Read the cylinder/valve/friction data of the sidecar ``actuators`` block (segment order)
    and the ``hydraulic_supply`` entry (supply_pressure, return_pressure, bulk_modulus).
    Raises :class:`HydraulicError` ``"<sidecar>: actuators.<name>...: <what>"``."""
    src = model.loops_source or model.source
    try:
        return _hydraulic_params(model, structure)
    except HydraulicError as exc:
        if str(exc).startswith(f'{src}: '):
            raise
        raise HydraulicError(f'{src}: {exc}') from None


def _hydraulic_params(model, structure):
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
        P[k, A_A] = math.pi / 4 * (bore * bore)  # (a float product: inf, never OverflowError)
        P[k, A_B] = math.pi / 4 * (bore * bore - rod * rod)
        P[k, STROKE] = _num(a, 'stroke', n)
        P[k, VA0] = _num(a, 'dead_volume_a', n, 0.0)
        P[k, VB0] = _num(a, 'dead_volume_b', n, 0.0)
        v = a.get('valve')
        if not isinstance(v, dict):
            raise HydraulicError(f'actuators.{n}.valve: mapping required')
        umax = _num(v, 'max_input', n + '.valve', 10.0)
        c = _num(v, 'nominal_flow', n + '.valve') / (umax * math.sqrt(_num(v, 'nominal_pressure_drop', n + '.valve')))
        P[k, CP1 : CN2 + 1] = c
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
    return HydraulicParams(
        [s.name for s in st.segments],
        P,
        p_s,
        _num(sup, 'return_pressure', 'supply'),
        _num(sup, 'bulk_modulus', 'supply'),
    )


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
def chamber_volumes(P, x):
    s = P[STROKE]
    va = max(P[VA0] + P[A_A] * x, 1e-3 * P[A_A] * s)
    vb = max(P[VB0] + P[A_B] * (s - x), 1e-3 * P[A_B] * s)
    return va, vb


@njit(cache=True)
def cylinder_force(P, x, xd, pa, pb):
    """(f_p, f_cyl) [N]: the pressure force A_a p_a - A_b p_b and the force on the stroke x [m]
    at rate xd [m/s], the pressure force minus friction plus the end-stop spring-dampers."""
    fp = P[A_A] * pa - P[A_B] * pb
    fend = 0.0
    if x < 0.0:
        fend = -P[KEND] * x - P[DEND] * min(xd, 0.0)
    elif x > P[STROKE]:
        fend = -P[KEND] * (x - P[STROKE]) - P[DEND] * max(xd, 0.0)
    return fp, fp - friction(P, xd) + fend


@njit(cache=True)
def chamber_rates(P, ucmd, u_state, pa, pb, x, xd, ps, pr, beta):
    """(dp_a/dt, dp_b/dt [Pa/s], du/dt [V/s], Q_a, Q_b [m^3/s]) of one cylinder: the command
    ucmd [V] saturated at UMAX drives the spool (first order with TAUV, else u = ucmd and
    du/dt = 0; ``u_state`` is the spool state), the flows fill the chambers at stroke x, rate
    xd; a pressure at PMAX / PMIN stops rising / falling."""
    umax = P[UMAX]
    uc = min(max(ucmd, -umax), umax)
    if P[TAUV] > 0:
        u = u_state
        du = (uc - u) / P[TAUV]
    else:
        u = uc
        du = 0.0
    qa, qb = flows(P, u, pa, pb, ps, pr)
    va, vb = chamber_volumes(P, x)
    dpa = beta / va * (qa - P[A_A] * xd)
    dpb = beta / vb * (qb + P[A_B] * xd)
    if (pa >= P[PMAX] and dpa > 0) or (pa <= P[PMIN] and dpa < 0):
        dpa = 0.0
    if (pb >= P[PMAX] and dpb > 0) or (pb <= P[PMIN] and dpb < 0):
        dpb = 0.0
    return dpa, dpb, du, qa, qb


@njit(cache=True)
def voltage_term(P, u, x, pa, pb, ps, pr):
    """u_f = A_a Q_a / V_a - A_b Q_b / V_b (eq. 86 with dead volumes)."""
    qa, qb = flows(P, u, pa, pb, ps, pr)
    va, vb = chamber_volumes(P, x)
    return P[A_A] * qa / va - P[A_B] * qb / vb


@njit(cache=True)
def valve_inverse(P, uf, x, pa, pb, ps, pr, dp_min):
    """Valve input u [V] with voltage_term(u) = uf (eq. 89); the square-root arguments are
    floored at ``dp_min`` [Pa] (guard outside Assumption 5). Not saturated."""
    va, vb = chamber_volumes(P, x)
    if uf > 0:
        den = (
            P[A_A] * P[CP1] * math.sqrt(max(ps - pa, dp_min)) / va
            + P[A_B] * P[CN2] * math.sqrt(max(pb - pr, dp_min)) / vb
        )
    else:
        den = (
            P[A_B] * P[CP2] * math.sqrt(max(ps - pb, dp_min)) / vb
            + P[A_A] * P[CN1] * math.sqrt(max(pa - pr, dp_min)) / va
        )
    return uf / den
