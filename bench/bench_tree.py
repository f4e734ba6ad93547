#!/usr/bin/env python3
"""Tree dynamics timing: robot_dynamics (rnea, crba, forward_dynamics) vs Pinocchio (rnea, crba, aba).

For every algorithm, on the same URDF and in the same run:

* single: microseconds per call with one sample, both libraries called from Python;
* batched: microseconds per sample of one robot_dynamics call on an (N, n) batch, against a
  Python loop of Pinocchio calls over the same N samples (the fair batched anchor: Pinocchio has
  no batch API, so a Python user pays one call per sample).

Every function is warmed up first (numba compiles on the first call; its on-disk cache may make
that fast). Timing uses ``time.perf_counter``: each repeat runs a calibrated number of calls,
and the best and the median over the repeats are reported. Notes: ``pin.crba`` fills only the
upper triangle of M (ours returns the full symmetric matrix); Pinocchio's ``continuous``
joints take (cos q, sin q), converted once before timing.

Example::

    .venv/bin/python bench/bench_tree.py                       # urdf/arm7.urdf, N = 1000
    .venv/bin/python bench/bench_tree.py --urdf urdf/four_bar.urdf -N 10000 --repeats 9
"""

import argparse
import os
import platform
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)  # benchmark the source tree (as the tests do)

import robot_dynamics as rd  # noqa: E402


def parse_args(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.split('\n\n')[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog='\n\n'.join(__doc__.split('\n\n')[1:]),
    )
    ap.add_argument(
        '--urdf',
        default=os.path.join(ROOT, 'urdf', 'arm7.urdf'),
        help='robot description (.urdf or .xacro), default: urdf/arm7.urdf',
    )
    ap.add_argument('-N', '--batch', type=int, default=1000, help='batch size N of the batched calls (default: 1000)')
    ap.add_argument(
        '-r', '--repeats', type=int, default=7, help='timing repeats; best and median are reported (default: 7)'
    )
    ap.add_argument(
        '--min-time', type=float, default=0.05, help='minimum duration of one repeat in seconds (default: 0.05)'
    )
    ap.add_argument('--seed', type=int, default=0, help='random seed of the samples')
    args = ap.parse_args(argv)
    if args.batch < 1 or args.repeats < 1 or args.min_time <= 0:
        ap.error('--batch and --repeats must be >= 1, --min-time > 0')
    return args


def calibrate(fn, min_time):
    """Number of calls of fn that take at least min_time (doubling)."""
    number = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        if time.perf_counter() - t0 >= min_time:
            return number
        number *= 2


def timeit(fn, repeats, min_time, per=1):
    """(best, median) seconds per call of fn, divided by ``per`` (samples per call)."""
    number = calibrate(fn, min_time)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number / per)
    return min(times), statistics.median(times)


def pin_q(model, q):
    """Pinocchio configuration(s): continuous joints -> (cos q, sin q)."""
    q = np.atleast_2d(q)
    cols = []
    for i, t in enumerate(model.joint_urdf_types):
        if t == 'continuous':
            cols += [np.cos(q[:, i]), np.sin(q[:, i])]
        else:
            cols.append(q[:, i])
    return np.ascontiguousarray(np.stack(cols, axis=1))


def main(argv=None):
    args = parse_args(argv)
    try:
        import pinocchio as pin
    except ImportError:
        sys.exit('pinocchio is not installed (pip install pin): it is the reference of this benchmark')

    model = rd.load_model(args.urdf)
    if args.urdf.endswith('.xacro'):
        pm = pin.buildModelFromXML(model.urdf_xml)
    else:
        pm = pin.buildModelFromUrdf(args.urdf)
    pd = pm.createData()
    n, N = model.nq, args.batch
    if [pm.names[i] for i in range(1, pm.njoints)] != model.joint_names:
        sys.exit('joint order differs from Pinocchio: cannot compare')

    rng = np.random.default_rng(args.seed)
    Q = model.random_configuration(rng, size=N)
    QD, QDD, TAU = rng.normal(size=(3, N, n))
    PQ = pin_q(model, Q)
    q, qd, qdd, tau, pq = Q[0], QD[0], QDD[0], TAU[0], PQ[0]

    # correctness guard (a benchmark of wrong numbers is worthless)
    err = max(
        np.abs(rd.rnea(model, q, qd, qdd) - pin.rnea(pm, pd, pq, qd, qdd)).max(),
        np.abs(np.triu(rd.crba(model, q)) - np.triu(pin.crba(pm, pd, pq))).max(),
        np.abs(rd.forward_dynamics(model, q, qd, tau) - pin.aba(pm, pd, pq, qd, tau)).max(),
    )
    if err > 1e-8:
        sys.exit(f'results differ from Pinocchio by {err:.2e}: not benchmarking')

    def pin_loop(f, *arrays):
        def run():
            for k in range(N):
                f(pm, pd, *(a[k] for a in arrays))

        return run

    cases = [
        (
            'rnea',
            'rnea',
            lambda: rd.rnea(model, q, qd, qdd),
            lambda: pin.rnea(pm, pd, pq, qd, qdd),
            lambda: rd.rnea(model, Q, QD, QDD),
            pin_loop(pin.rnea, PQ, QD, QDD),
        ),
        (
            'crba',
            'crba',
            lambda: rd.crba(model, q),
            lambda: pin.crba(pm, pd, pq),
            lambda: rd.crba(model, Q),
            pin_loop(pin.crba, PQ),
        ),
        (
            'forward_dynamics',
            'aba',
            lambda: rd.forward_dynamics(model, q, qd, tau),
            lambda: pin.aba(pm, pd, pq, qd, tau),
            lambda: rd.forward_dynamics(model, Q, QD, TAU),
            pin_loop(pin.aba, PQ, QD, TAU),
        ),
    ]

    # warm-up: numba compilation (single and batched signatures) and caches
    for _, _, *fns in cases:
        for fn in fns:
            for _ in range(3):
                fn()

    print(
        f'robot: {model.name} ({os.path.relpath(args.urdf)}), n = {n} joints, N = {N}, '
        f'{args.repeats} repeats (>= {args.min_time} s each), best / median [us]'
    )
    print(
        f'python {platform.python_version()}, numpy {np.__version__}, '
        f'numba {__import__("numba").__version__}, pinocchio {pin.__version__}, '
        f'{platform.machine()} {platform.processor() or ""}'.rstrip()
    )
    print(f'max |ours - pinocchio| at the first sample: {err:.1e}')
    print()
    head = f'{"algorithm":<22}{"mode":<22}{"ours best":>11}{"med":>9}{"pin best":>11}{"med":>9}{"ours/pin":>10}'
    print(head)
    print('-' * len(head))
    rows = []
    for ours_name, pin_name, o1, p1, oN, pN in cases:
        for mode, fo, fp, per in (('single (per call)', o1, p1, 1), ('batch (per sample)', oN, pN, N)):
            ob, om = timeit(fo, args.repeats, args.min_time, per)
            pb, pmed = timeit(fp, args.repeats, args.min_time, per)
            label = f'{ours_name}/{pin_name}' if ours_name != pin_name else ours_name
            print(
                f'{label:<22}{mode:<22}{ob * 1e6:>11.3f}{om * 1e6:>9.3f}'
                f'{pb * 1e6:>11.3f}{pmed * 1e6:>9.3f}{ob / pb:>10.2f}'
            )
            rows.append((label, mode, ob, om, pb, pmed))
    print()
    print('batch: ours = one call on (N, n) arrays / N; pin = Python loop of N calls / N. ratio = best/best.')
    return rows


if __name__ == '__main__':
    main()
