#!/usr/bin/env python3
"""d tau/dt, d^2 tau/dt^2 of the tree inverse dynamics: robot_dynamics.rnea_time_derivatives
against the anchors, measured side by side in one run.

* ours: one call on a batch of N instants (us per instant), and one call per instant;
* Pinocchio: d tau/dt = (d tau/dq) q' + (d tau/dv) q'' + M q''' per instant
  (computeRNEADerivatives + two mat-vecs; it has no d^2 tau/dt^2);
* numerical differentiation of our compiled rnea: 4-point central differences along the
  motion, 4 rnea calls per instant for d tau/dt, 16 for d^2 tau/dt^2 (batched like ours).

    .venv/bin/python bench/bench_rnea_derivatives.py                     # urdf/arm7.urdf, N = 1000
    .venv/bin/python bench/bench_rnea_derivatives.py --urdf urdf/gough_stewart.urdf
"""

import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, 'test'))

import robot_dynamics as rd  # noqa: E402


def best(f, repeats=5):
    f()
    t = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        t.append(time.perf_counter() - t0)
    return min(t)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--urdf', default=os.path.join(ROOT, 'urdf', 'arm7.urdf'))
    ap.add_argument('-N', type=int, default=1000, help='instants per batch (default 1000)')
    a = ap.parse_args(argv)
    import pinocchio as pin
    from test_tree_vs_pinocchio import pin_q

    m = rd.load_model(a.urdf)
    pm = pin.buildModelFromUrdf(a.urdf)
    pd = pm.createData()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5, a.N, m.nq))
    h = 1e-3

    def ours_batch():
        rd.rnea_time_derivatives(m, *X)

    def ours_single():
        for s in range(min(a.N, 200)):
            rd.rnea_time_derivatives(m, *X[:, s])

    PQ = [pin_q(m, q) for q in X[0]]

    def pin_d1():
        for s in range(a.N):
            dq, dv, M = pin.computeRNEADerivatives(pm, pd, PQ[s], X[1, s], X[2, s])
            dq @ X[1, s] + dv @ X[2, s] + M @ X[3, s]

    def at(t):
        q, d1, d2, d3, d4 = X
        return (
            q + d1 * t + d2 * t * t / 2 + d3 * t**3 / 6 + d4 * t**4 / 24,
            d1 + d2 * t + d3 * t * t / 2 + d4 * t**3 / 6,
            d2 + d3 * t + d4 * t * t / 2,
        )

    def fd1(s=0.0):
        return (
            -rd.rnea(m, *at(s + 2 * h))
            + 8 * rd.rnea(m, *at(s + h))
            - 8 * rd.rnea(m, *at(s - h))
            + rd.rnea(m, *at(s - 2 * h))
        ) / (12 * h)

    def fd2():
        (-fd1(2 * h) + 8 * fd1(h) - 8 * fd1(-h) + fd1(-2 * h)) / (12 * h)

    n1 = min(a.N, 200)
    rows = [
        ("ours, batch (tau, tau', tau'')", best(ours_batch) / a.N),
        ('ours, one call per instant', best(ours_single, 3) / n1),
        ("Pinocchio tau' (derivatives + mat-vecs), per instant", best(pin_d1) / a.N),
        ("numerical tau' (4 rnea, batched)", best(fd1) / a.N),
        ("numerical tau'' (16 rnea, batched)", best(fd2) / a.N),
    ]
    print(f'{os.path.basename(a.urdf)}: n = {m.nq}, N = {a.N}')
    ref = rows[0][1]
    for name, t in rows:
        print(f'  {name:55s} {t * 1e6:9.2f} us/instant   ({t / ref:6.2f} x ours batched)')
    T = rd.rnea_time_derivatives(m, *X[:, :1])
    print(f"  check: |ours tau' - numerical| = {np.abs(T[1] - fd1()[:1]).max():.1e}")


if __name__ == '__main__':
    main()
