"""The tests keep DDS on loopback and isolated."""

import os

from robot_dynamics.ros.bringup import loopback_profile


def test_ros_environment_is_loopback_only():
    if (os.environ.get('RMW_IMPLEMENTATION') or 'rmw_fastrtps_cpp').startswith('rmw_fastrtps'):
        # the package's profile: discovery and every UDP socket on 127.0.0.1 (test_ros_loopback)
        assert os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] == 'SYSTEM_DEFAULT'
        assert os.environ['FASTDDS_DEFAULT_PROFILES_FILE'] == loopback_profile() != ''
    else:
        assert os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] == 'LOCALHOST'
    assert not os.environ.get('ROS_STATIC_PEERS')
    assert 1 <= int(os.environ['ROS_DOMAIN_ID']) <= 100
    assert os.path.isdir(os.environ['ROS_LOG_DIR']) or not os.path.exists(os.environ['ROS_LOG_DIR'])
