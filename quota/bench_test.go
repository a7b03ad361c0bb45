package quota_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/bichat-go/bichat/quota"
)

// BenchmarkMemoryAdmitRelease measures one Admit and its release under
// limits that never refuse, on one scope pair and spread over 10,000
// users, serially and from parallel goroutines.
func BenchmarkMemoryAdmitRelease(b *testing.B) {
	p := quota.Policy{
		Tenant: quota.Limits{RequestsPerMinute: quota.MaxPerMinute, TokensPerMinute: quota.MaxPerMinute, ConcurrentRuns: 1 << 30},
		User:   quota.Limits{RequestsPerMinute: quota.MaxPerMinute, TokensPerMinute: quota.MaxPerMinute, ConcurrentRuns: 1 << 30},
	}
	users := make([]string, 10_000)
	for i := range users {
		users[i] = "user-" + strconv.Itoa(i)
	}
	ctx := context.Background()
	for _, bc := range []struct {
		name  string
		users int
	}{{"one user", 1}, {"10k users", len(users)}} {
		b.Run(bc.name, func(b *testing.B) {
			m, err := quota.NewMemory(p, quota.MemoryOptions{})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				release, err := m.Admit(ctx, "acme", users[i%bc.users], "run")
				if err != nil {
					b.Fatal(err)
				}
				release()
				i++
			}
		})
	}
	b.Run("parallel", func(b *testing.B) {
		m, err := quota.NewMemory(p, quota.MemoryOptions{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				u := users[i%len(users)]
				release, err := m.Admit(ctx, "acme", u, u)
				if err != nil {
					b.Error(err)
					return
				}
				release()
				i++
			}
		})
	})
}
