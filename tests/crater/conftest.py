import sys
from pathlib import Path

# The fixture plugins beside these tests import by name.
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
