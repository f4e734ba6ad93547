"""Third-party style robot descriptions load, and their tree dynamics match Pinocchio.

Fixtures in ``test/data`` are written in the layout of real ROS descriptions (no network):

* ``ur5.urdf``: ur_description-style UR5 (continuous + revolute joints, ``package://`` meshes
  that are not on disk, massless ``base_link``/``base``/``flange``/``tool0``/``ft_frame`` frames,
  ``<transmission>``, ``<gazebo>``, ``<ros2_control>``, ``<safety_controller>``, an XML
  declaration with ``encoding``);
* ``parallel_gripper.urdf``: franka-hand-style gripper with ``<mimic>`` joints;
* ``two_link.urdf.xacro``: xacro properties, math, macros with default and block parameters.

Pinocchio represents a ``continuous`` joint by (cos q, sin q); its joint order equals ours.
"""

import suite_paths
import os

import numpy as np
import pytest

import robot_dynamics as rd

pin = pytest.importorskip('pinocchio')

DATA = os.path.join(suite_paths.TEST_DIR, 'data')
UR5 = os.path.join(DATA, 'ur5.urdf')
GRIPPER = os.path.join(DATA, 'parallel_gripper.urdf')
XACRO = os.path.join(DATA, 'two_link.urdf.xacro')
FILES = [UR5, GRIPPER, XACRO]
TOL = 1e-10


def pin_model(path):
    if path.endswith('.xacro'):
        import xacro

        return pin.buildModelFromXML(xacro.process_file(path).toxml())
    return pin.buildModelFromUrdf(path)


def pin_q(model, q):
    out = []
    for qi, t in zip(q, model.joint_urdf_types):
        out.extend([np.cos(qi), np.sin(qi)] if t == 'continuous' else [qi])
    return np.array(out)


def relerr(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert a.shape == b.shape
    return float(np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b))))


def states(model, seed, k=5):
    rng = np.random.default_rng(seed)
    for i in range(k):
        q = model.random_configuration(rng)
        if i == 0:
            yield q, np.zeros(model.nq), np.zeros(model.nq), rng.normal(size=model.nq)
        else:
            yield q, rng.normal(size=model.nq), rng.normal(size=model.nq), rng.normal(size=model.nq)


# ---------------------------------------------------------------------------- loading


def test_ur5_loads(capfd):
    m = rd.load_model(UR5)
    out = capfd.readouterr()
    assert out.err == '' and out.out == ''  # urdfdom-py warnings (ros2_control...) muted
    assert m.name == 'ur5'
    assert m.joint_names == [
        'shoulder_pan_joint',
        'shoulder_lift_joint',
        'elbow_joint',
        'wrist_1_joint',
        'wrist_2_joint',
        'wrist_3_joint',
    ]
    assert m.joint_urdf_types == ['continuous', 'revolute', 'revolute', 'revolute', 'revolute', 'continuous']
    assert m.root_link == 'base_link'
    for f in ('base_link', 'base', 'base_link_inertia', 'flange', 'tool0', 'ft_frame'):
        assert f in m.frame_names
    for f in ('base_link', 'base', 'base_link_inertia'):
        assert m.frame_parent[m.frame_index(f)] == -1  # fixed to the world
    assert m.frame_parent[m.frame_index('tool0')] == m.joint_index('wrist_3_joint')
    np.testing.assert_allclose(m.mass, [3.7, 8.393, 2.275, 1.219, 1.219, 0.1879])
    assert np.isinf(m.lower[0]) and np.isinf(m.upper[5])  # continuous
    np.testing.assert_allclose(m.lower[2], -np.pi)
    np.testing.assert_allclose(m.effort_limit, [150, 150, 150, 28, 28, 28])
    assert m.mimic == {} and m.loops == [] and m.actuated == m.joint_names
    assert not os.path.exists('package://ur_description/meshes/ur5/visual/base.dae')


def test_ur5_tool0_placement_at_home():
    """Home pose of the UR5 (all zeros): tool0 at x = a2 + a3 (REP-103 base_link), z = d1 - d5."""
    m = rd.load_model(UR5)
    T = rd.frame_placement(m, np.zeros(m.nq), 'tool0')
    np.testing.assert_allclose(T[:3, 3], [0.425 + 0.39225, 0.10915 + 0.0823, 0.089159 - 0.09465], atol=1e-9)


def test_ur5_as_robot_description_string():
    """The XML text itself (as a robot_description parameter), with its encoding declaration."""
    with open(UR5, encoding='utf-8') as fh:
        xml = fh.read()
    assert xml.startswith('<?xml version="1.0" encoding="utf-8"?>')
    m = rd.load_model(xml)
    assert m.source == '<string>' and m.nq == 6
    q = np.linspace(-1, 1, 6)
    np.testing.assert_array_equal(rd.crba(m, q), rd.crba(rd.load_model(UR5), q))


def test_gripper_loads_with_mimic():
    m = rd.load_model(GRIPPER)
    assert m.joint_names == ['cover_joint', 'finger_joint1', 'finger_joint2']
    assert m.joint_urdf_types == ['revolute', 'prismatic', 'prismatic']
    assert m.mimic == {'finger_joint2': ('finger_joint1', 1.0, 0.0), 'cover_joint': ('finger_joint1', -12.5, 0.25)}
    # each mimic joint is coupled to the joint it mimics by a one-row coupling loop
    assert m.nq == 3 and m.actuated == m.joint_names and m.loops_source is None
    assert [(lp.name, lp.type, lp.coupling) for lp in m.loops] == [
        ('mimic_cover_joint', 'coupling', ('cover_joint', 'finger_joint1', -12.5, 0.25)),
        ('mimic_finger_joint2', 'coupling', ('finger_joint2', 'finger_joint1', 1.0, 0.0)),
    ]
    np.testing.assert_allclose(rd.loop_residual(m, [0.25 - 12.5 * 0.02, 0.02, 0.02]), 0.0, atol=1e-15)
    assert rd.load_model(GRIPPER, mimic='ignore').loops == []
    np.testing.assert_allclose(m.axes[2], [0, -1, 0])
    np.testing.assert_allclose(m.axes[0], [0, 0.6, 0.8])
    assert 'hand_tcp' in m.frame_names and m.frame_parent[m.frame_index('hand_tcp')] == -1
    # opening both fingers by the same amount moves them apart symmetrically
    q = np.array([0.0, 0.03, 0.03])
    T = rd.forward_kinematics(m, q)
    np.testing.assert_allclose(
        T['leftfinger'][:3, 3] + T['rightfinger'][:3, 3], 2 * T['hand'][:3, 3] + [0, 0, 2 * 0.0584], atol=1e-12
    )


def test_parts_irrelevant_to_dynamics_never_block_loading():
    """urdfdom-py cannot parse ROS 2 transmissions or <capsule> geometry: they are skipped."""
    with open(GRIPPER, encoding='utf-8') as fh:
        xml = fh.read()
    assert '<plugin>transmission_interface/SimpleTransmission</plugin>' in xml
    xml = xml.replace('<sphere radius="0.04"/>', '<capsule radius="0.04" length="0.1"/>')
    m = rd.load_model(xml)
    assert m.nq == 3 and m.urdf_xml == xml  # the original text is kept verbatim
    np.testing.assert_array_equal(rd.crba(m, [0.1, 0.01, 0.02]), rd.crba(rd.load_model(GRIPPER), [0.1, 0.01, 0.02]))


def test_xacro_is_refused_unless_opted_in():
    """Model files are data: xacro evaluates Python (its sandbox can be escaped), so a .xacro
    path is expanded only with allow_xacro=True (CLI --xacro); nodes never opt in."""
    with pytest.raises(rd.ModelError, match='allow_xacro=True'):
        rd.load_model(XACRO)
    from robot_dynamics.tools import cli

    with pytest.raises(SystemExit, match='--xacro'):
        cli.main(['info', XACRO])


def test_xacro_loads():
    m = rd.load_model(XACRO, allow_xacro=True)
    assert m.source == XACRO and m.name == 'two_link'
    assert m.joint_names == ['joint1', 'joint2']
    np.testing.assert_allclose(m.axes, [[0, 0, 1], [0, 1, 0]])
    np.testing.assert_allclose([m.lower[1], m.upper[1]], [-0.75 * np.pi, 0.75 * np.pi])
    m1 = 2700.0 * np.pi * 0.03**2 * 0.4
    np.testing.assert_allclose(m.mass, [m1, 0.75 * m1])
    np.testing.assert_allclose(m.com[1], [0.15, 0, 0])
    np.testing.assert_allclose(m.p_fixed[1], [0.4, 0, 0])
    assert '<xacro:' not in m.urdf_xml and 'link1' in m.urdf_xml
    T = rd.frame_placement(m, np.zeros(2), 'tool0')
    np.testing.assert_allclose(T[:3, 3], [0, 0, 1.0 - 0.7], atol=1e-12)  # rod hangs down


def test_xacro_pathlike_and_sidecar_lookup(tmp_path):
    """arm.urdf.xacro picks up arm.loops.yaml next to it; PathLike works."""
    import pathlib
    import shutil

    dst = tmp_path / 'arm.urdf.xacro'
    shutil.copy(XACRO, dst)
    (tmp_path / 'arm.loops.yaml').write_text('format: robot_dynamics/parsers/sidecar/1\nactuated: [joint2]\n')
    m = rd.load_model(pathlib.Path(dst), allow_xacro=True)
    assert m.actuated == ['joint2'] and m.passive == ['joint1']
    assert m.loops_source == str(tmp_path / 'arm.loops.yaml')


def test_arm7_benchmark_robot():
    """urdf/arm7.urdf: iiwa14-style 7R arm with realistic inertias, limits and a tool0 frame."""
    m = rd.load_model(rd.data_path('urdf/arm7.urdf'))
    assert m.joint_names == [f'joint_{i}' for i in range(1, 8)]
    assert m.joint_urdf_types == ['revolute'] * 7 and m.loops == []
    assert 20 < m.mass.sum() < 35 and np.all(m.mass > 0)
    for I in m.inertia_com:  # physical: PD and triangle inequality
        ev = np.linalg.eigvalsh(I)
        assert ev.min() > 0 and 2 * ev.max() <= ev.sum()
    assert np.all(np.isfinite(m.lower)) and np.all(m.lower < 0) and np.all(m.upper > 0)
    assert np.all(np.isfinite(m.effort_limit)) and np.all(np.isfinite(m.velocity_limit))
    T = rd.frame_placement(m, np.zeros(7), 'tool0')  # stretched upwards at home
    np.testing.assert_allclose(T[:3, 3], [0, 0, 1.306], atol=1e-12)
    # gravity torques stay well inside the torque limits over random configurations
    g = rd.gravity_torques(m, m.random_configuration(0, size=200))
    assert np.all(np.abs(g) < m.effort_limit)
    pm = pin.buildModelFromUrdf(rd.data_path('urdf/arm7.urdf'))
    assert pm.nq == 7 and [pm.names[i] for i in range(1, 8)] == m.joint_names


# ---------------------------------------------------------------------------- vs Pinocchio


@pytest.fixture(scope='module', params=FILES, ids=os.path.basename)
def pair(request):
    return rd.load_model(request.param, allow_xacro=True), pin_model(request.param)


def test_joint_order_and_frames_match_pinocchio(pair):
    m, pm = pair
    assert [pm.names[i] for i in range(1, pm.njoints)] == m.joint_names
    assert pm.nv == m.nv
    assert pm.nq == m.nq + m.joint_urdf_types.count('continuous')
    body = sorted(f.name for f in pm.frames if f.type == pin.FrameType.BODY)
    assert body == sorted(m.frame_names)
    for i, t in enumerate(m.joint_urdf_types):
        if t != 'continuous':
            iq = pm.joints[i + 1].idx_q
            assert pm.lowerPositionLimit[iq] == m.lower[i]
            assert pm.upperPositionLimit[iq] == m.upper[i]
        assert pm.effortLimit[pm.joints[i + 1].idx_v] == m.effort_limit[i]


def test_rnea_crba_aba_match_pinocchio(pair):
    m, pm = pair
    for q, qd, qdd, tau in states(m, seed=m.nq):
        pq = pin_q(m, q)
        tau_ref = pin.rnea(pm, pm.createData(), pq, qd, qdd)
        assert relerr(rd.rnea(m, q, qd, qdd), tau_ref) <= TOL
        M_ref = pin.crba(pm, pm.createData(), pq)
        M_ref = np.triu(M_ref) + np.triu(M_ref, 1).T
        assert relerr(rd.crba(m, q), M_ref) <= TOL
        qdd_ref = pin.aba(pm, pm.createData(), pq, qd, tau)
        qdd = rd.forward_dynamics(m, q, qd, tau)
        # forward dynamics is conditioned by M (tiny gripper fingers): compare with a
        # tolerance scaled by cond(M), and exactly via the torque residual
        assert relerr(qdd, qdd_ref) <= 1e-14 * np.linalg.cond(M_ref)
        assert relerr(rd.rnea(m, q, qd, qdd), tau) <= TOL


def test_batched_matches_single_and_pinocchio(pair):
    m, pm = pair
    rng = np.random.default_rng(7)
    Q = m.random_configuration(rng, size=8)
    QD, QDD = rng.normal(size=(2, 8, m.nq))
    T = rd.rnea(m, Q, QD, QDD)
    M = rd.crba(m, Q)
    for k in range(8):
        pq = pin_q(m, Q[k])
        assert relerr(T[k], pin.rnea(pm, pm.createData(), pq, QD[k], QDD[k])) <= TOL
        Mr = pin.crba(pm, pm.createData(), pq)
        assert relerr(M[k], np.triu(Mr) + np.triu(Mr, 1).T) <= TOL


def test_frame_placements_match_pinocchio(pair):
    m, pm = pair
    pd = pm.createData()
    for q, *_ in states(m, seed=3, k=3):
        pin.framesForwardKinematics(pm, pd, pin_q(m, q))
        T = rd.forward_kinematics(m, q)
        for fid, f in enumerate(pm.frames):
            if f.type == pin.FrameType.BODY:
                assert relerr(T[f.name], pd.oMf[fid].homogeneous) <= TOL, f.name
