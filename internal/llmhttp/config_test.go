package llmhttp

import (
	"errors"
	"testing"
)

func TestAPIKey(t *testing.T) {
	t.Setenv("LLMHTTP_TEST_KEY_A", "")
	t.Setenv("LLMHTTP_TEST_KEY_B", "from-b")
	if k, err := APIKey("p", "Config.APIKey", "given", "LLMHTTP_TEST_KEY_B"); k != "given" || err != nil {
		t.Fatalf("configured: %q, %v", k, err)
	}
	if k, err := APIKey("p", "Config.APIKey", "", "LLMHTTP_TEST_KEY_A", "LLMHTTP_TEST_KEY_B"); k != "from-b" || err != nil {
		t.Fatalf("second env: %q, %v", k, err)
	}
	t.Setenv("LLMHTTP_TEST_KEY_A", "from-a")
	if k, _ := APIKey("p", "Config.APIKey", "", "LLMHTTP_TEST_KEY_A", "LLMHTTP_TEST_KEY_B"); k != "from-a" {
		t.Fatalf("first env: %q", k)
	}
	for envs, want := range map[int]string{
		1: "gemini: no API key: set Config.APIKey or LLMHTTP_TEST_KEY_C",
		2: "gemini: no API key: set Config.APIKey, LLMHTTP_TEST_KEY_C or LLMHTTP_TEST_KEY_D",
	} {
		_, err := APIKey("gemini", "Config.APIKey", "", []string{"LLMHTTP_TEST_KEY_C", "LLMHTTP_TEST_KEY_D"}[:envs]...)
		if err == nil || err.Error() != want {
			t.Errorf("error %v, want %q", err, want)
		}
	}
}

func TestBaseURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"": "https://def", "/": "https://def", "http://x/": "http://x", "http://x//v1//": "http://x//v1", "http://y": "http://y"} {
		if got := BaseURL(in, "https://def"); got != want {
			t.Errorf("BaseURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEncodeJSON(t *testing.T) {
	t.Parallel()
	b, err := EncodeJSON(map[string]string{"q": "a < b & c"})
	if err != nil || string(b) != `{"q":"a < b & c"}` {
		t.Fatalf("%s, %v", b, err)
	}
	if _, err := EncodeJSON(func() {}); err == nil {
		t.Fatal("encoded a func")
	}
}

func TestFail(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	n := 0
	for v, err := range Fail[int](boom) {
		n++
		if v != 0 || err != boom {
			t.Fatalf("yielded %v, %v", v, err)
		}
	}
	if n != 1 {
		t.Fatalf("%d values", n)
	}
}
