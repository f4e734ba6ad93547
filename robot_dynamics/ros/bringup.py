"""Per-robot bringup config (``config/<robot>.yaml``) -> node specs.

The single source of truth for both launch paths: the real ROS 2 launch files
(``launch/<robot>.launch.py``, launch_ros ``Node`` actions) and the built-in launcher
(``robot-dynamics launch <robot>``, one subprocess per node with ``--ros-args``) both call
:func:`load_bringup` and start exactly the nodes it returns. The config::

    robot: five_bar
    urdf: urdf/five_bar.urdf            # relative to the package share dir, else to the
                                        # config file's directory (or absolute)
    loops: urdf/five_bar.loops.yaml     # optional (default: <stem>.loops.yaml beside the URDF)
    rviz: config/rviz/five_bar.rviz     # optional, used by the ROS launch file
    namespace: ''                       # optional, applied to every node
    nodes:                              # started in this order
      sim_node:                         # node name
        executable: sim_node            # console script / module robot_dynamics.ros.<exe>
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

from robot_dynamics.errors import RobotDynamicsError

EXECUTABLES = (
    'sim_node',
    'kinematics_node',
    'controller_node',
    'dynamics_node',
    'trajectory_node',
    'ik_node',
    'vdc_controller',
    'sea_controller',
    'ip_controller',
    'closure_node',
)
_NAMESPACE = re.compile(r'^/?[A-Za-z_][A-Za-z0-9_]*(/[A-Za-z_][A-Za-z0-9_]*)*/?$')
_TOP_KEYS = {'robot', 'urdf', 'loops', 'rviz', 'namespace', 'nodes', 'description', 'timing'}
TIMINGS = ('realtime', 'lockstep')
# What drives the joints: 'sim' (sim_node, the package's plant), 'mock' (ros2_control's
# mock_components/GenericSystem) or 'ros2_control' (the user's hardware plugin). With the two
# ros2_control kinds, controller_manager + spawners (from a ROS 2 installation) replace sim_node
# and closure_node completes the passive joints from joint_state_broadcaster's states.
HARDWARE = ('sim', 'mock', 'ros2_control')
# executables that need a topic only sim_node publishes (no ros2_control route yet)
SIM_ONLY = {
    'vdc_controller': 'the chamber pressures (cylinder_states), which joint_state_broadcaster '
    'publishes only on dynamic_joint_states (no bridge yet)'
}
# Parameters that make a graph run in wall-clock real time or in lock-step on simulated time,
# per executable ('*' = every node but sim_node). Applied before the config's own parameters
# (which win) and the overrides (which win over both).
TIMING_PARAMS = {
    'realtime': {
        'sim_node': {'lockstep': False, 'publish_clock': False},
        'trajectory_node': {'sync_topic': ''},
        'controller_node': {'reference_sync': False},
        'dynamics_node': {'reference_sync': False},
        'ip_controller': {'reference_sync': False},
        'vdc_controller': {'reference_sync': False},
        'sea_controller': {'reference_sync': False},
        '*': {'use_sim_time': False},
    },
    'lockstep': {
        'sim_node': {'lockstep': True, 'publish_clock': True, 'lockstep_republish': 0.5},
        'trajectory_node': {'sync_topic': 'joint_states'},
        'controller_node': {'reference_sync': True},
        'dynamics_node': {'reference_sync': True},
        'ip_controller': {'reference_sync': True},
        'vdc_controller': {'reference_sync': True, 'wait_first_reference': True},
        'sea_controller': {'reference_sync': True},
        '*': {'use_sim_time': True},
    },
}
# the decimations of auxiliary outputs are real-time economies (CPU per message); lock-step runs
# them with every sample whatever the config says (deterministic tests see every sample)
LOCKSTEP_EVERY_SAMPLE = {
    **{
        exe: {'error_rate': 0.0}
        for exe in ('controller_node', 'dynamics_node', 'ip_controller', 'vdc_controller', 'sea_controller')
    },
    'ik_node': {'aux_rate': 0.0},
    'kinematics_node': {'rate': 0.0},
}
_NODE_KEYS = {
    'executable',
    'parameters',
    'realtime_parameters',
    'remappings',
    'enabled',
    'description',
    'nice',
    'rt_priority',
}
# the control path (plant, reference, controllers) runs at a higher CPU priority in real time so
# that other work on the machine (a CPU hog, the test runner) does not stall it (nice -10, as
# ros2_control's controller manager asks for a real-time priority); ignored without permission
CONTROL_PATH = (
    'sim_node',
    'trajectory_node',
    'ik_node',
    'controller_node',
    'dynamics_node',
    'ip_controller',
    'vdc_controller',
    'sea_controller',
)
REALTIME_NICE = -10
# ... and, where the user may (root or an rtprio limit, as ros2_control's controller manager asks
# for its update thread, default priority 50), under SCHED_FIFO: a CPU hog or the test runner
# (SCHED_OTHER) then never preempts the control path; nice is the fallback without permission
REALTIME_FIFO = 50
_FIFO_OK = None


def fifo_permitted():
    """True when processes may be started under SCHED_FIFO here (``chrt -f 1 true`` succeeds;
    checked once per process)."""
    global _FIFO_OK
    if _FIFO_OK is None:
        import shutil
        import subprocess

        chrt = shutil.which('chrt')
        _FIFO_OK = (
            bool(chrt)
            and subprocess.run(
                [chrt, '-f', '1', 'true'], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            ).returncode
            == 0
        )
    return _FIFO_OK


class observer_priority:
    """Context: the calling thread (and the threads it starts, e.g. a recorder's rclpy node and
    its DDS threads) runs under SCHED_FIFO ``REALTIME_FIFO`` (as the control path) while a real-time graph is
    measured, where the user may: an instrument starved by the control path would drop or
    late-stamp what it records. ``timing`` other than 'realtime': nothing. ``active`` says
    whether it took effect."""

    def __init__(self, timing):
        self.timing, self.active = timing, False

    def __enter__(self):
        if self.timing == 'realtime' and fifo_permitted():
            try:
                os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(REALTIME_FIFO))
                self.active = True
            except (OSError, AttributeError):
                pass
        return self

    def __exit__(self, *exc):
        if self.active:
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
            self.active = False
        return False


def process_prefix(spec):
    """Command prefix that starts a node at its CPU priority: ``chrt -f <rt_priority>``
    (SCHED_FIFO) when the spec asks for it and the user may, else ``nice -n <nice>``, else none."""
    import shutil

    if spec.rt_priority and fifo_permitted():
        return ['chrt', '-f', str(spec.rt_priority)]
    if spec.nice and shutil.which('nice'):
        return ['nice', '-n', str(spec.nice)]
    return []


# DDS stays on loopback unless the user's environment says otherwise (Kilted reads
# ROS_AUTOMATIC_DISCOVERY_RANGE: LOCALHOST | SUBNET (the ROS default) | SYSTEM_DEFAULT | OFF,
# plus ROS_STATIC_PEERS; ROS_LOCALHOST_ONLY is gone): docs/launch_and_safety.md
DISCOVERY_RANGE_VAR = 'ROS_AUTOMATIC_DISCOVERY_RANGE'
DEFAULT_DISCOVERY_RANGE = 'LOCALHOST'
FASTDDS_PROFILES_VAR = 'FASTDDS_DEFAULT_PROFILES_FILE'
LOOPBACK_PROFILE = 'config/fastdds_loopback.xml'  # package data (share/robot_dynamics/...)
# RMW implementations that read the Fast DDS profile ('' = unset: Fast DDS, the ROS default)
FASTDDS_RMWS = ('', 'rmw_fastrtps_cpp', 'rmw_fastrtps_dynamic_cpp')
# discovery set up by the user (peers, a discovery server): the profile would cut it off
USER_DISCOVERY_VARS = ('ROS_STATIC_PEERS', 'ROS_DISCOVERY_SERVER', 'ROS2_EASY_MODE')


def loopback_profile() -> str:
    """Path of the package's Fast DDS loopback profile (``config/fastdds_loopback.xml`` in the
    source tree or the installed share directory); '' if it cannot be found."""
    from robot_dynamics.parsers.data import data_path

    try:
        return data_path(LOOPBACK_PROFILE)
    except FileNotFoundError:
        return ''


def discovery_env(environ=None) -> dict:
    """What a node's environment needs added so that DDS stays on loopback by default
    (``environ``: the user's environment, default ``os.environ``).

    * ``ROS_AUTOMATIC_DISCOVERY_RANGE`` set to anything but ``LOCALHOST`` (``SUBNET``,
      ``SYSTEM_DEFAULT``, ``OFF``): the user's choice, ``{}`` (the same setting that widens
      discovery widens the sockets).
    * unset, empty or ``LOCALHOST``, with Fast DDS (``RMW_IMPLEMENTATION`` unset,
      ``rmw_fastrtps_cpp`` or ``rmw_fastrtps_dynamic_cpp``) and no Fast DDS or discovery set-up
      of the user's (``FASTDDS_DEFAULT_PROFILES_FILE``, ``ROS_STATIC_PEERS``,
      ``ROS_DISCOVERY_SERVER``, ``ROS2_EASY_MODE``): the loopback profile,
      ``{'ROS_AUTOMATIC_DISCOVERY_RANGE': 'SYSTEM_DEFAULT', 'FASTDDS_DEFAULT_PROFILES_FILE':
      <config/fastdds_loopback.xml>}``: discovery on loopback as with LOCALHOST, and every
      UDP socket bound to 127.0.0.1 (LOCALHOST alone leaves them on 0.0.0.0 and the LAN
      address: rmw_fastrtps adds a UDPv4 transport on every interface for it, so the profile
      comes with SYSTEM_DEFAULT, which leaves the transports to the profile).
    * otherwise (another RMW, the user's profile or peers): ``{'ROS_AUTOMATIC_DISCOVERY_RANGE':
      'LOCALHOST'}`` when the range is unset or empty, else ``{}``: discovery on loopback,
      sockets as the middleware opens them.
    """
    environ = os.environ if environ is None else environ
    user_range = environ.get(DISCOVERY_RANGE_VAR) or ''
    if user_range and user_range != DEFAULT_DISCOVERY_RANGE:
        return {}
    own_setup = (
        environ.get(FASTDDS_PROFILES_VAR)
        or any(environ.get(v) for v in USER_DISCOVERY_VARS)
        or (environ.get('RMW_IMPLEMENTATION') or '') not in FASTDDS_RMWS
    )
    profile = '' if own_setup else loopback_profile()
    if profile:
        return {DISCOVERY_RANGE_VAR: 'SYSTEM_DEFAULT', FASTDDS_PROFILES_VAR: profile}
    return {} if user_range else {DISCOVERY_RANGE_VAR: DEFAULT_DISCOVERY_RANGE}


def describe_discovery(environ) -> str:
    """One line saying where the DDS of nodes started with ``environ`` (the user's environment
    with :func:`discovery_env` applied) binds and discovers."""
    rng = environ.get(DISCOVERY_RANGE_VAR) or ''
    prof = environ.get(FASTDDS_PROFILES_VAR) or ''
    if rng == 'SYSTEM_DEFAULT' and prof and os.path.basename(prof) == os.path.basename(LOOPBACK_PROFILE):
        return (
            f'{DISCOVERY_RANGE_VAR}=SYSTEM_DEFAULT {FASTDDS_PROFILES_VAR}={prof} (DDS on loopback '
            f'only: discovery and every UDP socket on 127.0.0.1, data over shared memory)'
        )
    text = f'{DISCOVERY_RANGE_VAR}={rng or "<unset>"}'
    if prof:
        text += f' {FASTDDS_PROFILES_VAR}={prof}'
    if rng == DEFAULT_DISCOVERY_RANGE:
        rmw = environ.get('RMW_IMPLEMENTATION') or ''
        why = (
            'your Fast DDS profile'
            if prof
            else next((f'{v} is set' for v in USER_DISCOVERY_VARS if environ.get(v)), None)
            or (f'RMW_IMPLEMENTATION={rmw}' if rmw not in FASTDDS_RMWS else f'{LOOPBACK_PROFILE} not found')
        )
        return text + f' (discovery on loopback; the sockets are not confined to it: {why})'
    return text + ' (from the environment: DDS discovery and sockets as it says)'


def _process_has_udp_socket() -> bool:
    """True if this process holds a UDP socket (Linux /proc); where that cannot be read: True
    once rclpy is imported. A live DDS participant holds UDP sockets."""
    import sys

    try:
        mine = set()
        for fd in os.listdir('/proc/self/fd'):
            try:
                link = os.readlink(f'/proc/self/fd/{fd}')
            except OSError:  # closed meanwhile (e.g. listdir's own fd)
                continue
            if link.startswith('socket:['):
                mine.add(link[8:-1])
        for table in ('/proc/self/net/udp', '/proc/self/net/udp6'):
            with open(table) as fh:
                if any(ln.split()[9] in mine for ln in fh.read().splitlines()[1:] if len(ln.split()) > 9):
                    return True
        return False
    except OSError:
        return 'rclpy' in sys.modules


def use_discovery_env() -> dict:
    """:func:`discovery_env` for this process's own DDS participants (``robot-dynamics record``,
    the demo's recorder): updates ``os.environ`` and returns what it added. Call it before the
    process's first ROS node: Fast DDS reads its profile file once per process, when the first
    participant is made. If the process already holds UDP sockets (a participant may exist, made
    without the profile), only the range is set (LOCALHOST, if unset), never SYSTEM_DEFAULT
    without the profile in force."""
    env = discovery_env()
    if FASTDDS_PROFILES_VAR in env and _process_has_udp_socket():
        env = {} if os.environ.get(DISCOVERY_RANGE_VAR) else {DISCOVERY_RANGE_VAR: DEFAULT_DISCOVERY_RANGE}
    os.environ.update(env)
    return env


class BringupError(RobotDynamicsError):
    """A malformed bringup config (names the file and the key)."""

    def __init__(self, source, key, message):
        self.source, self.key = source, key
        super().__init__(f'{source}' + (f': {key}' if key else '') + f': {message}')


@dataclass
class NodeSpec:
    """One node to start: ``robot_dynamics.ros.<executable>`` named ``name``."""

    name: str
    executable: str
    parameters: dict = field(default_factory=dict)
    remappings: dict = field(default_factory=dict)
    namespace: str = ''
    nice: int = 0
    rt_priority: int = 0  # SCHED_FIFO priority (1..99; 0 = normal scheduling)

    @property
    def module(self) -> str:
        """Python module that implements the node (``python -m <module>``)."""
        return f'robot_dynamics.ros.{self.executable}'

    def ros_args(self, params_file=None) -> list:
        """``--ros-args`` list: node name, namespace, remaps and parameters."""
        args = ['--ros-args', '-r', f'__node:={self.name}']
        if self.namespace:
            args += ['-r', f'__ns:=/{self.namespace.strip("/")}']  # (rcl: absolute)
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
    hardware: str = 'sim'
    # processes from a ROS 2 installation (controller_manager, spawners): started by the ROS
    # launch file, never by the built-in launcher (which says so)
    ros_processes: list = field(default_factory=list)
    xacro: str = ''  # the URDF + ros2_control block (robot_description with ros2_control)

    def control_state_topic(self) -> str:
        """The controller's every-state topic when it is not the (visualisation) ``joint_states``:
        the controller's ``state_topic`` (e.g. the boom's ``hydraulics/cylinder_states``) or
        sim_node's ``control_state_topic``; absolute, or '' (the controller reads joint_states).
        Probes measure the state -> command latency against it."""
        ctl = next((s for s in self.nodes if s.executable != 'sim_node' and 'controller' in s.parameters), None)
        sim = next((s for s in self.nodes if s.executable == 'sim_node'), None)
        topic = (ctl.parameters.get('state_topic', 'joint_states') if ctl else 'joint_states').strip('/')
        if topic == 'joint_states':
            topic = (sim.parameters.get('control_state_topic', '') if sim else '').strip('/')
        return '/' + topic if topic else ''


@dataclass
class RosProcess:
    """A process of another ROS 2 package (``ros2 run <package> <executable>``)."""

    package: str
    executable: str
    name: str
    parameters: list = field(default_factory=list)  # params files and/or dicts
    arguments: list = field(default_factory=list)
    remappings: dict = field(default_factory=dict)
    namespace: str = ''

    def command(self) -> str:
        """The equivalent ``ros2 run`` command line (for messages and docs)."""
        args = ' '.join(self.arguments)
        ros = ['-r', f'__node:={self.name}'] if not self.arguments else []
        if self.namespace:
            ros += ['-r', f'__ns:=/{self.namespace}']
        ros += [x for a, b in self.remappings.items() for x in ('-r', f'{a}:={b}')]
        ros += [x for f in self.parameters if isinstance(f, str) for x in ('--params-file', f)]
        tail = (' --ros-args ' + ' '.join(ros)) if ros else ''
        return f'ros2 run {self.package} {self.executable}' + (f' {args}' if args else '') + tail


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
            return (
                f'mixes types in a list {value!r} (one type per list; for numbers write '
                f'every element as a float, e.g. 1.0)'
            )
        return None
    return f'must be a scalar or a list, got {type(value).__name__}'


def share_dir() -> str:
    """The package share dir (installed) or the source checkout root."""
    from robot_dynamics.parsers.data import data_path

    return os.path.dirname(data_path('urdf'))


def config_path(robot: str) -> str:
    """``config/<robot>.yaml`` of a packaged robot, or ``robot`` itself if it is a file."""
    if os.path.isfile(robot):
        return robot
    p = os.path.join(share_dir(), 'config', f'{robot}.yaml')
    if not os.path.isfile(p):
        known = sorted(f[:-5] for f in os.listdir(os.path.join(share_dir(), 'config')) if f.endswith('.yaml'))
        raise BringupError(p, None, f"no bringup config for robot '{robot}' (known: {known})")
    return p


def _abs(base, p, config_dir=None):
    """Absolute path of a config entry: ``p`` itself if absolute, else ``base/p`` (the package
    share dir) when that exists, else ``config_dir/p`` when that exists (a config kept beside its
    URDF, e.g. ``test/data/planar_3rpr.yaml``), else ``base/p`` (reported as missing)."""
    if not p:
        return ''
    if os.path.isabs(p):
        return p
    q = os.path.join(base, p)
    if not os.path.exists(q) and config_dir:
        c = os.path.join(config_dir, p)
        if os.path.exists(c):
            return os.path.abspath(c)
    return q


def load_bringup(
    robot_or_path: str,
    overrides: dict | None = None,
    timing: str | None = None,
    namespace: str | None = None,
    hardware: str = 'sim',
    use_sim_time: bool | None = None,
    backend: str | None = None,
) -> Bringup:
    """Read and validate a bringup config; returns the node specs with model paths filled.

    ``overrides``: {node_name: {param: value}} applied on top of the file (e.g. from the
    command line). ``timing``: 'realtime' (wall clock) or 'lockstep' (the plant advances one
    period per command, every node on simulated time: deterministic, for tests); default the
    config's ``timing`` key, else 'realtime'. See ``TIMING_PARAMS``. ``namespace``: put every
    node in this ROS namespace (default the config's ``namespace``, else none); the nodes' topics
    are relative, so two robots in two namespaces share a domain without cross-talk.
    ``hardware``: 'sim' (default: sim_node is the plant), 'mock' or 'ros2_control' (see
    ``HARDWARE``): sim_node is replaced by ``closure_node`` (completes the passive joints from
    ``measured_joint_states``) and :attr:`Bringup.ros_processes` lists controller_manager
    (``config/ros2_control/<robot>_controllers.yaml``, its ``joint_states`` remapped to
    ``measured_joint_states``) and the spawners of ``joint_state_broadcaster`` and the config's
    forward command controller; the timing is real time (hardware does not wait).
    ``use_sim_time``: None (default: the timing's: lock-step on simulated time, real time on the
    wall clock), True (every node on sim_node's ``/clock``, also in real time: the plant clock;
    needs hardware 'sim') or False (wall clock; not with lock-step).
    ``backend``: None (default: the config's sim_node ``backend``, else 'rigid') or one of
    :data:`robot_dynamics.plants.registry.BACKENDS` ('rigid' | 'mujoco'): what integrates the
    multibody in sim_node (its ``plant`` keeps the actuators); the command line's overrides win.
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
    base, cdir = share_dir(), os.path.dirname(os.path.abspath(path))
    urdf = _abs(base, data['urdf'], cdir)
    if not os.path.isfile(urdf):
        raise BringupError(path, 'urdf', f'file not found: {urdf}')
    loops = _abs(base, data.get('loops') or '', cdir)
    if not loops:
        stem = urdf[:-5] if urdf.endswith('.urdf') else urdf
        cand = stem + '.loops.yaml'
        loops = cand if os.path.isfile(cand) else ''
    elif not os.path.isfile(loops):
        raise BringupError(path, 'loops', f'file not found: {loops}')
    rviz = _abs(base, data.get('rviz') or '', cdir)
    ns = (data.get('namespace') or '') if namespace is None else namespace
    if not isinstance(ns, str) or (ns and not _NAMESPACE.match(ns)):
        raise BringupError(
            path,
            'namespace',
            f"not a ROS namespace: {ns!r} (letters, digits, _ and '/', each token starting with a letter or _)",
        )
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
    if hardware not in HARDWARE:
        raise BringupError(path, 'hardware', f'must be one of {HARDWARE}, got {hardware!r}')
    from robot_dynamics.plants.registry import BACKENDS

    if backend is not None and backend not in BACKENDS:
        raise BringupError(path, 'backend', f'must be one of {BACKENDS}, got {backend!r}')
    if timing is not None and timing not in TIMINGS:
        raise BringupError(path, 'timing', f'must be one of {TIMINGS}, got {timing!r}')
    if hardware != 'sim':
        if timing == 'lockstep':
            raise BringupError(
                path,
                'timing',
                f"lockstep needs the simulator (hardware 'sim'); hardware '{hardware}' runs in real time",
            )
        if use_sim_time:
            raise BringupError(
                path, 'use_sim_time', f"simulated time comes from sim_node's /clock: not with hardware '{hardware}'"
            )
        if backend not in (None, 'rigid'):
            raise BringupError(path, 'backend', f"the backend is sim_node's: not with hardware '{hardware}'")
        timing = 'realtime'
    timing = timing or data.get('timing') or 'realtime'
    if timing not in TIMINGS:
        raise BringupError(path, 'timing', f'must be one of {TIMINGS}, got {timing!r}')
    if use_sim_time is False and timing == 'lockstep':
        raise BringupError(
            path,
            'use_sim_time',
            'lock-step runs every node on simulated time: use_sim_time false needs timing realtime',
        )
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
        rt_params = nd.get('realtime_parameters') or {}  # only in real time (over parameters)
        remaps = nd.get('remappings') or {}
        if not all(isinstance(d, dict) for d in (params, rt_params, remaps)):
            raise BringupError(path, key, 'parameters, realtime_parameters and remappings must be mappings')
        for sect, d in (('parameters', params), ('realtime_parameters', rt_params)):
            for pk, pv in d.items():
                if pv is None or isinstance(pv, dict):
                    raise BringupError(path, f'{key}.{sect}.{pk}', 'ROS parameters must be scalars or lists')
        for pk, pv in overrides.get(name, {}).items():
            why = param_value_problem(pv)
            if why:
                raise BringupError(path, f'override {name}.{pk}', f'the value {why}')
        timing_p = dict(tp.get(exe, {}))
        if exe != 'sim_node':
            timing_p.update(tp['*'])
        # the use_sim_time argument wins over the config (the command line's overrides over both)
        flag = (
            {}
            if use_sim_time is None
            else ({'use_sim_time': bool(use_sim_time)} if exe != 'sim_node' else {'publish_clock': bool(use_sim_time)})
        )  # sim_node: /clock = the plant clock
        if hardware != 'sim' and exe != 'sim_node':
            flag = {'use_sim_time': False}  # no /clock without sim_node
        every = LOCKSTEP_EVERY_SAMPLE.get(exe, {}) if timing == 'lockstep' else {}
        params = {
            'robot_description': urdf,
            'loops': loops,
            **timing_p,
            **params,
            **(rt_params if timing == 'realtime' else {}),
            **every,
            **flag,
            # (only a change: the config's value, or the node's default 'rigid', stays implicit)
            **(
                {'backend': backend}
                if backend is not None and exe == 'sim_node' and backend != params.get('backend', 'rigid')
                else {}
            ),
            **overrides.get(name, {}),
        }
        if exe == 'sim_node' and params.get('backend', 'rigid') not in BACKENDS:
            raise BringupError(
                path, f'{key}.parameters.backend', f'must be one of {BACKENDS}, got {params["backend"]!r}'
            )
        ctl_path = timing == 'realtime' and exe in CONTROL_PATH
        nice = nd.get('nice', REALTIME_NICE if ctl_path else 0)
        if not isinstance(nice, int) or isinstance(nice, bool) or not -20 <= nice <= 19:
            raise BringupError(path, f'{key}.nice', f'must be an integer in -20..19, got {nice!r}')
        rtp = nd.get('rt_priority', REALTIME_FIFO if ctl_path else 0) if timing == 'realtime' else 0
        if not isinstance(rtp, int) or isinstance(rtp, bool) or not 0 <= rtp <= 99:
            raise BringupError(path, f'{key}.rt_priority', f'must be an integer in 0..99, got {rtp!r}')
        specs.append(
            NodeSpec(
                name=name,
                executable=exe,
                parameters=params,
                remappings={str(a): str(b) for a, b in remaps.items()},
                namespace=ns,
                nice=nice,
                rt_priority=rtp,
            )
        )
    if ns:
        # /clock is absolute in ROS (rclpy's time source subscribes /clock): a namespaced graph on
        # simulated time gets its own, so two lock-step robots on one domain do not share a clock
        for s in specs:
            s.remappings.setdefault('/clock', f'/{ns}/clock')
    b = Bringup(robot=data['robot'], urdf=urdf, loops=loops, rviz=rviz, nodes=specs, source=path, timing=timing)
    return b if hardware == 'sim' else _on_hardware(b, hardware, path)


def _on_hardware(b: Bringup, hardware: str, path: str) -> Bringup:
    """``b`` with sim_node replaced by closure_node + controller_manager and its spawners."""
    for s in b.nodes:
        if s.executable in SIM_ONLY:
            raise BringupError(
                path,
                f'nodes.{s.name}',
                f"hardware '{hardware}' is not supported for {s.executable}: it needs {SIM_ONLY[s.executable]}",
            )
    controller = controller_name(b)  # the same name the controllers YAML was written with
    stem = os.path.basename(path)[:-5] if path.endswith('.yaml') else b.robot
    share = share_dir()
    ctl_yaml = os.path.join(share, 'config', 'ros2_control', f'{stem}_controllers.yaml')
    xacro = os.path.join(share, 'urdf', f'{stem}.urdf.xacro')
    for f, what in ((ctl_yaml, 'controllers YAML'), (xacro, 'URDF xacro with the ros2_control block')):
        if not os.path.isfile(f):
            raise BringupError(
                path,
                'hardware',
                f"hardware '{hardware}' needs the {what} {f} "
                f'(python -m robot_dynamics.ros.ros2_control <root> writes it)',
            )
    ns = b.nodes[0].namespace if b.nodes else ''
    closure = NodeSpec(
        'closure_node',
        'closure_node',
        {'robot_description': b.urdf, 'loops': b.loops, 'use_sim_time': False},
        namespace=ns,
        nice=REALTIME_NICE,
    )
    nodes = [closure] + [s for s in b.nodes if s.executable != 'sim_node']
    cm = f'/{ns}/controller_manager' if ns else '/controller_manager'
    procs = [
        RosProcess(
            'controller_manager',
            'ros2_control_node',
            'controller_manager',
            parameters=[ctl_yaml],
            # Jazzy+: the URDF comes from robot_state_publisher's topic; the
            # broadcaster's sensed joints go to closure_node
            remappings={'~/robot_description': 'robot_description', 'joint_states': 'measured_joint_states'},
            namespace=ns,
        )
    ]
    procs += [
        RosProcess(
            'controller_manager', 'spawner', f'spawner_{c}', arguments=[c, '--controller-manager', cm], namespace=ns
        )
        for c in ('joint_state_broadcaster', controller)
    ]
    return Bringup(
        robot=b.robot,
        urdf=b.urdf,
        loops=b.loops,
        rviz=b.rviz,
        nodes=nodes,
        source=b.source,
        timing=b.timing,
        hardware=hardware,
        ros_processes=procs,
        xacro=xacro,
    )


def robot_description_xml(b: Bringup, plugin: str = '') -> str:
    """The ``robot_description`` text for robot_state_publisher (and controller_manager): the
    URDF with hardware 'sim'; with 'mock' / 'ros2_control' the xacro with the ros2_control block
    (``hardware:=mock`` or ``plugin:=<plugin>``, which 'ros2_control' requires), expanded with
    the ``xacro`` package (``$(find robot_dynamics)`` = this package's share directory); links
    without a visual get stick figures (:mod:`robot_dynamics.parsers.visuals`)."""
    from robot_dynamics.parsers.visuals import with_stick_visuals  # RViz draws the links that have no visual

    if b.hardware == 'sim':
        with open(b.urdf, encoding='utf-8') as fh:
            return with_stick_visuals(fh.read())
    if b.hardware == 'ros2_control' and not plugin:
        raise BringupError(
            b.source,
            'hardware_plugin',
            "hardware 'ros2_control' needs your hardware plugin: hardware_plugin:=<package>/<Class>",
        )
    import xacro

    with open(b.xacro, encoding='utf-8') as fh:  # $(find robot_dynamics): this package's share
        text = fh.read().replace('$(find robot_dynamics)', share_dir())
    doc = xacro.parse(text, b.xacro)
    xacro.process_doc(doc, mappings={'hardware': b.hardware, 'plugin': plugin or "''"})
    return with_stick_visuals(doc.toxml())


def launch_flag(value: str):
    """'true' / 'false' / 'auto' (None) of a launch argument (``use_sim_time``)."""
    return None if value == 'auto' else value == 'true'


def launch_description(robot: str, rviz_default: str = 'false'):
    """ROS 2 ``LaunchDescription`` for a robot, built from its bringup config.

    Used by ``launch/<robot>.launch.py`` (needs the ``launch`` and ``launch_ros`` packages of a
    ROS 2 installation). Arguments (each with ``choices`` where it has a fixed set, all checked
    before any process starts): ``hardware`` (sim | mock | ros2_control, default sim; see
    :func:`load_bringup`), ``hardware_plugin`` (the plugin of hardware:=ros2_control),
    ``timing`` (realtime | lockstep, default the config's), ``backend`` (rigid | mujoco, default
    the config's: what integrates the multibody in sim_node), ``use_sim_time`` (auto | true |
    false, default auto: the timing's), ``namespace`` (default the config's), ``rviz`` (true |
    false: rviz2 with ``config/rviz/<robot>.rviz``), ``robot_state_publisher`` (true | false,
    default true). Starts the config's nodes (with hardware mock / ros2_control: closure_node
    instead of sim_node, plus controller_manager and the spawners), ``robot_state_publisher``
    and optionally rviz2; the nodes are built when the arguments are known (OpaqueFunction),
    from the same :func:`load_bringup` as ``robot-dynamics launch``. Every package outside this
    one that would start is checked first (:func:`check_ros_packages`): a missing one stops the
    launch before any process starts.
    """
    from launch import LaunchDescription
    from launch.actions import DeclareLaunchArgument, OpaqueFunction
    from launch.substitutions import LaunchConfiguration

    from robot_dynamics.plants.registry import BACKENDS

    b = load_bringup(robot)

    class RobotNodes(OpaqueFunction):
        """The OpaqueFunction that builds the nodes, named after what it starts (``ros2 launch -p``
        prints an action as its ``str``)."""

        def __repr__(self):
            return launch_summary(b)

        __str__ = __repr__

    def nodes(context, *args, **kwargs):
        # the launch's environment (os.environ plus any SetEnvironmentVariable before this)
        environ = getattr(context, 'environment', None)
        arg = lambda k: LaunchConfiguration(k).perform(context)  # noqa: E731
        return node_actions(
            robot,
            arg('timing'),
            arg('rviz') == 'true',
            environ=environ if environ is not None else os.environ,
            namespace=arg('namespace'),
            hardware=arg('hardware'),
            plugin=arg('hardware_plugin'),
            backend=arg('backend'),
            use_sim_time=launch_flag(arg('use_sim_time')),
            robot_state_publisher=arg('robot_state_publisher') == 'true',
        )

    return LaunchDescription(
        [
            DeclareLaunchArgument(
                'hardware',
                default_value='sim',
                choices=list(HARDWARE),
                description='sim: sim_node is the plant; mock: ros2_control mock '
                'hardware; ros2_control: your plugin (hardware_plugin)',
            ),
            DeclareLaunchArgument(
                'hardware_plugin',
                default_value='',
                description='hardware plugin of hardware:=ros2_control (<package>/<Class>)',
            ),
            DeclareLaunchArgument(
                'rviz',
                default_value=rviz_default,
                choices=['true', 'false'],
                description='start rviz2 with config/rviz/<robot>.rviz',
            ),
            DeclareLaunchArgument(
                'robot_state_publisher',
                default_value='true',
                choices=['true', 'false'],
                description='start robot_state_publisher (it then publishes '
                'robot_description); false: sim_node publishes it '
                '(hardware:=sim only)',
            ),
            DeclareLaunchArgument(
                'timing',
                default_value=b.timing,
                choices=list(TIMINGS),
                description='realtime (wall clock) or lockstep (simulated time, deterministic; hardware:=sim only)',
            ),
            DeclareLaunchArgument(
                'backend',
                default_value=next(
                    (str(n.parameters.get('backend', 'rigid')) for n in b.nodes if n.executable == 'sim_node'), 'rigid'
                ),
                choices=list(BACKENDS),
                description="sim_node's multibody integrator: rigid (the package's closed-chain "
                'integrator) or mujoco (hardware:=sim only)',
            ),
            DeclareLaunchArgument(
                'use_sim_time',
                default_value='auto',
                choices=['auto', 'true', 'false'],
                description="auto: the timing's (lockstep: true); true: every node on "
                "sim_node's /clock, also in real time",
            ),
            DeclareLaunchArgument(
                'namespace',
                default_value=b.nodes[0].namespace if b.nodes else '',
                description='ROS namespace of every node (topics are relative: two '
                'robots in two namespaces share a domain)',
            ),
            RobotNodes(function=nodes),
        ]
    )


def launch_summary(b: Bringup) -> str:
    """One line: what :func:`launch_description` of ``b`` starts, and under which arguments."""
    ours = ', '.join(f'{s.name} (robot_dynamics/{s.executable})' for s in b.nodes)
    return (
        f'robot_dynamics {b.robot} from {b.source}, built from the arguments: {ours}; '
        'robot_state_publisher if robot_state_publisher:=true (default); rviz2 if rviz:=true; '
        'hardware:=mock|ros2_control: closure_node instead of sim_node, plus controller_manager, '
        'spawner_joint_state_broadcaster and the controller spawner'
    )


def ros_package_installed(package: str) -> bool:
    """True when the ament index (``AMENT_PREFIX_PATH``) has ``package``."""
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_prefix
    except ImportError:  # no ament index at all: nothing is installed
        return False
    try:
        get_package_prefix(package)
    except (PackageNotFoundError, LookupError, ValueError):
        return False
    return True


def check_ros_packages(b: Bringup, robot_state_publisher: bool, rviz: bool) -> None:
    """Raise :class:`BringupError` (one line: the package and the launch argument that leaves it
    out) when a package outside this one that the launch would start is not installed, so that
    nothing starts: robot_state_publisher (``robot_state_publisher:=false``), controller_manager
    with hardware mock / ros2_control (``hardware:=sim``), rviz2 (``rviz:=false``)."""
    if b.ros_processes and not robot_state_publisher:
        raise BringupError(
            b.source,
            'robot_state_publisher',
            f'hardware:={b.hardware} needs robot_state_publisher (controller_manager reads '
            'robot_description from it): robot_state_publisher:=true',
        )
    wanted = []
    if robot_state_publisher:
        wanted.append(('robot_state_publisher', 'robot_state_publisher:=false'))
    if b.ros_processes:
        wanted.append(('controller_manager', 'hardware:=sim'))
    if rviz and b.rviz:
        wanted.append(('rviz2', 'rviz:=false'))
    for pkg, avoid in wanted:
        if not ros_package_installed(pkg):
            raise BringupError(
                b.source,
                pkg,
                f"package '{pkg}' is not installed (not on "
                f'AMENT_PREFIX_PATH): install ros-<distro>-{pkg.replace("_", "-")} or '
                f'launch with {avoid}; nothing was started',
            )


def node_actions(
    robot: str,
    timing: str,
    rviz: bool,
    environ=None,
    namespace=None,
    hardware: str = 'sim',
    plugin: str = '',
    use_sim_time=None,
    robot_state_publisher: bool = True,
    backend: str | None = None,
):
    """launch_ros ``Node`` actions of a robot's bringup (its nodes, controller_manager and
    spawners with a ros2_control ``hardware``, robot_state_publisher unless
    ``robot_state_publisher`` is false, rviz2).

    ``environ``: the environment the launch runs in (default ``os.environ``; the launch
    context's environment in :func:`launch_description`): every node gets
    :func:`discovery_env` of it (``additional_env``: by default the loopback profile).
    Every argument is checked (:class:`BringupError`), and every package outside this one that
    would start (:func:`check_ros_packages`), before an action is made. ``/robot_description``
    has one publisher: robot_state_publisher, or sim_node without it. Each process is labelled
    with its node's name in the launch log (``exec_name``). ``backend``: sim_node's multibody
    integrator (:func:`load_bringup`; '' or None: the config's)."""
    from launch_ros.actions import Node

    b = load_bringup(
        robot,
        timing=timing or None,
        namespace=namespace,
        hardware=hardware,
        use_sim_time=use_sim_time,
        backend=backend or None,
    )
    check_ros_packages(b, robot_state_publisher, rviz)
    ns = b.nodes[0].namespace if b.nodes else ''
    urdf_xml = robot_description_xml(b, plugin)
    # a graph on simulated time (sim_node publishes /clock: lock-step, or a real-time graph on
    # the plant clock): so do rsp and rviz2
    sim_time = any(bool(s.parameters.get('use_sim_time')) for s in b.nodes)
    # DDS on loopback unless the user's environment widens it (discovery_env)
    dds = {'additional_env': env} if (env := discovery_env(environ)) else {}

    def params(s):
        if s.executable == 'sim_node' and robot_state_publisher:
            return dict(s.parameters, publish_robot_description=False)
        return dict(s.parameters)

    def node(package, executable, namespace, **kw):
        """A launch_ros Node on loopback DDS (``dds``), its namespace '' meaning none."""
        return Node(package=package, executable=executable, namespace=namespace or None, **kw, **dds)

    actions = [
        node(
            'robot_dynamics',
            s.executable,
            s.namespace,
            name=s.name,
            exec_name=s.name,
            parameters=[params(s)],
            remappings=list(s.remappings.items()),
            output='screen',
            **({'prefix': ' '.join(process_prefix(s))} if process_prefix(s) else {}),
        )
        for s in b.nodes
    ]
    # a namespaced robot keeps its clock (load_bringup) and its TF tree to itself: two robots
    # with the same link names would otherwise mix on /tf (the usual multi-robot remaps)
    clock = [(t, f'/{ns}{t}') for t in ('/clock', '/tf', '/tf_static')] if ns else []
    sim_clock = {'parameters': [{'use_sim_time': sim_time}], 'remappings': clock}
    if robot_state_publisher:
        rsp = {'robot_description': urdf_xml, 'use_sim_time': sim_time}
        actions.append(
            node(
                'robot_state_publisher',
                'robot_state_publisher',
                ns,
                name='robot_state_publisher',
                **dict(sim_clock, parameters=[rsp]),
                output='screen',
            )
        )
    for p in b.ros_processes:
        actions.append(
            node(
                p.package,
                p.executable,
                p.namespace,
                exec_name=p.name,
                **({} if p.arguments else {'name': p.name}),
                parameters=list(p.parameters),
                arguments=list(p.arguments),
                remappings=list(p.remappings.items()),
                output='screen',
            )
        )
    if b.rviz and rviz:
        actions.append(node('rviz2', 'rviz2', ns, name='rviz2', arguments=['-d', b.rviz], **sim_clock))
    return actions


def command_nodes(bringup):
    """(the controller node, sim_node) specs of a bringup (None where absent): the controller is
    the first node but sim_node with a ``controller`` parameter."""
    ctl = next((n for n in bringup.nodes if n.executable != 'sim_node' and 'controller' in n.parameters), None)
    sim = next((n for n in bringup.nodes if n.executable == 'sim_node'), None)
    return ctl, sim


def controller_name(bringup):
    """Name of the forward command controller our controller node drives (its ``controller``
    parameter, else sim_node's, else ``effort_controller``): commands on ``/<name>/commands``."""
    ctl, sim = command_nodes(bringup)
    return str((ctl or sim).parameters.get('controller', 'effort_controller')) if (ctl or sim) else 'effort_controller'
