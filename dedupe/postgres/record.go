package postgres

import (
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/webhookd/webhookd/dedupe"
)

// recordColumns read a whole record (scanRecord). replayColumns leave the
// request body out, which a replay does not send, and listColumns both
// bodies, which a listing does not show: each up to a mebibyte
// (dedupe.MaxStoredRequest) that would cross the wire and be copied for
// nothing. Their last column says whether a request body left out is
// stored whole (dedupe.Request.Unread); octet_length reads a TOASTed
// body's length from its header, not the body.
//
// Each ends with queueColumns, a queued event's own (queue.go).
const (
	recordHead    = `key, state, token, lease_until, attempts, created_at, updated_at, expires_at, fingerprint, status, content_type, `
	reqUnread     = `COALESCE(octet_length(req_body) = req_size, false)`
	queueColumns  = `, destination, queued_at, next_attempt, retries, reason`
	recordColumns = recordHead + `body, req_content_type, req_event_type, req_body, req_size, false` + queueColumns
	replayColumns = recordHead + `body, req_content_type, req_event_type, NULL::bytea, req_size, ` + reqUnread + queueColumns
	listColumns   = recordHead + `NULL::bytea, req_content_type, req_event_type, NULL::bytea, req_size, ` + reqUnread + queueColumns
)

// prefixColumns is columns, a list of recordColumns' kind, with each bare
// column name qualified by prefix ("r."); expressions and literals stay as
// they are.
func prefixColumns(prefix, columns string) string {
	var (
		parts []string
		depth int
		start int
	)
	for i := 0; i <= len(columns); i++ {
		if i < len(columns) {
			switch columns[i] {
			case '(':
				depth++
				continue
			case ')':
				depth--
				continue
			case ',':
				if depth > 0 {
					continue
				}
			default:
				continue
			}
		}
		c := strings.TrimSpace(columns[start:i])
		start = i + 1
		if isColumnName(c) {
			c = prefix + c
		}
		parts = append(parts, c)
	}
	return strings.Join(parts, ", ")
}

// isColumnName reports whether c is a bare column name, not an expression
// or a literal.
func isColumnName(c string) bool {
	if c == "" || c == "true" || c == "false" {
		return false
	}
	for _, r := range c {
		if (r < 'a' || r > 'z') && r != '_' {
			return false
		}
	}
	return true
}

// pgPingKey is Ping's key. Postgres text cannot hold pingKey's NUL byte;
// a control character keeps it apart from every delivery's key all the same.
const pgPingKey = "\x01ping"

// pgText makes s storable as Postgres text.
func pgText(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
}

// scanRecord scans recordColumns (or replayColumns, listColumns), then
// into extra any columns that follow.
func scanRecord(row pgx.Row, extra ...any) (dedupe.Record, error) {
	var (
		r          dedupe.Record
		state      int16
		token      int64
		leaseUntil *time.Time
		attempts   int32
		status     int32
		reqCT      *string
		reqType    *string
		reqBody    []byte
		reqSize    *int32
		reqUnread  bool
		dest       *string
		queuedAt   *time.Time
		next       *time.Time
		retries    int32
		reason     *string
	)
	err := row.Scan(append([]any{&r.Key, &state, &token, &leaseUntil, &attempts, &r.CreatedAt, &r.UpdatedAt, &r.ExpiresAt,
		&r.Fingerprint, &status, &r.Response.ContentType, &r.Response.Body, &reqCT, &reqType, &reqBody, &reqSize, &reqUnread,
		&dest, &queuedAt, &next, &retries, &reason}, extra...)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return dedupe.Record{}, dedupe.ErrNotFound
	}
	if err != nil {
		return dedupe.Record{}, err
	}
	r.State, r.Token, r.Attempts, r.Response.Status = dedupe.State(state), uint64(token), uint32(attempts), int(status)
	if leaseUntil != nil {
		r.LeaseUntil = leaseUntil.UTC()
	}
	r.CreatedAt, r.UpdatedAt, r.ExpiresAt = r.CreatedAt.UTC(), r.UpdatedAt.UTC(), r.ExpiresAt.UTC()
	r.Retries = uint32(retries)
	if dest != nil {
		r.Destination = *dest
	}
	if queuedAt != nil {
		r.QueuedAt = queuedAt.UTC()
	}
	if next != nil {
		r.NextAttempt = next.UTC()
	}
	if reason != nil {
		r.Reason = *reason
	}
	if len(r.Response.Body) == 0 {
		r.Response.Body = nil
	}
	if reqSize != nil {
		r.Request = &dedupe.Request{Size: int(*reqSize), Body: reqBody, Unread: reqUnread}
		if reqCT != nil {
			r.Request.ContentType = *reqCT
		}
		if reqType != nil {
			r.Request.EventType = *reqType
		}
		if len(r.Request.Body) == 0 && r.Request.Size > 0 {
			r.Request.Body = nil
		} else if r.Request.Body == nil && r.Request.Size == 0 {
			r.Request.Body = []byte{}
		}
	}
	return r, nil
}
