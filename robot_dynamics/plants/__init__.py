"""Plants: what the controllers act on. One :class:`~robot_dynamics.plants.rigid.Plant` interface
(rigid closed-chain, hydraulic boom, series-elastic PKM), the registry that builds a plant by kind
(:func:`make_plant`), and the stepping runner of ``sim_node`` (:mod:`.runner`)."""

from robot_dynamics.plants.registry import make_plant, plant_kinds, register_plant

__all__ = ['make_plant', 'plant_kinds', 'register_plant']
