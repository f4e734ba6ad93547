"""IRSBot-2 per control step: constraint-embedding IK + inverse dynamics (seed 003) vs the
projection method on the global tree (seed 002), same run, same motion.

Ours: IK by continuation from the previous step (T1, dt = 1 ms), velocity/acceleration IK,
task-space inverse dynamics -> u. Anchor: from the same (q, qd) the projection engine's
projected inverse dynamics with thetadd = J_IK xdd + d(J_IK)/dt xd on the actuated joints (it
needs the full joint state, i.e. an IK of its own, which is NOT included: the ratio flatters the
anchor). Run: .venv/bin/python bench/bench_embedding.py [steps]
"""
import sys
import time

import numpy as np

import robot_dynamics as rd
from robot_dynamics import projection as P
from robot_dynamics.pkm import embedding as E
from robot_dynamics.pkm import irsbot2 as I


def main(steps=300):
    m = rd.load_model(rd.data_path('urdf/irsbot2.urdf'))
    pk = E.get_pkm(m)
    tr = E.IKTracker(m)
    ts = np.arange(1, steps + 1) * 1e-3
    refs = [I.trajectory(t) for t in ts]
    tr.step(*refs[0])                      # warm-up (numba kernels)
    tr.reset()
    t0 = time.perf_counter()
    states, us = [], []
    for x, xd, xdd in refs:
        sol, mo = tr.step(x, xd, xdd)
        td = pk.task_dynamics(sol, xd, xdd, motion=mo)
        states.append((mo.q, mo.qd, mo.qdd))
        us.append(td.u)
    t_ours = (time.perf_counter() - t0) / steps
    t0 = time.perf_counter()
    ua = []
    for q, qd, qdd in states:
        ua.append(P.projected_inverse_dynamics(m, q, qd, u=qdd).tau_actuated)
    t_proj = (time.perf_counter() - t0) / steps
    err = max(np.abs(a - b).max() / np.abs(b).max() for a, b in zip(us, ua))
    print(f'IRSBot-2, {steps} steps of T1 at dt = 1 ms')
    print(f'  embedding  IK + vel/acc IK + ID : {t_ours * 1e6:9.1f} us/step')
    print(f'  projection ID on global tree   : {t_proj * 1e6:9.1f} us/step (given q, qd, qdd)')
    print(f'  ratio embedding / projection   : {t_ours / t_proj:9.2f}')
    print(f'  max relative difference of u   : {err:.2e}')
    print(f'  1 kHz budget (1000 us) met     : {t_ours < 1e-3}')


if __name__ == '__main__':
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
