"""queries: the analyst's library of named Cypher queries, graph analytics and drawings."""
