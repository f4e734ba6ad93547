"""ROS 2 launch file for hydraulic_boom: the nodes of config/hydraulic_boom.yaml (the single
source of truth, also used by `robot-dynamics launch hydraulic_boom`), robot_state_publisher
and, with rviz:=true, rviz2.

    ros2 launch robot_dynamics hydraulic_boom.launch.py rviz:=true
"""

from robot_dynamics.ros.bringup import launch_description


def generate_launch_description():
    return launch_description('hydraulic_boom')
