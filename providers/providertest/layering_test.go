package providertest_test

import (
	"go/build"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestKitLayering: the conformance kit sits under the providers, so it
// imports nothing above them: not replay (its fixture loader is
// providers/fixture), the receiver or the command. Layering points down;
// an import of replay here would have every provider's tests depend on
// the replay client.
func TestKitLayering(t *testing.T) {
	const module = "github.com/webhookd/webhookd/"
	above := []string{module + "replay", module + "receiver", module + "cmd/", module + "dispatch"}
	seen := map[string]bool{}
	var walk func(path, from string)
	walk = func(path, from string) {
		if seen[path] || !strings.HasPrefix(path, module) {
			return
		}
		seen[path] = true
		for _, a := range above {
			require.False(t, strings.HasPrefix(path, a), "%s imports %s", from, path)
		}
		pkg, err := build.Import(path, ".", 0)
		require.NoError(t, err)
		for _, imp := range pkg.Imports {
			walk(imp, path)
		}
	}
	walk(module+"providers/providertest", "the kit")
	require.True(t, seen[module+"providers/fixture"], "the kit loads fixtures with providers/fixture")
}
