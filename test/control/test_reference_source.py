"""trajectory_node's references without ROS (robot_dynamics.control.reference_source): every mode built
from flat parameters the way the node declares them, sampled with derivatives 0..4; bad modes
and profiles refused."""

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.control.reference_source import ORDER, PARAMS, build_reference


def _get(values):
    seen = {}

    def get(name, default):
        assert name in PARAMS, f'{name} is not a declared parameter'  # the node declares PARAMS
        seen[name] = values.get(name, default)
        return seen[name]

    return get, seen


@pytest.mark.parametrize(
    'robot, params, n',
    [
        ('five_bar', {'mode': 'task', 'profile': 'circle', 'radius': 0.02}, 3),
        ('four_bar', {'mode': 'joint'}, 1),
        (
            'irsbot2',
            {'mode': 'task', 'profile': 'sin2_pick_place', 'e1': [0.1, 0, 0], 'e2': [0, 0, 0.1], 'frequency': 1.0},
            3,
        ),
        ('hydraulic_boom', {'mode': 'boom_task'}, 2),
        ('gough_stewart', {'mode': 'pkm_d2', 'profile': 'roll'}, 6),
        ('planar_3rrr_sea', {'mode': 'task', 'profile': 'goals', 'start': [-0.05, 0.0, 0.0]}, 3),
    ],
)
def test_every_mode_builds_and_samples(robot, params, n):
    m = rd.load_model(rd.data_path(f'urdf/{robot}.urdf'))
    get, seen = _get(params)
    src = build_reference(m, get)
    assert src.mode == params['mode'] and len(src.joints) == n
    for t in (0.0, 0.37):
        x = src.profile(t, order=ORDER)
        assert x.shape[1] == n and x.shape[0] in (3, ORDER + 1) and np.all(np.isfinite(x))  # boom: 0..2
    if src.mode == 'pkm_d2':
        # the node's default roll parameters are the brief's roll, now served from the general
        # route's table (RollProfile, no hand-written robot module): the same u, u', u'' as the
        # compiled 6x6 route on the hand-written RollMotion() (the test oracle) at that instant
        from robot_dynamics.pkm.gough_stewart import RollMotion
        from robot_dynamics.pkm.recursive import inverse_dynamics_d2

        r = src.d2.last
        u = inverse_dynamics_d2(m, *RollMotion()(0.37), route='compiled')
        np.testing.assert_allclose(np.stack([r.u, r.ud, r.udd]), np.stack(u), rtol=1e-12, atol=1e-9)
        assert r.q.shape == (m.nq,)
    if params.get('profile') == 'goals':
        assert src.goals is not None and src.goal_topic == 'goal'
        x0 = src.profile(1.0, order=ORDER)
        np.testing.assert_allclose(x0[0], [-0.05, 0.0, 0.0])  # at rest before a goal
        np.testing.assert_allclose(x0[1:], 0.0)


def test_bad_mode_and_profile_are_refused():
    m = rd.load_model(rd.data_path('urdf/five_bar.urdf'))
    with pytest.raises(ValueError, match='mode'):
        build_reference(m, _get({'mode': 'banana'})[0])
    with pytest.raises(ValueError, match='pkm_d2'):
        build_reference(
            rd.load_model(rd.data_path('urdf/gough_stewart.urdf')), _get({'mode': 'pkm_d2', 'profile': 'goals'})[0]
        )
    with pytest.raises(rd.errors.InputError):
        build_reference(m, _get({'mode': 'task', 'profile': 'zigzag'})[0])


def test_preview_samples_leave_no_gap_and_skip_what_nobody_can_use():
    """trajectory_node ``lead``: each tick publishes every grid sample up to clock + lead that
    is not out yet, so a late timer call (the plant clock jumped several periods) leaves no
    gap; after a pause longer than the preview the samples already in the past are skipped."""
    from robot_dynamics.control.reference_source import preview_samples

    rate, lead, t0 = 250.0, 0.1, 2.0  # T1: 4 ms grid, 100 ms preview
    first = preview_samples(0, t0, t0, lead, rate)  # the first tick: [t0, t0 + lead]
    assert list(first) == list(range(0, 26))
    nxt = preview_samples(first.stop, t0, t0 + 0.004, lead, rate)
    assert list(nxt) == [26]  # one period: one new sample
    late = preview_samples(nxt.stop, t0, t0 + 0.004 + 0.032, lead, rate)
    assert list(late) == list(range(27, 35))  # 8 periods late: all 8, in order
    assert list(preview_samples(late.stop, t0, t0 + 0.036, lead, rate)) == []  # nothing twice
    pause = preview_samples(late.stop, t0, t0 + 1.0, lead, rate)  # 1 s later
    assert pause.start == 250 and pause.stop == 276  # from the clock on, not from 35
    times = t0 + np.array(list(first) + list(nxt) + list(late)) / rate
    assert np.allclose(np.diff(times), 1 / rate)  # one sample per grid point
