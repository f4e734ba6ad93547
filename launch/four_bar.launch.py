"""ROS 2 launch file for four_bar: the nodes of config/four_bar.yaml (the single source of truth,
also used by `robot-dynamics launch four_bar`), robot_state_publisher and, with rviz:=true, rviz2.

    ros2 launch robot_dynamics four_bar.launch.py rviz:=true
"""

from robot_dynamics.ros.bringup import launch_description


def generate_launch_description():
    return launch_description('four_bar')
