"""SE(3) pose profiles (robot_dynamics.control.trajectories: RollProfile, PoseSegments) and the 2nd-order
feed-forward of a 6-DOF platform through the GENERAL route's table (TabulatedD2Feedforward, no
hand-written robot module in the path).

* The body-fixed twist V and its derivatives 1..3 of every profile against finite differences
  of the pose: V = d/dh log(C(t)^-1 C(t + h)) at h = 0, V^(k) = d/dt V^(k-1) (8th-order central
  differences, h = 1 ms, away from the via-pose instants where V''' has a kink): <= 1e-7
  (measured <= 1e-10 for the rolls, 2e-8 for the pose moves: round-off amplified by 1/h).
* Rest-to-rest moves start, pass the via poses and end at rest (V .. V''' = 0), at the poses.
* On the Gough-Stewart platform (urdf/gough_stewart.urdf) the general-route table of the roll
  (trajectory_node's defaults, 1 ms grid) equals the compiled 6x6 route
  ``inverse_dynamics_d2(route='compiled')`` on the hand-written RollMotion (the test oracle),
  and the table of a pose move equals the compiled route on the same pose profile: u, u', u''
  to <= 1e-8 (measured <= 9.2e-11 absolute, |u''| up to 2.7e3).
"""

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.errors import InputError
from robot_dynamics.spatial.lie import exp_so3, log_se3
from robot_dynamics.control.trajectories import PoseSegments, RollProfile, pose_matrix, pose_move_profile

C8 = np.array([1 / 280, -4 / 105, 1 / 5, -4 / 5, 0.0, 4 / 5, -1 / 5, 4 / 105, -1 / 280])
H = 1e-3

VIA = [0.012, -0.02, 0.21, 0.1, -0.05, 0.2, -0.01, 0.005, 0.19, -0.05, 0.1, -0.1]


def _fd(f, t):
    """8th-order central difference of f at the times t (step H)."""
    return sum(c * f(t + (j - 4) * H) for j, c in enumerate(C8) if c) / H


def _profiles():
    R0 = exp_so3(np.array([0.1, -0.2, 0.3]))
    return {
        'roll (brief)': (RollProfile(), np.array([0.0, 0.13, 0.37, 0.5, 0.81, 0.999])),
        'roll (any axis, point, R0)': (
            RollProfile(-0.3, 0.4, 0.8, p0=(0.01, -0.02, 0.22), axis=(0.3, 1.0, 0.2), point=(0.05, -0.02, 0.01), R0=R0),
            np.array([0.05, 0.2, 0.41, 0.66]),
        ),
        'pose_move line': (
            pose_move_profile([0, 0, 0.2, 0, 0, 0], VIA, [0.7, 0.5]),
            np.array([0.1, 0.33, 0.6, 0.8, 0.95, 1.15]),
        ),
        'pose_move screw': (
            pose_move_profile([0, 0, 0.2, 0, 0, 0], VIA, [0.7, 0.5], path='screw'),
            np.array([0.1, 0.33, 0.6, 0.8, 0.95, 1.15]),
        ),
    }


@pytest.mark.parametrize('name', list(_profiles()))
def test_body_twist_derivatives_match_finite_differences_of_the_pose(name):
    prof, ts = _profiles()[name]
    X, V = prof(ts, order=4)
    assert X.shape == (len(ts), 4, 4) and V.shape == (4, len(ts), 6)
    # level 0: the body twist from the log map of C(t)^-1 C(t + h)
    err = [np.abs(_fd(lambda tt: log_se3(np.linalg.solve(X, prof(tt)[0])), ts) - V[0]).max()]
    # levels 1..3: derivatives of the (checked) analytic level below
    for k in range(1, 4):
        err.append(np.abs(_fd(lambda tt, k=k: prof(tt, order=4)[1][k - 1], ts) - V[k]).max())
    assert max(err) <= 1e-7, (name, err, [np.abs(v).max() for v in V])
    # scalar time, order and motion(): consistent with the batch
    Xs, Vs = prof(float(ts[1]), order=2)
    np.testing.assert_allclose(Xs, X[1], atol=1e-15)
    np.testing.assert_allclose(Vs, V[:2, 1], atol=1e-13)
    mot = prof.motion(float(ts[1]))
    np.testing.assert_allclose(np.stack(mot[1:]), V[:, 1], atol=1e-13)


def test_roll_profile_is_the_brief_roll():
    from robot_dynamics.pkm.gough_stewart import RollMotion

    t = np.linspace(0.0, 1.0, 11)
    X, V = RollProfile()(t)
    ref = RollMotion()(t)
    np.testing.assert_allclose(X, ref[0], atol=1e-15)
    np.testing.assert_allclose(V, np.stack(ref[1:]), atol=1e-12)
    # an axis through a body point c: c is fixed in the world
    c = np.array([0.05, -0.02, 0.01])
    prof = RollProfile(axis=(0.0, 1.0, 1.0), point=c)
    X, _ = prof(t)
    np.testing.assert_allclose(X[:, :3, :3] @ c + X[:, :3, 3], np.tile(c + [0, 0, 0.2], (11, 1)), atol=1e-15)
    assert prof.frequency == 1.0


@pytest.mark.parametrize('path', ['line', 'screw'])
def test_rest_to_rest_ends_and_via_poses_at_rest(path):
    prof = pose_move_profile([0, 0, 0.2, 0, 0, 0], VIA, [0.7, 0.5], path=path)
    assert isinstance(prof, PoseSegments) and prof.duration == pytest.approx(1.2)
    poses = [pose_matrix([0, 0, 0.2]), pose_matrix(VIA[:3], VIA[3:6]), pose_matrix(VIA[6:9], VIA[9:])]
    X, V = prof(np.array([-0.5, 0.0, 0.7, 1.2, 3.0]))
    for Xk, P in zip(X, [poses[0], poses[0], poses[1], poses[2], poses[2]]):
        np.testing.assert_allclose(Xk, P, atol=1e-15)
    assert np.abs(V).max() == 0.0
    # line path: the position moves on the straight line between the poses
    if path == 'line':
        X, _ = prof(np.linspace(0.0, 0.7, 9))
        d = X[:, :3, 3] - poses[0][:3, 3]
        e = poses[1][:3, 3] - poses[0][:3, 3]
        np.testing.assert_allclose(np.cross(d, e), 0.0, atol=1e-16)
    with pytest.raises(InputError):
        PoseSegments(np.stack([np.eye(4), pose_matrix([0, 0, 0], [0, 0, np.pi - 1e-8])]), [1.0])
    with pytest.raises(InputError):
        pose_move_profile([0, 0, 0.2, 0, 0, 0], VIA[:5], [1.0])
    with pytest.raises(InputError, match='durations'):
        pose_move_profile([0, 0, 0.2, 0, 0, 0], VIA, [1.0])
    with pytest.raises(InputError):
        PoseSegments(np.stack([np.eye(4)] * 2), [1.0], path='arc')


@pytest.fixture(scope='module')
def gs():
    return rd.load_model(rd.data_path('urdf/gough_stewart.urdf'))


def test_gs_roll_table_equals_the_compiled_route(gs):
    """trajectory_node's default roll (config/gough_stewart.yaml grid, 1 ms) through the general
    route's table = the compiled 6x6 route on RollMotion."""
    from robot_dynamics.control.d2_feedforward import tabulated_d2_from_params
    from robot_dynamics.pkm.gough_stewart import RollMotion, leg_lengths
    from robot_dynamics.pkm.recursive import inverse_dynamics_d2

    d2 = tabulated_d2_from_params(
        gs,
        'roll',
        {
            'roll_min': -0.5,
            'roll_max': 0.5,
            'roll_period': 1.0,
            'roll_center': [0.0, 0.0, 0.2],
            'roll_axis': [1.0, 0.0, 0.0],
            'table_step': 0.001,
        },
    )
    assert d2.kind == 'periodic' and d2.T == 1.0 and d2.n == 1000 and d2.pkm.task == 'pose'
    assert d2.joints == list(gs.actuated)
    X = RollMotion()(d2.times)
    ref = inverse_dynamics_d2(gs, *X, route='compiled')
    diff = [np.abs(a - b).max() for a, b in zip((d2.u, d2.ud, d2.udd), ref)]
    assert max(diff) <= 1e-8, diff
    # actuated IK = the closed-form leg lengths; served samples: grid rows, Hermite in between
    np.testing.assert_allclose(
        d2.theta[:, 0, d2.pkm.act_index], leg_lengths(X[0][:, :3, :3], X[0][:, :3, 3]), atol=1e-12
    )
    r = d2.reference(0.37)
    np.testing.assert_allclose(r.u, ref[0][370], atol=1e-12)
    r, rd_ = d2.reference(0.3705), d2.direct(0.3705)
    np.testing.assert_allclose(np.stack([r.u, r.ud, r.udd]), np.stack([rd_.u, rd_.ud, rd_.udd]), rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(r.q, rd_.q, atol=1e-12)


def test_gs_pose_move_table_equals_the_compiled_route(gs):
    from robot_dynamics.control.d2_feedforward import pose_profile_from_params, tabulated_d2_from_params
    from robot_dynamics.pkm.recursive import inverse_dynamics_d2

    prm = {'pose_waypoints': VIA, 'durations': [0.6, 0.4], 'table_step': 0.002}
    d2 = tabulated_d2_from_params(gs, 'pose_move', prm)
    assert d2.kind == 'rest' and d2.T == pytest.approx(1.0) and d2.n == 500
    prof = pose_profile_from_params(gs, 'pose_move', prm)
    ref = inverse_dynamics_d2(gs, *prof.motion(d2.times), route='compiled')
    diff = [np.abs(a - b).max() for a, b in zip((d2.u, d2.ud, d2.udd), ref)]
    assert max(diff) <= 1e-8, diff
    # at rest before / after: the first / last row with zero rates
    for t, k in ((-1.0, 0), (5.0, -1)):
        r = d2.reference(t)
        np.testing.assert_allclose(r.u, d2.u[k], atol=1e-15)
        assert np.abs(r.theta_a[1:]).max() < 1e-12 and np.abs(r.ud).max() < 1e-9
    # a lower-mobility profile is refused on the 6-DOF platform, and vice versa
    with pytest.raises(InputError, match='6-DOF'):
        tabulated_d2_from_params(gs, 'circle', {})


def test_trajectory_node_parameters_pose_move(gs):
    """reference_source: mode pkm_d2 / profile pose_move of the Gough-Stewart from the node's flat
    parameters (every parameter read is declared in PARAMS)."""
    from robot_dynamics.control.reference_source import PARAMS, build_reference

    values = {
        'mode': 'pkm_d2',
        'profile': 'pose_move',
        'pose_waypoints': VIA[:6],
        'durations': [0.5],
        'table_step': 0.005,
    }
    seen = {}

    def get(name, default):
        assert name in PARAMS, f'{name} is not a declared parameter'
        seen[name] = values.get(name, default)
        return seen[name]

    src = build_reference(gs, get)
    assert src.joints == list(gs.actuated) and 'pose' in src.info
    assert {'pose_start', 'pose_waypoints', 'pose_path', 'roll_axis', 'table_step'} <= set(seen)
    x = src.profile(0.25, order=4)
    assert x.shape == (5, 6) and np.all(np.isfinite(x))
    assert np.abs(src.profile(0.5, order=4)[1:]).max() < 1e-12  # at rest at the goal
