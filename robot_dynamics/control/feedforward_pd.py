"""The feed-forward + PD law of the control loop (:mod:`robot_dynamics.control.loop`):
``feedforward_pd``, also registered as ``embedding_feedforward`` (seed 003) and
``d2_feedforward`` (seed 004).

``u + kp (theta_d - theta) + kd (thetad_d - thetad)`` on the actuated joints, where the
feed-forward ``u`` travels with the reference (ik_node's constraint-embedding task-space inverse
dynamics, or trajectory_node's 2nd-order recursive inverse dynamics of the reference motion) and
theta are the actuated joints.
"""

from __future__ import annotations

from robot_dynamics.control.loop import Law, LawOutput
from robot_dynamics.errors import InputError

__all__ = ['FeedforwardPDLaw']


class FeedforwardPDLaw(Law):
    """``u + kp (theta_d - theta) + kd (thetad_d - thetad)`` on the actuated joints; ``u`` is the
    reference's feed-forward effort. Reference coordinates = the actuated joints."""

    needs_feedforward = True

    def __init__(self, model, kp=1500.0, kd=80.0, joints=None, name='feedforward_pd'):
        super().__init__(model, joints)
        self.name = name
        if float(kp) < 0 or float(kd) < 0:
            raise InputError(f'{name}: kp and kd must be >= 0')
        self.kp, self.kd = float(kp), float(kd)
        self.coords = list(self.joints)

    def update(self, state, ref, dt=None):
        i = self.cmd_idx
        e, ed = ref.pos - state.q[i], ref.vel - state.qd[i]
        return LawOutput(ref.effort + self.kp * e + self.kd * ed, e, ed, {'u': ref.effort})
