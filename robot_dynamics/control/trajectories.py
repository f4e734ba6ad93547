"""Analytic reference trajectories with exact time derivatives (up to snap and beyond).

Every profile is a callable object ``traj(t, order=2)`` returning an array of shape
``(order + 1, N, n)`` (or ``(order + 1, n)`` for scalar ``t``): position, velocity,
acceleration, jerk, snap, ... evaluated analytically, never by numerical differentiation
(controllers such as VDC and flatness-based SEA control need jerk and snap).

* :class:`Sinusoid`: ``x(t) = offset + amplitude * sin(2 pi f t + phase)`` per coordinate.
* :class:`PolynomialSegments`: rest-to-rest segments through waypoints with durations; each
  segment is the degree-9 polynomial with zero velocity, acceleration, jerk and snap at both
  ends, so derivatives up to snap are continuous across waypoints.

SE(3) pose profiles (:class:`PoseProfile`, 6-DOF platforms / end effectors): ``prof(t, order=4)
-> (X (..., 4, 4), V (order, ..., 6))``, the world pose and the BODY-FIXED twist ``(v, w)`` with
its derivatives 1..order-1 (the pose's derivatives 1..order, to snap), exact; ``prof.motion(t)``
gives the arguments ``(x, xd, xdd, xddd, xdddd)`` of the 2nd-order PKM inverse dynamics.

* :class:`RollProfile`: the papers' roll generalised, a cosine-profile rotation about a fixed
  body axis through a body point (single screw: ``V^(k) = theta^(k+1) xi``).
* :class:`PoseSegments` (:func:`pose_move_profile` from flat parameters): rest-to-rest moves
  through via poses, degree-9 time scaling on the straight line + fixed-axis rotation (or the
  screw) between consecutive poses.
"""

from __future__ import annotations

from math import factorial

import numpy as np

from robot_dynamics.errors import InputError

__all__ = [
    'SinSquaredJerk',
    'Sinusoid',
    'PolynomialSegments',
    'Circle',
    'Sin2PickPlace',
    'Sin2PoseMove',
    'DecayingOffset',
    'PoseProfile',
    'RollProfile',
    'PoseSegments',
    'pose_matrix',
    'pose_move_profile',
    'GoalMoves',
    'make_profile',
    'rest_to_rest_profile',
]


def _t_array(t):
    t = np.asarray(t, dtype=np.float64)
    if not np.all(np.isfinite(t)):
        raise InputError('trajectory time must be finite')
    return t


def _finite(*arrays):
    """True if every element of every array (or number) is finite."""
    return all(np.all(np.isfinite(x)) for x in arrays)


class Sinusoid:
    """Per-coordinate sinusoid ``offset + amplitude sin(2 pi frequency t + phase)``.

    amplitude, frequency [Hz], phase [rad], offset: broadcastable to (n,).
    """

    def __init__(self, amplitude, frequency, phase=0.0, offset=0.0):
        a, f, p, o = np.broadcast_arrays(
            *(np.atleast_1d(np.asarray(x, float)) for x in (amplitude, frequency, phase, offset))
        )
        if not _finite(a, f, p, o):
            raise InputError('Sinusoid parameters must be finite')
        self.amplitude, self.frequency, self.phase, self.offset = a.copy(), f.copy(), p.copy(), o.copy()
        self.n = a.shape[0]

    def __call__(self, t, order=2):
        H = _harmonics(t, self.frequency, self.phase, order)
        return np.stack([self.amplitude * wk * np.sin(a) + (self.offset if k == 0 else 0.0) for k, (wk, a) in H])


def _harmonics(t, frequency, phase, order):
    """``[(k, (w^k, w t + phase + k pi/2)) for k = 0..order]``, ``w = 2 pi frequency``, the angles
    with a trailing axis: d^k/dt^k sin(w t + phase) = w^k sin(w t + phase + k pi/2) (and cos)."""
    w = 2 * np.pi * frequency
    arg = w * _t_array(t)[..., None] + phase
    return [(k, (w**k, arg + k * np.pi / 2)) for k in range(order + 1)]


def rest_to_rest_profile(s, order):
    """Normalised degree-9 rest-to-rest profile sigma(s), s in [0, 1], and its derivatives.

    sigma(0) = 0, sigma(1) = 1, derivatives 1..4 vanish at both ends. Returns (order+1, ...).
    """
    # sigma(s) = 126 s^5 - 420 s^6 + 540 s^7 - 315 s^8 + 70 s^9
    c = {5: 126.0, 6: -420.0, 7: 540.0, 8: -315.0, 9: 70.0}
    s = np.asarray(s, dtype=np.float64)
    out = []
    for k in range(order + 1):
        v = np.zeros_like(s)
        for p, a in c.items():
            if p >= k:
                v = v + a * factorial(p) / factorial(p - k) * s ** (p - k)
        out.append(v)
    return np.stack(out)


class _Segments:
    """Timing of consecutive segments: ``times`` (K,) [s] from ``t0``, ``durations`` (K - 1,)."""

    @property
    def duration(self):
        """Total duration [s]."""
        return float(self.times[-1] - self.t0)

    def _locate(self, t):
        """(tt (N,), scalar, seg (N,) the segment of each time, T (N,) its duration, s (N,) the
        normalised time in it, clipped to [0, 1]) for ``t`` scalar or (N,)."""
        t = _t_array(t)
        tt = np.atleast_1d(t)
        seg = np.clip(np.searchsorted(self.times, tt, side='right') - 1, 0, len(self.durations) - 1)
        T = self.durations[seg]
        return tt, t.ndim == 0, seg, T, np.clip((tt - self.times[seg]) / T, 0.0, 1.0)


class PolynomialSegments(_Segments):
    """Rest-to-rest moves through ``waypoints`` (K, n) with ``durations`` (K-1,) [s].

    Before the start and after the end the reference holds the first/last waypoint.
    Derivatives up to snap are continuous (they vanish at every waypoint).
    """

    def __init__(self, waypoints, durations, t0=0.0):
        W = np.atleast_2d(np.asarray(waypoints, dtype=np.float64))
        d = np.atleast_1d(np.asarray(durations, dtype=np.float64))
        if W.ndim != 2 or W.shape[0] < 2 or d.shape != (W.shape[0] - 1,):
            raise InputError(f'need K >= 2 waypoints (K, n) and K-1 durations, got {W.shape} and {d.shape}')
        if not _finite(W, d) or np.any(d <= 0):
            raise InputError('waypoints must be finite and durations finite and > 0')
        self.waypoints, self.durations, self.t0 = W, d, float(t0)
        self.times = self.t0 + np.concatenate([[0.0], np.cumsum(d)])
        self.n = W.shape[1]

    def __call__(self, t, order=2):
        tt, scalar, seg, T, s = self._locate(t)
        prof = rest_to_rest_profile(s, order)  # (order+1, N)
        before, after = tt < self.times[0], tt > self.times[-1]
        delta = self.waypoints[seg + 1] - self.waypoints[seg]  # (N, n)
        out = np.empty((order + 1, len(tt), self.n))
        for k in range(order + 1):
            val = prof[k][:, None] * delta / T[:, None] ** k
            if k == 0:
                val = val + self.waypoints[seg]
            else:
                val[before | after] = 0.0
            out[k] = val
        out[0][before] = self.waypoints[0]
        out[0][after] = self.waypoints[-1]
        return out[:, 0] if scalar else out


class DecayingOffset:
    """An offset that starts at ``p0`` with rate ``v0`` at ``t0`` and dies out in ``duration`` s.

    d(t) = p0 h0(s) + v0 T h1(s), s = (t - t0) / T clipped to [0, 1], with the quintic Hermite
    bases h0 = 1 - 10 s^3 + 15 s^4 - 6 s^5 and h1 = s - 6 s^3 + 8 s^4 - 3 s^5: d(t0) = p0,
    d'(t0) = v0, d''(t0) = 0, and d, d', d'' vanish from t0 + T on. Added to a reference, it
    re-joins a coordinate that was elsewhere (e.g. a DoF held by a lock) to its trajectory without
    a step in position or velocity. Shape conventions as the other profiles (order <= 2).
    """

    _H0 = np.array([1.0, 0.0, 0.0, -10.0, 15.0, -6.0])
    _H1 = np.array([0.0, 1.0, 0.0, -6.0, 8.0, -3.0])

    def __init__(self, p0, v0, duration, t0=0.0):
        self.p0 = np.atleast_1d(np.asarray(p0, dtype=np.float64))
        self.v0 = np.atleast_1d(np.asarray(v0, dtype=np.float64))
        self.T, self.t0 = float(duration), float(t0)
        if self.p0.shape != self.v0.shape or self.p0.ndim != 1:
            raise InputError(f'p0 and v0 must have the same shape (n,), got {self.p0.shape}, {self.v0.shape}')
        if not (np.all(np.isfinite(self.p0)) and np.all(np.isfinite(self.v0)) and np.isfinite(self.T) and self.T > 0):
            raise InputError('p0, v0 must be finite and duration finite and > 0')
        self.t_end = self.t0 + self.T

    def __call__(self, t, order=2):
        if order > 2:
            raise InputError('DecayingOffset gives derivatives up to order 2')
        t = _t_array(t)
        scalar = t.ndim == 0
        s = np.clip((np.atleast_1d(t) - self.t0) / self.T, 0.0, 1.0)
        out = np.empty((order + 1, len(s), len(self.p0)))
        for k in range(order + 1):
            h0 = np.polyval(np.polyder(self._H0[::-1], k), s)
            h1 = np.polyval(np.polyder(self._H1[::-1], k), s)
            out[k] = (h0[:, None] * self.p0 + h1[:, None] * self.v0 * self.T) / self.T**k
        return out[:, 0] if scalar else out


class Circle:
    """Point moving on a circle: ``center + radius (cos(w t + phase) e1 + sin(w t + phase) e2)``.

    center (3,) [m], radius [m], frequency [Hz], axes e1, e2 (3,) spanning the plane
    (orthonormalised). Output (order + 1, N, 3), like every profile here.
    """

    def __init__(self, center, radius, frequency, e1=(1.0, 0.0, 0.0), e2=(0.0, 0.0, 1.0), phase=0.0):
        c = np.asarray(center, float)
        a, b = np.asarray(e1, float), np.asarray(e2, float)
        if c.shape != (3,) or a.shape != (3,) or b.shape != (3,):
            raise InputError('Circle: center, e1, e2 must be 3-vectors')
        vals = [radius, frequency, phase]
        if not _finite(c, a, b, vals) or radius < 0:
            raise InputError('Circle: parameters must be finite and radius >= 0')
        a = a / np.linalg.norm(a)
        b = b - (b @ a) * a
        nb = np.linalg.norm(b)
        if nb < 1e-9:
            raise InputError('Circle: e1 and e2 must not be parallel')
        self.center, self.radius, self.frequency, self.phase = c, float(radius), float(frequency), float(phase)
        self.e1, self.e2 = a, b / nb
        self.n = 3

    def __call__(self, t, order=2):
        out = []
        for k, (wk, a) in _harmonics(t, self.frequency, self.phase, order):
            v = self.radius * wk * (np.cos(a) * self.e1 + np.sin(a) * self.e2)
            out.append(v + (self.center if k == 0 else 0.0))
        return np.stack(out)


def make_profile(kind, **p):
    """Build a profile from flat (ROS-parameter-like) settings.

    kind 'sinusoid': amplitude, frequency, phase, offset (scalars or lists);
    'waypoints': waypoints (flat list, K * n values), durations (K - 1), n;
    'circle': center, radius, frequency, e1, e2, phase;
    'sin2_pick_place' (:class:`Sin2PickPlace`): r0, a, b, frequency, phase, or from
    trajectory_node's task-mode parameters r0 = ``center``, a = ``e1``, b = ``e2`` (NOT
    normalised: displacement vectors in metres), ``frequency`` = nu / T (``radius`` ignored);
    'sin2_pose' (:class:`Sin2PoseMove`): the same position plus a rotation ``rot_angle`` s(t)
    [rad] about the world axis ``rot_axis`` (6 columns: position, rotation vector).
    """
    if kind == 'sinusoid':
        return Sinusoid(p['amplitude'], p['frequency'], p.get('phase', 0.0), p.get('offset', 0.0))
    if kind == 'waypoints':
        n = int(p['n'])
        w = np.asarray(p['waypoints'], float)
        if n <= 0 or w.size % n:
            raise InputError(f'waypoints: {w.size} values is not a multiple of {n} joints')
        return PolynomialSegments(w.reshape(-1, n), p['durations'])
    if kind == 'circle':
        return Circle(
            p['center'],
            p['radius'],
            p['frequency'],
            p.get('e1', (1.0, 0.0, 0.0)),
            p.get('e2', (0.0, 0.0, 1.0)),
            p.get('phase', 0.0),
        )
    if kind in ('sin2_pick_place', 'sin2_pose'):
        move = (p.get('r0', p.get('center')), p.get('a', p.get('e1')), p.get('b', p.get('e2')), p['frequency'])
        if kind == 'sin2_pick_place':
            return Sin2PickPlace(*move, p.get('phase', 0.0))
        return Sin2PoseMove(*move, p.get('rot_axis', (0.0, 0.0, 1.0)), p.get('rot_angle', 0.0), p.get('phase', 0.0))
    raise InputError(f"unknown profile '{kind}' (sinusoid, waypoints, circle, sin2_pick_place, sin2_pose)")


class Sin2PickPlace:
    """Pick-and-place of the IRSBot-2 paper (T1/T2, seed 003): ``r(t) = r0 + s a + s (1 - s) b``,
    ``s = sin^2(omega t + phase)``, ``omega = pi * frequency``.

    r0 (3,) start point [m]; a (3,) displacement at s = 1 [m] (paper: (dx, 0, 0)); b (3,) lift
    amplitude of the s(1-s) term [m] (paper: (0, 0, dz * factor); peak lift b/4 at s = 1/2);
    frequency = nu / T [Hz]: back-and-forth cycles per second (s has period 1/frequency).
    Exact derivatives of every order from ``s = (1 - cos 2wt)/2`` and
    ``s (1 - s) = sin^2(2wt)/4 = (1 - cos 4wt)/8``:
    ``d^k s = -(2w)^k cos(2wt + k pi/2) / 2``, ``d^k [s(1-s)] = -(4w)^k cos(4wt + k pi/2) / 8``.
    """

    def __init__(self, r0, a, b, frequency, phase=0.0):
        r0, a, b = (np.asarray(v, float) for v in (r0, a, b))
        if r0.shape != (3,) or a.shape != (3,) or b.shape != (3,):
            raise InputError('Sin2PickPlace: r0, a, b must be 3-vectors')
        if not _finite(r0, a, b, frequency, phase) or frequency <= 0:
            raise InputError('Sin2PickPlace: parameters must be finite and frequency > 0')
        self.r0, self.a, self.b = r0, a, b
        self.frequency, self.phase = float(frequency), float(phase)
        self.n = 3

    def __call__(self, t, order=2):
        t = _t_array(t)
        w = np.pi * self.frequency
        arg = w * t[..., None] + self.phase
        out = []
        for k in range(order + 1):
            s = -0.5 * (2 * w) ** k * np.cos(2 * arg + k * np.pi / 2)
            h = -0.125 * (4 * w) ** k * np.cos(4 * arg + k * np.pi / 2)
            if k == 0:
                s, h = s + 0.5, h + 0.125
            out.append(s * self.a + h * self.b + (self.r0 if k == 0 else 0.0))
        return np.stack(out)


class Sin2PoseMove(Sin2PickPlace):
    """Pick-and-place of a platform pose: the position of :class:`Sin2PickPlace`
    (``r0 + s a + s (1 - s) b``) and a rotation by ``theta(t) = rot_angle * s`` about the fixed
    world axis ``rot_axis`` (e.g. the planar platform angle phi about z), same
    ``s = sin^2(omega t + phase)``, ``omega = pi * frequency``.

    Output (order + 1, N, 6) (or (order + 1, 6) for scalar t): columns 0-2 the position [m] and
    its derivatives (velocity [m/s], acceleration [m/s^2], ...), columns 3-5 the rotation vector
    ``r = theta u`` [rad] (world axes, relative to the start orientation) and its derivatives.
    Because the axis u is fixed, ``dr/dt = w`` (the world angular velocity [rad/s]) and
    ``d^2r/dt^2 = dw/dt`` exactly: rows 1 and 2 are the twist (v, w) and its derivative, linear
    part first. ``|rot_angle|`` < pi (the rotation vector is then the principal logarithm).
    Starts at rest at ``(r0, 0)`` (s(0) = s'(0) = 0).
    """

    def __init__(self, r0, a, b, frequency, rot_axis=(0.0, 0.0, 1.0), rot_angle=0.0, phase=0.0):
        super().__init__(r0, a, b, frequency, phase)
        u = np.asarray(rot_axis, float)
        if u.shape != (3,) or not np.all(np.isfinite(u)) or np.linalg.norm(u) < 1e-12:
            raise InputError(f'Sin2PoseMove: rot_axis must be a finite non-zero 3-vector, got {rot_axis!r}')
        if not np.isfinite(rot_angle) or abs(rot_angle) >= np.pi:
            raise InputError(f'Sin2PoseMove: rot_angle must be finite with |rot_angle| < pi [rad], got {rot_angle!r}')
        self.rot_axis, self.rot_angle = u / np.linalg.norm(u), float(rot_angle)
        self.n = 6

    def __call__(self, t, order=2):
        pos = super().__call__(t, order)  # (order + 1, ..., 3)
        w = np.pi * self.frequency
        arg = w * _t_array(t)[..., None] + self.phase
        rot = []
        for k in range(order + 1):
            s = -0.5 * (2 * w) ** k * np.cos(2 * arg + k * np.pi / 2) + (0.5 if k == 0 else 0.0)
            rot.append(self.rot_angle * s * self.rot_axis)
        return np.concatenate([pos, np.stack(rot)], axis=-1)


class SinSquaredJerk:
    """Rest-to-rest point-to-point motion with a sin^2 jerk profile (brief par. 4.2):
    ``s'''(t) = c sin^2(4 pi t/T) sigma(t)``, ``c = 64 h/T^3``, sigma = +1, -1, +1 on
    [0, T/4), [T/4, 3T/4), [3T/4, T]; position, velocity, acceleration, jerk and snap are
    continuous and vanish at both ends (snap is continuous, the 5th derivative jumps).
    ``SinSquaredJerk(p_start, p_goal, T, t0=0)(t)`` -> (5, ..., n): p .. p'''' (held constant
    outside [t0, t0 + T])."""

    def __init__(self, start, goal, T, t0=0.0):
        self.start = np.atleast_1d(np.asarray(start, float))
        self.goal = np.atleast_1d(np.asarray(goal, float))
        if not T > 0:
            raise InputError('SinSquaredJerk: T must be > 0')
        self.T, self.t0 = float(T), float(t0)
        # segment start states of the unit profile
        self._seg = [(0.0, 1.0, (0.0, 0.0, 0.0))]
        for ta, sg in ((0.25, -1.0), (0.75, 1.0)):
            t_prev, sg_prev, st = self._seg[-1]
            self._seg.append((ta, sg, tuple(self._unit(ta, t_prev, sg_prev, st)[:3])))

    def _unit(self, t, ta, sg, st):
        """Unit stroke, unit duration: derivatives 0..4 at t on the segment starting at ta."""
        c = 64.0
        w = 8 * np.pi
        tau = t - ta
        s0, s1, s2 = st
        k = sg * c / 2
        sn, cs = np.sin(w * tau), np.cos(w * tau)
        return np.array(
            [
                s0 + s1 * tau + s2 * tau**2 / 2 + k * (tau**3 / 6 + (sn / w - tau) / w**2),
                s1 + s2 * tau + k * (tau**2 / 2 + (cs - 1) / w**2),
                s2 + k * (tau - sn / w),
                k * (1 - cs),
                k * w * sn,
            ]
        )

    def __call__(self, t):
        t = np.asarray(t, float)
        x = np.clip((t - self.t0) / self.T, 0.0, 1.0)
        out = np.empty((5,) + x.shape)
        for idx in np.ndindex(x.shape):
            xi = float(x[idx])
            seg = [s for s in self._seg if s[0] <= xi][-1]
            v = self._unit(xi, *seg)
            if (t[idx] - self.t0) < 0 or (t[idx] - self.t0) > self.T:
                v[1:] = 0.0
            out[(slice(None),) + idx] = v
        scale = self.T ** -np.arange(5)
        d = self.goal - self.start
        res = out[..., None] * d * scale.reshape((5,) + (1,) * x.ndim + (1,))
        res[0] += self.start
        return res


class GoalMoves:
    """Point-to-point moves between goals received at run time (seed 004's SEA goal profile).

    ``GoalMoves(start, max_speed, min_duration, reachable=None)``; ``traj(t, order=4)`` ->
    (order + 1, n) (order <= 4): the current move, a rest-to-rest sin^2-jerk profile
    (:class:`SinSquaredJerk`: derivatives up to snap continuous,
    zero at both ends), held at rest outside it; before the first goal, rest at ``start``.
    :meth:`goal` ``(t, goal)`` starts a move at time t from the current reference position to
    ``goal`` (n,), of duration ``max(min_duration, 2 |goal - start| / max_speed)`` (peak speed
    ``max_speed``); a goal during a move starts the new move from where the reference is (at
    rest: the move in progress is dropped). ``reachable(points (21, n)) -> None`` (raises when
    a point of the path is outside the workspace): the goal is then rejected (InputError) and
    the current motion kept. Times in s, positions in m.
    """

    def __init__(self, start, max_speed=0.4, min_duration=0.3, reachable=None):
        self._S = SinSquaredJerk
        start = np.atleast_1d(np.asarray(start, float))
        if not np.all(np.isfinite(start)) or not (max_speed > 0 and min_duration > 0):
            raise InputError('GoalMoves: finite start, max_speed > 0 and min_duration > 0 needed')
        self.n = len(start)
        self.vmax, self.tmin = float(max_speed), float(min_duration)
        self.reachable = reachable
        self.move = SinSquaredJerk(start, start, 1.0, t0=0.0)
        self.goals = 0

    def __call__(self, t, order=2):
        if order > 4:
            raise InputError('GoalMoves: derivatives up to snap (order <= 4)')
        return self.move(_t_array(t))[: order + 1]

    def goal(self, t, goal):
        """Start a move to ``goal`` at time ``t``; returns its duration [s]."""
        goal = np.atleast_1d(np.asarray(goal, float))
        if goal.shape != (self.n,) or not np.all(np.isfinite(goal)):
            raise InputError(f'goal must be {self.n} finite values, got {goal.tolist()}')
        start = self.move(float(t))[0]
        T = max(self.tmin, 2.0 * float(np.linalg.norm(goal - start)) / self.vmax)
        move = self._S(start, goal, T, t0=float(t))
        if self.reachable is not None:
            try:
                self.reachable(move(t + np.linspace(0.0, T, 21))[0])
            except Exception as exc:  # noqa: BLE001 - any failure of the check rejects the goal
                raise InputError(f'goal {goal.tolist()} rejected: {exc}') from exc
        self.move = move
        self.goals += 1
        return T


# ------------------------------------------------------------------------------ SE(3) poses
def pose_matrix(position, rotation_vector=(0.0, 0.0, 0.0)):
    """4x4 homogeneous pose from a position (3,) [m] and a rotation vector (3,) [rad] (world
    axes, ``R = exp(hat(r))``, relative to the world orientation)."""
    from robot_dynamics.spatial.lie import exp_so3

    p = np.asarray(position, float)
    r = np.asarray(rotation_vector, float)
    if p.shape != (3,) or r.shape != (3,) or not _finite(p, r):
        raise InputError(
            f'pose: position and rotation vector must be finite 3-vectors, got '
            f'{np.shape(position)}, {np.shape(rotation_vector)}'
        )
    X = np.eye(4)
    X[:3, :3] = exp_so3(r)
    X[:3, 3] = p
    return X


def _check_pose(X, what):
    X = np.asarray(X, float)
    if X.shape != (4, 4) or not np.all(np.isfinite(X)):
        raise InputError(f'{what} must be a finite 4x4 homogeneous matrix, got shape {X.shape}')
    if np.abs(X[:3, :3].T @ X[:3, :3] - np.eye(3)).max() > 1e-9 or np.linalg.det(X[:3, :3]) < 0:
        raise InputError(f'{what}: the rotation part is not a rotation matrix')
    X = X.copy()
    X[3] = (0.0, 0.0, 0.0, 1.0)
    return X


class PoseProfile:
    """Base of the SE(3) pose profiles (6-DOF platform / end-effector motions).

    ``prof(t, order=4) -> (X, V)``: ``X`` (..., 4, 4) the world pose at ``t`` [s] (scalar or
    (S,)), ``V`` (order, ..., 6) the BODY-FIXED twist ``(v, w)`` (linear first; v = R^T p', w
    = vee(R^T R')) [m/s, rad/s] and its time derivatives 1 .. order - 1, i.e. the pose's time
    derivatives 1 .. order; every value exact (closed form or exact composition, no finite
    differences). ``prof.motion(t) -> (X, V, V', V'', V''')``: the argument order of
    :func:`robot_dynamics.pkm.inverse_dynamics_d2` and of the 6-DOF general route
    :func:`robot_dynamics.pkm.general.inverse_dynamics_d2_general` (x, xd .. xdddd)."""

    def __call__(self, t, order=4):
        raise NotImplementedError

    def motion(self, t):
        """``(X, V, Vd, Vdd, Vddd)`` at ``t`` (see the class docstring)."""
        X, V = self(t, 4)
        return (X, V[0], V[1], V[2], V[3])


def _screw_twist(xi, s):
    """Body twist derivatives of C0 exp(s(t) xi): V^(n) = s^(n+1) xi. s (order + 1, S)."""
    return s[1:, :, None] * xi


class RollProfile(PoseProfile):
    """Single-axis rotation of a platform with the cosine profile of the papers' roll (brief
    par. 4.1, erratum E11), generalised to any axis:

    ``theta(t) = -A cos(w t) + A + theta_min``, ``A = (theta_max - theta_min) / 2``, ``w = 2 pi /
    period``; pose ``C(t) = C0 exp(theta(t) xi)``, ``C0 = (R0, p0)`` (default ``R0 = I``), ``xi =
    (c x a, a)`` the unit rotation about the BODY axis ``a`` (``axis``, normalised, platform
    frame) through the body point ``c`` (``point`` [m], platform frame, default the platform
    origin: the platform origin then stays at ``p0``). Single screw, hence exactly ``V^(k) =
    theta^(k+1) xi``. With the defaults (axis x, -0.5 .. 0.5 rad, 1 s, p0 = (0, 0, 0.2) m) this
    is :class:`robot_dynamics.pkm.gough_stewart.RollMotion`. Periodic: ``period`` [s],
    ``frequency = 1 / period`` [Hz]; starts at rest at ``theta_min``."""

    def __init__(
        self,
        theta_min=-0.5,
        theta_max=0.5,
        period=1.0,
        p0=(0.0, 0.0, 0.2),
        axis=(1.0, 0.0, 0.0),
        point=(0.0, 0.0, 0.0),
        R0=None,
    ):
        a = np.asarray(axis, float)
        c = np.asarray(point, float)
        p0 = np.asarray(p0, float)
        R0 = np.eye(3) if R0 is None else np.asarray(R0, float)
        vals = np.array([theta_min, theta_max, period], float)
        if a.shape != (3,) or c.shape != (3,) or p0.shape != (3,) or R0.shape != (3, 3):
            raise InputError('RollProfile: p0, axis, point must be 3-vectors and R0 a 3x3 matrix')
        if not _finite(vals, a, c, p0) or period <= 0 or np.linalg.norm(a) < 1e-12:
            raise InputError('RollProfile: parameters must be finite, period > 0 and the axis non-zero')
        C0 = np.eye(4)
        C0[:3, :3], C0[:3, 3] = R0, p0
        self.C0 = _check_pose(C0, 'RollProfile: (R0, p0)')
        self.axis = a / np.linalg.norm(a)
        self.point = c
        self.xi = np.concatenate([np.cross(c, self.axis), self.axis])
        self.theta_min, self.theta_max, self.period = (float(v) for v in vals)
        self.frequency = 1.0 / self.period

    def theta(self, t, order=5):
        """theta and its time derivatives 0..order: (order + 1, *t.shape) [rad, rad/s^k]."""
        t = _t_array(t)
        A = 0.5 * (self.theta_max - self.theta_min)
        w = 2 * np.pi / self.period
        out = [-A * np.cos(w * t) + A + self.theta_min]
        for k in range(1, order + 1):
            out.append(-A * w**k * np.cos(w * t + k * np.pi / 2))
        return np.stack(out)

    def __call__(self, t, order=4):
        from robot_dynamics.spatial.lie import exp_se3

        t = _t_array(t)
        scalar = t.ndim == 0
        th = self.theta(np.atleast_1d(t), order)  # (order + 1, S)
        X = self.C0 @ exp_se3(th[0][:, None] * self.xi)
        V = _screw_twist(self.xi, th)
        return (X[0], V[:, 0]) if scalar else (X, V)


class PoseSegments(_Segments, PoseProfile):
    """Rest-to-rest pose moves through ``poses`` (K, 4, 4) (K >= 2, world) with ``durations``
    (K - 1,) [s], starting at ``t0`` [s]; before / after: at rest at the first / last pose.

    Each segment i follows the degree-9 time scaling ``s = sigma((t - t_i) / T_i)``
    (:func:`rest_to_rest_profile`: velocity .. snap zero at both ends, so the body twist and its
    derivatives 1..3 vanish at every via pose and are continuous there) along the geodesic:

    * ``path='line'`` (default): position on the straight line ``p_i + s (p_{i+1} - p_i)``,
      orientation ``R_i exp(s hat(r_i))`` about the fixed body axis ``r_i = log(R_i^T R_{i+1})``
      (|r_i| < pi). Body twist ``w = s' r_i``, ``v = s' y`` with ``y = exp(-s hat(r_i)) R_i^T (p_{i+1}
      - p_i)``, ``y' = -s' r_i x y``: the derivatives follow exactly by Leibniz' rule.
    * ``path='screw'``: ``C_i exp(s xi_i)``, ``xi_i = log(C_i^-1 C_{i+1})`` (a helix; ``V^(k) =
      s^(k+1) xi_i``).
    """

    def __init__(self, poses, durations, path='line', t0=0.0):
        from robot_dynamics.spatial.lie import log_se3, log_so3

        P = np.asarray(poses, float)
        d = np.atleast_1d(np.asarray(durations, float))
        if P.ndim != 3 or P.shape[0] < 2 or P.shape[1:] != (4, 4) or d.shape != (P.shape[0] - 1,):
            raise InputError(
                f'PoseSegments: need K >= 2 poses (K, 4, 4) and K - 1 durations, got {P.shape} and {d.shape}'
            )
        if not np.all(np.isfinite(d)) or np.any(d <= 0) or not np.isfinite(t0):
            raise InputError('PoseSegments: durations must be finite and > 0, t0 finite')
        if path not in ('line', 'screw'):
            raise InputError(f"PoseSegments: path must be 'line' or 'screw', got {path!r}")
        self.poses = np.stack([_check_pose(X, f'PoseSegments: pose {i}') for i, X in enumerate(P)])
        self.durations, self.t0, self.path = d, float(t0), path
        self.times = self.t0 + np.concatenate([[0.0], np.cumsum(d)])
        R, p = self.poses[:, :3, :3], self.poses[:, :3, 3]
        self.rot = log_so3(np.einsum('kji,kjl->kil', R[:-1], R[1:]))  # (K-1, 3) body axes
        if np.any(np.linalg.norm(self.rot, axis=1) > np.pi - 1e-6):
            raise InputError('PoseSegments: a segment rotates by pi or more (split it)')
        self.dp = np.einsum('kji,kj->ki', R[:-1], p[1:] - p[:-1])  # R_i^T dp (body)
        self.xi = log_se3(np.linalg.solve(self.poses[:-1], self.poses[1:]))  # (K-1, 6)

    def __call__(self, t, order=4):
        from math import comb

        from robot_dynamics.spatial.lie import exp_se3, exp_so3

        tt, scalar, seg, T, s = self._locate(t)
        s = rest_to_rest_profile(s, order)
        s = s / T ** np.arange(order + 1)[:, None]  # time derivatives of s
        s[1:, (tt < self.times[0]) | (tt > self.times[-1])] = 0.0
        C = self.poses[seg]
        if self.path == 'screw':
            xi = self.xi[seg]
            X = C @ exp_se3(s[0][:, None] * xi)
            V = s[1:, :, None] * xi
        else:
            r, dp = self.rot[seg], self.dp[seg]
            E = exp_so3(s[0][:, None] * r)  # (S, 3, 3)
            X = C.copy()
            X[:, :3, :3] = C[:, :3, :3] @ E
            X[:, :3, 3] = C[:, :3, 3] + s[0][:, None] * np.einsum('sij,sj->si', C[:, :3, :3], dp)
            y = [np.einsum('sji,sj->si', E, dp)]  # E^T R_i^T dp
            for n in range(1, order):
                y.append(-sum(comb(n - 1, k) * s[k + 1][:, None] * np.cross(r, y[n - 1 - k]) for k in range(n)))
            V = np.zeros((order, len(tt), 6))
            for n in range(order):
                V[n, :, :3] = sum(comb(n, k) * s[k + 1][:, None] * y[n - k] for k in range(n + 1))
                V[n, :, 3:] = s[n + 1][:, None] * r
        return (X[0], V[:, 0]) if scalar else (X, V)


class PoseRows:
    """A :class:`PoseProfile` as a row profile ``(t, order) -> (order + 1, 6)`` (what
    trajectory_node publishes on ``reference/derivatives``): row 0 the world position and the
    rotation vector of the orientation (world axes, :func:`pose_matrix` inverted), rows 1..order
    the BODY-FIXED twist (v, w) and its derivatives 1..order - 1 (the pose task of the general
    route). ``duration`` as the wrapped profile's."""

    def __init__(self, pose_profile):
        self.pose = pose_profile
        self.duration = getattr(pose_profile, 'duration', None)

    def __call__(self, t, order=4):
        from robot_dynamics.spatial.lie import log_so3

        X, V = self.pose(float(t), order)
        out = np.empty((order + 1, 6))
        out[0, :3], out[0, 3:] = X[:3, 3], log_so3(X[:3, :3])
        out[1:] = V
        return out


def pose_move_profile(start, waypoints, durations, path='line'):
    """:class:`PoseSegments` from flat parameters: ``start`` (6,) and ``waypoints`` (flat 6 K)
    each a position [m] and a rotation vector [rad] (world axes, :func:`pose_matrix`), K >= 1
    (via poses, the last one the goal), ``durations`` (K,) [s]."""
    w = np.asarray(waypoints, float).ravel()
    s = np.asarray(start, float).ravel()
    if s.shape != (6,) or w.size == 0 or w.size % 6:
        raise InputError(
            f'pose move: start must have 6 values and the waypoints 6 per pose '
            f'(position, rotation vector), got {s.size} and {w.size}'
        )
    if np.size(durations) != w.size // 6:
        raise InputError(f'pose move: {w.size // 6} waypoint pose(s) need as many durations, got {np.size(durations)}')
    poses = [pose_matrix(s[:3], s[3:])] + [pose_matrix(v[:3], v[3:]) for v in w.reshape(-1, 6)]
    return PoseSegments(np.stack(poses), durations, path=path)


def reference_at_stamps(t, ref_t, ref_x, max_gap=None, tol=1e-6):
    """The reference at the stamps ``t`` (n,) from samples ``ref_x`` (m, d) stamped ``ref_t``
    (m,): the sample of the same stamp (within ``tol`` s), else the linear interpolation of the
    two samples around it when they are at most ``max_gap`` s apart (error a h^2 / 8 for samples
    h apart), else NaN. Returns (n, d). ``max_gap`` default: 1.5 x the samples' median spacing
    (a wall-clock timer's samples are a period apart plus its jitter; a fixed 10 ms skipped most
    poses of a 100 Hz reference whose timer ran a little late, and a missing sample must not be
    bridged: at T1's 10 G, 25 ms of linear interpolation is 7.7 mm off). Taking the *nearest*
    sample instead puts the reference up to half a sample period off in time: 4.7 mm at T1's
    2.4 m/s for 250 Hz samples against 100 Hz poses, the size of the bound being checked."""
    t = np.asarray(t, float)
    rt = np.asarray(ref_t, float)
    rx = np.asarray(ref_x, float).reshape(len(rt), -1)
    order = np.argsort(rt, kind='stable')
    rt, rx = rt[order], rx[order]
    out = np.full((len(t), rx.shape[1]), np.nan)
    if len(rt) == 0:
        return out
    if max_gap is None:
        max_gap = 1.5 * float(np.median(np.diff(rt))) if len(rt) > 1 else 0.0
    k = np.searchsorted(rt, t)  # rt[k-1] < t <= rt[k]
    for i, (ti, ki) in enumerate(zip(t, k)):
        if ki < len(rt) and abs(rt[ki] - ti) <= tol:
            out[i] = rx[ki]
        elif ki > 0 and abs(rt[ki - 1] - ti) <= tol:
            out[i] = rx[ki - 1]
        elif 0 < ki < len(rt) and rt[ki] - rt[ki - 1] <= max_gap:
            w = (ti - rt[ki - 1]) / (rt[ki] - rt[ki - 1])
            out[i] = (1.0 - w) * rx[ki - 1] + w * rx[ki]
    return out
