"""TabulatedD2Feedforward (robot_dynamics/control/d2_feedforward.py): the general 2nd-order ID
route (robot_dynamics.pkm.general) precomputed along a task-space profile and served from the
table, on robots described only by URDF + sidecar (test/data/tripteron_3upu: translational
3-UPU, task x, y, z; test/data/planar_3rpr_xz: planar 3-RPR, task x, z, ry).

* exact at grid times, quintic Hermite between them: <= 1e-6 relative against the direct route
  at mid-points on the 1 ms grid, and 6th-order convergence of u on coarse grids;
* u of the table = the projection engine's inverse dynamics (1e-8) on the tree coordinates q,
  qd, qdd of the table;
* periodic wrap-around, rest-to-rest hold, the 1 kHz closed loop of test/data/tripteron_3upu.yaml
  (its initial positions and gains) with the rigid plant;
* bad input raises the package's errors."""

import suite_paths
import os

import numpy as np
import pytest
import yaml

import robot_dynamics as rd
from robot_dynamics.control.d2_feedforward import TabulatedD2Feedforward, hermite5
from robot_dynamics.errors import InputError
from robot_dynamics.pkm.recursive import PKMSingularityError
from robot_dynamics.control.trajectories import Sinusoid, make_profile

HERE = suite_paths.TEST_DIR
DATA = os.path.join(HERE, 'data')
CIRCLE = dict(center=[0.0, 0.0, 0.4], radius=0.02, frequency=0.5, e1=[1.0, 0.0, 0.0], e2=[0.0, 1.0, 0.0])


@pytest.fixture(scope='module')
def upu():
    return rd.load_model(os.path.join(DATA, 'tripteron_3upu.urdf'))


@pytest.fixture(scope='module')
def table(upu):
    return TabulatedD2Feedforward(upu, make_profile('circle', **CIRCLE), dt=1e-3)


def _rel(a, b):
    return np.max(np.abs(np.asarray(a) - np.asarray(b))) / np.max(np.abs(b))


def _fields(r):
    return (r.u, r.ud, r.udd, r.theta_a, r.q, r.qd)


def test_hermite5_exact_for_quintics():
    rng = np.random.default_rng(3)
    c = rng.normal(size=6)
    P = [np.polynomial.Polynomial(c).deriv(k) for k in range(4)]
    t0, h, s = 0.3, 0.07, 0.37
    y0 = np.array([P[k](t0) for k in range(3)])
    y1 = np.array([P[k](t0 + h) for k in range(3)])
    out = hermite5(y0, y1, h, s, order=3)
    np.testing.assert_allclose(out, [P[k](t0 + s * h) for k in range(4)], rtol=1e-11)


def test_table_exact_at_grid_and_interpolated_at_midpoints(table):
    assert table.kind == 'periodic' and table.T == pytest.approx(2.0) and table.n == 2000
    assert table.h == pytest.approx(1e-3, abs=1e-15) and table.joints == ['leg1_p', 'leg2_p', 'leg3_p']
    for k in (0, 137, 1000, 1999):
        a, b = table.reference(k * 1e-3), table.direct(k * 1e-3)
        np.testing.assert_array_equal(a.u, table.u[k])  # served from the row itself
        for x, y in zip(_fields(a), _fields(b)):
            assert _rel(x, y) < 1e-12, (k, _rel(x, y))
    worst = np.zeros(6)
    for k in range(3, 2000, 97):  # mid-points
        t = (k + 0.5) * 1e-3
        a, b = table.reference(t), table.direct(t)
        worst = np.maximum(worst, [_rel(x, y) for x, y in zip(_fields(a), _fields(b))])
    print(f'\nmid-point error (u, ud, udd, theta_a 0..4, q, qd) rel. max {worst}')
    assert np.all(worst < 1e-6), worst


def test_interpolation_converges_at_sixth_order(upu):
    prof = make_profile('circle', **CIRCLE)
    err = []
    for dt in (0.1, 0.05):
        tb = TabulatedD2Feedforward(upu, prof, dt=dt)
        e = np.zeros(3)
        for t in (np.arange(0, tb.n, 3) + 0.5) * tb.h:
            a, b = tb.reference(t), tb.direct(t)
            e = np.maximum(e, [_rel(a.u, b.u), _rel(a.udd, b.udd), _rel(a.theta_a[0], b.theta_a[0])])
        err.append(e)
    ratio = err[0] / err[1]
    print(f'\nhalving h: error ratio u {ratio[0]:.1f} (h^6: 64), udd {ratio[1]:.1f} (h^4: 16), theta_a {ratio[2]:.1f}')
    assert ratio[0] > 40 and ratio[1] > 10 and ratio[2] > 40, ratio
    assert err[1][0] < 1e-8


def test_table_u_equals_projection_engine(upu, table):
    p = table.pkm
    z = np.zeros(upu.nq)
    for k in (0, 333, 1500):
        r = table.reference(k * 1e-3)
        qdd = p.tree_q(table.theta[k, 2], z)
        assert np.max(np.abs(rd.loop_residual(upu, r.q))) < 1e-10
        pid = rd.projected_inverse_dynamics(upu, r.q, r.qd, u=qdd, actuated=table.joints)
        assert pid.controllable and pid.residual < 1e-8
        assert _rel(r.u, pid.tau_actuated) < 1e-8, (k, r.u, pid.tau_actuated)
        # the platform frame follows the circle
        Tp = np.asarray(rd.kinematics.frame_placement(upu, r.q, 'platform'))
        np.testing.assert_allclose(Tp[:3, 3], make_profile('circle', **CIRCLE)(k * 1e-3, order=0)[0], atol=1e-10)


def test_periodic_wrap_around(table):
    for t in (0.25, 0.2505, 1.9996):
        a, b = table.reference(t), table.reference(t + 2 * table.T)
        for x, y in zip(_fields(a), _fields(b)):
            np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-12)
    # the last interval interpolates towards row n (= t = T = t 0)
    a, b = table.reference(1.9995), table.direct(1.9995)
    assert _rel(a.u, b.u) < 1e-6


def test_rest_to_rest_waypoints_on_planar_3rpr():
    m = rd.load_model(os.path.join(DATA, 'planar_3rpr_xz.urdf'))
    from robot_dynamics.pkm.general import general_pkm

    x0 = general_pkm(m).x_ref  # (x, z, ry)
    wp = np.concatenate([x0, x0 + [0.03, -0.02, 0.1], x0])
    tb = TabulatedD2Feedforward(m, make_profile('waypoints', waypoints=wp, durations=[0.4, 0.3], n=3), dt=1e-3)
    assert tb.kind == 'rest' and tb.n == 700
    for t in (0.1005, 0.4, 0.5555):
        a, b = tb.reference(t), tb.direct(t)
        assert _rel(a.u, b.u) < 1e-6 and _rel(a.theta_a, b.theta_a) < 1e-6
    end, later = tb.reference(0.7), tb.reference(3.0)  # held at rest after the move
    np.testing.assert_array_equal(later.u, end.u)
    assert np.abs(later.ud).max() < 1e-9 * np.abs(later.u).max() and np.abs(later.theta_a[1:]).max() < 1e-10
    z = np.zeros(3)
    from robot_dynamics.pkm.general import inverse_dynamics_d2_general

    np.testing.assert_allclose(later.u, inverse_dynamics_d2_general(m, x0, z, z, z, z).u, rtol=1e-9)


def test_config_closed_loop_offline(upu):
    """The 1 kHz loop of test/data/tripteron_3upu.yaml without ROS: ConstrainedPlant (rigid,
    the sim_node plant) from the config's initial positions, ZOH of u + kp e + kd ed with the
    config's gains. The plant starts at rest on the moving circle: transient peak 2.8e-4 m (leg
    error), 2.7e-7 m after 0.3 s."""
    from robot_dynamics.plants.rigid import ConstrainedPlant

    cfg = yaml.safe_load(open(os.path.join(DATA, 'tripteron_3upu.yaml')))['nodes']
    tp = cfg['trajectory_node']['parameters']
    prof = make_profile('circle', **{k: tp[k] for k in ('center', 'radius', 'frequency', 'e1', 'e2')})
    cp = cfg['dynamics_node']['parameters']
    ff = TabulatedD2Feedforward(upu, prof, dt=tp['table_step'], kp=cp['kp'], kd=cp['kd'])
    q0 = np.asarray(cfg['sim_node']['parameters']['initial_positions'])
    np.testing.assert_allclose(q0, ff.reference(0.0).q, atol=1e-12)  # the config's q0 is the motion's
    pl = ConstrainedPlant(upu, q0, dt=1e-3)
    E = []
    for k in range(1000):
        tau, _, e, _ = ff(k * 1e-3, pl.q, pl.qd)
        E.append(np.abs(e).max())
        pl.step(tau)
    E = np.array(E)
    print(f'\noffline loop: leg error max {E.max():.3e} m, after 0.3 s {E[300:].max():.3e} m')
    assert E.max() < 5e-4 and E[300:].max() < 1e-6, (E.max(), E[300:].max())
    assert np.abs(rd.loop_residual(upu, pl.q)).max() < 1e-9


def test_bad_input(upu):
    circ = make_profile('circle', **CIRCLE)
    with pytest.raises(InputError, match='columns'):
        TabulatedD2Feedforward(upu, make_profile('waypoints', waypoints=[0, 0.4, 0.01, 0.4], durations=[1.0], n=2))
    with pytest.raises(InputError, match='does not repeat'):
        TabulatedD2Feedforward(upu, circ, period=1.5, dt=0.01)
    with pytest.raises(InputError, match='common frequency'):
        TabulatedD2Feedforward(upu, Sinusoid([0.01, 0.01, 0.01], [0.5, 0.7, 0.5], offset=[0, 0, 0.4]))
    with pytest.raises(InputError, match='dt'):
        TabulatedD2Feedforward(upu, circ, dt=0.0)
    with pytest.raises(InputError, match='either'):
        TabulatedD2Feedforward(upu, circ, period=2.0, duration=2.0)
    with pytest.raises(InputError, match='not at rest'):
        TabulatedD2Feedforward(upu, circ, duration=1.0, dt=0.01)
    with pytest.raises(PKMSingularityError, match='jump between grid samples'):
        TabulatedD2Feedforward(upu, make_profile('circle', **{**CIRCLE, 'radius': 0.08}), dt=0.5)
    gs = rd.load_model(os.path.join(os.path.dirname(HERE), 'urdf', 'gough_stewart.urdf'))
    with pytest.raises(InputError, match='6-DOF'):
        TabulatedD2Feedforward(gs, circ)
    tb = TabulatedD2Feedforward(upu, circ, dt=0.05)
    with pytest.raises(InputError, match='finite'):
        tb.reference(np.nan)


def test_from_node_parameters(upu, table):
    """trajectory_node's flat parameters (the config's) build the same table; defaults: the
    circle around the reference configuration's task."""
    from robot_dynamics.control.d2_feedforward import tabulated_d2_defaults, tabulated_d2_from_params

    d = tabulated_d2_defaults(upu)
    np.testing.assert_allclose(d['center'], [0.0, 0.0, 0.4], atol=1e-12)
    tb = tabulated_d2_from_params(upu, 'circle', {**CIRCLE, 'table_step': 0.001})
    np.testing.assert_array_equal(tb.u, table.u)
    np.testing.assert_array_equal(tb.theta, table.theta)
    rest = tabulated_d2_from_params(
        upu, 'waypoints', {'waypoints': [0.0, 0.0, 0.4, 0.01, 0.0, 0.39], 'durations': [0.2], 'table_step': 0.01}
    )
    assert rest.kind == 'rest' and rest.n == 20
    with pytest.raises(InputError, match='profile'):
        tabulated_d2_from_params(upu, 'roll', {})
