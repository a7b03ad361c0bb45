package canonjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func TestCanonicalize(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{`{"b":1,"a":2}`, `{"a":2,"b":1}`},
		{" { \"z\" : [ 1 , 2 , { \"y\":null, \"x\":true } ] , \"a\" : \"s\" } ", `{"a":"s","z":[1,2,{"x":true,"y":null}]}`},
		{`1.50`, `1.5`},
		{`1e2`, `100`},
		{`1E+2`, `100`},
		{`-0`, `0`},
		{`-0.0`, `0`},
		{`1e21`, `1e+21`},
		{`1e-7`, `1e-7`},
		{`1.5e-8`, `1.5e-8`},
		{`0.000001`, `0.000001`},
		{`123456789012345678901234567890`, `123456789012345678901234567890`},
		{`"\u0041\/\u00e9\ud83d\ude00"`, `"A/é😀"`},
		{`"<&>\u2028"`, "\"<&>\u2028\""},
		{`"\u0001\t\n"`, `"\u0001\t\n"`},
		{`"\ud800"`, "\"\uFFFD\""},
		{`{"\ue000":1,"\ud83d\ude00":2}`, "{\"\U0001F600\":2,\"\uE000\":1}"}, // UTF-16 order: D83D < E000
		{`[]`, `[]`},
		{`{}`, `{}`},
	}
	for _, c := range cases {
		got, err := Canonicalize([]byte(c.in))
		if err != nil {
			t.Errorf("Canonicalize(%s): %v", c.in, err)
			continue
		}
		if string(got) != c.want {
			t.Errorf("Canonicalize(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestCanonicalizeErrors(t *testing.T) {
	t.Parallel()
	for _, in := range []string{``, `{`, `{"a":1,"a":2}`, `[1,]`, `01`, `1.`, `"abc`, `tru`, `1 2`, `{"a" 1}`, "\"a\x01\"", `1e999`} {
		_, err := Canonicalize([]byte(in))
		if err == nil {
			t.Errorf("Canonicalize(%q) succeeded, want an error", in)
		}
		if in == `{"a":1,"a":2}` && !errors.Is(err, ErrDuplicateKey) {
			t.Errorf("duplicate key error = %v, want ErrDuplicateKey", err)
		}
	}
}

func TestMarshalStruct(t *testing.T) {
	t.Parallel()
	type inner struct {
		Z float64 `json:"z"`
		A string  `json:"a,omitempty"`
	}
	v := struct {
		Name  string            `json:"name"`
		Inner inner             `json:"inner"`
		M     map[string]int    `json:"m"`
		Raw   json.RawMessage   `json:"raw"`
		Tags  map[string]string `json:"tags,omitempty"`
	}{Name: "<x>", Inner: inner{Z: 2.50}, M: map[string]int{"b": 1, "a": 2}, Raw: json.RawMessage(`{ "q" : 1.0 }`)}
	got, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"inner":{"z":2.5},"m":{"a":2,"b":1},"name":"<x>","raw":{"q":1}}`
	if string(got) != want {
		t.Fatalf("Marshal = %s, want %s", got, want)
	}
}

// reorder writes v (decoded with UseNumber) with keys in random order and
// random whitespace.
func reorder(b *strings.Builder, v any, r *rand.Rand) {
	ws := func() {
		for range r.IntN(3) {
			b.WriteByte(" \n\t"[r.IntN(3)])
		}
	}
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			ws()
			kb, _ := json.Marshal(k)
			b.Write(kb)
			ws()
			b.WriteByte(':')
			ws()
			reorder(b, x[k], r)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			ws()
			reorder(b, e, r)
		}
		b.WriteByte(']')
	case json.Number:
		b.WriteString(string(x))
	default:
		kb, _ := json.Marshal(x)
		b.Write(kb)
	}
}

func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{`{"b":[1,2.5,{"d":null,"c":"x"}],"a":-0.0}`, `[1e300,-1e-300,"\u00e9"]`, `"\ud83d\ude00"`,
		`{"k":{"k":{"k":[]}}}`, `12345678901234567890`, `{"é":1,"e":2,"\ue000":3,"😀":4}`} {
		f.Add([]byte(s), uint64(1))
	}
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		c1, err := Canonicalize(data)
		if !json.Valid(data) {
			if err == nil {
				t.Fatalf("Canonicalize accepted invalid JSON %q", data)
			}
			return
		}
		if err != nil {
			if errors.Is(err, ErrDuplicateKey) || strings.Contains(err.Error(), "float64 range") {
				return
			}
			t.Fatalf("Canonicalize(%q): %v", data, err)
		}
		if !json.Valid(c1) {
			t.Fatalf("canonical form %q is not valid JSON", c1)
		}
		// Round trip: same value, and canonical form is a fixed point.
		var a, b any
		if err := json.Unmarshal(data, &a); err != nil {
			t.Skip()
		}
		if err := json.Unmarshal(c1, &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("value changed: %q -> %q", data, c1)
		}
		c2, err := Canonicalize(c1)
		if err != nil || !bytes.Equal(c1, c2) {
			t.Fatalf("not idempotent: %q -> %q (%v)", c1, c2, err)
		}
		// Key order and whitespace invariance.
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatal(err)
		}
		var sb strings.Builder
		reorder(&sb, v, rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)))
		c3, err := Canonicalize([]byte(sb.String()))
		if err != nil {
			t.Fatalf("reordered %q: %v", sb.String(), err)
		}
		if !bytes.Equal(c1, c3) {
			t.Fatalf("key order changed the canonical form:\n%q\n%q", c1, c3)
		}
	})
}

func TestAppendFloat(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		f    float64
		want string
	}{{1, "1"}, {0.1, "0.1"}, {1e20, "100000000000000000000"}, {1e21, "1e+21"}, {-1.5e-8, "-1.5e-8"}, {123.456, "123.456"}, {5e-324, "5e-324"}} {
		if got := string(AppendFloat(nil, c.f)); got != c.want {
			t.Errorf("AppendFloat(%v) = %s, want %s", c.f, got, c.want)
		}
	}
}

func ExampleMarshal() {
	b, _ := Marshal(map[string]any{"b": 1.50, "a": []int{3, 1}})
	fmt.Println(string(b))
	// Output: {"a":[3,1],"b":1.5}
}
