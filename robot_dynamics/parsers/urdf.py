"""URDF (or xacro) + loop sidecar -> :class:`~robot_dynamics.model.Model`.

The document is parsed once with lxml and read by this module's own reader, which validates
as it reads and builds the objects :func:`build_model` consumes, with the attribute names and
defaults of ``urdfdom-py`` (ROS 2's Python URDF parser): an absent ``<origin>`` is the identity,
an absent ``xyz``/``rpy`` is zero, an absent ``<axis>`` is (1, 0, 0), an absent ``<limit>``
leaves the joint unbounded, and of a repeated element only the first counts. One reading differs
from urdfdom's: a revolute or prismatic joint whose ``<limit>`` lacks ``lower`` or ``upper`` is
unbounded on that side, with a :class:`~robot_dynamics.errors.ModelWarning` naming the file, the
joint and the attribute (urdfdom, urdfdom-py and Pinocchio read the missing value as 0, which
locks a joint without both attributes at 0; ``joint_state_publisher`` skips such a joint with a
warning instead of locking it, and the URDF specification marks the attributes optional). It is linear in the size of the file (a 10 000-link chain loads
in a fraction of a second); urdfdom-py itself stays the independent check:
``build_model(..., reader='urdfdom')`` reads the same document with urdfdom-py, and the test
suite asserts that both readers give the same model (test/parsers/test_urdf_reader.py). urdfdom-py is
lenient, so the tree is validated here: every problem raises
:class:`~robot_dynamics.errors.ModelError` naming the file and the link/joint.

* revolute, continuous and prismatic joints become coordinates; fixed joints are merged into
  the parent body (inertia and frames); ``floating`` joints become free-flyers and ``planar``
  joints planar joints (:mod:`robot_dynamics.spatial.joints`).
* a ``<mimic joint= multiplier= offset=>`` joint is coupled to the joint it mimics by a
  ``coupling`` loop named ``mimic_<joint>`` (one row ``q - (multiplier q_mimicked + offset)``;
  recorded in ``model.mimic`` too); ``mimic='ignore'`` keeps it an independent coordinate. A
  sidecar coupling of the same joint replaces it.
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
import warnings
from contextlib import redirect_stderr
from types import SimpleNamespace

import numpy as np

from robot_dynamics.errors import LoopSpecError, ModelError, ModelWarning
from robot_dynamics.model import PRISMATIC, REVOLUTE, SUB_JOINTS, Joint, Model
from robot_dynamics.spatial.joints import joint_model

log = logging.getLogger(__name__)

_SUPPORTED = {'revolute': REVOLUTE, 'continuous': REVOLUTE, 'prismatic': PRISMATIC}


def _rpy_matrices(rpy, identity=None):
    """(k, 3, 3) rotation matrices of (k, 3) URDF roll-pitch-yaw angles; rows where the boolean
    mask ``identity`` is set (no ``<origin>`` element) are exactly the identity."""
    r, p, y = rpy[:, 0], rpy[:, 1], rpy[:, 2]
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    R = np.stack(
        [
            cy * cp,
            cy * sp * sr - sy * cr,
            cy * sp * cr + sy * sr,
            sy * cp,
            sy * sp * sr + cy * cr,
            sy * sp * cr - cy * sr,
            -sp,
            cp * sr,
            cp * cr,
        ],
        axis=-1,
    ).reshape(-1, 3, 3)
    if identity is not None and identity.any():
        R[identity] = np.eye(3)
    return R


_ZERO3 = (0.0, 0.0, 0.0)


def _poses(origins):
    """(R (k, 3, 3), p (k, 3)) of a list of urdfdom-style Poses (None -> identity)."""
    xyz = [_ZERO3 if o is None or o.xyz is None else o.xyz for o in origins]
    rpy = [_ZERO3 if o is None or o.rpy is None else o.rpy for o in origins]
    none = np.array([o is None for o in origins], dtype=bool)
    return (_rpy_matrices(np.array(rpy, float).reshape(-1, 3), none), np.array(xyz, float).reshape(-1, 3))


XACRO_REFUSED = (
    'xacro is not processed by default: xacro evaluates Python expressions '
    '(${...}), runs $(env ...) and load_yaml, and its sandbox can be escaped, so a '
    'model file could run code and copy environment variables or files into the '
    'model; expand it yourself (xacro FILE > FILE.urdf) or opt in with '
    'allow_xacro=True (CLI: --xacro) for files you trust'
)


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
    if isinstance(source, os.PathLike) or (isinstance(source, str) and not source.lstrip().startswith('<')):
        path = os.fspath(source)
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not path.strip():
            raise ModelError('<input>', None, 'empty URDF source: expected a URDF/xacro path or the URDF XML text')
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
        raise ModelError(
            '<input>',
            None,
            f'expected a URDF/xacro path (str or os.PathLike) or the URDF XML text, got {type(source).__name__}',
        )
    return source, '<string>', None


# leading XML declaration: lxml refuses it on str input when it names an encoding
_XML_DECL = re.compile(r'^\ufeff?\s*<\?xml[^>]*\?>')

# numeric attributes checked in every <link>/<joint> (in every occurrence of the element):
# (element path below <link>/<joint>, attribute, number of values, allow +-inf)
_NUMERIC = {
    'link': [
        ('inertial/origin', 'xyz', 3, False),
        ('inertial/origin', 'rpy', 3, False),
        ('inertial/mass', 'value', 1, False),
    ]
    + [('inertial/inertia', a, 1, False) for a in ('ixx', 'ixy', 'ixz', 'iyy', 'iyz', 'izz')],
    'joint': [
        ('origin', 'xyz', 3, False),
        ('origin', 'rpy', 3, False),
        ('axis', 'xyz', 3, False),
        ('limit', 'lower', 1, True),
        ('limit', 'upper', 1, True),
        ('limit', 'effort', 1, True),
        ('limit', 'velocity', 1, True),
        ('mimic', 'multiplier', 1, False),
        ('mimic', 'offset', 1, False),
        ('dynamics', 'damping', 1, False),
        ('dynamics', 'friction', 1, False),
    ],
}


def _grouped(checks):
    """_NUMERIC grouped by element, in the same order:
    [(below <inertial>?, element tag, [(attribute, size, allow +-inf, required)])]."""
    out = []
    for path, attr, size, allow_inf in checks:
        tag = path.split('/')[-1]
        if not out or out[-1][1] != tag:
            out.append((path.startswith('inertial/'), tag, []))
        required = tag == 'inertia' or (tag, attr) in (('mass', 'value'), ('axis', 'xyz'))
        out[-1][2].append((attr, size, allow_inf, required))
    return out


_CHECKS = {kind: _grouped(checks) for kind, checks in _NUMERIC.items()}
# a number as URDF parsers (C++ std::stod / urdfdom) read it: decimal, optional exponent, inf, nan
_NUMBER = re.compile(r'[+-]?((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|inf|infinity|nan)', re.I | re.A)


def _short(v, n=80):
    r = repr(v)
    return r if len(r) <= n else r[:n] + '...'


_JOINT_TYPES = ('revolute', 'continuous', 'prismatic', 'fixed', 'floating', 'planar')


def _numbers(raw, cache):
    """``(values, has_nan, has_inf)`` of an attribute value, None if it is not URDF numbers
    (memoised in ``cache``: model files repeat the same few values)."""
    try:
        return cache[raw]
    except KeyError:
        pass
    parts = raw.split()
    if all(_NUMBER.fullmatch(v) for v in parts):
        # (Python's float() also reads '0_8' as 8 and '１' as 1: not URDF numbers)
        vals = tuple(map(float, parts))
        got = (vals, any(v != v for v in vals), any(v in (np.inf, -np.inf) for v in vals))
    else:
        got = None
    cache[raw] = got
    return got


def _children(el):
    """``({tag: [child elements in document order]}, {tag: first child element})`` (comments
    and processing instructions are keyed by their non-string tag and never looked up)."""
    kids, first = {}, {}
    for ch in el:
        lst = kids.get(ch.tag)
        if lst is None:
            kids[ch.tag] = [ch]
            first[ch.tag] = ch
        else:
            lst.append(ch)
    return kids, first


def _prevalidate(xml, src, show_lines, read=True):
    """Parse the XML, check the <robot> root and the numeric attributes dynamics relies on, and
    read the robot.

    urdfdom-py reports these problems without naming the element (or not at all, e.g. NaN);
    here every message names the link/joint, the element and attribute (and the line).
    Returns ``(root, robot)``: the lxml root element and, if ``read``, the robot as
    :func:`build_model` consumes it, with urdfdom-py's attribute names and defaults
    (``SimpleNamespace`` objects: ``robot.name``, ``robot.links``, ``robot.joints``, a link's
    ``inertial.mass/origin/inertia``, a joint's ``type/parent/child/origin/axis/limit/mimic/
    dynamics/safety_controller/calibration``). With ``read``, the few things urdfdom-py rejects
    that the checks do not cover (``<limit>`` without effort or velocity, a malformed
    ``<safety_controller>``, ``<calibration>`` or link ``<origin>``, ``<robot version>`` other
    than 1.0) raise ModelError too, after the checks.
    """
    from lxml import etree

    text = _XML_DECL.sub('', xml, count=1)
    if not text.strip():
        raise ModelError(src, None, 'empty URDF document')
    try:
        try:
            root = etree.fromstring(text)
        except ValueError:  # a declaration the regex above did not strip (odd encoding=)
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

    def where(kind, k, name, el, extra=''):
        s = (f"{kind} '{name}'" if name is not None else f'<{kind}> #{k + 1} (unnamed)') + extra
        if show_lines and el is not None and el.sourceline:
            s += f' (line {el.sourceline})'
        return s

    cache = {}
    late = []  # (element, message) of what urdfdom-py alone would reject
    out = {'link': [], 'joint': []}

    def num(sub, attr, default=None):
        """A checked attribute: its single value (default if absent)."""
        raw = sub.get(attr)
        return default if raw is None else cache[raw][0][0]

    def vec(sub, attr):
        raw = sub.get(attr)
        return _ZERO3 if raw is None else cache[raw][0]

    def pose(sub):
        return None if sub is None else SimpleNamespace(xyz=vec(sub, 'xyz'), rpy=vec(sub, 'rpy'))

    def loose(kind, k, name, sub, attrs):
        """Attributes the checks above do not cover, read as urdfdom-py does (float()):
        ``attrs`` {attribute: number of values, 0 for a scalar} -> {attribute: float or tuple,
        None if absent}; what urdfdom-py would reject goes to ``late``."""
        vals = {}
        for attr, size in attrs.items():
            raw = sub.get(attr)
            if raw is None:
                vals[attr] = None
                continue
            try:
                parts = raw.split() if size else [raw]
                if size and len(parts) != size:
                    raise ValueError
                v = [float(x) for x in parts]
            except ValueError:
                late.append(
                    (
                        where(kind, k, name, sub, f' <{sub.tag} {attr}>'),
                        f'expected {size or 1} number(s), got {_short(raw)}',
                    )
                )
                v = [0.0] * (size or 1)
            vals[attr] = tuple(v) if size else v[0]
        return vals

    for kind in ('link', 'joint'):
        checks = _CHECKS[kind]
        for k, el in enumerate(root.iterchildren(kind)):
            name = el.get('name')
            if not name:
                raise ModelError(src, where(kind, k, None, el), "missing the 'name' attribute")
            kids, first = _children(el)
            if kind == 'joint':
                jt = el.get('type')
                if jt is None:
                    raise ModelError(src, where(kind, k, name, el), "missing the 'type' attribute")
                if jt not in _JOINT_TYPES:
                    raise ModelError(
                        src, where(kind, k, name, el), f"unknown joint type '{jt}' (URDF types: {_JOINT_TYPES})"
                    )
                for tag in ('parent', 'child'):
                    sub = first.get(tag)
                    if sub is None or not sub.get('link'):
                        raise ModelError(src, where(kind, k, name, el), f'missing <{tag} link="..."/>')
                mim = first.get('mimic')
                if mim is not None and not mim.get('joint'):
                    raise ModelError(src, where(kind, k, name, mim, ' <mimic>'), "missing the 'joint' attribute")
                inner = first_inner = None
            else:
                ines = kids.get('inertial', ())
                inner, first_inner = _children(ines[0]) if ines else ({}, {})
                if ines:
                    if 'mass' not in inner:
                        raise ModelError(
                            src, where(kind, k, name, ines[0], ' <inertial>'), 'missing <mass value="..."/>'
                        )
                    if 'inertia' not in inner:
                        raise ModelError(
                            src, where(kind, k, name, ines[0], ' <inertial>'), 'missing <inertia ixx=".." .../>'
                        )
                for ine in ines[1:]:  # (urdfdom-py reads the first one only)
                    for t, lst in _children(ine)[0].items():
                        inner[t] = inner.get(t, []) + lst
            for in_inertial, tag, attrs in checks:
                subs = (inner if in_inertial else kids).get(tag)
                if subs is None:
                    continue
                for attr, size, allow_inf, required in attrs:
                    for sub in subs:
                        raw = sub.get(attr)
                        if raw is None:
                            if required:
                                raise ModelError(
                                    src, where(kind, k, name, sub, f' <{tag} {attr}>'), 'required attribute is missing'
                                )
                            continue
                        got = _numbers(raw, cache)
                        if got is None or len(got[0]) != size:
                            raise ModelError(
                                src,
                                where(kind, k, name, sub, f' <{tag} {attr}>'),
                                f'expected {size} number(s), got {_short(raw)}',
                            )
                        if got[1] or (got[2] and not allow_inf):
                            raise ModelError(
                                src, where(kind, k, name, sub, f' <{tag} {attr}>'), f'non-finite value {raw!r}'
                            )
            if not read:
                continue
            # ---- the robot as urdfdom-py reads it (first occurrence of each element)
            if kind == 'link':
                o = first.get('origin')  # link origin: not URDF, but urdfdom-py reads it
                if o is not None:
                    o = SimpleNamespace(
                        **{
                            a: _ZERO3 if v is None else v
                            for a, v in loose(kind, k, name, o, {'xyz': 3, 'rpy': 3}).items()
                        }
                    )
                ine = None
                if ines:
                    t = first_inner['inertia']
                    ine = SimpleNamespace(
                        mass=num(first_inner['mass'], 'value'),
                        origin=pose(first_inner.get('origin')),
                        inertia=SimpleNamespace(
                            ixx=num(t, 'ixx'),
                            ixy=num(t, 'ixy'),
                            ixz=num(t, 'ixz'),
                            iyy=num(t, 'iyy'),
                            iyz=num(t, 'iyz'),
                            izz=num(t, 'izz'),
                        ),
                    )
                out[kind].append(SimpleNamespace(name=name, inertial=ine, origin=o))
                continue
            lim = first.get('limit')
            if lim is not None:
                for attr in ('effort', 'velocity'):
                    if lim.get(attr) is None:  # required by urdfdom-py (and urdfdom)
                        late.append((where(kind, k, name, lim, f' <limit {attr}>'), 'required attribute is missing'))
                lim = SimpleNamespace(
                    effort=num(lim, 'effort'),
                    velocity=num(lim, 'velocity'),
                    lower=num(lim, 'lower'),  # None when absent (see the module docstring)
                    upper=num(lim, 'upper'),
                )
            mim = first.get('mimic')
            if mim is not None:
                mim = SimpleNamespace(
                    joint=mim.get('joint'), multiplier=num(mim, 'multiplier'), offset=num(mim, 'offset')
                )
            dyn = first.get('dynamics')
            if dyn is not None:
                dyn = SimpleNamespace(damping=num(dyn, 'damping'), friction=num(dyn, 'friction'))
            saf = first.get('safety_controller')
            if saf is not None:
                if saf.get('k_velocity') is None:
                    late.append(
                        (where(kind, k, name, saf, ' <safety_controller k_velocity>'), 'required attribute is missing')
                    )
                v = loose(
                    kind,
                    k,
                    name,
                    saf,
                    dict.fromkeys(('k_velocity', 'k_position', 'soft_lower_limit', 'soft_upper_limit'), 0),
                )
                saf = SimpleNamespace(
                    k_velocity=v['k_velocity'],
                    **{
                        a: 0.0 if v[a] is None else v[a] for a in ('k_position', 'soft_lower_limit', 'soft_upper_limit')
                    },
                )
            cal = first.get('calibration')
            if cal is not None:
                v = loose(kind, k, name, cal, {'rising': 0, 'falling': 0})
                cal = SimpleNamespace(**{a: 0.0 if x is None else x for a, x in v.items()})
            ax = first.get('axis')
            out[kind].append(
                SimpleNamespace(
                    name=name,
                    type=el.get('type'),
                    parent=first['parent'].get('link'),
                    child=first['child'].get('link'),
                    origin=pose(first.get('origin')),
                    axis=None if ax is None else vec(ax, 'xyz'),
                    limit=lim,
                    mimic=mim,
                    dynamics=dyn,
                    safety_controller=saf,
                    calibration=cal,
                )
            )
    if not read:
        return root, None
    if late:
        raise ModelError(src, *late[0])
    version = root.get('version')
    if version is not None and version != '1.0':  # urdfdom-py accepts 1.0 only
        raise ModelError(src, '<robot version>', f"unsupported URDF version {version!r} (urdfdom-py reads '1.0' only)")
    return root, SimpleNamespace(
        name=root.get('name'), version=version or '1.0', links=out['link'], joints=out['joint']
    )


def _parse(xml, src, show_lines=True):
    """The robot read by this module's reader (see :func:`_prevalidate`)."""
    return _prevalidate(xml, src, show_lines)[1]


def _parse_urdfdom(xml, src, show_lines=True):
    """The robot read by urdfdom-py (``urdf_parser_py``), after the same checks: the
    independent check of :func:`_parse` (``build_model(..., reader='urdfdom')``; slow, about
    0.25 ms per link)."""
    from lxml import etree
    from urdf_parser_py import urdf as U
    from urdf_parser_py.xml_reflection import core as xcore

    root, _ = _prevalidate(xml, src, show_lines, read=False)
    # drop what dynamics never uses and urdfdom-py may fail on (ROS 2 <transmission> with
    # <plugin>/<role>, <gazebo>, <ros2_control>, non-standard geometry such as <capsule>)
    for child in list(root):
        if child.tag not in ('link', 'joint'):
            root.remove(child)
    for lk in root.findall('link'):
        for sub in lk.findall('visual') + lk.findall('collision'):
            lk.remove(sub)
    text = etree.tostring(root, encoding='unicode')
    # urdfdom-py reports unknown elements through on_error (prints to stderr); keep them in
    # our log instead, and turn real parse failures into ModelError.
    old = xcore.on_error
    xcore.on_error = lambda msg: log.debug('%s: urdfdom-py: %s', src, msg)
    try:
        with redirect_stderr(io.StringIO()):
            robot = U.URDF.from_xml_string(text)
    except xcore.ParseError as exc:
        raise ModelError(src, str(exc.path), f'cannot parse URDF: {exc.e}') from exc
    except Exception as exc:
        raise ModelError(src, None, f'cannot parse URDF: {type(exc).__name__}: {exc}') from exc
    finally:
        xcore.on_error = old
    # urdfdom-py reads an absent <limit lower/upper> as 0; keep "absent" (None), as _parse does
    for el, j in zip(root.iterchildren('joint'), robot.joints):
        lim = el.find('limit')
        if lim is not None and j.limit is not None:
            for attr in ('lower', 'upper'):
                if lim.get(attr) is None:
                    setattr(j.limit, attr, None)
    return robot


_READERS = {'fast': _parse, 'urdfdom': _parse_urdfdom}


def _warn(src, element, message, strict):
    """A description loaded as given but not physical or ambiguous: a :class:`ModelWarning`
    ``"<src>: <element>: <message>; loaded as given"``, or with ``strict`` a :class:`ModelError`."""
    if strict:
        raise ModelError(src, element, f'{message} (strict=True refuses what loads with a ModelWarning otherwise)')
    warnings.warn(f'{src}: {element}: {message}; loaded as given', ModelWarning, stacklevel=5)


def _check_inertials(src, links, strict=False):
    """Mass (L,), centre of mass (L, 3) and rotational inertia about it (L, 3, 3) of each link,
    in the link frame, and a list of the ModelError of each invalid link (None when valid).
    A non-physical inertia (not positive semi-definite, outside the triangle inequality,
    rotational inertia without mass) warns, or with ``strict`` raises ModelError.

    All links at once: the inertia tensors are checked (positive semi-definite, triangle
    inequality) with one batched eigenvalue computation."""
    L = len(links)
    rows, mass, origins, six = [], [], [], []
    for k, lk in enumerate(links):
        ine = lk.inertial
        if ine is None:
            continue
        rows.append(k)
        mass.append(0.0 if ine.mass is None else ine.mass)
        origins.append(ine.origin)
        t = ine.inertia
        six.append((0.0,) * 6 if t is None else (t.ixx, t.ixy, t.ixz, t.iyy, t.iyz, t.izz))
    m_all, c_all, I_all = np.zeros(L), np.zeros((L, 3)), np.zeros((L, 3, 3))
    errors = [None] * L
    if not rows:
        return m_all, c_all, I_all, errors
    m = np.array(mass, float)
    R, c = _poses(origins)
    Ic = np.array(six, float)[:, [0, 1, 2, 1, 3, 4, 2, 4, 5]].reshape(-1, 3, 3)
    finite = np.isfinite(Ic).all(axis=(1, 2)) & np.isfinite(c).all(axis=1)
    ev = np.linalg.eigvalsh(np.where(finite[:, None, None], Ic, 0.0))
    tol = 1e-9 * np.fmax(1.0, np.abs(ev).max(axis=1))
    bad_mass = ~np.isfinite(m) | (m < 0)
    # undefined dynamics (refused in both modes): a negative or non-finite mass, a non-finite
    # inertia or origin
    bad = bad_mass | ~finite
    # not a physical body, loaded as given as Pinocchio does (refused with strict): an inertia
    # with a negative principal moment (beyond the rounding of eigvalsh), outside the triangle
    # inequality, or rotational inertia on a massless link
    negative = ev.min(axis=1) < -64 * np.finfo(float).eps * np.abs(ev).max(axis=1)
    odd = ~bad & (
        negative | (2 * ev.max(axis=1) > ev.sum(axis=1) + tol) | ((m == 0) & (np.abs(Ic).max(axis=(1, 2)) > tol))
    )
    for i in np.flatnonzero(bad | odd).tolist():
        el = f"link '{links[rows[i]].name}' <inertial>"
        e = ev[i]
        if bad_mass[i]:
            msg = f'mass must be finite and >= 0, got {float(m[i])}'
        elif not finite[i]:
            msg = 'non-finite inertia or origin'
        elif e.min() < -tol[i]:
            msg = f'inertia tensor is not positive semi-definite (eigenvalues {e}): not a physical body'
        elif 2 * e.max() > e.sum() + tol[i]:
            msg = f'inertia violates the triangle inequality (principal moments {e}): not a physical body'
        elif m[i] == 0 and np.abs(Ic[i]).max() > tol[i]:
            msg = 'zero mass with non-zero rotational inertia'
        else:
            msg = f'a principal moment of inertia is slightly negative (principal moments {e}): not a physical body'
        if odd[i]:  # loaded as given, as Pinocchio does (strict: refused)
            _warn(src, el, msg, strict)
        else:
            errors[rows[i]] = ModelError(src, el, msg)
    m_all[rows], c_all[rows] = m, c
    I_all[rows] = R @ Ic @ R.transpose(0, 2, 1)
    return m_all, c_all, I_all, errors


def _hint(name, candidates):
    """' (did you mean 'x'?)' for a close match among candidates, else ''."""
    close = difflib.get_close_matches(str(name), [str(c) for c in candidates], n=1)
    return f" (did you mean '{close[0]}'?)" if close else ''


def _body_inertias(n, body, m, c, I, R, p):
    """Mass (n,), COM (n, 3) and rotational inertia about the COM (n, 3, 3) of the n bodies:
    the links of ``body`` (index of the body of each link, >= 0), each with mass ``m``, COM
    ``c`` and inertia ``I`` in its link frame, placed at ``(R, p)`` in its body frame."""
    cb = np.einsum('kij,kj->ki', R, c) + p
    Ib = R @ I @ R.transpose(0, 2, 1)
    M = np.bincount(body, weights=m, minlength=n)
    w = np.divide(m, M[body], out=np.zeros_like(m), where=M[body] > 0)  # 1 for a lone link
    com = np.zeros((n, 3))
    np.add.at(com, body, w[:, None] * cb)
    d = cb - com[body]  # parallel-axis theorem about the body COM
    shift = m[:, None, None] * (np.einsum('ki,ki->k', d, d)[:, None, None] * np.eye(3) - d[:, :, None] * d[:, None, :])
    Icom = np.zeros((n, 3, 3))
    np.add.at(Icom, body, Ib + shift)
    return M, com, Icom


ROOT_JOINTS = ('free_flyer', 'planar')
#: joint kinds a sidecar's ``joint_types`` may give a URDF joint
SIDECAR_JOINT_TYPES = ('spherical',)


def _sidecar_source(loops, src, directory):
    """The sidecar to read: the ``loops`` argument, or ``<stem>.loops.yaml`` beside a URDF file."""
    if loops is None and directory is not None:
        base = os.path.basename(src)
        for ext in ('.urdf.xacro', '.xacro', '.urdf'):
            if base.endswith(ext):
                base = base[: -len(ext)]
                break
        cand = os.path.join(directory, base + '.loops.yaml')
        return cand if os.path.isfile(cand) else None
    return loops if loops is not None and loops is not False else None


def _joint_kinds(src, spec, spec_src, jn, urdf_types, root_joint):
    """Kind of each tree joint (URDF type, or the sidecar's ``joint_types``) and the root joint."""
    kinds = [{'floating': 'free_flyer', 'continuous': 'revolute'}.get(t, t) for t in urdf_types]
    side_root = spec.get('root_joint') if spec else None
    if side_root is not None and side_root not in ROOT_JOINTS:
        raise LoopSpecError(spec_src, 'root_joint', f'must be one of {list(ROOT_JOINTS)}, got {side_root!r}')
    if root_joint is not None and root_joint not in ROOT_JOINTS:
        raise ModelError(src, None, f'root_joint must be one of {list(ROOT_JOINTS)} or None, got {root_joint!r}')
    types = (spec.get('joint_types') if spec else None) or {}
    if not isinstance(types, dict):
        raise LoopSpecError(spec_src, 'joint_types', 'must be a mapping joint: type')
    index = {n: i for i, n in enumerate(jn)}
    for j, kind in types.items():
        if j not in index:
            raise LoopSpecError(spec_src, f'joint_types.{j}', f'not a movable joint of the URDF{_hint(j, index)}')
        if kind not in SIDECAR_JOINT_TYPES:
            raise LoopSpecError(
                spec_src, f'joint_types.{j}', f'must be one of {list(SIDECAR_JOINT_TYPES)}, got {kind!r}'
            )
        kinds[index[j]] = kind
    return kinds, root_joint if root_joint is not None else side_root


def _expand(kinds, par, Rf, pf, lo, hi, vl, el_, jn, axes, types, fr_par):
    """Per-joint lists -> per-velocity-coordinate lists (a multi-DOF joint becomes its chain of
    one-DOF coordinates, see :mod:`robot_dynamics.model`); returns them, the joints and the
    frames' parents (the last coordinate of their joint)."""
    out = {k: [] for k in ('par', 'Rf', 'pf', 'lo', 'hi', 'vl', 'el', 'names', 'axes', 'types')}
    last, joints, iq = [], [], 0
    eye, zero = np.eye(3), np.zeros(3)
    for i, kind in enumerate(kinds):
        parent = last[par[i]] if par[i] >= 0 else -1
        iv = len(out['par'])
        subs = SUB_JOINTS.get(kind)
        if subs is None:
            rows = [(jn[i], parent, Rf[i], pf[i], lo[i], hi[i], vl[i], el_[i], axes[i], types[i])]
            nq = 1
        else:
            rows = []
            for c, (suffix, t, a) in enumerate(subs):
                ax = np.zeros(3)
                ax[a] = 1.0
                rows.append(
                    (
                        f'{jn[i]}/{suffix}',
                        parent if c == 0 else iv + c - 1,
                        Rf[i] if c == 0 else eye,
                        pf[i] if c == 0 else zero,
                        -np.inf,
                        np.inf,
                        vl[i],
                        el_[i],
                        ax,
                        t,
                    )
                )
            nq = joint_model(kind).nq
        for r in rows:
            for k, v in zip(('names', 'par', 'Rf', 'pf', 'lo', 'hi', 'vl', 'el', 'axes', 'types'), r):
                out[k].append(v)
        joints.append(Joint(jn[i], kind, iq, nq, iv, len(rows)))
        iq += nq
        last.append(len(out['par']) - 1)
    fp = [last[j] if j >= 0 else -1 for j in fr_par]
    return out, joints, fp


MIMIC_MODES = ('couple', 'ignore')


def _with_mimic_couplings(spec, mim, src):
    """The sidecar (data, source) with a coupling loop ``mimic_<joint>`` per URDF ``<mimic>`` that
    the sidecar does not couple itself (None and no mimic: None)."""
    data, spec_src = spec if spec is not None else ({'format': 'robot_dynamics/parsers/sidecar/1'}, src)
    loops = data.get('loops') or []
    if not isinstance(loops, list):
        return spec
    coupled = {lp.get('joint') for lp in loops if isinstance(lp, dict) and lp.get('type') == 'coupling'}
    extra = [
        {'name': f'mimic_{j}', 'type': 'coupling', 'joint': j, 'mimic': other, 'multiplier': k, 'offset': c}
        for j, (other, k, c) in mim.items()
        if j not in coupled
    ]
    if not extra:
        return spec
    return {**data, 'loops': list(loops) + extra}, spec_src


def build_model(
    source,
    loops=None,
    gravity=None,
    name=None,
    allow_xacro=False,
    reader='fast',
    root_joint=None,
    strict=False,
    mimic='couple',
):
    """Build a :class:`Model` from a URDF path, xacro path or XML string.

    ``loops``: sidecar path, already-parsed dict, ``False`` (ignore any sidecar) or ``None``
    (pick up ``<stem>.loops.yaml`` next to a URDF file, e.g. ``four_bar.urdf`` ->
    ``four_bar.loops.yaml``, ``arm.urdf.xacro`` -> ``arm.loops.yaml``).
    ``gravity``: (3,) world gravity, default (0, 0, -9.81).
    ``reader``: ``'fast'`` (this module's reader, linear time) or ``'urdfdom'`` (urdfdom-py,
    about ten times slower; the tests check that both give the same model).
    ``root_joint``: ``'free_flyer'`` or ``'planar'`` puts the URDF root link on that joint,
    named ``root_joint`` (Pinocchio's ``buildModelFromUrdf(path, JointModelFreeFlyer())``); the
    sidecar key ``root_joint`` does the same; None (default): the sidecar's, else a fixed base.
    ``strict``: raise :class:`ModelError` for what otherwise loads with a :class:`ModelWarning`
    (see :func:`load_model`).
    ``mimic``: ``'couple'`` (default) adds a ``coupling`` loop ``mimic_<joint>`` per URDF
    ``<mimic>``; ``'ignore'`` keeps mimic joints independent coordinates (``model.mimic`` lists
    them either way).
    """
    from robot_dynamics.parsers import sidecar as loopmod

    if reader not in _READERS:
        raise ValueError(f'reader must be one of {sorted(_READERS)}, got {reader!r}')
    if mimic not in MIMIC_MODES:
        raise ValueError(f'mimic must be one of {MIMIC_MODES}, got {mimic!r}')
    xml, src, directory = read_urdf_xml(source, allow_xacro)
    robot = _READERS[reader](xml, src, show_lines=not src.endswith('.xacro'))

    links = {}  # name -> index in robot.links
    for k, lk in enumerate(robot.links):
        if lk.name in links:
            raise ModelError(src, f"link '{lk.name}'", 'duplicate link name')
        links[lk.name] = k
    if not links:
        raise ModelError(src, None, 'URDF has no links')
    joints = robot.joints
    child_joint = {}
    children = {n: [] for n in links}  # link name -> indices in robot.joints
    seen = set()
    for jk, j in enumerate(joints):
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
            raise ModelError(
                src,
                el,
                f"link '{j.child}' has two parent joints "
                f"('{child_joint[j.child].name}' and '{j.name}'): URDF must be "
                f'a tree; declare the closing joint in the loops sidecar',
            )
        if j.type == 'planar' and j.axis is not None and not np.allclose(np.abs(j.axis), (0.0, 0.0, 1.0)):
            raise ModelError(
                src, el, f'a planar joint moves in the xy plane of its frame: axis must be z, got {j.axis}'
            )
        if j.type not in _SUPPORTED and j.type not in ('fixed', 'floating', 'planar'):
            raise ModelError(src, el, f"unknown joint type '{j.type}'")
        child_joint[j.child] = j
        children[j.parent].append(jk)
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
            cyc = chain[chain.index(lk) :][::-1]  # parent -> child order
            path = f"'{cyc[0]}'" + ''.join(f" -({child_joint[c].name})-> '{c}'" for c in cyc[1:] + cyc[:1])
            raise ModelError(
                src,
                f"joint '{child_joint[cyc[0]].name}'",
                f'the joints form a cycle {path}: URDF must be a tree; cut the '
                f'loop and declare the closing joint in the loops sidecar',
            )
    roots = [n for n in links if n not in child_joint]
    if len(roots) != 1:  # (no roots is impossible here: that would be a cycle)
        raise ModelError(
            src,
            None,
            f'{len(roots)} root links {roots} (links without a parent '
            f'joint): URDF must be a single tree; connect them with '
            f'fixed or movable joints',
        )
    root = roots[0]

    # everything per link / per joint that does not depend on the traversal, for all at once
    link_list = [lk.name for lk in robot.links]
    m_link, c_link, I_link, bad_inertial = _check_inertials(src, robot.links, strict)
    Rj_all, pj_all = _poses([j.origin for j in joints])
    origin_finite = (np.isfinite(Rj_all).all(axis=(1, 2)) & np.isfinite(pj_all).all(axis=1)).tolist()
    ax_raw = np.array([(1.0, 0.0, 0.0) if j.axis is None else j.axis for j in joints], float).reshape(-1, 3)
    ax_norm = np.sqrt(np.einsum('ij,ij->i', ax_raw, ax_raw))
    ax_ok = (np.isfinite(ax_norm) & (ax_norm >= 1e-12)).tolist()
    ax_unit = ax_raw / np.where(ax_ok, ax_norm, 1.0)[:, None]
    child_of = [links[j.child] for j in joints]
    movable = [j.type != 'fixed' for j in joints]
    joint_name = [j.name for j in joints]

    # depth-first traversal from the root, children sorted by joint name (urdfdom's order)
    jn, jks, par, Rf, pf, lo, hi, vl, el_, mim = [], [], [], [], [], [], [], [], [], {}
    fr_link, fr_par, fr_R, fr_p = [], [], [], []
    visited = [False] * len(link_list)
    eye, zero = np.eye(3), np.zeros(3)

    def _add_joint(jk, parent, Rc, pc, finite):
        j = joints[jk]
        el = f"joint '{j.name}'"
        if not ax_ok[jk]:
            raise ModelError(src, el, f'zero or non-finite axis {ax_raw[jk].tolist()}')
        if not finite:
            raise ModelError(src, el, 'non-finite origin')
        idx = len(jn)
        jn.append(j.name)
        jks.append(jk)
        par.append(parent)
        Rf.append(Rc)
        pf.append(pc)
        lim = j.limit
        if j.type == 'continuous' or lim is None:
            lo.append(-np.inf)
            hi.append(np.inf)
        else:
            lo.append(float(lim.lower) if lim.lower is not None else -np.inf)
            hi.append(float(lim.upper) if lim.upper is not None else np.inf)
            if j.type in ('revolute', 'prismatic'):
                missing = [a for a in ('lower', 'upper') if getattr(lim, a) is None]
                if missing:
                    _warn(
                        src,
                        el + ' <limit>',
                        f'no {" and no ".join(repr(a) for a in missing)} attribute: the {j.type} joint is '
                        f'read as unbounded on that side, limits [{lo[-1]}, {hi[-1]}] (urdfdom and '
                        'Pinocchio read a missing value as 0, which would lock the joint)',
                        strict,
                    )
            if lo[-1] > hi[-1]:
                raise ModelError(src, el + ' <limit>', f'lower {lo[-1]} > upper {hi[-1]}')
        vl.append(float(lim.velocity) if lim is not None and lim.velocity is not None else np.inf)
        el_.append(float(lim.effort) if lim is not None and lim.effort is not None else np.inf)
        for what, v in (('velocity', vl[-1]), ('effort', el_[-1])):
            if v != v or v < 0:
                raise ModelError(src, el + ' <limit>', f'{what} limit must be >= 0, got {v}')
        if j.mimic is not None:
            mim[j.name] = (
                j.mimic.joint,
                1.0 if j.mimic.multiplier is None else float(j.mimic.multiplier),
                0.0 if j.mimic.offset is None else float(j.mimic.offset),
            )
        return idx

    # entries: (link index, joint index of the body it belongs to, placement (R, p) in that
    # joint frame (None: the identity), the index in robot.joints of the movable joint that
    # leads to it (-1: none; the model joint is created when the entry is popped), whether that
    # joint's placement is finite)
    stack = [(links[root], -1, None, None, -1, True)]
    while stack:
        lk, jidx, R, p, mj, finite = stack.pop()
        if visited[lk]:
            raise ModelError(src, f"link '{link_list[lk]}'", 'reached twice: the joints form a cycle')
        visited[lk] = True
        if mj >= 0:
            jidx = _add_joint(mj, jidx, R, p, finite)
            R = p = None
        fr_link.append(lk)
        fr_par.append(jidx)
        fr_R.append(eye if R is None else R)
        fr_p.append(zero if R is None else p)
        if bad_inertial[lk] is not None:
            raise bad_inertial[lk]
        kids = children[link_list[lk]]
        if not kids:
            continue
        if len(kids) > 1:
            kids = sorted(kids, key=joint_name.__getitem__)
        pending = []
        for jk in kids:
            if R is None:  # child link frame in the frame of jidx at q = 0
                Rc, pc, fin = Rj_all[jk], pj_all[jk], origin_finite[jk]
            else:
                Rc, pc = R @ Rj_all[jk], p + R @ pj_all[jk]
                fin = not movable[jk] or bool(np.isfinite(Rc).all() and np.isfinite(pc).all())
            pending.append((child_of[jk], jidx, Rc, pc, jk if movable[jk] else -1, fin))
        # pop in joint-name order: the depth-first order of urdfdom (C++), KDL and Pinocchio
        stack.extend(reversed(pending))
    if not all(visited):
        unreached = {n for n, v in zip(link_list, visited) if not v}
        raise ModelError(src, None, f'links not connected to the root: {sorted(unreached)}')

    joint_set = set(jn)
    for jname, (other, _, _) in mim.items():
        el = f"joint '{jname}' <mimic>"
        if other == jname:
            raise ModelError(src, el, 'a joint cannot mimic itself')
        if other not in joint_set:
            fixed = any(j.name == other for j in joints)
            raise ModelError(
                src,
                el,
                f"mimicked joint '{other}' is "
                + ('a fixed joint' if fixed else f'not a joint of the URDF{_hint(other, jn)}'),
            )

    if gravity is None:
        grav = np.array([0.0, 0.0, -9.81])
    else:
        try:
            grav = np.asarray(gravity, dtype=float)
        except (TypeError, ValueError):
            grav = None
        if grav is None or grav.shape != (3,) or not np.all(np.isfinite(grav)):
            raise ModelError(src, None, f'gravity must be a finite 3-vector, got {gravity!r}')

    spec_src = _sidecar_source(loops, src, directory)
    spec = loopmod.read_spec(spec_src) if spec_src is not None else None
    kinds, root_kind = _joint_kinds(
        src, spec[0] if spec else None, spec[1] if spec else None, jn, [joints[i].type for i in jks], root_joint
    )
    if mimic == 'couple':
        kind_of = dict(zip(jn, kinds))
        for jname, (other, _, _) in mim.items():
            for j in (jname, other):
                if kind_of[j] not in ('revolute', 'prismatic'):
                    raise ModelError(
                        src,
                        f"joint '{jname}' <mimic>",
                        f"joint '{j}' is a {kind_of[j]} joint: a mimic coupling needs one-DOF joints "
                        "(load with mimic='ignore' to keep the joints uncoupled)",
                    )
    types = [_SUPPORTED.get(joints[i].type, PRISMATIC) for i in jks]
    axes = [ax_unit[i] for i in jks]
    if root_kind is not None:  # the root link on a joint named root_joint
        if 'root_joint' in joint_set:
            raise ModelError(src, "joint 'root_joint'", 'the name of the root joint is taken')
        kinds.insert(0, root_kind)
        par = [-1] + [p + 1 for p in par]
        for lst, v in (
            (jn, 'root_joint'),
            (Rf, eye),
            (pf, zero),
            (lo, -np.inf),
            (hi, np.inf),
            (vl, np.inf),
            (el_, np.inf),
        ):
            lst.insert(0, v)
        types.insert(0, PRISMATIC)
        axes.insert(0, np.array([0.0, 0.0, 1.0]))
        fr_par = [p + 1 for p in fr_par]
        jks = [-1] + jks
    ex, tree_joints, fr_par = _expand(kinds, par, Rf, pf, lo, hi, vl, el_, jn, axes, types, fr_par)
    n, nf = len(ex['names']), len(fr_link)
    fr_link, fr_par = np.array(fr_link, dtype=np.int64), np.array(fr_par, dtype=np.int64)
    frame_R, frame_p = np.array(fr_R, float).reshape(nf, 3, 3), np.array(fr_p, float).reshape(nf, 3)
    # the body of each joint: its child link and the links fixed to it (those with inertia)
    k = np.flatnonzero((fr_par >= 0) & ((m_link[fr_link] != 0) | I_link[fr_link].any(axis=(1, 2))))
    lk = fr_link[k]
    mass, com, inertia_com = _body_inertias(n, fr_par[k], m_link[lk], c_link[lk], I_link[lk], frame_R[k], frame_p[k])
    model = Model(
        name=name or robot.name or 'robot',
        source=src,
        joint_names=ex['names'],
        parents=np.array(ex['par'], dtype=np.int64),
        joint_types=np.array(ex['types'], dtype=np.int64),
        joint_urdf_types=[
            jt.kind if jt.nv > 1 else joints[jks[k]].type for k, jt in enumerate(tree_joints) for _ in range(jt.nv)
        ],
        axes=np.array(ex['axes'], float).reshape(n, 3),
        R_fixed=np.array(ex['Rf'], float).reshape(n, 3, 3),
        p_fixed=np.array(ex['pf'], float).reshape(n, 3),
        mass=mass,
        com=com,
        inertia_com=inertia_com,
        lower=np.array(ex['lo'], float),
        upper=np.array(ex['hi'], float),
        velocity_limit=np.array(ex['vl'], float),
        effort_limit=np.array(ex['el'], float),
        frame_names=[link_list[i] for i in fr_link.tolist()],
        frame_parent=fr_par,
        frame_R=frame_R,
        frame_p=frame_p,
        root_link=root,
        mimic=mim,
        urdf_xml=xml,
        gravity=grav,
        joints=tree_joints,
    )

    # ---- loop sidecar (+ the mimic couplings)
    from_sidecar = spec is not None
    if mim and mimic == 'couple':
        spec = _with_mimic_couplings(spec, mim, src)
    if spec is not None:
        loopmod.attach_loops(model, spec)
        if not from_sidecar:
            model.loops_source = None
    else:
        model.actuated = model.default_actuated()
        model.independent = list(model.actuated)
        act = set(model.actuated)
        model.passive = [j for j in model.joint_names if j not in act]
    return model


def load_model(
    source, loops=None, gravity=None, name=None, allow_xacro=False, root_joint=None, strict=False, mimic='couple'
) -> Model:
    """Load a robot: URDF/xacro path or XML string, plus its loop-closure sidecar.

    Parameters
    ----------
    source : str or PathLike
        ``.urdf`` or ``.xacro`` file, or the URDF XML itself (e.g. a ``robot_description``).
    loops : str, PathLike, dict, False or None
        Loop sidecar (format ``robot_dynamics/parsers/sidecar/1``). ``None`` picks up
        ``<stem>.loops.yaml`` next to the URDF; ``False`` ignores any sidecar.
    gravity : array_like (3,), optional
        World gravity acceleration [m/s^2]; default ``(0, 0, -9.81)``.
    allow_xacro : bool
        Expand a ``.xacro`` file (default False: model files are data; xacro evaluates Python,
        so only opt in for files you trust).
    root_joint : {'free_flyer', 'planar'} or None
        Put the URDF root link on a joint named ``root_joint`` of that kind (a floating base,
        as Pinocchio's ``buildModelFromUrdf(path, pin.JointModelFreeFlyer())``); the sidecar
        key ``root_joint: free_flyer`` does the same. Default: the sidecar's, else fixed.
    strict : bool
        Refuse (:class:`ModelError`) what loads with a :class:`ModelWarning` by default, as
        Pinocchio loads it: an inertia with a negative principal moment or outside the
        triangle inequality, rotational inertia on a massless link, a revolute/prismatic
        ``<limit>`` without ``lower`` or ``upper``. What leaves the dynamics undefined (a
        negative or non-finite mass, a non-finite inertia or inertial origin, a malformed
        ``<inertia>``) is a ModelError in both modes (a URDF inertia is symmetric by
        construction: six values).
    mimic : {'couple', 'ignore'}
        ``'couple'``: each URDF ``<mimic>`` joint becomes a ``coupling`` loop ``mimic_<joint>``
        (``q = multiplier q_mimicked + offset``); ``'ignore'``: an independent coordinate.

    Returns
    -------
    Model
        ``model.joint_names`` gives the order of q; ``model.loops``, ``model.actuated``,
        ``model.passive`` come from the sidecar (a plain tree: no loops, all joints actuated).

    Raises
    ------
    ModelError, LoopSpecError
        Naming the file and the offending element or key.

    Warns
    -----
    ModelWarning
        For a description loaded as given though not physical or ambiguous (see ``strict``).

    Example
    -------
    >>> import robot_dynamics as rd
    >>> model = rd.load_model(rd.data_path('urdf/four_bar.urdf'))
    >>> model.joint_names
    ['crank_joint', 'coupler_joint', 'rocker_joint']
    """
    return build_model(
        source,
        loops=loops,
        gravity=gravity,
        name=name,
        allow_xacro=allow_xacro,
        root_joint=root_joint,
        strict=strict,
        mimic=mimic,
    )
