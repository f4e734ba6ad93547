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


def test_sim_and_kinematics_take_a_floating_base(ctx):
    # the one-DOF joints go on /joint_states, the free-flyer and the ball joints on
    # multi_dof_joint_states and /tf (robot_dynamics.ros.wire)
    node = rclpy.create_node(
        'sim_node',
        context=ctx,
        parameter_overrides=[Parameter('robot_description', value=os.path.join(DATA, 'biped_rods.urdf'))],
    )
    m = load_model_param(node, multi_dof=True)
    assert [j.name for j in m.multi_dof][0] == 'root_joint' and m.nq > m.nv
    node.destroy_node()


def test_the_other_nodes_refuse_a_floating_base_naming_the_joint(ctx):
    # controllers, ik_node, trajectory_node and closure_node work on one-DOF joints: they refuse
    # at start, naming the joint and the nodes that take it
    node = _node(ctx, robot_description=os.path.join(DATA, 'biped_rods.urdf'))
    with pytest.raises(
        rd.ModelError, match=r"joint 'root_joint'.*model_probe \(sim_node, kinematics_node take multi-DOF.*free_flyer"
    ):
        load_model_param(node)
    node.destroy_node()
