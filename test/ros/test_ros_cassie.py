"""Cassie of example-robot-data (SDFormat, both legs: a free-flyer root, 22 revolute joints, 4
loops closed by ball-jointed rods), imported with ``robot-dynamics import`` and launched from the
config the import writes (sim_node with the passive plant, kinematics_node) in wall-clock time.

Every one-DOF joint is on /joint_states with finite values; the floating base is on
multi_dof_joint_states (and /tf where tf2_msgs is installed) as world -> pelvis with a unit
quaternion (x, y, z, w). The plant holds zero effort, so the whole robot falls freely: the
configuration of the legs stays as assembled, the base falls with z = -vz^2 / (2 g), and the
state rebuilt from the two topics closes every loop. kinematics_node pairs the two topics by
stamp: its pelvis pose is the base transform and its loop residual stays at round-off."""

import os
import time

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
erd = pytest.importorskip('example_robot_data')

from geometry_msgs.msg import PoseStamped  # noqa: E402
from sensor_msgs.msg import MultiDOFJointState  # noqa: E402
from std_msgs.msg import Float64  # noqa: E402

import robot_dynamics as rd  # noqa: E402
from robot_dynamics.ros._common import QOS_TF, parse_multi_dof, tf_message_type  # noqa: E402
from robot_dynamics.ros.wire import WireState  # noqa: E402
from robot_dynamics.tools import cli  # noqa: E402
from robot_dynamics.tools.warmup import warmup_robot  # noqa: E402
from ros_helpers import run_graph  # noqa: E402

pytestmark = pytest.mark.ros

SDF = 'cassie_description/robots/cassie_v2.sdf'


def _t(m):
    return m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec


def test_imported_cassie_graph_publishes_every_joint(tmp_path):
    assert cli.main(['import', os.path.join(erd.getModelPath(SDF), SDF), '--out', str(tmp_path)]) == 0
    config = str(tmp_path / 'config' / 'cassie.yaml')
    warmup_robot(config)  # the plant's kernels compiled (or loaded) before the clock runs
    tf_type = tf_message_type()

    held = {}

    def setup(probe):
        held['probe'] = probe
        probe.subscribe('md', MultiDOFJointState, 'multi_dof_joint_states')
        probe.subscribe('pelvis', PoseStamped, '/kinematics_node/pelvis/pose')
        probe.subscribe('rtf', Float64, '/sim_node/real_time_factor')
        if tf_type is not None:
            probe.subscribe('tf', tf_type, '/tf', QOS_TF)
        else:
            probe.tf = []

    def ready():
        p = held['probe']
        return len(p.js) > 20 and len(p.md) > 20 and len(p.pelvis) > 5

    seen = {}

    def body(launcher, probe, model, out):
        time.sleep(2.5)  # two more real-time factor reports
        with probe.lock:
            for k in ('js', 'md', 'pelvis', 'residual', 'rtf', 'tf'):
                seen[k] = [m for _, m in getattr(probe, k)]

    log = run_graph(config, body, ready=ready, timeout=120.0, setup=setup)
    model = rd.load_model(str(tmp_path / 'cassie.urdf'))
    wire = WireState(model)
    one_dof = [jt.name for jt in model.joints if jt.nv == 1]
    assert len(one_dof) == 22 and [jt.name for jt in model.multi_dof] == ['root_joint']

    # /joint_states: every one-DOF joint, finite position, velocity and effort
    for js in seen['js'][-50:]:
        assert sorted(js.name) == sorted(one_dof)
        assert np.isfinite(js.position).all() and np.isfinite(js.velocity).all() and np.isfinite(js.effort).all()
        assert len(js.position) == len(js.velocity) == len(js.effort) == 22

    # the base: multi_dof_joint_states paired with /joint_states by stamp -> q, v of the plant
    by_stamp = {_t(m): m for m in seen['md']}
    states = []
    for js in seen['js']:
        md = by_stamp.get(_t(js))
        if md is None:
            continue
        assert list(md.joint_names) == ['root_joint']
        tr, tw, why = parse_multi_dof(wire, md)  # (refuses a quaternion off unit norm)
        assert why is None, why
        pos = [js.position[list(js.name).index(j)] for j in wire.names]
        vel = [js.velocity[list(js.name).index(j)] for j in wire.names]
        q, v = wire.assemble(pos, vel, tr, tw)
        states.append((_t(js), q, v))
    assert len(states) > 20, f'{len(states)} paired states of {len(seen["js"])}'
    g = 9.81
    z = np.array([q[2] for _, q, _ in states])
    vz = np.array([v[2] for _, _, v in states])  # (the base does not rotate: child axes = world)
    assert np.all(np.diff(z) < 0.0), 'the base falls'
    assert np.allclose(z, -(vz**2) / (2 * g), rtol=1e-6, atol=1e-9), 'free fall from rest at z = 0'
    for _, q, v in states:
        assert abs(np.linalg.norm(q[3:7]) - 1.0) < 1e-9 and np.allclose(q[3:7], [0, 0, 0, 1], atol=1e-6)
        err = max(max(e) for e in rd.loop_errors(model, q).values())
        assert err < 1e-9, f'loop closure {err:.3g}'
        assert np.allclose(q[7:], states[0][1][7:], atol=1e-6), 'the legs fall with the base'

    # kinematics_node: the pelvis pose in 'world' is the base transform of the same state
    q_at = {t: q for t, q, _ in states}
    matched = 0
    for ps in seen['pelvis']:
        q = q_at.get(_t(ps))
        if q is None:
            continue
        matched += 1
        assert ps.header.frame_id == 'world'
        p, o = ps.pose.position, ps.pose.orientation
        assert np.allclose([p.x, p.y, p.z], q[:3], atol=1e-12)
        assert np.allclose(np.abs([o.x, o.y, o.z, o.w]), np.abs(q[3:7]), atol=1e-9)
    assert matched > 10, matched
    res = np.array([r.data for r in seen['residual'][-20:]])
    assert res.size and np.abs(res).max() < 1e-9

    # /tf (where tf2_msgs is installed): world -> pelvis, the same numbers
    if tf_type is not None:
        assert seen['tf'], 'no /tf'
        for msg in seen['tf'][-20:]:
            (ts,) = msg.transforms
            assert (ts.header.frame_id, ts.child_frame_id) == ('world', 'pelvis')
            r = ts.transform.rotation
            assert abs(np.linalg.norm([r.x, r.y, r.z, r.w]) - 1.0) < 1e-12
            q = q_at.get(_t(ts))
            if q is not None:
                assert np.allclose([ts.transform.translation.z], [q[2]], atol=1e-12)

    # real time on a loaded machine: the plant keeps at least half of wall-clock time
    rtf = [m.data for m in seen['rtf']]
    assert rtf and min(rtf[-2:]) >= 0.5, rtf
    print(f'cassie real-time factor {rtf}; /tf {"on" if tf_type else "off (no tf2_msgs)"}')
    assert 'multi-DOF joints' in log
