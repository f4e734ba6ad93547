"""Seeded mutators of URDF text and loop sidecars (used by test/parsers/test_loader_fuzz.py).

Each mutation is one of: a nasty value in a random attribute / key, a deleted or duplicated
element / key, a renamed reference, a changed joint or loop type, truncated text. The loader
must answer every mutant with a model or the package's own error (RobotDynamicsError)."""

import copy
import os
import random
import re

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
URDF_DIR = os.path.join(os.path.dirname(HERE), 'urdf')

NASTY_TEXT = [
    'nan',
    'inf',
    '-inf',
    '1e400',
    '-1',
    '0',
    '',
    ' ',
    '0_8',
    'abc',
    '1 2',
    '1 2 3 4',
    '9' * 400,
    '-' + '9' * 400,
    '1e-320',
    '０.５',
    'true',
    '0x10',
    '1,5',
    '1.5.',
    '+',
    '1e',
    '∞',
    '\t3',
    'None',
    '-0',
    '1E+308 1E+308 1E+308',
    '3 nan 0',
]
NASTY_OBJ = [
    10**400,
    -(10**400),
    float('nan'),
    float('inf'),
    None,
    True,
    False,
    0,
    -1,
    1e308,
    'x',
    '',
    [],
    {},
    [[]],
    [{}],
    {'a': 1},
    [1, 2],
    [1, 2, 3],
    [1, 'a', 3],
    [0, 0, 0],
    {'type': 'sea'},
    {'type': None},
    [None],
    'revolute',
    ['x', 'y'],
    3.5,
    [10**400] * 3,
    {'x': {'y': 'z'}},
    [[1, 0, 0], [0, 1, 0]],
    [[1, 0, 0], [1, 0, 0]],
    {1: 2},
]


def robots():
    """(urdf path, sidecar path or None) of the shipped robots."""
    out = []
    for f in sorted(os.listdir(URDF_DIR)):
        if f.endswith('.urdf'):
            side = os.path.join(URDF_DIR, f[:-5] + '.loops.yaml')
            out.append((os.path.join(URDF_DIR, f), side if os.path.isfile(side) else None))
    return out


_ATTR = re.compile(r'(\w+)="([^"]*)"')


def mutate_urdf(text, rng):
    """One random mutation of URDF text."""
    kind = rng.randrange(7)
    attrs = list(_ATTR.finditer(text))
    if kind <= 2 and attrs:  # nasty value in an attribute
        m = rng.choice(attrs)
        val = (
            rng.choice(NASTY_TEXT) if kind < 2 else rng.choice([a.group(2) for a in attrs])
        )  # a value taken from elsewhere (a name...)
        return text[: m.start(2)] + val + text[m.end(2) :]
    elems = list(
        re.finditer(
            r'<(link|joint|origin|axis|limit|inertial|mass|inertia|parent|child|mimic)\b[^>]*?(/>|>.*?</\1>)',
            text,
            re.S,
        )
    )
    if kind == 3 and elems:  # delete an element
        m = rng.choice(elems)
        return text[: m.start()] + text[m.end() :]
    if kind == 4 and elems:  # duplicate an element
        m = rng.choice(elems)
        return text[: m.end()] + m.group(0) + text[m.end() :]
    if kind == 5:  # change a joint type
        types = ['revolute', 'continuous', 'prismatic', 'fixed', 'floating', 'planar', 'ball', '']
        js = list(re.finditer(r'type="(\w*)"', text))
        if js:
            m = rng.choice(js)
            return text[: m.start(1)] + rng.choice(types) + text[m.end(1) :]
    return text[: rng.randrange(len(text))] if text else text  # truncate


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


def mutate_sidecar(data, rng, names):
    """One random mutation of a parsed sidecar (a deep copy is returned). ``names``: link and
    joint names of the robot (used as plausible wrong values)."""
    d = copy.deepcopy(data)
    paths = [p for p in _paths(d) if p]
    p = rng.choice(paths)
    parent = d
    for k in p[:-1]:
        parent = parent[k]
    last = p[-1]
    kind = rng.randrange(5)
    if kind == 0:
        parent[last] = rng.choice(NASTY_OBJ)
    elif kind == 1:
        parent[last] = rng.choice(names)
    elif kind == 2:
        del parent[last]
    elif kind == 3 and isinstance(parent, dict):
        parent[
            rng.choice(NASTY_OBJ[:6] + ['extra_key', 'axis', 'axes', 'joint']) if rng.random() < 0.3 else 'extra_key'
        ] = rng.choice(NASTY_OBJ)
    elif kind == 3:
        parent.append(copy.deepcopy(parent[last]))
    else:  # a mapping used where a name is expected
        parent[last] = {rng.choice(names): rng.choice(NASTY_OBJ)}
    return d


def mutate_yaml_text(text, rng):
    """Text-level damage of a sidecar file."""
    kind = rng.randrange(4)
    if not text:
        return text
    if kind == 0:
        return text[: rng.randrange(len(text))]
    if kind == 1:
        i = rng.randrange(len(text))
        return (
            text[:i]
            + rng.choice(['\t', ':', '- ', '{', '[', '&a', '*a', '!!python/object:os.system', '\x00', '%'])
            + text[i:]
        )
    if kind == 2:
        return text.replace(':', ': 99999999999999999999999999999999999999999999999999', 1)
    lines = text.splitlines()
    i = rng.randrange(len(lines))
    return '\n'.join(lines[:i] + [lines[i]] + lines[i:])


def load_yaml(path):
    with open(path, encoding='utf-8') as fh:
        return yaml.safe_load(fh)


def make_rng(seed):
    return random.Random(seed)
