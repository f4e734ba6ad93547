"""Videos of a robot's motion (robot_dynamics.tools.video) and the visual geoms they draw
(robot_dynamics.plants.mujoco_visuals): offscreen frames that show the robot and move, an MP4
that decodes, a key-frame PNG, the geoms leaving the dynamics alone.

The offscreen back-end (EGL with Mesa, installed by scripts/setup_env.sh) is required: without
it these tests fail with the renderer's message, they never skip."""

import argparse
import os

import mujoco
import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.plants.mujoco_plant import mj_spec
from robot_dynamics.tools import cli
from robot_dynamics.tools.video import RenderError, read_mp4, render_video, trajectory_frames


def _model(name, **kw):
    return rd.load_model(rd.data_path(f'urdf/{name}.urdf'), **kw)


def _compile(model, visuals):
    spec, mmap = mj_spec(model, visuals=visuals)
    mjm = spec.compile()
    return mjm, mmap.bind(mjm)


@pytest.mark.parametrize(
    'name, kw',
    [
        ('five_bar', {}),  # URDF visuals + a stick-figure base + cut spheres
        ('irsbot2', {}),  # no visuals at all: stick figures, many loops (virtual joints)
        ('gough_stewart', {}),  # spherical / universal loops, URDF cylinders
        ('four_bar', {'root_joint': 'free_flyer'}),  # a floating base
    ],
)
def test_visual_geoms_do_not_change_the_dynamics(name, kw):
    """Same masses, inertias, mass matrix and constrained accelerations with and without the
    visual geoms; every visual geom is massless and never collides."""
    m = _model(name, **kw)
    plain, _ = _compile(m, False)
    vis, mmap = _compile(m, True)
    assert plain.ngeom == 0 and vis.ngeom > 0
    assert np.all(vis.geom_contype == 0) and np.all(vis.geom_conaffinity == 0)
    np.testing.assert_array_equal(vis.body_mass, plain.body_mass)
    np.testing.assert_array_equal(vis.body_inertia, plain.body_inertia)
    np.testing.assert_array_equal(vis.body_ipos, plain.body_ipos)
    rng = np.random.default_rng(3)
    for _ in range(3):
        q = m.reference_q()
        for jt in m.joints:
            if jt.nq == 1:
                q[jt.idx_q] += rng.uniform(-0.2, 0.2)
        qd = rng.uniform(-1, 1, m.nv)
        out = []
        for mjm in (plain, vis):
            d = mujoco.MjData(mjm)
            mmap.to_mj(m, q, qd, d.qpos, d.qvel)
            mujoco.mj_forward(mjm, d)
            M = np.zeros((mjm.nv, mjm.nv))
            mujoco.mj_fullM(mjm, d, M)
            out.append((M, d.qacc.copy()))
        np.testing.assert_array_equal(out[0][0], out[1][0])
        np.testing.assert_array_equal(out[0][1], out[1][1])


def test_every_body_shows_something_and_every_loop_its_cut():
    """A robot without visuals (IRSBot-2): geoms on every moving body, two cut spheres a loop."""
    m = _model('irsbot2')
    mjm, mmap = _compile(m, True)
    names = {mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_GEOM, g) for g in range(mjm.ngeom)}
    bodies = {mmap.sites[f][0] for f in m.frame_names} - {'world'}
    with_geom = {mujoco.mj_id2name(mjm, mujoco.mjtObj.mjOBJ_BODY, int(b)) for b in mjm.geom_bodyid}
    assert bodies <= with_geom
    for lp in m.loops:
        if lp.coupling is None:
            assert {f'{lp.name}/cut_a', f'{lp.name}/cut_b'} <= names
    assert np.all(mjm.geom_rbound > 0)


def test_urdf_meshes_load_or_fall_back_with_a_note(monkeypatch):
    """UR5 (package:// meshes of example-robot-data): the .dae visuals MuJoCo cannot read are
    noted and the links' .stl collision meshes drawn instead; unresolvable meshes are noted
    and the bodies get stick figures."""
    import example_robot_data as erd

    root = os.path.dirname(erd.__file__)
    robots = [
        c
        for up in range(1, 7)
        if os.path.isdir(
            c := os.path.normpath(os.path.join(root, *(['..'] * up), 'share', 'example-robot-data', 'robots'))
        )
    ]
    assert robots, 'example-robot-data ships the UR5 meshes (requirements/test.txt)'
    path = os.path.join(os.path.dirname(__file__), '..', 'data', 'ur5.urdf')
    monkeypatch.delenv('AMENT_PREFIX_PATH', raising=False)
    monkeypatch.setenv('ROS_PACKAGE_PATH', os.path.normpath(robots[0]))
    m = rd.load_model(path)
    mjm, mmap = _compile(m, True)
    assert mjm.nmesh >= 6
    assert any('.dae' in n and 'MuJoCo does not read .dae' in n for n in mmap.visual_notes)
    monkeypatch.setenv('ROS_PACKAGE_PATH', '/nonexistent')
    mjm, mmap = _compile(m, True)
    assert mjm.nmesh == 0 and any('file not found' in n for n in mmap.visual_notes)
    assert mjm.ngeom > 6  # stick figures instead


def test_trajectory_frames_pick_the_nearest_sample():
    t = np.arange(0.0, 1.0001, 0.01)
    k = trajectory_frames(t, 10.0)
    assert len(k) == 11 and k[0] == 0 and k[-1] == 100
    np.testing.assert_allclose(t[k], np.arange(11) / 10.0, atol=1e-9)
    assert list(trajectory_frames([0.0, 0.04, 0.2], 10.0)) == [0, 1, 2]
    assert list(trajectory_frames([0.0, 0.06, 0.2], 10.0)) == [0, 1, 2]
    assert list(trajectory_frames([0.0, 0.25, 0.3], 10.0)) == [0, 0, 1, 2]
    assert list(trajectory_frames([5.0], 30.0)) == [0]


def _five_bar_motion(n=20, fps=10.0):
    args = argparse.Namespace(csv=None, duration=(n - 1) / fps, fps=fps, amplitude=0.3, frequency=0.5)
    m = _model('five_bar')
    t, Q = cli._render_trajectory(m, args)
    assert np.abs(rd.loop_residual(m, Q[-1])).max() < 1e-9
    return m, t, Q


def test_offscreen_clip_shows_the_robot_moving(tmp_path):
    """20 frames of the moving five-bar at 160x120: each frame shows more than a background,
    the frames change, the MP4 decodes to those 20 frames and the key frame is a PNG."""
    m, t, Q = _five_bar_motion()
    out, png = str(tmp_path / 'clip.mp4'), str(tmp_path / 'clip_frame.png')
    lines = []
    try:
        v = render_video(m, t, Q, out, keyframe=png, fps=10.0, size=(160, 120), progress=lines.append)
    except RenderError as exc:
        pytest.fail(f'offscreen rendering must work here (scripts/setup_env.sh installs it): {exc}')
    assert v.frames == 20 and v.size == (160, 120) and v.backend in ('egl', 'osmesa', 'glfw')
    assert lines and 'frames/s' in lines[0]
    frames = read_mp4(out)
    assert len(frames) == 20 and frames[0].shape == (120, 160, 3)
    for f in frames:
        assert f.reshape(-1, 3).std(0).max() > 10, 'a frame is (nearly) one colour'
        assert len(np.unique(f.reshape(-1, 3) // 32, axis=0)) > 5
    diffs = [np.abs(a.astype(int) - b.astype(int)).mean() for a, b in zip(frames, frames[1:])]
    assert sum(d > 0.05 for d in diffs) >= 15, diffs  # the robot moves in (almost) every frame
    assert np.abs(frames[0].astype(int) - frames[10].astype(int)).max() > 100
    from PIL import Image

    key = np.asarray(Image.open(png).convert('RGB'))
    assert key.shape == (120, 160, 3) and key.reshape(-1, 3).std(0).max() > 10


def test_a_missing_backend_fails_with_a_clear_message(tmp_path, monkeypatch):
    m, t, Q = _five_bar_motion(n=3)
    monkeypatch.setenv('MUJOCO_GL', 'wgl')
    with pytest.raises(RenderError, match="MUJOCO_GL='wgl'"):
        render_video(m, t, Q, str(tmp_path / 'x.mp4'))
    with pytest.raises(RenderError, match='do not match'):
        render_video(m, t[:2], Q, str(tmp_path / 'x.mp4'))


def test_render_command_writes_the_video_from_a_sinusoid_and_from_a_csv(tmp_path, capsys):
    out = tmp_path / 'four_bar.mp4'
    argv = ['render', 'four_bar', '--out', str(out), '--duration', '1', '--fps', '8', '--size', '96x64']
    assert cli.main(argv) == 0
    text = capsys.readouterr().out
    assert f'wrote {out} (9 frames, 96x64 at 8 fps' in text
    assert (tmp_path / 'four_bar_frame.png').stat().st_size > 0
    assert len(read_mp4(str(out))) == 9
    csv = tmp_path / 'arm7.csv'
    assert cli.main(['id', 'arm7', '--duration', '0.5', '--rate', '100', '--csv', str(csv)]) == 0
    capsys.readouterr()
    png = tmp_path / 'key.png'
    argv = ['render', 'arm7', '--csv', str(csv), '--out', str(tmp_path / 'arm7.mp4'), '--png', str(png)]
    assert cli.main([*argv, '--fps', '10', '--size', '64x48']) == 0
    assert png.stat().st_size > 0 and len(read_mp4(str(tmp_path / 'arm7.mp4'))) == 6
    with pytest.raises(SystemExit):
        cli.main(['render', 'arm7', '--size', '640'])
    assert 'expected WIDTHxHEIGHT' in capsys.readouterr().err
