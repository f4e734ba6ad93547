"""The constraint-embedding robots described only by URDF + sidecar run their ROS graph
lock-step (simulated time, deterministic): test/data/delta_parallelogram.yaml and
test/data/planar_3rpr.yaml, each trajectory_node (task mode) -> ik_node (constraint-embedding IK
+ eq. 45 feed-forward) -> dynamics_node (law embedding_feedforward: u + PD on the actuated
joints) -> sim_node (projection engine on the global tree) -> /joint_states -> kinematics_node.

Per robot, after the start-up transient T_SKIP: the tool (kinematics_node pose of the plant)
tracks trajectory_node's reference of the same stamp (position, and for the 3-RPR the platform
rotation about z), every joint on /joint_states (passive ones included) closes the loops
(max |phi| of all cut rows), the motion really spans the commanded range, ik_node never failed,
no node died (run_graph). Measured values and bounds: see each CASE entry and
docs/constraint_embedding.md ("Graphs of the URDF-only embedding robots").
"""

import suite_paths
import os

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')

from robot_dynamics.algorithms.constraints import constraint_terms  # noqa: E402
from ros_helpers import run_graph  # noqa: E402

pytestmark = pytest.mark.ros

DATA = os.path.join(suite_paths.TEST_DIR, 'data')
N_STATES = 300  # matched pose-reference stamps (of >= 0.6 s of simulated time at 2 ms: kinematics_node drops some) ...
T_SKIP = 100_000_000  # ... after 0.1 s (start-up) [ns]


def _ns(m):
    return m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec


def _rz(q):
    """Rotation angle about world z [rad] of a planar orientation (quaternion msg, z axis kept)."""
    return 2.0 * np.arctan2(q.z, q.w)


# config, measured (lock-step, deterministic) -> bounds with a margin:
#  pos: max tool position error [m] after T_SKIP; rot: max platform angle error [rad] (3-RPR);
#  span: minimum peak-to-peak range of the tool per world axis [m] (the motion really runs);
#  phi: max |phi| of the loop closure of /joint_states
CASES = {
    'delta_parallelogram': dict(
        # measured: tool position error max 0.0052 mm (median 0.0034 mm) over 1.04 s after
        # 0.1 s; closure of /joint_states 4.6e-13
        pos=2e-5,
        rot=None,
        span={0: 0.14, 2: 0.04},
        phi=1e-9,
    ),
    'planar_3rpr': dict(
        # measured: tool position error max 0.0011 mm (median 0.0008 mm), platform angle error
        # max 0.0007 mrad over 0.69 s after 0.1 s (phi span 0.271 rad); closure 2.1e-13
        pos=5e-6,
        rot=5e-6,
        span={0: 0.085, 1: 0.045},
        rot_span=0.25,
        phi=1e-9,
    ),
}


@pytest.mark.parametrize('robot', sorted(CASES))
def test_embedding_robot_graph_tracks_and_closes_loops(robot):
    case = CASES[robot]

    def body(launcher, probe, model, out):
        def matched():
            with probe.lock:
                pose = {_ns(m) for _, m in probe.pose}
                ref = {_ns(m) for _, m in probe.ref}
            return sum(k >= T_SKIP for k in pose & ref) >= N_STATES

        probe.wait_logged(
            matched, 60.0, f'{N_STATES} matched tool poses after {T_SKIP * 1e-9} s', out, ('js', 'err', 'pose', 'ref')
        )
        with probe.lock:
            poses = {_ns(m): m.pose for _, m in probe.pose}
            refs = {_ns(m): m.pose for _, m in probe.ref}
            js = [m for _, m in probe.js if _ns(m) >= T_SKIP]
        ks = sorted(k for k in set(poses) & set(refs) if k >= T_SKIP)
        P = np.array([[poses[k].position.x, poses[k].position.y, poses[k].position.z] for k in ks])
        R = np.array([[refs[k].position.x, refs[k].position.y, refs[k].position.z] for k in ks])
        e_pos = np.linalg.norm(P - R, axis=1)
        a = np.array([_rz(poses[k].orientation) - _rz(refs[k].orientation) for k in ks])
        e_rot = np.abs((a + np.pi) % (2 * np.pi) - np.pi)
        names = list(model.joint_names)
        assert js and all(set(m.name) == set(names) for m in js), 'every joint on /joint_states'
        phi = max(
            np.abs(constraint_terms(model, np.array([m.position[list(m.name).index(n)] for n in names])).phi).max()
            for m in js[::4]
        )
        span = np.ptp(P, axis=0)
        rot_span = np.ptp([_rz(poses[k].orientation) for k in ks])
        print(
            f'{robot}: {len(ks)} stamps over {(ks[-1] - ks[0]) * 1e-9:.3f} s after '
            f'{T_SKIP * 1e-9} s: tool position error max {e_pos.max() * 1e3:.4f} mm, median '
            f'{np.median(e_pos) * 1e3:.4f} mm; rotation error max {e_rot.max() * 1e3:.4f} mrad '
            f'(span {rot_span:.3f} rad); closure of {len(js)} joint states max {phi:.2e}; '
            f'span {np.round(span, 4).tolist()} m'
        )
        for ax, lo in case['span'].items():
            assert span[ax] > lo, (ax, span)
        if 'rot_span' in case:
            assert rot_span > case['rot_span'], rot_span
        assert case['pos'] is not None and e_pos.max() < case['pos'], e_pos.max()
        if case['rot'] is not None:
            assert e_rot.max() < case['rot'], e_rot.max()
        assert phi < case['phi'], phi

    # timeout: the graph ready (dynamics_node's tracking error flowing) within 150 s, room for
    # the numba compilation of a fresh clone (~40 s in sim_node, once)
    log = run_graph(os.path.join(DATA, f'{robot}.yaml'), body, timeout=150.0, timing='lockstep')
    assert 'IK failed' not in log
