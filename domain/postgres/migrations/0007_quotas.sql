-- Quotas (issue 14): replaced by the quota work.
SELECT 1;
