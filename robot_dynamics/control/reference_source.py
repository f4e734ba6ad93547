"""What trajectory_node publishes, without ROS: the reference profile of every ``mode`` built
from the node's flat parameters (:func:`build_reference`), and the parameter table with
descriptions and constraints (:data:`PARAMS`; the node declares each one read-only with them).

A profile is a callable ``profile(t, order) -> (order + 1, n)`` (rows: derivatives 0..order of
the ``joints`` columns at time ``t`` [s]). Modes: ``joint`` (sinusoid / waypoints of joints),
``task`` (circle / sin2_pick_place / sin2_pose / goals of a task point, world frame; roll /
pose_move of a 6-DOF platform: position + rotation vector, then the body-fixed twist and its
derivatives, :class:`~robot_dynamics.control.trajectories.PoseRows`),
``pkm_d2`` (a platform motion of any PKM through the tabulated general 2nd-order route: pose
profiles roll / pose_move of a 6-DOF platform, task profiles of a lower-mobility one; the
actuated joints, with :attr:`D2Profile.last` the feed-forward sample), ``boom_task`` (seed
001's A-B-C-D tool legs mapped to the segment joints),
``task_ik`` (a tool path through the inverse output map of seed 000 to the minimal coordinates).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from robot_dynamics.control.trajectories import make_profile

__all__ = ['PARAMS', 'MODES', 'ORDER', 'ReferenceSource', 'D2Profile', 'build_reference', 'preview_samples']

ORDER = 4
MODES = ('joint', 'task', 'pkm_d2', 'boom_task', 'task_ik')

#: name -> (description, constraint) of every parameter of trajectory_node (declared read-only
#: with these descriptors when first read, so a bad start value stops the node with the
#: parameter's name and a run-time `ros2 param set` is refused: the profile is built once)
PARAMS = {
    'mode': (
        'reference kind: joint trajectory, task-space pose, PKM platform motion with '
        '2nd-order ID feed-forward, hydraulic boom A-B-C-D, task path as a minimal-coordinate trajectory',
        ('joint', 'task', 'pkm_d2', 'boom_task', 'task_ik'),
    ),
    'profile': (
        'motion: sinusoid | waypoints (joint), circle | sin2_pick_place | sin2_pose | '
        'goals | roll | pose_move (task), roll | pose_move (pkm_d2, 6-DOF platform), circle | waypoints | '
        'sin2_pick_place (pkm_d2, lower-mobility platform)',
        ('sinusoid', 'waypoints', 'circle', 'sin2_pick_place', 'sin2_pose', 'goals', 'roll', 'pose_move'),
    ),
    'rot_axis': ('sin2_pose: fixed world axis of the platform rotation', (-1e6, 1e6)),
    'rot_angle': ('sin2_pose: rotation at s = 1 [rad] (|rot_angle| < pi)', (-3.14159265, 3.14159265)),
    'rate': ('samples per second [Hz] (real time)', (1e-3, 1e5)),
    'lead': (
        'real time (timer): publish each sample this far ahead of the clock [s], stamped '
        'with its own time (a preview: the controller finds samples on both sides of a '
        'state however late the reference chain is, up to lead); 0 = none',
        (0.0, 10.0),
    ),
    'joints': ('joint names of a joint reference (default: the independent joints)', None),
    'amplitude': ('sinusoid amplitude per joint [rad | m]', (-1e6, 1e6)),
    'frequency': ('sinusoid / circle frequency [Hz]', (0.0, 1e3)),
    'phase': ('sinusoid / circle phase [rad]', (-1e6, 1e6)),
    'offset': ('sinusoid offset per joint [rad | m] (default: the reference configuration)', (-1e6, 1e6)),
    'waypoints': ('joint waypoints (flattened rows) | boom A-B-C-D tool points (x, z pairs) [m]', (-1e6, 1e6)),
    'durations': (
        'duration of each waypoint segment [s] (pkm_d2 pose_move: one per pose of pose_waypoints)',
        (0.0, 1e6),
    ),
    'repeat': ('repeat the profile after its duration', None),
    'center': ('circle centre, world frame [m]', (-1e6, 1e6)),
    'radius': ('circle radius [m]', (0.0, 1e3)),
    'e1': ('first in-plane unit vector of the circle (world)', (-1e6, 1e6)),
    'e2': ('second in-plane unit vector of the circle (world)', (-1e6, 1e6)),
    'roll_min': ('pkm_d2 roll: smallest platform roll angle [rad] (the start, at rest)', (-3.14159265, 3.14159265)),
    'roll_max': ('pkm_d2 roll: largest platform roll angle [rad]', (-3.14159265, 3.14159265)),
    'roll_period': ('pkm_d2 roll: period [s]', (1e-6, 1e6)),
    'roll_center': ('pkm_d2 roll: platform origin (world) [m] (default: at the reference configuration)', (-1e6, 1e6)),
    'roll_axis': (
        'pkm_d2 roll: rotation axis through the platform origin, platform frame '
        '(normalised; angle 0 = the orientation of the reference configuration)',
        (-1e6, 1e6),
    ),
    'pose_start': (
        'pkm_d2 pose_move: start pose, position (world) [m] + rotation vector (world '
        'axes) [rad] (default: the platform at the reference configuration)',
        (-1e6, 1e6),
    ),
    'pose_waypoints': (
        'pkm_d2 pose_move: via poses and the goal, 6 values each (position [m] + '
        'rotation vector [rad], world), one rest-to-rest segment per pose',
        (-1e6, 1e6),
    ),
    'pose_path': (
        'pkm_d2 pose_move: straight-line position + fixed-axis rotation, or a screw motion per segment',
        ('line', 'screw'),
    ),
    'table_step': (
        'pkm_d2: grid step of the precomputed feed-forward table [s] (the lock-step plant period)',
        (1e-6, 10.0),
    ),
    'task_axes': ('boom_task / task_ik: world components of the tool point', (0, 5)),
    'task_frame': ('task_ik: frame whose origin follows the task path', None),
    'task_loops': ('boom_task: number of A-B-C-D loops', (1, 1000000)),
    'leg_duration': ('boom_task: duration of one leg [s]', (1e-6, 1e6)),
    'start_delay': ('boom_task: rest before the first leg [s]', (0.0, 1e6)),
    'start': ('goals: EE position at rest before the first goal (world) [m]', (-1e6, 1e6)),
    'max_speed': ('goals: peak EE speed of a move [m/s]', (1e-9, 1e3)),
    'min_duration': ('goals: shortest move [s]', (0.0, 1e6)),
    'goal_topic': ('goals: geometry_msgs/PointStamped goals (relative name)', None),
    'sync_topic': ('lock-step: one sample per JointState stamp on this topic (empty: timer)', None),
    'start_topic': ('real time: the profile starts with the first message here (empty: at once)', None),
}


class D2Profile:
    """The actuated-joint motion of a 2nd-order feed-forward (``D2Feedforward`` or
    ``TabulatedD2Feedforward``) as a profile; :attr:`last` is the sample of the last call (u,
    u', u'', tree coordinates)."""

    def __init__(self, d2):
        self.d2, self.last = d2, None

    def __call__(self, t, order=ORDER):
        self.last = r = self.d2.reference(t)
        return r.theta_a[: order + 1]


@dataclass
class ReferenceSource:
    """What :func:`build_reference` returns: ``profile`` (t, order) -> (order + 1, n) of the
    ``joints`` columns, ``repeat`` (wrap ``t`` modulo the profile's ``duration``), ``kind`` (for
    the log), ``d2`` (a :class:`D2Profile` in mode pkm_d2, else None), ``goals``
    (:class:`~robot_dynamics.control.trajectories.GoalMoves` of ``profile: goals``, else None) and
    ``goal_topic``, ``info`` (a line for the log, or '')."""

    mode: str
    kind: str
    joints: list
    profile: object
    repeat: bool
    d2: D2Profile | None = None
    goals: object = None
    goal_topic: str = 'goal'
    info: str = ''


def preview_samples(next_k, t0, now, lead, rate):
    """The samples of a preview still to publish: grid indices ``k`` (sample time
    ``t0 + k / rate``) from ``next_k`` up to the last one at or before ``now + lead``, skipping
    those already older than ``now`` (nobody can use them any more after a long pause). All
    times in the same unit (trajectory_node: ns). Returns ``range``; the caller continues from
    its ``stop``. A late or skipped timer call (a clock that jumped several periods) so leaves
    no gap in the preview, and a burst never exceeds ``lead x rate + 1`` samples."""
    k_end = math.floor((now + lead - t0) * rate + 1e-9)
    k_min = math.floor((now - t0) * rate)
    return range(max(int(next_k), k_min), k_end + 1)


def build_reference(model, get):
    """The reference of trajectory_node's parameters: ``get(name, default)`` returns the value of
    a parameter (the node: declared read-only with :data:`PARAMS`). Raises ValueError for an
    unknown mode or profile and the package's errors for a profile that cannot be built (an
    unreachable start of ``task_ik``, a PKM outside the 2nd-order routes ...)."""
    m = model
    mode = get('mode', 'joint')
    kind = get('profile', 'sinusoid' if mode == 'joint' else 'circle')
    if mode not in MODES:
        raise ValueError(f'mode must be one of {MODES} (got {mode!r})')
    if mode == 'pkm_d2':
        return _pkm_d2(m, kind, get)
    if mode == 'boom_task':
        # seed 001: A-B-C-D tool-point legs mapped to the segment joints (hydraulic boom)
        from robot_dynamics.control.vdc import BoomTaskProfile

        prof = BoomTaskProfile(
            m,
            get('waypoints', [2.07152, 0.39253, 2.47152, 0.39253, 2.47152, 0.09253, 2.07152, 0.09253]),
            axes=get('task_axes', [0, 2]),
            loops=int(get('task_loops', 2)),
            leg_duration=float(get('leg_duration', 2.0)),
            start_delay=float(get('start_delay', 0.0)),
        )
        return ReferenceSource(mode, 'A-B-C-D', list(prof.joints), prof, False)
    if mode == 'joint':
        joints = list(get('joints', list(m.independent)))
        q0 = m.reference_q()[[m.joint_index(j) for j in joints]]
        n = len(joints)
        params = dict(
            amplitude=get('amplitude', [0.3] * n),
            frequency=get('frequency', [0.25] * n),
            phase=get('phase', [0.0] * n),
            offset=get('offset', q0.tolist()),
            waypoints=get('waypoints', np.tile(q0, 2).tolist()),
            durations=get('durations', [1.0]),
            n=n,
        )
    else:
        joints = ['x', 'y', 'z']
        params = dict(
            center=get('center', [0.0, 0.0, 0.0]),
            radius=get('radius', 0.05),
            frequency=get('frequency', 0.25),
            e1=get('e1', [1.0, 0.0, 0.0]),
            e2=get('e2', [0.0, 0.0, 1.0]),
            phase=get('phase', 0.0),
        )
        if kind == 'sin2_pose':  # position + rotation vector (6 columns)
            joints = ['x', 'y', 'z', 'rx', 'ry', 'rz']
            params.update(rot_axis=get('rot_axis', [0.0, 0.0, 1.0]), rot_angle=float(get('rot_angle', 0.0)))
    if mode == 'task' and kind in ('roll', 'pose_move'):
        # a 6-DOF platform pose (e.g. an SEA platform's flatness law): rows = position +
        # rotation vector, then the body-fixed twist and its derivatives (PoseRows)
        from robot_dynamics.control.d2_feedforward import pose_profile_from_params, tabulated_d2_defaults
        from robot_dynamics.control.trajectories import PoseRows

        p = {k: get(k, v) for k, v in tabulated_d2_defaults(m).items() if k != 'table_step'}
        prof = PoseRows(pose_profile_from_params(m, kind, p))
        return ReferenceSource(mode, kind, ['x', 'y', 'z', 'rx', 'ry', 'rz'], prof, bool(get('repeat', kind == 'roll')))
    if kind == 'goals':
        if mode == 'task_ik':
            raise ValueError("mode 'task_ik' supports profiles 'circle' and 'sin2_pick_place'")
        goals = _goal_profile(m, get)
        return ReferenceSource(mode, kind, joints, goals, False, goals=goals, goal_topic=get('goal_topic', 'goal'))
    prof = make_profile(kind, **params)
    src = ReferenceSource(mode, kind, joints, prof, bool(get('repeat', True)))
    if mode == 'task_ik':
        # seed 000: the tool path through the inverse output map to the minimal coordinates
        from robot_dynamics.algorithms.partitioning import CartesianReference

        src.profile = CartesianReference(m, prof, frame=get('task_frame', 'tool'), axes=get('task_axes', [0, 1, 2]))
        src.joints = list(src.profile.coords)
        src.profile(0.0)  # an unreachable start stops the node here, with the reason
    return src


def _pkm_d2(m, kind, get):
    """Platform motion -> 2nd-order recursive inverse dynamics (seed 004): the actuated joint
    reference with the feed-forward u, for any PKM of the general route
    (:mod:`robot_dynamics.pkm.general`), precomputed once on a grid of ``table_step`` [s] (the
    lock-step plant period; :class:`~robot_dynamics.control.d2_feedforward.TabulatedD2Feedforward`).
    6-DOF platform (e.g. the Gough-Stewart): pose profiles ``roll`` | ``pose_move``
    (:mod:`robot_dynamics.control.trajectories` RollProfile / PoseSegments, body-fixed twist to snap);
    lower-mobility platform: ``circle`` | ``waypoints`` | ``sin2_pick_place`` in the task
    coordinates. Defaults: :func:`~robot_dynamics.control.d2_feedforward.tabulated_d2_defaults`
    (centre / start: the platform at the sidecar's reference configuration)."""
    from robot_dynamics.control.d2_feedforward import (
        POSE_PROFILES,
        TASK_PROFILES,
        tabulated_d2_defaults,
        tabulated_d2_from_params,
    )

    if kind not in POSE_PROFILES + TASK_PROFILES:
        raise ValueError(
            f"mode 'pkm_d2' supports profiles {POSE_PROFILES} (6-DOF platform, e.g. the "
            f'Gough-Stewart) and {TASK_PROFILES} (lower-mobility platform), got {kind!r}'
        )
    d2 = tabulated_d2_from_params(m, kind, {k: get(k, v) for k, v in tabulated_d2_defaults(m).items()})
    info = f'pkm_d2 table: {d2.n + 1} samples of the general route over {d2.T:.4g} s ({d2.kind}), task {d2.pkm.task}'
    prof = D2Profile(d2)
    return ReferenceSource('pkm_d2', kind, list(d2.joints), prof, False, d2=prof, info=info)


def _goal_profile(m, get):
    """``profile: goals`` (seed 004's SEA moves): rest at ``start`` until a goal; each goal
    starts a sin^2-jerk move (:class:`robot_dynamics.control.trajectories.GoalMoves`, ``max_speed``,
    ``min_duration``); a goal whose path leaves the workspace (checked for SEA-PKMs: the planar
    3RRR's closed-form IK, else the general route's) is rejected."""
    from robot_dynamics.control.trajectories import GoalMoves
    from robot_dynamics.errors import InputError

    reachable = None
    if any(a.get('type') == 'sea' for a in m.actuators.values()):  # an SEA-PKM
        from robot_dynamics.pkm.planar_sea import Planar3RRR
        from robot_dynamics.pkm.sea import sea_params_from_model

        try:  # the planar 3RRR class: its closed-form IK
            pkm = Planar3RRR(sea_params_from_model(m))
            reachable = lambda pts: pkm.ik(pts[:, :2])  # noqa: E731
            pkm.ik(np.zeros((21, 2)))  # load the IK kernel now, not on the first goal
        except InputError:  # any other: the general route's IK of the path
            from robot_dynamics.pkm.sea import SEAPKM

            sea = SEAPKM(m)
            idx = list(sea.pkm.task_idx)

            def reachable(pts):
                X = np.zeros((len(pts), 5, sea.delta))
                X[:, 0] = np.asarray(pts, float)[:, idx]
                sea.solve(X)

    return GoalMoves(
        get('start', [0.0, 0.0, 0.0]), float(get('max_speed', 0.4)), float(get('min_duration', 0.3)), reachable
    )
