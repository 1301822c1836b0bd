-- 0002_job_body_hash.sql - the SHA-256 of the bytes of the request body that
-- created a job, so a retry with the same Idempotency-Key and the very same
-- bytes finds its job before anything it names is resolved (docs/jobs.md).
-- NULL for jobs created before this migration, and for jobs made without HTTP.
ALTER TABLE jobs ADD COLUMN body_sha256 BLOB
	CHECK (body_sha256 IS NULL OR length(body_sha256) = 32);
