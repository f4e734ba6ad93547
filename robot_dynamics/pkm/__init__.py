"""Parallel kinematic machines (PKM): limbs, constraint embedding (Müller) and recursive
second-order inverse dynamics with the SEA model (Müller, Kumar & Kordik). Public names are
re-exported here so that ``rd.pkm.solve_ik``, ``rd.pkm.inverse_dynamics`` ... work."""

from types import ModuleType as _ModuleType

from robot_dynamics.pkm.embedding import (
    PKM,
    IKTracker,
    IKError,
    BranchSwitchError,
    PKMError,
    PKMSpecError,
    SingularityError,
    get_pkm,
    solve_ik,
    task_motion,
    task_dynamics,
    inverse_dynamics,
    forward_dynamics,
    forward_kinematics_pkm,
)
from robot_dynamics.pkm.recursive import (
    inverse_dynamics_d2,
    inverse_dynamics_d2_full,
    limbs_from_model,
    task_space_dynamics,
)
from robot_dynamics.pkm.general import GeneralID2Data, GeneralPKM, general_pkm, inverse_dynamics_d2_general

__all__ = sorted(n for n, v in globals().items() if not n.startswith('_') and not isinstance(v, _ModuleType))
