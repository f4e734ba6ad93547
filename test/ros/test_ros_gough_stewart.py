"""Gough-Stewart platform (6-UPS, the brief's assumed model: 21 tree DOF, 15 constraints) end to
end as real processes, LOCK-STEP: sim_node (rigid plant = closed-chain projection engine, one
1 ms step per command, /clock = plant time) <-> dynamics_node (law d2_feedforward: the brief's
roll motion, 2nd-order recursive ID u, u', u'' streamed on ~/feedforward, command u + PD on the
leg lengths, one command per joint state) from config/gough_stewart.yaml.

Measured on the real topics in simulated time over one roll period (1 s, -0.5 .. 0.5 rad):
each /joint_states message is paired with the /dynamics_node/reference message of the same
stamp (the reference the node answered it with). Bounds (docs/recursive_id_sea.md,
"Gough-Stewart graph"): the graph is the 1 kHz sampled loop (ZOH) of exact feed-forward + PD
(kp 2000 N/m, kd 100 N s/m), whose offline leg-length error is 4.7e-6 m: asserted leg error
< 2e-5 m, platform roll error < 1e-4 rad (FK of the published joints vs the motion), loop
closure of the published passive joints < 1e-9 m, the streamed u (trajectory_node: the general
route's table along trajectories.RollProfile) equal to the compiled rd.pkm.inverse_dynamics_d2 on
the hand-written RollMotion recomputed here (1e-9 relative) and the streamed u', u'' consistent
with central differences of the streamed u, u' (1e-3 relative: O(h^2) with h = 1 ms).
"""

import time

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')

from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402

import robot_dynamics as rd  # noqa: E402
from robot_dynamics.algorithms.constraints import loop_residual  # noqa: E402
from robot_dynamics.algorithms.kinematics import frame_placement  # noqa: E402
from robot_dynamics.pkm.gough_stewart import RollMotion  # noqa: E402
from ros_helpers import run_graph  # noqa: E402

pytestmark = pytest.mark.ros


def _ns(stamp):
    return stamp.sec * 1_000_000_000 + stamp.nanosec


def test_gough_stewart_roll_feedforward_lockstep_over_real_topics():
    t_wall = time.monotonic()

    def body(launcher, probe, model, out):
        probe.subscribe('ff', Float64MultiArray, '/trajectory_node/feedforward')
        probe.subscribe('gref', JointState, '/trajectory_node/reference')

        def sim_t():
            with probe.lock:
                return _ns(probe.js[-1][1].header.stamp) * 1e-9 if probe.js else 0.0

        # the graph may have run a little before the probe's subscriptions matched: start the
        # window at the first reference AND joint state the probe received
        probe.wait_logged(
            lambda: probe.gref and probe.js, 30.0, 'first reference and joint state', out, ('js', 'gref', 'ff')
        )
        with probe.lock:
            t_first = max(_ns(probe.gref[0][1].header.stamp), _ns(probe.js[0][1].header.stamp)) * 1e-9
        # (on a time-out: the message counts and the nodes' logs; a fresh-clone run timed out
        # here once in the parallel phase, not reproduced in 50 runs)
        probe.wait_logged(
            lambda: sim_t() >= t_first + 1.02, 60.0, 'one roll period in simulated time', out, ('js', 'gref', 'ff')
        )
        with probe.lock:
            js = [m for _, m in probe.js]
            ref = {_ns(m.header.stamp): m for _, m in probe.gref}
            ff = np.array([m.data for _, m in probe.ff])
        names = list(model.joint_names)
        ia = [names.index(j) for j in model.actuated]
        roll = RollMotion()
        T, EA, ROLL, RES = [], [], [], []
        for m in js:
            ns = _ns(m.header.stamp)
            if ns not in ref or (T and ns * 1e-9 <= T[-1]):
                continue
            q = np.array(m.position)[[list(m.name).index(n) for n in names]]
            r = np.array(ref[ns].position)
            T.append(ns * 1e-9)
            EA.append(np.abs(q[ia] - r[ia]).max())
            R = np.asarray(frame_placement(model, q, 'platform'))
            ROLL.append(np.arctan2(R[2, 1], R[1, 1]) - roll.theta(ns * 1e-9, 0)[0])
            RES.append(np.abs(loop_residual(model, q)).max())
        T, EA, ROLL, RES = map(np.asarray, (T, EA, ROLL, RES))
        # lock-step: the stamps advance by exactly 1 ms per answered state; the probe may miss a
        # few messages under load (publisher history depth 10), hence >= 80 % coverage
        steps = np.diff(T) / 1e-3
        assert np.all(steps > 0.5) and np.allclose(steps, np.round(steps), atol=1e-6)
        assert len(T) >= 0.8 * (round((T[-1] - T[0]) / 1e-3) + 1), (len(T), T[0], T[-1])
        assert T[-1] - T[0] >= 1.0  # a whole roll period
        # streamed feed-forward: u vs the public API, u', u'' vs central differences
        k = len(ff) // 2  # a sample inside the recorded stream
        t = ff[k, 0]
        u, ud, udd = rd.pkm.inverse_dynamics_d2(model, *roll(t))
        U, UD, UDD = ff[:, 1:7], ff[:, 7:13], ff[:, 13:19]
        h = ff[k + 1, 0] - t
        assert abs(h - 1e-3) < 1e-9 and abs(t - ff[k - 1, 0] - h) < 1e-9
        fd1 = (U[k + 1] - U[k - 1]) / (2 * h)
        fd2 = (UD[k + 1] - UD[k - 1]) / (2 * h)
        print(
            f'\n{len(T)} lock-step steps; leg error max {EA.max():.2e} m, roll error max '
            f'{np.abs(ROLL).max():.2e} rad, loop residual max {RES.max():.1e}, |u - ID| '
            f"{np.abs(U[k] - u).max():.1e}, u' vs FD {np.abs(fd1 - UD[k]).max() / np.abs(UD[k]).max():.1e}, "
            f"u'' vs FD {np.abs(fd2 - UDD[k]).max() / np.abs(UDD[k]).max():.1e} (rel.), "
            f'wall {time.monotonic() - t_wall:.1f} s'
        )
        np.testing.assert_allclose(U[k], u, rtol=1e-9, atol=1e-9 * np.abs(u).max())
        np.testing.assert_allclose(UD[k], ud, rtol=1e-9, atol=1e-9 * np.abs(ud).max())
        np.testing.assert_allclose(UDD[k], udd, rtol=1e-9, atol=1e-9 * np.abs(udd).max())
        assert np.abs(fd1 - UD[k]).max() < 1e-3 * np.abs(UD[k]).max()
        assert np.abs(fd2 - UDD[k]).max() < 1e-3 * np.abs(UDD[k]).max()
        assert EA.max() < 2e-5, EA.max()
        assert np.abs(ROLL).max() < 1e-4, np.abs(ROLL).max()
        assert RES.max() < 1e-9, RES.max()
        with probe.lock:
            assert not any(m.data for _, m in probe.hold[-10:])  # commands kept flowing

    run_graph('gough_stewart', body, ready=lambda: True, timeout=30.0, timing='lockstep')
