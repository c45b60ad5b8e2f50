"""gpu-node-doctor: finds why a GPU inference node is slower than it should be."""

import os as _os

__version__ = "0.1.0"

#: ``GND_PLAIN=1`` turns every start-up shortcut off (``@record`` is ``@dataclass(frozen=True)``,
#: ``lazy`` patterns compile at once, the garbage collector runs, no command is prefetched, the
#: executable tears the interpreter down): the plain path that CI also runs the suite on.
PLAIN = _os.environ.get("GND_PLAIN") == "1"
