"""Controllers of the core (pure functions/classes, no ROS): one module per controller."""
from .computed_torque import DynamicsController, hold_command, task_coordinates

__all__ = ['DynamicsController', 'hold_command', 'task_coordinates']
