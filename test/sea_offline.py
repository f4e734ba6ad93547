"""The offline 1 kHz sampled loop (ZOH) of an SEA law and plant on a sin^2-jerk move, no ROS:
the law's ``update`` on the plant's joint state with the reference sample of the state's time.
Used by test/pkm/test_sea_general.py and test/ros/test_ros_sea.py (its lock-step graph is this
loop over real topics)."""

import numpy as np

from robot_dynamics.control.loop import Reference, State
from robot_dynamics.control.trajectories import SinSquaredJerk


def sea_move(law, plant, goal_offset, T=0.5, n=800, norm=False):
    """``n`` steps of 1 ms from the law's coordinates at the plant's state to ``goal_offset``
    further in ``T`` s (starting at 0.05 s): (max error, the largest component or, with ``norm``,
    the Euclidean norm; the last LawOutput)."""
    x0 = law.current_coordinates(plant.q)
    prof = SinSquaredJerk(x0, x0 + goal_offset, T, 0.05)
    emax, out = 0.0, None
    for _ in range(n):
        t = plant.t
        yd = prof(t)
        ref = Reference(t, yd[0], yd[1], yd[2], None, derivs=yd)
        out = law.update(State(t, plant.q, plant.qd, t), ref)
        plant.step(out.effort)
        emax = max(emax, np.linalg.norm(out.e) if norm else np.abs(out.e).max())
    return emax, out
