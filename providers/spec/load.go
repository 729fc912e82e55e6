package spec

import (
	"context"
	"crypto/sha256"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/webhookd/webhookd/providers"
)

// builtinFS holds the built-in specs: every builtin/*.yaml.
//
//go:embed builtin
var builtinFS embed.FS

// Load compiles one spec file's contents and runs its examples. Its error
// is one line that starts with file (the name used in messages).
func Load(file string, data []byte) (*Spec, error) {
	f, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	s, err := compile(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	s.file = file
	s.sum = sha256.Sum256(data)
	if err := s.CheckExamples(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return s, nil
}

// SameSource reports whether o was loaded from the same bytes as s, under
// the same name: `webhookd providers check` on a built-in spec's own file
// checks that provider, not a second one.
func (s *Spec) SameSource(o *Spec) bool { return s.name == o.name && s.sum == o.sum }

// Builtin returns the specs embedded in the binary, sorted by name.
func Builtin() ([]*Spec, error) {
	return loadFS(builtinFS, "builtin", "providers/spec/")
}

// LoadPath loads the spec file at path or, when path is a directory,
// every *.yaml and *.yml file in it (not in its subdirectories), sorted
// by file name.
func LoadPath(p string) ([]*Spec, error) {
	info, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		s, err := Load(p, data)
		if err != nil {
			return nil, err
		}
		return []*Spec{s}, nil
	}
	specs, err := loadFS(os.DirFS(p), ".", filepath.Clean(p)+string(filepath.Separator))
	if err == nil && len(specs) == 0 {
		return nil, fmt.Errorf("%s: no *.yaml spec files in the directory", p)
	}
	return specs, err
}

// loadFS loads the *.yaml and *.yml files of dir in fsys, naming each as
// prefix + its path.
func loadFS(fsys fs.FS, dir, prefix string) ([]*Spec, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var specs []*Spec
	for _, e := range entries {
		ext := path.Ext(e.Name())
		if e.IsDir() || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		name := path.Join(dir, e.Name())
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		s, err := Load(strings.TrimPrefix(prefix+name, "./"), data)
		if err != nil {
			return nil, err
		}
		specs = append(specs, s)
	}
	slices.SortFunc(specs, func(a, b *Spec) int { return strings.Compare(a.name, b.name) })
	for i := 1; i < len(specs); i++ {
		if specs[i].name == specs[i-1].name {
			return nil, fmt.Errorf("%s: name %q is also the name of %s", specs[i].file, specs[i].name, specs[i-1].file)
		}
	}
	return specs, nil
}

// ErrExample is wrapped by the error of an example that does not verify
// or parse as its spec says.
var ErrExample = errors.New("example")

// CheckExamples verifies and parses every example of s with its own secret,
// settings and clock: the check `webhookd providers check`, serve and the
// conformance kit run.
func (s *Spec) CheckExamples() error {
	for i := range s.examples {
		if err := s.checkExample(&s.examples[i]); err != nil {
			return fmt.Errorf("%w %s: %w", ErrExample, s.examples[i].name, err)
		}
	}
	return nil
}

func (s *Spec) checkExample(ex *example) error {
	clock := time.Now
	if !ex.now.IsZero() {
		clock = func() time.Time { return ex.now }
	}
	p, err := s.New([]string{ex.secret}, ex.settings, clock)
	if err != nil {
		return err
	}
	d := providers.Delivery{Header: ex.header, Query: ex.query, Body: ex.body, Path: ex.path}
	if err := p.Verify(context.Background(), d); err != nil {
		return fmt.Errorf("does not verify: %w", err)
	}
	items, err := p.Parse(d)
	if err != nil {
		return fmt.Errorf("does not parse: %w", err)
	}
	switch {
	case ex.key != "" && items[0].Key != ex.key:
		return fmt.Errorf("event key is %q, not %q", items[0].Key, ex.key)
	case ex.typ != "" && items[0].Type != ex.typ:
		return fmt.Errorf("event type is %q, not %q", items[0].Type, ex.typ)
	}
	// Sign must make what Verify accepts, or replay sends 401s.
	signed, err := p.Sign(ex.body)
	if errors.Is(err, providers.ErrCannotSign) {
		return nil // a public-key spec: the sender alone signs
	}
	if err != nil {
		return err
	}
	if err := p.Verify(context.Background(), signed); err != nil {
		return fmt.Errorf("its body signed by the spec does not verify: %w", err)
	}
	return nil
}
