"""Idle motions: the motions that keep every loop closed while the actuated joints stand still
(a rod with ball joints at both ends spinning about its own axis, a floating base). They are
facts of a description, not load errors.

Model: test/data/biped_rods.* (a free-flyer pelvis, hips actuated, each knee driven by a rod with
a ball joint on the pelvis and a spherical loop on the shin): 6 base motions and 2 rod spins.
Independent routes: finite differences of the closure residual (the motion keeps the loops
closed), the rod's frame Jacobian (the spin is a rotation about the rod's own axis that moves
neither rod end), and the singular values of [A; S_a] (the count).
"""

import os
import subprocess
import sys

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.algorithms import projection as pj

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(os.path.dirname(HERE), 'data')
ROOT = os.path.dirname(os.path.dirname(HERE))
URDF = os.path.join(DATA, 'biped_rods.urdf')


@pytest.fixture(scope='module')
def closed():
    m = rd.load_model(URDF)
    q = pj.assemble(m, q_guess=m.reference_q(), fixed='none').q
    return m, q


def test_idle_motions_are_the_base_and_the_rod_spins(closed):
    m, q = closed
    idle = rd.idle_motions(m, q)
    A = rd.constraint_jacobian(m, q)
    S = np.eye(m.nv)[[m.joint_index(j) for j in m.actuated]]
    s = np.linalg.svd(np.vstack([A, S]), compute_uv=False)
    assert len(idle) == m.nv - int((s > 1e-9 * s.max()).sum()) == 8
    act = [m.joint_index(j) for j in m.actuated]
    h = 1e-6
    spins = {}
    for mo in idle:
        d = mo.direction
        assert np.abs(d[act]).max() == 0.0 and np.abs(d).max() == 1.0
        # it keeps the loops closed: central difference of the residual along the manifold
        dphi = (rd.loop_residual(m, m.integrate(q, h * d)) - rd.loop_residual(m, m.integrate(q, -h * d))) / (2 * h)
        assert np.abs(dphi).max() < 1e-8, (mo.joints, dphi)
        names = {j.split('/')[0] for j, _ in mo.joints}
        if names == {'root_joint'}:
            continue
        (rod,) = names
        spins[rod] = d
    assert set(spins) == {'left_rod_ball', 'right_rod_ball'}
    for rod, d in spins.items():
        side = rod.split('_')[0]
        # the rod turns about its own axis (pelvis-end ball to tip) and neither end moves
        tip = rd.forward_kinematics(m, q, [f'{side}_rod_tip'])[f'{side}_rod_tip']
        top = rd.forward_kinematics(m, q, [f'{side}_rod'])[f'{side}_rod']
        axis = tip[:3, 3] - top[:3, 3]
        for frame in (f'{side}_rod', f'{side}_rod_tip'):
            tw = rd.frame_jacobian(m, q, frame) @ d  # (v, w) in the world-aligned frame
            assert np.linalg.norm(tw[:3]) < 1e-12, (frame, tw)
            w = tw[3:]
            assert np.linalg.norm(np.cross(w, axis)) < 1e-10 * np.linalg.norm(axis) * max(np.linalg.norm(w), 1.0)
            assert np.linalg.norm(w) > 0.1


def test_inverse_dynamics_puts_no_effort_on_idle_motions_and_names_them(closed):
    m, q = closed
    rng = np.random.default_rng(0)
    qd = pj.project_velocity(m, q, rng.standard_normal(m.nv))
    u = pj.project_velocity(m, q, rng.standard_normal(m.nv))
    r = pj.projected_inverse_dynamics(m, q, qd, u=u)
    assert not r.controllable
    assert 'idle motion' in r.message and 'left_rod_ball/' in r.message and 'root_joint/' in r.message
    passive = [i for i in range(m.nv) if m.joint_names[i] not in m.actuated]
    assert np.abs(r.tau[passive]).max() == 0.0


def test_check_names_the_idle_motions():
    out = subprocess.run(
        [sys.executable, '-m', 'robot_dynamics.tools.cli', 'check', URDF],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    line = next(ln for ln in out.stdout.splitlines() if ln.strip().startswith('idle motions'))
    assert 'idle motion 8:' in line and 'left_rod_ball/' in line and 'right_rod_ball/' in line, line
