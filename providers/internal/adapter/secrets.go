// Package adapter is the skeleton every provider adapter shares: its list
// of secrets, its clock and the shape of its options, so that each adapter
// package holds only what its provider does differently.
//
// The secret list (signing secrets, API keys, tokens) is checked the same
// way for every adapter, so that each refuses the same mistakes with the
// same words. The mistakes it refuses: no secret at all, an empty secret and a secret
// with surrounding white space, which is almost always a stray space after
// a comma in the configuration and would otherwise fail every delivery
// while looking right. It never trims or rewrites a secret: what it returns
// is used exactly as given.
package adapter

import (
	"errors"
	"fmt"
	"strings"
)

// Check returns nil when list is usable as an adapter's secrets, else an
// error that names the provider and, for one bad secret, its position
// without quoting it: "stripe: no signing secret configured", "stripe:
// signing secret 2 of 3 is empty", "stripe: signing secret 2 of 3 has
// leading or trailing white space". noun is what the provider calls one
// secret.
func Check(provider, noun string, list []string) error {
	if len(list) == 0 {
		return errors.New(provider + ": no " + noun + " configured")
	}
	for i, s := range list {
		if s == "" {
			return fmt.Errorf("%s: %s %d of %d is empty", provider, noun, i+1, len(list))
		}
		if err := checkSpace(provider, noun, i, list); err != nil {
			return err
		}
	}
	return nil
}

// Keys is Check, returning the secrets' bytes, each exactly as given, as
// the keys to sign and verify with.
func Keys(provider, noun string, list []string) ([][]byte, error) {
	if err := Check(provider, noun, list); err != nil {
		return nil, err
	}
	keys := make([][]byte, len(list))
	for i, s := range list {
		keys[i] = []byte(s)
	}
	return keys, nil
}

// Decode returns the keys that decode derives from list, for a provider
// whose secrets are an encoding of the key (Standard Webhooks' whsec_ and
// base64). It refuses an empty list and surrounding white space as Check
// does; every other flaw, an empty secret included, is decode's to report,
// wrapped as "standard: secret 2 of 3: " and decode's error.
func Decode(provider, noun string, list []string, decode func(string) ([]byte, error)) ([][]byte, error) {
	if len(list) == 0 {
		return nil, errors.New(provider + ": no " + noun + " configured")
	}
	keys := make([][]byte, 0, len(list))
	for i, s := range list {
		if err := checkSpace(provider, noun, i, list); err != nil {
			return nil, err
		}
		key, err := decode(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %s %d of %d: %w", provider, noun, i+1, len(list), err)
		}
		keys = append(keys, key)
	}
	return keys, nil
}

// checkSpace refuses list[i] if it has leading or trailing white space.
func checkSpace(provider, noun string, i int, list []string) error {
	if strings.TrimSpace(list[i]) != list[i] {
		return fmt.Errorf("%s: %s %d of %d has leading or trailing white space", provider, noun, i+1, len(list))
	}
	return nil
}
