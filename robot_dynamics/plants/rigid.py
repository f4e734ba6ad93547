"""Simulation of closed-chain (constrained) rigid multibody systems (seed 002 par. 6).

:class:`ConstrainedPlant` is the plant: state ``(t, q, qd)`` of the cut tree, ``reset(q0, qd0)``
projects onto the constraint manifold, ``step(tau, dt)`` advances one control period with
``tau`` held constant (zero-order hold). :func:`simulate` drives a plant with a
``controller(t, q, qd) -> tau`` callback and returns a :class:`SimLog`.

One step (``integrator='rk4'``, the real-time path: a single compiled call)::

    (q, qd) <- RK4 of (qd, qdd(q, qd, tau)), qdd by constrained_forward_dynamics (eq. 22)
    q  <- Newton-Raphson minimum-norm projection  q - A+ phi  while ||phi|| > nr_tol  (eq. 39)
    qd <- velocity projection: 'euclidean' P qd | 'mass' (kinetic-energy minimal) | 'none'
    monitor at the new state: qdd, F, lam, rank, sigma(A), ||phi||, ||A qd||, energy

``integrator='dopri5'`` integrates each control period adaptively (embedded Dormand-Prince
5(4), error control on (q, qd) with ``rtol``/``atol``, both projections after every accepted
sub-step, so the discontinuity of P at rank changes only shrinks the sub-steps).

External loads (``plant.set_external_wrench(frame, wrench, reference)``, see :class:`Plant`):
``J_f(q)^T w`` is added to the tree's generalized force before the projection (held over the
step like tau).

Velocity projection is on by default: under eq. (22) ``d/dt (A qd) = 0``, so any velocity
violation created by the integrator persists and keeps pushing q off the manifold (brief A2).
``vel_proj='none'`` reproduces the paper (position projection only).

Leaving the admissible branch
-----------------------------
At a singular configuration several assembly branches can meet (slider-crank: branch I
``q2 = -2 q1`` and branch II ``q2 = pi`` cross at ``(-pi/2, pi)``); a too large rank tolerance
or time step, or a Newton projection that lands on another assembly, can move the simulation to
another branch. Physically the state is continuous, so the monitor looks for what a branch
change leaves behind; every event is a :class:`BranchEvent` in ``plant.events`` (and in
``StepInfo.events``), never a silent correction:

* ``'branch_jump'`` (automatic, any robot): the step is inconsistent with a smooth motion.
  With ``a = qdd`` at both ends of the step (same held tau), the corrected trapezoidal rule
  ``jump_q = ||q1 - q0 - h/2 (qd0 + qd1) + h^2/12 (qdd1 - qdd0)||`` is ``h^5/720 ||q^(5)||``
  for a smooth motion, while a jump of the independent-to-dependent map (another assembly)
  adds ``||dq||`` and an impulsive velocity change (the motion left the tangent space, e.g.
  at a bifurcation, or a dropped constraint direction re-imposed by the projections) adds
  ``h/2 ||dqd||``. An event is raised when the equivalent velocity jump ``2 jump_q / h``
  exceeds ``jump_tol (1 + ||qd1||) + 0.02 h ||qdd1 - qdd0||`` (q units per second; the
  second term is the allowance of a smooth but fast motion, whose ratio
  ``jump_q / (h^2 ||qdd1 - qdd0||) ~ (w h)^2 / 720`` stays far below 0.01 for a rate
  ``w < 1/h``). ``h`` is the step (dt for rk4, the last accepted sub-step for dopri5, whose
  projections act at its end). Default ``jump_tol = 1e-3``.
  ``jump_v = ||qd1 - qd0 - h/2 (qdd0 + qdd1)||`` is logged as a diagnostic only.
* ``'branch_left'`` / ``'branch_returned'`` (declared): ``branch_indicator(q) -> (k,)``, given by
  the user for a known branch structure. ``branch_mode='sign'``: each component keeps the sign
  it had at reset (left when ``sign0 * g < -branch_tol``), e.g. the sign of the transmission
  angle of a four-bar (open/crossed assembly); ``'invariant'``: ``||g(q) - g(q0)|| <=
  branch_tol``, e.g. ``wrap(q2 + 2 q1)`` on slider-crank branch I.
* ``'projection_failed'``: Newton-Raphson did not reach ``nr_tol`` (no assembly near the
  integrated state).
* ``'rank_change'``: the numerical rank of A (tolerance eps) differs from the previous step, or
  dropped at an intermediate stage (``'singular_crossing'``): the constraint was (partly)
  dropped inside a window ``sigma <= eps``.
* ``'step_size_underflow'`` (dopri5): the error test failed at ``h_min``; the step was accepted.
"""

from __future__ import annotations

import math
from collections import namedtuple
from dataclasses import dataclass, field

import numpy as np

from robot_dynamics.plants import _rigid_kernels as FK
from robot_dynamics.algorithms import _projection_kernels as PK
from robot_dynamics.errors import InputError, RobotDynamicsError, SingularMassMatrixError
from robot_dynamics.algorithms.projection import _VP, DEFAULT_EPS, VARIANTS, _eps, _kin_pack, _pack, _vec, assemble

__all__ = [
    'Plant',
    'ConstrainedPlant',
    'BranchMonitor',
    'StepInfo',
    'BranchEvent',
    'SimLog',
    'SingularCrossingError',
    'simulate',
    'wrap_angle',
    'external_wrench_args',
    'external_generalized_force',
    'wrench_to_local',
]

StepInfo = namedtuple(
    'StepInfo',
    't q qd qdd tau phi_norm rank rank_min sigma_min kinetic '
    'potential energy F lam nr_iter nr_converged vel_violation jump_q jump_v '
    'substeps events',
)
StepInfo.__doc__ = """State and diagnostics after one step (or after reset).

t [s]; q, qd, qdd (n,) (qdd with the held tau); tau (n,) generalized force applied during the
step; phi_norm ||phi(q)||; rank of A at eps and rank_min over the integrator stages;
sigma_min the smallest singular value of A kept by the rank decision (``sigma[rank-1]``, 0 at
rank 0: structurally zero rows such as the out-of-plane rows of a planar loop do not count);
kinetic, potential, energy [J]; F (n,) constraint force (``M qdd + h = tau - F``) and lam (m,)
minimum-norm multipliers; nr_iter Newton iterations (nr_converged); vel_violation ||A qd||
before velocity projection; jump_q, jump_v the branch jump metrics; substeps (dopri5: accepted
sub-steps); events: tuple of BranchEvent."""

BranchEvent = namedtuple('BranchEvent', 't kind message data')
BranchEvent.__doc__ = """A monitor event: t [s], kind ('branch_jump', 'branch_left',
'branch_returned', 'projection_failed', 'rank_change', 'singular_crossing',
'step_size_underflow'), message (str), data (dict)."""


def _sigma_kept(s, r):
    """Smallest singular value kept by the rank decision (s[r-1]); 0 if rank 0; inf if m = 0."""
    if len(s) == 0:
        return np.inf
    return float(s[r - 1]) if r > 0 else 0.0


def _norm(x):
    """||x||_2 of a 1-D float array: sqrt(x . x), what np.linalg.norm computes, without its
    Python overhead (the monitor runs once per simulator step)."""
    return math.sqrt(float(x @ x))


def wrap_angle(x):
    """Wrap angles to [-pi, pi)."""
    return (np.asarray(x) + np.pi) % (2.0 * np.pi) - np.pi


def external_wrench_args(model, frame, wrench, reference='local'):
    """Validate an external load: returns ``(frame name, wrench (6,) copy or None, reference)``.

    ``frame``: a frame (URDF link) name or index of ``model`` (UnknownNameError otherwise);
    ``wrench``: 6 finite numbers (force [N], moment [N m]) or None (InputError otherwise);
    ``reference``: 'local', 'local_world_aligned' or 'world' (aliases 'lwa', 'space', 'body').
    """
    from robot_dynamics.algorithms.kinematics import _ref

    name = model.frame_names[model.frame_index(frame)]
    ref = _ref(reference)
    if wrench is None:
        return name, None, ref
    w = np.asarray(wrench, dtype=np.float64).reshape(-1)
    if w.shape != (6,) or not np.all(np.isfinite(w)):
        raise InputError(
            f"external wrench on '{name}' must be 6 finite numbers (force, moment), "
            f'got shape {w.shape}' + ('' if w.shape != (6,) else ' with NaN/inf')
        )
    return name, w.copy(), ref


def wrench_to_local(R, p, wrench, reference):
    """The same wrench as (force, moment about the frame origin) in the frame's own axes.

    ``R, p``: world placement of the frame; ``reference`` as in :func:`external_wrench_args`.
    """
    f, m = np.asarray(wrench[:3], float), np.asarray(wrench[3:], float)
    if reference == 'local':
        return np.concatenate([f, m])
    if reference == 'world':  # moment about the world origin -> frame origin
        m = m - np.cross(p, f)
    return np.concatenate([R.T @ f, R.T @ m])


def external_generalized_force(model, q, loads):
    """Generalized force (n,) of external wrenches: ``sum_f J_f(q)^T w_f`` (virtual power).

    ``loads``: dict frame -> (wrench (6,), reference); ``J_f`` is
    :func:`robot_dynamics.algorithms.kinematics.frame_jacobian` of the frame in the wrench's reference, so
    ``J_f^T w`` is the force whose power on every joint velocity equals the power of the wrench
    on the frame's twist (``w . (J_f qd)``). A frame on the fixed base contributes nothing.
    """
    from robot_dynamics.algorithms.kinematics import frame_jacobian

    tau = np.zeros(model.nv)
    for frame, (w, ref) in loads.items():
        tau += frame_jacobian(model, q, frame, ref).T @ w
    return tau


class SingularCrossingError(RobotDynamicsError):
    """A simulation step diverged at a singular configuration of the loop constraints.
    Attributes: ``t`` [s], ``sigma_min`` (of A at the last finite state), ``rows`` (constraint
    row names along the lost direction), ``drift`` (|A qd| there)."""

    def __init__(self, message, t, sigma_min, rows, drift):
        super().__init__(message)
        self.t, self.sigma_min, self.rows, self.drift = t, sigma_min, rows, drift


def effort_bounds(model):
    """Bound (n,) on each joint's effort from the URDF effort limits: a limit that is absent,
    zero or not finite is unbounded (inf), as the control loop reads them."""
    lim = np.asarray(model.effort_limit, float)
    return np.where(np.isfinite(lim) & (lim > 0), lim, np.inf)


class Plant:
    """Interface of a simulated plant (what a ROS simulator node drives).

    Attributes ``model``, ``t`` [s], ``q`` (n,), ``qd`` (n,), ``dt`` (default step),
    ``last`` (:class:`StepInfo` of the current state), ``events`` (list).
    Methods ``reset(q0=None, qd0=None, t0=0.0) -> StepInfo`` (onto the manifold) and
    ``step(tau=None, dt=None) -> StepInfo`` (tau held over the step). ``tau`` is either the
    full generalized force (n,) or the efforts of the actuated joints (p,) in the order of
    ``model.actuated``.

    External loads (plants with ``supports_external_wrench``; the others raise InputError):
    ``set_external_wrench(frame, wrench, reference='local')`` applies a wrench exerted **by the
    environment on the robot body carrying ``frame``** (a URDF link name): ``wrench`` = (force
    [N], moment [N m]) with the force applied at the frame's origin and the moment about that
    origin, both in the frame's own axes (``reference='local'``), or in world axes
    (``'local_world_aligned'``), or as a spatial wrench about the world origin in world axes
    (``'world'``). One load per frame: a new call replaces the frame's load; a zero wrench or
    None removes it. The load stays applied until changed (it is part of the plant input, like
    ``tau``, and survives ``reset``); ``clear_external_wrench(frame=None)`` removes one or all,
    ``external_wrenches`` lists them. Like ``tau``, the load is evaluated at the state at the
    start of each step and held over the step (see the plant's own doc for what is exact).
    """

    model = None
    supports_external_wrench = False
    #: what the command of an actuated joint is: ``'effort'`` (generalized force [N m | N]; the
    #: simulator saturates it as ros2_control's joint limits do for an effort interface:
    #: :meth:`command_limits`, and no effort further past a velocity or position limit) or
    #: another quantity with its own bounds (the hydraulic plant's valve voltages [V])
    command_interface = 'effort'

    def command_limits(self):
        """Symmetric bound (n,) on the command of each joint, ``|tau_i| <= limit_i``: the URDF
        effort limits (a limit that is absent, zero or not finite: unbounded, as the control loop
        reads them)."""
        return effort_bounds(self.model)

    def set_external_wrench(self, frame, wrench, reference='local'):
        """Apply (replace, or with zero / None remove) the external load on ``frame``.

        Returns the frame name. Raises UnknownNameError (unknown frame), InputError (not 6
        finite numbers, unknown reference, or a plant without an external-load input).
        """
        if not self.supports_external_wrench:
            raise InputError(f'plant {type(self).__name__} has no external-load input')
        name, w, ref = external_wrench_args(self.model, frame, wrench, reference)
        loads = dict(self.__dict__.get('_ext', {}))
        if w is None or not np.any(w):
            loads.pop(name, None)
        else:
            loads[name] = (w, ref)
        self._ext = loads
        return name

    def clear_external_wrench(self, frame=None):
        """Remove the load on ``frame`` (default: all loads)."""
        if frame is None:
            self._ext = {}
        else:
            self.set_external_wrench(frame, None)

    @property
    def external_wrenches(self):
        """dict frame -> (wrench (6,) copy, reference) of the applied external loads."""
        return {f: (w.copy(), r) for f, (w, r) in self.__dict__.get('_ext', {}).items()}

    def reset(self, q0=None, qd0=None, t0=0.0):
        raise NotImplementedError

    def step(self, tau=None, dt=None):
        raise NotImplementedError

    #: attributes that make up the plant's state (what :meth:`snapshot` copies)
    state_attrs = ('t', 'q', 'qd', 'last')

    def snapshot(self):
        """Copy of the plant state (``state_attrs``), for :meth:`restore` (a simulator refuses
        a step that failed or went non-finite and holds the state from before it)."""
        return {
            k: (v.copy() if isinstance(v, np.ndarray) else v)
            for k, v in ((k, getattr(self, k, None)) for k in self.state_attrs)
        }

    def restore(self, snap):
        """Set the state saved by :meth:`snapshot` (arrays copied back)."""
        for k, v in snap.items():
            cur = getattr(self, k, None)
            if isinstance(v, np.ndarray) and isinstance(cur, np.ndarray) and cur.shape == v.shape:
                cur[...] = v  # in place: kernels may hold views
            else:
                setattr(self, k, v.copy() if isinstance(v, np.ndarray) else v)

    def full_tau(self, tau):
        """Map tau (n,) or actuated efforts (p,) to the generalized force (n,)."""
        n = self.model.nv
        if tau is None:
            return np.zeros(n)
        t = np.asarray(tau, dtype=np.float64).reshape(-1)
        if t.shape == (n,):
            out = t.copy()
        else:
            idx = self.model.actuated_indices
            if t.shape != (len(idx),):
                raise InputError(
                    f'tau must have shape ({n},) (all joints) or ({len(idx)},) '
                    f'(actuated joints {self.model.actuated}), got {t.shape}'
                )
            out = np.zeros(n)
            out[idx] = t
        if not np.all(np.isfinite(out)):
            raise InputError('tau contains non-finite values')
        return out


class BranchMonitor:
    """Detects and reports leaving the admissible branch (see the module doc).

    ``check`` is called once per step with the start (q0, qd0, qdd0) and end (q1, qd1, qdd1)
    of the last (sub-)step of size h and the step diagnostics; it returns the list of
    :class:`BranchEvent` and the metrics ``(jump_q, jump_v)``. Usable on its own (e.g. by a
    ROS simulator node wrapping another integrator). ``difference(q0, q1)``: the velocity (nv,)
    from q0 to q1 in unit time (:meth:`robot_dynamics.model.Model.difference`; default
    ``q1 - q0``, for models without multi-DOF joints).
    """

    def __init__(
        self,
        indicator=None,
        mode='sign',
        tol=1e-6,
        jump_tol=1e-3,
        eps=DEFAULT_EPS,
        nr_tol=1e-12,
        nr_max_iter=10,
        difference=None,
    ):
        self.difference = difference if difference is not None else (lambda q0, q1: q1 - q0)
        self.indicator, self.mode, self.tol = indicator, mode, float(tol)
        self.jump_tol, self.eps = float(jump_tol), float(eps)
        self.nr_tol, self.nr_max_iter = nr_tol, nr_max_iter
        self.g0 = None
        self.on_branch = True
        self.rank = None

    def reset(self, q, rank):
        """Take the reference branch (indicator value) and rank at q."""
        self.rank = int(rank)
        self.on_branch = True
        self.g0 = None
        if self.indicator is not None:
            self.g0 = np.atleast_1d(np.asarray(self.indicator(q), dtype=float))

    def check(self, t1, q0, v0, a0, q1, v1, a1, h, rank, rank_min, nr_ok, phi_norm, sigma_min):
        ev = []
        if not nr_ok:
            ev.append(
                BranchEvent(
                    t1,
                    'projection_failed',
                    f'Newton-Raphson projection did not reach ||phi|| <= '
                    f'{self.nr_tol:g} in {self.nr_max_iter} iterations '
                    f'(||phi|| = {phi_norm:.3e}): no assembly near the integrated '
                    f'state',
                    {'phi_norm': phi_norm},
                )
            )
        if self.rank is not None and rank != self.rank:
            ev.append(
                BranchEvent(
                    t1,
                    'rank_change',
                    f'rank of A changed {self.rank} -> {rank} (sigma_min = {sigma_min:.3e}, eps = {self.eps:g})',
                    {'rank_before': self.rank, 'rank': rank, 'sigma_min': sigma_min},
                )
            )
        elif rank_min < rank:
            ev.append(
                BranchEvent(
                    t1,
                    'singular_crossing',
                    f'rank of A dropped to {rank_min} inside the step (sigma <= '
                    f'eps = {self.eps:g}): constraint direction(s) dropped',
                    {'rank_min': rank_min, 'rank': rank},
                )
            )
        self.rank = rank
        da = a1 - a0
        jq = _norm(self.difference(q0, q1) - 0.5 * h * (v0 + v1) + h * h / 12.0 * da)
        jv = _norm(v1 - v0 - 0.5 * h * (a0 + a1))
        vj = 2.0 * jq / h
        vlim = self.jump_tol * (1.0 + _norm(v1)) + 0.02 * h * _norm(da)
        if vj > vlim:
            ev.append(
                BranchEvent(
                    t1,
                    'branch_jump',
                    f'non-smooth step: equivalent velocity jump 2 jump_q / h = '
                    f'{vj:.3e} > {vlim:.3e} (jump_q = {jq:.3e}, h = {h:g}); the '
                    f'state jumped to another assembly or its velocity was '
                    f'projected impulsively',
                    {'jump_q': jq, 'jump_v': jv, 'q_before': np.array(q0), 'q': np.array(q1)},
                )
            )
        if self.g0 is not None:
            g = np.atleast_1d(np.asarray(self.indicator(q1), dtype=float))
            if self.mode == 'sign':
                on = not np.any(np.sign(self.g0) * g < -self.tol)
            else:
                on = bool(np.linalg.norm(g - self.g0) <= self.tol)
            if on != self.on_branch:
                kind = 'branch_returned' if on else 'branch_left'
                ev.append(
                    BranchEvent(
                        t1,
                        kind,
                        f'declared branch indicator: {kind} (g = {g}, g0 = {self.g0}, mode {self.mode})',
                        {'g': g, 'g0': self.g0.copy()},
                    )
                )
                self.on_branch = on
        return ev, jq, jv


class ConstrainedPlant(Plant):
    """Closed-chain rigid plant integrated by the projection method (see module doc).

    Parameters
    ----------
    model : Model
    q0, qd0 : (n,), optional
        Initial state (default ``model.reference_q()``, zero velocity); projected by
        :meth:`reset` (the ``reset_fixed`` joints are kept, the others solved).
    dt : float
        Default step [s] (control period; ZOH of tau).
    integrator : 'rk4' (fixed step, one compiled call per step: the real-time path) or
        'dopri5' (adaptive Dormand-Prince 5(4) inside each step).
    kernel : 'fast' (default) or 'reference': with rk4, variant 'Mc' and vel_proj
        'euclidean'/'none', 'fast' steps with :mod:`robot_dynamics.plants._rigid_kernels` (the
        RK4 stages by the Schur complement on the L^T D L factors of M where A has certified
        full row rank, else the SVD of A replaced by a certified URV factorization and the
        null-space form of eq. 22; falls back to the SVD wherever the rank decision is not
        certified); with variant 'Mc', dopri5 takes the Schur route too where certified;
        'reference' always uses the SVD kernels of
        :mod:`robot_dynamics.algorithms._projection_kernels`. Same results to ~1e-12.
    rtol, atol, h_min : dopri5 error tolerances (on q and qd) and smallest sub-step [s].
    tangent_error : dopri5 measures the error in the tangent space N(A) (default True).
    substep_projection : dopri5 projects after every sub-step (default: only at the end of
        the step, like rk4).
    sing_tol, cross_step : dopri5 steps over singular neighbourhoods (a rejected step whose
        stages met sigma_min(A) < sing_tol, units of A) with sub-steps >= cross_step [s].
    variant, gamma, eps : forward-dynamics variant and absolute rank tolerance (see
        :func:`robot_dynamics.algorithms.projection.constrained_forward_dynamics`).
    vel_proj : 'euclidean' (default), 'mass' or 'none' (the paper: position projection only).
    pos_proj : bool, Newton-Raphson position projection (default on); nr_tol [m | rad],
        nr_max_iter.
    branch_indicator, branch_mode, branch_tol, jump_tol : branch monitor (module doc).
    reset_fixed : joints kept by the position projection at reset ('independent' default,
        'none' for the minimum-norm projection, or a list of names).
    t0 : initial time [s].

    External loads (:meth:`Plant.set_external_wrench`): the generalized force
    ``sum_f J_f(q)^T w_f`` (:func:`external_generalized_force`, our frame Jacobians of the
    tree, virtual power) is added to the tree's tau *before* the projection, i.e. exactly like
    an applied joint force: the constraint forces F react to it. It is evaluated at the state
    at the start of the step and held over the step (zero-order hold, like tau; a load fixed in
    the frame's axes turns with the body within the step, an O(dt) effect). ``StepInfo.tau``
    is the total generalized force applied (command + external loads).

    Example
    -------
    >>> plant = ConstrainedPlant(rd.load_model('urdf/five_bar.urdf'), dt=1e-3)
    >>> info = plant.step([0.1, -0.1])          # efforts of model.actuated, held for 1 ms
    >>> info.q, info.F, info.phi_norm, info.events
    """

    supports_external_wrench = True

    def __init__(
        self,
        model,
        q0=None,
        qd0=None,
        *,
        dt=1e-3,
        integrator='rk4',
        variant='Mc',
        gamma=None,
        eps=None,
        vel_proj='euclidean',
        pos_proj=True,
        nr_tol=1e-12,
        nr_max_iter=10,
        rtol=1e-9,
        atol=1e-12,
        h_min=1e-10,
        branch_indicator=None,
        branch_mode='sign',
        branch_tol=1e-6,
        jump_tol=1e-3,
        reset_fixed='independent',
        tangent_error=True,
        substep_projection=False,
        sing_tol=1e-3,
        cross_step=1e-3,
        t0=0.0,
        kernel='fast',
    ):
        self.model = model
        if kernel not in ('fast', 'reference'):
            raise InputError(f"kernel must be 'fast' or 'reference', got {kernel!r}")
        if integrator not in ('rk4', 'dopri5'):
            raise InputError(f"integrator must be 'rk4' or 'dopri5', got {integrator!r}")
        if variant not in VARIANTS:
            raise InputError(f'variant must be one of {sorted(VARIANTS)}, got {variant!r}')
        if vel_proj not in _VP:
            raise InputError(f'vel_proj must be one of {sorted(_VP)}, got {vel_proj!r}')
        if branch_mode not in ('sign', 'invariant'):
            raise InputError(f"branch_mode must be 'sign' or 'invariant', got {branch_mode!r}")
        if not dt > 0:
            raise InputError(f'dt must be > 0, got {dt!r}')
        self.dt = float(dt)
        self.integrator = integrator
        self.variant = variant
        # 'reference' keeps the SVD route at every evaluation ('Mc' -> 'Mc_svd')
        self._vcode = VARIANTS['Mc_svd' if (kernel == 'reference' and variant == 'Mc') else variant]
        self.gamma = 0.0 if gamma is None else float(gamma)
        self.eps = _eps(eps)
        self.vel_proj = vel_proj
        self._vp = _VP[vel_proj]
        self.pos_proj = bool(pos_proj)
        self.nr_tol = float(nr_tol)
        self.nr_max_iter = int(nr_max_iter)
        self.rtol, self.atol, self.h_min = float(rtol), float(atol), float(h_min)
        self.tangent_error = bool(tangent_error)
        self.substep_projection = bool(substep_projection)
        self.sing_tol = float(sing_tol)
        self.cross_step = float(cross_step)
        self.branch_indicator = branch_indicator
        self.branch_mode = branch_mode
        self.branch_tol = float(branch_tol)
        self.jump_tol = float(jump_tol)
        self.reset_fixed = reset_fixed
        self.kernel = kernel
        # the fast route exists for the default variant and Euclidean (or no) velocity
        # projection (robot_dynamics.plants._rigid_kernels); the other options use the reference
        self._fast = kernel == 'fast' and integrator == 'rk4' and variant == 'Mc' and vel_proj in ('euclidean', 'none')
        self._pack = _pack(model)
        self._m = model.nconstraints
        self._h = None
        self.events = []
        self._ext = {}
        self.reset(q0, qd0, t0)

    def external_tau(self, q=None):
        """Generalized force (n,) of the external loads at q (default: the current state)."""
        if not self._ext:
            return np.zeros(self.model.nv)
        return external_generalized_force(self.model, self.q if q is None else q, self._ext)

    # ------------------------------------------------------------------ state
    @property
    def nq(self):
        return self.model.nq

    @property
    def state(self):
        """(t, q copy, qd copy)."""
        return self.t, self.q.copy(), self.qd.copy()

    def reset(self, q0=None, qd0=None, t0=0.0, fixed=None):
        """Set the state, projected onto the manifold; returns the :class:`StepInfo`.

        q0 is closed by :func:`~robot_dynamics.algorithms.projection.assemble` keeping the ``fixed``
        joints (default ``reset_fixed``); qd0 (default 0) is projected onto N(A) (Euclidean,
        or mass-weighted if ``vel_proj='mass'``). Raises AssemblyError if q0 cannot be closed.
        """
        model = self.model
        n = model.nv
        q = model.reference_q() if q0 is None else _vec(q0, model.nq, 'q0').copy()
        qd = np.zeros(n) if qd0 is None else _vec(qd0, n, 'qd0').copy()
        fixed = self.reset_fixed if fixed is None else fixed
        if self._m:
            if isinstance(fixed, str) and fixed == 'none':
                q = assemble(model, q_guess=q, fixed='none', tol=self.nr_tol, eps=self.eps).q
            else:
                from robot_dynamics.algorithms.projection import _joint_mask

                _, idx = _joint_mask(model, fixed, 'independent')
                q = assemble(model, q[model.q_of_v[idx]], q_guess=q, fixed=fixed, tol=self.nr_tol, eps=self.eps).q
            mode = self._vp if self._vp != PK.VP_NONE else PK.VP_EUCLIDEAN
            p = self._pack
            PK.vel_project(p, q, qd, mode, self.eps)
        self.t = float(t0)
        self.q, self.qd = q, qd
        self.events = []
        self._h = None
        tau = np.zeros(n)
        a1, F, lam, s, phi = (np.empty(n), np.empty(n), np.empty(self._m), np.zeros(min(self._m, n)), np.empty(self._m))
        st, it, ok, viol, r, T, U = FK.end_of_step(
            self._pack,
            self.q,
            self.qd,
            tau,
            self._vcode,
            self.gamma,
            self.eps,
            False,
            False,
            self.nr_tol,
            self.nr_max_iter,
            PK.VP_NONE,
            a1,
            F,
            lam,
            s,
            phi,
        )
        self._check(st)
        self.monitor = BranchMonitor(
            self.branch_indicator,
            self.branch_mode,
            self.branch_tol,
            self.jump_tol,
            self.eps,
            self.nr_tol,
            self.nr_max_iter,
            model.difference if model.multi_dof else None,
        )
        self.monitor.reset(self.q, int(r))
        self.last = StepInfo(
            self.t,
            self.q.copy(),
            self.qd.copy(),
            a1,
            tau,
            float(np.linalg.norm(phi)),
            int(r),
            int(r),
            _sigma_kept(s, r),
            T,
            U,
            T + U,
            F,
            lam,
            0,
            True,
            float(viol),
            0.0,
            0.0,
            0,
            (),
        )
        return self.last

    def _check(self, st):
        if st == 1:
            raise self._non_finite_error()
        if st == 2:
            raise SingularMassMatrixError(
                None,
                f"simulation of '{self.model.name}': the inertia matrix (or the constraint "
                f'inertia matrix) is not positive definite at t = {self.t:.6g} s: the '
                f'projection method needs M > 0 (seed 002, Prop. 2); give massless links '
                f'a (small) mass',
            )

    def _non_finite_error(self, q=None, qd=None, note=''):
        """The error for a step that produced non-finite values, diagnosed at the last finite
        state: next to a singular configuration of the loop constraints
        (:class:`SingularCrossingError`: sigma_min(A), the constraint rows along the lost
        direction, the velocity drift |A qd| that the unprojected scheme amplifies like
        |A qd| / sigma), else a plain :class:`RobotDynamicsError`."""
        from robot_dynamics.algorithms.constraints import constraint_jacobian, constraint_row_names

        where = (
            f"simulation of '{self.model.name}' produced non-finite values at t = {self.t:.6g} s"
            if not note
            else f"simulation of '{self.model.name}' refused the step from t = {self.t:.6g} s{note}"
        )
        q = np.asarray(self.q if q is None else q, float)
        qd = np.asarray(self.qd if qd is None else qd, float)
        if self._m == 0 or not (np.all(np.isfinite(q)) and np.all(np.isfinite(qd))):
            return RobotDynamicsError(f'{where} (state or tau)')
        A = constraint_jacobian(self.model, q)
        U, sv, _ = np.linalg.svd(A)
        k = min(len(sv), self.model.nv) - 1
        sig = float(sv[k]) if k >= 0 else 0.0
        names = constraint_row_names(self.model)
        w = np.abs(U[:, k]) if k >= 0 else np.zeros(len(names))
        rows = [names[i] for i in np.argsort(-w)[:2] if w[i] > 0.3]
        # singular: sigma_min well below its value at the reference configuration
        sv_ref = np.linalg.svd(constraint_jacobian(self.model, self.model.reference_q()), compute_uv=False)
        scale = float(sv_ref[min(len(sv_ref), self.model.nv) - 1]) if len(sv_ref) else 1.0
        if sig > max(0.05 * scale, 10.0 * self.eps):  # (or well inside the rank window)
            return RobotDynamicsError(
                f'{where}{"" if note else " (state or tau)"}; sigma_min(A) = '
                f'{sig:.3g} ({scale:.3g} at the reference configuration): '
                f'not at a singular configuration of the loops'
            )
        drift = float(np.linalg.norm(A @ qd))
        hint = (
            " The paper's scheme (vel_proj='none': position projection only) keeps the "
            f'velocity drift |A qd| = {drift:.3g} and amplifies it like |A qd| / sigma at '
            "the crossing; vel_proj='euclidean' (or 'mass') projects the velocity onto the "
            'constraint tangent space at every step and crosses it.'
            if self.vel_proj == 'none'
            else ' Try a smaller dt or a larger rank tolerance eps.'
        )
        return SingularCrossingError(
            f'{where}, at a singular configuration of the loop constraints: sigma_min(A) = '
            f'{sig:.3g} (rank tolerance eps = {self.eps:g}) at q = {np.round(q, 6).tolist()}; '
            f'constraint rows along the lost direction: {rows}.{hint}',
            t=self.t,
            sigma_min=sig,
            rows=rows,
            drift=drift,
        )

    # ------------------------------------------------------------------ stepping
    def step(self, tau=None, dt=None):
        """Advance by ``dt`` (default ``self.dt``) with ``tau`` held; returns :class:`StepInfo`.

        tau: (n,) generalized force, or (p,) efforts of ``model.actuated``; None = 0. The
        external loads (:meth:`set_external_wrench`) are added at the current state.
        """
        dt = self.dt if dt is None else float(dt)
        if not dt > 0:
            raise InputError(f'dt must be > 0, got {dt!r}')
        tau = self.full_tau(tau)
        if self._ext:
            tau = tau + external_generalized_force(self.model, self.q, self._ext)
        n, m = self.model.nv, self._m
        q0, v0 = self.q, self.qd
        q1, v1, a0, a1 = np.empty(self.model.nq), np.empty(n), np.empty(n), np.empty(n)
        F, lam, s, phi = np.empty(n), np.empty(m), np.zeros(min(m, n)), np.empty(m)
        args = (self._vcode, self.gamma, self.eps)
        substeps = 1
        ev = []
        if self.integrator == 'rk4':
            st, rmin, it, ok, viol, r, T, U = FK.sim_step_rk4(
                self._pack,
                q0,
                v0,
                tau,
                dt,
                *args,
                self._fast,
                self.pos_proj,
                self.nr_tol,
                self.nr_max_iter,
                self._vp,
                q1,
                v1,
                a0,
                a1,
                F,
                lam,
                s,
                phi,
            )
            self._check(st)
        else:
            q1, v1, a0, it, ok, rmin, substeps, under, over, last_sub = self._dopri(q0, v0, tau, dt)
            if over:
                ev.append(
                    BranchEvent(
                        self.t + dt,
                        'singular_crossing',
                        f'dopri5: error test failed next to a singular '
                        f'configuration (sigma_min(A) < sing_tol = '
                        f'{self.sing_tol:g}); stepped over it at fixed step size',
                        {'count': over},
                    )
                )
            if under:
                ev.append(
                    BranchEvent(
                        self.t + dt,
                        'step_size_underflow',
                        f'dopri5: error test failed at h_min = {self.h_min:g} s ({under} sub-steps accepted anyway)',
                        {'count': under},
                    )
                )
            st, it2, ok2, viol, r, T, U = FK.end_of_step(
                self._pack,
                q1,
                v1,
                tau,
                *args,
                False,
                self.pos_proj,
                self.nr_tol,
                self.nr_max_iter,
                self._vp,
                a1,
                F,
                lam,
                s,
                phi,
            )
            self._check(st)
            it += it2
            ok = ok and ok2
        t1 = self.t + dt
        if self.integrator == 'rk4':
            qs, vs, as_, hs = q0, v0, a0, dt
        else:
            qs, vs, as_, hs = last_sub
        phin = _norm(phi)
        smin = _sigma_kept(s, r)
        mev, jq, jv = self.monitor.check(t1, qs, vs, as_, q1, v1, a1, hs, int(r), int(rmin), bool(ok), phin, smin)
        ev.extend(mev)
        if self.vel_proj == 'none':
            # the paper's scheme has no defence against the drift |A qd| that a singular
            # crossing amplifies: a velocity jump there is a divergence starting (slider-crank,
            # third crossing: 1.4e3 rad/s equivalent, non-finite two steps later), so refuse the
            # step (state kept) with the singularity named, rather than jump or blow up
            jump = next((e for e in mev if e.kind == 'branch_jump'), None)
            if jump is not None:
                raise self._non_finite_error(q0, v0, note=f' ({jump.message})')
        self.events.extend(ev)
        self.t, self.q, self.qd = t1, q1, v1
        self.last = StepInfo(
            t1,
            q1.copy(),
            v1.copy(),
            a1,
            tau,
            phin,
            int(r),
            int(rmin),
            smin,
            T,
            U,
            T + U,
            F,
            lam,
            int(it),
            bool(ok),
            float(viol),
            jq,
            jv,
            substeps,
            tuple(ev),
        )
        return self.last

    def _dopri(self, q, v, tau, dt):
        """Adaptive Dormand-Prince 5(4) over one control period.

        Error control on (q, qd) in the tangent space N(A) (``tangent_error``). Next to a
        singular configuration the ODE (22) is ill-conditioned off the manifold (a normal
        error delta is amplified like delta / sigma^2 through ``C qd = -A+ Adot qd``), so the
        embedded estimate is meaningless there: when a step is rejected and some stage met
        ``sigma_min(A) < sing_tol`` (smallest kept singular value) or a rank drop, the step
        is not shrunk but taken (accepted as it is) with the size ``max(h, cross_step)`` (the
        fixed-step behaviour, which steps over the singular point) and a 'singular_crossing'
        event is reported. Projections are applied at the end of the period (and after every
        sub-step if ``substep_projection``).
        """
        p = self._pack
        kp = _kin_pack(p)
        n = self.model.nv
        args = (self._vcode, self.gamma, self.eps)
        a = np.empty(n)
        st, rmin = PK.cfd_qdd(p, q, v, tau, *args, a)
        self._check(st)
        r_start = rmin
        a_start = a.copy()
        q, v = q.copy(), v.copy()
        h = dt if self._h is None else min(self._h, dt)
        tt, sub, nr_it, ok_all, under, over = 0.0, 0, 0, True, 0, 0
        qn, vn, an, eq, evv = np.empty(self.model.nq), *(np.empty(n) for _ in range(4))
        phi = np.empty(self._m)
        free = np.ones(n, dtype=bool)
        smin = np.empty(1)
        while dt - tt > 1e-14 * dt:
            h = min(h, dt - tt)
            smin[0] = np.inf
            st, r = PK.dopri_step(
                p, q, v, a, tau, h, *args, qn, vn, an, eq, evv, PK._DP_A, PK._DP_B, PK._DP_E, self.tangent_error, smin
            )
            self._check(st)
            if self.model.multi_dof:  # errors in the tangent space: unit scale for q
                sq = self.atol + self.rtol
            else:
                sq = self.atol + self.rtol * np.maximum(np.abs(q), np.abs(qn))
            sv = self.atol + self.rtol * np.maximum(np.abs(v), np.abs(vn))
            err = float(np.sqrt(0.5 * (np.mean((eq / sq) ** 2) + np.mean((evv / sv) ** 2))))
            h_next = None
            if err > 1.0 and (smin[0] < self.sing_tol or r < r_start):
                h_cross = min(self.cross_step, dt - tt)
                if h < h_cross * (1.0 - 1e-12):
                    h = h_cross  # retry once at the crossing step
                    continue
                over += 1  # step over: accept as it is
                err = 0.0
                h_next = h
            if err <= 1.0 or h <= self.h_min:
                if err > 1.0:
                    under += 1
                tt += h
                last_sub = (q, v, a.copy(), h)
                q, v = qn.copy(), vn.copy()
                rmin = min(rmin, r)
                if self.substep_projection or dt - tt <= 1e-14 * dt:
                    if self.pos_proj and self._m:
                        it, res, rr, ok = PK.nr_project(
                            kp, q, free, self.nr_tol, self.nr_max_iter, self.eps, False, phi
                        )
                        nr_it += it
                        ok_all = ok_all and ok
                    if self._m and self._vp != PK.VP_NONE:
                        PK.vel_project(p, q, v, self._vp, self.eps)
                    st, r2 = PK.cfd_qdd(p, q, v, tau, *args, a)
                    self._check(st)
                    rmin = min(rmin, r2)
                else:
                    a = an.copy()
                sub += 1
                if h_next is not None:
                    h = h_next
                else:
                    fac = 5.0 if err == 0.0 else min(5.0, max(0.2, 0.9 * err**-0.2))
                    h = max(h * fac, self.h_min)
            else:
                h = max(h * max(0.2, 0.9 * err**-0.2), self.h_min)
        self._h = h
        return q, v, a_start, nr_it, ok_all, int(rmin), sub, under, over, last_sub


# --------------------------------------------------------------------------- simulate
@dataclass
class SimLog:
    """Per-step log of :func:`simulate` (N + 1 samples, row 0 = the reset state).

    t (N+1,), q, qd, qdd, tau (N+1, n) (tau[k] = input applied during the step ending at
    t[k]; tau[0] = 0), phi_norm, rank, rank_min, sigma_min, kinetic, potential, energy,
    F (N+1, n), lam (N+1, m), nr_iter, vel_violation, jump_q, jump_v, substeps; events: list of
    :class:`BranchEvent`.
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    tau: np.ndarray
    phi_norm: np.ndarray
    rank: np.ndarray
    rank_min: np.ndarray
    sigma_min: np.ndarray
    kinetic: np.ndarray
    potential: np.ndarray
    energy: np.ndarray
    F: np.ndarray
    lam: np.ndarray
    nr_iter: np.ndarray
    vel_violation: np.ndarray
    jump_q: np.ndarray
    jump_v: np.ndarray
    substeps: np.ndarray
    events: list = field(default_factory=list)

    @property
    def energy_drift(self):
        """max |E(t) - E(0)| [J]."""
        return float(np.max(np.abs(self.energy - self.energy[0])))

    @property
    def max_phi(self):
        """max ||phi|| over the log."""
        return float(np.max(self.phi_norm))

    def events_of(self, kind):
        """Events of one kind."""
        return [e for e in self.events if e.kind == kind]


_LOG_FIELDS = (
    't',
    'q',
    'qd',
    'qdd',
    'tau',
    'phi_norm',
    'rank',
    'rank_min',
    'sigma_min',
    'kinetic',
    'potential',
    'energy',
    'F',
    'lam',
    'nr_iter',
    'vel_violation',
    'jump_q',
    'jump_v',
    'substeps',
)


def simulate(plant, T, controller=None, *, dt=None, q0=None, qd0=None, **plant_kw):
    """Simulate for ``T`` seconds with a zero-order-hold controller.

    Parameters
    ----------
    plant : ConstrainedPlant or Model
        A Model is wrapped in ``ConstrainedPlant(model, q0, qd0, dt=dt or 1e-3, **plant_kw)``;
        a plant is reset to (q0, qd0) if either is given (else it continues from its state).
    T : float
        Duration [s]; ``N = round(T / dt)`` steps.
    controller : callable ``(t, q, qd) -> tau`` (n,) or (p,), optional
        Called at the start of every step; its output is held over the step (ZOH). None: 0.

    Returns
    -------
    SimLog
    """
    if not isinstance(plant, Plant):
        plant = ConstrainedPlant(plant, q0, qd0, dt=1e-3 if dt is None else dt, **plant_kw)
    else:
        if plant_kw:
            raise InputError(f'plant options {sorted(plant_kw)} need a Model, not a plant')
        if q0 is not None or qd0 is not None:
            plant.reset(q0, qd0)
    dt = plant.dt if dt is None else float(dt)
    N = int(round(T / dt))
    recs = [plant.last]
    for _ in range(N):
        tau = None if controller is None else controller(plant.t, plant.q.copy(), plant.qd.copy())
        recs.append(plant.step(tau, dt))
    cols = {}
    for k, name in enumerate(StepInfo._fields):
        if name == 'events':
            continue
        cols[name] = np.array([r[k] for r in recs])
    return SimLog(**{f: cols[f] for f in _LOG_FIELDS}, events=list(plant.events))
