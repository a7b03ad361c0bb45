package secrets

// SetRotatePageSize sets the page size of v's Rotate, so tests cross many
// page boundaries with few rows.
func SetRotatePageSize(v *Vault, n int) { v.pageSize = n }
