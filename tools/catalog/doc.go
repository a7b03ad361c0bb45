// Package catalog holds the agent's dataset tools over a kb.Catalog:
// list_datasets (what exists) and get_dataset_details (the YAML
// definitions to read before writing SQL). Both are scoped: the scope is
// fixed by the host (WithScope) or derived per call from the run's tenant
// (agents.CallInfoFromContext), so an agent never sees another tenant's
// datasets.
//
// ModelDescriber is a kb.Describer that asks the configured model once
// per cryptic dataset for table and column descriptions (sampled values of
// sensitive columns never reach the prompt); use it with kb.Propose and
// kb.Apply, after the host reviewed the proposals.
package catalog
