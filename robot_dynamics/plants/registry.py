"""Registry of simulated plants (what ``sim_node`` integrates), keyed by a name.

``make_plant(kind, model, q0=None, dt=1e-3, **options)`` returns a
:class:`robot_dynamics.plants.rigid.Plant` (``reset``, ``step(tau, dt)``, ``q``, ``qd``, ``t``).
Built in: ``'rigid'`` — the closed-chain rigid-body plant of the projection method
(:class:`~robot_dynamics.plants.rigid.ConstrainedPlant`; a tree is the case without loops).
Other plants (hydraulic, series-elastic) register themselves with :func:`register_plant`.

External loads: a plant with ``supports_external_wrench = True`` ('rigid', 'hydraulic') takes
``plant.set_external_wrench(frame, wrench, reference='local')``: the wrench (force, moment)
exerted by the environment on the robot body of ``frame``, at the frame origin, in the frame's
axes (see :class:`robot_dynamics.plants.rigid.Plant`); the others ('sea') raise InputError.
"""

from __future__ import annotations

from robot_dynamics.errors import InputError

_REGISTRY = {}
# plants provided by other modules: imported on first use, they call register_plant()
_PROVIDERS = {
    'hydraulic': 'robot_dynamics.plants.hydraulic',
    'sea': 'robot_dynamics.plants.sea',
    'mujoco': 'robot_dynamics.plants.mujoco_plant',
}


def register_plant(kind, factory):
    """Register ``factory(model, q0=None, dt=..., **options) -> Plant`` under ``kind``."""
    _REGISTRY[kind] = factory


def plant_kinds():
    """Names of the known plants (registered, or provided by a module imported on first use)."""
    return sorted(set(_REGISTRY) | set(_PROVIDERS))


def make_plant(kind, model, q0=None, dt=1e-3, **options):
    """Build a registered plant; unknown kinds raise InputError listing the known ones."""
    if kind not in _REGISTRY and kind in _PROVIDERS:
        import importlib

        importlib.import_module(_PROVIDERS[kind])
    if kind not in _REGISTRY:
        raise InputError(f"unknown plant '{kind}' (known: {plant_kinds()})")
    return _REGISTRY[kind](model, q0=q0, dt=dt, **options)


def _rigid(model, q0=None, dt=1e-3, **options):
    from robot_dynamics.plants.rigid import ConstrainedPlant

    return ConstrainedPlant(model, q0, dt=dt, **options)


register_plant('rigid', _rigid)
