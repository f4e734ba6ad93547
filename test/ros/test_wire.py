"""The state of a model with multi-DOF joints on the wire (robot_dynamics.ros.wire and the message
builders of robot_dynamics.ros._common): one-DOF joints on /joint_states, the others as
transforms parent link -> child link (MultiDOFJointState, /tf), and back to the same q."""

import os

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.ros._common import JointStateParser, multi_dof_msg, parse_multi_dof, tf_msg
from robot_dynamics.ros.wire import WireState
from robot_dynamics.spatial.lie import quat_xyzw_to_matrix

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'data')


@pytest.fixture(scope='module')
def biped():
    # a free-flyer root and two ball-jointed rods (fixed placements that are not the identity)
    return rd.load_model(os.path.join(DATA, 'biped_rods.urdf'))


def test_transforms_are_the_links_relative_placements(biped):
    m, w = biped, WireState(biped)
    assert w.world == 'world' and w.frames[0] == ('world', 'pelvis')
    assert [jt.kind for jt in w.multi] == ['free_flyer', 'spherical', 'spherical']
    rng = np.random.default_rng(3)
    for _ in range(5):
        q = m.random_configuration(rng)
        links = sorted({f for pair in w.frames for f in pair if f != w.world})
        T = rd.forward_kinematics(m, q, links)
        for (parent, child), (p, quat) in zip(w.frames, w.transforms(q)):
            rel = np.linalg.inv(np.eye(4) if parent == w.world else T[parent]) @ T[child]
            assert np.allclose(rel[:3, 3], p, atol=1e-12)
            assert np.allclose(rel[:3, :3], quat_xyzw_to_matrix(quat), atol=1e-12)
            assert abs(np.linalg.norm(quat) - 1.0) < 1e-12
        # a floating base on the wire is q[:7] itself (quaternion x, y, z, w)
        p, quat = w.transforms(q)[0]
        assert np.allclose(np.concatenate([p, quat]), q[:7], rtol=0, atol=1e-15)


def test_messages_round_trip_to_the_same_state(biped):
    from sensor_msgs.msg import JointState

    m, w = biped, WireState(biped)
    rng = np.random.default_rng(4)
    q, v, tau = m.random_configuration(rng), rng.normal(size=m.nv), rng.normal(size=m.nv)
    js = JointState(name=w.names)
    js.position, js.velocity, js.effort = w.joint_values(q, v, tau)
    assert len(js.name) == len(js.position) == len(js.effort) == m.nv - sum(j.nv for j in m.multi_dof)
    md = multi_dof_msg(w, q, v, tau, js.header.stamp)
    assert list(md.joint_names) == [j.name for j in m.multi_dof]
    q1, v1, why = JointStateParser(m).parse(js)
    assert why is None
    tr, tw, why = parse_multi_dof(w, md)
    assert why is None
    q2, v2 = w.assemble(q1[w.q_idx], v1[w.v_idx], tr, tw)
    assert np.abs(m.difference(q, q2)).max() < 1e-12 and np.allclose(v2, v)
    # the free-flyer's generalized force as a wrench (force first)
    f = md.wrench[0]
    assert np.allclose([f.force.x, f.force.y, f.force.z, f.torque.x, f.torque.y, f.torque.z], tau[:6])


def test_a_bad_multi_dof_message_is_refused(biped):
    m, w = biped, WireState(biped)
    md = multi_dof_msg(w, m.neutral(), np.zeros(m.nv), np.zeros(m.nv), rd_stamp())
    md.transforms[1].rotation.w = 2.0
    assert 'quaternion of norm' in parse_multi_dof(w, md)[2]
    md.joint_names = md.joint_names[:1]
    assert 'missing multi-DOF joints' in parse_multi_dof(w, md)[2]


def test_tf_message_frames(biped):
    # tf2_msgs/TFMessage where installed; its one field stands in for it elsewhere
    from robot_dynamics.ros._common import tf_message_type

    class Stand:
        def __init__(self):
            self.transforms = []

    m, w = biped, WireState(biped, world_frame='odom')
    q = m.random_configuration(np.random.default_rng(5))
    msg = tf_msg(tf_message_type() or Stand, w, q, rd_stamp())
    got = [(t.header.frame_id, t.child_frame_id) for t in msg.transforms]
    assert got == [('odom', 'pelvis'), ('pelvis', 'left_rod'), ('pelvis', 'right_rod')]
    r = msg.transforms[0].transform
    assert np.allclose(
        [r.translation.x, r.translation.y, r.translation.z, r.rotation.x, r.rotation.y, r.rotation.z, r.rotation.w],
        m.normalize(q)[:7],
    )


def rd_stamp():
    from builtin_interfaces.msg import Time

    return Time(sec=1, nanosec=2)


def test_one_dof_models_publish_as_before():
    m = rd.load_model(rd.data_path('urdf/five_bar.urdf'))
    w = WireState(m)
    assert w.names == list(m.joint_names) and not w.multi and w.world == m.root_link
    q = m.reference_q()
    assert w.joint_values(q, q, q)[0] == q.tolist()
