package spec

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"maps"
	"net/http"
	"net/textproto"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/webhookd/webhookd/providers"
)

// Spec is a compiled provider spec: everything its file says, checked,
// with its templates parsed. It is immutable and shared by every Provider
// built from it.
type Spec struct {
	name, docs, file string
	// version is the format's version: 1 or 2.
	version int
	// form says the body is a form, not JSON (v2); formSigned are the
	// fields its signed text reads, sorted: the fingerprint's.
	form       bool
	formSigned []string
	// anyBody says the body may be any bytes (v2, body: any): the type
	// reads it only when it is a JSON object, and the fingerprint is its
	// digest.
	anyBody bool
	// readsJSON says a body: any spec's type reads members.
	readsJSON bool
	// aliases maps a header's canonical name to the other names it may
	// be sent under (v2): the signature header's and headers' aliases.
	aliases map[string][]string
	// sum is the SHA-256 of the file's bytes (SameSource).
	sum [32]byte
	// env is the variables' prefix after WEBHOOKD_: the name upper-cased,
	// "-" as "_".
	env      string
	secret   secretDef
	settings []settingDef
	sig      sigDef
	ts       *tsDef
	key, typ template
	// cases are event.cases (v2), tried in order; key and typ are then
	// the first's.
	cases []eventCase
	// fingerprint lists the members hashed; nil hashes every member.
	fingerprint []string
	// compact hashes the members compacted, in the order listed, rather
	// than in canonical form.
	compact bool
	batch   string
	wrap    bool
	ack     *providers.Acknowledgement
	// ackBody is a version 2 acknowledgement's body, its settings filled
	// in by New; nil leaves ack as it is.
	ackBody *template
	// idFields are the members replay --id-suffix rewrites.
	idFields []string
	replay   []replayDef
	examples []example
	// sigParts are the names of the signature header's items the
	// templates read, in the order their values are kept while scanning.
	sigParts []string
	// keyReadsParts is set when the key reads a header, query value or
	// signature item: Parse then checks that the signed text has one
	// reading (oneReading).
	keyReadsParts bool
	// required are the headers and query values the signed text or the
	// timestamp reads: a delivery without exactly one of each is 401.
	required []part
}

type secretDef struct {
	variable, noun, help, trimPrefix string
	encoding                         string
	decode                           func(string) ([]byte, error)
	// tokenDigest, for a token, turns each secret into the token sent.
	tokenDigest *bodyDigest
}

type settingDef struct {
	variable, help, def string
	duration, required  bool
	pattern             *regexp.Regexp
	// choices maps each allowed value to what templates read for it.
	choices map[string]string
	// longerThan, when positive, is what a set duration must exceed, and
	// longerWhat what that bound is.
	longerThan time.Duration
	longerWhat string
}

type sigDef struct {
	header string // canonical
	// field is the form field that carries the signature instead (v2).
	field string
	// joined are the form fields that must not hold joinSep.
	joined                   []string
	joinSep                  string
	repeated, prefixOptional bool
	// aliases are the header's other names (v2).
	aliases                         []string
	separator, assign, name, prefix string
	// nameSetting is the setting whose value names the signature items
	// (PayMongo's li or te), or -1: name is then fixed.
	nameSetting int
	alg         algorithm
	enc         encoding
	signed      template
}

type tsDef struct {
	ref      part
	ms, both bool
	// auto reads a value of 12 digits or more as milliseconds, a shorter
	// one as seconds (unit: auto).
	auto bool
	// rfc3339 reads the value as an RFC 3339 time with an offset.
	rfc3339 bool
	// tolerance is an index in Spec.settings, or -1: the timestamp is
	// then bounded by the retention only (WithRetention).
	tolerance int
}

type replayDef struct {
	header bool // else query
	name   string
	value  template
}

type example struct {
	name, source, secret string
	// path is the service path the request carries.
	path     string
	settings map[string]string
	now      time.Time
	header   http.Header
	query    url.Values
	body     []byte
	key, typ string
}

// algorithm is a signature algorithm: an HMAC's hash, a public-key
// scheme (version 2), or neither for a token.
type algorithm struct {
	name   string
	hash   func() hash.Hash
	public publicScheme
	// plain is a digest of a text that holds the secret ({{secret}}),
	// not an HMAC (v2: Faspay's SHA-1, PayU's SHA-512).
	plain bool
}

var algorithms = []algorithm{
	{name: "hmac-sha1", hash: sha1.New}, {name: "hmac-sha256", hash: sha256.New}, {name: "hmac-sha512", hash: sha512.New},
	{name: "sha1", hash: sha1.New, plain: true}, {name: "sha256", hash: sha256.New, plain: true},
	{name: "sha512", hash: sha512.New, plain: true}, {name: "md5", hash: md5.New, plain: true},
	{name: "token"},
	{name: "rsa-sha256", public: rsaPKCS1}, {name: "ecdsa-p256-sha256", public: ecdsaP256}, {name: "ed25519", public: ed25519Scheme},
}

// signs reports whether the algorithm computes or checks a signature of
// a text (every algorithm but a token).
func (a algorithm) signs() bool { return a.hash != nil || a.public != noPublicKey }

// encoding is how a signature is written.
type encoding uint8

const (
	hexEncoding encoding = iota + 1
	base64Encoding
	base64URLEncoding
)

var encodings = map[string]encoding{"hex": hexEncoding, "base64": base64Encoding, "base64url": base64URLEncoding}

// Limits on what a spec may ask for.
const (
	// maxSigParts is how many named signature items templates may read.
	maxSigParts = 4
	// maxName is the longest provider name.
	maxName = 32
)

var (
	nameRE     = regexp.MustCompile(`^[a-z][a-z0-9-]{1,31}$`)
	variableRE = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	headerRE   = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")
)

// ErrInvalid is wrapped by every error of a spec that does not load.
var ErrInvalid = errors.New("invalid provider spec")

// fieldError is a problem with one field of a spec: "field: problem",
// which wraps ErrInvalid without saying so in its text (the line already
// names the spec's file).
type fieldError struct{ field, problem string }

func (e *fieldError) Error() string { return e.field + ": " + e.problem }
func (e *fieldError) Unwrap() error { return ErrInvalid }

// invalid formats a problem with one field of the spec.
func invalid(field, format string, args ...any) error {
	return &fieldError{field: field, problem: fmt.Sprintf(format, args...)}
}

// compile checks f and builds its Spec. It does not run the examples.
func compile(f *file) (*Spec, error) {
	s := &Spec{name: f.Name, docs: f.Docs, version: f.Version}
	switch f.Version {
	case 0:
		s.version = 1
	case 1, 2:
	default:
		return nil, invalid("version", "%d is not 1 or 2", f.Version)
	}
	if !nameRE.MatchString(f.Name) || strings.HasSuffix(f.Name, "-") || strings.Contains(f.Name, "--") {
		return nil, invalid("name", "%q is not 2 to %d of a-z, 0-9 and single dashes, starting with a letter", f.Name, maxName)
	}
	s.env = strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
	steps := []func(*file) error{s.compileSecrets, s.compileSettings, s.compileSignature,
		s.compileTimestamp, s.compileEvent, s.compileAnyBody, s.keyHoldsBodyTimestamp, s.compileReplay, s.compileHeaders, s.compileExamples}
	for _, step := range steps {
		if err := step(f); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *Spec) compileSecrets(f *file) error {
	sf := f.Secrets
	if !variableRE.MatchString(sf.Variable) {
		return invalid("secrets.variable", "%q is not an upper-case variable name (SECRETS)", sf.Variable)
	}
	s.secret = secretDef{variable: sf.Variable, noun: sf.Noun, help: sf.Help, trimPrefix: sf.TrimPrefix}
	if s.secret.noun == "" {
		s.secret.noun = "signing secret"
	}
	if s.secret.help == "" {
		s.secret.help = "comma-separated " + s.secret.noun + "s; enables /webhooks/" + s.name
	}
	if sf.TokenDigest != "" {
		if err := s.needV2("secrets.token_digest"); err != nil {
			return err
		}
		if s.secret.tokenDigest = bodyDigests[sf.TokenDigest]; s.secret.tokenDigest == nil {
			return invalid("secrets.token_digest", "unknown %q (sha256, sha1, sha512 or md5)", sf.TokenDigest)
		}
	}
	if sf.Encoding == "pem" {
		if err := s.needV2("secrets.encoding"); err != nil {
			return err
		}
		s.secret.encoding = "pem"
		return nil
	}
	s.secret.encoding = sf.Encoding
	switch sf.Encoding {
	case "", "raw":
		s.secret.encoding = "raw"
		s.secret.decode = func(v string) ([]byte, error) { return []byte(v), nil }
	case "hex":
		s.secret.decode = decodeHex
	case "base64":
		s.secret.decode = base64.StdEncoding.DecodeString
	default:
		return invalid("secrets.encoding", "unknown %q (raw, hex, base64 or pem)", sf.Encoding)
	}
	return nil
}

func (s *Spec) compileSettings(f *file) error {
	seen := map[string]bool{s.secret.variable: true}
	for i, sf := range f.Settings {
		field := fmt.Sprintf("settings[%d]", i)
		if !variableRE.MatchString(sf.Variable) {
			return invalid(field+".variable", "%q is not an upper-case variable name", sf.Variable)
		}
		if seen[sf.Variable] {
			return invalid(field+".variable", "%s is declared twice", sf.Variable)
		}
		seen[sf.Variable] = true
		d := settingDef{variable: sf.Variable, help: sf.Help, def: sf.Default, required: sf.Required}
		switch sf.Type {
		case "", "string":
		case "duration":
			d.duration = true
			if _, err := time.ParseDuration(sf.Default); sf.Default != "" && err != nil {
				return invalid(field+".default", "%q is not a duration", sf.Default)
			}
		default:
			return invalid(field+".type", "unknown %q (string or duration)", sf.Type)
		}
		if d.help == "" {
			return invalid(field+".help", "required: it is the variable's line in webhookd help")
		}
		if len(sf.Choices) > 0 {
			if err := s.needV2(field + ".choices"); err != nil {
				return err
			}
			if _, ok := sf.Choices[sf.Default]; !ok {
				return invalid(field+".default", "%q is not one of the choices", sf.Default)
			}
			d.choices = sf.Choices
		}
		if lt := sf.LongerThan; lt != nil {
			if err := s.needV2(field + ".longer_than"); err != nil {
				return err
			}
			v, err := time.ParseDuration(lt.Duration)
			switch {
			case !d.duration:
				return invalid(field+".longer_than", "is for duration settings")
			case err != nil || v <= 0:
				return invalid(field+".longer_than.duration", "%q is not a positive duration", lt.Duration)
			case lt.What == "":
				return invalid(field+".longer_than.what", "required: what the bound is, for the error")
			}
			d.longerThan, d.longerWhat = v, lt.What
		}
		if sf.Pattern != "" {
			if err := s.needV2(field + ".pattern"); err != nil {
				return err
			}
			re, err := regexp.Compile("^(?:" + sf.Pattern + ")$")
			if err != nil {
				return invalid(field+".pattern", "%v", err)
			}
			if sf.Default != "" && !re.MatchString(sf.Default) {
				return invalid(field+".default", "%q does not match the pattern", sf.Default)
			}
			d.pattern = re
		}
		s.settings = append(s.settings, d)
	}
	return nil
}

// setting returns the index of the setting called variable, or -1.
func (s *Spec) setting(variable string) int {
	return slices.IndexFunc(s.settings, func(d settingDef) bool { return d.variable == variable })
}

func (s *Spec) compileSignature(f *file) error {
	sf, err := s.headerGrammar(f.Signature)
	if err != nil {
		return err
	}
	if err := s.compileForm(f); err != nil {
		return err
	}
	if sf.Field == "" && !headerRE.MatchString(sf.Header.Name) {
		return invalid("signature.header", "%q is not a header name", sf.Header.Name)
	}
	sig := sigDef{header: textproto.CanonicalMIMEHeaderKey(sf.Header.Name), repeated: sf.Repeated,
		separator: sf.Separator, assign: sf.Assign, name: sf.Name, prefix: sf.Prefix, prefixOptional: sf.PrefixOptional,
		nameSetting: -1, field: sf.Field}
	if err := s.addAliases("signature.header.aliases", sig.header, sf.Header.Aliases); err != nil {
		return err
	}
	if strings.Contains(sf.Name, "{{") {
		i, err := s.choiceSetting(sf.Name)
		if err != nil {
			return err
		}
		sig.nameSetting = i
	}
	if sf.PrefixOptional && sf.Prefix == "" {
		return invalid("signature.prefix_optional", "says the prefix may be left out, but there is no prefix")
	}
	i := slices.IndexFunc(algorithms, func(a algorithm) bool { return a.name == sf.Algorithm })
	if i < 0 {
		if s.version >= 2 {
			return invalid("signature.algorithm", "unknown %q (hmac-sha1, hmac-sha256, hmac-sha512, token, rsa-sha256, ecdsa-p256-sha256, ed25519, or a plain sha1, sha256, sha512 or md5)", sf.Algorithm)
		}
		return invalid("signature.algorithm", "unknown %q (hmac-sha1, hmac-sha256, hmac-sha512 or token)", sf.Algorithm)
	}
	sig.alg = algorithms[i]
	if err := s.checkPublic(sig.alg); err != nil {
		return err
	}
	if sig.alg.public == rsaPKCS1 {
		if s.setting(allowWeakKeys) >= 0 {
			return invalid("settings", "%s is every rsa-sha256 spec's own: leave it out", allowWeakKeys)
		}
		s.settings = append(s.settings, settingDef{variable: allowWeakKeys, def: "false", pattern: regexp.MustCompile("^(true|false)$"),
			help: "true accepts RSA keys shorter than 2048 bits, with a warning"})
	}
	switch {
	case sf.Assign != "" && sf.Name == "":
		return invalid("signature.name", "required with assign: the name of the items that are signatures")
	case sf.Assign == "" && sf.Name != "":
		return invalid("signature.assign", "required with name: what separates an item's name from its value")
	case sf.Assign != "" && sf.Assign == sf.Separator:
		return invalid("signature.assign", "must differ from separator")
	}
	if s.secret.tokenDigest != nil && sig.alg.signs() {
		return invalid("secrets.token_digest", "is for algorithm token")
	}
	if !sig.alg.signs() {
		if sf.Encoding != "" || sf.Signed != "" {
			return invalid("signature", "a token is compared as sent: encoding and signed are for HMACs only")
		}
		s.sig = sig
		return nil
	}
	var ok bool
	if sig.enc, ok = encodings[sf.Encoding]; !ok {
		return invalid("signature.encoding", "unknown %q (hex, base64 or base64url)", sf.Encoding)
	}
	t, err := parseTemplate(sf.Signed, s.signedKinds(sig.alg)...)
	if err != nil {
		return invalid("signature.signed", "%v", err)
	}
	if err := s.checkSignedV2(t); err != nil {
		return err
	}
	if err := s.checkPlain(sig.alg, t); err != nil {
		return err
	}
	bodies := 0
	for _, p := range t.parts {
		if p.kind == bodyRef {
			bodies++
		}
	}
	if bodies > 1 {
		return invalid("signature.signed", "names the body more than once")
	}
	sig.signed = t
	s.sig = sig
	s.formSigned = signedFields(t)
	if err := s.bindRefs("signature.signed", &s.sig.signed, true); err != nil {
		return err
	}
	return s.compileJoined(sf.Joined)
}

// bindRefs checks the names of t's references against the spec, records
// the signature items it reads and, when required, the headers and query
// values it makes required.
func (s *Spec) bindRefs(field string, t *template, required bool) error {
	for i := range t.parts {
		p := &t.parts[i]
		switch p.kind {
		case jsonRef:
			if p.steps != nil {
				if err := s.needV2(field); err != nil {
					return err
				}
			}
		case settingRef:
			if p.index = s.setting(p.text); p.index < 0 {
				return invalid(field, "setting %s is not declared in settings", p.text)
			}
		case signatureRef:
			if s.sig.assign == "" {
				return invalid(field, "signature.%s: the signature header has no named items (assign)", p.text)
			}
			if p.text == s.sig.name || s.sig.nameSetting >= 0 && slices.Contains(slices.Collect(maps.Values(s.settings[s.sig.nameSetting].choices)), p.text) {
				return invalid(field, "signature.%s is the signature itself", p.text)
			}
			if p.index = slices.Index(s.sigParts, p.text); p.index < 0 {
				if len(s.sigParts) == maxSigParts {
					return invalid(field, "reads more than %d signature items", maxSigParts)
				}
				p.index = len(s.sigParts)
				s.sigParts = append(s.sigParts, p.text)
			}
		case headerRef, queryRef:
			if p.kind == headerRef && (p.text == s.sig.header || slices.Contains(s.aliases[s.sig.header], p.text)) {
				return invalid(field, "header.%s is the signature header", p.text)
			}
			if required && !slices.ContainsFunc(s.required, func(q part) bool { return q.kind == p.kind && q.text == p.text }) {
				s.required = append(s.required, *p)
			}
		}
	}
	return nil
}

func (s *Spec) compileTimestamp(f *file) error {
	tf := f.Timestamp
	if tf == nil {
		return s.timestampsChecked(nil)
	}
	if !s.sig.alg.signs() {
		return invalid("timestamp", "a token signs no timestamp")
	}
	kinds := []kind{headerRef, queryRef, signatureRef}
	if !s.form {
		kinds = append(kinds, jsonRef)
	}
	t, err := parseTemplate(tf.Value, kinds...)
	if err != nil {
		return invalid("timestamp.value", "%v", err)
	}
	if len(t.parts) != 1 || t.parts[0].lower {
		return invalid("timestamp.value", "must be one reference, such as \"{{signature.t}}\"")
	}
	if err := s.bindRefs("timestamp.value", &t, true); err != nil {
		return err
	}
	ref := t.parts[0]
	if ref.kind == jsonRef {
		if err := s.checkBodyTimestamp(ref, tf); err != nil {
			return err
		}
	} else if !s.sig.signed.has(ref.kind, ref.text) {
		return invalid("timestamp.value", "%s.%s is not part of signature.signed, so it would prove nothing", kindNames[ref.kind], ref.text)
	}
	if err := s.timestampsChecked(&ref); err != nil {
		return err
	}
	d := &tsDef{ref: ref}
	switch tf.Unit {
	case "", "s":
	case "ms":
		d.ms = true
	case "auto":
		d.auto = true
	default:
		return invalid("timestamp.unit", "unknown %q (s, ms or auto)", tf.Unit)
	}
	switch tf.Window {
	case "", "past":
	case "both":
		d.both = true
	default:
		return invalid("timestamp.window", "unknown %q (past or both)", tf.Window)
	}
	switch tf.Format {
	case "", "unix":
	case "rfc3339":
		if err := s.needV2("timestamp.format"); err != nil {
			return err
		}
		if tf.Unit != "" {
			return invalid("timestamp.unit", "is for unix timestamps, not rfc3339")
		}
		d.rfc3339 = true
	default:
		return invalid("timestamp.format", "unknown %q (unix or rfc3339)", tf.Format)
	}
	// Without a tolerance the retention alone bounds the age
	// (WithRetention), as on every gateway that signs a time.
	d.tolerance = -1
	switch {
	case tf.Tolerance == "" && d.both:
		return invalid("timestamp.window", "both needs a tolerance: how far ahead of the clock a timestamp may be")
	case tf.Tolerance != "":
		if d.tolerance = s.setting(tf.Tolerance); d.tolerance < 0 || !s.settings[d.tolerance].duration {
			return invalid("timestamp.tolerance", "%q is not a setting of type duration", tf.Tolerance)
		}
		if s.settings[d.tolerance].def == "" && d.both {
			return invalid("timestamp.tolerance", "%s has no default, and window both needs a tolerance", tf.Tolerance)
		}
	}
	s.ts = d
	return nil
}

// timestampsChecked refuses a signed text that reads a value named like a
// timestamp (signature.t, header.X-Timestamp, ...) that timestamp.value
// does not declare: a signed timestamp left unchecked proves nothing, and
// a delivery captured in 1970 would verify once its record is pruned.
func (s *Spec) timestampsChecked(declared *part) error {
	for _, p := range s.sig.signed.parts {
		if (p.kind != headerRef && p.kind != queryRef && p.kind != signatureRef) || !timestampName(p.text) {
			continue
		}
		if declared == nil || declared.kind != p.kind || declared.text != p.text {
			return invalid("signature.signed", "reads %s, which is named like a timestamp: declare it as timestamp.value, or a capture would verify for ever", refName(&p))
		}
	}
	return nil
}

// timestampName reports whether a header, query value or signature item
// is named like a timestamp: one of its words (split at -, _ and .) is t,
// ts, time, date, datetime or epoch, or ends in timestamp.
func timestampName(name string) bool {
	for _, w := range strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return r == '-' || r == '_' || r == '.' }) {
		switch {
		case w == "t" || w == "ts" || w == "time" || w == "date" || w == "datetime" || w == "epoch",
			strings.HasSuffix(w, "timestamp"):
			return true
		}
	}
	return false
}

func (s *Spec) compileEvent(f *file) error {
	ef := f.Event
	if len(ef.Cases) > 0 {
		if err := s.compileCases(ef); err != nil {
			return err
		}
	} else {
		var err error
		if s.key, s.typ, err = s.compileKeyType("event", ef.Key, ef.Type); err != nil {
			return err
		}
	}
	if err := s.keySplits("event.key"); err != nil {
		return err
	}
	if len(s.cases) > 0 {
		s.key = s.cases[0].key // with its stops
	}
	for _, m := range ef.Fingerprint {
		if m == "" {
			return invalid("event.fingerprint", "an empty member name")
		}
	}
	s.fingerprint = ef.Fingerprint
	switch ef.FingerprintForm {
	case "", "canonical":
	case "compact":
		if len(ef.Fingerprint) == 0 {
			return invalid("event.fingerprint_form", "compact hashes the members listed in fingerprint, which lists none")
		}
		s.compact = true
	default:
		return invalid("event.fingerprint_form", "unknown %q (canonical or compact)", ef.FingerprintForm)
	}
	s.batch = ef.Batch
	switch {
	case ef.Batch == "" && (ef.BatchBody != "" || f.Ack != nil && s.version < 2):
		return invalid("event", "batch_body and ack are for batches only (batch)")
	case strings.Contains(ef.Batch, "."):
		return invalid("event.batch", "must be a top-level member, not a path")
	case ef.Batch != "" && !s.key.has(jsonRef, "") && !s.key.has(digestRef, ""):
		// Every element would share one key: the first forwarded, the
		// others answered 422 on every retry, never forwarded.
		return invalid("event.key", "reads nothing of a batch's element (json.* or digest), so every element would have the same key")
	}
	switch ef.BatchBody {
	case "", "wrap":
		s.wrap = ef.Batch != ""
	case "element":
	default:
		return invalid("event.batch_body", "unknown %q (wrap or element)", ef.BatchBody)
	}
	if ef.Batch != "" || f.Ack != nil {
		s.ack = &providers.Acknowledgement{Status: 200}
		if a := f.Ack; a != nil {
			if a.Status != 0 && (a.Status < 200 || a.Status > 299) {
				return invalid("ack.status", "%d is not a 2xx status", a.Status)
			}
			if a.Status != 0 {
				s.ack.Status = a.Status
			}
			s.ack.ContentType, s.ack.Body = a.ContentType, []byte(a.Body)
			if s.version >= 2 && strings.Contains(a.Body, "{{") {
				t, err := parseTemplate(a.Body, settingRef)
				if err != nil {
					return invalid("ack.body", "%v", err)
				}
				if err := s.bindRefs("ack.body", &t, false); err != nil {
					return err
				}
				s.ackBody = &t
			}
		}
	}
	return nil
}

// compileKeyType compiles one event key and type (field is "event" or
// one of event.cases).
func (s *Spec) compileKeyType(field, keySrc, typSrc string) (key, typ template, err error) {
	if key, err = parseTemplate(keySrc, s.eventKinds()...); err != nil {
		return key, typ, invalid(field+".key", "%v", err)
	}
	if !slices.ContainsFunc(key.refs(), func(p part) bool { return p.kind != settingRef }) {
		// Settings alone give every delivery one key.
		return key, typ, invalid(field+".key", "required, with at least one reference to the delivery (\"{{json.id}}\")")
	}
	if err := s.bindRefs(field+".key", &key, false); err != nil {
		return key, typ, err
	}
	if err := s.keySigned(key); err != nil {
		return key, typ, err
	}
	if typ, err = parseTemplate(typSrc, s.eventKinds()...); err != nil {
		return key, typ, invalid(field+".type", "%v", err)
	}
	return key, typ, s.bindRefs(field+".type", &typ, false)
}

// keySigned refuses an event key built from what the gateway does not
// sign (docs/contract.md, "Event keys"): one genuine request could then be
// forwarded under many keys. A token signs nothing, and authenticates the
// sender of everything.
func (s *Spec) keySigned(key template) error {
	if !s.sig.alg.signs() {
		return nil
	}
	for _, p := range key.refs() {
		switch p.kind {
		case jsonRef, digestRef:
			if !s.sig.signed.has(bodyRef, "") {
				return invalid("event.key", "reads the body, which signature.signed does not include")
			}
		case headerRef, queryRef, signatureRef, formRef:
			if !s.sig.signed.has(p.kind, p.text) {
				return invalid("event.key", "%s.%s is not part of signature.signed", kindNames[p.kind], p.text)
			}
			if err := s.keyPartBounded(p); err != nil {
				return err
			}
			if p.kind == formRef {
				// The signed text joins fields with a separator: a key
				// field must be one signature.joined keeps free of it.
				if !slices.Contains(s.sig.joined, p.text) {
					return invalid("event.key", "form.%s is joined to other fields in signature.signed: list it in signature.joined.fields", p.text)
				}
				continue
			}
			s.keyReadsParts = true
		}
	}
	return nil
}

// keySplits makes the event keys split back into their values one way,
// for every spec: "{{query.data.id}}:{{header.x-request-id}}" keys both
// (X:1, 2) and (X, 1:2) to X:1:2, so the second event would be answered
// as a replay of the first. A key with one value of free length (the
// digest is 64 hex digits, a setting is the same for every delivery) is
// unambiguous; with more, each but the last must be followed by text, and
// Parse refuses a value holding that text's first byte, which then ends
// it. The last takes the rest, so the keys of deliveries that Parse
// accepts are the ones they always had. With event.cases, one case's key
// could also read as another's ("P" with P = "X:Y" against "X" then
// ":Y"): every value of every case is then kept free of every byte that
// starts a literal of any case's key.
func (s *Spec) keySplits(field string) error {
	keys := []*template{&s.key}
	if len(s.cases) > 0 {
		keys = keys[:0]
		for i := range s.cases {
			keys = append(keys, &s.cases[i].key)
		}
	}
	var all string
	if len(keys) > 1 {
		for _, k := range keys {
			for _, p := range k.parts {
				if p.kind == literal && !strings.Contains(all, p.text[:1]) {
					all += p.text[:1]
				}
			}
		}
	}
	for _, k := range keys {
		parts := k.parts
		var free []int
		for i, p := range parts {
			if p.kind != literal && p.kind != digestRef && p.kind != settingRef {
				free = append(free, i)
			}
		}
		if all != "" {
			k.stops = make([]string, len(parts))
			for _, i := range free {
				k.stops[i] = all
			}
			continue
		}
		if len(free) < 2 {
			continue
		}
		k.stops = make([]string, len(parts))
		for _, i := range free[:len(free)-1] {
			if i+1 == len(parts) || parts[i+1].kind != literal {
				return invalid(field, "%s is followed by %s with no text between them, so a key would not split back into its values one way",
					refName(&parts[i]), refName(&parts[i+1]))
			}
			k.stops[i] = parts[i+1].text[:1]
		}
	}
	return nil
}

func (s *Spec) compileReplay(f *file) error {
	for _, id := range f.Replay.IDField {
		if id == "" || strings.Contains(id, "{{") || strings.HasPrefix(id, ".") || strings.HasSuffix(id, ".") || strings.Contains(id, "..") {
			return invalid("replay.id_field", "%q is not a member path (data.id) or form field", id)
		}
		s.idFields = append(s.idFields, id)
	}
	add := func(header bool, m map[string]string) error {
		names := make([]string, 0, len(m))
		for n := range m {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			field, key := "replay.query."+n, n
			if header {
				field, key = "replay.headers."+n, textproto.CanonicalMIMEHeaderKey(n)
			}
			if header && !headerRE.MatchString(n) {
				return invalid(field, "%q is not a header name", n)
			}
			t, err := parseTemplate(m[n], jsonRef, digestRef)
			if err != nil {
				return invalid(field, "%v", err)
			}
			s.replay = append(s.replay, replayDef{header: header, name: key, value: t})
		}
		return nil
	}
	if err := add(true, f.Replay.Headers); err != nil {
		return err
	}
	return add(false, f.Replay.Query)
}

func (s *Spec) compileExamples(f *file) error {
	if len(f.Examples) == 0 {
		return invalid("examples", "at least one example delivery is required")
	}
	for i, ef := range f.Examples {
		field := fmt.Sprintf("examples[%d]", i)
		if ef.Name != "" {
			field = "example " + ef.Name
		}
		ex := example{name: ef.Name, source: ef.Source, secret: ef.Secret, settings: ef.Settings,
			header: http.Header{}, key: ef.Key, typ: ef.Type, path: ef.Path}
		switch {
		case ef.Source != "" && ef.SelfDerived != "":
			return invalid(field, "source and self_derived are exclusive: an example is the gateway's, or derived here")
		case ef.SelfDerived != "":
			ex.source = "self-derived: " + ef.SelfDerived
		}
		if ef.Path != "" {
			if !s.sig.signed.has(pathRef, "") {
				return invalid(field+".path", "signature.signed has no {{path}}")
			}
			if !servicePathRE.MatchString(ef.Path) {
				return invalid(field+".path", "%q is not a service path (/v1.0/transfer-va/payment)", ef.Path)
			}
		}
		if ex.name == "" {
			ex.name = fmt.Sprint(i + 1)
		}
		if ef.Secret == "" {
			return invalid(field+".secret", "required")
		}
		for k := range ef.Settings {
			if s.setting(k) < 0 {
				return invalid(field+".settings", "%s is not declared in settings", k)
			}
		}
		if ef.Now == "" && f.Timestamp != nil {
			return invalid(field+".now", "required: the spec checks a timestamp, and the example's would expire")
		}
		if ef.Now != "" {
			now, err := time.Parse(time.RFC3339Nano, ef.Now)
			if err != nil {
				return invalid(field+".now", "%q is not an RFC 3339 time", ef.Now)
			}
			ex.now = now
		}
		if ef.URL != "" {
			u, err := url.Parse(ef.URL)
			if err != nil {
				return invalid(field+".url", "%v", err)
			}
			ex.query = u.Query()
		}
		for name, vs := range ef.Headers {
			for _, v := range vs {
				ex.header.Add(name, v)
			}
		}
		switch {
		case ef.Body != nil && ef.BodyBase64 != "":
			return invalid(field, "body and body_base64 are exclusive")
		case ef.Body != nil:
			ex.body = []byte(*ef.Body)
		default:
			b, err := base64.StdEncoding.DecodeString(ef.BodyBase64)
			if err != nil || len(b) == 0 {
				return invalid(field+".body", "required (body, or body_base64 in base64)")
			}
			ex.body = b
		}
		s.examples = append(s.examples, ex)
	}
	// A header the signed text reads that no example sends is most likely
	// misspelt: every delivery would be 401.
	required := s.required
	if s.sig.field == "" {
		required = append(required, part{kind: headerRef, text: s.sig.header})
	}
	for _, r := range required {
		if r.kind != headerRef {
			continue
		}
		names := append([]string{r.text}, s.aliases[r.text]...)
		if !slices.ContainsFunc(s.examples, func(ex example) bool {
			return slices.ContainsFunc(names, func(n string) bool { return len(ex.header[n]) > 0 })
		}) {
			return invalid("signature", "header %s is never sent by an example", r.text)
		}
	}
	return nil
}

// decodeHex decodes a hex secret of either case.
func decodeHex(v string) ([]byte, error) {
	out := make([]byte, len(v)/2)
	if len(v)%2 != 0 {
		return nil, errors.New("odd length")
	}
	for i := range out {
		hi, ok1 := fromHex(v[2*i])
		lo, ok2 := fromHex(v[2*i+1])
		if !ok1 || !ok2 {
			return nil, errors.New("not hex")
		}
		out[i] = hi<<4 | lo
	}
	return out, nil
}

func fromHex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
