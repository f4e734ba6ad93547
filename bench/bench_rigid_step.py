#!/usr/bin/env python3
"""Rigid plant step (sim_node's ``plant: rigid``) of the robots whose configs run it: the fast
route (robot_dynamics.plants._rigid_kernels: RK4 stages by the Schur complement on the L^T D L
factors of M where A has certified full row rank, else certified URV factorization + null-space
form of eq. 22) against the reference SVD route (robot_dynamics.algorithms._projection_kernels), same model, same states.

Per robot: microseconds per ``ConstrainedPlant.step`` (the whole call sim_node makes: RK4 with
tau held, Newton position projection, velocity projection, end-of-step dynamics and monitor)
and per compiled kernel call alone, min and median over ``--repeats`` repeats of ``--steps``
steps from the config's initial state under the gravity hold (thread CPU time, so that other
work on the machine does not count), beside the step's budget 1/rate.

    .venv/bin/python bench/bench_rigid_step.py
    .venv/bin/python bench/bench_rigid_step.py --robots gough_stewart --repeats 15
"""

import argparse
import os
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)  # benchmark the source tree (as the tests do)

import robot_dynamics as rd  # noqa: E402
from robot_dynamics.plants import _rigid_kernels as FK  # noqa: E402
from robot_dynamics.algorithms import _projection_kernels as PK  # noqa: E402
from robot_dynamics.ros.bringup import load_bringup  # noqa: E402
from robot_dynamics.control import hold_command  # noqa: E402
from robot_dynamics.plants.rigid import ConstrainedPlant  # noqa: E402


def per_call(fn, reset, steps, repeats):
    ts = []
    for _ in range(repeats):
        reset()
        t0 = time.thread_time()
        for _ in range(steps):
            fn()
        ts.append((time.thread_time() - t0) / steps * 1e6)
    return min(ts), statistics.median(ts)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--robots', nargs='+', default=['gough_stewart', 'irsbot2_t1', 'irsbot2', 'five_bar'])
    ap.add_argument('--steps', type=int, default=50)
    ap.add_argument('--repeats', type=int, default=9)
    a = ap.parse_args(argv)
    print(
        f'{"robot":16s} {"n":>3s} {"m":>3s} {"rate":>6s} {"budget":>7s}   '
        f'{"step ref":>15s} {"step fast":>15s} {"kernel ref":>15s} {"kernel fast":>15s}  (us: min / median)'
    )
    for robot in a.robots:
        b = load_bringup(robot)
        sim = next(s for s in b.nodes if s.executable == 'sim_node')
        if sim.parameters.get('plant', 'rigid') != 'rigid':
            continue
        m = rd.load_model(b.urdf, loops=b.loops or None)
        q0 = sim.parameters.get('initial_positions')
        rate = float(sim.parameters['rate'])
        row = {}
        for kernel in ('reference', 'fast'):
            p = ConstrainedPlant(m, None if q0 is None else np.asarray(q0, float), dt=1.0 / rate, kernel=kernel)
            tau = hold_command(m, p.q, p.qd, 2.0)
            p.step(tau)  # compile / load
            st = p.state
            row['step', kernel] = per_call(
                lambda: p.step(tau), lambda: p.reset(st[1], st[2], st[0]), a.steps, a.repeats
            )
            n, mm = m.nq, m.nconstraints
            out = [np.empty(n) for _ in range(5)] + [np.empty(mm), np.zeros(min(n, mm)), np.empty(mm)]
            q, qd = p.q.copy(), p.qd.copy()
            fast = kernel == 'fast'
            call = lambda: FK.sim_step_rk4(
                p._pack,
                q,
                qd,
                tau,
                1.0 / rate,
                p._vcode,  # 'Mc' (fast) or 'Mc_svd' (reference: the SVD route at every stage)
                0.0,
                p.eps,
                fast,
                True,
                p.nr_tol,
                p.nr_max_iter,
                PK.VP_EUCLIDEAN,
                *out,
            )  # noqa: E731
            call()
            row['kernel', kernel] = per_call(call, lambda: None, a.steps, a.repeats)
        f = lambda k: f'{row[k][0]:6.1f} / {row[k][1]:6.1f}'  # noqa: E731
        print(
            f'{robot:16s} {m.nq:3d} {m.nconstraints:3d} {rate:6.0f} {1e6 / rate:7.0f}   '
            f'{f(("step", "reference")):>15s} {f(("step", "fast")):>15s} '
            f'{f(("kernel", "reference")):>15s} {f(("kernel", "fast")):>15s}',
            flush=True,
        )
    return 0


if __name__ == '__main__':
    sys.exit(main())
