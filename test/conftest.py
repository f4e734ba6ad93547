"""Test environment: DDS on loopback only (discovery and every UDP socket: the
package's Fast DDS loopback profile, whatever the developer's shell says), an isolated random
domain, ROS logs in a temporary directory (children inherit all of it)."""

import os
import random
import sys
import tempfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# before anything imports rclpy (Fast DDS reads the profile once per process): the shell's
# discovery set-up is dropped, discovery_env of the rest applies (the source tree's profile)
sys.path.insert(0, ROOT)
from robot_dynamics.ros.bringup import (
    DISCOVERY_RANGE_VAR,
    FASTDDS_PROFILES_VAR,  # noqa: E402
    USER_DISCOVERY_VARS,
    discovery_env,
)

del sys.path[0]
for _var in (DISCOVERY_RANGE_VAR, FASTDDS_PROFILES_VAR, *USER_DISCOVERY_VARS):
    os.environ.pop(_var, None)
os.environ.update(discovery_env())
os.environ.setdefault('ROS_DOMAIN_ID', str(random.SystemRandom().randint(1, 100)))
if os.environ.get('PYTEST_XDIST_WORKER', '').startswith('gw'):
    # a pytest-xdist worker (scripts/test.sh): its own domain, so that two lock-step graphs of the
    # same robot on two workers never see each other (0..232 are valid domain ids)
    _base = int(os.environ['ROS_DOMAIN_ID'])
    os.environ['ROS_DOMAIN_ID'] = str((_base + 101 + int(os.environ['PYTEST_XDIST_WORKER'][2:])) % 233)
os.environ.setdefault('ROS_LOG_DIR', tempfile.mkdtemp(prefix='robot_dynamics_ros_logs_'))
if os.environ.get('VIRTUAL_ENV') or sys.prefix != sys.base_prefix:
    os.environ.setdefault('AMENT_PREFIX_PATH', os.environ.get('VIRTUAL_ENV', sys.prefix))

URDF_DIR = os.path.join(ROOT, 'urdf')
if HERE not in sys.path:
    sys.path.insert(0, HERE)
# node processes started by the tests import the source tree under test, not an installed copy
os.environ['PYTHONPATH'] = os.pathsep.join(
    [ROOT] + [p for p in os.environ.get('PYTHONPATH', '').split(os.pathsep) if p and p != ROOT]
)


def pytest_report_header(config):
    return (
        f'ROS_DOMAIN_ID={os.environ["ROS_DOMAIN_ID"]} '
        f'{DISCOVERY_RANGE_VAR}={os.environ[DISCOVERY_RANGE_VAR]} '
        f'{FASTDDS_PROFILES_VAR}={os.environ.get(FASTDDS_PROFILES_VAR, "<unset>")} '
        f'ROS_LOG_DIR={os.environ["ROS_LOG_DIR"]}'
    )


# Tests that start processes, use ROS or measure wall time run one at a time (scripts/test.sh:
# ``-m serial`` alone, after the others ran on both cores with pytest-xdist). Lock-step graphs
# (simulated time: deterministic whatever the load; each worker has its own ROS domain) may
# run next to other tests; real-time graphs, launcher/executor signal deadlines and start-up
# timings may not.
SERIAL_MODULES = (
    'test_ros_',
    'test_launcher',
    'test_executor',
    'test_startup',
    'test_mcap_bag',
    'test_environment',
)
LOCKSTEP_GRAPH_MODULES = {
    'test_ros_gough_stewart',
    'test_ros_hydraulic',
    'test_ros_hydraulic_load',
    'test_ros_irsbot2',
    'test_ros_irsbot2_t1',
    'test_ros_sea',
    'test_ros_ip',
}
# (test/tools/test_cli.py runs the command line in-process: no ROS graph, no wall-clock bound;
# its warm-up test spawns worker processes that load the cached kernels, CPU-bound like the
# core tests)
# (the three lock-step graphs of the URDF-only robots, test_ros_tripteron, _embedding_robots and
# _cylinder_elbow, stay serial: next to the other phase-1 graphs on a fresh clone, test_ros_ip
# timed out waiting 60 s for its graph once)


def pytest_collection_modifyitems(config, items):
    for item in items:
        name = getattr(item.module, '__name__', '')
        if name in LOCKSTEP_GRAPH_MODULES:
            continue
        if name.startswith(SERIAL_MODULES) or item.get_closest_marker('ros') is not None:
            item.add_marker(pytest.mark.serial)
