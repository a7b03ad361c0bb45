package eval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v4"
)

// Question is one verified question of a Set.
type Question struct {
	// ID names the question in reports and result files: unique in the
	// set, letters, digits, '.', '_' and '-' only.
	ID string `json:"id" yaml:"id"`
	// Question is what the user asks.
	Question string `json:"question" yaml:"question"`
	// SQL is the verified (gold) query that answers it.
	SQL string `json:"sql" yaml:"sql"`
	// Hints are passed to the run as discovery hints
	// (bichat.WithHints).
	Hints []string `json:"hints,omitempty" yaml:"hints,omitempty"`
	// Tags group questions in the report ("join", "easy").
	Tags []string `json:"tags,omitempty" yaml:"tags,omitempty"`
	// Datasets are the gold query's tables, for retrieval recall. Empty:
	// the tables the database reports the gold query read
	// (sqldb.Result.Datasets).
	Datasets []string `json:"datasets,omitempty" yaml:"datasets,omitempty"`
}

// Set is an ordered list of verified questions; reports follow its order.
type Set struct {
	// Name identifies the set in reports (the file name by default).
	Name      string     `json:"name,omitempty" yaml:"name,omitempty"`
	Questions []Question `json:"questions" yaml:"questions"`
}

// Format of a question set file.
type Format string

// Formats ParseSet reads.
const (
	// FormatYAML is a YAML document: either a list of questions or a
	// mapping with "name" and "questions".
	FormatYAML Format = "yaml"
	// FormatJSONL is one JSON question per line; blank lines and lines
	// starting with '#' are skipped.
	FormatJSONL Format = "jsonl"
)

// LoadSet reads a question set file: JSONL when the name ends in .jsonl
// or .ndjson, YAML otherwise. The set is named after the file.
func LoadSet(path string) (*Set, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("eval: read question set: %w", err)
	}
	f := FormatYAML
	switch strings.ToLower(filepath.Ext(path)) {
	case ".jsonl", ".ndjson":
		f = FormatJSONL
	}
	s, err := ParseSet(bytes.NewReader(b), f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if s.Name == "" {
		s.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	return s, nil
}

// ParseSet reads a question set in format f and validates it (Validate).
// JSONL errors name the line; unknown fields are errors in both formats,
// so a misspelt "hint" does not pass silently.
func ParseSet(r io.Reader, f Format) (*Set, error) {
	var s Set
	switch f {
	case FormatJSONL:
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64*1024), 16<<20)
		line := 0
		for sc.Scan() {
			line++
			t := strings.TrimSpace(sc.Text())
			if t == "" || strings.HasPrefix(t, "#") {
				continue
			}
			dec := json.NewDecoder(strings.NewReader(t))
			dec.DisallowUnknownFields()
			var q Question
			if err := dec.Decode(&q); err != nil {
				return nil, fmt.Errorf("eval: line %d: %w", line, err)
			}
			if dec.More() {
				return nil, fmt.Errorf("eval: line %d: more than one JSON value", line)
			}
			if err := q.validate(); err != nil {
				return nil, fmt.Errorf("eval: line %d: %w", line, err)
			}
			s.Questions = append(s.Questions, q)
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("eval: line %d: %w", line+1, err)
		}
	case FormatYAML:
		b, err := io.ReadAll(r)
		if err != nil {
			return nil, fmt.Errorf("eval: read question set: %w", err)
		}
		var probe any
		if err := yaml.Unmarshal(b, &probe); err != nil {
			return nil, fmt.Errorf("eval: %w", err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if _, isList := probe.([]any); isList {
			err = dec.Decode(&s.Questions)
		} else {
			err = dec.Decode(&s)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("eval: %w", err)
		}
	default:
		return nil, fmt.Errorf("eval: unknown question set format %q (want %q or %q)", f, FormatYAML, FormatJSONL)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// Validate checks that the set has questions, each with an id, a question
// and SQL, and that ids are unique.
func (s *Set) Validate() error {
	if len(s.Questions) == 0 {
		return errors.New("eval: the question set is empty")
	}
	seen := make(map[string]int, len(s.Questions))
	for i, q := range s.Questions {
		if err := q.validate(); err != nil {
			return fmt.Errorf("eval: question %d: %w", i+1, err)
		}
		if j, dup := seen[q.ID]; dup {
			return fmt.Errorf("eval: question %d: id %q is already used by question %d", i+1, q.ID, j+1)
		}
		seen[q.ID] = i
	}
	return nil
}

func (q Question) validate() error {
	if q.ID == "" {
		return errors.New(`"id" is missing`)
	}
	for _, r := range q.ID {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("id %q: only letters, digits, '.', '_' and '-' are allowed", q.ID)
		}
	}
	if strings.TrimSpace(q.Question) == "" {
		return fmt.Errorf("question %s: \"question\" is missing", q.ID)
	}
	if strings.TrimSpace(q.SQL) == "" {
		return fmt.Errorf("question %s: \"sql\" (the verified query) is missing", q.ID)
	}
	return nil
}
