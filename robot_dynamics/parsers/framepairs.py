"""URDF + frame-pair YAML (the format of Gepetto's toolbox-parallel-robots) -> ImportResult.

The toolbox (V. Batto et al.; example robots in Gepetto/example-parallel-robots) describes a
closed chain as a URDF spanning tree plus a YAML file::

    closed_loop: [[closedloop1_A, closedloop1_B], ...]   # pairs of frames that coincide
    type: [6d, 3d, ...]                                   # per pair: 6D (weld) or 3D (point)
    name_mot: [mot1, mot2]                                # actuated joints
    joint_name: [spherical_free_hip, free_knee]           # optional: joints to redefine
    joint_type: [SPHERICAL, UJOINT_YZ]                    #   SPHERICAL, FIXED, UJOINT_<ab>

A frame is a URDF link, or a joint (Pinocchio's joint frame: the joint's child link frame).
:func:`import_framepairs` maps the pairs to loops of the sidecar (3D -> ``spherical``, 6D ->
``weld``; a pair without a type is 6D, as the toolbox's loader does), ``name_mot`` to
``actuated``, SPHERICAL joints to ``joint_types: spherical``, FIXED joints to fixed URDF
joints, and ``UJOINT_<ab>`` joints to two revolute joints ``<joint>_<a>`` (about the joint
frame's axis a) and ``<joint>_<b>`` (about axis b of the frame that follows), through a
massless link ``<joint>_cross``: the toolbox's own redefinitions. Problems raise
:class:`~robot_dynamics.errors.LoopSpecError` naming the YAML file and key, or
:class:`~robot_dynamics.errors.ModelError` naming the URDF.
"""

from __future__ import annotations

import os

from robot_dynamics.errors import LoopSpecError, ModelError
from robot_dynamics.parsers.importing import ImportResult

__all__ = ['import_framepairs']

_TYPES = {'3d': 'spherical', '6d': 'weld'}
_AXES = {'X': '1 0 0', 'Y': '0 1 0', 'Z': '0 0 1'}


def _list(src, data, key, required=False, names=False):
    """The list under ``key`` (``names``: of strings), else a LoopSpecError naming file and key."""
    v = data.get(key)
    if v is None:
        if required:
            raise LoopSpecError(src, key, 'required key is missing')
        return []
    if not isinstance(v, list):
        raise LoopSpecError(src, key, f'must be a list, got {v!r}')
    if names:
        for i, x in enumerate(v):
            if not isinstance(x, str):
                raise LoopSpecError(src, f'{key}[{i}]', f'expected a name, got {x!r}')
    return v


def import_framepairs(urdf_path, yaml_path, root_joint=None, name=None):
    """Import a URDF with the frame-pair YAML of toolbox-parallel-robots.

    Parameters
    ----------
    urdf_path : str or PathLike
        The URDF spanning tree (``robot.urdf`` of the toolbox's robots).
    yaml_path : str or PathLike
        Its ``robot.yaml`` (keys ``closed_loop``, ``type``, ``name_mot``, ``joint_name``,
        ``joint_type``; others are refused).
    root_joint : {'free_flyer', 'planar'} or None
        Root joint of the URDF root link (the toolbox's ``freeflyer=True``: 'free_flyer').
    name : str, optional
        Robot name (default the URDF's).

    Returns
    -------
    ImportResult
        The (rewritten, if ``joint_type`` says so) URDF, the sidecar and the notes.
    """
    from lxml import etree

    from robot_dynamics.parsers.sidecar import read_spec
    from robot_dynamics.parsers.urdf import read_urdf_xml

    urdf_path = os.fsdecode(os.fspath(urdf_path))
    yaml_path = os.fsdecode(os.fspath(yaml_path))
    xml, src, _ = read_urdf_xml(urdf_path)
    data, ysrc = read_spec(yaml_path)
    known = {'closed_loop', 'type', 'name_mot', 'joint_name', 'joint_type'}
    unknown = sorted(set(map(str, data)) - known)
    if unknown:
        raise LoopSpecError(ysrc, unknown[0], f'unknown key (known: {sorted(known)})')
    try:
        root = etree.fromstring(xml.encode('utf-8'), etree.XMLParser(resolve_entities=False, no_network=True))
    except etree.XMLSyntaxError as exc:
        raise ModelError(src, f'line {exc.lineno}', f'invalid XML: {exc.msg}') from None
    links = {lk.get('name') for lk in root.findall('link')}
    joints = {j.get('name'): j for j in root.findall('joint')}
    notes = [f'URDF {urdf_path} with the frame pairs of {yaml_path} (toolbox-parallel-robots)']

    # ---- joint redefinitions
    jnames, jtypes = _list(ysrc, data, 'joint_name', names=True), _list(ysrc, data, 'joint_type')
    if len(jnames) != len(jtypes):
        raise LoopSpecError(ysrc, 'joint_type', f'{len(jtypes)} types for {len(jnames)} joint_name entries')
    joint_types = {}
    for i, (jn, jt) in enumerate(zip(jnames, jtypes)):
        key = f'joint_name[{i}]'
        if jn not in joints:
            raise LoopSpecError(ysrc, key, f"'{jn}' is not a joint of {urdf_path}")
        el = joints[jn]
        if el.get('type') not in ('revolute', 'continuous', 'prismatic', 'fixed'):
            raise LoopSpecError(ysrc, key, f"joint '{jn}' of type {el.get('type')!r} cannot be redefined")
        jt = str(jt)
        if jt == 'SPHERICAL':
            if el.get('type') == 'prismatic':
                raise LoopSpecError(ysrc, f'joint_type[{i}]', f"prismatic joint '{jn}' cannot become spherical")
            el.set('type', 'continuous')
            joint_types[jn] = 'spherical'
            notes.append(f"joint '{jn}': spherical (joint_types)")
        elif jt == 'FIXED':
            el.set('type', 'fixed')
            notes.append(f"joint '{jn}': fixed at its zero configuration")
        elif jt.startswith('UJOINT_') and len(jt) == 9 and jt[-2] in _AXES and jt[-1] in _AXES and jt[-2] != jt[-1]:
            a, b = jt[-2], jt[-1]
            cross, j1, j2 = f'{jn}_cross', f'{jn}_{a}', f'{jn}_{b}'
            for n in (cross, j1, j2):
                if n in links or n in joints:
                    raise ModelError(src, f"joint '{jn}'", f"the name '{n}' of its universal joint is taken")
            child = el.find('child').get('link')
            el.set('name', j1)
            el.set('type', 'continuous')
            for tag in ('axis', 'limit', 'mimic'):
                for sub in el.findall(tag):
                    el.remove(sub)
            etree.SubElement(el, 'axis', xyz=_AXES[a])
            el.find('child').set('link', cross)
            root.append(etree.Element('link', name=cross))
            j2el = etree.SubElement(root, 'joint', name=j2, type='continuous')
            etree.SubElement(j2el, 'parent', link=cross)
            etree.SubElement(j2el, 'child', link=child)
            etree.SubElement(j2el, 'axis', xyz=_AXES[b])
            links.add(cross)
            notes.append(
                f"joint '{jn}' ({jt}): revolute joints '{j1}' (joint frame axis {a}) and '{j2}' (axis {b}) "
                f"through the massless link '{cross}'"
            )
        else:
            raise LoopSpecError(
                ysrc,
                f'joint_type[{i}]',
                f'unknown joint type {jt!r} (SPHERICAL, FIXED or UJOINT_<ab>, a, b in X, Y, Z)',
            )
    joints = {j.get('name'): j for j in root.findall('joint')}

    # ---- loops
    pairs, types = _list(ysrc, data, 'closed_loop', required=True), _list(ysrc, data, 'type')
    if 'type' not in data:
        notes.append('no type list: every pair is a 6D (weld) constraint, as the toolbox loader assumes')
        types = ['6d'] * len(pairs)
    if len(types) != len(pairs):
        raise LoopSpecError(ysrc, 'type', f'{len(types)} types for {len(pairs)} closed_loop pairs')

    def frame(i, k, f):
        if f in links:
            return f
        if f in joints:
            child = joints[f].find('child').get('link')
            notes.append(f"frame '{f}' of closed_loop[{i}] is a joint: its child link '{child}' (the joint frame)")
            return child
        raise LoopSpecError(ysrc, f'closed_loop[{i}][{k}]', f"'{f}' is not a link or joint of {urdf_path}")

    loops = []
    for i, (pair, t) in enumerate(zip(pairs, types)):
        if not isinstance(pair, list) or len(pair) != 2 or not all(isinstance(f, str) for f in pair):
            raise LoopSpecError(ysrc, f'closed_loop[{i}]', f'expected a pair of frame names, got {pair!r}')
        lt = _TYPES.get(str(t).lower())
        if lt is None:
            raise LoopSpecError(ysrc, f'type[{i}]', f'expected 3D or 6D, got {t!r}')
        fa, fb = frame(i, 0, pair[0]), frame(i, 1, pair[1])
        loops.append({'name': f'{pair[0]}C{pair[1]}', 'type': lt, 'frame_a': fa, 'frame_b': fb})
        notes.append(f"closed_loop[{i}] {pair} ({t}): {lt} loop '{loops[-1]['name']}' between '{fa}' and '{fb}'")

    sidecar = {
        'format': 'robot_dynamics/parsers/sidecar/1',
        'description': f'imported from {os.path.basename(urdf_path)} + {os.path.basename(yaml_path)} '
        '(toolbox-parallel-robots frame pairs)',
    }
    if root_joint is not None:
        sidecar['root_joint'] = root_joint
    if joint_types:
        sidecar['joint_types'] = joint_types
    sidecar['loops'] = loops
    mot = _list(ysrc, data, 'name_mot', names=True)
    for i, n in enumerate(mot):
        if n not in joints or joints[n].get('type') == 'fixed':
            raise LoopSpecError(ysrc, f'name_mot[{i}]', f"'{n}' is not a movable joint of {urdf_path}")
    if mot:
        sidecar['actuated'] = list(mot)
    notes.append(f'actuated (name_mot): {list(mot)}' if mot else 'no name_mot: every one-DOF joint is actuated')
    urdf = etree.tostring(root, encoding='unicode')
    robot = name or root.get('name') or 'robot'
    return ImportResult(name=robot, urdf=urdf, sidecar=sidecar, notes=notes, source=urdf_path)
