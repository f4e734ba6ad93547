"""What a model importer returns, and the model built from it in memory.

An importer (MJCF: :func:`robot_dynamics.parsers.mjcf.import_mjcf`) translates a foreign
description into this package's pair *URDF spanning tree + loop sidecar* and says what it
decided. :class:`ImportResult` holds that pair as text and data (write ``urdf`` to
``<name>.urdf`` and ``sidecar`` as YAML to ``<name>.loops.yaml`` to get files
:func:`robot_dynamics.load_model` reads); :func:`load_imported` builds the
:class:`~robot_dynamics.model.Model` without files, and its errors name the imported file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from robot_dynamics.errors import LoopSpecError, ModelError, _located


@dataclass
class ImportResult:
    """An imported model.

    name: robot name; urdf: URDF XML text of the spanning tree; sidecar: the loop sidecar
    content (the mapping of a ``<name>.loops.yaml``, format
    ``robot_dynamics/parsers/sidecar/1``); notes: what the importer decided, one sentence each
    (tree, cut and coupling loops and their types, actuated joints, dropped elements); source:
    path of the imported file; gravity: (3,) world gravity [m/s^2] of the source, None for
    the package default (0, 0, -9.81).
    """

    name: str
    urdf: str
    sidecar: dict
    notes: list = field(default_factory=list)
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
    if opts.get('gravity') is None and result.gravity is not None:
        opts['gravity'] = result.gravity
    if 'loops' not in opts:
        opts['loops'] = (result.sidecar, f'{result.source} (imported sidecar)')
    try:
        model = load_model(result.urdf, **opts)
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
