"""The package is a layered house, and stays one.

- the import-linter contracts of ``.importlinter`` hold: every layer imports only the layers below
  it, nothing below ``ros/`` imports rclpy or a ROS message package, no import cycles;
- the contract names every layer folder of the package, and the package root holds only
  ``__init__.py``, ``model.py`` and ``errors.py``;
- ``ruff check`` and ``ruff format --check`` pass on the whole tree (settings: ``ruff.toml``);
- the tests mirror the package: one ``test/<layer>/`` folder per layer folder;
- no project history outside ``CHANGELOG.rst``: results and reasons, not how they were reached.
"""

import configparser
import os
import re
import shutil
import subprocess
import sys

import pytest
import suite_paths

ROOT = suite_paths.ROOT
PKG = os.path.join(ROOT, 'robot_dynamics')
BIN = os.path.dirname(sys.executable)
LAYER_ROOT_MODULES = {'__init__.py', 'model.py', 'errors.py'}


def _tool(name):
    path = os.path.join(BIN, name)
    return path if os.path.exists(path) else shutil.which(name)


def _contracts():
    cp = configparser.ConfigParser()
    cp.read(os.path.join(ROOT, '.importlinter'))
    return cp


def _layers():
    return _contracts()['importlinter:contract:layers']['layers'].split()


def _layer_folders():
    return sorted(
        d for d in os.listdir(PKG) if os.path.isfile(os.path.join(PKG, d, '__init__.py')) and not d.startswith('_')
    )


def test_import_contracts_hold():
    r = subprocess.run(
        [_tool('lint-imports'), '--config', os.path.join(ROOT, '.importlinter'), '--no-cache'],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert 'BROKEN' not in r.stdout
    assert r.stdout.count('KEPT') == len([s for s in _contracts().sections() if s.startswith('importlinter:contract')])


def test_the_contract_names_every_layer_and_the_root_holds_only_the_model_and_errors():
    layers = _layers()
    assert set(_layer_folders()) <= set(layers), f'layer folders missing from .importlinter: {_layer_folders()}'
    assert {'model', 'errors'} <= set(layers)
    root_modules = {f for f in os.listdir(PKG) if f.endswith('.py')}
    assert root_modules == LAYER_ROOT_MODULES, root_modules
    # every folder of the acyclic contract exists, and every layer folder is in it
    acyclic = _contracts()['importlinter:contract:acyclic']['ancestors'].split()
    assert set(acyclic) == {'robot_dynamics'} | {f'robot_dynamics.{d}' for d in _layer_folders()}


def test_a_lower_layer_importing_an_upper_one_breaks_the_contract(tmp_path):
    """The check can fail: a copy of the package with one upward import is refused."""
    dst = tmp_path / 'robot_dynamics'
    shutil.copytree(PKG, dst, ignore=shutil.ignore_patterns('__pycache__'))
    with open(dst / 'spatial' / 'lie.py', 'a') as f:
        f.write('\nfrom robot_dynamics.control import loop as _upward  # noqa: E402,F401\n')
    shutil.copy(os.path.join(ROOT, '.importlinter'), tmp_path / '.importlinter')
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    r = subprocess.run(
        [_tool('lint-imports'), '--no-cache'], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300
    )
    assert r.returncode != 0
    assert 'robot_dynamics.spatial.lie -> robot_dynamics.control' in r.stdout.replace('\n', ' ')


@pytest.mark.parametrize('args', [['check', '.'], ['format', '--check', '.']], ids=['lint', 'format'])
def test_ruff(args):
    r = subprocess.run([_tool('ruff'), *args, '--no-cache'], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]


def test_the_tests_mirror_the_package():
    test_dir = suite_paths.TEST_DIR
    for layer in _layer_folders():
        d = os.path.join(test_dir, layer)
        assert os.path.isdir(d), f'test/{layer}/ is missing'
        assert any(f.startswith('test_') and f.endswith('.py') for f in os.listdir(d)), f'test/{layer}/ has no tests'
    # no test module sits beside the package's layers at the top of test/ except whole-package ones
    top = sorted(f for f in os.listdir(test_dir) if f.startswith('test_') and f.endswith('.py'))
    assert top == [
        'test_architecture.py',
        'test_colcon.py',
        'test_docs.py',
        'test_environment.py',
        'test_package_import.py',
    ], top


# history markers: work sessions, issue numbers, re-measurements, dates, "was X"
HISTORY = re.compile(
    r'\bsession\s+\d+|\bissues?\s+#?\d+|\bre-?measured\b|\b20\d\d-[01]\d-[0-3]\d\b|\(was\s|\bwas\s+\d|\bthis turn\b',
    re.IGNORECASE,
)


def _tracked_text_files():
    r = subprocess.run(['git', 'ls-files'], cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:  # not a git checkout (an sdist): every file under the root
        files = []
        for d, ds, fs in os.walk(ROOT):
            ds[:] = [x for x in ds if x not in {'.git', '.venv', 'build', 'install', 'log', '__pycache__'}]
            files += [os.path.relpath(os.path.join(d, f), ROOT) for f in fs]
    else:
        files = r.stdout.split()
    for rel in files:
        if rel == 'test/test_architecture.py':  # the markers themselves, as test data
            continue
        if os.path.basename(rel) == 'CHANGELOG.rst' or rel.endswith(('.png', '.mcap', '.stl', '.dae', '.svg')):
            continue
        path = os.path.join(ROOT, rel)
        try:
            with open(path, encoding='utf-8') as f:
                yield rel, f.read()
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue


def test_no_project_history_outside_the_changelog():
    hits = []
    for rel, text in _tracked_text_files():
        for n, line in enumerate(text.splitlines(), 1):
            if HISTORY.search(line):
                hits.append(f'{rel}:{n}: {line.strip()[:120]}')
    assert not hits, f'{len(hits)} lines carry project history (belongs in CHANGELOG.rst):\n' + '\n'.join(hits[:60])


@pytest.mark.parametrize(
    'line',
    ['fixed in session 12', 'see issue 27', 'p95 0.2 ms (re-measured 2026-11-24)', 'the bound (was 535)', 'was 3 ms'],
)
def test_the_history_check_finds_markers(line):
    assert HISTORY.search(line)
