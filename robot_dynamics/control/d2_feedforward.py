"""Feed-forward from the 2nd-order recursive PKM inverse dynamics (seed 004), e.g. the
Gough-Stewart platform along :class:`~robot_dynamics.pkm.gough_stewart.RollMotion`.

``D2Feedforward(model, motion)``: ``motion(t) -> (X (4, 4), V, Vd, Vdd, Vddd (6,))`` is the
platform pose and its body-fixed task derivatives up to snap (the argument order of
:func:`robot_dynamics.pkm.inverse_dynamics_d2`). ``ff.reference(t)`` returns
:class:`D2Reference`: the actuator forces ``u`` and their 1st/2nd time derivatives ``ud``,
``udd`` (what an SEA / flatness-based drive needs, brief eqs. 14, 19, 20), the actuated joint
motion ``theta_a`` (5, n_a) (position .. 4th derivative, limb IK) and the tree coordinates
``q`` (nq,) of the model (for initial conditions and comparisons). ``ff(t, q, qd)`` returns
the actuator command ``tau = u + kp (theta_a - q_a) + kd (thetad_a - qd_a)`` (order of
``model.actuated``): exact feed-forward plus a joint-space PD on the actuated joints that only
has to correct the discretisation (ZOH) and initial errors. Units: N (prismatic) or N m, m, rad, s.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..pkm.recursive import inverse_dynamics_d2_full, limb_to_tree, limbs_from_model

__all__ = ['D2Feedforward', 'D2Reference']


@dataclass
class D2Reference:
    """One sample of the feed-forward (see the module docstring)."""
    t: float
    u: np.ndarray         # (n_a,)
    ud: np.ndarray        # (n_a,)
    udd: np.ndarray       # (n_a,)
    theta_a: np.ndarray   # (5, n_a): actuated joint position, velocity, .. 4th derivative
    q: np.ndarray         # (nq,): tree coordinates of the model at t
    qd: np.ndarray        # (nq,): their rates


class D2Feedforward:
    """Feed-forward (u, ud, udd) and PD correction along a platform motion (module docstring)."""

    def __init__(self, model, motion, kp=0.0, kd=0.0, platform=None):
        if not callable(motion):
            raise InputError('D2Feedforward: motion must be callable t -> (X, V, Vd, Vdd, Vddd)')
        self.model = model
        self.limbs = limbs_from_model(model, platform)
        self.motion = motion
        self.kp, self.kd = float(kp), float(kd)
        if self.kp < 0 or self.kd < 0:
            raise InputError('D2Feedforward: kp and kd must be >= 0')
        self.idx_a = np.array([model.joint_index(j) for j in model.actuated], np.int64)
        self._guess = None    # previous sample's limb angles: warm start of the Newton IK

    def reference(self, t):
        """:class:`D2Reference` at time ``t`` [s]."""
        t = float(t)
        if not np.isfinite(t):
            raise InputError('D2Feedforward: t must be finite')
        X, V, Vd, Vdd, Vddd = self.motion(t)
        r = inverse_dynamics_d2_full(self.limbs, X, V, Vd, Vdd, Vddd, theta_guess=self._guess)
        self._guess = r.theta[0]
        nq = self.model.nq
        return D2Reference(t, r.u, r.ud, r.udd, r.theta_a, limb_to_tree(self.limbs, r.theta[0], nq),
                           limb_to_tree(self.limbs, r.theta[1], nq))

    def __call__(self, t, q, qd):
        """``(tau (n_a,), reference, e (n_a,), ed (n_a,))`` with e = theta_a - q_a."""
        ref = self.reference(t)
        q, qd = np.asarray(q, float), np.asarray(qd, float)
        e = ref.theta_a[0] - q[self.idx_a]
        ed = ref.theta_a[1] - qd[self.idx_a]
        return ref.u + self.kp * e + self.kd * ed, ref, e, ed
