// name: supersede_chain
// description: Every version linked to a memory by SUPERSEDES (older and newer), oldest first.
// param: id STRING
MATCH (m:Memory {id: $id})
OPTIONAL MATCH (m)-[:SUPERSEDES*1..20 (e, x | WHERE e.gone IS NULL)]-(other:Memory)
WITH m, collect(DISTINCT other) AS others
UNWIND others + [m] AS v
WITH DISTINCT v
RETURN v.id AS id, v.created AS created, v.status AS status,
       size(v.superseded_by) = 0 AS current, v.text AS text
ORDER BY created
