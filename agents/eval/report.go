package eval

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
)

// Report is the outcome of an evaluation: one Result per finished
// question in the set's order, and totals.
type Report struct {
	Set      string    `json:"set,omitempty"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Results are in the order of the set, whatever order they finished
	// in.
	Results []Result `json:"results"`
	// Pending lists the questions not evaluated (an interrupted run).
	Pending []string `json:"pending,omitempty"`
	Totals  Totals   `json:"totals"`
	// Tags has the totals of each tag, sorted by tag.
	Tags []TagTotals `json:"tags,omitempty"`
}

// Totals sum up results.
type Totals struct {
	Questions int `json:"questions"`
	Passed    int `json:"passed"`
	Failed    int `json:"failed"`
	// Accuracy is the execution accuracy, Passed/Questions (0 with no
	// questions).
	Accuracy float64 `json:"accuracy"`
	// MeanRecall is the mean retrieval recall over the RecallQuestions
	// questions whose gold tables are known.
	MeanRecall      float64 `json:"mean_recall"`
	RecallQuestions int     `json:"recall_questions"`
	ToolCalls       int     `json:"tool_calls"`
	Turns           int     `json:"turns"`
	TokensIn        int     `json:"tokens_in"`
	TokensOut       int     `json:"tokens_out"`
	CostUSD         float64 `json:"cost_usd"`
	Repairs         int     `json:"repairs"`
	// LatencyMS sums the runs' wall times; MeanLatencyMS is its mean.
	LatencyMS     int64 `json:"latency_ms"`
	MeanLatencyMS int64 `json:"mean_latency_ms"`
}

// TagTotals are the totals of the questions with one tag.
type TagTotals struct {
	Tag string `json:"tag"`
	Totals
}

func totalsOf(rs []Result) Totals {
	var t Totals
	recallSum := 0.0
	for _, r := range rs {
		t.Questions++
		if r.OK {
			t.Passed++
		} else {
			t.Failed++
		}
		if r.Recall != nil {
			t.RecallQuestions++
			recallSum += *r.Recall
		}
		t.ToolCalls += r.ToolCalls
		t.Turns += r.Turns
		t.TokensIn += r.TokensIn
		t.TokensOut += r.TokensOut
		t.CostUSD += r.CostUSD
		t.Repairs += r.Repairs
		t.LatencyMS += r.LatencyMS
	}
	if t.Questions > 0 {
		t.Accuracy = float64(t.Passed) / float64(t.Questions)
		t.MeanLatencyMS = t.LatencyMS / int64(t.Questions)
	}
	if t.RecallQuestions > 0 {
		t.MeanRecall = recallSum / float64(t.RecallQuestions)
	}
	return t
}

// total computes Totals and Tags from Results.
func (r *Report) total() {
	r.Totals = totalsOf(r.Results)
	byTag := map[string][]Result{}
	for _, x := range r.Results {
		for _, t := range x.Tags {
			byTag[t] = append(byTag[t], x)
		}
	}
	r.Tags = nil
	for _, t := range slices.Sorted(maps.Keys(byTag)) {
		r.Tags = append(r.Tags, TagTotals{Tag: t, Totals: totalsOf(byTag[t])})
	}
}

// WriteJSON writes the report as indented JSON (ReadReport reads it).
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// ReadReport reads a report written by WriteJSON.
func ReadReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("eval: read report: %w", err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("eval: report %s: %w", path, err)
	}
	return &r, nil
}

func pct(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }

func recallText(r *float64) string {
	if r == nil {
		return "–"
	}
	return pct(*r)
}

// mdCell escapes text for a Markdown table cell.
func mdCell(s string) string {
	s = strings.ReplaceAll(s, "\r", "")
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "|", `\|`)
	return s
}

// WriteMarkdown writes the report as Markdown: totals, per tag, per
// question (with each failure's reason).
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	title := "Evaluation"
	if r.Set != "" {
		title += ": " + r.Set
	}
	t := r.Totals
	fmt.Fprintf(&b, "# %s\n\n", mdCell(title))
	fmt.Fprintf(&b, "Execution accuracy **%s** (%d/%d)", pct(t.Accuracy), t.Passed, t.Questions)
	if t.RecallQuestions > 0 {
		fmt.Fprintf(&b, ", mean retrieval recall **%s**", pct(t.MeanRecall))
	}
	fmt.Fprintf(&b, ".\n\n")
	if len(r.Pending) > 0 {
		fmt.Fprintf(&b, "Not evaluated (interrupted): %s.\n\n", mdCell(strings.Join(r.Pending, ", ")))
	}
	b.WriteString("| | Questions | Passed | Accuracy | Recall | Tool calls | Turns | Tokens in | Tokens out | Cost (USD) | Mean latency | Repairs |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	row := func(name string, t Totals) {
		rec := "–"
		if t.RecallQuestions > 0 {
			rec = pct(t.MeanRecall)
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %s | %s | %d | %d | %d | %d | %.4f | %s | %d |\n", mdCell(name), t.Questions, t.Passed,
			pct(t.Accuracy), rec, t.ToolCalls, t.Turns, t.TokensIn, t.TokensOut, t.CostUSD,
			time.Duration(t.MeanLatencyMS)*time.Millisecond, t.Repairs)
	}
	row("**all**", t)
	for _, tg := range r.Tags {
		row("tag "+tg.Tag, tg.Totals)
	}
	b.WriteString("\n## Questions\n\n")
	b.WriteString("| Question | Tags | Result | Recall | Tool calls | Turns | Tokens in/out | Cost (USD) | Latency | Repairs |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, x := range r.Results {
		res := "pass"
		if !x.OK {
			res = "**fail**: " + x.Reason
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %d | %d/%d | %.4f | %s | %d |\n", mdCell(x.ID), mdCell(strings.Join(x.Tags, ", ")),
			mdCell(res), recallText(x.Recall), x.ToolCalls, x.Turns, x.TokensIn, x.TokensOut, x.CostUSD, x.Latency(), x.Repairs)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Diff compares two reports of the same set question by question.
type Diff struct {
	// Improved failed before and passes now; Regressed the reverse.
	Improved  []string `json:"improved"`
	Regressed []string `json:"regressed"`
	// Unchanged have the same outcome in both; Added are only in the new
	// report, Removed only in the old one.
	Unchanged []string `json:"unchanged"`
	Added     []string `json:"added,omitempty"`
	Removed   []string `json:"removed,omitempty"`
	Old, New  Totals   `json:"-"`
	// Reasons are the new report's failure reasons of Regressed
	// questions, by id.
	Reasons map[string]string `json:"reasons,omitempty"`
}

// CompareReports tells which questions got better or worse from old to
// new, in the new report's order (removed ones in the old one's).
func CompareReports(old, new *Report) Diff {
	d := Diff{Old: old.Totals, New: new.Totals, Reasons: map[string]string{}}
	before := map[string]Result{}
	for _, r := range old.Results {
		before[r.ID] = r
	}
	seen := map[string]bool{}
	for _, r := range new.Results {
		seen[r.ID] = true
		o, ok := before[r.ID]
		switch {
		case !ok:
			d.Added = append(d.Added, r.ID)
		case !o.OK && r.OK:
			d.Improved = append(d.Improved, r.ID)
		case o.OK && !r.OK:
			d.Regressed = append(d.Regressed, r.ID)
			d.Reasons[r.ID] = r.Reason
		default:
			d.Unchanged = append(d.Unchanged, r.ID)
		}
	}
	for _, r := range old.Results {
		if !seen[r.ID] {
			d.Removed = append(d.Removed, r.ID)
		}
	}
	return d
}

// WriteMarkdown writes the comparison as Markdown.
func (d Diff) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	b.WriteString("# Comparison\n\n")
	fmt.Fprintf(&b, "Execution accuracy %s (%d/%d) → %s (%d/%d).\n\n", pct(d.Old.Accuracy), d.Old.Passed, d.Old.Questions,
		pct(d.New.Accuracy), d.New.Passed, d.New.Questions)
	list := func(title string, ids []string, reasons map[string]string) {
		fmt.Fprintf(&b, "## %s (%d)\n\n", title, len(ids))
		if len(ids) == 0 {
			b.WriteString("none\n\n")
			return
		}
		for _, id := range ids {
			if why := reasons[id]; why != "" {
				fmt.Fprintf(&b, "- %s: %s\n", mdCell(id), mdCell(why))
			} else {
				fmt.Fprintf(&b, "- %s\n", mdCell(id))
			}
		}
		b.WriteString("\n")
	}
	list("Improved", d.Improved, nil)
	list("Regressed", d.Regressed, d.Reasons)
	list("Unchanged", d.Unchanged, nil)
	if len(d.Added) > 0 {
		list("Added", d.Added, nil)
	}
	if len(d.Removed) > 0 {
		list("Removed", d.Removed, nil)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
