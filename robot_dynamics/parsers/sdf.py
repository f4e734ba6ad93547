"""SDFormat (1.6 to 1.9) -> URDF spanning tree + loop sidecar (:class:`ImportResult`).

SDF joints may close loops (a link with several parent joints). :func:`import_sdf` picks a
spanning tree by breadth-first search from the world (if a joint attaches the model to it) or
from the canonical link, keeps joints' own directions where it can, and cuts every other joint
into a loop of the sidecar with two massless cut frames ``<joint>_a`` (fixed to the joint's
parent link) and ``<joint>_b`` (fixed to its child link), both placed at the joint frame.

Frames and poses follow the specification:

* a ``<link>`` pose is relative to the model frame, a ``<joint>`` pose to its child link, a
  ``<frame>`` pose to the frame it is attached to, unless ``relative_to`` names another frame
  (a link, joint, frame or ``__model__``); SDF 1.6's ``frame`` attribute, when not empty, counts
  as ``relative_to``. ``rotation_format="quat_xyzw"`` and ``degrees="true"`` are read.
* an ``<axis><xyz>`` is expressed in the joint frame, in ``expressed_in`` if given, in the
  model frame under SDF 1.6's ``<use_parent_model_frame>true``.
* ``<inertial><pose>`` places the centre of mass and the inertia axes in the link frame;
  without ``<inertial>`` a link has the specification's defaults (1 kg, unit inertia; noted).

Every ``<frame>`` becomes a massless link fixed to the link it is attached to (``__model__``:
the canonical link). Every URDF link frame is the SDF link frame (the URDF joint origin is folded onto the child
link when the joint frame and the link frame share their origin, with the axis re-expressed;
otherwise a massless link ``<joint>_frame`` carries the joint). SI units throughout (SDF's).

Joint types: revolute, continuous and prismatic become URDF joints; ball joints in the tree are
spherical joints (sidecar ``joint_types``), universal and revolute2 joints are two revolute
joints ``<joint>_1``, ``<joint>_2`` through a massless link ``<joint>_cross``, fixed joints fixed.
Cut joints: fixed -> weld, ball -> spherical, revolute/continuous -> revolute, prismatic ->
prismatic, universal (and revolute2 with orthogonal axes) -> universal loops. ``<mimic>`` of
one tree joint by another becomes a ``coupling`` loop ``mimic_<joint>``
(``q = multiplier (q_leader - reference) + offset``); a gearbox joint whose two links hang on
its reference body by one revolute tree joint each, along its axes, becomes the coupling of
those two joints (``theta_2 = -gearbox_ratio theta_1``, :func:`_gearbox_coupling`); any other
gearbox is left out and reported in the notes. Nested models are flattened: their links, joints and frames are
named ``<model>::<name>`` (noted). Screw joints and ``<include>`` are refused naming the
element (:class:`~robot_dynamics.errors.ModelError`).
"""

from __future__ import annotations

import math
import os
import re
from collections import deque
from xml.sax.saxutils import quoteattr

import numpy as np

from robot_dynamics.errors import ModelError
from robot_dynamics.parsers.importing import ImportResult

__all__ = ['import_sdf']

_MOVABLE_1DOF = {'revolute': 'revolute', 'continuous': 'continuous', 'prismatic': 'prismatic'}
_TWO_AXES = ('universal', 'revolute2')
_KNOWN = set(_MOVABLE_1DOF) | {'ball', 'fixed', 'gearbox', 'screw'} | set(_TWO_AXES)
_UNBOUNDED = 1e16  # SDF's default (and "no limit") joint position limit magnitude
_ORIGIN_TOL = 1e-12  # [m] joint frame and child link frame share their origin below this


# ---------------------------------------------------------------------------- small math
def _rpy_matrix(r, p, y):
    """Rotation of roll-pitch-yaw angles (SDF and URDF: R = Rz(y) Ry(p) Rx(r))."""
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


def _matrix_rpy(R):
    """Roll-pitch-yaw angles of a rotation matrix (inverse of :func:`_rpy_matrix`)."""
    p = math.atan2(-R[2, 0], math.hypot(R[0, 0], R[1, 0]))
    if math.hypot(R[0, 0], R[1, 0]) < 1e-12:  # gimbal lock: put the whole yaw-roll into yaw
        return 0.0, p, math.atan2(-R[0, 1], R[1, 1])
    return math.atan2(R[2, 1], R[2, 2]), p, math.atan2(R[1, 0], R[0, 0])


def _quat_matrix(x, y, z, w):
    n = math.sqrt(x * x + y * y + z * z + w * w)
    x, y, z, w = x / n, y / n, z / n, w / n
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def _X(R=None, p=None):
    X = np.eye(4)
    if R is not None:
        X[:3, :3] = R
    if p is not None:
        X[:3, 3] = p
    return X


def _inv(X):
    R, p = X[:3, :3], X[:3, 3]
    return _X(R.T, -R.T @ p)


def _r(x):
    return repr(float(x))


def _fmt(v):
    return ' '.join(_r(x) for x in v)


_INERTIA = (('ixx', 0, 0), ('ixy', 0, 1), ('ixz', 0, 2), ('iyy', 1, 1), ('iyz', 1, 2), ('izz', 2, 2))


def _origin(X):
    """URDF ``<origin>`` of a homogeneous transform (empty for the identity)."""
    xyz, rpy = X[:3, 3], _matrix_rpy(X[:3, :3])
    if not np.any(xyz) and not any(rpy):
        return ''
    return f'<origin xyz="{_fmt(xyz)}" rpy="{_fmt(rpy)}"/>'


# ---------------------------------------------------------------------------- reading
class _Doc:
    """The parsed SDF model: links, joints, frames and their pose elements."""

    def __init__(self, src, model, version):
        self.src, self.model, self.version = src, model, version
        self.links, self.joints, self.frames = {}, {}, {}
        self._pose_cache, self._resolving = {}, []

    def err(self, el, message):
        line = getattr(el, 'sourceline', None) if el is not None else None
        where = None
        if el is not None:
            name = el.get('name')
            where = f'{el.tag}' + (f" '{name}'" if name else '') + (f' (line {line})' if line else '')
        return ModelError(self.src, where, message)

    # ---- numbers
    def numbers(self, el, n, what, default=None):
        text = el.text if el is not None else None
        if text is None or not text.strip():
            if default is not None:
                return default
            raise self.err(el, f'{what}: expected {n} numbers, found none')
        try:
            vals = [float(t) for t in text.split()]
        except ValueError:
            raise self.err(el, f'{what}: not a list of numbers: {text.strip()!r}') from None
        if len(vals) != n or not all(math.isfinite(v) for v in vals):
            raise self.err(el, f'{what}: expected {n} finite numbers, got {text.strip()!r}')
        return vals

    def number(self, parent, tag, default):
        el = parent.find(tag) if parent is not None else None
        if el is None:
            return default
        return self.numbers(el, 1, f'<{tag}>')[0]

    def pose_of(self, pose_el, owner):
        """(relative_to or None, X) of a ``<pose>`` element (None -> identity)."""
        if pose_el is None:
            return None, np.eye(4)
        rel = pose_el.get('relative_to')
        if rel is None and pose_el.get('frame'):  # SDF 1.5/1.6 spelling
            rel = pose_el.get('frame')
        fmt = pose_el.get('rotation_format', 'euler_rpy')
        if fmt == 'quat_xyzw':
            v = self.numbers(pose_el, 7, '<pose> (quat_xyzw)', default=[0, 0, 0, 0, 0, 0, 1])
            return rel, _X(_quat_matrix(*v[3:]), v[:3])
        if fmt != 'euler_rpy':
            raise self.err(owner, f"<pose rotation_format='{fmt}'>: expected euler_rpy or quat_xyzw")
        v = self.numbers(pose_el, 6, '<pose>', default=[0.0] * 6)
        if pose_el.get('degrees', 'false').strip().lower() in ('true', '1'):
            v = v[:3] + [math.radians(a) for a in v[3:]]
        return rel, _X(_rpy_matrix(*v[3:]), v[:3])

    # ---- frame graph: pose of every named frame in the model frame
    def model_pose(self, name, el=None):
        """Pose (4x4) of the frame ``name`` in the model frame."""
        if name == '__model__':
            return np.eye(4)
        if name in self._pose_cache:
            return self._pose_cache[name]
        if name in self._resolving:
            cycle = ' -> '.join(self._resolving[self._resolving.index(name) :] + [name])
            raise self.err(el, f'the poses form a cycle of relative_to references: {cycle}')
        if name == 'world':
            raise self.err(el, "relative_to 'world' inside a model: poses are relative to model frames")
        if name in self.links:
            kind, owner = 'link', self.links[name]
            default = '__model__'
        elif name in self.joints:
            kind, owner = 'joint', self.joints[name]
            default = (owner.findtext('child') or '').strip()
        elif name in self.frames:
            kind, owner = 'frame', self.frames[name]
            default = owner.get('attached_to') or '__model__'
        else:
            raise self.err(el, f"unknown frame '{name}'{_hint(name, self.frame_names())}")
        self._resolving.append(name)
        try:
            rel, X = self.pose_of(owner.find('pose'), owner)
            base = self.model_pose(rel if rel else default, owner)
        finally:
            self._resolving.pop()
        self._pose_cache[name] = out = base @ X
        del kind
        return out

    def frame_names(self):
        return list(self.links) + list(self.joints) + list(self.frames) + ['__model__']


def _hint(name, candidates):
    import difflib

    close = difflib.get_close_matches(str(name), [str(c) for c in candidates], n=1)
    return f" (did you mean '{close[0]}'?)" if close else ''


def _read(path, model_name):
    try:
        from lxml import etree
    except ImportError as exc:  # pragma: no cover - lxml is a dependency of the URDF reader
        raise ModelError(path, None, 'lxml is needed to read SDF') from exc
    if not os.path.isfile(path):
        raise ModelError(path, None, 'no such SDF file')
    try:
        with open(path, 'rb') as fh:
            raw = fh.read()
    except OSError as exc:
        raise ModelError(path, None, f'cannot read: {exc}') from None
    # an XML declaration after a leading comment (Gazebo tolerates it) is dropped
    raw = re.sub(rb'<\?xml[^>]*\?>', b'', raw)
    parser = etree.XMLParser(resolve_entities=False, no_network=True, remove_comments=True)
    try:
        root = etree.fromstring(raw, parser)
    except etree.XMLSyntaxError as exc:
        raise ModelError(path, f'line {exc.lineno}', f'invalid XML: {exc.msg}') from None
    if root.tag != 'sdf':
        raise ModelError(path, root.tag, f'the root element is <{root.tag}>, expected <sdf>')
    version = root.get('version', '')
    try:
        major, minor = (int(x) for x in version.split('.')[:2])
    except ValueError:
        raise ModelError(path, 'sdf', f'version attribute {version!r} is not MAJOR.MINOR') from None
    if (major, minor) < (1, 4) or major > 1:
        raise ModelError(path, 'sdf', f'SDFormat {version} is not supported (1.4 to 1.11 are read as 1.6 to 1.9)')
    models = list(root.findall('model'))
    world = root.find('world')
    if world is not None:
        models += list(world.findall('model'))
    if not models:
        inc = (world if world is not None else root).findall('include')
        if inc:
            uris = [(i.findtext('uri') or '').strip() for i in inc]
            raise ModelError(
                path,
                f'include (line {inc[0].sourceline})',
                f'the file has no <model> of its own, only <include>s {uris}: includes are not '
                'resolved (their model:// paths depend on the simulator set-up); import the '
                "included model's .sdf file itself",
            )
        raise ModelError(path, None, 'no <model> element')
    if model_name is not None:
        chosen = [m for m in models if m.get('name') == model_name]
        if not chosen:
            names = [m.get('name') for m in models]
            raise ModelError(path, None, f"no model named '{model_name}' (models: {names})")
        model = chosen[0]
    elif len(models) > 1:
        raise ModelError(path, None, f'{len(models)} models {[m.get("name") for m in models]}: choose one (model=...)')
    else:
        model = models[0]
    return model, (major, minor), world


def _flatten(doc, mel, prefix, notes):
    """(kind, scoped name, element) of the links, joints and frames of ``mel`` and of its nested
    models, whose names get the scope ``<model>::``: their references (poses' ``relative_to``,
    joints' parent and child, axes' ``expressed_in``) are rewritten in the same scope, and the
    nested model's frame is a ``<frame>`` ``<model>::__model__`` at the model's pose."""
    import copy

    from lxml import etree

    def scoped(name):
        return name if name in ('world', '') or not prefix else prefix + name

    out = []
    for el in mel:
        if not isinstance(el.tag, str):
            continue
        if el.tag in ('link', 'joint', 'frame'):
            el2 = copy.deepcopy(el) if prefix else el
            el2.sourceline = el.sourceline
            if prefix:
                el2.set('name', scoped(el.get('name') or ''))
                pose = el2.find('pose')
                if pose is None:
                    pose = etree.SubElement(el2, 'pose')
                rel = pose.get('relative_to') or pose.get('frame')
                if 'frame' in pose.attrib:
                    del pose.attrib['frame']
                if rel:
                    pose.set('relative_to', scoped(rel))
                elif el.tag == 'link':
                    pose.set('relative_to', prefix + '__model__')
                if el.tag == 'frame':
                    el2.set('attached_to', scoped(el.get('attached_to') or '__model__'))
                for tag in ('parent', 'child'):
                    sub = el2.find(tag)
                    if sub is not None and sub.text:
                        sub.text = scoped(sub.text.strip())
                for ax in el2.findall('axis') + el2.findall('axis2'):
                    xyz = ax.find('xyz')
                    if xyz is not None and xyz.get('expressed_in'):
                        xyz.set('expressed_in', scoped(xyz.get('expressed_in')))
                    elif xyz is not None and _flag(ax.find('use_parent_model_frame')):
                        xyz.set('expressed_in', prefix + '__model__')
                for mim in el2.iter('mimic'):
                    if mim.get('joint'):
                        mim.set('joint', scoped(mim.get('joint')))
            out.append((el.tag, el2.get('name'), el2))
        elif el.tag == 'model':
            name = el.get('name') or ''
            inner = f'{prefix}{name}::'
            frame = etree.Element('frame', name=inner + '__model__')
            frame.sourceline = el.sourceline
            pose = el.find('pose')
            fpose = copy.deepcopy(pose) if pose is not None else etree.SubElement(frame, 'pose')
            if pose is not None:
                frame.append(fpose)
            rel = fpose.get('relative_to') or fpose.get('frame')
            fpose.set('relative_to', scoped(rel) if rel else (prefix + '__model__' if prefix else '__model__'))
            links = [lk.get('name') for lk in el.findall('link')]
            canonical = el.get('canonical_link') or (links[0] if links else None)
            if canonical is None:
                raise doc.err(el, 'a nested model without links is not imported')
            frame.set('attached_to', inner + canonical)
            inc = el.find('include')
            if inc is not None:
                raise doc.err(inc, 'nested includes are not imported: flatten the model (gz sdf -p FILE) first')
            notes.append(f"nested model '{prefix}{name}': its links, joints and frames are named '{inner}<name>'")
            out.append(('frame', inner + '__model__', frame))
            out.extend(_flatten(doc, el, inner, notes))
    return out


def _flag(el):
    return el is not None and (el.text or '').strip().lower() in ('1', 'true')


# ---------------------------------------------------------------------------- importer
def import_sdf(path, cut=(), root_joint='free_flyer', actuated=None, name=None, model=None, reduce_redundant=True):
    """Import an SDFormat model with closed loops.

    Parameters
    ----------
    path : str or PathLike
        ``.sdf`` (or ``.world`` with a single ``<model>``) file.
    cut : sequence of str
        Joints that must be cut (loops), in addition to those whose ``<physics>`` sets
        ``must_be_loop_joint``; the others are kept in the tree where possible.
    root_joint : {'free_flyer', 'planar'} or None
        Joint of the canonical link of a model that no joint attaches to the world (default a
        free flyer; None: the canonical link is fixed to the world). A model attached to the
        world by joints has the world as its root.
    actuated : list of str, optional
        The sidecar's ``actuated`` joints (SDF does not say which joints have motors; default:
        every movable joint, the sidecar default).
    name : str, optional
        Robot name (default the model's).
    model : str, optional
        Which ``<model>`` of a file with several.
    reduce_redundant : bool
        A spherical loop closing a planar linkage (its row normal to the plane has no gradient
        at any configuration) becomes a ``point_on_line`` loop of the two in-plane rows
        (default True; noted). False keeps every cut ball joint a spherical loop.

    Returns
    -------
    ImportResult
        URDF text whose links are the SDF links (frames: the SDF link frames, positions in m),
        the loop sidecar and the notes.

    Raises
    ------
    ModelError
        Naming the file and the element (joint, link, pose) at fault.
    """
    path = os.path.normpath(os.fsdecode(os.fspath(path)))
    if root_joint not in (None, 'free_flyer', 'planar'):
        raise ModelError(path, None, f"root_joint must be 'free_flyer', 'planar' or None, got {root_joint!r}")
    mel, version, world = _read(path, model)
    doc = _Doc(path, mel, version)
    notes = [f'SDFormat {version[0]}.{version[1]} model {mel.get("name")!r} from {path}']
    mimics = []  # (follower, leader, multiplier, offset, loop name): couplings where both are tree joints
    inc = mel.find('include')
    if inc is not None:
        raise doc.err(
            inc,
            f'nested includes are not imported ({(inc.findtext("uri") or "").strip()!r}): flatten the model '
            '(gz sdf -p FILE prints it with includes resolved) and import that',
        )
    for kind, n, el in _flatten(doc, mel, '', notes):
        store = {'link': doc.links, 'joint': doc.joints, 'frame': doc.frames}[kind]
        if not n or n.endswith('::'):
            raise doc.err(el, f'<{kind}> without a name')
        if n in doc.links or n in doc.joints or n in doc.frames or n in ('world', '__model__'):
            raise doc.err(el, f"the name '{n}' is taken (links, joints and frames share one namespace)")
        store[n] = el
    if not doc.links:
        raise ModelError(path, None, f"model '{mel.get('name')}' has no links")
    static = _flag(mel.find('static'))

    # ---- joints: type, parent, child, axes in the joint frame
    J = {}
    for jn, el in doc.joints.items():
        jt = el.get('type', '')
        if jt not in _KNOWN:
            raise doc.err(el, f"unknown joint type '{jt}' (known: {sorted(_KNOWN)})")
        if jt == 'screw':
            raise doc.err(
                el,
                'screw joints (rotation coupled to translation) have no equivalent among the '
                "package's joints and loop types: replace it by a prismatic or revolute joint",
            )
        par, chi = (el.findtext('parent') or '').strip(), (el.findtext('child') or '').strip()
        for side, v in (('parent', par), ('child', chi)):
            if v != 'world' and v not in doc.links:
                raise doc.err(el, f"<{side}> '{v}' is not a link of the model{_hint(v, doc.links)}")
        if chi == 'world':
            raise doc.err(el, "<child> is 'world': the world cannot be a joint's child")
        if par == chi:
            raise doc.err(el, f"parent and child are the same link '{par}'")
        X = doc.model_pose(jn, el)
        axes, limits, dyn = [], [], []
        n_axes = {'revolute': 1, 'continuous': 1, 'prismatic': 1, 'universal': 2, 'revolute2': 2}.get(jt, 0)
        for k, tag in enumerate(('axis', 'axis2')[:n_axes]):
            ax_el = el.find(tag)
            if ax_el is None:
                if jt == 'universal' or k == 0:
                    a = [1.0, 0.0, 0.0] if k == 0 else [0.0, 1.0, 0.0]
                    xyz = None
                else:
                    raise doc.err(el, f'<{tag}> is required for a {jt} joint')
            else:
                xyz = ax_el.find('xyz')
                a = doc.numbers(xyz, 3, f'<{tag}><xyz>', default=[0.0, 0.0, 1.0])
            a = np.array(a, float)
            if not np.linalg.norm(a) > 1e-12:
                raise doc.err(el, f'<{tag}><xyz>: zero axis')
            a /= np.linalg.norm(a)
            if ax_el is not None:
                frame = xyz.get('expressed_in') if xyz is not None else None
                if frame is None and _flag(ax_el.find('use_parent_model_frame')):
                    frame = '__model__'
                if frame:
                    R = doc.model_pose(frame, el)[:3, :3]
                    a = X[:3, :3].T @ (R @ a)
            axes.append(a)
            lim = ax_el.find('limit') if ax_el is not None else None
            lo, hi = doc.number(lim, 'lower', -_UNBOUNDED), doc.number(lim, 'upper', _UNBOUNDED)
            if lo > hi:
                raise doc.err(el, f'<{tag}><limit>: lower {lo} > upper {hi}')
            limits.append((lo, hi, doc.number(lim, 'effort', -1.0), doc.number(lim, 'velocity', -1.0)))
            dy = ax_el.find('dynamics') if ax_el is not None else None
            dyn.append(
                (
                    doc.number(dy, 'damping', 0.0),
                    doc.number(dy, 'friction', 0.0),
                    doc.number(dy, 'spring_stiffness', 0.0),
                    doc.number(dy, 'spring_reference', 0.0),
                )
            )
            mim = ax_el.find('mimic') if ax_el is not None else None
            if mim is not None:
                mult, off = doc.number(mim, 'multiplier', 1.0), doc.number(mim, 'offset', 0.0)
                ref = doc.number(mim, 'reference', 0.0)  # follower = multiplier (leader - reference) + offset
                if tag == 'axis':
                    mimics.append((jn, mim.get('joint'), mult, off - mult * ref, f'mimic_{jn}'))
                else:
                    notes.append(
                        f"joint '{jn}' <{tag}><mimic joint='{mim.get('joint')}'>: a coupling of a second axis; "
                        'not represented (both coordinates are independent)'
                    )
        if jt == 'universal' and abs(axes[0] @ axes[1]) > 1e-9:
            raise doc.err(el, 'universal joint axes must be orthogonal')
        must = any(_flag(p.find('must_be_loop_joint')) for p in el.findall('physics/*'))
        J[jn] = dict(name=jn, type=jt, parent=par, child=chi, X=X, axes=axes, limits=limits, dyn=dyn, el=el, must=must)

    for c in cut:
        if c not in J:
            raise ModelError(path, None, f"cut: '{c}' is not a joint of the model{_hint(c, J)}")

    # ---- spanning tree: breadth-first, own directions first
    gear = [j for j in J.values() if j['type'] == 'gearbox']
    candidates = [j for j in J.values() if j['type'] != 'gearbox']
    forced = set(cut) | {j['name'] for j in candidates if j['must']}
    for jn in sorted(forced):
        notes.append(
            f"joint '{jn}' is cut: " + ('requested (cut=...)' if jn in set(cut) else '<physics> must_be_loop_joint')
        )
    world_joints = [j for j in candidates if j['parent'] == 'world' and j['name'] not in forced]
    canonical = mel.get('canonical_link') or next(iter(doc.links))
    if canonical not in doc.links:
        raise doc.err(mel, f"canonical_link '{canonical}' is not a link{_hint(canonical, doc.links)}")
    root = 'world' if world_joints else canonical
    adj = {}
    for j in candidates:
        if j['name'] in forced:
            continue
        adj.setdefault(j['parent'], []).append((j, False))
        adj.setdefault(j['child'], []).append((j, True))
    reached, tree, order = {root}, [], [root]
    while True:
        queue = deque(order)
        while queue:  # forward edges only
            lk = queue.popleft()
            for j, rev in adj.get(lk, ()):
                if not rev and j['child'] not in reached:
                    reached.add(j['child'])
                    tree.append((j, False))
                    order.append(j['child'])
                    queue.append(j['child'])
        # a link reachable only against a joint's direction: take the first such joint
        nxt = next(
            (
                (j, lk)
                for lk in order
                for j, rev in adj.get(lk, ())
                if rev and j['parent'] not in reached and j['parent'] != 'world'
            ),
            None,
        )
        if nxt is None:
            break
        j, lk = nxt
        reached.add(j['parent'])
        tree.append((j, True))
        order.append(j['parent'])
    unreached = [lk for lk in doc.links if lk not in reached]
    if unreached:
        raise ModelError(
            path,
            None,
            f'links not connected to the {"world" if root == "world" else "canonical link " + repr(root)} '
            f'by joints: {unreached}',
        )
    tree_names = {j['name'] for j, _ in tree}
    cuts = [j for j in candidates if j['name'] not in tree_names]
    for j, rev in tree:
        if rev:
            notes.append(
                f"joint '{j['name']}' is in the tree against its direction ('{j['child']}' -> "
                f"'{j['parent']}'): its coordinate keeps the SDF sign"
                + (' (the ball joint quaternion is the inverse rotation)' if j['type'] == 'ball' else '')
            )

    # ---- base
    if root == 'world':
        fixed_world = all(j['type'] == 'fixed' for j in world_joints)
        notes.append(
            'attached to the world by '
            + ', '.join(f"{j['type']} joint '{j['name']}'" for j in world_joints)
            + (': fixed base' if fixed_world else '')
        )
        root_kind = None
    elif static:
        notes.append('<static> model: the canonical link is fixed to the world')
        root_kind = None
    else:
        root_kind = root_joint
        notes.append(
            f"root link '{root}' (canonical link) on a {root_kind} root joint 'root_joint'"
            if root_kind
            else f"root link '{root}' (canonical link) fixed to the world (root_joint=None)"
        )
        Xr = doc.model_pose(root)
        if root_kind and not np.allclose(Xr, np.eye(4), atol=0.0, rtol=0.0):
            rpy = _matrix_rpy(Xr[:3, :3])
            notes.append(
                f"'{root}' is at xyz {_fmt(Xr[:3, 3])} rpy {_fmt(rpy)} in the model frame: the root joint's "
                'configuration of that pose places the model as the SDF does'
            )

    # ---- URDF
    link_xml, joint_xml, taken = [], [], set(doc.links) | set(J) | set(doc.frames) | {'world'}
    joint_types, loops = {}, []

    def fresh(n, el):
        if n in taken:
            raise doc.err(el, f"the generated name '{n}' is taken by a link or joint of the model")
        taken.add(n)
        return n

    def pose(lk):
        return doc.model_pose(lk) if lk != 'world' else _inv(_model_in_world(doc, mel))

    if root == 'world':
        link_xml.append('  <link name="world"/>')
    for ln, el in doc.links.items():
        link_xml.append(_link_xml(doc, ln, el, notes))

    def add_joint(nm, jtype, parent, child, X, axis=None, limit=None, dyn=None):
        parts = [f'  <joint name={quoteattr(nm)} type="{jtype}">', f'    <parent link={quoteattr(parent)}/>']
        parts.append(f'    <child link={quoteattr(child)}/>')
        o = _origin(X)
        if o:
            parts.append('    ' + o)
        if axis is not None:
            parts.append(f'    <axis xyz="{_fmt(axis)}"/>')
        if limit is not None:
            parts.append('    ' + limit)
        if dyn is not None and (dyn[0] or dyn[1]):
            parts.append(f'    <dynamics damping="{_r(dyn[0])}" friction="{_r(dyn[1])}"/>')
        parts.append('  </joint>')
        joint_xml.append('\n'.join(parts))

    def limit_xml(jtype, lim, sign):
        lo, hi, eff, vel = lim
        if sign < 0:
            lo, hi = -hi, -lo
        bounded = lo > -_UNBOUNDED or hi < _UNBOUNDED
        if jtype == 'revolute' and not bounded:
            return 'continuous', None
        if jtype == 'continuous':
            return 'continuous', None
        # URDF requires effort and velocity: SDF's "no limit" (negative) is written as 1e16
        eff, vel = (v if v >= 0 else _UNBOUNDED for v in (eff, vel))
        attrs = f'lower="{_r(max(lo, -_UNBOUNDED))}" upper="{_r(min(hi, _UNBOUNDED))}"'
        return jtype, f'<limit {attrs} effort="{_r(eff)}" velocity="{_r(vel)}"/>'

    for j, rev in tree:
        jn, jt, el = j['name'], j['type'], j['el']
        T, K = (j['child'], j['parent']) if rev else (j['parent'], j['child'])
        XJ = j['X']
        X_TJ = _inv(pose(T)) @ XJ
        X_JK = _inv(XJ) @ pose(K)
        sign = -1.0 if rev else 1.0
        if jt == 'fixed':
            add_joint(jn, 'fixed', T, K, X_TJ @ X_JK)
            continue
        if jt in _TWO_AXES:
            if jt == 'revolute2':
                notes.append(f"revolute2 joint '{jn}': two revolute joints '{jn}_1', '{jn}_2'")
            dofs = [(f'{jn}_1', 0), (f'{jn}_2', 1)]
            if rev:
                dofs = dofs[::-1]
            notes.append(
                f"{jt} joint '{jn}': revolute joints '{dofs[0][0]}', '{dofs[1][0]}' through the massless link '{jn}_cross'"
            )
        else:
            dofs = [(jn, 0)]
        # chain T -> [cross] -> K with the joint frame J at the first joint
        fold = np.linalg.norm(X_JK[:3, 3]) <= _ORIGIN_TOL
        last_child = K if fold else fresh(f'{jn}_frame', el)
        if not fold:
            link_xml.append(f'  <link name={quoteattr(last_child)}/>')
            notes.append(
                f"joint '{jn}': its frame is not at the origin of link '{K}': the massless link "
                f"'{last_child}' carries the joint"
            )
        parent, X = T, X_TJ
        for k, (dn, ia) in enumerate(dofs):
            is_last = k == len(dofs) - 1
            child = last_child if is_last else fresh(f'{jn}_cross', el)
            if not is_last:
                link_xml.append(f'  <link name={quoteattr(child)}/>')
            if k > 0:
                X = np.eye(4)
            if jt == 'ball':
                axis, utype, lim = np.array([0.0, 0.0, 1.0]), 'continuous', None
                joint_types[dn] = 'spherical'
            else:
                axis = sign * j['axes'][ia]
                utype, lim = limit_xml(_MOVABLE_1DOF.get(jt, 'revolute'), j['limits'][ia], sign)
            if is_last and fold:
                X = X @ _X(X_JK[:3, :3])
                axis = X_JK[:3, :3].T @ axis
            dyn = j['dyn'][ia] if j['dyn'] else None
            add_joint(fresh(dn, el) if dn != jn else dn, utype, parent, child, X, axis, lim, dyn)
            if dyn is not None and dyn[2]:
                notes.append(
                    f"joint '{jn}': spring (stiffness {dyn[2]!r}, reference {dyn[3]!r}) not represented "
                    '(the model has no joint springs)'
                )
            parent = child
        if not fold:
            add_joint(fresh(f'{jn}_offset', el), 'fixed', last_child, K, X_JK)

    for fn, el in doc.frames.items():  # <frame>s: massless links fixed to the link they follow
        if fn.endswith('::__model__'):
            continue
        base, seen = fn, set()
        while base in doc.frames and base not in seen:
            seen.add(base)
            base = doc.frames[base].get('attached_to') or '__model__'
        if base in doc.joints:
            base = J[base]['child']
        if base == '__model__':  # the model frame is attached to the canonical link
            base = canonical
        if base not in doc.links:
            raise doc.err(el, f"attached_to '{doc.frames[fn].get('attached_to')}' does not lead to a link")
        link_xml.append(f'  <link name={quoteattr(fn)}/>')
        add_joint(fresh(f'{fn}_fixed', el), 'fixed', base, fn, _inv(pose(base)) @ doc.model_pose(fn, el))

    for j in cuts:
        jn, jt, el = j['name'], j['type'], j['el']
        if jt == 'revolute2' and abs(j['axes'][0] @ j['axes'][1]) > 1e-9:
            raise doc.err(el, 'a cut revolute2 joint with non-orthogonal axes has no loop type: keep it in the tree')
        a, b = fresh(f'{jn}_a', el), fresh(f'{jn}_b', el)
        for cf, side in ((a, j['parent']), (b, j['child'])):
            link_xml.append(f'  <link name={quoteattr(cf)}/>')
            add_joint(fresh(f'{cf}_fixed', el), 'fixed', side, cf, _inv(pose(side)) @ j['X'])
        lp = {'name': jn, 'frame_a': a, 'frame_b': b}
        if jt == 'fixed':
            lp['type'] = 'weld'
        elif jt == 'ball':
            lp['type'] = 'spherical'
        elif jt in ('revolute', 'continuous', 'prismatic'):
            lp['type'] = 'prismatic' if jt == 'prismatic' else 'revolute'
            lp['axis'] = [float(x) for x in j['axes'][0]]
        else:
            lp['type'] = 'universal'
            lp['axes'] = [[float(x) for x in v] for v in j['axes']]
        loops.append(lp)
        lost = [
            w
            for w, on in (
                ('limits', any(lo > -_UNBOUNDED or hi < _UNBOUNDED for lo, hi, _, _ in j['limits'])),
                ('damping/friction', any(d[0] or d[1] for d in j['dyn'])),
                ('spring', any(d[2] for d in j['dyn'])),
            )
            if on
        ]
        notes.append(
            f"joint '{jn}' ({jt}, '{j['parent']}' -> '{j['child']}') cut: {lp['type']} loop between "
            f"'{a}' (on '{j['parent']}') and '{b}' (on '{j['child']}')"
            + (f'; {", ".join(lost)} not represented' if lost else '')
        )

    one_dof = {j['name'] for j, _ in tree if j['type'] in _MOVABLE_1DOF}
    for g in gear:
        coupling = _gearbox_coupling(doc, g, tree)
        el = g['el']
        what = (
            f"gearbox joint '{g['name']}' (ratio {el.findtext('gearbox_ratio', '1').strip()}, "
            f"'{g['parent']}' -> '{g['child']}', reference body "
            f"'{el.findtext('gearbox_reference_body', '').strip()}')"
        )
        if isinstance(coupling, str):
            notes.append(f'{what}: not represented ({coupling}); the two links move independently')
            continue
        follower, leader, mult = coupling
        mimics.append((follower, leader, mult, 0.0, f'gearbox_{g["name"]}'))
        notes.append(
            f'{what}: theta_2 = -ratio theta_1 about its axes, with theta_1 = the joint '
            f"'{leader}' and theta_2 = the joint '{follower}' (signs from their axes)"
        )
    for follower, leader, mult, off, lname in mimics:
        if follower in one_dof and leader in one_dof:
            loops.append(
                {
                    'name': lname,
                    'type': 'coupling',
                    'joint': follower,
                    'mimic': leader,
                    'multiplier': float(mult),
                    'offset': float(off),
                }
            )
            how = f"<mimic joint='{leader}'>" if lname.startswith('mimic_') else f"coupled to '{leader}'"
            notes.append(
                f"joint '{follower}' {how}: coupling loop '{lname}' (q_{follower} = {mult!r} q_{leader} + {off!r})"
            )
        else:
            notes.append(
                f"joint '{follower}' <mimic joint='{leader}'>: not represented (a coupling needs two one-DOF "
                'joints of the spanning tree; both coordinates are independent)'
            )
    robot = name or mel.get('name') or 'robot'
    urdf = '\n'.join(
        [
            '<?xml version="1.0"?>',
            f'<!-- imported from {os.path.basename(path)} by robot_dynamics.parsers.sdf -->',
            f'<robot name={quoteattr(robot)}>',
            *link_xml,
            *joint_xml,
            '</robot>',
            '',
        ]
    )
    sidecar = {
        'format': 'robot_dynamics/parsers/sidecar/1',
        'description': f'imported from {os.path.basename(path)} (SDFormat): spanning tree from '
        f"'{root}', {len(loops)} cut joint(s)",
    }
    if root_kind:
        sidecar['root_joint'] = root_kind
    if joint_types:
        sidecar['joint_types'] = joint_types
    if loops:
        sidecar['loops'] = loops
    if actuated is not None:
        sidecar['actuated'] = list(actuated)
    outside = {
        j['name']: 0.0
        for j, _ in tree
        if j['type'] in _MOVABLE_1DOF and not j['limits'][0][0] <= 0.0 <= j['limits'][0][1]
    }
    if outside:
        # the SDF pose is the zero configuration; the loader's neutral one clips into the limits
        sidecar['reference_configuration'] = outside
        notes.append(
            f'reference_configuration: the SDF pose (zero) of {sorted(outside)}, outside their limits '
            '(a guess for assembly)'
        )
    movable = [j['name'] for j, _ in tree if j['type'] != 'fixed']
    notes.append(
        f'spanning tree: {len(tree)} joint(s) from {root!r} ({len(movable)} movable); '
        f'{len(loops)} cut joint(s): {[lp["name"] for lp in loops]}'
    )
    notes.append(
        'actuated: '
        + (str(list(actuated)) if actuated is not None else 'not stated by SDF; every movable joint (default)')
    )
    result = ImportResult(name=robot, urdf=urdf, sidecar=sidecar, notes=notes, source=path)
    if reduce_redundant and any(lp['type'] == 'spherical' for lp in loops):
        _reduce_planar_ball_loops(result)
    return result


#: a loop row whose gradient is below this fraction of the loop's largest singular value at
#: every sampled configuration is redundant (the constraint solver's own rank decision drops
#: it too: robot_dynamics.algorithms.projection.DEFAULT_EPS)
REDUNDANT_ROW_TOL = 1e-8


def _reduce_planar_ball_loops(result, samples=3, seed=0):
    """Spherical loops closing a planar linkage have a position row (normal to the plane)
    whose gradient vanishes at every configuration: numerically redundant, it makes the
    constraint Jacobian rank deficient and the closure along it unobservable (a few 1e-10 of
    non-planarity in a file's rounded numbers then accumulates in a simulation). Such a loop
    becomes a ``point_on_line`` loop along the plane normal (the two in-plane rows), noted.

    The rows are sampled at the SDF pose and at ``samples - 1`` random configurations around
    it (the gradient of a planar linkage's normal row vanishes off the closure manifold too).
    """
    from robot_dynamics.algorithms.constraints import constraint_jacobian
    from robot_dynamics.parsers.importing import load_imported

    import warnings

    from robot_dynamics.errors import ModelWarning

    with warnings.catch_warnings():  # the user's own load of the result warns
        warnings.simplefilter('ignore', ModelWarning)
        model = load_imported(result)
    rng = np.random.default_rng(seed)
    q0 = model.reference_q()
    qs = [q0] + [model.integrate(q0, 0.3 * rng.standard_normal(model.nv)) for _ in range(samples - 1)]
    As = [constraint_jacobian(model, q) for q in qs]
    r = 0
    for lp, spec in zip(model.loops, result.sidecar['loops']):
        k = lp.nrows
        if lp.type == 'spherical':
            dirs = []
            for A in As:
                U, S, _ = np.linalg.svd(A[r : r + k])
                dirs.append((S[-1] / max(S[0], 1e-300), U[:, -1]))
            ratio = max(d[0] for d in dirs)
            same = all(abs(d[1] @ dirs[0][1]) > 1 - 1e-9 for d in dirs)
            if ratio <= REDUNDANT_ROW_TOL and same:
                n = dirs[0][1] * np.sign(dirs[0][1][np.argmax(np.abs(dirs[0][1]))]) + 0.0
                spec['type'] = 'point_on_line'
                spec['axis'] = [float(x) for x in n]
                result.notes.append(
                    f"loop '{lp.name}': its position row along {np.round(n, 6).tolist()} (in "
                    f"'{lp.frame_a}') has no gradient at {samples} configurations (largest ratio "
                    f"{ratio:.1e} to the loop's largest singular value): a ball joint closing a planar "
                    'linkage; the loop keeps the two in-plane rows (point_on_line along that direction)'
                )
        r += k


def _model_in_world(doc, mel):
    """Pose of the model frame in the world (the model's own ``<pose>``)."""
    rel, X = doc.pose_of(mel.find('pose'), mel)
    return X


def _link_xml(doc, ln, el, notes):
    """``<link>`` with the inertial of the SDF link (same frame, SI units)."""
    ine = el.find('inertial')
    if ine is None:
        if el.find('must_be_base_link') is None:
            notes.append(f"link '{ln}' has no <inertial>: SDF's default 1 kg with unit inertia")
        m, Xc, I = 1.0, np.eye(4), np.eye(3)
    else:
        m = doc.number(ine, 'mass', 1.0)
        rel, Xc = doc.pose_of(ine.find('pose'), el)
        if rel and rel != ln:
            Xc = _inv(doc.model_pose(ln)) @ doc.model_pose(rel, el) @ Xc
        it = ine.find('inertia')
        g = {
            k: doc.number(it, k, 1.0 if k in ('ixx', 'iyy', 'izz') else 0.0)
            for k in ('ixx', 'iyy', 'izz', 'ixy', 'ixz', 'iyz')
        }
        I = np.array([[g['ixx'], g['ixy'], g['ixz']], [g['ixy'], g['iyy'], g['iyz']], [g['ixz'], g['iyz'], g['izz']]])
        if m < 0:
            raise doc.err(el, f'<inertial><mass> is negative ({m})')
    o = _origin(Xc)
    ii = ' '.join(f'{k}="{_r(I[a, b])}"' for k, a, b in _INERTIA)
    return f'  <link name={quoteattr(ln)}><inertial>{o}<mass value="{_r(m)}"/><inertia {ii}/></inertial></link>'


def _gearbox_coupling(doc, g, tree):
    """A gearbox joint as a joint coupling, or why it is not one (a str).

    SDFormat: ``theta_2 = -gearbox_ratio theta_1``, theta_1 the angle from the reference body
    to the parent link about ``<axis>``, theta_2 from the reference body to the child link
    about ``<axis2>``, both zero at the model's pose. When the spanning tree joins each of the
    two links to the reference body by one revolute joint along that axis (the rotor and the
    output joint of a motor, as in Cassie's SDF), theta_1 = s_1 q_1 and theta_2 = s_2 q_2
    (s = +-1, the joint axis along or against the gearbox axis) and the gearbox is the coupling
    ``q_2 = -ratio s_1 s_2 q_1``. Returns (follower joint, leader joint, multiplier).
    """
    el = g['el']
    ref = (el.findtext('gearbox_reference_body') or '').strip()
    ratio = doc.number(el, 'gearbox_ratio', 1.0)
    sides = []
    for link, tag in ((g['parent'], 'axis'), (g['child'], 'axis2')):
        joint = next((j for j, rev in tree if j['child'] == link and not rev), None)
        if joint is None or joint['parent'] != ref or joint['type'] not in ('revolute', 'continuous'):
            return f"link '{link}' is not joined to the reference body '{ref}' by one revolute joint of the tree"
        ax_el = el.find(tag)
        xyz = ax_el.find('xyz') if ax_el is not None else None
        if xyz is None:
            raise doc.err(el, f'<{tag}><xyz> is required for a gearbox joint')
        a = np.array(doc.numbers(xyz, 3, f'<{tag}><xyz>'), float)
        if not np.linalg.norm(a) > 1e-12:
            raise doc.err(el, f'<{tag}><xyz>: zero axis')
        frame = xyz.get('expressed_in') or ('__model__' if _flag(ax_el.find('use_parent_model_frame')) else None)
        R = doc.model_pose(frame, el)[:3, :3] if frame else g['X'][:3, :3]
        a = R @ (a / np.linalg.norm(a))
        b = joint['X'][:3, :3] @ joint['axes'][0]
        dot = float(a @ b)
        if abs(abs(dot) - 1.0) > 1e-9:
            return f"the joint '{joint['name']}' does not turn about the gearbox's <{tag}>"
        sides.append((joint['name'], math.copysign(1.0, dot)))
    (leader, s1), (follower, s2) = sides
    return follower, leader, -ratio * s1 * s2
