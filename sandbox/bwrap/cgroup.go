package bwrap

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bichat-go/bichat/sandbox"
)

// The limits a worker cgroup enforces, by the names Output.Unenforced uses.
var cgroupLimits = []string{"cpu", "memory", "pids"}

// cgroupSetup is where this process makes its worker cgroups: one
// directory per limit ("cpu", "memory", "pids"), all the same directory
// with cgroup v2. A limit missing from dirs is in why.
type cgroupSetup struct {
	v2   bool
	dirs map[string]string // limit -> parent directory
	why  map[string]string // limit -> why it cannot be enforced
}

var cgroupSeq atomic.Int64

// detectCgroups finds where worker cgroups can be made and checks that
// they can (a probe cgroup is made and removed in each place).
func detectCgroups(cfg Config) *cgroupSetup {
	cs := &cgroupSetup{dirs: map[string]string{}, why: map[string]string{}}
	if cfg.NoCgroups {
		for _, l := range cgroupLimits {
			cs.why[l] = "cgroups turned off (bwrap.Config.NoCgroups)"
		}
		return cs
	}
	parent := cfg.CgroupParent
	if parent == "" {
		if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
			own, err := ownCgroup("")
			if err != nil {
				for _, l := range cgroupLimits {
					cs.why[l] = "cgroup v2: " + err.Error()
				}
				return cs
			}
			parent = filepath.Join("/sys/fs/cgroup", own)
		}
	}
	if parent != "" {
		cs.v2 = true
		cs.detectV2(parent)
		return cs
	}
	cs.detectV1()
	return cs
}

func (cs *cgroupSetup) detectV2(parent string) {
	ctrl := map[string]string{"cpu": "cpu", "memory": "memory", "pids": "pids"}
	avail, err := os.ReadFile(filepath.Join(parent, "cgroup.controllers"))
	if err != nil {
		for _, l := range cgroupLimits {
			cs.why[l] = fmt.Sprintf("cgroup v2 parent %s: %v", parent, err)
		}
		return
	}
	have := map[string]bool{}
	for _, c := range strings.Fields(string(avail)) {
		have[c] = true
	}
	for _, l := range cgroupLimits {
		c := ctrl[l]
		if !have[c] {
			cs.why[l] = fmt.Sprintf("cgroup v2: the %s controller is not available in %s", c, parent)
			continue
		}
		if err := os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+"+c), 0); err != nil {
			cs.why[l] = fmt.Sprintf("cgroup v2: cannot enable the %s controller below %s (delegate a cgroup without processes of its own and set bwrap.Config.CgroupParent): %v", c, parent, err)
			continue
		}
		cs.dirs[l] = parent
	}
	cs.probe()
}

func (cs *cgroupSetup) detectV1() {
	mounts, err := v1Mounts()
	if err != nil {
		for _, l := range cgroupLimits {
			cs.why[l] = "cgroup: " + err.Error()
		}
		return
	}
	for _, l := range cgroupLimits {
		m, ok := mounts[l]
		if !ok {
			cs.why[l] = "no cgroup v1 " + l + " controller nor cgroup v2 hierarchy mounted"
			continue
		}
		own, err := ownCgroup(l)
		if err != nil {
			cs.why[l] = "cgroup v1 " + l + ": " + err.Error()
			continue
		}
		rel := strings.TrimPrefix(own, m.root)
		cs.dirs[l] = filepath.Join(m.dir, rel)
	}
	cs.probe()
}

// probe makes and removes a cgroup in each place, dropping the places
// where that fails.
func (cs *cgroupSetup) probe() {
	for _, l := range cgroupLimits {
		d, ok := cs.dirs[l]
		if !ok {
			continue
		}
		p := filepath.Join(d, fmt.Sprintf("bichat-probe-%d-%d", os.Getpid(), cgroupSeq.Add(1)))
		if err := os.Mkdir(p, 0o755); err != nil {
			delete(cs.dirs, l)
			cs.why[l] = fmt.Sprintf("cannot create a cgroup in %s (needs root or a delegated cgroup): %v", d, err)
			continue
		}
		_ = os.Remove(p)
	}
}

type v1Mount struct{ dir, root string }

// v1Mounts maps each cgroup v1 controller to its mount point and the
// hierarchy path mounted there.
func v1Mounts() (map[string]v1Mount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]v1Mount{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		a, b := strings.Fields(pre), strings.Fields(post)
		if len(a) < 5 || len(b) < 3 || b[0] != "cgroup" {
			continue
		}
		for _, o := range strings.Split(b[2], ",") {
			if o == "cpu" || o == "memory" || o == "pids" {
				if _, dup := out[o]; !dup {
					out[o] = v1Mount{dir: a[4], root: a[3]}
				}
			}
		}
	}
	return out, sc.Err()
}

// ownCgroup is this process's cgroup path for controller (v1), or its v2
// path when controller is "".
func ownCgroup(controller string) (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if controller == "" && parts[0] == "0" && parts[1] == "" {
			return parts[2], nil
		}
		for _, c := range strings.Split(parts[1], ",") {
			if controller != "" && c == controller {
				return parts[2], nil
			}
		}
	}
	return "", fmt.Errorf("no %q entry in /proc/self/cgroup", controller)
}

// unenforced lists the limits not in force, sorted by name.
func (cs *cgroupSetup) unenforced() []string {
	var out []string
	for _, l := range cgroupLimits {
		if w, ok := cs.why[l]; ok {
			out = append(out, l+": "+w)
		}
	}
	return out
}

// workerCgroup is the cgroup (one directory per limit) of one worker.
type workerCgroup struct {
	setup *cgroupSetup
	dirs  map[string]string
	why   map[string]string
	pid   int // the zygote, the only process placed in it by us
}

// newWorkerCgroup makes the worker's cgroup and moves the zygote (host
// pid) into it; the jobs it forks inherit it. The zygote's memory stays
// charged where it was: only what jobs allocate is charged here.
func (cs *cgroupSetup) newWorkerCgroup(pid int) *workerCgroup {
	cg := &workerCgroup{setup: cs, dirs: map[string]string{}, why: map[string]string{}, pid: pid}
	name := fmt.Sprintf("bichat-%d-%d", os.Getpid(), cgroupSeq.Add(1))
	made := map[string]bool{}
	for _, l := range cgroupLimits {
		parent, ok := cs.dirs[l]
		if !ok {
			continue
		}
		d := filepath.Join(parent, name)
		if !made[d] {
			if err := os.Mkdir(d, 0o755); err != nil {
				cg.why[l] = fmt.Sprintf("create cgroup %s: %v", d, err)
				continue
			}
			made[d] = true
			if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
				cg.why[l] = fmt.Sprintf("move the worker into cgroup %s: %v", d, err)
				_ = os.Remove(d)
				delete(made, d)
				continue
			}
		}
		cg.dirs[l] = d
	}
	return cg
}

// apply sets the limits of the next job and returns the ones it could
// not set, and the OOM kill count before the job.
//
// work is the job's tmpfs size (WorkBytes plus its inputs) and zygoteRSS
// the zygote's resident size: the memory cgroup holds the job's processes
// together to max(Memory+work, 5×work) + zygoteRSS + 64 MiB. The work
// tmpfs is charged as memory; the runner's pid 1 holds the produced
// files about four times over while it sends them (after the code
// exited); the forked processes' copy-on-write copies of the zygote's
// pages are charged to the job (measured: 7 MiB for print(1), 33 MiB
// for a pandas+matplotlib chart), at most the zygote's size.
func (cg *workerCgroup) apply(l sandbox.Limits, work, zygoteRSS int64) (unenforced []string, oomBefore int64) {
	fail := func(limit string, err error) {
		unenforced = append(unenforced, limit+": "+err.Error())
	}
	for _, name := range cgroupLimits {
		if w, ok := cg.setup.why[name]; ok {
			unenforced = append(unenforced, name+": "+w)
		} else if w, ok := cg.why[name]; ok {
			unenforced = append(unenforced, name+": "+w)
		}
	}
	if d, ok := cg.dirs["cpu"]; ok {
		period := int64(100000)
		quota := int64(math.Ceil(l.CPUs * float64(period)))
		quota = max(quota, 1000)
		var err error
		if cg.setup.v2 {
			err = writeFile(d, "cpu.max", fmt.Sprintf("%d %d", quota, period))
		} else if err = writeFile(d, "cpu.cfs_period_us", strconv.FormatInt(period, 10)); err == nil {
			err = writeFile(d, "cpu.cfs_quota_us", strconv.FormatInt(quota, 10))
		}
		if err != nil {
			fail("cpu", err)
		}
	}
	if d, ok := cg.dirs["memory"]; ok {
		limit := max(l.Memory+work, 5*work) + zygoteRSS + 64<<20
		var err error
		if cg.setup.v2 {
			err = writeFile(d, "memory.max", strconv.FormatInt(limit, 10))
			if err == nil {
				if e := writeFile(d, "memory.swap.max", "0"); e != nil && !errors.Is(e, os.ErrNotExist) {
					err = e
				}
			}
		} else {
			sw := filepath.Join(d, "memory.memsw.limit_in_bytes")
			_, swErr := os.Stat(sw)
			if swErr == nil {
				err = writeFile(d, "memory.memsw.limit_in_bytes", "-1")
			}
			if err == nil {
				err = writeFile(d, "memory.limit_in_bytes", strconv.FormatInt(limit, 10))
			}
			if err == nil && swErr == nil {
				err = writeFile(d, "memory.memsw.limit_in_bytes", strconv.FormatInt(limit, 10))
			}
		}
		if err != nil {
			fail("memory", err)
		}
		oomBefore = cg.oomKills()
	}
	if d, ok := cg.dirs["pids"]; ok {
		// The zygote and the job's two runner processes come on top.
		if err := writeFile(d, "pids.max", strconv.Itoa(l.Pids+3)); err != nil {
			fail("pids", err)
		}
	}
	return unenforced, oomBefore
}

// oomKills counts the OOM kills in the memory cgroup so far.
func (cg *workerCgroup) oomKills() int64 {
	d, ok := cg.dirs["memory"]
	if !ok {
		return 0
	}
	file := "memory.oom_control"
	if cg.setup.v2 {
		file = "memory.events"
	}
	b, err := os.ReadFile(filepath.Join(d, file))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == "oom_kill" {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// remove deletes the worker's cgroup once its processes are gone (the
// sandbox dies asynchronously after its bwrap parent is killed).
func (cg *workerCgroup) remove() {
	seen := map[string]bool{}
	for _, d := range cg.dirs {
		if seen[d] {
			continue
		}
		seen[d] = true
		deadline := time.Now().Add(5 * time.Second)
		for {
			err := os.Remove(d)
			if err == nil || errors.Is(err, os.ErrNotExist) || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func writeFile(dir, name, value string) error {
	if err := os.WriteFile(filepath.Join(dir, name), []byte(value), 0); err != nil {
		return fmt.Errorf("set %s: %w", name, err)
	}
	return nil
}

// rssOf reads a process's resident size (bytes) from /proc.
func rssOf(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n << 10
			}
		}
	}
	return 0
}
