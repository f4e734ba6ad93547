"""ROS 2 launch file for gough_stewart: the nodes of config/gough_stewart.yaml (the single source of truth,
also used by `robot-dynamics launch gough_stewart`), robot_state_publisher and, with rviz:=true, rviz2.

    ros2 launch robot_dynamics gough_stewart.launch.py rviz:=true
"""

from robot_dynamics.ros.bringup import launch_description


def generate_launch_description():
    return launch_description('gough_stewart')
