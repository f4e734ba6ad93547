"""``robot-dynamics import``: SDFormat (Cassie) and a URDF with a frame-pair YAML into files that
``rd.load_model``, ``robot-dynamics check`` and the bringup loader take unchanged."""

import os
import sys

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.parsers.importing import load_imported
from robot_dynamics.parsers.sdf import import_sdf
from robot_dynamics.ros.bringup import load_bringup
from robot_dynamics.tools import cli

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'parsers'))
from test_sdf_import import cassie_dir  # noqa: E402

CASSIE = os.path.join(cassie_dir(), 'cassie_v2.sdf')
BIPED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'data', 'biped_rods.urdf')


def test_help_has_an_example(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(['import', '--help'])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert 'robot-dynamics import cassie.sdf --out cassie_import' in out and '--frame-pairs' in out


def test_cassie_imports_into_files_that_load_check_and_launch_unchanged(tmp_path, capsys):
    out = tmp_path / 'cassie_import'
    assert cli.main(['import', CASSIE, '--out', str(out)]) == 0
    printed = capsys.readouterr().out
    for what in ('spanning tree: 22 joint(s)', 'cut: spherical loop', 'point_on_line', 'actuated:', 'wrote:'):
        assert what in printed, what
    urdf = out / 'cassie.urdf'
    assert (out / 'cassie.loops.yaml').is_file() and (out / 'config' / 'cassie.yaml').is_file()
    m = rd.load_model(str(urdf))  # picks up cassie.loops.yaml
    ref = load_imported(import_sdf(CASSIE))
    assert m.joint_names == ref.joint_names and m.loops_source == str(out / 'cassie.loops.yaml')
    assert [(lp.name, lp.type, lp.frame_a, lp.frame_b) for lp in m.loops] == [
        (lp.name, lp.type, lp.frame_a, lp.frame_b) for lp in ref.loops
    ]
    q = m.reference_q()
    assert np.array_equal(rd.crba(m, q), rd.crba(ref, q))
    assert cli.main(['check', str(urdf)]) == 0
    report = capsys.readouterr().out
    assert 'degrees of freedom    18 (n = 28, rank A = 10, 10 rows)' in report
    assert '[x] projection' in report
    b = load_bringup(str(out / 'config' / 'cassie.yaml'))
    assert b.urdf == str(urdf) and b.loops == str(out / 'cassie.loops.yaml')
    # a floating base: the passive plant and its kinematics (the controllers take one-DOF joints)
    assert {n.name for n in b.nodes} == {'sim_node', 'kinematics_node'}
    sim, kin = (next(n for n in b.nodes if n.name == k) for k in ('sim_node', 'kinematics_node'))
    assert sim.parameters['hold'] == 'zero' and kin.parameters['frames'][0] == 'pelvis'
    # the files are not overwritten without --force
    with pytest.raises(SystemExit, match='exists'):
        cli.main(['import', CASSIE, '--out', str(out)])


def test_options_cut_actuated_root_joint_and_name(tmp_path, capsys):
    args = ['import', CASSIE, '--out', str(tmp_path), '--name', 'cassie_cut', '--root-joint', 'fixed']
    args += ['--cut', 'left-knee-shin-joint', '--actuated', 'left-knee-op', 'right-knee-op']
    assert cli.main(args) == 0
    printed = capsys.readouterr().out
    assert "joint 'left-knee-shin-joint' is cut: requested" in printed
    m = rd.load_model(str(tmp_path / 'cassie_cut.urdf'))
    assert 'root_joint' not in m.joint_names and m.actuated == ['left-knee-op', 'right-knee-op']
    assert {lp.name: lp.type for lp in m.loops}['left-knee-shin-joint'] == 'revolute'


def test_frame_pairs_import(tmp_path, capsys):
    yml = tmp_path / 'robot.yaml'
    yml.write_text(
        "closed_loop: [['left_shin_pin', 'left_rod_tip'], ['right_shin_pin', 'right_rod_tip']]\n"
        "type: ['3D', '3D']\nname_mot: ['left_hip', 'right_hip']\n"
        "joint_name: ['left_rod_ball', 'right_rod_ball']\njoint_type: ['SPHERICAL', 'SPHERICAL']\n"
    )
    out = tmp_path / 'out'
    args = ['import', BIPED, '--frame-pairs', str(yml), '--root-joint', 'free_flyer', '--name', 'biped', '--out']
    assert cli.main([*args, str(out)]) == 0
    m = rd.load_model(str(out / 'biped.urdf'))
    assert m.actuated == ['left_hip', 'right_hip'] and [lp.type for lp in m.loops] == ['spherical', 'spherical']
    assert cli.main(['check', str(out / 'biped.urdf')]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit, match='does not take --cut'):
        cli.main([*args, str(tmp_path / 'o2'), '--cut', 'left_knee'])


@pytest.mark.parametrize(
    'argv, message',
    [
        (['import', 'robot.txt'], "no importer for the suffix '.txt'"),
        (['import', 'missing.sdf'], 'no such SDF file'),
        (['import', BIPED], 'frame-pair loop file'),
    ],
)
def test_errors_name_the_file(argv, message, tmp_path):
    with pytest.raises(SystemExit, match=message):
        cli.main([*argv, '--out', str(tmp_path)])
