"""ament_python / setuptools build for robot_dynamics.

The ROS 2 client libraries are deliberately *not* in install_requires: on a ROS 2
installation they come from the distribution (package.xml), on a machine without
ROS they come from the pinned wheels in requirements/ros.txt (extra ``ros``).
"""

import os
from glob import glob

from setuptools import find_packages, setup

PACKAGE = 'robot_dynamics'
# realpath: under `colcon build --symlink-install` setup.py is a symlink in build/ (abspath would
# look for requirements/ and data files there)
HERE = os.path.dirname(os.path.realpath(__file__))


def _files(pattern):
    return sorted(f for f in glob(os.path.join(HERE, pattern), recursive=True) if os.path.isfile(f))


def _rel(paths):
    return [os.path.relpath(p, HERE) for p in paths]


def _tree(top):
    """data_files entries that mirror directory `top` under share/<package>/."""
    out = {}
    for f in _rel(_files(f'{top}/**/*')):
        out.setdefault(os.path.join('share', PACKAGE, os.path.dirname(f)), []).append(f)
    return sorted(out.items())


def _reqs(name):
    with open(os.path.join(HERE, 'requirements', name)) as fh:
        return [ln.split('#')[0].strip() for ln in fh if ln.split('#')[0].strip()]


setup(
    name=PACKAGE,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'test.*', 'bench']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + PACKAGE]),
        ('share/' + PACKAGE, ['package.xml']),
        *_tree('launch'),
        *_tree('urdf'),
        *_tree('config'),
    ],
    install_requires=[r for r in _reqs('core.txt') if not r.startswith('xacro')],
    extras_require={
        'ros': _reqs('ros.txt'),
        'test': _reqs('test.txt'),
        'xacro': ['xacro==2.1.1'],
    },
    python_requires='>=3.10',
    zip_safe=False,
    maintainer='robot_dynamics developers',
    maintainer_email='robot-dynamics@example.org',
    description='Kinematics, dynamics and control of closed-chain robots (ROS 2, Python).',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'robot-dynamics = robot_dynamics.tools.cli:main',
            'sim_node = robot_dynamics.ros.sim_node:main',
            'kinematics_node = robot_dynamics.ros.kinematics_node:main',
            'dynamics_node = robot_dynamics.ros.dynamics_node:main',
            'controller_node = robot_dynamics.ros.controller_node:main',
            'trajectory_node = robot_dynamics.ros.trajectory_node:main',
            'ip_controller = robot_dynamics.ros.ip_controller:main',
            'ik_node = robot_dynamics.ros.ik_node:main',
            'vdc_controller = robot_dynamics.ros.vdc_controller:main',
            'sea_controller = robot_dynamics.ros.sea_controller:main',
            'closure_node = robot_dynamics.ros.closure_node:main',
        ],
    },
)
