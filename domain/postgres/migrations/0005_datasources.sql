-- Data sources (issue 14): replaced by the data-source work.
SELECT 1;
