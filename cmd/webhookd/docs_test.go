package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// configurationDoc is the one list of variables.
var configurationDoc = filepath.Join("..", "..", "docs", "configuration.md")

const (
	generatedBegin = "<!-- BEGIN generated from the provider table: WEBHOOKD_TEST_UPDATE_DOCS=1 go test ./cmd/webhookd -run TestConfigurationDoc -->"
	generatedEnd   = "<!-- END generated -->"
)

// TestConfigurationDoc holds docs/configuration.md to the variables
// webhookd reads: its hand-written table lists exactly the command's own
// variables, and its providers' part is what providerVariablesDoc writes
// from the provider table (WEBHOOKD_TEST_UPDATE_DOCS=1 rewrites it), so
// that a variable is documented once and never drifts from the code.
func TestConfigurationDoc(t *testing.T) {
	raw, err := os.ReadFile(configurationDoc)
	require.NoError(t, err)
	doc := string(raw)
	before, rest, ok := strings.Cut(doc, generatedBegin+"\n")
	require.True(t, ok, "docs/configuration.md lost its generated-part marker")
	generated, after, ok := strings.Cut(rest, generatedEnd)
	require.True(t, ok, "docs/configuration.md lost its end marker")

	want := providerVariablesDoc()
	if generated != want && os.Getenv("WEBHOOKD_TEST_UPDATE_DOCS") == "1" {
		require.NoError(t, os.WriteFile(configurationDoc, []byte(before+generatedBegin+"\n"+want+generatedEnd+after), 0o644))
		generated = want
	}
	require.Equal(t, want, generated, "docs/configuration.md: the providers' variables differ from the provider table; rewrite them with WEBHOOKD_TEST_UPDATE_DOCS=1 go test ./cmd/webhookd -run TestConfigurationDoc")

	var own []string
	for _, v := range envVars(&config{}) {
		own = append(own, v.key)
	}
	documented := documentedVariables(before + after)
	slices.Sort(own)
	require.Equal(t, own, documented, "docs/configuration.md: the table of the command's own variables (config.go)")
}

// documentedVariables lists the variables in the first column of a
// markdown table, sorted.
func documentedVariables(doc string) []string {
	var out []string
	for _, m := range tableVariable.FindAllStringSubmatch(doc, -1) {
		out = append(out, m[1])
	}
	slices.Sort(out)
	return out
}

// tableVariable matches a table row that starts with a variable.
var tableVariable = regexp.MustCompile("(?m)^\\| `(WEBHOOKD_[A-Z0-9_]+)` \\|")

// providerVariablesDoc renders each provider's variables as docs/ shows
// them: a heading linking its page, then name, default and help text.
func providerVariablesDoc() string {
	var b strings.Builder
	for _, e := range providerTable() {
		fmt.Fprintf(&b, "\n### [%s](providers/%s.md)\n\n| variable | default | meaning |\n| --- | --- | --- |\n", e.Name, e.Name)
		for _, v := range envVars(e.Settings()) {
			def := "unset"
			if v.def != "" {
				def = "`" + v.def + "`"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", v.key, def, strings.ReplaceAll(v.desc, "|", `\|`))
		}
	}
	return b.String() + "\n"
}

// TestProviderPages: every provider in the table has its page, which the
// README's table of providers links.
func TestProviderPages(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	for _, e := range providerTable() {
		page := filepath.Join("docs", "providers", e.Name+".md")
		_, err := os.Stat(filepath.Join("..", "..", page))
		require.NoError(t, err, "%s: every provider has its page", e.Name)
		require.Contains(t, string(readme), "("+filepath.ToSlash(page)+")", "README.md links %s", page)
	}
}

// TestReadmeTestCommandIsCIs: the test command the README gives a newcomer
// is the one CI runs, so that "the tests pass here" means what CI means.
func TestReadmeTestCommandIsCIs(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	ci, err := os.ReadFile(filepath.Join("..", "..", ".ci", "run"))
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(ci), "# The README's test command.\n")
	require.True(t, ok, ".ci/run marks the README's test command")
	command, _, _ := strings.Cut(after, "\n")
	require.NotEmpty(t, command)
	require.Contains(t, string(readme), "```sh\n"+command+"\n```", "README.md gives .ci/run's test command as its own block")
}
