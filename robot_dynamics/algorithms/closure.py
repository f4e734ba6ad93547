"""Passive-joint completer (no ROS): a real parallel robot senses only some joints.

:class:`ClosureCompleter` takes whatever joints are sensed (at least enough to determine the
configuration: ``rank [A; S_sensed] = n``), solves the loop closure for the rest and fills
their velocities from the constraint Jacobian, so robot_state_publisher, RViz and the
controllers get every joint. Used by ``closure_node``; the core is tested against
the simulator's complete state.

Positions: Newton-Raphson on the closure ``phi(q) = 0`` with the sensed joints held
(:func:`robot_dynamics.algorithms.projection.assemble`), warm-started from the previous completed
configuration: the solution stays on the branch (assembly mode) the robot is in.
Velocities: ``A(q) qd = 0`` split into sensed ``s`` and unsensed ``u`` columns,
``A_u qd_u = -A_s qd_s``, solved by least squares (exact when the sensed joints determine the
configuration). A sensed joint without a velocity (absent, or NaN: an interface the hardware
does not have) gets the backward difference of its positions over the stamps (0 on the first
message or after a gap longer than ``max_gap``).

Never a jump: a completion is *refused* (``Completion.ok`` False, ``reason`` set, the previous
state stands) when the sensed joints do not determine the configuration (singular:
``sigma_min`` of the unsensed columns below ``sing_tol``), the closure cannot be solved, or an
unsensed joint would move more than ``max_jump`` [rad | m] in one message (a switched branch,
or a sensor glitch). With ``reset()`` (or on the first message) the completion starts from the
sidecar's reference configuration, which selects the branch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from robot_dynamics.errors import InputError, RobotDynamicsError

__all__ = ['ClosureCompleter', 'Completion']


@dataclass
class Completion:
    """Result of :meth:`ClosureCompleter.complete`: ``q``, ``qd`` (n,) in model order (None
    when refused), ``ok``, ``reason`` (why refused), ``estimated`` (names of sensed joints whose
    velocity was estimated), ``iterations``, ``sigma_min`` (conditioning of the completion)."""

    q: np.ndarray | None
    qd: np.ndarray | None
    ok: bool
    reason: str = ''
    estimated: tuple = ()
    iterations: int = 0
    sigma_min: float = float('nan')


class ClosureCompleter:
    """Complete partially sensed joint states of ``model`` (see the module docstring).

    ``tol``: closure tolerance [m | -]; ``max_jump``: largest change of an unsensed joint per
    message [rad | m]; ``sing_tol``: smallest singular value of ``A_u`` accepted; ``max_gap``:
    longest stamp gap [s] over which a velocity is estimated by differences.
    """

    def __init__(self, model, tol=1e-11, max_jump=0.3, sing_tol=1e-6, max_gap=0.1):
        if not model.loops:
            raise InputError(f"model '{model.name}' has no loops: every joint must be sensed")
        for k, v in (('tol', tol), ('max_jump', max_jump), ('sing_tol', sing_tol), ('max_gap', max_gap)):
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise InputError(f'{k} must be a finite number > 0, got {v!r}')
        self.model = model
        self.tol, self.max_jump, self.sing_tol, self.max_gap = (
            float(tol),
            float(max_jump),
            float(sing_tol),
            float(max_gap),
        )
        self.reset()

    def reset(self):
        """Forget the previous state: the next completion starts from the reference configuration."""
        self.q = None
        self._prev = {}  # sensed joint -> (stamp, position)
        self.count = dict(completed=0, refused=0)
        self.last_reason = ''

    def _refuse(self, why):
        self.count['refused'] += 1
        self.last_reason = why
        return Completion(None, None, False, why)

    def complete(self, names, position, velocity=None, stamp=None):
        """Complete one joint state. ``names``, ``position``, ``velocity`` (sequences; velocity
        may be empty or hold NaN); ``stamp`` [s]. Joints not in the model are ignored; a NaN
        position means "not sensed". Returns :class:`Completion`."""
        from robot_dynamics.algorithms.constraints import constraint_jacobian
        from robot_dynamics.algorithms.projection import assemble

        m = self.model
        names = list(names)
        pos = list(position)
        vel = list(velocity) if velocity is not None else []
        if len(pos) != len(names) or (vel and len(vel) != len(names)):
            return self._refuse('position/velocity lengths do not match the names')
        sensed, qs, vs = [], [], []
        for k, n in enumerate(names):
            i = m._joint_index.get(n)
            if i is None or i in sensed:
                continue
            try:
                p = float(pos[k])
                v = float(vel[k]) if vel else float('nan')
            except (TypeError, ValueError):
                return self._refuse(f"non-numeric value of '{n}'")
            if math.isfinite(p):
                sensed.append(i)
                qs.append(p)
                vs.append(v)
        if not sensed:
            return self._refuse('no sensed joint of the model')
        idx = np.array(sensed, dtype=np.int64)
        guess = (m.reference_q() if self.q is None else self.q).copy()
        guess[idx] = qs
        try:
            res = assemble(
                m,
                np.asarray(qs),
                q_guess=guess,
                fixed=[m.joint_names[i] for i in idx],
                tol=self.tol,
                fallback=self.q is None,
            )
        except RobotDynamicsError as exc:
            return self._refuse(f'closure not solved: {exc}')
        q = res.q
        A = constraint_jacobian(m, q)
        free = np.ones(m.nq, bool)
        free[idx] = False
        Au = A[:, free]
        s = np.linalg.svd(Au, compute_uv=False) if Au.size else np.zeros(0)
        ru = int(free.sum())
        smin = float(s[ru - 1]) if ru and len(s) >= ru else (0.0 if ru else float('inf'))
        if ru and smin < self.sing_tol:
            return self._refuse(
                f'the sensed joints {[m.joint_names[i] for i in idx]} do not determine '
                f'the configuration here (sigma_min of the unsensed columns '
                f'{smin:.2e} < {self.sing_tol:g}): singular configuration or too few sensors'
            )
        if self.q is not None:
            jump = np.abs(q[free] - self.q[free])
            if jump.size and jump.max() > self.max_jump:
                j = np.flatnonzero(free)[int(np.argmax(jump))]
                return self._refuse(
                    f"'{m.joint_names[j]}' would jump by {jump.max():.3g} "
                    f'(> max_jump {self.max_jump:g}): branch switch or sensor glitch refused'
                )
        # velocities of the sensed joints: measured, or backward differences
        vs = np.asarray(vs, float)
        est = []
        for k, i in enumerate(idx):
            if not math.isfinite(vs[k]):
                n = m.joint_names[i]
                prev = self._prev.get(n)
                if stamp is not None and prev is not None and 0 < stamp - prev[0] <= self.max_gap:
                    vs[k] = (qs[k] - prev[1]) / (stamp - prev[0])
                else:
                    vs[k] = 0.0
                est.append(n)
        if stamp is not None:
            for k, i in enumerate(idx):
                self._prev[m.joint_names[i]] = (float(stamp), float(qs[k]))
        qd = np.zeros(m.nq)
        qd[idx] = vs
        if ru:
            qd[free] = np.linalg.lstsq(Au, -A[:, idx] @ vs, rcond=None)[0]
        self.q = q
        self.count['completed'] += 1
        return Completion(q, qd, True, '', tuple(est), int(res.iterations), smin)
