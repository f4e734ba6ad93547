"""Compiled SEA plant step / derivative (robot_dynamics.plants.sea kernels) against the previous
numpy route kept as the reference (``_derivative_reference``, ``_step_reference``): equal to
round-off at random states, same errors outside the workspace and on non-finite input."""

import suite_paths
import os

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.errors import InputError
from robot_dynamics.pkm.planar_sea import Planar3RRRParams
from robot_dynamics.pkm.recursive import PKMSingularityError
from robot_dynamics.plants.registry import make_plant
from robot_dynamics.plants.sea import SEAPlant

HERE = suite_paths.TEST_DIR
URDF = os.path.join(HERE, '..', 'urdf', 'planar_3rrr_sea.urdf')


@pytest.fixture(scope='module')
def model():
    return rd.load_model(URDF)


def _random_states(plant, rng, n):
    for _ in range(n):
        p = plant.p + rng.uniform(-0.03, 0.03, 2)
        pd = rng.uniform(-0.5, 0.5, 2)
        qm = plant.pkm.ik(p)[:, 0] + rng.uniform(-0.1, 0.1, 3)
        qdm = rng.uniform(-2, 2, 3)
        yield np.concatenate([p, pd, qm, qdm]), rng.uniform(-1, 1, 3)


def _rel(a, b):
    return np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300)


@pytest.mark.parametrize('params', [None, Planar3RRRParams(damping=0.05, motor_damping=0.01)])
def test_derivative_matches_reference(model, params):
    plant = SEAPlant(model, params=params)
    rng = np.random.default_rng(3)
    for x, tau in _random_states(plant, rng, 50):
        a, b = plant.derivative(x, tau), plant._derivative_reference(x, tau)
        assert _rel(a, b) < 1e-12
        assert _rel(a[2:4], b[2:4]) < 1e-12  # the link acceleration on its own


def test_step_matches_reference(model):
    a = make_plant('sea', model, model.reference_q(), dt=1e-3)
    b = make_plant('sea', model, model.reference_q(), dt=1e-3)
    rng = np.random.default_rng(4)
    for k in range(200):
        tau = rng.uniform(-0.5, 0.5, 3)
        ia, ib = a.step(tau), b._step_reference(tau)
        assert ia.t == ib.t
        for u, v in ((a.p, b.p), (a.pd, b.pd), (a.qm, b.qm), (a.qdm, b.qdm)):
            assert np.allclose(u, v, rtol=1e-11, atol=1e-13)
        assert np.allclose(ia.q, ib.q, rtol=1e-11, atol=1e-13)
        assert np.allclose(ia.qd, ib.qd, rtol=1e-11, atol=1e-12)
    # substeps and an explicit dt
    c = make_plant('sea', model, model.reference_q(), dt=1e-3, substeps=3)
    d = make_plant('sea', model, model.reference_q(), dt=1e-3, substeps=3)
    for k in range(20):
        tau = rng.uniform(-0.5, 0.5, 3)
        c.step(tau, dt=2e-3)
        d._step_reference(tau, dt=2e-3)
        assert np.allclose(c.true_q, d.true_q, rtol=1e-11, atol=1e-13)
    assert c.t == d.t


def test_true_state_matches_planar_id(model):
    plant = make_plant('sea', model, model.reference_q(), dt=1e-3)
    rng = np.random.default_rng(5)
    for x, _ in _random_states(plant, rng, 20):
        plant.set_state(x[:2], x[2:4], x[4:7], x[7:10])
        th = plant.pkm.inverse_dynamics_d2(np.vstack([x[:2], x[2:4], np.zeros((3, 2))])).theta
        assert np.allclose(plant.true_q[plant.i_arm], th[0, :, 0], rtol=0, atol=1e-14)
        assert np.allclose(plant.true_q[plant.i_elb], th[0, :, 1], rtol=0, atol=1e-14)
        assert np.allclose(plant.true_qd[plant.i_arm], th[1, :, 0], rtol=1e-13, atol=1e-15)
        assert np.allclose(plant.true_qd[plant.i_elb], th[1, :, 1], rtol=1e-13, atol=1e-15)


def test_errors_as_reference(model):
    plant = make_plant('sea', model, model.reference_q(), dt=1e-3)
    x = np.concatenate([plant.p, plant.pd, plant.qm, plant.qdm])
    far = x.copy()
    far[:2] = [1.0, 1.0]
    with pytest.raises(PKMSingularityError):
        plant.derivative(far, np.zeros(3))
    bad = x.copy()
    bad[2] = np.nan
    with pytest.raises(InputError):
        plant.derivative(bad, np.zeros(3))
    plant.set_state(plant.p, [0.0, 0.0], plant.qm, plant.qdm)
    with pytest.raises(PKMSingularityError):
        plant.set_state([1.0, 1.0], [0.0, 0.0], plant.qm, plant.qdm)


def test_controller_matches_reference(model):
    from robot_dynamics.control.flatness_sea import SEAFlatnessController
    from robot_dynamics.control.trajectories import SinSquaredJerk

    plant = make_plant('sea', model, model.reference_q(), dt=1e-3)
    rng = np.random.default_rng(6)
    for params in (Planar3RRRParams(), Planar3RRRParams(motor_damping=0.02, stiffness=50.0)):
        ctrl = SEAFlatnessController(model, params=params, poles=25.0, lambda_poles=35.0)
        move = SinSquaredJerk(plant.p, plant.p + np.array([0.02, -0.01]), 0.3)
        for x, _ in _random_states(plant, rng, 40):
            yd = move(rng.uniform(0, 0.3))
            lam_d = rng.uniform(-1, 1, 3)
            for lam in (lam_d, None):
                a = ctrl(x[:2], x[2:4], x[4:7], x[7:10], yd, lam)
                u, ud, lm = ctrl.u, ctrl.ud, ctrl.lam
                b = ctrl._call_reference(x[:2], x[2:4], x[4:7], x[7:10], yd, lam)
                assert _rel(a, b) < 1e-12
                assert _rel(u, ctrl.u) < 1e-13 and _rel(ud, ctrl.ud) < 1e-12
                assert abs(lm - ctrl.lam) <= 1e-12 * max(abs(ctrl.lam), np.max(np.abs(u)))
    with pytest.raises(PKMSingularityError):
        ctrl([1.0, 1.0], [0, 0], np.zeros(3), np.zeros(3), yd)
    with pytest.raises(InputError):
        ctrl(plant.p, plant.pd, plant.qm, plant.qdm, yd * np.nan)


def test_warmup_covers_the_run_time_calls(model):
    """After the SEA kernels' warm-up (tools.warmup) the plant step and the controller step (sea_controller's argument
    types) compile nothing new."""
    from robot_dynamics.plants import sea
    from robot_dynamics.control import flatness_sea as fs
    from robot_dynamics.tools.warmup import warmup_sea_kernels
    from robot_dynamics.control.flatness_sea import SEAFlatnessController, sea_state_from_joints
    from robot_dynamics.pkm import planar_sea as ps
    from robot_dynamics.spatial import linalg
    from robot_dynamics.control.trajectories import SinSquaredJerk

    warmup_sea_kernels(model)
    kernels = [
        sea._sea_rk4,
        sea._sea_derivative,
        sea._sea_ik_rates,
        fs._flatness_step,
        ps._task_space_1,
        linalg.solve,
        ps._preload_n,
        ps._preload_batch,
        ps._planar_batch,
    ]
    before = [len(k.signatures) for k in kernels]
    plant = make_plant('sea', model, model.reference_q(), dt=1e-3)
    names = list(model.joint_names)
    ia, ie, im = ([names.index(f'arm{k}_{s}') for k in (1, 2, 3)] for s in ('joint', 'elbow', 'motor'))
    ctrl = SEAFlatnessController(model, params=plant.params)
    move = SinSquaredJerk(plant.p, plant.p + np.array([0.01, 0.0]), 0.3, t0=0.0)
    for k in range(3):
        pos, pd, qm, qdm = sea_state_from_joints(plant.params, plant.q, plant.qd, ia, ie, im)
        tau = ctrl(pos, pd, qm, qdm, move(0.001 * k), np.array([0.0, 0.0, 0.0]))
        full = np.zeros(model.nq)
        full[im] = tau
        plant.step(full)
        plant.step(list(tau))
    assert [len(k.signatures) for k in kernels] == before


def test_planar_id_preload_matches_reference():
    """inverse_dynamics_d2's compiled n / (u, ud, udd) (_preload_batch) vs the numpy route."""
    from robot_dynamics.pkm.planar_sea import Planar3RRR, _preload_reference

    pk = Planar3RRR()
    rng = np.random.default_rng(7)
    P = np.zeros((100, 5, 2))
    P[:, 0] = np.array([-0.05, 0.0]) + rng.uniform(-0.03, 0.03, (100, 2))
    P[:, 1:] = rng.uniform(-1, 1, (100, 4, 2))
    lam = rng.uniform(-1, 1, (100, 3))
    for lm in (lam, None):
        r = pk.inverse_dynamics_d2(P, lm)
        n, u, ud, udd = _preload_reference(r.J_IK, r.w, np.zeros((100, 3)) if lm is None else lm)
        assert np.array_equal(r.n, n)
        for a, b in ((r.u, u), (r.ud, ud), (r.udd, udd)):
            assert _rel(a, b) < 1e-12
    one = pk.inverse_dynamics_d2(P[3], lam[3])
    assert one.u.shape == (3,) and _rel(one.udd, pk.inverse_dynamics_d2(P, lam).udd[3]) < 1e-15
