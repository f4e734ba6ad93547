"""config/<robot>.yaml -> node specs, shared by launch/*.launch.py and the built-in launcher."""
import glob
import os
import sys
import types

import pytest
import yaml

from robot_dynamics.bringup import BringupError, NodeSpec, launch_description, load_bringup

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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
        fqn, = s.params_yaml()
        assert fqn == f'/{s.name}'


def test_overrides_and_remaps(tmp_path):
    cfg = tmp_path / 'r.yaml'
    cfg.write_text(yaml.safe_dump({
        'robot': 'four_bar', 'urdf': os.path.join(ROOT, 'urdf/four_bar.urdf'), 'namespace': 'arm',
        'nodes': {'k': {'executable': 'kinematics_node', 'parameters': {'frames': ['crank']},
                        'remappings': {'joint_states': '/robot/joint_states'}},
                  'off': {'executable': 'sim_node', 'enabled': False}}}))
    b = load_bringup(str(cfg), overrides={'k': {'frames': ['rocker']}})
    assert [s.name for s in b.nodes] == ['k']
    s = b.nodes[0]
    assert s.parameters['frames'] == ['rocker']
    assert b.loops.endswith('four_bar.loops.yaml')   # sidecar picked up beside the URDF
    assert '-r' in s.ros_args() and 'joint_states:=/robot/joint_states' in s.ros_args()
    assert '__ns:=/arm' in s.ros_args()            # rcl wants an absolute namespace
    assert list(s.params_yaml()) == ['/arm/k']


@pytest.mark.parametrize('content, key', [
    ({'robot': 'x'}, 'urdf'),
    ({'robot': 'x', 'urdf': 'urdf/four_bar.urdf', 'nodes': {}}, 'nodes'),
    ({'robot': 'x', 'urdf': 'urdf/four_bar.urdf', 'bogus': 1, 'nodes': {'a': {}}}, 'bogus'),
    ({'robot': 'x', 'urdf': 'urdf/four_bar.urdf', 'nodes': {'a': {'executable': 'nope'}}}, 'nodes.a.executable'),
    ({'robot': 'x', 'urdf': 'urdf/four_bar.urdf', 'nodes': {'a': {'executable': 'sim_node', 'params': {}}}}, 'nodes.a.params'),
    ({'robot': 'x', 'urdf': 'urdf/none.urdf', 'nodes': {'a': {}}}, 'urdf'),
    ({'robot': 'x', 'urdf': 'urdf/four_bar.urdf', 'nodes': {'sim_node': {'parameters': {'p': {'a': 1}}}}}, 'nodes.sim_node.parameters.p'),
])
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
    _Recorder.made = []
    return mods


@pytest.mark.parametrize('timing', ['realtime', 'lockstep'])
@pytest.mark.parametrize('path', LAUNCH_FILES, ids=os.path.basename)
def test_launch_files_build_their_nodes_from_the_config(fake_launch, path, timing):
    robot = os.path.basename(path)[:-len('.launch.py')]
    assert os.path.isfile(os.path.join(ROOT, 'config', f'{robot}.yaml')), 'launch file without config'
    ns = {}
    exec(compile(open(path).read(), path, 'exec'), ns)
    ld = ns['generate_launch_description']()
    args = {a.args[0]: a.kwargs for a in ld.args[0] if type(a).__name__ == 'DeclareLaunchArgument'}
    assert args['rviz']['choices'] == ['true', 'false']
    assert args['timing']['choices'] == ['realtime', 'lockstep']
    assert args['timing']['default_value'] == load_bringup(robot).timing
    assert args['namespace']['default_value'] == ''
    opaque = [a for a in ld.args[0] if type(a).__name__ == 'OpaqueFunction']
    actions = opaque[0].kwargs['function']({'timing': timing, 'rviz': 'true', 'namespace': ''})
    nodes = [a for a in actions if type(a).__name__ == 'Node']
    ours = [n for n in nodes if n.kwargs['package'] == 'robot_dynamics']
    b = load_bringup(robot, timing=timing)
    assert [(n.kwargs['name'], n.kwargs['executable']) for n in ours] == \
        [(s.name, s.executable) for s in b.nodes]
    for n, s in zip(ours, b.nodes):
        assert n.kwargs['parameters'] == [s.parameters]
    rsp = [n for n in nodes if n.kwargs['package'] == 'robot_state_publisher']
    assert len(rsp) == 1 and '<robot' in rsp[0].kwargs['parameters'][0]['robot_description']
    sim_time = any(s.parameters.get('use_sim_time') for s in b.nodes)
    assert rsp[0].kwargs['parameters'][0]['use_sim_time'] == sim_time
    assert any(n.kwargs['package'] == 'rviz2' for n in nodes)
    # namespace:=r1 puts every node of ours and robot_state_publisher in it; a bad one is refused
    # before any node is built
    actions = opaque[0].kwargs['function']({'timing': timing, 'rviz': 'false', 'namespace': 'r1'})
    nodes = [a for a in actions if type(a).__name__ == 'Node']
    assert all(n.kwargs['namespace'] == 'r1' for n in nodes
               if n.kwargs['package'] in ('robot_dynamics', 'robot_state_publisher'))
    with pytest.raises(BringupError, match='namespace'):
        opaque[0].kwargs['function']({'timing': timing, 'rviz': 'false', 'namespace': 'r 1'})


@pytest.mark.parametrize('ns, ok', [('r1', 'r1'), ('/r1', 'r1'), ('fleet/arm_2', 'fleet/arm_2'),
                                    ('', ''), ('1r', None), ('r-1', None), ('a//b', None), ('~x', None)])
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
    assert NodeSpec('a', 'sim_node').module == 'robot_dynamics.nodes.sim_node'
