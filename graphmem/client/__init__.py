"""The Python client of the HTTP sidecar: ``graphmem.connect(url, token=...)`` gives
``MemoryStore``'s methods, return types and errors over a store that ``graphmem serve``
holds, and ``discover`` finds the sidecar that serves a database directory.

The names are imported on first use: finding out that no sidecar serves a database
(``discover``) does not load the HTTP stack."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from .._discovery import Discovery, discover, forget_discovery, write_discovery
    from ._autostart import find_or_start
    from ._client import Client, connect
    from ._transport import AccessDeniedError, SidecarError, SidecarUnreachable, path_segment

_HOMES = {"Client": "._client", "connect": "._client", "Discovery": ".._discovery",
          "discover": ".._discovery", "forget_discovery": ".._discovery",
          "write_discovery": ".._discovery", "AccessDeniedError": "._transport",
          "SidecarError": "._transport", "SidecarUnreachable": "._transport",
          "path_segment": "._transport", "find_or_start": "._autostart"}

__all__ = ["AccessDeniedError", "Client", "Discovery", "SidecarError", "SidecarUnreachable",
           "connect", "discover", "find_or_start", "forget_discovery", "path_segment",
           "write_discovery"]


__getattr__, __dir__ = lazy_names(__name__, _HOMES)
