"""ip_controller: modular inertia-partitioning controller (seed 000) -> actuator efforts.

On every ``/joint_states`` message (all joints by name; the minimal coordinates are read
from it) it runs :class:`robot_dynamics.control.inertia_partitioning.IPController` (``law``:
'paper' = eq. 28/29, 'pdplus' = PD+) and publishes the efforts of the minimal coordinates on
``/<controller>/commands`` (Float64MultiArray, order of the sidecar's ``independent`` joints =
``joints`` parameter, which must be the same set).

Reference: ``reference/joint_trajectory`` (JointTrajectory, first point with positions,
velocities, accelerations of the minimal coordinates, by name), extrapolated to the state's
stamp with its own derivatives.

Diagnostics ``~/diagnostics`` (Float64MultiArray; ``layout.dim[0].label`` lists the fields):
e (k), ed (k), V, Vdot (exact closed-loop expression of the active law; the corrected one for
'paper'), lyapunov_margin (lambda_min of the Vdot matrix: < 0 means the paper's argument does
not hold at this state), cond(Gamma), loop_margin (m to the dead centre). Published at
``diagnostics_rate`` Hz.

Reconfiguration (parameters, applied at run time, ``ros2 param set``): ``payload_mass`` [kg],
``payload_com`` (3) [m], ``payload_inertia`` (6: ixx ixy ixz iyy iyz izz) [kg m²] at
``payload_frame``; ``locked_dofs`` (names; locked at the current position; their actuators get
the gravity-holding effort of the full model plus PD to the lock value); ``law``; ``kp``,
``kv`` (scalars). Services: ``~/enable`` (SetBool), ``~/clear_reconfiguration`` (Trigger:
payload 0, nothing locked). A DoF that is unlocked re-joins its reference smoothly: its
position and velocity offset to the reference at the first state after the unlock decays to
zero over ``unlock_blend_time`` s (quintic,
:class:`robot_dynamics.control.inertia_partitioning.ReferenceRejoin`) instead of a step that a
stiff PD would turn into a violent jump.
"""
import numpy as np
from rcl_interfaces.msg import SetParametersResult
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension
from std_srvs.srv import SetBool, Trigger
from trajectory_msgs.msg import JointTrajectory

from robot_dynamics.control.inertia_partitioning import LAWS, IPController, ReferenceRejoin
from robot_dynamics.errors import RobotDynamicsError
from robot_dynamics.nodes._common import (ReferenceSync, QOS_COMMAND, QOS_STATE, JointStateParser,
                                          load_model_param, spin_node)
from robot_dynamics.partitioning import PartitionedModel


def _sec(stamp):
    t = stamp.sec + 1e-9 * stamp.nanosec
    return t if t > 0 else None


class IPControllerNode(Node):
    """Inertia-partitioning controller node."""

    def __init__(self):
        super().__init__('ip_controller')
        self.model = m = load_model_param(self)
        dp = self.declare_parameter
        controller = dp('controller', 'effort_controller').value
        neglect = [s for s in dp('neglect_bodies', ['']).value if s]
        self.pm = PartitionedModel(m, dp('loop_map', 'auto').value, neglect_bodies=neglect)
        self.joints = list(dp('joints', list(self.pm.all_coords)).value)
        if sorted(self.joints) != sorted(self.pm.all_coords):
            raise RobotDynamicsError(f'joints {self.joints} must be the minimal coordinates '
                                     f'{self.pm.all_coords}')
        self.ctrl = IPController(self.pm, dp('law', 'paper').value, float(dp('kp', 20.0).value),
                                 float(dp('kv', 20.0).value))
        self.diag_period = 1.0 / float(dp('diagnostics_rate', 50.0).value)
        self.payload = dict(mass=float(dp('payload_mass', 0.0).value),
                            com=list(dp('payload_com', [0.0, 0.0, 0.0]).value),
                            inertia=list(dp('payload_inertia', [0.0] * 6).value),
                            frame=dp('payload_frame', 'tool').value)
        self.locked_names = [s for s in dp('locked_dofs', ['']).value if s]
        self.rejoin = ReferenceRejoin(self.pm.all_coords, float(dp('unlock_blend_time', 2.0).value))
        self.parser = JointStateParser(m)
        self.enabled = True
        self.ref = None
        # reference_sync (lock-step graphs): answer a state only once the reference sample with
        # the same stamp has arrived (fallback after ref_wait s of wall time: extrapolate)
        self.sync = (ReferenceSync(self, lambda: self.ref[1] if self.ref else None, self._control,
                                   float(self.declare_parameter('ref_wait', 0.2).value))
                     if self.declare_parameter('reference_sync', False).value else None)
        self.last_q = None
        self.last_diag = -1e9
        self._apply_payload()
        self.add_on_set_parameters_callback(self.on_params)
        self.pub_cmd = self.create_publisher(Float64MultiArray, f'/{controller}/commands', QOS_COMMAND)
        self.pub_diag = self.create_publisher(Float64MultiArray, '~/diagnostics', QOS_STATE)
        self.create_subscription(JointState, 'joint_states', self.on_state, QOS_STATE)
        self.create_subscription(JointTrajectory, 'reference/joint_trajectory', self.on_ref, QOS_COMMAND)
        self.create_service(SetBool, '~/enable', self.on_enable)
        self.create_service(Trigger, '~/clear_reconfiguration', self.on_clear)
        self.get_logger().info(f'law {self.ctrl.law}, loop map {self.pm.loop_map.kind}, bodies '
                               f'{self.pm.body_names()}, commands /{controller}/commands {self.joints}')

    # ------------------------------------------------------------------ reconfiguration
    def _apply_payload(self):
        p = self.payload
        if len(p['com']) != 3 or len(p['inertia']) != 6:
            raise RobotDynamicsError('payload_com needs 3 values and payload_inertia 6')
        if 'payload' in self.pm.body_names():
            self.pm.remove_body('payload')
        if p['mass'] > 0:
            xx, xy, xz, yy, yz, zz = p['inertia']
            self.pm.add_payload(p['mass'], np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]),
                                p['com'], frame=p['frame'])

    def _apply_locks(self, names):
        if self.last_q is None and names:
            raise RobotDynamicsError('cannot lock before the first joint state')
        self.rejoin.mark(set(self.pm.locked) - set(names))
        self.pm.unlock()
        if names:
            th = self.last_q[self.pm.loop_map.idx]
            self.pm.lock({n: th[self.pm.all_coords.index(n)] for n in names})
        self.locked_names = list(names)

    def on_params(self, params):
        old = (dict(self.payload), list(self.locked_names))
        try:
            for p in params:
                if p.name == 'payload_mass':
                    self.payload['mass'] = float(p.value)
                elif p.name == 'payload_com':
                    self.payload['com'] = list(p.value)
                elif p.name == 'payload_inertia':
                    self.payload['inertia'] = list(p.value)
                elif p.name == 'payload_frame':
                    self.payload['frame'] = p.value
                elif p.name == 'locked_dofs':
                    self._apply_locks([s for s in p.value if s])
                elif p.name == 'law':
                    if p.value not in LAWS:
                        raise RobotDynamicsError(f'law must be one of {LAWS}')
                    self.ctrl.law = p.value
                elif p.name in ('kp', 'kv'):
                    self.ctrl.set_gains(**{p.name: float(p.value)})
            self._apply_payload()
        except (RobotDynamicsError, TypeError, ValueError) as exc:
            self.payload = old[0]
            self._apply_locks(old[1]) if self.last_q is not None else None
            self._apply_payload()
            return SetParametersResult(successful=False, reason=str(exc))
        self.get_logger().info(f'reconfigured: bodies {self.pm.body_names()}, coordinates '
                               f'{self.pm.coords}, locked {self.pm.locked}')
        return SetParametersResult(successful=True)

    def on_clear(self, request, response):
        self.payload['mass'] = 0.0
        self._apply_payload()
        self._apply_locks([])
        response.success, response.message = True, 'payload removed, all DoFs unlocked'
        return response

    def on_enable(self, request, response):
        self.enabled = bool(request.data)
        response.success, response.message = True, f'controller {"enabled" if self.enabled else "disabled"}'
        return response

    # ------------------------------------------------------------------ control
    def _reject(self, why):
        self.get_logger().warning(f'rejected {why}', throttle_duration_sec=2.0)

    def on_ref(self, msg):
        if not msg.points:
            return self._reject('reference without points')
        pt = msg.points[0]
        names = list(msg.joint_names)
        k = len(self.pm.all_coords)
        if sorted(names) != sorted(self.pm.all_coords):
            return self._reject(f'reference joints {names}, expected {self.pm.all_coords}')
        vals = []
        for arr in (pt.positions, pt.velocities, pt.accelerations):
            a = np.zeros(k) if len(arr) == 0 else np.asarray(arr, float)
            if a.shape != (k,) or not np.all(np.isfinite(a)):
                return self._reject('reference: malformed positions/velocities/accelerations')
            vals.append(a[[names.index(c) for c in self.pm.all_coords]])
        self.ref = (vals, _sec(msg.header.stamp))
        if self.sync is not None:
            self.sync.release()

    def on_state(self, msg):
        q, qd, why = self.parser.parse(msg)
        if why:
            return self._reject(f'joint_states: {why}')
        self.last_q = q
        if not self.enabled or self.ref is None:
            return
        if self.sync is not None and self.sync.defer(msg, q, qd):
            return                          # wait for the reference of this stamp
        self._control(msg, q, qd)

    def _control(self, msg, q, qd):
        (r0, r1, r2), rs = self.ref
        ts = _sec(msg.header.stamp)
        if rs is not None and ts is not None:
            dt = float(np.clip(ts - rs, 0.0, 0.1))
            r0, r1 = r0 + r1 * dt + 0.5 * r2 * dt * dt, r1 + r2 * dt
        th_all, thd_all = q[self.pm.loop_map.idx], qd[self.pm.loop_map.idx]
        if ts is not None:              # unlocked DoFs re-join their reference smoothly
            r0, r1, r2 = self.rejoin(ts, th_all, thd_all, r0, r1, r2)
        sel = self.pm.sel
        try:
            out = self.ctrl.compute(th_all[sel], thd_all[sel], r0[sel], r1[sel], r2[sel], q_guess=q)
            lock_eff = self.ctrl.lock_efforts(th_all, thd_all, q_guess=q)
        except RobotDynamicsError as exc:
            return self._reject(f'control step: {exc}')
        Q = self.ctrl.actuator_efforts(out, lock_eff)
        if not np.all(np.isfinite(Q)):
            return self._reject('non-finite effort (not published)')
        order = [self.pm.all_coords.index(j) for j in self.joints]
        self.pub_cmd.publish(Float64MultiArray(data=Q[order].tolist()))
        now = ts if ts is not None else self.get_clock().now().nanoseconds * 1e-9
        if now - self.last_diag >= self.diag_period - 1e-9:
            self.last_diag = now
            d = Float64MultiArray()
            labels = ([f'e_{c}' for c in self.pm.coords] + [f'ed_{c}' for c in self.pm.coords]
                      + ['V', 'Vdot', 'lyapunov_margin', 'cond', 'loop_margin'])
            d.layout.dim = [MultiArrayDimension(label=','.join(labels), size=len(labels), stride=len(labels))]
            d.data = np.concatenate([out.e, out.ed, [out.V, out.Vdot, out.lyapunov_margin,
                                                     out.cond, out.loop_margin]]).tolist()
            self.pub_diag.publish(d)


def main(args=None):
    """Entry point (console script ``ip_controller``)."""
    return spin_node(IPControllerNode, args)


if __name__ == '__main__':
    raise SystemExit(main())
