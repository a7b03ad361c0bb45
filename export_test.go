package bichat

// PauseHeartbeat stops (paused true) or restarts the lease renewals of
// s's runs, so a test can simulate a process that hangs: its runs keep
// going but their leases run out.
func PauseHeartbeat(s *Service, paused bool) { s.noHeartbeat.Store(paused) }

// RunLogBatch and RunLogWindow expose the group-commit bounds to tests.
const (
	RunLogBatch  = runLogBatch
	RunLogWindow = runLogWindow
	RingSize     = ringSize
)
