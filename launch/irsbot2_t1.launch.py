"""ROS 2 launch file for irsbot2 on T1: the nodes of config/irsbot2_t1.yaml (the single source of truth,
also used by `robot-dynamics launch irsbot2_t1`), robot_state_publisher and, with rviz:=true, rviz2.

    ros2 launch robot_dynamics irsbot2_t1.launch.py rviz:=true
"""

from robot_dynamics.ros.bringup import launch_description


def generate_launch_description():
    return launch_description('irsbot2_t1')
