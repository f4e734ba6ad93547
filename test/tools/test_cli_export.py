"""``robot-dynamics export mjcf``: a file MuJoCo compiles on its own, with the robot's joints,
loops and motors; a refusal names the file."""

import os

import numpy as np
import pytest

from robot_dynamics.tools import cli

mujoco = pytest.importorskip('mujoco')


def test_export_mjcf_writes_a_file_mujoco_simulates(tmp_path, capsys):
    out = tmp_path / 'five_bar.xml'
    assert cli.main(['export', 'mjcf', 'five_bar', '-o', str(out)]) == 0
    text = capsys.readouterr().out
    assert f'wrote {out}' in text and 'distal_joint (revolute)' in text and 'mujoco.viewer' in text
    M = mujoco.MjModel.from_xml_path(str(out))
    names = {M.joint(j).name for j in range(M.njnt)}
    assert {'motor1_joint', 'elbow1_joint', 'motor2_joint', 'elbow2_joint'} <= names
    assert M.neq == 2 and M.nu == 2  # the revolute loop as two connects; two motors
    D = mujoco.MjData(M)
    D.ctrl[:] = [0.5, -0.5]
    for _ in range(500):
        mujoco.mj_step(M, D)
    assert np.all(np.isfinite(D.qpos)) and np.abs(D.qvel).max() > 0
    # an existing file is kept unless --force
    with pytest.raises(SystemExit, match='exists'):
        cli.main(['export', 'mjcf', 'five_bar', '-o', str(out)])
    assert cli.main(['export', 'mjcf', 'five_bar', '-o', str(out), '--force']) == 0


def test_export_help_has_an_example(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(['export', '--help'])
    assert exc.value.code == 0
    assert 'robot-dynamics export mjcf five_bar -o five_bar.xml' in capsys.readouterr().out


def test_export_of_a_missing_robot_names_it(tmp_path):
    with pytest.raises(SystemExit, match="'no_such_robot' is neither a file nor a packaged robot"):
        cli.main(['export', 'mjcf', 'no_such_robot', '-o', os.path.join(tmp_path, 'x.xml')])
