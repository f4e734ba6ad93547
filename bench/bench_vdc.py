"""Benchmark: seed 001 hydraulic boom (two Lift/Tilt segments), states of the A-B-C-D task.

    python bench/bench_vdc.py [--seconds 4] [--repeats 5]

Reports microseconds per VDC controller step (:meth:`VDCController.step`, required velocities,
net forces, eq. 76/77, eq. 90 and the valve inversion), per task-reference evaluation
(:class:`TaskReference`: Newton IK + J^-1 maps, needed by the node in task mode), per plant step
(:meth:`HydraulicPlant.step`: RK4, 1 ms, 4 derivative evaluations of the third-order model),
and the plant's simulated-time / wall-time ratio (the paper: 0.05 for its own model and 0.14 for
Simscape, i.e. their models ran 20x and 7x slower than real time; > 1 = faster than real
time). Minimum over repeated passes over the same recorded states (other load only slows a
pass); the machine's load is printed. Each line shows its anchor (the task reference: its numpy
route :meth:`TaskReference.reference`; the plant: the paper's ratios) and the per-step aim.
"""

import argparse
import os
import time

import numpy as np

import robot_dynamics as rd
from robot_dynamics.control.vdc import TaskReference, VDCController, quintic_legs
from robot_dynamics.plants.hydraulic import HydraulicPlant


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--seconds', type=float, default=4.0, help='simulated seconds of the task')
    ap.add_argument('--repeats', type=int, default=5, help='passes; the minimum is printed')
    a = ap.parse_args()
    m = rd.load_model(rd.data_path('urdf/hydraulic_boom.urdf'))
    pl = HydraulicPlant(m)
    st = pl.st
    q0 = pl.qs
    p0 = st.tool_pose(q0)[1][[0, 2]]
    pts = [p0, (2.07152, 0.39253), (2.47152, 0.39253), (2.47152, 0.09253), (2.07152, 0.09253)]
    path = lambda t: quintic_legs(pts, [2.0] * 4, t)  # noqa: E731
    ref = TaskReference(st, path, (0, 2), q0)
    ctrl = VDCController(st, pl.hp)
    n = int(round(a.seconds / 1e-3))
    S, R, U, X = [], [], [], []
    for _ in range(n):  # record the closed loop (and warm up)
        r = ref(pl.t)
        u = ctrl.step(pl.qs, pl.qds, pl.pa, pl.pb, r)
        S.append((pl.qs, pl.qds, pl.pa, pl.pb))
        R.append(r)
        U.append(u)
        X.append(pl.X.copy())
        pl.step(u)

    def per_call(f, m=n, repeats=a.repeats):
        best = np.inf
        for _ in range(repeats):
            t = time.perf_counter()
            for k in range(m):
                f(k)
            best = min(best, (time.perf_counter() - t) / m * 1e6)
        return float(best)

    ctrl.reset()
    us_ctrl = per_call(lambda k: ctrl.step(*S[k], R[k]))
    ref2 = TaskReference(st, path, (0, 2), q0)
    us_ref = per_call(lambda k: ref2(k * 1e-3))
    ref3 = TaskReference(st, path, (0, 2), q0)
    us_ref_np = per_call(lambda k: ref3.reference(k * 1e-3), repeats=1)

    def plant(k):
        pl.X[:] = X[k]
        pl.step(U[k])

    us_plant = per_call(plant)
    print(
        f'hydraulic_boom (2 segments), {n} states of the A-B-C-D task, load {os.getloadavg()[0]:.1f} '
        f'on {os.cpu_count()} cores'
    )
    print(f'  VDC controller step        {us_ctrl:8.1f} us   (aim <= 200 us for 1 kHz)')
    print(
        f'  task reference (IK, J^-1)  {us_ref:8.1f} us   (aim <= 200; numpy route '
        f'TaskReference.reference {us_ref_np:.1f} us)'
    )
    print(
        f'  plant step (RK4, 1 ms)     {us_plant:8.1f} us   (aim <= 250) -> simulated/wall time = '
        f'{1e3 / us_plant:.2f} (paper: 0.05 own model, 0.14 Simscape)'
    )
    print(
        f'  closed loop ctrl+ref+plant {us_ctrl + us_ref + us_plant:8.1f} us   -> simulated/wall = '
        f'{1e3 / (us_ctrl + us_ref + us_plant):.2f}'
    )


if __name__ == '__main__':
    main()
