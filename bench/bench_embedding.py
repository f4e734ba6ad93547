"""IRSBot-2 per control step: constraint-embedding IK + inverse dynamics (seed 003) vs the
projection method on the global tree (seed 002), same run, same motion.

Ours: IK by continuation from the previous step (T1, dt = 1 ms), velocity/acceleration IK,
task-space inverse dynamics -> u. Anchor: from the same (q, qd) the projection engine's
projected inverse dynamics with thetadd = J_IK xdd + d(J_IK)/dt xd on the actuated joints (it
needs the full joint state, i.e. an IK of its own, which is NOT included: the ratio flatters the
anchor). Each time is the minimum over ``repeats`` passes (other load only slows a pass); the
per-step aim is printed next to it. Run: .venv/bin/python bench/bench_embedding.py [steps] [repeats]
"""

import sys
import time

import numpy as np

import robot_dynamics as rd
from robot_dynamics.algorithms import projection as P
from robot_dynamics.pkm import embedding as E
from robot_dynamics.pkm import irsbot2 as I


AIM_US = 300.0


def main(steps=300, repeats=7):
    m = rd.load_model(rd.data_path('urdf/irsbot2.urdf'))
    pk = E.get_pkm(m)
    tr = E.IKTracker(m)
    ts = np.arange(1, steps + 1) * 1e-3
    refs = [I.trajectory(t) for t in ts]
    sol, mo = tr.step(*refs[0])  # warm-up (numba kernels: IK, motion, dynamics)
    pk.task_dynamics(sol, refs[0][1], refs[0][2], motion=mo)
    t_ours = np.inf
    for _ in range(repeats):  # the same T1 pass from the reference each time
        tr.reset()
        states, us = [], []
        t0 = time.perf_counter()
        for x, xd, xdd in refs:
            sol, mo = tr.step(x, xd, xdd)
            td = pk.task_dynamics(sol, xd, xdd, motion=mo)
            states.append((mo.q, mo.qd, mo.qdd))
            us.append(td.u)
        t_ours = min(t_ours, (time.perf_counter() - t0) / steps)
    t_proj = np.inf
    for _ in range(max(1, repeats // 2)):
        t0 = time.perf_counter()
        ua = []
        for q, qd, qdd in states:
            ua.append(P.projected_inverse_dynamics(m, q, qd, u=qdd).tau_actuated)
        t_proj = min(t_proj, (time.perf_counter() - t0) / steps)
    err = max(np.abs(a - b).max() / np.abs(b).max() for a, b in zip(us, ua))
    print(f'IRSBot-2, {steps} steps of T1 at dt = 1 ms, min over {repeats} passes')
    print(f'  IRSBot-2 step (embedding IK + vel/acc IK + ID): {t_ours * 1e6:9.1f} us/step (aim <= {AIM_US:.0f})')
    print(f'  anchor: projection ID on global tree          : {t_proj * 1e6:9.1f} us/step (given q, qd, qdd)')
    print(f'  ratio embedding / projection                  : {t_ours / t_proj:9.2f}')
    print(f'  max relative difference of u                  : {err:.2e}')
    print(f'  1 kHz budget (1000 us) met                    : {t_ours < 1e-3}')


if __name__ == '__main__':
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300, int(sys.argv[2]) if len(sys.argv) > 2 else 7)
