// Package knowledge holds the agent tools over the knowledge base:
// kb_search ([SearchTool]) searches the documents of package kb/docs and
// returns snippets with citations, and save_recipe ([SaveRecipeTool]),
// which a host may expose, stores a verified question → SQL recipe in
// package kb/recipes after the user approves it.
//
// Both tools are scoped: by a fixed scope ([WithScope]) or by the tenant
// of the run (agents.CallInfo), optionally with an ontology
// ([WithOntology]). Nothing from another tenant is ever returned.
package knowledge
