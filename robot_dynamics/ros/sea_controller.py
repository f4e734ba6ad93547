"""sea_controller: flatness-based controller of the planar 3RRR SEA-PKM (seed 004) in the core
control loop.

The generic :mod:`~robot_dynamics.ros.controller_node` with the law ``sea_flatness``
(:func:`robot_dynamics.control.flatness_sea.make_sea_flatness_law`, exactly linearising, EE error
poles ``poles``, preload lambda = n^T u to ``preload`` with ``lambda_poles``); kept as its own
executable for its defaults and one extra output. The loop owns state parsing (one
``/joint_states`` with the link-side joints ``armk_joint``, ``armk_elbow`` and the motor joints
``armk_motor``, k = 1..3), staleness, reference matching, the effort limits and the safe command.

Reference (from trajectory_node ``mode: task``, ``profile: goals``, or any source of the same
messages): ``reference/pose`` (PoseStamped: the stamp) and ``reference/derivatives``
(Float64MultiArray, rows = derivative order 0..4, columns x, y, z), paired by their position
row; matched to the state stamp (``reference_sync``, lock-step) or extrapolated to it by the
4th-order Taylor series of the sample (at most ``max_extrapolation``). The motion itself
(goals -> sin^2-jerk moves) is trajectory_node's: publish a geometry_msgs/PointStamped on
``goal`` (config/planar_3rrr_sea.yaml).

A state is answered on arrival unless its stamp is more than ``max_state_age`` (50 ms here) old:
then the timer answers the newest. (With the generic one period, the sim's wall-mapped stamps,
which lag the node clock by up to one step plus transport, and any CPU contention left most
1 kHz states to the timer: 140-185 answers per second next to other load, against 355-490 of
the old event-driven node; the exactly linearising law needs every state it can get.)

Safe command (no/stale state or reference, law error; within two periods of ``rate``):
``safe: hold`` = ``-hold_damping * qd_m`` on the motor joints (gravity is normal to the plane:
the motors brake), ``safe: zero`` = no torque. When input returns, the law tracks the
reference where it then is (trajectory_node keeps time; no rest restart).

Outputs: ``/<controller>/commands`` (motor torques [N m], order of ``joints``),
``~/tracking_error`` ([e_x, e_y, ed_x, ed_y], e = reference - measured EE), ``~/diagnostics``
(Float64MultiArray, labels in ``layout.dim[0].label``: e_x, e_y, ed_x, ed_y, lambda, lambda_d)
at ``diagnostics_rate`` Hz of state time, ``/diagnostics`` (the loop's report).
"""

from robot_dynamics.ros._common import spin_node
from robot_dynamics.ros.controller_node import ControllerNode


class SEAControllerNode(ControllerNode):
    """controller_node with ``law: sea_flatness`` and the labelled ``~/diagnostics``."""

    LABELLED_DIAGNOSTICS = True

    def __init__(self):
        super().__init__('sea_controller')

    def _params(self, extra=None):
        return super()._params(
            dict(
                law='sea_flatness',
                rate=250.0,
                safe='hold',
                hold_damping=0.2,
                max_extrapolation=0.1,
                diagnostics_rate=100.0,
                publish_wrenches=False,
                max_state_age=0.05,
                **(extra or {}),
            )
        )


def main(args=None):
    """Entry point (console script ``sea_controller``)."""
    return spin_node(SEAControllerNode, args)


if __name__ == '__main__':
    raise SystemExit(main())
