"""ip_controller: modular inertia-partitioning controller (seed 000) in the core control loop.

The generic :mod:`~robot_dynamics.ros.controller_node` with the law ``inertia_partitioning``
(:class:`robot_dynamics.control.inertia_partitioning.IPController`): the loop owns state parsing,
staleness, reference matching (``reference/joint_trajectory`` of the minimal coordinates, by
name; extrapolated to the state stamp, or matched by stamp with ``reference_sync``), the URDF
effort limits and the safe command; this node adds only what is particular to the law:

* ``law`` here selects the variant: 'paper' (eq. 28/29) or 'pdplus'; gains ``kp``, ``kv``;
  ``loop_map`` ('auto'), ``neglect_bodies``, ``unlock_blend_time`` (s, 2).
* Diagnostics ``~/diagnostics`` (Float64MultiArray; ``layout.dim[0].label`` lists the fields):
  e (k), ed (k), V, Vdot (exact closed-loop expression of the active law; the corrected one for
  'paper'), lyapunov_margin, cond(Gamma), loop_margin (m to the dead centre), at
  ``diagnostics_rate`` Hz of state time (the loop's own report goes to ``/diagnostics``).
* Reconfiguration at run time (``ros2 param set``): ``payload_mass`` [kg], ``payload_com`` (3)
  [m], ``payload_inertia`` (6: ixx ixy ixz iyy iyz izz) [kg m²] at ``payload_frame``;
  ``locked_dofs`` (names; locked at the current position, held by the brake emulation);
  ``law``; ``kp``, ``kv``. Service ``~/clear_reconfiguration`` (Trigger: payload 0, nothing
  locked). An unlocked DoF re-joins its reference along a quintic offset blend.
Commands ``/<controller>/commands`` in the order of ``joints`` (the minimal coordinates).
"""

import numpy as np
from rcl_interfaces.msg import SetParametersResult
from std_srvs.srv import Trigger

from robot_dynamics.control.inertia_partitioning import LAWS as IP_LAWS, IPController
from robot_dynamics.errors import RobotDynamicsError
from robot_dynamics.ros._common import spin_node
from robot_dynamics.ros.controller_node import ControllerNode


class IPControllerNode(ControllerNode):
    """Inertia-partitioning controller node (controller_node + reconfiguration)."""

    LABELLED_DIAGNOSTICS = True

    def __init__(self):
        super().__init__('ip_controller')
        p = self.p
        self.payload = dict(
            mass=float(p['payload_mass']),
            com=list(p['payload_com']),
            inertia=list(p['payload_inertia']),
            frame=p['payload_frame'],
        )
        self.locked_names = []
        self._apply_payload()
        self.create_service(Trigger, '~/clear_reconfiguration', self.on_clear)
        self.get_logger().info(
            f'inertia partitioning ({self.law.law}), loop map '
            f'{self.law.pm.loop_map.kind}, bodies {self.law.pm.body_names()}'
        )

    RUNTIME = ('kp', 'kv', 'law', 'payload_mass', 'payload_com', 'payload_inertia', 'payload_frame', 'locked_dofs')

    def _params(self, extra=None):
        return super()._params(
            dict(
                law=('paper', 'inertia-partitioning variant', IP_LAWS),
                kp=20.0,
                kv=(20.0, 'velocity gain', (0.0, 1e6)),
                loop_map=('auto', 'loop map (auto | analytic | numeric)', None),
                neglect_bodies=([''], 'bodies left out of the partition', None),
                unlock_blend_time=(2.0, 'unlocked DoF re-joins its reference over [s]', (0.0, 1e3)),
                payload_mass=(0.0, 'payload mass [kg]', (0.0, 1e5)),
                payload_com=([0.0, 0.0, 0.0], 'payload COM in payload_frame [m]', None),
                payload_inertia=([0.0] * 6, 'payload inertia xx xy xz yy yz zz [kg m^2]', None),
                payload_frame=('tool', 'frame carrying the payload', None),
                locked_dofs=([''], 'minimal coordinates held by their brakes', None),
                diagnostics_rate=50.0,
            )
        )

    def _build_law(self, p):
        return IPController(
            self.model,
            law=p['law'],
            kp=p['kp'],
            kv=float(p['kv']),
            joints=p['joints'] or None,
            loop_map=p['loop_map'],
            neglect_bodies=[s for s in p['neglect_bodies'] if s],
            unlock_blend_time=float(p['unlock_blend_time']),
        )

    # ------------------------------------------------------------------ reconfiguration
    def _apply_payload(self):
        pm, p = self.law.pm, self.payload
        if len(p['com']) != 3 or len(p['inertia']) != 6:
            raise RobotDynamicsError('payload_com needs 3 values and payload_inertia 6')
        if 'payload' in pm.body_names():
            pm.remove_body('payload')
        if p['mass'] > 0:
            xx, xy, xz, yy, yz, zz = p['inertia']
            pm.add_payload(p['mass'], np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]), p['com'], frame=p['frame'])

    def _apply_locks(self, names):
        pm, st = self.law.pm, self.loop.state
        if st is None and names:
            raise RobotDynamicsError('cannot lock before the first joint state')
        self.law.rejoin.mark(set(pm.locked) - set(names))
        pm.unlock()
        if names:
            th = st.q[pm.loop_map.idx]
            pm.lock({n: th[pm.all_coords.index(n)] for n in names})
        self.locked_names = list(names)

    def on_params(self, params):
        why = self.gain_step_refused(params)
        if why:
            return SetParametersResult(successful=False, reason=why)
        old = (dict(self.payload), list(self.locked_names))
        try:
            for prm in params:
                if prm.name == 'payload_mass':
                    self.payload['mass'] = float(prm.value)
                elif prm.name == 'payload_com':
                    self.payload['com'] = list(prm.value)
                elif prm.name == 'payload_inertia':
                    self.payload['inertia'] = list(prm.value)
                elif prm.name == 'payload_frame':
                    self.payload['frame'] = prm.value
                elif prm.name == 'locked_dofs':
                    self._apply_locks([s for s in prm.value if s])
                elif prm.name == 'law':
                    if prm.value not in IP_LAWS:
                        raise RobotDynamicsError(f'law must be one of {IP_LAWS}')
                    self.law.law = prm.value
                elif prm.name in ('kp', 'kv'):
                    if not (isinstance(prm.value, (int, float)) and prm.value >= 0):
                        raise RobotDynamicsError(f'{prm.name} must be a number >= 0')
                    self.law.set_gains(**{prm.name: float(prm.value)})
            self._apply_payload()
        except (RobotDynamicsError, TypeError, ValueError) as exc:
            self.payload = old[0]
            if self.loop.state is not None:
                self._apply_locks(old[1])
            self._apply_payload()
            return SetParametersResult(successful=False, reason=str(exc))
        pm = self.law.pm
        st = self.loop.state
        at = f' at the state of t = {st.stamp:.9f} s' if pm.locked and st is not None else ''
        self.get_logger().info(
            f'reconfigured: bodies {pm.body_names()}, coordinates {pm.coords}, locked {pm.locked}{at}'
        )
        return SetParametersResult(successful=True)

    def on_clear(self, request, response):
        self.payload['mass'] = 0.0
        self._apply_payload()
        self._apply_locks([])
        response.success, response.message = True, 'payload removed, all DoFs unlocked'
        st = self.loop.state
        self.get_logger().info(response.message + (f' at the state of t = {st.stamp:.9f} s' if st is not None else ''))
        return response


def main(args=None):
    """Entry point (console script ``ip_controller``)."""
    return spin_node(IPControllerNode, args)


if __name__ == '__main__':
    raise SystemExit(main())
