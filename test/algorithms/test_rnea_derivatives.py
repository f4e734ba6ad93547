"""d tau/dt and d^2 tau/dt^2 of the tree inverse dynamics (robot_dynamics.rnea_time_derivatives).

Oracles, for every URDF of urdf/ and random trees (chains and branched, revolute / continuous
/ prismatic / fixed joints, random axes, origins, inertias):
* row 0 = our rnea (the compiled kernel);
* d tau/dt = (d tau/d q) q' + (d tau/d qd) q'' + M q''' from Pinocchio's analytic
  computeRNEADerivatives (relative 1e-10);
* d^2 tau/dt^2 = 4th-order central differences (h = 1e-3) of that exact d tau/dt along the
  quartic joint motion with the same derivatives (relative 1e-7: the stencil's error);
* independently of Pinocchio, d tau/dt and d^2 tau/dt^2 against central differences of our
  rnea along the same motion (relative 1e-6);
* a batch of instants equals the instants one by one; bad input is an InputError.
"""

import suite_paths
import glob
import os

import numpy as np
import pytest

import robot_dynamics as rd

pin = pytest.importorskip('pinocchio')
from test_tree_vs_pinocchio import load_pair, pin_q  # noqa: E402

URDF_DIR = os.path.join(suite_paths.ROOT, 'urdf')
CASES = [
    pytest.param(('file', p), id=os.path.basename(p)) for p in sorted(glob.glob(os.path.join(URDF_DIR, '*.urdf')))
] + [pytest.param(('rand', s), id=f'rand{s}') for s in range(12)]


def _motion(q, d1, d2, d3, d4):
    def at(t):
        return (
            q + d1 * t + d2 * t**2 / 2 + d3 * t**3 / 6 + d4 * t**4 / 24,
            d1 + d2 * t + d3 * t**2 / 2 + d4 * t**3 / 6,
            d2 + d3 * t + d4 * t**2 / 2,
            d3 + d4 * t,
        )

    return at


def _d(f, h=1e-3):
    """4th-order central first derivative of f at 0."""
    return (-f(2 * h) + 8 * f(h) - 8 * f(-h) + f(-2 * h)) / (12 * h)


def _rel(a, b):
    return np.abs(a - b).max() / max(1.0, np.abs(b).max())


@pytest.mark.parametrize('case', CASES)
def test_time_derivatives_against_pinocchio_and_differences(case):
    m, pm = load_pair(case)
    pd = pm.createData()
    rng = np.random.default_rng(7)
    for _ in range(2):
        q, d1, d2, d3, d4 = (rng.normal(size=m.nq) for _ in range(5))
        T = rd.rnea_time_derivatives(m, q, d1, d2, d3, d4)
        assert T.shape == (3, m.nq)
        assert _rel(T[0], rd.rnea(m, q, d1, d2)) < 1e-12

        def taud(q, qd, qdd, q3):
            dq, dv, M = pin.computeRNEADerivatives(pm, pd, pin_q(m, q), qd, qdd)
            M = np.triu(M) + np.triu(M, 1).T
            return dq @ qd + dv @ qdd + M @ q3

        at = _motion(q, d1, d2, d3, d4)
        assert _rel(T[1], taud(q, d1, d2, d3)) < 1e-10
        assert _rel(T[2], _d(lambda t: taud(*at(t)))) < 1e-7
        # without Pinocchio: differences of our rnea along the motion
        tau = lambda t: rd.rnea(m, *at(t)[:3])  # noqa: E731
        assert _rel(T[1], _d(tau)) < 1e-6
        assert _rel(T[2], _d(lambda s: _d(lambda t: tau(s + t)))) < 1e-4
        T1 = rd.rnea_time_derivatives(m, q, d1, d2, d3, order=1)
        np.testing.assert_allclose(T1, T[:2], rtol=0, atol=1e-12 * max(1.0, np.abs(T[:2]).max()))


def test_batch_equals_instants_and_bad_input():
    m = rd.load_model(os.path.join(URDF_DIR, 'arm7.urdf'))
    rng = np.random.default_rng(3)
    X = rng.normal(size=(5, 4, m.nq))
    B = rd.rnea_time_derivatives(m, *X)
    assert B.shape == (3, 4, m.nq)
    for s in range(4):
        np.testing.assert_allclose(B[:, s], rd.rnea_time_derivatives(m, *X[:, s]), rtol=1e-14, atol=1e-12)
    with pytest.raises(rd.InputError, match='qdddd'):
        rd.rnea_time_derivatives(m, *X[:4])
    with pytest.raises(rd.InputError, match='order'):
        rd.rnea_time_derivatives(m, *X, order=3)
    bad = X.copy()
    bad[2, 0, 0] = np.nan
    with pytest.raises(rd.InputError, match='non-finite'):
        rd.rnea_time_derivatives(m, *bad)
