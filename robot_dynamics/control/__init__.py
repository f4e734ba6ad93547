"""The control floor (no ROS): the control loop (:mod:`.loop`), one law class per law
(:mod:`.laws` is the registry), references and trajectories."""

from robot_dynamics.algorithms.projection import hold_command
from robot_dynamics.control.computed_torque import DynamicsController, task_coordinates

__all__ = ['DynamicsController', 'hold_command', 'task_coordinates']
