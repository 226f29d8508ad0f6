"""graphmem as the memory of agent frameworks, one module each, imported on demand:

    graphmem.integrations.langgraph    GraphmemStore, a LangGraph ``BaseStore``
                                       (``pip install 'graphmem[langgraph]'``)
    graphmem.integrations.llamaindex   GraphmemMemoryBlock and GraphmemRetriever for
                                       LlamaIndex (``pip install 'graphmem[llamaindex]'``)
    graphmem.integrations.pydantic_ai  memory_toolset: remember / recall / forget tools
                                       (``pip install 'graphmem[pydantic-ai]'``)

Each works over an embedded ``MemoryStore`` or a sidecar's ``graphmem.connect`` client.
Importing this package imports no framework.
"""
