-- 0007_tenant_served.sql - the order in which tenants were last served: a
-- claim of a tenant's job sets its last_served_seq to one more than the
-- largest in the table (NULL: not served since this migration), so the queue
-- serves tenants in turn (store_job_claim: fewest running jobs first, then
-- the tenant served least recently, then its oldest queued job; docs/jobs.md,
-- "Fair scheduling").  A sequence, not a time: two claims in one millisecond
-- still have an order.
ALTER TABLE tenants ADD COLUMN last_served_seq INTEGER;
