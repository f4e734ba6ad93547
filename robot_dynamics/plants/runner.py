"""The simulator's loop (no ROS): a plant driven like hardware, in wall-clock or lock-step time.

:class:`SimRunner` is what ``sim_node`` hosts (the node only translates messages): it holds
the latest actuator command (zero-order hold), falls back to the *hold* command when no valid
command arrived for a few command periods, applies external loads, advances the plant in steps
of exactly ``1/rate`` and keeps the real-time bookkeeping. Times in s; ``now`` is the caller's
clock (node clock: wall time, or simulated time in a lock-step graph), ``wall`` a monotonic
wall clock.

* **Real time** (:meth:`tick`): advance by the wall time the plant is behind, in ``1/rate``
  steps, at most ``max_catchup`` publish periods per tick; when the machine cannot keep up the
  simulated time *slips* (the plant slows down, its step never grows) and :meth:`update_rtf`
  reports the real-time factor (simulated / wall time over the last second). With
  ``wait_for_command`` (default off) a due step whose command (the answer to the last published
  state) has not come yet is taken when it comes (the node ticks again from its command
  callback while :attr:`deferred`) or at the next tick, whichever is first, as long as the
  controller answered the previous state: the synchronous read-update-write of a ros2_control
  loop, with the controller in another process. Steps taken without that answer are counted
  (``late_commands`` of ``ticks``).
* **Lock-step** (:meth:`command` returns the number of steps to take): one publish period per
  received command, nothing driven by a wall-clock timer.
* **Commands**: a command with the wrong length or a NaN/inf is rejected (counted, reason
  returned) and never reaches the plant. A valid command is held for ``command_timeout_periods``
  periods of the expected ``command_rate`` (default: 3 periods of ``publish_rate``, the
  controller answering every state; ``command_timeout`` [s] > 0 caps it), then the hold.
* **Limits at the boundary**: every command and the hold are saturated at the description's
  joint limits before they reach the plant (:meth:`SimRunner.saturate`, as ros2_control's
  joint limits: effort limits, and no effort pushing past a velocity or position limit);
  clipping is counted (``clipped_commands``, ``clipped_holds``).
* **One owner**: while :attr:`SimRunner.conflict` names a reason (the node sets it when its
  command topic has more than one publisher), the plant holds.
* **Hold**: ``'gravity'`` = the passive-joint-aware minimum-norm actuator forces balancing
  gravity minus ``hold_damping`` x actuated velocities (a plant with its own ``hold_command``
  decides: the SEA plant damps its motors), ``'zero'`` = nothing (valves closed for the
  hydraulic plant, whose commands are volts).
* **External loads** (a wrench exerted by the environment on the robot at a frame, see
  :meth:`robot_dynamics.plants.rigid.Plant.set_external_wrench`): NaN/inf, unknown frames and plants
  without a load input are rejected; a force above ``max_external_force`` N or a moment above
  ``max_external_moment`` N m is *clamped* to that norm (reported); with
  ``external_wrench_timeout`` > 0 a load not renewed for that long is dropped.
* **Refused steps**: a step that raises (non-finite state, singular mass matrix) or ends
  non-finite is undone (the plant state from before it is restored, :meth:`Plant.snapshot`),
  counted, reported, and the plant is put on hold; when the hold step fails too, an emergency
  stop (velocities zeroed in the last good configuration, counted) and the hold from rest; a
  plant whose hold from rest also fails stays frozen (simulated time stops) instead of
  publishing garbage.
* **Assembly mode**: a step whose plant events say the state left its assembly mode
  (``branch_jump``: a non-smooth step, ``branch_left``: the branch indicator changed,
  ``projection_failed``: no assembly near the integrated state; see :mod:`robot_dynamics.plants.rigid`)
  is refused like a non-finite one (``refuse_assembly_jumps``, default on): a late or absurd
  command makes the plant hold where it was, never continue in another assembly.
* **Events**: the plant's event list is kept to a bounded ring (the newest ``max_events``).

Log lines go to ``log(level, text, key)`` (``level`` 'info' | 'warning'; ``key`` groups
messages for throttling).
"""

from __future__ import annotations

import math
import time
from collections import deque

import numpy as np

from robot_dynamics.errors import InputError, RobotDynamicsError

#: plant events that refuse the step (the state left its assembly mode)
REFUSED_EVENTS = ('branch_jump', 'branch_left', 'projection_failed')


class AssemblyModeError(RobotDynamicsError):
    """A plant step left the assembly mode (a refused step, see :class:`SimRunner`)."""


__all__ = ['SimRunner', 'sim_params', 'runner_from_params', 'REFUSED_EVENTS', 'AssemblyModeError']


class SimRunner:
    """Drive ``plant`` (:class:`robot_dynamics.plants.rigid.Plant`) from actuator commands.

    ``joints``: command order (actuated joint names); ``rate``: integration rate [Hz];
    ``publish_rate`` [Hz]: states published per second (``substeps`` = rate / publish_rate
    steps between two states).
    """

    def __init__(
        self,
        model,
        plant,
        joints,
        *,
        rate=1000.0,
        publish_rate=100.0,
        command_timeout=0.0,
        command_timeout_periods=3.0,
        command_rate=0.0,
        hold='gravity',
        hold_damping=2.0,
        lockstep=False,
        max_catchup=2,
        external_wrench_reference='local',
        external_wrench_timeout=0.0,
        max_external_force=0.0,
        max_external_moment=0.0,
        max_events=1000,
        refuse_assembly_jumps=True,
        wait_for_command=False,
        whole_periods=False,
        log=None,
    ):
        self.model, self.plant = model, plant
        self.joints = list(joints)
        self.rate, self.publish_rate = float(rate), float(publish_rate)
        if not (self.rate > 0 and 0 < self.publish_rate <= self.rate):
            raise InputError(f'need 0 < publish_rate <= rate (got {publish_rate}, {rate})')
        if hold not in ('gravity', 'zero'):
            raise InputError(f"hold must be 'gravity' or 'zero', got {hold!r}")
        if int(max_catchup) < 1:
            raise InputError('max_catchup must be >= 1 (publish periods per tick)')
        if external_wrench_reference not in ('local', 'local_world_aligned', 'world'):
            raise InputError(
                "external_wrench_reference must be 'local', 'local_world_aligned' "
                f'or world, got {external_wrench_reference!r}'
            )
        if not float(external_wrench_timeout) >= 0:
            raise InputError('external_wrench_timeout must be >= 0 (0 = keep until replaced)')
        unknown = [j for j in self.joints if j not in model.joint_names]
        if unknown:
            raise InputError(f'joints {unknown} are not joints of {model.name}')
        self.idx = np.array([model.joint_index(j) for j in self.joints], dtype=np.int64)  # in v
        self.q_idx = np.asarray(model.q_of_v, dtype=np.int64)[self.idx]  # the same joints in q
        inside = [j for j, k in zip(self.joints, self.q_idx) if k < 0]
        if inside:
            raise InputError(f'joints {inside} are coordinates of a multi-DOF joint: commands go to one-DOF joints')
        if not (float(command_timeout_periods) > 0 and float(command_rate) >= 0 and float(command_timeout) >= 0):
            raise InputError(
                'need command_timeout_periods > 0, command_rate >= 0 and command_timeout >= 0 '
                f'(got {command_timeout_periods}, {command_rate}, {command_timeout})'
            )
        # hold after ``command_timeout_periods`` periods of the expected command rate (default:
        # the controller answers every published state), capped by command_timeout [s] if set
        self.command_rate = float(command_rate) or self.publish_rate
        self.timeout = float(command_timeout_periods) / self.command_rate
        if float(command_timeout) > 0:
            self.timeout = min(self.timeout, float(command_timeout))
        self.hold_mode, self.hold_damping = hold, float(hold_damping)
        # the boundary: every command and the hold saturated as ros2_control's joint limits
        # saturate an effort interface (see :meth:`saturate`)
        from robot_dynamics.plants.rigid import effort_bounds

        lim = np.asarray(plant.command_limits() if hasattr(plant, 'command_limits') else effort_bounds(model), float)
        self.command_limit = lim[self.idx]
        self.state_limits = getattr(plant, 'command_interface', 'effort') == 'effort'
        vl = np.asarray(model.velocity_limit, float)[self.idx]
        self.vmax = np.where(np.isfinite(vl) & (vl > 0), vl, np.inf)
        self.qlo = np.asarray(model.lower, float)[self.idx]
        self.qhi = np.asarray(model.upper, float)[self.idx]
        self.conflict = None  # a reason to hold (e.g. two command publishers)
        self.hold_after = float('nan')  # [s] last command -> hold, at the last timeout
        self.lockstep, self.max_catchup = bool(lockstep), int(max_catchup)
        self.wait_for_command, self.whole_periods = bool(wait_for_command), bool(whole_periods)
        self.deferred, self._kept_pace = False, False
        self.ext_reference, self.ext_timeout = external_wrench_reference, float(external_wrench_timeout)
        weight = 9.81 * float(np.sum(model.mass)) or 9.81
        self.max_force = float(max_external_force) or 100.0 * weight  # default: 100 x weight
        self.max_moment = float(max_external_moment) or self.max_force * 1.0  # ... at 1 m
        self.max_events = int(max_events)
        self.refuse_kinds = REFUSED_EVENTS if refuse_assembly_jumps else ()
        self.substeps = max(1, int(round(self.rate / self.publish_rate)))
        self.log = log or (lambda level, text, key=None: None)
        self.cmd = self.cmd_time = self.cmd_wall = None
        self.forced_hold, self.holding = False, True
        self.applied = np.zeros(model.nv)
        self.ext_rx = {}
        self.counts = dict(
            rejected_commands=0,
            rejected_wrenches=0,
            clamped_wrenches=0,
            refused_steps=0,
            emergency_stops=0,
            ticks=0,
            late_commands=0,
            clipped_commands=0,
            clipped_holds=0,
            command_timeouts=0,
        )
        self._fresh = False  # a command came since the last real-time step
        # state -> command at the plant (real time): wall time from a state's publication to the
        # first command after it (the controller's answer when it keeps pace; the plant's view
        # of the loop's latency, one DDS hop each way, no observer in between)
        self.answers = deque(maxlen=5000)
        self._pub_wall = None
        self.frozen = self._braking = False
        self.rtf, self.slip, self._rtf_window = 1.0, 0.0, []
        self.wall0 = None

    # ------------------------------------------------------------------ inputs
    def command(self, values, now, wall=None):
        """A command (actuator efforts in ``joints`` order). Returns ``(steps, reason)``: the
        steps to take now (lock-step: one publish period; real time: 0) or ``(0, reason)`` when
        it is rejected. ``wall``: its arrival on the wall clock (the state -> command time since
        :meth:`published`)."""
        data = list(values)
        if len(data) != len(self.joints) or not all(isinstance(v, (int, float)) and math.isfinite(v) for v in data):
            self.counts['rejected_commands'] += 1
            return 0, (
                f'expected {len(self.joints)} finite values for {self.joints}, got '
                f'{len(data)}' + ('' if len(data) != len(self.joints) else ' with NaN/inf')
            )
        self.cmd, self.cmd_time = np.asarray(data, float), float(now)
        self.cmd_wall = None if wall is None else float(wall)
        self._fresh = True
        if wall is not None and self._pub_wall is not None:
            self.answers.append(float(wall) - self._pub_wall)
            self._pub_wall = None
        return (self.substeps if self.lockstep else 0), None

    def external_wrench(self, frame, w, now):
        """Apply (or, all zero, remove) the load on ``frame``; returns None or the reason it
        was rejected. A load beyond the bounds is clamped (and reported)."""
        w = np.asarray(w, float)
        reason = self._check_wrench(frame, w)
        if reason:
            self.counts['rejected_wrenches'] += 1
            return reason
        f, m = np.linalg.norm(w[:3]), np.linalg.norm(w[3:])
        if f > self.max_force or m > self.max_moment:
            self.counts['clamped_wrenches'] += 1
            w = np.concatenate(
                [
                    w[:3] * min(1.0, self.max_force / f) if f else w[:3],
                    w[3:] * min(1.0, self.max_moment / m) if m else w[3:],
                ]
            )
            self.log(
                'warning',
                f"external wrench on '{frame}' clamped to |f| <= {self.max_force:g} N, "
                f'|m| <= {self.max_moment:g} N m (requested {f:.3g} N, {m:.3g} N m)',
                'clamp',
            )
        had = frame in self.plant.external_wrenches
        try:
            self.plant.set_external_wrench(frame, w, self.ext_reference)
        except RobotDynamicsError as exc:
            self.counts['rejected_wrenches'] += 1
            return str(exc)
        if np.any(w):
            self.ext_rx[frame] = float(now)
            if not had:
                if self.model.frame_parent[self.model.frame_index(frame)] < 0:
                    self.log(
                        'warning',
                        f"external wrench on '{frame}': the frame is fixed to the world, the load has no effect",
                        'fixed',
                    )
                self.log(
                    'info',
                    f"external wrench on '{frame}' applied from plant t = "
                    f'{self.plant.t:.4f} s: force {np.round(w[:3], 6).tolist()} N, moment '
                    f'{np.round(w[3:], 6).tolist()} N m ({self.ext_reference})',
                )
        else:
            self.ext_rx.pop(frame, None)
            if had:
                self.log(
                    'info', f"external wrench on '{frame}' removed at plant t = {self.plant.t:.4f} s (zero wrench)"
                )
        return None

    def _check_wrench(self, frame, w):
        if not getattr(self.plant, 'supports_external_wrench', False):
            return f'plant {type(self.plant).__name__} has no external-load input'
        if not frame:
            return 'empty header.frame_id (name the link the wrench acts on)'
        if frame not in self.model.frame_names:
            return f"unknown frame '{frame}' (frames: {list(self.model.frame_names)})"
        if w.shape != (6,) or not np.all(np.isfinite(w)):
            return f"NaN/inf in the wrench on '{frame}'"
        return None

    def drop_stale_loads(self, now):
        if self.ext_timeout <= 0:
            return
        for frame, t_rx in list(self.ext_rx.items()):
            if now - t_rx > self.ext_timeout:
                self.plant.set_external_wrench(frame, None)
                del self.ext_rx[frame]
                self.log(
                    'warning',
                    f"external wrench on '{frame}' dropped at plant t = "
                    f'{self.plant.t:.4f} s: no message for {now - t_rx:.3f} s > '
                    f'external_wrench_timeout = {self.ext_timeout:g} s',
                    'drop',
                )

    # ------------------------------------------------------------------ stepping
    def effort(self, now, wall=None):
        """Generalized force (nv,) to apply now: the fresh command or the hold command, both
        saturated at the joints' limits (:meth:`saturate`). A command's age is taken on the
        wall clock in real time (``wall`` and the command's arrival on it: a node on the plant
        clock sees /clock in steps coarser than a 1 kHz command period), on ``now`` (plant time)
        in lock-step."""
        m = self.model
        age = (
            None
            if self.cmd is None
            else (
                wall - self.cmd_wall
                if (wall is not None and self.cmd_wall is not None and not self.lockstep)
                else now - self.cmd_time
            )
        )
        fresh = self.cmd is not None and not self.forced_hold and self.conflict is None and age <= self.timeout
        if fresh:
            if self.holding:
                self.log('info', 'commands received: leaving hold', 'hold')
            self.holding = False
            tau = np.zeros(m.nv)
            tau[self.idx] = self.cmd
            return self.saturate(tau, 'clipped_commands')
        if not self.holding:
            why = (
                self.conflict
                if self.conflict is not None
                else 'hold forced'
                if self.forced_hold
                else f'no valid command for {self.timeout:g} s'
            )
            if self.cmd is not None and self.conflict is None and not self.forced_hold:
                self.counts['command_timeouts'] += 1
                self.hold_after = float(age)  # [s] last command -> hold
            self.log('warning', f'{why}: hold ({self.hold_mode})', 'hold')
        self.holding = True
        return self.saturate(self.hold_effort(), 'clipped_holds')

    def saturate(self, tau, count):
        """Clip the commanded joints of ``tau`` (nv,) in place, as ros2_control's joint limits
        saturate an effort command: to +-``command_limit`` (the plant's
        :meth:`~robot_dynamics.plants.rigid.Plant.command_limits`: URDF effort limits, or the valve
        saturation of the hydraulic plant), and for an effort interface no effort that pushes
        further past a velocity limit (``|qd| > velocity``) or a position limit (at ``lower`` /
        ``upper`` and moving outwards). A clipped command is counted under ``count`` (per
        applied command: once per published state) and reported (throttled)."""
        u = tau[self.idx]
        hi = self.command_limit
        lo = -hi
        if self.state_limits:
            q, qd = self.plant.q[self.q_idx], self.plant.qd[self.idx]
            if ((np.abs(qd) > self.vmax) | (q <= self.qlo) | (q >= self.qhi)).any():  # (rare)
                lo = np.where((qd < -self.vmax) | ((q <= self.qlo) & (qd <= 0.0)), 0.0, lo)
                hi = np.where((qd > self.vmax) | ((q >= self.qhi) & (qd >= 0.0)), 0.0, hi)
        if (u >= lo).all() and (u <= hi).all():
            return tau
        c = np.minimum(np.maximum(u, lo), hi)
        if np.any(c != u):
            self.counts[count] += 1
            k = int(np.argmax(np.abs(c - u)))
            self.log(
                'warning',
                f'{"hold" if count == "clipped_holds" else "command"} of {self.joints[k]} '
                f'clipped from {u[k]:.6g} to {c[k]:.6g} (limit {hi[k]:.6g}, velocity '
                f'{self.plant.qd[self.idx[k]]:.4g}; joint limits of the description)',
                count,
            )
            tau[self.idx] = c
        return tau

    def hold_effort(self):
        if self.hold_mode == 'zero':
            return np.zeros(self.model.nv)
        if hasattr(self.plant, 'hold_command'):  # the plant knows its hold (SEA: motor damping)
            return self.plant.hold_command(self.hold_damping)
        from robot_dynamics.algorithms.projection import hold_command

        return hold_command(self.model, self.plant.q, self.plant.qd, self.hold_damping)

    def advance(self, k, now, wall=None):
        """Take ``k`` steps with the effort held; a failing step is refused (see the module
        doc). Returns the number of steps taken."""
        self.drop_stale_loads(now)
        if self.frozen:
            return 0
        tau = self.effort(now, wall)
        snap = self.plant.snapshot()
        try:
            for _ in range(k):
                info = self.plant.step(tau)
                for ev in info.events:
                    msg = getattr(ev, 'message', ev)
                    self.log(
                        'warning',
                        f'plant event {getattr(ev, "kind", "")} at t = {getattr(ev, "t", self.plant.t):.3f} s: {msg}',
                        'event',
                    )
                    if getattr(ev, 'kind', '') in self.refuse_kinds:
                        raise AssemblyModeError(f'the step left the assembly mode ({ev.kind})')
            if not (np.all(np.isfinite(self.plant.q)) and np.all(np.isfinite(self.plant.qd))):
                raise RobotDynamicsError('the state became non-finite')
        except (RobotDynamicsError, ArithmeticError, ValueError, np.linalg.LinAlgError) as exc:
            # (a compiled integrator reports a blown-up state as LinAlgError / ValueError)
            return self._refuse(snap, exc, tau, k, now, wall)
        ev = getattr(self.plant, 'events', None)
        if isinstance(ev, list) and len(ev) > self.max_events:
            del ev[: -self.max_events // 10]
        self.applied = tau
        return k

    def _refuse(self, snap, exc, tau, k, now, wall=None):
        self.plant.restore(snap)
        self.counts['refused_steps'] += 1
        if self.holding or self.forced_hold:
            if not self._braking and isinstance(snap.get('qd'), np.ndarray):
                # the hold fails too (the state moves too fast for it): emergency stop, the
                # velocities set to zero at the last good configuration, then hold from rest
                snap = dict(snap, qd=np.zeros_like(snap['qd']))
                self.plant.restore(snap)
                self.counts['emergency_stops'] += 1
                self.log(
                    'warning',
                    f'step refused at plant t = {self.plant.t:.4f} s ({exc}) and the hold '
                    'fails too: emergency stop (velocities zeroed in the last good configuration), '
                    'plant on hold',
                    'estop',
                )
                self._braking = True
                try:
                    return self.advance(k, now, wall)
                finally:
                    self._braking = False
            self.frozen = True  # the hold from rest fails too: freeze
            self.log(
                'warning',
                f'step refused at plant t = {self.plant.t:.4f} s ({exc}); the hold '
                'command fails too: the plant is frozen until ~/reset',
                'refuse',
            )
            return 0
        self.log(
            'warning',
            f'step refused at plant t = {self.plant.t:.4f} s ({exc}): state kept, '
            f'plant on hold ({self.hold_mode}) until the next command',
            'refuse',
        )
        self.cmd = None  # the command that failed is not re-applied
        return self.advance(k, now, wall)

    def prepare(self, now=0.0):
        """One step under the hold, undone (plant state and events restored): loads the
        plant's compiled kernels now instead of at the first real step, where a real-time plant
        would stall (the IRSBot-2 plant loaded three kernels after its clock started). Returns
        the seconds it took; a failure is left to the first real step."""
        t0 = time.perf_counter()
        snap = self.plant.snapshot()
        ev = getattr(self.plant, 'events', None)
        n_ev = len(ev) if isinstance(ev, list) else None
        try:
            self.plant.step(self.hold_effort())
        except Exception:  # noqa: BLE001 - the real step reports it
            pass
        finally:
            self.plant.restore(snap)
            if n_ev is not None:
                del ev[n_ev:]
        return time.perf_counter() - t0

    def start(self, wall):
        """Start the wall-clock mapping (real time)."""
        self.wall0, self.slip = float(wall), 0.0

    def tick(self, wall, now):
        """Real time: advance by the wall time the plant is behind (whole steps, bounded).
        Returns the number of steps taken (0: nothing new to publish)."""
        behind = (wall - self.wall0 - self.slip) - self.plant.t
        k = int(math.floor(behind * self.rate + 1e-6))
        kmax = self.max_catchup * self.substeps + (self.substeps if self.deferred else 0)  # (a wait
        # must not eat the catch-up headroom)
        if k > kmax:  # cannot keep up: let simulated time slip
            self.slip += (k - kmax) / self.rate
            k = kmax
        elif self.whole_periods:  # whole publish periods: states on the publish
            n = int(round(self.plant.t * self.rate))  # grid, each command held one period
            k = (n + k) // self.substeps * self.substeps - n  # (as in lock-step)
        if k <= 0:
            return 0
        # the controller's deadline: a command should answer the state published at the last
        # step before the interval after that state is integrated (else the older command acts
        # for the whole interval). wait_for_command: while the controller kept pace (the last
        # step had its answer) and less than two periods are due, the step waits for the
        # command (the caller ticks again when it comes: ``deferred``) or the next tick,
        # whichever is first; simulated time stays on the wall clock (the step is only
        # computed later). A step taken without an answer is counted (late_commands).
        if (
            self.wait_for_command
            and not self._fresh
            and self._kept_pace
            and self.cmd is not None
            and k < 2 * self.substeps
            and not self.holding
        ):
            self.deferred = True
            return 0
        self.counts['ticks'] += 1
        if not self._fresh and self.cmd is not None:
            self.counts['late_commands'] += 1
        self._kept_pace, self._fresh, self.deferred = self._fresh, False, False
        taken = self.advance(k, now, wall)
        if taken < k:  # frozen: simulated time stops
            self.slip += (k - taken) / self.rate
        return taken

    def published(self, wall):
        """A state was published at ``wall`` (wall clock [s]): the next command's arrival
        measures the state -> command time at the plant (``answer_*`` in :meth:`diagnostics`)."""
        self._pub_wall = float(wall)

    def update_rtf(self, wall):
        """Real-time factor over the last ~1 s (None until known)."""
        self._rtf_window.append((wall, self.plant.t))
        self._rtf_window = [w for w in self._rtf_window if wall - w[0] <= 5.0]
        (w0, t0), (w1, t1) = self._rtf_window[max(0, len(self._rtf_window) - 2)], self._rtf_window[-1]
        if w1 - w0 > 0.5:
            self.rtf = (t1 - t0) / (w1 - w0)
            return self.rtf
        return None

    def reset(self, wall=None):
        self.plant.reset()
        self.cmd, self.frozen = None, False
        if wall is not None:
            self.start(wall)

    def diagnostics(self):
        reason = (
            'frozen (a step and the hold failed)'
            if self.frozen
            else f'hold ({self.conflict})'
            if self.conflict is not None
            else 'hold (no valid command)'
            if self.holding
            else 'ok'
        )
        d = {
            'plant_time': float(self.plant.t),
            'real_time_factor': float(self.rtf),
            'slip': float(self.slip),
            'rate': self.rate,
            'holding': bool(self.holding),
            'lockstep': self.lockstep,
            **self.counts,
            'command_timeout': self.timeout,
            'hold_after': self.hold_after,
            'safe': bool(self.holding or self.frozen),
            'reason': reason,
        }
        if self.conflict is not None:
            d['error'] = self.conflict
        if self.answers:  # [s] state -> command at the plant (real time)
            a = np.fromiter(self.answers, float)
            d.update(
                answer_p50=float(np.percentile(a, 50)),
                answer_p99=float(np.percentile(a, 99)),
                answer_max=float(a.max()),
            )
        return d


def sim_params(model):
    """The simulator node's parameters: {name: (default, description, constraint)} (see
    ``robot_dynamics.ros._common.declare_params``; also what a bringup config is checked
    against before any process starts)."""
    from robot_dynamics.plants.registry import BACKENDS, plant_kinds

    m = model
    return {
        'plant': (
            'rigid',
            'what the actuators are: rigid effort, hydraulic, sea (registry robot_dynamics.plants.registry)',
            tuple(plant_kinds()),
        ),
        'backend': (
            'rigid',
            "what integrates the multibody: rigid (the package's closed-chain integrator) or mujoco",
            BACKENDS,
        ),
        'rate': (1000.0, 'integration rate [Hz] (fixed step 1/rate)', (1e-3, 1e6)),
        'publish_rate': (100.0, '/joint_states rate [Hz] (<= rate)', (1e-3, 1e6)),
        'controller': ('effort_controller', 'commands come on /<controller>/commands', None),
        'joints': (list(m.actuated), 'command order (actuated joint names)', None),
        'command_timeout_periods': (
            3.0,
            'no valid command for that many periods of command_rate -> hold',
            (0.5, 1000.0),
        ),
        'command_rate': (
            0.0,
            'expected command rate [Hz] (0 = publish_rate: the controller answers every state)',
            (0.0, 1e6),
        ),
        'command_timeout': (0.0, 'cap on the command timeout [s] (0 = the periods rule alone)', (0.0, 1e3)),
        'hold': ('gravity', 'hold command: gravity balance or zero effort', ('gravity', 'zero')),
        'hold_damping': (2.0, 'hold damping on the actuated joints [N m s/rad]', (0.0, 1e4)),
        'initial_positions': (m.reference_q().tolist(), 'initial q (model order)', None),
        'lockstep': (False, 'one publish period per received command (deterministic tests)', None),
        'lockstep_republish': (0.0, 'lock-step: re-publish an unchanged state after [s] (0 = off)', (0.0, 60.0)),
        'max_catchup': (2, 'publish periods integrated per tick at most (then time slips)', (1, 10000)),
        'wait_for_command': (
            False,
            'real time: a step waits for the command answering the last state '
            'until it comes or the next tick (while the controller keeps pace)',
            None,
        ),
        'whole_periods': (
            False,
            'real time: step whole publish periods only (states on the publish '
            'grid; up to a period of delay against the timer phase)',
            None,
        ),
        'external_wrench_reference': (
            'local',
            'axes/point of ~/external_wrench',
            ('local', 'local_world_aligned', 'world'),
        ),
        'external_wrench_timeout': (0.0, 'drop a load not renewed for [s] (0 = keep)', (0.0, 1e3)),
        'max_external_force': (0.0, 'external force bound [N] (0 = 100 x robot weight)', (0.0, 1e8)),
        'max_external_moment': (0.0, 'external moment bound [N m] (0 = force bound x 1 m)', (0.0, 1e8)),
        'extra_states_topic': ('hydraulics/cylinder_states', 'plant extra states (cylinders)', None),
        'diagnostics_rate': (1.0, '/diagnostics rate [Hz] (0 = off)', (0.0, 1000.0)),
        'refuse_assembly_jumps': (True, 'refuse a step that leaves the assembly mode (plant holds)', None),
        'publish_robot_description': (
            True,
            'publish the URDF on robot_description (latched); false when '
            'robot_state_publisher publishes it (the launch files)',
            None,
        ),
        'clock_rate': (
            0.0,
            'real time: /clock at most this often [Hz of plant time] (0 = with '
            'every state; lock-step: always with every state)',
            (0.0, 1e6),
        ),
        'joint_states_rate': (
            0.0,
            'real time, with an extra-states or control_state_topic: joint_states '
            'at most this often [Hz of plant time] (that topic carries every joint '
            'with each state; 0 = with every state)',
            (0.0, 1e6),
        ),
        'control_state_topic': (
            '',
            'every published state also on this JointState topic (the '
            "controller's state_topic; empty = none): joint_states is then for "
            'visualisation, decimated by joint_states_rate in real time',
            None,
        ),
        'start_with_command': (
            True,
            'real time with start_topic: the plant clock also waits for a '
            'valid command or a publisher on the command topic (the controller is up)',
            None,
        ),
        'start_topic': (
            '',
            'real time: the plant clock starts with the first message here (JointState; empty = at once)',
            None,
        ),
        'start_delay': (
            0.0,
            'real time with start_topic: wall seconds from the start condition to the '
            'plant clock (the rest of the graph finishes starting; the state waits at rest)',
            (0.0, 60.0),
        ),
    }


def runner_from_params(model, P, log=None):
    """The :class:`SimRunner` (with its plant, :func:`robot_dynamics.plants.make_plant`) of the
    simulator node's parameters ``P`` (:func:`sim_params`): the plant ``P['plant']`` on the
    multibody backend ``P.get('backend', 'rigid')``. The hydraulic plant takes valve
    voltages: its hold 'gravity' becomes 'zero' (valves closed), reported through ``log``."""
    from robot_dynamics.plants.registry import make_plant

    rate, kind, hold = float(P['rate']), P['plant'], P['hold']
    backend = P.get('backend', 'rigid')
    if kind == 'hydraulic' and hold == 'gravity':
        if log:
            log('warning', "plant 'hydraulic' takes valve voltages: hold 'gravity' replaced by 'zero' (valves closed)")
        hold = 'zero'
    plant = make_plant(kind, model, np.asarray(P['initial_positions'], float), dt=1.0 / rate, backend=backend)
    if log and backend != 'rigid':
        log('info', f"plant '{kind}' on the {backend} backend ({type(plant).__name__})")
    return SimRunner(
        model,
        plant,
        P['joints'],
        rate=rate,
        publish_rate=float(P['publish_rate']),
        command_timeout=float(P['command_timeout']),
        command_rate=float(P['command_rate']),
        command_timeout_periods=float(P['command_timeout_periods']),
        hold=hold,
        hold_damping=float(P['hold_damping']),
        lockstep=bool(P['lockstep']),
        max_catchup=int(P['max_catchup']),
        external_wrench_reference=P['external_wrench_reference'],
        external_wrench_timeout=float(P['external_wrench_timeout']),
        max_external_force=float(P['max_external_force']),
        max_external_moment=float(P['max_external_moment']),
        refuse_assembly_jumps=bool(P['refuse_assembly_jumps']),
        wait_for_command=bool(P['wait_for_command']),
        whole_periods=bool(P['whole_periods']),
        log=log,
    )
