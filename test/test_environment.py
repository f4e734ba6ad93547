"""The test session keeps DDS discovery on loopback and isolated."""
import os


def test_ros_environment_is_loopback_only():
    assert os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] == 'LOCALHOST'
    assert 1 <= int(os.environ['ROS_DOMAIN_ID']) <= 100
    assert os.path.isdir(os.environ['ROS_LOG_DIR']) or not os.path.exists(os.environ['ROS_LOG_DIR'])
