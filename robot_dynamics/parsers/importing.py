"""Importers of other robot descriptions: their common result and the registry.

An importer turns a description the URDF loader cannot read (SDFormat, MJCF, a URDF with a
frame-pair loop file) into what it reads: a URDF spanning tree (XML text) and a loop sidecar
(:mod:`robot_dynamics.parsers.sidecar`), plus notes saying what the importer decided (the
spanning tree, the cut joints, the loop types, what it could not represent). The result loads
in memory with :func:`load_imported`, or is written to files (``robot-dynamics import``).

Importers (:func:`import_description` picks one by the file suffix):

==================  ==============================================================
``.sdf``, ``.world``  :func:`robot_dynamics.parsers.sdf.import_sdf`
``.xml``, ``.mjcf``   :func:`robot_dynamics.parsers.mjcf.import_mjcf`
``.urdf`` + YAML      :func:`robot_dynamics.parsers.framepairs.import_framepairs`
                      (``frame_pairs=`` the toolbox-parallel-robots YAML)
==================  ==============================================================
"""

from __future__ import annotations

import importlib
import os
import warnings
from dataclasses import dataclass, field

from robot_dynamics.errors import LoopSpecError, ModelError, ModelWarning, _located

__all__ = ['ImportResult', 'load_imported', 'import_description', 'IMPORTERS']


@dataclass
class ImportResult:
    """What an importer produces.

    ``name``: robot name; ``urdf``: the URDF spanning tree (XML text); ``sidecar``: the loop
    sidecar content (a mapping in the format ``robot_dynamics/parsers/sidecar/1``);
    ``notes``: what the importer decided, one sentence each (tree, cut and coupling loops and
    their types, actuated joints, dropped elements); ``source``: the imported file;
    ``gravity``: (3,) world gravity [m/s^2] of the source, None for the package default
    (0, 0, -9.81).
    """

    name: str
    urdf: str
    sidecar: dict
    notes: list[str] = field(default_factory=list)
    source: str = ''
    gravity: tuple | None = None


def _renamed(err, source):
    """The error ``err`` (ModelError / LoopSpecError about in-memory text) naming ``source``."""
    text = str(err)
    prefix = f'{err.source}: '
    msg = text[len(prefix) :] if text.startswith(prefix) else text
    new = type(err).__new__(type(err))
    new.__dict__.update(err.__dict__)
    _located(new, source, None, msg)
    return new


def load_imported(result, **load_options):
    """Build the :class:`~robot_dynamics.model.Model` of an :class:`ImportResult` in memory.

    ``load_options``: those of :func:`robot_dynamics.load_model` (``gravity`` defaults to the
    result's; ``loops`` to its sidecar). ``model.source`` is ``result.source``. A
    :class:`ModelError` / :class:`LoopSpecError` names ``'<source> (imported URDF)'`` or
    ``'<source> (imported sidecar)'`` and the element or key.
    """
    from robot_dynamics.parsers.urdf import load_model

    opts = dict(load_options)
    opts.setdefault('name', result.name)
    if opts.get('gravity') is None and result.gravity is not None:
        opts['gravity'] = result.gravity
    if 'loops' not in opts:
        opts['loops'] = (result.sidecar, f'{result.source} (imported sidecar)') if result.sidecar else False
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always', ModelWarning)
            model = load_model(result.urdf, **opts)
        for w in caught:  # the loader's warnings name the imported file, not '<string>'
            if issubclass(w.category, ModelWarning) and str(w.message).startswith('<string>: '):
                text = f'{result.source} (imported URDF): {str(w.message)[len("<string>: ") :]}'
                warnings.warn(text, ModelWarning, stacklevel=2)
            else:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    except ModelError as exc:
        if exc.source == '<string>':
            raise _renamed(exc, f'{result.source} (imported URDF)') from exc
        raise
    except LoopSpecError as exc:
        if exc.source == '<string>':
            raise _renamed(exc, f'{result.source} (imported URDF)') from exc
        raise
    model.source = result.source
    return model


#: suffix -> (module, function) of the importer
IMPORTERS = {
    '.sdf': ('robot_dynamics.parsers.sdf', 'import_sdf'),
    '.world': ('robot_dynamics.parsers.sdf', 'import_sdf'),
    '.xml': ('robot_dynamics.parsers.mjcf', 'import_mjcf'),
    '.mjcf': ('robot_dynamics.parsers.mjcf', 'import_mjcf'),
    '.urdf': ('robot_dynamics.parsers.framepairs', 'import_framepairs'),
}


def import_description(path, **options):
    """Import ``path`` with the importer of its suffix (see the module docstring).

    A ``.urdf`` needs ``frame_pairs=`` (the toolbox-parallel-robots YAML of its closures);
    other ``options`` go to the importer. Returns an :class:`ImportResult`; raises
    :class:`ModelError` naming the file for an unknown suffix or a missing importer.
    """
    path = os.fspath(path)
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in IMPORTERS:
        raise ModelError(path, None, f"no importer for the suffix '{suffix}' (known: {', '.join(sorted(IMPORTERS))})")
    modname, func = IMPORTERS[suffix]
    yaml_path = options.pop('frame_pairs', None)
    if suffix == '.urdf' and yaml_path is None:
        raise ModelError(
            path,
            None,
            'a URDF imports with its frame-pair loop file (frame_pairs=..., CLI --frame-pairs); '
            'a URDF with a loops sidecar loads directly with load_model',
        )
    if suffix != '.urdf' and yaml_path is not None:
        raise ModelError(path, None, 'frame_pairs goes with a .urdf file')
    try:
        mod = importlib.import_module(modname)
    except ModuleNotFoundError as exc:
        if exc.name != modname:
            raise
        raise ModelError(path, None, f"the importer of '{suffix}' files ({modname}) is not installed") from None
    if suffix == '.urdf':
        return getattr(mod, func)(path, yaml_path, **options)
    return getattr(mod, func)(path, **options)
