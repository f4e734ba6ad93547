"""Stick-figure visuals for URDF links that have none, so RViz draws every robot.

Many dynamics models (the slider-crank and IRSBot-2 of the papers, a researcher's own URDF)
describe links by their inertia only; RViz's RobotModel then shows nothing. :func:`with_stick_visuals`
adds to every link WITHOUT a ``<visual>``:

* a sphere at the link frame's origin (the joint), radius ``1.5 r``;
* a cylinder of radius ``r`` from that origin to the origin of each child joint (fixed joints,
  i.e. cut frames and tool frames, included), in the link frame;
* for a link without child joints but with mass, a cylinder to its centre of mass.

``r`` = 1 % of the robot's extent (the largest joint-origin distance in the tree, at least
5 mm). Links that have visuals are left as they are; kinematics and inertia are untouched (the
function only adds ``<visual>`` elements). The published ``robot_description`` (sim_node,
robot_state_publisher in the launch files) goes through it; the URDF files stay the model's
source.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import numpy as np

__all__ = ['with_stick_visuals', 'stick_rpy']

MATERIAL = 'robot_dynamics_stick'


def _vec(text, default=(0.0, 0.0, 0.0)):
    if text is None:
        return np.array(default, float)
    v = [float(x) for x in text.split()]
    return np.array(v if len(v) == 3 else default, float)


def stick_rpy(d):
    """URDF ``rpy`` (fixed-axis x-y-z) of a frame whose z axis points along ``d`` (3,)."""
    from transforms3d.axangles import axangle2mat
    from transforms3d.euler import mat2euler

    d = np.asarray(d, float) / np.linalg.norm(d)
    z = np.array([0.0, 0.0, 1.0])
    axis = np.cross(z, d)
    if np.linalg.norm(axis) < 1e-12:
        return (0.0, 0.0, 0.0) if d[2] > 0 else (math.pi, 0.0, 0.0)
    return mat2euler(axangle2mat(axis, math.atan2(np.linalg.norm(axis), d[2])), 'sxyz')


def _visual(geometry, xyz, rpy=(0.0, 0.0, 0.0)):
    v = ET.Element('visual')
    ET.SubElement(v, 'origin', xyz=' '.join(f'{x:.12g}' for x in xyz), rpy=' '.join(f'{x:.12g}' for x in rpy))
    g = ET.SubElement(v, 'geometry')
    g.append(geometry)
    ET.SubElement(v, 'material', name=MATERIAL)
    return v


def with_stick_visuals(urdf_xml: str) -> str:
    """``urdf_xml`` with stick visuals added to the links that have no ``<visual>`` (see the
    module doc); returned unchanged if every link has one (or the text is not a URDF)."""
    try:
        root = ET.fromstring(urdf_xml)
    except ET.ParseError:
        return urdf_xml
    if root.tag != 'robot':
        return urdf_xml
    links = {ln.get('name'): ln for ln in root.findall('link')}
    bare = [n for n, ln in links.items() if ln.find('visual') is None]
    if not bare:
        return urdf_xml
    children = {}
    for j in root.findall('joint'):
        p = j.find('parent')
        o = j.find('origin')
        if p is not None:
            children.setdefault(p.get('link'), []).append(_vec(o.get('xyz') if o is not None else None))
    extent = max([float(np.linalg.norm(v)) for vs in children.values() for v in vs] + [0.0])
    r = max(0.005, 0.01 * extent)
    if all(m.get('name') != MATERIAL for m in root.findall('material')):
        mat = ET.Element('material', name=MATERIAL)
        ET.SubElement(mat, 'color', rgba='0.6 0.6 0.65 1')
        root.insert(0, mat)
    for name in bare:
        ln = links[name]
        targets = [v for v in children.get(name, []) if np.linalg.norm(v) > 1e-6]
        inert = ln.find('inertial')
        mass = (
            float(inert.find('mass').get('value', 0)) if inert is not None and inert.find('mass') is not None else 0.0
        )
        if not children.get(name) and mass > 0:
            o = inert.find('origin')
            com = _vec(o.get('xyz') if o is not None else None)
            if np.linalg.norm(com) > 1e-6:
                targets.append(com)
        if not targets and mass <= 0 and name not in children:
            continue  # a bare frame (world, a cut frame): TF shows it
        k = list(ln).index(inert) + 1 if inert is not None else 0
        new = [_visual(ET.Element('sphere', radius=f'{1.5 * r:.6g}'), (0.0, 0.0, 0.0))]
        for v in targets:
            L = float(np.linalg.norm(v))
            new.append(_visual(ET.Element('cylinder', radius=f'{r:.6g}', length=f'{L:.12g}'), v / 2.0, stick_rpy(v)))
        for i, e in enumerate(new):
            ln.insert(k + i, e)
    return ET.tostring(root, encoding='unicode')
