"""robot_dynamics: kinematics, dynamics and control of robots with closed kinematic chains.

ROS-free core (everything except :mod:`robot_dynamics.nodes`)::

    import robot_dynamics as rd
    model = rd.load_model("urdf/four_bar.urdf")     # + four_bar.loops.yaml next to it
    tau = rd.rnea(model, q, qd, qdd)                 # tree inverse dynamics
    M = rd.crba(model, q)
    qdd = rd.forward_dynamics(model, q, qd, tau)
    T = rd.forward_kinematics(model, q)              # dict link -> 4x4
    J = rd.frame_jacobian(model, q, "tool", reference="local_world_aligned")
    phi, A, Adqd = rd.constraint_terms(model, q, qd) # loop closures of the sidecar

Conventions: SI units; twists/wrenches linear first (as Pinocchio); batch axis first.
"""
import os as _os

from .errors import (InputError, LoopSpecError, ModelError, RobotDynamicsError,
                     SingularMassMatrixError, UnknownNameError)
from .model import Loop, Model
from .urdf import load_model
from .kinematics import (body_jacobian, forward_kinematics, frame_acceleration,
                         frame_jacobian, frame_jacobian_time_variation, frame_placement,
                         frame_velocity, frame_wrench_to_joint, joint_placements,
                         space_jacobian)
from .dynamics import (crba, forward_dynamics, gravity_torques, kinetic_energy,
                       nonlinear_effects, potential_energy, rnea)
from . import pkm  # noqa: E402  (rd.pkm.*)
from .constraints import (constraint_bias, constraint_jacobian, constraint_row_names,
                          constraint_terms, loop_errors, loop_residual)

__version__ = '0.1.0'


def data_path(relative=''):
    """Absolute path of a packaged data file, e.g. ``data_path('urdf/four_bar.urdf')``.

    Looks in the installed share directory (``<prefix>/share/robot_dynamics``) and, for a
    source checkout, next to the package.
    """
    import sys
    here = _os.path.dirname(_os.path.abspath(__file__))
    cands = [_os.path.join(_os.path.dirname(here), relative),
             _os.path.join(sys.prefix, 'share', 'robot_dynamics', relative)]
    try:
        from ament_index_python.packages import get_package_share_directory
        cands.append(_os.path.join(get_package_share_directory('robot_dynamics'), relative))
    except Exception:  # noqa: BLE001 - not on a ROS install / AMENT_PREFIX_PATH unset
        pass
    for c in cands:
        if _os.path.exists(c):
            return c
    raise FileNotFoundError(f"robot_dynamics data file '{relative}' not found in {cands}")


# closed-chain dynamics by the projection-matrix formulation (seed 002) and its simulator
from .errors import AssemblyError, ConstraintRankError, ControllabilityError  # noqa: E402
from .projection import (DEFAULT_EPS, ConstrainedDynamics, assemble,  # noqa: E402
                         constrained_forward_dynamics, constraint_force_control,
                         controllability, hybrid_control, independent_coordinates,
                         lagrange_forward_dynamics, pidc, pinv_abs, project_velocity,
                         projected_inverse_dynamics)
from .sim import BranchMonitor, ConstrainedPlant, Plant, SimLog, simulate  # noqa: E402
