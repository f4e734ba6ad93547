"""SDFormat semantics of the importer on a small SDF 1.9 model: ``relative_to`` poses and
``<frame>``s, ``degrees``, joint poses in the child link, ``expressed_in`` axes, a universal
joint, a joint in the tree against its direction, ``must_be_loop_joint``, ``<mimic>`` (a coupling loop),
inertial poses, and the refusals.

The expected placements are composed here from the file's numbers with Pinocchio's SE3 and
rpy (independent of the importer's frame graph); a joint's motion is the SDF definition
``X_P_C(q) = X_P_J Rot(axis, q) X_J_C`` with the joint frame J fixed to the child.
"""

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.parsers.importing import load_imported
from robot_dynamics.parsers.sdf import import_sdf

pin = pytest.importorskip('pinocchio')


def inertial(m, pose, I):
    ixx, iyy, izz, ixy, ixz, iyz = I
    return (
        f'<inertial><pose>{pose}</pose><mass>{m}</mass><inertia><ixx>{ixx}</ixx><iyy>{iyy}</iyy>'
        f'<izz>{izz}</izz><ixy>{ixy}</ixy><ixz>{ixz}</ixz><iyz>{iyz}</iyz></inertia></inertial>'
    )


IN = inertial(0.7, '0.01 0.02 0.03 0.1 0.2 0.3', (0.02, 0.03, 0.04, 0.001, -0.002, 0.0015))
IN4 = inertial(1.3, '0.05 -0.04 0.02 0.4 -0.3 0.2', (0.05, 0.06, 0.07, 0.002, 0.001, -0.003))
MODEL = f"""<?xml version="1.0"?>
<sdf version="1.9">
  <model name="demo">
    <link name="base"><pose>0 0 1 0 0 0</pose>{IN}</link>
    <frame name="F" attached_to="base"><pose degrees="true" relative_to="base">0.1 0 0 0 0 90</pose></frame>
    <link name="l1"><pose relative_to="F">0 0.2 0 0.3 0 0</pose>{IN}</link>
    <link name="l2"><pose relative_to="l1">0 0 -0.3 0 0 0</pose>{IN}</link>
    <link name="l3"><pose relative_to="l2">0.25 0 0 0 0.2 0</pose>{IN}</link>
    <link name="l4"><pose relative_to="l1">0 0.1 0 0 0 0</pose>{IN4}</link>
    <frame name="tip" attached_to="l3"><pose relative_to="l3">0.1 0 0 0 0 0</pose></frame>
    <joint name="world_fix" type="fixed"><parent>world</parent><child>base</child></joint>
    <joint name="j1" type="revolute"><pose>0.05 0 0 0 0 0</pose><parent>base</parent><child>l1</child>
      <axis><xyz expressed_in="__model__">0 0 1</xyz><limit><lower>-1</lower><upper>1</upper></limit>
      <dynamics><damping>0.3</damping></dynamics></axis></joint>
    <joint name="u" type="universal"><parent>l1</parent><child>l2</child>
      <axis><xyz>1 0 0</xyz></axis><axis2><xyz>0 1 0</xyz></axis2></joint>
    <joint name="rev" type="revolute"><pose relative_to="l3">0 0 0.1 0 0 0</pose><parent>l3</parent>
      <child>l2</child><axis><xyz>0 1 0</xyz></axis></joint>
    <joint name="close" type="ball"><parent>l3</parent><child>base</child></joint>
    <joint name="hinge" type="revolute"><parent>l1</parent><child>l4</child>
      <axis><xyz>0 0 1</xyz><mimic joint="j1"><multiplier>2</multiplier></mimic></axis></joint>
    <joint name="weld_me" type="fixed"><parent>l1</parent><child>l4</child>
      <physics><simbody><must_be_loop_joint>true</must_be_loop_joint></simbody></physics></joint>
  </model>
</sdf>
"""


def T(x=0, y=0, z=0, r=0, p=0, yw=0):
    return pin.SE3(pin.rpy.rpyToMatrix(r, p, yw), np.array([x, y, z], float))


X = {'base': T(z=1)}
X['F'] = X['base'] * T(x=0.1, yw=np.pi / 2)
X['l1'] = X['F'] * T(y=0.2, r=0.3)
X['l2'] = X['l1'] * T(z=-0.3)
X['l3'] = X['l2'] * T(x=0.25, p=0.2)
X['l4'] = X['l1'] * T(y=0.1)
X['tip'] = X['l3'] * T(x=0.1)


def rot(axis, q):
    return pin.SE3(pin.exp3(np.asarray(axis, float) * q), np.zeros(3))


@pytest.fixture
def sdf(tmp_path):
    p = tmp_path / 'demo.sdf'
    p.write_text(MODEL)
    return str(p)


def fk(m, q, name):
    M = rd.frame_placement(m, q, name)
    return pin.SE3(M[:3, :3], M[:3, 3])


def zero(m, **values):
    q = m.neutral()
    for name, v in values.items():
        q[m.q_index(name)] = v
    return q


def close(A, B, tol=1e-12):
    return np.abs(A.homogeneous - B.homogeneous).max() <= tol


@pytest.mark.parametrize('cut', [(), ('close',)])
def test_every_link_and_frame_is_where_the_file_puts_it(sdf, cut):
    m = load_imported(import_sdf(sdf, cut=cut))
    q = zero(m)
    for name, Xe in X.items():
        assert close(fk(m, q, name), Xe), name
    assert max(max(e) for e in rd.loop_errors(m, q).values()) <= 1e-15


def test_tree_loops_and_notes(sdf):
    res = import_sdf(sdf)
    m = load_imported(res)
    assert 'root_joint' not in res.sidecar  # the world joint is fixed: a fixed base
    # 'close' is the only way to l3 besides 'rev' (both have l3 as parent): the first found,
    # 'close', hangs l3 on the base against its direction; 'rev' is cut
    assert res.sidecar['joint_types'] == {'close': 'spherical'}
    assert {lp.name: lp.type for lp in m.loops} == {'rev': 'revolute', 'weld_me': 'weld', 'mimic_hinge': 'coupling'}
    # <mimic joint='j1'><multiplier>2: q_hinge = 2 q_j1, a coupling row of the closure residual
    cpl = next(lp for lp in res.sidecar['loops'] if lp['name'] == 'mimic_hinge')
    assert (cpl['joint'], cpl['mimic'], cpl['multiplier'], cpl['offset']) == ('hinge', 'j1', 2.0, 0.0)
    q = m.reference_q()
    row = [i for i, r in enumerate(rd.constraint_row_names(m)) if r.startswith('mimic_hinge/')]
    assert len(row) == 1
    q[m.q_index('j1')], q[m.q_index('hinge')] = 0.1, 0.2
    assert abs(rd.loop_residual(m, q)[row[0]]) < 1e-15
    q[m.q_index('hinge')] = 0.3
    assert abs(abs(rd.loop_residual(m, q)[row[0]]) - 0.1) < 1e-15
    rev = next(lp for lp in res.sidecar['loops'] if lp['name'] == 'rev')
    assert (rev['frame_a'], rev['frame_b']) == ('rev_a', 'rev_b') and np.allclose(rev['axis'], [0, 1, 0])
    text = '\n'.join(res.notes)
    assert "joint 'close' is in the tree against its direction" in text
    assert "joint 'weld_me' is cut: <physics> must_be_loop_joint" in text
    assert "<mimic joint='j1'>: coupling loop 'mimic_hinge' (q_hinge = 2.0 q_j1 + 0.0)" in text
    assert "universal joint 'u': revolute joints 'u_1', 'u_2'" in text
    assert [j for j in m.joint_names if not j.startswith('close/')] == ['j1', 'hinge', 'u_1', 'u_2']
    assert (m.lower[m.joint_index('j1')], m.upper[m.joint_index('j1')]) == (-1.0, 1.0)
    assert '<dynamics damping="0.3"' in res.urdf


def test_joint_motions_follow_the_sdf_definition(sdf):
    m = load_imported(import_sdf(sdf, cut=['close']))
    assert m.joint_names == ['j1', 'hinge', 'u_1', 'u_2', 'rev']
    J1 = X['l1'] * T(x=0.05)  # j1's frame: its pose in the child l1
    a1 = J1.rotation.T @ [0, 0, 1]  # expressed_in __model__
    assert close(fk(m, zero(m, j1=0.4), 'l1'), J1 * rot(a1, 0.4) * J1.inverse() * X['l1'])
    # universal: axis 1 (x of the joint frame = l2 at rest), then axis 2 carried by axis 1
    Ju = X['l2']
    assert close(fk(m, zero(m, u_1=0.3), 'l2'), Ju * rot([1, 0, 0], 0.3))
    assert close(fk(m, zero(m, u_2=0.3), 'l2'), Ju * rot([0, 1, 0], 0.3))
    assert close(fk(m, zero(m, u_1=0.3, u_2=-0.2), 'l2'), Ju * rot([1, 0, 0], 0.3) * rot([0, 1, 0], -0.2))
    # 'rev' (parent l3, child l2) is in the tree against its direction: l3 hangs on l2, and
    # the coordinate keeps the SDF sign, X_l3 = X_l2 X_P_C(q)^-1
    Jr = X['l3'] * T(z=0.1)
    X_PC = (X['l3'].inverse() * Jr) * rot([0, 1, 0], 0.5) * (Jr.inverse() * X['l2'])
    assert close(fk(m, zero(m, rev=0.5), 'l3'), X['l2'] * X_PC.inverse())
    # the joint motion itself (the coupling is a loop of the sidecar, not of the tree)
    assert close(fk(m, zero(m, hinge=0.2), 'l4'), X['l4'] * rot([0, 0, 1], 0.2))


def test_inertial_pose_and_tensor(sdf):
    # only the hinge moves: T = 1/2 (m |w x (c - p)|^2 + w^T I_c w), from the file's numbers
    m = load_imported(import_sdf(sdf, cut=['close', 'weld_me']))
    q, qd = zero(m), np.zeros(m.nv)
    qd[m.joint_index('hinge')] = 1.0
    Xc = X['l4'] * T(0.05, -0.04, 0.02, 0.4, -0.3, 0.2)
    ixx, iyy, izz, ixy, ixz, iyz = 0.05, 0.06, 0.07, 0.002, 0.001, -0.003
    Ic = Xc.rotation @ np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]]) @ Xc.rotation.T
    w = X['l4'].rotation @ [0, 0, 1]
    v = np.cross(w, Xc.translation - X['l4'].translation)
    expected = 0.5 * (1.3 * v @ v + w @ Ic @ w)
    assert abs(rd.kinetic_energy(m, q, qd) - expected) <= 1e-14
    # and the potential energy of every body: -sum m g . c
    cs = {n: X[n] * T(0.01, 0.02, 0.03, 0.1, 0.2, 0.3) for n in ('base', 'l1', 'l2', 'l3')}
    V = 9.81 * (0.7 * sum(c.translation[2] for n, c in cs.items() if n != 'base') + 1.3 * Xc.translation[2])
    assert abs(rd.potential_energy(m, q) - V) <= 1e-12


def test_base_of_a_model_without_world_joint(tmp_path):
    p = tmp_path / 'free.sdf'
    p.write_text(
        MODEL.replace('<joint name="world_fix" type="fixed"><parent>world</parent><child>base</child></joint>', '')
    )
    res = import_sdf(p)
    assert res.sidecar['root_joint'] == 'free_flyer'
    m = load_imported(res)
    assert m.joints[0].kind == 'free_flyer' and m.root_link == 'base'
    assert any("'base' is at xyz 0.0 0.0 1.0" in n for n in res.notes)
    assert 'root_joint' not in import_sdf(p, root_joint=None).sidecar


def _variant(tmp_path, old, new):
    assert old in MODEL
    p = tmp_path / 'bad.sdf'
    p.write_text(MODEL.replace(old, new))
    return p


@pytest.mark.parametrize(
    'old, new, message',
    [
        ('<joint name="rev" type="revolute">', '<joint name="rev" type="screw">', r"joint 'rev' \(line \d+\): screw"),
        ('<link name="l4">', '<model name="inner"/><link name="l4">', "model 'inner'.*nested model without links"),
        ('<link name="l4">', '<include><uri>model://x</uri></include><link name="l4">', 'nested includes'),
        ('<child>l4</child>\n      <physics>', '<child>l44</child>\n      <physics>', "'l44' is not a link.*'l4'"),
        ('relative_to="F">', 'relative_to="l2">', 'cycle of relative_to references: l1 -> l2 -> l1'),
        ('<axis2><xyz>0 1 0</xyz>', '<axis2><xyz>1 1 0</xyz>', 'universal joint axes must be orthogonal'),
        ('<xyz>0 1 0</xyz></axis></joint>', '<xyz>0 0 0</xyz></axis></joint>', r"joint 'rev'.*zero axis"),
        ('0.05 0 0 0 0 0</pose>', '0.05 0 0 0 nan 0</pose>', '<pose>: expected 6 finite numbers'),
        ('<sdf version="1.9">', '<sdf version="2.0">', 'SDFormat 2.0 is not supported'),
    ],
)
def test_refusals_name_the_file_and_element(tmp_path, old, new, message):
    p = _variant(tmp_path, old, new)
    with pytest.raises(rd.ModelError, match=message) as exc:
        import_sdf(p)
    assert str(exc.value).startswith(str(p))


def test_a_nested_model_is_flattened_with_scoped_names(tmp_path):
    text = MODEL.replace(
        f'<link name="l4"><pose relative_to="l1">0 0.1 0 0 0 0</pose>{IN4}</link>',
        f'<model name="hand"><pose relative_to="l1">0 0.1 0 0 0 0</pose><link name="l4">{IN4}</link>'
        '<frame name="pt"><pose>0 0 0.05 0 0 0</pose></frame></model>',
    ).replace('<child>l4</child>', '<child>hand::l4</child>')
    assert text.count('hand::l4') == 2
    p = tmp_path / 'nested.sdf'
    p.write_text(text)
    res = import_sdf(p, cut=['close'])
    m = load_imported(res)
    q = zero(m)
    for name, Xe in X.items():
        assert close(fk(m, q, 'hand::l4' if name == 'l4' else name), Xe), name
    assert close(fk(m, q, 'hand::pt'), X['l4'] * T(z=0.05))
    assert close(fk(m, zero(m, hinge=0.2), 'hand::l4'), X['l4'] * rot([0, 0, 1], 0.2))
    assert any("nested model 'hand'" in n for n in res.notes)


def test_a_cut_universal_joint_is_a_universal_loop(sdf):
    res = import_sdf(sdf, cut=['u'])
    lp = next(lp for lp in res.sidecar['loops'] if lp['name'] == 'u')
    assert lp['type'] == 'universal' and np.allclose(lp['axes'], [[1, 0, 0], [0, 1, 0]])
    m = load_imported(res)
    assert max(max(e) for e in rd.loop_errors(m, zero(m)).values()) <= 1e-15
    # the loop leaves the two rotations of the cross free: rank 4 (3 positions, 1 orientation)
    rows = [r for r in (lp2 for lp2 in m.loops) if r.name == 'u'][0]
    assert rows.row_names == ('u/px', 'u/py', 'u/pz', 'u/r_a1xa2')


def test_a_model_in_a_world_file_is_placed_by_its_pose(tmp_path):
    world = MODEL.replace('<model name="demo">', '<world name="w"><model name="demo"><pose>1 2 3 0 0 0.5</pose>')
    world = world.replace('</model>\n</sdf>', '</model></world>\n</sdf>')
    p = tmp_path / 'demo.world'
    p.write_text(world)
    m = load_imported(import_sdf(p))
    Xw = T(1, 2, 3, 0, 0, 0.5)
    for name, Xe in X.items():
        assert close(fk(m, zero(m), name), Xw * Xe), name


def test_unknown_cut_and_root_joint(sdf):
    with pytest.raises(rd.ModelError, match="cut: 'rve' is not a joint of the model.*'rev'"):
        import_sdf(sdf, cut=['rve'])
    with pytest.raises(rd.ModelError, match='root_joint must be'):
        import_sdf(sdf, root_joint='floating')
