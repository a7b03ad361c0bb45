package python

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/hooks"
	"github.com/bichat-go/bichat/sandbox"
	"github.com/bichat-go/bichat/tools"
)

// Name is the tool name.
const Name = "run_python"

// Args are the arguments of run_python.
type Args struct {
	Code   string   `json:"code" jsonschema:"description=Python 3 code. pandas\\, numpy\\, scipy\\, matplotlib (Agg backend) and openpyxl are available. Print what you want to see (printed output is capped). Save charts and files in the current folder (png\\, svg\\, csv\\, xlsx or json) and the user receives them. No network access."`
	Inputs []string `json:"inputs,omitempty" jsonschema:"description=Names of earlier query results (e.g. result_1) to read: each is the CSV file inputs/<name>.csv with a header row."`
}

// Config configures run_python.
type Config struct {
	// Sandbox runs the code; required (sandbox/bwrap or sandbox/docker).
	Sandbox sandbox.Sandbox
	// Results resolves Args.Inputs; nil allows no inputs.
	Results tools.Results
	// Limits bound each run (zero fields: the sandbox's defaults).
	Limits sandbox.Limits
	// MaxStdout caps the stdout the model sees (default 8 KiB); MaxStderr
	// caps the stderr it sees, keeping the end where tracebacks are
	// (default 4 KiB). The host's payload has the sandbox's full capture.
	MaxStdout, MaxStderr int
	// Timeout bounds one call (default the wall-time limit plus 30 s).
	Timeout time.Duration
	// Store, when set, keeps every produced file under the call's tenant,
	// so the host can serve the artifacts (their URI is set then).
	Store domain.ArtifactStore
	// Bus, when set, receives a hooks.SandboxRun event after every job
	// (outcome, exit code, duration, limits not enforced).
	Bus *hooks.Bus
}

// Run is the payload of a run_python call, for the host.
type Run struct {
	Code     string        `json:"code"`
	Inputs   []string      `json:"inputs,omitempty"`
	Stdout   string        `json:"stdout"`
	Stderr   string        `json:"stderr"`
	ExitCode int           `json:"exit_code"`
	TimedOut bool          `json:"timed_out,omitempty"`
	OOM      bool          `json:"oom_killed,omitempty"`
	Reason   string        `json:"reason,omitempty"`
	Files    []File        `json:"files,omitempty"`
	Skipped  []string      `json:"skipped,omitempty"`
	Duration time.Duration `json:"duration"`
}

// File is a produced file with its content; Artifact describes it for the
// host's artifact store.
type File struct {
	Artifact domain.Artifact `json:"artifact"`
	Data     []byte          `json:"-"`
}

var inputName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

const description = "Run Python code in an isolated sandbox for statistics, transformations and charts that SQL cannot do. " +
	"Pass earlier query results by name in inputs: result_1 becomes the CSV file inputs/result_1.csv " +
	"(pd.read_csv(\"inputs/result_1.csv\")). You see printed output, errors and the names of the files the code " +
	"saved in the current folder (png, svg, csv, xlsx, json); the user receives those files. " +
	"No network; each run starts fresh (no variables or files survive between runs)."

// New returns the run_python tool.
func New(cfg Config) (agents.Tool, error) {
	if cfg.Sandbox == nil {
		return nil, errors.New("run_python: Config.Sandbox is required")
	}
	if cfg.MaxStdout == 0 {
		cfg.MaxStdout = 8 << 10
	}
	if cfg.MaxStderr == 0 {
		cfg.MaxStderr = 4 << 10
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = cfg.Limits.WithDefaults().WallTime + 30*time.Second
	}
	t := &tool{cfg: cfg}
	return agents.NewTool(Name, description, t.call, agents.WithTimeout(cfg.Timeout), agents.WithParallel())
}

type tool struct{ cfg Config }

func (t *tool) call(ctx context.Context, a Args) (agents.Result, error) {
	job := sandbox.Job{Code: a.Code, Limits: t.cfg.Limits}
	seen := map[string]bool{}
	for _, name := range a.Inputs {
		if !inputName.MatchString(name) {
			return agents.Result{}, &agents.ArgumentError{Tool: Name, Problems: []string{fmt.Sprintf("/inputs: %q is not a result name", name)}}
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		if t.cfg.Results == nil {
			return agents.Result{}, fmt.Errorf("run_python: no earlier results are available to this tool (input %q)", name)
		}
		tab, err := t.cfg.Results.Get(ctx, name)
		if err != nil {
			return agents.Result{}, fmt.Errorf("run_python: input %q: %w", name, err)
		}
		csv, err := tab.CSV()
		if err != nil {
			return agents.Result{}, fmt.Errorf("run_python: input %q: %w", name, err)
		}
		job.Files = append(job.Files, sandbox.File{Name: name + ".csv", Data: csv})
	}
	start := time.Now()
	out, err := t.cfg.Sandbox.Run(ctx, job)
	t.publish(ctx, out, err, time.Since(start))
	if err != nil {
		return agents.Result{}, fmt.Errorf("run_python: %w", err)
	}
	run := &Run{Code: a.Code, Inputs: a.Inputs, Stdout: out.Stdout, Stderr: out.Stderr, ExitCode: out.ExitCode,
		TimedOut: out.TimedOut, OOM: out.OOMKilled, Reason: out.Reason(), Duration: out.Duration}
	res := agents.Result{Payload: run}
	for _, f := range out.Files {
		kind := domain.ArtifactFile
		if f.MediaType == "image/png" || f.MediaType == "image/svg+xml" {
			kind = domain.ArtifactChart
		}
		art := domain.Artifact{Kind: kind, Name: f.Name, MediaType: f.MediaType, SHA256: domain.ContentHash(f.Data),
			Size: f.Size, Metadata: map[string]string{"tool": Name}}
		if t.cfg.Store != nil {
			stored, err := tools.SaveArtifact(ctx, t.cfg.Store, art, f.Data)
			if err != nil {
				return agents.Result{}, fmt.Errorf("run_python: store %s: %w", f.Name, err)
			}
			art = stored
		}
		run.Files = append(run.Files, File{Artifact: art, Data: f.Data})
		res.Artifacts = append(res.Artifacts, art)
	}
	for _, s := range out.Skipped {
		run.Skipped = append(run.Skipped, s.Name+": "+s.Reason)
	}
	res.Summary = t.summary(out, run)
	return res, nil
}

func (t *tool) summary(out *sandbox.Output, run *Run) string {
	var b strings.Builder
	if out.OK() {
		fmt.Fprintf(&b, "ok (%s)\n", out.Duration.Round(time.Millisecond))
	} else {
		fmt.Fprintf(&b, "error: %s\n", out.Reason())
	}
	if s := head(out.Stdout, t.cfg.MaxStdout); s != "" {
		b.WriteString("stdout:\n" + s)
		if !strings.HasSuffix(s, "\n") {
			b.WriteString("\n")
		}
	}
	if s := tailText(out.Stderr, t.cfg.MaxStderr); s != "" {
		b.WriteString("stderr:\n" + s)
		if !strings.HasSuffix(s, "\n") {
			b.WriteString("\n")
		}
	}
	if len(out.Files) > 0 {
		b.WriteString("files (sent to the user):")
		for _, f := range out.Files {
			fmt.Fprintf(&b, " %s (%s, %d bytes);", f.Name, f.MediaType, f.Size)
		}
		b.WriteString("\n")
	}
	if len(run.Skipped) > 0 {
		b.WriteString("not sent: " + strings.Join(run.Skipped, "; ") + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

func head(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return sandbox.CapText([]byte(s), int64(len(s)), max)
}

func tailText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := len(s) - max
	for cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut++
	}
	return fmt.Sprintf("[%d earlier bytes not shown]\n", cut) + s[cut:]
}

// publish sends a hooks.SandboxRun when a bus is configured.
func (t *tool) publish(ctx context.Context, out *sandbox.Output, err error, took time.Duration) {
	if t.cfg.Bus == nil {
		return
	}
	e := &hooks.SandboxRun{Outcome: "failed", Duration: took}
	e.Time = time.Now()
	if info, ok := agents.CallInfoFromContext(ctx); ok {
		e.TenantID, e.UserID, e.SessionID, e.MessageID, e.RunID, e.ParentRunID = info.TenantID, info.UserID, info.SessionID, info.MessageID, info.RunID, info.ParentRunID
		e.CallID = info.CallID
	}
	if err == nil && out != nil {
		e.ExitCode, e.Duration, e.Files, e.Unenforced = out.ExitCode, out.Duration, len(out.Files), out.Unenforced
		switch {
		case out.TimedOut:
			e.Outcome = "timeout"
		case out.OOMKilled:
			e.Outcome = "oom"
		case out.Signal != "":
			e.Outcome = "killed"
		case out.ExitCode != 0:
			e.Outcome = "error"
		default:
			e.Outcome = "ok"
		}
	}
	t.cfg.Bus.Publish(ctx, e)
}
