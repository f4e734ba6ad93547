"""MJCF (MuJoCo XML) -> URDF spanning tree + loop sidecar, through MuJoCo's own compiler.

:func:`import_mjcf` compiles the file with ``mujoco.MjSpec.from_file(path).compile()`` (so
includes, defaults and classes, ``fromto`` geoms, inertias computed from geoms, degrees/radians
and ``eulerseq`` are MuJoCo's business) and translates the *compiled* model:

* bodies -> URDF links named as the bodies (the world body is the link ``world``); a body's
  link frame is its MuJoCo body frame, its ``<inertial>`` is ``body_mass`` / ``body_inertia``
  (principal moments) at ``body_ipos`` / ``body_iquat``;
* the joints of a body, in order, rotate (translate) the body about their anchor
  ``jnt_pos``: each becomes a URDF joint whose child link sits at the anchor (the last one:
  the body link itself, or a fixed joint ``<body>__anchor`` back to the body frame); MuJoCo's
  ``T_body(q) = T_body0 * prod_k Trans(p_k) Rot(a_k, q_k) Trans(-p_k)`` is reproduced exactly.
  ``hinge`` -> ``revolute`` (range) or ``continuous``, ``slide`` -> ``prismatic``, ``ball`` ->
  a joint the sidecar's ``joint_types`` marks ``spherical``, ``free`` -> a ``floating`` joint
  on the world. A body without joints -> a ``fixed`` joint ``<body>__fixed``.
* coordinates: for hinge and slide joints ``q = qpos - qpos0`` (MuJoCo's ``ref``), so ``q = 0``
  is the compiled configuration ``qpos0``; joint ranges are shifted alike. Ball joints:
  ``q = (x, y, z, w)`` of MuJoCo's ``(w, x, y, z)``; free joints: ``q = (pos, x, y, z, w)``.
* ``dof_damping`` / ``dof_frictionloss`` -> URDF ``<dynamics damping friction>`` (hinge and
  slide joints); armature, stiffness and the other solver parameters are named in the notes.
* actuators with a joint transmission: the joints they drive are the sidecar's ``actuated``
  (gear, and motor / position / velocity / general, in the notes); on a fixed tendon, the
  tendon's joints are actuated; other transmissions are noted and drive nothing (a model with
  actuators none of which drives a joint: ``actuated: []``).
* ``<equality>`` -> sidecar loops: ``connect`` (by bodies and anchor, or by sites) -> a
  ``spherical`` loop whose cut frames ``<loop>_a`` / ``<loop>_b`` are fixed links at the two
  anchors; ``weld`` -> a ``weld`` loop (cut frames at MuJoCo's relpose / anchor, or at the two
  sites of a site-based weld; torquescale only weighs a soft constraint and is noted); ``joint`` -> a ``coupling`` loop (``polycoef``
  a0 + a1 q, nonlinear terms refused). ``tendon``, ``flex`` and ``distance`` equalities are
  refused; inactive equalities are skipped and noted.

Everything else (geoms, sites, tendons, sensors, contacts, keyframes ...) is irrelevant to the
rigid-body model or has no URDF counterpart; :attr:`ImportResult.notes` names what was dropped.
Problems raise :class:`~robot_dynamics.errors.ModelError` naming the file and the MJCF element
(a file MuJoCo cannot compile: MuJoCo's message).

Guarding MuJoCo (4.0): a ``<connect>`` whose ``anchor`` is empty or blank makes MuJoCo's XML
reader throw without a message ("Caught an unknown exception!"), after which
``MjModel.from_xml_path`` / ``from_xml_string`` never return in that thread; an empty ``site1`` /
``site2`` of a connect or weld fails with "eq_obj2id out of bounds", naming no element. The
import refuses these itself, naming the equality and its line, before MuJoCo reads the file (its
includes too), and compiles through ``MjSpec``, which keeps working after a reader failure.
"""

from __future__ import annotations

import math
import os
from xml.sax.saxutils import quoteattr

import numpy as np

from robot_dynamics.errors import ModelError
from robot_dynamics.parsers.importing import ImportResult

__all__ = ['import_mjcf']

_FMT = 'robot_dynamics/parsers/sidecar/1'
_DEFAULT_GRAVITY = (0.0, 0.0, -9.81)


def _quat_R(q):
    """Rotation matrix (3, 3) of a unit quaternion (w, x, y, z)."""
    w, x, y, z = np.asarray(q, float) / np.linalg.norm(q)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def _rpy(R):
    """URDF roll-pitch-yaw (R = Rz(yaw) Ry(pitch) Rx(roll)) of a rotation matrix; the pitch from
    atan2 (well conditioned near +-pi/2)."""
    pitch = math.atan2(-R[2, 0], math.hypot(R[0, 0], R[1, 0]))
    if math.hypot(R[0, 0], R[1, 0]) < 1e-12:  # gimbal lock: roll absorbs the yaw
        return math.atan2(-R[1, 2], R[1, 1]), pitch, 0.0
    return math.atan2(R[2, 1], R[2, 2]), pitch, math.atan2(R[1, 0], R[0, 0])


def _f(x):
    return repr(float(x)) if x != 0 else '0'


def _origin(p, R=None):
    rpy = '' if R is None else ' rpy="{} {} {}"'.format(*(_f(a) for a in _rpy(R)))
    return '<origin xyz="{} {} {}"{}/>'.format(*(_f(a) for a in p), rpy)


class _Names:
    """Unique URDF link / joint names."""

    def __init__(self):
        self.used = set()

    def take(self, name):
        base, k = name, 1
        while name in self.used:
            k += 1
            name = f'{base}_{k}'
        self.used.add(name)
        return name


def _name(m, kind, i, fallback):
    n = getattr(m, kind)(i).name
    return n if n else fallback


def import_mjcf(path, *, name=None, drop_inactive=True) -> ImportResult:
    """Import an MJCF file: the compiled MuJoCo model as URDF + loop sidecar.

    Parameters
    ----------
    path : str or PathLike
        The MJCF (``.xml``) file; includes are resolved relative to it by MuJoCo.
    name : str, optional
        Robot name (default: the MJCF ``model`` attribute, else the file stem).
    drop_inactive : bool
        Skip equalities that are inactive at start (``active="false"``), with a note (default);
        False imports them as loops too.

    Returns
    -------
    ImportResult
        URDF text, sidecar dict, notes, source path, gravity (``opt.gravity``).

    Raises
    ------
    ModelError
        Naming the file: MuJoCo's compiler message, or the MJCF element this package cannot
        represent (a tendon / flex / distance equality, a polynomial joint coupling, a free
        joint below the top level ...).
    """
    import mujoco

    src = os.fspath(path)
    if not os.path.isfile(src):
        raise ModelError(src, None, 'no such MJCF file')
    _refuse_unreadable(src)
    try:
        # MjSpec, not MjModel.from_xml_path: the same model and messages, and no dead thread
        # after a reader failure MuJoCo cannot name (see the module docstring)
        m = mujoco.MjSpec.from_file(src).compile()
    except (ValueError, RuntimeError) as exc:
        raise ModelError(src, None, 'MuJoCo cannot compile it: ' + ' '.join(str(exc).split())) from None
    data = mujoco.MjData(m)
    mujoco.mj_kinematics(m, data)
    notes = []
    J = mujoco.mjtJoint
    names = _Names()
    body_link = {0: names.take('world')}
    for b in range(1, m.nbody):
        body_link[b] = names.take(_name(m, 'body', b, f'body{b}'))
    joint_names = _Names()
    jname = {j: joint_names.take(_name(m, 'joint', j, f'{body_link[m.jnt_bodyid[j]]}_joint{j}')) for j in range(m.njnt)}
    links, joints = [], []  # XML pieces
    spherical, dyn_notes = {}, []
    # ---- links (body frames) with their inertias
    for b in range(m.nbody):
        ln = body_link[b]
        if b == 0 or m.body_mass[b] == 0 and not m.body_inertia[b].any():
            links.append(f'<link name={quoteattr(ln)}/>')
            continue
        I = m.body_inertia[b]
        links.append(
            f'<link name={quoteattr(ln)}><inertial>{_origin(m.body_ipos[b], _quat_R(m.body_iquat[b]))}'
            f'<mass value="{_f(m.body_mass[b])}"/><inertia ixx="{_f(I[0])}" ixy="0" ixz="0" iyy="{_f(I[1])}" '
            f'iyz="0" izz="{_f(I[2])}"/></inertial></link>'
        )
    # ---- joints: each body's chain of joints about their anchors
    for b in range(1, m.nbody):
        parent, ln = body_link[int(m.body_parentid[b])], body_link[b]
        R0, p0 = _quat_R(m.body_quat[b]), np.array(m.body_pos[b], float)
        adr, num = int(m.body_jntadr[b]), int(m.body_jntnum[b])
        if num == 0:
            jn = joint_names.take(f'{ln}__fixed')
            joints.append(
                f'<joint name={quoteattr(jn)} type="fixed"><parent link={quoteattr(parent)}/>'
                f'<child link={quoteattr(ln)}/>{_origin(p0, R0)}</joint>'
            )
            continue
        prev_anchor = None
        prev_link = parent
        for k in range(num):
            j = adr + k
            jt = int(m.jnt_type[j])
            nm = jname[j]
            anchor = np.array(m.jnt_pos[j], float)
            if jt == J.mjJNT_FREE:
                if m.body_parentid[b] != 0 or num > 1:
                    raise ModelError(
                        src,
                        f"joint '{nm}' (free)",
                        'a free joint is imported on a top-level body without other joints only',
                    )
                joints.append(
                    f'<joint name={quoteattr(nm)} type="floating"><parent link="world"/>'
                    f'<child link={quoteattr(ln)}/><origin xyz="0 0 0"/></joint>'
                )
                notes.append(
                    f"joint '{nm}': free -> URDF floating joint on the world (a free-flyer: q = MuJoCo's qpos with "
                    "the quaternion (w, x, y, z) as (x, y, z, w); velocities: Pinocchio's (body-frame linear) "
                    "convention, not MuJoCo's world-frame linear qvel)"
                )
                prev_anchor = None
                break
            last = k == num - 1
            at_body = last and not anchor.any()
            child = ln if at_body else names.take(f'{ln}__{nm}')
            if k == 0:
                origin = _origin(p0 + R0 @ anchor, R0)
            else:
                origin = _origin(anchor - prev_anchor)
            axis = '<axis xyz="{} {} {}"/>'.format(*(_f(a) for a in m.jnt_axis[j]))
            dof = int(m.jnt_dofadr[j])
            dyn = ''
            if jt in (J.mjJNT_HINGE, J.mjJNT_SLIDE):
                q0 = float(m.qpos0[m.jnt_qposadr[j]])
                damping, friction = float(m.dof_damping[dof]), float(m.dof_frictionloss[dof])
                if damping or friction:
                    dyn = f'<dynamics damping="{_f(damping)}" friction="{_f(friction)}"/>'
                limited = bool(m.jnt_limited[j])
                lim = ''
                if limited:
                    lo, hi = (float(v) - q0 for v in m.jnt_range[j])
                    lim = f'<limit lower="{_f(lo)}" upper="{_f(hi)}" effort="0" velocity="0"/>'
                if jt == J.mjJNT_HINGE:
                    utype = 'revolute' if limited else 'continuous'
                else:
                    utype = 'prismatic'
                    if not limited:
                        notes.append(f"joint '{nm}': unlimited slide -> prismatic without <limit> (unbounded)")
                if q0 != 0.0:
                    notes.append(f"joint '{nm}': q = qpos - qpos0 with qpos0 = {q0:g} (MuJoCo's ref)")
            else:  # ball
                utype = 'continuous'
                axis = '<axis xyz="0 0 1"/>'
                spherical[nm] = 'spherical'
                if m.dof_damping[dof : dof + 3].any() or m.dof_frictionloss[dof : dof + 3].any():
                    dyn_notes.append(f"joint '{nm}' (ball): damping / frictionloss dropped (no URDF counterpart)")
            nd = 3 if jt == J.mjJNT_BALL else 1
            extras = []
            for what, arr in (('armature', m.dof_armature[dof : dof + nd]),):
                if np.any(arr):
                    extras.append(f'{what} {arr.tolist() if nd > 1 else float(arr[0]):}')
            if m.jnt_stiffness[j]:
                extras.append(f'stiffness {float(m.jnt_stiffness[j]):g}')
            if extras:
                dyn_notes.append(f"joint '{nm}': {', '.join(extras)} dropped (no URDF counterpart)")
            joints.append(
                f'<joint name={quoteattr(nm)} type="{utype}"><parent link={quoteattr(prev_link)}/>'
                f'<child link={quoteattr(child)}/>{origin}{axis}{lim if jt != J.mjJNT_BALL else ""}{dyn}</joint>'
            )
            if child != ln:
                links.append(f'<link name={quoteattr(child)}/>')
            prev_link, prev_anchor = child, anchor
            if last and not at_body:
                jn = joint_names.take(f'{ln}__anchor')
                joints.append(
                    f'<joint name={quoteattr(jn)} type="fixed"><parent link={quoteattr(child)}/>'
                    f'<child link={quoteattr(ln)}/>{_origin(-anchor)}</joint>'
                )
    notes.append(
        f'tree: {m.nbody - 1} bodies, {m.njnt} joints -> URDF links named as the bodies (root link '
        "'world'); joint anchors off the body origin get an intermediate link '<body>__<joint>'"
    )
    notes.extend(dyn_notes)
    # ---- actuators
    actuated = []
    for a in range(m.nu):
        an = _name(m, 'actuator', a, f'actuator{a}')
        trn, tid = int(m.actuator_trntype[a]), int(m.actuator_trnid[a, 0])
        fixed = _fixed_tendon(m, tid) if trn == mujoco.mjtTrn.mjTRN_TENDON else None
        if fixed:  # a fixed tendon: tau_j = gear * coef_j * force on each of its joints
            kind = _actuator_kind(m, a)
            terms = ' + '.join(f"{c:g} '{jname[j]}'" for j, c in fixed)
            notes.append(
                f"actuator '{an}': {kind}, gear {float(m.actuator_gear[a, 0]):g}, on the fixed tendon "
                f"'{_name(m, 'tendon', tid, f'tendon{tid}')}' = {terms}: its joints are actuated (the tendon's "
                'coupling of their efforts is not imported)'
            )
            for j, _ in fixed:
                if int(m.jnt_type[j]) in (J.mjJNT_HINGE, J.mjJNT_SLIDE) and jname[j] not in actuated:
                    actuated.append(jname[j])
            continue
        if trn not in (mujoco.mjtTrn.mjTRN_JOINT, mujoco.mjtTrn.mjTRN_JOINTINPARENT):
            notes.append(f"actuator '{an}': transmission {mujoco.mjtTrn(trn).name} is not imported (drives nothing)")
            continue
        jn = jname[tid]
        kind = _actuator_kind(m, a)
        if int(m.jnt_type[tid]) not in (J.mjJNT_HINGE, J.mjJNT_SLIDE):
            notes.append(f"actuator '{an}' ({kind}) drives the multi-DOF joint '{jn}': not imported")
            continue
        notes.append(f"actuator '{an}': {kind}, gear {float(m.actuator_gear[a, 0]):g}, drives joint '{jn}'")
        if jn not in actuated:
            actuated.append(jn)
    # ---- equalities -> loops
    loops, cut_links, cut_joints = [], [], []
    for e in range(m.neq):
        loop = _equality(m, e, src, jname, body_link, names, joint_names, cut_links, cut_joints, notes, drop_inactive)
        if loop is not None:
            loops.append(loop)
    links.extend(cut_links)
    joints.extend(cut_joints)
    # ---- what is not imported
    dropped = []
    for attr, what in (
        ('ngeom', 'geoms (collision / visual geometry; their inertia is in the bodies)'),
        ('nsite', 'sites'),
        ('ntendon', 'tendons'),
        ('nsensor', 'sensors'),
        ('npair', 'contact pairs'),
        ('nexclude', 'contact excludes'),
        ('nkey', 'keyframes'),
        ('nflex', 'flexes'),
        ('nskin', 'skins'),
        ('ncam', 'cameras'),
        ('nlight', 'lights'),
        ('nplugin', 'plugins'),
    ):
        cnt = int(getattr(m, attr))
        if cnt:
            dropped.append(f'{cnt} {what}')
    if dropped:
        notes.append('not imported: ' + '; '.join(dropped))
    if np.any(m.body_gravcomp):
        notes.append('body gravcomp dropped (gravity compensation is a controller matter here)')
    robot = name or _model_name(m, src)
    urdf = (
        f'<?xml version="1.0"?>\n<robot name={quoteattr(robot)}>\n'
        + '\n'.join(links)
        + '\n'
        + '\n'.join(joints)
        + '\n</robot>\n'
    )
    sidecar = {'format': _FMT, 'description': f'imported from {os.path.basename(src)} (MJCF)', 'loops': loops}
    if spherical:
        sidecar['joint_types'] = spherical
    if m.nu:
        sidecar['actuated'] = actuated
        if not actuated:
            notes.append('no actuator drives a joint: every joint is passive')
    gravity = tuple(float(g) for g in m.opt.gravity)
    if gravity != _DEFAULT_GRAVITY:
        notes.append(f'gravity {list(gravity)} (ImportResult.gravity; the URDF and sidecar do not hold it)')
    return ImportResult(
        name=robot,
        urdf=urdf,
        sidecar=sidecar,
        notes=notes,
        source=src,
        gravity=None if gravity == _DEFAULT_GRAVITY else gravity,
    )


def _refuse_unreadable(src):
    """Raise ModelError for the MJCF input MuJoCo fails on without naming the element, in ``src``
    or a file it includes: a ``<connect>`` with an empty or blank ``anchor`` (MuJoCo's XML reader
    throws without a message, and then ``MjModel.from_xml_path`` hangs on the next file in the
    same thread), a ``<connect>`` / ``<weld>`` with an empty ``site1`` / ``site2`` (its compiler
    says only "eq_obj2id out of bounds"). Files that do not parse are left to MuJoCo."""
    import xml.parsers.expat

    todo, seen = [(src, None)], set()
    while todo:
        path, by = todo.pop()
        key = os.path.realpath(path)
        if key in seen or not os.path.isfile(path):
            continue  # MuJoCo names a missing include
        seen.add(key)
        parser = xml.parsers.expat.ParserCreate()
        found, includes = [], []

        def start(tag, attrs, parser=parser, found=found, includes=includes):
            if tag in ('connect', 'weld'):
                for a in ('anchor', 'site1', 'site2') if tag == 'connect' else ('site1', 'site2'):
                    if a in attrs and not attrs[a].split():
                        found.append((tag, a, attrs.get('name', ''), parser.CurrentLineNumber))
            elif tag == 'include' and attrs.get('file'):
                includes.append(attrs['file'])

        parser.StartElementHandler = start
        try:
            with open(path, 'rb') as fh:
                parser.ParseFile(fh)
        except (xml.parsers.expat.ExpatError, OSError, ValueError):
            pass  # MuJoCo reports the syntax error (what was found before it still counts)
        if found:
            tag, attr, nm, line = found[0]
            where = (f'included file {path!r}: ' if by else '') + (f"equality '{nm}'" if nm else 'equality')
            what = '3 numbers' if attr == 'anchor' else 'a site name'
            raise ModelError(
                src,
                f'{where} <{tag} {attr}> (line {line})',
                f'empty {attr} ({what} expected); not handed to MuJoCo, which fails on it without naming it',
            )
        base = os.path.dirname(src)  # MuJoCo resolves includes against the main file's folder
        todo.extend((os.path.join(base, f), path) for f in includes)


def _model_name(m, src):
    stem = os.path.splitext(os.path.basename(src))[0]
    raw = bytes(m.names)
    n = raw[: raw.index(b'\0')].decode('utf-8', 'replace') if b'\0' in raw else ''
    return n if n and n != 'MuJoCo Model' else stem


def _fixed_tendon(m, t):
    """[(joint id, coefficient)] of fixed tendon t (None if it wraps anything but joints)."""
    import mujoco

    adr, num = int(m.tendon_adr[t]), int(m.tendon_num[t])
    if num == 0 or any(int(m.wrap_type[w]) != mujoco.mjtWrap.mjWRAP_JOINT for w in range(adr, adr + num)):
        return None
    return [(int(m.wrap_objid[w]), float(m.wrap_prm[w])) for w in range(adr, adr + num)]


def _actuator_kind(m, a):
    import mujoco

    g, bt = int(m.actuator_gaintype[a]), int(m.actuator_biastype[a])
    bp = m.actuator_biasprm[a]
    if g == mujoco.mjtGain.mjGAIN_FIXED and bt == mujoco.mjtBias.mjBIAS_NONE:
        return 'motor (force)'
    if bt == mujoco.mjtBias.mjBIAS_AFFINE and bp[1] != 0 and m.actuator_gainprm[a, 0] == -bp[1]:
        return f'position servo (kp {float(-bp[1]):g})'
    if bt == mujoco.mjtBias.mjBIAS_AFFINE and bp[1] == 0 and bp[2] != 0:
        return f'velocity servo (kv {float(-bp[2]):g})'
    return 'general'


def _equality(m, e, src, jname, body_link, names, joint_names, cut_links, cut_joints, notes, drop_inactive):
    """The sidecar loop of equality e (None if skipped); adds its cut-frame links and joints."""
    import mujoco

    E = mujoco.mjtEq
    et = int(m.eq_type[e])
    kind = {E.mjEQ_CONNECT: 'connect', E.mjEQ_WELD: 'weld', E.mjEQ_JOINT: 'joint'}.get(et)
    raw_name = m.eq(e).name
    label = f"equality '{raw_name}'" if raw_name else f'equality {e}'
    if kind is None:
        what = E(et).name.replace('mjEQ_', '').lower()
        raise ModelError(
            src,
            f'{label} <{what}>',
            f'a {what} equality has no counterpart in the loop sidecar (connect, weld and joint equalities import)',
        )
    lname = raw_name or f'{kind}{e}'
    if not m.eq_active0[e] and drop_inactive:
        notes.append(f'{label} ({kind}): inactive at start, not imported')
        return None
    d = np.array(m.eq_data[e], float)
    o1, o2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
    if kind == 'joint':
        if o2 < 0:
            raise ModelError(
                src, f'{label} <joint>', 'a joint equality without joint2 locks the joint; not imported as a coupling'
            )
        for j in (o1, o2):
            if int(m.jnt_type[j]) not in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE):
                raise ModelError(src, f'{label} <joint>', f"joint '{jname[j]}' is not a hinge or slide")
        pc = d[:5]
        if np.any(pc[2:]):
            raise ModelError(
                src,
                f'{label} <joint polycoef>',
                f'nonlinear polycoef terms {pc[2:].tolist()} are not supported (only a0 + a1 q)',
            )
        notes.append(f"{label}: joint '{jname[o1]}' = {pc[0]:g} + {pc[1]:g} * '{jname[o2]}' -> coupling loop '{lname}'")
        return {
            'name': lname,
            'type': 'coupling',
            'joint': jname[o1],
            'mimic': jname[o2],
            'multiplier': float(pc[1]),
            'offset': float(pc[0]),
        }
    by_site = int(m.eq_objtype[e]) == mujoco.mjtObj.mjOBJ_SITE
    if by_site:
        b1, b2 = int(m.site_bodyid[o1]), int(m.site_bodyid[o2])
        s1, s2 = (_name(m, 'site', s, f'site{s}') for s in (o1, o2))
        pose_a = (np.array(m.site_pos[o1], float), _quat_R(m.site_quat[o1]))
        pose_b = (np.array(m.site_pos[o2], float), _quat_R(m.site_quat[o2]))
        how = f"sites '{s1}' and '{s2}'"
    else:
        b1, b2 = o1, o2
        how = f"bodies '{body_link[b1]}' and '{body_link[b2]}'"
        if kind == 'connect':
            pose_a, pose_b = (d[0:3], None), (d[3:6], None)
        else:  # weld: body2's anchor (data[0:3]) meets body1's relpose (data[3:10])
            pose_a, pose_b = (d[3:6], _quat_R(d[6:10])), (d[0:3], None)
    frames = []
    for tag, b, (p, R) in (('a', b1, pose_a), ('b', b2, pose_b)):
        fl = names.take(f'{lname}_{tag}')
        cut_links.append(f'<link name={quoteattr(fl)}/>')
        jn = joint_names.take(f'{fl}__fixed')
        cut_joints.append(
            f'<joint name={quoteattr(jn)} type="fixed"><parent link={quoteattr(body_link[b])}/>'
            f'<child link={quoteattr(fl)}/>{_origin(p, R)}</joint>'
        )
        frames.append(fl)
    if kind == 'connect':
        notes.append(
            f"{label} (connect by {how}) -> spherical loop '{lname}', cut frames '{frames[0]}' / '{frames[1]}'"
        )
        return {'name': lname, 'type': 'spherical', 'frame_a': frames[0], 'frame_b': frames[1]}
    notes.append(
        f"{label} (weld by {how}) -> weld loop '{lname}', cut frames '{frames[0]}' / '{frames[1]}' "
        f'({"the site frames" if by_site else "relpose in frame_a"}; torquescale {d[10]:g} weighs a soft '
        'constraint only: not imported)'
    )
    return {'name': lname, 'type': 'weld', 'frame_a': frames[0], 'frame_b': frames[1]}
