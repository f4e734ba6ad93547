"""Benchmark: planar 3RRR SEA-PKM (seed 004), the 1 kHz loop of ``sim_node`` (plant ``sea``) and
``sea_controller``.

    PYTHONPATH=. python bench/bench_sea.py [--steps 300] [--repeats 7]

Records a closed loop (flatness controller tracking a 0.02 m sin^2-jerk move with a preload,
1 ms RK4 plant steps), then times, in the same run, per step in microseconds:

* plant step :meth:`SEAPlant.step` (compiled RK4, :func:`robot_dynamics.plants.sea._sea_rk4`) next to
  the numpy route it replaced (:meth:`SEAPlant._step_reference`: four
  ``Planar3RRR.task_space_dynamics`` calls per step, with the numpy preload solve of
  ``inverse_dynamics_d2`` as before: ``planar_sea._NUMPY_PRELOAD``), replaying the recorded torques from the
  same initial state; aim <= 250 us;
* controller step :meth:`SEAFlatnessController.__call__` (compiled ``_flatness_step``) next to
  its numpy route (``_call_reference``) on the recorded states; aim <= 200 us.

Minimum over repeated passes (other load on the shared cores only slows a pass); the machine's
load is printed. The kernels are warmed up first (``robot_dynamics.tools.warmup.warmup_sea_kernels``).
"""

import argparse
import os
import time

import numpy as np

import robot_dynamics as rd
from robot_dynamics.tools.warmup import warmup_sea_kernels
from robot_dynamics.control.flatness_sea import SEAFlatnessController
from robot_dynamics.pkm import planar_sea as ps
from robot_dynamics.control.trajectories import SinSquaredJerk
from robot_dynamics.plants.registry import make_plant


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--steps', type=int, default=300, help='1 ms steps of the recorded loop')
    ap.add_argument('--repeats', type=int, default=7, help='passes; the minimum is printed')
    a = ap.parse_args()
    m = rd.load_model(rd.data_path('urdf/planar_3rrr_sea.urdf'))
    warmup_sea_kernels(m)
    pl = make_plant('sea', m, m.reference_q(), dt=1e-3)
    ctrl = SEAFlatnessController(m, params=pl.params)
    move = SinSquaredJerk(pl.p, pl.p + np.array([0.02, 0.0]), 0.25, t0=0.01)
    lam_d = np.array([0.5, 0.0, 0.0])
    x0 = (pl.p.copy(), pl.pd.copy(), pl.qm.copy(), pl.qdm.copy())
    S, Y, T = [], [], []
    for k in range(a.steps):  # record the closed loop
        s = (pl.p.copy(), pl.pd.copy(), pl.qm.copy(), pl.qdm.copy())
        yd = move(pl.t)
        tau = ctrl(*s, yd, lam_d)
        S.append(s)
        Y.append(yd)
        T.append(tau)
        pl.step(tau)
    err = np.linalg.norm(pl.p - move(pl.t)[0])

    def best(f, repeats=a.repeats):
        b = np.inf
        for _ in range(repeats):
            b = min(b, f())
        return float(b)

    def plant_pass(step):
        def run():
            pl.set_state(*x0, t=0.0)
            t = time.perf_counter()
            for tau in T:
                step(tau)
            return (time.perf_counter() - t) / len(T) * 1e6

        return run

    def ctrl_pass(call):
        def run():
            t = time.perf_counter()
            for s, yd in zip(S, Y):
                call(*s, yd, lam_d)
            return (time.perf_counter() - t) / len(S) * 1e6

        return run

    plant_new = best(plant_pass(pl.step))
    ctrl_new = best(ctrl_pass(ctrl))
    ps._NUMPY_PRELOAD = True  # the reference routes exactly as before (numpy preload)
    try:
        plant_ref = best(plant_pass(pl._step_reference))
        ctrl_ref = best(ctrl_pass(ctrl._call_reference))
    finally:
        ps._NUMPY_PRELOAD = False
    # agreement of the two routes over the recorded loop
    pl.set_state(*x0, t=0.0)
    ref = make_plant('sea', m, m.reference_q(), dt=1e-3)
    ref.set_state(*x0, t=0.0)
    for tau in T:
        pl.step(tau)
        ref._step_reference(tau)
    dx = max(np.max(np.abs(pl.true_q - ref.true_q)), np.max(np.abs(pl.qdm - ref.qdm)))
    dtau = max(np.max(np.abs(ctrl(*s, yd, lam_d) - ctrl._call_reference(*s, yd, lam_d))) for s, yd in zip(S, Y))
    print(
        f'planar 3RRR SEA-PKM, {a.steps} steps of 1 ms, best of {a.repeats} passes; '
        f'load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; '
        f'tracking error at the end {err:.1e} m'
    )
    print(f'{"us per step":<34}{"compiled":>10}{"numpy route":>13}{"aim":>9}')
    print(f'{"plant step (SEAPlant.step)":<34}{plant_new:>10.1f}{plant_ref:>13.1f}{"<= 250":>9}')
    print(f'{"controller step (flatness law)":<34}{ctrl_new:>10.1f}{ctrl_ref:>13.1f}{"<= 200":>9}')
    print(f'compiled vs numpy route over the loop: max |dq| {dx:.1e} rad, max |dtau| {dtau:.1e} N m')
    ok = plant_new <= 250 and ctrl_new <= 200
    print('aims met' if ok else 'AIM MISSED')


if __name__ == '__main__':
    main()
