"""The MuJoCo plant (robot_dynamics.plants.mujoco_plant) against the package's own model.

Independent routes: MuJoCo's compiled model (its mass matrix and bias forces from its own
recursive algorithms) against ``rd.crba`` / ``rd.rnea``; the rigid plant (projection method,
RK4) against MuJoCo's soft equality constraints (RK4, 0.2 ms), the same torque sequence on
both; the package's loop residual on MuJoCo's states; the exported MJCF compiled by MuJoCo
alone.

Tolerances, from the constraint softness: MuJoCo's equality constraint is a critically damped
spring-damper with time constant ``solref[0]`` = 0.4 ms on the residual; at 0.2 ms steps the
residual stays at 1e-8..2e-7 m on these robots (the package's plant: 1e-12), and a residual r
on a link of length L perturbs the joint trajectory by about r / L (1e-6 rad) plus the RK4
error of the 0.2 ms step (1e-6 rad over 2 s, from halving the step); the virtual bodies of
the point_on_plane and universal loops (1e-6 kg each) perturb the inertia by 1e-6 relative.
The trajectories of the two plants agree to 1e-4 rad over 2 s (measured: 1e-6 .. 6e-5).
"""

import math
import os
import warnings

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.algorithms.projection import hold_command
from robot_dynamics.errors import ModelError
from robot_dynamics.plants.mujoco_plant import MujocoPlant, mj_export, mj_spec
from robot_dynamics.plants.registry import make_plant

mujoco = pytest.importorskip('mujoco')

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROBOTS = sorted(f[:-5] for f in os.listdir(os.path.join(ROOT, 'urdf')) if f.endswith('.urdf'))


def _load(name):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', rd.ModelWarning)
        return rd.load_model(os.path.join(ROOT, 'urdf', f'{name}.urdf'))


def test_the_robots_are_found():
    assert {'five_bar', 'slider_crank', 'irsbot2', 'gough_stewart', 'hydraulic_boom', 'arm7'} <= set(ROBOTS)


@pytest.mark.parametrize('name', ROBOTS)
def test_mass_matrix_and_bias_equal_the_model(name):
    """MuJoCo's M and bias forces of the tree (its equalities off) equal rd.crba / rd.rnea at
    random states, up to the virtual bodies' 1e-6 kg."""
    m = _load(name)
    p = MujocoPlant(m, limits=False)
    d = p.mjd
    p.mjm.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_EQUALITY)
    rng = np.random.default_rng(len(name))
    virtual = bool(p.map.virtual)
    floored = bool(np.any(m.mass <= 0) or np.any(np.linalg.eigvalsh(m.inertia_com) < 1e-12))
    for _ in range(3):
        q = m.reference_q() + 0.2 * rng.standard_normal(m.nq)
        qd = rng.standard_normal(m.nv)
        p.map.to_mj(m, q, qd, d.qpos, d.qvel)
        mujoco.mj_forward(p.mjm, d)
        M = np.zeros((p.mjm.nv, p.mjm.nv))
        mujoco.mj_fullM(p.mjm, d, M)
        dofs = p.map.dofs
        Mr, h = rd.crba(m, q), rd.rnea(m, q, qd, np.zeros(m.nv))
        # a massless body or a zero principal moment is floored at 1e-9 kg / 1e-12 kg m^2 (links
        # within 3 m of the joints: at most 1e-8 in M, 1e-7 in h at these speeds)
        tol = 1e-5 * np.abs(Mr).max() if virtual else 1e-12 * np.abs(Mr).max() + (1e-8 if floored else 0.0)
        assert np.abs(M[np.ix_(dofs, dofs)] - Mr).max() <= tol, name
        if not virtual:
            tol = 1e-12 * max(1.0, np.abs(h).max()) + (1e-7 if floored else 0.0)
            assert np.abs(d.qfrc_bias[dofs] - h).max() <= tol, name


def _recorded_run(m, n, dt, rng):
    """A recorded torque sequence (n, nv) and its trajectory (n, nq) on the rigid plant
    (adaptive Dormand-Prince at 1e-10): the actuated joints track a few slow sines about the
    reference configuration under a PD law with the static gravity hold, the loop computed
    on the rigid plant's state."""
    rig = rd.ConstrainedPlant(m, dt=dt, integrator='dopri5', rtol=1e-10, atol=1e-12)
    q0, qd0 = rig.q.copy(), rig.qd.copy()
    idx = m.actuated_indices
    M0 = rd.crba(m, q0)
    kp = 400.0 * np.diag(M0)[idx]  # (20 rad/s)^2 on each joint's own inertia
    kd = 2.0 * 20.0 * np.diag(M0)[idx]
    amp = rng.uniform(0.02, 0.05, len(idx))
    f = rng.uniform(0.3, 1.0, len(idx))
    taus, qs = np.zeros((n, m.nv)), np.zeros((n, m.nq))
    for k in range(n):
        q_d = q0[m.q_of_v[idx]] + amp * np.sin(2 * math.pi * f * k * dt)
        tau = hold_command(m, rig.q, rig.qd)
        tau[idx] += kp * (q_d - rig.q[m.q_of_v[idx]]) - kd * rig.qd[idx]
        taus[k] = tau
        qs[k] = rig.step(tau).q
    return q0, qd0, taus, qs


def _pd(m, q0, idx, kp, kd, amp, f, t, q, qd):
    """The PD law of :func:`_recorded_run` at time t and state (q, qd)."""
    q_d = q0[m.q_of_v[idx]] + amp * np.sin(2 * math.pi * f * t)
    tau = hold_command(m, q, qd)
    tau[idx] += kp * (q_d - q[m.q_of_v[idx]]) - kd * qd[idx]
    return tau


PLANTS = [r for r in ROBOTS if r not in ('planar_3rrr_sea',)]


@pytest.mark.parametrize('name', PLANTS)
def test_the_same_torques_give_the_same_motion_on_both_plants(name):
    """A recorded torque sequence (a PD run on the rigid plant, :func:`_recorded_run`)
    replayed open loop on the MuJoCo plant from the same state (position limits off: the rigid
    plant has none). MuJoCo's loops stay closed to 1e-5 m throughout the 2 s. Open loop, an
    unstable equilibrium (a pendulum arm) amplifies any difference: the rigid plant itself,
    started 1e-9 away along the constraint manifold (MuJoCo's closure residual), strays by d(t)
    on the same torques. The MuJoCo trajectory of the actuated joints stays within
    ``1e-6 + 10 d(t)`` for as long as that bound is below 1e-3 (at least 0.4 s on every robot;
    the full 2 s on the stable ones). The reference is adaptive Dormand-Prince (the rigid
    plant's fixed-step RK4 at 1 ms strays by 2e-4 rad on the arm)."""
    m = _load(name)
    rng = np.random.default_rng(5)
    q0, qd0, taus, qs = _recorded_run(m, 2000, 1e-3, rng)
    idx = m.q_of_v[m.actuated_indices]
    dv = rd.project_velocity(m, q0, rng.standard_normal(m.nv))
    q1 = m.integrate(q0, 1e-9 * dv / np.abs(dv).max())
    if m.loops:
        q1 = rd.assemble(m, q1[m.q_of_v[m.independent_indices]], q_guess=q1).q
    per = rd.ConstrainedPlant(m, q1, qd0, dt=1e-3, integrator='dopri5', rtol=1e-10, atol=1e-12)
    mjp = MujocoPlant(m, q0, qd0, dt=1e-3, limits=False)
    worst, phi, self_d, window = 0.0, 0.0, 0.0, 0
    for k in range(len(taus)):
        info = mjp.step(taus[k])
        phi = max(phi, info.phi_norm)
        self_d = max(self_d, np.abs(per.step(taus[k]).q[idx] - qs[k, idx]).max())
        if 1e-6 + 10.0 * self_d <= 1e-3 and window == k:
            worst = max(worst, np.abs(mjp.q[idx] - qs[k, idx]).max() / (1e-6 + 10.0 * self_d))
            window += 1
    moved = np.abs(qs[:, idx] - q0[idx]).max()
    print(f'{name}: moved {moved:.2e}; replay within {worst:.2f} of the bound for {window} ms; closure {phi:.1e} m')
    assert moved > 1e-2, (name, moved)  # the torques moved it
    assert window >= 400, (name, window)
    assert worst <= 1.0, (name, worst)
    assert phi <= 1e-5, (name, phi)


@pytest.mark.parametrize('name', PLANTS)
def test_the_same_controller_gives_the_same_motion_on_both_plants(name):
    """The PD law of the recorded run, closed on each plant's own state for 2 s: the
    actuated joints of the two plants agree to 1e-5 rad (or m), every joint to 1e-4."""
    m = _load(name)
    rng = np.random.default_rng(5)
    rig = rd.ConstrainedPlant(m, dt=1e-3, integrator='dopri5', rtol=1e-10, atol=1e-12)
    q0 = rig.q.copy()
    mjp = MujocoPlant(m, rig.q, rig.qd, dt=1e-3, limits=False)
    idx = m.actuated_indices
    M0 = rd.crba(m, q0)
    kp, kd = 400.0 * np.diag(M0)[idx], 40.0 * np.diag(M0)[idx]
    amp, f = rng.uniform(0.02, 0.05, len(idx)), rng.uniform(0.3, 1.0, len(idx))
    act = m.q_of_v[idx]
    worst_a, worst = 0.0, 0.0
    for k in range(2000):
        t = k * 1e-3
        rig.step(_pd(m, q0, idx, kp, kd, amp, f, t, rig.q, rig.qd))
        mjp.step(_pd(m, q0, idx, kp, kd, amp, f, t, mjp.q, mjp.qd))
        worst_a = max(worst_a, np.abs(mjp.q[act] - rig.q[act]).max())
        worst = max(worst, np.abs(mjp.q - rig.q).max())
    print(f'{name}: closed loop, actuated {worst_a:.2e}, all joints {worst:.2e}')
    assert worst_a <= 1e-5, (name, worst_a)
    assert worst <= 1e-4, (name, worst)


def test_external_wrench_and_actuated_efforts_reach_the_joints():
    m = _load('five_bar')
    rig = rd.ConstrainedPlant(m, dt=1e-3)
    mjp = MujocoPlant(m, rig.q, rig.qd, dt=1e-3)
    w = np.array([0.0, 2.0, 0.0, 0.0, 0.0, 0.1])
    for p in (rig, mjp):
        p.set_external_wrench('tool', w, reference='local_world_aligned')
    for _ in range(300):
        rig.step(np.array([0.3, -0.2]))
        mjp.step(np.array([0.3, -0.2]))
    assert np.abs(mjp.q - rig.q).max() <= 1e-4
    assert np.abs(rig.q - m.reference_q()).max() > 1e-2  # (it moved)


def test_snapshot_and_restore_give_back_the_state():
    m = _load('four_bar')
    p = make_plant('mujoco', m, dt=1e-3)
    for _ in range(50):
        p.step(np.array([0.5]))
    snap = p.snapshot()
    q1 = [p.step(np.array([0.5])).q for _ in range(20)]
    p.restore(snap)
    q2 = [p.step(np.array([0.5])).q for _ in range(20)]
    np.testing.assert_array_equal(np.array(q1), np.array(q2))


def test_floating_base_falls_freely():
    """A free-flyer model: the base falls as g t^2 / 2 (no contact), its orientation stays a
    unit quaternion, and the state maps back and forth unchanged."""
    m = rd.load_model(os.path.join(ROOT, 'test', 'data', 'biped_rods.urdf'))
    p = MujocoPlant(m, dt=1e-3)
    z0 = p.q[2]
    for _ in range(500):
        p.step()
    assert abs((z0 - p.q[2]) - 0.5 * 9.81 * 0.5**2) <= 1e-6
    assert abs(np.linalg.norm(p.q[3:7]) - 1.0) <= 1e-12
    q, qd = np.zeros(m.nq), np.zeros(m.nv)
    p.map.from_mj(p.mjd.qpos, p.mjd.qvel, q, qd)
    np.testing.assert_array_equal(q, p.q)
    qpos, qvel = np.zeros(p.mjm.nq), np.zeros(p.mjm.nv)
    p.map.to_mj(m, q, qd, qpos, qvel)
    d = p.map.dofs
    np.testing.assert_allclose(qvel[d], p.mjd.qvel[d], atol=1e-15)


@pytest.mark.parametrize('name', ROBOTS)
def test_exported_mjcf_loads_in_mujoco_and_holds_its_loops(tmp_path, name):
    """MuJoCo alone (no package code) compiles the exported file and keeps every equality
    within 1e-5 m over 1 s of passive motion from the reference configuration."""
    m = _load(name)
    path = tmp_path / f'{name}.xml'
    mj_export(m, path)
    M = mujoco.MjModel.from_xml_path(str(path))
    D = mujoco.MjData(M)
    p = MujocoPlant(m)  # its closed start, written in the file's coordinates
    D.qpos[:] = p.mjd.qpos
    assert M.nu == len(m.actuated)
    worst = 0.0
    for _ in range(int(round(1.0 / M.opt.timestep))):
        mujoco.mj_step(M, D)
        eq = D.efc_type[: D.nefc] == int(mujoco.mjtConstraint.mjCNSTR_EQUALITY)
        if eq.any():
            worst = max(worst, np.abs(D.efc_pos[: D.nefc][eq]).max())
    assert np.all(np.isfinite(D.qpos))
    assert worst <= 1e-5, (name, worst)


def test_an_unsupported_joint_is_refused_naming_it(tmp_path):
    m = _load('five_bar')
    lp = m.loops[0]
    bad = type(lp)(**{**lp.__dict__, 'type': 'screw'})
    m.loops = [bad]
    with pytest.raises(ModelError, match="loop 'distal_joint'.*cannot express a screw loop"):
        mj_spec(m)
