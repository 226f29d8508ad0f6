// name: co_occurrence_neighbourhood
// description: Memories within `depth` CO_OCCURS hops (at most 3) of a memory, nearest first.
// param: id STRING
// param: depth INT64 = 2
// param: owner STRING = ""
MATCH (m:Memory {id: $id})-[r:CO_OCCURS*1..3 (e, x | WHERE e.gone IS NULL)]-(n:Memory)
// Kuzu 0.11 takes no parameter inside a recursive pattern's predicate or a list
// comprehension: the owner is filtered over the path's nodes afterwards.
WITH m, n, r, $owner AS owner
WHERE n.id <> m.id AND length(r) <= $depth
  AND (owner = "" OR (m.owner = owner AND n.owner = owner
                      AND size(list_filter(nodes(r), x -> coalesce(x.owner, "") <> owner)) = 0))
RETURN n.id AS id, min(length(r)) AS hops, n.status AS status, n.text AS text
ORDER BY hops, id
