// name: co_occurrence_neighbourhood
// description: Memories within `depth` CO_OCCURS hops (at most 3) of a memory, nearest first.
// param: id STRING
// param: depth INT64 = 2
MATCH (m:Memory {id: $id})-[r:CO_OCCURS*1..3 (e, x | WHERE e.gone IS NULL)]-(n:Memory)
WHERE n.id <> m.id AND length(r) <= $depth
RETURN n.id AS id, min(length(r)) AS hops, n.status AS status, n.text AS text
ORDER BY hops, id
