"""The fast simulator step (robot_dynamics.plants._rigid_kernels, the real-time path of sim_node)
against the reference SVD route (robot_dynamics.algorithms._projection_kernels), which the oracles of
test_sim.py / test_projection.py / test_tree_vs_pinocchio.py check.

Tolerance 1e-11 relative (to max(1, |value|)): both routes compute the same projector and the
same qdd (the null-space form of eq. 22 is the unique solution of the Mc system); they differ
by roundoff amplified by the conditioning of A and M (measured <= 3e-12 on qdd of IRSBot-2,
<= 3e-13 on the Gough-Stewart platform). Next to a singular configuration (rank decision not
certified) the fast route is the reference route, bit for bit.
"""

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.algorithms import _projection_kernels as PK
from robot_dynamics.plants import _rigid_kernels as FK
from robot_dynamics.ros.bringup import load_bringup
from robot_dynamics.control import hold_command
from robot_dynamics.algorithms.projection import _pack
from robot_dynamics.plants.rigid import ConstrainedPlant
from projection_helpers import model as helper_model

TOL = 1e-11
FIELDS = ('q', 'qd', 'qdd', 'F', 'lam', 'sigma_min', 'phi_norm', 'kinetic', 'potential', 'vel_violation', 'jump_q')


def _robot(robot):
    b = load_bringup(robot)
    sim = next(s for s in b.nodes if s.executable == 'sim_node')
    m = rd.load_model(b.urdf, loops=b.loops or None)
    q0 = sim.parameters.get('initial_positions')
    return m, (None if q0 is None else np.asarray(q0, float)), float(sim.parameters['rate'])


def _rel(x, y):
    x, y = np.asarray(x, float), np.asarray(y, float)
    return float(np.max(np.abs(x - y)) / max(1.0, float(np.max(np.abs(y)))))


@pytest.mark.parametrize('robot', ['gough_stewart', 'irsbot2_t1', 'five_bar'])
def test_fast_step_equals_reference_step(robot):
    """200 steps from the states of a reference trajectory (gravity hold + a sinusoidal load):
    each step of both routes from the same state agrees to TOL, same ranks, no event."""
    m, q0, rate = _robot(robot)
    ref = ConstrainedPlant(m, q0, dt=1.0 / rate, kernel='reference')
    fast = ConstrainedPlant(m, q0, dt=1.0 / rate)
    assert fast._fast and not ref._fast
    worst = dict.fromkeys(FIELDS, 0.0)
    for k in range(200):
        tau = hold_command(m, ref.q, ref.qd, 2.0) + 2.0 * np.sin(0.02 * k + np.arange(m.nq))
        fast.reset(ref.q, ref.qd, ref.t)
        a, b = fast.step(tau), ref.step(tau)
        assert (a.rank, a.rank_min, a.nr_converged) == (b.rank, b.rank_min, b.nr_converged)
        for f in FIELDS:
            worst[f] = max(worst[f], _rel(getattr(a, f), getattr(b, f)))
    print(robot, {f: f'{v:.1e}' for f, v in worst.items()})
    assert max(worst.values()) < TOL, worst
    assert not fast.events and not ref.events


def test_fast_trajectory_follows_reference_trajectory():
    """0.5 s of the Gough-Stewart platform integrated by both routes: the trajectories agree
    to 1e-10 (roundoff does not grow over 500 steps of the closed chain)."""
    m, q0, rate = _robot('gough_stewart')
    plants = [ConstrainedPlant(m, q0, dt=1.0 / rate, kernel=k) for k in ('fast', 'reference')]
    for k in range(500):
        for p in plants:
            p.step(hold_command(m, p.q, p.qd, 50.0) + np.cos(0.01 * k + np.arange(m.nq)))
    assert _rel(plants[0].q, plants[1].q) < 1e-10
    assert _rel(plants[0].qd, plants[1].qd) < 1e-10


@pytest.mark.parametrize('robot', ['gough_stewart', 'irsbot2_t1'])
def test_cfd_fast_equals_reference_kernel(robot):
    """One evaluation at random admissible states: qdd, F, lam, phi, A, singular values of
    cfd_fast (certified) = PK.cfd (variant Mc)."""
    m, q0, _ = _robot(robot)
    p = _pack(m)
    n, mm = m.nq, m.nconstraints
    k = min(n, mm)
    rng = np.random.default_rng(1)
    plant = ConstrainedPlant(m, q0, kernel='reference')
    for _ in range(5):
        plant.reset(plant.q + 0.01 * rng.standard_normal(n), rng.standard_normal(n))
        q, qd = plant.q, plant.qd
        tau = rng.standard_normal(n)
        out_f = [np.empty(n), np.empty(n), np.empty(mm), np.zeros(k), np.empty(mm), np.empty((mm, n))]
        out_r = [np.empty(n), np.empty(n), np.empty(mm), np.zeros(k), np.empty(mm), np.empty((mm, n))]
        st, r, T, U, cert = FK.cfd_fast(
            p,
            q,
            qd,
            tau,
            1e-6,
            True,
            *out_f,
            np.empty((n, n)),
            np.empty((mm, k)),
            np.empty((k, k)),
            np.empty(mm, dtype=np.int64),
            -1,
        )
        qdd, F, lam, s, phi, A = out_r
        st2, r2, T2, U2, _ = PK.cfd(
            p,
            q,
            qd,
            tau,
            PK.VARIANT_MC,
            0.0,
            1e-6,
            qdd,
            F,
            lam,
            np.empty((n, n)),
            s,
            np.empty((n, n)),
            np.empty(n),
            phi,
            A,
            np.empty(mm),
            np.empty((n, mm)),
            np.empty(n),
        )
        assert cert and st == st2 == 0 and r == r2
        for x, y in zip(out_f, out_r):
            assert _rel(x, y) < TOL
        assert abs(T - T2) < 1e-12 * max(1, abs(T2)) and abs(U - U2) < 1e-12 * max(1, abs(U2))


def test_uncertified_rank_falls_back_to_the_svd_route():
    """Slider-crank at its singular configuration q1 = -pi/2 (sigma(A) -> 0): the URV
    factorization is not certified there and cfd_fast returns the reference kernel's result
    exactly; away from it the certificate holds."""
    m = helper_model('slider_crank')
    p = _pack(m)
    n, mm = m.nq, m.nconstraints
    k = min(n, mm)

    def both(q1, sigma_gap=0.0):
        q = np.array([q1, -2.0 * q1 + sigma_gap])
        qd = np.array([1.0, -2.0])
        tau = np.array([0.3, 0.0])
        f = [np.empty(n), np.empty(n), np.empty(mm), np.zeros(k), np.empty(mm), np.empty((mm, n))]
        r_ = [np.empty(n), np.empty(n), np.empty(mm), np.zeros(k), np.empty(mm), np.empty((mm, n))]
        st, r, T, U, cert = FK.cfd_fast(
            p,
            q,
            qd,
            tau,
            1e-6,
            True,
            *f,
            np.empty((n, n)),
            np.empty((mm, k)),
            np.empty((k, k)),
            np.empty(mm, dtype=np.int64),
            -1,
        )
        PK.cfd(
            p,
            q,
            qd,
            tau,
            PK.VARIANT_MC,
            0.0,
            1e-6,
            r_[0],
            r_[1],
            r_[2],
            np.empty((n, n)),
            r_[3],
            np.empty((n, n)),
            np.empty(n),
            r_[4],
            r_[5],
            np.empty(mm),
            np.empty((n, mm)),
            np.empty(n),
        )
        return cert, f, r_

    cert, f, r_ = both(-np.pi / 2 + 1e-9)
    assert not cert
    for x, y in zip(f, r_):
        np.testing.assert_array_equal(x, y)
    cert, f, r_ = both(np.pi / 4)
    assert cert
    for x, y in zip(f, r_):
        assert _rel(x, y) < TOL


def test_kernel_option():
    m, q0, _ = _robot('gough_stewart')
    assert not ConstrainedPlant(m, q0, vel_proj='mass')._fast  # no fast form: reference
    assert not ConstrainedPlant(m, q0, integrator='dopri5')._fast
    with pytest.raises(rd.InputError):
        ConstrainedPlant(m, q0, kernel='svd')
