"""ROS 2 launch file for series_parallel_3dof: the nodes of config/series_parallel_3dof.yaml (the single source of truth,
also used by `robot-dynamics launch series_parallel_3dof`), robot_state_publisher and, with rviz:=true, rviz2.

    ros2 launch robot_dynamics series_parallel_3dof.launch.py rviz:=true
"""

from robot_dynamics.ros.bringup import launch_description


def generate_launch_description():
    return launch_description('series_parallel_3dof')
