package xendit

import (
	"errors"
	"fmt"
	"strings"

	"github.com/webhookd/webhookd/providers"
)

// Name is the adapter's route segment and event key prefix.
const Name = "xendit"

// HeaderName is the request header that carries Xendit's callback token.
const HeaderName = "X-Callback-Token"

// Adapter verifies and parses Xendit callbacks. Build one with New; an
// Adapter is safe for concurrent use. The zero value verifies nothing: it
// rejects every delivery.
type Adapter struct {
	tokens []string
}

var (
	_ providers.Provider = (*Adapter)(nil)
)

// New returns an Adapter that accepts callbacks carrying any of tokens. Sign
// uses the first.
//
// Each token is used exactly as given. New refuses an empty list, an empty
// token, a token with surrounding white space (a stray space after a comma
// in the configuration would otherwise fail every callback) and a token
// longer than MaxTokenBytes.
func New(tokens []string) (*Adapter, error) {
	if len(tokens) == 0 {
		return nil, errors.New("xendit: no callback token configured")
	}
	a := &Adapter{tokens: make([]string, 0, len(tokens))}
	for i, tok := range tokens {
		switch {
		case tok == "":
			return nil, fmt.Errorf("xendit: callback token %d of %d is empty", i+1, len(tokens))
		case strings.TrimSpace(tok) != tok:
			return nil, fmt.Errorf("xendit: callback token %d of %d has leading or trailing white space", i+1, len(tokens))
		case len(tok) > MaxTokenBytes:
			return nil, fmt.Errorf("xendit: callback token %d of %d is longer than %d bytes", i+1, len(tokens), MaxTokenBytes)
		}
		a.tokens = append(a.tokens, tok)
	}
	return a, nil
}

// Name returns "xendit".
func (a *Adapter) Name() string { return Name }

// Parse derives the delivery's one event from its body (see event).
func (a *Adapter) Parse(d providers.Delivery) ([]providers.Item, error) {
	return providers.One(d, a.event)
}
