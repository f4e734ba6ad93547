"""config/<robot>.yaml -> node specs, shared by launch/*.launch.py and the built-in launcher."""

import suite_paths
import glob
import os
import sys
import types

import pytest
import yaml

from robot_dynamics.ros.bringup import BringupError, NodeSpec, load_bringup
from robot_dynamics.parsers.urdf import load_model

ROOT = suite_paths.ROOT
CONFIGS = sorted(glob.glob(os.path.join(ROOT, 'config', '*.yaml')))
LAUNCH_FILES = sorted(glob.glob(os.path.join(ROOT, 'launch', '*.launch.py')))


@pytest.mark.parametrize('path', CONFIGS, ids=os.path.basename)
def test_every_config_translates(path):
    b = load_bringup(path)
    assert b.nodes, path
    assert os.path.isfile(b.urdf)
    for s in b.nodes:
        assert s.parameters['robot_description'] == b.urdf
        assert s.parameters['loops'] == b.loops
        args = s.ros_args('/tmp/p.yaml')
        assert args[:3] == ['--ros-args', '-r', f'__node:={s.name}']
        assert args[-2:] == ['--params-file', '/tmp/p.yaml']
        (fqn,) = s.params_yaml()
        assert fqn == f'/{s.name}'


def test_control_state_topic_for_latency_probes():
    """The topic demo and bench_loop time the state -> command latency against: the
    controller's own state topic, else sim_node's control_state_topic, else none."""
    assert load_bringup('hydraulic_boom').control_state_topic() == '/hydraulics/cylinder_states'
    assert load_bringup('irsbot2_t1').control_state_topic() == '/control/joint_states'
    assert load_bringup('five_bar').control_state_topic() == ''


def test_realtime_parameters_apply_in_real_time_only(tmp_path):
    """A node's ``realtime_parameters`` override its ``parameters`` in real time only (the
    command line's overrides win over both); irsbot2_t1's reference preview is one of them."""
    cfg = tmp_path / 'r.yaml'
    cfg.write_text(
        yaml.safe_dump(
            {
                'robot': 'four_bar',
                'urdf': os.path.join(ROOT, 'urdf/four_bar.urdf'),
                'nodes': {
                    'c': {
                        'executable': 'controller_node',
                        'parameters': {'ff_lead': 0.001, 'kp': 5.0},
                        'realtime_parameters': {'ff_lead': 0.002},
                    }
                },
            }
        )
    )
    par = lambda **kw: load_bringup(str(cfg), **kw).nodes[0].parameters  # noqa: E731
    assert par(timing='realtime')['ff_lead'] == 0.002 and par(timing='realtime')['kp'] == 5.0
    assert par(timing='lockstep')['ff_lead'] == 0.001
    assert par(timing='realtime', overrides={'c': {'ff_lead': 0.003}})['ff_lead'] == 0.003
    t1 = {
        t: next(n for n in load_bringup('irsbot2_t1', timing=t).nodes if n.name == 'trajectory_node')
        for t in ('realtime', 'lockstep')
    }
    assert t1['realtime'].parameters['lead'] > 0.0 and 'lead' not in t1['lockstep'].parameters


def test_overrides_and_remaps(tmp_path):
    cfg = tmp_path / 'r.yaml'
    cfg.write_text(
        yaml.safe_dump(
            {
                'robot': 'four_bar',
                'urdf': os.path.join(ROOT, 'urdf/four_bar.urdf'),
                'namespace': 'arm',
                'nodes': {
                    'k': {
                        'executable': 'kinematics_node',
                        'parameters': {'frames': ['crank']},
                        'remappings': {'joint_states': '/robot/joint_states'},
                    },
                    'off': {'executable': 'sim_node', 'enabled': False},
                },
            }
        )
    )
    b = load_bringup(str(cfg), overrides={'k': {'frames': ['rocker']}})
    assert [s.name for s in b.nodes] == ['k']
    s = b.nodes[0]
    assert s.parameters['frames'] == ['rocker']
    assert b.loops.endswith('four_bar.loops.yaml')  # sidecar picked up beside the URDF
    assert '-r' in s.ros_args() and 'joint_states:=/robot/joint_states' in s.ros_args()
    assert '__ns:=/arm' in s.ros_args()  # rcl wants an absolute namespace
    assert list(s.params_yaml()) == ['/arm/k']


@pytest.mark.parametrize(
    'content, key',
    [
        ({'robot': 'x'}, 'urdf'),
        ({'robot': 'x', 'urdf': 'urdf/four_bar.urdf', 'nodes': {}}, 'nodes'),
        ({'robot': 'x', 'urdf': 'urdf/four_bar.urdf', 'bogus': 1, 'nodes': {'a': {}}}, 'bogus'),
        ({'robot': 'x', 'urdf': 'urdf/four_bar.urdf', 'nodes': {'a': {'executable': 'nope'}}}, 'nodes.a.executable'),
        (
            {'robot': 'x', 'urdf': 'urdf/four_bar.urdf', 'nodes': {'a': {'executable': 'sim_node', 'params': {}}}},
            'nodes.a.params',
        ),
        ({'robot': 'x', 'urdf': 'urdf/none.urdf', 'nodes': {'a': {}}}, 'urdf'),
        (
            {'robot': 'x', 'urdf': 'urdf/four_bar.urdf', 'nodes': {'sim_node': {'parameters': {'p': {'a': 1}}}}},
            'nodes.sim_node.parameters.p',
        ),
        (
            {'robot': 'x', 'urdf': 'urdf/four_bar.urdf', 'nodes': {'sim_node': {'realtime_parameters': {'p': None}}}},
            'nodes.sim_node.realtime_parameters.p',
        ),
    ],
)
def test_bad_config_names_file_and_key(tmp_path, content, key):
    cfg = tmp_path / 'bad.yaml'
    cfg.write_text(yaml.safe_dump(content))
    with pytest.raises(BringupError) as ei:
        load_bringup(str(cfg))
    assert str(cfg) in str(ei.value) and key in str(ei.value)


def test_unknown_robot():
    with pytest.raises(BringupError, match='no bringup config'):
        load_bringup('no_such_robot')


class _Recorder:
    """Stand-in for launch / launch_ros classes: records constructor arguments."""

    made = []

    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs
        _Recorder.made.append(self)


@pytest.fixture
def fake_launch(monkeypatch):
    """Minimal fake `launch` and `launch_ros` packages (no ROS install here)."""

    def cls(name):
        return type(name, (_Recorder,), {})

    mods = {
        'launch': types.ModuleType('launch'),
        'launch.actions': types.ModuleType('launch.actions'),
        'launch.conditions': types.ModuleType('launch.conditions'),
        'launch.substitutions': types.ModuleType('launch.substitutions'),
        'launch_ros': types.ModuleType('launch_ros'),
        'launch_ros.actions': types.ModuleType('launch_ros.actions'),
    }
    mods['launch'].LaunchDescription = cls('LaunchDescription')
    mods['launch.actions'].DeclareLaunchArgument = cls('DeclareLaunchArgument')
    mods['launch.actions'].OpaqueFunction = cls('OpaqueFunction')
    mods['launch.conditions'].IfCondition = cls('IfCondition')
    lc = cls('LaunchConfiguration')
    lc.perform = lambda self, context: context[self.args[0]]
    mods['launch.substitutions'].LaunchConfiguration = lc
    mods['launch_ros.actions'].Node = cls('Node')
    for k, v in mods.items():
        monkeypatch.setitem(sys.modules, k, v)
    # the external packages count as installed (there is no ROS installation here);
    # test_launch_stops_before_anything_when_a_ros_package_is_missing takes them away
    import robot_dynamics.ros.bringup as bringup

    monkeypatch.setattr(bringup, 'ros_package_installed', lambda pkg: True)
    _Recorder.made = []
    return mods


@pytest.mark.parametrize('timing', ['realtime', 'lockstep'])
@pytest.mark.parametrize('path', LAUNCH_FILES, ids=os.path.basename)
def test_launch_files_build_their_nodes_from_the_config(fake_launch, path, timing):
    robot = os.path.basename(path)[: -len('.launch.py')]
    assert os.path.isfile(os.path.join(ROOT, 'config', f'{robot}.yaml')), 'launch file without config'
    ns = {}
    exec(compile(open(path).read(), path, 'exec'), ns)
    ld = ns['generate_launch_description']()
    args = {a.args[0]: a.kwargs for a in ld.args[0] if type(a).__name__ == 'DeclareLaunchArgument'}
    assert args['rviz']['choices'] == ['true', 'false']
    assert args['timing']['choices'] == ['realtime', 'lockstep']
    assert args['timing']['default_value'] == load_bringup(robot).timing
    assert args['namespace']['default_value'] == ''
    opaque = [a for a in ld.args[0] if isinstance(a, fake_launch['launch.actions'].OpaqueFunction)]
    # `ros2 launch -p` prints the action's str: it names every node it starts
    assert all(f'{s.name} (robot_dynamics/{s.executable})' in str(opaque[0]) for s in load_bringup(robot).nodes)
    assert 'robot_state_publisher:=true' in str(opaque[0]) and 'rviz:=true' in str(opaque[0])
    actions = opaque[0].kwargs['function'](_ctx(timing=timing, rviz='true'))
    nodes = [a for a in actions if type(a).__name__ == 'Node']
    ours = [n for n in nodes if n.kwargs['package'] == 'robot_dynamics']
    b = load_bringup(robot, timing=timing)
    assert [(n.kwargs['name'], n.kwargs['executable']) for n in ours] == [(s.name, s.executable) for s in b.nodes]
    for n, s in zip(ours, b.nodes):
        # one /robot_description publisher: robot_state_publisher, so not sim_node
        extra = {'publish_robot_description': False} if s.executable == 'sim_node' else {}
        assert n.kwargs['parameters'] == [dict(s.parameters, **extra)]
        assert n.kwargs['exec_name'] == s.name  # the launch log's process label
    rsp = [n for n in nodes if n.kwargs['package'] == 'robot_state_publisher']
    assert len(rsp) == 1 and '<robot' in rsp[0].kwargs['parameters'][0]['robot_description']
    sim_time = any(s.parameters.get('use_sim_time') for s in b.nodes)
    assert rsp[0].kwargs['parameters'][0]['use_sim_time'] == sim_time
    assert any(n.kwargs['package'] == 'rviz2' for n in nodes)
    # namespace:=r1 puts every node of ours and robot_state_publisher in it; a bad one is refused
    # before any node is built
    actions = opaque[0].kwargs['function'](_ctx(timing=timing, namespace='r1'))
    nodes = [a for a in actions if type(a).__name__ == 'Node']
    assert all(
        n.kwargs['namespace'] == 'r1'
        for n in nodes
        if n.kwargs['package'] in ('robot_dynamics', 'robot_state_publisher')
    )
    # ... with its own /clock (every node) and TF tree (robot_state_publisher, rviz2)
    assert all(('/clock', '/r1/clock') in n.kwargs['remappings'] for n in nodes)
    assert all(
        {('/tf', '/r1/tf'), ('/tf_static', '/r1/tf_static')} <= set(n.kwargs['remappings'])
        for n in nodes
        if n.kwargs['package'] in ('robot_state_publisher', 'rviz2')
    )
    with pytest.raises(BringupError, match='namespace'):
        opaque[0].kwargs['function'](_ctx(timing=timing, namespace='r 1'))


def _ctx(**kw):
    """The launch arguments' values (the launch file's defaults but for ``kw``)."""
    return {
        'timing': '',
        'rviz': 'false',
        'namespace': '',
        'hardware': 'sim',
        'hardware_plugin': '',
        'use_sim_time': 'auto',
        'robot_state_publisher': 'true',
        'backend': 'rigid',
        **kw,
    }


@pytest.mark.parametrize('path', LAUNCH_FILES, ids=os.path.basename)
def test_launch_files_backend_argument_goes_to_sim_node(fake_launch, path):
    """backend:=mujoco sets sim_node's backend (no other node's); the default is the config's
    (rigid), which leaves the parameters as the config has them; an unknown value is refused."""
    args, fn = _launch(path)
    assert args['backend']['choices'] == ['rigid', 'mujoco'] and args['backend']['default_value'] == 'rigid'
    for backend in ('rigid', 'mujoco'):
        nodes = [a for a in fn(_ctx(backend=backend)) if type(a).__name__ == 'Node']
        ours = {
            n.kwargs['executable']: n.kwargs['parameters'][0] for n in nodes if n.kwargs['package'] == 'robot_dynamics'
        }
        assert ours['sim_node'].get('backend', 'rigid') == backend
        assert not any('backend' in p for exe, p in ours.items() if exe != 'sim_node')
    with pytest.raises(BringupError, match='backend'):
        fn(_ctx(backend='bullet'))


@pytest.mark.parametrize('path', LAUNCH_FILES, ids=os.path.basename)
def test_robot_state_publisher_false_leaves_it_out_and_sim_node_publishes_the_description(fake_launch, path):
    """robot_state_publisher:=false: no robot_state_publisher; sim_node publishes
    robot_description itself (its default), so the topic always has exactly one publisher.
    With hardware:=mock it is refused before any action is made (controller_manager reads the
    description from robot_state_publisher)."""
    robot = os.path.basename(path)[: -len('.launch.py')]
    args, fn = _launch(path)
    assert args['robot_state_publisher']['choices'] == ['true', 'false']
    assert args['robot_state_publisher']['default_value'] == 'true'
    for rsp in ('true', 'false'):
        nodes = [a for a in fn(_ctx(robot_state_publisher=rsp)) if type(a).__name__ == 'Node']
        publishers = [n for n in nodes if n.kwargs['package'] == 'robot_state_publisher']
        sim = [n for n in nodes if n.kwargs['executable'] == 'sim_node']
        assert len(sim) == 1
        sim_publishes = sim[0].kwargs['parameters'][0].get('publish_robot_description', True)
        assert len(publishers) + int(sim_publishes) == 1, (rsp, len(publishers), sim_publishes)
        assert (len(publishers) == 1) == (rsp == 'true')
    try:
        load_bringup(robot, hardware='mock')
    except BringupError:
        return  # (no mock hardware for this robot: tested above)
    _Recorder.made = []
    with pytest.raises(BringupError, match='hardware:=mock needs robot_state_publisher'):
        fn(_ctx(robot_state_publisher='false', hardware='mock'))
    assert not [a for a in _Recorder.made if type(a).__name__ == 'Node'], robot


@pytest.mark.parametrize(
    'missing, ctx, avoid',
    [
        ('robot_state_publisher', {}, 'robot_state_publisher:=false'),
        ('controller_manager', {'hardware': 'mock'}, 'hardware:=sim'),
        ('rviz2', {'rviz': 'true'}, 'rviz:=false'),
    ],
)
def test_launch_stops_before_anything_when_a_ros_package_is_missing(fake_launch, monkeypatch, missing, ctx, avoid):
    """A package outside this one that the launch would start, absent from the ament index:
    one BringupError naming the package and the argument that leaves it out, raised before any
    Node action exists (so no process starts); with that argument the launch builds."""
    import robot_dynamics.ros.bringup as bringup

    monkeypatch.setattr(bringup, 'ros_package_installed', lambda pkg: pkg != missing)
    args, fn = _launch(os.path.join(ROOT, 'launch', 'five_bar.launch.py'))
    _Recorder.made = []
    with pytest.raises(BringupError) as exc:
        fn(_ctx(**ctx))
    msg = str(exc.value)
    assert f"package '{missing}' is not installed" in msg and avoid in msg and '\n' not in msg, msg
    assert not [a for a in _Recorder.made if type(a).__name__ == 'Node']
    key, value = avoid.split(':=')
    nodes = [a for a in fn(_ctx(**dict(ctx, **{key: value}))) if type(a).__name__ == 'Node']
    assert nodes and not [n for n in nodes if n.kwargs['package'] == missing]


def test_ros_package_installed_reads_the_ament_index(tmp_path, monkeypatch):
    """The real lookup (no fake): a package is installed when AMENT_PREFIX_PATH has its marker."""
    from robot_dynamics.ros.bringup import ros_package_installed

    marker = tmp_path / 'share' / 'ament_index' / 'resource_index' / 'packages'
    marker.mkdir(parents=True)
    (marker / 'robot_state_publisher').write_text('')
    monkeypatch.setenv('AMENT_PREFIX_PATH', str(tmp_path))
    assert ros_package_installed('robot_state_publisher')
    assert not ros_package_installed('rviz2')


def _launch(path):
    ns = {}
    exec(compile(open(path).read(), path, 'exec'), ns)
    ld = ns['generate_launch_description']()
    args = {a.args[0]: a.kwargs for a in ld.args[0] if type(a).__name__ == 'DeclareLaunchArgument'}
    opaque = [a for a in ld.args[0] if isinstance(a, sys.modules['launch.actions'].OpaqueFunction)]
    return args, opaque[0].kwargs['function']


@pytest.mark.parametrize('path', LAUNCH_FILES, ids=os.path.basename)
def test_launch_files_hardware_and_sim_time_switches(fake_launch, path):
    """Every launch file, every hardware x use_sim_time x timing combination: a valid one
    builds the nodes of load_bringup with those arguments (hardware mock / ros2_control:
    closure_node instead of sim_node, controller_manager with the controllers YAML and the
    broadcaster's joint_states remapped to measured_joint_states, the two spawners, and
    robot_state_publisher with the ros2_control xacro expanded); an invalid one raises
    BringupError naming the argument before any action is made."""
    robot = os.path.basename(path)[: -len('.launch.py')]
    args, fn = _launch(path)
    assert args['hardware']['choices'] == ['sim', 'mock', 'ros2_control']
    assert args['hardware']['default_value'] == 'sim'
    assert args['use_sim_time']['choices'] == ['auto', 'true', 'false']
    built = 0
    for hw in ('sim', 'mock', 'ros2_control'):
        for st in ('auto', 'true', 'false'):
            for timing in ('realtime', 'lockstep'):
                ctx = _ctx(
                    timing=timing,
                    hardware=hw,
                    use_sim_time=st,
                    hardware_plugin='my_hw/MySystem' if hw == 'ros2_control' else '',
                )
                flag = {'auto': None, 'true': True, 'false': False}[st]
                try:
                    b = load_bringup(robot, timing=timing, hardware=hw, use_sim_time=flag)
                except BringupError as exc:
                    with pytest.raises(BringupError) as ei:
                        fn(ctx)
                    assert str(ei.value) == str(exc)
                    assert any(k in str(exc) for k in ('timing', 'use_sim_time', 'nodes.')), exc
                    continue
                built += 1
                nodes = [a for a in fn(ctx) if type(a).__name__ == 'Node']
                ours = [n for n in nodes if n.kwargs['package'] == 'robot_dynamics']
                assert [(n.kwargs['name'], n.kwargs['parameters']) for n in ours] == [
                    (
                        s.name,
                        [
                            dict(
                                s.parameters,
                                **({'publish_robot_description': False} if s.executable == 'sim_node' else {}),
                            )
                        ],
                    )
                    for s in b.nodes
                ]
                rsp = [n for n in nodes if n.kwargs['package'] == 'robot_state_publisher'][0]
                desc = rsp.kwargs['parameters'][0]['robot_description']
                sim_time = any(s.parameters.get('use_sim_time') for s in b.nodes)
                assert rsp.kwargs['parameters'][0]['use_sim_time'] == sim_time
                if flag is not None:
                    assert all(s.parameters['use_sim_time'] == flag for s in b.nodes if s.executable != 'sim_node')
                cm = [n for n in nodes if n.kwargs['package'] == 'controller_manager']
                if hw == 'sim':
                    assert not cm and '<ros2_control' not in desc
                    assert [s.executable for s in b.nodes].count('sim_node') == 1
                    continue
                assert 'sim_node' not in [s.executable for s in b.nodes]
                assert b.nodes[0].executable == 'closure_node' and not sim_time
                plugin = 'mock_components/GenericSystem' if hw == 'mock' else 'my_hw/MySystem'
                assert f'<plugin>{plugin}</plugin>' in desc
                assert load_model(desc).joint_names == load_model(b.urdf).joint_names
                node = [n for n in cm if n.kwargs['executable'] == 'ros2_control_node']
                assert len(node) == 1
                yml = node[0].kwargs['parameters'][0]
                with open(yml) as fh:
                    controllers = yaml.safe_load(fh)['controller_manager']['ros__parameters']
                assert dict(node[0].kwargs['remappings'])['joint_states'] == 'measured_joint_states'
                spawned = [n.kwargs['arguments'][0] for n in cm if n.kwargs['executable'] == 'spawner']
                assert spawned[0] == 'joint_state_broadcaster' and len(spawned) == 2
                assert spawned[1] in controllers and spawned[1] in {s.parameters.get('controller') for s in b.nodes}
    assert built >= 5, built
    # hardware ros2_control without a plugin: refused before any action
    with pytest.raises(BringupError, match='hardware_plugin' if robot != 'hydraulic_boom' else 'vdc'):
        fn(_ctx(hardware='ros2_control'))


@pytest.mark.parametrize(
    'ns, ok',
    [
        ('r1', 'r1'),
        ('/r1', 'r1'),
        ('fleet/arm_2', 'fleet/arm_2'),
        ('', ''),
        ('1r', None),
        ('r-1', None),
        ('a//b', None),
        ('~x', None),
    ],
)
def test_namespace_override(ns, ok):
    if ok is None:
        with pytest.raises(BringupError, match='namespace'):
            load_bringup('five_bar', namespace=ns)
        return
    b = load_bringup('five_bar', namespace=ns)
    assert {s.namespace for s in b.nodes} == {ok}
    if ok:
        assert f'__ns:=/{ok}' in b.nodes[0].ros_args()


def test_nodespec_module():
    assert NodeSpec('a', 'sim_node').module == 'robot_dynamics.ros.sim_node'


def test_lockstep_runs_every_auxiliary_output_realtime_decimates_them():
    """The real-time decimations of auxiliary outputs (controller ~/tracking_error, ik_node's
    auxiliary topics, kinematics_node) are configured per robot; lock-step overrides them to
    every sample (deterministic tests see every sample)."""
    from robot_dynamics.ros.bringup import load_bringup

    rt = {n.name: n.parameters for n in load_bringup('irsbot2_t1', timing='realtime').nodes}
    ls = {n.name: n.parameters for n in load_bringup('irsbot2_t1', timing='lockstep').nodes}
    assert rt['dynamics_node']['error_rate'] == 250.0 and ls['dynamics_node']['error_rate'] == 0.0
    assert rt['ik_node']['aux_rate'] == 50.0 and ls['ik_node']['aux_rate'] == 0.0
    # kinematics_node takes every /joint_states: sim_node decimates it to 100 Hz in real time
    # (its control_state_topic carries every state for the controller; lock-step: every state)
    assert rt['kinematics_node']['rate'] == 0.0 and ls['kinematics_node']['rate'] == 0.0
    assert rt['sim_node']['joint_states_rate'] == 100.0
    assert rt['sim_node']['control_state_topic'] == rt['dynamics_node']['state_topic'] == 'control/joint_states'
    assert rt['trajectory_node']['sync_topic'] == '' and ls['trajectory_node']['sync_topic'] == 'joint_states'


@pytest.mark.parametrize('robot', ['planar_3rpr', 'delta_parallelogram'])
def test_test_data_configs_resolve_beside_the_config(robot):
    """test/data/<robot>.yaml: urdf/loops relative to the config file's directory
    (not found under the share dir), lock-step by default, the embedding graph's nodes."""
    b = load_bringup(os.path.join(ROOT, 'test', 'data', f'{robot}.yaml'))
    assert b.urdf == os.path.join(ROOT, 'test', 'data', f'{robot}.urdf')
    assert b.loops == os.path.join(ROOT, 'test', 'data', f'{robot}.loops.yaml')
    assert b.timing == 'lockstep'
    assert [s.executable for s in b.nodes] == [
        'sim_node',
        'kinematics_node',
        'trajectory_node',
        'ik_node',
        'controller_node',
    ]
    ik = next(s for s in b.nodes if s.name == 'ik_node')
    assert ik.parameters['robot_description'] == b.urdf and ik.parameters['use_sim_time'] is True


def test_relative_paths_share_dir_first_then_config_dir(tmp_path):
    """A relative path found under the share dir wins (packaged configs unchanged); else the
    config file's directory; missing in both: BringupError naming the key."""
    src = os.path.join(ROOT, 'test', 'data', 'planar_3rpr.urdf')
    (tmp_path / 'mine.urdf').write_text(open(src, encoding='utf-8').read())
    nodes = {'sim_node': {'executable': 'sim_node'}}
    cfg = tmp_path / 'c.yaml'
    cfg.write_text(yaml.safe_dump({'robot': 'x', 'urdf': 'mine.urdf', 'nodes': nodes}))
    assert load_bringup(str(cfg)).urdf == str(tmp_path / 'mine.urdf')
    cfg.write_text(yaml.safe_dump({'robot': 'x', 'urdf': 'urdf/five_bar.urdf', 'nodes': nodes}))
    assert load_bringup(str(cfg)).urdf == os.path.join(ROOT, 'urdf', 'five_bar.urdf')
    cfg.write_text(yaml.safe_dump({'robot': 'x', 'urdf': 'mine.urdf', 'loops': 'nope.yaml', 'nodes': nodes}))
    with pytest.raises(BringupError, match='loops'):
        load_bringup(str(cfg))


def test_control_path_priority_in_real_time_only(tmp_path, monkeypatch):
    """Real time: the control path (plant, reference, IK, controllers) asks for SCHED_FIFO 50
    (rt_priority) with nice -10 as the fallback; lock-step and the visualisation nodes run at
    normal priority; the prefix is chrt where the user may, else nice; rt_priority is checked."""
    from robot_dynamics.ros import bringup as B

    rt = {n.name: n for n in load_bringup('irsbot2', timing='realtime').nodes}
    ls = {n.name: n for n in load_bringup('irsbot2', timing='lockstep').nodes}
    for name in ('sim_node', 'trajectory_node', 'ik_node', 'dynamics_node'):
        assert (rt[name].rt_priority, rt[name].nice) == (B.REALTIME_FIFO, B.REALTIME_NICE)
        assert (ls[name].rt_priority, ls[name].nice) == (0, 0)
    assert rt['kinematics_node'].rt_priority == 0 and rt['kinematics_node'].nice == 0
    # a config may order the control path (irsbot2_t1: plant > controller > trajectory > ik_node,
    # real time only)
    t1 = {n.name: n.rt_priority for n in load_bringup('irsbot2_t1', timing='realtime').nodes}
    assert t1['sim_node'] > t1['dynamics_node'] > t1['trajectory_node'] > t1['ik_node'] >= B.REALTIME_FIFO
    assert all(n.rt_priority == 0 for n in load_bringup('irsbot2_t1', timing='lockstep').nodes)
    monkeypatch.setattr(B, '_FIFO_OK', True)
    assert B.process_prefix(rt['sim_node']) == ['chrt', '-f', '50']
    monkeypatch.setattr(B, '_FIFO_OK', False)
    assert B.process_prefix(rt['sim_node']) == ['nice', '-n', '-10']
    assert B.process_prefix(rt['kinematics_node']) == []
    cfg = tmp_path / 'p.yaml'
    cfg.write_text(
        yaml.safe_dump(
            {
                'robot': 'x',
                'urdf': os.path.join(ROOT, 'urdf/four_bar.urdf'),
                'timing': 'realtime',
                'nodes': {'sim_node': {'rt_priority': 120}},
            }
        )
    )
    with pytest.raises(BringupError, match='rt_priority'):
        load_bringup(str(cfg))
    monkeypatch.setattr(B, '_FIFO_OK', None)  # the observer on this machine's real permission
    with B.observer_priority('lockstep') as o:
        assert not o.active
    with B.observer_priority('realtime') as o:
        assert o.active == B.fifo_permitted()
        if o.active:
            assert os.sched_getscheduler(0) == os.SCHED_FIFO
    assert os.sched_getscheduler(0) == os.SCHED_OTHER
