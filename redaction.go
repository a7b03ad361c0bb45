package bichat

import (
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/redact"
)

// redactor returns the service's redactor (Config.Redactor, or
// redact.Default()), nil when Config.DisableRedaction is set.
func (c *Config) redactor() *redact.Redactor {
	if c.DisableRedaction {
		return nil
	}
	if c.Redactor != nil {
		return c.Redactor
	}
	return redact.Default()
}

// scrub applies the redactor to s (s itself without one).
func (s *Service) scrub(text string) string { return s.redact.String(text) }

// scrubYield returns yield with the redactor applied to the errors it
// passes on (events are scrubbed by the executor already).
func (s *Service) scrubYield(yield func(agents.Event, error) bool) func(agents.Event, error) bool {
	if s.redact == nil {
		return yield
	}
	return func(ev agents.Event, err error) bool {
		if err != nil {
			err = s.redact.Error(err)
		}
		return yield(ev, err)
	}
}

// scrubMessages applies the redactor to a transcript before it is
// stored as a message's parts.
func (s *Service) scrubMessages(ms []agents.Message) []agents.Message {
	if s.redact == nil {
		return ms
	}
	return agents.RedactMessages(ms, s.redact.String)
}
