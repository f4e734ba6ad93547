"""sim_node: the simulated plant standing in for hardware (ros2_control-compatible topics).

Integrates the robot at ``rate`` Hz with the plant named by ``plant`` (default 'rigid': the
closed-chain projection engine :class:`robot_dynamics.sim.ConstrainedPlant`, seed 002; a tree
is the special case without loops; see :mod:`robot_dynamics.plants`), holding the latest actuator command (zero-order hold). Publishes ``/joint_states``
(every joint, passive ones included; ``effort`` = applied generalized force) at
``publish_rate`` Hz and the URDF on ``/robot_description`` (latched).

Commands: ``/<controller>/commands`` (std_msgs/Float64MultiArray, actuated joints in the
order of the ``joints`` parameter). A command with the wrong length or a NaN/inf is rejected
with a warning and never reaches the plant. If no valid command arrived for
``command_timeout`` s the plant is put on *hold*: ``hold: gravity`` applies the
passive-joint-aware minimum-norm actuator forces balancing gravity minus ``hold_damping``
times the actuated joint velocities; ``hold: zero`` applies nothing.

Real time (default): a steady (wall-clock) timer at ``publish_rate`` advances the plant by the
wall time elapsed since the previous tick, in steps of exactly 1/``rate`` (never a larger step),
at most ``max_catchup`` publish periods per tick (default 2); when the machine cannot keep up
the simulated time falls behind (the plant slows down, it never takes a bigger step) and the
real-time factor (simulated / wall time over the last second) is published on
``~/real_time_factor`` (std_msgs/Float64, 1 Hz) and in ``/diagnostics``, with a warning below
0.95. The ``/joint_states`` stamp is the plant's time mapped onto the wall clock (start time +
simulated time): a slowed plant therefore stamps its states in the past, which controllers see
as latency, not as a jump.

``start_topic`` (real time only, default '' = start at once): a sensor_msgs/JointState topic
(e.g. the reference the controller needs); the plant clock starts with its first message, until
then the initial state is published at ``publish_rate`` without stepping (stamp: the wall
clock, or plant time 0 with ``publish_clock``), like a braked robot waiting for its reference.
With ``publish_clock``, ``use_sim_time`` on the other nodes and a reference generator answering
the states (trajectory_node ``sync_topic``), the whole graph runs on the plant clock, which
advances in wall-clock time (the way a Gazebo simulation drives a ROS graph): the reference
starts with the motion (its first sample answers the waiting state, t = 0) and follows a
slowed plant.

``lockstep: true``: instead of running in real time, advance one publish period per received
command and publish right after (deterministic coupling with a controller; no wall-clock timer
steps the plant).
Services: ``~/reset`` (std_srvs/Trigger), ``~/hold`` (std_srvs/SetBool: force hold on/off).
``~/holding`` (std_msgs/Bool) is published with every joint state: True while on hold.
``publish_clock`` (default = ``lockstep``): publish the plant time on ``/clock``
(rosgraph_msgs/Clock) and stamp ``/joint_states`` with it, so the other nodes of a lock-step
graph run on simulated time with ``use_sim_time: true`` (their timers, e.g. the reference
generator, then advance with the simulation, however slowly it runs).
``lockstep_republish`` (s of wall time, default 0 = off; lock-step only): when no command arrived
for that long, publish the current state again, unchanged and with the same stamp, without
advancing. It starts a lock-step graph whose first state was published before the controller
had subscribed (and restarts it after a controller restart); controllers answer a stamp once.

External loads: ``~/external_wrench`` (geometry_msgs/WrenchStamped): a wrench exerted **by
the environment on the robot**. ``header.frame_id`` = the frame (URDF link) it acts on: the
force is applied at that frame's origin and the moment is about that origin, both expressed in
the frame's own axes (``external_wrench_reference: local``, default; ``local_world_aligned``:
world axes at the frame origin; ``world``: spatial wrench about the world origin). One load per
frame: a message replaces the load of its frame, an all-zero wrench removes it. An empty or
unknown frame_id, a NaN/inf component or a plant without an external-load input: rejected with
a (throttled) warning, never passed to the plant. The load is held (constant, like the command)
until replaced; with ``external_wrench_timeout`` > 0 (s) a load whose last message is older
than that is dropped with a warning (time base: plant time in lock-step, the node clock
otherwise; reception time, not the header stamp, counts). Loads survive ``~/reset``. Applying
and removing a load is logged (info) with the plant time. Plant API:
:meth:`robot_dynamics.sim.Plant.set_external_wrench` (rigid plant: ``J_f^T w`` added to the tree
forces before the projection; hydraulic plant: the tool wrench F_D of the Newton-Euler model
for frames on the tool body, a generalized force otherwise). ``/joint_states`` effort stays the
commanded force (the load is not included).

Plant extra states (hook, used by ``plant: hydraulic``): if the plant has ``extra_states()``,
they are published on ``extra_states_topic`` (default ``/hydraulics/cylinder_states``,
sensor_msgs/JointState) with the same stamp as ``/joint_states``: per cylinder ``<cyl>``
position = stroke [m], velocity = stroke rate [m/s], effort = piston force A_a p_a - A_b p_b
[N]; entries ``<cyl>/p_a``, ``<cyl>/p_b`` carry the chamber pressures [Pa] and ``<cyl>/u`` the
applied (saturated) valve input [V] in ``position`` (velocity, effort 0). The commands of the
hydraulic plant are valve voltages, so ``hold: gravity`` (forces) is replaced by ``hold: zero``
(valves closed) for it, with a warning.
"""
import time

import numpy as np
from geometry_msgs.msg import WrenchStamped
from rclpy.node import Node
from rclpy.time import Time
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from rclpy.clock import Clock as SteadyClock, ClockType
from std_msgs.msg import Bool, Float64, Float64MultiArray, String
from std_srvs.srv import SetBool, Trigger

from robot_dynamics.control import hold_command
from robot_dynamics.errors import RobotDynamicsError
from robot_dynamics.nodes._common import (QOS_COMMAND, QOS_LATCHED, QOS_STATE, DiagnosticsPublisher,
                                          finite_list, load_model_param, spin_node)
from robot_dynamics.plants import make_plant


class SimNode(Node):
    """Fixed-step simulation of the closed-chain plant driven by effort commands."""

    def __init__(self):
        super().__init__('sim_node')
        self.model = m = load_model_param(self)
        dp = self.declare_parameter
        self.rate = float(dp('rate', 1000.0).value)
        self.publish_rate = float(dp('publish_rate', 100.0).value)
        controller = dp('controller', 'effort_controller').value
        self.joints = list(dp('joints', list(m.actuated)).value)
        self.timeout = float(dp('command_timeout', 0.2).value)
        self.hold_mode = dp('hold', 'gravity').value
        self.hold_damping = float(dp('hold_damping', 2.0).value)
        self.lockstep = bool(dp('lockstep', False).value)
        # simulated time: /clock + sim-time stamps (other nodes then run with use_sim_time)
        self.publish_clock = bool(dp('publish_clock', self.lockstep).value)
        q0 = list(dp('initial_positions', m.reference_q().tolist()).value)
        if self.rate <= 0 or self.publish_rate <= 0 or self.publish_rate > self.rate:
            raise ValueError('need 0 < publish_rate <= rate')
        if self.hold_mode not in ('gravity', 'zero'):
            raise ValueError(f"hold must be 'gravity' or 'zero', got {self.hold_mode!r}")
        self.idx = np.array([m.joint_index(j) for j in self.joints], dtype=np.int64)
        kind = dp('plant', 'rigid').value
        self.plant = make_plant(kind, m, np.asarray(q0, float), dt=1.0 / self.rate)
        # --- plant extra states hook (hydraulic cylinder states) -------------------------
        self.pub_extra = None
        if hasattr(self.plant, 'extra_states'):
            self.pub_extra = self.create_publisher(
                JointState, dp('extra_states_topic', '/hydraulics/cylinder_states').value, QOS_STATE)
        if kind == 'hydraulic' and self.hold_mode == 'gravity':
            self.get_logger().warning("plant 'hydraulic' takes valve voltages: hold 'gravity' "
                                      "replaced by 'zero' (valves closed)")
            self.hold_mode = 'zero'
        # --- end of hook -------------------------------------------------------------------
        self.substeps = max(1, int(round(self.rate / self.publish_rate)))
        self.cmd = None
        self.cmd_time = None
        self.forced_hold = False
        self.holding = True
        self.rejected = 0
        self.pub_js = self.create_publisher(JointState, 'joint_states', QOS_STATE)
        self.pub_hold = self.create_publisher(Bool, '~/holding', QOS_STATE)
        self.pub_clock = self.create_publisher(Clock, '/clock', QOS_STATE) if self.publish_clock else None
        desc = self.create_publisher(String, 'robot_description', QOS_LATCHED)
        desc.publish(String(data=m.urdf_xml))
        self.create_subscription(Float64MultiArray, f'/{controller}/commands', self.on_command,
                                 QOS_COMMAND)
        # --- external loads (~/external_wrench, see the module doc) -------------------------
        self.ext_reference = dp('external_wrench_reference', 'local').value
        self.ext_timeout = float(dp('external_wrench_timeout', 0.0).value)
        if self.ext_reference not in ('local', 'local_world_aligned', 'world'):
            raise ValueError("external_wrench_reference must be 'local', 'local_world_aligned' "
                             f"or 'world', got {self.ext_reference!r}")
        if not self.ext_timeout >= 0:
            raise ValueError('external_wrench_timeout must be >= 0 (0 = keep until replaced)')
        self.ext_rx = {}                      # frame -> reception time (time base: ext_now())
        self.rejected_wrench = 0
        self._wrench_warned = {}
        self.create_subscription(WrenchStamped, '~/external_wrench', self.on_external_wrench,
                                 QOS_COMMAND)
        # --- end external loads
        self.create_service(Trigger, '~/reset', self.on_reset)
        self.create_service(SetBool, '~/hold', self.on_hold)
        self.max_catchup = int(dp('max_catchup', 2).value)
        if self.max_catchup < 1:
            raise ValueError('max_catchup must be >= 1 (publish periods per tick)')
        self.pub_rtf = self.create_publisher(Float64, '~/real_time_factor', QOS_STATE)
        self.rtf, self.rtf_window = 1.0, []          # (wall, plant t) samples over ~1 s
        self.slip = 0.0                              # wall time the plant fell behind [s]
        self.diag = DiagnosticsPublisher(self, self.diagnostics, float(dp('diagnostics_rate', 1.0).value))
        # real time: wait for the first message of start_topic before the plant clock starts
        start_topic = dp('start_topic', '').value
        self.waiting = bool(start_topic) and not self.lockstep
        if self.waiting:
            self._start_sub = self.create_subscription(JointState, start_topic, self.on_start,
                                                       QOS_STATE)
        if not self.lockstep:
            self.wall0 = time.monotonic()
            self.ros0 = self.get_clock().now().nanoseconds * 1e-9
            self.last_wall = self.wall0
            self.create_timer(1.0 / self.publish_rate, self.tick,
                              clock=SteadyClock(clock_type=ClockType.STEADY_TIME))
            self.create_timer(1.0, self.report_rtf, clock=SteadyClock(clock_type=ClockType.STEADY_TIME))
        # --- lock-step idle republish (seed 004 SEA graph; off by default) ----------------
        self.republish = float(dp('lockstep_republish', 0.0).value)
        self.last_cmd_wall = time.monotonic()
        if self.lockstep and self.republish > 0:
            self.create_timer(self.republish, self.on_idle)
        # --- end lock-step idle republish
        self.publish()
        self.get_logger().info(
            f'{m.name}: {self.rate:g} Hz integration, /joint_states at {self.publish_rate:g} Hz, '
            f'commands on /{controller}/commands for {self.joints}, hold={self.hold_mode} after '
            f'{self.timeout:g} s' + (', lock-step' if self.lockstep else ''))

    # ------------------------------------------------------------------ inputs
    def on_command(self, msg):
        data = list(msg.data)
        if not finite_list(data, len(self.joints)):
            self.rejected += 1
            self.get_logger().warning(
                f'rejected command: expected {len(self.joints)} finite values for {self.joints}, '
                f'got {len(data)}' + ('' if len(data) != len(self.joints) else ' with NaN/inf'),
                throttle_duration_sec=2.0)
            return
        self.cmd = np.asarray(data, float)
        self.cmd_time = self.get_clock().now()
        self.last_cmd_wall = time.monotonic()
        if self.lockstep:
            self.advance(self.substeps)
            self.publish()

    def on_start(self, msg):
        """start_topic: its first message starts the plant clock (plant t = 0 is now)."""
        if not self.waiting:
            return
        self.waiting = False
        self.wall0, self.ros0, self.slip = (time.monotonic(),
                                            self.get_clock().now().nanoseconds * 1e-9, 0.0)
        self.get_logger().info('start_topic: first message, plant clock started')

    def ext_now(self):
        """Time base of the external-load timeout: plant time in lock-step, else the node clock."""
        if self.lockstep:
            return self.plant.t
        return self.get_clock().now().nanoseconds * 1e-9

    def reject_wrench(self, why, key):
        """Count and warn (throttled to one warning per reason ``key`` every 2 s)."""
        self.rejected_wrench += 1
        now = time.monotonic()
        if now - self._wrench_warned.get(key, -1e9) >= 2.0:
            self._wrench_warned[key] = now
            self.get_logger().warning(f'rejected external_wrench: {why}')

    def on_external_wrench(self, msg):
        frame = msg.header.frame_id
        f, m = msg.wrench.force, msg.wrench.torque
        w = np.array([f.x, f.y, f.z, m.x, m.y, m.z], dtype=float)
        if not getattr(self.plant, 'supports_external_wrench', False):
            return self.reject_wrench(f'plant {type(self.plant).__name__} has no external-load '
                                      'input', 'plant')
        if not frame:
            return self.reject_wrench('empty header.frame_id (name the link the wrench acts on)',
                                      'empty')
        if frame not in self.model.frame_names:
            return self.reject_wrench(f"unknown frame '{frame}' (frames: "
                                      f'{list(self.model.frame_names)})', 'frame')
        if not np.all(np.isfinite(w)):
            return self.reject_wrench(f"NaN/inf in the wrench on '{frame}'", 'nan')
        had = frame in self.plant.external_wrenches
        try:
            self.plant.set_external_wrench(frame, w, self.ext_reference)
        except RobotDynamicsError as exc:
            return self.reject_wrench(str(exc), 'plant')
        log = self.get_logger()
        if np.any(w):
            self.ext_rx[frame] = self.ext_now()
            if not had:
                if self.model.frame_parent[self.model.frame_index(frame)] < 0:
                    log.warning(f"external wrench on '{frame}': the frame is fixed to the world, "
                                'the load has no effect')
                log.info(f"external wrench on '{frame}' applied from plant t = {self.plant.t:.4f} s: "
                         f'force {np.round(w[:3], 6).tolist()} N, moment {np.round(w[3:], 6).tolist()} '
                         f'N m ({self.ext_reference})')
        else:
            self.ext_rx.pop(frame, None)
            if had:
                log.info(f"external wrench on '{frame}' removed at plant t = {self.plant.t:.4f} s "
                         '(zero wrench)')

    def drop_stale_loads(self):
        if self.ext_timeout <= 0 or not self.ext_rx:
            return
        now = self.ext_now()
        for frame, t_rx in list(self.ext_rx.items()):
            if now - t_rx > self.ext_timeout:
                self.plant.set_external_wrench(frame, None)
                del self.ext_rx[frame]
                self.get_logger().warning(
                    f"external wrench on '{frame}' dropped at plant t = {self.plant.t:.4f} s: no "
                    f'message for {now - t_rx:.3f} s > external_wrench_timeout = {self.ext_timeout:g} s')

    def on_idle(self):
        """Lock-step idle republish (see ``lockstep_republish``): same state, same stamp."""
        if time.monotonic() - self.last_cmd_wall >= self.republish:
            self.publish()

    def on_reset(self, request, response):
        self.plant.reset()
        if not self.lockstep:                  # restart the wall-clock mapping at plant t = 0
            self.wall0, self.ros0, self.slip = time.monotonic(), self.get_clock().now().nanoseconds * 1e-9, 0.0
        for frame in self.ext_rx:              # loads survive the reset; their age restarts
            self.ext_rx[frame] = self.ext_now()
        self.cmd = None
        response.success, response.message = True, f'reset to t = 0, q = {self.plant.q.tolist()}'
        self.publish()
        return response

    def on_hold(self, request, response):
        self.forced_hold = bool(request.data)
        response.success, response.message = True, f'hold forced {"on" if self.forced_hold else "off"}'
        return response

    # ------------------------------------------------------------------ stepping
    def effort(self):
        """Generalized force (n,) to apply now: the fresh command, or the hold command."""
        m = self.model
        fresh = (self.cmd is not None and self.cmd_time is not None and not self.forced_hold
                 and (self.get_clock().now() - self.cmd_time).nanoseconds * 1e-9 <= self.timeout)
        if fresh:
            if self.holding:
                self.get_logger().info('commands received: leaving hold')
            self.holding = False
            tau = np.zeros(m.nq)
            tau[self.idx] = self.cmd
            return tau
        if not self.holding:
            self.get_logger().warning(f'no valid command for {self.timeout:g} s: hold ({self.hold_mode})')
        self.holding = True
        if self.hold_mode == 'zero':
            return np.zeros(m.nq)
        # --- plant-specific hold (seed 004): a plant with its own hold_command (the SEA plant:
        # the rigid model's gravity balance does not know the springs) decides what 'gravity'
        # hold means for it; see docs/recursive_id_sea.md
        if hasattr(self.plant, 'hold_command'):
            return self.plant.hold_command(self.hold_damping)
        # --- end plant-specific hold
        return hold_command(m, self.plant.q, self.plant.qd, self.hold_damping)

    def advance(self, k):
        self.drop_stale_loads()
        tau = self.effort()
        for _ in range(k):
            info = self.plant.step(tau)
            for ev in info.events:
                self.get_logger().warning(f'plant event {ev.kind} at t = {ev.t:.3f} s: {ev.message}',
                                          throttle_duration_sec=1.0)
        ev = getattr(self.plant, 'events', None)
        if isinstance(ev, list) and len(ev) > 1000:     # logged above: keep memory bounded
            del ev[:-100]
        self.applied = tau

    def tick(self):
        """Real time: advance by the wall time the plant is behind, in dt steps, bounded."""
        wall = time.monotonic()
        if self.waiting:                       # start_topic: no step before its first message
            self.wall0, self.ros0 = wall, self.get_clock().now().nanoseconds * 1e-9
            self.publish()
            return
        behind = (wall - self.wall0 - self.slip) - self.plant.t      # wall time not yet simulated
        k = int(np.floor(behind * self.rate + 1e-6))
        kmax = self.max_catchup * self.substeps
        if k > kmax:                          # cannot keep up: let simulated time slip
            self.slip += (k - kmax) / self.rate
            k = kmax
        if k <= 0:
            return
        self.advance(k)
        self.publish()

    def report_rtf(self):
        if self.waiting:                       # plant clock not started (start_topic)
            return
        wall = time.monotonic()
        self.rtf_window.append((wall, self.plant.t))
        self.rtf_window = [w for w in self.rtf_window if wall - w[0] <= 5.0]
        (w0, t0), (w1, t1) = self.rtf_window[max(0, len(self.rtf_window) - 2)], self.rtf_window[-1]
        if w1 - w0 > 0.5:
            self.rtf = (t1 - t0) / (w1 - w0)
            self.pub_rtf.publish(Float64(data=float(self.rtf)))
            if self.rtf < 0.95:
                self.get_logger().warning(
                    f'real-time factor {self.rtf:.2f}: the machine does not keep up with '
                    f'{self.rate:g} Hz integration; simulated time slows down (step stays '
                    f'{1e3 / self.rate:g} ms), {self.slip:.2f} s behind wall time in total',
                    throttle_duration_sec=5.0)

    def diagnostics(self):
        return {'plant_time': float(self.plant.t), 'real_time_factor': float(self.rtf),
                'slip': float(self.slip), 'rate': self.rate, 'waiting_for_command': self.waiting, 'holding': bool(self.holding),
                'rejected_commands': self.rejected, 'lockstep': self.lockstep,
                'safe': bool(self.holding), 'reason': 'hold (no valid command)' if self.holding else 'ok'}

    def publish(self):
        p = self.plant
        js = JointState()
        if self.pub_clock is not None:          # simulated time: stamps = plant time
            js.header.stamp = Time(nanoseconds=int(round(p.t * 1e9))).to_msg()
            self.pub_clock.publish(Clock(clock=js.header.stamp))
        else:                                   # real time: plant time on the wall clock
            js.header.stamp = Time(nanoseconds=int(round((self.ros0 + self.slip + p.t) * 1e9))).to_msg() \
                if not self.lockstep else self.get_clock().now().to_msg()
        js.name = list(self.model.joint_names)
        js.position = p.q.tolist()
        js.velocity = p.qd.tolist()
        js.effort = getattr(self, 'applied', np.zeros(self.model.nq)).tolist()
        self.pub_js.publish(js)
        if self.pub_extra is not None:          # plant extra states hook: same stamp
            self.pub_extra.publish(extra_states_msg(self.plant.extra_states(), js.header.stamp))
        self.pub_hold.publish(Bool(data=self.holding))


def extra_states_msg(ex, stamp):
    """JointState of the plant extra states (cylinders: see the module doc)."""
    msg = JointState()
    msg.header.stamp = stamp
    names = list(ex['names'])
    n = len(names)
    msg.name = names + [f'{c}/{k}' for c in names for k in ('p_a', 'p_b', 'u')]
    msg.position = [float(v) for v in ex['x']] + [float(ex[k][i]) for i in range(n) for k in ('pa', 'pb', 'u')]
    msg.velocity = [float(v) for v in ex['xd']] + [0.0] * (3 * n)
    msg.effort = [float(v) for v in ex['fp']] + [0.0] * (3 * n)
    return msg


def main(args=None):
    """Entry point (console script ``sim_node``)."""
    return spin_node(SimNode, args)


if __name__ == '__main__':
    raise SystemExit(main())
