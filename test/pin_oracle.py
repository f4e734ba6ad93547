"""Helpers for comparing with Pinocchio (the tests' oracle)."""

import numpy as np


def to_pin_q(m, pm, q):
    """Our configuration q (model ``m``) as Pinocchio's of ``pm`` (joints matched by name; a
    Pinocchio continuous joint is (cos q, sin q))."""
    out = []
    for jt in m.joints:
        pj_ = pm.joints[pm.getJointId(jt.name)]
        qq = q[jt.q_slice]
        out += [np.cos(qq[0]), np.sin(qq[0])] if (pj_.nq, pj_.nv) == (2, 1) else list(qq)
    return np.array(out)
