"""Folders the tests read: the test folder (``test/``, its ``data/``) and the source tree."""

import os

TEST_DIR = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TEST_DIR)
DATA = os.path.join(TEST_DIR, 'data')
URDF_DIR = os.path.join(ROOT, 'urdf')
