"""Thin rclpy nodes over the ROS-free core (one Node subclass + main() per module).

A process started to run one of these nodes (``python -m robot_dynamics.ros.<node>`` or the
``<node>`` console script) takes its stop signals as a flag from its first import on
(:mod:`robot_dynamics.ros._signals`): Ctrl-C while it still imports or compiles ends it
cleanly too.
"""

from robot_dynamics.ros._signals import quiet_signals as _quiet, runs_a_node as _runs_a_node

if _runs_a_node():
    _quiet()
