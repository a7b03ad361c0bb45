package mcp

// BoundSessions reports how many streamable HTTP sessions are bound to a
// principal, for tests that check sessions are forgotten when they end.
func BoundSessions(s *Server) int { return s.sessions.len() }
