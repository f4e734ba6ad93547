"""Benchmark: one inertia-partitioning controller step (seed 000) vs the same torques by the
projection method on the spanning tree (seed 002), same states, same run.

    python bench/bench_partitioning.py [--n 300] [--repeats 7]

Ours: IPController.compute (loop map, per-body Jacobians and their derivatives, Gamma, dGamma,
gravity, the per-DoF modules, the Lyapunov diagnostics). Anchor: the loop map's full q, qd and
rd.projected_inverse_dynamics(model, q, qd, thdd_d) (constraint terms, SVD projector,
independent-coordinate map, RNEA/CRBA in compiled kernels). On the reference (e = ed = 0) both
give the same torques; the script checks that before timing.

Also times the same controller on the NUMERIC loop map (the compiled Newton loop closure used
for every loop that is not the closed-form isosceles triangle), forced on the same robot. Each
time is the minimum over ``--repeats`` passes over the states (other load only slows a pass),
printed next to its anchor and the per-step aim (closed form <= 200 us, numeric <= 1000 us).

Second robot: test/data/cylinder_elbow_3dof (a scalene cylinder elbow given only as URDF +
sidecar: the numeric loop map is the only one), states = the minimal-coordinate reference of
its bringup's Cartesian tool path (pick-and-place), computed by the inverse output map
(partitioning.CartesianReference), whose cost per sample is printed too.
"""

import argparse
import os
import time

import numpy as np

import robot_dynamics as rd
from robot_dynamics.control.inertia_partitioning import IPController, brief_trajectory
from robot_dynamics.algorithms.partitioning import CartesianReference, PartitionedModel
from robot_dynamics.control.trajectories import Sin2PickPlace

CYL = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'test', 'data', 'cylinder_elbow_3dof.urdf')
# the tool path of test/data/cylinder_elbow_3dof.yaml
CYL_PATH = dict(r0=[1.9369971805886261, 0.0, 0.3272821456159858], a=[0.1, 0.25, -0.1], b=[0.0, 0.0, 0.4], frequency=0.2)


AIM_CLOSED_FORM = 200.0
AIM_NUMERIC = 1000.0


def best_of(f, items, repeats):
    """Minimum over ``repeats`` passes of the mean time per item [us]."""
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        for it in items:
            f(it)
        best = min(best, (time.perf_counter() - t0) / len(items) * 1e6)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--n', type=int, default=300)
    ap.add_argument('--repeats', type=int, default=7)
    a = ap.parse_args()
    m = rd.load_model(rd.data_path('urdf/series_parallel_3dof.urdf'))
    traj = brief_trajectory()
    R = [traj(t) for t in np.linspace(0, 10, a.n)]
    print(f'series_parallel_3dof, {a.n} states of the brief trajectory, min over {a.repeats} passes')
    for kind, aim in (('closed_form', AIM_CLOSED_FORM), ('numeric', AIM_NUMERIC)):
        pm = PartitionedModel(m, kind)
        maps = [pm.loop_map.evaluate(r[0]) for r in R]
        for law in ('paper', 'pdplus'):
            _bench_law(a, m, pm, IPController(pm, law), R, maps, kind, law, aim)
    bench_cylinder_elbow(a)


def bench_cylinder_elbow(a):
    m = rd.load_model(CYL)
    path = Sin2PickPlace(**CYL_PATH)
    ref = CartesianReference(m, path)
    ts = np.linspace(0, 5, a.n)
    R = [ref(t) for t in ts]
    t_ref = best_of(lambda t: ref(t), ts, max(1, a.repeats // 2))
    pm = PartitionedModel(m)
    maps = [pm.loop_map.evaluate(r[0]) for r in R]
    print(
        f'cylinder_elbow_3dof (loop map {pm.loop_map.kind}), {a.n} states of the Cartesian '
        f'pick-and-place through the inverse output map ({t_ref:.0f} us per reference sample)'
    )
    for law in ('paper', 'pdplus'):
        _bench_law(a, m, pm, IPController(pm, law, kp=4000.0, kv=800.0), R, maps, 'numeric', law, AIM_NUMERIC)


def _bench_law(a, m, pm, c, R, maps, kind, law, aim):
    """One row: our controller step vs the projection method on the same states (agreement
    on the reference, min-of-passes timings)."""
    worst = 0.0
    for r, lm in zip(R, maps):
        ours = c.compute(r[0], r[1], r[0], r[1], r[2]).Q
        proj = rd.projected_inverse_dynamics(m, lm.q, lm.G @ r[1], r[2]).tau_actuated
        worst = max(worst, np.abs(ours - proj).max() / np.abs(proj).max())
    t_ours = best_of(lambda r: c.compute(r[0], r[1], r[0], r[1], r[2]), R, a.repeats)
    t_proj = best_of(
        lambda rl: rd.projected_inverse_dynamics(m, rl[1].q, rl[1].G @ rl[0][1], rl[0][2]),
        list(zip(R, maps)),
        a.repeats,
    )
    t_terms = best_of(lambda r: pm.terms(r[0]), R, a.repeats)
    print(
        f'{kind:11s} law {law:7s}: controller step {t_ours:8.1f} us (aim <= {aim:.0f}; '
        f'Gamma, dGamma, Qg alone {t_terms:7.1f} us) | projection method {t_proj:8.1f} us | '
        f'ratio ours/projection {t_ours / t_proj:5.2f} | max rel torque difference {worst:.1e}'
    )


if __name__ == '__main__':
    main()
