"""Where the packaged data files (URDFs, sidecars, configs) are."""

import os as _os


def data_path(relative=''):
    """Absolute path of a packaged data file, e.g. ``data_path('urdf/four_bar.urdf')``.

    Looks where this copy of the package lives: next to the package in a source checkout,
    then in the share directory of the prefix it is installed in
    (``<prefix>/lib/pythonX.Y/site-packages/robot_dynamics`` -> ``<prefix>/share/robot_dynamics``:
    a pip install or a colcon install space), then through the ament index, then in
    ``sys.prefix``. So a workspace's package reads the workspace's files even where another copy
    is installed in the environment.
    """
    import sys

    here = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))  # the package folder
    own_prefix = _os.path.dirname(_os.path.dirname(_os.path.dirname(_os.path.dirname(here))))
    cands = [
        _os.path.join(_os.path.dirname(here), relative),
        _os.path.join(own_prefix, 'share', 'robot_dynamics', relative),
    ]
    for c in cands:
        if _os.path.exists(c):
            return c
    try:  # a ROS 2 install (colcon): ask the ament index (imported only if needed)
        from ament_index_python.packages import get_package_share_directory

        c = _os.path.join(get_package_share_directory('robot_dynamics'), relative)
        cands.append(c)
        if _os.path.exists(c):
            return c
    except Exception:  # noqa: BLE001 - not on a ROS install / AMENT_PREFIX_PATH unset
        pass
    c = _os.path.join(sys.prefix, 'share', 'robot_dynamics', relative)
    cands.append(c)
    if _os.path.exists(c):
        return c
    raise FileNotFoundError(f"robot_dynamics data file '{relative}' not found in {cands}")
