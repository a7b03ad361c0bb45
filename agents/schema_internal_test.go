package agents

import (
	"reflect"
	"strings"
	"testing"
)

// reflectSchema turns a panic of the schema generator into an error (the
// field checks before it catch the known cases; this is the backstop).
func TestReflectSchemaRecoversGeneratorPanic(t *testing.T) {
	t.Parallel()
	type withChan struct {
		C chan int `json:"c"`
	}
	s, err := reflectSchema(reflect.TypeFor[withChan]())
	if err == nil || s != nil || !strings.Contains(err.Error(), "cannot generate its JSON Schema") || !strings.Contains(err.Error(), "chan int") {
		t.Fatalf("reflectSchema = %v, %v; want an error naming the unsupported type", s, err)
	}
}
