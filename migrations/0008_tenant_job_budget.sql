-- 0008_tenant_job_budget.sql - a tenant's cap on one plan job's worker
-- seconds (its candidate solves' wall seconds, all targets together;
-- docs/jobs.md, "Budget").  0: none of its own, the operator's --job-budget
-- holds; above 0: the smaller of the two holds.  Set by `uniapd tenant add
-- --max-job-budget S` or `uniapd tenant set NAME --max-job-budget S`.
ALTER TABLE tenants ADD COLUMN max_job_worker_s REAL NOT NULL DEFAULT 0 CHECK (max_job_worker_s >= 0);
