// name: supersede_chain
// description: Every version linked to a memory by SUPERSEDES (older and newer), oldest first.
// param: id STRING
// param: owner STRING = ""
MATCH (m:Memory {id: $id})
WHERE $owner = "" OR m.owner = $owner
OPTIONAL MATCH (m)-[r:SUPERSEDES*1..20 (e, x | WHERE e.gone IS NULL)]-(other:Memory)
// the owner is filtered over the path's nodes (no parameter inside the pattern, Kuzu 0.11)
WITH m, other, r, $owner AS owner
WHERE other IS NULL OR owner = "" OR (other.owner = owner
      AND size(list_filter(nodes(r), x -> coalesce(x.owner, "") <> owner)) = 0)
WITH m, collect(DISTINCT other) AS others
// collect() of nothing but nulls is null in Kuzu 0.11, not an empty list
UNWIND coalesce(others, [m]) + [m] AS v
WITH DISTINCT v
RETURN v.id AS id, v.created AS created, v.status AS status,
       size(v.superseded_by) = 0 AS current, v.text AS text
ORDER BY created, id
