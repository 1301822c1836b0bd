-- postgres/0002_job_kind_allocation.sql - a third kind of job: 'allocation'
-- (POST /v1/allocations, docs/allocation.md), as SQLite's 0011 allows it.
-- The column's CHECK has PostgreSQL's default name for it.
ALTER TABLE jobs DROP CONSTRAINT jobs_kind_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_kind_check CHECK (kind IN ('plan', 'calibration', 'allocation'));
