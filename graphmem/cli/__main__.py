"""``python -m graphmem.cli``: the same as the ``graphmem`` command."""

from . import main

if __name__ == "__main__":
    main()
