package sse

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"testing"
)

// benchStream builds about 1 MiB of OpenAI-style chunks: short text deltas
// and a few long tool-argument events.
func benchStream() []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < 1<<20; i++ {
		if i%50 == 49 {
			fmt.Fprintf(&b, "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":%q}}]}}]}\n\n",
				bytes.Repeat([]byte("SELECT month, sum(revenue) "), 40))
			continue
		}
		fmt.Fprintf(&b, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"word%d \"},\"finish_reason\":null}]}\n\n", i)
	}
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

// BenchmarkReader decodes ~1 MiB of events; the baseline sub-benchmark
// scans the same bytes line by line with bufio.Reader.ReadSlice, and
// "ratio" is Reader time over baseline time measured in the same run.
func BenchmarkReader(b *testing.B) {
	data := benchStream()
	var baseNs float64
	b.Run("baseline_bufio_lines", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		br := bufio.NewReaderSize(nil, 64<<10)
		for b.Loop() {
			br.Reset(bytes.NewReader(data))
			for {
				_, err := br.ReadSlice('\n')
				if err == io.EOF {
					break
				}
				if err != nil && err != bufio.ErrBufferFull {
					b.Fatal(err)
				}
			}
		}
		baseNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("sse", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		events := 0
		for b.Loop() {
			r := NewReader(bytes.NewReader(data))
			events = 0
			for {
				_, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
				events++
			}
		}
		ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		if baseNs > 0 {
			b.ReportMetric(ns/baseNs, "x_baseline")
		}
		b.ReportMetric(float64(testing.AllocsPerRun(3, func() {
			r := NewReader(bytes.NewReader(data))
			for {
				if _, err := r.Next(); err != nil {
					break
				}
			}
		}))/float64(events), "allocs/event")
	})
}
