package jsonscan_test

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/internal/jsonscan"
)

// value decodes any JSON value the way encoding/json decodes into an
// interface{}: objects as maps, numbers as float64.
func value(s *jsonscan.Scanner) (any, bool) {
	switch c := s.Next(); {
	case c == '{':
		m := map[string]any{}
		ok := s.Object(func(k []byte) bool {
			// Keys are handed over unvalidated: a decoder compares them
			// with the names it knows.
			key, ok := jsonscan.Unescape(k)
			if !ok {
				return false
			}
			v, ok := value(s)
			m[key] = v
			return ok
		})
		return m, ok
	case c == '[':
		a := []any{}
		ok := s.Array(func() bool {
			v, ok := value(s)
			a = append(a, v)
			return ok
		})
		return a, ok
	case c == '"':
		return s.Text()
	case c == 'n':
		return nil, s.Null()
	case c == 't' || c == 'f':
		return s.Bool()
	default:
		t := *s
		if n, ok := t.Int(); ok {
			*s = t
			return float64(n), true
		}
		raw, ok := s.RawView()
		if !ok {
			return nil, false
		}
		f, err := strconv.ParseFloat(string(raw), 64)
		return f, err == nil
	}
}

// decode reads a whole document with value.
func decode(data []byte) (any, bool) {
	s := jsonscan.New(data)
	v, ok := value(&s)
	return v, ok && s.AtEnd()
}

// check is the property FuzzScanner tests: whatever the scanner accepts,
// encoding/json accepts too and decodes to the same value, and Skip and
// Raw pass over exactly the same bytes.
func check(t *testing.T, data []byte) {
	got, ok := decode(data)
	if !ok {
		return
	}
	var want any
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatalf("%q: scanner accepted what encoding/json rejects: %v", data, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\nscanner       %#v\nencoding/json %#v", data, got, want)
	}
	s := jsonscan.New(data)
	if !s.Skip() || !s.AtEnd() {
		t.Fatalf("%q: decoded, but Skip declines", data)
	}
	s = jsonscan.New(data)
	raw, ok := s.Raw()
	if !ok || string(raw) != strings.Trim(string(data), " \t\r\n") {
		t.Fatalf("%q: Raw = %q, %v", data, raw, ok)
	}
}

var seeds = []string{
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"plain"}}`,
	` { "a" : [ 1 , -2.5e3 , 0 , -0 , 1E+2 , true , false , null , { } , [ ] ] , "b" : "x" } `,
	`"a\u00e9\ud83d\ude00\n\t\/\"\\\b\f\r"`,
	`"lone \ud800 surrogate \udc00 \ud800\u0041"`,
	`{"k":"v","k":"w"}`,
	`123456789012345678`,
	`-42`,
	`[1.5,"\u0000"]`,
	`{"Key":{"nested":{"deep":[[[["x"]]]]}}}`,
	"\"\xff\"",
	"\"tab\there\"",
	`{"a":1,}`,
	`[01]`,
	`nul`,
}

func FuzzScanner(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(check)
}

func TestScannerMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, in := range seeds {
		check(t, []byte(in))
	}
	// These must be read by the scanner itself, not only declined.
	for _, in := range seeds[:8] {
		if _, ok := decode([]byte(in)); !ok {
			t.Errorf("declined valid input %s", in)
		}
	}
}

func TestDeclines(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"\"\xff\"",        // invalid UTF-8: encoding/json substitutes U+FFFD
		"\"a\x01b\"",      // control character
		`"bad \x escape"`, // invalid escape
		`"\u12"`,          // short \u escape
		`"cut`,            // unterminated
		`{"a":1,}`,        // trailing comma
		`{"a\u0062":1}`,   // escaped key
		`[1 2]`,           // missing comma
		`{"a":1} x`,       // trailing garbage
		`[01]`,            // leading zero
		`[1.]`,            // bad fraction
		`[1e]`,            // bad exponent
		`[-]`,             // lone minus
		`[nul]`,           // truncated literal
		`[tru]`,           // truncated literal
		``,
	} {
		if v, ok := decode([]byte(in)); ok {
			t.Errorf("accepted %q as %#v", in, v)
		}
	}
}

func TestSkipDepth(t *testing.T) {
	t.Parallel()
	for depth, want := range map[int]bool{64: true, 65: false} {
		doc := strings.Repeat(`{"a":[`, depth/2) + strings.Repeat("[", depth%2) + strings.Repeat("]", depth%2) + strings.Repeat(`]}`, depth/2)
		if !json.Valid([]byte(doc)) {
			t.Fatalf("invalid test document %s", doc)
		}
		s := jsonscan.New([]byte(doc))
		if got := s.Skip() && s.AtEnd(); got != want {
			t.Errorf("depth %d: Skip = %v", depth, got)
		}
	}
}

func TestInt(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{"0": 0, "7": 7, "-12": -12, " 123456789012345678": 123456789012345678} {
		s := jsonscan.New([]byte(in))
		if n, ok := s.Int(); !ok || n != want || !s.AtEnd() {
			t.Errorf("Int(%q) = %d, %v", in, n, ok)
		}
	}
	for _, in := range []string{"1.5", "1e3", "01", "-", "", "x", "1234567890123456789", "null", `"1"`} {
		s := jsonscan.New([]byte(in))
		if n, ok := s.Int(); ok && s.AtEnd() {
			t.Errorf("Int(%q) = %d, want declined", in, n)
		}
	}
}

func TestSkipLeavesStringContents(t *testing.T) {
	t.Parallel()
	// The one documented leniency: skipped strings are not validated.
	s := jsonscan.New([]byte("{\"id\":\"a\x01\xff\"}"))
	if !s.Skip() || !s.AtEnd() {
		t.Fatal("Skip declined a skipped string's contents")
	}
}

func TestRejectFoldedKeys(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{
		`{"choices":[]}`:              true,
		`{"Choices":[]}`:              false,
		`{"x":{"Nested":1}}`:          false, // Skip checks keys too
		"{\"\u017fcore\":1}":          false, // non-ASCII (ſ folds to s)
		`{"with_under_score_1":null}`: true,
	} {
		s := jsonscan.New([]byte(in))
		s.RejectFoldedKeys = true
		got := s.Object(func([]byte) bool { return s.Skip() }) && s.AtEnd()
		if got != want {
			t.Errorf("%s: accepted %v, want %v", in, got, want)
		}
		plain := jsonscan.New([]byte(in))
		if !plain.Skip() || !plain.AtEnd() {
			t.Errorf("%s: declined without RejectFoldedKeys", in)
		}
	}
}

func TestNullable(t *testing.T) {
	t.Parallel()
	calls := 0
	s := jsonscan.New([]byte(`[null, null, {"a":[]}]`))
	ok := s.Array(func() bool {
		return s.NullableObject(func([]byte) bool { calls++; return s.NullableArray(func() bool { return false }) })
	})
	if !ok || calls != 1 {
		t.Fatalf("ok %v, %d members", ok, calls)
	}
	for _, in := range []string{`null`, `nul`} {
		s := jsonscan.New([]byte(in))
		if s.Object(func([]byte) bool { return true }) || s.Array(func() bool { return true }) {
			t.Errorf("Object/Array accepted %s", in)
		}
	}
	s = jsonscan.New([]byte(`nulx`))
	if s.NullableArray(func() bool { return true }) && s.AtEnd() {
		t.Error("NullableArray accepted nulx")
	}
}

func TestTextFromReusesKnown(t *testing.T) { // not parallel: AllocsPerRun
	known := []string{"stop", "tool_calls"}
	data := []byte(`"tool_calls"`)
	allocs := testing.AllocsPerRun(100, func() {
		s := jsonscan.New(data)
		if v, ok := s.TextFrom(known); !ok || v != "tool_calls" {
			t.Fatalf("TextFrom = %q, %v", v, ok)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations for a known string", allocs)
	}
	s := jsonscan.New([]byte(`"t\u006fol_calls"`))
	if v, ok := s.TextFrom(known); !ok || v != "tool_calls" {
		t.Fatalf("escaped: %q, %v", v, ok)
	}
}

func TestFoldsTo(t *testing.T) {
	t.Parallel()
	for key, want := range map[string]bool{"TYPE": true, "type": true, "ſignature": true, "Kind": false} {
		if got := jsonscan.FoldsTo([]byte(key), "type", "signature"); got != want {
			t.Errorf("FoldsTo(%q) = %v", key, got)
		}
	}
}

// BenchmarkScanner reads a typical stream event's fields.
func BenchmarkScanner(b *testing.B) {
	data := []byte(`{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"word123 "},"extra":[1,{"a":null},true,-2.5e3]}`)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		s := jsonscan.New(data)
		var text string
		ok := s.Object(func(k []byte) bool {
			if string(k) == "delta" {
				return s.Object(func(k []byte) bool {
					if string(k) == "text" {
						return s.TextInto(&text)
					}
					return s.Skip()
				})
			}
			return s.Skip()
		})
		if !ok || !s.AtEnd() || text != "word123 " {
			b.Fatal("declined")
		}
	}
}
