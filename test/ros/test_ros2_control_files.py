"""The shipped ros2_control files (urdf/<robot>.ros2_control.xacro, urdf/<robot>.urdf.xacro,
config/ros2_control/<robot>_controllers.yaml) are what the generator makes of the current
model and config, expand with xacro into a URDF our loader reads as the same robot, and give
controller_manager exactly the joints and interface our controller node commands."""

import suite_paths
import os

import pytest
import yaml
from lxml import etree

import robot_dynamics as rd
from robot_dynamics.ros import ros2_control as R
from robot_dynamics.ros.bringup import load_bringup

ROOT = suite_paths.ROOT
CONFIGS = R.robots_with_config(ROOT)


def test_every_config_has_its_files():
    assert len(CONFIGS) == 9
    for r in CONFIGS:
        for rel in R.files(os.path.join(ROOT, 'config', f'{r}.yaml')):
            assert os.path.isfile(os.path.join(ROOT, rel)), rel


@pytest.mark.parametrize('robot', CONFIGS)
def test_files_are_current_and_consistent(robot, tmp_path):
    import xacro

    gen = R.files(os.path.join(ROOT, 'config', f'{robot}.yaml'))
    for rel, text in gen.items():
        with open(os.path.join(ROOT, rel), encoding='utf-8') as fh:
            assert fh.read() == text, f'{rel} is stale: run python -m robot_dynamics.ros.ros2_control'
    b = load_bringup(robot)
    m = rd.load_model(b.urdf, loops=b.loops)
    name, joints, iface, sensed, rate = R.interfaces(b, m)
    # expand as ros2 launch would ($(find robot_dynamics) = this checkout)
    for rel, text in gen.items():
        if rel.endswith('.xacro'):
            (tmp_path / os.path.basename(rel)).write_text(text.replace('$(find robot_dynamics)/urdf', str(tmp_path)))
    (tmp_path / os.path.basename(b.urdf)).write_text(open(b.urdf, encoding='utf-8').read())
    for hw in ('mock', 'ros2_control'):
        xml = xacro.process_file(
            str(tmp_path / f'{robot}.urdf.xacro'), mappings={'hardware': hw, 'plugin': 'my_hw/MySystem'}
        ).toxml()
        m2 = rd.load_model(xml, loops=b.loops)  # the same robot for the dynamics
        assert m2.joint_names == m.joint_names and (m2.mass == m.mass).all()
        rc = etree.fromstring(xml.encode()).find('ros2_control')
        assert rc is not None and rc.get('type') == 'system'
        plugin = rc.find('hardware/plugin').text
        assert plugin == ('mock_components/GenericSystem' if hw == 'mock' else 'my_hw/MySystem')
        cmd = [j.get('name') for j in rc.findall('joint') if j.find(f'command_interface[@name="{iface}"]') is not None]
        st = [
            j.get('name')
            for j in rc.findall('joint')
            if {s.get('name') for s in j.findall('state_interface')} >= {'position', 'velocity'}
        ]
        assert cmd == [j for j in m.joint_names if j in joints] and set(st) == set(sensed)
        # each command interface carries the bound sim_node enforces (URDF effort limit, or the
        # valve's max_input), with the joint limiter enabled
        lim = R.command_limits(b, m)
        for j in rc.findall('joint'):
            ci = j.find(f'command_interface[@name="{iface}"]')
            if ci is None:
                continue
            bound = lim[m.joint_index(j.get('name'))]
            params = {p.get('name'): float(p.text) for p in ci.findall('param')}
            assert params == {'min': -bound, 'max': bound} and bound > 0, (j.get('name'), params)
            assert ci.find('limits').get('enable') == 'true'
            if iface == 'effort':
                assert bound == m.effort_limit[m.joint_index(j.get('name'))]
        assert set(sensed) >= set(m.independent) or m.actuators  # closure_node can complete
    ctl = yaml.safe_load(open(os.path.join(ROOT, 'config', 'ros2_control', f'{robot}_controllers.yaml')))
    cm = ctl['controller_manager']['ros__parameters']
    assert cm[name]['type'] == 'forward_command_controller/ForwardCommandController'
    assert cm['joint_state_broadcaster']['type'] == 'joint_state_broadcaster/JointStateBroadcaster'
    assert ctl[name]['ros__parameters'] == {'joints': joints, 'interface_name': iface}
    assert cm['update_rate'] == int(round(rate))
    assert cm['enforce_command_limits'] is True
