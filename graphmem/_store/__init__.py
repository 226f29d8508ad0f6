"""The store's components: each a class over the shared ``StoreContext`` (``_context``),
built and wired by the facade (``_facade``), which hands a component the others it calls.

Components run the algorithms of the packages below them (``_recall``, ``_learn``,
``_lifecycle``, ``_extract``, ``_kg``, ``_text``), which never import a component or the
context: the layer is in the path.
"""
