"""vdc_controller: virtual decomposition control of a hydraulic parallel-serial boom (seed 001)
-> servo-valve voltages; the generic controller node with the law ``vdc``.

:mod:`~robot_dynamics.ros.controller_node` hosting :class:`robot_dynamics.control.vdc.VDCController`
in the core :class:`~robot_dynamics.control.loop.ControlLoop` (state parsing and plausibility,
staleness, reference matching/extrapolation, lock-step, the valve limits, the safe command
0 V = valves closed, timing and ``/diagnostics``). This node only translates messages:

* state: ONE message per plant step, ``state_topic`` (default ``hydraulics/cylinder_states``,
  sensor_msgs/JointState): every joint (as on ``/joint_states``) plus per cylinder the entries
  ``<cyl>/p_a``, ``<cyl>/p_b`` (chamber pressures [Pa] in ``position``), so joints and pressures
  always share a stamp (``sim_node`` publishes it; ``/joint_states`` stays the standard message
  for robot_state_publisher).
* reference: ``reference/joint_trajectory`` of the segment joints (lift_joint, tilt_joint:
  positions, velocities, accelerations), e.g. ``trajectory_node mode: boom_task`` (the A-B-C-D
  task). ``reference_sync`` (lock-step) matches it by stamp.
* ``tool_wrench`` (geometry_msgs/WrenchStamped, optional): wrench the tool exerts on the
  environment, tool frame (``frame_id`` '' or the tool frame), used for ``wrench_timeout`` s.

Outputs ``/<controller>/commands`` (Float64MultiArray, volts, order of ``joints`` = the
cylinders' rod joints), ``~/tracking_error`` ([e, ed] of the segment joints), ``/diagnostics``
and ``~/diagnostics`` (Float64MultiArray; ``layout.dim[0].label`` lists the fields: stamp, t
(s since the first command), e_tcp, ref_x, ref_z, tcp_x, tcp_z, V (accompanying function eq.
94-98), step_us, stale, then per cylinder f_pr, f_p, u (commanded), saturated (the law's
output beyond the valve limit), p_a, p_b [Pa]) every ``1/diagnostics_rate``
s of state time. Gains: ``lam``, ``k_scale``, ``kf_pole``, ``kx_ratio``, ``dp_min``.
"""

import numpy as np
from geometry_msgs.msg import WrenchStamped
from std_msgs.msg import Float64MultiArray

from robot_dynamics.control.vdc import VDCController
from robot_dynamics.ros._common import QOS_STATE, labelled_array, spin_node, stamp_sec
from robot_dynamics.ros.controller_node import ControllerNode


class VDCControllerNode(ControllerNode):
    """VDC + pressure/flow control of the hydraulic boom (controller_node + law ``vdc``)."""

    def __init__(self):
        super().__init__('vdc_controller')
        st, p = self.law.st, self.p
        self.axes = list(p['task_axes'])[: st.ns]
        self.diag_every = 1.0 / max(p['diagnostics_rate'], 1e-3)
        self.last_diag, self.t0 = -1e18, None
        names = self.law.hp.names
        self.labels = ['stamp', 't', 'e_tcp', 'ref_x', 'ref_z', 'tcp_x', 'tcp_z', 'V', 'step_us', 'stale'] + [
            f'{c}/{f}' for c in names for f in ('f_pr', 'f_p', 'u', 'saturated', 'p_a', 'p_b')
        ]
        self.pub_diag = self.create_publisher(Float64MultiArray, '~/diagnostics', QOS_STATE)
        self.create_subscription(WrenchStamped, 'tool_wrench', self.on_wrench, QOS_STATE)
        self.get_logger().info(
            f'VDC of {[s.name for s in st.segments]}: state {p["state_topic"]} '
            f'(joints + {self.law.extra_names}), valves closed (0 V) when unsafe'
        )

    def _params(self, extra=None):
        return super()._params(
            dict(
                law='vdc',
                controller='valve_controller',
                rate=1000.0,
                safe='zero',
                max_effort=0.0,
                state_topic='hydraulics/cylinder_states',
                task_axes=[0, 2],
                lam=(5.0, 'VDC: joint velocity-error gain lambda [1/s]', (1e-9, 1e4)),
                k_scale=(10.0, 'VDC: rigid-body velocity gain K_A = k_scale M_A [1/s]', (1e-9, 1e6)),
                kf_pole=(50.0, 'VDC: piston-force loop pole beta k_f [1/s]', (1e-9, 1e5)),
                kx_ratio=(1e4, 'VDC: k_x = kx_ratio k_f [N s/m]', (1e-9, 1e8)),
                dp_min=(1e5, 'floor of the valve pressure drops [Pa]', (1.0, 1e8)),
                wrench_timeout=(0.1, 'tool_wrench older than that is dropped [s]', (1e-6, 1e3)),
                diagnostics_rate=100.0,
                **(extra or {}),
            )
        )

    def _build_law(self, p):
        return VDCController(
            self.model,
            joints=p['joints'] or None,
            lam=float(p['lam']),
            k_scale=float(p['k_scale']),
            kf_pole=float(p['kf_pole']),
            kx_ratio=float(p['kx_ratio']),
            dt=1.0 / p['rate'],
            dp_min=float(p['dp_min']),
            wrench_timeout=float(p['wrench_timeout']),
        )

    def on_wrench(self, msg):
        w = msg.wrench
        F = np.array([w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y, w.torque.z])
        if msg.header.frame_id not in ('', self.law.st.tool_frame) or not np.all(np.isfinite(F)):
            return self._warn(
                f'rejected tool_wrench: frame {msg.header.frame_id!r} (expected '
                f'{self.law.st.tool_frame!r}) or non-finite values'
            )
        self.law.set_tool_wrench(F, stamp_sec(msg.header.stamp))

    def _on_command(self, c):
        if self.t0 is None:
            self.t0 = c.stamp
        t = c.stamp - self.t0
        if self.last_diag <= t < self.last_diag + self.diag_every - 1e-9:
            return
        self.last_diag = t
        law = self.law
        st = law.st
        tcp = st.tool_pose(c.info['q'])[1][self.axes]
        pref = st.tool_pose(c.info['segment_ref'][0])[1][self.axes]
        d = law.diag
        ex = c.state.extra
        u = np.zeros(st.ns)
        u[law.order] = c.effort  # the command (limited), per segment
        cyl = np.stack(
            [
                d['fpr'],
                d['fp'],
                u,
                d['saturated'].astype(float),
                [ex[n] for n in law._pa],
                [ex[n] for n in law._pb],
            ],
            axis=1,
        ).ravel()
        us = self.loop.compute_times[-1] * 1e6 if self.loop.compute_times else 0.0
        self.pub_diag.publish(
            labelled_array(
                self.labels,
                np.concatenate(
                    [[c.stamp, t, float(np.linalg.norm(tcp - pref)), *pref, *tcp, law.lyapunov(), us, 0.0], cyl]
                ),
            )
        )


def main(args=None):
    """Entry point (console script ``vdc_controller``)."""
    return spin_node(VDCControllerNode, args)


if __name__ == '__main__':
    raise SystemExit(main())
