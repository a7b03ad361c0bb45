package providers_test

import (
	"os"
	"testing"

	"github.com/bichat-go/bichat/providers/providertest"
)

// TestVendorFixtureFolders makes sure every folder of the vendor fixtures
// is replayed by a provider's TestVendorFixtures (which in turn accounts
// for each file), so a new folder forces a review too.
func TestVendorFixtureFolders(t *testing.T) {
	t.Parallel()
	dir := providertest.FixtureDir(t)
	claimed := map[string]string{
		"README.md":        "the folder's description, not a fixture",
		"anthropic-python": "providers/anthropic TestVendorFixtures",
		"anthropic-ts":     "providers/anthropic TestVendorFixtures",
		"openai-spec":      "providers/openai TestVendorFixtures and TestSpecRequestExamples",
		"openai-python":    "providers/openai TestVendorFixtures",
		"openai-node":      "providers/openai TestVendorFixtures",
		"gemini-firebase":  "providers/gemini TestVendorFixtures",
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, ok := claimed[e.Name()]; !ok {
			t.Errorf("fixture folder %s is replayed by no provider test", e.Name())
		}
	}
}
