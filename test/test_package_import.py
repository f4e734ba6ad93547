"""``import robot_dynamics`` is lazy (PEP 562) and the command line starts fast.

Every name the package exported when its imports were eager is still there (``rd.rnea``,
``rd.pkm``, ``from robot_dynamics import X``, ``import *``), but ``import robot_dynamics`` and the
command line's parser load neither numpy nor numba. Each check runs in a fresh interpreter.
"""

import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# the public names of ``import robot_dynamics`` before it became lazy (vars() of the package),
# plus those added since (rnea_time_derivatives, constrained_forward_dynamics_batch)
PUBLIC = [
    'AssemblyError',
    'BranchMonitor',
    'ConstrainedDynamics',
    'ConstrainedPlant',
    'ConstraintRankError',
    'ControllabilityError',
    'DEFAULT_EPS',
    'InputError',
    'Loop',
    'LoopSpecError',
    'Model',
    'ModelError',
    'ModelWarning',
    'Joint',
    'Plant',
    'RobotDynamicsError',
    'SimLog',
    'SingularMassMatrixError',
    'UnknownNameError',
    'assemble',
    'body_jacobian',
    'closure_errors',
    'closure_residual',
    'constrained_forward_dynamics',
    'constrained_forward_dynamics_batch',
    'constraint_bias',
    'constraint_force_control',
    'constraint_jacobian',
    'constraint_row_names',
    'constraint_terms',
    'constraints',
    'controllability',
    'crba',
    'data_path',
    'dynamics',
    'errors',
    'forward_dynamics',
    'forward_kinematics',
    'frame_acceleration',
    'frame_jacobian',
    'frame_jacobian_time_variation',
    'frame_placement',
    'frame_velocity',
    'frame_wrench_to_joint',
    'gravity_torques',
    'hybrid_control',
    'idle_motions',
    'independent_coordinates',
    'joint_placements',
    'kinematics',
    'kinetic_energy',
    'lagrange_forward_dynamics',
    'load_model',
    'loop_errors',
    'loop_residual',
    'model',
    'nonlinear_effects',
    'pidc',
    'pinv_abs',
    'pkm',
    'potential_energy',
    'project_velocity',
    'projected_inverse_dynamics',
    'projection',
    'rnea',
    'rnea_time_derivatives',
    'sim',
    'simulate',
    'space_jacobian',
    'urdf',
]


def _run(code, cwd=None):
    r = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=300, cwd=cwd)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_import_and_parser_load_neither_numba_nor_numpy():
    out = _run(
        'import robot_dynamics.tools.cli as c, sys; c.build_parser(); '
        "print('numba' in sys.modules, 'numpy' in sys.modules)"
    )
    assert out == 'False False'
    out = _run(
        'import sys, robot_dynamics.tools.cli as c\n'
        "try:\n    c.main(['warmup', '--help'])\nexcept SystemExit:\n    pass\n"
        "c.main(['info', '--list'])\n"
        "print('numba' in sys.modules, 'numpy' in sys.modules)"
    )
    assert 'five_bar' in out and 'gough_stewart' in out and out.endswith('False False'), out


def test_help_is_fast():
    # The help needs the interpreter, argparse and two small modules of this package: about
    # 0.05-0.2 s. The eager imports (numpy, numba, all kernel modules) made it 0.5 s on a warm
    # file cache and 5-7 s on a cold one. 2 s separates the two with a margin for a loaded
    # machine; the best of three runs discounts a single scheduling hiccup.
    exe = os.path.join(os.path.dirname(sys.executable), 'robot-dynamics')
    cmd = [exe, '--help'] if os.path.exists(exe) else [sys.executable, '-m', 'robot_dynamics.tools.cli', '--help']
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        times.append(time.perf_counter() - t0)
        assert r.returncode == 0 and 'warmup' in r.stdout, r.stderr
    assert min(times) < 2.0, times


def test_every_public_name_still_works():
    out = _run(
        'import sys, types\n'
        'import robot_dynamics as rd\n'
        "assert 'numpy' not in sys.modules and 'numba' not in sys.modules\n"
        f'names = {PUBLIC!r}\n'
        'missing = [n for n in names if n not in dir(rd)]\n'
        'assert not missing, missing\n'
        'assert sorted(rd.__all__) == sorted(names), set(rd.__all__) ^ set(names)\n'
        'vals = {n: getattr(rd, n) for n in names}\n'
        'from robot_dynamics import rnea, InputError, pkm, load_model, DEFAULT_EPS, sim\n'
        'assert rnea is rd.rnea is rd.dynamics.rnea and pkm is rd.pkm and sim is rd.sim\n'
        'assert isinstance(rd.pkm, types.ModuleType) and callable(rd.pkm.solve_ik)\n'
        'assert issubclass(rd.InputError, rd.RobotDynamicsError) and issubclass(rd.ModelError, ValueError)\n'
        "assert rd.lie.__name__ == 'robot_dynamics.spatial.lie'\n"
        'ns = {}\n'
        "exec('from robot_dynamics import *', ns)\n"
        'assert set(names) <= set(ns), set(names) - set(ns)\n'
        'try:\n    rd.no_such_name\nexcept AttributeError:\n    pass\n'
        "else:\n    raise AssertionError('no AttributeError')\n"
        "m = rd.load_model(rd.data_path('urdf/four_bar.urdf'))\n"
        'print(m.nq, rd.__version__)',
        cwd='/',
    )
    assert out.split()[1] == '0.1.0'


def test_submodules_import_on_their_own():
    """No circular import when a submodule is the first thing imported (the package no longer
    imports everything first)."""
    mods = [
        'robot_dynamics.plants.rigid',
        'robot_dynamics.plants.hydraulic',
        'robot_dynamics.plants.sea',
        'robot_dynamics.control',
        'robot_dynamics.pkm',
        'robot_dynamics.algorithms.partitioning',
        'robot_dynamics.plants.registry',
        'robot_dynamics.ros.launcher',
        'robot_dynamics.tools.warmup',
    ]
    code = (
        'import importlib, sys\n'
        f'for name in {mods!r}:\n'
        "    for k in [k for k in sys.modules if k.startswith('robot_dynamics')]:\n"
        '        del sys.modules[k]\n'
        '    importlib.import_module(name)\n'
        "print('ok')"
    )
    assert _run(code) == 'ok'
