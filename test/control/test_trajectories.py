"""Analytic trajectories: derivatives against finite differences, continuity, bad input."""

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.control.trajectories import PolynomialSegments, Sinusoid, rest_to_rest_profile


def _fd(f, t, k, h=1e-4):
    """Central difference of derivative k-1 of f (order k) at times t."""
    return (f(t + h, order=k)[k - 1] - f(t - h, order=k)[k - 1]) / (2 * h)


@pytest.mark.parametrize(
    'traj',
    [
        Sinusoid([0.3, 0.1], [0.5, 1.3], phase=[0.2, -1.0], offset=[1.0, -0.5]),
        PolynomialSegments([[0, 0], [1, -2], [0.5, 0.5]], [0.8, 1.1]),
    ],
)
def test_derivatives_match_finite_differences(traj):
    t = np.linspace(-0.1, 2.0, 37) + 0.0123
    x = traj(t, order=4)
    assert x.shape == (5, len(t), 2)
    for k in range(1, 5):
        scale = max(1.0, np.abs(x[k]).max())
        assert np.allclose(_fd(traj, t, k), x[k], atol=2e-5 * scale), k


def test_rest_to_rest_boundary_conditions():
    p0 = rest_to_rest_profile(0.0, 4)
    p1 = rest_to_rest_profile(1.0, 4)
    assert p0[0] == 0 and abs(p1[0] - 1) < 1e-14
    assert np.allclose(p0[1:], 0) and np.allclose(p1[1:], 0, atol=1e-10)


def test_segments_pass_through_waypoints_and_hold():
    W = np.array([[0.0, 1.0], [2.0, -1.0], [1.0, 0.0]])
    tr = PolynomialSegments(W, [1.0, 2.0], t0=0.5)
    for tk, w in zip([0.5, 1.5, 3.5], W):
        assert np.allclose(tr(tk)[0], w, atol=1e-12)
    assert np.allclose(tr(-3.0)[0], W[0]) and np.allclose(tr(10.0)[0], W[-1])
    assert np.allclose(tr(10.0, order=4)[1:], 0)
    assert tr.duration == 3.0


def test_scalar_time_shape():
    tr = Sinusoid(1.0, 1.0)
    assert tr(0.25, order=3).shape == (4, 1)


@pytest.mark.parametrize('args', [([[0, 0]], []), ([[0], [1]], [0.0]), ([[0], [np.nan]], [1.0])])
def test_bad_segments_raise(args):
    with pytest.raises(rd.InputError):
        PolynomialSegments(*args)


def test_circle_derivatives_and_radius():
    from robot_dynamics.control.trajectories import Circle

    c = Circle([0.1, 0.0, 0.3], 0.05, 0.7, e1=[1, 0, 0], e2=[0, 0.2, 1])
    t = np.linspace(0, 2, 21)
    x = c(t, order=4)
    assert np.allclose(np.linalg.norm(x[0] - c.center, axis=-1), 0.05)
    for k in range(1, 5):
        assert np.allclose(_fd(c, t, k), x[k], atol=2e-5 * max(1, np.abs(x[k]).max()))


def test_make_profile_waypoints_and_errors():
    from robot_dynamics.control.trajectories import make_profile

    tr = make_profile('waypoints', n=2, waypoints=[0, 0, 1, 1], durations=[1.0])
    assert np.allclose(tr(1.0)[0], [1, 1])
    with pytest.raises(rd.InputError):
        make_profile('waypoints', n=2, waypoints=[0, 0, 1], durations=[1.0])
    with pytest.raises(rd.InputError):
        make_profile('spiral')


def test_sin2_pick_place_derivatives_and_paper_t1():
    """Sin2PickPlace (seed 003, T1/T2): derivatives vs central differences up to 4th order,
    equals robot_dynamics.pkm.irsbot2.trajectory (x, z and two derivatives), make_profile kind."""
    from robot_dynamics.pkm import irsbot2
    from robot_dynamics.control.trajectories import Sin2PickPlace, make_profile

    z6 = irsbot2.parameters('eq47')['z6']
    for T in (1.0, 3.0):
        tr = make_profile(
            'sin2_pick_place',
            center=[0.0, 0.0, z6],
            e1=[0.25, 0.0, 0.0],
            e2=[0.0, 0.0, 0.45],
            frequency=3.0 / T,
            radius=0.05,
        )
        assert isinstance(tr, Sin2PickPlace)
        t = np.linspace(0.0, T / 3, 29) + 0.0071
        x = tr(t, order=4)
        assert x.shape == (5, len(t), 3)
        for k in range(1, 5):
            assert np.allclose(_fd(tr, t, k, h=1e-5 * T), x[k], rtol=1e-6, atol=1e-6 * np.abs(x[k]).max()), (T, k)
        for tk, xk in zip(t, x.transpose(1, 0, 2)):
            ref = irsbot2.trajectory(tk, 'T1', T=T, nu=3.0)
            for d in range(3):
                assert np.allclose(xk[d][[0, 2]], ref[d], rtol=1e-12, atol=1e-12)
            assert np.all(xk[:, 1] == 0.0)
    # paper start acceleration 2 dx (nu pi / T)^2 and rest at s = 0 and s = 1
    tr = Sin2PickPlace([0, 0, z6], [0.25, 0, 0], [0, 0, 0.45], 3.0)
    assert np.isclose(tr(0.0)[2][0], 2 * 0.25 * (3 * np.pi) ** 2)
    assert np.allclose(tr([0.0, 1 / 6, 1 / 3])[1], 0.0, atol=1e-12)
    assert np.allclose(tr(1 / 6)[0], [0.25, 0.0, z6])
    with pytest.raises(rd.InputError):
        Sin2PickPlace([0, 0], [0, 0, 0], [0, 0, 0], 1.0)
    with pytest.raises(rd.InputError):
        Sin2PickPlace([0, 0, 0], [0, 0, 0], [0, 0, 0], 0.0)


def test_decaying_offset_boundary_values_and_derivatives():
    from robot_dynamics.control.trajectories import DecayingOffset

    p0, v0 = np.array([0.7, -0.2, 0.0]), np.array([-0.31, 0.05, 0.0])
    d = DecayingOffset(p0, v0, 2.0, t0=1.5)
    start, end = d(1.5), d(3.5)
    np.testing.assert_allclose(start, [p0, v0, np.zeros(3)], atol=1e-15)
    np.testing.assert_allclose(end, 0.0, atol=1e-14)
    assert np.all(d(np.array([4.0, 10.0])) == 0.0)  # gone after t0 + T
    t = np.linspace(1.51, 3.49, 23)
    for k in (1, 2):
        x = d(t, order=2)
        h = 1e-5
        fd = (d(t + h, order=2)[k - 1] - d(t - h, order=2)[k - 1]) / (2 * h)
        assert np.allclose(fd, x[k], atol=1e-7), k
    with pytest.raises(rd.InputError):
        DecayingOffset([0.0], [0.0, 1.0], 1.0)
    with pytest.raises(rd.InputError):
        DecayingOffset([0.0], [0.0], 0.0)
    with pytest.raises(rd.InputError):
        d(2.0, order=3)


def test_sin2_pose_move_derivatives_twist_and_start_at_rest():
    """Sin2PoseMove (trajectory_node profile 'sin2_pose'): position = Sin2PickPlace, rotation
    vector theta(t) u with theta = rot_angle s (fixed axis: its derivatives are w and dw/dt),
    derivatives vs central differences up to 4th order, start at rest at (r0, 0), bad input."""
    from robot_dynamics.spatial.lie import exp_so3, log_so3
    from robot_dynamics.control.trajectories import Sin2PickPlace, Sin2PoseMove, make_profile

    r0, a, b = [0.01, -0.02, 0.3], [0.1, 0.05, 0.0], [0.0, 0.2, 0.0]
    tr = make_profile(
        'sin2_pose', center=r0, e1=a, e2=b, frequency=1.3, rot_axis=[0, 0, 2.0], rot_angle=0.3, radius=0.05
    )
    assert isinstance(tr, Sin2PoseMove)
    t = np.linspace(0.0, 1.2, 31) + 0.0071
    x = tr(t, order=4)
    assert x.shape == (5, len(t), 6)
    assert np.array_equal(x[..., :3], Sin2PickPlace(r0, a, b, 1.3)(t, order=4))
    for k in range(1, 5):
        assert np.allclose(_fd(tr, t, k, h=1e-5), x[k], rtol=1e-6, atol=1e-6 * np.abs(x[k]).max()), k
    s = np.sin(np.pi * 1.3 * t) ** 2
    assert np.allclose(x[0][:, 3:], 0.3 * s[:, None] * [0.0, 0.0, 1.0], atol=1e-15)
    # the angular velocity of R(t) = exp(r(t)^): (R(t+h) R(t-h)^T) / 2h -> w = row 1
    h = 1e-6
    for tk in t[::6]:
        Rp, Rm = exp_so3(tr(tk + h)[0][3:]), exp_so3(tr(tk - h)[0][3:])
        assert np.allclose(log_so3(Rp @ Rm.T) / (2 * h), tr(tk)[1][3:], atol=1e-7)
    x0 = tr(0.0, order=2)
    assert np.allclose(x0[0], r0 + [0, 0, 0]) and np.allclose(x0[1], 0.0, atol=1e-15)
    tilted = Sin2PoseMove(r0, a, b, 1.0, rot_axis=[1.0, 1.0, 0.0], rot_angle=-0.5)
    assert np.allclose(tilted(0.5)[0][3:], -0.5 * np.array([1, 1, 0]) / np.sqrt(2))
    for bad in (dict(rot_axis=[0, 0, 0]), dict(rot_axis=[0, 1]), dict(rot_angle=np.pi), dict(rot_angle=np.nan)):
        with pytest.raises(rd.InputError):
            Sin2PoseMove(r0, a, b, 1.0, **bad)
