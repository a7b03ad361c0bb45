package bichat

import (
	"context"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/agents/eval"
	"github.com/bichat-go/bichat/domain"
)

// EvalTarget returns the service as an evaluation target (package
// agents/eval): each question runs in a new session of p titled with the
// question's id, is sent with its hints (WithHints), and its events make
// the transcript. Transcript.Discovered holds the datasets the run's
// discovery step finds for the question and hints (Discover; empty
// without a catalog), for the retrieval recall. p needs read and write
// permission.
//
// A run that fails is a transcript ending in agents.RunFailed, not an
// error; errors are those of Discover, CreateSession and Send before the
// run (a missing permission, an invalid question, a closed service).
func (s *Service) EvalTarget(p domain.Principal) eval.Target {
	return func(ctx context.Context, q eval.Question) (eval.Transcript, error) {
		var tr eval.Transcript
		if s.cfg.Knowledge.Catalog != nil {
			hits, err := s.Discover(ctx, p, q.Question, WithHints(q.Hints...))
			if err != nil {
				return tr, err
			}
			for _, h := range hits {
				tr.Discovered = append(tr.Discovered, h.Dataset.Name)
			}
		}
		title := "eval " + q.ID
		if r := []rune(title); len(r) > domain.MaxTitleLen {
			title = string(r[:domain.MaxTitleLen])
		}
		sess, err := s.CreateSession(ctx, p, SessionOptions{Title: title})
		if err != nil {
			return tr, err
		}
		for ev, err := range s.Send(ctx, p, sess.ID, q.Question, WithHints(q.Hints...)) {
			if err != nil {
				if n := len(tr.Events); n > 0 {
					if _, failed := tr.Events[n-1].(*agents.RunFailed); failed {
						return tr, nil
					}
				}
				return tr, err
			}
			tr.Events = append(tr.Events, ev)
		}
		return tr, nil
	}
}
