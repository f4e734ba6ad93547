"""vdc_controller: virtual decomposition control of a hydraulic parallel-serial boom (seed 001)
-> servo-valve voltages.

Inputs (by name; a message is used only when ``/joint_states`` and the cylinder states carry
the SAME header stamp, which ``sim_node`` guarantees):

* ``/joint_states`` (sensor_msgs/JointState): the segment joints (lift_joint, ...) -> q, q'.
* ``cylinder_states_topic`` (default ``/hydraulics/cylinder_states``, sensor_msgs/JointState):
  per cylinder ``<cyl>`` position = stroke [m], velocity = rate [m/s], effort = piston force
  [N]; entries ``<cyl>/p_a``, ``<cyl>/p_b`` with the chamber pressures [Pa] in ``position``
  (``<cyl>/u``, the applied valve input, is optional and not used). The controller needs
  p_a, p_b (eq. 90); stroke and rate are recomputed from q, q' (loop closure) and checked.
* Reference, ``reference`` parameter:
  ``task`` (default): the analytic A-B-C-D task generated in the node from parameters
  (``waypoints`` flat [x0, z0, x1, z1, ...] in the world axes ``task_axes``, ``task_loops``,
  ``leg_duration`` s, ``start_delay`` s): quintic rest-to-rest legs from the tool point measured
  at the first valid state through the waypoints ``task_loops`` times and back to the first one
  (:func:`robot_dynamics.control.vdc.quintic_legs`, mapped to joint space analytically by
  :class:`~robot_dynamics.control.vdc.TaskReference`; never differentiated numerically).
  ``joint_trajectory``: ``reference/joint_trajectory`` (JointTrajectory, first point with
  positions, velocities, accelerations of the segment joints by name, extrapolated to the
  state stamp).
* ``tool_wrench`` (geometry_msgs/WrenchStamped, optional): wrench the tool exerts on the
  environment, in the tool frame (``frame_id`` '' or the tool frame), used for
  ``wrench_timeout`` s after its stamp.

Time: ``time_source: stamp`` (real time: t = state stamp - stamp of the first valid state) or
``count`` (lock-step with ``sim_node lockstep: true``: t = number of control steps / ``rate``,
so the run is deterministic).

Outputs: ``/<controller>/commands`` (Float64MultiArray, volts, order of ``joints`` = the
cylinders' rod joints) on every valid state pair; ``~/diagnostics`` (Float64MultiArray,
``layout.dim[0].label`` lists the fields: stamp, t, e_tcp, ref_x, ref_z, tcp_x, tcp_z, V
(accompanying function eq. 94-98), step_us, stale, then per cylinder f_pr, f_p, u, saturated)
every ``1/diagnostics_rate`` s of controller time.

Safety: a malformed message (missing names, NaN/inf, length mismatch, singular configuration),
or no valid state pair for ``state_timeout`` s (node clock: wall time, simulated time in a
lock-step graph, so no wall-clock timer injects a plant step; watchdog) -> 0 V (valves closed)
published and a throttled warning. ``lockstep: true``: each
state is answered once, and a state older than the last answered one not at all (sim_node's
lock-step stamps with the plant time and advances one period per command).
"""
import time
from collections import OrderedDict

import numpy as np
from geometry_msgs.msg import WrenchStamped
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension
from trajectory_msgs.msg import JointTrajectory

from robot_dynamics.control.vdc import TaskReference, VDCController, quintic_legs
from robot_dynamics.errors import RobotDynamicsError
from robot_dynamics.hydraulics import hydraulic_params_from_model
from robot_dynamics.nodes._common import (QOS_COMMAND, QOS_STATE, JointStateParser,
                                          load_model_param, spin_node)
from robot_dynamics.vdc import segment_q, structure_from_model

ABCD = [2.07152, 0.39253, 2.47152, 0.39253, 2.47152, 0.09253, 2.07152, 0.09253]


def _ns(stamp):
    return stamp.sec * 1_000_000_000 + stamp.nanosec


class VDCControllerNode(Node):
    """VDC + pressure/flow control of the hydraulic boom."""

    def __init__(self):
        super().__init__('vdc_controller')
        self.model = m = load_model_param(self)
        dp = self.declare_parameter
        self.st = st = structure_from_model(m)
        self.hp = hydraulic_params_from_model(m, st)
        controller = dp('controller', 'valve_controller').value
        rod = {(s.rod_joint if s.kind == 'revolute' else s.joint): k for k, s in enumerate(st.segments)}
        self.joints = list(dp('joints', list(m.actuated)).value)
        if sorted(self.joints) != sorted(rod):
            raise RobotDynamicsError(f'joints {self.joints} must be the cylinder joints {sorted(rod)}')
        self.order = np.array([rod[j] for j in self.joints])
        self.rate = float(dp('rate', 1000.0).value)
        self.time_source = dp('time_source', 'stamp').value
        self.reference = dp('reference', 'task').value
        self.lockstep = bool(dp('lockstep', False).value)
        self.timeout = float(dp('state_timeout', 0.1).value)
        self.wrench_timeout = float(dp('wrench_timeout', 0.1).value)
        if self.time_source not in ('stamp', 'count') or self.reference not in ('task', 'joint_trajectory'):
            raise RobotDynamicsError("time_source must be 'stamp' | 'count' and reference "
                                     "'task' | 'joint_trajectory'")
        if self.rate <= 0 or self.timeout <= 0:
            raise RobotDynamicsError('rate and state_timeout must be > 0')
        wp = list(dp('waypoints', ABCD).value)
        self.axes = list(dp('task_axes', [0, 2]).value)
        if len(wp) < 2 or len(wp) % 2 or len(self.axes) != st.ns:
            raise RobotDynamicsError('waypoints: flat list of (x, z) pairs; task_axes: one axis per segment')
        self.waypoints = np.asarray(wp, float).reshape(-1, 2)
        self.loops = int(dp('task_loops', 2).value)
        self.leg = float(dp('leg_duration', 2.0).value)
        self.delay = float(dp('start_delay', 0.0).value)
        self.ctrl = VDCController(st, self.hp, lam=float(dp('lam', 5.0).value),
                                  k_scale=float(dp('k_scale', 10.0).value),
                                  kf_pole=float(dp('kf_pole', 50.0).value),
                                  kx_ratio=float(dp('kx_ratio', 1e4).value), dt=1.0 / self.rate,
                                  dp_min=float(dp('dp_min', 1e5).value))
        self.diag_every = 1.0 / float(dp('diagnostics_rate', 100.0).value)
        cyl_topic = dp('cylinder_states_topic', '/hydraulics/cylinder_states').value
        self.parser = JointStateParser(m, required=[s.joint for s in st.segments])
        names = self.hp.names
        self.cyl_names = [f'{c}/{k}' for c in names for k in ('p_a', 'p_b')] + list(names)
        self.js = self.cyl = None              # (stamp ns, ...) of the pair being answered
        self.js_buf, self.cyl_buf = OrderedDict(), OrderedDict()   # stamp ns -> values
        self.done_stamp = None                 # stamp of the last answered state pair
        self.t0 = None                         # stamp of the first valid pair (time origin)
        self.nstep = 0
        self.task = None
        self.jt = None
        self.FD, self.FD_stamp = np.zeros(6), None
        self.last_ok = self._now()
        self.last_cmd_ns = 0
        self.next_diag = 0.0
        self.stale = True
        self._warned = {}
        self.pub_cmd = self.create_publisher(Float64MultiArray, f'/{controller}/commands', QOS_COMMAND)
        self.pub_diag = self.create_publisher(Float64MultiArray, '~/diagnostics', QOS_STATE)
        self.create_subscription(JointState, 'joint_states', self.on_js, QOS_STATE)
        self.create_subscription(JointState, cyl_topic, self.on_cyl, QOS_STATE)
        self.create_subscription(WrenchStamped, 'tool_wrench', self.on_wrench, QOS_STATE)
        if self.reference == 'joint_trajectory':
            self.create_subscription(JointTrajectory, 'reference/joint_trajectory', self.on_jt, QOS_COMMAND)
        self.create_timer(self.timeout / 2, self.watchdog)
        self.labels = (['stamp', 't', 'e_tcp', 'ref_x', 'ref_z', 'tcp_x', 'tcp_z', 'V', 'step_us', 'stale']
                       + [f'{c}/{f}' for c in names for f in ('f_pr', 'f_p', 'u', 'saturated')])
        self.get_logger().info(
            f'VDC of {[s.name for s in st.segments]}: reference {self.reference}, time {self.time_source}, '
            f'commands /{controller}/commands {self.joints} [V], cylinder states {cyl_topic}, '
            f'valves closed after {self.timeout:g} s without valid input')

    # ------------------------------------------------------------------ safety
    def close_valves(self, why, key=None):
        self.stale = True
        key = key or why
        now = time.monotonic()
        if now - self._warned.get(key, -1e9) >= 1.0:        # throttled per reason
            self._warned[key] = now
            self.get_logger().warning(f'{why}: valves closed (0 V)')
        self._publish(np.zeros(len(self.joints)))

    def _publish(self, u):
        self.last_cmd_ns = self.get_clock().now().nanoseconds
        self.pub_cmd.publish(Float64MultiArray(data=[float(v) for v in u]))

    def _now(self):
        """Node clock [s]: wall time, or simulated time in a lock-step graph (use_sim_time), so
        the watchdog never injects a command while a lock-step plant waits."""
        return self.get_clock().now().nanoseconds * 1e-9

    def watchdog(self):
        if self._now() - self.last_ok > self.timeout:
            self.close_valves(f'no valid joint/cylinder state for {self.timeout:g} s')

    def reject(self, what, why):
        self.js = self.cyl = None
        self.js_buf.clear()
        self.cyl_buf.clear()
        self.close_valves(f'rejected {what}: {why}', key=what)

    # ------------------------------------------------------------------ inputs
    def on_js(self, msg):
        Q, Qd, why = self.parser.parse(msg)
        if why:
            return self.reject('joint_states', why)
        q, qd = segment_q(self.st, Q, Qd)
        self._buffer(self.js_buf, _ns(msg.header.stamp), (q, qd))

    def on_cyl(self, msg):
        names, pos = list(msg.name), list(msg.position)
        idx = {n: i for i, n in enumerate(names)}
        missing = [n for n in self.cyl_names if n not in idx]
        if len(pos) != len(names) or missing:
            return self.reject('cylinder states', f'missing {missing}' if missing else 'length mismatch')
        p = np.array([pos[idx[f'{c}/{k}']] for k in ('p_a', 'p_b') for c in self.hp.names])
        if not np.all(np.isfinite(p)) or np.any(p < 0):
            return self.reject('cylinder states', 'non-finite or negative pressure')
        ns = self.st.ns
        self._buffer(self.cyl_buf, _ns(msg.header.stamp), (p[:ns], p[ns:]))

    def _buffer(self, buf, stamp, value):
        """Keep the last states of each stream by stamp and answer the newest stamp present in
        both (in real time the two streams arrive interleaved in any order)."""
        buf[stamp] = value
        while len(buf) > 20:
            buf.popitem(last=False)
        both = [k for k in self.js_buf if k in self.cyl_buf
                and (self.done_stamp is None or k > self.done_stamp)]
        if not both:
            return
        k = max(both)
        self.js, self.cyl = (k, *self.js_buf[k]), (k, *self.cyl_buf[k])
        self.try_step()

    def on_wrench(self, msg):
        w = msg.wrench
        F = np.array([w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y, w.torque.z])
        if msg.header.frame_id not in ('', self.st.tool_frame) or not np.all(np.isfinite(F)):
            self.get_logger().warning(f'rejected tool_wrench (frame {msg.header.frame_id!r}, expected '
                                      f'{self.st.tool_frame!r}, finite values)', throttle_duration_sec=2.0)
            return
        self.FD, self.FD_stamp = F, _ns(msg.header.stamp)

    def on_jt(self, msg):
        segs = [s.joint for s in self.st.segments]
        if not msg.points or sorted(msg.joint_names) != sorted(segs):
            self.get_logger().warning(f'rejected reference: need one point for {segs}', throttle_duration_sec=2.0)
            return
        pt, names = msg.points[0], list(msg.joint_names)
        vals = []
        for arr in (pt.positions, pt.velocities, pt.accelerations):
            a = np.zeros(len(segs)) if len(arr) == 0 else np.asarray(arr, float)
            if a.shape != (len(segs),) or not np.all(np.isfinite(a)):
                self.get_logger().warning('rejected reference: malformed point', throttle_duration_sec=2.0)
                return
            vals.append(a[[names.index(j) for j in segs]])
        vals[0] = vals[0] + np.array([s.offset for s in self.st.segments])
        self.jt = (np.array(vals), _ns(msg.header.stamp))

    # ------------------------------------------------------------------ control
    def ref_at(self, t, stamp, q):
        """(3, ns) segment reference and the task reference point (2,) at controller time t."""
        if self.reference == 'joint_trajectory':
            if self.jt is None:
                return None, None
            r, rs = self.jt
            dt = float(np.clip((stamp - rs) * 1e-9, 0.0, 0.1)) if rs else 0.0
            r = np.array([r[0] + r[1] * dt + 0.5 * r[2] * dt * dt, r[1] + r[2] * dt, r[2]])
            return r, self.st.tool_pose(r[0])[1][self.axes]
        if self.task is None:
            p0 = self.st.tool_pose(q)[1][self.axes]
            pts = [p0] + [w for _ in range(self.loops) for w in self.waypoints] + [self.waypoints[0]]
            durs = [self.leg] * (len(pts) - 1)
            self.path = lambda s: quintic_legs(pts, durs, s - self.delay)   # noqa: E731
            self.task = TaskReference(self.st, self.path, self.axes, q)
        return self.task(t), self.path(t)[0]

    def try_step(self):
        if self.js is None or self.cyl is None or self.js[0] != self.cyl[0] or self.js[0] == self.done_stamp:
            return
        stamp, q, qd = self.js
        _, pa, pb = self.cyl
        if self.lockstep and self.done_stamp is not None and stamp < self.done_stamp:
            return                       # older than the last answered state: not answered
        self.done_stamp = stamp
        t0 = time.perf_counter()
        if self.t0 is None:
            self.t0 = stamp
        if self.time_source == 'count':
            t = self.nstep / self.rate
        else:
            t = (stamp - self.t0) * 1e-9
            if self.nstep:
                self.ctrl.dt = float(np.clip((stamp - self.prev_stamp) * 1e-9, 0.2 / self.rate, 5.0 / self.rate))
        FD = self.FD if (self.FD_stamp is not None
                         and abs(stamp - self.FD_stamp) * 1e-9 <= self.wrench_timeout) else None
        try:
            self.st.check_q(q)
            ref, pref = self.ref_at(t, stamp, q)
            if ref is None:
                return self.close_valves('no reference yet')
            u = self.ctrl.step(q, qd, pa, pb, ref, FD=FD)
        except RobotDynamicsError as exc:
            return self.close_valves(f'control step failed: {exc}', key='step')
        if not np.all(np.isfinite(u)):
            return self.close_valves('non-finite valve command')
        self._publish(u[self.order])
        self.prev_stamp = stamp
        self.nstep += 1
        self.last_ok = self._now()
        if self.stale:
            self.get_logger().info('valid joint and cylinder states: controlling')
        self.stale = False
        if t >= self.next_diag - 1e-9:
            self.next_diag = t + self.diag_every
            tcp = self.st.tool_pose(q)[1][self.axes]
            d = self.ctrl.diag
            cyl = np.stack([d['fpr'], d['fp'], d['u'], d['saturated'].astype(float)], axis=1).ravel()
            us = (time.perf_counter() - t0) * 1e6
            msg = Float64MultiArray()
            msg.layout.dim = [MultiArrayDimension(label=','.join(self.labels), size=len(self.labels),
                                                  stride=len(self.labels))]
            msg.data = np.concatenate([[stamp * 1e-9, t, float(np.linalg.norm(tcp - pref)), *pref, *tcp,
                                        self.ctrl.lyapunov(), us, 0.0], cyl]).tolist()
            self.pub_diag.publish(msg)


def main(args=None):
    """Entry point (console script ``vdc_controller``)."""
    return spin_node(VDCControllerNode, args)


if __name__ == '__main__':
    raise SystemExit(main())
