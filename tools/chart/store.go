package chart

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
)

// Chart is a chart draw_chart produced, kept so later tools (export_pdf)
// can embed it by name.
type Chart struct {
	// Name is how the model refers to the chart ("chart_1").
	Name  string `json:"name"`
	Title string `json:"title,omitempty"`
	// Type is the mark: bar, line, area, point or arc.
	Type string `json:"type"`
	// Spec is the Vega-Lite v5 specification, data inline.
	Spec json.RawMessage `json:"spec"`
	// Image is the PNG artifact, saved in the artifact store.
	Image domain.Artifact `json:"image"`
	// PNG is the rendered image itself.
	PNG []byte `json:"-"`
	// Width and Height are the PNG's size in pixels.
	Width  int `json:"width"`
	Height int `json:"height"`
}

// Charts keeps the latest charts of each session. Implementations must be
// safe for concurrent use.
type Charts interface {
	// Put stores c under the session of ctx (see
	// agents.CallInfoFromContext) and returns its name: c.Name when set,
	// otherwise the next "chart_N".
	Put(ctx context.Context, c Chart) (string, error)
	// Get returns the chart called name in the session of ctx, or an error
	// matching domain.ErrNotFound that lists the names available.
	Get(ctx context.Context, name string) (Chart, error)
}

// MemoryCharts is the in-memory Charts: per session (tenant + session id
// from the call context), the last Keep charts, oldest evicted first.
type MemoryCharts struct {
	// Keep bounds the charts per session; 0 means 20.
	Keep int

	mu       sync.Mutex
	sessions map[string]*sessionCharts
}

type sessionCharts struct {
	next   int
	names  []string
	charts map[string]Chart
}

// NewMemoryCharts returns an empty store keeping keep charts per session
// (0 means 20).
func NewMemoryCharts(keep int) *MemoryCharts { return &MemoryCharts{Keep: keep} }

func sessionKey(ctx context.Context) string {
	info, _ := agents.CallInfoFromContext(ctx)
	return info.TenantID + "\x00" + info.SessionID
}

// Put implements Charts.
func (m *MemoryCharts) Put(ctx context.Context, c Chart) (string, error) {
	if c.Name != "" && !validChartName(c.Name) {
		return "", domain.Invalid("name", fmt.Sprintf("%q is not a valid chart name: use letters, digits, '_' and '-' (at most 64)", c.Name))
	}
	keep := m.Keep
	if keep <= 0 {
		keep = 20
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sessions == nil {
		m.sessions = make(map[string]*sessionCharts)
	}
	key := sessionKey(ctx)
	s := m.sessions[key]
	if s == nil {
		s = &sessionCharts{charts: make(map[string]Chart)}
		m.sessions[key] = s
	}
	if c.Name == "" {
		for {
			s.next++
			c.Name = "chart_" + strconv.Itoa(s.next)
			if _, taken := s.charts[c.Name]; !taken {
				break
			}
		}
	}
	if _, exists := s.charts[c.Name]; exists {
		for i, n := range s.names {
			if n == c.Name {
				s.names = append(s.names[:i], s.names[i+1:]...)
				break
			}
		}
	}
	s.charts[c.Name] = c
	s.names = append(s.names, c.Name)
	for len(s.names) > keep {
		delete(s.charts, s.names[0])
		s.names = s.names[1:]
	}
	return c.Name, nil
}

// Get implements Charts.
func (m *MemoryCharts) Get(ctx context.Context, name string) (Chart, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[sessionKey(ctx)]
	if s != nil {
		if c, ok := s.charts[name]; ok {
			return c, nil
		}
	}
	if s == nil || len(s.names) == 0 {
		return Chart{}, fmt.Errorf("no chart called %q: this session has no charts yet; draw one with draw_chart first: %w", name, domain.ErrNotFound)
	}
	return Chart{}, fmt.Errorf("no chart called %q; available: %v: %w", name, s.names, domain.ErrNotFound)
}

func validChartName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}
