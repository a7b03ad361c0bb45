package bwrap_test

import (
	"bytes"
	"os"
	"strconv"
)

// sandboxtestProcs lists pids of processes whose command line ends with
// the runner mode word (the zygotes) and whose bwrap parent is ours.
func sandboxtestProcs(mode string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.HasSuffix(b, []byte("\x00"+mode+"\x00")) || !bytes.Contains(b, []byte("bichat sandbox runner")) {
			continue
		}
		if descends(pid, self) {
			out = append(out, pid)
		}
	}
	return out
}

func descends(pid, ancestor int) bool {
	for i := 0; i < 10 && pid > 1; i++ {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return false
		}
		f := bytes.Fields(b[bytes.LastIndexByte(b, ')')+1:])
		pp, _ := strconv.Atoi(string(f[1]))
		if pp == ancestor {
			return true
		}
		pid = pp
	}
	return false
}
