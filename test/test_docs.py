"""Every ```python block of README.md and docs/*.md runs as pasted.

Each block runs in a fresh interpreter (its own namespace: a block may not rely on an earlier
one) from a temporary directory outside the repository, so packaged files must be found with
``rd.data_path`` and not by a path relative to the clone. The package under test is the one the
test session imports (conftest: the source tree on PYTHONPATH). A block that needs a running
ROS 2 graph may be marked by the HTML comment ``<!-- not-run: reason -->`` on the line before
its fence; only those are skipped (they are counted: keep them rare).
"""

import glob
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = [os.path.join(ROOT, 'README.md')] + sorted(glob.glob(os.path.join(ROOT, 'docs', '*.md')))
MAX_NOT_RUN = 2  # blocks that may be marked not-run (a ROS graph needed)
_NOT_RUN = re.compile(r'^\s*<!--\s*not-run:\s*(.*?)\s*-->\s*$')


def python_blocks(path):
    """[(line of the fence, code, not-run reason or None)] of the ```python blocks of a file."""
    with open(path, encoding='utf-8') as fh:
        lines = fh.read().splitlines()
    out, i = [], 0
    while i < len(lines):
        if re.match(r'^\s*```python\s*$', lines[i]):
            start = i
            prev = next((ln for ln in reversed(lines[:i]) if ln.strip()), '')
            m = _NOT_RUN.match(prev)
            body = []
            i += 1
            while i < len(lines) and not re.match(r'^\s*```\s*$', lines[i]):
                body.append(lines[i])
                i += 1
            assert i < len(lines), f'{path}:{start + 1}: unterminated ```python block'
            out.append((start + 1, '\n'.join(body) + '\n', m.group(1) if m else None))
        i += 1
    return out


BLOCKS = [(os.path.relpath(p, ROOT), line, code, why) for p in DOCS for line, code, why in python_blocks(p)]


def test_blocks_found_and_not_run_is_rare():
    assert len(BLOCKS) >= 5, [b[:2] for b in BLOCKS]
    not_run = [f'{f}:{ln} ({why})' for f, ln, _, why in BLOCKS if why is not None]
    assert len(not_run) <= MAX_NOT_RUN, not_run


def test_block_parser(tmp_path):
    md = tmp_path / 'x.md'
    md.write_text(
        'text\n```bash\nls\n```\n<!-- not-run: needs a graph -->\n\n```python\n'
        'a = 1\n```\n```python\nb = 2\n\nc = 3\n```\n```yaml\nk: v\n```\n'
    )
    assert python_blocks(str(md)) == [(7, 'a = 1\n', 'needs a graph'), (10, 'b = 2\n\nc = 3\n', None)]


@pytest.mark.parametrize('doc,line,code,why', BLOCKS, ids=[f'{b[0]}:{b[1]}' for b in BLOCKS])
def test_python_block_runs(doc, line, code, why, tmp_path):
    if why is not None:
        pytest.skip(f'marked not-run: {why}')
    script = tmp_path / 'block.py'
    script.write_text(code)
    env = dict(os.environ, MPLBACKEND='Agg')
    r = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert r.returncode == 0, (
        f'{doc}:{line}: the ```python block fails as pasted:\n{code}\n--- stderr ---\n{r.stderr[-3000:]}'
    )
