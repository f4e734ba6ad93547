"""Test-session environment: DDS discovery on loopback only, an isolated random domain,
ROS logs in a temporary directory (children inherit all of it)."""
import os
import random
import sys
import tempfile

os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
os.environ.setdefault('ROS_DOMAIN_ID', str(random.SystemRandom().randint(1, 100)))
os.environ.setdefault('ROS_LOG_DIR', tempfile.mkdtemp(prefix='robot_dynamics_ros_logs_'))
if os.environ.get('VIRTUAL_ENV') or sys.prefix != sys.base_prefix:
    os.environ.setdefault('AMENT_PREFIX_PATH', os.environ.get('VIRTUAL_ENV', sys.prefix))

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
URDF_DIR = os.path.join(ROOT, 'urdf')
if HERE not in sys.path:
    sys.path.insert(0, HERE)
# node processes started by the tests import the source tree under test, not an installed copy
os.environ['PYTHONPATH'] = os.pathsep.join(
    [ROOT] + [p for p in os.environ.get('PYTHONPATH', '').split(os.pathsep) if p and p != ROOT])


def pytest_report_header(config):
    return (f"ROS_DOMAIN_ID={os.environ['ROS_DOMAIN_ID']} "
            f"ROS_AUTOMATIC_DISCOVERY_RANGE={os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE']} "
            f"ROS_LOG_DIR={os.environ['ROS_LOG_DIR']}")
