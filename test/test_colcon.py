"""colcon builds the package the way a ROS user builds it, both ways.

A temporary workspace ``src/robot_dynamics`` holds the package's tracked files (``git ls-files``,
the state a user clones); ``colcon build`` (colcon-core + colcon-ros from PyPI, pinned in
requirements/test.txt, with the ``ros-ament-package`` wheel) builds it plainly and with
``--symlink-install`` (which failed when setup.py resolved its data files from the symlink in
``build/``). The install tree must hold what ``ros2 launch`` / ``ros2 run`` need:
``share/robot_dynamics/{package.xml, launch/<robot>.launch.py, urdf, config, config/ros2_control,
config/rviz}`` for every robot config, the ament index entry, and ``lib/robot_dynamics/<exe>``
for every node executable and ``robot-dynamics``; with --symlink-install the launch file is a
link to the source, and the installed package imports from the install tree.
"""

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXES = [
    'sim_node',
    'kinematics_node',
    'dynamics_node',
    'controller_node',
    'trajectory_node',
    'ip_controller',
    'ik_node',
    'vdc_controller',
    'sea_controller',
    'closure_node',
    'robot-dynamics',
]


def _colcon():
    exe = os.path.join(os.path.dirname(sys.executable), 'colcon')
    assert os.path.isfile(exe), 'colcon is installed with the test requirements (scripts/test.sh)'
    return exe


def _workspace(tmp_path):
    files = subprocess.run(['git', 'ls-files'], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    src = tmp_path / 'src' / 'robot_dynamics'
    for f in files:
        if f.startswith(('test/', 'bench/', 'docs/', '.')) or not os.path.isfile(os.path.join(ROOT, f)):
            continue
        (src / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(os.path.join(ROOT, f), src / f)
    return src


def test_the_manifest_is_a_ros_package_manifest(tmp_path):
    """package.xml is well-formed and parses as what colcon, rosdep and bloom read (catkin_pkg,
    installed with colcon-ros): format 3, build type ament_python; and colcon identifies the
    package as ``ros.ament_python`` (a manifest it cannot parse made it fall back to a plain
    Python package, which sourcing the workspace never puts on AMENT_PREFIX_PATH)."""
    import xml.etree.ElementTree as ET

    from catkin_pkg.package import parse_package

    ET.parse(os.path.join(ROOT, 'package.xml'))  # raises on malformed XML
    pkg = parse_package(ROOT)  # raises InvalidPackage
    pkg.validate()
    assert pkg.name == 'robot_dynamics' and int(pkg.package_format) == 3
    assert pkg.get_build_type() == 'ament_python'
    from colcon_core.package_identification import get_package_identification_extensions, identify

    desc = identify(get_package_identification_extensions(), str(_workspace(tmp_path)))
    assert (desc.type, desc.name) == ('ros.ament_python', 'robot_dynamics')


@pytest.mark.parametrize('symlink', [False, True], ids=['plain', 'symlink-install'])
def test_colcon_build_install_tree(tmp_path, symlink):
    src = _workspace(tmp_path)
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get('PATH', ''))
    env.pop('PYTHONPATH', None)
    cmd = [
        _colcon(),
        '--log-base',
        str(tmp_path / 'log'),
        'build',
        '--base-paths',
        str(tmp_path / 'src'),
        '--build-base',
        str(tmp_path / 'build'),
        '--install-base',
        str(tmp_path / 'install'),
        '--event-handlers',
        'console_direct-',
    ] + (['--symlink-install'] if symlink else [])
    r = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    assert 'Finished <<< robot_dynamics' in r.stdout + r.stderr
    inst = tmp_path / 'install' / 'robot_dynamics'
    share = inst / 'share' / 'robot_dynamics'
    robots = sorted(f[:-5] for f in os.listdir(os.path.join(ROOT, 'config')) if f.endswith('.yaml'))
    assert (share / 'package.xml').is_file()
    assert (inst / 'share' / 'ament_index' / 'resource_index' / 'packages' / 'robot_dynamics').is_file()
    for robot in robots:
        for rel in (
            f'launch/{robot}.launch.py',
            f'config/{robot}.yaml',
            f'config/ros2_control/{robot}_controllers.yaml',
            f'urdf/{robot}.urdf.xacro',
            f'urdf/{robot}.ros2_control.xacro',
        ):
            assert (share / rel).is_file(), rel
    assert len(list((share / 'urdf').glob('*.loops.yaml'))) >= len(robots) - 2
    assert list((share / 'config' / 'rviz').glob('*.rviz'))
    assert (share / 'config' / 'fastdds_loopback.xml').is_file()  # the DDS loopback profile
    for exe in EXES:
        p = inst / 'lib' / 'robot_dynamics' / exe
        assert p.is_file() and os.access(p, os.X_OK), exe
    launch = share / 'launch' / 'five_bar.launch.py'
    assert launch.is_symlink() == symlink
    # the built package imports from the install tree (site-packages or, symlinked, the source)
    site = next((inst / 'lib').glob('python3*/site-packages'))
    r = subprocess.run(
        [sys.executable, '-c', 'import robot_dynamics, sys; print(robot_dynamics.__file__)'],
        env=dict(env, PYTHONPATH=str(site)),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if symlink:  # develop mode: an egg-link to build/, whose package links to the source
        with open(site / 'robot-dynamics.egg-link') as fh:
            target = fh.readline().strip()
        pkg = os.path.join(target, 'robot_dynamics')
        assert os.path.realpath(pkg) == str(src / 'robot_dynamics'), (target, os.path.realpath(pkg))
        r = subprocess.run(
            [sys.executable, '-c', 'import robot_dynamics; print(robot_dynamics.__file__)'],
            env=dict(env, PYTHONPATH=target),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 0 and r.stdout.startswith(target), (r.stdout, r.stderr[-2000:])
    else:
        assert r.returncode == 0 and str(site) in r.stdout, (r.stdout, r.stderr[-2000:])
        # the installed package finds its loopback profile in its share directory (ament index)
        r = subprocess.run(
            [
                sys.executable,
                '-c',
                'from robot_dynamics.ros.bringup import loopback_profile; print(loopback_profile())',
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env=dict(env, PYTHONPATH=str(site), AMENT_PREFIX_PATH=str(inst)),
            timeout=120,
        )
        assert r.stdout.strip() == str(share / 'config' / 'fastdds_loopback.xml'), (r.stdout, r.stderr[-2000:])
        # its data files are the workspace's, also with a pip-installed copy's share/ (this
        # test's .venv) on the ament path: `robot-dynamics info` says where it read each
        r = subprocess.run(
            [sys.executable, '-m', 'robot_dynamics.tools.cli', 'info', 'five_bar'],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            env=dict(env, PYTHONPATH=str(site), AMENT_PREFIX_PATH=os.pathsep.join([sys.prefix, str(inst)])),
        )
        assert r.returncode == 0, r.stderr[-2000:]
        lines = dict(ln.split(None, 1) for ln in r.stdout.splitlines()[:3])
        assert lines['robot'].endswith(f'({share / "urdf" / "five_bar.urdf"})'), lines
        assert lines['sidecar'] == str(share / 'urdf' / 'five_bar.loops.yaml'), lines
        assert lines['config'] == str(share / 'config' / 'five_bar.yaml'), lines
