package kb

// matrix is a scope's vectors laid out for search, column-major: a query
// touches only the columns of its non-zero dimensions (few, for the
// offline embedder's sparse queries), each a contiguous run of floats.
type matrix struct {
	names []string
	dims  int
	cols  [][]float32 // cols[d][row]
}

// buildMatrixLocked snapshots the scope's vectors; the caller holds s.mu.
func (s *scopeState) buildMatrixLocked() *matrix {
	m := &matrix{}
	var rows [][]float32
	for _, n := range s.names {
		e := s.entries[n]
		if e.vec == nil {
			continue
		}
		if m.dims == 0 {
			m.dims = len(e.vec)
		}
		if len(e.vec) != m.dims {
			continue
		}
		m.names = append(m.names, n)
		rows = append(rows, e.vec)
	}
	backing := make([]float32, len(rows)*m.dims)
	m.cols = make([][]float32, m.dims)
	for d := range m.cols {
		col := backing[d*len(rows) : (d+1)*len(rows)]
		for r, v := range rows {
			col[r] = v[d]
		}
		m.cols[d] = col
	}
	return m
}

// top returns the n rows with the highest positive dot product with q.
func (m *matrix) top(q []float32, n int) []Ranked {
	if len(m.names) == 0 || len(q) != m.dims {
		return nil
	}
	scores := make([]float32, len(m.names))
	for d, x := range q {
		if x == 0 {
			continue
		}
		axpy(x, m.cols[d], scores)
	}
	t := newTopN(n)
	for r, sim := range scores {
		if sim > 0 {
			t.push(Ranked{Name: m.names[r], Score: float64(sim)})
		}
	}
	return t.sorted()
}

// axpy adds a·x to y.
func axpy(a float32, x, y []float32) {
	y = y[:len(x)]
	i := 0
	for ; i+4 <= len(x); i += 4 {
		y[i] += a * x[i]
		y[i+1] += a * x[i+1]
		y[i+2] += a * x[i+2]
		y[i+3] += a * x[i+3]
	}
	for ; i < len(x); i++ {
		y[i] += a * x[i]
	}
}
