"""Assembly from any pose: ``rd.assemble`` against Newton-Raphson alone (``fallback=False``).

For every robot with a sidecar in urdf/ and the test robots two_weld_leg and biped_rods:

* from the drawing pose (q = 0 / identity), nothing fixed;
* with the actuated joints held at a closed configuration's values, from N seeded random
  guesses (``model.random_configuration``).

Prints the number of closed results (true closure residual <= 1e-12, checked again here with
``rd.closure_errors``) and the median / max wall time per call. Run from the repository root:

    PYTHONPATH=. .venv/bin/python bench/bench_assembly.py [--n 20]
"""

import argparse
import glob
import os
import time

import numpy as np

import robot_dynamics as rd
from robot_dynamics.errors import AssemblyError


def _try(m, qi, guess, fixed, fallback):
    t = time.perf_counter()
    try:
        res = rd.assemble(m, qi, q_guess=guess, fixed=fixed, fallback=fallback)
        ok = max(max(v) for v in rd.closure_errors(m, res.q).values()) <= 1e-12
    except AssemblyError:
        ok = False
    return ok, time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--n', type=int, default=20, help='random guesses per robot')
    args = ap.parse_args()
    paths = sorted(p[: -len('.loops.yaml')] + '.urdf' for p in glob.glob('urdf/*.loops.yaml'))
    paths += ['test/data/two_weld_leg.urdf', 'test/data/biped_rods.urdf']
    print(f'{"robot":24s} {"from q=0":>22s}   {"actuators held, " + str(args.n) + " random guesses":>48s}')
    print(f'{"":24s} {"ours":>10s} {"NR alone":>11s}   {"ours ok":>8s} {"median/max [s]":>16s} {"NR alone ok":>12s}')
    for path in paths:
        m = rd.load_model(path)
        z = m.neutral()
        rd.assemble(m, q_guess=m.reference_q())  # compile / warm up
        ok0, t0 = _try(m, None, z, 'none', True)
        nr0, _ = _try(m, None, z, 'none', False)
        closed = rd.assemble(m, q_guess=m.reference_q()).q
        act = m.q_of_v[m.actuated_indices]
        rng = np.random.default_rng(0)
        ours, times, nr = 0, [], 0
        for _ in range(args.n):
            g = m.random_configuration(rng)
            g[act] = closed[act]
            ok, dt = _try(m, closed[act], g, 'actuated', True)
            ours += ok
            times.append(dt)
            nr += _try(m, closed[act], g, 'actuated', False)[0]
        name = os.path.basename(path)[:-5]
        print(
            f'{name:24s} {("ok " if ok0 else "FAIL ") + f"{t0:.3f}s":>10s} {"ok" if nr0 else "fails":>11s}   '
            f'{ours:>5d}/{args.n:<2d} {np.median(times):>7.3f}/{max(times):<8.3f} {nr:>9d}/{args.n:<2d}'
        )


if __name__ == '__main__':
    main()
