"""URDF visuals: stick figures for links that have none (RViz), and the links' geometry read
for other renderers.

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

:func:`link_geometry` reads every link's ``<visual>`` and ``<collision>`` primitives (box,
cylinder, sphere, mesh with its file resolved) with their placement in the link frame and
colour, for a renderer that draws the robot itself (the MuJoCo scene of
:mod:`robot_dynamics.plants.mujoco_visuals`).
"""

from __future__ import annotations

import math
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np

__all__ = ['with_stick_visuals', 'stick_rpy', 'Geometry', 'link_geometry', 'resolve_mesh']

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


@dataclass
class Geometry:
    """One ``<visual>`` or ``<collision>`` element of a URDF link.

    ``kind``: 'box' | 'cylinder' | 'sphere' | 'mesh'; ``size``: box (x, y, z) full lengths,
    cylinder (radius, length) along z, sphere (radius,), mesh (sx, sy, sz) scale; ``R`` (3, 3),
    ``p`` (3,): placement in the link frame; ``rgba``: the material's colour or None;
    ``filename``: a mesh's file as written, ``path``: where it was found (None if not);
    ``role``: 'visual' | 'collision'.
    """

    link: str
    role: str
    kind: str
    size: tuple
    R: np.ndarray
    p: np.ndarray
    rgba: tuple | None = None
    filename: str | None = None
    path: str | None = None


def resolve_mesh(filename, base_dir=None):
    """Path of a URDF mesh file name: ``file://`` and plain paths (relative to ``base_dir``);
    ``package://PKG/rest`` in ``PKG`` found beside or above ``base_dir``, or in the share
    folders of ``AMENT_PREFIX_PATH`` / ``ROS_PACKAGE_PATH``. None when not found."""
    if not filename:
        return None
    if filename.startswith('file://'):
        filename = filename[len('file://') :]
    if filename.startswith('package://'):
        pkg, _, rest = filename[len('package://') :].partition('/')
        roots = []
        d = os.path.abspath(base_dir) if base_dir else None
        while d:
            roots += [os.path.join(d, pkg)] + ([d] if os.path.basename(d) == pkg else [])
            up = os.path.dirname(d)
            d = up if up != d else None
        for var, sub in (('AMENT_PREFIX_PATH', ('share',)), ('ROS_PACKAGE_PATH', ())):
            for pre in filter(None, os.environ.get(var, '').split(os.pathsep)):
                roots.append(os.path.join(pre, *sub, pkg))
        for r in roots:
            c = os.path.join(r, rest)
            if os.path.isfile(c):
                return c
        return None
    c = filename if os.path.isabs(filename) or not base_dir else os.path.join(base_dir, filename)
    return c if os.path.isfile(c) else None


def _rpy_matrix(rpy):
    from transforms3d.euler import euler2mat

    return euler2mat(*rpy, 'sxyz')


def link_geometry(urdf_xml, base_dir=None):
    """Per link name, the list of its :class:`Geometry` (visuals first, then collisions) read
    from ``urdf_xml``; unknown geometry kinds are left out. Empty for a text that is not a URDF."""
    try:
        root = ET.fromstring(urdf_xml)
    except ET.ParseError:
        return {}
    if root.tag != 'robot':
        return {}
    colors = {}
    for m in root.findall('material'):
        c = m.find('color')
        if m.get('name') and c is not None and c.get('rgba'):
            colors[m.get('name')] = tuple(float(x) for x in c.get('rgba').split())
    out = {}
    for ln in root.findall('link'):
        geoms = []
        for role in ('visual', 'collision'):
            for el in ln.findall(role):
                g = el.find('geometry')
                if g is None or not len(g):
                    continue
                shape = g[0]
                o = el.find('origin')
                R = _rpy_matrix(_vec(o.get('rpy') if o is not None else None))
                p = _vec(o.get('xyz') if o is not None else None)
                rgba = None
                mat = el.find('material')
                if mat is not None:
                    c = mat.find('color')
                    if c is not None and c.get('rgba'):
                        rgba = tuple(float(x) for x in c.get('rgba').split())
                    else:
                        rgba = colors.get(mat.get('name'))
                try:
                    if shape.tag == 'box':
                        size = tuple(float(x) for x in shape.get('size').split())
                    elif shape.tag == 'cylinder':
                        size = (float(shape.get('radius')), float(shape.get('length')))
                    elif shape.tag == 'sphere':
                        size = (float(shape.get('radius')),)
                    elif shape.tag == 'mesh':
                        size = tuple(_vec(shape.get('scale'), (1.0, 1.0, 1.0)))
                    else:
                        continue
                except (TypeError, ValueError):
                    continue  # a malformed size: nothing to draw
                fn = shape.get('filename') if shape.tag == 'mesh' else None
                geoms.append(
                    Geometry(
                        ln.get('name'),
                        role,
                        shape.tag,
                        size,
                        R,
                        p,
                        rgba,
                        fn,
                        resolve_mesh(fn, base_dir) if fn else None,
                    )
                )
        if geoms:
            out[ln.get('name')] = geoms
    return out
