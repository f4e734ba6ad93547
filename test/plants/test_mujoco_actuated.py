"""The hydraulic and SEA plants on the MuJoCo backend (robot_dynamics.plants.mujoco_actuated)
against the same plants on the rigid backend, in the same closed loops.

* SEA: the springs are MuJoCo tendons integrated jointly with the multibody (RK4 0.2 ms)
  against the package's RK4 (1 ms) of the task-space link side and the motors: the same
  flatness law on the same move gives the same joints to 1e-8 rad (measured 4e-11 on the
  planar 3RRR, 3e-10 on the five-bar SEA: the closures' softness, 1e-10 m).
* Hydraulic: the pressures co-simulated at MuJoCo's 0.2 ms step (cylinder force held over the
  step, pressures by RK4 with the stroke interpolated) against the joint RK4 at 1 ms: along the
  boom's lock-step VDC loop (test/boom_offline.py) the joints agree to 1e-5 rad and the
  pressures to 0.05 bar (measured over 4 s: 3e-6 rad, 0.005 bar; tool error 3.003 mm on both).
"""

import os
import sys

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.control.laws import make_law
from robot_dynamics.errors import InputError
from robot_dynamics.plants import registry
from robot_dynamics.plants.registry import make_plant

pytest.importorskip('mujoco')
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import boom_offline  # noqa: E402
from sea_offline import sea_move  # noqa: E402

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_backends_and_kinds():
    assert registry.BACKENDS == ('rigid', 'mujoco')
    assert {'rigid', 'hydraulic', 'sea'} <= set(registry.plant_kinds('mujoco'))
    m = rd.load_model(rd.data_path('urdf/five_bar.urdf'))
    assert type(make_plant('rigid', m, backend='mujoco')).__name__ == 'MujocoPlant'
    with pytest.raises(InputError, match=r"unknown backend 'bullet' \(known: \['rigid', 'mujoco'\]\)"):
        make_plant('rigid', m, backend='bullet')
    registry.register_plant('only_rigid', lambda model, **kw: None)
    try:
        with pytest.raises(InputError, match="plant 'only_rigid' has no mujoco backend"):
            make_plant('only_rigid', m, backend='mujoco')
    finally:
        registry._REGISTRY.pop(('only_rigid', 'rigid'))


@pytest.mark.parametrize(
    'path, preload',
    [(rd.data_path('urdf/planar_3rrr_sea.urdf'), 0.5), (os.path.join(HERE, 'data', 'five_bar_sea.urdf'), 0.0)],
)
def test_sea_on_mujoco_moves_as_on_the_rigid_backend(path, preload):
    m = rd.load_model(path)
    out = {}
    for backend in ('rigid', 'mujoco'):
        law = make_law(m, 'sea_flatness', poles=30.0, lambda_poles=30.0, preload=preload)
        plant = make_plant('sea', m, dt=1e-3, backend=backend)
        q0 = plant.q.copy()
        hold = plant.hold_command(0.2)
        emax, res = sea_move(law, plant, np.array([0.03, 0.02]))
        out[backend] = (q0, plant.q.copy(), emax, hold)
    (q0r, qr, er, hr), (q0m, qm, em, hm) = out['rigid'], out['mujoco']
    print(f'\n{m.name}: |dq| end {np.abs(qr - qm).max():.1e}, max error {er:.3e} / {em:.3e}')
    assert np.abs(q0r - q0m).max() < 1e-12  # the same initial state (motors preloading the springs)
    assert np.abs(hr - hm).max() < 1e-9  # the same hold
    assert np.abs(qr - qm).max() < 1e-8
    assert abs(er - em) < 1e-3 * er


def test_hydraulic_on_mujoco_follows_the_rigid_backend(monkeypatch):
    m = boom_offline.boom_model()
    runs = {}
    for backend in ('rigid', 'mujoco'):
        monkeypatch.setattr(
            boom_offline, 'make_plant', lambda *a, b=backend, **k: registry.make_plant(*a, backend=b, **k)
        )
        states, pres, cmds = boom_offline.lockstep_boom(1.0, m)
        runs[backend] = (np.array(list(states.values())), np.array([np.r_[a, b] for a, b in pres]), cmds)
    (qr, pr, ur), (qm, pm, um) = runs['rigid'], runs['mujoco']
    n = min(len(qr), len(qm))
    dq, dp = np.abs(qr[:n] - qm[:n]).max(), np.abs(pr[:n] - pm[:n]).max()
    print(f'\nboom, 1 s: |dq| {dq:.1e} rad, |dp| {dp / 1e5:.1e} bar, |du| {np.abs(ur[:n] - um[:n]).max():.1e} V')
    assert np.ptp(qm[:, m.joint_index('lift_joint')]) > 0.005  # it moved
    assert dq < 1e-5 and dp < 0.05e5


def test_hydraulic_on_mujoco_interface():
    m = boom_offline.boom_model()
    r = make_plant('hydraulic', m, dt=1e-3)
    p = make_plant('hydraulic', m, dt=1e-3, backend='mujoco')
    assert p.command_interface == 'valve_voltage'
    assert np.array_equal(p.command_limits(), r.command_limits())
    er, ep = r.extra_states(), p.extra_states()
    assert er['names'] == ep['names']
    for k in ('x', 'pa', 'pb', 'fp'):
        assert np.allclose(er[k], ep[k], rtol=1e-9, atol=1e-9), k
    # at rest in static equilibrium: closed valves hold the boom (1 ms)
    q0 = p.q.copy()
    for _ in range(20):
        p.step(None)
    assert np.abs(p.q - q0).max() < 1e-6
    # snapshot / restore bring back the pressures too
    snap = p.snapshot()
    p.step([2.0, -2.0])
    p.restore(snap)
    assert np.allclose(p.pa, snap['Y'][:2]) and np.allclose(p.q, snap['q'])
    with pytest.raises(InputError, match='external wrenches'):
        make_plant('hydraulic', m, backend='mujoco', FD=np.ones(6))
