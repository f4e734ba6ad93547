"""IRSBot-2 on the paper's trajectory T1 as real processes (config/irsbot2_t1.yaml):
trajectory_node (sin2_pick_place: r6,0 + (dx s, 0, dz s(1-s)), s = sin^2(nu pi t / T),
dx = 0.25 m, dz = 0.45 m, nu = 3, T = 1 s) -> ik_node (constraint-embedding IK + eq. 45
feed-forward) -> dynamics_node (law embedding_feedforward: u + PD on the independent joints)
-> sim_node (projection engine, global tree, 22 cut rows; lock-step, 2 ms, 4 kHz integration).

Asserts (bounds justified in docs/constraint_embedding.md, section "T1 graph"): tool tracking
error (kinematics_node pose vs trajectory_node reference of the same stamp) over >= 1.0 s of
simulated time after t = 0.2 s (3 back-and-forth cycles, the whole T1); actuated- and
passive-joint error against the ik_node reference of the same stamp; loop closure of the
published passive joints (ik_node reference: 22 cut rows <= 1e-9; plant: <= 1e-8); every state answered
with the reference of its own stamp (no extrapolation); the /ik_node/ee_wrench load reaches the
feed-forward used by dynamics_node (equal to rd.pkm.inverse_dynamics with that wrench), and once
the plant feels the same load (sim_node ~/external_wrench) the tracking is back to the unloaded
bound, while the feed-forward alone (plant unloaded) is off by > 4x that.
"""

import re
import time

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')

from geometry_msgs.msg import AccelStamped, TwistStamped, WrenchStamped  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402

import robot_dynamics as rd  # noqa: E402
from robot_dynamics.algorithms.constraints import constraint_terms  # noqa: E402
from robot_dynamics.ros._common import QOS_COMMAND  # noqa: E402
from ros_helpers import run_graph  # noqa: E402

pytestmark = pytest.mark.ros

APPLIED = re.compile(r"external wrench on 'tool' applied from plant t = ([0-9.]+) s")
N_STATES = 500  # 1.0 s of simulated time at 2 ms (3 cycles: all of T1 at T = 1 s) ...
T_SKIP = 200_000_000  # ... after 0.2 s (start-up transient, see the docs) [ns]


def _ns(m):
    return m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec


def test_irsbot2_t1_tracking_and_loop_closure_with_embedding_feedforward():
    def body(launcher, probe, model, out):
        def wait(cond, timeout, what):  # on a time-out, show the nodes' logs
            probe.wait_logged(cond, timeout, what, out, ('js', 'err', 'pose', 'ikjs', 'ffe'))

        probe.subscribe('ikjs', JointState, '/ik_node/joint_states')
        probe.subscribe('ffe', JointState, '/ik_node/feedforward_effort')
        probe.subscribe('dff', Float64MultiArray, '/dynamics_node/feedforward')
        probe.subscribe('tw', TwistStamped, 'reference/twist')
        probe.subscribe('acc', AccelStamped, 'reference/accel')

        def late_matched():
            # stamps seen on both topics of a pair (the probe's subscriptions are matched and
            # served independently: one may start or lag behind the other)
            with probe.lock:
                pose = {_ns(m) for _, m in probe.pose}
                ref = {_ns(m) for _, m in probe.ref}
                js = {_ns(m) for _, m in probe.js}
                ikjs = {_ns(m) for _, m in probe.ikjs}
            return (
                sum(k >= T_SKIP for k in pose & ref) >= N_STATES
                and sum(k >= T_SKIP for k in js & ikjs) >= N_STATES // 2
            )

        wait(late_matched, 60.0, f'{N_STATES} matched tool poses after {T_SKIP * 1e-9} s')
        with probe.lock:
            poses = {_ns(m): m.pose.position for _, m in probe.pose}
            refs = {_ns(m): m.pose.position for _, m in probe.ref}
            js = {_ns(m): m for _, m in probe.js}
            ikjs = {_ns(m): m for _, m in probe.ikjs}
            dff = [m.data for _, m in probe.dff]
        names = list(model.joint_names)
        ia = list(model.actuated_indices)
        ip = [i for i in range(model.nq) if i not in ia]

        def q_of(m):
            return np.array([m.position[list(m.name).index(n)] for n in names])

        # every state answered with the reference sample of its own stamp (no extrapolation)
        assert len(dff) > N_STATES // 2 and max(d[1] for d in dff) == 0 and max(d[0] for d in dff) == 0.0
        # tool tracking, matched by stamp (x-z plane)
        common = sorted(set(poses) & set(refs))
        P = np.array([[poses[k].x, poses[k].z] for k in common])
        R = np.array([[refs[k].x, refs[k].z] for k in common])
        err = np.linalg.norm(P - R, axis=1)
        late = np.array(common) >= T_SKIP
        e_ss = err[late]
        span = (common[-1] - max(common[0], T_SKIP)) * 1e-9
        # joints (plant /joint_states vs ik_node reference of the same stamp), passive ones too,
        # and loop closure of both published joint sets
        kj = sorted(k for k in set(js) & set(ikjs) if k >= T_SKIP)
        Qp = np.array([q_of(js[k]) for k in kj])
        Qr = np.array([q_of(ikjs[k]) for k in kj])
        ea, ep = np.abs(Qp - Qr)[:, ia].max(), np.abs(Qp - Qr)[:, ip].max()
        phi_ik = max(np.abs(constraint_terms(model, q).phi).max() for q in Qr[::5])
        phi_js = max(np.abs(constraint_terms(model, q).phi).max() for q in Qp[::5])
        print(
            f'irsbot2 T1 tool tracking: all {len(err)} samples from {common[0] * 1e-9:.3f} s: max '
            f'{err.max() * 1e3:.3f} mm; after {T_SKIP * 1e-9} s: {len(e_ss)} samples over {span:.3f} s, '
            f'median {np.median(e_ss) * 1e3:.4f} mm, 95 % {np.percentile(e_ss, 95) * 1e3:.4f} mm, '
            f'max {e_ss.max() * 1e3:.4f} mm; joints ({len(kj)} stamps): actuated max '
            f'{ea * 1e3:.4f} mrad, passive max {ep * 1e3:.4f} mrad; closure ik {phi_ik:.1e}, '
            f'plant {phi_js:.1e}; x range {np.ptp(P[:, 0]):.3f} m, z range {np.ptp(P[:, 1]):.3f} m'
        )
        # the probe may miss a few stamps under load (publisher history depth 10): >= 80 % coverage
        assert len(e_ss) >= 0.8 * N_STATES and span > 0.95 and len(kj) >= N_STATES // 2
        assert np.ptp(P[:, 0]) > 0.24 and np.ptp(P[:, 1]) > 0.1  # really runs T1
        assert err.max() < 5e-3, err.max()
        assert e_ss.max() < 2.5e-4, e_ss.max()
        assert ea < 1e-3 and ep < 3e-3, (ea, ep)
        assert phi_ik < 1e-9 and phi_js < 1e-8, (phi_ik, phi_js)
        # end-effector load: WrenchStamped on /ik_node/ee_wrench reaches the feed-forward
        w = np.array([20.0, 0.0, -50.0, 0.0, 3.0, 0.0])  # force (N), torque (N m)
        pub = probe.node.create_publisher(WrenchStamped, '/ik_node/ee_wrench', QOS_COMMAND)
        msg = WrenchStamped()
        msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z = map(float, w[:3])
        msg.wrench.torque.x, msg.wrench.torque.y, msg.wrench.torque.z = map(float, w[3:])
        with probe.lock:
            n_ffe, n_dff = len(probe.ffe), len(probe.dff)
        hits = {}  # stamp -> (u, u_0, stamp)
        checked = set()

        def loaded():
            # every new feed-forward sample whose reference (pose, twist, accel of the same
            # stamp) the probe received: the probe may miss samples of any topic under load
            pub.publish(msg)
            with probe.lock:
                tw = {_ns(m): m.twist.linear for _, m in probe.tw}
                ac = {_ns(m): m.accel.linear for _, m in probe.acc}
                rf = {_ns(m): m.pose.position for _, m in probe.ref}
                new = [m for _, m in probe.ffe[n_ffe:]]
            for m in new:
                k = _ns(m)
                if k not in checked and k in tw and k in ac and k in rf:
                    checked.add(k)
                    x = np.array([rf[k].x, rf[k].z])
                    xd, xdd = np.array([tw[k].x, tw[k].z]), np.array([ac[k].x, ac[k].z])
                    u_w = rd.pkm.inverse_dynamics(model, x, xd, xdd, wrench=w)
                    u_0 = rd.pkm.inverse_dynamics(model, x, xd, xdd)
                    if np.allclose(m.effort, u_w, rtol=1e-9, atol=1e-7):
                        hits[k] = (np.array(m.effort), u_0, k)
            return len(hits) >= 3

        wait(lambda: pub.get_subscription_count() > 0, 10.0, 'ik_node load input')
        t_pub = time.time()
        try:
            wait(loaded, 40.0, 'feed-forward with the end-effector load')
        except AssertionError as exc:
            with probe.lock:
                counts = {k: len(getattr(probe, k)) for k in ('ffe', 'tw', 'acc', 'ref')}
            raise AssertionError(
                f'first published at {t_pub:.3f}; '
                f'{len(checked)} samples checked, {len(hits)} with the load; '
                f'received {counts}\n{exc}'
            ) from None
        u, u_0, _ = hits[max(hits)]
        assert np.abs(u - u_0).max() > 1.0  # the load changes u

        def used():  # ... and the command of dynamics_node
            loaded()  # (more samples the probe has in full)
            with probe.lock:
                dff = {tuple(m.data[2:4]) for _, m in probe.dff[n_dff:]}
            return any(tuple(h[0]) in dff for h in hits.values())

        wait(used, 20.0, 'dynamics_node using the loaded feed-forward')

        # ... and the plant feels the same load (sim_node ~/external_wrench on the tool, world
        # axes about its origin = the convention of ee_wrench): feed-forward and plant agree
        # again and the tracking returns to the unloaded bound
        def window(lo, hi):
            with probe.lock:
                poses = {_ns(m): m.pose.position for _, m in probe.pose}
                refs = {_ns(m): m.pose.position for _, m in probe.ref}
            ks = sorted(k for k in set(poses) & set(refs) if lo <= k < hi)
            return np.array([np.hypot(poses[k].x - refs[k].x, poses[k].z - refs[k].z) for k in ks])

        def coverage(lo, hi):  # for the time-out messages
            with probe.lock:
                last = max((_ns(m) for _, m in probe.pose[-5:]), default=0)
                n_ref = sum(1 for _, m in probe.ref if lo <= _ns(m) < hi)
                n_pose = sum(1 for _, m in probe.pose if lo <= _ns(m) < hi)
            return (
                f'window {lo * 1e-9:.3f}-{hi * 1e-9:.3f} s: {n_pose} poses, {n_ref} references, '
                f'{len(window(lo, hi))} matched; last pose stamp {last * 1e-9:.3f} s'
            )

        def wait_window(lo, hi, n, timeout, what):
            # the graph past the window (both topics' newest stamps), then >= n matched samples
            # in it: the probe may miss samples under load (publisher depth 10; measured in full
            # suites next to a CPU hog: 4-43 % of a window's pose-reference pairs)
            def past():
                with probe.lock:
                    return (
                        min(max((_ns(m) for _, m in getattr(probe, k)[-5:]), default=0) for k in ('pose', 'ref'))
                        >= hi + 50_000_000
                    )

            wait(past, timeout, what)
            assert len(window(lo, hi)) >= n, coverage(lo, hi)

        # 0.2 s of simulated time with the load in the feed-forward only (from a sample known to
        # carry it), then the plant gets it
        t_ff = min(hits)
        wait_window(t_ff + 50_000_000, t_ff + 250_000_000, 3, 60.0, '0.2 s with the load in the feed-forward only')
        ext = probe.node.create_publisher(WrenchStamped, '/sim_node/external_wrench', QOS_COMMAND)
        msg.header.frame_id = 'tool'
        wait(lambda: ext.get_subscription_count() > 0, 10.0, 'sim_node load input')
        ext.publish(msg)
        wait(lambda: APPLIED.search(out.getvalue()), 10.0, 'sim_node applying the load')
        t_on = round(float(APPLIED.search(out.getvalue()).group(1)) * 1e9)
        wait_window(t_on + 300_000_000, t_on + 800_000_000, 10, 60.0, '0.5 s of loaded tracking')
        e_mis = window(t_ff + 50_000_000, min(t_on, t_ff + 250_000_000))  # feed-forward only
        e_on = window(t_on + 300_000_000, t_on + 800_000_000)
        print(
            f'irsbot2 T1 with the load: feed-forward only max {e_mis.max() * 1e3:.4f} mm; '
            f'plant and feed-forward, 0.3-0.8 s after: max {e_on.max() * 1e3:.4f} mm'
        )
        assert len(e_mis) >= 3 and e_mis.max() > 4 * e_on.max()
        assert e_on.max() < 2.5e-4, e_on.max()

    log = run_graph('irsbot2_t1', body, timing='lockstep')
    assert 'IK failed' not in log
