package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLibrariesDoNotNameVariables: the WEBHOOKD_ prefix belongs to this
// command, which wraps a library's error with the variable at fault, once.
// A library that spells a variable in a string would name it twice, or
// wrongly when a library is used elsewhere. Comments may cite variables.
func TestLibrariesDoNotNameVariables(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			// Test kits (dedupetest, pgtest, providertest) are test code:
			// only tests import them, and they may name the test variables.
			// cmd holds the commands, which configure webhookd through its
			// variables, as an operator does.
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || rel == "cmd" || strings.HasSuffix(d.Name(), "test")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if field, ok := n.(*ast.Field); ok && field.Tag != nil {
				return false // struct tags are help text the command reads
			}
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				require.NotContains(t, lit.Value, envPrefix+"_", "%s: a library string names a variable", fset.Position(lit.Pos()))
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
}

// TestContractLinksNoBackend: the packages that speak the store contract
// (dedupe, its conformance kit, and its consumers) link neither LMDB's cgo
// binding nor the Postgres driver; only dedupe/lmdb and dedupe/postgres do.
func TestContractLinksNoBackend(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	cmd := exec.Command("go", "list", "-deps", "./dedupe", "./dedupe/dedupetest", "./receiver", "./metrics", "./providers/providertest")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	require.NoError(t, err)
	for _, dep := range strings.Fields(string(out)) {
		require.False(t, strings.Contains(dep, "lmdb-go") || strings.Contains(dep, "jackc"), "the contract's side links %s", dep)
	}
}

// TestOneServerOneForwarder: every listener gets its bounds from newServer
// and every forward its settings from newForwarder, so that no listener is
// left without a header timeout and keys redrive forwards as serve does.
func TestOneServerOneForwarder(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := filepath.Glob("*.go")
	require.NoError(t, err)
	servers, forwarders := 0, 0
	for _, path := range pkgs {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CompositeLit:
				if sel, ok := n.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Server" && isIdent(sel.X, "http") {
					servers++
				}
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "New" && isIdent(sel.X, "dispatch") {
					forwarders++
				}
			}
			return true
		})
	}
	require.Equal(t, 1, servers, "http.Server literals outside newServer")
	require.Equal(t, 1, forwarders, "dispatch.New calls outside newForwarder")
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}
