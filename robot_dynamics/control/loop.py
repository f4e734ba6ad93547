"""One control loop for every law: the ROS-free core of every controller node.

The shape follows ros2_control: :class:`ControlLoop` plays the controller manager (it owns
timing, the state and reference inputs, limits and the safe command), a *law* plays the
controller: one small object with one method, ``update(state, reference, dt) -> LawOutput``
(no clipping, no extrapolation: the loop does both). A node translates one state message into
one :meth:`ControlLoop.on_state` call and publishes the :class:`Command` it returns (references:
:meth:`ControlLoop.set_reference` / :meth:`ControlLoop.set_feedforward`, then
:meth:`ControlLoop.update`; the watchdog timer: :meth:`ControlLoop.update`).

What the loop does for every law (times in s; ``now`` is the caller's clock: the node clock,
i.e. wall time on a real robot and simulated time in a lock-step test graph):

* **state parsing** (:meth:`set_state`): joint names -> model order; the positions of the law's
  ``required_joints`` must be present and finite; a velocity that is NaN (an interface the
  hardware does not have) or absent reads as 0 for a joint the law does not require, and is a
  rejection for one it does; *plausibility*: a position more than ``position_margin`` outside
  the URDF limits or a speed above ``velocity_factor`` x the URDF velocity limit (or
  ``max_speed`` where the URDF gives none) is rejected. A rejected state is counted, its reason
  kept, and it never reaches the law.
* **extra measurements** (``law.extra_names``, e.g. chamber pressures ``<cyl>/p_a``): named entries
  of the same state message besides the joints (value in ``position``), parsed into
  ``State.extra``; each must be present and finite, and inside ``law.extra_limits[name]`` =
  (lo, hi) where given (else the state is rejected, like a joint). They come with the state, so
  its staleness is theirs.
* **staleness**: the state is stale when its reception is more than ``state_timeout`` old, the
  reference when its stamp is more than ``reference_timeout`` behind the state's stamp; both give
  the safe command (the reason says which), never the last command. The state's age is taken
  on the wall clock (the ``wall`` arguments) whenever the caller gives one and the loop is not
  in lock-step (``sync``): a real-time graph on the plant clock (/clock) stops its node clock
  when the plant stops, which must make the input stale, not keep it fresh. In lock-step it is
  the caller's clock (simulated time: no wall-clock safe command is injected as a step). A state
  older on arrival than ``max_state_age`` (the caller fell behind) is stored, not answered by
  :meth:`on_state`: the newest one is answered (at the latest by the watchdog's :meth:`update`).
* **reference matching**: a reference sample with the state's own stamp is used as is (lock-step
  graphs); otherwise the newest sample not after the state is extrapolated to the state's stamp
  (2nd order from its own derivatives, at most ``max_extrapolation``; feed-forward efforts
  linearly from the previous sample, optionally ``ff_lead`` further, which compensates the
  plant's zero-order hold). With ``sync`` (lock-step) :meth:`update` returns ``None`` (wait) until
  the matching sample is in or ``ref_wait`` has passed.
* **limits**: efforts are clipped to min(URDF effort limit, ``max_effort``) per joint, here and
  nowhere else; a non-finite law output or a law error gives the safe command.
* **safe command** (``safe``): ``'zero'`` (no effort, what a ros2_control forward command
  controller's hardware expects when the controller is stopped) or ``'hold'`` (the
  passive-joint-aware static gravity balance at the last valid state minus ``hold_damping`` x
  actuated velocity, :func:`~robot_dynamics.algorithms.projection.hold_command`); a law may
  define its own (``law.safe_command``: valves closed for a hydraulic law).
* **overrun accounting**: compute time of every update and state -> command latency (ring of the
  last ``stats_window`` updates: p50 / p99 / max), overruns (compute time > ``period``),
  counters; :meth:`diagnostics` returns them for ``/diagnostics``.
* **reports**: ``Command.report`` says whether the auxiliary outputs of a command (tracking
  error, feed-forward, wrenches) are due: at most one per ``report_period`` of state time.

Every state is answered at most once (a re-sent stamp is ignored; in lock-step, a state that
comes again with the stamp of the last command, i.e. the plant did not get that command, gets
the same command again, ``Command.repeated``), and only the newest state is answered (a
controller that falls behind skips states instead of working through a backlog).
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field, replace

import numpy as np

from robot_dynamics.errors import InputError, RobotDynamicsError

__all__ = ['State', 'Reference', 'LawOutput', 'Command', 'Law', 'ControlLoop', 'SamplePairing', 'StampedParts']


@dataclass
class State:
    """A valid joint state: ``q``, ``qd`` (nq,) in model order, ``stamp`` [s] of the
    measurement, ``received`` [s] on the loop's clock."""

    stamp: float
    q: np.ndarray
    qd: np.ndarray
    received: float
    names: tuple = ()
    extra: dict = field(default_factory=dict)  # law.extra_names -> value (e.g. pressures)
    received_wall: float | None = None  # [s] wall clock (set_state's ``wall``)


@dataclass
class Reference:
    """A reference sample for the law's coordinates ``coords``: ``pos``, ``vel``, ``acc``
    (k,) at ``stamp`` [s]; ``effort`` (p,) optional feed-forward actuator forces (order of the
    law's ``joints``) and ``effort_rate`` (p,) its rate (for extrapolation); ``derivs``
    (m + 1, k) optional derivatives of order 0..m (rows; a law that needs jerk and snap reads
    them here; rows 0..2 equal ``pos``, ``vel``, ``acc``)."""

    stamp: float | None
    pos: np.ndarray
    vel: np.ndarray
    acc: np.ndarray
    effort: np.ndarray | None = None
    effort_rate: np.ndarray | None = None
    extra: dict = field(default_factory=dict)
    derivs: np.ndarray | None = None

    def at(self, t, max_dt, ff_lead=0.0):
        """This sample extrapolated to time ``t`` (dt clipped to [0, max_dt]): Taylor series of
        the sample's own derivatives (2nd order, or order m of ``derivs``)."""
        if self.stamp is None or t is None:
            dt = 0.0
        else:
            dt = min(max(float(t - self.stamp), 0.0), float(max_dt))
        eff = self.effort
        if eff is not None and self.effort_rate is not None:
            eff = eff + self.effort_rate * (dt + ff_lead)
        if dt == 0.0 and eff is self.effort:
            return self
        if self.derivs is not None:
            D = _taylor(self.derivs, dt)
            k = len(D)
            z = np.zeros_like(D[0])
            return Reference(t, D[0], D[1] if k > 1 else z, D[2] if k > 2 else z, eff, self.effort_rate, self.extra, D)
        return Reference(
            t,
            self.pos + self.vel * dt + 0.5 * self.acc * dt * dt,
            self.vel + self.acc * dt,
            self.acc,
            eff,
            self.effort_rate,
            self.extra,
        )


def _hermite5(r0, r1, t):
    """Position, velocity, acceleration at ``t`` of the quintic through the samples ``r0`` and
    ``r1`` (both stamped, r0.stamp <= t < r1.stamp) matching each one's pos, vel, acc: exact for
    quintic motions, error O(h^6 x^(6)) in position for samples h apart (a 2nd-order Taylor
    series from r0 alone: O(h^3 x'''))."""
    h = float(r1.stamp - r0.stamp)
    s = (float(t) - float(r0.stamp)) / h
    p0, v0, a0 = r0.pos, r0.vel * h, r0.acc * h * h  # in s (0..1)
    p1, v1, a1 = r1.pos, r1.vel * h, r1.acc * h * h
    c3 = 10 * (p1 - p0) - 6 * v0 - 4 * v1 - 1.5 * a0 + 0.5 * a1
    c4 = -15 * (p1 - p0) + 8 * v0 + 7 * v1 + 1.5 * a0 - a1
    c5 = 6 * (p1 - p0) - 3 * v0 - 3 * v1 - 0.5 * a0 + 0.5 * a1
    c2 = 0.5 * a0
    pos = p0 + s * (v0 + s * (c2 + s * (c3 + s * (c4 + s * c5))))
    vel = v0 + s * (2 * c2 + s * (3 * c3 + s * (4 * c4 + s * 5 * c5)))
    acc = 2 * c2 + s * (6 * c3 + s * (12 * c4 + s * 20 * c5))
    return pos, vel / h, acc / (h * h)


def _taylor(D, dt):
    """Rows 0..m of derivatives D (m + 1, k) carried dt ahead by their own Taylor series
    (row j: sum_i D[j + i] dt^i / i!; the highest row is held)."""
    m = len(D)
    c = [1.0] * m  # dt^i / i!
    for i in range(1, m):
        c[i] = c[i - 1] * dt / i
    T = np.zeros((m, m))
    for j in range(m):
        T[j, j:] = c[: m - j]
    return T @ D


@dataclass
class LawOutput:
    """What a law returns: ``effort`` (p,) in the order of its ``joints``; tracking errors
    ``e``, ``ed`` of its coordinates; ``info`` (str -> value) for diagnostics."""

    effort: np.ndarray
    e: np.ndarray
    ed: np.ndarray
    info: dict = field(default_factory=dict)


@dataclass
class Command:
    """One answer of the loop: ``effort`` (p,) to publish (limited), ``safe`` (True if this is
    the safe command, ``reason`` then says why), the state/reference used, errors; ``repeated``
    (the command of the last state again, see :meth:`ControlLoop.on_state`); ``report`` (the
    auxiliary outputs of this command are due, see ``report_period``)."""

    effort: np.ndarray
    safe: bool
    reason: str
    stamp: float | None
    e: np.ndarray | None = None
    ed: np.ndarray | None = None
    clipped: bool = False
    extrapolated: float = 0.0
    info: dict = field(default_factory=dict)
    reference: Reference | None = None
    state: State | None = None
    sample: Reference | None = None  # the reference sample used, before extrapolation
    repeated: bool = False
    report: bool = True


class Law:
    """Base class of a control law (one small core object).

    Attributes: ``name``; ``joints`` (command order, p names); ``coords`` (names of the reference
    coordinates, k); ``required_joints`` (state joints whose positions the law needs: default all
    model joints); ``needs_feedforward`` (the reference carries actuator efforts);
    ``needs_reference`` (False for a law that regulates to a fixed goal of its own);
    ``reference`` ('joint' or 'task': the coordinates ``coords`` name) and ``reference_order``
    (the highest derivative the law reads, 2, or 4 from ``Reference.derivs``); ``extra_names``
    (named measurements of the state message besides the joints, required, in ``State.extra``)
    with ``extra_limits`` (name -> (lo, hi) plausibility); ``command_limit`` ((p,) limits of the
    command in the law's own units, e.g. valve volts, replacing the URDF effort limits; None =
    the URDF's).
    """

    name = 'law'
    needs_feedforward = False
    needs_reference = True
    reference = 'joint'
    reference_order = 2
    extra_names = ()
    extra_limits = {}
    command_limit = None

    def __init__(self, model, joints=None):
        self.model = model
        self.joints = list(model.actuated if joints is None else joints)
        self.cmd_idx = np.array([model.joint_index(j) for j in self.joints], dtype=np.int64)
        self.coords = list(self.joints)
        self.required_joints = list(model.joint_names)

    def update(self, state: State, ref: Reference | None, dt: float | None) -> LawOutput:  # pragma: no cover
        """The efforts for ``state`` and the reference ``ref`` at its stamp; ``dt`` [s]: time since
        the state of the previous call (None at the first). Neither clips nor extrapolates."""
        raise NotImplementedError

    def prepare(self):
        """Run the law and its safe command once at the model's reference configuration, so
        compiled kernels are loaded (or compiled) before the first real state, not during it."""
        m = self.model
        st = State(0.0, m.reference_q(), np.zeros(m.nq), 0.0)
        self.safe_command(st, 'hold', 0.0)
        k = len(self.coords)
        ref = Reference(
            0.0, np.zeros(k), np.zeros(k), np.zeros(k), np.zeros(len(self.joints)) if self.needs_feedforward else None
        )
        if hasattr(self, 'current_coordinates'):
            ref.pos = np.asarray(self.current_coordinates(st.q), float)
        try:
            self.update(st, ref, None)
        except (RobotDynamicsError, np.linalg.LinAlgError):
            pass

    def safe_command(self, state: State | None, mode: str, damping: float):
        """Safe effort (p,): zero, or the static gravity hold at ``state`` (``mode='hold'``)."""
        if mode == 'hold' and state is not None:
            from robot_dynamics.algorithms.projection import hold_command

            try:
                tau = hold_command(self.model, state.q, state.qd, damping)
                eff = tau[self.cmd_idx]
                if np.all(np.isfinite(eff)):
                    return eff
            except (RobotDynamicsError, np.linalg.LinAlgError):
                pass
        return np.zeros(len(self.joints))


class ControlLoop:
    """The control loop shared by every law (see the module docstring).

    Parameters: ``law`` (a :class:`Law`); ``period`` [s] (the controller period: overrun
    threshold); ``state_timeout``, ``reference_timeout``, ``max_extrapolation``, ``ref_wait`` [s];
    ``sync`` (lock-step: wait for the reference of the state's stamp); ``max_state_age`` [s]
    (:meth:`on_state` answers a state only when it is younger on arrival; 0 = one ``period``);
    ``report_period`` [s of state time] (``Command.report``: 0 = every command); ``max_effort``
    (scalar or (p,), combined with the URDF limits); ``safe`` ('zero' | 'hold'), ``hold_damping``;
    ``position_margin`` [rad | m], ``velocity_factor``, ``max_speed`` [rad/s | m/s]
    (plausibility); ``max_future`` [s] (a state stamped more than this ahead of ``now`` is
    rejected, so no single message can lock the loop out); ``ff_lead`` [s]; ``clock`` (callable
    returning seconds, default ``time.monotonic``; used for compute-time measurement only);
    ``wait_first_reference`` (with ``sync``: before the first reference sample, wait for it
    however long, instead of giving the safe command after ``ref_wait``, so a lock-step plant
    does not start before its reference source is up); ``interpolate`` (a state between two
    held samples, from a source publishing ahead: pos/vel/acc from the quintic through both
    instead of the Taylor series of the earlier one; opt-in; it helps irsbot2_t1's joint
    references in real time; the five_bar task-space graph tracks at 0.100 mm with it and a
    50 ms preview, 0.100-0.106 mm without); ``reference_history`` (samples held, the oldest
    dropped: a source ``lead`` seconds ahead at ``rate`` Hz keeps lead x rate of them after the
    state, and the one before it must survive: 64, i.e. 0.26 s at 250 Hz, would drop the samples
    around the state of a 0.3 s preview). ``active`` (attribute, default True): while False the
    loop stores its inputs and answers nothing (a disabled controller).
    """

    def __init__(
        self,
        law,
        period=1e-3,
        state_timeout=0.1,
        reference_timeout=0.5,
        max_extrapolation=0.05,
        ref_wait=0.2,
        sync=False,
        max_effort=None,
        safe='hold',
        hold_damping=0.0,
        position_margin=0.5,
        velocity_factor=10.0,
        max_speed=1e3,
        ff_lead=0.0,
        stats_window=2000,
        clock=time.perf_counter,
        max_future=0.5,
        wait_first_reference=False,
        interpolate=False,
        reference_history=256,
        max_state_age=0.0,
        report_period=0.0,
    ):
        if safe not in ('zero', 'hold'):
            raise InputError(f"safe must be 'zero' or 'hold', got {safe!r}")
        positive = dict(
            period=period, state_timeout=state_timeout, reference_timeout=reference_timeout, ref_wait=ref_wait
        )
        non_negative = dict(
            max_extrapolation=max_extrapolation,
            hold_damping=hold_damping,
            max_future=max_future,
            position_margin=position_margin,
            ff_lead=ff_lead,
            max_state_age=max_state_age,
            report_period=report_period,
        )
        for name, v in {**positive, **non_negative}.items():
            strict = name in positive
            if not (isinstance(v, (int, float)) and math.isfinite(v) and (v > 0 if strict else v >= 0)):
                raise InputError(f'{name} must be a finite number {">" if strict else ">="} 0, got {v!r}')
        self.law = law
        self.model = m = law.model
        self.period = float(period)
        self.state_timeout = float(state_timeout)
        self.reference_timeout = float(reference_timeout)
        self.max_extrapolation = float(max_extrapolation)
        self.ref_wait = float(ref_wait)
        self.sync = bool(sync)
        self.wait_first_reference = bool(wait_first_reference)
        self.safe_mode = safe
        self.hold_damping = float(hold_damping)
        self.ff_lead = float(ff_lead)
        self.interpolate = bool(interpolate)
        self.max_future = float(max_future)
        self.max_state_age = float(max_state_age) or self.period
        self.report_period = float(report_period)
        self.active = True
        if not (isinstance(reference_history, (int, np.integer)) and reference_history >= 2):
            raise InputError(f'reference_history must be an integer >= 2, got {reference_history!r}')
        self.reference_history = int(reference_history)
        self._clock = clock
        # limits
        lim = (
            np.asarray(m.effort_limit, float)[law.cmd_idx]
            if law.command_limit is None
            else np.asarray(law.command_limit, float)
        )
        lim = np.where(np.isfinite(lim) & (lim > 0), lim, np.inf)
        if max_effort is not None:
            me = np.broadcast_to(np.asarray(max_effort, float), lim.shape)
            if not np.all(me > 0):
                raise InputError(f'max_effort must be > 0, got {max_effort!r}')
            lim = np.minimum(lim, me)
        self.effort_limit = lim
        # plausibility bounds per joint (model order)
        lo, hi = np.asarray(m.lower, float), np.asarray(m.upper, float)
        self._qlo = np.where(np.isfinite(lo), lo - position_margin, -1e6)
        self._qhi = np.where(np.isfinite(hi), hi + position_margin, 1e6)
        vl = np.asarray(m.velocity_limit, float)
        self._vmax = np.where(np.isfinite(vl) & (vl > 0), velocity_factor * vl, max_speed)
        self._req = np.array([m.joint_index(j) for j in law.required_joints], dtype=np.int64)
        self._req_set = set(law.required_joints)
        self._extra_set = set(law.extra_names)
        # inputs
        self.state: State | None = None
        self.refs: OrderedDict = OrderedDict()  # stamp ns -> dict(parts), in stamp order
        self._ref_plain: Reference | None = None  # the latest complete sample
        self._answered = None  # stamp of the last state answered
        self._law_stamp = None  # stamp of the last state the law computed
        self._reported = None  # stamp of the last command with report
        self._pending_since = None
        self.last_command: Command | None = None
        self.stale = False
        # accounting
        self.count = dict(
            states=0,
            rejected_states=0,
            references=0,
            rejected_references=0,
            commands=0,
            safe_commands=0,
            clipped=0,
            extrapolated=0,
            overruns=0,
            law_errors=0,
            stale_state=0,
            stale_reference=0,
            skipped_states=0,
        )
        self.last_reject = ''
        self.compute_times = deque(maxlen=stats_window)
        self.latencies = deque(maxlen=stats_window)

    @classmethod
    def from_params(cls, law, p):
        """The loop of a controller node's parameters ``p`` (names of
        :data:`robot_dynamics.control.params.CONTROLLER_PARAMS`)."""
        return cls(
            law,
            period=1.0 / p['rate'],
            state_timeout=p['state_timeout'],
            reference_timeout=p['reference_timeout'],
            max_extrapolation=p['max_extrapolation'],
            ref_wait=p['ref_wait'],
            sync=p['reference_sync'],
            max_effort=p['max_effort'] or None,
            safe=p['safe'],
            hold_damping=p['hold_damping'],
            ff_lead=p['ff_lead'],
            max_future=p['max_future'],
            wait_first_reference=p['wait_first_reference'],
            interpolate=p['interpolate'],
            reference_history=int(p['reference_history']),
            max_state_age=p['max_state_age'],
            report_period=1.0 / p['error_rate'] if p['error_rate'] else 0.0,
        )

    def safe_effort(self, state=None):
        """The safe command at ``state`` (default the newest state), within the limits (also
        what the controller sends when it is disabled)."""
        eff = self.law.safe_command(state if state is not None else self.state, self.safe_mode, self.hold_damping)
        return np.clip(np.nan_to_num(np.asarray(eff, float)), -self.effort_limit, self.effort_limit)

    def hold_here(self):
        """Replace the reference by the law's coordinates at the newest state (held at rest).
        Returns ``(ok, message)``."""
        if self.state is None:
            return False, 'no joint state yet'
        if not hasattr(self.law, 'current_coordinates'):
            return False, f'law {self.law.name} cannot hold'
        x = self.law.current_coordinates(self.state.q)
        self.clear_reference()
        self.set_reference(x, stamp=None)
        return True, f'holding {np.round(x, 6).tolist()}'

    # ------------------------------------------------------------------ inputs
    def set_state(self, names, position, velocity=None, stamp=None, now=None, wall=None):
        """Parse a joint state; returns None if accepted, else the reason (str) it was rejected.

        ``names``, ``position``, ``velocity`` (sequences, velocity may be empty); ``stamp`` [s];
        ``now`` [s] on the caller's clock (reception time, default ``stamp``); ``wall`` [s] the
        reception on the wall clock (:meth:`update`'s ``wall``: the staleness of a real-time loop).
        """
        self.count['states'] += 1
        why = self._parse(names, position, velocity, stamp, now, wall)
        if why:
            self.count['rejected_states'] += 1
            self.last_reject = f'state: {why}'
        return why

    def on_state(self, names, position, velocity, stamp, now, wall=None):
        """One state message, parsed and answered: ``(command or None, warning or None)``.

        A rejected state: no command, the warning says why. In lock-step (``sync``), a state with
        the stamp of the last command (the plant publishes a state again when it got no command
        for it, e.g. one published before its subscription had matched at start-up): that
        command again (``repeated``), or the graph would wait for ever. A state older on arrival
        than ``max_state_age``: stored, not answered here (newer states are queued behind it;
        the newest is answered, at the latest by the watchdog's :meth:`update`). Else
        :meth:`update`. Arguments: see :meth:`set_state`.
        """
        why = self.set_state(names, position, velocity, stamp, now, wall)
        if why:
            return None, f'rejected joint_states: {why}'
        last = self.last_command
        if self.sync and self.active and last is not None and stamp == last.stamp:
            return replace(last, repeated=True), (
                'lock-step: a state came again without a step (its command was lost): the command sent again'
            )
        if now - stamp > self.max_state_age:
            return None, None
        return self.update(now, wall), None

    def _parse(self, names, position, velocity, stamp, now, wall=None):
        m = self.model
        names = list(names)
        pos = list(position)
        vel = list(velocity) if velocity is not None else []
        if stamp is None or not math.isfinite(stamp):
            return 'no valid stamp'
        if now is not None and stamp > now + self.max_future:
            # a forged or mis-clocked message must not become the newest state (every real
            # state after it would be "older" and rejected: one message would lock us out)
            return f'stamp {stamp:.6f} s is {stamp - now:.3g} s in the future (max_future {self.max_future:g} s)'
        if len(pos) != len(names):
            return f'position has {len(pos)} entries for {len(names)} names'
        if vel and len(vel) != len(names):
            return f'velocity has {len(vel)} entries for {len(names)} names'
        if len(set(names)) != len(names):
            return 'duplicate joint names'
        q = m.reference_q() if self.state is None else self.state.q.copy()
        qd = np.zeros(m.nq)
        seen = set()
        extra = {}
        try:
            for k, n in enumerate(names):
                i = m._joint_index.get(n)
                if i is None:
                    if n in self._extra_set:
                        x = float(pos[k])
                        lo, hi = self.law.extra_limits.get(n, (-math.inf, math.inf))
                        if not math.isfinite(x):
                            return f"non-finite measurement '{n}'"
                        if not lo <= x <= hi:
                            return f"implausible measurement {x:.6g} of '{n}' (bounds {lo:.4g} .. {hi:.4g})"
                        extra[n] = x
                    continue
                p = float(pos[k])
                v = float(vel[k]) if vel else 0.0
                if n in self._req_set:
                    if not math.isfinite(p):
                        return f"non-finite position of '{n}'"
                    if not math.isfinite(v):
                        return f"non-finite velocity of '{n}'"
                else:
                    if not math.isfinite(p):
                        continue
                    if not math.isfinite(v):
                        v = 0.0
                if not (self._qlo[i] <= p <= self._qhi[i]):
                    return f"implausible position {p:.6g} of '{n}' (limits {m.lower[i]:.4g} .. {m.upper[i]:.4g})"
                if abs(v) > self._vmax[i]:
                    return f"implausible velocity {v:.6g} of '{n}' (bound {self._vmax[i]:.4g})"
                q[i], qd[i] = p, v
                seen.add(n)
        except (TypeError, ValueError):
            return 'non-numeric position or velocity'
        missing = [j for j in self.law.required_joints if j not in seen]
        if missing:
            return f'missing joints {missing}'
        missing = [n for n in self.law.extra_names if n not in extra]
        if missing:
            return f'missing measurements {missing}'
        if self.state is not None and stamp < self.state.stamp - 1e-9 and not self._reset_ok(stamp):
            return f'stamp {stamp:.6f} s older than the last state ({self.state.stamp:.6f} s)'
        if (
            self.state is not None
            and self._answered is not None
            and self.state.stamp > self._answered
            and stamp > self.state.stamp
        ):
            self.count['skipped_states'] += 1  # the previous state was never answered
        self.state = State(float(stamp), q, qd, float(stamp if now is None else now), tuple(names), extra, wall)
        self._pending_since = None
        return None

    def _reset_ok(self, stamp):
        """A stamp jump backwards by more than a second is a plant reset: accept it."""
        if self.state.stamp - stamp > 1.0:
            self._answered = None
            self.refs.clear()
            self._ref_plain = None
            return True
        return False

    def _ref_slot(self, stamp):
        key = None if stamp is None else int(round(stamp * 1e9))
        slot = self.refs.get(key)
        if slot is None:
            last = next(reversed(self.refs), None)
            slot = self.refs[key] = {}
            if key is not None and last is not None and key < last:
                # a sample older than one already held (a subscriber matched in the middle of a
                # preview burst gets its tail first and the start at the next repeat): the slots
                # stay in stamp order, which _around and the trimming below rely on (in insertion
                # order a T1 state would see a 0.1 s "gap" around it and get the safe hold at 10 G)
                items = sorted(self.refs.items(), key=lambda kv: (kv[0] is not None, kv[0] or 0))
                self.refs.clear()
                self.refs.update(items)
            while len(self.refs) > self.reference_history:
                self.refs.popitem(last=False)
        return key, slot

    def set_reference(self, pos, vel=None, acc=None, stamp=None, names=None, extra=None, derivs=None):
        """A reference sample for the law's ``coords`` (reordered by ``names`` if given);
        ``derivs`` (m + 1, len(names) or k): derivatives of order 0..m (rows; ``pos``, ``vel``,
        ``acc`` are then its rows 0..2, missing rows zero). Returns None if accepted, else the reason."""
        try:
            if derivs is not None:  # pos, vel, acc: its rows 0..2
                derivs = self._make_derivs(derivs, names)
                pos, vel, acc, names = derivs[0], derivs[1:2].ravel(), derivs[2:3].ravel(), None
            ref = self._make_reference(pos, vel, acc, names)
        except InputError as exc:
            self.count['rejected_references'] += 1
            self.last_reject = f'reference: {exc}'
            return str(exc)
        if stamp is not None and not math.isfinite(stamp):
            self.count['rejected_references'] += 1
            return 'non-finite stamp'
        self.count['references'] += 1
        key, slot = self._ref_slot(stamp)
        slot['ref'] = (ref, extra or {})
        slot['derivs'] = derivs
        self._complete(key, slot, stamp)
        return None

    def _make_derivs(self, derivs, names):
        D = np.array(derivs, float, ndmin=2)
        if names is not None:
            names = list(names)
            try:
                D = D[:, [names.index(c) for c in self.law.coords]]
            except (ValueError, IndexError):
                raise InputError(f'derivatives for {names} must include {self.law.coords}') from None
        if D.ndim != 2 or D.shape[1] != len(self.law.coords) or not np.all(np.isfinite(D)):
            raise InputError(f'derivatives must be finite rows of {len(self.law.coords)} values for {self.law.coords}')
        return D

    def set_feedforward(self, effort, stamp=None, names=None):
        """Feed-forward actuator efforts (p,) for the sample at ``stamp`` (order of the law's
        ``joints``, or ``names``). Returns None if accepted, else the reason."""
        eff = np.asarray(effort, float).ravel()
        if names is not None:
            names = list(names)
            try:
                eff = np.array([eff[names.index(j)] for j in self.law.joints])
            except (ValueError, IndexError):
                self.count['rejected_references'] += 1
                return f'feed-forward needs efforts of {self.law.joints}, got {names}'
        if eff.shape != (len(self.law.joints),) or not np.all(np.isfinite(eff)):
            self.count['rejected_references'] += 1
            self.last_reject = 'feed-forward: need finite efforts for ' + str(self.law.joints)
            return self.last_reject
        key, slot = self._ref_slot(stamp)
        slot['ff'] = eff
        self._complete(key, slot, stamp)
        return None

    def _make_reference(self, pos, vel, acc, names):
        k = len(self.law.coords)
        pos = np.asarray(pos, float).ravel()
        vel = np.zeros(k) if vel is None or len(vel) == 0 else np.asarray(vel, float).ravel()
        acc = np.zeros(k) if acc is None or len(acc) == 0 else np.asarray(acc, float).ravel()
        if names is not None:
            names = list(names)
            try:
                order = [names.index(c) for c in self.law.coords]
            except ValueError:
                raise InputError(f'reference names {names} must include {self.law.coords}') from None
            if max(order, default=0) >= min(len(pos), len(vel), len(acc)):
                raise InputError(f'reference needs positions/velocities/accelerations for {names}')
            pos, vel, acc = pos[order], vel[order], acc[order]
        for a in (pos, vel, acc):
            if a.shape != (k,) or not np.all(np.isfinite(a)):
                raise InputError(f'reference must be {k} finite values for {self.law.coords}')
        return pos, vel, acc

    def _complete(self, key, slot, stamp):
        if 'ref' not in slot or (self.law.needs_feedforward and 'ff' not in slot):
            return
        (pos, vel, acc), extra = slot['ref']
        eff = slot.get('ff')
        rate = None
        if eff is not None:
            prev = self._ref_plain
            if (
                prev is not None
                and prev.effort is not None
                and prev.stamp is not None
                and stamp is not None
                and stamp > prev.stamp
            ):
                rate = (eff - prev.effort) / (stamp - prev.stamp)
            elif prev is not None and prev.effort_rate is not None:
                rate = prev.effort_rate
        ref = Reference(stamp, pos, vel, acc, eff, rate, extra, slot.get('derivs'))
        slot['complete'] = ref
        if self._ref_plain is None or stamp is None or self._ref_plain.stamp is None or stamp >= self._ref_plain.stamp:
            self._ref_plain = ref

    def clear_reference(self):
        """Forget every reference sample (the law then gets the safe command until a new one)."""
        self.refs.clear()
        self._ref_plain = None

    # ------------------------------------------------------------------ the loop
    def _reference_for(self, ts, now):
        """(reference at ts, extrapolated dt, wait?, the sample it comes from) for a state at
        stamp ``ts``."""
        if not self.law.needs_reference:
            return None, 0.0, False, None
        key = int(round(ts * 1e9))
        slot = self.refs.get(key)
        if slot is not None and 'complete' in slot:
            ref = slot['complete']
            return self._chord(ref, self._around(ts)[1]).at(ts, 0.0, self.ff_lead), 0.0, False, ref
        newest = self._ref_plain
        if self.sync:
            if self._pending_since is None:
                self._pending_since = now
            if newest is None or newest.stamp is None or newest.stamp < ts - 1e-9:
                if now - self._pending_since < self.ref_wait or (newest is None and self.wait_first_reference):
                    return None, 0.0, True, None
        if newest is None:
            return None, 0.0, False, None
        # newest complete sample not after the state (else the oldest one after it)
        best, after = self._around(ts)
        ref = best or after or newest
        dt = 0.0 if ref.stamp is None else max(0.0, ts - ref.stamp)
        nxt = after if best is not None else None
        out = self._chord(ref, nxt).at(ts, self.max_extrapolation, self.ff_lead)
        if self.interpolate and nxt is not None and ref.derivs is None and out is not ref and ref.stamp is not None:
            out.pos, out.vel, out.acc = _hermite5(ref, nxt, ts)
        return out, dt, False, ref

    def _stale_text(self, ts, dt):
        """Why the reference of a state at ``ts`` is stale: how far the sample it would come from
        is behind, what the loop holds (a chain that fell behind holds nothing after the state;
        samples lost on the way leave a gap with samples after it)."""
        done = [
            r.stamp
            for r in (slot.get('complete') for slot in self.refs.values())
            if r is not None and r.stamp is not None
        ]
        _, after = self._around(ts)
        held = (
            f'{len(done)} samples held, {min(done) - ts:+.3f} .. {max(done) - ts:+.3f} s around it'
            if done
            else 'no sample held'
        )
        return (
            f'reference stale: newest sample {dt:.3f} s before the state (> reference_timeout '
            f'{self.reference_timeout:g} s; '
            + (
                f'a gap: the next sample {after.stamp - ts:+.3f} s after it; '
                if after is not None and after.stamp is not None
                else ''
            )
            + held
            + ')'
        )

    def _around(self, ts):
        """(the newest complete sample stamped at or before ``ts``, the oldest one after it),
        None where there is none (no sample after the state: always in lock-step, where a
        sample follows the state it answers)."""
        after = None
        for slot in reversed(self.refs.values()):
            r = slot.get('complete')
            if r is None:
                continue
            if r.stamp is None or r.stamp <= ts + 1e-9:
                return r, after
            after = r
        return None, after

    @staticmethod
    def _chord(ref, nxt):
        """``ref`` with its feed-forward rate taken from the chord to the next sample ``nxt``
        (a reference source publishing ahead, trajectory_node ``lead``): the feed-forward is
        then interpolated between the samples around the state (error u''h^2/8 for samples h
        apart) instead of extrapolated with the backward difference of the last two."""
        if (
            nxt is None
            or ref.effort is None
            or nxt.effort is None
            or ref.stamp is None
            or nxt.stamp is None
            or not nxt.stamp > ref.stamp
        ):
            return ref
        return replace(ref, effort_rate=(nxt.effort - ref.effort) / (nxt.stamp - ref.stamp))

    def update(self, now, wall=None):
        """Answer the newest state: a :class:`Command`, or None when there is nothing to answer
        (no new state, or lock-step waiting for its reference). Call on every state (event
        driven), on every reference (lock-step) and from a watchdog/timer at the control rate
        (staleness: gives the safe command when no fresh state came for ``state_timeout``).
        ``now``: the caller's clock (same as ``set_state``'s); ``wall``: wall-clock seconds for
        the lock-step ``ref_wait`` (default ``now``; in a lock-step graph ``now`` is simulated
        time, which does not advance while the loop waits) and, outside lock-step, for the
        state's staleness when ``set_state`` had a ``wall`` too.
        """
        st = self.state
        if st is None or not self.active:
            return None
        age = self._age(st, now, wall)
        if age > self.state_timeout:
            if not self.stale:
                self.count['stale_state'] += 1
            self.stale = True
            return self._safe(
                None,
                f'state stale: no valid joint state for {age:.3f} s (> state_timeout {self.state_timeout:g} s)',
                st.stamp,
            )
        self.stale = False
        if self._answered is not None and st.stamp <= self._answered:
            return None
        ref, dt, wait, sample = self._reference_for(st.stamp, now if wall is None else wall)
        if wait:
            return None
        t0 = self._clock()
        self._answered = st.stamp
        if self.law.needs_reference:
            if ref is None:
                return self._finish(self._safe(st, 'no reference yet', st.stamp), t0, now, wall)
            if dt > self.reference_timeout:
                self.count['stale_reference'] += 1
                return self._finish(self._safe(st, self._stale_text(st.stamp, dt), st.stamp), t0, now, wall)
        if dt > 0:
            self.count['extrapolated'] += 1
        try:
            out = self.law.update(st, ref, None if self._law_stamp is None else st.stamp - self._law_stamp)
            self._law_stamp = st.stamp
            eff = np.asarray(out.effort, float)
        except (RobotDynamicsError, np.linalg.LinAlgError, FloatingPointError) as exc:
            self.count['law_errors'] += 1
            return self._finish(self._safe(st, f'law {self.law.name}: {exc}', st.stamp), t0, now, wall)
        if eff.shape != self.effort_limit.shape or not np.all(np.isfinite(eff)):
            self.count['law_errors'] += 1
            return self._finish(
                self._safe(st, f'law {self.law.name}: non-finite or malformed effort', st.stamp), t0, now, wall
            )
        clipped = bool(np.any(np.abs(eff) > self.effort_limit))
        if clipped:
            self.count['clipped'] += 1
            eff = np.clip(eff, -self.effort_limit, self.effort_limit)
        report = self._report_due(st.stamp)
        cmd = Command(eff, False, '', st.stamp, out.e, out.ed, clipped, dt, out.info, ref, st, sample, report=report)
        return self._finish(cmd, t0, now, wall)

    def _report_due(self, t):
        """At most one report per ``report_period`` of state time; a time that goes back (a
        reset) is always due."""
        last = self._reported
        if self.report_period <= 0.0 or last is None or t < last or t - last >= self.report_period - 1e-9:
            self._reported = t
            return True
        return False

    def _age(self, st, now, wall):
        """Seconds since ``st`` was received: on the wall clock outside lock-step when both
        ends have one (see the module doc, staleness), else on the caller's clock."""
        if not self.sync and wall is not None and st.received_wall is not None:
            return wall - st.received_wall
        return now - st.received

    def _safe(self, st, reason, stamp):
        eff = self.safe_effort(st)
        self.count['safe_commands'] += 1
        self.last_command = Command(eff, True, reason, stamp, state=st)
        return self.last_command

    def _finish(self, cmd, t0, now, wall=None):
        dtc = self._clock() - t0
        self.compute_times.append(dtc)
        if dtc > self.period:
            self.count['overruns'] += 1
        if cmd.state is not None:
            self.latencies.append(max(0.0, self._age(cmd.state, now, wall)) + dtc)
        self.count['commands'] += 1
        self.last_command = cmd
        return cmd

    # ------------------------------------------------------------------ diagnostics
    def diagnostics(self):
        """Counters and timing statistics (seconds) for ``/diagnostics``."""
        d = dict(self.count)
        for name, buf in (('compute', self.compute_times), ('latency', self.latencies)):
            if buf:
                a = np.fromiter(buf, float)
                d[f'{name}_p50'] = float(np.percentile(a, 50))
                d[f'{name}_p99'] = float(np.percentile(a, 99))
                d[f'{name}_max'] = float(a.max())
        d['period'] = self.period
        d['stale'] = self.stale
        d['last_reject'] = self.last_reject
        lc = self.last_command
        d['safe'] = bool(lc.safe) if lc is not None else True
        d['reason'] = lc.reason if lc is not None else 'no command yet'
        return d


class StampedParts:
    """The ``n`` parts of one sample that travel on ``n`` topics (e.g. pose, twist, accel),
    matched by their header stamp: :meth:`add` ``(k, stamp, value)`` returns the ``n`` values
    in part order once every part of that stamp is in, else None. Parts of up to ``maxlen``
    stamps wait at once (the oldest incomplete stamp is dropped beyond that), so a burst of
    samples (a reference preview, a subscriber that fell behind: the executor may take all the
    poses before all the twists) pairs each part with its own sample, never with a neighbour's.
    """

    def __init__(self, n, maxlen=256):
        self.n, self.maxlen, self.parts = int(n), int(maxlen), OrderedDict()

    def add(self, k, stamp, value):
        box = self.parts.setdefault(stamp, {})
        box[k] = value
        if len(box) == self.n:
            del self.parts[stamp]
            return [box[i] for i in range(self.n)]
        while len(self.parts) > self.maxlen:
            self.parts.popitem(last=False)
        return None


class SamplePairing:
    """Pairs the two halves of one reference sample that travel on two topics: the stamped pose
    (``k = 0``, item = its stamp) and the derivative rows (``k = 1``, item = the (m + 1, n)
    array), matched by ``key`` (the position row, identical in both). :meth:`add` returns
    ``(stamp, derivs)`` when the other half is already there, else None (the half waits; at
    most ``maxlen`` per side, the oldest dropped)."""

    def __init__(self, maxlen=256):
        self.boxes, self.maxlen = ({}, {}), int(maxlen)

    def add(self, k, key, item):
        other = self.boxes[1 - k].pop(key, None)
        if other is None:
            box = self.boxes[k]
            box[key] = item
            while len(box) > self.maxlen:
                box.pop(next(iter(box)))
            return None
        return (item, other) if k == 0 else (other, item)
