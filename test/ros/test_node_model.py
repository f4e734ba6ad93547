"""The model a node loads from its robot_description parameter (robot_dynamics.ros._common)."""

import os

import pytest
import rclpy
from rclpy.context import Context
from rclpy.parameter import Parameter

import robot_dynamics as rd
from robot_dynamics.ros._common import load_model_param

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'data')


def _node(ctx, **params):
    return rclpy.create_node(
        'model_probe', context=ctx, parameter_overrides=[Parameter(k, value=v) for k, v in params.items()]
    )


@pytest.fixture
def ctx():
    c = Context()
    rclpy.init(context=c)
    yield c
    rclpy.shutdown(context=c)


def test_a_node_loads_its_model(ctx):
    node = _node(ctx, robot_description=rd.data_path('urdf/four_bar.urdf'))
    assert load_model_param(node).nq == 3
    node.destroy_node()


def test_a_floating_base_model_is_refused_naming_the_joint(ctx):
    # /joint_states holds one-DOF joints: the nodes refuse a free-flyer and ball joints clearly
    node = _node(ctx, robot_description=os.path.join(DATA, 'biped_rods.urdf'))
    with pytest.raises(rd.ModelError, match=r"joint 'root_joint'.*the ROS nodes.*free_flyer"):
        load_model_param(node)
    node.destroy_node()
