"""robot_dynamics: kinematics, dynamics and control of robots with closed kinematic chains.

ROS-free core (everything except :mod:`robot_dynamics.ros`)::

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
:mod:`robot_dynamics.algorithms.dynamics` on first use. So the command line (``robot-dynamics --help``)
starts in a fraction of a second, and a program imports only the modules it uses.
"""

__version__ = '0.1.0'

# public name -> module that defines it (add new re-exports here)
_EXPORTS = {
    'errors': (
        'AssemblyError',
        'ConstraintRankError',
        'ControllabilityError',
        'InputError',
        'LoopSpecError',
        'ModelError',
        'ModelWarning',
        'RobotDynamicsError',
        'SingularMassMatrixError',
        'UnknownNameError',
    ),
    'model': ('Joint', 'Loop', 'Model'),
    'parsers.data': ('data_path',),
    'parsers.urdf': ('load_model',),
    'algorithms.kinematics': (
        'body_jacobian',
        'forward_kinematics',
        'frame_acceleration',
        'frame_jacobian',
        'frame_jacobian_time_variation',
        'frame_placement',
        'frame_velocity',
        'frame_wrench_to_joint',
        'joint_placements',
        'space_jacobian',
    ),
    'algorithms.dynamics': (
        'crba',
        'forward_dynamics',
        'gravity_torques',
        'kinetic_energy',
        'nonlinear_effects',
        'potential_energy',
        'rnea',
    ),
    'algorithms.rnea_derivatives': ('rnea_time_derivatives',),
    'algorithms.constraints': (
        'closure_errors',
        'closure_residual',
        'constraint_bias',
        'constraint_jacobian',
        'constraint_row_names',
        'constraint_terms',
        'idle_motions',
        'loop_errors',
        'loop_residual',
    ),
    # closed-chain dynamics by the projection-matrix formulation (Aghili 2005)
    'algorithms.projection': (
        'DEFAULT_EPS',
        'ConstrainedDynamics',
        'assemble',
        'constrained_forward_dynamics',
        'constrained_forward_dynamics_batch',
        'constraint_force_control',
        'controllability',
        'hybrid_control',
        'independent_coordinates',
        'lagrange_forward_dynamics',
        'pidc',
        'pinv_abs',
        'project_velocity',
        'projected_inverse_dynamics',
    ),
    'plants.rigid': ('BranchMonitor', 'ConstrainedPlant', 'Plant', 'SimLog', 'simulate'),
}
_LAZY = {name: mod for mod, names in _EXPORTS.items() for name in names}
# short names of the modules users reach as attributes (``rd.kinematics``, ``rd.lie`` ...) ->
# where each lives in the layered package
_MODULES = {
    'lie': 'spatial.lie',
    'joints': 'spatial.joints',
    'urdf': 'parsers.urdf',
    'loops': 'parsers.sidecar',
    'kinematics': 'algorithms.kinematics',
    'dynamics': 'algorithms.dynamics',
    'rnea_derivatives': 'algorithms.rnea_derivatives',
    'constraints': 'algorithms.constraints',
    'closure': 'algorithms.closure',
    'projection': 'algorithms.projection',
    'taskspace': 'algorithms.taskspace',
    'partitioning': 'algorithms.partitioning',
    'vdc': 'algorithms.vdc',
    'hydraulics': 'algorithms.hydraulics',
    'sim': 'plants.rigid',
    'sea': 'plants.sea',
    'trajectories': 'control.trajectories',
}
# the public submodules
_SUBMODULES = ('constraints', 'dynamics', 'errors', 'kinematics', 'model', 'pkm', 'projection', 'sim', 'urdf')

__all__ = sorted([*_LAZY, *_SUBMODULES])


def __getattr__(name):
    """Import the module that defines ``name`` on first access (PEP 562)."""
    import importlib

    mod = _LAZY.get(name)
    if mod is not None:
        value = getattr(importlib.import_module(f'{__name__}.{mod}'), name)
        globals()[name] = value  # later accesses do not come here again
        return value
    if name in _MODULES:
        value = importlib.import_module(f'{__name__}.{_MODULES[name]}')
        globals()[name] = value
        return value
    if not name.startswith('__'):
        # any other subpackage or module (rd.pkm, rd.control ...): imported on first access
        try:
            return importlib.import_module(f'{__name__}.{name}')
        except ModuleNotFoundError as exc:
            if exc.name != f'{__name__}.{name}':
                raise  # the submodule exists but one of its imports failed
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(_SUBMODULES) | set(_MODULES))
