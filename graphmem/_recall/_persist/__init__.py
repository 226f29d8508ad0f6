"""The recall index's file format: the whole index as arrays (``_codec``) in one file of
checksummed sections (``_file``). What saves and loads it beside a store is the
component ``graphmem._store._saved_index``."""
