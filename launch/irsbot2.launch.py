"""ROS 2 launch file for irsbot2: the nodes of config/irsbot2.yaml (the single source of truth,
also used by `robot-dynamics launch irsbot2`), robot_state_publisher and, with rviz:=true, rviz2.

    ros2 launch robot_dynamics irsbot2.launch.py rviz:=true
"""

from robot_dynamics.ros.bringup import launch_description


def generate_launch_description():
    return launch_description('irsbot2')
