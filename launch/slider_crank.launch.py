"""ROS 2 launch file for slider_crank: the nodes of config/slider_crank.yaml (the single source of truth,
also used by `robot-dynamics launch slider_crank`), robot_state_publisher and, with rviz:=true, rviz2.

    ros2 launch robot_dynamics slider_crank.launch.py rviz:=true
"""

from robot_dynamics.ros.bringup import launch_description


def generate_launch_description():
    return launch_description('slider_crank')
