"""The offline twin of the lock-step hydraulic boom graph (no ROS): the same plant
(``make_plant('hydraulic')`` as sim_node builds it), the same reference
(:class:`~robot_dynamics.control.vdc.BoomTaskProfile`, sampled at the state's stamp as
trajectory_node does with ``sync_topic``) and the same law in the same loop
(:class:`~robot_dynamics.control.vdc.VDCController` in :class:`~robot_dynamics.control.loop.ControlLoop`
with ``sync``), fed the values the messages carry (stamps as integer ns, seconds as
``sec + 1e-9 nanosec``). Used by test_vdc_law.py and test_ros_hydraulic.py."""

import numpy as np

import robot_dynamics as rd
from robot_dynamics.control.loop import ControlLoop
from robot_dynamics.control.vdc import BoomTaskProfile, VDCController
from robot_dynamics.plants.registry import make_plant

ABCD = [2.07152, 0.39253, 2.47152, 0.39253, 2.47152, 0.09253, 2.07152, 0.09253]


def boom_model():
    return rd.load_model(rd.data_path('urdf/hydraulic_boom.urdf'))


def stamp_sec(ns):
    """What a node reads from header.stamp (builtin_interfaces/Time of ``ns``)."""
    return ns // 1_000_000_000 + 1e-9 * (ns % 1_000_000_000)


def state_entries(model, plant):
    """names, positions, velocities of sim_node's /hydraulics/cylinder_states message."""
    ex = plant.extra_states()
    names = list(model.joint_names) + list(ex['names'])
    pos = plant.q.tolist() + [float(v) for v in ex['x']]
    vel = plant.qd.tolist() + [float(v) for v in ex['xd']]
    for i, c in enumerate(ex['names']):
        for k, key in (('p_a', 'pa'), ('p_b', 'pb'), ('u', 'u')):
            names.append(f'{c}/{k}')
            pos.append(float(ex[key][i]))
            vel.append(0.0)
    return names, pos, vel


def lockstep_boom(t_end, model=None, loops=1, rate=1000.0):
    """Run the lock-step closed loop to plant time ``t_end``; returns (states: stamp ns -> joint
    positions (nq,) as published, pressures: list of (pa, pb), commands (N, p))."""
    m = model or boom_model()
    plant = make_plant('hydraulic', m, m.reference_q(), dt=1.0 / rate)
    prof = BoomTaskProfile(m, ABCD, loops=loops)
    law = VDCController(m, dt=1.0 / rate)
    law.prepare()
    loop = ControlLoop(
        law,
        period=1.0 / rate,
        sync=True,
        safe='zero',
        state_timeout=0.1,
        reference_timeout=0.1,
        max_extrapolation=0.02,
        wait_first_reference=True,
    )
    idx = [m.joint_index(j) for j in m.actuated]
    states, pres, cmds = {}, [], []
    ns0 = None
    while True:
        ns = int(round(plant.t * 1e9))
        ns0 = ns if ns0 is None else ns0
        states[ns] = plant.q.copy()
        if plant.t > t_end + 1e-9:
            break
        s = stamp_sec(ns)
        names, pos, vel = state_entries(m, plant)
        assert loop.set_state(names, pos, vel, s, s) is None
        x = prof((ns - ns0) * 1e-9)
        assert loop.set_reference(x[0], x[1], x[2], stamp=s, names=prof.joints) is None
        c = loop.update(s)
        assert c is not None and not c.safe, (c, loop.last_reject)
        tau = np.zeros(m.nq)
        tau[idx] = c.effort
        ex = plant.extra_states()
        pres.append((np.array(ex['pa']), np.array(ex['pb'])))
        cmds.append(c.effort.copy())
        plant.step(tau)
    return states, pres, np.array(cmds)
