"""Parallel kinematic machines (PKM): limbs, constraint embedding (seed 003) and recursive
higher-order inverse dynamics (seed 004). Public names are re-exported here so that
``rd.pkm.solve_ik``, ``rd.pkm.inverse_dynamics`` ... work."""
