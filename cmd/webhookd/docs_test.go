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

// repoFile is a path from the repository's root.
func repoFile(parts ...string) string {
	return filepath.Join(append([]string{"..", ".."}, parts...)...)
}

const (
	generatedBegin = "<!-- BEGIN generated from the provider table: WEBHOOKD_TEST_UPDATE_DOCS=1 go test ./cmd/webhookd -run TestDocs -->"
	generatedEnd   = "<!-- END generated -->"
)

// generated holds the part of the doc at path between the markers to
// want, rewriting it when WEBHOOKD_TEST_UPDATE_DOCS=1, and returns the
// doc's other parts.
func generated(t *testing.T, path, want string) (rest string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	before, tail, ok := strings.Cut(string(raw), generatedBegin+"\n")
	require.True(t, ok, "%s lost its generated-part marker", path)
	got, after, ok := strings.Cut(tail, generatedEnd)
	require.True(t, ok, "%s lost its end marker", path)
	if got != want && os.Getenv("WEBHOOKD_TEST_UPDATE_DOCS") == "1" {
		require.NoError(t, os.WriteFile(path, []byte(before+generatedBegin+"\n"+want+generatedEnd+after), 0o644))
		got = want
	}
	require.Equal(t, want, got, "%s: its generated part differs from the provider table; rewrite it with WEBHOOKD_TEST_UPDATE_DOCS=1 go test ./cmd/webhookd -run TestDocs", path)
	return before + after
}

// TestDocsConfiguration holds docs/configuration.md to the variables
// webhookd reads: its hand-written table lists exactly the command's own
// variables, and its providers' part is what providerVariablesDoc writes
// from the provider table, so that a variable is documented once and
// never drifts from the code.
func TestDocsConfiguration(t *testing.T) {
	rest := generated(t, repoFile("docs", "configuration.md"), providerVariablesDoc())
	var own []string
	for _, v := range envVars(&config{}) {
		own = append(own, v.key)
	}
	slices.Sort(own)
	require.Equal(t, own, documentedVariables(rest), "docs/configuration.md: the table of the command's own variables (config.go)")
}

// TestDocsProviderTables: the README's table of providers and the index of
// provider pages are written from the provider table, and every provider
// has its page, so adding a provider needs no hand-edited list.
func TestDocsProviderTables(t *testing.T) {
	var readme, index strings.Builder
	readme.WriteString("| provider | route | its secret |\n| --- | --- | --- |\n")
	for _, e := range providerTable() {
		page := "docs/providers/" + e.Name + ".md"
		_, err := os.Stat(repoFile("docs", "providers", e.Name+".md"))
		require.NoError(t, err, "%s: every provider has its page, %s", e.Name, page)
		fmt.Fprintf(&readme, "| [%s](%s) | `/webhooks/%s` | `%s` |\n", e.Name, page, e.Name, envName(e.Secret))
		fmt.Fprintf(&index, "- [%s](providers/%s.md)\n", e.Name, e.Name)
	}
	generated(t, repoFile("README.md"), readme.String())
	generated(t, repoFile("docs", "providers.md"), index.String())
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

// TestReadmeTestCommandIsCIs: the test command the README gives a newcomer
// is the one CI runs, so that "the tests pass here" means what CI means.
func TestReadmeTestCommandIsCIs(t *testing.T) {
	readme, err := os.ReadFile(repoFile("README.md"))
	require.NoError(t, err)
	ci, err := os.ReadFile(repoFile(".ci", "run"))
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(ci), "# The README's test command.\n")
	require.True(t, ok, ".ci/run marks the README's test command")
	command, _, _ := strings.Cut(after, "\n")
	require.NotEmpty(t, command)
	require.Contains(t, string(readme), "```sh\n"+command+"\n```", "README.md gives .ci/run's test command as its own block")
}
