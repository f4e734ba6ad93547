"""The Schur-complement route of the constrained forward dynamics (variant 'Mc' where A has
certified full row rank, :func:`robot_dynamics.algorithms._projection_kernels.schur_cfd`) against
the SVD projector route ('Mc_svd', which test_projection.py checks against numpy's SVD, the
Lagrange form and Pinocchio).

Robots: Cassie imported from example-robot-data's SDFormat file (free-flyer, 2 spherical and 2
point-on-line loops), the loop models of urdf/ and test/data/ whose A has full row rank, and,
for the fallback, models whose loop rows are redundant (rank A < m) and a slider-crank at its
singular configuration. The fallback is the SVD route bit for bit.
"""

import os
import re
import sys

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.algorithms import _projection_kernels as PK
from robot_dynamics.algorithms import projection as pj

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(HERE)
FIELDS = ('qdd', 'F', 'lam', 'P', 'sigma', 'Apinv', 'Cqd')
TOL = 1e-12

# A has full row rank at the states used here
FULL_ROW_RANK = [
    'urdf/gough_stewart.urdf',
    'urdf/slider_crank.urdf',
    'test/data/biped_rods.urdf',
    'test/data/gough_stewart_sea.urdf',
    'test/data/rps_3.urdf',
    'test/data/tripteron_3upu.urdf',
    'test/data/two_weld_leg.urdf',
]
# redundant loop rows (rank A < m <= n): the certificate fails, the SVD route is taken
RANK_DEFICIENT = ['urdf/series_parallel_3dof.urdf', 'test/data/cylinder_elbow_3dof.urdf', 'test/data/five_bar_sea.urdf']


def _model(path):
    return rd.load_model(os.path.join(ROOT, path))


def _states(m, k, seed=0, spread=0.05):
    """k closed states near the reference (minimum-norm assembly of a perturbed guess)."""
    rng = np.random.default_rng(seed)
    q0 = pj.assemble(m, q_guess=m.reference_q(), fixed='none').q
    out = []
    for _ in range(k):
        q = pj.assemble(m, q_guess=m.integrate(q0, rng.uniform(-spread, spread, m.nv)), fixed='none').q
        out.append((q, pj.project_velocity(m, q, rng.normal(size=m.nv)), rng.normal(size=m.nv)))
    return out


def _rel(x, y):
    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.size == 0 and y.size == 0:
        return 0.0
    return float(np.max(np.abs(x - y)) / max(1.0, float(np.max(np.abs(y)))))


def _schur_taken(m, res, tau, eps=pj.DEFAULT_EPS):
    """Whether the Schur route certifies at the terms of ``res`` (a ConstrainedDynamics)."""
    n, k = m.nv, m.nconstraints
    e0 = np.empty((0, 0))
    return (
        PK.schur_cfd(m._par, eps, res.M, res.h, res.A, res.bias, tau, PK.WANT_QDD, np.empty(n), np.empty(n),
                     np.empty(k), e0, np.empty(k), e0, np.empty(n))
        == 0
    )  # fmt: skip


def _compare(m, q, qd, tau, eps=None):
    a = rd.constrained_forward_dynamics(m, q, qd, tau, eps=eps)
    b = rd.constrained_forward_dynamics(m, q, qd, tau, 'Mc_svd', eps=eps)
    assert a.rank == b.rank and a.variant == 'Mc' and b.variant == 'Mc_svd'
    assert a.kinetic == b.kinetic and a.potential == b.potential
    for f in ('M', 'h', 'phi', 'A', 'bias'):  # the same state terms, bit for bit
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    err = {f: _rel(getattr(a, f), getattr(b, f)) for f in FIELDS}
    # F = tau - h - M qdd cancels: both routes' F carry the roundoff of M qdd, |M| |qdd| u
    # (test/data/gough_stewart_sea: coordinates of inertia 1e-9 accelerate at 1e9 rad/s^2 while
    # |F| ~ 1), and lam = (A+)^T F that of F over sigma_min
    fs = max(1.0, np.abs(tau).max(), np.abs(b.h).max(), np.abs(b.M).max() * np.abs(b.qdd).max())
    err['F'] = float(np.abs(a.F - b.F).max()) / fs
    if b.rank:
        err['lam'] = float(np.abs(a.lam - b.lam).max()) / max(np.abs(b.lam).max(), fs / b.sigma_min)
    return a, b, err


@pytest.mark.parametrize('path', FULL_ROW_RANK)
def test_schur_route_equals_the_svd_route_on_full_row_rank_loops(path):
    m = _model(path)
    for q, qd, tau in _states(m, 3):
        a, b, err = _compare(m, q, qd, tau)
        assert a.rank == m.nconstraints and _schur_taken(m, b, tau)
        assert max(err.values()) < TOL, (path, err)
        # the multipliers reproduce the constraint force and the acceleration closes the loop
        scale = max(1.0, np.abs(tau).max(), np.abs(a.M).max() * np.abs(a.qdd).max())
        assert np.abs(a.A.T @ a.lam - a.F).max() < TOL * scale
        assert np.abs(a.A @ a.qdd + a.bias).max() <= 1e-10 * max(1.0, np.abs(a.bias).max())


@pytest.mark.parametrize('path', RANK_DEFICIENT)
def test_redundant_rows_fall_back_to_the_svd_route(path):
    m = _model(path)
    assert m.nconstraints <= m.nv  # the certificate is tried (m > n never is)
    for q, qd, tau in _states(m, 2):
        a, b, _ = _compare(m, q, qd, tau)
        assert a.rank < m.nconstraints and not _schur_taken(m, b, tau)
        for f in FIELDS:
            np.testing.assert_array_equal(getattr(a, f), getattr(b, f))


def test_singular_configuration_and_eps_above_sigma_min_fall_back():
    m = _model('urdf/slider_crank.urdf')
    qd, tau = np.array([1.0, -2.0]), np.array([0.3, 0.0])
    # sigma(A) -> 0 at q1 = -pi/2: rank 0 at eps, the SVD route
    q = np.array([-np.pi / 2 + 1e-9, np.pi - 2e-9])
    a, b, _ = _compare(m, q, qd, tau)
    assert a.rank == 0 and not _schur_taken(m, b, tau)
    for f in FIELDS:
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    # a regular configuration with eps just above / below its singular value
    q = np.array([np.pi / 4, -np.pi / 2])
    s = rd.constrained_forward_dynamics(m, q, qd, tau).sigma[0]
    a, b, _ = _compare(m, q, qd, tau, eps=s * (1 + 1e-9))
    assert a.rank == 0
    for f in FIELDS:
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    a, b, err = _compare(m, q, qd, tau, eps=0.5 * s)
    assert a.rank == 1 and max(err.values()) < TOL


def test_singular_mass_matrix_is_still_reported():
    """A joint moving only massless links (a Gough-Stewart piston without mass): the L^T D L
    pivot test fails, the SVD route's Prop. 2 check raises, as for every variant."""
    path = os.path.join(ROOT, 'urdf', 'gough_stewart.urdf')
    xml = open(path).read()
    start = xml.index('<link name="leg1_piston">')
    end = xml.index('</link>', start)
    link = re.sub(r'<inertial>.*?</inertial>', '', xml[start:end], flags=re.S)
    m = rd.load_model(xml[:start] + link + xml[end:], loops=path.replace('.urdf', '.loops.yaml'))
    q, z = m.reference_q(), np.zeros(m.nv)
    for variant in ('Mc', 'Mc_svd'):
        with pytest.raises(rd.SingularMassMatrixError, match='Prop. 2'):
            rd.constrained_forward_dynamics(m, q, z, z, variant=variant)
    with pytest.raises(rd.SingularMassMatrixError, match='sample 0'):
        rd.constrained_forward_dynamics_batch(m, np.stack([q, q]), np.stack([z, z]), np.stack([z, z]))


@pytest.mark.parametrize('path', FULL_ROW_RANK[:2] + RANK_DEFICIENT[:1])
def test_batch_equals_single_calls(path):
    m = _model(path)
    st = _states(m, 5, seed=3)
    Q, QD, TAU = (np.array([s[i] for s in st]) for i in range(3))
    out = rd.constrained_forward_dynamics_batch(m, Q, QD, TAU)
    assert out.shape == (5, m.nv)
    for k in range(5):
        ref = rd.constrained_forward_dynamics(m, Q[k], QD[k], TAU[k]).qdd
        assert _rel(out[k], ref) <= 1e-15
    np.testing.assert_array_equal(rd.constrained_forward_dynamics_batch(m, Q[2], QD[2], TAU[2]), out[2])
    # the samples spread over threads or taken one after the other: the same numbers
    np.testing.assert_array_equal(rd.constrained_forward_dynamics_batch(m, Q, QD, TAU, threads=False), out)
    # the SVD variant through the batch entry
    svd = rd.constrained_forward_dynamics_batch(m, Q, QD, TAU, variant='Mc_svd')
    assert _rel(svd, out) < TOL


def test_batch_input_errors():
    m = _model('urdf/slider_crank.urdf')
    q, qd, tau = _states(m, 1)[0]
    with pytest.raises(rd.InputError, match=r'qd must have shape \(2, 2\)'):
        rd.constrained_forward_dynamics_batch(m, np.stack([q, q]), qd, np.stack([tau, tau]))
    bad = np.stack([qd, qd])
    bad[1, 0] = np.nan
    for threads in (True, False):
        with pytest.raises(rd.InputError, match='sample 1'):
            rd.constrained_forward_dynamics_batch(m, np.stack([q, q]), bad, np.stack([tau, tau]), threads=threads)
    with pytest.raises(rd.InputError, match='variant'):
        rd.constrained_forward_dynamics_batch(m, q, qd, tau, variant='lu')


# --------------------------------------------------------------------------- Cassie
def _cassie():
    sys.path.insert(0, os.path.join(HERE, 'parsers'))
    try:
        import test_sdf_import as T
    finally:
        sys.path.pop(0)
    from robot_dynamics.parsers.importing import load_imported
    from robot_dynamics.parsers.sdf import import_sdf

    m = load_imported(import_sdf(T.CASSIE))
    q0 = m.reference_q()
    q0[:3] = T.sdf_links_and_joints(T.CASSIE)[0]['pelvis'][:3, 3]
    return m, T._states(m, q0, 4, seed=5)


def test_cassie_schur_route_equals_the_svd_route():
    pytest.importorskip('example_robot_data')
    pytest.importorskip('pinocchio')
    m, states = _cassie()
    assert (m.nv, m.nconstraints) == (28, 10)
    worst = dict.fromkeys(FIELDS, 0.0)
    for q, qd, tau in states:
        a, b, err = _compare(m, q, qd, tau)
        assert a.rank == 10 and _schur_taken(m, b, tau)
        worst = {f: max(worst[f], err[f]) for f in FIELDS}
    print({f: f'{v:.1e}' for f, v in worst.items()})
    assert max(worst.values()) < TOL, worst
    Q, QD, TAU = (np.array([s[i] for s in states]) for i in range(3))
    out = rd.constrained_forward_dynamics_batch(m, Q, QD, TAU)
    for k in range(len(states)):
        assert _rel(out[k], rd.constrained_forward_dynamics(m, Q[k], QD[k], TAU[k]).qdd) <= 1e-15
    # eps above sigma_min: rank 9, the SVD route bit for bit
    q, qd, tau = states[0]
    s = rd.constrained_forward_dynamics(m, q, qd, tau).sigma
    a, b, _ = _compare(m, q, qd, tau, eps=0.5 * (s[-1] + s[-2]))
    assert a.rank == 9
    for f in FIELDS:
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
