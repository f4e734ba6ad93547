"""URDF (or xacro) + loop sidecar -> :class:`~robot_dynamics.model.Model`.

Parsing uses ``urdfdom-py`` (ROS 2's own URDF parser); the tree is then validated here, because
urdfdom-py is lenient: every problem raises :class:`~robot_dynamics.errors.ModelError` naming
the file and the link/joint.

* revolute, continuous and prismatic joints become coordinates; fixed joints are merged into
  the parent body (inertia and frames); floating and planar joints are rejected.
* mimic joints load as ordinary coordinates (recorded in ``model.mimic``).
* meshes are never opened (geometry is irrelevant to dynamics), so missing mesh files are fine;
  ``<visual>``/``<collision>``, ``<transmission>``, ``<gazebo>``, ``<ros2_control>`` and other
  top-level extensions are skipped (``model.urdf_xml`` keeps the original text).
* massless links are legitimate (cut frames, universal-joint crosses).
* an XML declaration with an encoding (``<?xml version="1.0" encoding="utf-8"?>``) is fine,
  for files and for XML text (a ``robot_description``).

Error messages have the form ``"<file>: <element>: <what is wrong>"``, e.g.
``"arm.urdf: joint 'elbow' <origin xyz> (line 42): non-finite value 'nan 0 0'"``.
"""
from __future__ import annotations

import difflib
import io
import logging
import os
import re
from contextlib import redirect_stderr

import numpy as np

from .errors import ModelError
from .model import PRISMATIC, REVOLUTE, Model

log = logging.getLogger(__name__)

_SUPPORTED = {'revolute': REVOLUTE, 'continuous': REVOLUTE, 'prismatic': PRISMATIC}


def _rpy_matrix(rpy):
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def _pose(origin):
    """(R, p) of a urdfdom Pose (None -> identity)."""
    if origin is None:
        return np.eye(3), np.zeros(3)
    xyz = np.zeros(3) if origin.xyz is None else np.asarray(origin.xyz, float)
    rpy = np.zeros(3) if origin.rpy is None else np.asarray(origin.rpy, float)
    return _rpy_matrix(rpy), xyz


XACRO_REFUSED = ('xacro is not processed by default: xacro evaluates Python expressions '
                 '(${...}), runs $(env ...) and load_yaml, and its sandbox can be escaped, so a '
                 'model file could run code and copy environment variables or files into the '
                 'model; expand it yourself (xacro FILE > FILE.urdf) or opt in with '
                 'allow_xacro=True (CLI: --xacro) for files you trust')


def read_urdf_xml(source, allow_xacro=False):
    """Return ``(xml_text, source_name, directory)`` for a path (.urdf / .xacro) or XML string.

    Model files are data: a ``.xacro`` path is refused unless ``allow_xacro`` (see
    ``XACRO_REFUSED``). Raises :class:`ModelError` for a missing file, an undecodable file, a
    refused or failing xacro run or an argument of the wrong type.
    """
    if isinstance(source, bytes):
        try:
            source = source.decode('utf-8')
        except UnicodeDecodeError as exc:
            raise ModelError('<bytes>', None, f'URDF bytes are not valid UTF-8: {exc}') from None
    if isinstance(source, os.PathLike) or (isinstance(source, str)
                                           and not source.lstrip().startswith('<')):
        path = os.fspath(source)
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not path.strip():
            raise ModelError('<input>', None, 'empty URDF source: expected a URDF/xacro path '
                                              'or the URDF XML text')
        if not os.path.isfile(path):
            what = 'is a directory, not a URDF file' if os.path.isdir(path) else 'no such URDF file'
            raise ModelError(path, None, what)
        if path.endswith('.xacro'):
            if not allow_xacro:
                raise ModelError(path, None, XACRO_REFUSED)
            try:
                import xacro
            except ImportError as exc:  # pragma: no cover - xacro is a pinned dependency
                raise ModelError(path, None, 'xacro file given but xacro is not installed') from exc
            err = io.StringIO()
            try:
                with redirect_stderr(err):
                    xml = xacro.process_file(path).toprettyxml(indent='  ')
            except Exception as exc:
                raise ModelError(path, None, f'xacro failed: {type(exc).__name__}: {exc}') from exc
            finally:
                if err.getvalue().strip():
                    log.warning('%s: xacro: %s', path, err.getvalue().strip())
        else:
            try:
                with open(path, encoding='utf-8') as fh:
                    xml = fh.read()
            except UnicodeDecodeError as exc:
                raise ModelError(path, None, f'not a UTF-8 text file: {exc}') from None
            except OSError as exc:
                raise ModelError(path, None, f'cannot read: {exc}') from None
        return xml, path, os.path.dirname(os.path.abspath(path))
    if not isinstance(source, str):
        raise ModelError('<input>', None, f'expected a URDF/xacro path (str or os.PathLike) or '
                                          f'the URDF XML text, got {type(source).__name__}')
    return source, '<string>', None


# leading XML declaration: lxml refuses it on str input when it names an encoding
_XML_DECL = re.compile(r'^\ufeff?\s*<\?xml[^>]*\?>')

# numeric attributes checked before urdfdom-py sees the document:
# (element path below <link>/<joint>, attribute, number of values, allow +-inf)
_NUMERIC = {
    'link': [('inertial/origin', 'xyz', 3, False), ('inertial/origin', 'rpy', 3, False),
             ('inertial/mass', 'value', 1, False)]
            + [('inertial/inertia', a, 1, False) for a in ('ixx', 'ixy', 'ixz', 'iyy', 'iyz', 'izz')],
    'joint': [('origin', 'xyz', 3, False), ('origin', 'rpy', 3, False), ('axis', 'xyz', 3, False),
              ('limit', 'lower', 1, True), ('limit', 'upper', 1, True),
              ('limit', 'effort', 1, True), ('limit', 'velocity', 1, True),
              ('mimic', 'multiplier', 1, False), ('mimic', 'offset', 1, False),
              ('dynamics', 'damping', 1, False), ('dynamics', 'friction', 1, False)],
}
# a number as URDF parsers (C++ std::stod / urdfdom) read it: decimal, optional exponent, inf, nan
_NUMBER = re.compile(r'[+-]?((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|inf|infinity|nan)', re.I | re.A)


def _short(v, n=80):
    r = repr(v)
    return r if len(r) <= n else r[:n] + '...'


_JOINT_TYPES = ('revolute', 'continuous', 'prismatic', 'fixed', 'floating', 'planar')


def _prevalidate(xml, src, show_lines):
    """Check XML syntax, the <robot> root and the numeric attributes dynamics relies on.

    urdfdom-py reports these problems without naming the element (or not at all, e.g. NaN);
    here every message names the link/joint, the element and attribute (and the line).
    Returns the XML text for urdfdom-py: links and joints only, without visual/collision
    geometry (irrelevant to dynamics), and without the XML declaration.
    """
    from lxml import etree

    text = _XML_DECL.sub('', xml, count=1)
    if not text.strip():
        raise ModelError(src, None, 'empty URDF document')
    try:
        try:
            root = etree.fromstring(text)
        except ValueError:       # a declaration the regex above did not strip (odd encoding=)
            root = etree.fromstring(text.encode('utf-8', 'surrogateescape'))
    except etree.XMLSyntaxError as exc:
        line = f'line {exc.lineno}' if exc.lineno else None
        raise ModelError(src, line, f'XML syntax error: {exc.msg}') from None
    except (ValueError, LookupError) as exc:
        raise ModelError(src, None, f'XML declaration: {exc}') from None
    if root.tag != 'robot':
        raise ModelError(src, f'<{root.tag}>', 'the root element must be <robot>')
    if not root.get('name'):
        raise ModelError(src, '<robot>', "missing the 'name' attribute")

    def where(kind, name, el, extra=''):
        s = (f"{kind} '{name}'" if name is not None else f'<{kind}> #{k + 1} (unnamed)') + extra
        if show_lines and el is not None and el.sourceline:
            s += f' (line {el.sourceline})'
        return s

    for kind in ('link', 'joint'):
        for k, el in enumerate(root.findall(kind)):
            name = el.get('name')
            if not name:
                raise ModelError(src, where(kind, None, el), "missing the 'name' attribute")
            if kind == 'joint':
                jt = el.get('type')
                if jt is None:
                    raise ModelError(src, where(kind, name, el), "missing the 'type' attribute")
                if jt not in _JOINT_TYPES:
                    raise ModelError(src, where(kind, name, el),
                                     f"unknown joint type '{jt}' (URDF types: {_JOINT_TYPES})")
                for tag in ('parent', 'child'):
                    sub = el.find(tag)
                    if sub is None or not sub.get('link'):
                        raise ModelError(src, where(kind, name, el),
                                         f'missing <{tag} link="..."/>')
                mim = el.find('mimic')
                if mim is not None and not mim.get('joint'):
                    raise ModelError(src, where(kind, name, mim, ' <mimic>'),
                                     "missing the 'joint' attribute")
            if kind == 'link':
                ine = el.find('inertial')
                if ine is not None:
                    if ine.find('mass') is None:
                        raise ModelError(src, where(kind, name, ine, ' <inertial>'),
                                         'missing <mass value="..."/>')
                    if ine.find('inertia') is None:
                        raise ModelError(src, where(kind, name, ine, ' <inertial>'),
                                         'missing <inertia ixx=".." .../>')
            for path, attr, size, allow_inf in _NUMERIC[kind]:
                for sub in el.findall(path):
                    raw = sub.get(attr)
                    tag = path.split('/')[-1]
                    w = where(kind, name, sub, f' <{tag} {attr}>')
                    if raw is None:
                        required = (tag == 'mass' and attr == 'value') or tag == 'inertia' \
                            or (tag == 'axis' and attr == 'xyz')
                        if required:
                            raise ModelError(src, w, 'required attribute is missing')
                        continue
                    parts = raw.split()
                    if not all(_NUMBER.fullmatch(v) for v in parts):
                        # (Python's float() also reads '0_8' as 8 and '１' as 1: not URDF numbers)
                        raise ModelError(src, w, f'expected {size} number(s), got {_short(raw)}')
                    vals = [float(v) for v in parts]
                    if len(vals) != size:
                        raise ModelError(src, w, f'expected {size} number(s), got {_short(raw)}')
                    bad = [v for v in vals if v != v or (not allow_inf and v in (np.inf, -np.inf))]
                    if bad:
                        raise ModelError(src, w, f'non-finite value {raw!r}')
    # drop what dynamics never uses and urdfdom-py may fail on (ROS 2 <transmission> with
    # <plugin>/<role>, <gazebo>, <ros2_control>, non-standard geometry such as <capsule>)
    for child in list(root):
        if child.tag not in ('link', 'joint'):
            root.remove(child)
    for lk in root.findall('link'):
        for sub in lk.findall('visual') + lk.findall('collision'):
            lk.remove(sub)
    return etree.tostring(root, encoding='unicode')


def _parse(xml, src, show_lines=True):
    from urdf_parser_py import urdf as U
    from urdf_parser_py.xml_reflection import core as xcore

    text = _prevalidate(xml, src, show_lines)
    # urdfdom-py reports unknown elements through on_error (prints to stderr); keep them in
    # our log instead, and turn real parse failures into ModelError.
    old = xcore.on_error
    xcore.on_error = lambda msg: log.debug('%s: urdfdom-py: %s', src, msg)
    try:
        with redirect_stderr(io.StringIO()):
            return U.URDF.from_xml_string(text)
    except xcore.ParseError as exc:
        raise ModelError(src, str(exc.path), f'cannot parse URDF: {exc.e}') from exc
    except Exception as exc:
        raise ModelError(src, None, f'cannot parse URDF: {type(exc).__name__}: {exc}') from exc
    finally:
        xcore.on_error = old


def _check_inertial(src, link):
    """(mass, com (3,), I_com (3,3)) of a link in the link frame; validated."""
    ine = link.inertial
    if ine is None:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    el = f"link '{link.name}' <inertial>"
    m = float(ine.mass) if ine.mass is not None else 0.0
    if not np.isfinite(m) or m < 0:
        raise ModelError(src, el, f'mass must be finite and >= 0, got {m}')
    R, c = _pose(ine.origin)
    if ine.inertia is None:
        Ic = np.zeros((3, 3))
    else:
        Ic = np.asarray(ine.inertia.to_matrix(), float)
    if not np.all(np.isfinite(Ic)) or not np.all(np.isfinite(c)):
        raise ModelError(src, el, 'non-finite inertia or origin')
    ev = np.linalg.eigvalsh(Ic)
    tol = 1e-9 * max(1.0, np.abs(ev).max())
    if ev.min() < -tol:
        raise ModelError(src, el, f'inertia tensor is not positive semi-definite '
                                  f'(eigenvalues {ev})')
    s = ev.sum()
    if 2 * ev.max() > s + tol:
        raise ModelError(src, el, f'inertia violates the triangle inequality '
                                  f'(principal moments {ev}): not a physical body')
    if m == 0 and np.abs(Ic).max() > tol:
        raise ModelError(src, el, 'zero mass with non-zero rotational inertia')
    return m, c, R @ Ic @ R.T


def _hint(name, candidates):
    """' (did you mean 'x'?)' for a close match among candidates, else ''."""
    close = difflib.get_close_matches(str(name), [str(c) for c in candidates], n=1)
    return f" (did you mean '{close[0]}'?)" if close else ''


def _merge(m1, c1, I1, m2, c2, I2):
    """Combine two inertias (all in the same frame; I about each body's own COM)."""
    m = m1 + m2
    if m == 0:
        return 0.0, np.zeros(3), I1 + I2
    c = (m1 * c1 + m2 * c2) / m
    def shift(mi, ci):
        d = ci - c
        return mi * (d @ d * np.eye(3) - np.outer(d, d))
    return m, c, I1 + I2 + shift(m1, c1) + shift(m2, c2)


def build_model(source, loops=None, gravity=None, name=None, allow_xacro=False):
    """Build a :class:`Model` from a URDF path, xacro path or XML string.

    ``loops``: sidecar path, already-parsed dict, ``False`` (ignore any sidecar) or ``None``
    (pick up ``<stem>.loops.yaml`` next to a URDF file, e.g. ``four_bar.urdf`` ->
    ``four_bar.loops.yaml``, ``arm.urdf.xacro`` -> ``arm.loops.yaml``).
    ``gravity``: (3,) world gravity, default (0, 0, -9.81).
    """
    from . import loops as loopmod

    xml, src, directory = read_urdf_xml(source, allow_xacro)
    robot = _parse(xml, src, show_lines=not src.endswith('.xacro'))

    links = {}
    for lk in robot.links:
        if lk.name in links:
            raise ModelError(src, f"link '{lk.name}'", 'duplicate link name')
        links[lk.name] = lk
    if not links:
        raise ModelError(src, None, 'URDF has no links')
    child_joint = {}
    children = {n: [] for n in links}
    seen = set()
    for j in robot.joints:
        el = f"joint '{j.name}'"
        if j.name in seen:
            raise ModelError(src, el, 'duplicate joint name')
        seen.add(j.name)
        if j.parent not in links:
            raise ModelError(src, el, f"unknown parent link '{j.parent}'{_hint(j.parent, links)}")
        if j.child not in links:
            raise ModelError(src, el, f"unknown child link '{j.child}'{_hint(j.child, links)}")
        if j.parent == j.child:
            raise ModelError(src, el, f"link '{j.child}' is its own parent")
        if j.child in child_joint:
            raise ModelError(src, el, f"link '{j.child}' has two parent joints "
                                      f"('{child_joint[j.child].name}' and '{j.name}'): URDF must be "
                                      f"a tree; declare the closing joint in the loops sidecar")
        if j.type in ('floating', 'planar'):
            raise ModelError(src, el, f"joint type '{j.type}' is not supported (fixed-base "
                                      f"trees of revolute/continuous/prismatic/fixed joints only)")
        if j.type not in _SUPPORTED and j.type != 'fixed':
            raise ModelError(src, el, f"unknown joint type '{j.type}'")
        child_joint[j.child] = j
        children[j.parent].append(j)
    # a cycle: following the parent joints from some link comes back to it
    # (each link is walked once: a walk stops at a link already known to reach a root, O(n))
    done = set()
    for start in links:
        chain, on_chain, lk = [], set(), start
        while lk in child_joint and lk not in on_chain and lk not in done:
            chain.append(lk)
            on_chain.add(lk)
            lk = child_joint[lk].parent
        done.update(chain)
        if lk in on_chain:
            cyc = chain[chain.index(lk):][::-1]          # parent -> child order
            path = f"'{cyc[0]}'" + ''.join(f" -({child_joint[c].name})-> '{c}'"
                                           for c in cyc[1:] + cyc[:1])
            raise ModelError(src, f"joint '{child_joint[cyc[0]].name}'",
                             f"the joints form a cycle {path}: URDF must be a tree; cut the "
                             f"loop and declare the closing joint in the loops sidecar")
    roots = [n for n in links if n not in child_joint]
    if len(roots) != 1:  # (no roots is impossible here: that would be a cycle)
        raise ModelError(src, None, f'{len(roots)} root links {roots} (links without a parent '
                                    f'joint): URDF must be a single tree; connect them with '
                                    f'fixed or movable joints')
    root = roots[0]

    # depth-first traversal from the root, children sorted by joint name (urdfdom's order)
    jn, par, jt, jut, ax, Rf, pf, lo, hi, vl, el_, mim = [], [], [], [], [], [], [], [], [], [], [], {}
    body_inertia = []                    # per joint: [m, c, I]
    fr_names, fr_par, fr_R, fr_p = [], [], [], []
    visited = set()

    def add_link_inertia(jidx, R, p, link):
        m, c, Ic = _check_inertial(src, link)
        if m == 0 and not np.any(Ic):
            return
        if jidx < 0:
            return                       # inertia of links fixed to the world is irrelevant
        b = body_inertia[jidx]
        body_inertia[jidx] = list(_merge(b[0], b[1], b[2], m, R @ c + p, R @ Ic @ R.T))

    def _add_joint(j, parent, Rc, pc):
        el = f"joint '{j.name}'"
        a = np.array([1.0, 0.0, 0.0]) if j.axis is None else np.asarray(j.axis, float)
        na = np.linalg.norm(a)
        if not np.isfinite(na) or na < 1e-12:
            raise ModelError(src, el, f'zero or non-finite axis {a.tolist()}')
        if not (np.all(np.isfinite(Rc)) and np.all(np.isfinite(pc))):
            raise ModelError(src, el, 'non-finite origin')
        idx = len(jn)
        jn.append(j.name)
        par.append(parent)
        jt.append(_SUPPORTED[j.type])
        jut.append(j.type)
        ax.append(a / na)
        Rf.append(Rc)
        pf.append(pc)
        lim = j.limit
        if j.type == 'continuous' or lim is None:
            lo.append(-np.inf)
            hi.append(np.inf)
        else:
            lo.append(float(lim.lower) if lim.lower is not None else -np.inf)
            hi.append(float(lim.upper) if lim.upper is not None else np.inf)
            if lo[-1] > hi[-1]:
                raise ModelError(src, el + ' <limit>', f'lower {lo[-1]} > upper {hi[-1]}')
        vl.append(float(lim.velocity) if lim is not None and lim.velocity is not None else np.inf)
        el_.append(float(lim.effort) if lim is not None and lim.effort is not None else np.inf)
        for what, v in (('velocity', vl[-1]), ('effort', el_[-1])):
            if np.isnan(v) or v < 0:
                raise ModelError(src, el + ' <limit>', f'{what} limit must be >= 0, got {v}')
        if j.mimic is not None:
            mim[j.name] = (j.mimic.joint,
                           1.0 if j.mimic.multiplier is None else float(j.mimic.multiplier),
                           0.0 if j.mimic.offset is None else float(j.mimic.offset))
        body_inertia.append([0.0, np.zeros(3), np.zeros((3, 3))])
        return idx

    # entries: (link, joint index of the body it belongs to, placement in that joint frame,
    #          the URDF joint that leads to it if it is movable (created when popped))
    stack = [(root, -1, np.eye(3), np.zeros(3), None)]
    while stack:
        lname, jidx, R, p, mj = stack.pop()
        if lname in visited:
            raise ModelError(src, f"link '{lname}'", 'reached twice: the joints form a cycle')
        visited.add(lname)
        if mj is not None:
            jidx = _add_joint(mj, jidx, R, p)
            R, p = np.eye(3), np.zeros(3)
        fr_names.append(lname)
        fr_par.append(jidx)
        fr_R.append(R)
        fr_p.append(p)
        add_link_inertia(jidx, R, p, links[lname])
        pending = []
        for j in sorted(children[lname], key=lambda jj: jj.name):
            Rj, pj = _pose(j.origin)
            Rc, pc = R @ Rj, p + R @ pj       # child link frame in the frame of jidx at q = 0
            pending.append((j.child, jidx, Rc, pc, None if j.type == 'fixed' else j))
        # pop in joint-name order: the depth-first order of urdfdom (C++), KDL and Pinocchio
        stack.extend(reversed(pending))
    unreached = set(links) - visited
    if unreached:
        raise ModelError(src, None, f'links not connected to the root: {sorted(unreached)}')

    for jname, (other, _, _) in mim.items():
        el = f"joint '{jname}' <mimic>"
        if other == jname:
            raise ModelError(src, el, 'a joint cannot mimic itself')
        if other not in jn:
            fixed = any(j.name == other for j in robot.joints)
            raise ModelError(src, el, f"mimicked joint '{other}' is "
                                      + ('a fixed joint' if fixed else
                                         f'not a joint of the URDF{_hint(other, jn)}'))

    if gravity is None:
        grav = np.array([0.0, 0.0, -9.81])
    else:
        try:
            grav = np.asarray(gravity, dtype=float)
        except (TypeError, ValueError):
            grav = None
        if grav is None or grav.shape != (3,) or not np.all(np.isfinite(grav)):
            raise ModelError(src, None, f'gravity must be a finite 3-vector, got {gravity!r}')

    n = len(jn)
    f = lambda lst, shape: np.array(lst, float).reshape(shape)
    model = Model(
        name=name or robot.name or 'robot', source=src, joint_names=jn,
        parents=np.array(par, dtype=np.int64), joint_types=np.array(jt, dtype=np.int64),
        joint_urdf_types=jut, axes=f(ax, (n, 3)), R_fixed=f(Rf, (n, 3, 3)), p_fixed=f(pf, (n, 3)),
        mass=np.array([b[0] for b in body_inertia], float),
        com=f([b[1] for b in body_inertia], (n, 3)),
        inertia_com=f([b[2] for b in body_inertia], (n, 3, 3)),
        lower=np.array(lo, float), upper=np.array(hi, float),
        velocity_limit=np.array(vl, float), effort_limit=np.array(el_, float),
        frame_names=fr_names, frame_parent=np.array(fr_par, dtype=np.int64),
        frame_R=f(fr_R, (len(fr_names), 3, 3)), frame_p=f(fr_p, (len(fr_names), 3)),
        root_link=root, mimic=mim, urdf_xml=xml, gravity=grav,
    )

    # ---- loop sidecar
    spec_src = None
    if loops is None and directory is not None:
        base = os.path.basename(src)
        for ext in ('.urdf.xacro', '.xacro', '.urdf'):
            if base.endswith(ext):
                base = base[: -len(ext)]
                break
        cand = os.path.join(directory, base + '.loops.yaml')
        if os.path.isfile(cand):
            spec_src = cand
    elif loops is not None and loops is not False:
        spec_src = loops
    if spec_src is not None:
        loopmod.attach_loops(model, spec_src)
    else:
        model.actuated = list(model.joint_names)
        model.independent = list(model.joint_names)
        model.passive = []
    return model


def load_model(source, loops=None, gravity=None, name=None, allow_xacro=False) -> Model:
    """Load a robot: URDF/xacro path or XML string, plus its loop-closure sidecar.

    Parameters
    ----------
    source : str or PathLike
        ``.urdf`` or ``.xacro`` file, or the URDF XML itself (e.g. a ``robot_description``).
    loops : str, PathLike, dict, False or None
        Loop sidecar (format ``robot_dynamics/loops/1``). ``None`` picks up
        ``<stem>.loops.yaml`` next to the URDF; ``False`` ignores any sidecar.
    gravity : array_like (3,), optional
        World gravity acceleration [m/s^2]; default ``(0, 0, -9.81)``.
    allow_xacro : bool
        Expand a ``.xacro`` file (default False: model files are data; xacro evaluates Python,
        so only opt in for files you trust).

    Returns
    -------
    Model
        ``model.joint_names`` gives the order of q; ``model.loops``, ``model.actuated``,
        ``model.passive`` come from the sidecar (a plain tree: no loops, all joints actuated).

    Raises
    ------
    ModelError, LoopSpecError
        Naming the file and the offending element or key.

    Example
    -------
    >>> import robot_dynamics as rd
    >>> model = rd.load_model(rd.data_path('urdf/four_bar.urdf'))
    >>> model.joint_names
    ['crank_joint', 'coupler_joint', 'rocker_joint']
    """
    return build_model(source, loops=loops, gravity=gravity, name=name, allow_xacro=allow_xacro)
