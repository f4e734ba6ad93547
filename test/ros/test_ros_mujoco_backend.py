"""sim_node on the MuJoCo backend (``backend: mujoco``): the robots' demos in lock-step, external
wrenches, and a bad backend refused.

Each robot of config/ whose sim_node runs the rigid plant (and the hydraulic boom and the SEA
robot, their actuator models on MuJoCo) runs its own demo
(robot_dynamics.tools.demo_runner: the robot's metric against its bound of
robot_dynamics.tools.demos.DEMOS, /joint_states rate, loop residual of the published joints
<= 1e-6) with ``--backend mujoco --timing lockstep`` for the settle time of its bound plus
1.5 s of plant time (irsbot2: see SHORT). Measured on the MuJoCo backend (docs/ros_interfaces.md, "Backends"): the
same errors as on the rigid backend to 3 digits (lock-step is deterministic), far inside
the bounds.
"""

import dataclasses
import io
import time

import numpy as np
import pytest
import yaml

rclpy = pytest.importorskip('rclpy')  # installed by scripts/test.sh; never missing in CI
pytest.importorskip('mujoco')

from geometry_msgs.msg import WrenchStamped  # noqa: E402

from robot_dynamics.ros._common import QOS_COMMAND  # noqa: E402
from robot_dynamics.ros.bringup import BringupError, config_path, load_bringup  # noqa: E402
from robot_dynamics.ros.launcher import Launcher  # noqa: E402
from robot_dynamics.tools.demos import DEMOS  # noqa: E402
from ros_helpers import assert_no_process_left, run_graph  # noqa: E402

pytestmark = pytest.mark.ros


def _rigid_plant_robots():
    out = []
    for robot in sorted(DEMOS):
        with open(config_path(robot), encoding='utf-8') as fh:
            nodes = yaml.safe_load(fh)['nodes']
        sim = next(nd for nd in nodes.values() if nd.get('executable') == 'sim_node')
        if (sim.get('parameters') or {}).get('plant', 'rigid') == 'rigid':
            out.append(robot)
    return out


RIGID = _rigid_plant_robots()


def test_the_rigid_plant_robots_are_found():
    assert {'five_bar', 'four_bar', 'slider_crank', 'irsbot2_t1', 'gough_stewart'} <= set(RIGID)
    assert 'hydraulic_boom' not in RIGID and 'planar_3rrr_sea' not in RIGID


# irsbot2's lock-step graph runs at ~0.05 x real time (ik_node's nested IK for every state, on
# either backend): judged after 0.5 s instead of 3 s (its circle starts at the reference pose,
# the start-up transient is below 0.1 mm), over 1 s of plant time
SHORT = {'irsbot2': 0.5}


@pytest.mark.parametrize('robot', RIGID + ['hydraulic_boom', 'planar_3rrr_sea'])
def test_demo_meets_its_bound_on_mujoco(robot, tmp_path, capsys, monkeypatch):
    from robot_dynamics.tools import demo_runner
    from robot_dynamics.tools.demo_runner import run_demo

    spec = DEMOS[robot]
    if robot in SHORT:
        spec = dataclasses.replace(spec, settle=SHORT[robot])
        monkeypatch.setitem(demo_runner.DEMOS, robot, spec)
    # the window judged: stamps (plant time) for the task errors, arrival (wall) time for the
    # others (Float64MultiArray has no stamp): both cover the settle time plus that much
    judged = spec.settle + (1.0 if robot in SHORT else 1.5)
    t = time.monotonic()
    code = run_demo(
        robot,
        duration=max(judged, 4.0),
        outdir=str(tmp_path),
        timing='lockstep',
        backend='mujoco',
        min_plant_time=judged,
    )
    log = capsys.readouterr().out
    print(f'{robot} on mujoco ({time.monotonic() - t:.1f} s):\n{log}')
    assert 'backend mujoco' in log
    assert code == 0, log + open(tmp_path / f'demo_{robot}.log').read()[-3000:]


def test_external_wrench_reaches_the_mujoco_plant():
    """five_bar on MuJoCo in lock-step: a 2 N push on the tool (world x) is applied (logged) and
    felt: the tool's tracking error grows > 10x (nominal ~0.1 mm)."""
    res = {}

    def body(launcher, probe, model, out):
        load = probe.node.create_publisher(WrenchStamped, '/sim_node/external_wrench', QOS_COMMAND)

        def window(n_states):
            with probe.lock:
                n = len(probe.err)
            probe.wait_logged(lambda: len(probe.err) >= n + n_states, 60.0, 'tracking errors', out, ('js',))
            with probe.lock:
                return np.array([np.abs(m.data[: len(m.data) // 2]).max() for _, m in probe.err[n:]])

        window(100)  # the start-up transient
        res['nominal'] = window(100).max()
        msg = WrenchStamped()
        msg.header.frame_id = 'tool'
        msg.wrench.force.x = 2.0
        probe.wait_for(lambda: load.get_subscription_count() > 0, 10.0, 'sim_node load input')
        load.publish(msg)
        probe.wait_for(lambda: "external wrench on 'tool' applied" in out.getvalue(), 10.0, 'the load applied')
        res['pushed'] = window(100).max()
        assert "plant 'rigid' on the mujoco backend (MujocoPlant)" in out.getvalue()

    run_graph(
        'five_bar',
        body,
        timing='lockstep',
        overrides={'sim_node': {'backend': 'mujoco', 'external_wrench_reference': 'local_world_aligned'}},
    )
    print(f'five_bar on mujoco: max tracking error nominal {res["nominal"]:.2e}, pushed {res["pushed"]:.2e}')
    assert res['pushed'] > 10 * max(res['nominal'], 1e-4), res


def test_a_bad_backend_is_refused_naming_the_choices(tmp_path):
    # before any process starts: the command line's --backend, a config's or --param value
    with pytest.raises(BringupError, match=r"backend: must be one of \('rigid', 'mujoco'\), got 'bullet'"):
        load_bringup('five_bar', backend='bullet')
    with pytest.raises(BringupError, match=r"sim_node.parameters.backend: must be one of .*'bullet'"):
        load_bringup('five_bar', {'sim_node': {'backend': 'bullet'}})
    with pytest.raises(BringupError, match="backend is sim_node's: not with hardware 'mock'"):
        load_bringup('five_bar', backend='mujoco', hardware='mock')
    # sim_node itself (a parameters file written by hand): it does not start, and says why
    b = load_bringup('five_bar', timing='lockstep')
    sim = next(s for s in b.nodes if s.executable == 'sim_node')
    sim = dataclasses.replace(sim, parameters=dict(sim.parameters, backend='bullet'))
    out = io.StringIO()
    launcher = Launcher(dataclasses.replace(b, nodes=[sim]), out=out).start()
    try:
        t_end = time.monotonic() + 60.0
        while launcher.poll() is None and time.monotonic() < t_end:
            time.sleep(0.1)
        dead = launcher.poll()
    finally:
        launcher.shutdown()
    assert_no_process_left(launcher)
    assert dead is not None and dead[0] == 'sim_node', out.getvalue()[-2000:]
    assert "parameter backend: 'bullet' is not one of ['rigid', 'mujoco']" in out.getvalue(), out.getvalue()[-2000:]


def test_launch_and_demo_take_the_backend(capsys):
    """``robot-dynamics launch ROBOT --backend mujoco`` gives sim_node (and only sim_node) the
    backend; ``demo --backend`` is the same option."""
    from robot_dynamics.tools import cli

    assert cli.main(['launch', 'five_bar', '--backend', 'mujoco', '--print']) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any('sim_node' in ln and "'backend': 'mujoco'" in ln for ln in lines)
    assert not any('sim_node' not in ln and "'backend'" in ln for ln in lines)
    args = cli.build_parser().parse_args(['demo', 'five_bar', '--backend', 'mujoco'])
    assert args.backend == 'mujoco'
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(['demo', 'five_bar', '--backend', 'bullet'])
