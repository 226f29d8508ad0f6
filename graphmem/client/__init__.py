"""The Python client of the HTTP sidecar: ``graphmem.connect(url, token=...)`` gives
``MemoryStore``'s methods, return types and errors over a store that ``graphmem serve``
holds, and ``discover`` finds the sidecar that serves a database directory."""

from ._client import Client, connect
from ._discovery import Discovery, discover, forget_discovery, write_discovery
from ._transport import AccessDeniedError, SidecarError, SidecarUnreachable, path_segment

__all__ = ["AccessDeniedError", "Client", "Discovery", "SidecarError", "SidecarUnreachable",
           "connect", "discover", "forget_discovery", "path_segment", "write_discovery"]
