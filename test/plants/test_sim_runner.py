"""The simulator's loop without ROS (:class:`robot_dynamics.plants.runner.SimRunner`): fixed
steps in wall-clock time with slip, command rejection, hold on timeout, external-load bounds,
refused steps and the bounded event ring."""

import numpy as np
import pytest

from robot_dynamics.control import hold_command
from robot_dynamics.errors import InputError, RobotDynamicsError
from robot_dynamics.plants.registry import make_plant
from robot_dynamics.plants.runner import SimRunner

from projection_helpers import model


def runner(name='four_bar', **kw):
    m = model(name)
    kw.setdefault('rate', 1000.0)
    kw.setdefault('publish_rate', 250.0)
    return SimRunner(m, make_plant('rigid', m, m.reference_q(), dt=1.0 / kw['rate']), list(m.actuated), **kw)


def test_real_time_steps_are_exact_and_time_slips_when_behind():
    """Exact 1/rate steps for the wall time behind (a state whenever at least one step was
    taken: the timer's phase against the plant clock is arbitrary, so rounding down to whole
    publish periods would add up to a period of delay); beyond max_catchup periods time slips."""
    r = runner(max_catchup=3)
    r.start(100.0)
    assert r.tick(100.0, 0.0) == 0  # nothing behind yet
    assert r.tick(100.0105, 0.0) == 10  # 10.5 ms behind: 10 whole 1 ms steps
    assert r.plant.t == pytest.approx(0.010, abs=1e-12) and r.slip == 0.0
    assert r.tick(101.0105, 0.0) == 12  # 1 s behind: at most 3 x 4 steps
    assert r.plant.t == pytest.approx(0.022, abs=1e-12)
    assert r.slip == pytest.approx(1.0105 - 0.022 - 0.0005, abs=1e-6)  # slipped, not stepped
    assert r.tick(101.0115, 0.0) == 1  # then real time again from there
    assert r.update_rtf(101.0) is None and r.update_rtf(102.0) is not None


def test_a_due_step_waits_for_the_answer_to_the_last_state_while_the_controller_keeps_pace():
    """wait_for_command: a publish period is integrated with the command answering the state
    published before it; when that command has not come, the step waits for it (the node
    ticks again from its command callback) or for the next tick, and a step taken without it
    is counted. A controller that stopped keeping pace is not waited for. Simulated time stays
    on the wall clock throughout (no slip)."""
    r = runner(wait_for_command=True)  # 1 kHz, 4 steps per published state
    p = len(r.joints)
    r.start(0.0)
    r.command([0.0] * p, 0.0)
    assert r.tick(0.004, 0.004) == 4 and not r.deferred  # answered: stepped at once
    assert r.tick(0.008, 0.008) == 0 and r.deferred  # no answer yet: the step waits
    r.command([0.1] * p, 0.0085)
    assert r.tick(0.0085, 0.0085) == 4 and not r.deferred  # ... and is taken when it comes
    assert r.counts['late_commands'] == 0 and r.plant.t == pytest.approx(0.008, abs=1e-12)
    np.testing.assert_allclose(r.applied[r.idx], 0.1)  # with that command
    assert r.tick(0.012, 0.012) == 0 and r.deferred  # no answer: wait ...
    assert r.tick(0.016, 0.016) == 8  # ... at most until the next tick
    assert r.counts['late_commands'] == 1 and r.counts['ticks'] == 3
    assert r.tick(0.020, 0.020) == 4  # not kept pace: no wait
    assert r.counts['late_commands'] == 2 and r.slip == 0.0
    r.command([0.0] * p, 0.0201)
    assert r.tick(0.024, 0.024) == 4  # answered again
    assert r.tick(0.028, 0.028) == 0 and r.deferred  # kept pace: waits again
    r2 = runner()  # (the default)
    r2.start(0.0)
    r2.command([0.0] * p, 0.0)
    assert r2.tick(0.004, 0.004) == 4 and r2.tick(0.008, 0.008) == 4  # never waits
    assert r2.counts['late_commands'] == 1 and not r2.deferred


def test_whole_periods_keep_the_states_on_the_publish_grid():
    """whole_periods: only whole publish periods are stepped (the states stay on the publish
    grid, each command is held exactly one period); the rest waits for the next tick; slip and
    catch-up as without."""
    r = runner(whole_periods=True, max_catchup=5)  # 1 kHz, 4 steps per published state
    r.start(100.0)
    assert r.tick(100.0039, 0.0) == 0  # 3.9 ms: not a whole period yet
    assert r.tick(100.0105, 0.0) == 8  # 10.5 ms: two periods
    assert r.plant.t == pytest.approx(0.008, abs=1e-12)
    assert r.tick(100.0119, 0.0) == 0 and r.tick(100.0161, 0.0) == 8  # 3.9 ms, then 8.1 ms due
    assert r.tick(101.0, 0.0) == 20 and r.slip > 0.9  # far behind: max_catchup, then slip
    assert round(r.plant.t * 1000) % 4 == 0 and r.plant.t == pytest.approx(0.036, abs=1e-12)


def test_commands_rejected_and_hold_after_timeout():
    """Malformed commands never reach the plant; a valid one is held for 3 periods of the
    expected command rate (default publish_rate), then the hold; command_timeout [s] caps it."""
    r = runner(hold_damping=0.5)  # 250 Hz states: 12 ms
    assert r.timeout == pytest.approx(3 / 250.0)
    p = len(r.joints)
    assert r.command([1.0] * (p + 1), 0.0)[1] and r.command([np.nan] * p, 0.0)[1]
    assert r.counts['rejected_commands'] == 2 and r.cmd is None
    assert r.command([0.3] * p, 1.0) == (0, None)  # real time: no step on a command
    tau = r.effort(1.0 + 2.9 / 250.0)  # within 3 periods: the command
    assert not r.holding and np.allclose(tau[r.idx], 0.3)
    tau = r.effort(1.0 + 3.1 / 250.0)  # 3.1 periods: hold
    assert r.holding
    np.testing.assert_allclose(tau, hold_command(r.model, r.plant.q, r.plant.qd, 0.5), atol=1e-12)
    r.forced_hold = True
    r.command([0.3] * p, 2.0)
    r.effort(2.0)
    assert r.holding
    assert runner(lockstep=True).command([0.0] * p, 0.0) == (4, None)  # one publish period
    assert runner(command_rate=50.0, command_timeout_periods=2.0).timeout == pytest.approx(0.04)
    assert runner(command_timeout=0.005).timeout == pytest.approx(0.005)  # the cap
    assert runner(command_timeout=1.0).timeout == pytest.approx(0.012)  # never longer
    with pytest.raises(InputError):
        runner(command_timeout_periods=0.0)


def test_command_age_is_taken_on_the_wall_clock_in_real_time():
    """A node on the plant clock sees /clock in steps (every 4 ms at clock_rate 250 Hz): a
    1 kHz command 1 ms old on the wall clock may look 4 ms old on that clock. Real time judges
    the age on the wall clock; lock-step on plant time."""
    r = runner(publish_rate=1000.0)  # 3 ms
    p = len(r.joints)
    r.command([0.1] * p, now=0.000, wall=50.000)
    r.effort(0.004, wall=50.001)  # node clock 4 ms on, wall 1 ms: fresh
    assert not r.holding
    r.effort(0.004, wall=50.0035)  # 3.5 ms on the wall clock: hold
    assert r.holding and r.hold_after == pytest.approx(0.0035)
    ls = runner(publish_rate=1000.0, lockstep=True)
    ls.command([0.1] * p, now=0.000, wall=50.000)
    ls.effort(0.004, wall=50.001)  # lock-step: plant time decides
    assert ls.holding


def test_commands_and_hold_are_saturated_at_the_joint_limits():
    """The boundary enforces the description (as ros2_control's joint limits for an effort
    interface): |effort| <= the URDF effort limit (four_bar crank: 20 N m), no effort pushing
    further past the velocity limit (20 rad/s) or a position limit; the hold is clipped too;
    each is counted."""
    r = runner()
    m = r.model
    i = r.idx[0]
    assert m.effort_limit[i] == 20.0 and m.velocity_limit[i] == 20.0
    r.command([500.0], 0.0)  # 25 x the limit
    np.testing.assert_allclose(r.effort(0.0)[i], 20.0)
    r.command([-500.0], 0.0)
    np.testing.assert_allclose(r.effort(0.0)[i], -20.0)
    assert r.counts['clipped_commands'] == 2
    r.command([5.0], 0.0)
    assert r.effort(0.0)[i] == 5.0 and r.counts['clipped_commands'] == 2  # within: untouched
    r.plant.qd[i] = 25.0  # beyond the velocity limit
    assert r.effort(0.0)[i] == 0.0  # no further push ...
    r.command([-5.0], 0.0)
    assert r.effort(0.0)[i] == -5.0  # ... braking stays allowed
    r.plant.qd[i] = 0.0
    # the hold: clipped as well (a hold needing more than the limit gets the limit)
    r2 = runner(hold_damping=1e4)
    r2.plant.qd[r2.idx[0]] = 1.0  # 1e4 N m s/rad x 1 rad/s of damping
    tau = r2.effort(0.0)
    assert r2.holding and abs(tau[r2.idx[0]]) == pytest.approx(20.0)
    assert r2.counts['clipped_holds'] == 1
    # a stepped plant never sees more than the limit: 200 steps of a 25x command
    r3 = runner()
    r3.start(0.0)
    r3.command([500.0], 0.0)
    for k in range(1, 51):
        r3.command([500.0], k * 4e-3)
        r3.tick(k * 4e-3, k * 4e-3)
        assert abs(r3.applied[r3.idx[0]]) <= 20.0
        assert r3.plant.qd[r3.idx[0]] <= 20.0 + 20.0 * 4e-3 * 1e3  # no push beyond the limit


def test_hydraulic_valve_commands_are_saturated_at_the_valve_limit():
    """The hydraulic plant takes valve voltages: its boundary is the valve's max_input (10 V),
    not an effort limit (no velocity rule on a voltage)."""
    from robot_dynamics.plants.registry import make_plant

    m = model('hydraulic_boom')
    plant = make_plant('hydraulic', m, m.reference_q(), dt=1e-3)
    r = SimRunner(m, plant, list(m.actuated), rate=1000.0, publish_rate=1000.0, hold='zero')
    np.testing.assert_allclose(r.command_limit, 10.0)
    r.command([250.0] * len(r.joints), 0.0)
    np.testing.assert_allclose(r.effort(0.0)[r.idx], 10.0)
    assert r.counts['clipped_commands'] == 1 and not r.state_limits


def test_external_wrench_bounds_and_timeout():
    r = runner(max_external_force=50.0, max_external_moment=5.0, external_wrench_timeout=0.5)
    assert 'unknown frame' in r.external_wrench('nope', np.ones(6), 0.0)
    assert 'NaN' in r.external_wrench('coupler', [np.nan, 0, 0, 0, 0, 0], 0.0)
    assert r.external_wrench('coupler', [3e5, 0, 0, 0, 0, 40.0], 0.0) is None
    w, _ = r.plant.external_wrenches['coupler']
    np.testing.assert_allclose(w, [50.0, 0, 0, 0, 0, 5.0])  # clamped to the bounds
    assert r.counts['clamped_wrenches'] == 1 and r.counts['rejected_wrenches'] == 2
    r.drop_stale_loads(0.4)
    assert 'coupler' in r.plant.external_wrenches
    r.drop_stale_loads(0.6)
    assert r.plant.external_wrenches == {}


def test_absurd_load_never_makes_the_plant_non_finite():
    """The issue's 3e5 N on the four-bar coupler: clamped (default bound 100 x the robot's
    weight), and whatever happens the published state stays finite."""
    r = runner()
    r.external_wrench('coupler', [3e5, 3e5, 0, 0, 0, 0], 0.0)
    assert r.counts['clamped_wrenches'] == 1
    r.start(0.0)
    for k in range(1, 301):
        r.tick(k * 4e-3, k * 4e-3)
        assert np.all(np.isfinite(r.plant.q)) and np.all(np.isfinite(r.plant.qd))


class _Breaking:
    """A plant whose step fails from a given time on (optionally also under the hold)."""

    def __init__(self, plant, fail_at, hold_fails=False):
        # hold_fails: False | True (always) | 'moving' (only while the velocities are not zero)
        self.inner, self.fail_at, self.hold_fails = plant, fail_at, hold_fails

    def __getattr__(self, k):
        return getattr(self.inner, k)

    def step(self, tau):
        held = not np.any(tau[self.inner.model.actuated_indices] == 7.0)
        hold_fails = self.hold_fails if self.hold_fails != 'moving' else bool(np.any(self.inner.qd != 0))
        if self.inner.t >= self.fail_at and (not held or hold_fails):
            self.inner.q = self.inner.q * np.nan  # as a broken integrator would
            raise RobotDynamicsError('non-finite values')
        return self.inner.step(tau)


@pytest.mark.parametrize('hold_fails', [False, True, 'moving'])
def test_failing_step_is_refused_and_the_plant_holds(hold_fails):
    """A failing step is undone and the plant holds; when the hold fails too: an emergency stop
    (velocities zeroed at the last good configuration) and the hold from rest; when that fails
    as well, frozen until reset."""
    r = runner(publish_rate=1000.0)
    r.plant = _Breaking(r.plant, 0.0025, hold_fails)
    p = len(r.joints)
    r.command([7.0] * p, 0.0)
    assert [r.advance(1, 0.0) for _ in range(3)] == [1, 1, 1]
    q_before = r.plant.q.copy()
    taken = r.advance(1, 0.0)  # the 4th step fails
    assert r.counts['refused_steps'] == {False: 1, True: 3, 'moving': 2}[hold_fails]
    assert r.counts['emergency_stops'] == (1 if hold_fails else 0)
    assert np.all(np.isfinite(r.plant.q))
    if hold_fails == 'moving':
        assert taken == 1 and r.holding and not r.frozen  # stopped, then held from rest
        assert np.abs(r.plant.q - q_before).max() < 1e-3
    elif hold_fails:
        assert taken == 0 and r.frozen and r.diagnostics()['safe']
        np.testing.assert_array_equal(r.plant.q, q_before)
        assert r.advance(1, 0.0) == 0  # stays frozen until reset
        r.reset()
        assert not r.frozen
    else:
        assert taken == 1 and r.holding and r.cmd is None  # stepped on hold instead


def test_event_ring_is_bounded():
    r = runner(max_events=50)
    r.plant.events.extend(range(200))
    r.advance(1, 0.0)
    assert len(r.plant.events) <= 50


def test_bad_configuration_is_an_input_error():
    for kw in (
        dict(publish_rate=2000.0),
        dict(hold='banana'),
        dict(max_catchup=0),
        dict(external_wrench_reference='sideways'),
        dict(external_wrench_timeout=-1.0),
    ):
        with pytest.raises(InputError):
            runner(**kw)


def test_a_step_that_leaves_the_assembly_mode_is_refused_and_the_plant_holds():
    """An absurd command (1e4 N m on the four-bar crank, the boundary's saturation lifted; measured: a branch_jump event within
    200 steps) must not carry the plant into another assembly: the step is undone, the plant
    holds from where it was (loop closed, velocities of the state before the jump); with
    ``refuse_assembly_jumps=False`` the same command does jump and nothing is refused (the
    check can fail)."""
    from robot_dynamics.algorithms.constraints import loop_residual
    from robot_dynamics.plants.runner import REFUSED_EVENTS

    out = {}
    for refuse in (True, False):
        r = runner(publish_rate=1000.0, refuse_assembly_jumps=refuse, hold_damping=5.0)
        r.command_limit[:], r.state_limits = np.inf, False  # (the boundary's saturation lifted:
        p = len(r.joints)  # the absurd command reaches the plant)
        jumped = held = 0
        for k in range(200):
            r.command([1e4 * np.sin(0.7 * k)] * p, k * 1e-3)
            before = r.plant.q.copy()
            n_ev = len(r.plant.events)
            r.advance(1, k * 1e-3)
            new = [e.kind for e in r.plant.events[n_ev:]]
            jumped += any(kd in REFUSED_EVENTS for kd in new)
            if refuse and r.counts['refused_steps'] and r.holding:
                held += 1
            assert np.all(np.isfinite(r.plant.q)) and np.all(np.isfinite(before))
        out[refuse] = (jumped, r.counts['refused_steps'], held, np.abs(loop_residual(r.model, r.plant.q)).max())
    assert out[False][0] > 0 and out[False][1] == 0, out  # it jumps when allowed
    assert out[True][1] > 0 and out[True][2] > 0, out  # refused and held
    assert out[True][3] < 1e-8, out


def test_decimator_and_runner_from_params():
    """Decimator: at most one output per period of its time axis, a reset always due; the node's
    parameters build the runner (hydraulic: hold 'gravity' becomes 'zero', reported)."""
    from robot_dynamics.ros.decimator import Decimator
    from robot_dynamics.plants.runner import runner_from_params, sim_params

    d = Decimator.from_rate(250.0)
    out = [t for t in np.arange(0.0, 0.02, 1e-3) if d.due(t)]
    np.testing.assert_allclose(out, [0.0, 0.004, 0.008, 0.012, 0.016], atol=1e-12)
    assert d.due(0.0005)  # time went backwards: due
    assert all(Decimator.from_rate(0).due(t) for t in (0.0, 0.0, 1e-9))
    m = model('four_bar')
    P = {k: v[0] for k, v in sim_params(m).items()}
    r = runner_from_params(m, dict(P, rate=500.0, publish_rate=250.0))
    assert r.rate == 500.0 and r.substeps == 2 and r.hold_mode == 'gravity'
    logged = []
    import robot_dynamics as rd

    hb = rd.load_model(rd.data_path('urdf/hydraulic_boom.urdf'))
    P = {k: v[0] for k, v in sim_params(hb).items()}
    r = runner_from_params(hb, dict(P, plant='hydraulic'), log=lambda lv, text, key=None: logged.append(text))
    assert r.hold_mode == 'zero' and 'valves closed' in logged[0]


@pytest.mark.parametrize(
    'urdf,kind',
    [('urdf/irsbot2.urdf', 'rigid'), ('urdf/hydraulic_boom.urdf', 'hydraulic'), ('urdf/planar_3rrr_sea.urdf', 'sea')],
)
def test_prepare_leaves_no_trace(urdf, kind):
    """prepare() (sim_node loads the plant's kernels before its clock runs) takes a step under
    the hold and undoes it: the runs after it equal a runner that was never prepared, bit for
    bit (rigid, hydraulic and SEA plants)."""
    import robot_dynamics as rd
    from robot_dynamics.plants.runner import runner_from_params, sim_params

    m = rd.load_model(rd.data_path(urdf))
    P = {k: v[0] for k, v in sim_params(m).items()}
    P.update(plant=kind, publish_rate=1000.0, hold='zero' if kind == 'hydraulic' else 'gravity')
    runs = []
    for prep in (False, True):
        r = runner_from_params(m, dict(P))
        if prep:
            assert r.prepare() >= 0.0
        assert r.plant.t == 0.0
        p = len(r.joints)
        for k in range(5):
            r.command([0.3 * (k + 1)] * p if kind == 'hydraulic' else [0.0] * p, 0.0)
            r.advance(1, 0.0)
        runs.append(
            (
                r.plant.t,
                np.array(r.plant.q, copy=True),
                np.array(r.plant.qd, copy=True),
                len(getattr(r.plant, 'events', []) or []),
            )
        )
    assert runs[0][0] == runs[1][0] and runs[0][3] == runs[1][3]
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
    np.testing.assert_array_equal(runs[0][2], runs[1][2])


def test_state_to_command_time_measured_at_the_plant():
    """Real time: the wall time from a state's publication to the first command after it is the
    loop's latency as the plant sees it (answer_p50/p99/max in the diagnostics); a second
    command before the next state does not count again, and nothing is reported before."""
    sim = runner('five_bar', publish_rate=1000.0)
    u = [0.0] * len(sim.joints)
    sim.command(u, 0.0, 10.0)  # no state published yet: nothing measured
    assert 'answer_p99' not in sim.diagnostics()
    for k, delay in enumerate([0.0004, 0.0006, 0.0030]):
        sim.published(11.0 + k)
        sim.command(u, 0.0, 11.0 + k + delay)
        sim.command(u, 0.0, 11.0 + k + delay + 0.0005)  # not an answer to a new state
    d = sim.diagnostics()
    assert list(sim.answers) == pytest.approx([0.0004, 0.0006, 0.0030])
    assert d['answer_p50'] == pytest.approx(0.0006) and d['answer_max'] == pytest.approx(0.0030)
