// Command hitl shows a human in the loop: the agent asks the user a
// question, and a write tool waits for the user's approval. Each time the
// run stops, its checkpoint is stored and the program builds a new
// bichat.Service over the same store before continuing, as a host whose
// process restarted (or whose next request reached another replica)
// would.
//
//	go run ./examples/hitl                     # answers South, sales-team@example.com; approves
//	go run ./examples/hitl -region East -to east@example.com -deny
//
// The flow, on the embedded SQLite sample retail data:
//
//  1. Send: the agent calls the built-in ask_user_question tool (a region
//     to choose from the options, and a free-text recipient). The run ends
//     with an Interrupted event; the message is stored awaiting_input with
//     its checkpoint.
//  2. A new Service reads the form again with Service.PendingInterrupt and
//     answers it with Service.Resume and an agents.Answers keyed by
//     question id (the -region and -to flags play the user). The agent
//     queries the region's 2025 revenue with query_database (a read tool:
//     it runs on the model's word) and calls send_email.
//  3. send_email is declared with agents.WithPermission(agents.PermWrite),
//     so the executor does not run it: the run stops again with an
//     agents.ConfirmationRequest whose signed token is bound to the user,
//     the tool and the exact arguments. Nothing is sent yet.
//  4. A new Service shows the confirmation (PendingInterrupt) and calls
//     Service.Approve with the token: the tool runs once and the agent
//     reports the email. With -deny, Service.Deny tells the agent the user
//     declined; the tool never runs and the agent answers without it.
//
// Processes share the store, the confirmation key (agents.Config
// ConfirmationKey: without it each process signs with a random key and a
// token from before a restart is refused) and a replay guard; a real host
// keeps the first two in PostgreSQL (domain/postgres) and its secret store.
//
// With no provider configured a scripted analyst plays the model; it
// keeps no state, so a fresh one per process continues from the stored
// conversation. Set OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY,
// OLLAMA_HOST or OPENAI_BASE_URL (and optionally BICHAT_MODEL) to let a
// real model run the same loop: every question with options gets the
// option matching -region, a free-text question about the recipient gets
// -to, and every confirmation is approved (or denied with -deny).
// -offline keeps the scripted analyst; -db PATH uses an existing SQLite
// file with the sample tables instead of generating one.
package main
