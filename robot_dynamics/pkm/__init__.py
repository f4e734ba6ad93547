"""Parallel kinematic machines (PKM): limbs, constraint embedding (seed 003) and recursive
higher-order inverse dynamics (seed 004). Public names are re-exported here so that
``rd.pkm.solve_ik``, ``rd.pkm.inverse_dynamics`` ... work."""
from .embedding import (PKM, IKTracker, IKError, BranchSwitchError, PKMError, PKMSpecError, SingularityError, get_pkm, solve_ik, task_motion, task_dynamics, inverse_dynamics, forward_dynamics, forward_kinematics_pkm)  # noqa: F401  seed 003
from .recursive import inverse_dynamics_d2, inverse_dynamics_d2_full, limbs_from_model, task_space_dynamics  # noqa: E402,F401  (seed 004)
from .general import GeneralID2Data, GeneralPKM, general_pkm, inverse_dynamics_d2_general  # noqa: E402,F401  (seed 004, general route)
