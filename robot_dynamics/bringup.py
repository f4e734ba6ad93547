"""Per-robot bringup config (``config/<robot>.yaml``) -> node specs.

The single source of truth for both launch paths: the real ROS 2 launch files
(``launch/<robot>.launch.py``, launch_ros ``Node`` actions) and the built-in launcher
(``robot-dynamics launch <robot>``, one subprocess per node with ``--ros-args``) both call
:func:`load_bringup` and start exactly the nodes it returns. The config::

    robot: five_bar
    urdf: urdf/five_bar.urdf            # relative to the package share dir (or absolute)
    loops: urdf/five_bar.loops.yaml     # optional (default: <stem>.loops.yaml beside the URDF)
    rviz: config/rviz/five_bar.rviz     # optional, used by the ROS launch file
    namespace: ''                       # optional, applied to every node
    nodes:                              # started in this order
      sim_node:                         # node name
        executable: sim_node            # console script / module robot_dynamics.nodes.<exe>
        parameters: {rate: 1000.0}      # ROS parameters (robot_description/loops are added)
        remappings: {}                  # from: to
      dynamics_node: {executable: dynamics_node, parameters: {...}}

Every node receives ``robot_description`` (the URDF path) and ``loops`` (the sidecar path
or '') unless its parameters set them.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from .errors import RobotDynamicsError

EXECUTABLES = ('sim_node', 'kinematics_node', 'controller_node', 'dynamics_node', 'trajectory_node', 'ik_node',
               'vdc_controller', 'sea_controller', 'ip_controller')
_NAMESPACE = re.compile(r'^/?[A-Za-z_][A-Za-z0-9_]*(/[A-Za-z_][A-Za-z0-9_]*)*/?$')
_TOP_KEYS = {'robot', 'urdf', 'loops', 'rviz', 'namespace', 'nodes', 'description', 'timing'}
TIMINGS = ('realtime', 'lockstep')
# Parameters that make a graph run in wall-clock real time or in lock-step on simulated time,
# per executable ('*' = every node but sim_node). Applied before the config's own parameters
# (which win) and the overrides (which win over both).
TIMING_PARAMS = {
    'realtime': {
        'sim_node': {'lockstep': False, 'publish_clock': False},
        'trajectory_node': {'sync_topic': ''},
        'controller_node': {'reference_sync': False}, 'dynamics_node': {'reference_sync': False},
        'ip_controller': {'reference_sync': False},
        'vdc_controller': {'reference_sync': False},
        'sea_controller': {'reference_sync': False},
        '*': {'use_sim_time': False},
    },
    'lockstep': {
        'sim_node': {'lockstep': True, 'publish_clock': True, 'lockstep_republish': 0.5},
        'trajectory_node': {'sync_topic': 'joint_states'},
        'controller_node': {'reference_sync': True}, 'dynamics_node': {'reference_sync': True},
        'ip_controller': {'reference_sync': True},
        'vdc_controller': {'reference_sync': True, 'wait_first_reference': True},
        'sea_controller': {'reference_sync': True},
        '*': {'use_sim_time': True},
    },
}
_NODE_KEYS = {'executable', 'parameters', 'remappings', 'enabled', 'description', 'nice'}
# the control path (plant, reference, controllers) runs at a higher CPU priority in real time so
# that other work on the machine (a CPU hog, the test runner) does not stall it (nice -10, as
# ros2_control's controller manager asks for a real-time priority); ignored without permission
CONTROL_PATH = ('sim_node', 'trajectory_node', 'ik_node', 'controller_node', 'dynamics_node',
                'ip_controller', 'vdc_controller', 'sea_controller')
REALTIME_NICE = -10

# DDS discovery stays on loopback unless the user's environment says otherwise (Kilted reads
# ROS_AUTOMATIC_DISCOVERY_RANGE: LOCALHOST | SUBNET (the ROS default) | SYSTEM_DEFAULT | OFF,
# plus ROS_STATIC_PEERS; ROS_LOCALHOST_ONLY is gone): docs/launch_and_safety.md
DISCOVERY_RANGE_VAR = 'ROS_AUTOMATIC_DISCOVERY_RANGE'
DEFAULT_DISCOVERY_RANGE = 'LOCALHOST'


def discovery_env(environ=None) -> dict:
    """What the nodes' environment needs added for DDS discovery on loopback by default:
    ``{'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST'}`` unless ``environ`` (default
    ``os.environ``) sets that variable to a non-empty value (the user's choice, e.g. SUBNET for
    a robot spread over several machines, is respected: then ``{}``)."""
    environ = os.environ if environ is None else environ
    return {} if environ.get(DISCOVERY_RANGE_VAR) else {DISCOVERY_RANGE_VAR: DEFAULT_DISCOVERY_RANGE}


class BringupError(RobotDynamicsError):
    """A malformed bringup config (names the file and the key)."""

    def __init__(self, source, key, message):
        self.source, self.key = source, key
        super().__init__(f'{source}' + (f': {key}' if key else '') + f': {message}')


@dataclass
class NodeSpec:
    """One node to start: ``robot_dynamics.nodes.<executable>`` named ``name``."""

    name: str
    executable: str
    parameters: dict = field(default_factory=dict)
    remappings: dict = field(default_factory=dict)
    namespace: str = ''
    nice: int = 0

    @property
    def module(self) -> str:
        """Python module that implements the node (``python -m <module>``)."""
        return f'robot_dynamics.nodes.{self.executable}'

    def ros_args(self, params_file=None) -> list:
        """``--ros-args`` list: node name, namespace, remaps and parameters."""
        args = ['--ros-args', '-r', f'__node:={self.name}']
        if self.namespace:
            args += ['-r', f'__ns:=/{self.namespace.strip("/")}']   # (rcl: absolute)
        for a, b in self.remappings.items():
            args += ['-r', f'{a}:={b}']
        if params_file:
            args += ['--params-file', params_file]
        return args

    def params_yaml(self) -> dict:
        """Parameters in the ROS 2 params-file layout ``{<fqn>: {ros__parameters: ...}}``."""
        fqn = (f'/{self.namespace.strip("/")}/' if self.namespace else '/') + self.name
        return {fqn: {'ros__parameters': dict(self.parameters)}}


@dataclass
class Bringup:
    """A robot's bringup: model files and the nodes to start, in order."""

    robot: str
    urdf: str
    loops: str
    rviz: str
    nodes: list
    source: str
    timing: str = 'realtime'


def param_value_problem(value):
    """Why ``value`` cannot be a ROS parameter (None if it can): scalars (bool, int, float,
    str) and lists of one scalar type only (the params-file parser rejects mixed lists such as
    ``[1, 2.5]``: write ``[1.0, 2.5]``)."""
    scalar = (bool, int, float, str)
    if value is None:
        return 'has no value'
    if isinstance(value, scalar):
        return None
    if isinstance(value, list):
        if not all(isinstance(v, scalar) for v in value):
            return 'must be a list of scalars'
        if len({type(v) for v in value}) > 1:
            return (f'mixes types in a list {value!r} (one type per list; for numbers write '
                    f'every element as a float, e.g. 1.0)')
        return None
    return f'must be a scalar or a list, got {type(value).__name__}'


def share_dir() -> str:
    """The package share dir (installed) or the source checkout root."""
    from . import data_path
    return os.path.dirname(data_path('urdf'))


def config_path(robot: str) -> str:
    """``config/<robot>.yaml`` of a packaged robot, or ``robot`` itself if it is a file."""
    if os.path.isfile(robot):
        return robot
    p = os.path.join(share_dir(), 'config', f'{robot}.yaml')
    if not os.path.isfile(p):
        known = sorted(f[:-5] for f in os.listdir(os.path.join(share_dir(), 'config'))
                       if f.endswith('.yaml'))
        raise BringupError(p, None, f"no bringup config for robot '{robot}' (known: {known})")
    return p


def _abs(base, p):
    if not p:
        return ''
    return p if os.path.isabs(p) else os.path.join(base, p)


def load_bringup(robot_or_path: str, overrides: dict | None = None, timing: str | None = None,
                 namespace: str | None = None) -> Bringup:
    """Read and validate a bringup config; returns the node specs with model paths filled.

    ``overrides``: {node_name: {param: value}} applied on top of the file (e.g. from the
    command line). ``timing``: 'realtime' (wall clock) or 'lockstep' (the plant advances one
    period per command, every node on simulated time: deterministic, for tests); default the
    config's ``timing`` key, else 'realtime'. See ``TIMING_PARAMS``. ``namespace``: put every
    node in this ROS namespace (default the config's ``namespace``, else none); the nodes' topics
    are relative, so two robots in two namespaces share a domain without cross-talk.
    """
    import yaml
    path = config_path(robot_or_path)
    try:
        with open(path, encoding='utf-8') as fh:
            data = yaml.safe_load(fh)
    except yaml.YAMLError as exc:
        raise BringupError(path, None, f'invalid YAML: {exc}') from exc
    if not isinstance(data, dict):
        raise BringupError(path, None, 'top level must be a mapping')
    bad = set(data) - _TOP_KEYS
    if bad:
        raise BringupError(path, sorted(bad)[0], f'unknown key (allowed: {sorted(_TOP_KEYS)})')
    for k in ('robot', 'urdf'):
        if not isinstance(data.get(k), str):
            raise BringupError(path, k, 'required string is missing')
    base = share_dir()
    urdf = _abs(base, data['urdf'])
    if not os.path.isfile(urdf):
        raise BringupError(path, 'urdf', f'file not found: {urdf}')
    loops = _abs(base, data.get('loops') or '')
    if not loops:
        stem = urdf[:-5] if urdf.endswith('.urdf') else urdf
        cand = stem + '.loops.yaml'
        loops = cand if os.path.isfile(cand) else ''
    elif not os.path.isfile(loops):
        raise BringupError(path, 'loops', f'file not found: {loops}')
    rviz = _abs(base, data.get('rviz') or '')
    ns = (data.get('namespace') or '') if namespace is None else namespace
    if not isinstance(ns, str) or (ns and not _NAMESPACE.match(ns)):
        raise BringupError(path, 'namespace', f'not a ROS namespace: {ns!r} (letters, digits, _ and '
                                              "'/', each token starting with a letter or _)")
    ns = ns.strip('/')
    nodes_raw = data.get('nodes')
    if not isinstance(nodes_raw, dict) or not nodes_raw:
        raise BringupError(path, 'nodes', 'must be a non-empty mapping name: {executable: ...}')
    overrides = overrides or {}
    started = [n for n, nd in nodes_raw.items() if not (isinstance(nd, dict) and nd.get('enabled', True) is False)]
    for name, ov in overrides.items():
        if name not in started:
            why = 'is disabled in this config' if name in nodes_raw else 'is not in this config'
            raise BringupError(path, f'override {name}', f"node '{name}' {why} (nodes: {', '.join(map(str, started))})")
        if not isinstance(ov, dict):
            raise BringupError(path, f'override {name}', 'must be a mapping {parameter: value}')
    timing = timing or data.get('timing') or 'realtime'
    if timing not in TIMINGS:
        raise BringupError(path, 'timing', f'must be one of {TIMINGS}, got {timing!r}')
    tp = TIMING_PARAMS[timing]
    specs = []
    for name, nd in nodes_raw.items():
        key = f'nodes.{name}'
        if not isinstance(nd, dict):
            raise BringupError(path, key, 'must be a mapping')
        bad = set(nd) - _NODE_KEYS
        if bad:
            raise BringupError(path, f'{key}.{sorted(bad)[0]}', f'unknown key (allowed: {sorted(_NODE_KEYS)})')
        if nd.get('enabled', True) is False:
            continue
        exe = nd.get('executable', name)
        if exe not in EXECUTABLES:
            raise BringupError(path, f'{key}.executable', f"unknown executable '{exe}' (known: {EXECUTABLES})")
        params = nd.get('parameters') or {}
        remaps = nd.get('remappings') or {}
        if not isinstance(params, dict) or not isinstance(remaps, dict):
            raise BringupError(path, key, 'parameters and remappings must be mappings')
        for pk, pv in params.items():
            if pv is None or isinstance(pv, dict):
                raise BringupError(path, f'{key}.parameters.{pk}', 'ROS parameters must be scalars or lists')
        for pk, pv in overrides.get(name, {}).items():
            why = param_value_problem(pv)
            if why:
                raise BringupError(path, f'override {name}.{pk}', f'the value {why}')
        timing_p = dict(tp.get(exe, {}))
        if exe != 'sim_node':
            timing_p.update(tp['*'])
        params = {'robot_description': urdf, 'loops': loops, **timing_p, **params, **overrides.get(name, {})}
        nice = nd.get('nice', REALTIME_NICE if (timing == 'realtime' and exe in CONTROL_PATH) else 0)
        if not isinstance(nice, int) or isinstance(nice, bool) or not -20 <= nice <= 19:
            raise BringupError(path, f'{key}.nice', f'must be an integer in -20..19, got {nice!r}')
        specs.append(NodeSpec(name=name, executable=exe, parameters=params,
                              remappings={str(a): str(b) for a, b in remaps.items()}, namespace=ns,
                              nice=nice))
    return Bringup(robot=data['robot'], urdf=urdf, loops=loops, rviz=rviz, nodes=specs, source=path,
                   timing=timing)


def launch_description(robot: str, rviz_default: str = 'false'):
    """ROS 2 ``LaunchDescription`` for a robot, built from its bringup config.

    Used by ``launch/<robot>.launch.py`` (needs the ``launch`` and ``launch_ros`` packages of a
    ROS 2 installation). Arguments: ``rviz`` (true | false: start rviz2 with
    ``config/rviz/<robot>.rviz``), ``timing`` (realtime | lockstep, default the config's),
    ``namespace`` (default the config's; validated before any node starts). Starts
    the config's nodes, ``robot_state_publisher`` with the URDF text and optionally rviz2; the
    nodes are built when the arguments are known (OpaqueFunction), from the same
    :func:`load_bringup` as ``robot-dynamics launch``.
    """
    from launch import LaunchDescription
    from launch.actions import DeclareLaunchArgument, OpaqueFunction
    from launch.substitutions import LaunchConfiguration

    b = load_bringup(robot)

    def nodes(context, *args, **kwargs):
        # the launch's environment (os.environ plus any SetEnvironmentVariable before this)
        environ = getattr(context, 'environment', None)
        return node_actions(robot, LaunchConfiguration('timing').perform(context),
                            LaunchConfiguration('rviz').perform(context) == 'true',
                            environ=environ if environ is not None else os.environ,
                            namespace=LaunchConfiguration('namespace').perform(context))
    return LaunchDescription([
        DeclareLaunchArgument('rviz', default_value=rviz_default, choices=['true', 'false'],
                              description='start rviz2 with config/rviz/<robot>.rviz'),
        DeclareLaunchArgument('timing', default_value=b.timing, choices=list(TIMINGS),
                              description='realtime (wall clock) or lockstep (simulated time, '
                                          'deterministic)'),
        DeclareLaunchArgument('namespace', default_value=b.nodes[0].namespace if b.nodes else '',
                              description='ROS namespace of every node (topics are relative: two '
                                          'robots in two namespaces share a domain)'),
        OpaqueFunction(function=nodes)])


def node_actions(robot: str, timing: str, rviz: bool, environ=None, namespace=None):
    """launch_ros ``Node`` actions of a robot's bringup (its nodes, robot_state_publisher, rviz2).

    ``environ``: the environment the launch runs in (default ``os.environ``; the launch
    context's environment in :func:`launch_description`): unless it sets
    ``ROS_AUTOMATIC_DISCOVERY_RANGE``, every node gets ``LOCALHOST`` (``additional_env``)."""
    from launch_ros.actions import Node
    b = load_bringup(robot, timing=timing, namespace=namespace)
    ns = b.nodes[0].namespace if b.nodes else ''
    with open(b.urdf, encoding='utf-8') as fh:
        urdf_xml = fh.read()
    # a graph on simulated time (sim_node publishes /clock: lock-step, or a real-time graph on
    # the plant clock): so do rsp and rviz2
    sim_time = any(bool(s.parameters.get('use_sim_time')) for s in b.nodes)
    # DDS discovery on loopback unless the user's environment sets the range (discovery_env)
    dds = {'additional_env': env} if (env := discovery_env(environ)) else {}
    actions = [Node(package='robot_dynamics', executable=s.executable, name=s.name,
                    namespace=s.namespace or None, parameters=[dict(s.parameters)],
                    remappings=list(s.remappings.items()), output='screen',
                    **({'prefix': f'nice -n {s.nice}'} if s.nice else {}), **dds) for s in b.nodes]
    actions.append(Node(package='robot_state_publisher', executable='robot_state_publisher',
                        name='robot_state_publisher', namespace=ns or None,
                        parameters=[{'robot_description': urdf_xml, 'use_sim_time': sim_time}],
                        output='screen', **dds))
    if b.rviz and rviz:
        actions.append(Node(package='rviz2', executable='rviz2', name='rviz2',
                            arguments=['-d', b.rviz], parameters=[{'use_sim_time': sim_time}],
                            **dds))
    return actions
