"""The control loop shared by every law (robot_dynamics.control.loop), without ROS:
state parsing and plausibility, staleness, reference matching/extrapolation, lock-step wait,
limits, the safe command and overrun accounting."""

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.algorithms.projection import pidc
from robot_dynamics.control import DynamicsController, hold_command
from robot_dynamics.control.feedforward_pd import FeedforwardPDLaw
from robot_dynamics.control.laws import make_law
from robot_dynamics.control.loop import ControlLoop, Law, LawOutput, StampedParts
from robot_dynamics.errors import InputError
from robot_dynamics.plants.rigid import ConstrainedPlant


@pytest.fixture(scope='module')
def five_bar():
    return rd.load_model(rd.data_path('urdf/five_bar.urdf'))


@pytest.fixture(scope='module')
def arm7():
    return rd.load_model(rd.data_path('urdf/arm7.urdf'))


def _state(loop, m, q, qd, stamp, now=None):
    return loop.set_state(list(m.joint_names), list(q), list(qd), stamp, stamp if now is None else now)


class Echo(Law):
    """Test law: effort = reference position (or a fixed value); records what it got."""

    name = 'echo'

    def __init__(self, model, out=None, raise_=None):
        super().__init__(model)
        self.out, self.raise_, self.seen = out, raise_, []

    def update(self, state, ref, dt=None):
        self.seen.append((state.stamp, None if ref is None else ref.pos.copy()))
        if self.raise_:
            raise self.raise_
        eff = ref.pos if self.out is None else np.asarray(self.out, float)
        return LawOutput(eff, ref.pos * 0, ref.vel * 0)


def test_answers_each_state_once_and_only_the_newest(five_bar):
    m = five_bar
    law = Echo(m)
    loop = ControlLoop(law, safe='zero')
    q, z = m.reference_q(), np.zeros(m.nq)
    assert loop.update(0.0) is None  # no state yet
    loop.set_reference([1.0, 2.0], stamp=0.0)
    assert _state(loop, m, q, z, 0.01) is None
    c = loop.update(0.01)
    assert not c.safe and np.allclose(c.effort, [1.0, 2.0])
    assert loop.update(0.011) is None  # the same stamp is answered once
    _state(loop, m, q, z, 0.02)
    _state(loop, m, q, z, 0.03)  # 0.02 never answered: skipped
    c = loop.update(0.03)
    assert c.stamp == 0.03 and loop.count['skipped_states'] == 1
    assert [s for s, _ in law.seen] == [0.01, 0.03]


def test_state_parsing_nan_interfaces_and_plausibility(five_bar):
    m = five_bar
    law = Echo(m)
    law.required_joints = list(m.actuated)  # a law that needs the actuated joints only
    loop = ControlLoop(law, safe='zero')
    names = list(m.joint_names)
    q = m.reference_q()
    nanv = [float('nan')] * m.nq
    # NaN velocity of a required joint: rejected; of a joint the law does not use: read as 0
    assert 'non-finite velocity' in loop.set_state(names, list(q), nanv, 1.0)
    v = [0.0] * m.nq
    for j in m.passive:
        v[m.joint_index(j)] = float('nan')
    assert loop.set_state(names, list(q), v, 1.0) is None
    assert np.all(loop.state.qd == 0)
    # only the actuated joints measured (a real PKM): accepted, passive positions kept
    act = list(m.actuated)
    assert loop.set_state(act, list(q[m.actuated_indices]), [0.0, 0.0], 1.1) is None
    assert 'missing joints' in loop.set_state(list(m.passive), [0.0] * len(m.passive), [], 1.2)
    # absurd but finite values never reach the law
    big = [0.0] * m.nq
    big[0] = 1e200
    assert 'implausible velocity' in loop.set_state(names, list(q), big, 1.3)
    qq = q.copy()
    qq[m.actuated_indices[0]] = 1e7
    assert 'implausible position' in loop.set_state(names, list(qq), [0.0] * m.nq, 1.3)
    assert 'velocity has' in loop.set_state(names, list(q), [0.0], 1.3)
    assert 'duplicate' in loop.set_state(names + names[:1], list(q) + [0.0], [], 1.3)
    assert 'no valid stamp' in loop.set_state(names, list(q), [], float('nan'))
    assert 'non-numeric' in loop.set_state(names, ['a'] * m.nq, [], 1.3)
    assert loop.count['rejected_states'] == 8 and loop.state.stamp == 1.1


def test_stale_state_gives_the_safe_command_within_two_periods(five_bar):
    m = five_bar
    period = 0.01
    loop = ControlLoop(Echo(m, out=[5.0, -5.0]), period=period, state_timeout=period, safe='hold', hold_damping=0.5)
    q, z = m.reference_q(), np.zeros(m.nq)
    loop.set_reference([0.0, 0.0], stamp=0.0)
    _state(loop, m, q, z, 0.0, now=10.0)
    assert not loop.update(10.0).safe
    # the watchdog runs once per period: the first tick after the timeout gives the safe command
    ticks = [10.0 + k * period for k in range(1, 4)]
    out = [loop.update(t) for t in ticks]
    first_safe = next(t for t, c in zip(ticks, out) if c is not None and c.safe)
    assert first_safe - 10.0 <= 2 * period + 1e-12
    c = out[-1]
    assert c.safe and 'state stale' in c.reason
    hold = hold_command(m, q, z, 0.5)[m.actuated_indices]
    assert np.allclose(c.effort, hold)  # gravity hold, not the last effort
    assert loop.diagnostics()['stale'] and loop.count['stale_state'] == 1
    # a fresh state ends it
    _state(loop, m, q, z, 0.1, now=10.1)
    c = loop.update(10.1)
    assert not c.safe and np.allclose(c.effort, [5.0, -5.0])


def test_staleness_on_the_wall_clock_in_real_time_on_the_node_clock_in_lockstep(five_bar):
    """A real-time graph on the plant clock (/clock): the node clock stops when the plant does,
    so the state's age is taken on the wall clock (the safe command within two periods of wall
    time while the node clock stands still); in lock-step the node clock (simulated time) alone
    decides: no wall-clock time makes the state stale."""
    m, period = five_bar, 0.01
    q, z = m.reference_q(), np.zeros(m.nq)
    for sync in (False, True):
        loop = ControlLoop(Echo(m, out=[5.0, -5.0]), period=period, state_timeout=period, sync=sync)
        loop.set_reference([0.0, 0.0], stamp=3.0)
        assert loop.set_state(list(m.joint_names), list(q), list(z), 3.0, 3.0, 100.0) is None
        assert not loop.update(3.0, 100.0).safe
        # node clock frozen at 3.0 s (no /clock), wall time runs on, one watchdog tick per period
        ticks = [100.0 + k * period for k in range(1, 4)]
        out = [loop.update(3.0, w) for w in ticks]
        if sync:
            assert all(c is None for c in out)  # nothing new, nothing stale: wait
        else:
            first_safe = next(w for w, c in zip(ticks, out) if c is not None and c.safe)
            assert first_safe - 100.0 <= 2 * period + 1e-12
            assert 'state stale' in out[-1].reason and loop.count['stale_state'] == 1
            # a fresh state (the plant resumed) ends it
            loop.set_state(list(m.joint_names), list(q), list(z), 3.001, 3.001, 100.05)
            assert not loop.update(3.001, 100.05).safe
    # without a wall time (offline callers) the node clock decides, as before
    loop = ControlLoop(Echo(m, out=[5.0, -5.0]), period=period, state_timeout=period)
    loop.set_reference([0.0, 0.0], stamp=0.0)
    _state(loop, m, q, z, 0.0, now=0.0)
    assert not loop.update(0.0).safe and loop.update(0.0 + 2 * period).safe


def test_limits_law_errors_and_non_finite_output_give_safe_commands(five_bar):
    m = five_bar
    q, z = m.reference_q(), np.zeros(m.nq)
    loop = ControlLoop(Echo(m, out=[1e3, -3.0]), max_effort=5.0, safe='zero')
    loop.set_reference([0, 0], stamp=0.0)
    _state(loop, m, q, z, 0.0)
    c = loop.update(0.0)
    assert c.clipped and np.allclose(c.effort, [5.0, -3.0]) and loop.count['clipped'] == 1
    urdf = np.asarray(m.effort_limit)[m.actuated_indices]
    assert np.allclose(loop.effort_limit, np.minimum(np.where(np.isfinite(urdf), urdf, np.inf), 5.0))
    for law, why in (
        (Echo(m, out=[np.nan, 0.0]), 'non-finite'),
        (Echo(m, out=[1.0]), 'malformed'),
        (Echo(m, raise_=InputError('boom')), 'boom'),
        (Echo(m, raise_=np.linalg.LinAlgError('singular')), 'singular'),
    ):
        lp = ControlLoop(law, safe='zero')
        lp.set_reference([0, 0], stamp=0.0)
        _state(lp, m, q, z, 0.0)
        c = lp.update(0.0)
        assert c.safe and why in c.reason and np.all(c.effort == 0) and lp.count['law_errors'] == 1
    with pytest.raises(InputError):
        ControlLoop(Echo(m), max_effort=-1.0)
    with pytest.raises(InputError):
        ControlLoop(Echo(m), state_timeout=-1.0)
    with pytest.raises(InputError):
        ControlLoop(Echo(m), safe='banana')


def test_a_command_is_clipped_once_by_the_loop(five_bar):
    """A law output beyond the limit and a reference extrapolated to the state: the law gets the
    extrapolated reference and returns its efforts unclipped; the loop's limit (min of the URDF's
    and max_effort) is the only change to them."""
    m = five_bar
    law = DynamicsController(m, kp=3000.0, kd=20.0)
    seen = []
    law_update = law.update

    def spy(state, ref, dt=None):
        out = law_update(state, ref, dt)
        seen.append((ref, out))
        return out

    law.update = spy
    for max_effort in ((3.0, 100.0), None):
        loop = ControlLoop(law, safe='zero', max_effort=max_effort)
        q, z = m.reference_q(), np.zeros(m.nq)
        x0 = law.current_coordinates(q)
        d, v, a = np.array([0.05 if max_effort else 1.0, 0.0]), np.array([0.2, 0.0]), np.array([1.0, 0.0])
        loop.set_reference(x0 + d, v, a, stamp=0.0)
        _state(loop, m, q, z, 0.004)
        c = loop.update(0.004)
        ref, out = seen[-1]
        h = 0.004
        np.testing.assert_allclose(ref.pos, x0 + d + v * h + 0.5 * a * h * h, rtol=1e-15)
        np.testing.assert_allclose(ref.vel, v + a * h, rtol=1e-15)
        assert c.extrapolated == pytest.approx(h) and loop.count['extrapolated'] == 1
        lim = loop.effort_limit
        assert np.all(lim == np.minimum(np.asarray(m.effort_limit)[law.cmd_idx], max_effort or np.inf))
        assert np.abs(out.effort[0]) > lim[0]  # the law does not clip
        np.testing.assert_array_equal(out.effort, out.info['tau'][law.cmd_idx])
        np.testing.assert_array_equal(c.effort, np.clip(out.effort, -lim, lim))
        assert c.clipped and loop.count['clipped'] == 1
        assert np.any(np.abs(c.effort) < lim)  # only the components beyond the limit change
        np.testing.assert_array_equal(c.effort[np.abs(out.effort) < lim], out.effort[np.abs(out.effort) < lim])


def test_reference_matching_extrapolation_and_staleness(five_bar):
    m = five_bar
    q, z = m.reference_q(), np.zeros(m.nq)
    law = Echo(m)
    loop = ControlLoop(law, max_extrapolation=0.05, reference_timeout=0.2, safe='zero')
    _state(loop, m, q, z, 0.0)
    c = loop.update(0.0)
    assert c.safe and 'no reference' in c.reason
    p, v, a = np.array([1.0, 2.0]), np.array([0.5, -1.0]), np.array([2.0, 4.0])
    loop.set_reference(p, v, a, stamp=1.0)
    _state(loop, m, q, z, 1.02)  # only an earlier sample: Taylor
    c = loop.update(1.02)
    dt = 0.02
    assert np.allclose(c.reference.pos, p + v * dt + 0.5 * a * dt * dt)
    assert np.allclose(c.reference.vel, v + a * dt) and c.extrapolated == pytest.approx(dt)
    loop.set_reference(p + 1, v, a, stamp=1.1)  # a later sample: not used for the
    _state(loop, m, q, z, 1.03)  # joints' reference (Taylor from the
    c = loop.update(1.03)  # sample before the state)
    assert np.allclose(c.reference.pos, p + v * 0.03 + 0.5 * a * 0.03**2)
    _state(loop, m, q, z, 1.1)  # exact stamp: used as is
    c = loop.update(1.1)
    assert c.extrapolated == 0 and np.allclose(c.reference.pos, p + 1)
    _state(loop, m, q, z, 1.2)  # 0.1 s later: capped at 0.05 s
    c = loop.update(1.2)
    assert np.allclose(c.reference.pos, p + 1 + v * 0.05 + 0.5 * a * 0.05**2)
    _state(loop, m, q, z, 1.35)  # 0.25 s > reference_timeout
    c = loop.update(1.35)
    assert c.safe and 'reference stale' in c.reason
    # reordering by names, bad references
    lp2 = ControlLoop(Echo(m), safe='zero')
    cs = list(m.actuated)
    assert lp2.set_reference([2.0, 1.0], names=cs[::-1], stamp=0.0) is None
    assert 'must include' in lp2.set_reference([1.0], names=['x'], stamp=0.0)
    assert 'finite' in lp2.set_reference([np.nan, 1.0], stamp=0.0)
    assert 'finite' in lp2.set_reference([1.0, 1.0, 1.0], stamp=0.0)


def test_lockstep_waits_for_the_reference_of_the_state_stamp(five_bar):
    m = five_bar
    q, z = m.reference_q(), np.zeros(m.nq)
    loop = ControlLoop(Echo(m), sync=True, ref_wait=0.5, safe='zero')
    loop.set_reference([0.0, 0.0], stamp=0.0)
    _state(loop, m, q, z, 0.0)  # now = simulated time, wall separate
    assert loop.update(0.0, wall=100.0) is not None
    _state(loop, m, q, z, 0.01)
    assert loop.update(0.01, wall=100.01) is None  # waits: no sample for 0.01 yet
    assert loop.update(0.01, wall=100.3) is None
    loop.set_reference([3.0, 4.0], stamp=0.01)
    c = loop.update(0.01, wall=100.31)
    assert c.extrapolated == 0 and np.allclose(c.effort, [3.0, 4.0])
    _state(loop, m, q, z, 0.02)
    assert loop.update(0.02, wall=200.0) is None
    c = loop.update(0.02, wall=200.6)  # ref_wait over: extrapolate the newest
    assert c is not None and c.extrapolated == pytest.approx(0.01)


def test_feedforward_merge_by_stamp_extrapolation_and_lead(five_bar):
    m = five_bar
    q, z = m.reference_q(), np.zeros(m.nq)
    law = FeedforwardPDLaw(m, kp=10.0, kd=2.0)
    loop = ControlLoop(law, safe='zero', ff_lead=0.001)
    loop.set_reference([0.0, 0.0], stamp=0.0)
    _state(loop, m, q, z, 0.0)
    assert loop.update(0.0).safe  # reference without its feed-forward
    loop.set_feedforward([1.0, 2.0], stamp=0.0)
    loop.set_feedforward([1.2, 2.4], stamp=0.01, names=list(m.actuated))
    loop.set_reference([0.1, 0.2], [1.0, 1.0], stamp=0.01)
    _state(loop, m, q, z, 0.01)
    c = loop.update(0.01)
    rate = np.array([20.0, 40.0])
    u = np.array([1.2, 2.4]) + rate * 0.001  # ZOH lead
    qa = q[m.actuated_indices]
    assert np.allclose(c.effort, u + 10.0 * (np.array([0.1, 0.2]) - qa) + 2.0 * 1.0)
    _state(loop, m, q, z, 0.015)  # no sample: extrapolated
    c = loop.update(0.015)
    assert np.allclose(c.info['u'], np.array([1.2, 2.4]) + rate * 0.006)
    assert 'feed-forward' in loop.set_feedforward([1.0], stamp=0.02)
    assert 'feed-forward' in loop.set_feedforward([1.0, 2.0], stamp=0.02, names=['a', 'b'])


def test_feedforward_interpolated_between_samples_published_ahead(five_bar):
    """A source publishing ahead (trajectory_node ``lead``): for a state between two held
    samples the feed-forward is the chord between them (evaluated at stamp + ff_lead), not the
    backward difference of the last two; on an exact stamp too. Checked against a quadratic
    u(t) = t^2: the chord's error is h^2/4 at a state h/2 after a sample (lead 0), the backward
    difference's 3h^2/4."""
    m = five_bar
    q, z = m.reference_q(), np.zeros(m.nq)
    law = FeedforwardPDLaw(m, kp=0.0, kd=0.0)
    h = 0.004
    u = lambda t: np.array([t * t, 2.0 * t * t]) * 1e4  # noqa: E731
    for lead in (0.0, 0.001):
        loop = ControlLoop(law, safe='zero', ff_lead=lead)
        for k in range(6):  # samples at 0 .. 20 ms, all ahead
            loop.set_reference([0.0, 0.0], stamp=k * h)
            loop.set_feedforward(u(k * h), stamp=k * h)
        for ts in (0.008, 0.010):  # on sample 2; between samples 2 and 3
            _state(loop, m, q, z, ts)
            c = loop.update(ts)
            t = ts + lead
            chord = u(0.008) + (u(0.012) - u(0.008)) / h * (t - 0.008)
            assert np.allclose(c.info['u'], chord, rtol=1e-12), (lead, ts)
            exact = u(t)
            assert np.allclose(np.abs(c.info['u'] - exact), np.abs(chord - exact))
    # without a later sample (lock-step, or a source behind the plant): backward difference
    loop = ControlLoop(law, safe='zero')
    for k in range(3):
        loop.set_reference([0.0, 0.0], stamp=k * h)
        loop.set_feedforward(u(k * h), stamp=k * h)
    _state(loop, m, q, z, 0.010)
    c = loop.update(0.010)
    back = u(0.008) + (u(0.008) - u(0.004)) / h * 0.002
    assert np.allclose(c.info['u'], back, rtol=1e-12)
    assert np.abs(back - u(0.010)).max() == pytest.approx(
        3.0 * np.abs(u(0.008) + (u(0.012) - u(0.008)) / 2 - u(0.010)).max(), rel=1e-9
    )


def test_reference_between_held_samples_is_the_quintic_through_them(five_bar):
    """With a sample after the state held too (a source publishing ahead), the law's position,
    velocity and acceleration at the state's stamp come from the quintic matching both samples'
    pos, vel, acc (``interpolate``, off by default): exact for a quintic motion (where the
    2nd-order Taylor series from the earlier sample is off by its jerk terms)."""
    m = five_bar
    q, z = m.reference_q(), np.zeros(m.nq)
    law = Echo(m)
    loop = ControlLoop(law, safe='zero', interpolate=True)
    C = np.array([[0.1, -0.2], [1.0, 0.5], [-3.0, 2.0], [40.0, -25.0], [-300.0, 100.0], [900.0, 700.0]])
    x = lambda t, d=0: sum(
        C[i] * (np.prod(range(i - d + 1, i + 1)) if d else 1) * t ** (i - d)  # noqa: E731
        for i in range(d, 6)
    )
    h = 0.004
    for k in range(4):
        loop.set_reference(x(k * h), x(k * h, 1), x(k * h, 2), stamp=k * h)
    for ts in (0.004, 0.0055, 0.0071):
        _state(loop, m, q, z, ts)
        c = loop.update(ts)
        np.testing.assert_allclose(c.reference.pos, x(ts), rtol=0, atol=1e-12)
        np.testing.assert_allclose(c.reference.vel, x(ts, 1), rtol=0, atol=1e-10)
        np.testing.assert_allclose(c.reference.acc, x(ts, 2), rtol=0, atol=1e-7)
    # only one sample before the state: Taylor from it (2nd order: off by the jerk terms)
    loop2 = ControlLoop(law, safe='zero', max_extrapolation=0.01)
    loop2.set_reference(x(0.0), x(0.0, 1), x(0.0, 2), stamp=0.0)
    _state(loop2, m, q, z, 0.002)
    c = loop2.update(0.002)
    taylor = x(0.0) + x(0.0, 1) * 0.002 + 0.5 * x(0.0, 2) * 0.002**2
    np.testing.assert_allclose(c.reference.pos, taylor, rtol=1e-12)
    assert np.abs(taylor - x(0.002)).max() > 1e-9


def test_samples_arriving_out_of_stamp_order_are_held_in_stamp_order(five_bar):
    """A subscriber matched in the middle of a preview burst gets the burst's tail first and its
    start at the next repeat (irsbot2_t1 in real time: samples 0.208-0.300 s, then
    0-0.204 s). The loop holds samples in stamp order: a state at 0.258 s is interpolated between
    its neighbours 0.256 / 0.260 s, not answered from 0.204 s as a stale reference (the safe hold
    at 10 G); the history drops the oldest stamps, not the first to arrive; the stale text says
    what is held."""
    m = five_bar
    q, z = m.reference_q(), np.zeros(m.nq)
    h, n = 0.004, 76  # 0 .. 0.300 s at 250 Hz
    x = lambda t: np.array([np.sin(3 * t), t * t])  # noqa: E731
    xd = lambda t: np.array([3 * np.cos(3 * t), 2 * t])  # noqa: E731
    xdd = lambda t: np.array([-9 * np.sin(3 * t), 2.0])  # noqa: E731
    order = list(range(52, n)) + list(range(n))  # tail first, then the whole burst again
    loop = ControlLoop(Echo(m), safe='zero', reference_timeout=0.05, interpolate=True, reference_history=100)
    for k in order:
        loop.set_reference(x(k * h), xd(k * h), xdd(k * h), stamp=k * h)
    assert list(loop.refs) == [round(k * h * 1e9) for k in range(n)]
    _state(loop, m, q, z, 0.258)
    c = loop.update(0.258)
    assert not c.safe, c.reason
    assert np.abs(c.reference.pos - x(0.258)).max() < 1e-10
    # (held in insertion order it would come from 0.204 s: 54 ms > 50 ms, stale)
    # the history keeps the newest stamps when it overflows with a late, older sample
    small = ControlLoop(Echo(m), safe='zero', reference_history=4)
    for k in (5, 6, 7, 8, 2):
        small.set_reference(x(k * h), stamp=k * h)
    assert list(small.refs) == [round(k * h * 1e9) for k in (5, 6, 7, 8)]
    # a real gap (samples lost) is reported as one, with what is held
    gap = ControlLoop(Echo(m), safe='zero', reference_timeout=0.05)
    for k in list(range(10)) + list(range(40, 50)):
        gap.set_reference(x(k * h), stamp=k * h)
    _state(gap, m, q, z, 0.1)
    c = gap.update(0.1)
    assert c.safe and 'a gap: the next sample +0.060 s after it' in c.reason, c.reason
    assert '20 samples held, -0.100 .. +0.096 s around it' in c.reason, c.reason
    with pytest.raises(InputError, match='reference_history'):
        ControlLoop(Echo(m), reference_history=1)


def test_overrun_and_latency_accounting(five_bar):
    m = five_bar
    q, z = m.reference_q(), np.zeros(m.nq)
    t = [0.0]

    class Slow(Echo):
        def update(self, state, ref, dt=None):
            t[0] += 0.003  # the law "takes" 3 ms
            return super().update(state, ref, dt)

    loop = ControlLoop(Slow(m), period=0.002, safe='zero', clock=lambda: t[0])
    loop.set_reference([0.0, 0.0], stamp=0.0)
    for k in range(5):
        _state(loop, m, q, z, 0.01 * k, now=0.01 * k)
        loop.update(0.01 * k + 0.0005)
    d = loop.diagnostics()
    assert d['overruns'] == 5 and d['commands'] == 5
    assert d['compute_max'] == pytest.approx(0.003)
    assert d['latency_p50'] == pytest.approx(0.0035)


def test_pidc_through_the_loop_equals_the_controller_in_closed_loop(five_bar):
    """The loop adds nothing to the law but the reference's extrapolation: the five-bar closed
    loop through ControlLoop equals pidc called directly (1e-12) with the reference sampled at
    100 Hz and extrapolated by hand (2nd order) to the 1 kHz states."""
    m = five_bar
    law = make_law(m, 'pidc', kp=100.0, kd=20.0, reference='task', task_frame='tool', task_axes=[0, 2])
    assert isinstance(law, DynamicsController)
    loop = ControlLoop(law, safe='zero')
    pa, pb = ConstrainedPlant(m, dt=1e-3), ConstrainedPlant(m, dt=1e-3)
    x0 = law.theta(pa.q, pa.qd)[0]
    for k in range(300):
        t = k * 1e-3
        if k % 10 == 0:
            t0 = t
            r = x0 + 0.01 * np.array([np.sin(t), 1 - np.cos(t)])
            rv = 0.01 * np.array([np.cos(t), np.sin(t)])
            ra = 0.01 * np.array([-np.sin(t), np.cos(t)])
            loop.set_reference(r, rv, ra, stamp=t)
        _state(loop, m, pa.q, pa.qd, t)
        c = loop.update(t)
        assert not c.safe
        tau = np.zeros(m.nq)
        tau[m.actuated_indices] = c.effort
        pa.step(tau)
        h = t - t0
        pb.step(pidc(m, pb.q, pb.qd, r + rv * h + 0.5 * ra * h * h, rv + ra * h, ra, 100.0, 20.0, theta=law.theta).tau)
    assert np.abs(pa.q - pb.q).max() < 1e-12


def test_make_law_rejects_unknown_laws_and_parameters(five_bar, arm7):
    with pytest.raises(InputError, match='unknown law'):
        make_law(five_bar, 'banana')
    with pytest.raises(InputError, match='unknown parameter'):
        make_law(five_bar, 'pidc', kq=3)
    with pytest.raises(InputError):
        make_law(five_bar, 'feedforward_pd', kp=-1)
    law = make_law(arm7, 'computed_torque', kp=10.0, kd=1.0)
    assert isinstance(law, DynamicsController) and law.coords == list(arm7.joint_names)


def test_reference_at_stamps_exact_interpolated_or_none():
    """The demo's task error takes the reference AT the pose's stamp: the sample of that stamp,
    else the linear interpolation of the two around it (at most max_gap apart), else NaN; the
    nearest sample instead would be half a sample period off (4.7 mm on T1)."""
    from robot_dynamics.control.trajectories import reference_at_stamps

    rt = [0.008, 0.000, 0.004, 0.012, 0.040]  # (unsorted)
    x = lambda t: np.array([2.4 * t, 40.0 * t * t])  # noqa: E731
    rx = [x(t) for t in rt]
    r = reference_at_stamps([0.004, 0.010, 0.0041, 0.020, -0.001], rt, rx, max_gap=0.01)
    np.testing.assert_allclose(r[0], x(0.004), rtol=1e-15)  # exact stamp
    np.testing.assert_allclose(r[1], (x(0.008) + x(0.012)) / 2, rtol=1e-12)  # interpolated
    assert abs(r[1][1] - x(0.010)[1]) == pytest.approx(40.0 * 0.004**2 / 4, rel=1e-9)  # a h^2/8
    np.testing.assert_allclose(r[2][0], 2.4 * 0.0041, rtol=1e-12)  # linear part exact
    assert np.all(np.isnan(r[3])) and np.all(np.isnan(r[4]))  # gap 28 ms; before all
    # default gap: 1.5 x the median spacing, so a timer's jitter is bridged, a missing sample not
    jt = np.array([0.0, 0.0101, 0.0199, 0.0305, 0.0402, 0.0601])  # 100 Hz, jitter; 0.0502 lost
    r = reference_at_stamps([0.005, 0.025, 0.035, 0.05], jt, [x(t) for t in jt])
    assert np.all(np.isfinite(r[:3])) and np.all(np.isnan(r[3]))  # 10-10.6 ms bridged, 19.9 not


def test_command_latency_pairs_each_command_with_the_newest_state_before_it():
    from robot_dynamics.tools.demos import command_latency

    lat = command_latency([1.0, 2.0, 3.0], [0.5, 1.25, 2.0, 2.5, 3.75])
    assert np.allclose(lat, [0.25, 0.0, 0.5, 0.75])  # the command at 0.5 s has no state


def test_a_future_stamp_cannot_lock_the_loop_out(five_bar):
    """One forged state stamped in the future is rejected; the real states after it keep being
    answered (else every later state would be 'older than the last' and rejected)."""
    m = five_bar
    loop = ControlLoop(Echo(m), safe='zero', max_future=0.5)
    q, z = m.reference_q(), np.zeros(m.nq)
    loop.set_reference([1.0, 2.0], stamp=1.0)
    assert _state(loop, m, q, z, 1.00, now=1.0) is None
    why = _state(loop, m, q, z, 100.0, now=1.001)
    assert why and 'in the future' in why and loop.count['rejected_states'] == 1
    for k in range(1, 20):
        t = 1.0 + 0.001 * k
        assert _state(loop, m, q, z, t, now=t) is None
        c = loop.update(t)
        assert c is not None and not c.safe and c.stamp == t
    assert _state(loop, m, q, z, 1.2, now=1.02) is None  # within max_future: accepted
    with pytest.raises(InputError):
        ControlLoop(Echo(m), max_future=-1.0)


def test_node_parameters_build_the_loop_and_the_law(five_bar):
    """The generic node's parameters (control.params, ROS-free) build the same loop and law the
    node runs; safe_effort / hold_here / SamplePairing are what its services and the SEA
    reference topics use."""
    from robot_dynamics.control.loop import SamplePairing
    from robot_dynamics.control.params import CONTROLLER_PARAMS, FLOATS, controller_spec, make_law_from_params

    m = five_bar
    p = {k: v[0] for k, v in controller_spec({'rate': 500.0, 'max_effort': 3.0}).items()}
    p.update({k: float(p[k]) for k in FLOATS})
    p['joints'] = [j for j in p['joints'] if j]
    assert CONTROLLER_PARAMS['rate'][0] == 100.0 and p['rate'] == 500.0
    law = make_law_from_params(m, p)
    loop = ControlLoop.from_params(law, p)
    assert law.name == 'pidc' and loop.period == pytest.approx(2e-3)
    assert np.all(loop.effort_limit <= 3.0)
    q, z = m.reference_q(), np.zeros(m.nq)
    assert loop.hold_here() == (False, 'no joint state yet')
    _state(loop, m, q, z, 1.0)
    np.testing.assert_allclose(
        loop.safe_effort(),
        np.clip(hold_command(m, q, z, 0.0)[[m.joint_index(j) for j in law.joints]], -3.0, 3.0),
        atol=1e-12,
    )
    ok, text = loop.hold_here()
    assert ok and 'holding' in text
    c = loop.update(1.0)
    assert not c.safe and np.abs(c.e).max() < 1e-9  # the reference is where it stands
    pair = SamplePairing(maxlen=2)
    D = np.arange(6.0).reshape(2, 3)
    assert pair.add(0, (1, 2, 3), 5.0) is None
    st, d = pair.add(1, (1, 2, 3), D)
    assert st == 5.0 and d is D
    for k in range(4):  # bounded: the oldest halves dropped
        pair.add(1, (k,), D)
    assert len(pair.boxes[1]) == 2 and pair.add(0, (0,), 1.0) is None


def test_stamped_parts_pair_each_part_with_its_own_sample_in_a_burst():
    """pose/twist/accel of one sample travel on three topics; in a burst (a reference preview)
    the executor may hand over all the poses before all the twists: every part must still be
    paired with its own stamp (the pairing used to keep only the newest part of each kind, so a
    burst lost all but its last sample, and a pose met the previous sample's twist)."""
    sp = StampedParts(3, maxlen=8)
    stamps = list(range(5))
    out = [sp.add(0, s, ('p', s)) for s in stamps] + [sp.add(1, s, ('v', s)) for s in stamps]
    assert all(o is None for o in out)
    done = [sp.add(2, s, ('a', s)) for s in reversed(stamps)]
    assert done == [[('p', s), ('v', s), ('a', s)] for s in reversed(stamps)]
    assert not sp.parts  # nothing left waiting
    # interleaved (the usual order) pairs at the third part of each stamp
    assert sp.add(0, 9, 'p') is None and sp.add(1, 9, 'v') is None and sp.add(2, 9, 'a') == ['p', 'v', 'a']
    # incomplete stamps: at most maxlen wait, the oldest dropped
    for s in range(20):
        sp.add(0, s, s)
    assert len(sp.parts) == 8 and min(sp.parts) == 12
    assert sp.add(1, 3, 'v') is None and sp.add(2, 3, 'a') is None  # stamp 3's pose was dropped
