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
    .venv/bin/python bench/bench_tree.py --example-robot talos --root-joint free_flyer   # floating base

``--example-robot NAME`` takes the URDF of the ``example-robot-data`` package's loader ``NAME``
(e.g. talos, solo12, anymal); ``--root-joint free_flyer`` loads it on a floating base in both
libraries (``rd.load_model(..., root_joint='free_flyer')`` and ``pin.JointModelFreeFlyer()``).
Joints are matched by name, so the two libraries may order them differently.
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
    ap.add_argument('--example-robot', help="an example-robot-data loader's URDF (e.g. talos), instead of --urdf")
    ap.add_argument('--root-joint', choices=('free_flyer', 'planar'), help='put the root link on this joint')
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


def example_robot_urdf(name):
    """The URDF path of the example-robot-data loader ``name`` (case-insensitive, e.g. 'talos')."""
    import example_robot_data.robots_loader as RL

    loaders = {k[: -len('Loader')].lower(): v for k, v in vars(RL).items() if k.endswith('Loader')}
    cls = loaders.get(name.lower())
    if cls is None or not getattr(cls, 'urdf_filename', ''):
        sys.exit(f'no URDF loader {name!r} in example-robot-data; known: {sorted(loaders)}')
    rel = os.path.join(cls.path, cls.urdf_subpath, cls.urdf_filename)
    return os.path.join(cls.model_path or RL.getModelPath(rel), rel)


def joint_maps(model, pm):
    """(to_pin_q, v permutation) from our q / v to Pinocchio's, joints matched by name
    (continuous joints: Pinocchio's (cos q, sin q))."""
    pv = np.empty(model.nv, dtype=int)
    parts = []
    for jt in model.joints:
        pj = pm.joints[pm.getJointId(jt.name)]
        pv[jt.v_slice] = np.arange(pj.idx_v, pj.idx_v + pj.nv)
        parts.append((jt, pj))

    def to_pin_q(q):
        q = np.atleast_2d(q)
        out = np.empty((q.shape[0], pm.nq))
        for jt, pj in parts:
            x = q[:, jt.q_slice]
            if pj.nq == 2 and jt.nq == 1:
                x = np.stack([np.cos(x[:, 0]), np.sin(x[:, 0])], axis=1)
            out[:, pj.idx_q : pj.idx_q + pj.nq] = x
        return out

    return to_pin_q, pv


def main(argv=None):
    args = parse_args(argv)
    try:
        import pinocchio as pin
    except ImportError:
        sys.exit('pinocchio is not installed (pip install pin): it is the reference of this benchmark')

    if args.example_robot:
        args.urdf = example_robot_urdf(args.example_robot)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter('ignore', rd.ModelWarning)  # published inertias, loaded as given
        model = rd.load_model(args.urdf, loops=False, root_joint=args.root_joint)
    root = {'free_flyer': pin.JointModelFreeFlyer(), 'planar': pin.JointModelPlanar()}.get(args.root_joint)
    if args.urdf.endswith('.xacro'):
        pm = pin.buildModelFromXML(model.urdf_xml) if root is None else pin.buildModelFromXML(model.urdf_xml, root)
    else:
        pm = pin.buildModelFromUrdf(args.urdf) if root is None else pin.buildModelFromUrdf(args.urdf, root)
    pd = pm.createData()
    n, N = model.nv, args.batch
    to_pin_q, pv = joint_maps(model, pm)

    rng = np.random.default_rng(args.seed)
    Q = model.random_configuration(rng, size=N)
    QD, QDD, TAU = rng.normal(size=(3, N, n))
    PQ = np.ascontiguousarray(to_pin_q(Q))
    # Pinocchio's velocity order (the same arrays, permuted once before timing)
    PQD, PQDD, PTAU = (np.ascontiguousarray(np.empty_like(X)) for X in (QD, QDD, TAU))
    PQD[:, pv], PQDD[:, pv], PTAU[:, pv] = QD, QDD, TAU
    q, qd, qdd, tau, pq = Q[0], QD[0], QDD[0], TAU[0], PQ[0]
    pqd, pqdd, ptau = PQD[0], PQDD[0], PTAU[0]

    # correctness guard (a benchmark of wrong numbers is worthless)
    Mp = pin.crba(pm, pd, pq)
    Mp = np.triu(Mp) + np.triu(Mp, 1).T
    M = rd.crba(model, q)
    err = max(
        np.abs(rd.rnea(model, q, qd, qdd) - pin.rnea(pm, pd, pq, pqd, pqdd)[pv]).max(),
        np.abs(M - Mp[np.ix_(pv, pv)]).max(),
        # forward dynamics compared in effort space (M of a humanoid is ill-conditioned)
        np.abs(M @ (rd.forward_dynamics(model, q, qd, tau) - pin.aba(pm, pd, pq, pqd, ptau)[pv])).max(),
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
            lambda: pin.rnea(pm, pd, pq, pqd, pqdd),
            lambda: rd.rnea(model, Q, QD, QDD),
            pin_loop(pin.rnea, PQ, PQD, PQDD),
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
            lambda: pin.aba(pm, pd, pq, pqd, ptau),
            lambda: rd.forward_dynamics(model, Q, QD, TAU),
            pin_loop(pin.aba, PQ, PQD, PTAU),
        ),
    ]

    # warm-up: numba compilation (single and batched signatures) and caches
    for _, _, *fns in cases:
        for fn in fns:
            for _ in range(3):
                fn()

    print(
        f'robot: {model.name} ({os.path.relpath(args.urdf)}), nq = {model.nq}, nv = {n}, '
        f'root joint: {args.root_joint or "fixed"}, N = {N}, '
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
