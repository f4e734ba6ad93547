"""Registry of simulated plants (what ``sim_node`` integrates), keyed by a name and a backend.

``make_plant(kind, model, q0=None, dt=1e-3, backend='rigid', **options)`` returns a
:class:`robot_dynamics.plants.rigid.Plant` (``reset``, ``step(tau, dt)``, ``q``, ``qd``, ``t``).

``kind`` says what the actuators are: ``'rigid'`` (effort on the joints), ``'hydraulic'``
(valve voltages into the cylinders' pressure dynamics), ``'sea'`` (motor torques through series
springs). ``backend`` says what integrates the multibody:

* ``'rigid'`` (default): the package's own closed-chain integrator — for kind ``'rigid'`` the
  projection-method plant (:class:`~robot_dynamics.plants.rigid.ConstrainedPlant`; a tree is the
  case without loops), for ``'hydraulic'`` / ``'sea'`` their own RK4 of the multibody together
  with the actuator ODE.
* ``'mujoco'``: MuJoCo (:mod:`robot_dynamics.plants.mujoco_plant`), with the package's actuator
  models on top (:mod:`robot_dynamics.plants.mujoco_actuated`).

The kind ``'mujoco'`` is the same plant as kind ``'rigid'`` on backend ``'mujoco'`` (on either
backend). Plants other
than the rigid one register themselves with :func:`register_plant`, imported on first use.

External loads: a plant with ``supports_external_wrench = True`` (every plant but the 'sea' one on
the rigid backend) takes ``plant.set_external_wrench(frame, wrench, reference='local')``: the
wrench (force, moment) exerted by the environment on the robot body of ``frame``, at the frame
origin, in the frame's axes (see :class:`robot_dynamics.plants.rigid.Plant`); the others raise
InputError.
"""

from __future__ import annotations

from robot_dynamics.errors import InputError

#: the multibody integrators of :func:`make_plant`
BACKENDS = ('rigid', 'mujoco')

_REGISTRY = {}  # (kind, backend) -> factory
# plants provided by other modules: imported on first use, they call register_plant()
_PROVIDERS = {
    ('hydraulic', 'rigid'): 'robot_dynamics.plants.hydraulic',
    ('sea', 'rigid'): 'robot_dynamics.plants.sea',
    ('mujoco', 'rigid'): 'robot_dynamics.plants.mujoco_plant',
    ('rigid', 'mujoco'): 'robot_dynamics.plants.mujoco_plant',
    ('mujoco', 'mujoco'): 'robot_dynamics.plants.mujoco_plant',
    ('hydraulic', 'mujoco'): 'robot_dynamics.plants.mujoco_actuated',
    ('sea', 'mujoco'): 'robot_dynamics.plants.mujoco_actuated',
}


def register_plant(kind, factory, backend='rigid'):
    """Register ``factory(model, q0=None, dt=..., **options) -> Plant`` under ``kind`` on
    ``backend``."""
    _REGISTRY[(kind, backend)] = factory


def plant_kinds(backend='rigid'):
    """Names of the plants known on ``backend`` (registered, or provided by a module imported
    on first use)."""
    return sorted({k for k, b in set(_REGISTRY) | set(_PROVIDERS) if b == backend})


def make_plant(kind, model, q0=None, dt=1e-3, backend='rigid', **options):
    """Build a registered plant; an unknown backend, or a kind unknown on that backend, raises
    InputError listing the known ones."""
    if backend not in BACKENDS:
        raise InputError(f"unknown backend '{backend}' (known: {list(BACKENDS)})")
    key = (kind, backend)
    if key not in _REGISTRY and key in _PROVIDERS:
        import importlib

        importlib.import_module(_PROVIDERS[key])
    if key not in _REGISTRY:
        if backend != 'rigid' and kind in plant_kinds('rigid'):
            raise InputError(f"plant '{kind}' has no {backend} backend (plants on {backend}: {plant_kinds(backend)})")
        raise InputError(f"unknown plant '{kind}' (known: {plant_kinds(backend)})")
    return _REGISTRY[key](model, q0=q0, dt=dt, **options)


def _rigid(model, q0=None, dt=1e-3, **options):
    from robot_dynamics.plants.rigid import ConstrainedPlant

    return ConstrainedPlant(model, q0, dt=dt, **options)


register_plant('rigid', _rigid)
