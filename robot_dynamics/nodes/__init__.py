"""Thin rclpy nodes over the ROS-free core (one Node subclass + main() per module)."""
