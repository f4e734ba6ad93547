"""dynamics_node: the generic controller node under its historical name.

Same node as :mod:`robot_dynamics.ros.controller_node` (one control loop, the law chosen by the
``law`` parameter), named ``dynamics_node`` by default; kept so existing launch files and
``ros2 run robot_dynamics dynamics_node`` keep working.
"""

from robot_dynamics.ros._common import spin_node
from robot_dynamics.ros.controller_node import ControllerNode


class DynamicsNode(ControllerNode):
    """:class:`~robot_dynamics.ros.controller_node.ControllerNode` named ``dynamics_node``."""

    def __init__(self):
        super().__init__('dynamics_node')


def main(args=None):
    """Entry point (console script ``dynamics_node``)."""
    return spin_node(DynamicsNode, args)


if __name__ == '__main__':
    raise SystemExit(main())
