// Package secrets keeps the connection settings of the hosts' data
// sources encrypted at rest: AES-256-GCM under keys the host supplies,
// with key ids, rotation, and decryption only at the moment of
// connecting.
//
// # Keys
//
// A [Keyring] holds 32-byte keys by id, one of them current. Generate a
// key with
//
//	openssl rand -base64 32
//
// and give the keys to every process, current key first, for example in
// BICHAT_SECRET_KEYS ([KeysEnv]):
//
//	BICHAT_SECRET_KEYS="2026-06:<base64>,2026-01:<base64>"
//
//	keys, err := secrets.KeyringFromEnv() // or ParseKeyring(spec), NewKeyring(current, map)
//
// Keep keys out of the database that holds the sealed values (a secret
// manager, the orchestrator's secrets): whoever has both has the
// plaintext.
//
// # Sealed values
//
// [Keyring.Seal] returns "v1.<key id>.<base64url(nonce ‖ ciphertext ‖
// tag)>" with a random 12-byte nonce per value. The version and key id
// are authenticated with the ciphertext, and so is the caller's
// additional data: [Vault] binds each data source's settings to its
// tenant id and id ([AAD]), so a sealed value copied into another
// tenant's row does not open. [Keyring.Open] fails with [ErrMalformed]
// (not this format), [ErrUnknownKey] (a key id the keyring lacks) or
// [ErrDecrypt]. ErrDecrypt covers a wrong key under the right id, an
// altered ciphertext and a wrong owner alike: GCM only learns that the
// tag does not match, and cannot say which. Errors and printed values
// (String, GoString, %v, MarshalJSON, slog) never contain plaintext,
// keys, or a DSN's password.
//
// # Data sources
//
// A [Vault] ties a Keyring to a [domain.DataSourceRepository]
// (domain/memory.NewDataSources, or *domain/postgres.Store on its
// datasources table). [Vault.Save] seals a [Config] (a DSN and extra
// settings) as JSON and stores the row; the repository only ever sees
// ciphertext. [Vault.Open] is the one place the settings exist in the
// clear; adapters call it when they connect
// (tools/sqldb/postgres.OpenDataSource), so the plaintext lives for the
// duration of a connect, not in the host's configuration.
//
// # Rotation
//
//  1. Generate a new key and put it first in every process's key list,
//     keeping the old keys after it; restart (a Keyring is immutable).
//     New and updated data sources are now sealed under the new key.
//  2. Run [Vault.Rotate] once (from one process or several: it is safe
//     to overlap). It pages through the data sources of all tenants and
//     re-seals each one still under an older key with a
//     compare-and-swap, so a concurrent [Vault.Update] is never
//     overwritten. A row that fails (its key already gone, its
//     ciphertext damaged) is reported and the sweep goes on.
//  3. When Rotate reports Failed == 0, remove the old key from the list.
//     The key_id column of the datasources table shows what is left:
//     SELECT key_id, count(*) FROM bichat.datasources GROUP BY 1.
//
// # Plaintext in memory
//
// The package clears the buffers it owns once it is done with them: the
// JSON encoding of a Config before sealing, the decrypted bytes after
// decoding, the intermediate plaintext of a rotation, the decoded key
// bytes of ParseKeyring. That is as far as Go allows: the DSN itself is
// a string, immutable and impossible to clear; the garbage collector may
// have copied any buffer before it was cleared; the AES key schedules
// live as long as the Keyring; and the driver that connects with the DSN
// keeps its own copies. Clearing shortens the time secrets sit in memory
// and keeps them out of reused buffers; it does not protect against an
// attacker who can read the process's memory. Keep core dumps off and
// swap encrypted on hosts that run it.
package secrets
