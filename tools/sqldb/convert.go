package sqldb

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
	"unicode/utf8"
)

// Cell converts a driver value to the tools.Table convention (nil, bool,
// int64, float64, string, time.Time, []byte), cuts text and binary longer
// than maxBytes (0: no cut), and returns the value, whether it was cut, and
// its approximate size in bytes. Adapters call it for every cell; values of
// other types are rendered as text (fmt.Stringer, JSON for maps and
// slices).
func Cell(v any, maxBytes int) (any, bool, int) {
	switch x := v.(type) {
	case nil:
		return nil, false, 0
	case bool:
		return v, false, 1
	case int64:
		return v, false, 8
	case int:
		return int64(x), false, 8
	case int32:
		return int64(x), false, 8
	case int16:
		return int64(x), false, 8
	case int8:
		return int64(x), false, 8
	case uint8:
		return int64(x), false, 8
	case uint16:
		return int64(x), false, 8
	case uint32:
		return int64(x), false, 8
	case uint64:
		if x > math.MaxInt64 {
			return float64(x), false, 8
		}
		return int64(x), false, 8
	case float64:
		return v, false, 8
	case float32:
		return float64(x), false, 8
	case time.Time:
		return v, false, 24
	case string:
		s, cut := cutString(x, maxBytes)
		if !cut {
			return v, false, len(s)
		}
		return s, cut, len(s)
	case []byte:
		if maxBytes > 0 && len(x) > maxBytes {
			return append([]byte(nil), x[:maxBytes]...), true, maxBytes
		}
		return append([]byte(nil), x...), false, len(x)
	case [16]byte: // uuid
		s := fmt.Sprintf("%x-%x-%x-%x-%x", x[0:4], x[4:6], x[6:8], x[8:10], x[10:16])
		return s, false, len(s)
	case fmt.Stringer:
		s, cut := cutString(x.String(), maxBytes)
		return s, cut, len(s)
	case map[string]any, []any:
		b, err := json.Marshal(x)
		if err != nil {
			s, cut := cutString(fmt.Sprint(x), maxBytes)
			return s, cut, len(s)
		}
		s, cut := cutString(string(b), maxBytes)
		return s, cut, len(s)
	default:
		s, cut := cutString(fmt.Sprint(x), maxBytes)
		return s, cut, len(s)
	}
}

// cutString cuts s to at most max bytes on a rune boundary.
func cutString(s string, max int) (string, bool) {
	if max <= 0 || len(s) <= max {
		return s, false
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut], true
}
