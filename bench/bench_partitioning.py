"""Benchmark: one inertia-partitioning controller step (seed 000) vs the same torques by the
projection method on the spanning tree (seed 002), same states, same run.

    python bench/bench_partitioning.py [--n 300]

Ours: IPController.compute (loop map, per-body Jacobians and their derivatives, Gamma, dGamma,
gravity, the per-DoF modules, the Lyapunov diagnostics). Anchor: the loop map's full q, qd and
rd.projected_inverse_dynamics(model, q, qd, thdd_d) (constraint terms, SVD projector,
independent-coordinate map, RNEA/CRBA in compiled kernels). On the reference (e = ed = 0) both
give the same torques; the script checks that before timing.
"""
import argparse
import time

import numpy as np

import robot_dynamics as rd
from robot_dynamics.control.inertia_partitioning import IPController, brief_trajectory
from robot_dynamics.partitioning import PartitionedModel


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--n', type=int, default=300)
    a = ap.parse_args()
    m = rd.load_model(rd.data_path('urdf/series_parallel_3dof.urdf'))
    pm = PartitionedModel(m)
    for law in ('paper', 'pdplus'):
        c = IPController(pm, law)
        traj = brief_trajectory()
        R = [traj(t) for t in np.linspace(0, 10, a.n)]
        maps = [pm.loop_map.evaluate(r[0]) for r in R]
        # agreement on the reference
        worst = 0.0
        for r, lm in zip(R, maps):
            ours = c.compute(r[0], r[1], r[0], r[1], r[2]).Q
            proj = rd.projected_inverse_dynamics(m, lm.q, lm.G @ r[1], r[2]).tau_actuated
            worst = max(worst, np.abs(ours - proj).max() / np.abs(proj).max())
        t0 = time.perf_counter()
        for r in R:
            c.compute(r[0], r[1], r[0], r[1], r[2])
        t_ours = (time.perf_counter() - t0) / a.n * 1e6
        t0 = time.perf_counter()
        for r, lm in zip(R, maps):
            rd.projected_inverse_dynamics(m, lm.q, lm.G @ r[1], r[2])
        t_proj = (time.perf_counter() - t0) / a.n * 1e6
        t0 = time.perf_counter()
        for r in R:
            pm.terms(r[0])
        t_terms = (time.perf_counter() - t0) / a.n * 1e6
        print(f'law {law:7s}: controller step {t_ours:8.1f} us (Gamma, dGamma, Qg alone '
              f'{t_terms:7.1f} us) | projection method {t_proj:8.1f} us | ratio ours/projection '
              f'{t_ours / t_proj:5.2f} | max rel torque difference {worst:.1e}')


if __name__ == '__main__':
    main()
