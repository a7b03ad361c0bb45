-- Cost ledger (issue 14): replaced by the cost ledger work.
SELECT 1;
