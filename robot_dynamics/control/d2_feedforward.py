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

``TabulatedD2Feedforward(model, profile, dt)``: the same interface for ANY PKM of the general
route (:mod:`robot_dynamics.pkm.general`) along a :mod:`robot_dynamics.control.trajectories` profile:
a pose profile (:class:`~robot_dynamics.control.trajectories.PoseProfile`: world pose + body-fixed
twist to snap, e.g. the roll of the Gough-Stewart) for a 6-DOF platform, a task-coordinate
profile (world coordinates of the platform frame) for a lower-mobility one; precomputed once
(one batched call per chunk over one period / the whole rest-to-rest move on the grid ``dt``),
served exactly at grid times and by quintic Hermite interpolation from (u, u', u'') between
them. :func:`tabulated_d2_from_params` builds it from trajectory_node's flat parameters (this
is the node's path for every robot; :class:`D2Feedforward`, the compiled 6x6 route computed
per sample, stays for offline loops and benchmarks).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robot_dynamics.errors import InputError
from robot_dynamics.pkm.recursive import inverse_dynamics_d2_full, limb_to_tree, limbs_from_model

__all__ = [
    'D2Feedforward',
    'D2Reference',
    'TabulatedD2Feedforward',
    'hermite5',
    'tabulated_d2_defaults',
    'tabulated_d2_from_params',
    'pose_profile_from_params',
    'POSE_PROFILES',
    'TASK_PROFILES',
]


@dataclass
class D2Reference:
    """One sample of the feed-forward (see the module docstring)."""

    t: float
    u: np.ndarray  # (n_a,)
    ud: np.ndarray  # (n_a,)
    udd: np.ndarray  # (n_a,)
    theta_a: np.ndarray  # (5, n_a): actuated joint position, velocity, .. 4th derivative
    q: np.ndarray  # (nq,): tree coordinates of the model at t
    qd: np.ndarray  # (nq,): their rates


class _FeedforwardPD:
    """u of the reference plus a PD on the actuated joints (``kp``, ``kd``, ``idx_a``)."""

    def __call__(self, t, q, qd):
        """``(tau (n_a,), reference, e (n_a,), ed (n_a,))`` with e = theta_a - q_a."""
        ref = self.reference(t)
        q, qd = np.asarray(q, float), np.asarray(qd, float)
        e = ref.theta_a[0] - q[self.idx_a]
        ed = ref.theta_a[1] - qd[self.idx_a]
        return ref.u + self.kp * e + self.kd * ed, ref, e, ed


class D2Feedforward(_FeedforwardPD):
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
        self._guess = None  # previous sample's limb angles: warm start of the Newton IK

    def reference(self, t):
        """:class:`D2Reference` at time ``t`` [s]."""
        t = float(t)
        if not np.isfinite(t):
            raise InputError('D2Feedforward: t must be finite')
        X, V, Vd, Vdd, Vddd = self.motion(t)
        r = inverse_dynamics_d2_full(self.limbs, X, V, Vd, Vdd, Vddd, theta_guess=self._guess)
        self._guess = r.theta[0]
        nq = self.model.nq
        return D2Reference(
            t,
            r.u,
            r.ud,
            r.udd,
            r.theta_a,
            limb_to_tree(self.limbs, r.theta[0], nq),
            limb_to_tree(self.limbs, r.theta[1], nq),
        )


# ------------------------------------------------------------------ general PKM: tabulated motion
# quintic Hermite bases on s in [0, 1] (coefficients of s^0 .. s^5): value / h * slope /
# h^2 * curvature at s = 0 (H0, H1, H2) and at s = 1 (H3, H4, H5)
_H5 = np.array(
    [
        [1.0, 0.0, 0.0, -10.0, 15.0, -6.0],
        [0.0, 1.0, 0.0, -6.0, 8.0, -3.0],
        [0.0, 0.0, 0.5, -1.5, 1.5, -0.5],
        [0.0, 0.0, 0.0, 10.0, -15.0, 6.0],
        [0.0, 0.0, 0.0, -4.0, 7.0, -3.0],
        [0.0, 0.0, 0.0, 0.5, -1.0, 0.5],
    ]
)


def hermite5(y0, y1, h, s, order=2):
    """Quintic Hermite interpolation on one interval of length ``h`` [s].

    ``y0``, ``y1``: (3, ...) value, 1st and 2nd time derivative at the left / right end;
    ``s`` in [0, 1] the normalised time. Returns (order + 1, ...): the interpolant and its
    time derivatives 1..order (order <= 5) at ``s``. Exact for polynomials of degree <= 5;
    error O(h^6 f^(6)) in the value, O(h^(6-k)) in the k-th derivative."""
    y0, y1 = np.asarray(y0, float), np.asarray(y1, float)
    w = np.array([y0[0], h * y0[1], h * h * y0[2], y1[0], h * y1[1], h * h * y1[2]])
    out = []
    for k in range(order + 1):
        c = _H5.copy()
        for _ in range(k):  # d/ds of the coefficient rows
            c = np.hstack([c[:, 1:] * np.arange(1, c.shape[1]), np.zeros((6, 1))])
        b = c @ s ** np.arange(6)  # (6,) basis derivatives at s
        out.append(np.tensordot(b, w, axes=(0, 0)) / h**k)
    return np.stack(out)


def _profile_span(profile, period, duration):
    """('periodic' | 'rest', T [s]) of a trajectories.py profile (see TabulatedD2Feedforward)."""
    if period is not None and duration is not None:
        raise InputError('give either period or duration, not both')
    if period is None and duration is None:
        if getattr(profile, 'duration', None) is not None:
            duration = profile.duration
        else:
            f = np.unique(np.abs(np.atleast_1d(np.asarray(getattr(profile, 'frequency', np.nan), float))))
            if len(f) != 1 or not np.isfinite(f[0]) or f[0] <= 0:
                raise InputError(
                    'the profile has neither a duration nor one common frequency > 0: '
                    'pass period= (periodic motion) or duration= (rest-to-rest)'
                )
            period = 1.0 / f[0]
    kind, T = ('periodic', period) if period is not None else ('rest', duration)
    T = float(T)
    if not np.isfinite(T) or T <= 0:
        raise InputError(f'{"period" if kind == "periodic" else "duration"} must be finite and > 0, got {T}')
    return kind, T


class TabulatedD2Feedforward(_FeedforwardPD):
    """Feed-forward of the general 2nd-order route (:func:`robot_dynamics.pkm.general.
    inverse_dynamics_d2_general`) along a task-space profile, PRECOMPUTED once.

    ``model``: a closed-chain Model the general route covers. ``profile``: a
    :mod:`robot_dynamics.control.trajectories` profile. Lower-mobility platform (``delta < 6``):
    ``profile(t (S,), order=4) -> (5, S, delta)``, rows = derivative order 0..4, columns = the
    task coordinates ``general_pkm(model).task`` (world components of the platform frame, e.g.
    (x, y, z) [m] for a translational 3-DOF platform). 6-DOF platform (task ``'pose'``, e.g. the
    Gough-Stewart): a pose profile ``profile(t (S,), order=4) -> (X (S, 4, 4), V (4, S, 6))``,
    the world pose of the platform frame and its body-fixed twist (v, w) with derivatives 1..3
    (:class:`~robot_dynamics.control.trajectories.RollProfile`, :class:`~robot_dynamics.control.trajectories.
    PoseSegments`). ``dt`` [s]: grid step (the lock-step plant period). Span: ``period`` [s]
    (periodic motion, the table covers one period and ``t`` is taken modulo it), else
    ``duration`` [s] (rest-to-rest: the table covers [0, duration], before / after it the first
    / last sample at rest), else the profile's ``duration`` attribute (``PolynomialSegments``,
    ``PoseSegments``) or ``1 / frequency`` (``Circle``, ``Sin2PickPlace``, a ``Sinusoid`` with
    one frequency, ``RollProfile``). The grid is
    ``t_k = k h``, ``h = T / ceil(T / dt)`` (= dt when T is a multiple of dt, up to 1e-9).

    At start-up the general route runs once, batched (chunks of ``chunk`` samples, each chunk's
    position IK warm-started from the previous chunk's last sample), on the ``n + 1`` grid
    times; checks: a periodic profile must repeat after ``period`` (derivatives 0..4, 1e-9
    relative), a rest-to-rest one must be at rest at both ends, and consecutive grid samples
    must belong to one assembly branch (trapezoid/Hermite consistency of the limb joints,
    ``1e-4``): otherwise :class:`~robot_dynamics.errors.InputError` /
    :class:`~robot_dynamics.pkm.recursive.PKMSingularityError`.

    Tables (``n + 1`` rows): ``times`` (n + 1,) [s], ``x`` (n + 1, 5, delta) task derivatives
    0..4 (6-DOF platform: ``pose`` (n + 1, 4, 4) and ``x`` (n + 1, 4, 6) the body twist and its
    derivatives 1..3; the pose and twist must repeat / be at rest as above), ``u``, ``ud``,
    ``udd`` (n + 1, n_a) actuator forces [N | N m] and derivatives (order
    ``joints`` = ``general_pkm(model).actuated``, = ``model.actuated`` for a rigid model),
    ``theta`` (n + 1, 5, Ntot) stacked limb coordinates (virtual cut joints included) and
    derivatives 0..4. :meth:`reference` ``(t)`` serves a :class:`D2Reference` (the interface of
    :class:`D2Feedforward`): at grid times (within 1e-9 s) the table row exactly, between two
    rows a quintic Hermite interpolation of u from (u, u', u'') at both ends (u', u'' = the
    interpolant's derivatives) and of each limb coordinate order k = 0..2 from its orders
    k .. k + 2 (orders 3, 4 = derivatives of the order-2 interpolant). ``q``, ``qd`` (nq,) of
    the reference are the tree coordinates of all model joints (joints outside the limbs, e.g.
    SEA rotors: the sidecar's reference configuration, rate 0). :meth:`direct` ``(t)``: the same
    sample computed by the general route directly (for checks). ``ff(t, q, qd)``: ``tau = u +
    kp (theta_a - q_a) + kd (thetad_a - qd_a)`` as :class:`D2Feedforward`.
    """

    def __init__(
        self,
        model,
        profile,
        dt=1e-3,
        period=None,
        duration=None,
        kp=0.0,
        kd=0.0,
        platform=None,
        task=None,
        gravity=None,
        chunk=500,
    ):
        from robot_dynamics.pkm.general import general_pkm, inverse_dynamics_d2_general
        from robot_dynamics.pkm.recursive import PKMSingularityError

        if not callable(profile):
            raise InputError('TabulatedD2Feedforward: profile must be callable profile(t, order=4)')
        dt = float(dt)
        if not np.isfinite(dt) or dt <= 0:
            raise InputError(f'TabulatedD2Feedforward: dt must be finite and > 0, got {dt}')
        self.kp, self.kd = float(kp), float(kd)
        if not (self.kp >= 0 and self.kd >= 0):
            raise InputError('TabulatedD2Feedforward: kp and kd must be >= 0')
        self.model = model
        self.pkm = p = general_pkm(model, platform, task)
        self.gravity = gravity
        self.kind, self.T = _profile_span(profile, period, duration)
        n = max(int(np.ceil(self.T / dt - 1e-9)), 1)
        self.h = self.T / n
        self.times = np.arange(n + 1) * self.h
        self.times[-1] = self.T
        self.pose = None
        args = self._pose_table(profile, n) if p.task == 'pose' else self._task_table(profile, n)
        parts, guess = [], None
        chunk = max(int(chunk), 1)
        for a in range(0, n + 1, chunk):
            sl = slice(a, min(a + chunk, n + 1))
            r = inverse_dynamics_d2_general(p, *(v[sl] for v in args), gravity=gravity, theta_guess=guess)
            guess = r.theta[-1, 0]
            parts.append(r)
        cat = lambda f: np.concatenate([getattr(r, f) for r in parts])  # noqa: E731
        self.u, self.ud, self.udd, self.theta = cat('u'), cat('ud'), cat('udd'), cat('theta')
        # one assembly branch: Hermite consistency of consecutive rows (O(h^5) on one branch)
        th, hh = self.theta, self.h
        jump = np.abs(
            th[1:, 0] - th[:-1, 0] - hh / 2 * (th[1:, 1] + th[:-1, 1]) + hh * hh / 12 * (th[1:, 2] - th[:-1, 2])
        ).max(axis=1)
        if jump.max() > 1e-4:
            k = int(jump.argmax())
            raise PKMSingularityError(
                f"model '{model.name}': the limb coordinates jump between grid samples {k} and {k + 1} "
                f'(t = {self.times[k]:.6g} s, {jump.max():.3g}): another assembly branch or a grid '
                'too coarse for the motion',
                np.nonzero(jump > 1e-4)[0],
                None,
            )
        self.joints = list(p.actuated)
        self.idx_a = np.array([model.joint_index(j) for j in self.joints], np.int64)
        self._q_fill = model.reference_q()
        self._profile = profile
        self._general = inverse_dynamics_d2_general

    def _task_table(self, profile, n):
        """Lower-mobility platform: the task-coordinate profile on the grid -> (x, xd .. xdddd)."""
        X = np.asarray(profile(self.times, order=4), float)
        p = self.pkm
        if X.ndim != 3 or X.shape[:2] != (5, n + 1) or X.shape[2] != p.delta:
            raise InputError(
                f"model '{self.model.name}': the profile gives "
                f'{X.shape[2:] if X.ndim == 3 else X.shape} columns, the task {p.task} '
                f'has {p.delta}'
            )
        if not np.all(np.isfinite(X)):
            raise InputError('TabulatedD2Feedforward: the profile has non-finite values')
        scale = np.maximum(np.abs(X).max(axis=(1, 2)), 1e-300)  # (5,) per order
        if self.kind == 'periodic':
            gap = np.abs(X[:, -1] - X[:, 0]).max(axis=1) / scale
            if gap.max() > 1e-9:
                raise InputError(
                    f'the profile does not repeat after period {self.T} s (derivative '
                    f'order {int(gap.argmax())} differs by {gap.max():.3g} relative)'
                )
        else:
            moving = np.abs(X[1:, [0, -1]]).max() / max(scale[0], 1.0)
            if moving > 1e-9:
                raise InputError(
                    f'rest-to-rest profile: not at rest at t = 0 and t = {self.T} s '
                    f'(derivatives 1..4 up to {moving:.3g}); pass period= for a periodic motion'
                )
        self.x = np.moveaxis(X, 0, 1)  # (n + 1, 5, delta)
        return list(X)

    def _pose_table(self, profile, n):
        """6-DOF platform: the pose profile on the grid -> (X, V, V', V'', V''')."""
        out = profile(self.times, order=4)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise InputError(
                f"model '{self.model.name}': 6-DOF platform (task = pose): the profile "
                'must be a pose profile (robot_dynamics.control.trajectories.PoseProfile: '
                'profile(t, order) -> (X (S, 4, 4), V (order, S, 6)))'
            )
        X, V = (np.asarray(v, float) for v in out)
        if X.shape != (n + 1, 4, 4) or V.shape != (4, n + 1, 6):
            raise InputError(
                f"model '{self.model.name}': 6-DOF platform (task = pose): the profile "
                f'must give poses (S, 4, 4) and body-twist derivatives (4, S, 6), got '
                f'{X.shape} and {V.shape}'
            )
        if not (np.all(np.isfinite(X)) and np.all(np.isfinite(V))):
            raise InputError('TabulatedD2Feedforward: the profile has non-finite values')
        scale = np.maximum(np.abs(V).max(axis=(1, 2)), 1e-300)  # (4,) per order
        if self.kind == 'periodic':
            gap = np.concatenate([[np.abs(X[-1] - X[0]).max()], np.abs(V[:, -1] - V[:, 0]).max(axis=1) / scale])
            if gap.max() > 1e-9:
                raise InputError(
                    f'the pose profile does not repeat after period {self.T} s '
                    f'(derivative order {int(gap.argmax())} differs by {gap.max():.3g})'
                )
        else:
            moving = np.abs(V[:, [0, -1]]).max()
            if moving > 1e-9:
                raise InputError(
                    f'rest-to-rest pose profile: not at rest at t = 0 and t = {self.T} s '
                    f'(twist derivatives up to {moving:.3g}); pass period= for a periodic motion'
                )
        self.pose = X  # (n + 1, 4, 4)
        self.x = np.moveaxis(V, 0, 1)  # (n + 1, 4, 6)
        return [X, *V]

    def _direct(self, t):
        out = self._profile(np.atleast_1d(t), order=4)
        args = [out[0], *out[1]] if self.pkm.task == 'pose' else list(np.asarray(out, float))
        return self._general(self.pkm, *args, gravity=self.gravity, theta_guess=self.theta[self._row(t)[0], 0])

    @property
    def n(self):
        """Number of grid intervals."""
        return len(self.times) - 1

    def _local(self, t):
        t = float(t)
        if not np.isfinite(t):
            raise InputError('TabulatedD2Feedforward: t must be finite')
        if self.kind == 'periodic':
            tl = t % self.T
        else:
            tl = min(max(t, 0.0), self.T)
        return t, tl

    def _row(self, t):
        """(k, s): interval index and normalised position (s = 0: exactly row k)."""
        _, tl = self._local(t)
        k = int(round(tl / self.h))
        if abs(tl - self.times[min(k, self.n)]) <= 1e-9:
            return min(k, self.n), 0.0
        k = min(int(tl // self.h), self.n - 1)
        return k, min(max((tl - self.times[k]) / self.h, 0.0), 1.0)

    def _ref(self, t, u, ud, udd, theta):
        p = self.pkm
        ai = p.act_index
        return D2Reference(
            t,
            u,
            ud,
            udd,
            theta[:, ai],
            p.tree_q(theta[0], self._q_fill),
            p.tree_q(theta[1], np.zeros_like(self._q_fill)),
        )

    def reference(self, t):
        """:class:`D2Reference` at time ``t`` [s] from the table (class docstring)."""
        t, _ = self._local(t)
        k, s = self._row(t)
        if s == 0.0:
            return self._ref(t, self.u[k].copy(), self.ud[k].copy(), self.udd[k].copy(), self.theta[k].copy())
        U = hermite5(
            np.stack([self.u[k], self.ud[k], self.udd[k]]),
            np.stack([self.u[k + 1], self.ud[k + 1], self.udd[k + 1]]),
            self.h,
            s,
        )
        th0, th1 = self.theta[k], self.theta[k + 1]
        TH = np.empty_like(th0)
        for o in range(2):
            TH[o] = hermite5(th0[o : o + 3], th1[o : o + 3], self.h, s, order=0)[0]
        TH[2:] = hermite5(th0[2:5], th1[2:5], self.h, s, order=2)
        return self._ref(t, U[0], U[1], U[2], TH)

    def direct(self, t):
        """:class:`D2Reference` at ``t`` computed by the general route (no table)."""
        t, tl = self._local(t)
        r = self._direct(tl)
        return self._ref(t, r.u[0], r.ud[0], r.udd[0], r.theta[0])


#: profiles of a 6-DOF platform (task = pose) in :func:`tabulated_d2_from_params`
POSE_PROFILES = ('roll', 'pose_move')
#: profiles of a lower-mobility platform (task coordinates)
TASK_PROFILES = ('circle', 'waypoints', 'sin2_pick_place')


def tabulated_d2_defaults(model):
    """Defaults of trajectory_node's ``mode: pkm_d2`` parameters for a general-route profile
    (flat, ROS-parameter types), ``table_step`` 0.001 s (grid of the table = the lock-step plant
    period) for every platform, and:

    * lower-mobility platform (task coordinates, :data:`TASK_PROFILES`): ``center`` (delta,) =
      the task at the sidecar's reference configuration [m | rad], ``radius`` 0.01 m,
      ``frequency`` 0.5 Hz, ``e1``/``e2`` the task axes 1, 2 (circle plane; sin2_pick_place:
      displacements), ``phase`` 0 rad, ``waypoints`` (flat K * delta, default the reference task
      twice = no motion), ``durations`` [s];
    * 6-DOF platform (task = pose, :data:`POSE_PROFILES`): the roll (:class:`~robot_dynamics.
      trajectories.RollProfile`) ``roll_min`` -0.5 rad, ``roll_max`` 0.5 rad, ``roll_period`` 1 s,
      ``roll_center`` (3,) = the platform position at the reference configuration [m],
      ``roll_axis`` (1, 0, 0) (platform frame); the pose move (:class:`~robot_dynamics.
      trajectories.PoseSegments`) ``pose_start`` (6,) = position [m] and rotation vector [rad]
      of the platform at the reference configuration, ``pose_waypoints`` (flat 6 K: via poses
      and the goal, default the start = no motion), ``durations`` (K,) [1.0] s, ``pose_path``
      'line'."""
    from robot_dynamics.spatial.lie import log_so3
    from robot_dynamics.pkm.general import general_pkm

    x0 = np.asarray(general_pkm(model).x_ref, float)
    if x0.shape == (4, 4):
        start = np.concatenate([x0[:3, 3], log_so3(x0[:3, :3])])
        start[np.abs(start) < 1e-12] = 0.0  # round-off of the reference FK
        return dict(
            roll_min=-0.5,
            roll_max=0.5,
            roll_period=1.0,
            roll_center=start[:3].tolist(),
            roll_axis=[1.0, 0.0, 0.0],
            pose_start=start.tolist(),
            pose_waypoints=start.tolist(),
            durations=[1.0],
            pose_path='line',
            table_step=0.001,
        )
    return dict(
        center=x0.tolist(),
        radius=0.01,
        frequency=0.5,
        e1=[1.0, 0.0, 0.0],
        e2=[0.0, 1.0, 0.0],
        phase=0.0,
        waypoints=np.tile(x0, 2).tolist(),
        durations=[1.0],
        table_step=0.001,
    )


def pose_profile_from_params(model, kind, params):
    """The :class:`~robot_dynamics.control.trajectories.PoseProfile` of trajectory_node's flat parameters
    for a 6-DOF platform: ``kind`` 'roll' (:class:`~robot_dynamics.control.trajectories.RollProfile`
    about ``roll_axis`` (platform frame) through the platform origin at ``roll_center``, the
    orientation at theta = 0 that of the reference configuration) or 'pose_move'
    (:func:`~robot_dynamics.control.trajectories.pose_move_profile`); ``params`` as
    :func:`tabulated_d2_defaults` (missing keys take those)."""
    from robot_dynamics.pkm.general import general_pkm
    from robot_dynamics.control.trajectories import RollProfile, pose_move_profile

    p = {**tabulated_d2_defaults(model), **params}
    if kind == 'roll':
        R0 = np.asarray(general_pkm(model).x_ref, float)[:3, :3]
        return RollProfile(
            float(p['roll_min']),
            float(p['roll_max']),
            float(p['roll_period']),
            p0=np.asarray(p['roll_center'], float),
            axis=np.asarray(p['roll_axis'], float),
            R0=R0,
        )
    if kind == 'pose_move':
        return pose_move_profile(p['pose_start'], p['pose_waypoints'], p['durations'], path=str(p['pose_path']))
    raise InputError(f'6-DOF platform: profile {POSE_PROFILES}, got {kind!r}')


def tabulated_d2_from_params(model, kind, params):
    """:class:`TabulatedD2Feedforward` from trajectory_node's flat parameters. Lower-mobility
    platform: ``kind`` circle | waypoints | sin2_pick_place of :func:`robot_dynamics.
    trajectories.make_profile`, in the task coordinates; 6-DOF platform: ``kind`` roll |
    pose_move (:func:`pose_profile_from_params`). ``params`` as :func:`tabulated_d2_defaults`
    (missing keys take those)."""
    from robot_dynamics.pkm.general import general_pkm
    from robot_dynamics.control.trajectories import make_profile

    defaults = tabulated_d2_defaults(model)
    p = {**defaults, **params}
    if general_pkm(model).task == 'pose':
        if kind not in POSE_PROFILES:
            raise InputError(
                f"general-route feed-forward of a 6-DOF platform: profile 'roll' or 'pose_move', got {kind!r}"
            )
        prof = pose_profile_from_params(model, kind, p)
        return TabulatedD2Feedforward(model, prof, dt=float(p['table_step']))
    if kind not in TASK_PROFILES:
        raise InputError(
            f"general-route feed-forward: profile 'circle', 'waypoints' or 'sin2_pick_place', got {kind!r}"
        )
    prof = make_profile(
        kind,
        n=len(defaults['center']),  # n = delta
        **{k: v for k, v in p.items() if k != 'table_step'},
    )
    return TabulatedD2Feedforward(model, prof, dt=float(p['table_step']))
