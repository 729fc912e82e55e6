package spec

import (
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"maps"
	"net/http"
	"net/textproto"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/webhookd/webhookd/providers"
	"github.com/webhookd/webhookd/providers/internal/form"
	"github.com/webhookd/webhookd/providers/internal/rawjson"
)

// What version 2 of the format adds (docs/provider-specs.md, "Version 2"),
// and the checks that keep version 1 files as they were: a version 1 file
// that uses any of it is refused, so that a spec says which format it is
// written in and an older webhookd never half-reads a newer file.

// needV2 refuses field in a version 1 spec.
func (s *Spec) needV2(field string) error {
	if s.version >= 2 {
		return nil
	}
	return invalid(field, "needs version: 2")
}

// servicePathRE is a service path a sender appends to the route: one or
// more segments of A-Za-z0-9._- (docs/contract.md, "Routes").
var servicePathRE = regexp.MustCompile(`^(/[A-Za-z0-9._-]+)+$`)

// headerGrammar returns sf with the header's grammar in its loose knobs:
// version 1 writes them there, version 2 in the header object.
func (s *Spec) headerGrammar(sf signatureField) (signatureField, error) {
	h := sf.Header
	loose := sf.Repeated || sf.Separator != "" || sf.Assign != "" || sf.Name != "" || sf.Prefix != "" || sf.PrefixOptional
	switch {
	case s.version < 2 && h.Object:
		return sf, invalid("signature.header", "an object needs version: 2 (version 1 names the header)")
	case s.version < 2:
		return sf, nil
	case sf.Field != "" && h.Name == "" && !h.Object && !loose:
		return sf, nil // the signature is a form field
	case !h.Object:
		return sf, invalid("signature.header", "version 2 writes the header as an object ({name: ..., items: ...})")
	case loose:
		return sf, invalid("signature", "version 2 keeps repeated, separator, assign, name, prefix and prefix_optional under signature.header")
	}
	sf.Repeated, sf.Prefix, sf.PrefixOptional = h.Repeated, h.Prefix, h.PrefixOptional
	if it := h.Items; it != nil {
		if it.Separator == "" || it.Assign == "" || it.Name == "" {
			return sf, invalid("signature.header.items", "separator, assign and name are all required")
		}
		sf.Separator, sf.Assign, sf.Name = it.Separator, it.Assign, it.Name
	}
	return sf, nil
}

// checkPublic refuses a public-key algorithm in version 1, and one whose
// keys are not PEM.
func (s *Spec) checkPublic(a algorithm) error {
	if a.public == noPublicKey {
		if s.secret.encoding == "pem" {
			return invalid("secrets.encoding", "pem is for public-key algorithms (rsa-sha256, ecdsa-p256-sha256, ed25519)")
		}
		return nil
	}
	if err := s.needV2("signature.algorithm"); err != nil {
		return err
	}
	if s.secret.encoding != "pem" {
		return invalid("secrets.encoding", "must be pem for %s: the secrets are the sender's public keys", a.name)
	}
	return nil
}

// checkSignedV2 refuses the version 2 parts of a signed text in version 1.
func (s *Spec) checkSignedV2(t template) error {
	for _, p := range t.parts {
		if p.kind == pathRef || p.compact || p.sum != nil {
			return s.needV2("signature.signed")
		}
	}
	return nil
}

// bodyDigest is a plain digest of the body written, lower-case hex, in
// the signed text: SNAP signs the SHA-256 of its compacted body.
type bodyDigest struct {
	name string
	new  func() hash.Hash
}

var bodyDigests = map[string]*bodyDigest{
	"sha256": {"sha256", sha256.New}, "sha1": {"sha1", sha1.New},
	"sha512": {"sha512", sha512.New}, "md5": {"md5", md5.New},
}

// writeCompact writes body to w with the whitespace between JSON tokens
// removed and everything else as sent: member order, escapes and the
// spaces inside strings (SNAP's "    9042") stay. It never parses or
// re-encodes, so it agrees with a sender that hashed json.Compact of its
// bytes, or the bytes themselves when they were already compact.
func writeCompact(w io.Writer, body []byte) {
	var buf [512]byte
	n := 0
	inString, escaped := false, false
	for _, c := range body {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			continue
		}
		buf[n] = c
		n++
		if n == len(buf) {
			w.Write(buf[:n])
			n = 0
		}
	}
	w.Write(buf[:n])
}

// appendBodyDigest appends the lower-case hex digest of body (compacted
// first when r says so) to buf.
func appendBodyDigest(buf []byte, r *part, body []byte) []byte {
	h := r.sum.new()
	if r.compact {
		writeCompact(h, body)
	} else {
		h.Write(body)
	}
	var sum [64]byte
	return hex.AppendEncode(buf, h.Sum(sum[:0]))
}

// maxRFC3339 is the longest RFC 3339 timestamp read: nanoseconds and an
// offset fit in 35 bytes.
const maxRFC3339 = 40

// checkRFC3339 reads v as an RFC 3339 time with an offset or Z (fractional
// seconds allowed); the signed text holds it as sent, so it is never
// normalised.
func (p *Provider) checkRFC3339(v string) error {
	if len(v) > maxRFC3339 {
		return ErrInvalidTimestamp
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return ErrInvalidTimestamp
	}
	if p.s.ts.tolerance < 0 {
		return p.withinRetention(t)
	}
	now := p.clock()
	switch {
	case now.Sub(t) > p.tolerance:
		return ErrTooOld
	case p.s.ts.both && t.Sub(now) > p.tolerance: // not -age: see checkTimestamp
		return ErrTooNew
	}
	return nil
}

// withinRetention refuses a signed time further from the clock, either
// way, than the store's retention (WithRetention), for a gateway that
// documents no tolerance: a capture replayed once its record is pruned
// would be forwarded again (docs/contract.md, "These gateways have no
// tolerance variable").
func (p *Provider) withinRetention(t time.Time) error {
	if p.retention <= 0 {
		return nil
	}
	now := p.clock()
	switch {
	case now.Sub(t) > p.retention:
		return ErrExpired
	case t.Sub(now) > p.retention: // not -age: see checkTimestamp
		return ErrTooNew
	}
	return nil
}

// verifyPublic checks a public-key spec's delivery: some candidate
// signature must be the sender's over the signed text under some key.
func (p *Provider) verifyPublic(d providers.Delivery, sc *scan) error {
	buf, cut, err := p.appendSigned(nil, d, sc)
	if err != nil {
		return p.fail(err)
	}
	if cut >= 0 {
		buf = slices.Concat(buf[:cut], d.Body, buf[cut:])
	}
	for _, got := range sc.sigs[:sc.n] {
		if verifyPublic(p.keys, p.s.sig.alg.public, buf, got, p.s.sig.enc) {
			return nil
		}
	}
	return p.fail(ErrNoValidSignature)
}

// eventCase is one of event.cases: a key and the type that goes with it,
// the members it needs present (when), whether it is kept once they are
// (final), the patterns its members must match (match) and its own
// fingerprint.
type eventCase struct {
	key, typ    template
	when        [][]string
	final       bool
	match       []casePattern
	fingerprint *caseFP
	// sameGuard says when and match are the previous case's: once that
	// case applied, this one does, unread.
	sameGuard bool
}

// caseFP is a case's fingerprint, split at compile time: the top-level
// members, then each nested object's members under its name.
type caseFP struct {
	top    []string
	groups []fpGroup
}

// maxFPGroups bounds the nested objects a case's fingerprint reads.
const maxFPGroups = 4

type fpGroup struct {
	name    string
	quoted  string // `"name":{`
	members []string
}

// casePattern is a member a case holds to a regular expression.
type casePattern struct {
	path []string
	re   *regexp.Regexp
}

// maxCases bounds event.cases: each costs a lookup per delivery.
const maxCases = 12

// compileCases compiles event.cases. The first case is also the spec's
// key and type, for the checks that read one (batch, kit).
func (s *Spec) compileCases(ef eventField) error {
	if err := s.needV2("event.cases"); err != nil {
		return err
	}
	switch {
	case ef.Key != "" || ef.Type != "":
		return invalid("event.cases", "replace event.key and event.type: leave those out")
	case len(ef.Cases) > maxCases:
		return invalid("event.cases", "more than %d cases", maxCases)
	}
	for i, c := range ef.Cases {
		field := fmt.Sprintf("event.cases[%d]", i)
		key, typ, err := s.compileKeyType(field, c.Key, c.Type)
		if err != nil {
			return err
		}
		ec := eventCase{key: key, typ: typ, final: c.Final}
		if err := s.compileCaseBody(field, c, &ec); err != nil {
			return err
		}
		if i > 0 && len(c.When) > 0 {
			prev := ef.Cases[i-1]
			ec.sameGuard = slices.Equal(prev.When, c.When) && maps.Equal(prev.Match, c.Match)
		}
		s.cases = append(s.cases, ec)
	}
	s.key, s.typ = s.cases[0].key, s.cases[0].typ
	return nil
}

// choiceSetting reads signature.header.items.name written as one setting
// reference: the setting must have choices, whose values are the names.
func (s *Spec) choiceSetting(src string) (int, error) {
	const field = "signature.header.items.name"
	t, err := parseTemplate(src, settingRef)
	if err != nil {
		return -1, invalid(field, "%v", err)
	}
	if len(t.parts) != 1 || t.parts[0].lower {
		return -1, invalid(field, "a name, or one setting reference (\"{{setting.MODE}}\")")
	}
	i := s.setting(t.parts[0].text)
	if i < 0 || len(s.settings[i].choices) == 0 {
		return -1, invalid(field, "setting %s is not declared with choices", t.parts[0].text)
	}
	return i, nil
}

// compileForm reads body: form, and the signature field only a form has.
func (s *Spec) compileForm(f *file) error {
	switch f.Body {
	case "", "json":
	case "form":
		if err := s.needV2("body"); err != nil {
			return err
		}
		s.form = true
	case "any":
		if err := s.needV2("body"); err != nil {
			return err
		}
		s.anyBody = true
	default:
		return invalid("body", "unknown %q (json, form or any)", f.Body)
	}
	sf := f.Signature
	switch {
	case sf.Field != "" && !s.form:
		return invalid("signature.field", "is for form bodies (body: form)")
	case sf.Field != "" && sf.Header.Name != "":
		return invalid("signature", "header and field are exclusive: the signature is in one of them")
	case sf.Field != "" && !form.Plain(sf.Field):
		return invalid("signature.field", "%q is not a form field name", sf.Field)
	case f.Event.Batch != "" && (s.form || s.anyBody):
		return invalid("event.batch", "is for JSON bodies")
	}
	return nil
}

// compileAnyBody holds a spec whose body may be any bytes (body: any) to
// what needs no JSON: its key reads no member (a body that is not an
// object has none), and its fingerprint is the body's digest, since there
// may be no members to pick. Its type may read members: they are read
// when the body is a JSON object, and the type is empty otherwise.
func (s *Spec) compileAnyBody(f *file) error {
	if !s.anyBody {
		return nil
	}
	keys := []template{s.key}
	for _, c := range s.cases {
		keys = append(keys, c.key)
	}
	s.readsJSON = s.typ.has(jsonRef, "")
	for _, c := range s.cases {
		s.readsJSON = s.readsJSON || c.typ.has(jsonRef, "")
	}
	for _, k := range keys {
		if k.has(jsonRef, "") {
			return invalid("event.key", "reads a JSON member, and with body: any the body need not be JSON (a header, or {{digest}})")
		}
	}
	if len(f.Event.Fingerprint) > 0 || f.Event.FingerprintForm != "" {
		return invalid("event.fingerprint", "with body: any the fingerprint is the body's digest: leave fingerprint and fingerprint_form out")
	}
	for _, r := range f.Replay.Headers {
		if strings.Contains(r, "json.") {
			return invalid("replay.headers", "reads a JSON member, and with body: any the body need not be JSON")
		}
	}
	for _, r := range f.Replay.Query {
		if strings.Contains(r, "json.") {
			return invalid("replay.query", "reads a JSON member, and with body: any the body need not be JSON")
		}
	}
	return nil
}

// addAliases records the other names header (canonical) may be sent
// under: each a header name, none the header's own or another's.
func (s *Spec) addAliases(field, header string, aliases []string) error {
	if len(aliases) == 0 {
		return nil
	}
	if err := s.needV2(field); err != nil {
		return err
	}
	if s.aliases == nil {
		s.aliases = map[string][]string{}
	}
	if _, ok := s.aliases[header]; ok {
		return invalid(field, "header %s is declared twice", header)
	}
	var names []string
	for _, a := range aliases {
		if !headerRE.MatchString(a) {
			return invalid(field, "%q is not a header name", a)
		}
		c := textproto.CanonicalMIMEHeaderKey(a)
		if c == header || slices.Contains(names, c) || s.aliased(c) {
			return invalid(field, "%s is already a name of this or another header", a)
		}
		names = append(names, c)
	}
	s.aliases[header] = names
	return nil
}

// aliased reports whether name (canonical) is a header with aliases or
// one of them.
func (s *Spec) aliased(name string) bool {
	for h, alts := range s.aliases {
		if h == name || slices.Contains(alts, name) {
			return true
		}
	}
	return false
}

// compileHeaders reads headers: the aliases of headers the templates
// read. A header declared there that no template reads, or an alias a
// template reads itself, is refused: the first would do nothing, and the
// second would read one value under two names.
func (s *Spec) compileHeaders(f *file) error {
	templates := []template{s.sig.signed, s.key, s.typ}
	for _, c := range s.cases {
		templates = append(templates, c.key, c.typ)
	}
	reads := func(name string) bool {
		return slices.ContainsFunc(templates, func(t template) bool { return t.has(headerRef, name) }) ||
			slices.ContainsFunc(s.required, func(q part) bool { return q.kind == headerRef && q.text == name })
	}
	for i, h := range f.Headers {
		field := fmt.Sprintf("headers[%d]", i)
		if !headerRE.MatchString(h.Name) {
			return invalid(field+".name", "%q is not a header name", h.Name)
		}
		name := textproto.CanonicalMIMEHeaderKey(h.Name)
		switch {
		case name == s.sig.header:
			return invalid(field+".name", "%s is the signature header: give its aliases in signature.header.aliases", h.Name)
		case !reads(name):
			return invalid(field+".name", "no template reads header %s", h.Name)
		case len(h.Aliases) == 0:
			return invalid(field+".aliases", "required: the other names %s is sent under", h.Name)
		}
		if err := s.addAliases(field+".aliases", name, h.Aliases); err != nil {
			return err
		}
	}
	for h, alts := range s.aliases {
		for _, a := range alts {
			if reads(a) || a == s.sig.header {
				return invalid("headers", "%s is an alias of %s, and is read under its own name too", a, h)
			}
		}
	}
	s.bindAliases()
	return nil
}

// bindAliases gives every header reference, and the signature header,
// its aliases.
func (s *Spec) bindAliases() {
	if len(s.aliases) == 0 {
		return
	}
	s.sig.aliases = s.aliases[s.sig.header]
	bind := func(parts []part) {
		for i := range parts {
			if parts[i].kind == headerRef {
				parts[i].aliases = s.aliases[parts[i].text]
			}
		}
	}
	bind(s.sig.signed.parts)
	bind(s.key.parts)
	bind(s.typ.parts)
	bind(s.required)
	for i := range s.cases {
		bind(s.cases[i].key.parts)
		bind(s.cases[i].typ.parts)
	}
	if s.ts != nil && s.ts.ref.kind == headerRef {
		s.ts.ref.aliases = s.aliases[s.ts.ref.text]
	}
}

// header returns a header's values: sent under its name or, when the
// spec gives it aliases, under the first of its names that is sent (a
// value of white space only is not). A name sent twice (a header that is
// not repeated), or two names sent with different values, is
// ErrInvalidHeader: which one to trust is ambiguous, as Svix's and the
// Standard Webhooks libraries hold it.
func (s *Spec) header(h http.Header, name string, alts []string, repeated bool) ([]string, error) {
	if len(alts) == 0 {
		return h[name], nil
	}
	var got []string
	first := ""
	for i := -1; i < len(alts); i++ {
		n := name
		if i >= 0 {
			n = alts[i]
		}
		v := h[n]
		if !repeated && len(v) > 1 {
			return nil, fmt.Errorf("%w (%s sent %d times)", ErrInvalidHeader, n, len(v))
		}
		if s.blank(v, repeated) {
			continue
		}
		if got == nil {
			got, first = v, n
			continue
		}
		if s.joined(got, repeated) != s.joined(v, repeated) {
			return nil, fmt.Errorf("%w (%s and %s differ)", ErrInvalidHeader, first, n)
		}
	}
	return got, nil
}

// blank reports whether a header's values say nothing: none, or only
// white space.
func (s *Spec) blank(v []string, repeated bool) bool {
	if !repeated {
		return len(v) == 0 || v[0] == ""
	}
	for _, line := range v {
		if strings.TrimSpace(line) != "" {
			return false
		}
	}
	return true
}

// joined is a header's value as compared across its names: a repeated
// header's lines joined by the items' separator, trimmed.
func (s *Spec) joined(v []string, repeated bool) string {
	if !repeated {
		return v[0]
	}
	sep := s.sig.separator
	if sep == "" {
		sep = ","
	}
	return strings.TrimSpace(strings.Join(v, sep))
}

// parseAnyEvent derives the one event of a body that may be any bytes
// (body: any): the key from what the gateway signs beside it, the type
// from its members when it is a JSON object (empty otherwise), and the
// fingerprint its digest, since a sender resends the same bytes. A JSON
// object that names a member twice is still 400: the core could read
// another event out of it than the type says.
func (p *Provider) parseAnyEvent(d providers.Delivery) ([]providers.Item, error) {
	if p.s.keyReadsParts {
		if err := p.oneReading(d); err != nil {
			return nil, p.fail(err)
		}
	}
	var o *rawjson.Object
	var dup bool
	if p.s.readsJSON {
		var err error
		o, err = rawjson.Parse(d.Body)
		dup = err != nil && !errors.Is(err, rawjson.ErrNotObject)
	}
	var sc *scan
	if len(p.s.sigParts) > 0 {
		sc = new(scan)
		if err := p.scanHeader(d, sc); err != nil {
			return nil, p.fail(err)
		}
	}
	// The key first: a delivery without one is no_event_key whatever its
	// body holds.
	ev, err := p.eventOf(o, d.Body, d, sc)
	switch {
	case err != nil:
		return nil, err
	case dup:
		return nil, p.fail(ErrNotJSON)
	}
	ev.Fingerprint = rawjson.HexSum(d.Body)
	return []providers.Item{{Event: ev, Body: d.Body}}, nil
}

// signedKinds are the references signature.signed may hold.
func (s *Spec) signedKinds(a algorithm) []kind {
	kinds := []kind{bodyRef, settingRef, headerRef, queryRef, signatureRef, pathRef}
	if s.form {
		kinds = append(kinds, formRef)
	}
	if a.plain {
		kinds = append(kinds, secretRef)
	}
	return kinds
}

// eventKinds are the references event.key and event.type may hold: a
// form's fields, or a JSON body's members.
func (s *Spec) eventKinds() []kind {
	body := jsonRef
	if s.form {
		body = formRef
	}
	return []kind{body, digestRef, headerRef, queryRef, signatureRef, settingRef}
}

// checkPlain holds a plain digest to a text with the secret in it exactly
// once (else it is a checksum anyone can compute), and keeps {{secret}}
// out of every other algorithm's text.
func (s *Spec) checkPlain(a algorithm, t template) error {
	n := 0
	for _, p := range t.parts {
		if p.kind == secretRef {
			n++
		}
	}
	switch {
	case a.plain && s.version < 2:
		return s.needV2("signature.algorithm")
	case a.plain && n != 1:
		return invalid("signature.signed", "a plain %s digest must hold {{secret}} exactly once", a.name)
	}
	return nil
}

// compileJoined reads signature.joined: form fields of the signed text
// that must not hold its separator, so that the text splits into fields
// one way only (docs/contract.md, "Joined fields").
func (s *Spec) compileJoined(j *joinedField) error {
	if j == nil {
		return nil
	}
	if !s.form {
		return invalid("signature.joined", "is for form bodies (body: form)")
	}
	if j.Separator == "" || len(j.Fields) == 0 {
		return invalid("signature.joined", "separator and fields are both required")
	}
	for _, name := range j.Fields {
		if !s.sig.signed.has(formRef, name) {
			return invalid("signature.joined.fields", "form.%s is not part of signature.signed", name)
		}
	}
	s.sig.joined, s.sig.joinSep = j.Fields, j.Separator
	return nil
}

// signedFields lists the form fields t reads, sorted, once each.
func signedFields(t template) []string {
	var names []string
	for _, p := range t.parts {
		if p.kind == formRef && !slices.Contains(names, p.text) {
			names = append(names, p.text)
		}
	}
	slices.Sort(names)
	return names
}

// matchPlain reports whether some candidate signature is the plain digest
// of the signed text with some secret in it: the text differs per secret,
// so it is built once for each.
func (p *Provider) matchPlain(d providers.Delivery, sc *scan, bp *[]byte) (bool, error) {
	enc := p.s.sig.enc
	var want [128]byte
	for _, secret := range p.plainSecrets {
		n, err := p.plainSum(want[:], d, sc, bp, secret)
		if err != nil {
			return false, err
		}
		for _, got := range sc.sigs[:sc.n] {
			if equalSig(want[:n], got, enc) {
				return true, nil
			}
		}
	}
	return false, nil
}

// plainSum writes to dst, encoded, the digest of the signed text holding
// secret, and returns its length.
func (p *Provider) plainSum(dst []byte, d providers.Delivery, sc *scan, bp *[]byte, secret string) (int, error) {
	sc.secret = secret
	buf, cut, err := p.appendSigned((*bp)[:0], d, sc)
	sc.secret = ""
	*bp = buf[:0]
	if err != nil {
		return 0, err
	}
	h := p.plain()
	if cut < 0 {
		h.Write(buf)
	} else {
		h.Write(buf[:cut])
		h.Write(d.Body)
		h.Write(buf[cut:])
	}
	var sum [64]byte
	return encode(dst, h.Sum(sum[:0]), p.s.sig.enc), nil
}

// parseFormEvent derives a form body's one event: its fields are the
// key's and type's, and a field of signature.joined that holds the
// separator is 400 (the signed text would split another way).
func (p *Provider) parseFormEvent(d providers.Delivery) ([]providers.Item, error) {
	f, err := parseForm(d.Body)
	if err != nil {
		return nil, p.fail(err)
	}
	for _, name := range p.s.sig.joined {
		if v, _ := f.get(name); strings.ContainsAny(v, p.s.sig.joinSep) {
			return nil, p.fail(fmt.Errorf("%w (form.%s holds %q, which joins the signed fields)", ErrNoEventKey, name, p.s.sig.joinSep[:1]))
		}
	}
	sc := &scan{form: f}
	if len(p.s.sigParts) > 0 {
		if err := p.scanHeader(d, sc); err != nil {
			return nil, p.fail(err)
		}
	}
	ev, err := p.eventOf(nil, d.Body, d, sc)
	if err != nil {
		return nil, err
	}
	ev.Fingerprint = f.Fingerprint(p.s.formSigned)
	return []providers.Item{{Event: ev, Body: d.Body}}, nil
}

// checkBodyTimestamp holds a timestamp read from the body (Razorpay's
// created_at) to what keeps it sound: the body must be signed, so the
// value is the gateway's; it is a top-level member of Unix seconds, which
// Sign can re-date in place; and it is checked after the signature, so
// that no unauthenticated body is parsed.
func (s *Spec) checkBodyTimestamp(ref part, tf *timestampField) error {
	if err := s.needV2("timestamp.value"); err != nil {
		return err
	}
	switch {
	case !s.sig.signed.has(bodyRef, ""):
		return invalid("timestamp.value", "json.%s is read from the body, which signature.signed does not include", ref.text)
	case ref.steps != nil || len(ref.path) != 1:
		return invalid("timestamp.value", "a timestamp in the body is a top-level member (json.created_at)")
	case tf.Unit != "" && tf.Unit != "s" || tf.Format != "" && tf.Format != "unix":
		return invalid("timestamp.value", "a timestamp in the body is Unix seconds")
	case tf.Window == "both":
		return invalid("timestamp.window", "a timestamp in the body is bounded in the past only")
	}
	return nil
}

// keyHoldsBodyTimestamp refuses a timestamp in the body that the event
// key does not read: Verify leaves an absent or null one to Parse, which
// must then refuse the delivery (400) rather than forward it unchecked.
func (s *Spec) keyHoldsBodyTimestamp(*file) error {
	if s.ts == nil || s.ts.ref.kind != jsonRef {
		return nil
	}
	keys := []template{s.key}
	for _, c := range s.cases {
		keys = append(keys, c.key)
	}
	for _, k := range keys {
		if !slices.ContainsFunc(k.parts, func(p part) bool { return p.kind == jsonRef && p.steps == nil && p.text == s.ts.ref.text }) {
			return invalid("timestamp.value", "json.%s must be part of every event key: one without it would be forwarded unchecked", s.ts.ref.text)
		}
	}
	return nil
}

// checkBodyTime checks a timestamp read from the verified body. A body
// that is not a JSON object, or without the member (absent, null or
// empty), passes: the key reads it, so Parse refuses the delivery.
func (p *Provider) checkBodyTime(d providers.Delivery) error {
	o, err := rawjson.Parse(d.Body)
	if err != nil {
		return nil
	}
	v, ok, err := lookup(o, p.s.ts.ref.path)
	if err != nil || !ok || v == "" {
		return nil
	}
	return p.checkTime(v)
}

// redated returns body with its timestamp member (a timestamp in the
// body) moved forward, when it is older than Verify accepts, by whole
// multiples of half that bound to within half of it of the clock: a
// fixture as shipped then verifies, and keeps one event key (the key
// holds the timestamp) over that half, so that sending it twice is a
// replay the second time rather than a new event each second.
func (p *Provider) redated(body []byte) []byte {
	bound := p.tolerance
	if bound <= 0 {
		bound = p.retention
	}
	if bound <= 0 {
		return body
	}
	o, err := rawjson.Parse(body)
	if err != nil {
		return body
	}
	m, ok, err := o.Get(p.s.ts.ref.path[0])
	if err != nil || !ok {
		return body
	}
	created, err := strconv.ParseInt(string(m.Value), 10, 64)
	if err != nil {
		return body
	}
	now := p.clock().Unix()
	if now-created <= int64(bound/time.Second) {
		return body
	}
	step := max(int64(bound/time.Second)/2, 1)
	created += (now - created) / step * step
	out := append([]byte{}, body[:m.Start]...)
	out = strconv.AppendInt(out, created, 10)
	return append(out, body[m.End:]...)
}

// compileCaseBody reads a case's when, match and fingerprint: member
// paths of a JSON body (plain, dotted), patterns that must compile, and
// a fingerprint of top-level members and members of one nested object
// (data.id).
func (s *Spec) compileCaseBody(field string, c caseField, ec *eventCase) error {
	plain := func(f, path string) ([]string, error) {
		segs := strings.Split(path, ".")
		if path == "" || slices.Contains(segs, "") || strings.ContainsAny(path, "(){}| ") {
			return nil, invalid(f, "%q is not a member path (data.id)", path)
		}
		return segs, nil
	}
	if (len(c.When) > 0 || len(c.Match) > 0 || len(c.Fingerprint) > 0) && (s.form || s.anyBody) {
		return invalid(field, "when, match and fingerprint read a JSON body")
	}
	for _, w := range c.When {
		segs, err := plain(field+".when", w)
		if err != nil {
			return err
		}
		ec.when = append(ec.when, segs)
	}
	if c.Final && len(c.When) == 0 {
		return invalid(field+".final", "keeps a case once its when holds, and it has no when")
	}
	for _, path := range slices.Sorted(maps.Keys(c.Match)) {
		segs, err := plain(field+".match", path)
		if err != nil {
			return err
		}
		re, err := regexp.Compile("^(?:" + c.Match[path] + ")$")
		if err != nil {
			return invalid(field+".match."+path, "%v", err)
		}
		ec.match = append(ec.match, casePattern{path: segs, re: re})
	}
	if len(c.Fingerprint) > 0 {
		ec.fingerprint = &caseFP{}
	}
	for _, m := range c.Fingerprint {
		segs, err := plain(field+".fingerprint", m)
		if err != nil {
			return err
		}
		fp := ec.fingerprint
		switch len(segs) {
		case 1:
			fp.top = append(fp.top, m)
		case 2:
			i := slices.IndexFunc(fp.groups, func(g fpGroup) bool { return g.name == segs[0] })
			if i < 0 && len(fp.groups) == maxFPGroups {
				return invalid(field+".fingerprint", "members of more than %d nested objects", maxFPGroups)
			}
			if i < 0 {
				i = len(fp.groups)
				fp.groups = append(fp.groups, fpGroup{name: segs[0], quoted: strconv.Quote(segs[0]) + ":{"})
			}
			fp.groups[i].members = append(fp.groups[i].members, segs[1])
		default:
			return invalid(field+".fingerprint", "%q: a top-level member, or a member of one (data.id)", m)
		}
	}
	return nil
}

// applies reports whether a case's when holds on o: each member present,
// neither null nor an empty string. A member on the way that is not an
// object is an error (400), as for a key.
func (c *eventCase) applies(o *rawjson.Object, fr *frames) (bool, error) {
	for _, path := range c.when {
		if len(path) == 1 {
			ok, err := fr.has(o, path[0])
			if err != nil || !ok {
				return false, err
			}
			continue
		}
		cur := o
		for i, name := range path[:len(path)-1] {
			var next *rawjson.Object
			var ok bool
			var err error
			if i == 0 {
				next, ok, err = fr.object(o, name)
			} else {
				next, ok, err = cur.Object(name)
			}
			if err != nil || !ok {
				return false, err
			}
			cur = next
		}
		m, ok, err := cur.Get(path[len(path)-1])
		if err != nil {
			return false, err
		}
		if !ok || m.IsNull() || string(m.Value) == `""` {
			return false, nil
		}
	}
	return true, nil
}

// matches holds a case's members to its patterns: an absent one is left
// to the key, a present one that does not match is refused.
func (c *eventCase) matches(o *rawjson.Object, fr *frames) error {
	for _, m := range c.match {
		v, ok, err := fr.lookup(o, m.path)
		if err != nil {
			return err
		}
		if ok && !m.re.MatchString(v) {
			return fmt.Errorf("json.%s does not match the case's pattern", strings.Join(m.path, "."))
		}
	}
	return nil
}

// caseFingerprint hashes a case's fingerprint members of o canonically:
// the top-level ones in the order listed, then each nested object's (the
// first name of data.id) as one member holding its listed members, as
// {"event":...,"data":{"id":...}}; absent members are left out, and an
// absent or null nested object too.
func caseFingerprint(o *rawjson.Object, fp *caseFP, fr *frames) (string, error) {
	// Framed before the closure, which would otherwise take fr to the heap.
	var inners [maxFPGroups]*rawjson.Object
	for i, g := range fp.groups {
		inner, _, err := fr.object(o, g.name)
		if err != nil {
			return "", err
		}
		inners[i] = inner
	}
	return rawjson.HexSumOf(func(buf *bytes.Buffer) error {
		buf.WriteByte('{')
		if err := o.AppendMembers(buf, fp.top); err != nil {
			return err
		}
		for i, g := range fp.groups {
			inner := inners[i]
			if inner == nil {
				continue
			}
			if buf.Len() > 1 {
				buf.WriteByte(',')
			}
			buf.WriteString(g.quoted)
			if err := inner.AppendMembers(buf, g.members); err != nil {
				return err
			}
			buf.WriteByte('}')
		}
		buf.WriteByte('}')
		return nil
	})
}
