// name: kinds_by_status
// description: How many memories of each kind are in each lifecycle status.
MATCH (m:Memory)
RETURN m.kind AS kind, m.status AS status, count(*) AS memories
ORDER BY kind, status
