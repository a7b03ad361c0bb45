package openai_test

import (
	"testing"

	"github.com/bichat-go/bichat/internal/llmtest"
)

// TestMain fails the package when a test leaves goroutines behind (an
// unclosed body, a stuck stream).
func TestMain(m *testing.M) { llmtest.VerifyNoLeaks(m) }
