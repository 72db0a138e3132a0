"""Shared test setup: strict rules (a rule bug fails the test instead of becoming an unknown check)."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = os.path.join(ROOT, "tests", "cases")
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

os.environ["GPUDOCTOR_STRICT"] = "1"
