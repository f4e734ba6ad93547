"""Frame-pair YAML import (robot_dynamics.parsers.framepairs): the format of Gepetto's
toolbox-parallel-robots (``closed_loop``, ``type``, ``name_mot``, ``joint_name``, ``joint_type``).

Independent routes: the package's own sidecar of the same mechanism (test/data/biped_rods.*,
urdf/five_bar.*) gives the same model; Pinocchio, set up the way the toolbox's loader does it
(its URDF parser, the SPHERICAL joints redefined as ``JointModelSpherical``, each pair a
``RigidConstraintModel`` of the pair's type between the two frames), gives the same constrained
forward dynamics.
"""

import os

import numpy as np
import pytest

import robot_dynamics as rd
from pin_oracle import to_pin_q
from robot_dynamics.algorithms import projection as pj
from robot_dynamics.parsers.framepairs import import_framepairs
from robot_dynamics.parsers.importing import import_description, load_imported

pin = pytest.importorskip('pinocchio')

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(os.path.dirname(HERE), 'data')
BIPED = os.path.join(DATA, 'biped_rods.urdf')
FIVE_BAR = rd.data_path('urdf/five_bar.urdf')

BIPED_YAML = """\
closed_loop: [['left_shin_pin', 'left_rod_tip'], ['right_shin_pin', 'right_rod_tip']]
type: ['3D', '3d']
name_mot: ['left_hip', 'right_hip']
joint_name: ['left_rod_ball', 'right_rod_ball']
joint_type: ['SPHERICAL', 'SPHERICAL']
"""


@pytest.fixture
def biped_yaml(tmp_path):
    p = tmp_path / 'robot.yaml'
    p.write_text(BIPED_YAML)
    return str(p)


def test_the_biped_imports_as_its_own_sidecar_describes_it(biped_yaml):
    res = import_framepairs(BIPED, biped_yaml, root_joint='free_flyer')
    m = load_imported(res)
    ref = rd.load_model(BIPED)
    assert m.joint_names == ref.joint_names
    assert [j.kind for j in m.joints] == [j.kind for j in ref.joints]
    assert [(lp.type, lp.frame_a, lp.frame_b) for lp in m.loops] == [
        (lp.type, lp.frame_a, lp.frame_b) for lp in ref.loops
    ]
    assert [lp.name for lp in m.loops] == ['left_shin_pinCleft_rod_tip', 'right_shin_pinCright_rod_tip']
    assert m.actuated == ref.actuated == ['left_hip', 'right_hip']
    q = ref.neutral()
    assert np.array_equal(rd.crba(m, q), rd.crba(ref, q))
    assert any('SPHERICAL' in n or 'spherical' in n for n in res.notes)


def _pin_as_the_toolbox_loads_it(urdf_path, res, root_free_flyer):
    """Pinocchio's model of the original URDF with the toolbox's redefinitions (SPHERICAL ->
    JointModelSpherical, same placements and inertias) and its constraint models."""
    base = (
        pin.buildModelFromUrdf(urdf_path, pin.JointModelFreeFlyer())
        if root_free_flyer
        else pin.buildModelFromUrdf(urdf_path)
    )
    spherical = set(res.sidecar.get('joint_types', {}))
    pm = pin.Model()
    pm.gravity = base.gravity
    for j in range(1, base.njoints):
        jm = pin.JointModelSpherical() if base.names[j] in spherical else base.joints[j]
        jid = pm.addJoint(base.parents[j], jm, base.jointPlacements[j], base.names[j])
        pm.appendBodyToJoint(jid, base.inertias[j], pin.SE3.Identity())
    for f in base.frames:
        if f.name != 'universe':
            pm.addFrame(pin.Frame(f.name, f.parentJoint, f.placement, f.type), False)
    cms = pin.StdVec_RigidConstraintModel()
    for lp in res.sidecar['loops']:
        ct = pin.ContactType.CONTACT_3D if lp['type'] == 'spherical' else pin.ContactType.CONTACT_6D
        fa, fb = (pm.frames[pm.getFrameId(lp[k])] for k in ('frame_a', 'frame_b'))
        cms.append(
            pin.RigidConstraintModel(
                ct, pm, fa.parentJoint, fa.placement, fb.parentJoint, fb.placement, pin.ReferenceFrame.LOCAL
            )
        )
    pd = pm.createData()
    cds = pin.StdVec_RigidConstraintData([c.createData() for c in cms])
    pin.initConstraintDynamics(pm, pd, cms, cds)
    return pm, pd, cms, cds


_to_pin = to_pin_q


@pytest.mark.parametrize('case', ['biped 3D', 'five-bar 6D'])
def test_constrained_forward_dynamics_equals_pinocchio_set_up_as_the_toolbox_does(case, biped_yaml, tmp_path):
    if case == 'biped 3D':
        urdf, yml, ff = BIPED, biped_yaml, True
    else:
        # the five-bar's cut frames at the passive joint C welded: the distal links locked
        # together (one degree of freedom left); 3 of the 6 rows are out of the plane
        urdf, ff = FIVE_BAR, False
        yml = tmp_path / 'five_bar.yaml'
        yml.write_text("closed_loop: [['distal1_tip', 'distal2_tip']]\ntype: ['6D']\nname_mot: ['motor1_joint']\n")
    res = import_framepairs(urdf, yml, root_joint='free_flyer' if ff else None)
    m = load_imported(res)
    pm, pd, cms, cds = _pin_as_the_toolbox_loads_it(urdf, res, ff)
    assert [pm.names[i] for i in range(1, pm.njoints)] == [j.name for j in m.joints]
    rng = np.random.default_rng(5)
    prox = pin.ProximalSettings(1e-14, 1e-10, 400)
    guess = rd.load_model(urdf).reference_q()
    for _ in range(3):
        q = guess.copy()
        if ff:
            q[:7] = m.joints[0].model.random(rng)
        q[7 if ff else 0 :] += rng.uniform(-0.05, 0.05, m.nq - (7 if ff else 0))
        q = pj.assemble(m, q_guess=q, fixed='none').q
        assert max(max(e) for e in rd.loop_errors(m, q).values()) <= 1e-10
        qd = pj.project_velocity(m, q, rng.standard_normal(m.nv))
        tau = rng.standard_normal(m.nv)
        res_ = rd.constrained_forward_dynamics(m, q, qd, tau)
        a = pin.constraintDynamics(pm, pd, _to_pin(m, pm, q), qd, tau, cms, cds, prox)
        assert np.abs(res_.qdd - a).max() <= 1e-9 * max(1.0, np.abs(a).max()), case
        F_pin = -pin.getConstraintsJacobian(pm, pd, cms, cds).T @ pd.lambda_c
        assert np.abs(res_.F - F_pin).max() <= 1e-9 * max(1.0, np.abs(F_pin).max()), case


def test_universal_and_fixed_redefinitions_and_joint_frames(tmp_path):
    urdf = tmp_path / 'robot.urdf'
    urdf.write_text(
        '<robot name="r">'
        '<link name="base"/>'
        '<link name="a"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>'
        '<link name="b"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>'
        '<link name="c"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>'
        '<joint name="mot" type="revolute"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/>'
        '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
        '<joint name="uj" type="revolute"><parent link="a"/><child link="b"/><origin xyz="0 0 1"/>'
        '<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
        '<joint name="lock" type="revolute"><parent link="b"/><child link="c"/><origin xyz="1 0 0"/>'
        '<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
        '</robot>'
    )
    yml = tmp_path / 'robot.yaml'
    yml.write_text(
        "closed_loop: [['lock', 'base']]\ntype: ['3D']\nname_mot: ['mot']\n"
        "joint_name: ['uj', 'lock']\njoint_type: ['UJOINT_XY', 'FIXED']\n"
    )
    res = import_description(urdf, frame_pairs=yml)
    m = load_imported(res)
    assert m.joint_names == ['mot', 'uj_X', 'uj_Y']
    assert np.allclose(m.axes[1], [1, 0, 0]) and np.allclose(m.axes[2], [0, 1, 0])
    # 'lock' is a joint name: its frame is its child link 'c'
    assert (m.loops[0].frame_a, m.loops[0].frame_b) == ('c', 'base')
    # the universal joint: q = (0, 0.3, 0) tilts link c about the x axis through (0, 0, 1)
    T = rd.frame_placement(m, np.array([0.0, 0.3, 0.0]), 'c')
    assert np.allclose(T[:3, 3], [1.0, 0.0, 1.0]) and np.allclose(T[:3, 0], [1, 0, 0])
    T = rd.frame_placement(m, np.array([0.0, 0.0, 0.3]), 'c')
    assert np.allclose(T[:3, 3], [np.cos(0.3), 0.0, 1.0 - np.sin(0.3)])


@pytest.mark.parametrize(
    'text, key, what',
    [
        ("closed_loop: [['a', 'nope']]\n", r'closed_loop\[0\]\[1\]', 'not a link or joint'),
        ("closed_loop: [['a', 'base']]\ntype: ['2D']\n", r'type\[0\]', 'expected 3D or 6D'),
        ("closed_loop: [['a', 'base']]\ntype: ['3D', '6D']\n", 'type', '2 types for 1'),
        ("closed_loop: [['a', 'base']]\nname_mot: ['fix']\n", r'name_mot\[0\]', 'not a movable joint'),
        ("closed_loop: [['a', 'base']]\njoint_name: ['j']\njoint_type: ['BALL']\n", r'joint_type\[0\]', 'unknown'),
        ("closed_loop: [['a', 'base']]\nmotors: []\n", 'motors', 'unknown key'),
        ('name_mot: [j]\n', 'closed_loop', 'required'),
    ],
)
def test_bad_yaml_names_the_file_and_key(tmp_path, text, key, what):
    urdf = tmp_path / 'r.urdf'
    urdf.write_text(
        '<robot name="r"><link name="base"/><link name="a"/><link name="e"/>'
        '<joint name="j" type="continuous"><parent link="base"/><child link="a"/></joint>'
        '<joint name="fix" type="fixed"><parent link="a"/><child link="e"/></joint></robot>'
    )
    yml = tmp_path / 'r.yaml'
    yml.write_text(text)
    with pytest.raises(rd.LoopSpecError, match=rf'r\.yaml: {key}: .*{what}'):
        import_framepairs(urdf, yml)
