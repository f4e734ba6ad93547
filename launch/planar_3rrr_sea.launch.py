"""ROS 2 launch file for planar_3rrr_sea: the nodes of config/planar_3rrr_sea.yaml (the single source of truth,
also used by `robot-dynamics launch planar_3rrr_sea`), robot_state_publisher and, with rviz:=true, rviz2.

    ros2 launch robot_dynamics planar_3rrr_sea.launch.py rviz:=true
"""

from robot_dynamics.ros.bringup import launch_description


def generate_launch_description():
    return launch_description('planar_3rrr_sea')
