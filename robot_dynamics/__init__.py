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

The public names are imported lazily (PEP 562): ``import robot_dynamics`` costs almost nothing
(no numpy, no numba), and ``rd.rnea`` (or ``from robot_dynamics import rnea``) imports
:mod:`robot_dynamics.dynamics` on first use. So the command line (``robot-dynamics --help``)
starts in a fraction of a second, and a program imports only the modules it uses.
"""
import os as _os

__version__ = '0.1.0'

# public name -> submodule that defines it (everything ``import robot_dynamics`` exported when
# the imports were eager; add new re-exports here)
_EXPORTS = {
    'errors': ('AssemblyError', 'ConstraintRankError', 'ControllabilityError', 'InputError',
               'LoopSpecError', 'ModelError', 'RobotDynamicsError', 'SingularMassMatrixError',
               'UnknownNameError'),
    'model': ('Loop', 'Model'),
    'urdf': ('load_model',),
    'kinematics': ('body_jacobian', 'forward_kinematics', 'frame_acceleration', 'frame_jacobian',
                   'frame_jacobian_time_variation', 'frame_placement', 'frame_velocity',
                   'frame_wrench_to_joint', 'joint_placements', 'space_jacobian'),
    'dynamics': ('crba', 'forward_dynamics', 'gravity_torques', 'kinetic_energy',
                 'nonlinear_effects', 'potential_energy', 'rnea'),
    'rnea_derivatives': ('rnea_time_derivatives',),
    'constraints': ('constraint_bias', 'constraint_jacobian', 'constraint_row_names',
                    'constraint_terms', 'loop_errors', 'loop_residual'),
    # closed-chain dynamics by the projection-matrix formulation (seed 002) and its simulator
    'projection': ('DEFAULT_EPS', 'ConstrainedDynamics', 'assemble',
                   'constrained_forward_dynamics', 'constraint_force_control', 'controllability',
                   'hybrid_control', 'independent_coordinates', 'lagrange_forward_dynamics',
                   'pidc', 'pinv_abs', 'project_velocity', 'projected_inverse_dynamics'),
    'sim': ('BranchMonitor', 'ConstrainedPlant', 'Plant', 'SimLog', 'simulate'),
}
_LAZY = {name: mod for mod, names in _EXPORTS.items() for name in names}
# public submodules (attributes of the package when its imports were eager); any other
# submodule (rd.lie, rd.vdc ...) is imported on first access as well
_SUBMODULES = ('constraints', 'dynamics', 'errors', 'kinematics', 'model', 'pkm', 'projection',
               'sim', 'urdf')

__all__ = sorted(['data_path', *_LAZY, *_SUBMODULES])


def __getattr__(name):
    """Import the submodule that defines ``name`` on first access (PEP 562)."""
    import importlib
    mod = _LAZY.get(name)
    if mod is not None:
        value = getattr(importlib.import_module(f'{__name__}.{mod}'), name)
        globals()[name] = value            # later accesses do not come here again
        return value
    if not name.startswith('__'):
        # any submodule (rd.pkm, rd.lie, rd.vdc ...): imported on first access, as an
        # eager ``from . import pkm`` made it available
        try:
            return importlib.import_module(f'{__name__}.{name}')
        except ModuleNotFoundError as exc:
            if exc.name != f'{__name__}.{name}':
                raise                          # the submodule exists but one of its imports failed
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(_SUBMODULES))


def data_path(relative=''):
    """Absolute path of a packaged data file, e.g. ``data_path('urdf/four_bar.urdf')``.

    Looks where this copy of the package lives: next to the package in a source checkout,
    then in the share directory of the prefix it is installed in
    (``<prefix>/lib/pythonX.Y/site-packages/robot_dynamics`` -> ``<prefix>/share/robot_dynamics``:
    a pip install or a colcon install space), then through the ament index, then in
    ``sys.prefix``. So a workspace's package reads the workspace's files even where another copy
    is installed in the environment.
    """
    import sys
    here = _os.path.dirname(_os.path.abspath(__file__))
    own_prefix = _os.path.dirname(_os.path.dirname(_os.path.dirname(_os.path.dirname(here))))
    cands = [_os.path.join(_os.path.dirname(here), relative),
             _os.path.join(own_prefix, 'share', 'robot_dynamics', relative)]
    for c in cands:
        if _os.path.exists(c):
            return c
    try:               # a ROS 2 install (colcon): ask the ament index (imported only if needed)
        from ament_index_python.packages import get_package_share_directory
        c = _os.path.join(get_package_share_directory('robot_dynamics'), relative)
        cands.append(c)
        if _os.path.exists(c):
            return c
    except Exception:  # noqa: BLE001 - not on a ROS install / AMENT_PREFIX_PATH unset
        pass
    c = _os.path.join(sys.prefix, 'share', 'robot_dynamics', relative)
    cands.append(c)
    if _os.path.exists(c):
        return c
    raise FileNotFoundError(f"robot_dynamics data file '{relative}' not found in {cands}")
