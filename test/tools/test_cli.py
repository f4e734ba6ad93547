"""The robot-dynamics command line: info, id/demo (table, CSV, plot), clear errors."""

import os

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.tools import cli


def test_info_lists_packaged_robots(capsys):
    assert cli.main(['info', '--list']) == 0
    out = capsys.readouterr().out.split()
    assert 'four_bar' in out and 'slider_crank' in out


def test_info_reports_closure_at_reference(capsys):
    assert cli.main(['info', 'four_bar']) == 0
    out = capsys.readouterr().out
    assert 'coupler_rocker: revolute coupler_tip <-> rocker_tip' in out
    assert 'passive' in out and 'actuated' in out
    from robot_dynamics.ros.bringup import share_dir  # where each file was read

    assert f'config     {os.path.join(share_dir(), "config", "four_bar.yaml")}' in out
    assert f'sidecar    {os.path.join(share_dir(), "urdf", "four_bar.loops.yaml")}' in out


def test_info_of_a_floating_base_shows_the_joints_slices(capsys):
    assert cli.main(['info', rd.data_path('urdf/four_bar.urdf'), '--root-joint', 'free_flyer']) == 0
    out = capsys.readouterr().out
    assert 'nq = 10, nv = 9; multi-DOF: root_joint (free_flyer: q[0:7], v[0:6])' in out
    assert 'root_joint/x' in out and 'parent=world' in out


def test_id_writes_csv_consistent_with_rnea(tmp_path, capsys):
    csv = tmp_path / 'id.csv'
    png = tmp_path / 'id.png'
    assert (
        cli.main(['id', 'slider_crank', '--duration', '0.5', '--rate', '100', '--csv', str(csv), '--plot', str(png)])
        == 0
    )
    data = np.loadtxt(csv, delimiter=',', skiprows=1)
    model = rd.load_model(rd.data_path('urdf/slider_crank.urdf'))
    n = model.nq
    assert data.shape == (51, 1 + 2 * n)
    # recompute independently from the written q(t) with finite-difference derivatives
    t, q, tau = data[:, 0], data[:, 1 : 1 + n], data[:, 1 + n :]
    traj = cli._trajectory(model, cli.build_parser().parse_args(['id', 'x']))
    x = traj(t, order=2)
    assert np.allclose(x[0], q, atol=1e-12)
    assert np.allclose(rd.rnea(model, x[0], x[1], x[2]), tau, rtol=1e-10, atol=1e-10)
    assert png.stat().st_size > 1000


def test_unknown_robot_is_a_clear_error():
    with pytest.raises(SystemExit, match='neither a file nor a packaged robot'):
        cli.main(['info', 'no_such_robot'])


def test_launch_hardware_switch_prints_what_it_starts_and_what_needs_ros(capsys):
    """--hardware mock: closure_node and the controllers are ours to start (nice -10, wall
    clock), controller_manager and its spawners are printed as `ros2 run` lines; the boom and
    --timing lockstep are refused with the reason, before anything starts."""
    assert cli.main(['launch', 'five_bar', '--hardware', 'mock', '--print']) == 0
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if ' -m robot_dynamics.ros.' in ln]
    assert [ln.split(' -m robot_dynamics.ros.')[1].split()[0] for ln in lines] == [
        'closure_node',
        'kinematics_node',
        'trajectory_node',
        'controller_node',
    ]
    assert all("'use_sim_time': False" in ln for ln in lines)
    assert '# not started by this launcher: ros2 run controller_manager ros2_control_node' in out
    assert 'joint_states:=measured_joint_states' in out and 'five_bar_controllers.yaml' in out
    assert 'spawner joint_state_broadcaster' in out and 'spawner effort_controller' in out
    with pytest.raises(SystemExit, match='vdc_controller: it needs the chamber pressures'):
        cli.main(['launch', 'hydraulic_boom', '--hardware', 'ros2_control', '--print'])
    with pytest.raises(SystemExit, match='lockstep needs the simulator'):
        cli.main(['launch', 'five_bar', '--hardware', 'mock', '--timing', 'lockstep', '--print'])
    assert cli.main(['launch', 'gough_stewart', '--timing', 'realtime', '--use-sim-time', 'false', '--print']) == 0
    out = capsys.readouterr().out
    assert "'use_sim_time': True" not in out and "'publish_clock': False" in out


def test_launch_nodes_starts_a_subset_of_the_config(capsys):
    """--nodes: only those nodes of the config, in its order (a robot spread over machines); an
    unknown name is refused with the config's node names, before anything starts."""
    assert cli.main(['launch', 'five_bar', '--nodes', 'dynamics_node', 'sim_node', '--print']) == 0
    out = capsys.readouterr().out
    started = [ln.split('__node:=')[1].split()[0] for ln in out.splitlines() if '__node:=' in ln]
    assert started == ['sim_node', 'dynamics_node']
    with pytest.raises(SystemExit, match=r"--nodes \['simnode'\] are not nodes of .*'sim_node'"):
        cli.main(['launch', 'five_bar', '--nodes', 'simnode', '--print'])


def test_warmup_in_worker_processes(capsys):
    """warmup --jobs 2: one task per robot in spawned workers (same package copy, same cache),
    the general 2nd-order PKM route as a task of its own when a node uses it (gough_stewart's
    pkm_d2 trajectory), a single robot's plant and other nodes as two tasks; one progress line
    per task, the total, exit 0; a bad name fails after all."""
    assert cli.main(['warmup', 'four_bar', 'slider_crank', 'gough_stewart', '--jobs', '2']) == 0
    out = capsys.readouterr().out
    for r in ('four_bar', 'slider_crank', 'gough_stewart'):
        assert f'/4] {r}: sim_node' in out, out
    assert '/4] (general 2nd-order PKM route): inverse_dynamics_d2_general' in out, out
    assert 'kernels of 3 robot config(s) compiled and cached' in out and '(2 jobs)' in out
    assert cli.main(['warmup', 'four_bar', 'slider_crank', '--jobs', '2']) == 0
    assert 'general 2nd-order' not in capsys.readouterr().out  # no node of theirs uses it
    assert cli.main(['warmup', 'gough_stewart', '--jobs', '2']) == 0
    out = capsys.readouterr().out
    assert '/2] gough_stewart (plant): sim_node' in out and '/2] gough_stewart (nodes): trajectory_node' in out, out
    assert cli.main(['warmup', 'four_bar', 'no_such_robot', '--jobs', '2']) == 1


def test_strict_flag_refuses_a_non_physical_inertia_on_every_loading_command(tmp_path, capsys):
    import warnings

    text = open(rd.data_path('urdf/four_bar.urdf')).read()
    # the crank's inertia outside the triangle inequality: izz > ixx + iyy
    start = text.index('<inertia ', text.index('<link name="crank"'))
    end = text.index('/>', start) + 2
    bad = text[:start] + '<inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-3"/>' + text[end:]
    path = tmp_path / 'four_bar.urdf'
    path.write_text(bad)
    (tmp_path / 'four_bar.loops.yaml').write_text(open(rd.data_path('urdf/four_bar.loops.yaml')).read())
    with pytest.warns(rd.ModelWarning, match="link 'crank' <inertial>: inertia violates the triangle"):
        assert cli.main(['info', str(path)]) == 0
    for cmd in (['info'], ['check'], ['id', '--duration', '0.1', '--rate', '50']):
        with warnings.catch_warnings():
            warnings.simplefilter('error')  # refused before anything would warn
            with pytest.raises(SystemExit) as exc:
                cli.main([*cmd, str(path), '--strict'])
        msg = str(exc.value)
        assert msg.startswith(f"robot-dynamics: {path}: link 'crank' <inertial>: inertia violates"), msg
        assert 'strict=True' in msg
