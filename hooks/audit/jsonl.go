package audit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"

	"github.com/bichat-go/bichat/internal/canonjson"
)

// JSONLOptions configure a JSONL sink.
type JSONLOptions struct {
	// NoSync skips the fsync calls. By default every Append fsyncs the
	// log file after writing its line, then writes the head file to a
	// temporary file, fsyncs it, renames it over the head file and fsyncs
	// the directory, so an entry Append returned survives a power loss.
	// With NoSync an operating system crash may lose the last entries
	// (the chain stays verifiable up to the last line that reached the
	// disk, unless the head file got ahead of it, which Verify reports as
	// a truncation).
	NoSync bool
}

// JSONL is a Sink and Reader that appends entries to one file, one JSON
// object per line (Entry.MarshalJSON), the chains of all tenants
// interleaved. The file is opened with O_APPEND and never rewritten. The
// heads (each tenant's last Seq and Hash) are kept apart, in the file
// "<path>.head" (a canonical JSON object {"<tenant>":{"hash":…,"seq":…}}),
// replaced atomically (write a temporary file, rename) after each
// append, so entries removed from the end of the log are detected by
// Verify.
//
// One process appends to a file at a time: JSONL is safe for concurrent
// use within a process, but two processes appending to the same path
// would fork the chains. Use the PostgreSQL sink (hooks/audit/postgres)
// for replicas.
type JSONL struct {
	path   string
	noSync bool

	mu     sync.Mutex
	f      *os.File
	size   int64 // bytes of complete lines written
	heads  map[string]Anchor
	broken error // set when a write failed part-way
	closed bool
}

var (
	_ Sink   = (*JSONL)(nil)
	_ Reader = (*JSONL)(nil)
)

// OpenJSONL opens (creating when missing, mode 0600) the log at path and
// recovers each tenant's head from the log and the head file: the later
// of the two (by Seq), so a crash between writing a line and the head
// file loses nothing, and a log truncated behind the head's back stays
// evident (new entries continue after the head, leaving a gap). A last
// line left incomplete by a crash is terminated so later lines stay
// readable (Verify reports the torn line).
func OpenJSONL(path string, opts JSONLOptions) (*JSONL, error) {
	if path == "" {
		return nil, errors.New("audit: open jsonl: path is empty")
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: open jsonl: %w", err)
	}
	j := &JSONL{path: path, noSync: opts.NoSync, f: f, heads: map[string]Anchor{}}
	if err := j.recover(); err != nil {
		f.Close()
		return nil, fmt.Errorf("audit: open jsonl %s: %w", path, err)
	}
	return j, nil
}

// Path returns the log's path; the head file is Path()+".head".
func (j *JSONL) Path() string { return j.path }

func (j *JSONL) headPath() string { return j.path + ".head" }

// recover reads the log and the head file into j.heads.
func (j *JSONL) recover() error {
	if _, err := j.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	br := bufio.NewReaderSize(j.f, 64<<10)
	var size int64
	torn := false
	for {
		line, err := br.ReadBytes('\n')
		size += int64(len(line))
		if len(line) > 0 && line[len(line)-1] != '\n' {
			torn = true
		}
		if len(bytes.TrimSpace(line)) > 0 {
			var e Entry
			if json.Unmarshal(line, &e) == nil {
				j.heads[e.TenantID] = Anchor{TenantID: e.TenantID, Seq: e.Seq, Hash: e.Hash}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	stored, err := readHeads(j.headPath())
	if err != nil {
		return err
	}
	for t, a := range stored {
		if a.Seq >= j.heads[t].Seq {
			j.heads[t] = a
		}
	}
	if torn {
		if _, err := j.f.Write([]byte{'\n'}); err != nil {
			return err
		}
		size++
	}
	j.size = size
	return nil
}

type headRecord struct {
	Hash string `json:"hash"`
	Seq  uint64 `json:"seq"`
}

// readHeads reads a head file; a missing file has no heads.
func readHeads(path string) (map[string]Anchor, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]Anchor{}, nil
	}
	if err != nil {
		return nil, err
	}
	var m map[string]headRecord
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("head file %s: %w", path, err)
	}
	out := make(map[string]Anchor, len(m))
	for t, h := range m {
		out[t] = Anchor{TenantID: t, Seq: h.Seq, Hash: h.Hash}
	}
	return out, nil
}

// Append implements Sink.
func (j *JSONL) Append(ctx context.Context, tenantID string, seal SealFunc) (Entry, error) {
	if err := ctx.Err(); err != nil {
		return Entry{}, fmt.Errorf("audit: jsonl append: %w", err)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return Entry{}, errors.New("audit: jsonl append: sink is closed")
	}
	if j.broken != nil {
		return Entry{}, fmt.Errorf("audit: jsonl append: an earlier write failed, reopen the log: %w", j.broken)
	}
	head, ok := j.heads[tenantID]
	if !ok {
		head = Anchor{TenantID: tenantID, Hash: ZeroHash}
	}
	e, err := seal(head)
	if err != nil {
		return Entry{}, err
	}
	line, err := e.MarshalJSON()
	if err != nil {
		return Entry{}, err
	}
	line = append(line, '\n')
	if n, err := j.f.Write(line); err != nil {
		if n > 0 {
			j.broken = err
		}
		return Entry{}, fmt.Errorf("audit: jsonl append: %w", err)
	}
	if !j.noSync {
		if err := j.f.Sync(); err != nil {
			j.broken = err
			return Entry{}, fmt.Errorf("audit: jsonl append: sync: %w", err)
		}
	}
	j.size += int64(len(line))
	j.heads[tenantID] = Anchor{TenantID: tenantID, Seq: e.Seq, Hash: e.Hash}
	if err := j.writeHeads(); err != nil {
		// The entry is in the log; the head file is behind, which the
		// next successful append or OpenJSONL repairs.
		return e, fmt.Errorf("audit: jsonl append: entry written, head file not updated: %w", err)
	}
	return e, nil
}

// writeHeads replaces the head file atomically; j.mu is held.
func (j *JSONL) writeHeads() error {
	m := make(map[string]headRecord, len(j.heads))
	for t, a := range j.heads {
		m[t] = headRecord{Hash: a.Hash, Seq: a.Seq}
	}
	b, err := canonjson.Marshal(m)
	if err != nil {
		return err
	}
	tmp := j.headPath() + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil && !j.noSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, j.headPath())
	}
	if err == nil && !j.noSync {
		err = syncDir(filepath.Dir(j.path))
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Head implements Sink and Reader.
func (j *JSONL) Head(ctx context.Context, tenantID string) (Anchor, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if a, ok := j.heads[tenantID]; ok {
		return a, nil
	}
	return Anchor{TenantID: tenantID, Hash: ZeroHash}, nil
}

// Tenants implements Reader: the tenants with a head (every tenant with a
// readable line, or in the head file).
func (j *JSONL) Tenants(ctx context.Context) ([]string, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]string, 0, len(j.heads))
	for t := range j.heads {
		out = append(out, t)
	}
	slices.Sort(out)
	return out, nil
}

// tenantRE finds the tenant of a line that does not decode.
var tenantRE = regexp.MustCompile(`"tenant_id":("(?:[^"\\]|\\.)*")`)

// lineTenant returns the tenant a line that does not decode claims, if
// one can be read from it.
func lineTenant(line []byte) (string, bool) {
	var w struct {
		TenantID *string `json:"tenant_id"`
	}
	if json.Unmarshal(line, &w) == nil && w.TenantID != nil {
		return *w.TenantID, true
	}
	if m := tenantRE.FindSubmatch(line); m != nil {
		if s, err := strconv.Unquote(string(m[1])); err == nil {
			return s, true
		}
		var s string
		if json.Unmarshal(m[1], &s) == nil {
			return s, true
		}
	}
	return "", false
}

// Entries implements Reader. It reads the log as far as it was written
// when iteration starts. A line that does not decode is yielded as an
// ErrCorrupt error when it names tenantID or names no tenant readable.
func (j *JSONL) Entries(ctx context.Context, tenantID string) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		j.mu.Lock()
		size := j.size
		j.mu.Unlock()
		f, err := os.Open(j.path)
		if err != nil {
			yield(Entry{}, fmt.Errorf("audit: jsonl entries: %w", err))
			return
		}
		defer f.Close()
		br := bufio.NewReaderSize(io.LimitReader(f, size), 64<<10)
		for n := 1; ; n++ {
			if err := ctx.Err(); err != nil {
				yield(Entry{}, fmt.Errorf("audit: jsonl entries: %w", err))
				return
			}
			line, rerr := br.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				var e Entry
				if err := json.Unmarshal(line, &e); err != nil {
					if t, ok := lineTenant(line); !ok || t == tenantID {
						if !yield(Entry{}, fmt.Errorf("%w: line %d of %s: %v", ErrCorrupt, n, j.path, err)) {
							return
						}
					}
				} else if e.TenantID == tenantID {
					if !yield(e, nil) {
						return
					}
				}
			}
			if rerr == io.EOF {
				return
			}
			if rerr != nil {
				yield(Entry{}, fmt.Errorf("audit: jsonl entries: %w", rerr))
				return
			}
		}
	}
}

// Close closes the log file. Appends after Close fail; Entries still
// reads the file.
func (j *JSONL) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	j.closed = true
	if err := j.f.Close(); err != nil {
		return fmt.Errorf("audit: jsonl close: %w", err)
	}
	return nil
}
