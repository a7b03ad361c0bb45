-- Audit chain (issue 14): replaced by the audit work.
SELECT 1;
