package sandbox_test

import (
	"fmt"

	"github.com/bichat-go/bichat/sandbox"
)

// The output policy every adapter applies to the files a job left in its
// working directory.
func ExampleCollectFiles() {
	l := sandbox.Limits{Files: 2}.WithDefaults()
	files, skipped := sandbox.CollectFiles([]sandbox.Candidate{
		{Name: "chart.png", Regular: true, Size: 3, Data: []byte("png")},
		{Name: "shadow.csv", Kind: "symlink"},
		{Name: "inputs/sales.csv", Regular: true, Size: 1, Data: []byte("x")},
		{Name: "notes.txt", Regular: true, Size: 2, Data: []byte("hi")},
		{Name: "totals.csv", Regular: true, Size: 4, Data: []byte("a,b\n")},
	}, l)
	for _, f := range files {
		fmt.Println("file:", f.Name, f.MediaType, f.Size)
	}
	for _, s := range skipped {
		fmt.Println("skipped:", s.Name, "-", s.Reason)
	}
	// Output:
	// file: chart.png image/png 3
	// file: totals.csv text/csv 4
	// skipped: notes.txt - extension not returned (allowed: .csv, .json, .png, .svg, .xlsx)
	// skipped: shadow.csv - symlink: only regular files are returned
}

func ExampleCapText() {
	fmt.Print(sandbox.CapText([]byte("hello world"), 1000, 5))
	// Output:
	// hello
	// [output truncated: 5 of 1000 bytes shown]
}

func ExampleOutput_Reason() {
	fmt.Println((&sandbox.Output{ExitCode: 1}).Reason())
	fmt.Println((&sandbox.Output{OOMKilled: true, ExitCode: 1}).Reason())
	// Output:
	// exited with status 1
	// memory limit exceeded: the job was stopped
}
