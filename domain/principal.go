package domain

import "slices"

// Permission is an action a principal may take on sessions and messages.
type Permission string

// Permissions.
const (
	// PermRead allows listing and reading sessions and messages.
	PermRead Permission = "read"
	// PermWrite allows creating and renaming sessions, sending messages,
	// answering questions and approving confirmations.
	PermWrite Permission = "write"
	// PermDelete allows deleting sessions.
	PermDelete Permission = "delete"
)

// AccessRole is a named bundle of permissions.
type AccessRole string

// Default roles.
const (
	// AccessAdmin may read, write and delete.
	AccessAdmin AccessRole = "admin"
	// AccessContributor may read, write and delete their own sessions.
	AccessContributor AccessRole = "contributor"
	// AccessViewer may only read.
	AccessViewer AccessRole = "viewer"
)

// RolePermissions returns the default permissions of a role: admin and
// contributor get read, write and delete; viewer gets read; unknown roles
// get nothing.
func RolePermissions(r AccessRole) []Permission {
	switch r {
	case AccessAdmin, AccessContributor:
		return []Permission{PermRead, PermWrite, PermDelete}
	case AccessViewer:
		return []Permission{PermRead}
	}
	return nil
}

// Principal is the authenticated caller, supplied by the host on every
// service call. bichat does not authenticate; it trusts the host to have
// done so and enforces tenant, ownership and permissions from here.
type Principal struct {
	TenantID string       `json:"tenant_id"`
	UserID   string       `json:"user_id"`
	Roles    []AccessRole `json:"roles,omitempty"`
	// Permissions, when non-empty, replaces the permissions derived from
	// Roles. Hosts with their own role model set it directly.
	Permissions []Permission `json:"permissions,omitempty"`
}

// Can reports whether the principal holds permission p.
func (p Principal) Can(perm Permission) bool {
	if len(p.Permissions) > 0 {
		return slices.Contains(p.Permissions, perm)
	}
	for _, r := range p.Roles {
		if slices.Contains(RolePermissions(r), perm) {
			return true
		}
	}
	return false
}

// Validate checks that tenant and user ids are present and well-formed
// (see ValidName).
func (p Principal) Validate() error {
	var ve ValidationError
	if !ValidName(p.TenantID) {
		ve.Add("principal.tenant_id", "must be 1-128 printable ASCII characters without spaces")
	}
	if !ValidName(p.UserID) {
		ve.Add("principal.user_id", "must be 1-128 printable ASCII characters without spaces")
	}
	return ve.Err()
}
