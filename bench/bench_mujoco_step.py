#!/usr/bin/env python3
"""Plant step on MuJoCo next to the rigid plant, per robot of ``urdf/``, in one run.

Per robot: microseconds per ``MujocoPlant.step`` (``robot_dynamics.plants.mujoco_plant``: 5
MuJoCo RK4 steps of 0.2 ms with the generalized force held, the state read back and the
package's loop residual computed) and per ``ConstrainedPlant.step`` (the rigid plant: RK4 at
1 ms with Newton position and velocity projection), 1 ms steps from the reference
configuration under the static gravity hold; min and median over ``--repeats`` repeats of
``--steps`` steps (thread CPU time, so that other work on the machine does not count). The
MuJoCo step is also given without the loop residual (``monitor_closure=False``: MuJoCo's own
equality violations instead).

    .venv/bin/python bench/bench_mujoco_step.py
    .venv/bin/python bench/bench_mujoco_step.py --robots five_bar irsbot2 --repeats 9
"""

import argparse
import os
import platform
import statistics
import sys
import time
import warnings

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)  # benchmark the source tree (as the tests do)

import robot_dynamics as rd  # noqa: E402
from robot_dynamics.algorithms.projection import hold_command  # noqa: E402
from robot_dynamics.plants.mujoco_plant import MujocoPlant  # noqa: E402


def per_step(plant, tau, steps, repeats):
    q0, qd0 = plant.q.copy(), plant.qd.copy()
    ts = []
    for _ in range(repeats):
        plant.reset(q0, qd0)
        t0 = time.thread_time()
        for _ in range(steps):
            plant.step(tau)
        ts.append((time.thread_time() - t0) / steps * 1e6)
    return min(ts), statistics.median(ts)


def main(argv=None):
    robots = sorted(f[:-5] for f in os.listdir(os.path.join(ROOT, 'urdf')) if f.endswith('.urdf'))
    ap = argparse.ArgumentParser(
        description=__doc__.split('\n\n')[0],
        epilog=__doc__.split('\n\n', 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument('--robots', nargs='+', default=robots, choices=robots, metavar='ROBOT')
    ap.add_argument('--steps', type=int, default=200, help='steps per repeat (default 200)')
    ap.add_argument('-r', '--repeats', type=int, default=5, help='repeats; min and median reported (default 5)')
    args = ap.parse_args(argv)
    import mujoco

    print(
        f'# {platform.processor() or platform.machine()}, Python {platform.python_version()}, '
        f'numpy {np.__version__}, mujoco {mujoco.__version__}; thread CPU time, 1 ms plant steps'
    )
    print(
        f'# {"robot":28s} {"nv":>3s} {"loops":>5s} | {"rigid us":>15s} | {"mujoco us":>15s} | '
        f'{"mujoco, no residual":>19s} | {"mj/rigid":>8s}'
    )
    for name in args.robots:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore', rd.ModelWarning)
            m = rd.load_model(os.path.join(ROOT, 'urdf', f'{name}.urdf'))
        rig = rd.ConstrainedPlant(m, dt=1e-3)
        tau = hold_command(m, rig.q, rig.qd)
        mj = MujocoPlant(m, rig.q, rig.qd, dt=1e-3)
        mj_fast = MujocoPlant(m, rig.q, rig.qd, dt=1e-3, monitor_closure=False)
        for p in (rig, mj, mj_fast):  # warm-up (compiled kernels)
            for _ in range(5):
                p.step(tau)
        r = per_step(rig, tau, args.steps, args.repeats)
        a = per_step(mj, tau, args.steps, args.repeats)
        b = per_step(mj_fast, tau, args.steps, args.repeats)
        print(
            f'  {name:28s} {m.nv:3d} {len(m.loops):5d} | {r[0]:6.0f} / {r[1]:6.0f} | {a[0]:6.0f} / {a[1]:6.0f} | '
            f'{b[0]:8.0f} / {b[1]:8.0f} | {a[1] / r[1]:8.2f}'
        )
    print('# (min / median microseconds per 1 ms plant step)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
