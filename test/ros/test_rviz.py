"""RViz: every robot is drawn and every display has a publisher.

* The shipped ``config/rviz/*.rviz`` equal the generator's output (robot_dynamics.ros.rviz) and
  parse as YAML; each config names its own file.
* Every display topic is relative (rviz2 in a namespace sees its robot) and published by a node
  the robot's config starts, as that node declares it (the publisher names in the node sources:
  ``~/markers``, ``~/constraint_wrench/<loop>``, ``robot_description``), for a law that
  publishes it.
* Every robot's published ``robot_description`` draws something for each link that moves:
  links without visuals get stick figures (a sphere at the joint, a cylinder to each child
  joint and to the centre of mass), whose cylinders span exactly the joint-origin vectors, and
  the model read back is the same (joints, masses).
"""

import suite_paths
import os
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import transforms3d.euler as euler
import yaml

import robot_dynamics as rd
from robot_dynamics.ros.bringup import load_bringup, robot_description_xml
from robot_dynamics.ros.rviz import files, rviz_topics
from robot_dynamics.parsers.visuals import stick_rpy, with_stick_visuals

ROOT = suite_paths.ROOT
ROBOTS = sorted(f[:-5] for f in os.listdir(os.path.join(ROOT, 'config')) if f.endswith('.yaml'))
NODES = os.path.join(ROOT, 'robot_dynamics', 'ros')


def test_shipped_rviz_configs_are_current():
    gen = files(ROOT)
    assert len(gen) == len(ROBOTS), sorted(gen)
    for rel, text in gen.items():
        with open(os.path.join(ROOT, rel)) as fh:
            assert fh.read() == text, f'{rel} is stale: python -m robot_dynamics.ros.rviz .'
        yaml.safe_load(text)


@pytest.mark.parametrize('robot', ROBOTS)
def test_every_display_topic_is_published_by_the_graph(robot):
    b = load_bringup(robot)
    m = rd.load_model(b.urdf, loops=b.loops or None)
    with open(b.rviz) as fh:
        cfg = yaml.safe_load(fh)
    disp = cfg['Visualization Manager']['Displays']
    topics = [d.get('Topic', d.get('Description Topic', {})).get('Value') for d in disp]
    topics = [t for t in topics if t]
    assert topics == [t for _, _, t, _ in rviz_topics(b, m)]
    assert cfg['Visualization Manager']['Global Options']['Fixed Frame'] == m.root_link
    nodes = {s.name: s for s in b.nodes}
    for t in topics:
        assert not t.startswith('/'), t
        if t == 'robot_description':
            assert 'sim_node' in nodes  # (robot_state_publisher too, in the launch files)
            src = open(os.path.join(NODES, 'sim_node.py')).read()
            assert "create_publisher(String, 'robot_description'" in src
            continue
        node, _, rest = t.partition('/')
        s = nodes[node]
        src = open(os.path.join(NODES, f'{s.executable}.py')).read()
        if rest == 'markers':
            assert "'~/markers'" in src
        else:
            assert rest.startswith('constraint_wrench/') and rest.split('/')[1] in [lp.name for lp in m.loops]
            assert "f'~/constraint_wrench/{lp.name}'" in src
            assert s.parameters.get('law') in ('pidc', 'computed_torque')
    # the kinematics and wrench displays are there whenever the graph publishes them
    assert any(t.endswith('/markers') for t in topics) == any(s.executable == 'kinematics_node' for s in b.nodes)


@pytest.mark.parametrize('robot', ROBOTS)
def test_every_moving_link_is_drawn(robot):
    b = load_bringup(robot)
    xml = robot_description_xml(b)
    root = ET.fromstring(xml)
    m0 = rd.load_model(b.urdf)
    m1 = rd.load_model(xml)
    assert m1.joint_names == m0.joint_names and np.allclose(m1.mass, m0.mass)
    moving = {j.find('child').get('link') for j in root.findall('joint') if j.get('type') != 'fixed'}
    for ln in root.findall('link'):
        if ln.get('name') in moving:
            assert ln.find('visual') is not None, f'{robot}: link {ln.get("name")} has no visual'


def test_stick_figures_span_the_joint_origins():
    text = open(os.path.join(ROOT, 'urdf', 'slider_crank.urdf')).read()
    assert '<visual' not in text
    root = ET.fromstring(with_stick_visuals(text))
    rod = next(ln for ln in root.findall('link') if ln.get('name') == 'crank')
    child = next(j for j in root.findall('joint') if j.find('parent').get('link') == 'crank')
    v = np.array([float(x) for x in child.find('origin').get('xyz').split()])
    cyl = [vis for vis in rod.findall('visual') if vis.find('geometry/cylinder') is not None]
    assert len(cyl) == 1
    o = cyl[0].find('origin')
    mid = np.array([float(x) for x in o.get('xyz').split()])
    R = euler.euler2mat(*[float(x) for x in o.get('rpy').split()], 'sxyz')
    L = float(cyl[0].find('geometry/cylinder').get('length'))
    np.testing.assert_allclose(mid - R[:, 2] * L / 2, 0.0, atol=1e-9)  # from the joint ...
    np.testing.assert_allclose(mid + R[:, 2] * L / 2, v, atol=1e-9)  # ... to the child joint
    for d in ([1, 0, 0], [0, 0, -1], [0.3, -0.2, 0.5], [0, 0, 1], [-1e-3, 0, -1]):
        R = euler.euler2mat(*stick_rpy(d), 'sxyz')
        np.testing.assert_allclose(R[:, 2], np.array(d) / np.linalg.norm(d), atol=1e-12)
    full = open(os.path.join(ROOT, 'urdf', 'hydraulic_boom.urdf')).read()
    if all(ln.find('visual') is not None for ln in ET.fromstring(full).findall('link')):
        assert with_stick_visuals(full) == full  # nothing to add: unchanged
